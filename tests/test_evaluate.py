"""``codesign evaluate``: the JSON document and physics bounds checked by hand derivation."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO, SPECS, peak_point

GB200 = SPECS / "examples" / "gb200-gpt-oss-120b.toml"
POINT_KEYS = {"concurrency", "ttft_s", "tpot_s", "e2e_latency_s", "interactivity_tok_s_user",
              "output_tok_s_per_chip", "mixed_tok_s_per_chip", "mixed_tok_s_per_kw", "feasible"}
SUMMARY_KEYS = {"peak_mixed_tok_s_per_kw", "min_e2e_latency_s", "min_tpot_s"}


def _doc(cli, spec):
    rc, out, err = cli("evaluate", spec, "--json")
    doc = json.loads(out)
    # exit 1 exactly when no point is feasible (the document still says why), as optimize and sweep
    assert rc == (0 if any(p["feasible"] for p in doc["points"]) else 1), err
    return doc


def test_json_document(cli):
    doc = _doc(cli, GB200)
    assert doc["schema_version"] == 1
    assert [p["concurrency"] for p in doc["points"]] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    for p in doc["points"]:
        assert POINT_KEYS <= set(p)
        assert p["feasible"] is True
        # DESIGN.md definitions hold between the reported metrics
        assert p["interactivity_tok_s_user"] == pytest.approx(1 / p["tpot_s"], rel=1e-5)
        assert p["mixed_tok_s_per_kw"] == pytest.approx(p["mixed_tok_s_per_chip"] / 1.2, rel=1e-5)  # 1200 W TDP
    assert SUMMARY_KEYS <= set(doc["summary"])
    s = doc["summary"]
    assert s["peak_mixed_tok_s_per_kw"] == pytest.approx(max(p["mixed_tok_s_per_kw"] for p in doc["points"]))
    assert s["min_tpot_s"] == pytest.approx(min(p["tpot_s"] for p in doc["points"]))
    # the peak's operating point: the first point within 0.01% of the highest tok/s per kW
    top = peak_point(doc["points"])
    assert s["peak_concurrency"] == top["concurrency"] and isinstance(s["peak_concurrency"], int)
    assert (s["ttft_at_peak_s"], s["tpot_at_peak_s"]) == (top["ttft_s"], top["tpot_s"])


def _gpt_oss_active_bytes():
    """Bytes one decode token must read at batch 1 for gpt-oss-120b, derived from its config.json.

    hidden 2880, 36 layers, 64 query heads and 8 KV heads of dim 64, 128 experts (top-4) of
    intermediate 2880, vocab 201088; attention, router and lm_head in BF16 (2 B), experts in MXFP4
    (4 bits + one 8-bit scale per 32 elements = 4.25 bits).
    """
    h, L, hd = 2880, 36, 64
    q = h * 64 * hd + 64 * hd          # q_proj weight + bias
    kv = 2 * (h * 8 * hd + 8 * hd)     # k_proj, v_proj weights + biases
    o = 64 * hd * h + h                # o_proj weight + bias
    attn = L * (q + kv + o) * 2        # BF16
    expert = (h * 2 * 2880 + 2 * 2880) + (2880 * h + h)  # gate_up + bias, down + bias
    experts = L * 4 * expert * 4.25 / 8  # 4 experts per token, MXFP4
    router = L * (h * 128 + 128) * 2
    lm_head = 201088 * h * 2
    return attn + experts + router + lm_head


def test_min_tpot_not_below_the_memory_roofline(cli, tmp_path):
    """min TPOT >= (weights + KV bytes read per step) / (chips x HBM bandwidth).

    At concurrency 1 a decode step reads at least the active weights and one request's KV cache,
    spread over the TP chips, each reading at most 8 TB/s (hardware_specs.csv gb200_nvl72).
    KV of one request at the smallest context (ISL 0.8 x 8192): 18 full layers x 2 x 8 x 64
    elements per token plus 18 window layers x 1024 x 128 tokens, FP8 (1 B).
    """
    weights = _gpt_oss_active_bytes()
    kv = (18 * 2 * 8 * 64) * (0.8 * 8192) * 1 + 18 * 2 * 8 * 64 * 128 * 1
    for tp in (1, 2, 8):
        spec = tmp_path / f"tp{tp}.toml"
        spec.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\ntp = {tp}\n')
        doc = _doc(cli, spec)
        bound = (weights + kv) / (tp * 8e12)
        assert doc["summary"]["min_tpot_s"] >= bound
        # and each point's TPOT is at least that bound too
        assert all(p["tpot_s"] >= bound for p in doc["points"] if p["feasible"])


def test_more_hbm_bandwidth_never_slows_decode(cli, tmp_path):
    tpots = []
    for bw in ("4 TB/s", "8 TB/s", "9.6 TB/s"):  # 9.6 TB/s = 8 HBM3E stacks, the package limit
        spec = tmp_path / "bw.toml"
        spec.write_text(f'include = ["{GB200.as_posix()}"]\n[memory.hbm]\nbandwidth = "{bw}"\n')
        tpots.append([p["tpot_s"] for p in _doc(cli, spec)["points"]])
    for slow, fast in zip(tpots, tpots[1:]):
        assert all(f <= s for s, f in zip(slow, fast))


@pytest.mark.parametrize("hbm, stacks", [
    ("", 7),  # GB200's own 186 GB and 8 TB/s: max(186 / 36 = 5.17, 8 / 1.2 = 6.67) -> 7 whole stacks
    # 144 GB and 6 TB/s: max(144 / 36 = 4, 6 / 1.2 = 5) = 5 exactly (the float32 model gives
    # 5.00000048, which is no sixth stack)
    ('[memory.hbm]\ncapacity = "144 GB"\nbandwidth = "6 TB/s"\n', 5),
])
def test_hbm_stacks_are_a_whole_count(cli, tmp_path, hbm, stacks):
    """``"hbm_stacks": 6.67`` in --json read as a stack count; a package carries whole stacks
    (fresh-user trial, session 43). specs/technology/n4p.toml: HBM3E stacks of 36 GB and 1.2 TB/s."""
    spec = tmp_path / "hbm.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n' + hbm)
    got = _doc(cli, spec)["design"]["hbm_stacks"]
    assert got == stacks and type(got) is int


def test_too_many_hbm_stacks_say_what_asks_for_them(cli, tmp_path):
    """"HBM needs 13.3 stacks, the package holds 8" said neither how many whole stacks nor why
    (fresh-user trial, session 43). n4p.toml: 1.2 TB/s and 36 GB per HBM3E stack, 8 on the package.
    16 TB/s is 16 / 1.2 = 13.3 stacks' bandwidth, 14 whole stacks; 576 GB is 576 / 36 = 16 stacks."""
    spec = tmp_path / "hbm.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[memory.hbm]\nbandwidth = "16 TB/s"\n')
    doc = _doc(cli, spec)
    assert doc["infeasible_reason"] == (
        "HBM needs 14 stacks, the package holds 8 (chip.area.max_hbm_stacks): 16 TB/s of HBM bandwidth "
        "(memory.hbm.bandwidth) at 1.2 TB/s per stack (chip.area.hbm_stack_bandwidth) is 13.3 stacks")
    assert doc["design"]["hbm_stacks"] == 14
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[memory.hbm]\nbandwidth = "16 TB/s"\ncapacity = "576 GB"\n')
    assert _doc(cli, spec)["infeasible_reason"] == (
        "HBM needs 16 stacks, the package holds 8 (chip.area.max_hbm_stacks): 16 TB/s of HBM bandwidth "
        "(memory.hbm.bandwidth) at 1.2 TB/s per stack (chip.area.hbm_stack_bandwidth) is 13.3 stacks and 576 GB "
        "of HBM capacity (memory.hbm.capacity) at 36 GB per stack (chip.area.hbm_stack_capacity) is 16 stacks")
    rc, out, err = cli("evaluate", spec)
    assert rc == 1 and "HBM needs 16 stacks, the package holds 8" in " ".join(out.split()), out


def test_weights_that_do_not_fit_are_infeasible_not_priced(cli, tmp_path):
    # gpt-oss-120b holds about 65 GB of weights: at TP 1 they cannot fit in 40 GB of HBM
    spec = tmp_path / "small.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[memory.hbm]\ncapacity = "40 GB"\n[deployment]\ntp = 1\n')
    doc = _doc(cli, spec)
    assert all(p["feasible"] is False and p["tpot_s"] is None for p in doc["points"])
    assert "weights need" in doc["infeasible_reason"]


def test_tp_above_heads_or_domain_is_infeasible(cli, tmp_path):
    spec = tmp_path / "tp.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\ntp = 128\n')
    doc = _doc(cli, spec)
    assert not any(p["feasible"] for p in doc["points"])
    assert "above the model's 64 attention heads" in doc["infeasible_reason"]
    assert "scale-up domain (72 chips; deployment.multinode_tp = true" in doc["infeasible_reason"]


