"""What the core guarantees whatever the cost model: power and area not modelled are said, not priced
at 0; a deployment no serving framework runs is infeasible.

A chip without ``[chip.energy]`` or ``[chip.area]``: power and area are not modelled, and say so.

Before session 33 the analytical model priced such a chip at 0 W and stopped with an internal error
("mixed_tok_s_per_kw_modelled = inf", exit 3), and read a missing ``[chip.area]`` as 0 mm², so every
area constraint passed. The roofline example took the TDP only when no memory tier had an energy
figure either, so GB200's spec without its technology file (its host tier has the NVLink-C2C
figure) was priced at a few watts per chip.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from conftest import SPECS

GB200_TDP_W = 1200.0  # specs/hardware/gb200.toml: tdp = "1200 W" (hardware_specs.csv gb200_nvl72)


def _bare_gb200(tmp_path, extra: str = "", *, cost_model: str | None = None):
    """GB200 serving gpt-oss-120b with the hardware file's own figures only: its technology include
    (specs/technology/n4p.toml, the [chip.energy] and [chip.area] figures) is dropped."""
    hw = (SPECS / "hardware" / "gb200.toml").read_text()
    hw, n = re.subn(r'^include = \["\.\./technology/n4p\.toml"\]\n', "", hw, flags=re.M)
    assert n == 1
    (tmp_path / "hw.toml").write_text(hw)
    spec = tmp_path / "bare.toml"
    dep = f'[deployment]\ncost_model = "{cost_model}"\n' if cost_model else ""
    spec.write_text(
        'name = "bare"\n'
        f'include = ["hw.toml", "{(SPECS / "models" / "gpt-oss-120b.toml").as_posix()}",\n'
        f'  "{(SPECS / "workloads" / "inferencemax-8k1k.toml").as_posix()}",\n'
        f'  "{(SPECS / "deployments" / "gpt-oss-120b-tp8.toml").as_posix()}"]\n' + dep + extra)
    return spec


@pytest.mark.parametrize("cost_model", [None, "roofline"])
def test_without_chip_energy_power_is_the_tdp(cli, tmp_path, cost_model):
    """Power is not modelled: every feasible point draws the TDP, peak power is the TDP, tok/s per
    kW on the 'modelled' power equals the one on the TDP, and energy per token is TDP × chips over
    the replica's token rate (W / (tok/s) = J/tok)."""
    if cost_model == "roofline":
        pytest.importorskip("codesign_roofline")
    rc, out, err = cli("evaluate", _bare_gb200(tmp_path, cost_model=cost_model), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["design"]["peak_power_w"] == pytest.approx(GB200_TDP_W)
    pts = [p for p in doc["points"] if p["feasible"]]
    assert pts
    for p in pts:
        assert p["power_w"] == pytest.approx(GB200_TDP_W)
        assert p["mixed_tok_s_per_kw_modelled"] == pytest.approx(p["mixed_tok_s_per_kw"])
        assert p["mixed_tok_s_per_kw"] == pytest.approx(p["mixed_tok_s_per_chip"] / (GB200_TDP_W / 1e3))
        assert p["energy_j_per_token"] == pytest.approx(GB200_TDP_W / p["mixed_tok_s_per_chip"], rel=1e-5)


def test_without_chip_area_the_area_is_not_modelled(cli, tmp_path):
    """No [chip.area]: area_mm2 is null in JSON (NaN, 'not modelled'), not 0 mm², and the table
    says so, as it says that power is not modelled."""
    spec = _bare_gb200(tmp_path)
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 0, err
    assert json.loads(out)["design"]["area_mm2"] is None
    rc, out, err = cli("evaluate", spec)
    assert rc == 0, err
    text = " ".join(out.split())
    assert "area not modelled" in text and "power not modelled (no [chip.energy]" in text


def test_an_area_constraint_is_not_met_silently_without_chip_area(tmp_path):
    """The analytical model's area without [chip.area] is NaN, so a search's area bound cannot pass
    on a 0 mm² it never modelled (the search then says the cost model gives no area_mm2)."""
    from codesign.evaluation import evaluate
    from codesign.spec import load_spec

    ev = evaluate(load_spec(_bare_gb200(tmp_path)))
    assert math.isnan(float(ev.design["area_mm2"][0]))
    assert ev.feasible.any()


def _refused(res, *needles):
    rc, out, err = res
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err, err
    errors = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    for n in needles:
        assert n in errors[0], (n, err)
    return errors[0]


def test_an_empty_chip_energy_table_is_refused(cli, tmp_path):
    _refused(cli("evaluate", _bare_gb200(tmp_path, "[chip.energy]\n")),
             "bare.toml: chip.energy: gives no power")


def test_static_power_per_area_without_an_area_is_refused(cli, tmp_path):
    """static_per_area is W per mm² of the modelled area: with no [chip.area] there is none, and the
    key is named in the file that wrote it (not hw.toml, which wrote the rest of [chip])."""
    body = '[chip.energy]\nstatic_per_area = "0.1364 W/mm**2"\nper_flop_fp4 = "0.0728 pJ/FLOP"\n'
    _refused(cli("evaluate", _bare_gb200(tmp_path, body)),
             "bare.toml: chip.energy.static_per_area:", "[chip.area]")


@pytest.mark.parametrize("cmd", ["optimize", "evaluate"])
def test_searching_the_tdp_without_chip_energy_is_refused(cli, tmp_path, cmd):
    """Power taken as the TDP makes every TDP cost the same: a search of chip.tdp would only lower
    the divisor of tok/s per kW. Refused, naming the key, before any trial runs."""
    body = ('[search]\ntrials = 4\nobjectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
            '[search.params]\n"chip.tdp" = {low = "300 W", high = "1200 W"}\n')
    spec = _bare_gb200(tmp_path, body)
    args = ("optimize", spec, "--out", tmp_path / "out") if cmd == "optimize" else ("evaluate", spec)
    _refused(cli(*args), 'bare.toml: search.params."chip.tdp": cannot be searched without [chip.energy]')


# ----------------------------------------------------- deployments no framework runs, any cost model
ROOFLINE = SPECS / "examples" / "gb200-gpt-oss-120b-roofline.toml"


@pytest.mark.parametrize("body, words", [
    # gpt-oss-120b: 64 attention heads, 36 layers, 128 experts (specs/models/gpt-oss-120b.toml,
    # from its HF config); GB200 NVL72: a 72-chip scale-up domain (specs/hardware/gb200.toml)
    ("tp = 3", ["tp 3 does not divide the model's 64 attention heads"]),
    ("tp = 128", ["tp 128 is above the model's 64 attention heads",
                  "tp 128 is larger than the scale-up domain (72 chips"]),
    ("pp = 37", ["pp 37 is above the model's 36 layers"]),
    ("ep = 16", ["ep 16 is larger than the 8 chips of a stage"]),   # the example's TP8, no DP
    ("ep = 3", ["ep 3 does not divide the 8 chips of a stage"]),
])
def test_a_third_party_model_never_prices_a_deployment_no_framework_runs(cli, tmp_path, body, words):
    """The core marks these infeasible whatever the cost model; the roofline example (which checks
    only that weights and KV fit) priced TP 3, TP 1000 and PP 1000 before session 33."""
    pytest.importorskip("codesign_roofline")
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{ROOFLINE.as_posix()}"]\n[deployment]\n{body}\n')
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 1, err  # no feasible point
    doc = json.loads(out)
    assert not any(p["feasible"] for p in doc["points"])
    for w in words:
        assert w in doc["infeasible_reason"], doc["infeasible_reason"]


def test_searched_deployments_are_judged_one_by_one(tmp_path):
    """Overrides (a search's designs) are judged per design: of TP 2, 3, 4 and 8 on 64 heads only 3
    is refused, by the roofline example as by the analytical model."""
    pytest.importorskip("codesign_roofline")
    from codesign.evaluation import evaluate
    from codesign.spec import load_spec

    tps = np.array([2.0, 3.0, 4.0, 8.0])
    for cost_model in ("roofline", "analytical"):
        ev = evaluate(load_spec(ROOFLINE), {"deployment.tp": tps}, cost_model=cost_model)
        assert list(ev.feasible.any(axis=1)) == [True, False, True, True], cost_model
        assert "tp 3 does not divide the model's 64 attention heads" in ev.reasons[1]


def test_each_pool_of_a_disaggregated_deployment_is_named_with_its_own_values(tmp_path):
    """A disaggregated spec's rules run once per pool; each message names its pool and that pool's
    values. (The messages were closures written in one loop: all of them read the last pool's, and
    a decode TP 16 on 8-GPU nodes was reported as "prefill tp 1"; CI, stop 38.)"""
    from codesign.evaluation import deployment_problems
    from codesign.spec import load_spec

    spec = tmp_path / "d.toml"
    spec.write_text(f'include = ["{(SPECS / "examples" / "gb200-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[deployment]\nmode = "disaggregated"\n'
                    '[deployment.prefill]\nchips = 8\ntp = 8\n[deployment.decode]\nchips = 8\ntp = 8\n')
    # gpt-oss-120b: 64 attention heads (its HF config); decode TP 3 breaks the head rule, and 8
    # chips are not whole TP-3 instances (8 mod 3 = 2); prefill TP 8 on 8 chips is fine. Then the
    # pools swapped: prefill TP 3, decode TP 8.
    got = deployment_problems(load_spec(spec), {"deployment.decode.tp": np.array([3.0, 8.0]),
                                                "deployment.prefill.tp": np.array([8.0, 3.0])})
    assert got[0] == ("decode tp 3 does not divide the model's 64 attention heads; "
                      "decode chips 8 are not whole instances of tp × dp_attention × pp = 3 chips")
    assert got[1] == ("prefill tp 3 does not divide the model's 64 attention heads; "
                      "prefill chips 8 are not whole instances of tp × dp_attention × pp = 3 chips")


def test_a_cost_model_that_cannot_price_the_spec_is_named_where_it_was_chosen(cli, tmp_path):
    """The roofline example prices aggregated serving only (its supports()); the refusal names the
    file that chose it and the key, and what the spec asks for."""
    pytest.importorskip("codesign_roofline")
    spec = tmp_path / "dis.toml"
    spec.write_text(f'include = ["{ROOFLINE.as_posix()}"]\n[deployment]\nmode = "disaggregated"\n'
                    '[deployment.prefill]\nchips = 8\ntp = 8\n[deployment.decode]\nchips = 8\ntp = 8\n')
    _refused(cli("evaluate", spec), f"{ROOFLINE.name}: deployment.cost_model: cost model 'roofline'",
             "(disaggregated serving of gpt-oss-120b)")
    _refused(cli("evaluate", spec, "--cost-model", "roofline"), "--cost-model roofline: cost model 'roofline'")


# ------------------------------------------------- a memory tier the spec does not declare, varied
GB200_EXAMPLE = SPECS / "examples" / "gb200-gpt-oss-120b.toml"  # GB200 declares no [memory.sram]


def test_a_grid_over_a_tier_the_spec_lacks_is_refused(cli, tmp_path):
    """256 MiB of SRAM on a spec with no [memory.sram] had no bandwidth: priced at a TPOT of 44
    million seconds, as feasible. The axis is refused at its key, nothing written."""
    study = tmp_path / "g.toml"
    study.write_text(f'name = "g"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{GB200_EXAMPLE.as_posix()}"\n'
                     'metric = "min_tpot_s"\nx = { key = "memory.sram.capacity", values = ["0 MiB", "256 MiB"] }\n'
                     'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n')
    _refused(cli("study", "run", study, "--out", tmp_path / "o"),
             "g.toml: steps.0.x.key: 'memory.sram.capacity': the spec has no [memory.sram] tier to vary")
    assert not (tmp_path / "o").exists()


def test_a_search_over_a_tier_the_spec_lacks_is_refused(cli, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[search]\ntrials = 3\n'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    '[search.params]\n"memory.sram.capacity" = {low = "1 MiB", high = "1 GiB", log = true}\n')
    _refused(cli("optimize", spec, "--out", tmp_path / "o"),
             's.toml: search.params."memory.sram.capacity": the spec has no [memory.sram] tier to vary')


def test_overrides_give_an_absent_tier_a_capacity_only_with_its_bandwidth(tmp_path):
    """Through the API: a capacity for the absent tier without a bandwidth is refused; 0 B (the
    tier absent, as codesign validate sends it) or a capacity with its bandwidth is priced."""
    from codesign.errors import SpecError
    from codesign.evaluation import evaluate
    from codesign.spec import load_spec

    spec = load_spec(GB200_EXAMPLE)
    with pytest.raises(SpecError, match=r"memory\.sram\.capacity: the spec has no \[memory\.sram\] tier"):
        evaluate(spec, {"memory.sram.capacity": np.array([0.0, 256 * 2**20])})
    assert evaluate(spec, {"memory.sram.capacity": np.array([0.0, 0.0])}).feasible.any()
    ev = evaluate(spec, {"memory.sram.capacity": np.array([256 * 2**20]), "memory.sram.bandwidth": np.array([100e12])})
    assert ev.feasible.any()


# ------------------------------------------- searching or plotting what the chip does not model
_HW_SEARCH = ('[search]\ntrials = 2\n'
              'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
              '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "16 TB/s"}\n')


@pytest.mark.parametrize("body, key, words", [
    ('[[search.constraints]]\nmetric = "area_mm2"\nmax = "1716 mm**2"\n', "search.constraints.0.metric",
     "area_mm2 is not modelled for this chip: it has no [chip.area]"),
    ('[[search.constraints]]\nmetric = "peak_power_w"\nmax = "1200 W"\n', "search.constraints.0.metric",
     "peak_power_w is not modelled for this chip: it has no [chip.energy]"),
])
def test_a_bound_on_what_the_chip_does_not_model_is_refused(cli, tmp_path, body, key, words):
    """An area bound on a chip without [chip.area] made every trial infeasible ('the cost model
    gives no area_mm2'); a power bound without [chip.energy] bounded the TDP (fresh-user trial,
    session 33). Refused before any trial, naming the file that declares the chip."""
    spec = _bare_gb200(tmp_path, _HW_SEARCH + body)
    err = _refused(cli("optimize", spec, "--out", tmp_path / "o"), f"bare.toml: {key}: {words}")
    assert "hw.toml)" in err


def test_an_objective_on_what_the_chip_does_not_model_is_refused(cli, tmp_path):
    body = _HW_SEARCH.replace('objectives = [', 'objectives = [{metric = "area_mm2", direction = "minimize"}, ')
    _refused(cli("sweep", _bare_gb200(tmp_path, body), "--out", tmp_path / "o", "--points", "10"),
             "search.objectives.0.metric: area_mm2 is not modelled for this chip")


def test_a_hardware_search_of_a_chip_without_energy_or_area_says_so(tmp_path):
    """The warnings said to add peak_power_w and area_mm2 bounds, which cannot hold on such a chip."""
    from codesign.search import budget_warnings
    from codesign.spec import load_spec

    power, area = budget_warnings(load_spec(_bare_gb200(tmp_path, _HW_SEARCH)))
    assert "of a chip with no [chip.energy]: power is not modelled" in power and "max =" not in power
    assert "of a chip with no [chip.area]: area is not modelled" in area and "max =" not in area


def test_a_grid_over_the_tdp_or_of_the_area_of_a_bare_chip_is_refused(cli, tmp_path):
    spec = _bare_gb200(tmp_path)
    study = tmp_path / "g.toml"
    study.write_text(f'name = "g"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{spec.as_posix()}"\n'
                     'metric = "area_mm2"\nx = { key = "chip.tdp", values = ["300 W", "800 W"] }\n'
                     'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n')
    rc, out, err = cli("study", "run", study, "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err, err
    assert "steps.0.x.key: 'chip.tdp': cannot be searched without [chip.energy]" in err
    assert "steps.0.metric: area_mm2 is not modelled for this chip" in err
    assert not (tmp_path / "o").exists()


def test_evaluate_json_lists_what_is_not_modelled(cli, tmp_path):
    rc, out, err = cli("evaluate", _bare_gb200(tmp_path), "--json")
    assert rc == 0 and json.loads(out)["not_modelled"] == ["power", "area"]
    rc, out, err = cli("evaluate", GB200_EXAMPLE, "--json")
    assert rc == 0 and json.loads(out)["not_modelled"] == []


def test_the_deployment_problem_is_said_before_the_cost_models_own_reason(cli, tmp_path):
    """The roofline example refuses points whose KV cache does not fit; on a TP 16 deployment in an
    8-chip domain that reason hid the TP problem from C = 64 up (fresh-user trial, session 33)."""
    pytest.importorskip("codesign_roofline")
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{ROOFLINE.as_posix()}"]\n[network]\nscaleup_domain = 8\n[deployment]\ntp = 16\n'
                    '[workload]\nconcurrency = [1, 100000]\n')
    rc, out, err = cli("evaluate", spec, "--json")
    doc = json.loads(out)
    for p in doc["points"]:
        assert p.get("infeasible_reason", "").startswith("tp 16 is larger than the scale-up domain"), p


def test_a_reference_that_names_nothing_is_refused_by_sweep_too(cli, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n'
                    + _HW_SEARCH.replace("[search]\n", '[search]\nreference = "nosuch.toml"\n'))
    for args in (("optimize", spec, "--out", tmp_path / "o"), ("sweep", spec, "--out", tmp_path / "p", "--points", "10")):
        # and says which file it looked for (a relative path is read beside the file that sets it)
        _refused(cli(*args), "s.toml: search.reference: 'nosuch.toml' is neither a registered baseline",
                 f"no file {tmp_path / 'nosuch.toml'}")


def test_a_partial_chip_energy_is_warned_about(cli, tmp_path):
    """[chip.energy] with only an energy per FLOP priced static power, HBM reads and links at 0 W
    (1.07 W per chip at one user; fresh-user trial, session 33): evaluate warns and lists them."""
    spec = _bare_gb200(tmp_path, '[chip.energy]\nper_flop_fp4 = "0.0728 pJ/FLOP"\n')
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 0, err
    assert json.loads(out)["power_gaps"] == ["chip.energy.static (or static_per_area)",
                                             "memory.hbm.energy_per_byte", "network.scaleup_energy_per_byte"]
    rc, out, err = cli("evaluate", spec)
    assert "warning: the chip's power leaves out chip.energy.static" in err
    rc, out, err = cli("evaluate", GB200_EXAMPLE)  # the shipped hardware gives every figure
    assert rc == 0 and "warning" not in err, err


# ------------------------------------------------------- keys the spec's serving mode does not read
# A key nothing reads was priced as if absent, silently: [deployment.prefill] under an aggregated
# deployment, top-level tp in a disaggregated one, acceptance_rate with no draft tokens (session 34).
POOLS = "[deployment.prefill]\nchips = 8\ntp = 8\n[deployment.decode]\nchips = 8\ntp = 8\n"


@pytest.mark.parametrize("body, line", [
    # the example's deployment include sets mode = "aggregated"; pools written over it are not read
    ("[deployment.prefill]\nchips = 8\ntp = 8\n", 'deployment.prefill: not read: deployment.mode is "aggregated"'),
    # one file that says disaggregated and gives the aggregated layout too contradicts itself
    (f'[deployment]\nmode = "disaggregated"\nep = 2\n{POOLS}',
     'deployment.ep: not read: deployment.mode is "disaggregated", where each pool has its own '
     "(deployment.prefill.ep, deployment.decode.ep)"),
    ("[deployment]\nacceptance_rate = 0.7\n",
     "deployment.acceptance_rate: not read: deployment.speculative_tokens is 0"),
    # TensorRT-LLM's attention-DP balance needs attention-DP ranks in an aggregated engine
    # (fresh-user trial, session 38: both were priced as if absent under a title naming the balance)
    ("[deployment]\nattention_dp_balance_timeout_iters = 60\n",
     "deployment.attention_dp_balance_timeout_iters: not read: deployment.dp_attention is 1"),
    (f'[deployment]\nmode = "disaggregated"\nattention_dp_balance_timeout_iters = 60\n{POOLS}',
     'deployment.attention_dp_balance_timeout_iters: not read: deployment.mode is "disaggregated"'),
])
def test_a_key_the_serving_mode_does_not_read_is_refused(cli, tmp_path, body, line):
    spec = tmp_path / "u.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n{body}')
    _refused(cli("evaluate", spec), f"u.toml: {line}")


def _priced_alike(cli, spec, reference):
    """``codesign evaluate --json`` prices ``spec`` and ``reference`` at the same points (both exit 0)."""
    rc, out, err = cli("evaluate", spec, "--json")
    rc0, out0, err0 = cli("evaluate", reference, "--json")
    assert rc == rc0 == 0, err + err0
    assert json.loads(out)["points"] == json.loads(out0)["points"]


def test_the_spec_may_override_an_included_mode_on_purpose(cli, tmp_path):
    """mode = "aggregated" in the spec's own file over a disaggregated include (whose pools TOML
    cannot delete) is an override, not a mistake: priced as the aggregated deployment alone,
    the pools read by nothing. The inherited top-level tp 8 of a disaggregated spec likewise."""
    (tmp_path / "dis.toml").write_text('[deployment]\nmode = "disaggregated"\n' + POOLS)
    over = tmp_path / "over.toml"
    over.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}", "dis.toml"]\n[deployment]\nmode = "aggregated"\n')
    _priced_alike(cli, over, GB200_EXAMPLE)
    # the example's tp = 8 (its deployment include) under the spec's own disaggregated mode
    dis = tmp_path / "dis-own.toml"
    dis.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\nmode = "disaggregated"\n{POOLS}')
    rc, _, err = cli("evaluate", dis)
    assert rc == 0, err


def test_the_spec_may_turn_attention_dp_off_under_an_included_balance(cli, tmp_path):
    """The attention-DP balance is read only with dp_attention > 1, so two keys decide it (mode and
    dp_attention): dp_attention = 1 in the spec's own file over an include that sets the balance
    with attention DP is an override on purpose, priced as the spec without the balance; the same
    file setting both contradicts itself and is refused."""
    (tmp_path / "bal.toml").write_text("[deployment]\ntp = 1\nep = 4\ndp_attention = 4\n"
                                       "attention_dp_balance_timeout_iters = 60\n")
    over = tmp_path / "over.toml"
    over.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}", "bal.toml"]\n[deployment]\ndp_attention = 1\nep = 1\n')
    plain = tmp_path / "plain.toml"
    plain.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\ntp = 1\nep = 1\ndp_attention = 1\n')
    _priced_alike(cli, over, plain)
    # and its table does not name a balance it did not price (fresh-user trial, session 38 review)
    rc, out, err = cli("evaluate", over)
    assert rc == 0 and "balance" not in out, err
    own = tmp_path / "own.toml"
    own.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\ntp = 1\n'
                   "attention_dp_balance_timeout_iters = 60\n")
    _refused(cli("evaluate", own), "own.toml: deployment.attention_dp_balance_timeout_iters: not read")


