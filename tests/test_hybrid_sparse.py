"""Hybrid linear-attention (Qwen3-Next / Qwen3.5 Gated DeltaNet) and sparse-attention (DeepSeek
sparse attention: GLM-5) models, checked by hand.

Config values: Qwen/Qwen3.5-397B-A17B ``config.json`` ``text_config`` as vendored in
ai-dynamo/aiconfigurator ``src/aiconfigurator/model_configs/Qwen--Qwen3.5-397B-A17B_config.json``
(commit 87fe4b0c). Module shapes: ``transformers/models/qwen3_next/modeling_qwen3_next.py``
(``Qwen3NextGatedDeltaNet``, ``Qwen3NextAttention``, ``Qwen3NextSparseMoeBlock``). Every expected
number is arithmetic written out below, not output of the code under test.

GLM-5: zai-org/GLM-5-FP8 ``config.json`` as vendored in ai-dynamo/aiconfigurator
``src/aiconfigurator/model_configs/zai-org--GLM-5-FP8_config.json`` (commit 691ec908), and its DSA
dimensions from ``aic-core/src/aiconfigurator_core/sdk/operations/dsa.py`` ``DSA_MODEL_DIMS``
(index_topk 2048, index_n_heads 32, index_head_dim 128); indexer shapes from DeepSeek-V3.2-Exp
``inference/model.py`` ``Indexer``. Published size: "744B parameters (40B active)" (Z.ai GLM-5
release).
"""

from __future__ import annotations

import math

import pytest

from codesign.arch import account
from codesign.spec import Model, spec_from_dict

QWEN35_TEXT = dict(
    name="qwen3.5-397b-a17b", architecture="qwen3_5_moe", hidden_size=4096, num_layers=60,
    vocab_size=248320, tie_word_embeddings=False, attention="gqa", num_attention_heads=32,
    num_kv_heads=2, head_dim=256, attn_output_gate=True,
    layer_types=["linear", "linear", "linear", "full"] * 15,
    linear_num_key_heads=16, linear_num_value_heads=64, linear_key_head_dim=128,
    linear_value_head_dim=128, linear_conv_kernel_dim=4,
    intermediate_size=1024, moe_layers=[True] * 60, num_experts=512, experts_per_token=10,
    moe_intermediate_size=1024, num_shared_experts=1,
)

# --- hand derivation (h = 4096)
EMBED = 248320 * 4096                                   # 1,017,118,720; lm_head the same (untied)
# Gated DeltaNet layer: in_proj_qkvz 4096 × (2·16·128 + 2·64·128) = 4096 × 20480; in_proj_ba
# 4096 × 2·64; out_proj 64·128 × 4096; conv1d (2·16·128 + 64·128) = 12288 channels × kernel 4;
# dt_bias + A_log 2·64; gated norm 128
LINEAR_LAYER = 4096 * 20480 + 4096 * 128 + 8192 * 4096 + 12288 * 4 + 128 + 128     # 118,014,208
# gated attention: q_proj 4096 → 2·32·256 (query + gate), k/v 4096 → 2·256 each, o 32·256 → 4096,
# q_norm and k_norm of head_dim each
FULL_LAYER = 4096 * 16384 + 2 * 4096 * 512 + 8192 * 4096 + 2 * 256                 # 104,858,112
EXPERT = 3 * 4096 * 1024                                 # gate, up, down: 12,582,912
MOE_LAYER = 512 * EXPERT + EXPERT + 512 * 4096           # routed + shared + router: 6,457,131,008
NORMS = 2 * 4096 * 60 + 4096
TOTAL = 2 * EMBED + 45 * LINEAR_LAYER + 15 * FULL_LAYER + 60 * MOE_LAYER + NORMS
ACTIVE = EMBED + 45 * LINEAR_LAYER + 15 * FULL_LAYER + 60 * (10 * EXPERT + EXPERT + 512 * 4096) + NORMS


def qwen35() -> Model:
    return spec_from_dict(dict(QWEN35_TEXT), cls=Model)