def test_table_output(cli):
    rc, out, err = cli("evaluate", GB200)
    assert rc == 0 and "TPOT" in out and "peak mixed tok/s per kW" in out


def test_ep_above_the_expert_count_is_infeasible(cli, tmp_path):
    # gpt-oss-120b has 128 experts (config.json num_local_experts); EP 256 over 256 chips cannot shard them
    spec = tmp_path / "ep.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\ntp = 8\ndp_attention = 32\nep = 256\n')
    doc = _doc(cli, spec)
    assert not any(p["feasible"] for p in doc["points"])
    assert "above the model's 128 experts" in doc["infeasible_reason"]


def test_kv_that_does_not_fit_queues_unless_the_host_tier_is_allowed(cli, tmp_path):
    """GB200's Grace memory (240 GB per GPU, 450 GB/s) holds KV only with deployment.host_kv_cache;
    without it the decode batch is capped at the KV slots of the HBM and the other users queue.

    KV per request at 8192 + 1024 tokens, FP8: 18 full layers x 2 x 8 x 64 x 9216 + 18 x 1024 x 128
    = 172.2 MB, over TP 1 chip (KV heads are not split at TP 1). Weights resident on one chip: the
    active bytes of ``_gpt_oss_active_bytes`` with all 128 experts instead of 4, plus the BF16 input
    embedding (untied), norms and sinks: 65.19 GB. HBM left on a 100 GB HBM: 34.81 GB, 90% of it
    for KV (kv_memory_fraction): 181.9 requests; 240 GB of host memory adds 1,393 more.
    """
    kv_req = (18 * 2 * 8 * 64 * 9216 + 18 * 1024 * 128) * 1.0
    base = f'include = ["{GB200.as_posix()}"]\n[memory.hbm]\ncapacity = "100 GB"\n[deployment]\ntp = 1\n'
    hbm_only = tmp_path / "hbm.toml"
    hbm_only.write_text(base + "[efficiency]\nburst_fraction = 0.0\n")
    with_host = tmp_path / "host.toml"
    with_host.write_text(base + "host_kv_cache = true\n[efficiency]\nburst_fraction = 0.0\n")
    doc_hbm, doc_host = _doc(cli, hbm_only), _doc(cli, with_host)
    h, layers = 2880, 36
    expert = (h * 2 * 2880 + 2 * 2880) + (2880 * h + h)  # gate_up + bias, down + bias
    w = (_gpt_oss_active_bytes() + layers * 124 * expert * 4.25 / 8  # the other 124 experts, MXFP4
         + 201088 * h * 2 + (2 * layers + 1) * h * 2 + layers * 64 * 2)  # embedding, norms, sinks
    slots = (100e9 - w) * 0.9 / kv_req
    mc = doc_hbm["design"]["max_concurrency"]
    assert mc == int(slots)
    assert doc_host["design"]["max_concurrency"] - mc == pytest.approx(240e9 / kv_req, abs=1.0)
    osl = 1024 * 0.9  # mean output length at length_jitter 0.2 (inferencemax-8k1k workload)
    by_c = {p["concurrency"]: p for p in doc_hbm["points"]}
    capped = [c for c in by_c if c > slots]
    assert capped == [256, 512, 1024]
    for c in capped:
        p = by_c[c]
        assert p["feasible"] is True
        # Little's law over decode: requests in decode = throughput x decode time = the KV slots
        x = c / (p["e2e_latency_s"])
        assert x * (osl - 1) * p["tpot_s"] == pytest.approx(slots, rel=1e-3)
        # the capped batch runs at the same TPOT whatever the number of users; the rest wait
        assert p["tpot_s"] == pytest.approx(by_c[256]["tpot_s"], rel=1e-5)
        # and the model reports that batch (the requests decoding at once)
        assert p["decode_batch"] == pytest.approx(slots, rel=1e-3)
    # throughput is flat above the cap, so TTFT grows by (C2 − C1)/X
    x = 256 / by_c[256]["e2e_latency_s"]
    assert by_c[1024]["ttft_s"] - by_c[512]["ttft_s"] == pytest.approx(512 / x, rel=1e-3)
    # with the host tier the batch is not capped below 1024, and reading KV from it is never faster
    by_h = {p["concurrency"]: p for p in doc_host["points"]}
    assert by_h[1024]["ttft_s"] < by_c[1024]["ttft_s"] / 5
    for c, p in by_c.items():
        if c <= slots:
            assert by_h[c]["tpot_s"] == pytest.approx(p["tpot_s"], rel=1e-5)
    assert by_h[1024]["tpot_s"] > by_c[1024]["tpot_s"]


def test_ep_that_does_not_divide_the_experts_holds_redundant_copies(cli, tmp_path):
    """EP 48 on gpt-oss-120b's 128 experts (config.json num_local_experts) is what SGLang and
    TensorRT-LLM run with redundant experts (EPLB): each rank holds ceil(128/48) = 3 expert slots,
    against ceil(128/64) = 2 at EP 64. With TP 1 and attention DP (dense weights whole on every
    chip), the resident weights differ by exactly one MXFP4 expert per MoE layer:
    36 x ((2880 x 2 x 2880 + 2 x 2880) + (2880 x 2880 + 2880)) x 4.25 / 8 B = 476.0 MB."""
    def spec(n):
        f = tmp_path / f"ep{n}.toml"
        f.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\ntp = 1\ndp_attention = {n}\nep = {n}\n')
        return _doc(cli, f)

    d48, d64 = spec(48), spec(64)
    assert d48["infeasible_reason"] is None and all(p["feasible"] for p in d48["points"])
    h = 2880
    expert = (h * 2 * 2880 + 2 * 2880) + (2880 * h + h)
    diff = d48["design"]["weights_bytes_per_chip"] - d64["design"]["weights_bytes_per_chip"]
    assert diff == pytest.approx(36 * expert * 4.25 / 8, rel=1e-4)


def test_all_to_all_latency_grows_with_its_peers_and_all_reduce_latency_does_not(cli, tmp_path):
    """Per decode step of gpt-oss-120b (36 layers, every FFN a MoE) at TP 8 and EP 8 on 8 chips
    (MoE TP 8/8 = 1, no MoE all-reduce): 36 x 2 all-to-alls (dispatch, combine) over 7 peers = 504
    peer latencies; the 36 attention all-reduces synchronise their 7 peers at once (TensorRT-LLM's
    one-shot all-reduce: one thread per peer flag) and add none. Raising
    ``collective_peer_latency_s`` by 1 us adds 504 us to the decode step's network time."""
    def net(peer):
        f = tmp_path / f"peer{peer}.toml"
        f.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\nep = 8\n'
                     f'[efficiency]\ncollective_peer_latency_s = {peer}\n')
        return [p["decode_network_s"] for p in _doc(cli, f)["points"]]

    lo, hi = net(0.0), net(1e-6)
    for a, b in zip(lo, hi):
        assert b - a == pytest.approx(504e-6, rel=1e-3)


def test_json_gives_counts_as_integers(cli):
    """Counts are JSON integers, as the concurrency is: the design's chips (TP 8 on one engine, the
    deployment file, is 8 chips) and its request slots (max_concurrency, a whole number of
    requests); the other design metrics stay floats."""
    design = _doc(cli, GB200)["design"]
    assert design["chips"] == 8 and type(design["chips"]) is int
    assert type(design["max_concurrency"]) is int and design["max_concurrency"] >= 1
    assert type(design["tdp_w"]) is float and design["tdp_w"] == 1200.0  # gb200.toml: 1200 W


def test_json_gives_a_float32_result_its_own_digits():
    """The JAX cost models compute in float32; widened to float64 a result carries digits that are
    not the model's (1099.4 as a float32 is 1099.4000244140625). JSON documents print the shortest
    decimal that reads back as the same float32; whole numbers and values that are no float32 (a
    measured 0.15608845930546522 s) stay exactly as they are."""
    import numpy as np

    from codesign.evaluation import jsonable

    assert jsonable(np.float64(np.float32(1099.4))) == 1099.4
    assert jsonable(float(np.float32(0.3))) == 0.3
    assert np.float32(jsonable(float(np.float32(6.6666667)))) == np.float32(6.6666667)  # same float32
    assert jsonable(8148792832.0) == 8148792832.0  # a byte count keeps every digit
    assert jsonable(0.15608845930546522) == 0.15608845930546522
    assert jsonable(0.1) == 0.1 and jsonable(1e39) == 1e39
    assert jsonable([np.nan, np.float32(np.inf), {"a": np.float32(2.5)}]) == [None, None, {"a": 2.5}]


