"""Calibrated baselines: registration, shipped hardware, and the published Jalapeño baselines.

Expected values come from ../shared/data (hardware_specs.csv, jalapeno_published.csv). The
tolerance on the published table is what the current calibration honestly reaches (see
docs/baselines.md): a factor, not a percentage.
"""

import csv

import pytest

from codesign.pluginmanager import get_plugin_manager
from codesign.spec import load_raw, spec_from_dict

REPO_MODELS = __import__("pathlib").Path(__file__).resolve().parents[1] / "specs" / "models"


def test_baselines_registered():
    b = get_plugin_manager().baselines
    assert {"gb200", "gb300", "b200", "h200", "h100"} <= set(b)
    for name in ("gb200", "gb300", "b200", "h200", "h100"):
        assert b[name].hardware.exists()
        assert b[name].cost_model == "analytical"
        assert b[name].provenance.get("calibration_file")


def test_h100_numbers_match_hardware_specs(shared_data):
    rows = {r["device_id"]: r for r in csv.DictReader(open(shared_data / "hardware_specs.csv"))}
    h = rows["h100_sxm"]
    hw, _ = load_raw(get_plugin_manager().baselines["h100"].hardware)
    md, _ = load_raw(REPO_MODELS / "llama-3.1-8b.toml")
    raw = dict(hw, model=md["model"], workload={"isl": 8, "osl": 8, "concurrency": [1]})
    spec = spec_from_dict(raw)
    assert spec.chip.tdp == pytest.approx(float(h["tdp_w"]))
    assert spec.chip.peak_flops.bf16 == pytest.approx(float(h["dense_bf16_tflops"]) * 1e12)
    assert spec.memory.hbm.bandwidth == pytest.approx(float(h["mem_bandwidth_tb_s"]) * 1e12)
    assert spec.memory.hbm.capacity == pytest.approx(float(h["mem_capacity_gb"]) * 1e9)
    assert spec.network.scaleup_domain == int(h["scaleup_domain_size_chips"])


def _published(shared_data):
    out = {}
    for r in csv.DictReader(open(shared_data / "jalapeno_published.csv")):
        out[(r["model"], r["system"], r["metric"])] = float(r["value"])
    return out


def best_summary(system, model, deployments, formats, pm=None):
    """Each summary metric's best over ``deployments`` on ``system`` at 8k/1k (calibrated knobs)."""
    import numpy as np

    from codesign.evaluation import evaluate

    pm = pm or get_plugin_manager()
    b = pm.baselines[system]
    hw, _ = load_raw(b.hardware)
    md, _ = load_raw(REPO_MODELS / f"{model}.toml")
    best = {}
    for dep in deployments:
        raw = {k: hw[k] for k in ("chip", "memory", "network")}
        raw["model"] = md["model"]
        raw["workload"] = {"isl": 8192, "osl": 1024, "length_jitter": 0.2,
                           "concurrency": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]}
        raw["deployment"] = dict(dep, **formats)
        raw["efficiency"] = dict(b.efficiency)
        s = evaluate(spec_from_dict(raw)).summary()
        for k, v in s.items():
            v = float(v[0])
            if not np.isfinite(v):
                continue
            if k.startswith("peak"):
                best[k] = max(best.get(k, -np.inf), v)
            else:
                best[k] = min(best.get(k, np.inf), v)
    return best


GPT_OSS = dict(weights_format="bf16", moe_weights_format="mxfp4", kv_cache_format="fp8_e4m3",
               activations_format="fp8_e4m3")
DSR1_FP4 = dict(weights_format="fp8_e4m3", moe_weights_format="nvfp4", kv_cache_format="fp8_e4m3",
                activations_format="nvfp4")
AGG_TP = [dict(tp=t, ep=t) for t in (1, 2, 4, 8)]
DSR1_DEPS = ([dict(tp=t, ep=t) for t in (4, 8)] + [dict(tp=1, dp_attention=d, ep=d) for d in (4, 8)]
             + [dict(mode="disaggregated", prefill=dict(chips=8, tp=1, dp_attention=8, ep=8),
                     decode=dict(chips=d, tp=1, dp_attention=d, ep=d)) for d in (8, 16, 32)])

#: Factor within which the current calibration reproduces each published number (docs/baselines.md):
#: the minimum latencies within 1.25x (worst gpt-oss-120b on GB200, 1.20x: batch-1 decode there is
#: collective- and launch-latency bound, and the fit, made mostly of loaded rows, prices it ~17%
#: slow at TP4 against imx-03187); peak tok/s per kW within 1.5x and optimistic (worst gpt-oss-120b
#: on GB200, 1.45x; Kimi-K2 on GB300, which has no measured row there, 1.37x). Session 2 held 1.5x
#: and 2.1x, session 3 1.3x and 1.8x, session 4 1.2x and 1.6x.
TOLERANCE = {"min_tpot_ms": 1.25, "min_e2e_latency_s": 1.25, "peak_mixed_tok_s_per_kw": 1.5}


@pytest.mark.parametrize("model,system,deps,formats", [
    ("gpt-oss-120b", "gb200", AGG_TP, GPT_OSS),
    ("deepseek-r1", "gb300", DSR1_DEPS, DSR1_FP4),
    ("kimi-k2", "gb300", DSR1_DEPS, DSR1_FP4),
])
def test_published_baselines_within_tolerance(shared_data, model, system, deps, formats):
    pub = _published(shared_data)
    best = best_summary(system, model, deps, formats)
    pairs = [("min_tpot_ms", best["min_tpot_s"] * 1e3), ("min_e2e_latency_s", best["min_e2e_latency_s"]),
             ("peak_mixed_tok_s_per_kw", best["peak_mixed_tok_s_per_kw"])]
    for metric, pred in pairs:
        ref = pub[(model, system, metric)]
        tol = TOLERANCE[metric]
        assert ref / tol <= pred <= ref * tol, (metric, ref, pred)