@pytest.mark.parametrize("table, body, line", [
    ("params", '"deployment.prefill.tp" = {choices = [4, 8]}',
     'search.params."deployment.prefill.tp": not read: deployment.mode is "aggregated"'),
    ("params", '"deployment.acceptance_rate" = {low = 0.2, high = 0.9}',
     'search.params."deployment.acceptance_rate": not read: deployment.speculative_tokens is 0'),
    ("envelope", '"deployment.acceptance_rate" = [0.2, 0.9]',
     'search.envelope."deployment.acceptance_rate": not read: deployment.speculative_tokens is 0'),
    ("params", '"deployment.attention_dp_balance_timeout_iters" = {low = 1, high = 100}',
     'search.params."deployment.attention_dp_balance_timeout_iters": not read: deployment.dp_attention is 1'),
])
def test_a_search_over_a_key_the_serving_mode_does_not_read_is_refused(cli, tmp_path, table, body, line):
    spec = tmp_path / "s.toml"
    params = "" if table == "params" else '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "8 TB/s"}\n'
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[search]\ntrials = 2\n'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    f'{params}[search.{table}]\n{body}\n')
    _refused(cli("optimize", spec, "--out", tmp_path / "o"), f"s.toml: {line}")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("deployment, varied", [
    # the balance is read at the search's dp_attention = 4 choice, though the spec's own is 1
    ("tp = 1\nep = 1\nattention_dp_balance_timeout_iters = 60\n", '"deployment.dp_attention" = [1, 4]'),
    # the acceptance is read at the search's speculative_tokens = 3 choice, though the spec's own is 0
    ("acceptance_rate = 0.7\n", '"deployment.speculative_tokens" = [0, 3]'),
])
def test_a_deployment_key_read_at_some_of_the_search_s_choices_is_not_refused(cli, tmp_path, deployment, varied):
    """A [deployment] key that the spec's own deployment leaves unread but the search reads at some
    of its choices (it varies the key that switches it on) is the spec's word for those choices: it
    was refused as not read, as if nothing varied the switch (noticed in session 38; the same
    search over the key itself in [search.params] was already allowed)."""
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\n{deployment}[search]\ntrials = 2\n'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "8 TB/s"}\n'
                    f'[search.envelope]\n{varied}\n')
    rc, out, err = cli("optimize", spec, "--out", tmp_path / "o", "--json")
    assert rc == 0, err
    assert json.loads(out)["pareto"]
    # evaluate prices the spec's own deployment, where the key is not read: it says so, as a warning
    # is no refusal of a spec that a search reads
    rc, out, err = cli("evaluate", spec)
    assert rc == 0 and "Traceback" not in err, err