def test_table_title_names_the_settings_that_change_the_price(cli, tmp_path):
    """Beyond the parallelism the table's title names the deployment settings the model prices
    (speculative drafts, multi-node TP, the engine's batch limit, the receive interval, TensorRT-LLM's
    attention-DP balance, KV offload), so a table read later says what it was of; a spec without them
    keeps the short title."""
    spec = tmp_path / "x.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\nspeculative_tokens = 3\n'
                    "max_batch_size = 256\nscheduler_recv_interval = 30\nmultinode_tp = true\n"
                    "tp = 1\nep = 4\ndp_attention = 4\nattention_dp_balance_timeout_iters = 60\n")
    rc, out, err = cli("evaluate", spec)
    assert rc == 0, err
    flat = " ".join(out.split())
    for part in ("MTP/EAGLE 3 draft(s)", "multi-node TP", "batch limit 256", "receive interval 30",
                 "attention-DP balance (timeout 60)"):
        assert part in flat, part
    rc, out, err = cli("evaluate", GB200)
    assert "draft" not in out and "receive interval" not in out and "balance" not in out


def test_json_names_its_cost_model_as_optimize_and_sweep_do(cli):
    """Fresh-user trial, session 27: `evaluate --json` gave "cost_model": "analytical", a string,
    where pareto.json and sweep_front.json give the record {"name", "plugin"} (plugin: "NAME (DIST
    VERSION)"). It gives that record, for the spec's cost model and for --cost-model."""
    from importlib.metadata import version

    from codesign.pluginmanager import get_plugin_manager

    # and the model's own version, registered with it (CostModelInfo: "reported with every result";
    # no report gave it: fresh-user trial, session 39)
    models = get_plugin_manager().cost_models
    doc = _doc(cli, GB200)
    assert doc["cost_model"] == {"name": "analytical", "version": models["analytical"].version,
                                 "plugin": f"analytical (codesign {version('codesign')})"}
    assert models["analytical"].version
    pytest.importorskip("codesign_roofline")
    rc, out, err = cli("evaluate", GB200, "--cost-model", "roofline", "--json")
    assert rc == 0, err
    assert json.loads(out)["cost_model"] == {"name": "roofline", "version": models["roofline"].version,
                                             "plugin": f"roofline (codesign-roofline {version('codesign-roofline')})"}


def test_the_table_names_its_cost_model_as_optimize_does(cli):
    """The text output named no cost model (only --json did), though --cost-model or "auto" may
    price with another than the reader assumes: its last line names the model, its own version and
    its plugin (NAME (DIST VERSION)), worded as optimize's "priced by" line."""
    from importlib.metadata import version

    from codesign.pluginmanager import get_plugin_manager

    models = get_plugin_manager().cost_models
    rc, out, err = cli("evaluate", GB200)
    assert rc == 0, err
    # the analytical model's version is its release + the hash of its model.py (a PEP 440 local label)
    release, build = models["analytical"].version.split("+")
    flat = " ".join(out.split())  # the line may wrap at the console's width
    assert flat.endswith(f"priced by cost model 'analytical' version {release}+{build} (release {release}, code "
                         f"build {build}), plugin analytical (codesign {version('codesign')})"), flat
    pytest.importorskip("codesign_roofline")
    rc, out, err = cli("evaluate", GB200, "--cost-model", "roofline")
    assert rc == 0, err
    assert " ".join(out.split()).endswith(
        f"priced by cost model 'roofline' version {models['roofline'].version}, plugin roofline "
        f"(codesign-roofline {version('codesign-roofline')})"), out


def test_the_priced_by_line_explains_the_version_auto_and_the_calibrated_knobs():
    """Fresh-user trial: "priced by cost model 'analytical' 0.4.0+75993c66 (plugin …)" showed a
    "+hash" without a word, and did not say when nobody had named the model ("auto") or whose
    calibrated knobs priced it. Records made by hand, the line written out by hand."""
    from codesign.evaluation import priced_by

    a = {"name": "analytical", "version": "0.4.0+75993c66", "plugin": "analytical (codesign 0.1.0)"}
    r = {"name": "roofline", "version": "0.1.0", "plugin": "roofline (codesign-roofline 0.1.0)"}
    assert priced_by(a) == ("priced by cost model 'analytical' version 0.4.0+75993c66 (release 0.4.0, code build "
                            "75993c66), plugin analytical (codesign 0.1.0)")
    assert priced_by(a, r) == ("priced by cost model 'analytical' version 0.4.0+75993c66 (release 0.4.0, code build "
                               "75993c66), plugin analytical (codesign 0.1.0); 'roofline' version 0.1.0, plugin "
                               "roofline (codesign-roofline 0.1.0)")
    eff = {"baseline": "gb200", "plugin": "baseline (codesign 0.1.0)", "calibration_version": "2026-12-07"}
    assert priced_by(r, choice="the one loaded cost model that can price this spec", efficiency=eff) == (
        "priced by cost model 'roofline' version 0.1.0, plugin roofline (codesign-roofline 0.1.0); efficiency knobs "
        "calibrated for gb200 (calibration 2026-12-07, plugin baseline (codesign 0.1.0)); chosen automatically "
        "(deployment.cost_model = 'auto'): the one loaded cost model that can price this spec")


def test_borrowed_knobs_are_not_said_to_be_calibrated_for_the_system(cli, tmp_path):
    """efficiency_from = "mi355x" was said as "efficiency knobs calibrated for mi355x", though the
    calibration never saw an MI355X (plugins/codesign_baseline/calibration.toml has no
    [systems.mi355x]; the baseline gets the shared knobs, its provenance note says so: fresh-user
    trial, session 48). The line and the JSON record carry the note; a calibrated system's record
    is unchanged (no note)."""
    import json

    from codesign.evaluation import priced_by

    r = {"name": "analytical", "version": "0.1.0", "plugin": "analytical (codesign 0.1.0)"}
    eff = {"baseline": "mi355x", "plugin": "baseline (codesign 0.1.0)", "calibration_version": "v",
           "note": "mi355x not in the calibration data: shared knobs only"}
    assert priced_by(r, efficiency=eff).endswith(
        "; efficiency knobs of baseline mi355x, not calibrated on it (mi355x not in the calibration data: shared "
        "knobs only; calibration v, plugin baseline (codesign 0.1.0))")
    for name, note in (("mi355x", "mi355x not in the calibration data: shared knobs only"),
                       ("b300", "b300 not in the calibration data: b200's fitted knobs (systems.b200)"),
                       ("gb200", None)):
        spec = tmp_path / f"{name}.toml"
        spec.write_text(f'include = ["{(SPECS / "examples" / "gb200-gpt-oss-120b.toml").as_posix()}"]\n'
                        f'efficiency_from = "{name}"\n')
        rc, out, err = cli("evaluate", spec, "--json")
        assert rc == 0, err
        assert json.loads(out)["efficiency_from"].get("note") == note


def test_evaluate_says_when_auto_chose_the_model_and_whose_knobs_priced_it(cli, tmp_path):
    """deployment.cost_model = "auto" with analytical and roofline loaded, neither declaring its
    accuracy: auto takes the first by name (analytical), and the line says so; efficiency_from =
    "gb200" names the baseline and the calibration's version (plugins/codesign_baseline/
    calibration.toml's top-level version)."""
    import tomllib
    from importlib.metadata import version

    from codesign.pluginmanager import get_plugin_manager

    pytest.importorskip("codesign_roofline")
    models = get_plugin_manager().cost_models
    if set(models) != {"analytical", "roofline"} or any(m.accuracy is not None for m in models.values()):
        pytest.skip("another set of cost models is loaded")
    f = tmp_path / "auto.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\ncost_model = "auto"\n')
    rc, out, err = cli("evaluate", f)
    assert rc == 0, err
    assert " ".join(out.split()).endswith(
        "; chosen automatically (deployment.cost_model = 'auto'): the first by name of the 2 loaded cost models "
        "that can price this spec (none declares its accuracy)"), out
    assert "priced by cost model 'analytical' version" in " ".join(out.split()), out
    calibration = tomllib.loads((REPO / "plugins" / "codesign_baseline" / "calibration.toml").read_text())["version"]
    f.write_text(f'include = ["{GB200.as_posix()}"]\nefficiency_from = "gb200"\n')
    rc, out, err = cli("evaluate", f)
    assert rc == 0, err
    flat = " ".join(out.split())
    assert flat.endswith(f"; efficiency knobs calibrated for gb200 (calibration {calibration}, plugin baseline "
                         f"(codesign {version('codesign')}))"), flat
    assert "chosen automatically" not in flat, flat


def _toml(table: dict) -> str:
    """``table`` ({key: value}, pools as dicts) as a ``[deployment]`` TOML table (json.dumps writes
    its ints, floats, strings and booleans as TOML does)."""
    out = "[deployment]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items() if not isinstance(v, dict))
    for k, v in table.items():
        if isinstance(v, dict):
            out += f"[deployment.{k}]\n" + "".join(f"{kk} = {json.dumps(vv)}\n" for kk, vv in v.items())
    return out


#: The formats gb200-gpt-oss-120b.toml's deployment include (deployments/gpt-oss-120b-tp8.toml) sets.
GB200_FORMATS = {"weights_format": "bf16", "moe_weights_format": "mxfp4", "kv_cache_format": "fp8_e4m3",
                 "activations_format": "fp8_e4m3"}


