"""codesign validate: column mapping (expected values read off the data rows), batching, CSV output."""

import csv
import json
import math
import re

import pytest

from codesign.validate import Point, error_stats, predict, read_measured, resolve_model, write_predictions
# the installed plugins and an in-process one registering a cost model that varies no key (so
# validate prices it one configuration at a time, as a third-party model): test_plugins' test double
from test_plugins import _with


def _subset(src, dst, ids, idcol):
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        rows = [row for row in r if row[idcol] in ids]
        cols = r.fieldnames
    return _write_csv(dst, cols, rows)


def _write_csv(dst, cols, rows):
    with open(dst, "w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    return dst


AIC_IDS = {
    # disaggregated Kimi-K2.5 on GB200: decode_batch_size 167 x decode_num_workers 4 = concurrency 668
    "kimik2_5_gb200_trtllm_fp4_disagg_1024x1024_c668_cfg759",
    # aggregated Kimi-K2.5 on B200, TP4, batch 16 == concurrency 16
    "kimik2_5_b200_vllm_fp4_agg_1024x1024_c16_cfg811",
}


def test_aiconfigurator_mapping(shared_data):
    schema, pts = read_measured(shared_data / "measured" / "aiconfigurator_silicon_public.csv")
    assert schema == "aiconfigurator" and len(pts) == 2913  # data/README.md: 2,913 points
    by = {p.id: p for p in pts}
    d = by["kimik2_5_gb200_trtllm_fp4_disagg_1024x1024_c668_cfg759"]
    assert d.mode == "disaggregated" and d.concurrency == 668
    # prefill: 1 worker, tp 1, attention DP 4, moe_ep 4 -> 4 GPUs; decode: 4 workers x tp 8 -> 32 GPUs
    assert d.deploy["p_chips"] == 4 and d.deploy["p_dp"] == 4 and d.deploy["p_ep"] == 4
    assert d.deploy["d_chips"] == 32 and d.deploy["d_tp"] == 8 and d.deploy["d_ep"] == 8
    assert d.formats["moe"] == "nvfp4" and d.system_key == "gb200" and d.model == "kimi-k2"
    assert d.tpot_s == pytest.approx(16.131771299383008 / 1e3)  # silicon_tpot_ms of that row
    a = by["kimik2_5_b200_vllm_fp4_agg_1024x1024_c16_cfg811"]
    assert a.mode == "aggregated" and a.concurrency == 16 and a.deploy["tp"] == 4
    # a row whose model has no spec says so (which models those are changes as specs are added)
    unmapped = [p for p in pts if resolve_model(p.model_name)[0] is None]
    assert all(p.status.startswith(f"unsupported: no model config for {p.model_name} (normalised name tried: ")
               for p in unmapped)


def test_inferencemax_mapping(shared_data):
    schema, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv")
    assert schema == "inferencemax" and len(pts) == 1418  # rows in the file (shared data README: 1,418 points)
    by = {p.id: p for p in pts}
    # imx-00152: dynamo-trt GB200, prefill 4 GPUs (1 worker, DP attention), decode 4 workers x TP8
    p = by["imx-00152"]
    assert p.mode == "disaggregated" and p.concurrency == 24 and p.jitter == 0.2
    assert p.deploy["p_chips"] == 4 and p.deploy["d_chips"] == 32 and p.deploy["d_tp"] == 8
    assert p.deploy["p_tp"] == 1 and p.deploy["p_dp"] == 4
    assert p.tput == pytest.approx(169.07090612277543)  # imx-00152's tput_per_gpu_tok_s in the CSV
    # imx-00017 uses MTP speculative decoding (spec_method mtp): priced with 3 draft tokens, said so
    assert by["imx-00017"].status == "ok" and by["imx-00017"].deploy["spec"] == 3
    assert any("MTP" in w for w in by["imx-00017"].assumptions)


def test_predict_and_csv(shared_data, tmp_path):
    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    sub = _subset(src, tmp_path / "aic.csv", AIC_IDS | {"dsr1_b200_sglang_fp4_agg_1024x1024_c64_cfg99"}, "id")
    schema, pts = read_measured(sub)
    seen = []
    predict(pts, progress=lambda done, total: seen.append((done, total)))
    ok = [p for p in pts if p.status == "ok"]
    assert ok, [p.status for p in pts]
    # progress: rows priced so far, from 0 to every row grouped for pricing (the ok rows, here)
    assert seen[0][0] == 0 and seen[-1] == (len(ok), len(ok)) and all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    for p in ok:
        assert p.pred_ttft_s > 0 and p.pred_tpot_s > 0
    write_predictions(pts, tmp_path / "out" / "predictions.csv", schema)
    rows = list(csv.DictReader(open(tmp_path / "out" / "predictions.csv")))
    assert {r["id"] for r in rows} == {p.id for p in pts}  # no row dropped
    assert all(r["status"] for r in rows)


def test_a_row_s_warnings_are_one_cell_each_told_apart(tmp_path):
    """The warning cell joined a row's warnings with "; ", which a warning holds itself ("tp 8 ≠ 4
    GPUs per worker; using 4"): two warnings read as three. They are joined with " | ", in one cell."""
    warned = ["tp 8 ≠ 4 GPUs per worker; using 4", "MTP speculative decoding: 3 draft tokens per step assumed"]
    pts = [Point(id="a", schema="aiconfigurator", system="b200_sxm", model_name="m",
                                   framework="sglang", warnings=list(warned)),
           Point(id="b", schema="aiconfigurator", system="b200_sxm", model_name="m",
                                   framework="sglang")]
    write_predictions(pts, tmp_path / "predictions.csv", "aiconfigurator")
    rows = list(csv.DictReader(open(tmp_path / "predictions.csv", encoding="utf-8")))
    assert [r["warning"] for r in rows] == [
        "tp 8 ≠ 4 GPUs per worker; using 4 | MTP speculative decoding: 3 draft tokens per step assumed", ""]
    assert rows[0]["warning"].split(" | ") == warned


def test_assumptions_have_a_column_of_their_own(tmp_path):
    """What the mapping filled in for a row (MTP draft tokens, a batch limit, ...) was in the warning
    cell with the real warnings (848 of the 1,418 InferenceMAX rows carried one): predictions.csv
    has an ``assumptions`` column, between ``warning`` and ``extrapolated``, joined with " | " as
    the warnings are (a message may hold "; ")."""
    assumed = ["MTP speculative decoding: 3 draft tokens per step assumed", "decode batch limit 16; assumed"]
    pts = [Point(id="a", schema="aiconfigurator", system="b200_sxm", model_name="m", framework="sglang",
                 warnings=["repeats the measurement of b (row 3)"], assumptions=list(assumed)),
           Point(id="b", schema="aiconfigurator", system="b200_sxm", model_name="m", framework="sglang")]
    write_predictions(pts, tmp_path / "predictions.csv", "aiconfigurator")
    with open(tmp_path / "predictions.csv", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header[-4:] == ["status", "warning", "assumptions", "extrapolated"]
    rows = list(csv.DictReader(open(tmp_path / "predictions.csv", encoding="utf-8")))
    assert [r["warning"] for r in rows] == ["repeats the measurement of b (row 3)", ""]
    assert [r["assumptions"] for r in rows] == [
        "MTP speculative decoding: 3 draft tokens per step assumed | decode batch limit 16; assumed", ""]


def test_questioned_rows_come_from_the_rows_flag_not_the_warnings_text():
    """A questioned row was found by the end of its warnings' text; it is ``Point.questioned`` now: a
    warning that merely ends like one questions nothing, and an unpriced row is no questioned row.
    ``questioned_list`` gives each row's id and file line (header row 1) for ``validate --json``."""
    from codesign.validate import questioned_list, questioned_rows

    said = "median TTFT 2 s exceeds the median end-to-end latency 1 s: one of the two cells is wrong"
    row = dict(schema="aiconfigurator", system="b200_sxm", model_name="m", framework="sglang")
    pts = [Point(id="lookalike", warnings=["so one of the two cells is wrong"], **row),
           Point(id="q", warnings=[said], questioned=[said], **row),
           Point(id="", warnings=[said], questioned=[said], **row),
           Point(id="unpriced", status="unsupported: x", questioned=[said], **row)]
    assert [p.id for _, p in questioned_rows(pts)] == ["q", ""]
    # file rows: the header is row 1, so the second and third points are rows 3 and 4
    assert questioned_list(pts) == [{"id": "q", "row": 3, "warnings": [said]},
                                    {"id": None, "row": 4, "warnings": [said]}]


def test_error_stats_hand():
    s = error_stats([1.05, 2.0, 3.0, 8.0], [1.0, 2.0, 2.0, 4.0])  # APEs 0.05, 0, 0.5, 1.0
    assert s["mape"] == pytest.approx(1.55 / 4)
    assert s["median_ape"] == pytest.approx(0.275)
    assert s["within_10"] == pytest.approx(0.5)
    assert s["within_25"] == pytest.approx(0.5)
    assert math.isnan(error_stats([1.0], [math.nan])["mape"])


def test_cli_validate(shared_data, tmp_path, capsys):
    import json

    from codesign.cli import main

    src = shared_data / "measured" / "inferencemax_public.csv"
    sub = _subset(src, tmp_path / "imx.csv", {"imx-00017", "imx-00018", "imx-00152"}, "point_id")
    assert main(["validate", str(sub), "--out", str(tmp_path / "o"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 3 and doc["schema"] == "inferencemax"
    rows = list(csv.DictReader(open(tmp_path / "o" / "predictions.csv")))
    assert [r["point_id"] for r in rows] == ["imx-00017", "imx-00018", "imx-00152"]
    assert "pred_tput_per_gpu_tok_s" in rows[0] and "extrapolated" in rows[0]
    # a three-row cut of the public file is not what the shipped calibration was fitted on
    assert doc["in_sample"] is False and doc["predictions"] == str(tmp_path / "o" / "predictions.csv")
    # the transient progress bar left a blank first line on a stderr that is no terminal (a log;
    # fresh-user trial, session 30): none is drawn there
    assert main(["validate", str(sub), "--out", str(tmp_path / "o2")]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("knobs: "), repr(err[:80])
    # the analytical model reports its prefill utilisation, so the table by load is printed
    assert "error by prefill utilisation (the model's, at each row)" in " ".join(out.split())
    assert set(doc["errors"]) == {"all", "system", "model", "mode", "load"}


def test_predictions_say_why(shared_data, tmp_path, capsys):
    """``predictions.csv`` carries the model's running decode batch and prefill utilisation per row
    (``pred_decode_batch``, ``pred_prefill_utilization``), so a performance engineer can see which
    rows the model has prefill-bound. Expected values from Little's law over the closed loop, not
    from our code: C users cycle through TTFT and D = (OSL_mean − 1)·TPOT of decode, so the users
    decoding at once are B = C·D/(TTFT + D), with OSL_mean = 0.9·OSL (InferenceMAX lengths drawn
    from [0.8·L, L]) and the predicted steady-state TTFT and TPOT of the same row; utilisation is a
    share, in [0, 1]."""
    from codesign.cli import main

    src = shared_data / "measured" / "inferencemax_public.csv"
    ids = {"imx-00017", "imx-00018", "imx-00152", "imx-00774"}  # B200 aggregated; GB200 disaggregated
    sub = _subset(src, tmp_path / "imx.csv", ids, "point_id")
    assert main(["validate", str(sub), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    measured = {r["point_id"]: r for r in csv.DictReader(open(sub))}
    rows = list(csv.DictReader(open(tmp_path / "o" / "predictions.csv")))
    assert {r["point_id"] for r in rows} == ids
    for r in rows:
        assert r["status"] == "ok", r
        c, osl = int(r["concurrency"]), float(measured[r["point_id"]]["osl"])
        ttft, tpot = float(r["pred_ttft_ms"]), float(r["pred_tpot_ms"])
        d = (0.9 * osl - 1.0) * tpot
        assert float(r["pred_decode_batch"]) == pytest.approx(c * d / (ttft + d), rel=1e-3), r
        assert 0.0 <= float(r["pred_prefill_utilization"]) <= 1.0, r


def test_error_by_prefill_load():
    """The error table by the model's prefill utilisation groups rows into the bands of
    ``LOAD_BANDS``: below 0.3, 0.3-0.7, 0.7-0.9 (the knee), 0.9-0.99 and at the cap; a model that
    reports none puts its rows under "not reported", and a utilisation above 1 (another cost model's;
    the analytical one caps it at 0.999) is not filed as 0.99-1.00. Hand values: the band edges go
    to the upper band (0.3 is in 0.30-0.70; 1.0 stays in 0.99-1.00), and each band's MAPE is its one
    row's APE (|pred/measured − 1|)."""
    from codesign.validate import Point, error_table_rows, load_band

    assert [load_band(u) for u in (0.0, 0.29, 0.3, 0.7, 0.89, 0.9, 0.989, 0.99, 1.0, 1.2, math.nan)] == [
        "0.00-0.30", "0.00-0.30", "0.30-0.70", "0.70-0.90", "0.70-0.90", "0.90-0.99", "0.90-0.99",
        "0.99-1.00", "0.99-1.00", "above 1.00", "not reported"]
    pts = []
    for i, (util, pred) in enumerate(((0.1, 1.1), (0.5, 1.3), (0.8, 0.2), (math.nan, 2.0))):
        pts.append(Point(id=str(i), schema="inferencemax", system="gb200", model_name="m", framework="f",
                         ttft_s=1.0, tpot_s=0.01, pred_ttft_s=pred, pred_tpot_s=0.01, pred_prefill_utilization=util))
    pts.append(Point(id="x", schema="inferencemax", system="gb200", model_name="m", framework="f",
                     status="infeasible: no", ttft_s=1.0, pred_prefill_utilization=0.95))  # not ok: not counted
    rows = {r["group"]: r for r in error_table_rows(pts, "load")}
    assert list(rows) == ["0.00-0.30", "0.30-0.70", "0.70-0.90", "not reported"]
    assert [round(rows[g]["ttft"]["mape"], 6) for g in rows] == [0.1, 0.3, 0.8, 1.0]


def test_validate_says_when_its_errors_are_in_sample(shared_data, tmp_path, cli):
    """The error tables did not say that the shipped calibration was fitted on the very file they
    score (the README did: fresh-user trial, session 30). A calibration whose provenance lists the
    file's SHA-256 (here a copy of the shipped one, its data entries replaced by this three-row
    file's hash, computed with hashlib) makes them in-sample: ``in_sample`` in --json, a note on
    stderr; the shipped calibration, which lists other hashes, does not."""
    import hashlib
    import json
    import re

    from codesign_baseline import CALIBRATION

    src = shared_data / "measured" / "inferencemax_public.csv"
    sub = _subset(src, tmp_path / "imx.csv", {"imx-00017", "imx-00018", "imx-00152"}, "point_id")
    digest = hashlib.sha256(sub.read_bytes()).hexdigest()
    cal = tmp_path / "cal.toml"
    cal.write_text(re.sub(r'sha256 = "[0-9a-f]{64}"', f'sha256 = "{digest}"', CALIBRATION.read_text()))
    rc, out, err = cli("validate", sub, "--calibration", cal, "--json")
    assert rc == 0, err
    assert json.loads(out)["in_sample"] is True and json.loads(out)["predictions"] is None
    rc, out, err = cli("validate", sub, "--calibration", cal)
    assert rc == 0 and "note: the calibration was fitted on this file" in err and "in-sample" in err
    rc, out, err = cli("validate", sub)
    assert rc == 0 and "in-sample" not in err


def test_validate_prices_with_a_third_party_cost_model(shared_data, tmp_path, capsys):
    """``validate --cost-model roofline`` (the example plugin, written as a third party would) exited
    2 with "the roofline cost model cannot vary network.scaleup_bandwidth, ...": a group's vectorised
    call sends hardware, workload and efficiency keys no third-party model declares (fresh-user
    trial, session 26). A model that cannot vary them is priced one configuration at a time, and a
    row it declines (the roofline model prices aggregated serving only) is ``unsupported``, naming
    it, not a stopped run. Its predictions say no calibration priced them."""
    import json

    pytest.importorskip("codesign_roofline")
    from codesign.cli import main

    src = shared_data / "measured" / "inferencemax_public.csv"
    ids = ["imx-00017", "imx-00018", "imx-00019", "imx-00152"]  # B200 aggregated C = 8, 16, 64; GB200 disaggregated
    sub = _subset(src, tmp_path / "imx.csv", set(ids), "point_id")
    assert main(["validate", str(sub), "--cost-model", "roofline", "--out", str(tmp_path / "o"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["calibrated"] is False and doc["calibration"] is None
    rows = {r["point_id"]: r for r in csv.DictReader(open(tmp_path / "o" / "predictions.csv"))}
    for i in ids[:3]:
        assert rows[i]["status"] == "ok" and float(rows[i]["pred_tpot_ms"]) > 0, rows[i]
    assert rows["imx-00152"]["status"].startswith("unsupported: ") and "roofline" in rows["imx-00152"]["status"]
    assert rows["imx-00152"]["pred_tpot_ms"] == ""


def test_a_calibration_with_another_cost_model_is_refused(shared_data, tmp_path, cli):
    """``--calibration FILE --cost-model roofline`` priced with the roofline model's defaults and said
    nothing of the file (``"calibrated": false``; fresh-user trial, session 39): a calibration holds
    the analytical model's knobs, so the two together are bad input, before any row is priced."""
    from codesign_baseline import CALIBRATION

    pytest.importorskip("codesign_roofline")
    sub = _subset(shared_data / "measured" / "inferencemax_public.csv", tmp_path / "imx.csv",
                  {"imx-00017"}, "point_id")
    rc, out, err = cli("validate", sub, "--cost-model", "roofline", "--calibration", CALIBRATION,
                       "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err, err
    assert f"--calibration {CALIBRATION}" in err and "'roofline' does not read them" in err, err
    assert not (tmp_path / "o").exists()
    # the analytical model, named or not, reads it
    for extra in ((), ("--cost-model", "analytical")):
        rc, out, err = cli("validate", sub, "--calibration", CALIBRATION, *extra)
        assert rc == 0, err


def test_validate_names_its_cost_model(shared_data, tmp_path, capsys):
    """Fresh-user trial, session 27: validate's tables and JSON did not say which cost model made
    the predictions they score. Both name it with the record optimize, sweep and evaluate give
    ({"name", "plugin": "NAME (DIST VERSION)"}): analytical by default, the one --cost-model names."""
    import json
    from importlib.metadata import version

    from codesign.cli import main

    src = shared_data / "measured" / "inferencemax_public.csv"
    sub = _subset(src, tmp_path / "imx.csv", {"imx-00017"}, "point_id")  # B200 aggregated, C = 8
    from codesign.pluginmanager import get_plugin_manager

    models = get_plugin_manager().cost_models
    analytical = {"name": "analytical", "version": models["analytical"].version,
                  "plugin": f"analytical (codesign {version('codesign')})"}
    assert main(["validate", str(sub), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost_model"] == analytical
    assert main(["validate", str(sub)]) == 0
    out = capsys.readouterr().out
    release, build = analytical["version"].split("+")  # the analytical model's: release + hash of its model.py
    assert (f"priced by cost model 'analytical' version {analytical['version']} (release {release}, code build "
            f"{build}), plugin {analytical['plugin']}") in " ".join(out.split()), out
    pytest.importorskip("codesign_roofline")
    assert main(["validate", str(sub), "--cost-model", "roofline", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost_model"] == {
        "name": "roofline", "version": models["roofline"].version,
        "plugin": f"roofline (codesign-roofline {version('codesign-roofline')})"}


def test_cli_validate_with_a_calibration_file(shared_data, tmp_path, capsys):
    """--calibration FILE prices with that file's knobs: the shipped file passed explicitly gives the
    default predictions; a calibration with every GB200 overhead raised gives slower ones."""
    import re

    from codesign.cli import main
    from codesign_baseline import CALIBRATION

    src = shared_data / "measured" / "inferencemax_public.csv"
    sub = _subset(src, tmp_path / "imx.csv", {"imx-00152"}, "point_id")  # GB200, dynamo-trt

    def pred(*extra):
        out = tmp_path / f"o{len(list(tmp_path.iterdir()))}"
        assert main(["validate", str(sub), "--out", str(out), "--json", *extra]) == 0
        capsys.readouterr()
        return float(next(csv.DictReader(open(out / "predictions.csv")))["pred_tpot_ms"])

    base = pred()
    assert pred("--calibration", str(CALIBRATION)) == base
    text = CALIBRATION.read_text()
    # gb200's step overhead +10 ms: every decode step of this GB200 row (no MTP) is 10 ms slower,
    # times the TensorRT-LLM family's offset, which scales overheads (added in log space)
    from codesign_baseline import load_calibration

    factor = math.exp(load_calibration()["frameworks"]["trtllm"]["step_overhead_s"])
    m = re.search(r"(\[systems\.gb200\][^\[]*?step_overhead_s = )([0-9.e+-]+)", text)
    slow = text[:m.start(2)] + repr(float(m.group(2)) + 10e-3) + text[m.end(2):]
    (tmp_path / "slow.toml").write_text(slow)
    assert pred("--calibration", str(tmp_path / "slow.toml")) == pytest.approx(base + 10.0 * factor, rel=0.01)


#: The top-level keys `codesign calibrate` writes (codesign.calibrate.CALIBRATION_VERSION is 1).
HEAD = 'schema_version = 1\ncost_model = "analytical"\n'


@pytest.mark.parametrize("body,msg", [
    (None, "no such calibration file"),
    ("shared = [1, 2\n", "not a valid TOML file"),
    (HEAD + "[systems.gb200]\ncompute_decode = 0.5\n", "shared: missing"),
    (HEAD + "[shared]\ncompute_decod = 0.5\n", "shared.compute_decod: unknown knob"),
    (HEAD + "[shared]\ncompute_decode = 1.5\n", "shared.compute_decode: must be a finite number in (0, 1]"),
    (HEAD + "[shared]\n[systems.gb200]\nstep_overhead_s = -1.0\n", "systems.gb200.step_overhead_s: must be a finite number in [0, 10]"),
    ('schema_version = 1\ncost_model = "roofline"\n[shared]\n', "cost_model: calibrates 'roofline'"),
    # a calibration this codesign did not write, or a future one
    ('cost_model = "analytical"\n[shared]\n', "schema_version: missing: `codesign calibrate` writes schema_version = 1"),
    ('schema_version = 2\ncost_model = "analytical"\n[shared]\n', "schema_version: unknown version 2"),
    ('schema_version = true\ncost_model = "analytical"\n[shared]\n', "schema_version: unknown version True"),
    ("schema_version = 1\n[shared]\n", "cost_model: missing"),
    # a misspelled system or family never applied: its rows silently got the shared knobs
    (HEAD + "[shared]\n[systems.gb20]\ncompute_decode = 0.5\n", "systems.gb20: unknown system (no baseline of that name); did you mean 'gb200'?"),
    (HEAD + "[shared]\n[frameworks.trtlm]\ncompute_decode = 0.1\n", "frameworks.trtlm: unknown engine family; did you mean 'trtllm'?"),
    (HEAD + "[shared]\n[stacks.dynamo-sglan]\nadmission_wait_steps = 0.1\n", "stacks.dynamo-sglan: unknown serving stack; did you mean 'dynamo-sglang'?"),
    # a name in the wrong case gets its guess (errors.close_name): difflib alone compares case, and
    # 'SGLANG' and 'sglang' share no letter, 'ROUTING_SKEW' and 'routing_skew' only the '_'
    (HEAD + "[shared]\n[frameworks.SGLANG]\ncompute_decode = 0.1\n", "frameworks.SGLANG: unknown engine family; did you mean 'sglang'?"),
    (HEAD + "[shared]\nROUTING_SKEW = 0.3\n", "shared.ROUTING_SKEW: unknown knob of the analytical model; did you mean 'routing_skew'?"),
    # a stack's offset is for engine settings only: compute rates belong to the system and the family
    (HEAD + "[shared]\n[stacks.dynamo-sglang]\ncompute_decode = 0.1\n", "stacks.dynamo-sglang.compute_decode: a serving stack offsets engine settings only"),
    # a model's routing skew is one shared value: an engine family's offset of it was applied (session 35)
    (HEAD + "[shared]\n[frameworks.sglang]\nrouting_skew = 0.3\n",
     "frameworks.sglang.routing_skew: a property of the served model, not of the engine: it has no framework offset"),
    (HEAD + "[shared]\n[stacks.dynamo-sglang]\nadmision_wait_steps = 0.1\n",
     "stacks.dynamo-sglang.admision_wait_steps: unknown knob of the analytical model; did you mean "
     "'admission_wait_steps'? expected one of admission_wait_steps"),
])
def test_bad_calibration_files_are_refused(shared_data, tmp_path, cli, body, msg):
    f = tmp_path / "cal.toml"
    if body is not None:
        f.write_text(body)
    sub = _subset(shared_data / "measured" / "inferencemax_public.csv", tmp_path / "imx.csv",
                  {"imx-00152"}, "point_id")
    rc, out, err = cli("validate", sub, "--calibration", f)
    assert rc == 2, err
    assert msg in err and str(f) in err and "Traceback" not in err


# --- pool inference for rows converted from InferenceMAX result files (no worker counts) ---------
POOL_IDS = {
    # logs prefill TP 4 / EP 4, decode TP 8, conc 2151; InferenceMAX imx-00320 (same TTFT, 5392.82 ms)
    # ran 7 prefill workers of 4 GPUs and 1 decode worker of 8 GPUs, attention DP in both
    "2026_04_06_deepseek_r1_gb300_trtllm_fp8_disagg_8192x1024_c2151_tp4_ep4_1198",
    # dynamo-sglang logging TP 1 (attention DP); no InferenceMAX row has its TTFT (293.7908 ms)
    "2026_04_06_deepseek_r1_gb200_sglang_fp4_disagg_1024x1024_c8_tp1_ep1_1990",
    # "agg" row whose tp_size 36 is the total GPU count of a disaggregated run
    "2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_1024x1024_c32_tp36_ep1_11",
    # Kimi-K2.5: no InferenceMAX recipe for the model; logs prefill TP 4, decode TP 8, conc 360
    "2026_03_25_kimi_k2_5_gb200_trtllm_fp4_disagg_1024x1024_c360_tp8_0_ep_177",
}


def _pool_points(shared_data, tmp_path):
    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    return {p.id: p for p in read_measured(_subset(src, tmp_path / "pool.csv", POOL_IDS, "id"))[1]}


def test_pools_inferred_from_inferencemax_recipes(shared_data, tmp_path):
    by = _pool_points(shared_data, tmp_path)
    # the InferenceX item that ran C = 2151 with prefill TP/EP 4/4 and decode TP 8 (line 348 of
    # specs/recipes/inferencemax_recipes.csv, nvidia-master.yaml@0004cf5f): recipe file
    # ctx7_gen1_dep8_batch256_eplb0_mtp0_2151.yaml, 7 context workers of 4 GPUs with attention DP,
    # one generation worker of DEP 8, max_batch_size 256 per DP rank, no MTP
    p = by["2026_04_06_deepseek_r1_gb300_trtllm_fp8_disagg_8192x1024_c2151_tp4_ep4_1198"]
    # the item is the run's own configuration: the row is fitted and scored (``ok``), and its
    # assumptions name the item
    assert p.status == "ok", p.status
    assert any(w.startswith("pools of the InferenceX configuration recipes/trtllm/gb300-fp8/8k1k/stp/"
                            "ctx7_gen1_dep8_batch256_eplb0_mtp0_2151.yaml (nvidia-master.yaml@")
               for w in p.assumptions), p.assumptions
    assert p.deploy == {"p_chips": 28, "p_tp": 1, "p_ep": 4, "p_dp": 4,
                        "d_chips": 8, "d_tp": 1, "d_ep": 8, "d_dp": 8, "pp": 1, "mb": 256 * 8}
    assert any("which ran concurrency 2151 with this row's per-worker TP/EP" in w for w in p.assumptions), p.assumptions
    # gb200 dynamo-sglang fp4 1024/1024 recipes logging TP 1 run at conc 4 (imx-00176 and others:
    # 1 prefill worker of 4 GPUs, 2 decode workers of 4, priced as their recipe file
    # recipes/gb200-fp4/1k1k/low-latency.yaml configures them: TP 4, EP 1, no attention DP), 32, 64
    # and >= 512 (4 prefill workers and 48 decode GPUs); conc 8 is nearest to 4 in log space
    p = by["2026_04_06_deepseek_r1_gb200_sglang_fp4_disagg_1024x1024_c8_tp1_ep1_1990"]
    assert p.status.startswith("ambiguous: pools inferred from the nearest measured run imx-")
    assert (p.deploy["p_chips"], p.deploy["p_tp"], p.deploy["p_dp"], p.deploy["d_chips"], p.deploy["d_tp"],
            p.deploy["d_dp"]) == (4, 4, 1, 8, 4, 1)
    # gb200 dynamo-trt fp4 1024/1024 runs of 36 GPUs at conc 32 (imx-02190, imx-02186): 1 prefill
    # worker of 4 GPUs, 4 decode workers of TP 8. Two InferenceX items of 36 GPUs ran C = 32 (the
    # December MTP item, line 2 of the recipe table, and one without MTP), so no item decides: the
    # nearest measured run does
    p = by["2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_1024x1024_c32_tp36_ep1_11"]
    assert p.mode == "disaggregated" and p.concurrency == 32
    assert (p.deploy["p_chips"], p.deploy["d_chips"], p.deploy["d_tp"], p.deploy["d_dp"]) == (4, 32, 8, 1)
    assert p.status.startswith("ambiguous: pools inferred from the nearest measured run imx-02190")  # no MTP
    # fallback: ceil(360 / 64) = 6 decode workers of TP 8 = 48 GPUs; ceil(48 / 16) = 3 prefill
    # workers of TP 4 = 12 GPUs
    p = by["2026_03_25_kimi_k2_5_gb200_trtllm_fp4_disagg_1024x1024_c360_tp8_0_ep_177"]
    assert p.status == ("ambiguous: pools inferred from the fallback rule, as no measured InferenceMAX run has "
                        "this system, model, framework and precision (12 prefill + 48 decode GPUs)")
    assert (p.deploy["p_chips"], p.deploy["p_tp"], p.deploy["d_chips"], p.deploy["d_tp"]) == (12, 4, 48, 8)


def test_inferencemax_rows_logging_total_gpus_get_recipe_pools(shared_data):
    """Legacy disaggregated rows without worker counts log the run's total GPUs as TP and as both
    pools (imx-00156: tp 28, prefill and decode "28 GPUs", gpu_count_consistency
    legacy_total_equals_num_prefill_gpu): priced with the pools of the InferenceX item that ran
    them (`ok`) or else of the nearest run (`ambiguous`), not `infeasible` for a TP 28 no run used;
    the row's own speculative decoding (none) is kept even when the nearest recipe ran MTP
    (imx-00159)."""
    _, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv")
    by = {p.id: p for p in pts}
    for pid in ("imx-00159", "imx-00164", "imx-00170"):
        p = by[pid]
        assert p.status.startswith("ambiguous: pools inferred from the nearest measured run imx-"), p.status
        assert p.deploy["p_tp"] * p.deploy["p_dp"] <= 8 and "spec" not in p.deploy
    # imx-00156 (C = 3) and imx-00158 (C = 102), 28 GPUs, no MTP: the December item of line 18 of
    # specs/recipes/inferencemax_recipes.csv ran C = 3 ... 102 (conc x 3 decode workers) on one
    # prefill worker of TP 4 and three decode workers of TP 8 (4 + 24 = 28 GPUs),
    # DECODE_MAX_BATCH_SIZE 32 per worker, DECODE_MTP_SIZE 0
    for pid in ("imx-00156", "imx-00158"):
        p = by[pid]
        assert p.status == "ok", p.status
        assert any(w.startswith("pools of the InferenceX configuration dsr1-fp4-gb200-dynamo-trt (nvidia-master.yaml@")
                   and "which ran concurrency " in w and "with this row's 28 GPUs" in w for w in p.assumptions), \
            p.assumptions
        assert p.deploy == {"p_chips": 4, "p_tp": 4, "p_ep": 4, "p_dp": 1, "d_chips": 24, "d_tp": 8,
                            "d_ep": 8, "d_dp": 1, "pp": 1, "mb": 32}


def test_aiconfigurator_rows_with_pools_take_the_batch_limit_of_the_item_that_ran_them(shared_data):
    """aiconfigurator rows of db-dump runs record both pools, but their decode_batch_size is the
    concurrency per decode rank (dsr1_gb300_..._c245_cfg404: 35 x 7 decode workers = 245), not the
    engine's max_batch_size: the InferenceX item that ran those pools at that concurrency gives it,
    else the power-of-two rule of the InferenceMAX Dynamo + TensorRT-LLM rows does."""
    _, pts = read_measured(shared_data / "measured" / "aiconfigurator_silicon_public.csv")
    by = {p.id: p for p in pts}
    # 1 prefill worker of 2 GPUs (attention DP 2, MoE EP 2) and 7 decode workers of TEP 8 at C = 245:
    # specs/recipes/inferencemax_recipes.csv holds the item recipes/trtllm/gb300-fp4/1k8k/stp/
    # ctx1_gen7_tep8_batch32_eplb0_mtp0.yaml (nvidia-master.yaml@0004cf5f) with run concurrency 245:
    # max_batch_size 32 per decode worker (tep: attention TP), 7 x 32 = 224 slots, 245 - 224 = 21 wait
    p = by["dsr1_gb300_trtllm_fp4_disagg_1024x8192_c245_cfg404"]
    assert p.status == "ok" and p.deploy["mb"] == 32 and "spec" not in p.deploy, (p.status, p.deploy)
    assert any("224 slots: 21 of 245 users wait" in w and "ctx1_gen7_tep8_batch32_eplb0_mtp0.yaml" in w
               for w in p.assumptions), p.assumptions
    # the same run converted from InferenceMAX (same TTFT and TPOT) took that item's limit with its pools
    twin = by["2026_04_06_deepseek_r1_gb300_trtllm_fp4_disagg_1024x8192_c245_tp2_ep2_1635"]
    assert twin.deploy["mb"] == 32
    # the same pools at C = 7 were run by an MTP item (ctx1_gen7_tep8_batch1_eplb0_mtp3.yaml) and one
    # without (..._batch1_eplb0_mtp0.yaml): both limit the batch to 1, their drafts (3, 0) disagree and
    # the row does not say which ran, so the limit is taken and no speculative decoding
    p = by["dsr1_gb300_trtllm_fp4_disagg_1024x8192_c7_cfg404"]
    assert p.deploy["mb"] == 1 and "spec" not in p.deploy, p.deploy
    # no item ran Kimi-K2.5 on GB200 (cfg760: 4 decode workers of TP 4 at C = 156): 39 users per
    # worker, the largest power of two at or below it is 32 (39 <= 1.3 x 32), 4 x 32 = 128 slots
    p = by["kimik2_5_gb200_trtllm_fp4_disagg_8192x1024_c156_cfg760"]
    assert p.deploy["mb"] == 32, p.deploy
    # Dynamo + SGLang items give no batch limit (their recipe names do not say it)
    p = by["dsr1_gb200_sglang_fp4_disagg_1024x1024_c8192_cfg259"]
    assert p.status == "ok" and "mb" not in p.deploy, p.deploy


def test_pools_without_inferencemax_file(shared_data, tmp_path, monkeypatch):
    from codesign.validate import pool_recipes

    monkeypatch.setenv("CODESIGN_SHARED_DATA", str(tmp_path / "nowhere"))
    assert pool_recipes() == ()
    by = _pool_points(shared_data, tmp_path)
    # the InferenceX items are the repository's own table (specs/recipes/): a row an item decides
    # gets its pools without the measured file
    p = by["2026_04_06_deepseek_r1_gb300_trtllm_fp8_disagg_8192x1024_c2151_tp4_ep4_1198"]
    assert p.status == "ok" and p.deploy["p_chips"] == 28
    assert any(w.startswith("pools of the InferenceX configuration ") for w in p.assumptions), p.assumptions
    # a row no item decides (Dynamo + SGLang, logged TP 1 / EP 1 / decode TP 1) falls to the rule:
    # ceil(8 / 128) = 1 decode worker of TP 1; ceil(1 / 12) = 1 prefill worker of TP 1
    p = by["2026_04_06_deepseek_r1_gb200_sglang_fp4_disagg_1024x1024_c8_tp1_ep1_1990"]
    assert p.status.endswith("framework and precision (1 prefill + 1 decode GPUs)"), p.status
    # and the row says why no measured run was used
    missing = tmp_path / "nowhere" / "measured" / "inferencemax_public.csv"
    assert any(w.startswith(f"no InferenceMAX pool recipes: {missing} not found (set CODESIGN_SHARED_DATA")
               for w in p.warnings), p.warnings
    # a total GPU count alone cannot be split without a recipe: not priced
    p = by["2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_1024x1024_c32_tp36_ep1_11"]
    assert p.status.startswith("unsupported: 36 GPUs of a disaggregated run")


def test_fallback_constants_are_the_inferencemax_medians(shared_data):
    import statistics

    from codesign.validate import FALLBACK_BATCH, FALLBACK_DECODE_PER_PREFILL

    rows = [r for r in csv.DictReader(open(shared_data / "measured" / "inferencemax_public.csv"))
            if r["disagg"] == "True" and float(r["prefill_num_workers"] or 0) >= 1
            and float(r["decode_num_workers"] or 0) >= 1]
    for fw, fam in (("dynamo-trt", "trtllm"), ("dynamo-sglang", "sglang")):
        sel = [r for r in rows if r["framework"] == fw]
        batch = statistics.median(float(r["conc"]) / float(r["decode_num_workers"]) for r in sel)
        ratio = statistics.median(float(r["num_decode_gpu"]) / float(r["prefill_num_workers"]) for r in sel)
        assert (FALLBACK_BATCH[fam], FALLBACK_DECODE_PER_PREFILL[fam]) == (round(batch), round(ratio))


def test_cli_reports_ambiguous_rows_apart(shared_data, tmp_path, capsys):
    import json

    from codesign.cli import main

    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    # a GB200 row whose pools only the nearest-run rule gives (Dynamo + SGLang, logged TP 1 / EP 1:
    # no InferenceX item decides) is ambiguous; a GB300 row whose pools its InferenceX item gives
    # (C = 2151, prefill TP/EP 4/4, decode TP 8) is ok
    sub = _subset(src, tmp_path / "aic.csv",
                  {"2026_04_06_deepseek_r1_gb200_sglang_fp4_disagg_1024x1024_c8_tp1_ep1_1990",
                   "2026_04_06_deepseek_r1_gb300_trtllm_fp8_disagg_8192x1024_c2151_tp4_ep4_1198"}, "id")
    assert main(["validate", str(sub), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == {"ambiguous": 1, "ok": 1}, doc["status"]
    assert [(g["group"], g["n"]) for g in doc["errors"]["system"]] == [("gb300", 1)]
    assert doc["errors_ambiguous"]["all"][0]["n"] == 1
    assert doc["errors_ambiguous"]["system"][0]["group"] == "gb200"


def test_a_stack_offset_that_pushes_a_knob_out_of_range_is_named_alone(shared_data, tmp_path, cli):
    # +50 in log space on SGLang's fitted wait (a few iterations) gives ~1e22, past the 1000 bound:
    # the stack's table is named, not the SGLang family's, whose own offset is in range
    from codesign_baseline import CALIBRATION

    f = tmp_path / "cal.toml"
    f.write_text(CALIBRATION.read_text().split("[stacks")[0].split("[domain]")[0]
                 + "[stacks.dynamo-sglang]\nadmission_wait_steps = 50.0\n")
    sub = _subset(shared_data / "measured" / "inferencemax_public.csv", tmp_path / "imx.csv",
                  {"imx-00152"}, "point_id")
    rc, out, err = cli("validate", sub, "--calibration", f)
    assert rc == 2, err
    assert f"{f}: stacks.dynamo-sglang.admission_wait_steps: with the shared knobs this offset gives" in err, err
    assert "frameworks.sglang" not in err and "Traceback" not in err


def test_a_framework_offset_that_pushes_a_knob_out_of_range_is_named(shared_data, tmp_path, cli):
    # a finite offset passes the per-table check, but vLLM's step overhead offset of +15 in log space
    # multiplies every system's ~75 us by e^15 ≈ 3.3e6: 245 s, past the 10 s bound of a time knob
    from codesign_baseline import CALIBRATION

    text = CALIBRATION.read_text()
    head, sep, rest = text.partition("[frameworks.vllm]\n")
    body = "\n".join("step_overhead_s = 15.0" if ln.startswith("step_overhead_s") else ln
                     for ln in rest.split("\n"))
    f = tmp_path / "cal.toml"
    f.write_text(head + sep + body)
    sub = _subset(shared_data / "measured" / "inferencemax_public.csv", tmp_path / "imx.csv",
                  {"imx-00152"}, "point_id")
    rc, out, err = cli("validate", sub, "--calibration", f)
    assert rc == 2, err
    assert f"{f}: frameworks.vllm.step_overhead_s: with the shared knobs this offset gives" in err, err
    assert "must be a finite number in [0, 10]" in err and "Traceback" not in err


# --- systems described by their datasheet only (B300, MI300X, MI325X, MI355X) --------------------
#: The shape of InferenceMAX row imx-00659 of inferencemax_public.csv (DeepSeek-R1 FP8, SGLang, TP8,
#: 1k/1k, 64 users on B200; its measured values), under the file's own column names.
IMX_ROW = {"point_id": "imx-00659", "model_key": "dsr1", "hardware": "b200", "runner_label": "b200",
           "framework": "sglang", "precision": "fp8", "spec_method": "none", "disagg": "False",
           "is_multinode": "False", "isl": "1024", "osl": "1024", "conc": "64", "tp": "8", "ep": "1",
           "dp_attention": "False", "total_gpus": "8", "tput_per_gpu_tok_s": "601.2893045180805",
           "median_ttft_s": "0.48940439452417195", "mean_ttft_s": "",
           "median_tpot_s": "0.024399550985048934", "mean_tpot_s": "", "gpu_tdp_w": "1000"}
#: imx-01898: gpt-oss-120b (precision fp4: MXFP4 experts), vLLM, TP8, 1k/8k, 16 users on H100.
IMX_GPTOSS = dict(IMX_ROW, point_id="imx-01898", model_key="gptoss120b", hardware="h100", runner_label="h100",
                  framework="vllm", precision="fp4", osl="8192", conc="16", tput_per_gpu_tok_s="471.5556754702284",
                  median_ttft_s="0.0349708404392004", mean_ttft_s="0.04613150153309107",
                  median_tpot_s="0.004717296175306893", mean_tpot_s="0.004652154890378428", gpu_tdp_w="700")
#: disaggregated columns of InferenceMAX's schema (AMD's dsr1-fp8-mi355x-sglang-disagg "bottom of
#: curve": 1 prefill worker TEP8, 2 decode workers TEP8, DECODE_MTP_SIZE=2; InferenceX amd-master.yaml)
DISAGG = {"disagg": "True", "is_multinode": "True", "tp": "", "ep": "", "dp_attention": "",
          "prefill_tp": "8", "prefill_ep": "8", "prefill_dp_attention": "False", "prefill_num_workers": "1",
          "decode_tp": "8", "decode_ep": "8", "decode_dp_attention": "False", "decode_num_workers": "2",
          "num_prefill_gpu": "8", "num_decode_gpu": "16", "total_gpus": "24"}


def _imx_csv(path, *rows):
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, cols, restval="")
        w.writeheader()
        w.writerows(rows)
    return path


def _predictions(cli, src, tmp_path, *extra):
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    rc, _, err = cli("validate", src, "--out", out, *extra)
    assert rc == 0 and "Traceback" not in err, err
    return {r["point_id"]: r for r in csv.DictReader(open(out / "predictions.csv"))}


def test_datasheet_names_map_to_the_new_baselines():
    from codesign.validate import SYSTEMS, framework_family

    # InferenceX-app gpu-keys.ts and runners.yaml; aiconfigurator systems/b300_sxm.yaml
    assert {n: SYSTEMS[n] for n in ("b300", "b300_sxm", "mi300x", "mi325x", "mi355x", "mi355x-disagg")} == {
        "b300": "b300", "b300_sxm": "b300", "mi300x": "mi300x", "mi325x": "mi325x", "mi355x": "mi355x",
        "mi355x-disagg": "mi355x"}
    # InferenceX-app framework-aliases.ts: sglang-disagg -> mori-sglang (SGLang), dynamo-trtllm -> dynamo-trt
    assert framework_family("sglang-disagg") == framework_family("mori-sglang") == "sglang"
    assert framework_family("dynamo-trtllm") == "trtllm"
    assert framework_family("atom") is None  # AMD's own engine: no calibrated family


def test_datasheet_systems_are_priced_and_say_whose_knobs(tmp_path, cli):
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="b300", hardware="b300", gpu_tdp_w="1200"),
                   dict(IMX_ROW, point_id="mi355x", hardware="mi355x", gpu_tdp_w="1400"),
                   dict(IMX_ROW, point_id="mi325x", hardware="mi325x", gpu_tdp_w="1000"),
                   dict(IMX_ROW, point_id="b200"))
    rows = _predictions(cli, src, tmp_path)
    for pid in ("b300", "mi355x", "mi325x", "b200"):
        assert rows[pid]["status"] == "ok", rows[pid]
        assert float(rows[pid]["pred_ttft_ms"]) > 0 and float(rows[pid]["pred_tpot_ms"]) > 0
    assert rows["b300"]["extrapolated"] == ("system b300 not in calibration data: "
                                            "priced with b200's fitted knobs (systems.b200)")
    for amd in ("mi355x", "mi325x"):
        assert rows[amd]["extrapolated"] == (f"system {amd} not in calibration data: "
                                             "priced with the shared knobs (fitted across the calibration's systems)")
    assert rows["b200"]["extrapolated"] == ""


def test_b300_is_priced_as_b200_where_their_datasheets_agree(shared_data, tmp_path, cli):
    """hardware_specs.csv gives B300 B200's BF16/FP8 peaks, HBM bandwidth and NVLink (more FP4, HBM
    capacity and TDP only), and B300 borrows B200's knobs: an FP8 row whose KV cache fits either
    chip (DeepSeek-R1 MLA in FP8: (512 + 64) B x 61 layers = 35 kB per token; 64 users x 2k tokens
    = 4.6 GB over 8 GPUs, beside 671 GB / 8 = 84 GB of weights per GPU, far below 180 GB) is priced
    the same on both."""
    hs = {r["device_id"]: r for r in csv.DictReader(open(shared_data / "hardware_specs.csv"))}
    for col in ("dense_bf16_tflops", "dense_fp8_tflops", "mem_bandwidth_tb_s", "scaleup_bw_unidir_gb_s_per_chip",
                "scaleup_domain_size_chips"):
        assert float(hs["b300_sxm"][col]) == float(hs["b200_sxm"][col]), col
    assert float(hs["b300_sxm"]["mem_capacity_gb"]) > float(hs["b200_sxm"]["mem_capacity_gb"])
    # TensorRT-LLM rows: a B200 SGLang DeepSeek-R1 row carries its launch script's receive interval
    # (sglang_recv_interval), which a B300 run need not share
    row = dict(IMX_ROW, framework="trt")
    src = _imx_csv(tmp_path / "m.csv", dict(row, point_id="b300", hardware="b300"), dict(row, point_id="b200"))
    rows = _predictions(cli, src, tmp_path)
    for col in ("pred_ttft_ms", "pred_tpot_ms", "pred_tput_per_gpu_tok_s"):
        assert float(rows["b300"][col]) == pytest.approx(float(rows["b200"][col]), rel=1e-9), col


def test_fp4_activations_on_hardware_without_fp4_are_unsupported(tmp_path, cli):
    from codesign.validate import read_measured

    dsr1_fp4 = dict(IMX_ROW, point_id="mi300x-dsr1-fp4", hardware="mi300x", precision="fp4")
    gptoss = dict(IMX_GPTOSS, point_id="mi300x-gptoss", hardware="mi300x")
    src = _imx_csv(tmp_path / "m.csv", dsr1_fp4, gptoss)
    by = {p.id: p for p in read_measured(src)[1]}
    # hardware_specs.csv mi300x: dense_fp4_tflops blank; AMD's fp4 checkpoint is MXFP4 throughout
    assert by["mi300x-dsr1-fp4"].formats == dict(weights="mxfp4", moe="mxfp4", kv="fp8_e4m3", act="mxfp4")
    # gpt-oss's MXFP4 experts run W4A16 on chips without FP4 tensor cores (as on Hopper): priced
    assert by["mi300x-gptoss"].formats["act"] == "bf16"
    rows = _predictions(cli, src, tmp_path)
    st = rows["mi300x-dsr1-fp4"]["status"]
    assert st.startswith("unsupported: mxfp4 activations need FP4 tensor cores") and "mi300x" in st, st
    assert rows["mi300x-dsr1-fp4"]["pred_tpot_ms"] == ""
    assert rows["mi300x-gptoss"]["status"] == "ok" and float(rows["mi300x-gptoss"]["pred_tpot_ms"]) > 0
    # alone, the row leaves nothing to price: one line, exit 2, no traceback
    rc, out, err = cli("validate", _imx_csv(tmp_path / "only.csv", dsr1_fp4))
    assert rc == 2 and "no row could be priced" in err and "FP4 tensor cores" in err, err
    assert "Traceback" not in err


def test_fp4_is_mxfp4_on_amd_and_nvfp4_on_nvidia(tmp_path):
    from codesign.validate import read_measured

    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="amd", hardware="mi355x", precision="fp4"),
                   dict(IMX_ROW, point_id="nv", hardware="b300", precision="fp4"))
    by = {p.id: p for p in read_measured(src)[1]}
    # amd/DeepSeek-R1-0528-MXFP4 (Quark w_mxfp4_a_mxfp4, all linear layers but lm_head);
    # NVIDIA's DeepSeek-R1 FP4: NVFP4 experts, FP8 elsewhere
    assert by["amd"].formats == dict(weights="mxfp4", moe="mxfp4", kv="fp8_e4m3", act="mxfp4")
    assert by["nv"].formats == dict(weights="fp8_e4m3", moe="nvfp4", kv="fp8_e4m3", act="nvfp4")


def test_unknown_framework_is_priced_without_an_offset_and_says_so(tmp_path, cli):
    """ATOM (AMD's engine) is no calibrated family: its row gets the system's knobs with no framework
    offset, which is what an SGLang row gets from the same calibration without [frameworks] tables."""
    import tomllib

    import tomli_w
    from codesign_baseline import CALIBRATION

    cal = tomllib.loads(CALIBRATION.read_text())
    cal.pop("frameworks")
    bare = tmp_path / "no-frameworks.toml"
    bare.write_text(tomli_w.dumps(cal))
    atom = _imx_csv(tmp_path / "atom.csv", dict(IMX_ROW, point_id="r", hardware="mi355x", framework="atom"))
    sgl = _imx_csv(tmp_path / "sgl.csv", dict(IMX_ROW, point_id="r", hardware="mi355x"))
    a = _predictions(cli, atom, tmp_path)["r"]
    s = _predictions(cli, sgl, tmp_path, "--calibration", bare)["r"]
    assert a["status"] == "ok"
    assert "framework atom (no known engine family) not in calibration data: priced without a framework offset" \
        in a["extrapolated"]
    for col in ("pred_ttft_ms", "pred_tpot_ms"):
        assert float(a[col]) == pytest.approx(float(s[col]), rel=1e-9), col


def test_amd_disaggregated_sglang_mtp_uses_its_recipe_draft_count(tmp_path):
    from codesign.validate import read_measured

    row = dict(IMX_ROW, **DISAGG, point_id="d", hardware="mi355x-disagg", framework="sglang-disagg",
               spec_method="mtp")
    p = read_measured(_imx_csv(tmp_path / "m.csv", row))[1][0]
    assert p.status == "ok" and p.system_key == "mi355x"
    assert p.deploy["spec"] == 2  # DECODE_MTP_SIZE=2 in amd-master.yaml
    assert p.deploy["p_chips"] == 8 and p.deploy["d_chips"] == 16 and p.deploy["d_tp"] == 8


def test_aiconfigurator_b300_sxm_rows_are_priced_with_b200_knobs(shared_data, tmp_path, cli):
    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        row = next(x for x in r if x["id"] == "dsr1_b200_sglang_fp4_agg_1024x1024_c64_cfg99")
        cols = r.fieldnames
    row = dict(row, id="dsr1_b300_sglang_fp4_agg_1024x1024_c64", system="b300_sxm")
    sub = tmp_path / "aic.csv"
    with open(sub, "w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerow(row)
    rc, _, err = cli("validate", sub, "--out", tmp_path / "o")
    assert rc == 0, err
    out = next(csv.DictReader(open(tmp_path / "o" / "predictions.csv")))
    assert out["status"] == "ok" and float(out["pred_tpot_ms"]) > 0
    assert out["extrapolated"] == "system b300 not in calibration data: priced with b200's fitted knobs (systems.b200)"


def test_hardware_names_ignore_case_and_spaces(tmp_path, shared_data):
    """A fresh-user trial (session 6): "MI355X" and " b300" were 'unsupported: no hardware spec'
    although "mi355x" and "b300" are priced; the same system is meant."""
    import csv

    src = shared_data / "measured" / "inferencemax_public.csv"
    rows = list(csv.DictReader(src.open()))
    row = next(r for r in rows if r["model_key"] == "gptoss120b")
    f = tmp_path / "names.csv"
    with f.open("w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=list(rows[0]))
        w.writeheader()
        for hw in ("MI355X", " b300"):
            w.writerow(dict(row, hardware=hw, point_id=f"t-{hw.strip()}"))
    pts = read_measured(f)[1]
    assert [p.system_key for p in pts] == ["mi355x", "b300"]
    assert all(not p.status.startswith("unsupported: no hardware spec") for p in pts), [p.status for p in pts]


def test_validate_statistic_chooses_the_inferencemax_columns(cli, tmp_path):
    # IMX_GPTOSS (imx-01898) records median_ttft_s 0.0349708 and mean_ttft_s 0.0461315, median_tpot_s
    # 0.0047173 and mean_tpot_s 0.0046522: the default compares the medians, --statistic mean the means
    src = _imx_csv(tmp_path / "m.csv", IMX_GPTOSS)
    med = _predictions(cli, src, tmp_path)["imx-01898"]
    mean = _predictions(cli, src, tmp_path, "--statistic", "mean")["imx-01898"]
    assert med["statistic"] == "median" and mean["statistic"] == "mean"
    assert float(med["measured_ttft_ms"]) == pytest.approx(34.9708404392004, rel=1e-5)
    assert float(mean["measured_ttft_ms"]) == pytest.approx(46.13150153309107, rel=1e-5)
    assert float(med["measured_tpot_ms"]) == pytest.approx(4.717296175306893, rel=1e-5)
    assert float(mean["measured_tpot_ms"]) == pytest.approx(4.652154890378428, rel=1e-5)
    # the mean TTFT adds the start-up burst to the steady state: never below it
    assert float(mean["pred_ttft_ms"]) >= float(med["pred_ttft_ms"])
    rc, out, err = cli("validate", src, "--statistic", "p50")  # argparse refuses another statistic
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--statistic" in err and "p50" in err


def test_bad_cells_are_invalid_rows_not_tracebacks_or_silent_fallbacks(cli, tmp_path):
    # one good row (imx-00659) and one bad copy per case; each bad row keeps its id, is listed in
    # predictions.csv with an "invalid:" status naming the column and value, and is never priced
    cases = {
        "ttft-word": dict(median_ttft_s="fast"),          # was: silently compared with the mean
        "tpot-inf": dict(median_tpot_s="inf"),            # was: ok with a blank TPOT
        "ttft-neg": dict(median_ttft_s="-1"),
        "tp-nan": dict(tp="nan"),                         # was: priced at the default, "infeasible"
        "tp-frac": dict(tp="2.5"),
        "workers-neg": dict(DISAGG, decode_num_workers="-1"),  # was: ok, and priced
        "tp-zero": dict(tp="0"),                          # was: priced on one chip ("weights need ...")
        "ep-zero": dict(ep="0"),                          # was: ok
        "gpus-neg": dict(total_gpus="-1"),                # was: ok
        "decode-tp-zero": dict(DISAGG, decode_tp="0"),    # was: ok, priced at TP 1
        "disagg-word": dict(disagg="maybe"),              # was: priced as aggregated
        "no-model": dict(model_key=""),
        "no-system": dict(hardware=" "),                 # was: "unsupported: no hardware spec for system  "
    }
    rows = [IMX_ROW] + [dict(IMX_ROW, point_id=k, **v) for k, v in cases.items()]
    src = _imx_csv(tmp_path / "bad.csv", *rows)
    got = _predictions(cli, src, tmp_path)
    assert got["imx-00659"]["status"] == "ok"
    expect = {"ttft-word": "median_ttft_s must be a finite number > 0 (got fast)",
              "tpot-inf": "median_tpot_s must be a finite number > 0 (got inf)",
              "ttft-neg": "median_ttft_s must be a finite number > 0 (got -1)",
              "tp-nan": "tp must be a whole number >= 1 (got nan)",
              "tp-frac": "tp must be a whole number >= 1 (got 2.5)",
              "workers-neg": "decode_num_workers must be a whole number >= 0 (got -1)",
              "tp-zero": "tp must be a whole number >= 1 (got 0)",
              "ep-zero": "ep must be a whole number >= 1 (got 0)",
              "gpus-neg": "total_gpus must be a whole number >= 1 (got -1)",
              "decode-tp-zero": "decode_tp must be a whole number >= 1 (got 0)",
              "disagg-word": "disagg must be True or False (got maybe)",
              "no-model": "no model name (model_key is empty)",
              "no-system": "no system name (hardware is empty)"}
    for k, msg in expect.items():
        assert got[k]["status"].startswith("invalid: ") and msg in got[k]["status"], (k, got[k]["status"])
        assert got[k]["pred_ttft_ms"] == ""
    # and stderr says so once, with the count and the first rows (not only the CSV's status column)
    rc, _, err = cli("validate", src)
    # ... each named by its file row beside its id (the header is row 1, imx-00659 row 2): an id alone
    # does not find a row whose id is blank or repeated (fresh-user trial, session 46)
    assert rc == 0 and (f"warning: {src}: {len(expect)} row(s) with bad cells were not priced (ttft-word (row 3): "
                        "median_ttft_s must be a finite number > 0 (got fast); tpot-inf (row 4): ") in err, err
    # a column the row's mode does not price may hold 0 ("not used", as both files write it)
    got = _predictions(cli, _imx_csv(tmp_path / "z.csv", dict(IMX_ROW, decode_tp="0", prefill_num_workers="0")), tmp_path)
    assert got["imx-00659"]["status"] == "ok"


def test_a_mode_cell_is_read_as_its_check_reads_it(cli, tmp_path):
    """The disagg / mode check strips a cell (" True" is valid), so the mode must too: " True" was a
    valid row priced as aggregated, a disaggregated run silently given another deployment."""
    spaced = dict(IMX_ROW, point_id="spaced", **dict(DISAGG, disagg=" True", decode_dp_attention=" False"))
    got = _predictions(cli, _imx_csv(tmp_path / "s.csv", dict(IMX_ROW, point_id="plain", **DISAGG), spaced), tmp_path)
    assert got["spaced"]["mode"] == got["plain"]["mode"] == "disaggregated"
    assert got["spaced"]["pred_ttft_ms"] == got["plain"]["pred_ttft_ms"] != ""


def test_short_and_long_rows_are_invalid_not_a_traceback(cli, tmp_path):
    src = _imx_csv(tmp_path / "m.csv", IMX_ROW)
    with open(src, "a", encoding="utf-8") as f:
        f.write("imx-99999,foo\n")                      # 2 cells
        f.write('imx-99998,"unterminated,b200\n')         # a quote that never closes: 2 cells to EOF
    rc, out, err = cli("validate", src, "--out", tmp_path / "o")
    assert rc == 0 and "Traceback" not in err, err
    got = {r["point_id"]: r for r in csv.DictReader(open(tmp_path / "o" / "predictions.csv"))}
    n = len(IMX_ROW)
    assert got["imx-99999"]["status"] == f"invalid: row 3 has 2 cells, the header {n}"
    assert got["imx-99998"]["status"] == f"invalid: row 4 has 2 cells, the header {n}"
    assert got["imx-00659"]["status"] == "ok"


def test_one_statistic_per_row_and_the_json_says_which(cli, tmp_path):
    # a row whose median TPOT is blank is compared on its means for both TTFT and TPOT (never a
    # median TTFT beside a mean TPOT); --json names the statistic
    row = dict(IMX_GPTOSS, median_tpot_s="")
    src = _imx_csv(tmp_path / "m.csv", row)
    got = _predictions(cli, src, tmp_path)["imx-01898"]
    assert got["statistic"] == "mean"
    assert float(got["measured_ttft_ms"]) == pytest.approx(46.13150153309107, rel=1e-5)
    assert float(got["measured_tpot_ms"]) == pytest.approx(4.652154890378428, rel=1e-5)
    import json

    rc, out, err = cli("validate", _imx_csv(tmp_path / "g.csv", IMX_GPTOSS), "--json")
    assert rc == 0 and json.loads(out)["statistic"] == "median" and "note:" not in err
    # the shipped calibration's provenance says it was fitted on medians: comparing means says so
    rc, out, err = cli("validate", _imx_csv(tmp_path / "g.csv", IMX_GPTOSS), "--json", "--statistic", "mean")
    assert rc == 0 and json.loads(out)["statistic"] == "mean"
    assert "calibration was fitted on InferenceMAX medians; comparing with means" in err


def test_dynamo_sglang_rows_logging_tp1_ep1_get_wide_ep(shared_data):
    """imx-02225 (GB200, Dynamo + SGLang, DeepSeek-R1 FP8, 1k/1k, C = 1024) logs prefill and decode
    TP 1, EP 1 with attention DP for 3 prefill workers on 24 GPUs and 1 decode worker on 48.
    InferenceX's nvidia-master.yaml at 8ccec7a7 lists this item (3 prefill workers, 1 decode worker,
    conc 1024 2048 4096) with prefill EP 8 and decode EP 48, and at 0004cf5f as
    recipes/gb200-fp8/1k1k/mid-curve.yaml with prefill TP 8, EP 8 and decode TP 48, EP 48, attention
    DP on both: the rows are priced with EP = GPUs per worker, attention DP, and say so. Explicit
    counts of other rows are kept."""
    from codesign.recipes import recipes

    item = [rc for rc in recipes() if rc["source"] == "8ccec7a7" and rc["framework"] == "dynamo-sglang"
            and rc["precision"] == "fp8" and rc["isl"] == 1024 and rc["osl"] == 1024
            and rc["prefill_num_worker"] == 3 and rc["decode_num_worker"] == 1]
    assert [(rc["prefill_ep"], rc["decode_ep"]) for rc in item] == [(8, 48)]
    _, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv")
    by = {p.id: p for p in pts}
    p = by["imx-02225"]
    assert (p.deploy["p_chips"], p.deploy["p_dp"], p.deploy["p_ep"]) == (24, 8, 8)
    assert (p.deploy["d_chips"], p.deploy["d_dp"], p.deploy["d_ep"]) == (48, 48, 48)
    # the file at the commit specs/recipes/srt_slurm_prefill.csv read it (its line for the file)
    assert [w for w in p.warnings if "TP 1 / EP 1 logged" in w] == [
        "placeholder TP 1 / EP 1 logged for workers of several GPUs (attention DP logged: prefill True, "
        "decode True), priced as the srt-slurm recipe file NVIDIA/srt-slurm@eb889c08:recipes/gb200-fp8/1k1k/"
        "mid-curve.yaml configures them: prefill pool attention DP 8 / EP 8, decode pool attention DP 48 / EP 48 "
        "(the file InferenceX's nvidia-master.yaml@0004cf5f names for these worker counts)"], p.warnings
    # imx-02250 (GB200 DeepSeek-R1 FP8 1k/1k, 1 prefill + 4 decode workers of 4 GPUs, C = 64): no InferenceX item
    # names a file for these pools (0004cf5f's FP8 1k/1k low-latency file runs 1 + 1 workers), so the
    # wide-EP reading prices them: EP = GPUs per worker, the logged attention DP
    w = by["imx-02250"]
    assert (w.deploy["p_tp"], w.deploy["p_ep"], w.deploy["p_dp"], w.deploy["d_ep"], w.deploy["d_dp"]) == (1, 4, 4, 4, 4)
    # the same words as the file's pools, the attention DP included (imx-02250 logs it on both pools)
    assert ("placeholder TP 1 / EP 1 logged for workers of several GPUs (attention DP logged: prefill True, "
            "decode True), priced with EP = GPUs per worker and the logged attention DP: prefill pool attention "
            "DP 4 / EP 4, decode pool attention DP 4 / EP 4 (no srt-slurm recipe file is named for these pools, "
            "and InferenceX's nvidia-master.yaml@8ccec7a7 lists such runs with EP = GPUs per worker)") in w.warnings
    # imx-00179 logs decode TP 32, EP 32 itself (InferenceX 0004cf5f): no warning, same EP
    q = by["imx-00179"]
    assert q.deploy["d_ep"] == 32 and not any("EP 1 logged" in w for w in q.warnings)


def test_placeholder_pools_follow_the_recipe_file_that_ran(shared_data, tmp_path, cli):
    """Where the recipe file disagrees with the logged attention DP, the pools are the file's.
    NVIDIA/srt-slurm ``recipes/gb200-fp4/8k1k/max-tpt.yaml`` (@975f228f; 10 prefill workers, 1 decode
    worker of 32 GPUs) sets the prefill workers ``tp-size: 4``, ``ep-size: 1``, ``enable-dp-attention:
    false`` and the decode worker ``tp-size 32``, ``ep-size 32`` with attention DP; imx-02381 (C =
    2048) logs prefill attention DP. ``recipes/gb200-fp4/1k1k/low-latency.yaml`` (@7c50317d; 1 prefill,
    2 decode workers) sets both pools ``tensor-parallel-size: 4``, ``expert-parallel-size: 1``, no
    attention DP, and ``scheduler-recv-interval: 10``; imx-02266 (C = 32) logs attention DP on both.
    The same run priced as logged (DEP 4 prefill) has the larger prefill capacity, so the lower TTFT."""
    _, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv")
    by = {p.id: p for p in pts}
    p = by["imx-02381"]
    assert {k: p.deploy[k] for k in ("p_chips", "p_tp", "p_ep", "p_dp", "d_chips", "d_tp", "d_ep", "d_dp")} == {
        "p_chips": 40, "p_tp": 4, "p_ep": 1, "p_dp": 1, "d_chips": 32, "d_tp": 1, "d_ep": 32, "d_dp": 32}
    assert "ri" not in p.deploy  # max-tpt.yaml sets no scheduler-recv-interval: the calibrated wait
    assert ("placeholder TP 1 / EP 1 logged for workers of several GPUs (attention DP logged: prefill True, "
            "decode True), priced as the srt-slurm recipe file NVIDIA/srt-slurm@975f228f:recipes/gb200-fp4/8k1k/"
            "max-tpt.yaml configures them: prefill pool TP 4 / EP 1 / no attention DP, decode pool attention DP 32 "
            "/ EP 32 (the file InferenceX's nvidia-master.yaml@0004cf5f names for these worker counts)") in p.warnings, \
        p.warnings
    assert not any(";" in w for w in p.warnings)  # one phrase (before " | " joined them, the cell joined warnings with "; ")
    assert not any("GPUs per worker; using" in w for w in p.warnings)
    # the same pools at C = 8192 (imx-02334), which the 0004cf5f item does not list (it ran C = 2048):
    # the same file, and the warning says the item ran another concurrency
    assert by["imx-02334"].deploy == p.deploy
    assert any("run there at concurrencies 2048, not this row's 8192)" in w for w in by["imx-02334"].warnings)
    q = by["imx-02266"]
    assert {k: q.deploy[k] for k in ("p_tp", "p_ep", "p_dp", "d_tp", "d_ep", "d_dp", "ri")} == {
        "p_tp": 4, "p_ep": 1, "p_dp": 1, "d_tp": 4, "d_ep": 1, "d_dp": 1, "ri": 10}
    assert ("the decode workers' SGLang --scheduler-recv-interval 10, from NVIDIA/srt-slurm@7c50317d:"
            "recipes/gb200-fp4/1k1k/low-latency.yaml, replaces the calibrated admission wait") in q.assumptions
    # imx-00177 logs the same pools explicitly (TP 4, EP 1, no attention DP) and matches the item
    # naming that file exactly: the same receive interval
    e = by["imx-00177"]
    assert (e.deploy["p_tp"], e.deploy["d_tp"], e.deploy["d_dp"], e.deploy.get("ri")) == (4, 4, 1, 10)
    # a row whose decode pool is logged explicitly as attention DP 4 does not take the file (TP 4
    # decode) for its placeholder prefill pool
    from codesign.validate import _imx

    with open(shared_data / "measured" / "inferencemax_public.csv", newline="") as f:
        r66 = next(r for r in csv.DictReader(f) if r["point_id"] == "imx-02266")
    mixed = _imx(dict(r66, decode_tp="1", decode_ep="4"))
    assert (mixed.deploy["p_dp"], mixed.deploy["d_dp"], mixed.deploy["d_ep"]) == (4, 4, 4)
    assert not any("low-latency.yaml" in w for w in mixed.warnings + mixed.assumptions)
    # priced: the model packs one prefill token budget per attention replica into a pass
    # (PREFILL_WORKER_TOKENS), one per worker at TP 4 and one per GPU at attention DP 4, so the logged
    # layout has the larger prefill capacity and the lower TTFT at this saturated point
    with open(shared_data / "measured" / "inferencemax_public.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["point_id"] == "imx-02381")
    logged = dict(row, point_id="logged", prefill_tp="1", prefill_ep="4")  # explicit counts: kept as logged
    src = _write_csv(tmp_path / "m.csv", list(row), [row, logged])
    rows = _predictions(cli, src, tmp_path)
    assert rows["imx-02381"]["status"] == rows["logged"]["status"] == "ok"
    assert float(rows["logged"]["pred_ttft_ms"]) < float(rows["imx-02381"]["pred_ttft_ms"])


# --- input-handling rough edges of a fresh-user trial -------------------------------------------
def test_an_inner_space_in_a_system_name_is_read_like_case_when_unambiguous(tmp_path, cli, monkeypatch):
    """"GB 200" and "b200 sxm" name gb200 and b200 (every reading of the space that is a known name is
    the same system); "gb-200" (hyphens are part of names such as b200-trt) and "zz 9" stay unknown,
    reported with the name as written."""
    from codesign.validate import system_name

    assert system_name("GB 200") == "gb200" and system_name(" gb  200 ") == "gb200"
    assert system_name("B200 SXM") == "b200_sxm" and system_name("mi355x disagg") == "mi355x-disagg"
    assert system_name("gb-200") == "gb-200" and system_name("zz 9") == "zz 9"
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="plain", hardware="gb200"),
                   dict(IMX_ROW, point_id="space", hardware="GB 200"),
                   dict(IMX_ROW, point_id="hyphen", hardware="gb-200"),
                   dict(IMX_ROW, point_id="unknown", hardware="zz 9"))
    rows = _predictions(cli, src, tmp_path)
    assert rows["space"]["status"] == "ok" and rows["space"]["system"] == "GB 200"  # echoed as written
    for col in ("pred_ttft_ms", "pred_tpot_ms", "pred_tput_per_gpu_tok_s"):
        assert rows["space"][col] == rows["plain"][col] != "", col
    assert rows["hyphen"]["status"] == "unsupported: no hardware spec for system gb-200 (did you mean gb200?)"
    assert rows["unknown"]["status"] == "unsupported: no hardware spec for system zz 9"
    # were "gb-200" also a name, of another system, "GB 200" would be ambiguous: not guessed
    import codesign.validate as v

    monkeypatch.setitem(v.SYSTEMS, "gb-200", "gb300")
    assert system_name("GB 200") == "gb 200"
    p = read_measured(_imx_csv(tmp_path / "amb.csv", dict(IMX_ROW, hardware="GB 200")))[1][0]
    assert p.status == ("unsupported: no hardware spec for system GB 200 "
                        "(ambiguous: reads as gb200 (gb200) or gb-200 (gb300))")


def test_another_products_name_gets_the_known_systems_not_a_guess():
    """a100_sxm is one letter from h100_sxm and h20_sxm one digit from h200_sxm, but each is another
    GPU: "did you mean h100_sxm?" sent the user to the wrong product (helper-64, session 45). Where
    the closest known name has another series (a vs h) or model number (20 vs 200), the hint lists
    the known systems (the baselines SYSTEMS maps to) instead; a typo within one product keeps
    its guess."""
    from codesign.validate import system_hint

    known = " (known systems: b200, b300, gb200, gb300, h100, h200, mi300x, mi325x, mi355x)"
    assert system_hint("a100_sxm") == known
    assert system_hint("h20_sxm") == known
    assert system_hint("mi350x") == known  # MI350X is not the MI355X
    assert system_hint("gb200_sx") == " (did you mean gb200_sxm?)"
    assert system_hint("mi355") == " (did you mean mi355x?)"
    assert system_hint("gb-200") == " (did you mean gb200?)"


def test_invalid_rows_show_no_pricing_assumptions_and_no_fake_concurrency(tmp_path, cli):
    """An invalid row keeps its id and status; what only a priced row has (mode, statistic, measured
    columns of the statistic, the MTP assumption) is blank, and a concurrency that is not a number is a
    blank cell, not 0. A valid MTP row keeps its assumption (the draft tokens)."""
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="mtp", spec_method="mtp"),
                   dict(IMX_ROW, point_id="conc-abc", conc="abc", spec_method="mtp"),
                   dict(IMX_ROW, point_id="isl-x", isl="x", spec_method="mtp"),
                   dict(IMX_ROW, point_id="disagg-maybe", disagg="maybe"))
    rows = _predictions(cli, src, tmp_path)
    assert rows["mtp"]["status"] == "ok" and rows["mtp"]["statistic"] == "median"
    assert "MTP speculative decoding: 3 draft tokens per step assumed" in rows["mtp"]["assumptions"]
    assert "MTP" not in rows["mtp"]["warning"]
    assert rows["mtp"]["concurrency"] == "64" and rows["mtp"]["mode"] == "aggregated"
    want = {"conc-abc": "invalid: conc must be a whole number >= 1 (got abc)",
            "isl-x": "invalid: isl must be a whole number >= 1 (got x)",
            "disagg-maybe": "invalid: disagg must be True or False (got maybe)"}
    for pid, status in want.items():
        r = rows[pid]
        assert r["status"] == status, r
        assert r["point_id"] == pid and r["system"] == "b200"
        for col in ("mode", "statistic", "warning", "measured_ttft_ms", "measured_tpot_ms",
                    "measured_tput_per_gpu_tok_s", "pred_ttft_ms", "pred_tpot_ms", "pred_tput_per_gpu_tok_s"):
            assert r[col] == "", (pid, col, r[col])
    assert rows["conc-abc"]["concurrency"] == ""  # was "0"
    assert rows["isl-x"]["concurrency"] == rows["disagg-maybe"]["concurrency"] == "64"  # a valid conc stays


def test_an_aiconfigurator_row_without_concurrency_has_a_blank_cell_not_1(tmp_path, cli):
    """No silicon_concurrency=, no _c<N>_ in the id and no batch_size: unsupported, and the
    concurrency cell is blank (it was a made-up 1)."""
    row = {"id": "a_c8", "system": "b200_sxm", "model_path": "openai/gpt-oss-120b", "backend": "trtllm",
           "mode": "agg", "isl": "1024", "osl": "1024", "gemm_quant_mode": "", "moe_quant_mode": "",
           "batch_size": "8", "tp_size": "8", "pp_size": "1", "attention_dp_size": "1", "moe_tp_size": "1",
           "moe_ep_size": "8", "silicon_ttft_ms": "100", "silicon_tpot_ms": "5"}
    src = _imx_csv(tmp_path / "aic.csv", row, dict(row, id="a_none", batch_size=""))
    rc, _, err = cli("validate", src, "--out", tmp_path / "o")
    assert rc == 0 and "Traceback" not in err, err
    got = {r["id"]: r for r in csv.DictReader(open(tmp_path / "o" / "predictions.csv"))}
    assert got["a_c8"]["concurrency"] == "8"
    assert got["a_none"]["status"] == "unsupported: no concurrency or batch size"
    assert got["a_none"]["concurrency"] == ""


def test_duplicate_ids_are_kept_and_warned_about_once(tmp_path, cli):
    # rows 2..8 of the file (the header is row 1): imx-00659 on rows 2 and 4, "x" on rows 3, 5 and 6,
    # "y" on 7 and 8; each row another concurrency, so the order of predictions.csv is checkable
    ids = ["imx-00659", "x", "imx-00659", "x", "x", "y", "y"]
    src = _imx_csv(tmp_path / "m.csv", *[dict(IMX_ROW, point_id=i, conc=str(8 * (n + 1))) for n, i in enumerate(ids)])
    out = tmp_path / "o"
    rc, _, err = cli("validate", src, "--out", out)
    assert rc == 0 and "Traceback" not in err, err
    warn = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert warn == [f"warning: {src}: 3 point_id values repeated (7 rows: imx-00659 on rows 2, 4; x on rows "
                    "3, 5, 6; y on rows 7, 8); every row is kept, and predictions.csv lists them in the input's "
                    "order (match rows by order, not by point_id)"], err
    got = list(csv.DictReader(open(out / "predictions.csv")))
    assert [r["point_id"] for r in got] == ids  # none dropped or merged
    assert [r["concurrency"] for r in got] == ["8", "16", "24", "32", "40", "48", "56"]
    assert all(r["status"] == "ok" for r in got)


def test_duplicate_id_warning_names_the_first_five(tmp_path, cli):
    ids = [f"d{k}" for k in range(7)] * 2 + ["single"]
    # each row another concurrency: rows sharing an id are not also one measurement repeated
    src = _imx_csv(tmp_path / "m.csv", *[dict(IMX_ROW, point_id=i, conc=str(n + 1)) for n, i in enumerate(ids)])
    rc, _, err = cli("validate", src, "--json")
    assert rc == 0, err
    # d0 on rows 2 and 9, ..., d4 on rows 6 and 13; d5 and d6 counted only
    shown = "; ".join(f"d{k} on rows {k + 2}, {k + 9}" for k in range(5))
    assert f"7 point_id values repeated (14 rows: {shown}; and 2 more)" in err, err
    assert "d5 on" not in err and len(err.strip().splitlines()) == 1


def test_rows_repeating_a_measurement_are_priced_and_said(tmp_path, cli):
    """The public aiconfigurator file holds the same runs twice (its 2026-03-25 and 2026-04-06 dumps,
    ids and silicon_data_source differing): rows equal in every other cell are each priced and
    counted, and validate says which repeat which."""
    import json

    row = {"id": "a_c8", "silicon_data_source": "source_file=2026-03-25.csv", "system": "b200_sxm",
           "model_path": "openai/gpt-oss-120b", "backend": "trtllm", "mode": "agg", "isl": "1024",
           "osl": "1024", "gemm_quant_mode": "", "moe_quant_mode": "", "batch_size": "8", "tp_size": "8",
           "pp_size": "1", "attention_dp_size": "1", "moe_tp_size": "1", "moe_ep_size": "8",
           "silicon_ttft_ms": "100", "silicon_tpot_ms": "5"}
    src = _imx_csv(tmp_path / "aic.csv", row,
                   dict(row, id="b_c8", silicon_data_source="source_file=2026-04-06.csv"),  # repeats a_c8
                   dict(row, id="c_c8", silicon_tpot_ms="5.1"),  # another measurement
                   dict(row, id="d_c8", silicon_data_source="x"),  # repeats a_c8 too
                   dict(row, id="e_c8", silicon_ttft_ms="100.0"))  # the same number written otherwise: too
    rc, _, err = cli("validate", src, "--out", tmp_path / "o")
    assert rc == 0 and "Traceback" not in err, err
    assert (f"note: {src}: 3 row(s) repeat an earlier row's measurement (every cell but id and "
            "silicon_data_source equal, e.g. b_c8 repeats a_c8 (row 2))") in err, err
    got = {r["id"]: r for r in csv.DictReader(open(tmp_path / "o" / "predictions.csv"))}
    assert all(got[f"{i}_c8"]["status"] == "ok" for i in "abcde"), got
    for i in "bde":  # the file's row 2 (the header is row 1) holds a_c8
        assert "repeats the measurement of a_c8 (row 2)" in got[f"{i}_c8"]["warning"], got[f"{i}_c8"]
    assert "repeats" not in got["a_c8"]["warning"] and "repeats" not in got["c_c8"]["warning"]
    rc, out, _ = cli("validate", src, "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["repeated_rows"] == 3
    # which rows: the file's line numbers, the header being row 1 (a_c8 is row 2, b_c8 row 3, ...);
    # c_c8 (row 4) has another TPOT, so it repeats nothing
    assert doc["repeats"] == [{"id": "b_c8", "row": 3, "repeats_id": "a_c8", "repeats_row": 2},
                              {"id": "d_c8", "row": 5, "repeats_id": "a_c8", "repeats_row": 2},
                              {"id": "e_c8", "row": 6, "repeats_id": "a_c8", "repeats_row": 2}]
    # InferenceMAX rows: the same cells but point_id and source repeat; another run_url does not
    imx = _imx_csv(tmp_path / "imx.csv", IMX_ROW, dict(IMX_ROW, point_id="again", source="other capture"),
                   dict(IMX_ROW, point_id="other-run", run_url="https://example.org/run/2"))
    rc, out, err = cli("validate", imx, "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["repeated_rows"] == 1, err
    assert doc["repeats"] == [{"id": "again", "row": 3, "repeats_id": IMX_ROW["point_id"], "repeats_row": 2}]
    assert f"e.g. again repeats {IMX_ROW['point_id']} (row 2)" in err, err


def test_error_table_titles_name_a_fallback_statistic_only_when_used(shared_data, tmp_path, cli):
    """IMX_ROW records medians only; imx-00159 (a legacy GB200 row whose pools are inferred from
    the nearest run: an ambiguous row) records both. Median: no row falls back, no title says "the other". Mean: the
    ok tables' only row falls back to its medians, so they are titled against medians ("no row has
    the mean"); the ambiguous row has means (its table does not fall back) and names the statistic too."""
    src = shared_data / "measured" / "inferencemax_public.csv"
    legacy = next(r for r in csv.DictReader(src.open()) if r["point_id"] == "imx-00159")
    assert legacy["mean_ttft_s"] and legacy["mean_tpot_s"] and not IMX_ROW["mean_ttft_s"]
    m = _imx_csv(tmp_path / "m.csv", legacy, IMX_ROW)
    rc, out, err = cli("validate", m)
    assert rc == 0, err
    text = " ".join(out.split())  # rich wraps titles
    assert "the other where a row lacks it" not in text
    for title in ("overall error", "error by system", "error by model", "error by mode"):
        assert f"inferencemax: {title} vs median TTFT/TPOT (calibrated knobs)" in text, text
    assert "status column of predictions.csv), error by system vs median TTFT/TPOT (calibrated knobs)" in text
    rc, out, err = cli("validate", m, "--statistic", "mean")
    assert rc == 0, err
    text = " ".join(out.split())
    # the ok tables' only row (IMX_ROW) fell back to its medians: they are against medians and say
    # so (they said "vs mean ... (the other where a row lacks it)": fresh-user trial, session 48)
    for title in ("overall error", "error by system", "error by model", "error by mode"):
        assert (f"inferencemax: {title} vs median TTFT/TPOT (no row has the mean) "
                "(calibrated knobs)") in text, text
    assert "status column of predictions.csv), error by system vs mean TTFT/TPOT (calibrated knobs)" in text
    # two ok rows, one with means (its medians copied into its mean cells), one without: only some
    # fell back, so the tables are against means, "the other where a row lacks it"
    both = dict(IMX_ROW, point_id="both", mean_ttft_s=IMX_ROW["median_ttft_s"], mean_tpot_s=IMX_ROW["median_tpot_s"])
    rc, out, err = cli("validate", _imx_csv(tmp_path / "mix.csv", both, IMX_ROW), "--statistic", "mean")
    assert rc == 0, err
    text = " ".join(out.split())
    assert ("inferencemax: overall error vs mean TTFT/TPOT (the other where a row lacks it) (calibrated knobs)"
            in text), text


def _table_lines(out, title):
    """The header and body lines of the rich table titled ``title`` in ``out``, as lists of cells."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("└"))
    return [[c.strip() for c in line.strip("┃│").split("┃" if "┃" in line else "│")]
            for line in lines[start:end] if line.startswith(("┃", "│"))]


def test_validate_counts_the_rows_priced_on_a_terminal_only(tmp_path, cli, monkeypatch):
    """The aiconfigurator file takes minutes; on a terminal (rich's TTY_COMPATIBLE=1) a bar on
    stderr counts its rows priced, up to every row grouped for pricing (two rows here, priced as one
    group: 0/2, then 2/2; its first frame said 0/?, the total not yet set), and is gone once the
    tables print (transient); on a log (no terminal)
    nothing is drawn (fresh-user trial: 'prints nothing while it works', which was a log)."""
    src = _imx_csv(tmp_path / "m.csv", IMX_ROW, dict(IMX_ROW, point_id="imx-x", conc="32"))
    rc, out, err = cli("validate", src)
    assert rc == 0 and "rows priced" not in err, err
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    rc, out, err = cli("validate", src)
    assert rc == 0, err
    frames = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err).replace("\r", "\n").splitlines()
    counts = [m.group(1) for f in frames if (m := re.match(r"validate rows priced\s.*?\s(\d+/\d+)\s", f.strip()))]
    assert counts[0] == "0/2" and set(counts) == {"0/2", "2/2"} and counts[-1] == "2/2", (counts, err)


def test_the_overall_error_table_has_no_group_column(tmp_path, cli):
    """The overall table had an 'all' column holding 'all' on its first line and nothing else
    (fresh-user trial): it has no group column; the by-system table keeps its 'system' column. One
    B200 row (IMX_ROW): each metric over 1 row."""
    rc, out, err = cli("validate", _imx_csv(tmp_path / "m.csv", IMX_ROW))
    assert rc == 0, err
    overall = _table_lines(out, "overall error")
    assert overall[0] == ["metric", "rows", "MAPE", "median APE", "≤10%", "≤25%", "extrap."], overall
    assert [r[:2] for r in overall[1:]] == [["TTFT", "1"], ["TPOT", "1"], ["tok/s/GPU", "1"]], overall
    by_system = _table_lines(out, "error by system")
    assert by_system[0][:2] == ["system", "metric"] and by_system[1][:3] == ["b200", "TTFT", "1"], by_system


def test_absent_optional_columns_are_said_once_and_on_every_row(tmp_path, cli):
    """A file without spec_method is priced without speculative decoding, and one without
    median_tpot_s is compared with the means: both said on stderr (once) and in each row's warning;
    --json counts the rows that fell back to the other statistic. IMX_ROW has no mean TTFT, so the
    second row (with both means) is the one that can fall back."""
    import json

    no_spec = {k: v for k, v in IMX_ROW.items() if k != "spec_method"}
    src = _imx_csv(tmp_path / "nospec.csv", no_spec)
    rc, out, err = cli("validate", src, "--out", tmp_path / "o1")
    assert rc == 0 and "Traceback" not in err, err
    note = ("absent column spec_method: every row priced without speculative decoding "
            "(an MTP run would be mispriced)")
    assert err.count(f"warning: {src}: {note}") == 1, err
    row = next(csv.DictReader(open(tmp_path / "o1" / "predictions.csv")))
    assert note in row["warning"]

    both = dict(IMX_ROW, point_id="both", mean_ttft_s="0.6", mean_tpot_s="0.025")
    no_median_tpot = [{k: v for k, v in r.items() if k != "median_tpot_s"} for r in (IMX_ROW, both)]
    src = _imx_csv(tmp_path / "nomed.csv", *no_median_tpot)
    rc, out, err = cli("validate", src, "--json")
    assert rc == 0, err
    assert "absent column median_tpot_s: rows compared with their mean TTFT/TPOT instead of the median" in err
    doc = json.loads(out)
    # imx-00659 has neither median TPOT nor means: unsupported; "both" is compared with its means
    assert doc["statistic"] == "median" and doc["statistic_fallback_rows"] == 1


def test_calibrate_refuses_a_missing_file_or_a_directory_in_one_line(tmp_path, cli):
    for bad, why in ((tmp_path / "nonexistent.csv", "no such file"),
                     (tmp_path, "is a directory; expected a measured CSV file")):
        rc, out, err = cli("calibrate", bad, "--out", tmp_path / "c.toml", "--steps", "1")
        assert rc == 2 and f"{bad}: {why}" in err and "Traceback" not in err, err


def test_a_wrong_shared_data_dir_is_said_once_up_front(tmp_path, cli, monkeypatch):
    """CODESIGN_SHARED_DATA set to a directory without measured/inferencemax_public.csv (the pool
    recipes' source): validate and calibrate say so once on stderr, before their other output, with
    the variable, its value, what is missing and the fallback; they still run (exit 0). A refusal
    stays one line."""
    from codesign.validate import shared_data_warning

    monkeypatch.setenv("CODESIGN_SHARED_DATA", str(tmp_path / "data"))  # no such directory yet
    src = _imx_csv(tmp_path / "m.csv", IMX_ROW)
    for cmd in (["validate", src, "--out", tmp_path / "o"],
                ["calibrate", src, "--out", tmp_path / "c.toml", "--steps", "1", "--holdout", "0"]):
        rc, _, err = cli(*cmd)
        assert rc == 0 and "Traceback" not in err, err
        lines = err.splitlines()
        assert lines[0].startswith(f"warning: CODESIGN_SHARED_DATA={tmp_path / 'data'}: no such directory"), err
        assert "sizing rule" in lines[0] and sum("CODESIGN_SHARED_DATA=" in ln for ln in lines) == 1, err
    assert (tmp_path / "o" / "predictions.csv").is_file() and (tmp_path / "c.toml").is_file()
    # the per-file pool-recipes note would say the same again: printed once, up front (a row keeps it)
    from codesign.validate import NO_RECIPES, Point, file_notes

    pt = Point(id="x", schema="aiconfigurator", system="gb200", model_name="m", framework="trtllm",
               warnings=[NO_RECIPES + "x.csv not found"])
    assert file_notes([pt]) == []
    rc, _, err = cli("calibrate", tmp_path / "nonexistent.csv", "--out", tmp_path / "c2.toml")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "no such file" in err, err
    # what is missing, by how far the directory goes
    (tmp_path / "data").mkdir()
    assert ": it has no measured/ directory (" in shared_data_warning()
    (tmp_path / "data" / "measured").mkdir()
    assert ": it has no measured/inferencemax_public.csv (" in shared_data_warning()
    (tmp_path / "data" / "measured" / "inferencemax_public.csv").write_text("")
    assert shared_data_warning() is None
    monkeypatch.delenv("CODESIGN_SHARED_DATA")  # unset: <repo>/../shared/data, no variable to blame
    assert shared_data_warning() is None
    assert file_notes([pt]) == [NO_RECIPES + "x.csv not found"]  # no warning up front: the note is it


def test_an_inferencemax_file_read_away_from_the_shared_data_is_its_own_pool_recipe(shared_data, tmp_path,
                                                                                     monkeypatch):
    """imx-00159 logs only its run's total GPUs and no InferenceX item of that size ran its
    concurrency; with the shared file it takes the pools of the nearest measured run
    (test_inferencemax_rows_logging_total_gpus_get_recipe_pools). Copied elsewhere
    with the disaggregated runs beside it and no shared data, the file's own runs are the recipes:
    the same pools, and the row says where they came from."""
    with_shared = {p.id: p for p in read_measured(shared_data / "measured" / "inferencemax_public.csv")[1]}
    src = shared_data / "measured" / "inferencemax_public.csv"
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        rows = [row for row in r if row["disagg"] == "True" and row["hardware"] == "gb200"]
        cols = r.fieldnames
    dst = tmp_path / "gb200_disagg.csv"
    with open(dst, "w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    monkeypatch.setenv("CODESIGN_SHARED_DATA", str(tmp_path / "nowhere"))
    away = {p.id: p for p in read_measured(dst)[1]}
    p, q = away["imx-00159"], with_shared["imx-00159"]
    assert p.status == q.status and p.status.startswith("ambiguous: pools inferred from the nearest measured run imx-")
    assert p.deploy == q.deploy
    assert any(w.endswith("; the read file's own disaggregated runs used") for w in p.warnings), p.warnings


def test_measured_multinode_tp_is_priced_and_said(shared_data, tmp_path, cli):
    """H100 DeepSeek-R1 disaggregated runs whose TP group is larger than an 8-GPU HGX node
    (TensorRT-LLM ``tep16`` decode workers, Dynamo + SGLang workers logging TP 16) were measured: they are
    priced with multi-node TP (all-reduces over the scale-out network) and each such pool says so.
    The pools are read off the CSV's own columns: a worker without attention DP is one TP group of
    num_*_gpu / *_num_workers GPUs. imx-00353 (a 16-GPU attention-DP decode worker, TP 1) is the
    control."""
    src = shared_data / "measured" / "inferencemax_public.csv"
    node = 8  # NVLink domain of an HGX H100 (specs/hardware/h100.toml scaleup_domain)
    expected = {}
    for r in csv.DictReader(open(src, newline="")):
        if (r["hardware"], r["model_key"], r["disagg"]) != ("h100", "dsr1", "True"):
            continue
        said = []
        for pool in ("prefill", "decode"):
            tp = 1 if r[f"{pool}_dp_attention"] == "True" else round(float(r[f"num_{pool}_gpu"])
                                                                      / float(r[f"{pool}_num_workers"]))
            if tp > node:
                said.append(f"{pool} TP {tp} spans {math.ceil(tp / node)} scale-up domains of {node} chips: "
                            "its all-reduces are priced hierarchically, within each domain on its links and "
                            "across domains over the scale-out network (multi-node TP)")
        if said:
            expected[r["point_id"]] = said
    assert len(expected) == 14 and {"imx-00351", "imx-00352", "imx-00356"} <= set(expected)
    rows = _predictions(cli, _subset(src, tmp_path / "mntp.csv", set(expected) | {"imx-00353"}, "point_id"),
                        tmp_path)
    for pid, said in expected.items():
        r = rows[pid]
        assert r["status"] == "ok", (pid, r["status"])
        assert float(r["pred_ttft_ms"]) > 0 and float(r["pred_tpot_ms"]) > 0, pid
        assert [w for w in r["warning"].split(" | ") if "multi-node TP" in w] == said, (pid, r["warning"])
        # the shipped calibration was fitted without multi-node TP runs: outside its data
        assert "multi-node TP not in calibration data" in r["extrapolated"], (pid, r["extrapolated"])
    control = rows["imx-00353"]
    assert control["status"] == "ok" and "multi-node TP" not in control["warning"]


def test_aiconfigurator_multinode_tp_rows_are_priced(shared_data, tmp_path):
    """The aiconfigurator file carries the same H100 runs: dsr1_h100_trtllm_fp8_disagg_1024x1024_c60_cfg494
    logs decode_tp_size 16, decode_attention_dp_size 1 (prefill: attention DP 16, TP 1), so its decode
    TP group spans two 8-GPU nodes."""
    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    pid = "dsr1_h100_trtllm_fp8_disagg_1024x1024_c60_cfg494"
    schema, pts = read_measured(_subset(src, tmp_path / "aic.csv", {pid}, "id"))
    (p,) = predict(pts)
    assert p.status == "ok" and p.pred_ttft_s > 0 and p.pred_tpot_s > 0
    assert [w for w in p.warnings if "multi-node TP" in w] == [
        "decode TP 16 spans 2 scale-up domains of 8 chips: its all-reduces are priced hierarchically, within "
        "each domain on its links and across domains over the scale-out network (multi-node TP)"]


def test_trtllm_attention_dp_rows_run_the_launch_scripts_balance(shared_data):
    """InferenceMAX's aggregated TensorRT-LLM DeepSeek-R1 launch scripts turn on the attention-DP
    balance with attention DP (``attention_dp_config: {batching_wait_iters: 0, enable_balance: true,
    timeout_iters: 60}``, InferenceMAX/InferenceMAX benchmarks/dsr1_fp4_b200_trt_slurm.sh), the
    gpt-oss-120b one with ``enable_balance: true`` alone (TensorRT-LLM's default timeout, 50;
    benchmarks/gptoss_fp4_b200_trt_slurm.sh). Every aggregated TensorRT-LLM row with attention DP
    of both files carries that timeout and says where it comes from (the aiconfigurator file, which
    records no engine settings, as an assumption); no other row does (a disaggregated worker never
    holds both kinds of request, and other engines have no such rule). It is an engine setting: the
    holdout unit (``config_key``) does not include it, so the calibration's split is unchanged."""
    from codesign.validate import read_measured

    seen = {}
    for name in ("inferencemax_public.csv", "aiconfigurator_silicon_public.csv"):
        for p in read_measured(str(shared_data / "measured" / name))[1]:
            said = [w for w in p.assumptions if w.startswith("TensorRT-LLM attention-DP balance")]
            trt_dp = (p.mode == "aggregated" and p.deploy.get("dp", 1) > 1
                      and p.framework.strip().lower() in ("trt", "trtllm"))
            if not trt_dp:
                assert "ab" not in p.deploy and not said, (p.id, p.deploy)
                continue
            want = 50 if p.model == "gpt-oss-120b" else 60
            assert p.deploy["ab"] == want and len(said) == 1, (p.id, p.deploy, said)
            assert f"timeout {want} iterations" in said[0]
            assert ("not recorded in the file" in said[0]) == (p.schema == "aiconfigurator")
            assert all(k != "ab" for k, _ in p.config_key()[-1])
            seen[(p.schema, p.model)] = seen.get((p.schema, p.model), 0) + 1
    # every such row of the files' own columns, counted without the mapping: InferenceMAX disagg
    # False, framework trt, dp_attention True (35 DeepSeek-R1 + 19 gpt-oss-120b rows); aiconfigurator
    # mode agg, backend trtllm, attention_dp_size > 1 (32 + 4)
    want: dict = {}
    for r in csv.DictReader(open(shared_data / "measured" / "inferencemax_public.csv")):
        if r["disagg"] == "False" and r["framework"] == "trt" and r["dp_attention"] == "True":
            key = ("inferencemax", "gpt-oss-120b" if "gptoss" in r["model_key"] else "deepseek-r1")
            want[key] = want.get(key, 0) + 1
    for r in csv.DictReader(open(shared_data / "measured" / "aiconfigurator_silicon_public.csv")):
        if r["mode"] == "agg" and r["backend"] == "trtllm" and float(r["attention_dp_size"] or 1) > 1:
            key = ("aiconfigurator", "gpt-oss-120b" if "gpt-oss" in r["model_path"] else "deepseek-r1")
            want[key] = want.get(key, 0) + 1
    assert seen == want and sum(want.values()) == 90, (seen, want)


def test_sglang_launch_scripts_give_the_recv_interval(shared_data, tmp_path, cli):
    """InferenceMAX's B200 SGLang DeepSeek-R1 launch scripts (ishandhanani/InferenceMAX@d22bf9c
    benchmarks/dsr1_fp{8,4}_b200_docker.sh) pass --scheduler-recv-interval 30 from CONC 16 on and
    10 below; the H200 script (dsr1_fp8_h200_slurm.sh) passes none (SGLang's 1); other runs' launch
    settings are not public (the calibrated wait applies), except where a Dynamo + SGLang row's
    InferenceX item names an srt-slurm recipe file that sets the decode workers' interval: the
    GB200/GB300 FP4 low-latency files set ``scheduler-recv-interval: 10`` (NVIDIA/srt-slurm
    ``recipes/gb200-fp4/1k1k/low-latency.yaml``@7c50317d, ``8k1k``@b26af4b6; ishandhanani/srt-slurm
    ``recipes/gb300-fp4/1k1k/low_latency.yaml``@ab586514, ``8k1k``@f64d2b9f), the GB300 FP8 one 1 on
    decode (``recipes/gb300-fp8/1k1k/stp/low-latency.yaml``@f64d2b9f). From C = 8 to C = 16 a busy
    engine's mean wait grows from (10 − 1)/2 = 4.5 to (30 − 1)/2 = 14.5 decode iterations: the
    predicted TTFT rises by about 10 decode steps (the measured rows: 12-17 steps, with the prefill
    under 5% busy)."""
    from codesign.validate import read_measured

    by_file = {"recipes/gb200-fp4/1k1k/low-latency.yaml": 10, "recipes/gb200-fp4/8k1k/low-latency.yaml": 10,
               "recipes/gb300-fp4/1k1k/low_latency.yaml": 10, "recipes/gb300-fp4/8k1k/low_latency.yaml": 10,
               "recipes/gb300-fp8/1k1k/stp/low-latency.yaml": 1}
    filed = {f: 0 for f in by_file}

    src = shared_data / "measured" / "inferencemax_public.csv"
    seen = {"b200": 0, "h200": 0, "dynamo": 0}
    for p in read_measured(str(src))[1]:
        if p.model != "deepseek-r1" or "sglang" not in p.framework:
            continue
        if p.framework == "sglang" and p.mode == "aggregated" and p.system_key in ("b200", "h200"):
            want = (30 if p.concurrency >= 16 else 10) if p.system_key == "b200" else 1
            assert p.deploy.get("ri") == want, (p.id, p.concurrency, p.deploy)
            seen[p.system_key] += 1
        elif "ri" in p.deploy:
            said = [w for w in p.assumptions if w.startswith("the decode workers' SGLang --scheduler-recv-interval")]
            # "... from REPO@COMMIT:FILE, replaces the calibrated admission wait"
            f = said[0].rsplit("from ", 1)[1].split(", ")[0].split(":", 1)[1] if said else None
            assert f in by_file and p.deploy["ri"] == by_file[f], (p.id, p.deploy, p.assumptions)
            filed[f] += 1
        else:
            seen["dynamo"] += p.framework == "dynamo-sglang"
    assert min(seen.values()) > 10, seen
    # the December GB200 low-latency runs (11 at 1k/1k, 12 at 8k/1k, TP 1 / EP 1 logged) and the
    # later ones that log TP 4 take their file's interval; the GB300 files' rows too
    assert filed["recipes/gb200-fp4/1k1k/low-latency.yaml"] > 11
    assert filed["recipes/gb200-fp4/8k1k/low-latency.yaml"] > 12
    assert min(filed.values()) >= 1, filed
    # one served configuration at C = 8 and C = 16 (B200, SGLang, FP8, TP 8, 1k/1k)
    rows = [r for r in csv.DictReader(open(src, newline=""))
            if (r["hardware"], r["framework"], r["model_key"], r["precision"], r["isl"], r["osl"], r["tp"],
                r["dp_attention"], r["spec_method"]) == ("b200", "sglang", "dsr1", "fp8", "1024", "1024", "8",
                                                         "False", "none")
            and r["conc"] in ("8", "16")]
    ids = {r["point_id"] for r in rows}
    assert {r["conc"] for r in rows} == {"8", "16"}
    pred = _predictions(cli, _subset(src, tmp_path / "recv.csv", ids, "point_id"), tmp_path)
    by_c = {}
    for r in pred.values():
        by_c.setdefault(int(r["concurrency"]), []).append((float(r["pred_ttft_ms"]), float(r["pred_tpot_ms"])))
    (t8, _), (t16, p16) = by_c[8][0], by_c[16][0]
    assert t16 - t8 >= 9.0 * p16, (t8, t16, p16)


def test_an_inferencex_item_decides_pools_only_when_alone_or_agreeing(tmp_path, monkeypatch):
    """recipe_item_pools on a hand-written recipe table: the item that ran the row's concurrency
    with its logged TP/EP gives the pools (GPUs per worker = TP, attention DP ranks = GPUs); two
    items that disagree (batch 256 against 128) decide nothing; an item that did not run the
    concurrency, or that ran MTP when the row says none, does not match; a Dynamo + SGLang item
    logging TP 1 and EP 1 (344ac6c2's placeholders) never matches."""
    from codesign import recipes
    from codesign.validate import Point, recipe_item_pools

    head = recipes.RECIPES_CSV.read_text().splitlines()[:2]  # the comment line and the header
    cols = head[1].split(",")

    def item(**kw):
        row = dict.fromkeys(cols, "")
        row.update(source="t", config="cfg", model_prefix="dsr1", hardware="gb300", framework="dynamo-trt",
                   precision="fp8", spec_decoding="none", isl="8192", osl="1024", run_conc_list="512 2151",
                   prefill_num_worker="7", prefill_tp="4", prefill_ep="4", prefill_dp_attn="true",
                   decode_num_worker="1", decode_tp="8", decode_ep="8", decode_dp_attn="true",
                   decode_batch_per_instance="2048", mtp_draft_tokens="0")
        row.update({k: str(v) for k, v in kw.items()})
        return ",".join(row[c] for c in cols)

    def pools(lines, conc=2151, framework="dynamo-trt", logged=(4, 4, 8), spec=None):
        f = tmp_path / f"r{len(list(tmp_path.iterdir()))}.csv"
        f.write_text("\n".join(head + lines) + "\n")
        monkeypatch.setattr(recipes, "RECIPES_CSV", f)
        pt = Point(id="x", schema="aiconfigurator", system="gb300", model_name="deepseek-ai/DeepSeek-R1",
                   framework=framework, mode="disaggregated")
        pt.model, pt.isl, pt.osl, pt.concurrency = "deepseek-r1", 8192, 1024, conc
        return recipe_item_pools(pt, "fp8", logged=logged, spec=spec)

    dep, items = pools([item()])
    # 7 prefill workers of 4 GPUs with attention DP, 1 decode worker of 8 (DEP 8)
    assert dep == {"p_chips": 28, "p_tp": 1, "p_ep": 4, "p_dp": 4, "d_chips": 8, "d_tp": 1, "d_ep": 8,
                   "d_dp": 8, "pp": 1, "mb": 2048} and len(items) == 1
    assert pools([item(), item(source="u")])[0] == dep  # versions that agree
    assert pools([item(), item(decode_batch_per_instance=1024)]) is None  # versions that disagree
    assert pools([item()], conc=1024) is None  # a concurrency the item did not run
    assert pools([item()], logged=(4, 4, 16)) is None  # another decode TP
    assert pools([item(spec_decoding="mtp", mtp_draft_tokens=1)], spec="none") is None
    assert pools([item(spec_decoding="mtp", mtp_draft_tokens=1)])[0]["spec"] == 1
    # SGLang: TP 1 / EP 1 placeholders never match; EP = GPUs per worker (8ccec7a7 on) does
    sgl = dict(framework="dynamo-sglang", prefill_tp=1, decode_tp=1)
    assert pools([item(prefill_ep=1, decode_ep=1, **sgl)], framework="dynamo-sglang", logged=(1, 1, 1)) is None
    dep, _ = pools([item(prefill_ep=4, decode_ep=8, **sgl)], framework="dynamo-sglang", logged=(1, 4, 1))
    assert (dep["p_chips"], dep["p_dp"], dep["d_chips"], dep["d_dp"]) == (28, 4, 8, 8)


def test_aiconfigurator_bad_concurrency_and_batch_cells_are_invalid_rows(shared_data, tmp_path):
    """Fresh-user trial, session 22: an aiconfigurator row with silicon_concurrency=0 aborted the
    whole run with an error naming another row; 0 on an aggregated row, -5 or abc, and a batch_size
    of abc / -3 / 0 were priced (at concurrency 1, the id's _c16_ or the batch size) as ok."""
    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        cols, base = r.fieldnames, {row["id"]: row for row in r if row["id"] in AIC_IDS}
    agg = base["kimik2_5_b200_vllm_fp4_agg_1024x1024_c16_cfg811"]
    dis = base["kimik2_5_gb200_trtllm_fp4_disagg_1024x1024_c668_cfg759"]
    assert "silicon_concurrency=16;" in agg["silicon_data_source"]  # the cell the cases edit
    assert "silicon_concurrency=668;" in dis["silicon_data_source"]

    def conc(row, v, rid):
        n = {agg["id"]: 16, dis["id"]: 668}[row["id"]]
        return dict(row, id=rid, silicon_data_source=row["silicon_data_source"].replace(
            f"silicon_concurrency={n};", f"silicon_concurrency={v};"))

    rows = [agg, dis,
            conc(dis, "0", "dis-conc-0"), conc(agg, "0", "agg-conc-0"), conc(agg, "-5", "agg-conc-neg"),
            conc(agg, "abc", "agg-conc-word"),
            dict(agg, id="agg-bs-word", batch_size="abc"), dict(agg, id="agg-bs-neg", batch_size="-3"),
            dict(agg, id="agg-bs-zero", batch_size="0"), dict(dis, id="dis-bs-neg", decode_batch_size="-5")]
    _, pts = read_measured(_write_csv(tmp_path / "bad.csv", cols, rows))
    by = {p.id: p.status for p in pts}
    assert by[agg["id"]] == by[dis["id"]] == "ok"
    # a bad concurrency is no concurrency (a blank cell), not the batch size's 16 or 16 x 4 workers
    assert all(p.concurrency == 0 for p in pts if "conc" in p.id), [(p.id, p.concurrency) for p in pts]
    cell = "invalid: silicon_concurrency in silicon_data_source must be a whole number >= 1 (got {})"
    assert by["dis-conc-0"] == by["agg-conc-0"] == cell.format("0")
    assert by["agg-conc-neg"] == cell.format("-5") and by["agg-conc-word"] == cell.format("abc")
    assert by["agg-bs-word"] == "invalid: batch_size must be a whole number >= 1 (got abc)"
    assert by["agg-bs-neg"] == "invalid: batch_size must be a whole number >= 1 (got -3)"
    assert by["agg-bs-zero"] == "invalid: batch_size must be a whole number >= 1 (got 0)"
    assert by["dis-bs-neg"] == "invalid: decode_batch_size must be a whole number >= 1 (got -5)"
    # the id's _c<N>_ stands in where silicon_data_source has no concurrency: _c0_ is no concurrency
    no_src = dict(agg, id="kimik2_5_b200_vllm_fp4_agg_1024x1024_c0_cfg811",
                  silicon_data_source=agg["silicon_data_source"].replace("silicon_concurrency=16;", ""))
    (p,) = read_measured(_write_csv(tmp_path / "no-src.csv", cols, [no_src]))[1]
    assert p.status == "invalid: the concurrency _c0_ in the id must be a whole number >= 1", p.status


def test_one_worker_count_missing_or_a_blank_gpu_count_is_an_invalid_row(shared_data, tmp_path):
    """Fresh-user trial, session 23: an InferenceMAX row that logs its GPU counts but
    prefill_num_workers = 0 (imx-02381 edited) was taken for a legacy row and priced with another
    run's pools (status ambiguous, prefill EP 40 on its 24-GPU pool); a blank num_decode_gpu was
    'unsupported'. An aiconfigurator row with one blank worker count was priced as a converted row
    (infeasible). Each is a bad cell now: status invalid naming the cell. The legacy rows (both
    worker counts 0: imx-00156) and the converted aiconfigurator rows (both blank) are unchanged."""
    src = shared_data / "measured" / "inferencemax_public.csv"
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        cols, base = r.fieldnames, {row["point_id"]: row for row in r
                                    if row["point_id"] in ("imx-02381", "imx-00156")}
    row, legacy = base["imx-02381"], base["imx-00156"]
    # the cells the cases edit: imx-02381 logs 10 prefill workers on 40 GPUs, 1 decode worker on 32
    assert (row["prefill_num_workers"], row["decode_num_workers"]) == ("10.0", "1.0")
    assert (legacy["prefill_num_workers"], legacy["decode_num_workers"]) == ("0.0", "0.0")
    rows = [row, legacy, dict(row, point_id="pw-0", prefill_num_workers="0"),
            dict(row, point_id="dw-blank", decode_num_workers=""),
            dict(row, point_id="dg-blank", num_decode_gpu=""), dict(row, point_id="pg-blank", num_prefill_gpu=" ")]
    _, pts = read_measured(_write_csv(tmp_path / "imx.csv", cols, rows))
    by = {p.id: p.status for p in pts}
    assert by["imx-02381"] == by["imx-00156"] == "ok"
    assert by["pw-0"] == ("invalid: prefill_num_workers must be a whole number >= 1 when decode_num_workers "
                          "is set (got 0; only legacy rows leave both worker counts 0)")
    assert by["dw-blank"].startswith("invalid: decode_num_workers must be a whole number >= 1 when "
                                     "prefill_num_workers is set (got nothing;")
    assert by["dg-blank"] == ("invalid: num_decode_gpu is blank (a disaggregated row needs its prefill "
                              "and decode GPU counts)")
    assert by["pg-blank"].startswith("invalid: num_prefill_gpu is blank")

    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        cols, base = r.fieldnames, {row["id"]: row for row in r if row["id"] in AIC_IDS}
    dis = base["kimik2_5_gb200_trtllm_fp4_disagg_1024x1024_c668_cfg759"]
    assert dis["prefill_num_workers"] and dis["decode_num_workers"]  # both set in the file
    rows = [dis, dict(dis, id="aic-pw-blank", prefill_num_workers=""),
            dict(dis, id="aic-dw-blank", decode_num_workers="")]
    _, pts = read_measured(_write_csv(tmp_path / "aic.csv", cols, rows))
    by = {p.id: p.status for p in pts}
    assert by[dis["id"]] == "ok"
    for rid, col in (("aic-pw-blank", "prefill_num_workers"), ("aic-dw-blank", "decode_num_workers")):
        assert by[rid] == (f"invalid: {col} is blank while the other pool's worker count is set "
                           "(rows converted from InferenceMAX leave both blank)")


def test_vllm_moe_tp_wider_than_tp_is_data_parallelism(shared_data):
    """vLLM without expert parallelism shards each MoE layer over all tp × dp ranks
    (FusedMoEParallelConfig.make, flatten_tp_across_dp: tp_size = dp_size × tp_size). The
    Qwen3-235B-A22B-FP8 H200 vLLM rows logging tp_size 1 and moe_tp_size 4 (or 2), no
    attention_dp_size, ran on 4 (2) GPUs: 235 GB of FP8 weights do not fit one 141 GB H200, and
    their TPOT is that of the tp_size 4 (2) rows. They were priced as 1 GPU (infeasible); now as
    data parallelism moe_tp×moe_ep / tp_size."""
    _, pts = read_measured(shared_data / "measured" / "aiconfigurator_silicon_public.csv")
    by = {p.id: p for p in pts}
    stem = "qwen_qwen3_235b_a22b_fp8_qwen_qwen3_235b_a22b_fp8_h200_sxm_vllm_agg_"
    # tp_size 1, moe_tp_size 4, moe_ep_size 1 -> DP 4 on 4 GPUs; moe_tp_size 2 -> DP 2
    # tp_size 2, moe_tp_size 4 -> TP 2 x DP 2 (the row's cells: aiconfigurator_silicon_public.csv)
    for rid, tp, dp in (("2000x100_c5_tp1_epnone_10", 1, 4), ("4000x100_c4_tp1_epnone_22", 1, 2),
                        ("2000x100_c11_tp2_epnone_13", 2, 2)):
        p = by[stem + rid]
        assert p.status == "ok" and (p.deploy["tp"], p.deploy["dp"], p.deploy["ep"]) == (tp, dp, 1), (rid, p.deploy)
        assert any(w.startswith(f"moe_tp×moe_ep {tp * dp} > tp_size {tp} and no attention_dp_size: read as "
                                f"vLLM data parallelism {dp}") for w in p.warnings), p.warnings
    # a row whose MoE width is its tp_size keeps its layout (tp_size 4, moe_tp_size 4)
    p = by[stem + "8000x100_c8_tp4_epnone_38"]
    assert (p.deploy["tp"], p.deploy["dp"]) == (4, 1) and not any("data parallelism" in w for w in p.warnings)


def test_a_baseline_whose_hardware_file_is_missing_names_it_on_its_rows(shared_data, tmp_path, gb200_hardware_gone):
    """A plugin that registers a baseline's hardware TOML that is not there stopped validate at
    '/…/gb200.toml: no such file', naming neither the baseline nor the plugin (noticed in session
    27). The system's rows are unsupported with the reason, as the spec loader names it for a
    search.reference; the run goes on."""
    pm, missing = gb200_hardware_gone
    src = tmp_path / "gb200.csv"
    with open(shared_data / "measured" / "inferencemax_public.csv", newline="") as f:
        r = csv.DictReader(f)
        rows = [row for row in r if row["hardware"] == "gb200"][:2]
        _write_csv(src, r.fieldnames, rows)
    _, points = read_measured(src)
    predict(points, pm=pm)
    for p in points:
        assert p.status.startswith("unsupported: baseline 'gb200' (plugin "), p.status
        assert f"{str(missing)!r}, which does not exist" in p.status, p.status


def test_a_row_beyond_the_models_context_is_priced_with_a_warning(shared_data, tmp_path):
    """A measured run was served, whatever its length: a row whose ISL + OSL exceeds the model
    file's context_length (gpt-oss-120b: 131,072 tokens, its HF max_position_embeddings) is priced,
    not refused, and its warning says so; a row within it has no such warning."""
    src = tmp_path / "long.csv"
    with open(shared_data / "measured" / "inferencemax_public.csv", newline="") as f:
        r = csv.DictReader(f)
        rows = [row for row in r if row["model_key"] == "gptoss120b" and row["disagg"] == "False"][:2]
        fields = r.fieldnames
    rows[0] = dict(rows[0], isl="131072", osl="1024")  # 132,096 tokens: one past the window by 1,024
    _write_csv(src, fields, rows)
    _, points = read_measured(src)
    long, short = points
    assert long.status == "ok" and short.status == "ok", (long.status, short.status)
    [w] = [w for w in long.warnings if "context length" in w]
    assert w.startswith("ISL + OSL = 132,096 tokens, longer than gpt-oss-120b's context length (131,072 tokens"), w
    assert not any("context length" in w for w in short.warnings)


def test_predictions_name_the_baseline_the_error_tables_group_by(shared_data, tmp_path, cli):
    """predictions.csv keeps the input's system name (``b200_sxm``, as the aiconfigurator file writes
    it, like the id) and adds ``baseline``, the name the error tables group ``system`` by (``b200``;
    codesign.validate's docstring maps b200_sxm/h200_sxm/h100_sxm to b200/h200/h100): a script that
    joined the two on ``system`` matched nothing for those rows (fresh-user trial, session 41). A
    system no baseline describes has a blank baseline."""
    import json

    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    with open(src, newline="") as f:
        rd = csv.DictReader(f)
        cols = rd.fieldnames
        rows = [r for r in rd if r["id"] in AIC_IDS]
    unknown = dict(rows[1], id="zz", system="zz9_sxm")
    sub = _write_csv(tmp_path / "aic.csv", cols, rows + [unknown])
    rc, out, err = cli("validate", sub, "--out", tmp_path / "o", "--json")
    assert rc == 0, err
    got = {r["id"]: r for r in csv.DictReader(open(tmp_path / "o" / "predictions.csv"))}
    a = got["kimik2_5_b200_vllm_fp4_agg_1024x1024_c16_cfg811"]
    assert (a["system"], a["baseline"]) == ("b200_sxm", "b200")
    d = got["kimik2_5_gb200_trtllm_fp4_disagg_1024x1024_c668_cfg759"]
    assert (d["system"], d["baseline"]) == ("gb200", "gb200")
    assert (got["zz"]["system"], got["zz"]["baseline"]) == ("zz9_sxm", "")
    assert got["zz"]["status"].startswith("unsupported: no hardware spec for system zz9_sxm")
    # the error table's groups are the baselines of the ok rows, row for row
    doc = json.loads(out)
    tables = {g["group"]: g["n"] for g in doc["errors"]["system"]}
    ok = [r["baseline"] for r in got.values() if r["status"] == "ok"]
    assert tables == {b: ok.count(b) for b in set(ok)} and set(tables) == {"b200", "gb200"}


def test_warnings_and_readme_call_an_inferencex_item_a_configuration(shared_data):
    """One term for an item of InferenceX's benchmark configuration: the warnings said "InferenceX
    configuration" on the aiconfigurator rows and "InferenceX recipe" on the InferenceMAX rows, and
    the README "InferenceX item" (fresh-user trial, session 41)."""
    from conftest import REPO

    _, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv")
    p = next(p for p in pts if p.id == "imx-00152")
    # imx-00152 (GB200 Dynamo + TensorRT-LLM, 1 prefill + 4 decode workers of TP8, C = 24) matches the
    # configuration whose recipe file is ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml (specs/recipes/)
    assert any("from the InferenceX configuration recipes/trtllm/gb200-fp4/1k1k/stp/"
               "ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml (nvidia-master.yaml@" in w for w in p.assumptions), p.assumptions
    for p in pts:
        for w in p.warnings + p.assumptions:
            assert "InferenceX recipe" not in w and "InferenceX item" not in w, (p.id, w)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "InferenceX item" not in readme and "InferenceX's item" not in readme
    assert "InferenceX recipe" not in readme


def test_validate_s_docstrings_call_an_inferencex_item_a_configuration():
    """The term of the warnings and the README (above) in codesign/validate.py's docstrings and
    comments too, which still said "InferenceX item" and "InferenceX configuration item" (session 42)."""
    import codesign.validate as V

    from pathlib import Path

    text = Path(V.__file__).read_text(encoding="utf-8")
    for old in ("InferenceX item", "InferenceX's item", "configuration item"):
        assert old not in text, old
    assert "the decode batch limit of the InferenceX configuration that ran its pools" in " ".join(text.split())


def test_pool_recipes_are_read_beside_the_measured_file_without_the_shared_data(shared_data, tmp_path,
                                                                                monkeypatch):
    """CODESIGN_SHARED_DATA unset, a clone with no ../shared/data beside it, and the measured file
    read from the shared data's measured/ directory: the pool recipes were looked for at
    <repo>/../shared/data alone, and every row that needed one said "no InferenceMAX pool recipes:
    <repo>/../shared/data/measured/inferencemax_public.csv not found" beside the very file that holds
    them (fresh-user trial, session 44). They are now read beside the file, as with the variable set;
    without them there either, the note names both places looked."""
    import shutil

    import codesign.validate as V

    measured = tmp_path / "data" / "measured"
    measured.mkdir(parents=True)
    shutil.copy(shared_data / "measured" / "inferencemax_public.csv", measured)
    sub = _subset(shared_data / "measured" / "aiconfigurator_silicon_public.csv", measured / "pool.csv",
                  POOL_IDS, "id")
    # a Dynamo + SGLang row logging TP 1 / EP 1 / decode TP 1, which no InferenceX item decides: its
    # pools come from the nearest measured run of inferencemax_public.csv (test_pools_without_inferencemax_file)
    rid = "2026_04_06_deepseek_r1_gb200_sglang_fp4_disagg_1024x1024_c8_tp1_ep1_1990"
    monkeypatch.setenv("CODESIGN_SHARED_DATA", str(shared_data))  # as with the shared data named
    named = {q.id: q for q in read_measured(sub)[1]}[rid]
    assert named.status.startswith("ambiguous: pools inferred from the nearest measured run imx-"), named.status
    monkeypatch.delenv("CODESIGN_SHARED_DATA")
    # <repo>/../shared/data, what the variable unset names, absent (this clone may sit beside it)
    monkeypatch.setattr(V, "shared_data_dir", lambda: tmp_path / "shared" / "data")
    p = {q.id: q for q in read_measured(sub)[1]}[rid]
    assert (p.status, p.deploy) == (named.status, named.deploy)
    assert not [w for w in p.warnings if w.startswith(V.NO_RECIPES)], p.warnings
    (measured / "inferencemax_public.csv").unlink()
    p = {q.id: q for q in read_measured(sub)[1]}[rid]
    assert p.status.endswith("framework and precision (1 prefill + 1 decode GPUs)"), p.status  # the sizing rule
    said = (f"{V.NO_RECIPES}{tmp_path / 'shared' / 'data' / 'measured' / 'inferencemax_public.csv'} not found, "
            f"nor {measured / 'inferencemax_public.csv'} (set CODESIGN_SHARED_DATA")
    assert any(w.startswith(said) for w in p.warnings), p.warnings


# --- rows the blind split may hold: other spellings, precisions, layouts (helper-64) ------------
#: aggregated Llama-3.1-70B on B200 (TensorRT-LLM, NVFP4, TP 2, 8 users) of the aiconfigurator file
AIC_LLAMA = "2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp4_agg_1024x1024_c8_tp2_ep1_257"
#: aggregated DeepSeek-V3 on B200 (SGLang, NVFP4, TP 8, 64 users)
AIC_DSV3 = "dsr1_b200_sglang_fp4_agg_1024x1024_c64_cfg99"


def _aic_rows(shared_data, path, variants):
    """A CSV of aiconfigurator rows: ``variants`` maps an id to ``(template id, {column: value})``."""
    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        cols = r.fieldnames
        base = {row["id"]: row for row in r if row["id"] in {t for t, _ in variants.values()}}
    rows = [dict(base[t], id=vid, **cells) for vid, (t, cells) in variants.items()]
    return _write_csv(path, cols, rows)


def _aic_predictions(cli, src, tmp_path):
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    rc, _, err = cli("validate", src, "--out", out)
    assert rc == 0 and "Traceback" not in err, err
    return {r["id"]: r for r in csv.DictReader(open(out / "predictions.csv"))}


PRED = ("pred_ttft_ms", "pred_tpot_ms")


def test_inferencex_runner_and_cluster_names_read_as_their_gpu(tmp_path, cli):
    """InferenceX's ingest reads a hardware cell as the GPU key before the first '-' after any
    cluster prefix (InferenceX-app normalizers.ts hwToGpuKey: "h200-nv", "mi355x-amds"; runners.yaml:
    "b200-nvd_0", "mi300x-amd_0", "gb200-nv_0", "h200-trt"). Such a cell names the GPU's own system,
    so its row is priced exactly as the row naming the key; a name whose first segment is no GPU key
    ("gb-200", "a100-x") stays unknown. Each was 'unsupported: no hardware spec for system ...'."""
    from codesign.validate import system_name

    for cell, key in (("b300-nv", "b300"), ("B300-NV_0", "b300"), ("cluster:b300-nv", "b300"),
                      ("mi355x-amds", "mi355x"), ("mi300x-amd_0", "mi300x"), ("mi325x-tw_0", "mi325x"),
                      ("h200-trt", "h200"), ("b200-dgxc-slurm", "b200"), ("gb200-nv_0", "gb200")):
        assert system_name(cell) == key, cell
    assert system_name("gb-200") == "gb-200" and system_name("a100-x") == "a100-x"
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="key", hardware="mi355x"),
                   dict(IMX_ROW, point_id="runner", hardware="mi355x-amd_0"),
                   dict(IMX_ROW, point_id="cluster", hardware="cluster:mi355x-amds"),
                   dict(IMX_ROW, point_id="other", hardware="a100-x"))
    rows = _predictions(cli, src, tmp_path)
    for pid in ("runner", "cluster"):
        assert rows[pid]["status"] == "ok" and rows[pid]["baseline"] == "mi355x", rows[pid]
        assert f"read as mi355x (InferenceX's ingest rule" in rows[pid]["warning"]
        for col in PRED:
            assert rows[pid][col] == rows["key"][col] != "", (pid, col)
    assert rows["other"]["status"] == "unsupported: no hardware spec for system a100-x"


def test_aiconfigurator_gb200_sxm_is_gb200(shared_data, tmp_path, cli):
    """aiconfigurator's earlier SupportedSystems named the GB200 system "gb200_sxm" (beside b200_sxm);
    it was refused with a hint at another system ("did you mean b200_sxm?")."""
    src = _aic_rows(shared_data, tmp_path / "a.csv", {"gb200": (AIC_DSV3, {"system": "gb200"}),
                                                     "gb200_sxm": (AIC_DSV3, {"system": "gb200_sxm"})})
    rows = _aic_predictions(cli, src, tmp_path)
    assert rows["gb200_sxm"]["status"] == "ok" and rows["gb200_sxm"]["baseline"] == "gb200"
    for col in PRED:
        assert rows["gb200_sxm"][col] == rows["gb200"][col] != "", col


def test_inferencemax_cells_are_read_as_inferencex_ingest_reads_them(tmp_path, cli):
    """InferenceX's ingest lowercases precision and speculative method (normalizePrecision,
    normalizeSpecMethod) and reads booleans "true"/"True" alike (parseOptionalBool): "FP8", "MTP",
    disagg "true" and dp_attention "true" name what "fp8", "mtp", "True" name. They were
    'unsupported: precision FP8', 'unsupported: speculative decoding (MTP)', 'invalid: disagg must be
    True or False (got true)', and dp_attention "true" was silently read as no attention DP."""
    rows = [dict(IMX_ROW, point_id="fp8"), dict(IMX_ROW, point_id="FP8", precision="FP8"),
            dict(IMX_ROW, point_id="mtp", spec_method="mtp"), dict(IMX_ROW, point_id="MTP", spec_method="MTP"),
            dict(IMX_ROW, point_id="dp-True", tp="8", ep="8", dp_attention="True"),
            dict(IMX_ROW, point_id="dp-true", tp="8", ep="8", dp_attention="true"),
            dict(IMX_ROW, point_id="agg-false", disagg="false"),
            dict(IMX_ROW, **DISAGG, point_id="dis-True", hardware="mi355x", framework="sglang-disagg"),
            dict(IMX_ROW, **dict(DISAGG, disagg="true", prefill_dp_attention="false"), point_id="dis-true",
                 hardware="mi355x", framework="sglang-disagg")]
    by = {p.id: p for p in read_measured(_imx_csv(tmp_path / "m.csv", *rows))[1]}
    assert by["dp-true"].deploy == by["dp-True"].deploy
    assert {k: by["dp-true"].deploy[k] for k in ("tp", "ep", "dp")} == {"tp": 1, "ep": 8, "dp": 8}
    assert by["dis-true"].mode == "disaggregated" and by["dis-true"].deploy == by["dis-True"].deploy
    got = _predictions(cli, _imx_csv(tmp_path / "p.csv", *rows), tmp_path)
    for a, b in (("FP8", "fp8"), ("MTP", "mtp"), ("dp-true", "dp-True"), ("agg-false", "fp8"),
                 ("dis-true", "dis-True")):
        assert got[a]["status"] == "ok", got[a]
        for col in PRED:
            assert got[a][col] == got[b][col] != "", (a, col)
    assert float(got["MTP"]["pred_tpot_ms"]) < float(got["fp8"]["pred_tpot_ms"])  # its drafts are priced


def test_inferencemax_bf16_fp4_spellings_and_int4_are_priced(tmp_path, cli):
    """InferenceX runs precisions beyond fp4/fp8 (amd-master.yaml: qwen3.5-bf16-*-sglang on
    Qwen/Qwen3.5-397B-A17B, kimik2.5-int4-*-vllm on moonshotai/Kimi-K2.5), and its ingest files nvfp4
    and mxfp4 under fp4 (PRECISION_ALIASES). Each was 'unsupported: precision ...'. Formats:
    bf16 is BF16 throughout; mxfp4 AMD's all-MXFP4 checkpoints on any hardware, nvfp4 NVIDIA's FP4 one
    on any; int4 on Kimi-K2.5 the INT4 routed experts of its release (the aiconfigurator int4_wo
    rule); int4 on a MoE model whose INT4 release is not recorded stays unsupported, naming why."""
    rows = {"bf16": dict(IMX_ROW, precision="bf16"), "fp8": dict(IMX_ROW),
            "mxfp4-b200": dict(IMX_ROW, precision="mxfp4"),
            "nvfp4-b200": dict(IMX_ROW, precision="nvfp4"), "fp4-b200": dict(IMX_ROW, precision="fp4"),
            "qwen-bf16": dict(IMX_ROW, model_key="qwen3.5", hardware="mi355x", precision="bf16"),
            "kimi-int4": dict(IMX_ROW, model_key="kimik2.5", hardware="mi355x", precision="int4", framework="vllm"),
            "dsr1-int4": dict(IMX_ROW, precision="int4")}
    src = _imx_csv(tmp_path / "m.csv", *(dict(r, point_id=k) for k, r in rows.items()))
    by = {p.id: p for p in read_measured(src)[1]}
    assert by["bf16"].formats == dict(weights="bf16", moe="bf16", kv="bf16", act="bf16")
    assert by["mxfp4-b200"].formats == dict(weights="mxfp4", moe="mxfp4", kv="fp8_e4m3", act="mxfp4")
    assert by["nvfp4-b200"].formats == by["fp4-b200"].formats == dict(weights="fp8_e4m3", moe="nvfp4",
                                                                      kv="fp8_e4m3", act="nvfp4")
    assert by["kimi-int4"].model == "kimi-k2"
    assert by["kimi-int4"].formats == dict(weights="bf16", moe="int4_g32", kv="bf16", act="bf16")
    assert by["dsr1-int4"].status.startswith("unsupported: int4 on dsr1: which weights its INT4 release")
    got = _predictions(cli, src, tmp_path)
    for pid in ("bf16", "mxfp4-b200", "nvfp4-b200", "qwen-bf16", "kimi-int4"):
        assert got[pid]["status"] == "ok", got[pid]
        assert float(got[pid]["pred_tpot_ms"]) > 0 and float(got[pid]["pred_ttft_ms"]) > 0, pid
    for col in PRED:
        assert got["nvfp4-b200"][col] == got["fp4-b200"][col]
    # 64 users decoding DeepSeek-R1 on 8 GPUs is bound by reading the weights: BF16 reads twice FP8's bytes
    assert float(got["bf16"]["pred_tpot_ms"]) > float(got["fp8"]["pred_tpot_ms"])


def test_a_dense_model_in_fp4_on_nvidia_is_nvfp4_throughout(tmp_path):
    """NVIDIA's ModelOpt FP4 checkpoints of dense models quantize "the weights and activations of the
    linear operators within transformers blocks" (nvidia/Llama-3.1-405B-Instruct-FP4 model card;
    InferenceX's llama70b fp4 serves nvidia/Llama-3.3-70B-Instruct-FP4). DeepSeek-R1's rule (NVFP4
    experts, FP8 elsewhere) priced a dense model's every weight in FP8."""
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="llama", model_key="llama70b", precision="fp4"),
                   dict(IMX_ROW, point_id="llama-amd", model_key="llama70b", precision="fp4", hardware="mi355x"))
    by = {p.id: p for p in read_measured(src)[1]}
    assert by["llama"].formats == dict(weights="nvfp4", moe="nvfp4", kv="fp8_e4m3", act="nvfp4")
    assert by["llama-amd"].formats == dict(weights="mxfp4", moe="mxfp4", kv="fp8_e4m3", act="mxfp4")


def test_an_output_length_of_one_is_invalid_and_the_file_is_still_priced(tmp_path, cli):
    """TPOT = (E2E - TTFT) / (OSL - 1) needs two output tokens. A row with OSL 1 priced in a group whose
    base spec was another row's reached the cost model unchecked and stopped the whole file with
    'internal error: ... returned decode_batch = -1.5e+33' (exit 3); alone, it stopped it at the spec
    check (exit 2). It is an invalid row now, and the others are priced."""
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="osl1", osl="1"), dict(IMX_ROW, point_id="ok"),
                   dict(IMX_ROW, point_id="osl2", osl="2"))
    rows = _predictions(cli, src, tmp_path)
    assert rows["osl1"]["status"] == ("invalid: osl must be a whole number >= 2 (got 1): TPOT = (E2E - TTFT) / "
                                      "(OSL - 1) needs two output tokens")
    assert rows["osl1"]["pred_tpot_ms"] == ""
    for pid in ("ok", "osl2"):
        assert rows[pid]["status"] == "ok" and float(rows[pid]["pred_tpot_ms"]) > 0, rows[pid]


def test_a_dense_model_logged_with_expert_parallelism_is_priced_at_ep_1(tmp_path, cli):
    """A dense model has no experts to place: a row logging EP 8 for Llama-3.3-70B (as a MoE
    configuration would) was 'infeasible: ... ep 8 is above the model's 0 experts'. It is priced as the
    same row with EP 1, and says so."""
    llama = dict(IMX_ROW, model_key="llama70b", framework="vllm")
    src = _imx_csv(tmp_path / "m.csv", dict(llama, point_id="ep1"), dict(llama, point_id="ep8", ep="8"),
                   dict(IMX_ROW, **DISAGG, point_id="dis-ep8", model_key="llama70b", hardware="mi355x",
                        framework="sglang-disagg"))
    rows = _predictions(cli, src, tmp_path)
    assert rows["ep8"]["status"] == "ok", rows["ep8"]
    assert "EP 8 logged for llama-3.1-70b, a dense model (no routed experts to distribute): priced with EP 1" \
        in rows["ep8"]["warning"]
    for col in PRED:
        assert rows["ep8"][col] == rows["ep1"][col] != "", col
    assert rows["dis-ep8"]["status"] == "ok" and "prefill EP 8, decode EP 8 logged" in rows["dis-ep8"]["warning"]


def test_aiconfigurator_quant_mode_names_of_its_own_enums(shared_data, tmp_path, cli):
    """aiconfigurator's GEMMQuantMode/MoEQuantMode (sdk/common.py) name 16 bits bfloat16 (earlier
    float16), FP8 variants fp8_static and fp8_ootb, and MXFP4 experts w4a16_mxfp4 (BF16 activations)
    and w4a8_mxfp4_mxfp8: each was 'unsupported: number format ... has no registered equivalent'.
    Same formats, same prediction: bfloat16/float16 as 16-bit (blank), fp8_static/fp8_ootb/FP8 as fp8.
    A mode with no format of ours (w4afp8: INT4 at another group size) is named with its column."""
    fp8, bf = {"gemm_quant_mode": "fp8", "moe_quant_mode": "fp8"}, {"gemm_quant_mode": "", "moe_quant_mode": ""}
    variants = {"fp8": (AIC_LLAMA, fp8), "bf": (AIC_LLAMA, bf),
                "bfloat16": (AIC_LLAMA, {"gemm_quant_mode": "bfloat16", "moe_quant_mode": "bfloat16"}),
                "float16": (AIC_LLAMA, {"gemm_quant_mode": "float16", "moe_quant_mode": "float16"}),
                "fp8_static": (AIC_LLAMA, {"gemm_quant_mode": "fp8_static", "moe_quant_mode": "fp8"}),
                "fp8_ootb": (AIC_LLAMA, {"gemm_quant_mode": "fp8_ootb", "moe_quant_mode": "fp8"}),
                "FP8": (AIC_LLAMA, {"gemm_quant_mode": "FP8", "moe_quant_mode": "FP8"}),
                "AGG": (AIC_LLAMA, dict(fp8, mode="AGG")),
                "w4a16": (AIC_DSV3, {"gemm_quant_mode": "bfloat16", "moe_quant_mode": "w4a16_mxfp4"}),
                "w4a8": (AIC_DSV3, {"gemm_quant_mode": "fp8", "moe_quant_mode": "w4a8_mxfp4_mxfp8"}),
                "w4afp8": (AIC_DSV3, {"gemm_quant_mode": "fp8", "moe_quant_mode": "w4afp8"})}
    src = _aic_rows(shared_data, tmp_path / "a.csv", variants)
    by = {p.id: p for p in read_measured(src)[1]}
    assert by["w4a16"].formats == dict(weights="bf16", moe="mxfp4", kv="bf16", act="bf16")
    assert by["w4a8"].formats == dict(weights="fp8_e4m3", moe="mxfp4", kv="fp8_e4m3", act="fp8_e4m3")
    assert by["w4afp8"].status == "unsupported: number format w4afp8 (moe_quant_mode) has no registered equivalent"
    rows = _aic_predictions(cli, src, tmp_path)
    for a, b in (("bfloat16", "bf"), ("float16", "bf"), ("fp8_static", "fp8"), ("fp8_ootb", "fp8"),
                 ("FP8", "fp8"), ("AGG", "fp8")):
        assert rows[a]["status"] == "ok", rows[a]
        for col in PRED:
            assert rows[a][col] == rows[b][col] != "", (a, col)
    for pid in ("w4a16", "w4a8"):
        assert rows[pid]["status"] == "ok" and float(rows[pid]["pred_tpot_ms"]) > 0, rows[pid]




def _analytical_or(refuse):
    """An evaluate that is the analytical model's, except on a spec whose chip is H100, where it
    calls ``refuse(spec)`` (which raises)."""
    def evaluate(spec, formats, overrides):
        if spec.chip.name == "h100":
            refuse(spec)
        from codesign_analytical.model import AnalyticalModel

        return AnalyticalModel().evaluate(spec, formats, overrides)

    return evaluate


# B200 DeepSeek-R1 TRT-LLM aggregated C = 8, and H100 gpt-oss-120b vLLM aggregated C = 64
BUG_IDS = {"imx-00017", "imx-01859"}


def test_a_cost_model_bug_in_validate_is_exit_3_naming_the_plugin(shared_data, tmp_path, monkeypatch, cli):
    """A third-party cost model raising KeyError on some rows made them ``unsupported: cost model
    ... raised KeyError`` with exit 0 and nothing on stderr, even with CODESIGN_STRICT_PLUGINS=1;
    raising on every row was exit 2, "no row could be priced", as if the file were bad (fresh-user
    trial, session 46): ``_per_config`` caught the PluginBugError as a refusal. A plugin's bug is
    exit 3 with the one "internal error:" line ``codesign evaluate`` gives, wherever it raises."""
    def missing(spec):
        raise KeyError("h100 table missing")

    sub = _subset(shared_data / "measured" / "inferencemax_public.csv", tmp_path / "imx.csv", BUG_IDS, "point_id")
    for name, evaluate in (("keyerr", _analytical_or(missing)),          # raises on the H100 row only
                           ("alwayserr", lambda spec, formats, overrides: missing(spec))):  # on every row
        pm = _with(name, evaluate)
        monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda pm=pm: pm)
        rc, out, err = cli("validate", sub, "--cost-model", name, "--out", tmp_path / name)
        assert rc == 3 and out == "" and "Traceback" not in err, (name, rc, err)
        first = err.strip().splitlines()[0]
        assert first.startswith(f"internal error: cost model {name!r} (plugin {name}-plugin"), err
        assert first.endswith("raised KeyError: 'h100 table missing'"), err
        assert "bug in that plugin, not in your input" in err


def test_a_cost_model_declining_a_row_in_validate_stays_a_row_status(shared_data, tmp_path, monkeypatch, cli):
    """What a model declines through its check() (a SpecError: a setting it does not price) is an
    answer about that row, not a bug: the row is ``unsupported:`` naming the model, the others are
    priced, exit 0."""
    from codesign.errors import SpecError

    def decline(spec):
        raise SpecError([(str(spec.path), "chip", "this model has no H100 tables")])

    sub = _subset(shared_data / "measured" / "inferencemax_public.csv", tmp_path / "imx.csv", BUG_IDS, "point_id")
    pm = _with("picky", _analytical_or(decline),
                      check=lambda spec: decline(spec) if spec.chip.name == "h100" else None)
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("validate", sub, "--cost-model", "picky", "--out", tmp_path / "o")
    assert rc == 0, err
    rows = {r["point_id"]: r for r in csv.DictReader(open(tmp_path / "o" / "predictions.csv"))}
    assert rows["imx-00017"]["status"] == "ok" and float(rows["imx-00017"]["pred_tpot_ms"]) > 0
    st = rows["imx-01859"]["status"]
    assert st.startswith("unsupported: cost model picky: ") and st.endswith("chip: this model has no H100 tables"), st


def test_a_prediction_a_hundred_times_off_asks_whether_the_cell_is_in_the_wrong_unit():
    """aiconfigurator ``silicon_ttft_ms = 0.110429`` (seconds in a ms column) for a 1k Llama-70B
    prefill was priced ``ok`` without a word and made the TTFT MAPE 40331% (fresh-user trial,
    session 46). A prediction more than 100× its measurement, or less than 1/100 of it, gets a
    warning naming the ratio and the column; 99× does not. It names a unit slip (ms vs s) only near
    the 1000× a slip gives (within 10^0.5 either way: 316-3162×); 126× was asked about a slip
    (fresh-user trial, session 47). Ratios by hand: 0.25 s / 0.002 s = 125; 0.001 s / 0.2 s = 1/200;
    0.099 s / 0.001 s = 99; 0.5 s / 0.001 s = 500 and 0.001 s / 2.5 s = 1/2500 (slips);
    0.0032 s / 0.00001 s = 320 (in the band) and 3 s / 0.001 s = 3000 (in), 0.0031 s /
    0.00001 s = 310 and 3.2 s / 0.001 s = 3200 (out)."""
    from codesign.validate import Point, unit_slip_warnings

    aic = Point(id="a", schema="aiconfigurator", system="b200", model_name="m", framework="trtllm",
                ttft_s=0.002, pred_ttft_s=0.25, tpot_s=0.001, pred_tpot_s=0.099)
    (w,) = unit_slip_warnings(aic)
    assert w == ("predicted TTFT 250 ms is 125× the measured 2 ms (silicon_ttft_ms): more than 100× off, "
                 "though not the 1000× of a ms/s slip: check that cell; if it is right, the model misses this "
                 "row by that factor"), w
    imx = Point(id="i", schema="inferencemax", system="b200", model_name="m", framework="vllm", ttft_stat="median",
                ttft_s=0.2, pred_ttft_s=0.001, tpot_s=0.01, pred_tpot_s=0.01)
    (w,) = unit_slip_warnings(imx)
    assert w.startswith("predicted TTFT 1 ms is 1/200 of the measured 200 ms (median_ttft_s): more than 100× off"), w
    for meas, pred, slip in ((0.001, 0.5, True), (2.5, 0.001, True), (0.00001, 0.0032, True), (0.001, 3.0, True),
                             (0.00001, 0.0031, False), (0.001, 3.2, False)):
        (w,) = unit_slip_warnings(Point(id="s", schema="aiconfigurator", system="b200", model_name="m",
                                        framework="trtllm", ttft_s=meas, pred_ttft_s=pred, tpot_s=0.01,
                                        pred_tpot_s=0.01))
        assert ("a unit slip (ms vs s)" in w) is slip, (meas, pred, w)
    imx.status = "infeasible: weights do not fit"  # a row not priced has no prediction to compare
    assert unit_slip_warnings(imx) == []


def test_validate_keeps_a_row_in_the_wrong_unit_priced_and_says_so(shared_data, tmp_path, cli):
    """The row whose TTFT cell is 1000× too small stays ``ok`` and in the error tables (the data are
    the user's), its warning naming the ratio of its own predicted and measured cells; the same
    row with the right cell has no such warning and the same prediction."""
    import json

    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    base = next(r for r in csv.DictReader(open(src)) if r["id"] == AIC_LLAMA)
    slipped = str(float(base["silicon_ttft_ms"]) / 1000)  # seconds written in the ms column
    f = _aic_rows(shared_data, tmp_path / "a.csv", {"right": (AIC_LLAMA, {}),
                                                    "slip": (AIC_LLAMA, {"silicon_ttft_ms": slipped})})
    rows = _aic_predictions(cli, f, tmp_path)
    assert rows["right"]["status"] == rows["slip"]["status"] == "ok"
    assert rows["right"]["pred_ttft_ms"] == rows["slip"]["pred_ttft_ms"]
    assert "unit slip" not in rows["right"]["warning"]
    q = float(rows["slip"]["pred_ttft_ms"]) / float(slipped)
    assert q > 100, q  # the right cell is within 100× of its prediction, 1000× smaller is not
    assert f"is {q:.0f}× the measured {float(slipped):.4g} ms (silicon_ttft_ms): a unit slip (ms vs s)" \
        in rows["slip"]["warning"], rows["slip"]["warning"]
    rc, out, err = cli("validate", f, "--json")
    assert rc == 0 and json.loads(out)["errors"]["all"][0]["n"] == 2  # both rows counted


def test_an_inferencemax_ttft_longer_than_its_end_to_end_latency_is_a_row_warning(shared_data, tmp_path, cli):
    """Each request's TTFT is part of its end-to-end latency, so a median TTFT above the median E2E
    latency (``median_e2el_s``) is a wrong cell; it was ``ok`` without a word (fresh-user trial,
    session 46). The row is still priced; its warning gives both values."""
    src = shared_data / "measured" / "inferencemax_public.csv"
    with open(src, newline="") as fh:
        r = csv.DictReader(fh)
        cols = r.fieldnames
        row = next(x for x in r if x["point_id"] == "imx-00017")
    ttft = float(row["median_ttft_s"])
    bad = dict(row, point_id="bad", median_e2el_s=str(ttft / 2))  # half the TTFT: impossible
    f = _write_csv(tmp_path / "imx.csv", cols, [row, bad])
    out = tmp_path / "o"
    rc, _, err = cli("validate", f, "--out", out)
    assert rc == 0, err
    got = {x["point_id"]: x for x in csv.DictReader(open(out / "predictions.csv"))}
    assert got["bad"]["status"] == "ok" and "end-to-end" not in got["imx-00017"]["warning"]
    assert (f"median TTFT {ttft:.6g} s exceeds the median end-to-end latency {ttft / 2:.6g} s "
            "(median_ttft_s > median_e2el_s)") in got["bad"]["warning"], got["bad"]["warning"]
    # and said on stderr (the row is counted in the tables), and counted in --json: it was only in the
    # CSV's warning column, and nowhere with --json (fresh-user trial, session 46). "bad" is the
    # file's third line (header row 1, imx-00017 row 2)
    assert ("warning: " + str(f) + ": 1 priced row(s) have a measured TTFT or TPOT that looks wrong, counted in "
            f"the error tables (e.g. bad (row 3): median TTFT {ttft:.6g} s exceeds") in err, err
    rc, js, err = cli("validate", f, "--json")
    assert rc == 0 and json.loads(js)["questioned_rows"] == 1, err


def test_rows_of_unknown_models_or_systems_get_one_stderr_line(cli, tmp_path):
    """Rows naming a model or system codesign does not know had only a count in the status summary
    (fresh-user trial, session 46): one warning line counts them and names the first three with
    their file rows (the header is row 1) and reasons; a blank id is "(no id)"."""
    rows = [IMX_ROW, dict(IMX_ROW, point_id="zz-model", model_key="zzmodel"),
            dict(IMX_ROW, point_id="zz-sys", hardware="zz9", runner_label="zz9"),
            dict(IMX_ROW, point_id="", hardware="zz9", runner_label="zz9"),
            dict(IMX_ROW, point_id="fourth", hardware="zz9", runner_label="zz9")]
    src = _imx_csv(tmp_path / "u.csv", *rows)
    rc, _, err = cli("validate", src)
    assert rc == 0, err
    line = next(x for x in err.splitlines() if "does not know" in x)
    assert line == (f"warning: {src}: 4 row(s) naming a model or system codesign does not know were not priced "
                    "(zz-model (row 3): no model config for zzmodel (normalised name tried: zzmodel); "
                    "zz-sys (row 4): no hardware spec for system zz9; (no id) (row 5): no hardware spec for "
                    "system zz9; …); each row's reason is its status in predictions.csv"), line
    rc, _, err = cli("validate", _imx_csv(tmp_path / "k.csv", IMX_ROW))
    assert rc == 0 and "does not know" not in err


def test_an_absent_column_names_a_close_column_the_schema_does_not_know(tmp_path, cli):
    """``median_ttft_s`` renamed ``median_ttft_ms`` switched every row to the mean with only
    "absent column median_ttft_s" said (fresh-user trial, session 46): the file's column outside
    the schema that is close to the absent name is offered as a misspelling. A schema column
    (``mean_ttft_s``, close too) is never offered, nor a column far from the name."""
    both = dict(IMX_ROW, mean_ttft_s="0.6", mean_tpot_s="0.025")
    cases = {"median_ttft_ms": " (the file has 'median_ttft_ms': a misspelling?)",
             "medain_ttft_s": " (the file has 'medain_ttft_s': a misspelling?)",
             "first_token_latency": ""}
    for renamed, hint in cases.items():
        row = {(renamed if k == "median_ttft_s" else k): v for k, v in both.items()}
        src = _imx_csv(tmp_path / f"{renamed}.csv", row)
        rc, _, err = cli("validate", src)
        assert rc == 0, err
        assert (f"warning: {src}: absent column median_ttft_s{hint}: rows compared with their mean TTFT/TPOT "
                "instead of the median") in err, (renamed, err)
    row = {("spec_methd" if k == "spec_method" else k): v for k, v in IMX_ROW.items()}
    rc, _, err = cli("validate", _imx_csv(tmp_path / "spec.csv", row))
    assert "absent column spec_method (the file has 'spec_methd': a misspelling?): every row priced" in err, err


def test_an_unknown_model_name_gets_a_guess_only_of_the_same_numbers(tmp_path, cli):
    """``meta-llama/Llama-3.1-70B-Instructt`` was 'unsupported: no model config ... (normalised name
    tried: llama-3.1-70b-instructt)' with no guess (fresh-user trial, session 46). A typo within
    one model gets "did you mean"; a name whose sizes or versions differ from every known name's
    (another model: Llama-3.1-80B, Qwen3-31B-A3B, gpt-oss-12b, Kimi-K2.6) gets none, since its
    guess would price another model."""
    from codesign.validate import close_model_name

    assert close_model_name("meta-llama/Llama-3.1-70B-Instructt") == "llama-3.1-70b-instruct"
    assert close_model_name("Qwen/Qwen3-Coder-480B-A35B-Instrct") == "qwen3-coder-480b-a35b-instruct"
    for other in ("meta-llama/Llama-3.1-80B-Instruct", "Qwen/Qwen3-31B-A3B", "openai/gpt-oss-12b",
                  "moonshotai/Kimi-K2.6", "deepseek-ai/DeepSeek-R2"):
        assert close_model_name(other) is None, other
    rows = [IMX_ROW, dict(IMX_ROW, point_id="typo", model_key="meta-llama/Llama-3.1-70B-Instructt"),
            dict(IMX_ROW, point_id="other", model_key="meta-llama/Llama-3.1-80B-Instruct")]
    got = _predictions(cli, _imx_csv(tmp_path / "m.csv", *rows), tmp_path)
    assert got["typo"]["status"] == ("unsupported: no model config for meta-llama/Llama-3.1-70B-Instructt "
                                     "(normalised name tried: llama-3.1-70b-instructt; "
                                     "did you mean llama-3.1-70b-instruct?)")
    assert got["other"]["status"] == ("unsupported: no model config for meta-llama/Llama-3.1-80B-Instruct "
                                      "(normalised name tried: llama-3.1-80b)")


def test_validate_splits_assumptions_from_warnings_and_json_names_questioned_rows(tmp_path, cli):
    """Two hand-made InferenceMAX rows (imx-00659's cells: DeepSeek-R1, SGLang, B200, TP 8,
    aggregated, 64 users). "mtp" logs spec_method mtp; "bad" logs a median end-to-end latency of
    0.2 s, below its median TTFT of 0.48940439452417195 s. Both take the B200 SGLang DeepSeek-R1
    launch script's --scheduler-recv-interval 30 (64 users >= 16), an assumption; "mtp" the 3 MTP
    draft tokens assumed, in that order. Only "bad" has a warning: its TTFT above its E2E latency,
    which questions the row (file row 3: header row 1, "mtp" row 2). ``--json`` lists it in
    ``questioned`` and prints the text output's ``note:`` lines in ``notes``: the extrap. legend and
    the two priced rows with assumptions."""
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="mtp", spec_method="mtp"),
                   dict(IMX_ROW, point_id="bad", median_e2el_s="0.2"))
    rows = _predictions(cli, src, tmp_path)
    ri = "SGLang --scheduler-recv-interval 30, from InferenceMAX's B200 DeepSeek-R1 launch script"
    mtp = ("MTP speculative decoding: 3 draft tokens per step assumed (not recorded); acceptance not recorded "
           "either: the cost model's own (the analytical model's spec_acceptance knob)")
    bad = ("median TTFT 0.489404 s exceeds the median end-to-end latency 0.2 s (median_ttft_s > median_e2el_s): "
           "each request's TTFT is part of its end-to-end latency, so one of the two cells is wrong")
    assert (rows["mtp"]["warning"], rows["mtp"]["assumptions"]) == ("", f"{mtp} | {ri}")
    assert (rows["bad"]["warning"], rows["bad"]["assumptions"]) == (bad, ri)
    rc, out, err = cli("validate", src, "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["questioned_rows"] == 1, err
    assert doc["questioned"] == [{"id": "bad", "row": 3, "warnings": [bad]}]
    assert any(n.startswith("extrap. counts a group's rows priced outside the data the calibration was "
                            "fitted on") for n in doc["notes"]), doc["notes"]
    assert [n for n in doc["notes"] if "assumptions" in n] == [
        "2 priced row(s) carry assumptions for settings they do not record (MTP draft tokens, decode batch "
        "limits, inferred pools, ...; column 'assumptions' of predictions.csv)"]
    # the same lines as the text output's note: lines (stdout and stderr; each on one line)
    rc, out, err = cli("validate", src)
    said = [ln[len("note: "):] for ln in (out + err).splitlines() if ln.startswith("note: ")]
    assert rc == 0 and sorted(said) == sorted(doc["notes"]), (said, doc["notes"])


def test_parity_plot_draws_the_ok_rows_that_have_both_values(tmp_path):
    """``parity.png`` draws what the error tables count: ``ok`` rows, each metric where both its
    measured and predicted values are positive. Three hand-made points: "a" ok with both metrics
    (2 marks), "b" ok with its TPOT unmeasured (1 mark: TTFT), "c" an unsupported row (none), "q" a
    questioned ok row (2 marks, crossed): 5 marks. A file of no drawable row writes no plot and says 0."""
    from codesign.validate import Point, write_parity_plot

    def pt(id_, status="ok", tpot=0.01):
        return Point(id=id_, schema="aiconfigurator", system="b200", model_name="m", framework="trtllm",
                     status=status, ttft_s=0.2, pred_ttft_s=0.25, tpot_s=tpot, pred_tpot_s=0.012)

    path = tmp_path / "parity.png"
    questioned = pt("q")
    questioned.questioned.append("a cell that looks wrong")  # drawn (2 marks) and crossed, still counted
    assert write_parity_plot([pt("a"), pt("b", tpot=math.nan), pt("c", status="unsupported: x"), questioned],
                             path, "t") == 5
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    none = tmp_path / "none.png"
    assert write_parity_plot([pt("c", status="unsupported: x")], none, "t") == 0 and not none.exists()


def test_validate_out_writes_the_parity_plot_and_json_names_it(tmp_path, cli):
    """``--out DIR`` writes ``DIR/parity.png`` beside predictions.csv, stderr names it, and
    ``--json`` gives its path (``parity_plot``; None without ``--out``)."""
    src = _imx_csv(tmp_path / "m.csv", dict(IMX_ROW, point_id="one"))
    out_dir = tmp_path / "out"
    rc, out, err = cli("validate", src, "--out", out_dir)
    assert rc == 0 and f"parity plot: {out_dir / 'parity.png'}" in err, err
    assert (out_dir / "parity.png").read_bytes()[:4] == b"\x89PNG"
    rc, out, err = cli("validate", src, "--json", "--out", tmp_path / "o2")
    assert rc == 0 and json.loads(out)["parity_plot"] == str(tmp_path / "o2" / "parity.png")
    rc, out, err = cli("validate", src, "--json")
    assert rc == 0 and json.loads(out)["parity_plot"] is None