FLAGSHIP = SPECS / "jalapeno-gpt-oss-120b.toml"  # aggregated; [search.envelope] "deployment.tp" = [1, 2, 4, 8]


def test_a_disaggregated_variant_of_a_search_leaves_out_its_include_s_aggregated_envelope(cli, tmp_path):
    """The flagship's [search.envelope] "deployment.tp" is read only by aggregated serving. A spec
    that includes it and sets mode = "disaggregated" in its own file overrides that on purpose, and
    TOML cannot delete an included key: it was refused (noticed in session 34). As with the
    include's own [deployment] tp, the entry is left out: the search runs over the spec's pools."""
    from codesign.spec import load_spec

    spec = tmp_path / "dis.toml"
    spec.write_text(f'include = ["{FLAGSHIP.as_posix()}"]\n[deployment]\nmode = "disaggregated"\n{POOLS}')
    assert "deployment.tp" not in load_spec(spec).search.envelope
    assert "deployment.tp" in load_spec(FLAGSHIP).search.envelope
    rc, out, err = cli("optimize", spec, "--trials", "2", "--out", tmp_path / "o", "--json")
    assert rc == 0, err
    assert json.loads(out)["pareto"]


def test_a_spec_may_search_a_key_its_include_puts_in_the_envelope(cli, tmp_path):
    """The flagship's [search.envelope] has "deployment.tp" = [1, 2, 4, 8]. A spec that includes it
    and searches deployment.tp in its own [search.params] was refused, the error naming the
    flagship, and TOML cannot delete the included key (fresh-user trial, session 35). The later
    file's word holds: the search varies tp, the envelope does not."""
    from codesign.spec import load_spec

    spec = tmp_path / "tp.toml"
    spec.write_text(f'include = ["{FLAGSHIP.as_posix()}"]\n[search.params]\n"deployment.tp" = {{ choices = [2, 4] }}\n')
    s = load_spec(spec).search
    assert "deployment.tp" in s.params and "deployment.tp" not in s.envelope
    rc, out, err = cli("optimize", spec, "--trials", "2", "--out", tmp_path / "o", "--json")
    assert rc == 0, err
    assert {d["params"]["deployment.tp"] for d in json.loads(out)["pareto"]} <= {2, 4}