def test_json_records_the_aggregated_deployment_it_priced(cli, tmp_path):
    """A script reading `evaluate --json` could not tell which deployment was priced (only the
    table's title named it): "deployment" gives the spec's [deployment] keys by their TOML names,
    the cost model as priced and the design's chips (tp × dp_attention × pp), and no pools, which
    aggregated serving does not read."""
    own = {"tp": 1, "ep": 4, "dp_attention": 4, "pp": 2, "speculative_tokens": 3, "acceptance_rate": 0.7,
           "max_batch_size": 256, "scheduler_recv_interval": 30, "attention_dp_balance_timeout_iters": 60,
           "host_kv_cache": True}
    spec = tmp_path / "agg.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n' + _toml(own))
    dep = _doc(cli, spec)["deployment"]
    assert dep == {**own, **GB200_FORMATS, "cost_model": "analytical", "mode": "aggregated", "chips": 1 * 4 * 2,
                   "multinode_tp": False}
    pytest.importorskip("codesign_roofline")
    rc, out, err = cli("evaluate", spec, "--cost-model", "roofline", "--json")
    assert json.loads(out)["deployment"]["cost_model"] == "roofline", err


def test_json_records_the_disaggregated_pools_it_priced(cli, tmp_path):
    """In disaggregated serving "deployment" gives both pools as the spec's tables, the design's
    chips as both pools', and not the top-level tp the included example sets (each pool has its own)."""
    own = {"mode": "disaggregated", "pp": 1, "max_batch_size": 128,
           "prefill": {"chips": 4, "tp": 4, "ep": 1, "dp_attention": 1},
           "decode": {"chips": 8, "tp": 2, "ep": 8, "dp_attention": 4}}
    spec = tmp_path / "dis.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n' + _toml(own))
    dep = _doc(cli, spec)["deployment"]
    assert dep == {**own, **GB200_FORMATS, "cost_model": "analytical", "chips": 4 + 8, "speculative_tokens": 0,
                   "host_kv_cache": False, "multinode_tp": False, "scheduler_recv_interval": None}
    assert "tp" not in dep  # the example's tp = 8, overridden by the mode


def test_json_does_not_record_a_key_it_did_not_read(cli, tmp_path):
    """A key an overriding file leaves unread is priced as if absent, so "deployment" leaves it out
    (as the table's title does): the attention-DP balance under dp_attention = 1 or disaggregated
    serving over an include that set it, acceptance_rate under speculative_tokens = 0."""
    (tmp_path / "bal.toml").write_text(_toml({"tp": 1, "ep": 4, "dp_attention": 4, "speculative_tokens": 2,
                                              "acceptance_rate": 0.6,
                                              "attention_dp_balance_timeout_iters": 60}))
    include = f'include = ["{GB200.as_posix()}", "bal.toml"]\n'
    off = tmp_path / "off.toml"
    off.write_text(include + _toml({"ep": 1, "dp_attention": 1, "speculative_tokens": 0}))
    dep = _doc(cli, off)["deployment"]
    assert (dep["dp_attention"], dep["speculative_tokens"]) == (1, 0)
    assert "attention_dp_balance_timeout_iters" not in dep and "acceptance_rate" not in dep
    dis = tmp_path / "dis.toml"
    dis.write_text(include + _toml({"mode": "disaggregated", "prefill": {"chips": 4, "tp": 4},
                                    "decode": {"chips": 4, "tp": 1, "ep": 4, "dp_attention": 4}}))
    dep = _doc(cli, dis)["deployment"]
    assert dep["mode"] == "disaggregated" and dep["acceptance_rate"] == 0.6
    assert "attention_dp_balance_timeout_iters" not in dep and "dp_attention" not in dep
    # the same balance where it is read (aggregated attention DP) is recorded
    on = tmp_path / "on.toml"
    on.write_text(include)
    assert _doc(cli, on)["deployment"]["attention_dp_balance_timeout_iters"] == 60
    # a dense model has no experts to read moe_weights_format (a dense Llama listed nvfp4: fresh-user
    # trial, session 39); gpt-oss-120b, MoE, reads it
    dense = tmp_path / "dense.toml"
    dense.write_text(f'include = ["{GB200.as_posix()}", "{(SPECS / "models" / "llama-3.1-8b.toml").as_posix()}"]\n'
                     + _toml({"moe_weights_format": "nvfp4"}))
    assert "moe_weights_format" not in _doc(cli, dense)["deployment"]
    assert _doc(cli, on)["deployment"]["moe_weights_format"] == "mxfp4"


def test_a_design_over_its_buildable_area_is_said(tmp_path, cli):
    """40/20/10 PFLOP/s (FP4/FP8/BF16) on GB200's spec needs far more tensor-core area than the
    two-reticle package allows (specs/technology/n4p.toml: chip.area.max = 2 x 858 mm² = 1716 mm²);
    evaluate priced it without comment, exit 0 (fresh-user trial, session 27). It still prices it
    (a search bounds area only through its constraints) but says so: a warning on stderr and
    ``over_budget`` in --json. The shipped spec itself is within its area."""
    f = tmp_path / "big.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n'
                 '[chip.peak_flops]\nfp4 = "40 PFLOP/s"\nfp8 = "20 PFLOP/s"\nbf16 = "10 PFLOP/s"\n')
    rc, out, err = cli("evaluate", f, "--json")
    doc = json.loads(out)
    (line,) = doc["over_budget"]
    area = float(line.split()[1].replace(",", ""))
    assert line.endswith("> chip.area.max 1,716 mm²") and area > 1716
    assert area == pytest.approx(doc["design"]["area_mm2"], abs=0.5)
    rc, out, err = cli("evaluate", f)
    assert rc == 0 and "warning: over the chip's own budget: area" in err and "cannot be built" in err
    # one line (it wrapped at 80 columns), its areas thousands separated (it said "78499 mm²")
    (warned,) = [w for w in err.splitlines() if "own budget" in w]
    assert "cannot be built" in warned and re.search(r"area \d{1,3}(,\d{3})+ mm² > chip.area.max 1,716 mm²", warned)
    rc, out, err = cli("evaluate", GB200, "--json")
    assert json.loads(out)["over_budget"] == [] and "over the chip's own budget" not in err


def test_a_tdp_far_below_the_modelled_peak_power_is_said(tmp_path, cli):
    """``tdp = "700 W"`` on GB200's spec printed its tok/s per kW on 700 W without a word, where an
    area over budget is warned of (fresh-user trial). specs/technology/n4p.toml's energy figures are
    derived to put GB200 at its 1200 W TDP at full rates (1200.058 W, codesign.study's
    PEAK_POWER_RTOL note), and the peak does not depend on the TDP: 1200.058 / 700 = 1.714, beyond
    the 1.25 of evaluation.PEAK_OVER_TDP_MARGIN. Every point still draws under 700 W (332 W at 1024
    users), so all stay feasible: the warning names the TDP, the peak, the ratio and what they mean."""
    f = tmp_path / "cool.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[chip]\ntdp = "700 W"\n')
    rc, out, err = cli("evaluate", f)
    assert rc == 0, err
    fact = ("modelled peak power 1,200 W is 1.71× chip.tdp 700 W: tok/s per kW divides by the TDP (the power "
            "basis) and a point drawing more than 700 W is infeasible, but a chip whose peak is that far above its "
            "TDP would throttle under a heavier load than the points priced, which is not priced (a peak up to "
            "1.25× the TDP is not flagged: with every unit at full rate at once a chip exceeds its TDP by design, "
            "the shipped specs by up to 1.14×)")
    (line,) = [x for x in err.splitlines() if "chip.tdp" in x]
    assert line == f"warning: {fact}", line
    rc, out, err = cli("evaluate", f, "--json")
    doc = json.loads(out)
    assert fact in doc["notes"]
    assert all(p["feasible"] for p in doc["points"])
    # at 1000 W the peak is 1.20x the TDP: within the margin, as the shipped B200 (1.12x) and Jalapeño
    # (1.14x) specs are, by design (a chip at full tilt on every unit is held to its TDP by throttling)
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[chip]\ntdp = "1000 W"\n')
    rc, out, err = cli("evaluate", f, "--json")
    assert rc == 0 and not [n for n in json.loads(out)["notes"] if "chip.tdp" in n] and "chip.tdp" not in err


def test_no_shipped_spec_is_warned_of_its_tdp():
    """Every complete spec in specs/ draws at most 1.14x its TDP at full rates (B200 1.118, the
    Jalapeño starting points 1.136; the others at or below theirs), so none gets the warning of
    test_a_tdp_far_below_the_modelled_peak_power_is_said (evaluate prints it when
    evaluation.peak_over_tdp gives a ratio)."""
    from codesign.errors import CodesignError
    from codesign.evaluation import evaluate, load_spec_checked, peak_over_tdp

    seen = 0
    for path in sorted(SPECS.glob("*.toml")) + sorted((SPECS / "examples").glob("*.toml")):
        try:
            spec = load_spec_checked(path)
        except CodesignError:  # a part that is no spec alone
            continue
        ev = evaluate(spec)
        design = {k: float(v[0]) for k, v in ev.design.items()}
        assert design["peak_power_w"] <= 1.14 * design["tdp_w"], path
        assert peak_over_tdp(design) is None, path
        seen += 1
    assert seen >= 10  # the 7 examples, the 3 Jalapeño searches and kv-locality


