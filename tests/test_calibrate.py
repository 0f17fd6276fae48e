"""codesign calibrate: holdout by configuration, knob transforms, a small end-to-end fit."""

import hashlib
import math

import pytest

from codesign.calibrate import _from_u, _to_u, calibrate, split_holdout, write_calibration
from codesign.errors import CodesignError
from codesign.validate import read_measured


def test_holdout_is_by_configuration(shared_data):
    _, pts = read_measured(shared_data / "measured" / "aiconfigurator_silicon_public.csv")
    train, hold = split_holdout(pts, 0.3, seed=1)
    assert train and hold
    assert not ({p.config_key() for p in train} & {p.config_key() for p in hold})
    assert len(train) + len(hold) == sum(p.status == "ok" for p in pts)


def test_holdout_side_depends_only_on_the_configuration(shared_data):
    # dropping every other configuration must not move any remaining one across the split (a
    # permutation of all keys did), and the held-out share is near the asked fraction
    _, pts = read_measured(shared_data / "measured" / "aiconfigurator_silicon_public.csv")
    train, hold = split_holdout(pts, 0.3, seed=2)
    keys = sorted({p.config_key() for p in pts if p.status == "ok"}, key=repr)
    kept = set(keys[::2])
    train2, hold2 = split_holdout([p for p in pts if p.config_key() in kept], 0.3, seed=2)
    assert {p.config_key() for p in hold2} == {p.config_key() for p in hold} & kept
    share = len({p.config_key() for p in hold}) / len(keys)
    assert 0.2 < share < 0.4  # binomial(n > 300, 0.3): 0.3 +- 0.1 is > 4 sigma
    other = {p.config_key() for p in split_holdout(pts, 0.3, seed=3)[1]}
    assert other != {p.config_key() for p in hold}  # the seed matters


def test_transform_roundtrip():
    knobs = {"compute_decode": 0.37, "memory_bandwidth": 0.9, "step_overhead_s": 2e-4}
    back = {k: float(v) for k, v in _from_u(_to_u(knobs)).items()}
    for k in knobs:
        assert back[k] == pytest.approx(knobs[k], rel=1e-5)