@pytest.mark.parametrize("own, included, line", [
    # one file that says disaggregated and keeps an aggregated envelope contradicts itself
    (f'[deployment]\nmode = "disaggregated"\n{POOLS}[search.envelope]\n"deployment.ep" = [1, 2]\n', "",
     's.toml: search.envelope."deployment.ep": not read: deployment.mode is "disaggregated"'),
    # the envelope is the spec's own, the disaggregated mode its include's: the envelope is the later word
    ('[search.envelope]\n"deployment.ep" = [1, 2]\n', f'[deployment]\nmode = "disaggregated"\n{POOLS}',
     's.toml: search.envelope."deployment.ep": not read: deployment.mode is "disaggregated"'),
])
def test_an_envelope_key_its_own_mode_does_not_read_is_still_refused(cli, tmp_path, own, included, line):
    (tmp_path / "inc.toml").write_text(included)
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{FLAGSHIP.as_posix()}", "inc.toml"]\n{own}')
    _refused(cli("optimize", spec, "--out", tmp_path / "o"), line)
    assert not (tmp_path / "o").exists()


def _search_is_accepted(tmp_path, deployment: str, search: str, params: str) -> None:
    """The example with ``deployment`` (TOML lines under [deployment], tables after them),
    ``search`` (lines under [search]) and ``params`` (lines under [search.params]) passes
    :func:`codesign.search.check_search`: no SpecError."""
    from codesign.search import check_search
    from codesign.spec import load_spec

    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\n{deployment}[search]\n{search}'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    f"[search.params]\n{params}")
    check_search(load_spec(spec))