def decode_bytes_per_request(model: dict, *, isl: int, tp: int) -> float:
    """Bytes one more request adds to a decode step, per chip: the batch slope of the memory time on
    a probe chip of 1 TB/s at full efficiency (dense model: the weights read per step do not depend
    on the batch; a huge compute peak keeps the step memory-bound)."""
    from codesign.evaluation import evaluate

    dense = {k: v for k, v in model.items()
             if k not in ("moe_layers", "num_experts", "experts_per_token", "moe_intermediate_size",
                          "num_shared_experts")}
    spec = spec_from_dict({
        "chip": {"name": "probe", "tdp": "1000 W", "energy": {"static": "100 W"},
                 "peak_flops": {"bf16": "1e6 TFLOP/s", "fp8": "1e6 TFLOP/s"}},
        "memory": {"hbm": {"capacity": "10000 GB", "bandwidth": "1 TB/s"}},
        "network": {"scaleup_domain": 8, "scaleup_bandwidth": "1000 TB/s", "scaleup_latency": "0 us",
                    "scaleout_bandwidth": "100 Gb/s", "scaleout_latency": "5 us"},
        "model": dense,
        "workload": {"isl": isl, "osl": 100, "concurrency": [4, 64]},
        "deployment": {"mode": "aggregated", "tp": tp, "weights_format": "bf16", "kv_cache_format": "fp8_e4m3",
                       "activations_format": "bf16"},
        "efficiency": {"memory_bandwidth": 1.0},
    })
    ev = evaluate(spec)
    B = ev.points["decode_batch"][0]
    mem = ev.points["decode_memory_s"][0]
    return (mem[1] - mem[0]) / (B[1] - B[0]) * 1e12


def test_qwen35_parameter_counts_by_hand():
    a = account(qwen35())
    assert a.linear_attention_layers == 45
    assert a.attention_params == 45 * LINEAR_LAYER + 15 * FULL_LAYER
    assert a.total_params == TOTAL == 396_346_104_576
    assert a.active_params == ACTIVE


def test_qwen35_matches_the_published_size():
    # model card: "397B total, 17B activated" (whole billions: ±0.5B). The card counts the whole
    # checkpoint: our text backbone plus the vision tower (27 blocks of width 1152, MLP 4304:
    # 27 × (4·1152² + 2·1152·4304) ≈ 0.41B) and the per-layer shared-expert gates (60 × 4096), which
    # the accounting leaves out; "activated" counts the embedding lookup (Qwen's convention).
    vision = 27 * (4 * 1152**2 + 2 * 1152 * 4304)
    a = account(qwen35())
    assert abs(a.total_params + vision - 397e9) <= 0.5e9
    assert abs(a.active_params + a.embedding_params - 17e9) <= 0.5e9


def test_qwen35_cache_is_a_fixed_state_plus_full_layer_kv():
    a = account(qwen35())
    # only the 15 full-attention layers cache K and V per token: 2 kv heads × 256 × (K, V)
    assert a.kv_cache_elems_per_token == 15 * 2 * 2 * 256
    assert a.window_kv_cache_elems_per_token == 0
    # each linear layer keeps a (64 heads, 128, 128) recurrent state and a 3-step conv window
    assert a.recurrent_state_elems_per_request == 45 * 64 * 128 * 128
    assert a.conv_state_elems_per_request == 45 * 12288 * 3
    # decode attention FLOPs grow only with the full layers: 15 × (QK + PV) = 15 × 4 · 32 · 256
    assert a.attn_flops_per_ctx_decode_full == 15 * 4 * 32 * 256
    # state update + read-out per token: 45 layers × (64 heads × 7 · 128 · 128 + 2 · 4 · 12288)
    assert a.recurrent_flops_per_token == 45 * (64 * 7 * 128 * 128 + 2 * 4 * 12288)


def test_linear_layers_need_their_dimensions():
    bad = dict(QWEN35_TEXT)
    del bad["linear_key_head_dim"]
    with pytest.raises(Exception, match="linear"):
        spec_from_dict(bad, cls=Model)
    bad = dict(QWEN35_TEXT, linear_num_value_heads=60)   # 60 value heads over 16 key heads
    with pytest.raises(Exception, match="multiple"):
        spec_from_dict(bad, cls=Model)