def test_a_peak_at_the_largest_concurrency_is_said(tmp_path, cli):
    """``concurrency = [1, 1e9]`` put the peak tok/s per kW at 10^9 users, at a TTFT of 155 days,
    feasible and without a word (fresh-user trial, session 43). The peak stays where it is (the
    efficiency there is above that of 1 user), and a note says that it sits at the edge of the list,
    so the true peak may lie beyond it, and, with no SLO set, that it ignores latency, its TTFT, and
    where an SLO is set. Expected TTFT by Little's law for a closed loop of C users: nearly all of
    a request's time is its wait in the queue, so TTFT ~ C / X, X = requests/s = mixed tok/s per
    chip x 8 chips / (0.9 x (8192 + 1024)) tokens per request (lengths drawn from [0.8 L, L])."""
    f = tmp_path / "edge.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 1e9]\n')
    rc, out, err = cli("evaluate", f, "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["summary"]["peak_concurrency"] == 10**9, err
    one, many = doc["points"]
    assert doc["summary"]["peak_mixed_tok_s_per_kw"] == pytest.approx(many["mixed_tok_s_per_kw"])
    days = 1e9 / (many["mixed_tok_s_per_chip"] * 8 / (0.9 * (8192 + 1024))) / 86400
    (note,) = [n for n in doc["notes"] if "largest concurrency" in n]
    assert note.startswith("the peak tok/s per kW is at 1,000,000,000 users, the largest concurrency of "
                           "workload.concurrency: the efficiency was still rising at the edge of the list, so the "
                           "true peak may lie beyond it; no SLO is set, so the peak ignores latency (its TTFT is "), note
    said = float(re.search(r"its TTFT is ([\d.,]+) days", note).group(1).replace(",", ""))
    assert said == pytest.approx(days, rel=0.01), (said, days)
    assert "[workload.slo]" in note and "ttft" in note
    rc, out, err = cli("evaluate", f)
    assert "note: the peak tok/s per kW is at 1,000,000,000 users, the largest concurrency" in out and "days" in out
    # an SLO that 10^6 users meet (a TTFT of 3.7 h by the same law): the note keeps the edge and
    # leaves out the latency
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 1e6]\n'
                 '[workload.slo]\nttft = "5 h"\n')
    (note,) = [n for n in _doc(cli, f)["notes"] if "largest concurrency" in n]
    assert note.endswith("so the true peak may lie beyond it"), note
    # an SLO that only 1 user meets (TTFT 16 ms, test_json_document's range): the peak is at 1, no edge
    # note (test_a_coarse_concurrency_list_under_an_slo_is_said has the note it gets instead)
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 1e9]\n'
                 '[workload.slo]\nttft = "2 s"\n')
    doc = _doc(cli, f)
    assert doc["summary"]["peak_concurrency"] == 1 and not [n for n in doc["notes"] if "largest concurrency" in n]
    # a peak inside the list is no edge: [1, 5e8, 1e9] is a plateau beyond the KV slots (more users
    # only queue, at the same throughput), whose peak is its start (the lowest concurrency within 0.01%)
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 5e8, 1e9]\n')
    doc = _doc(cli, f)
    assert doc["summary"]["peak_concurrency"] == 5 * 10**8 and not [n for n in doc["notes"] if "largest" in n]


def test_a_huge_ttft_is_printed_in_days_and_watts_with_thousands(tmp_path, cli):
    """A TTFT of 10^7 s was printed "13,353,081,000 ms" in the table and the peak line (fresh-user
    trial, session 44): a duration of 1000 s or more is written with its own unit (units.format_duration).
    Expected by Little's law, as in the edge test above: TTFT ~ C / X for C = 10^9 users,
    X = mixed tok/s per chip x 8 chips / (0.9 x (8192 + 1024)) requests/s, in days of 86,400 s; E2E
    adds OSL x TPOT (about 1024 x 0.1 s, under two minutes), the same days to 3 digits.

    The line under the table printed "area 1099 mm², peak power 1200 W" where the TDP above it said
    "1,200 W": GB200's peak power by specs/technology/n4p.toml's comments is 150 W static + 728.5 W
    FP8 + 249.6 W HBM + 72 W NVLink = 1200.1 W, and its modelled area 1099.4 mm² (as the roofline
    test below derives them): "1,200 W" and "1,099 mm²"."""
    import re

    f = tmp_path / "edge.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 1e9]\n')
    doc = _doc(cli, f)
    many = doc["points"][1]
    days = 1e9 / (many["mixed_tok_s_per_chip"] * 8 / (0.9 * (8192 + 1024))) / 86400
    rc, out, err = cli("evaluate", f)
    assert rc == 0, err
    text = " ".join(out.split())
    (row,) = [line for line in out.splitlines() if re.match(r"^\W*1,000,000,000\b", line)]
    ttft, e2e = re.findall(r"([\d.,]+) days", row)
    assert float(ttft) == pytest.approx(days, rel=0.01) and float(e2e) == pytest.approx(days, rel=0.01), row
    at = re.search(r"at 1,000,000,000 users \(TTFT ([\d.]+) days, TPOT ([\d.]+) ms\)", text)
    assert at and float(at.group(1)) == pytest.approx(days, rel=0.01), text
    assert f"TPOT {at.group(2)} ms" in text and float(at.group(2)) == pytest.approx(many["tpot_s"] * 1e3, rel=0.01)
    assert not re.search(r"\d,\d{3},\d{3} ms", out), out  # no duration in millions of ms
    assert "area 1,099 mm², 7 HBM stacks, peak power 1,200 W," in text, text
    assert doc["design"]["peak_power_w"] == pytest.approx(150.0 + 728.5 + 249.6 + 72.0, rel=1e-3)
    assert doc["design"]["area_mm2"] == pytest.approx(1099.4, rel=1e-4)


def test_a_coarse_concurrency_list_under_an_slo_is_said(tmp_path, cli):
    """``concurrency = [1, 1e9]`` under a TTFT SLO of 2 s took the peak at 1 user without a word, though
    the SLO allows far more users (fresh-user trial, session 44). GB200 serves 1 user at a TTFT of
    about 16 ms (test_json_document's range) and 10^9 users at days (Little's law,
    test_a_peak_at_the_largest_concurrency_is_said): the peak at the SLO is at 1 user, the next
    concurrency misses the SLO, and the two are 10^9 apart, beyond 2x, so a note names them, and the
    powers of 2 between them (2, 4, ..., 2^29 = 536,870,912). The peak itself is not moved, and the
    peak line says "1 user" (it said "1 users")."""
    f = tmp_path / "coarse.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 1e9]\n'
                 '[workload.slo]\nttft = "2 s"\n')
    want = ("the peak tok/s per kW at the SLO is at 1 user and the next concurrency of workload.concurrency, "
            "1,000,000,000 users, misses the SLO (TTFT <= 2 s): the list is coarse there (1,000,000,000× apart), and "
            "a concurrency between them may meet the SLO at a higher tok/s per kW; add values between 1 and "
            "1,000,000,000 to workload.concurrency (e.g. powers of 2: 2, 4, …, 536,870,912)")
    doc = _doc(cli, f)
    assert doc["summary"]["peak_concurrency"] == 1 and [p["meets_slo"] for p in doc["points"]] == [True, False]
    assert doc["notes"] == [want]
    rc, out, err = cli("evaluate", f)
    text = " ".join(out.split())
    assert rc == 0 and f"note: {want}" in text, text
    assert re.search(r"peak mixed tok/s per kW \(TDP 1,200 W\): [\d,.]+ at 1 user \(TTFT", text), text
    # GB200's own list doubles (1, 2, ..., 1024): a TTFT SLO of 200 ms cuts it between 256 users (126
    # ms) and 512 (233 ms; test_json_document's points), 2x apart, not beyond: no note. Without 512
    # the next is 1024 (446 ms), 4x apart: the note
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload.slo]\nttft = "200 ms"\n')
    doc = _doc(cli, f)
    assert doc["summary"]["peak_concurrency"] == 256 and not [n for n in doc["notes"] if "coarse" in n]
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 256, 1024]\n'
                 '[workload.slo]\nttft = "200 ms"\n')
    (note,) = _doc(cli, f)["notes"]
    assert note.startswith("the peak tok/s per kW at the SLO is at 256 users and the next concurrency of "
                           "workload.concurrency, 1,024 users, misses the SLO (TTFT <= 200 ms): the list is coarse "
                           "there (4× apart)") and note.endswith("(e.g. powers of 2: 512)"), note


