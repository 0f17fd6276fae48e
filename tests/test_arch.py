"""Architecture accounting and the HF importer, checked against hand derivations.

Every expected number below is written out as arithmetic from the released ``config.json`` and the
HF modeling files (see :mod:`codesign.arch`), independently of the code under test, and the totals
are compared with the published figures at the tolerance their rounding allows:

* gpt-oss-120b: 116.83B total, 5.13B active (OpenAI gpt-oss model card table; 2 decimals → ±0.005B)
* DeepSeek-R1 (= V3 architecture): 671B total excluding the 14B MTP module, 37B active (DeepSeek-V3
  technical report; whole billions → ±0.5B)
* Llama-3.1-70B: 70.6B (one decimal → ±0.05B); Llama-3.1-8B: 8.0B (±0.05B)
* Kimi-K2: 1.04T total, 32B active (Kimi K2 report; ±0.005T and ±0.5B)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs
import pytest

from codesign.arch import Accounting, account
from codesign.errors import CodesignError
from codesign.model_import import hf_config_to_model_table, model_toml
from codesign.spec import Model, load_raw, spec_from_dict

REPO = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    env = os.environ.get("CODESIGN_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


HF = shared_data() / "hf_configs"
CONFIGS = sorted(HF.glob("*.json")) if HF.is_dir() else []
needs_data = pytest.mark.skipif(not CONFIGS, reason=f"no HF configs in {HF}")


def acc(name: str) -> Accounting:
    return account(spec_from_dict(hf_config_to_model_table(HF / f"{name}.json"), cls=Model))


# ------------------------------------------------------------------ hand derivations per model
# Llama (modeling_llama): attention q,k,v,o without bias; gated MLP gate/up/down without bias;
# two RMSNorms per layer + final norm; untied embedding and lm_head.
def llama(h, L, V, H, kv, d, inter):
    attn = h * H * d + h * kv * d + h * kv * d + H * d * h
    mlp = 3 * h * inter
    return dict(embed=V * h, lm_head=V * h, attn=L * attn, dense=L * mlp, norms=2 * h * L + h)


LLAMA_8B = llama(h=4096, L=32, V=128256, H=32, kv=8, d=128, inter=14336)
LLAMA_70B = llama(h=8192, L=80, V=128256, H=64, kv=8, d=128, inter=28672)

# gpt-oss-120b (modeling_gpt_oss): biased q (2880→64·64), k, v (2880→8·64), o (4096→2880),
# 64 sinks per layer; router 2880→128 with bias; experts gate_up (2880×5760 + 5760 bias) and
# down (2880×2880 + 2880 bias).
GPTOSS_ATTN_LAYER = (2880 * 4096 + 4096) + 2 * (2880 * 512 + 512) + (4096 * 2880 + 2880) + 64
GPTOSS_EXPERT = (2880 * 2 * 2880 + 2 * 2880) + (2880 * 2880 + 2880)
GPTOSS_ROUTER_LAYER = 2880 * 128 + 128
GPTOSS = dict(embed=201088 * 2880, lm_head=201088 * 2880, attn=36 * GPTOSS_ATTN_LAYER,
              routed=36 * 128 * GPTOSS_EXPERT, router=36 * GPTOSS_ROUTER_LAYER,
              norms=2 * 2880 * 36 + 2880)


# DeepSeek-V3 / Kimi-K2 (DeepSeek-V3 report §2.1, modeling_deepseek): per layer
# q_a 7168×1536, q_a_norm 1536, q_b 1536×H·(128+64), kv_a 7168×(512+64), kv_a_norm 512,
# kv_b 512×H·(128+128), o H·128×7168; dense MLP 3·7168·18432; expert 3·7168·2048;
# gate E×7168 + e_score_correction_bias E.
def mla_moe(H, E, L, first_dense, V, k=8):
    attn_layer = (7168 * 1536 + 1536 + 1536 * H * 192 + 7168 * 576 + 512 + 512 * H * 256
                  + H * 128 * 7168)
    n_moe = L - first_dense
    expert = 3 * 7168 * 2048
    d = dict(embed=V * 7168, lm_head=V * 7168, attn=L * attn_layer,
             dense=first_dense * 3 * 7168 * 18432, shared=n_moe * expert,
             routed=n_moe * E * expert, router=n_moe * (E * 7168 + E), norms=2 * 7168 * L + 7168)
    d["active"] = (d["lm_head"] + d["attn"] + d["dense"] + d["shared"] + n_moe * k * expert
                   + d["router"] + d["norms"])
    return d


DEEPSEEK = mla_moe(H=128, E=256, L=61, first_dense=3, V=129280)
KIMI = mla_moe(H=64, E=384, L=61, first_dense=1, V=163840)


def total(d):
    return sum(v for k, v in d.items() if k != "active")


@needs_data
@pytest.mark.parametrize("name, d", [("llama-3.1-8b", LLAMA_8B), ("llama-3.1-70b", LLAMA_70B)])
def test_llama_parameters(name, d):
    a = acc(name)
    assert a.embedding_params == d["embed"]
    assert a.lm_head_params == d["lm_head"]
    assert a.attention_params == d["attn"]
    assert a.dense_ffn_params == d["dense"]
    assert a.norm_params == d["norms"]
    assert a.routed_expert_params == a.shared_expert_params == a.router_params == 0
    assert (a.num_experts, a.experts_per_token, a.n_moe_layers) == (0, 0, 0)
    assert a.total_params == total(d)
    assert a.active_params == total(d) - d["embed"]


@needs_data
def test_llama_exact_counts():
    # the per-module products in total(LLAMA_8B) / total(LLAMA_70B) above; Hugging Face's model
    # pages list 8.03B and 70.55B
    assert acc("llama-3.1-8b").total_params == 8_030_261_248
    assert acc("llama-3.1-70b").total_params == 70_553_706_496


@needs_data
def test_gpt_oss_parameters():
    a = acc("gpt-oss-120b")
    d = GPTOSS
    assert a.attention_params == d["attn"] == 955_805_184          # card: 0.96B attention
    assert a.params_per_routed_expert == GPTOSS_EXPERT == 24_891_840
    assert a.routed_expert_params == d["routed"]
    assert a.router_params == d["router"]
    assert a.routed_expert_params + a.router_params == 114_714_874_368  # card: 114.71B MLP
    assert a.embedding_params + a.lm_head_params == 1_158_266_880      # card: 1.16B embed+unembed
    assert a.norm_params == d["norms"]
    assert a.dense_ffn_params == a.shared_expert_params == 0
    assert (a.num_experts, a.experts_per_token, a.n_moe_layers) == (128, 4, 36)
    assert a.total_params == total(d) == 116_829_156_672
    active = d["lm_head"] + d["attn"] + d["router"] + 36 * 4 * GPTOSS_EXPERT + d["norms"]
    assert a.active_params == active == 5_132_849_472


@needs_data
@pytest.mark.parametrize("name, d, E", [("deepseek-r1", DEEPSEEK, 256), ("kimi-k2-instruct", KIMI, 384)])
def test_mla_moe_parameters(name, d, E):
    a = acc(name)
    assert a.embedding_params == d["embed"]
    assert a.attention_params == d["attn"]
    assert a.dense_ffn_params == d["dense"]
    assert a.shared_expert_params == d["shared"]
    assert a.routed_expert_params == d["routed"]
    assert a.router_params == d["router"]
    assert a.norm_params == d["norms"]
    assert a.params_per_routed_expert == 3 * 7168 * 2048
    assert (a.num_experts, a.experts_per_token) == (E, 8)
    assert a.total_params == total(d)
    assert a.active_params == d["active"]


@needs_data
def test_mla_exact_counts():
    # DeepSeek-V3's 671B main model (the 685B checkpoint adds the MTP module); the values are the
    # per-module products of total(DEEPSEEK) and total(KIMI) above, written out there.
    assert acc("deepseek-r1").total_params == 671_026_419_200
    assert acc("deepseek-r1").n_moe_layers == 61 - 3
    assert acc("kimi-k2-instruct").total_params == 1_026_408_232_448
    assert acc("kimi-k2-instruct").n_moe_layers == 61 - 1


# ------------------------------------------------------------------ published counts
PUBLISHED = [
    # (config, field, published figure, half of the last published digit)
    ("gpt-oss-120b", "total_params", 116.83e9, 0.005e9),
    ("gpt-oss-120b", "active_params", 5.13e9, 0.005e9),
    ("deepseek-r1", "total_params", 671e9, 0.5e9),
    ("deepseek-r1", "active_params", 37e9, 0.5e9),
    ("llama-3.1-70b", "total_params", 70.6e9, 0.05e9),
    ("llama-3.1-8b", "total_params", 8.0e9, 0.05e9),
    ("kimi-k2-instruct", "active_params", 32e9, 0.5e9),
    pytest.param(
        "kimi-k2-instruct", "total_params", 1.04e12, 0.005e12,
        marks=pytest.mark.xfail(strict=True, reason=(
            "exact count from the config is 1.0264T, 1.3% below the report's 1.04T; the gap "
            "(8.6B to 18.6B given the rounding) fits one more MoE layer (17.1B), e.g. an MTP "
            "layer absent from the released config (num_nextn_predict_layers = 0). Not fudged."))),
]


@needs_data
@pytest.mark.parametrize("name, field, published, tol", PUBLISHED)
def test_published_counts(name, field, published, tol):
    value = getattr(acc(name), field)
    assert abs(value - published) <= tol, f"{name} {field} = {value:,} vs published {published:,}"


# ------------------------------------------------------------------ KV cache and FLOPs
@needs_data
@pytest.mark.parametrize("name, unbounded, window, sw", [
    ("deepseek-r1", 61 * (512 + 64), 0, None),            # 35,136: MLA latent + rope key
    ("kimi-k2-instruct", 61 * (512 + 64), 0, None),       # KV heads (64) irrelevant for MLA
    ("llama-3.1-70b", 80 * 2 * 8 * 128, 0, None),         # 163,840
    ("llama-3.1-8b", 32 * 2 * 8 * 128, 0, None),          # 65,536
    ("gpt-oss-120b", 18 * 2 * 8 * 64, 18 * 2 * 8 * 64, 128),  # 18,432 + 18,432 (≤ 128 tokens)
])
def test_kv_cache(name, unbounded, window, sw):
    a = acc(name)
    assert a.kv_cache_elems_per_token == unbounded
    assert a.window_kv_cache_elems_per_token == window
    assert a.sliding_window == sw


@needs_data
@pytest.mark.parametrize("name, pre_full, pre_win, dec_full, dec_win", [
    # MLA prefill: 2·H·(128+64) + 2·H·128; decode (absorbed): 2·H·(512+64) + 2·H·512
    ("deepseek-r1", 61 * (2 * 128 * 192 + 2 * 128 * 128), 0,
     61 * (2 * 128 * 576 + 2 * 128 * 512), 0),
    ("kimi-k2-instruct", 61 * (2 * 64 * 192 + 2 * 64 * 128), 0,
     61 * (2 * 64 * 576 + 2 * 64 * 512), 0),
    # GQA: 2·H·d (QK) + 2·H·d (AV)
    ("llama-3.1-70b", 80 * 4 * 64 * 128, 0, 80 * 4 * 64 * 128, 0),
    ("gpt-oss-120b", 18 * 4 * 64 * 64, 18 * 4 * 64 * 64, 18 * 4 * 64 * 64, 18 * 4 * 64 * 64),
])
def test_attention_flops(name, pre_full, pre_win, dec_full, dec_win):
    a = acc(name)
    assert a.attn_flops_per_ctx_prefill_full == pre_full
    assert a.attn_flops_per_ctx_prefill_window == pre_win
    assert a.attn_flops_per_ctx_decode_full == dec_full
    assert a.attn_flops_per_ctx_decode_window == dec_win


@needs_data
def test_linear_flops():
    d = LLAMA_70B
    assert acc("llama-3.1-70b").linear_flops_per_token == 2 * (d["lm_head"] + d["attn"] + d["dense"])
    # gpt-oss: matmul weights only (no biases, sinks, norms).
    attn_w = 36 * (2880 * 4096 + 2 * 2880 * 512 + 4096 * 2880)
    expert_w = 3 * 2880 * 2880
    lin = 2 * (201088 * 2880 + attn_w + 36 * 2880 * 128 + 36 * 4 * expert_w)
    assert acc("gpt-oss-120b").linear_flops_per_token == lin
    # DeepSeek: attention weights without the two MLA norms, gate weights without the bias.
    attn_w = 61 * (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168)
    lin = 2 * (129280 * 7168 + attn_w + 3 * 3 * 7168 * 18432
               + 58 * (9 * 3 * 7168 * 2048 + 256 * 7168))
    assert acc("deepseek-r1").linear_flops_per_token == lin


@needs_data
def test_prefill_and_decode_flops():
    a = acc("gpt-oss-120b")
    isl, W = 8192, 128
    full, win = a.attn_flops_per_ctx_prefill_full, a.attn_flops_per_ctx_prefill_window
    mean_full = sum(range(1, isl + 1)) / isl
    mean_win = sum(min(p, W) for p in range(1, isl + 1)) / isl
    assert a.prefill_flops_per_token(isl) == pytest.approx(
        a.linear_flops_per_token + full * mean_full + win * mean_win, rel=1e-12)
    assert a.prefill_flops_per_token(100) == pytest.approx(
        a.linear_flops_per_token + (full + win) * 101 / 2, rel=1e-12)  # below the window
    assert a.decode_flops_per_token(isl) == pytest.approx(
        a.linear_flops_per_token + a.attn_flops_per_ctx_decode_full * isl
        + a.attn_flops_per_ctx_decode_window * W, rel=1e-12)
    assert a.decode_flops_per_token(0) == a.linear_flops_per_token
    # Per-token prefill grows linearly in ISL (total quadratic) for a full-attention model.
    b = acc("llama-3.1-8b")
    slope = b.prefill_flops_per_token(2001) - b.prefill_flops_per_token(1001)
    assert slope == pytest.approx(b.attn_flops_per_ctx_prefill_full * 1000 / 2, rel=1e-9)
    with pytest.raises(ValueError):
        b.prefill_flops_per_token(0)


# ------------------------------------------------------------------ conformance, every config
@needs_data
@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_conformance(path, tmp_path):
    table = hf_config_to_model_table(path)
    assert set(table) <= {f.name for f in attrs.fields(Model)}
    m = spec_from_dict(table, cls=Model)
    a = account(m)
    parts = (a.embedding_params + (0 if m.tie_word_embeddings else a.lm_head_params)
             + a.attention_params + a.dense_ffn_params + a.shared_expert_params
             + a.routed_expert_params + a.router_params + a.norm_params)
    assert a.total_params == parts
    assert 0 < a.active_params <= a.total_params + (a.lm_head_params if m.tie_word_embeddings else 0)
    assert a.routed_expert_params == a.n_moe_layers * a.num_experts * a.params_per_routed_expert
    assert a.kv_cache_elems_per_token + a.window_kv_cache_elems_per_token > 0
    assert 0 < a.linear_flops_per_token < 2 * a.active_params
    assert a.linear_flops_per_token < a.prefill_flops_per_token(1024) < a.prefill_flops_per_token(8192)
    assert a.linear_flops_per_token < a.decode_flops_per_token(1024) < a.decode_flops_per_token(8192)
    # Round trip: import → TOML → load → same accounting.
    out = tmp_path / "m.toml"
    out.write_text(model_toml(path), encoding="utf-8")
    raw, origins = load_raw(out)
    assert raw["model"] == {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()}
    assert account(spec_from_dict(raw["model"], cls=Model)) == a
    # Every value line names its source file and key.
    cfg = json.loads(path.read_text())
    for line in model_toml(path).splitlines():
        if " = " in line and not line.startswith(("#", " ")) and not line.endswith("["):
            assert f"# {path.name}: " in line, line
    assert table["num_layers"] == cfg["num_hidden_layers"]


@needs_data
def test_checked_in_specs_are_current():
    pairs = {"gpt-oss-120b": "gpt-oss-120b", "deepseek-r1": "deepseek-r1",
             "kimi-k2-instruct": "kimi-k2", "llama-3.1-70b": "llama-3.1-70b",
             "llama-3.1-8b": "llama-3.1-8b"}
    for src, dst in pairs.items():
        spec = REPO / "specs" / "models" / f"{dst}.toml"
        text = spec.read_text(encoding="utf-8")
        cmd = f"codesign model import ../shared/data/hf_configs/{src}.json"
        assert text.splitlines()[0] == f"# Generated by `{cmd}`."
        assert text == model_toml(HF / f"{src}.json", command=cmd), f"{spec} is stale: rerun {cmd}"


@needs_data
def test_importer_fields():
    t = hf_config_to_model_table(HF / "gpt-oss-120b.json")
    assert t["layer_types"] == ("sliding", "full") * 18
    assert (t["sliding_window"], t["attention_sinks"], t["expert_bias"], t["router_bias"]) == (128, True, True, True)
    assert (t["native_weights_format"], t["native_moe_weights_format"]) == ("bf16", "mxfp4")
    t = hf_config_to_model_table(HF / "deepseek-r1.json")
    assert t["attention"] == "mla" and t["moe_layers"] == (False,) * 3 + (True,) * 58
    assert (t["native_weights_format"], t["native_moe_weights_format"]) == ("fp8_e4m3", "fp8_e4m3")
    assert "num_nextn_predict_layers" in model_toml(HF / "deepseek-r1.json")  # MTP noted, not counted
    t = hf_config_to_model_table(HF / "llama-3.1-8b.json")
    assert t["head_dim"] == 4096 // 32 and "moe_layers" not in t and "layer_types" not in t


# ------------------------------------------------------------------ generic keys (synthetic)
BASE = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 4, "vocab_size": 1000,
        "num_attention_heads": 8, "intermediate_size": 512}


def write(tmp_path, cfg, name="cfg.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def test_generic_dense_defaults(tmp_path):
    t = hf_config_to_model_table(write(tmp_path, BASE))
    assert (t["num_kv_heads"], t["head_dim"]) == (8, 256 // 8)   # MHA, hidden/heads
    a = account(spec_from_dict(t, cls=Model))
    assert a.kv_cache_elems_per_token == 4 * 2 * 8 * 32
    assert a.total_params == 2 * 1000 * 256 + 4 * (4 * 256 * 256 + 3 * 256 * 512) + 2 * 256 * 4 + 256


def test_mistral_and_qwen_sliding(tmp_path):
    t = hf_config_to_model_table(write(tmp_path, {**BASE, "model_type": "mistral", "sliding_window": 64}))
    assert t["layer_types"] == ("sliding",) * 4 and t["sliding_window"] == 64
    t = hf_config_to_model_table(write(tmp_path, {**BASE, "model_type": "qwen2", "sliding_window": 64,
                                                  "use_sliding_window": True, "max_window_layers": 3}))
    assert t["layer_types"] == ("full",) * 3 + ("sliding",)
    t = hf_config_to_model_table(write(tmp_path, {**BASE, "model_type": "qwen3", "sliding_window": 64,
                                                  "use_sliding_window": False, "max_window_layers": 3}))
    assert "layer_types" not in t


def test_qwen3_moe_and_mixtral(tmp_path):
    cfg = {**BASE, "model_type": "qwen3_moe", "num_experts": 16, "num_experts_per_tok": 2,
           "moe_intermediate_size": 128, "decoder_sparse_step": 2, "mlp_only_layers": [3],
           "num_key_value_heads": 2, "head_dim": 64}
    t = hf_config_to_model_table(write(tmp_path, cfg))
    assert t["moe_layers"] == (False, True, False, False)       # (i+1) % 2 == 0, minus layer 3
    a = account(spec_from_dict(t, cls=Model))
    assert a.n_moe_layers == 1 and a.dense_ffn_params == 3 * 3 * 256 * 512
    assert a.routed_expert_params == 16 * 3 * 256 * 128 and a.router_params == 16 * 256
    t = hf_config_to_model_table(write(tmp_path, {**BASE, "model_type": "mixtral",
                                                  "num_local_experts": 8, "num_experts_per_tok": 2}))
    assert t["moe_layers"] == (True,) * 4 and t["moe_intermediate_size"] == 512


@pytest.mark.parametrize("cfg, key", [
    ({k: v for k, v in BASE.items() if k != "hidden_size"}, "hidden_size"),
    ({**BASE, "num_hidden_layers": 4.0}, "num_hidden_layers"),
    ({**BASE, "num_attention_heads": True}, "num_attention_heads"),
    ({**BASE, "layer_types": ["full_attention", "linear_attention", "full_attention", "full_attention"]},
     "layer_types[1]"),
    ({**BASE, "layer_types": ["full_attention"]}, "layer_types"),
    ({**BASE, "quantization_config": {"quant_method": "awq"}}, "quantization_config.quant_method"),
    ({**BASE, "num_local_experts": 8}, "num_experts_per_tok"),
    ({k: v for k, v in BASE.items() if k != "model_type"}, "model_type"),
])
def test_importer_refuses(tmp_path, cfg, key):
    with pytest.raises(CodesignError) as exc:
        hf_config_to_model_table(write(tmp_path, cfg))
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"cfg.json: {key}: "), msg