def test_decode_pays_the_state_read_and_write_per_request():
    """The decode step's memory time grows with the batch by exactly the per-request cache traffic:
    the full layers' KV at the mean context plus the linear layers' state read AND written back
    (2 × state), each split over TP (KV over min(tp, kv heads) = 2, state over min(tp, key heads) = 8).

    (See :func:`decode_bytes_per_request` for the probe.)"""
    model = dict(QWEN35_TEXT, num_layers=8, layer_types=["linear", "linear", "linear", "full"] * 2,
                 intermediate_size=4096)
    per_req = decode_bytes_per_request(model, isl=1000, tp=8)
    ctx = 1000 + 100 / 2                                   # mean attended context in decode
    kv = 2 * (2 * 2 * 256) * ctx * 1 / 2                   # 2 full layers, fp8, split over 2 ranks
    state = 6 * (64 * 128 * 128 * 4 + 12288 * 3 * 2) / 8   # 6 linear layers, fp32 state + bf16 conv, over 8
    assert math.isclose(per_req, kv + 2 * state, rel_tol=1e-3)


GLM5 = dict(
    name="glm-5", architecture="glm_moe_dsa", hidden_size=6144, num_layers=78, vocab_size=154880,
    tie_word_embeddings=False, attention="mla", num_attention_heads=64, num_kv_heads=64, head_dim=64,
    q_lora_rank=2048, kv_lora_rank=512, qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256,
    index_topk=2048, index_n_heads=32, index_head_dim=128,
    intermediate_size=12288, moe_layers=[False] * 3 + [True] * 75, num_experts=256, experts_per_token=8,
    moe_intermediate_size=2048, num_shared_experts=1,
)
# --- hand derivation (h = 6144, 64 heads, q/k 192 + 64, v 256)
GLM_MLA = (6144 * 2048 + 2048 + 2048 * 64 * 256          # q_a, q_a_layernorm, q_b
           + 6144 * (512 + 64) + 512 + 512 * 64 * (192 + 256)   # kv_a, kv_a_layernorm, kv_b
           + 64 * 256 * 6144)                              # o
GLM_INDEXER = 2048 * 32 * 128 + 6144 * 128 + 2 * 128 + 6144 * 32   # wq_b, wk, k_norm, weights_proj
GLM_EXPERT = 3 * 6144 * 2048
GLM_TOTAL = (2 * 154880 * 6144 + 78 * (GLM_MLA + GLM_INDEXER) + 3 * 3 * 6144 * 12288
             + 75 * (256 * GLM_EXPERT + GLM_EXPERT + 256 * 6144) + 2 * 6144 * 78 + 6144)


def glm5() -> Model:
    return spec_from_dict(dict(GLM5), cls=Model)


def test_glm5_parameter_count_by_hand_and_published():
    a = account(glm5())
    assert a.attention_params == 78 * (GLM_MLA + GLM_INDEXER)
    assert a.total_params == GLM_TOTAL                    # 743,911,199,232
    assert abs(a.total_params - 744e9) <= 0.5e9           # published 744B (whole billions)


def test_glm5_sparse_attention_accounting():
    a = account(glm5())
    assert a.sparse_attention_topk == 2048
    assert a.kv_cache_elems_per_token == 78 * (512 + 64)  # the MLA latent: every token is cached
    assert a.indexer_cache_elems_per_token == 78 * 128    # one indexer key per token per layer
    assert a.indexer_flops_per_ctx == 78 * 2 * 32 * 128
    # decode at 8,000 context: MLA attends 2,048 positions, the indexer scores all 8,000
    dense = account(spec_from_dict({k: v for k, v in GLM5.items() if not k.startswith("index_")}, cls=Model))
    extra = a.decode_flops_per_token(8000) - dense.decode_flops_per_token(8000)
    per_pos = 78 * (2 * 64 * (512 + 64) + 2 * 64 * 512)   # absorbed MLA score + value per position
    idx_w = 2 * (2048 * 32 * 128 + 6144 * 128 + 6144 * 32)  # the indexer's GEMMs per token
    assert extra == pytest.approx(-per_pos * (8000 - 2048) + 78 * 2 * 32 * 128 * 8000 + 78 * idx_w)