def test_slo_gap_by_hand():
    """evaluation.slo_gap (the rule) and report.coarse_slo_note (the words) on stated points: the
    peak at the SLO at 64 users and the next concurrency, 1024, feasible and missing the SLO, 16x
    apart: a gap, whose powers of 2 between are 128, 256 and 512. Not a gap: the next one 2x away
    (128, not beyond SLO_GAP_RATIO), infeasible for another reason, or meeting the SLO; a peak at the
    largest concurrency (none next), or none (NaN). The list's order does not matter."""
    from codesign.evaluation import slo_gap
    from codesign.report import coarse_slo_note

    T, F = True, False
    assert slo_gap([1, 64, 1024], [T, T, T], [T, T, F], 64) == (64, 1024)
    assert slo_gap([1024, 1, 64], [T, T, T], [F, T, T], 64) == (64, 1024)
    assert slo_gap([1, 64, 128], [T, T, T], [T, T, F], 64) is None
    assert slo_gap([1, 64, 1024], [T, T, F], [T, T, F], 64) is None
    assert slo_gap([1, 64, 1024], [T, T, T], [T, T, T], 64) is None
    assert slo_gap([1, 64], [T, T], [T, T], 64) is None
    assert slo_gap([1, 64], [T, T], [F, F], float("nan")) is None
    assert coarse_slo_note((64, 1024), "TPOT <= 50 ms") == (
        "the peak tok/s per kW at the SLO is at 64 users and the next concurrency of workload.concurrency, 1,024 "
        "users, misses the SLO (TPOT <= 50 ms): the list is coarse there (16× apart), and a concurrency between "
        "them may meet the SLO at a higher tok/s per kW; add values between 64 and 1,024 to workload.concurrency "
        "(e.g. powers of 2: 128, 256, 512)")
    assert coarse_slo_note(None, "TPOT <= 50 ms") is None


def test_the_summary_gives_the_hbm_stacks(cli):
    """evaluate's text summary left out hbm_stacks, which its --json gives (fresh-user trial, session 44):
    GB200's 186 GB over 36 GB per stack is 5.2 stacks and its 8 TB/s over 1.2 TB/s per stack 6.7
    (specs/technology/n4p.toml), so it needs 7 whole stacks."""
    rc, out, err = cli("evaluate", GB200)
    assert rc == 0 and re.search(r"^area [\d,]+ mm², 7 HBM stacks, peak power", out, re.M), out
    assert _doc(cli, GB200)["design"]["hbm_stacks"] == 7


def test_an_operating_point_above_the_tdp_is_infeasible(tmp_path, cli):
    """``tdp = "1 mW"`` on GB200's spec was priced without a word: 65 billion mixed tok/s per kW
    "(TDP 0 W)", exit 0 (noticed in session 28, left then); a milliwatt is now refused as a unit
    slip (units.SANITY_FLOOR, 1 W), so 2.5 W stands for a TDP far below the load here. tok/s per kW
    divides by the TDP, and a point whose own modelled power is above it would throttle, which is
    not priced: it is infeasible, with that reason. No GB200 serves an LLM on 2.5 W (its idle static
    power alone is 150 W, specs/technology/n4p.toml), so every point is, and evaluate exits 1 (no
    feasible point) naming the range of the modelled powers, which are those the same design prices
    at its real TDP (1200 W: every point feasible). A TDP between the lightest and the heaviest
    point's power cuts the sweep there, with power rising with load."""
    f = tmp_path / "cold.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[chip]\ntdp = "2.5 W"\n')
    rc, out, err = cli("evaluate", f, "--json")
    assert rc == 1, err
    doc = json.loads(out)
    assert not any(p["feasible"] for p in doc["points"])
    real = _doc(cli, GB200)["points"]
    assert all(p["feasible"] for p in real)
    lo, hi = min(p["power_w"] for p in real), max(p["power_w"] for p in real)
    want = f"modelled power {lo:,.0f}-{hi:,.0f} W/chip > chip.tdp 2.5 W: the chip would throttle, which is not priced"
    assert {p["infeasible_reason"] for p in doc["points"]} == {want}
    assert doc["infeasible_reason"] == want
    rc, out, err = cli("evaluate", f)
    assert rc == 1 and "TDP 2.5 W" in out and "TDP 2 W" not in out  # not rounded to whole watts
    # a TDP between the lightest and the heaviest point: the points above it go, the others stay
    mid = (lo + hi) / 2
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[chip]\ntdp = "{mid} W"\n')
    rc, out, err = cli("evaluate", f, "--json")
    assert rc == 0, err
    for p, r in zip(json.loads(out)["points"], real):
        assert p["feasible"] == (r["power_w"] <= mid), (p, r)