def test_acceptance_rate_is_read_where_the_same_search_varies_the_draft_tokens(tmp_path):
    _search_is_accepted(tmp_path, "", "trials = 2\n", '"deployment.acceptance_rate" = {low = 0.2, high = 0.9}\n'
                                                     '"deployment.speculative_tokens" = {choices = [0, 2]}\n')


def test_a_grid_over_acceptance_rate_without_draft_tokens_is_refused(cli, tmp_path):
    study = tmp_path / "g.toml"
    study.write_text(f'name = "g"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{GB200_EXAMPLE.as_posix()}"\n'
                     'metric = "min_tpot_s"\nx = { key = "deployment.acceptance_rate", values = [0.5, 0.8] }\n'
                     'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n')
    _refused(cli("study", "run", study, "--out", tmp_path / "o"),
             "g.toml: steps.0.x.key: 'deployment.acceptance_rate': not read: deployment.speculative_tokens is 0")


def test_every_out_of_range_deployment_count_is_named_at_once(cli, tmp_path):
    """The [deployment] checks stopped at the first (speculative_tokens = 40 hid max_batch_size = 0;
    noticed in session 33). The ranges are the README's: max_batch_size a whole number in
    [1, 10000000], scheduler_recv_interval in [1, 10000], speculative_tokens in [0, 16],
    acceptance_rate in [0, 1)."""
    spec = tmp_path / "d.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\nspeculative_tokens = 40\n'
                    "max_batch_size = 0\nscheduler_recv_interval = 0\nacceptance_rate = 2\n")
    rc, _, err = cli("evaluate", spec)
    assert rc == 2 and "Traceback" not in err
    head, *lines = err.strip().splitlines()
    assert head == f"error: {spec}: 4 problems", err  # the count line above several (a23c2b2)
    assert sorted(lines) == sorted(f"error: {spec}: deployment.{line}" for line in (
        "max_batch_size: must be a whole number in [1, 10000000] (got 0)",
        "scheduler_recv_interval: must be a whole number in [1, 10000] (got 0)",
        "speculative_tokens: must be a whole number in [0, 16] (got 40)",
        "acceptance_rate: must be in [0, 1) (got 2.0)")), err


