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
    # imx-00017 uses MTP speculative decoding: not modelled, said so
    assert by["imx-00017"].status.startswith("unsupported: speculative decoding")


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