def test_small_fit_and_provenance(shared_data, tmp_path):
    f = shared_data / "measured" / "inferencemax_public.csv"
    doc = calibrate([f], systems=["gb200"], holdout=0.3, seed=0, steps=8, max_rows=60)
    prov = doc["provenance"]
    assert prov["data"][0]["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert prov["rows_train"] > 0 and prov["rows_holdout"] > 0
    # how to reproduce it: the systems given their own knobs and the InferenceMAX statistic fitted
    assert prov["systems"] == sorted(doc["systems"]) == ["gb200"]
    assert prov["inferencemax_statistic"] == "median"
    from codesign_analytical.model import ENGINE_KNOBS, knob_problem

    for k, v in doc["shared"].items():
        assert math.isfinite(v) and v > 0
        assert knob_problem(k, v) is None, (k, v)  # fractions stay fractions, times stay times
    # an engine setting (the receive wait, in decode iterations) is the same on every system: it
    # gets no per-system offset, only the engine family's
    assert ENGINE_KNOBS and all(doc["systems"]["gb200"][k] == pytest.approx(doc["shared"][k], rel=1e-6)
                                for k in ENGINE_KNOBS)
    # a serving stack (Dynamo + an engine) offsets the engine settings only, on top of its family
    assert doc["stacks"] and all(set(off) == set(ENGINE_KNOBS) for off in doc["stacks"].values())
    # a model's routing on the served prompts is the same on any system and engine: one shared value
    from codesign_analytical.model import WORKLOAD_KNOBS

    assert WORKLOAD_KNOBS and all(doc["systems"]["gb200"][k] == pytest.approx(doc["shared"][k], rel=1e-6)
                                  for k in WORKLOAD_KNOBS)
    assert doc["frameworks"] and all(not set(off) & set(WORKLOAD_KNOBS) for off in doc["frameworks"].values())
    e = doc["errors"]["train"]
    assert "before" in e and "after" in e
    write_calibration(doc, tmp_path / "cal.toml")
    import tomllib

    back = tomllib.loads((tmp_path / "cal.toml").read_text())
    assert back["schema_version"] == 1 and back["shared"]


def test_engine_offsets_have_their_own_pull(shared_data):
    """The loss's L2 pull on an engine family's offset of an engine setting (ENGINE_KNOBS) is
    ``pull_engine``·δ², on any other knob's offset ``pull_offsets``·δ²: at the same parameters two
    losses that differ only in pull_engine differ by (a − b)·δ² for an engine knob's offset δ and
    not at all for another knob's (hand count: the data term is the same at the same parameters)."""
    import numpy as np

    from codesign.calibrate import PULL_ENGINE, Fitter, framework_family
    from codesign.validate import read_measured
    from codesign_analytical.model import DEFAULT_EFFICIENCY, ENGINE_KNOBS, FIT_START

    _, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv", "median")
    pts = [p for p in pts if p.status == "ok" and p.system_key == "h100"][:6]
    fam = sorted({framework_family(p.framework) for p in pts} - {None})
    f = Fitter(pts, systems=[], families=fam)
    P0 = f.params0({**DEFAULT_EFFICIENCY, **FIT_START})
    eng, other = f.knobs.index(ENGINE_KNOBS[0]), f.knobs.index("compute_decode")
    for j, expect in ((eng, 1.0), (other, 0.0)):
        P = {k: np.array(v) for k, v in P0.items()}
        P["frameworks"][0, j] = 0.5
        a = float(f.loss_fn(P0, 1e-3, 1e-2, pull_engine=1e-2)(P))
        b = float(f.loss_fn(P0, 1e-3, 1e-2, pull_engine=1e-4)(P))
        assert a - b == pytest.approx(expect * (1e-2 - 1e-4) * 0.25, rel=1e-3, abs=1e-7)
    assert PULL_ENGINE < 1e-2  # the shipped pull is the weaker one (docs/baselines.md, session 47)


def test_models_filter_fits_only_those_models(shared_data):
    """--models: only the named models' rows are read (the shipped calibration was fit on the five
    models priced before session 6; docs/baselines.md gives the command)."""
    f = shared_data / "measured" / "inferencemax_public.csv"
    doc = calibrate([f], systems=[], holdout=0.3, seed=0, steps=2, max_rows=40, models=["gpt-oss-120b"])
    assert doc["provenance"]["models"] == ["gpt-oss-120b"]
    assert doc["domain"]["models"] == ["gpt-oss-120b"]
    with pytest.raises(CodesignError, match="--models: unknown model 'gpt-oss'"):
        calibrate([f], models=["gpt-oss"], steps=1)


def test_refit_all_is_the_same_fit_on_every_row(shared_data):
    """--refit-all: the holdout error scores the fit on the training split; the written coefficients
    are the same procedure run on every row, i.e. what ``holdout=0`` fits (same start, steps, pulls)."""
    f = shared_data / "measured" / "inferencemax_public.csv"
    kw = dict(systems=["gb200"], seed=0, steps=4, max_rows=60)
    split = calibrate([f], holdout=0.3, **kw)
    refit = calibrate([f], holdout=0.3, refit_all=True, **kw)
    whole = calibrate([f], holdout=0.0, **kw)
    prov = refit["provenance"]
    assert prov["refit_all"] is True and split["provenance"]["refit_all"] is False
    # the procedure's holdout error is the split fit's, unchanged
    assert refit["errors"]["holdout"] == split["errors"]["holdout"]
    # the written knobs are the all-rows fit's, scored on all rows
    n = prov["rows_train"] + prov["rows_holdout"]
    assert refit["errors"]["refit"]["after"]["ttft"]["n"] == whole["errors"]["train"]["after"]["ttft"]["n"]
    assert sum(s["rows"] for s in refit["errors"]["refit"]["by_system"].values()) == n
    for k, v in whole["shared"].items():
        assert refit["shared"][k] == pytest.approx(v, rel=1e-3), k
    assert refit["domain"] == whole["domain"]
    for m in ("ttft", "tpot", "tput"):
        assert refit["errors"]["refit"]["after"][m]["mape"] == pytest.approx(
            whole["errors"]["train"]["after"][m]["mape"], rel=1e-3), m
    # (the split fit's knobs are not compared: Adam's first steps move every knob by its learning
    # rate whatever the rows, so a few steps on 70% and on 100% of the rows land alike)


def test_the_robust_loss_is_the_ape_capped_softly_at_one():
    """tanh(APE): within 1% of the APE at 25% off (tanh 0.25 = 0.2449), and a row 8× over (APE 7)
    or 10× under (APE 0.9) counts at most 1 (tanh 7 = 0.999998, tanh 0.9 = 0.7163), where the plain
    APE counts the 8× row as seven 100%-off rows."""
    import numpy as np

    from codesign.calibrate import row_error

    r = np.array([1.0, 1.25, 8.0, 0.1])
    ape = np.asarray(row_error(r, "ape"))
    rob = np.asarray(row_error(r, "robust"))
    assert ape == pytest.approx([0.01, 0.2502, 7.0, 0.90006], rel=1e-3)
    assert rob == pytest.approx([0.0099997, 0.2451, 0.999998, 0.71620], rel=1e-3)
    assert float(row_error(np.e, "log")) == pytest.approx(1.0, rel=1e-6)


def test_the_cli_offers_the_library_losses_and_default():
    """`codesign calibrate --loss` lists the loss kinds of codesign.calibrate.LOSSES, defaulting to
    DEFAULT_LOSS (the CLI spells them out so that `codesign --help` imports nothing heavy)."""
    from codesign.calibrate import DEFAULT_LOSS, LOSSES
    from codesign.cli import build_parser

    act = next(a for a in build_parser()._subparsers._group_actions[0].choices["calibrate"]._actions
               if a.dest == "loss")
    assert act.default == DEFAULT_LOSS and tuple(act.choices) == tuple(LOSSES)


def test_exclude_systems_leaves_their_rows_out(shared_data, cli, tmp_path):
    """--exclude-systems: a leave-one-system-out fit reads none of that system's rows, records it, and
    `codesign validate --calibration` then prices the system as one the fit never saw (shared knobs,
    every row marked extrapolated)."""
    f = shared_data / "measured" / "inferencemax_public.csv"
    doc = calibrate([f], systems=["gb300"], holdout=0.0, seed=0, steps=1, max_rows=30,
                    exclude_systems=["gb200"])
    assert doc["provenance"]["excluded_systems"] == ["gb200"]
    assert "gb200" not in doc["domain"]["systems"] and "gb200" not in doc["systems"]
    # the rows read are the file's usable rows minus gb200's (before the max_rows sample)
    _, pts = read_measured(f)
    assert any(p.system_key == "gb200" and p.status == "ok" for p in pts)
    # refused up front: an unknown name, and a system both excluded and given its own knobs
    rc, out, err = cli("calibrate", f, "--exclude-systems", "gb2000", "--out", tmp_path / "x.toml")
    assert rc == 2 and err.strip().splitlines() == [
        "error: --exclude-systems: unknown system(s) gb2000; known: " + err.split("known: ")[1].strip()]
    rc, out, err = cli("calibrate", f, "--systems", "gb200,gb300", "--exclude-systems", "gb200",
                       "--out", tmp_path / "x.toml")
    assert rc == 2 and "also in --systems" in err and "(--systems gb300)" in err
    rc, out, err = cli("calibrate", f, "--exclude-systems", ",", "--out", tmp_path / "x.toml")
    assert rc == 2 and "expected system names" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.toml").exists()


@pytest.mark.parametrize("flag, value, what", [
    ("--systems", "", "system"), ("--systems", ",", "system"), ("--models", "", "model"),
    ("--models", " , ", "model"), ("--exclude-systems", "", "system")])
def test_an_empty_name_list_is_refused(cli, tmp_path, flag, value, what):
    """`--systems ''` fitted "offsets for systems (none)" and `--models ''` no model: an empty list
    is refused up front (exit 2, one line naming the flag and what it takes), nothing written."""
    f = tmp_path / "m.csv"
    f.write_text("system,model\n")
    rc, out, err = cli("calibrate", f, f"{flag}={value}", "--out", tmp_path / "x.toml")
    assert rc == 2 and out == "" and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert line.startswith(f"error: {flag}: expected {what} names separated by commas (got {value!r}); known: "), line
    assert not (tmp_path / "x.toml").exists()


def test_calibrate_json_is_the_written_calibration(shared_data, tmp_path, cli):
    """`codesign calibrate --json` prints one document on stdout (the log stays on stderr): the file
    written and what it holds, the same knobs and errors as the TOML."""
    import json
    import tomllib

    out = tmp_path / "cal.toml"
    rc, stdout, err = cli("calibrate", shared_data / "measured" / "inferencemax_public.csv", "--max-rows", "40",
                          "--steps", "2", "--systems", "gb200", "--out", out, "--json")
    assert rc == 0, err
    doc = json.loads(stdout)
    toml = tomllib.loads(out.read_text())
    assert doc["calibration"] == str(out)
    assert doc["shared"] == pytest.approx(toml["shared"])
    assert doc["errors"]["holdout"]["after"]["ttft"]["mape"] == pytest.approx(toml["errors"]["holdout"]["after"]["ttft"]["mape"])
    assert "loss" in err and "loss " not in stdout  # the Adam log stays on stderr


def test_a_baseline_whose_hardware_file_is_missing_is_not_fitted_silently(shared_data, tmp_path, gb200_hardware_gone):
    """calibrate left out the rows of a system whose baseline hardware file is missing without a
    word, where validate marks them unsupported with the reason (noticed in session 28): it now
    warns, naming the system, the row count, the baseline, its plugin and the path, and fits the
    rest."""
    import csv

    pm, missing = gb200_hardware_gone
    src = tmp_path / "two.csv"
    with open(shared_data / "measured" / "inferencemax_public.csv", newline="") as f:
        r = csv.DictReader(f)
        rows = list(r)
        fields = r.fieldnames
    keep = ([row for row in rows if row["hardware"] == "gb200"][:3]
            + [row for row in rows if row["hardware"] == "h200"][:12])
    with open(src, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(keep)
    _, pts = read_measured(src)
    n_gb200 = sum(p.system_key == "gb200" and p.status == "ok" for p in pts)
    n_h200 = sum(p.system_key == "h200" and p.status == "ok" for p in pts)
    assert n_gb200 == 3 and n_h200 > 0  # the sample holds rows of both systems to fit
    said = []
    doc = calibrate([src], systems=[], holdout=0.0, seed=0, steps=1, pm=pm, log=said.append)
    [line] = [s for s in said if "gb200" in s]
    assert line.startswith(f"warning: {src}: 3 row(s) of gb200 not fitted: baseline 'gb200' (plugin "), line
    assert f"{str(missing)!r}, which does not exist" in line, line
    assert doc["domain"]["systems"] == ["h200"]  # the rest is fitted