def test_dsa_needs_all_three_keys_and_mla():
    with pytest.raises(Exception, match="index_topk"):
        spec_from_dict({k: v for k, v in GLM5.items() if k != "index_head_dim"}, cls=Model)
    with pytest.raises(Exception, match="MLA"):
        spec_from_dict(dict(QWEN35_TEXT, index_topk=2048, index_n_heads=32, index_head_dim=128), cls=Model)


def test_sparse_decode_reads_topk_entries_and_every_indexer_key():
    """Per request, a decode step reads the MLA latent of only index_topk positions but the indexer
    key (FP8 + an FP32 scale per 128) of every position: the batch slope of the memory time."""
    per_req = decode_bytes_per_request(dict(GLM5, num_layers=4, intermediate_size=4096), isl=8000, tp=1)
    ctx = 8000 + 100 / 2
    latent = 4 * (512 + 64) * 2048 * 1                    # 4 layers, 2,048 attended positions, fp8
    index_keys = 4 * 128 * (1 + 4 / 128) * ctx            # 4 layers, every position
    assert math.isclose(per_req, latent + index_keys, rel_tol=1e-3)


# ------------------------------------------------------------------ the importer
VENDORED = __import__("pathlib").Path(__file__).resolve().parents[1] / "specs" / "models" / "hf_configs"


def test_importer_reads_the_qwen35_text_config():
    from codesign.model_import import hf_config_to_model_table

    table = hf_config_to_model_table(VENDORED / "qwen3.5-397b-a17b.json")
    for key, value in QWEN35_TEXT.items():
        if key not in ("name", "architecture"):
            assert table[key] == (tuple(value) if isinstance(value, list) else value), key
    assert account(spec_from_dict(table, cls=Model)).total_params == TOTAL


def test_importer_reads_glm5_sparse_attention():
    from codesign.model_import import hf_config_to_model_table

    table = hf_config_to_model_table(VENDORED / "glm-5.json")
    assert (table["index_topk"], table["index_n_heads"], table["index_head_dim"]) == (2048, 32, 128)
    assert account(spec_from_dict(table, cls=Model)).total_params == GLM_TOTAL


def test_importer_refuses_a_dsa_config_without_its_indexer(tmp_path):
    import json

    from codesign.errors import CodesignError
    from codesign.model_import import hf_config_to_model_table

    cfg = json.loads((VENDORED / "glm-5.json").read_text())
    del cfg["index_topk"]
    f = tmp_path / "glm.json"
    f.write_text(json.dumps(cfg))
    with pytest.raises(CodesignError, match=r"glm.json: index_topk: missing"):
        hf_config_to_model_table(f)


def test_importer_derives_qwen3_next_layer_types_from_the_interval(tmp_path):
    """Qwen3-Next configs may omit layer_types: every full_attention_interval-th layer is full."""
    import json

    from codesign.model_import import hf_config_to_model_table

    cfg = json.loads((VENDORED / "qwen3.5-397b-a17b.json").read_text())["text_config"]
    del cfg["layer_types"]
    cfg.update(model_type="qwen3_next", num_hidden_layers=8, full_attention_interval=4)
    f = tmp_path / "next.json"
    f.write_text(json.dumps(cfg))
    table = hf_config_to_model_table(f)
    assert table["layer_types"] == ("linear", "linear", "linear", "full") * 2
    assert table["attn_output_gate"] is True


def test_model_show_json_reports_the_state_and_the_indexer(cli):
    """`codesign model show --json` carries what the table shows for the new token mixers."""
    import json

    specs = VENDORED.parent
    rc, out, _ = cli("model", "show", specs / "qwen3.5-397b-a17b.toml", "--json")
    assert rc == 0
    q = json.loads(out)
    assert q["linear_attention_layers"] == 45
    assert q["recurrent_state_elems_per_request"] == 45 * 64 * 128 * 128
    assert q["conv_state_elems_per_request"] == 45 * 12288 * 3
    g = json.loads(cli("model", "show", specs / "glm-5.toml", "--json")[1])
    assert (g["sparse_attention_topk"], g["indexer_cache_elems_per_token"]) == (2048, 78 * 128)