def test_a_workload_slo_is_applied_by_evaluate(tmp_path, cli):
    """``[workload.slo]`` was accepted and ignored: ``ttft = "1 ns"`` printed every point feasible and
    the peak tok/s per kW of all of them, exit 0 (fresh-user trial, session 30). evaluate marks each
    point against it and takes the summary over the points that meet it; none meeting it is no
    result (exit 1). Expected points: GB200's own sweep (evaluated without an SLO), those with
    TTFT <= 100 ms and TPOT <= 5 ms, and the peak over them."""
    real = _doc(cli, GB200)["points"]
    f = tmp_path / "slo.toml"
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload.slo]\nttft = "100 ms"\ntpot = "5 ms"\n')
    rc, out, err = cli("evaluate", f, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["slo"] == {"ttft_s": 0.1, "tpot_s": 0.005}
    meets = [p["feasible"] and p["ttft_s"] <= 0.1 and p["tpot_s"] <= 0.005 for p in real]
    assert [p["meets_slo"] for p in doc["points"]] == meets and any(meets) and not all(meets)
    assert doc["summary"]["peak_mixed_tok_s_per_kw"] == pytest.approx(
        max(p["mixed_tok_s_per_kw"] for p, m in zip(real, meets) if m), rel=1e-6)
    # and the peak's operating point is the point that meets it
    assert doc["summary"]["peak_concurrency"] == peak_point([p for p, m in zip(real, meets) if m])["concurrency"]
    rc, out, err = cli("evaluate", f)
    assert rc == 0 and "TTFT <= 100 ms, TPOT <= 5 ms" in out and " SLO " in out
    f.write_text(f'include = ["{GB200.as_posix()}"]\n[workload.slo]\nttft = "1 ns"\n')
    rc, out, err = cli("evaluate", f, "--json")
    doc = json.loads(out)
    assert rc == 1 and not any(p["meets_slo"] for p in doc["points"])
    assert doc["summary"]["peak_mixed_tok_s_per_kw"] is None and doc["summary"]["peak_concurrency"] is None
    rc, out, err = cli("evaluate", f)
    assert rc == 1 and "none does" in out


def test_the_roofline_example_models_its_power_from_the_spec(tmp_path, cli):
    """The roofline example plugin took every chip at its TDP (``power_w = tdp``), so ``tdp = "1 W"``
    on GB200 was "feasible" at 344 M mixed tok/s per kW, exit 0 (fresh-user trial, session 31). It
    now models power from the spec's own energy figures, as the analytical model does, and the
    core refuses points above the TDP.

    Hand derivation from specs/technology/n4p.toml (its comments): GB200's modelled area is
    1099.4 mm², static 0.1364 W/mm² × 1099.4 mm² = 150.0 W; FP8 activations (the deployment) at
    5 PFLOP/s × 0.1457 pJ/FLOP = 728.5 W; HBM 8 TB/s × 3.9 pJ/bit = 249.6 W; NVLink 2 × 900 GB/s ×
    5 pJ/bit = 72 W: peak power 1200.1 W, the TDP the figures were derived from. At one user the
    roofline decode step is bound by HBM bandwidth, so the chip draws static + 249.6 W = 399.6 W
    while it decodes (its few FLOPs add about 2 W) and about 150 + 728.5 W during the prefill,
    about 3% of the request: within 10% of 399.6 W."""
    pytest.importorskip("codesign_roofline")
    roof = SPECS / "examples" / "gb200-gpt-oss-120b-roofline.toml"
    rc, out, err = cli("evaluate", roof, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["design"]["area_mm2"] == pytest.approx(1099.4, rel=1e-4)
    assert doc["design"]["peak_power_w"] == pytest.approx(150.0 + 728.5 + 249.6 + 72.0, rel=1e-3)
    pts = doc["points"]
    assert pts[0]["concurrency"] == 1 and pts[0]["power_w"] == pytest.approx(150.0 + 249.6, rel=0.10)
    power = [p["power_w"] for p in pts]
    assert all(a < b for a, b in zip(power, power[1:])) and max(power) <= doc["design"]["peak_power_w"]
    for p in pts:  # tok/s per kW on the modelled power, and energy per token, follow from power
        assert p["mixed_tok_s_per_kw_modelled"] == pytest.approx(p["mixed_tok_s_per_chip"] / (p["power_w"] / 1e3))
        assert p["energy_j_per_token"] == pytest.approx(p["power_w"] / p["mixed_tok_s_per_chip"])
    f = tmp_path / "roof1w.toml"
    f.write_text(f'include = ["{roof.as_posix()}"]\n[chip]\ntdp = "1 W"\n')
    rc, out, err = cli("evaluate", f, "--json")
    doc = json.loads(out)
    assert rc == 1 and not any(p["feasible"] for p in doc["points"])
    assert "modelled power" in doc["infeasible_reason"] and "> chip.tdp 1 W" in doc["infeasible_reason"]


def test_the_roofline_energy_per_token_does_not_depend_on_the_pipeline_split(tmp_path, cli):
    """With no static power, a token costs the FLOPs and bytes that produce it, whichever way the
    layers are split into pipeline stages: PP 2 moves the same weights and KV cache, on twice the
    chips, at the roofline's same step time (stages run one after the other). The first version of
    the roofline's power counted a stage's bytes on every chip of the replica, pp times over
    (0.0198, 0.0376, 0.0732 J per token at PP 1, 2, 4; fresh-user trial, session 32)."""
    pytest.importorskip("codesign_roofline")
    roof = SPECS / "examples" / "gb200-gpt-oss-120b-roofline.toml"
    per_token = {}
    for pp in (1, 2, 4):
        f = tmp_path / f"pp{pp}.toml"
        f.write_text(f'include = ["{roof.as_posix()}"]\n[chip.energy]\nstatic_per_area = "0 W/mm**2"\n'
                     f'[deployment]\ntp = 4\npp = {pp}\n[workload]\nconcurrency = [1, 64]\n')
        rc, out, err = cli("evaluate", f, "--json")
        assert rc == 0, err
        per_token[pp] = [p["energy_j_per_token"] for p in json.loads(out)["points"]]
    for pp in (2, 4):
        assert per_token[pp] == pytest.approx(per_token[1], rel=1e-6), per_token


def test_the_roofline_power_stays_within_the_chip_peak_power(tmp_path, cli):
    """A chip cannot draw more than every unit at its peak rate. The roofline's power charged each
    prefill a full read of the weights, for which its serving time gives no time of its own: at
    128-token prompts, 4-token outputs and thousands of users it reported 5,670-9,299 W per chip
    against a 1,200 W peak and called the points over the TDP (fresh-user trial, session 32). FLOPs
    run at most at the peak (E2E >= C x a request's FLOPs / peak) and decode bytes at most at HBM
    bandwidth (E2E >= (OSL - 1) x step time >= bytes / bandwidth), so power <= peak power (the KV
    cache of 132-token requests stays in HBM: no host-tier traffic)."""
    pytest.importorskip("codesign_roofline")
    roof = SPECS / "examples" / "gb200-gpt-oss-120b-roofline.toml"
    f = tmp_path / "short.toml"
    f.write_text(f'include = ["{roof.as_posix()}"]\n[workload]\nisl = 128\nosl = 4\n'
                 'concurrency = [1, 64, 1024, 16384]\n')
    rc, out, err = cli("evaluate", f, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert all(p["feasible"] for p in doc["points"]), doc["infeasible_reason"]
    assert max(p["power_w"] for p in doc["points"]) <= doc["design"]["peak_power_w"]


def test_an_unknown_cost_model_beside_efficiency_from_is_named_as_unknown(cli, tmp_path):
    """A misspelt model (``--cost-model foo``, ``deployment.cost_model = "analytic"``) beside
    ``efficiency_from`` was refused as one that "does not read its knobs", with the advice to remove
    efficiency_from (fresh-user trial, session 40); it is named as unregistered, as it is beside an
    [efficiency] table or with no knobs at all."""
    inc = f'include = ["{GB200.as_posix()}"]\n'
    base = tmp_path / "from.toml"
    base.write_text(inc + 'efficiency_from = "gb200"\n')
    typo = tmp_path / "typo.toml"
    typo.write_text(inc + 'efficiency_from = "gb200"\n[deployment]\ncost_model = "analytic"\n')
    for args, key, name in (((base, "--cost-model", "foo"), "--cost-model", "foo"),
                            ((typo,), "deployment.cost_model", "analytic")):
        rc, out, err = cli("evaluate", *args)
        assert rc == 2 and f"{key}: no cost model named {name!r} is registered" in err, err
        assert "does not read its knobs" not in err, err


def test_knobs_of_the_analytical_model_are_refused_under_a_cost_model_that_reads_none(cli, tmp_path):
    """``evaluate --cost-model roofline`` on a spec with ``efficiency_from = "gb200"`` or an
    ``[efficiency]`` table priced without the knobs and said nothing (fresh-user trial, session 40),
    as ``validate --calibration`` with another model did; so did ``deployment.cost_model =
    "roofline"`` beside ``[efficiency]``, in optimize and sweep too. Each is refused (exit 2) naming
    the file, the key, the model chosen and what to do; the analytical model, chosen by the spec or
    by --cost-model (auto included), still takes them."""
    pytest.importorskip("codesign_roofline")
    inc = f'include = ["{GB200.as_posix()}"]\n'
    base = tmp_path / "from.toml"
    base.write_text(inc + 'efficiency_from = "gb200"\n')
    own = tmp_path / "own.toml"
    own.write_text(inc + "[efficiency]\ncompute_decode = 0.5\n")
    roof = tmp_path / "roof.toml"
    roof.write_text(inc + '[deployment]\ncost_model = "roofline"\n[efficiency]\ncompute_decode = 0.5\n')
    refused = [
        ((base, "--cost-model", "roofline"),
         f"{base}: efficiency_from: baseline 'gb200' calibrates cost model 'analytical', and --cost-model "
         "'roofline' does not read its knobs; remove efficiency_from or drop --cost-model (the spec's "
         "deployment.cost_model, 'analytical', reads them)"),
        ((own, "--cost-model", "roofline"),
         f"{own}: efficiency: [efficiency] sets compute_decode, and --cost-model 'roofline' reads no efficiency "
         "knobs (it would price without them); remove [efficiency] or drop --cost-model (the spec's "
         "deployment.cost_model, 'analytical', reads them)"),
        ((roof,),
         f"{roof}: efficiency: [efficiency] sets compute_decode, and deployment.cost_model 'roofline' reads no "
         "efficiency knobs (it would price without them); remove [efficiency] or choose a deployment.cost_model "
         "that reads them"),
    ]
    for args, message in refused:
        for extra in ((), ("--json",)):
            rc, out, err = cli("evaluate", *args, *extra)
            assert rc == 2 and message in err and "Traceback" not in err, (args, err)
    # the knobs change the analytical model's figures (else the refusals guard nothing) ...
    plain = _doc(cli, GB200)["summary"]["min_tpot_s"]
    calibrated = _doc(cli, base)["summary"]["min_tpot_s"]
    assert calibrated != pytest.approx(plain, rel=1e-3)
    # ... and it takes them whoever chooses it: the spec, --cost-model analytical or auto, or
    # --cost-model analytical over a spec whose own model is the roofline (refused before: its
    # efficiency_from was judged against deployment.cost_model, not the model that prices)
    for args in ((base, "--cost-model", "analytical"), (base, "--cost-model", "auto")):
        rc, out, err = cli("evaluate", *args, "--json")
        assert rc == 0 and json.loads(out)["summary"]["min_tpot_s"] == calibrated, err
    roof_from = tmp_path / "roof-from.toml"
    roof_from.write_text(inc + 'efficiency_from = "gb200"\n[deployment]\ncost_model = "roofline"\n')
    rc, out, err = cli("evaluate", roof_from, "--cost-model", "analytical", "--json")
    assert rc == 0 and json.loads(out)["summary"]["min_tpot_s"] == calibrated, err
    rc, out, err = cli("evaluate", roof_from)
    assert rc == 2 and (f"{roof_from}: efficiency_from: baseline 'gb200' calibrates cost model 'analytical', and "
                        "deployment.cost_model 'roofline' does not read its knobs; remove efficiency_from or set "
                        "deployment.cost_model = 'analytical'") in err, err


def test_the_table_cuts_no_number_of_a_huge_concurrency(cli, tmp_path, monkeypatch):
    """``concurrency = [1, 1000000000]`` printed "10000000…" and "13,353,0…" at the default 80-column
    terminal (session 42): rich narrowed every column alike to fit. Each column is now as wide as
    its longest number, the headers wrap between words, and the table keeps to the 132 columns
    evaluate prints at; the TTFT and E2E cells are --json's figures, in days from 1000 s (they
    were "13,353,081,000" ms: session 44), to 3 significant digits. The concurrency is written
    "1,000,000,000", thousands separated as the numbers of the other columns (it was "1000000000"
    beside a decode batch of "7,435": fresh-user trial, session 45), and 1 is "1"."""
    monkeypatch.setenv("COLUMNS", "80")
    spec = tmp_path / "huge.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[workload]\nconcurrency = [1, 1000000000]\n')
    rc, out, err = cli("evaluate", spec)
    assert rc == 0, err
    row = next((line for line in out.splitlines() if " 1,000,000,000 " in line), None)
    assert row and "…" not in out and all(len(line) <= 132 for line in out.splitlines()), out
    doc = _doc(cli, spec)
    huge = doc["points"][1]
    assert huge["concurrency"] == 1_000_000_000
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[0] == "1,000,000,000" and cells[1] == f"{huge['ttft_s'] / 86400:.3g} days", row
    assert cells[3] == f"{huge['e2e_latency_s'] / 86400:.3g} days", row
    one = next(line for line in out.splitlines() if re.match(r"^│\s+1 │", line))
    assert [c.strip() for c in one.strip("│ ").split("│")][0] == "1", one



#: A design with no [deployment] anywhere: GB200 serving gpt-oss-120b at 8k/1k, without the example's
#: deployments/gpt-oss-120b-tp8.toml.
_NO_DEPLOYMENT = ("include = [" + ", ".join(f'"{(SPECS / f).as_posix()}"' for f in (
    "hardware/gb200.toml", "models/gpt-oss-120b.toml", "workloads/inferencemax-8k1k.toml")) + "]\n")


def test_a_spec_without_a_deployment_is_told_the_defaults_it_takes(cli, tmp_path):
    """Without [deployment] a spec was priced at TP 1, BF16 weights and the analytical model without a
    word (fresh-user trial, session 44): codesign.spec.Deployment's defaults, tp = 1,
    weights_format = "bf16", cost_model = "analytical", now said in one note on stderr. At those
    defaults gpt-oss-120b's 116.83B parameters (OpenAI's model card) are 233.7 GB of BF16 on one
    chip, more than GB200's 186 GB of HBM (specs/hardware/gb200.toml): no point is feasible, which
    the note explains."""
    spec = tmp_path / "nodep.toml"
    spec.write_text(_NO_DEPLOYMENT)
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 1 and f'note: {spec} has no [deployment]; using tp = 1, weights_format = "bf16", ' \
                       'cost_model = "analytical"' in err.splitlines(), err
    doc = json.loads(out)
    assert (doc["deployment"]["tp"], doc["deployment"]["weights_format"], doc["cost_model"]["name"]) == \
        (1, "bf16", "analytical")
    assert doc["infeasible_reason"].startswith("weights need 233.7 GB per chip"), doc["infeasible_reason"]
    # a cost model named on the command line is no default
    rc, out, err = cli("evaluate", spec, "--cost-model", "analytical", "--json")
    assert f'note: {spec} has no [deployment]; using tp = 1, weights_format = "bf16"' in err.splitlines(), err
    # a [deployment] table, even of one key, says what the spec means: no note
    spec.write_text(_NO_DEPLOYMENT + "[deployment]\ntp = 8\n")
    rc, out, err = cli("evaluate", spec, "--json")
    assert "no [deployment]" not in err and rc == 0, err


def test_a_deployment_that_sets_no_weights_format_is_told_the_model_s_native_one(cli, tmp_path):
    """A [deployment] of tp = 8 alone priced gpt-oss-120b's experts in BF16 (moe_weights_format
    defaults to weights_format, "bf16"), although the model declares native_moe_weights_format =
    "mxfp4" (specs/models/gpt-oss-120b.toml), without a word (fresh-user trial, session 44). A note
    now names the format taken, the model's, and the key to set. Hand check of what it changes: the
    experts are 36 layers x 128 experts x 3 GEMMs of 2880 x 2880 = 114.7B of the model's 116.8B
    parameters (OpenAI's model card); at 2 bytes (BF16) against 4.25 bits (MXFP4: 4-bit elements and
    one 8-bit scale per 32) the weights shrink by (2 x 116.8) / (0.53125 x 114.7 + 2 x 2.17) = 3.58x."""
    spec = tmp_path / "tp8.toml"
    spec.write_text(_NO_DEPLOYMENT + "[deployment]\ntp = 8\n")
    rc, out, err = cli("evaluate", spec, "--json")
    model = (SPECS / "models/gpt-oss-120b.toml").as_posix()
    note = (f'note: {spec} sets no deployment.moe_weights_format, so the MoE expert weights are priced in "bf16" '
            f'(it defaults to deployment.weights_format), not the model\'s native "mxfp4" '
            f'(model.native_moe_weights_format in {model}); set moe_weights_format = "mxfp4" in [deployment] '
            'to price them as released')
    assert rc == 0 and note in err.splitlines(), err
    bf16 = json.loads(out)["design"]["weights_bytes_per_chip"]
    # set as the note says: no note, and the weights as the hand check above
    spec.write_text(_NO_DEPLOYMENT + '[deployment]\ntp = 8\nmoe_weights_format = "mxfp4"\n')
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 0 and "note:" not in err, err
    assert 3.4 < bf16 / json.loads(out)["design"]["weights_bytes_per_chip"] < 3.7
    # weights_format set alone: the experts follow it (fp8_e4m3), and the note says so
    spec.write_text(_NO_DEPLOYMENT + '[deployment]\ntp = 8\nweights_format = "fp8_e4m3"\n')
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 0 and note.replace('in "bf16"', 'in "fp8_e4m3"') in err.splitlines(), err
    # DeepSeek-R1's checkpoint is FP8 throughout (specs/models/deepseek-r1.toml): the weights_format
    # key alone is named, since the experts follow it
    spec.write_text(_NO_DEPLOYMENT.replace("gpt-oss-120b.toml", "deepseek-r1.toml") + "[deployment]\ntp = 8\n")
    rc, out, err = cli("evaluate", spec, "--json")
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert notes == [f'note: {spec} sets no deployment.weights_format, so the weights are priced in "bf16" (its '
                     'default), not the model\'s native "fp8_e4m3" (model.native_weights_format in '
                     f'{(SPECS / "models/deepseek-r1.toml").as_posix()}); set weights_format = "fp8_e4m3" in '
                     '[deployment] to price them as released'], err
    # a model with no experts gets no MoE note, and one whose native format is taken none at all
    spec.write_text(_NO_DEPLOYMENT.replace("gpt-oss-120b.toml", "llama-3.1-8b.toml") + "[deployment]\ntp = 8\n")
    rc, out, err = cli("evaluate", spec, "--json")
    assert "note:" not in err, err


def test_a_duration_in_microseconds_is_printed_in_mus():
    """The roofline plugin's evaluate printed "min TPOT: 80.4 us" (fresh-user trial), where every
    other line prints units as a person reads them (mm², not mm^2): a displayed duration below a
    millisecond is in µs. By hand: 8.04e-5 s = 80.4 µs; 2e-9 s = 2 ns; 0.0161 s = 16.1 ms; a spec
    string (format_quantity, which writes designs' TOML) keeps the ASCII "us" that pint reads."""
    from codesign.units import format_duration, format_quantity, parse_quantity

    assert format_duration(8.04e-5) == "80.4 µs"
    assert format_duration(2e-9) == "2 ns" and format_duration(0.0161) == "16.1 ms"
    assert format_quantity(8.04e-5, "s", digits=3) == "80.4 us"
    assert parse_quantity("80.4 µs", "s") == pytest.approx(8.04e-5)


def test_an_slo_no_point_meets_is_said_with_the_best_reached(cli, tmp_path):
    """A design whose feasible points all miss its SLO printed "—" and gave --json an
    infeasible_reason of null (fresh-user trial, session 48). The reason names the best value each
    missed bound's metric reaches. By hand: TPOTs 1.2 and 2 ms against TPOT <= 1 ms: best 1.2 ms;
    TTFTs 0.1 and 0.2 s meet TTFT <= 1 s (not said); a point at 0.9 ms meets it (None); no
    feasible point: the cost model's reason stands (None)."""
    import json

    from codesign.report import slo_miss_reason

    pts = {"tpot_s": [0.0012, 0.002], "ttft_s": [0.1, 0.2]}
    bounds = [("tpot_s", 0.001), ("ttft_s", 1.0)]
    assert slo_miss_reason(pts, [True, True], bounds) == "no concurrency meets the SLO: best TPOT 1.2 ms (TPOT <= 1 ms)"
    assert slo_miss_reason({"tpot_s": [0.0009, 0.002], "ttft_s": [0.1, 0.2]}, [True, True], bounds) is None
    assert slo_miss_reason(pts, [False, False], bounds) is None
    spec = tmp_path / "slo.toml"
    spec.write_text(f'include = ["{(SPECS / "examples" / "gb200-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[workload.slo]\ntpot = "0.1 ms"\n')  # far below any GB200 decode step
    rc, out, err = cli("evaluate", spec, "--json")
    why = json.loads(out)["infeasible_reason"]
    assert rc == 1 and why.startswith("no concurrency meets the SLO: best TPOT ") and why.endswith("(TPOT <= 100 µs)"), why
