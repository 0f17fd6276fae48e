"""Regressions found by a new user trying to break codesign (each one was a traceback, a leak or
a silently wrong answer)."""

from __future__ import annotations

import json

import pytest

from conftest import SPECS

GB200 = SPECS / "examples" / "gb200-gpt-oss-120b.toml"
FLAGSHIP = SPECS / "jalapeno-gpt-oss-120b.toml"


def _spec(tmp_path, body, name="s.toml", base=GB200):
    p = tmp_path / name
    p.write_text(f'include = ["{base.as_posix()}"]\n' + body)
    return p


@pytest.mark.parametrize("url, secret", [
    ("postgresql://user:secretpw@127.0.0.1:1/db", "secretpw"),
    ("postgresql://:secretpw@127.0.0.1:1/db", "secretpw"),       # empty user name
    ("postgresql://user:sec@ret:pw@127.0.0.1:1/db", "ret:pw"),    # unencoded @ in the password
    ("postgresql://127.0.0.1:1/db?password=secretpw", "secretpw"),
])
def test_redact_hides_every_password_form(url, secret):
    from codesign.search import redact

    assert secret not in redact(url) and "sec" not in redact(url).split("@")[0].split(":")[-1]


@pytest.mark.parametrize("body, path, words", [
    ("[deployment]\nmoe_weights_format = \"mxfp3\"\n", "deployment.moe_weights_format", "unknown number format 'mxfp3'"),
    ("[deployment]\ncost_model = \"magic\"\n", "deployment.cost_model", "no cost model named 'magic'"),
    ("[workload]\nlength_jitter = 1.5\n", "workload.length_jitter", "must be in [0, 1)"),
    ("[workload]\nconcurrency = 8\n", "workload.concurrency", "expected a list"),
    ("[workload]\nosl = 1\n", "workload.osl", "whole number >= 2 (got 1)"),
    ("[memory.hbm]\nbandwidth = \"1e30 TB/s\"\n", "memory.hbm.bandwidth", "out of range (got '1e30 TB/s'; at most 1e+18 TB/s)"),  # the limit in the unit the spec reads, not "1e+30 in SI units" (fresh-user trial, session 30)
])
def test_errors_name_the_users_file_and_key(cli, tmp_path, body, path, words):
    spec = _spec(tmp_path, body)
    rc, out, err = cli("evaluate", spec)
    assert rc == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}: {path}: ") and words in lines[0], err


def test_tp_must_divide_heads_ep_need_not_divide_experts(cli, tmp_path):
    # gpt-oss-120b: 64 attention heads, 128 experts (config.json); 3 divides neither. A TP shard
    # holds whole heads; an EP rank holds ceil(128/3) expert slots (redundant copies fill the spare)
    rc, out, err = cli("evaluate", _spec(tmp_path, "[deployment]\ntp = 3\nep = 3\n"), "--json")
    doc = json.loads(out)
    assert not any(p["feasible"] for p in doc["points"])
    assert "does not divide the model's 64 attention heads" in doc["infeasible_reason"]
    assert "experts" not in doc["infeasible_reason"]


@pytest.mark.parametrize("pp", [37, 1000])
def test_pp_above_the_layers_is_infeasible_not_priced(cli, tmp_path, pp):
    # gpt-oss-120b has 36 layers (config.json num_hidden_layers); a pipeline stage holds at least one,
    # so pp 37 or 1000 is no deployment (fresh-user trial of session 16: pp = 1000 was priced, with
    # 0 GB of weights per chip on 8000 chips)
    rc, out, err = cli("evaluate", _spec(tmp_path, f"[deployment]\npp = {pp}\n"), "--json")
    doc = json.loads(out)
    assert rc == 1 and not any(p["feasible"] for p in doc["points"]), err
    assert f"pp {pp} is above the model's 36 layers" in doc["infeasible_reason"]


