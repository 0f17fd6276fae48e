"""codesign validate: column mapping (expected values read off the data rows), batching, CSV output."""

import csv
import math

import pytest

from codesign.validate import error_stats, predict, read_measured, write_predictions


def _subset(src, dst, ids, idcol):
    with open(src, newline="") as f:
        r = csv.DictReader(f)
        rows = [row for row in r if row[idcol] in ids]
        cols = r.fieldnames
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
    statuses = {p.status for p in pts if p.model_name == "Qwen/Qwen3-32B"}
    assert statuses == {"unsupported: no model config for Qwen/Qwen3-32B"}


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
    assert any("MTP" in w for w in by["imx-00017"].warnings)


def test_predict_and_csv(shared_data, tmp_path):
    src = shared_data / "measured" / "aiconfigurator_silicon_public.csv"
    sub = _subset(src, tmp_path / "aic.csv", AIC_IDS | {"dsr1_b200_sglang_fp4_agg_1024x1024_c64_cfg99"}, "id")
    schema, pts = read_measured(sub)
    predict(pts)
    ok = [p for p in pts if p.status == "ok"]
    assert ok, [p.status for p in pts]
    for p in ok:
        assert p.pred_ttft_s > 0 and p.pred_tpot_s > 0
    write_predictions(pts, tmp_path / "out" / "predictions.csv", schema)
    rows = list(csv.DictReader(open(tmp_path / "out" / "predictions.csv")))
    assert {r["id"] for r in rows} == {p.id for p in pts}  # no row dropped
    assert all(r["status"] for r in rows)


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


def test_cli_validate_with_a_calibration_file(shared_data, tmp_path, capsys):
    """--calibration FILE prices with that file's knobs: the shipped file passed explicitly gives the
    default predictions; a calibration with every GB200 overhead raised gives slower ones."""
    import json
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


@pytest.mark.parametrize("body,msg", [
    (None, "no such calibration file"),
    ("shared = [1, 2\n", "not a valid TOML file"),
    ("[systems.gb200]\ncompute_decode = 0.5\n", "shared: missing"),
    ("[shared]\ncompute_decod = 0.5\n", "shared.compute_decod: unknown knob"),
    ("[shared]\ncompute_decode = 1.5\n", "shared.compute_decode: must be a finite number in (0, 1]"),
    ("[shared]\n[systems.gb200]\nstep_overhead_s = -1.0\n", "systems.gb200.step_overhead_s: must be a finite number in [0, 10]"),
    ('cost_model = "roofline"\n[shared]\n', "cost_model: calibrates 'roofline'"),
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
    p = by["2026_04_06_deepseek_r1_gb300_trtllm_fp8_disagg_8192x1024_c2151_tp4_ep4_1198"]
    assert p.status == ("ambiguous: pools inferred from InferenceMAX recipe imx-00320 "
                        "(28 prefill + 8 decode GPUs)")
    assert p.deploy == {"p_chips": 28, "p_tp": 1, "p_ep": 4, "p_dp": 4,
                        "d_chips": 8, "d_tp": 1, "d_ep": 8, "d_dp": 8, "pp": 1,
                        # a Dynamo + TensorRT-LLM recipe's batch limit at this row's C: 2151 users
                        # on 8 DP ranks is 268.9 per rank, 1.05x 256, so 256 per rank
                        "mb": 256 * 8}
    # gb200 dynamo-sglang fp4 1024/1024 recipes logging TP 1 run at conc 4 (imx-00176 and others:
    # 1 prefill worker of 4 GPUs, 2 decode workers of 4, attention DP), 32, 64 and >= 512 (4 prefill
    # workers and 48 decode GPUs); conc 8 is nearest to 4 in log space
    p = by["2026_04_06_deepseek_r1_gb200_sglang_fp4_disagg_1024x1024_c8_tp1_ep1_1990"]
    assert p.status.startswith("ambiguous: pools inferred from InferenceMAX recipe imx-")
    assert (p.deploy["p_chips"], p.deploy["p_dp"], p.deploy["d_chips"], p.deploy["d_dp"]) == (4, 4, 8, 4)
    # gb200 dynamo-trt fp4 1024/1024 runs of 36 GPUs at conc 32 (imx-02190, imx-02186): 1 prefill
    # worker of 4 GPUs, 4 decode workers of TP 8
    p = by["2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_1024x1024_c32_tp36_ep1_11"]
    assert p.mode == "disaggregated" and p.concurrency == 32
    assert (p.deploy["p_chips"], p.deploy["d_chips"], p.deploy["d_tp"], p.deploy["d_dp"]) == (4, 32, 8, 1)
    assert p.status.startswith("ambiguous: pools inferred from InferenceMAX recipe imx-02190")  # no MTP
    # fallback: ceil(360 / 64) = 6 decode workers of TP 8 = 48 GPUs; ceil(48 / 16) = 3 prefill
    # workers of TP 4 = 12 GPUs
    p = by["2026_03_25_kimi_k2_5_gb200_trtllm_fp4_disagg_1024x1024_c360_tp8_0_ep_177"]
    assert p.status == ("ambiguous: pools inferred from the fallback rule (no InferenceMAX recipe) "
                        "(12 prefill + 48 decode GPUs)")
    assert (p.deploy["p_chips"], p.deploy["p_tp"], p.deploy["d_chips"], p.deploy["d_tp"]) == (12, 4, 48, 8)


def test_inferencemax_rows_logging_total_gpus_get_recipe_pools(shared_data):
    """Legacy disaggregated rows without worker counts log the run's total GPUs as TP and as both
    pools (imx-00156: tp 28, prefill and decode "28 GPUs", gpu_count_consistency
    legacy_total_equals_num_prefill_gpu): priced with a recipe's pools as `ambiguous`, not
    `infeasible` for a TP 28 no run used; the row's own speculative decoding (none) is kept even
    when the nearest recipe ran MTP (imx-00159)."""
    _, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv")
    by = {p.id: p for p in pts}
    for pid in ("imx-00156", "imx-00158", "imx-00159", "imx-00164", "imx-00170"):
        p = by[pid]
        assert p.status.startswith("ambiguous: pools inferred from InferenceMAX recipe imx-"), p.status
        assert p.deploy["p_tp"] * p.deploy["p_dp"] <= 8 and "spec" not in p.deploy


def test_pools_without_inferencemax_file(shared_data, tmp_path, monkeypatch):
    from codesign.validate import pool_recipes

    monkeypatch.setenv("CODESIGN_SHARED_DATA", str(tmp_path / "nowhere"))
    assert pool_recipes() == ()
    by = _pool_points(shared_data, tmp_path)
    # fallback: ceil(2151 / 64) = 34 decode workers of TP 8, capped at 72 GPUs (9 workers);
    # ceil(72 / 16) = 5 prefill workers of TP 4 = 20 GPUs
    p = by["2026_04_06_deepseek_r1_gb300_trtllm_fp8_disagg_8192x1024_c2151_tp4_ep4_1198"]
    assert p.status.endswith("fallback rule (no InferenceMAX recipe) (20 prefill + 72 decode GPUs)")
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
    sub = _subset(src, tmp_path / "aic.csv",
                  {"2026_04_06_deepseek_r1_gb300_trtllm_fp8_disagg_8192x1024_c2151_tp4_ep4_1198"}, "id")
    assert main(["validate", str(sub), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"]["all"] == [] and doc["status"] == {"ambiguous": 1}
    assert doc["errors_ambiguous"]["all"][0]["n"] == 1
    assert doc["errors_ambiguous"]["system"][0]["group"] == "gb300"


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