def test_an_override_of_the_mode_holds_at_any_include_depth(cli, tmp_path):
    """A disaggregated base over the example's aggregated tp = 8 (its deployment include), itself
    included by a spec that changes only the workload: the base's mode overrides the tp it
    inherits, however deep (the override held only in the top file; fresh-user trial, session 34).
    Its own speculative_tokens = 0 over the base's drafts likewise."""
    (tmp_path / "base.toml").write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\n'
                                        'mode = "disaggregated"\nspeculative_tokens = 3\nacceptance_rate = 0.8\n'
                                        + POOLS)
    for name, body in (("osl.toml", "[workload]\nosl = 512\n"), ("drafts.toml", "[deployment]\nspeculative_tokens = 0\n")):
        (tmp_path / name).write_text(f'include = ["base.toml"]\n{body}')
        rc, _, err = cli("evaluate", tmp_path / name)
        assert rc == 0, err


def test_a_design_file_of_a_spec_that_overrides_its_mode_evaluates(cli, tmp_path):
    """optimize's design files are the merged spec: a disaggregated spec over the example's
    aggregated tp = 8 wrote both, and the file was refused for the unread tp (fresh-user trial,
    session 34). The file leaves out what its mode does not read, and evaluates as written."""
    spec = tmp_path / "dis.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\nmode = "disaggregated"\n{POOLS}'
                    '[search]\ntrials = 4\nbatch_size = 4\nseed_sweep = 0\ngradient_seeds = 0\n'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    '[search.params]\n"deployment.decode.tp" = {choices = [4, 8]}\n')
    rc, _, err = cli("optimize", spec, "--out", tmp_path / "o")
    assert rc == 0, err
    designs = sorted((tmp_path / "o" / "designs").glob("*.toml"))
    assert designs
    for d in designs:
        text = d.read_text()
        assert not re.search(r"(?m)^tp = ", text.split("[deployment.prefill]")[0].split("[deployment]")[1]), text
        rc, _, err = cli("evaluate", d)
        assert rc == 0, err