@pytest.mark.slow
def test_resume_refuses_a_changed_spec(cli, tmp_path):
    out = tmp_path / "run"
    spec = _spec(tmp_path, "", name="j.toml", base=FLAGSHIP)
    rc, _, err = cli("optimize", spec, "--trials", "10", "--out", out, "--json")
    assert rc == 0, err
    spec.write_text(spec.read_text() + '[chip]\ntdp = "300 W"\n')
    rc, _, err = cli("optimize", spec, "--trials", "20", "--out", out, "--json")
    assert rc == 2 and "different spec (changed: chip.tdp)" in err
    # a budget change is not a different problem: raising --trials or search.trials resumes
    spec.write_text(spec.read_text().replace('[chip]\ntdp = "300 W"\n', "") + "[search]\ntrials = 15\n")
    rc, out_, err = cli("optimize", spec, "--out", out, "--json")
    assert rc == 0, err
    assert json.loads(out_)["trials"] == 15


@pytest.mark.slow
def test_resume_refuses_trials_of_another_cost_model_version(cli, tmp_path):
    """Stored trials keep the metrics their cost model gave: after the model changes (here: the
    study says it was run by an older version), resuming would mix two models' numbers."""
    import optuna

    out = tmp_path / "run"
    spec = _spec(tmp_path, "", name="j.toml", base=FLAGSHIP)
    rc, _, err = cli("optimize", spec, "--trials", "5", "--out", out, "--json")
    assert rc == 0, err
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    study = optuna.load_study(study_name=optuna.get_all_study_names(storage)[0], storage=storage)
    fp = dict(study.user_attrs["spec_fingerprint"])
    assert fp["(cost model)"].startswith("analytical ")
    fp["(cost model)"] = "analytical 0.0.1"
    study.set_user_attr("spec_fingerprint", fp)
    rc, _, err = cli("optimize", spec, "--trials", "8", "--out", out, "--json")
    assert rc == 2 and "was run with cost model analytical 0.0.1, not analytical " in err, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_design_file_reproduces_its_first_objective_and_one_deployment(cli, tmp_path):
    rc, out, err = cli("optimize", FLAGSHIP, "--trials", "30", "--out", tmp_path / "r", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    for r in doc["pareto"][:3]:
        rc, ev_out, err = cli("evaluate", r["design_file"], "--json")
        ev = json.loads(ev_out)
        assert ev["summary"]["peak_mixed_tok_s_per_kw"] == pytest.approx(r["metrics"]["peak_mixed_tok_s_per_kw"], rel=1e-5)
        # deployment-dependent design metrics come from that same deployment
        assert ev["design"]["chips"] == r["metrics"]["chips"]
        assert ev["design"]["weights_bytes_per_chip"] == pytest.approx(r["metrics"]["weights_bytes_per_chip"], rel=1e-6)


def test_binary_or_directory_spec_is_one_line(cli, tmp_path):
    b = tmp_path / "b.toml"
    b.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    rc, out, err = cli("evaluate", b)
    assert rc == 2 and err.strip() == f"error: {b}: not a UTF-8 text file (expected a TOML spec)"
    rc, out, err = cli("evaluate", tmp_path)
    assert rc == 2 and "is a directory" in err and "Traceback" not in err


def test_negative_seed_is_refused(cli, tmp_path):
    spec = _spec(tmp_path, "[search]\nseed = -3\n", base=FLAGSHIP)
    rc, out, err = cli("optimize", spec, "--out", tmp_path / "o")
    assert rc == 2 and err.strip().splitlines() == [f"error: {spec}: search.seed: must be a whole number in [0, 2**32) (got -3)"]


def test_a_driver_splitting_the_url_elsewhere_leaks_no_password_piece(cli, tmp_path):
    # an unencoded '@' in the password: the driver takes 'pw@127.0.0.1:1' as the port and echoes it
    url = "postgresql://u:sec@ret:pw@127.0.0.1:1/db"
    rc, out, err = cli("optimize", FLAGSHIP, "--storage", url, "--out", tmp_path / "o", "--trials", "1")
    assert rc == 2 and "Traceback" not in err
    for piece in ("sec", "ret", "pw@"):
        assert piece not in (out + err).replace("postgresql", "").replace("storage", ""), err
    assert "%40" in err


@pytest.mark.parametrize("choices,bad", [("[0, 8]", "0"), ("[8, -3]", "-3"), ("[4.5]", "4.5"), ("[true]", "true")])
def test_envelope_choices_of_chip_counts_are_whole_numbers(cli, tmp_path, choices, bad):
    # an EP of 0 was tried as a deployment and counted infeasible, so a search of only bad choices
    # ended with "0 feasible" and exit 1 without saying why
    spec = _spec(tmp_path, f'[search.envelope]\n"deployment.ep" = {choices}\n', name="e.toml", base=FLAGSHIP)
    rc, _, err = cli("optimize", spec, "--trials", "3", "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err
    assert f'search.envelope."deployment.ep": choice {bad}: ' in err, err
    assert not (tmp_path / "o" / "study.journal").exists()


#: Infeasible whatever the searched hardware: a spec's deployment no serving framework runs, or weights
#: no chip of the search holds, is refused before the first trial (it ran all 50 to end "0 feasible",
#: exit 1; fresh-user trial, session 44).
_NEVER = "no deployment the search tries can be served, so every design would be infeasible: "
_DOMAIN = "is larger than the scale-up domain ({} chips; deployment.multinode_tp = true lets a TP group span domains)"


def _refused_before_the_search(cli, tmp_path, spec, line):
    """optimize and sweep both exit 2 with the one ``line`` on stderr and write nothing."""
    for args in (("optimize", spec, "--out", tmp_path / "o", "--trials", "4"),
                 ("sweep", spec, "--out", tmp_path / "o", "--points", "10")):
        rc, out, err = cli(*args)
        assert rc == 2 and err.strip().splitlines() == [line], err
        assert not (tmp_path / "o").exists()


def test_a_search_of_a_tp_that_divides_no_head_count_is_refused_before_it_runs(cli, tmp_path):
    # gpt-oss-120b has 64 attention heads (hf_configs/gpt-oss-120b.json num_attention_heads):
    # 64 / 3 is no whole number, so TP 3 can never shard them, whatever the chip
    spec = _spec(tmp_path, '[search.envelope]\n"deployment.tp" = [3]\n', name="t3.toml", base=FLAGSHIP)
    _refused_before_the_search(cli, tmp_path, spec, f'error: {spec}: search.envelope."deployment.tp": {_NEVER}'
                                                    "tp 3 does not divide the model's 64 attention heads")


def test_a_fixed_deployment_no_framework_runs_is_refused_at_its_own_key(cli, tmp_path):
    # no envelope: the spec's own TP 3 (of 64 heads) is every design's, named where it is set
    spec = _spec(tmp_path, "[deployment]\ntp = 3\n[search]\ntrials = 4\nseed_sweep = 0\ngradient_seeds = 0\n"
                           'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                           '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "16 TB/s"}\n')
    _refused_before_the_search(cli, tmp_path, spec, f"error: {spec}: deployment.tp: {_NEVER}"
                                                    "tp 3 does not divide the model's 64 attention heads")


def test_a_search_of_a_tp_above_every_scale_up_domain_it_reaches_is_refused(cli, tmp_path):
    # TP 16 and 32 divide the 64 heads but neither fits a domain of 8 chips (nor of 2 to 8: the
    # search's range), and the spec does not set deployment.multinode_tp
    spec = _spec(tmp_path, '[network]\nscaleup_domain = 8\n[search.envelope]\n"deployment.tp" = [16, 32]\n',
                 name="d8.toml", base=FLAGSHIP)
    _refused_before_the_search(cli, tmp_path, spec, f'error: {spec}: search.envelope."deployment.tp": {_NEVER}'
                                                    f"tp 16 or 32 {_DOMAIN.format(8)}")
    # one line listing the domains 2 to 8 it reaches (it said the rule once per domain, then "and 4 more")
    spec = _spec(tmp_path, '[search.envelope]\n"deployment.tp" = [16]\n'
                           '[search.params]\n"network.scaleup_domain" = {low = 2, high = 8}\n',
                 name="d2-8.toml", base=FLAGSHIP)
    _refused_before_the_search(cli, tmp_path, spec, f'error: {spec}: search.envelope."deployment.tp": {_NEVER}'
                                                    f"tp 16 {_DOMAIN.format('2 to 8')}")


def test_every_rule_a_refused_search_breaks_is_said_before_a_rules_second_line(cli, tmp_path):
    """TP 3, 16, 48 and 128 over scale-up domains of 2 to 8 chips, on gpt-oss-120b's 64 heads: 64 / 3
    and 64 / 48 are no whole numbers, 128 > 64 heads, and the domain rule needs two lines (every TP
    exceeds a domain of 2; TP 3 fits domains of 3 to 8, so 16, 48 and 128 alone exceed those). Each
    of the three rules is said, and the domain rule's second line too: the heads rule, then that
    line, were left out behind "and 1 more" (fresh-user trials, session 45)."""
    spec = _spec(tmp_path, '[search.envelope]\n"deployment.tp" = [3, 16, 48, 128]\n'
                           '[search.params]\n"network.scaleup_domain" = {low = 2, high = 8}\n',
                 name="mixed.toml", base=FLAGSHIP)
    rc, _, err = cli("sweep", spec, "--out", tmp_path / "o", "--points", "10")
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f'error: {spec}: search.envelope."deployment.tp": {_NEVER}'), err
    for said in ("tp 3 or 48 does not divide the model's 64 attention heads",
                 "tp 128 is above the model's 64 attention heads",
                 f"tp 3, 16, 48 or 128 {_DOMAIN.format(2)}", f"tp 16, 48 or 128 {_DOMAIN.format('3 to 8')}"):
        assert said in err, (said, err)
    assert "more" not in err, err


def test_deployment_rule_messages_differing_in_their_numbers_are_said_once():
    """search.merged_rule_messages: the 3 TP x 4 domain messages of TP 16, 32 and 64 over domains of
    1, 2, 4 and 8 chips (every TP above every domain) are one line; TP 8 breaks the rule at a domain
    of 4 but not of 8, so it is listed at 4 alone (a merged line is true of every pair it lists);
    another rule's line stays its own."""
    from codesign.search import merged_rule_messages

    every = [f"tp {tp} {_DOMAIN.format(d)}" for tp in (16, 32, 64) for d in (1, 2, 4, 8)]
    assert merged_rule_messages(every) == [f"tp 16, 32 or 64 {_DOMAIN.format('1, 2, 4 or 8')}"]
    heads = "tp 3 does not divide the model's 64 attention heads"
    some = [f"tp 8 {_DOMAIN.format(4)}", heads, f"tp 16 {_DOMAIN.format(4)}", f"tp 16 {_DOMAIN.format(8)}"]
    assert merged_rule_messages(some) == [f"tp 8 or 16 {_DOMAIN.format(4)}", f"tp 16 {_DOMAIN.format(8)}", heads]
    # a run of three or more whole numbers is a range; two are listed
    runs = [f"tp 16 {_DOMAIN.format(d)}" for d in (1, 2, 3, 8, 10, 11)]
    assert merged_rule_messages(runs) == [f"tp 16 {_DOMAIN.format('1 to 3, 8, 10 or 11')}"]


def test_a_search_whose_weights_never_fit_is_refused_before_it_runs(cli, tmp_path):
    # gpt-oss-120b (hf_configs/gpt-oss-120b.json: 36 layers of 128 experts, hidden and expert
    # intermediate size 2880): one expert is gate_up 2880 x 5760 + 5760 bias + down 2880 x 2880 +
    # 2880 bias = 24,891,840 parameters, 36 x 128 of them 114,701,598,720, at MXFP4's 4.25 bits
    # 60,935,224,320 B; the other 116,829,156,672 - 114,701,598,720 = 2,127,557,952 parameters
    # (OpenAI's model card: 116.83B in all) at BF16 4,255,115,904 B: 65.19 GB, 8.149 GB per chip at
    # the flagship's largest TP, 8. At most 2 GB of HBM + 1 GiB of SRAM (its range) = 3.07 GB hold it
    # on no chip of any design.
    spec = _spec(tmp_path, '[search.params]\n"memory.hbm.capacity" = { choices = ["1 GB", "2 GB"] }\n',
                 name="tiny.toml", base=FLAGSHIP)
    _refused_before_the_search(
        cli, tmp_path, spec,
        f'error: {spec}: search.params."memory.hbm.capacity": the weights fit no design of the search, so every '
        "design would be infeasible: gpt-oss-120b's 117B parameters take at least 65.2 GB (mxfp4 experts, bf16 "
        "other weights, the narrowest formats the search tries), 8.15 GB per chip over the 8 chips of the largest "
        "instance it tries (tp 8 × dp_attention 1 × pp 1), more than one chip holds at most (memory.hbm.capacity "
        "2 GB + memory.sram.capacity 1 GiB = 3.07 GB); search more memory or a larger TP")


@pytest.mark.parametrize("body", [
    '[search.envelope]\n"deployment.tp" = [3, 8]\n',  # TP 8 divides the 64 heads: the search judges TP 3
    # TP 16 fits the domains of 16 chips the search reaches
    '[search.envelope]\n"deployment.tp" = [16]\n[search.params]\n"network.scaleup_domain" = {low = 8, high = 16}\n',
    # 8 GB + 1 GiB = 9.07 GB holds the 8.149 GB per chip of TP 8 (the test above): fits at some designs
    '[search.params]\n"memory.hbm.capacity" = { choices = ["1 GB", "8 GB"] }\n',
    # and 2 GB + 1 GiB the 65.19 GB over 32 chips (TP 8 × dp_attention 4), 2.04 GB each
    '[search.params]\n"memory.hbm.capacity" = { choices = ["1 GB", "2 GB"] }\n'
    '[deployment]\ndp_attention = 4\nep = 32\n',
])
def test_a_search_infeasible_only_at_some_of_its_values_is_left_to_the_search(tmp_path, body):
    from codesign.search import check_search
    from codesign.spec import load_spec

    check_search(load_spec(_spec(tmp_path, body, base=FLAGSHIP)))  # no SpecError


@pytest.mark.parametrize("body,msg", [
    # a fresh-clone trial (session 5): these were accepted and wrote design files that
    # `codesign evaluate` then refused, or priced a batch limit of 0 or 2.5
    ('[search.envelope]\n"deployment.max_batch_size" = [1e30]\n',
     'search.envelope."deployment.max_batch_size": choice 1e+30: must be a whole number in [1, 10000000]'),
    ('[search.envelope]\n"deployment.max_batch_size" = "64"\n',
     "search.envelope.\"deployment.max_batch_size\": expected a list (got '64')"),
    ('[search.envelope]\n"deployment.max_batch_size" = {low = 16, high = 64}\n',
     'search.envelope."deployment.max_batch_size": expected a list'),
    ('[search.params]\n"deployment.max_batch_size" = {low = 0, high = 64}\n',
     'search.params."deployment.max_batch_size": low 0: must be a whole number in [1, 10000000]'),
    ('[search.params]\n"deployment.max_batch_size" = {choices = [2.5, 64]}\n',
     'search.params."deployment.max_batch_size": choice 2.5: expected a whole number'),
    ('[search.params]\n"deployment.max_batch_size" = {low = 16, high = 1024, step = 0.5}\n',
     'search.params."deployment.max_batch_size".step: must be a whole number >= 1'),
    ('[search.params]\n"deployment.max_batch_size" = [64, 256]\n',
     'search.params."deployment.max_batch_size": expected a table'),
    ('[search.params]\n"deployment.tp" = {low = 0, high = 8}\n',
     'search.params."deployment.tp": low 0: must be a whole number >= 1'),
    # a fresh-user trial (session 27): a searched ISL or OSL of 0 was priced, and the cost model's
    # NaN decode batch reported as a bug of the analytical plugin (exit 3); evaluate refuses isl = 0
    ('[search.params]\n"workload.isl" = {low = 0, high = 8192}\n',
     'search.params."workload.isl": low 0: must be a whole number >= 1'),
    ('[search.params]\n"workload.osl" = {choices = [0, 1024]}\n',
     'search.params."workload.osl": choice 0: must be a whole number >= 2'),
    # osl = 0 said "a whole number >= 1" and osl = 1 "at least 2 tokens" (fresh-user trial, session 30)
    ('[search.params]\n"workload.osl" = {choices = [1, 1024]}\n',
     'search.params."workload.osl": choice 1: must be a whole number >= 2'),
])
def test_searched_deployment_values_are_checked_like_the_spec(cli, tmp_path, body, msg):
    spec = _spec(tmp_path, body, name="mine.toml", base=FLAGSHIP)
    rc, _, err = cli("optimize", spec, "--trials", "2", "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err
    # the message names the user's file, not the included one that also has [search] tables
    assert f"mine.toml: {msg}" in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("body,line", [
    # a fresh-user trial (session 6): the value was named twice ("low 0: … (got 0)"), Python's
    # True and dicts showed instead of the TOML the user wrote, and a NaN bound read "low must be
    # below high (got nan and 1024)"
    ('"deployment.max_batch_size" = {low = 0, high = 64}',
     'search.params."deployment.max_batch_size": low 0: must be a whole number in [1, 10000000]'),
    ('"deployment.max_batch_size" = {choices = [true, 64]}',
     'search.params."deployment.max_batch_size".choices: expected a number (got true)'),
    ('"deployment.acceptance_rate" = {low = nan, high = 0.9}',
     'search.params."deployment.acceptance_rate".low: must be a finite number (got nan)'),
    ('"deployment.acceptance_rate" = {low = 0.2, high = inf}',
     'search.params."deployment.acceptance_rate".high: must be a finite number (got inf)'),
    ('"deployment.acceptance_rate" = {low = {a = 1}, high = 0.9}',
     'search.params."deployment.acceptance_rate".low: expected a number (got {a = 1})'),
    ('"deployment.acceptance_rate" = {low = 0.2, high = 0.9, step = 0}',
     'search.params."deployment.acceptance_rate".step: must be a finite number > 0 (got 0)'),
])
def test_search_messages_show_toml_values_once(cli, tmp_path, body, line):
    spec = _spec(tmp_path, f"[search.params]\n{body}\n", name="mine.toml", base=FLAGSHIP)
    rc, _, err = cli("optimize", spec, "--trials", "2", "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [f"error: {spec}: {line}"]


def test_whole_valued_float_envelope_choices_are_counts(cli, tmp_path):
    # [64.0, 256.0] are the counts 64 and 256: the design files write integers evaluate accepts
    spec = _spec(tmp_path, '[search]\nseed_sweep = 64\ngradient_seeds = 0\n'
                           '[search.envelope]\n"deployment.max_batch_size" = [64.0, 256.0]\n',
                 name="mine.toml", base=FLAGSHIP)
    rc, _, err = cli("optimize", spec, "--trials", "6", "--out", tmp_path / "o")
    assert rc in (0, 1), err
    designs = sorted((tmp_path / "o" / "designs").glob("*.toml"))
    assert designs, err
    for design in designs:
        assert "max_batch_size = 64\n" in design.read_text()  # the first objective's choice
        assert cli("evaluate", design)[0] == 0


@pytest.mark.parametrize("body,key,msg", [
    # a second fresh-clone trial: fractional bounds of a count were truncated, inf and a stepped
    # log range raised tracebacks, an off-grid high let Optuna warn and write an off-grid design
    ('{low = 2.5, high = 1024}', "low", "must be a whole number for a count (got 2.5)"),
    ('{low = 16, high = inf}', "high", "must be a whole number for a count (got inf)"),
    ('{low = 16, high = 1024, step = 2, log = true}', "step", "a log-scaled count takes step = 1"),
    ('{low = 16, high = 1000, step = 64}', "high", "must be low plus a whole number of steps"),
])
def test_count_ranges_are_whole_and_on_their_grid(cli, tmp_path, body, key, msg):
    spec = _spec(tmp_path, f'[search.params]\n"deployment.max_batch_size" = {body}\n', name="mine.toml",
                 base=FLAGSHIP)
    rc, _, err = cli("optimize", spec, "--trials", "2", "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err
    assert f'mine.toml: search.params."deployment.max_batch_size".{key}: {msg}' in err, err


def test_a_search_of_a_spec_without_a_deployment_is_told_the_defaults_it_takes(cli, tmp_path):
    """optimize and sweep say the defaults of codesign.spec.Deployment that a spec without
    [deployment] takes (weights_format = "bf16", cost_model = "analytical"), but not TP, which the
    search's envelope varies (fresh-user trial, session 44)."""
    spec = tmp_path / "nodep.toml"
    spec.write_text("include = [" + ", ".join(f'"{(SPECS / f).as_posix()}"' for f in (
        "hardware/gb200.toml", "models/gpt-oss-120b.toml", "workloads/inferencemax-8k1k.toml")) + "]\n"
        '[search]\ntrials = 2\nseed_sweep = 0\ngradient_seeds = 0\nbatch_size = 2\n'
        'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
        '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "8 TB/s"}\n'
        '[search.envelope]\n"deployment.tp" = [4, 8]\n')
    note = f'note: {spec} has no [deployment]; using weights_format = "bf16", cost_model = "analytical"'
    for args in (("optimize", spec, "--out", tmp_path / "o"), ("sweep", spec, "--out", tmp_path / "s", "--points", "4")):
        rc, out, err = cli(*args)
        assert rc in (0, 1) and note in err.splitlines(), err
