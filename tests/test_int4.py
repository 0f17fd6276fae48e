"""Weight-only INT4 (``int4_g32``): the format, its pricing (W4A16), and the aiconfigurator rows
that use it (Kimi-K2.5 ``int4_wo`` on vLLM).

Expected values come from hand derivations written here (the format's definition in
compressed-tensors: ``scale = amax / 7.5`` rounded to BF16, codes ``clamp(round(x / scale), -8, 7)``,
ties to even; Kimi-K2's parameter counts from its config) or from a brute-force oracle written here
from that definition, never from running codesign.
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

import codesign
import codesign_mx
from codesign.errors import CodesignError, SpecError
from conftest import SPECS


def assert_same(y, want):
    """Exact float32 equality (NaN == NaN; -0.0 == +0.0)."""
    y = np.asarray(y)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.asarray(want, dtype=np.float32))


def block(*head, n=32):
    """One block of ``n`` float32 values: ``head`` then zeros."""
    x = np.zeros(n, np.float32)
    x[:len(head)] = head
    return x


# --------------------------------------------------------------------------------------------
# the format record

def test_int4_g32_record():
    from codesign.pluginmanager import PluginManager

    pm = PluginManager(load_entrypoints=False)
    pm.register(codesign_mx, name="mx")
    f = pm.number_formats["int4_g32"]
    assert isinstance(f, codesign.NumberFormat)
    # 4-bit codes + one 16-bit (BF16) scale per 32 elements: 4 + 16/32 = 4.5 bit, 0.5625 B
    assert f.bits_per_element == 4.5 and f.bytes_per_element == 0.5625
    assert f.block_size == 32 and f.per_tensor_bits == 0.0
    # no INT4 tensor-core peak on Hopper/Blackwell: W4A16 kernels run BF16 MMA
    assert f.compute_class == "bf16" and f.weight_only
    assert callable(f.quantize) and f.plugin == "mx"
    # every other format of the plugin takes activations
    assert not any(g.weight_only for name, g in pm.number_formats.items() if name != "int4_g32")


# --------------------------------------------------------------------------------------------
# hand-worked blocks

def test_hand_worked_block_with_exact_scale():
    # amax 7.5 -> scale 7.5 / 7.5 = 1.0 (exact in BF16), so y = the integer code
    x = block(7.5, -7.5, 2.5, 3.5, -0.5, 0.5, 1.25, -2.6, 6.9, -6.5, 0.0)
    # ties to even: 7.5 -> 8 -> clamp 7; -7.5 -> -8 (even, in range); 2.5 -> 2; 3.5 -> 4;
    # -0.5 -> -0; 0.5 -> 0; 1.25 -> 1; -2.6 -> -3; 6.9 -> 7; -6.5 -> -6
    want_even = block(7, -8, 2, 4, -0.0, 0, 1, -3, 7, -6, 0)
    assert_same(codesign_mx.quantize(x, "int4_g32"), want_even)
    # ties away from zero: 7.5 -> 8 -> 7; -7.5 -> -8; 2.5 -> 3; 3.5 -> 4; -0.5 -> -1; 0.5 -> 1;
    # -6.5 -> -7
    want_nearest = block(7, -8, 3, 4, -1, 1, 1, -3, 7, -7, 0)
    assert_same(codesign_mx.quantize(x, "int4_g32", rounding="nearest"), want_nearest)


def test_hand_worked_block_scale_rounds_to_bf16():
    # amax 1.5: 1.5 / 7.5 = 0.2 = 1.6 * 2^-3; 1.6 = 1.1001 1001 1001...b; BF16 keeps 7 fraction
    # bits: 1.1001100|11001... -> the dropped part is above half, round up -> 1.1001101b = 205/128,
    # so scale = 205/128 * 2^-3 = 205/1024 = 0.2001953125
    s = 205 / 1024
    x = block(1.5, -1.5, 0.75, 0.3, 0.1, -0.25)
    # 1.5/s = 7.4927 -> 7; -1.5/s -> -7 (not -8: the scale rounded up); 0.75/s = 3.7463 -> 4;
    # 0.3/s = 1.4985 -> 1; 0.1/s = 0.4995 -> 0; -0.25/s = -1.2488 -> -1
    want = block(7 * s, -7 * s, 4 * s, 1 * s, 0.0, -1 * s)
    assert_same(codesign_mx.quantize(x, "int4_g32"), want)


def test_scale_floor_zero_nan_and_independent_blocks():
    x = np.stack([
        block(1e-7, -5e-8),          # amax / 7.5 = 1.3e-8 < 2^-23: scale clamps to 2^-23 (float32 eps)
        block(),                     # all zero
        block(1.0, np.nan),          # a NaN makes the whole block NaN
        block(np.inf, 1.0),          # so does an Inf
        block(15.0, 1.0),            # scale 2.0: 15/2 = 7.5 -> 7 (clamp) -> 14; 1/2 = 0.5 -> 0
    ])
    y = np.asarray(codesign_mx.quantize(x, "int4_g32"))
    eps = 2.0 ** -23
    # 1e-7 / 2^-23 = 0.839 -> 1 -> 2^-23; -5e-8 / 2^-23 = -0.419 -> -0
    assert_same(y[0], block(eps, -0.0))
    assert_same(y[1], block())
    assert np.all(np.isnan(y[2])) and np.all(np.isnan(y[3]))
    assert_same(y[4], block(14.0, 0.0))
    # blocks run along the last axis: two blocks in one row are the two rows quantised apart
    two = np.concatenate([x[0], x[4]])[None]
    assert_same(np.asarray(codesign_mx.quantize(two, "int4_g32"))[0], np.concatenate([y[0], y[4]]))


def test_last_axis_must_be_a_multiple_of_32():
    with pytest.raises(ValueError, match="multiple of the block size 32"):
        codesign_mx.quantize(np.ones(48, np.float32), "int4_g32")


# --------------------------------------------------------------------------------------------
# brute-force oracle from the definition

def oracle(xb, rounding="even"):
    """One block, float32: BF16 scale of amax/7.5 (floor 2^-23), nearest of the 16 codes."""
    import ml_dtypes

    x = np.asarray(xb, np.float32)
    amax = np.max(np.abs(x))
    scale = np.float32(np.float32(amax) / np.float32(7.5)).astype(ml_dtypes.bfloat16).astype(np.float32)
    scale = max(scale, np.float32(2.0 ** -23))
    codes = np.arange(-8, 8, dtype=np.float64)
    out = np.empty(x.shape, np.float32)
    for i, v in enumerate((x / scale).astype(np.float64)):  # float32 quotient, as the kernel
        d = np.abs(codes - v)
        best = np.flatnonzero(d == d.min())
        if len(best) == 2:  # a tie between two codes
            if rounding == "even":
                j = best[0] if codes[best[0]] % 2 == 0 else best[1]
            else:
                j = best[np.argmax(np.abs(codes[best]))]
        else:
            j = best[0]
        out[i] = np.float32(codes[j]) * scale
    return out


def oracle_blocks():
    rng = np.random.default_rng(7)
    blocks = [rng.standard_normal(32) * 2.0 ** k for k in (-30, -8, -1, 0, 3, 12, 40)]
    blocks += [rng.laplace(size=32) * 2.0 ** k for k in (-5, 0, 6)]
    for k in (-4, 0, 2):  # exact ties: amax 7.5 * 2^k gives scale 2^k, the rest at half-integers
        t = rng.integers(-8, 8, size=32) + 0.5
        t[0] = 7.5
        blocks.append(t * 2.0 ** k)
    return np.array(blocks, np.float32)


@pytest.mark.parametrize("rounding", ["even", "nearest"])
def test_matches_bruteforce_oracle(rounding):
    x = oracle_blocks()
    y = np.asarray(codesign_mx.quantize(x, "int4_g32", rounding=rounding))
    assert_same(y, np.stack([oracle(b, rounding) for b in x]))


def test_jit_and_vmap():
    import jax

    q = {f.name: f for f in codesign_mx.codesign_number_formats()}["int4_g32"].quantize
    x = oracle_blocks()[:12].reshape(6, 64)  # two blocks per row
    want = np.asarray(q(x))
    assert_same(jax.jit(q)(x), want)
    assert_same(jax.vmap(q)(x), want)
    assert_same(jax.jit(lambda a: q(a, rounding="nearest"))(x), np.asarray(q(x, rounding="nearest")))


def test_numerics_cli_knows_int4_g32(cli):
    rc, out, err = cli("numerics", "formats", "--json")
    assert rc == 0, err
    import json

    rows = {r["name"]: r for r in json.loads(out)["formats"]}
    assert rows["int4_g32"]["bits_per_element"] == 4.5 and rows["int4_g32"]["block_size"] == 32
    assert rows["int4_g32"]["weight_only"] is True and rows["nvfp4"]["weight_only"] is False
    rc, out, err = cli("numerics", "error", "--format", "int4_g32", "--synthetic", "normal",
                       "--blocks", "64", "--json")
    assert rc == 0 and "Traceback" not in err, err
    doc = json.loads(out)
    assert doc["format"] == "int4_g32" and doc["n_elements"] == 64 * 32
    # N(0, 1) blocks of 32: the step is amax/7.5 and E[amax^2] is about 4.5 (E[amax] about 2.07).
    # Every error is at most half a step, so the noise is at most 4.5/(4 * 7.5^2) = 0.02 (SQNR at
    # least 10*log10(1/0.02) = 17 dB); uniform rounding noise, 4.5/(12 * 7.5^2) = 0.0067, would
    # give 21.8 dB
    assert 16.5 < doc["sqnr_db"] < 25


# --------------------------------------------------------------------------------------------
# pricing: W4A16 at the BF16 rate; activations refuse a weight-only format

def _spec_file(tmp_path, hardware, model, **deployment):
    lines = ["include = [",
             f"    {str(SPECS / 'hardware' / (hardware + '.toml'))!r},",
             f"    {str(SPECS / 'models' / (model + '.toml'))!r},",
             f"    {str(SPECS / 'workloads' / 'inferencemax-8k1k.toml')!r},",
             "]", "[deployment]", 'cost_model = "analytical"', 'mode = "aggregated"']
    lines += [f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in deployment.items()]
    p = tmp_path / f"{hardware}-{model}.toml"
    p.write_text("\n".join(lines).replace("'", '"') + "\n")
    return p


KIMI_INT4 = dict(tp=8, ep=1, dp_attention=1, weights_format="bf16", moe_weights_format="int4_g32",
                 kv_cache_format="bf16", activations_format="bf16")


@pytest.mark.parametrize("act", ["bf16", "fp8_e4m3"])
def test_int4_experts_run_at_the_bf16_rate(tmp_path, act):
    from codesign.pluginmanager import get_plugin_manager
    from codesign.spec import load_spec
    from codesign_analytical.model import AnalyticalModel

    spec = load_spec(_spec_file(tmp_path, "h200", "kimi-k2", **dict(KIMI_INT4, activations_format=act)))
    out, _ = AnalyticalModel().arrays(spec, get_plugin_manager().number_formats)
    # specs/hardware/h200.toml: bf16 = "989 TFLOP/s". A GEMM runs at min(weights class, activations
    # class): INT4 weights dequantised to BF16 cap it at the BF16 peak even under FP8 activations
    assert out["peak_mw"][0] == pytest.approx(989e12)
    assert out["mw_bytes"][0] == 0.5625 and out["w_bytes"][0] == 2.0
    # the expert GEMMs take the BF16 family's compute_scale knob
    assert out["mw_is_bf16"][0] == 1.0


def test_activations_refuse_a_weight_only_format(tmp_path, cli):
    from codesign.evaluation import check_names
    from codesign.pluginmanager import get_plugin_manager
    from codesign.spec import load_spec

    path = _spec_file(tmp_path, "h200", "kimi-k2", **dict(KIMI_INT4, activations_format="int4_g32"))
    rc, out, err = cli("evaluate", path)
    assert rc == 2 and "Traceback" not in err, err
    assert "deployment.activations_format" in err and "weight-only" in err and "'bf16'" in err, err
    # the same through override arrays (a search over activation formats), one line per problem
    spec = load_spec(_spec_file(tmp_path, "h200", "kimi-k2", **KIMI_INT4))
    over = {"deployment.activations_format": np.array(["bf16", "int4_g32"], dtype=object)}
    with pytest.raises(SpecError, match=r"deployment\.activations_format: 'int4_g32' is a weight-only"):
        check_names(spec, pm=get_plugin_manager(), overrides=over)
    # weights and MoE weights may use it (the KV cache may not: test below)
    check_names(spec, pm=get_plugin_manager(),
                overrides={"deployment.weights_format": np.array(["int4_g32"], dtype=object),
                           "deployment.moe_weights_format": np.array(["int4_g32"], dtype=object)})


def test_kv_cache_refuses_a_weight_only_format(tmp_path, cli):
    # the KV cache stores activations (the keys and values attention computes), so a weight-only
    # format, which no kernel writes activations in, is as misplaced there as for activations;
    # found by a review: it used to be priced silently at 4.5 bit per element
    from codesign.evaluation import check_names
    from codesign.pluginmanager import get_plugin_manager
    from codesign.spec import load_spec

    path = _spec_file(tmp_path, "h200", "kimi-k2", **dict(KIMI_INT4, kv_cache_format="int4_g32"))
    rc, out, err = cli("evaluate", path)
    assert rc == 2 and "Traceback" not in err and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    # one line: the file, the key path, what is wrong and what is expected instead
    assert lines[0].startswith(f"error: {path}: deployment.kv_cache_format: 'int4_g32' is a weight-only"), err
    assert "KV cache" in lines[0] and "'bf16'" in lines[0] and "'fp8_e4m3'" in lines[0], err
    # the same through override arrays (a sweep over KV cache formats), blamed on the key it came from
    spec = load_spec(_spec_file(tmp_path, "h200", "kimi-k2", **KIMI_INT4))
    over = {"deployment.kv_cache_format": np.array(["fp8_e4m3", "int4_g32"], dtype=object)}
    with pytest.raises(SpecError, match=r"deployment\.kv_cache_format: 'int4_g32' is a weight-only"):
        check_names(spec, pm=get_plugin_manager(), overrides=over)
    with pytest.raises(SpecError, match=r'search\.params\."deployment\.kv_cache_format": \'int4_g32\''):
        check_names(spec, pm=get_plugin_manager(), overrides=over,
                    override_keys={"deployment.kv_cache_format": 'search.params."deployment.kv_cache_format"'})
    # formats that hold activations stay accepted
    check_names(spec, pm=get_plugin_manager(),
                overrides={"deployment.kv_cache_format": np.array(["bf16", "fp8_e4m3", "nvfp4"], dtype=object)})


def test_kimi_k2_int4_expert_weight_bytes_by_hand(tmp_path):
    """Weights per GPU of Kimi-K2 served TP 8, EP 1 (the aiconfigurator vLLM rows) with BF16
    attention/dense/lm_head/embedding and int4_g32 experts, from specs/models/kimi-k2.toml:

    hidden h = 7168, 61 layers (layer 0 dense, 60 MoE), 64 heads, q_lora 1536, kv_lora 512,
    qk_nope 128, qk_rope 64, v 128, intermediate 18432, 384 experts of moe_intermediate 2048, 1
    shared expert, vocab 163840, untied, router bias.

    MLA per layer (DeepSeek-V3 §2.1.1): q_a 7168·1536 = 11,010,048; q_b 1536·64·192 = 18,874,368;
    kv_a 7168·576 = 4,128,768; kv_b 512·64·256 = 8,388,608; o 64·128·7168 = 58,720,256; sum
    101,122,048 + the q_a/kv_a norms 1536 + 512 = 101,124,096; × 61 = 6,168,569,856.
    lm_head 163840·7168 = 1,174,405,120 (and the same again for the input embedding).
    Dense FFN (layer 0): 3·7168·18432 = 396,361,728. Router: 60·(384·7168 + 384) = 165,173,760.
    Norms: 2·7168·61 + 7168 = 881,664.
    BF16 part: 6,168,569,856 + 1,174,405,120 + 396,361,728 + 165,173,760 + 881,664 + 1,174,405,120
    = 9,079,797,248 parameters × 2 B / 8 GPUs = 2,269,949,312 B.
    Experts: one is 3·7168·2048 = 44,040,192; routed 60·384 of them = 1,014,686,023,680, shared
    60 = 2,642,411,520 (the model prices shared experts in the MoE format): 1,017,328,435,200
    parameters × 4.5/8 B / 8 GPUs = 71,530,905,600 B.
    Total 73,800,854,912 B per GPU (590.4 GB for the 8; with the shared experts in BF16, as the
    checkpoint stores them, 2,642,411,520 × 1.4375 B more = 594.2 GB).
    """
    from codesign.evaluation import evaluate
    from codesign.spec import load_spec

    ev = evaluate(load_spec(_spec_file(tmp_path, "h200", "kimi-k2", **KIMI_INT4)))
    # the model computes in float32 (24-bit significand): a relative 1e-6 allows its rounding
    assert ev.design["weights_bytes_per_chip"][0] == pytest.approx(73_800_854_912, rel=1e-6)
    # against FP8 experts (the Kimi-K2-Instruct checkpoint) only the expert bytes change:
    # 1,017,328,435,200 × (1 - 0.5625) B / 8 = 55,635,148,800 B more per GPU
    ev8 = evaluate(load_spec(_spec_file(tmp_path, "h200", "kimi-k2",
                                        **dict(KIMI_INT4, moe_weights_format="fp8_e4m3"))))
    assert ev8.design["weights_bytes_per_chip"][0] - ev.design["weights_bytes_per_chip"][0] == \
        pytest.approx(55_635_148_800, rel=1e-6)


# --------------------------------------------------------------------------------------------
# the aiconfigurator int4_wo rows

def _int4_rows(shared_data):
    with open(shared_data / "measured" / "aiconfigurator_silicon_public.csv", newline="") as f:
        r = csv.DictReader(f)
        return [row for row in r if "int4_wo" in (row["gemm_quant_mode"], row["moe_quant_mode"])], r.fieldnames


def _write(path, rows, cols):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    return path


def test_int4_wo_rows_are_priced(shared_data, tmp_path, cli):
    rows, cols = _int4_rows(shared_data)
    # the file's int4_wo rows: Kimi-K2.5 on vLLM, aggregated, 30 on h200_sxm and 25 on b200_sxm
    assert len(rows) == 55
    assert {r["model_path"] for r in rows} == {"moonshotai/Kimi-K2.5"}
    assert sorted(r["system"] for r in rows).count("h200_sxm") == 30
    src = _write(tmp_path / "int4.csv", rows, cols)
    from codesign.validate import read_measured

    _, pts = read_measured(src)
    for p in pts:
        # Kimi's INT4 release: routed experts only; attention, shared/dense MLP, lm_head BF16;
        # weight-only (BF16 activations); vLLM's kv_cache_dtype auto = the model dtype, BF16
        assert p.formats == dict(weights="bf16", moe="int4_g32", kv="bf16", act="bf16"), p.id
    rc, out, err = cli("validate", src, "--out", tmp_path / "val")
    assert rc == 0 and "Traceback" not in err, err
    with open(tmp_path / "val" / "predictions.csv", newline="") as f:
        pred = list(csv.DictReader(f))
    assert len(pred) == 55
    for r in pred:
        assert r["status"] == "ok", (r["id"], r["status"])
        for col in ("pred_ttft_ms", "pred_tpot_ms"):
            assert math.isfinite(float(r[col])) and float(r[col]) > 0, (r["id"], col, r[col])


def test_int4_wo_goes_where_the_release_puts_it(shared_data, tmp_path):
    from codesign.validate import read_measured

    rows, cols = _int4_rows(shared_data)
    base = rows[0]
    variants = [
        dict(base, id="dense", model_path="Qwen/Qwen3-32B"),            # dense: INT4 on its weights
        dict(base, id="moe", model_path="Qwen/Qwen3-235B-A22B"),        # MoE, INT4 release unknown
        dict(base, id="mixed", gemm_quant_mode="fp8"),                  # FP8 GEMMs + INT4 experts
    ]
    by = {p.id: p for p in read_measured(_write(tmp_path / "v.csv", variants, cols))[1]}
    assert by["dense"].status == "ok"
    assert by["dense"].formats == dict(weights="int4_g32", moe="int4_g32", kv="bf16", act="bf16")
    assert by["moe"].status.startswith("unsupported: int4_wo on Qwen/Qwen3-235B-A22B"), by["moe"].status
    assert by["mixed"].status.startswith("unsupported: number format int4_wo mixed with fp8")
    # the release decides, not the architecture: a third-party INT4 export of Kimi-K2-Instruct
    # (same kimi-k2 spec) is not known to keep attention and shared experts in BF16
    from codesign.validate import Point, _int4_wo_formats

    other = Point(id="x", schema="aiconfigurator", system="h200_sxm", framework="vllm",
                  model_name="RedHatAI/Kimi-K2-Instruct-quantized.w4a16", model="kimi-k2")
    assert _int4_wo_formats(other, "int4_wo", "int4_wo").startswith("unsupported: int4_wo on RedHatAI/")
    thinking = Point(id="y", schema="aiconfigurator", system="h200_sxm", framework="vllm",
                     model_name="moonshotai/Kimi-K2-Thinking", model="kimi-k2")
    assert _int4_wo_formats(thinking, "int4_wo", "int4_wo") == dict(weights="bf16", moe="int4_g32",
                                                                    kv="bf16", act="bf16")


def test_unknown_format_still_refused():
    with pytest.raises(CodesignError, match="int4_g32"):
        codesign_mx.quantize(np.ones(32, np.float32), "int4_g64")