def test_a_reference_is_priced_over_the_envelope_keys_its_own_mode_reads(cli, tmp_path):
    """A disaggregated search over deployment.decode.tp, compared with the aggregated example:
    the reference was reported "at its best over deployment.decode.tp = 1, 2, 4, 8" and at decode
    TP 1, while priced at its own TP 8 (fresh-user trial, session 34). It is now said to be priced
    at its own deployment, with no choices."""
    spec = tmp_path / "dis.toml"
    spec.write_text(f'include = ["{GB200_EXAMPLE.as_posix()}"]\n[deployment]\nmode = "disaggregated"\n{POOLS}'
                    f'[search]\ntrials = 4\nbatch_size = 4\nseed_sweep = 0\ngradient_seeds = 0\n'
                    f'reference = "{GB200_EXAMPLE.as_posix()}"\n'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "16 TB/s"}\n'
                    '[search.envelope]\n"deployment.decode.tp" = [4, 8]\n')
    rc, out, err = cli("optimize", spec, "--out", tmp_path / "o")
    assert rc in (0, 1), err
    ref = json.loads((tmp_path / "o" / "pareto.json").read_text())["reference"]
    assert ref["choices"] == {} and ref["configs"] == {}, ref
    assert "each metric at its best over its deployment" in out or "cannot be served" in out, out


def test_a_registered_baseline_takes_a_spec_that_overrides_an_included_mode(tmp_path):
    """reference = "gb200" rebuilds the spec on the baseline's hardware; its origins lost the
    merge order, so the spec's own mode = "disaggregated" over the example's tp = 8 read as one
    file contradicting itself, and the search was refused (session 34)."""
    _search_is_accepted(tmp_path, f'mode = "disaggregated"\n{POOLS}', 'reference = "gb200"\n',
                        '"memory.hbm.bandwidth" = {low = "4 TB/s", high = "16 TB/s"}\n')


def test_a_prefill_pool_whose_weights_do_not_fit_says_so(tmp_path):
    """A disaggregated design whose decode pool fits but whose prefill pool does not said only
    "infeasible deployment" (session 48). DeepSeek-R1 on one GB300 as the prefill pool: its routed
    experts alone are 256 experts × 58 MoE layers × 3 × 7168 × 2048 = 653.9e9 parameters (its HF
    config: n_routed_experts, num_hidden_layers 61 − first_k_dense_replace 3, hidden_size,
    moe_intermediate_size), 367.8 GB in NVFP4 (4 bits + one E4M3 scale per 16: 0.5625 B each),
    more than a GB300's HBM. The rest of the model (about 17e9 parameters, FP8) adds under 25 GB.
    The decode pool (DEP 8) fits, and the reason does not blame it."""
    import re

    from codesign.evaluation import evaluate
    from codesign.spec import load_spec

    spec = tmp_path / "d.toml"
    spec.write_text(f'include = ["{(SPECS / "examples" / "gb300-deepseek-r1.toml").as_posix()}"]\n'
                    '[deployment]\nmode = "disaggregated"\n'
                    '[deployment.prefill]\nchips = 1\ntp = 1\ndp_attention = 1\nep = 1\n'
                    '[deployment.decode]\nchips = 8\ntp = 1\ndp_attention = 8\nep = 8\n')
    ev = evaluate(load_spec(spec))
    assert not ev.feasible.any()
    why = ev.reasons[0]
    m = re.fullmatch(r"prefill pool: weights need ([\d.]+) GB per chip, [\d.]+ GB more than the memory "
                     r"holds \(([\d.]+) GB\)", why)
    assert m, why
    assert 367.8 < float(m.group(1)) < 367.8 + 25
    assert float(m.group(2)) < 367.8
