"""Model names ``codesign validate`` meets in measured data, and the specs added for them.

1. The name rule (``resolve_model`` in ``codesign/validate.py``): a quantised or re-packaged
   re-release of a priced checkpoint resolves without a table entry, with a warning naming the rule;
   another architecture never does.
2. The specs vendored for names the blind split may hold (``specs/models/hf_configs/README.md``
   names every config's source): each parameter count is arithmetic on the config numbers written
   out below, checked against the total its publisher states. Accounting conventions as in
   ``codesign/arch.py``: ``active_params`` counts the lm_head but not the input-embedding lookup;
   per-head q/k norms, multi-token-prediction layers and vision towers are not counted.

Published totals (the second column of the README):

* Qwen3-30B-A3B model card (huggingface.co/Qwen/Qwen3-30B-A3B): "Number of Parameters: 30.5B in
  total and 3.3B activated; Number of Paramaters (Non-Embedding): 29.9B; Number of Layers: 48;
  Number of Attention Heads (GQA): 32 for Q and 4 for KV; Number of Experts: 128; Number of
  Activated Experts: 8".
* Qwen3-8B model card (huggingface.co/Qwen/Qwen3-8B): 8.2B parameters, 6.95B non-embedding, 36
  layers, 32 Q / 8 KV heads.
* Qwen3-Coder-480B-A35B-Instruct model card: 480B total, 35B activated, 62 layers, 96 Q / 8 KV
  heads, 160 experts, 8 activated.
* Qwen3-Next-80B-A3B model cards: 80B total, 3B activated, 79B non-embedding, 48 layers in
  12 x (3 x (Gated DeltaNet -> MoE) + 1 x (Gated Attention -> MoE)), 512 experts, 10 activated,
  1 shared.
* gpt-oss model card (OpenAI, 2025), table of parameter counts: gpt-oss-20b 20.91B total, 3.61B
  active (the active count including the unembedding, not the embedding; two decimals).
* DeepSeek-V3 technical report: 671B total, 37B activated per token; DeepSeek-V3.2 is V3.1-Terminus
  plus DeepSeek sparse attention (deepseek-ai/DeepSeek-V3.2-Exp README.md): the lightning indexer
  adds about 0.8B.
* Llama 3 herd-of-models paper, table 3: 405B: 126 layers, model dimension 16,384, FFN dimension
  53,248, 128 attention heads, 8 key/value heads.
* GLM-4.5 model card (huggingface.co/zai-org/GLM-4.5): "355 billion total parameters and 32 billion
  active parameters"; GLM-4.7 keeps GLM-4.5's dimensions (README: zyzshishui/slime
  scripts/models/glm4.5-355B-A32B.sh against aiconfigurator's GLM-4.7 config).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from codesign.arch import account
from codesign.model_import import model_toml
from codesign.spec import Model, load_raw, spec_from_dict
from codesign.validate import MODELS, _models_by_key, _strip_steps, read_measured, resolve_model

REPO = Path(__file__).resolve().parents[1]
VENDORED = REPO / "specs" / "models" / "hf_configs"
SPECS = REPO / "specs" / "models"

NEW_SPECS = ["qwen3-30b-a3b", "qwen3-8b", "qwen3-coder-480b-a35b", "qwen3-next-80b-a3b", "gpt-oss-20b",
             "deepseek-v3.2", "llama-3.1-405b", "glm-4.7"]


def spec_acc(stem: str):
    raw, _ = load_raw(SPECS / f"{stem}.toml")
    return account(spec_from_dict(raw["model"], cls=Model))


# ================================================================================ the name rule
RESOLVES = {
    # quantised re-releases of priced checkpoints: the org and the quantisation suffix go
    "nvidia/Kimi-K2.5-NVFP4": "kimi-k2",
    "nvidia/DeepSeek-R1-0528-FP4-v2": "deepseek-r1",           # -fp4-v2, then the documented -0528
    "nvidia/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "nvidia/Qwen3-235B-A22B-NVFP4": "qwen3-235b-a22b",
    "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic": "llama-3.1-70b",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-r1",
    "nvidia/Llama-3.3-70B-Instruct-FP8": "llama-3.1-70b",
    "amd/Llama-3.3-70B-Instruct-FP8-KV": "llama-3.1-70b",
    "amd/DeepSeek-R1-0528-MXFP4-Preview": "deepseek-r1",
    "/mnt/lustre01/models/deepseek-r1-0528-fp4-v2": "deepseek-r1",  # a local path: its last part
    "Qwen/Qwen3-32B-FP8": "qwen3-32b",
    "Qwen/Qwen3-32B-FP8-Static-PerTensor": "qwen3-32b",
    "nvidia/MiniMax-M2.5-NVFP4": "minimax-m2.5",
    "nvidia/GLM-5-NVFP4": "glm-5",
    "Qwen/Qwen3.5-397B-A17B-FP8": "qwen3.5-397b-a17b",
    "nvidia/DeepSeek-V3-0324-NVFP4": "deepseek-r1",            # V3-0324: post-training update of V3
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B-Thinking-2507-FP8": "qwen3-235b-a22b",
    # Instruct shares the base's config.json
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "nvidia/Llama-3.1-70B-Instruct-FP8": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-8B": "llama-3.1-8b",           # Meta's former repository name
    "meta-llama/Meta-Llama-3.1-405B-Instruct-FP8": "llama-3.1-405b",
    # case
    "DSR1": "deepseek-r1",
    "openai/GPT-OSS-120B": "gpt-oss-120b",
    # InferenceMAX precision-suffixed prefixes (InferenceX normalizers.ts PRECISION_SUFFIX)
    "dsr1-fp8": "deepseek-r1",
    "dsr1-0528-nvfp4-v2": "deepseek-r1",
    "gptoss": "gpt-oss-120b",
    # names of the specs added here
    "Qwen/Qwen3-30B-A3B-FP8": "qwen3-30b-a3b",
    "nvidia/Qwen3-30B-A3B-NVFP4": "qwen3-30b-a3b",
    "Qwen/Qwen3-30B-A3B-Instruct-2507": "qwen3-30b-a3b",
    "RedHatAI/Qwen3-30B-A3B-quantized.w4a16": "qwen3-30b-a3b",
    "Qwen/Qwen3-Next-80B-A3B-Thinking": "qwen3-next-80b-a3b",
    "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8": "qwen3-next-80b-a3b",
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": "qwen3-coder-480b-a35b",
    "Qwen/Qwen3-8B-FP8": "qwen3-8b",
    "zai-org/GLM-4.7-FP8": "glm-4.7",
    "moonshotai/Kimi-K2-Thinking": "kimi-k2",
    "nvidia/Kimi-K2-Thinking-NVFP4": "kimi-k2",
}


@pytest.mark.parametrize("name, stem", RESOLVES.items())
def test_the_rule_resolves_re_releases(name, stem):
    got, warnings, _ = resolve_model(name)
    assert got == stem
    if name not in MODELS:  # resolved by the rule: the row says so
        assert warnings and warnings[0].startswith(f"model name rule: {name} read as ")


def test_the_warning_names_what_was_stripped_and_keeps_the_alias_note():
    stem, warnings, tried = resolve_model("nvidia/Kimi-K2.5-NVFP4")
    assert (stem, tried) == ("kimi-k2", "kimi-k2.5")
    assert warnings[0] == ("model name rule: nvidia/Kimi-K2.5-NVFP4 read as kimi-k2.5 "
                           "(case and org ignored; stripped -nvfp4)")
    assert warnings[1] == MODELS["moonshotai/Kimi-K2.5"][1]  # the architecture alias is still said
    _, warnings, _ = resolve_model("nvidia/DeepSeek-R1-0528-FP4-v2")
    assert warnings == ["model name rule: nvidia/DeepSeek-R1-0528-FP4-v2 read as deepseek-r1 "
                        "(case and org ignored; stripped -fp4-v2, -0528)"]


def test_table_names_map_as_written_without_a_rule_warning():
    for name, (stem, note) in MODELS.items():
        assert resolve_model(name) == (stem, [note] if note else [], name)


REFUSED = {
    # another architecture must never be reached by stripping a suffix
    "deepseek-ai/DeepSeek-V3.2-Exp": "deepseek-v3.2-exp",      # not deepseek-r1 (sparse attention)
    "zai-org/GLM-4.7-Flash": "glm-4.7-flash",                   # 30B MLA model, not GLM-4.7
    "zai-org/GLM-4.5-Air-FP8": "glm-4.5-air",                   # 106B, not GLM-4.5
    "zai-org/GLM-5.1-FP8": "glm-5.1",                           # no config checked
    "MiniMaxAI/MiniMax-M2.7": "minimax-m2.7",                   # no config checked
    "Qwen/Qwen3.5-35B-A3B": "qwen3.5-35b-a3b",
    "Qwen/Qwen3-14B": "qwen3-14b",
    "deepseek-ai/DeepSeek-V4-Pro": "deepseek-v4-pro",           # compressed attention: not priced
    "dsv4": "dsv4",
    "kimik2.6": "kimik2.6",
    "moonshotai/Kimi-K2-Base": "kimi-k2-base",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b-instruct-v0.1",
}


@pytest.mark.parametrize("name, tried", REFUSED.items())
def test_unknown_names_stay_unsupported_naming_the_name_tried(name, tried):
    assert resolve_model(name) == (None, [], tried)


def test_other_sizes_of_a_family_keep_their_own_spec():
    # Qwen3-30B-A3B is not Qwen3-32B; Llama-3.1-405B is not 70B; DeepSeek-V3.2 is not R1
    assert resolve_model("Qwen/Qwen3-30B-A3B")[0] == "qwen3-30b-a3b"
    assert resolve_model("meta-llama/Llama-3.1-405B")[0] == "llama-3.1-405b"
    assert resolve_model("deepseek-ai/DeepSeek-V3.2")[0] == "deepseek-v3.2"
    assert resolve_model("openai/gpt-oss-20b")[0] == "gpt-oss-20b"


def test_a_dated_revision_is_stripped_only_where_documented():
    stem, warnings, tried = resolve_model("Qwen/Qwen3-32B-2507")
    assert stem is None and tried == "qwen3-32b-2507"
    assert warnings == ["revision -2507 is not known to keep qwen3-32b's architecture"]
    assert resolve_model("moonshotai/Kimi-K2-Instruct-0905")[0] is None
    assert resolve_model("deepseek-ai/DeepSeek-R1-0528-FP8")[0] == "deepseek-r1"


def test_no_two_table_names_reach_one_form_with_different_specs_at_the_same_rank():
    seen: dict = {}
    for name, value in MODELS.items():
        for n, (key, _) in enumerate(_strip_steps(name)[0]):
            seen.setdefault((key, n, bool(value[1])), set()).add(value)
    assert [k for k, v in seen.items() if len(v) > 1] == []
    assert _models_by_key()["kimi-k2"] == ("kimi-k2", "")  # Kimi-K2-Instruct's own spec wins


def test_every_table_entry_has_a_spec():
    for stem, _ in MODELS.values():
        assert (SPECS / f"{stem}.toml").is_file(), stem


AIC_COLS = ["id", "silicon_data_source", "backend", "model_path", "system", "mode", "isl", "osl",
            "gemm_quant_mode", "moe_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size",
            "moe_tp_size", "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"]


def test_measured_rows_resolve_by_the_rule_and_keep_their_quant_columns(tmp_path):
    rows = [  # (id, model_path, gemm, moe)
        ("a", "nvidia/Qwen3-30B-A3B-NVFP4", "nvfp4", "nvfp4"),
        ("b", "Qwen/Qwen3-30B-A3B-FP8", "fp8", "fp8"),
        ("c", "nvidia/Kimi-K2.5-NVFP4", "nvfp4", "nvfp4"),
        ("d", "openai/gpt-oss-20b", "nvfp4", "nvfp4"),
        ("e", "zai-org/GLM-5.1-FP8", "fp8", "fp8_block"),
    ]
    p = tmp_path / "aic.csv"
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, AIC_COLS)
        w.writeheader()
        for i, model, g, mo in rows:
            w.writerow({"id": i, "silicon_data_source": "silicon_concurrency=8", "backend": "trtllm",
                        "model_path": model, "system": "b200_sxm", "mode": "agg", "isl": 1024, "osl": 128,
                        "gemm_quant_mode": g, "moe_quant_mode": mo, "batch_size": 8, "tp_size": 8,
                        "pp_size": 1, "attention_dp_size": 1, "moe_tp_size": 1, "moe_ep_size": 8,
                        "silicon_ttft_ms": 100, "silicon_tpot_ms": 10})
    _, pts = read_measured(p)
    by = {pt.id: pt for pt in pts}
    assert [by[i].model for i in "abcd"] == ["qwen3-30b-a3b", "qwen3-30b-a3b", "kimi-k2", "gpt-oss-20b"]
    assert all(by[i].status == "ok" for i in "abcd")
    assert by["a"].formats["moe"] == "nvfp4" and by["b"].formats["moe"] == "fp8_e4m3"  # quant columns
    assert by["a"].warnings[0].startswith("model name rule: nvidia/Qwen3-30B-A3B-NVFP4 read as qwen3-30b-a3b")
    # the stand-in architecture is an assumption (predictions.csv's assumptions column), the name
    # rule's reading a warning
    assert any(w.startswith("architecture of kimi-k2") for w in by["c"].assumptions)
    assert not any(w.startswith("architecture of") for w in by["c"].warnings)
    # gpt-oss-20b ships gpt-oss-120b's MXFP4 experts / BF16 attention whatever the columns say
    assert (by["d"].formats["weights"], by["d"].formats["moe"]) == ("bf16", "mxfp4")
    assert by["e"].model is None
    assert by["e"].status == ("unsupported: no model config for zai-org/GLM-5.1-FP8 "
                              "(normalised name tried: glm-5.1)")


# ======================================================== the new specs: hand counts, published totals
# Qwen3-30B-A3B: h 2048, 48 layers, 32 query / 4 KV heads of 128, 128 experts of 768, top-8.
Q30_ATTN = 2048 * 32 * 128 + 2 * 2048 * 4 * 128 + 32 * 128 * 2048     # q, k, v, o
Q30_EXPERT = 3 * 2048 * 768                                           # gate, up, down
Q30_ROUTER = 128 * 2048
Q30_EMB = 151936 * 2048                                               # lm_head the same (untied)
Q30_TOTAL = 48 * (Q30_ATTN + 128 * Q30_EXPERT + Q30_ROUTER + 2 * 2048) + 2048 + 2 * Q30_EMB
Q30_ACTIVE = 48 * (Q30_ATTN + 8 * Q30_EXPERT + Q30_ROUTER + 2 * 2048) + 2048 + Q30_EMB

# Qwen3-8B: h 4096, 36 layers, 32 query / 8 KV heads of 128, intermediate 12288.
Q8_ATTN = 4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 32 * 128 * 4096
Q8_MLP = 3 * 4096 * 12288
Q8_EMB = 151936 * 4096
Q8_TOTAL = 36 * (Q8_ATTN + Q8_MLP + 2 * 4096) + 4096 + 2 * Q8_EMB

# Qwen3-Coder-480B-A35B: h 6144, 62 layers, 96 query / 8 KV heads of 128, 160 experts of 2560, top-8.
C480_ATTN = 6144 * 96 * 128 + 2 * 6144 * 8 * 128 + 96 * 128 * 6144
C480_EXPERT = 3 * 6144 * 2560
C480_ROUTER = 160 * 6144
C480_EMB = 151936 * 6144
C480_TOTAL = 62 * (C480_ATTN + 160 * C480_EXPERT + C480_ROUTER + 2 * 6144) + 6144 + 2 * C480_EMB
C480_ACTIVE = 62 * (C480_ATTN + 8 * C480_EXPERT + C480_ROUTER + 2 * 6144) + 6144 + C480_EMB

# Qwen3-Next-80B-A3B: h 2048, 48 layers, every 4th full attention (12 full, 36 Gated DeltaNet).
# Gated DeltaNet (16 key heads, 32 value heads, 128 each): in_proj_qkvz 2048 x (2·16·128 + 2·32·128),
# in_proj_ba 2048 x 2·32, out_proj 32·128 x 2048, conv1d (2·16·128 + 32·128) channels x kernel 4,
# dt_bias + A_log 2·32, gated norm 128 (modeling_qwen3_next.py Qwen3NextGatedDeltaNet).
NX_LINEAR = 2048 * 12288 + 2048 * 64 + 4096 * 2048 + 8192 * 4 + 64 + 128
# gated attention, 16 query / 2 KV heads of 256: q_proj 2048 -> 2·16·256 (query + gate), k/v 2048 ->
# 2·256 each, o 16·256 -> 2048, q_norm and k_norm of head_dim each
NX_FULL = 2048 * 8192 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 256
NX_EXPERT = 3 * 2048 * 512
NX_MOE = 512 * NX_EXPERT + NX_EXPERT + 512 * 2048                    # routed + shared + router
NX_EMB = 151936 * 2048
NX_TOTAL = 2 * NX_EMB + 36 * NX_LINEAR + 12 * NX_FULL + 48 * NX_MOE + 2 * 2048 * 48 + 2048
NX_ACTIVE = NX_EMB + 36 * NX_LINEAR + 12 * NX_FULL + 48 * (11 * NX_EXPERT + 512 * 2048) + 2 * 2048 * 48 + 2048

# gpt-oss-20b: h 2880, 24 layers, 64 query / 8 KV heads of 64 with biases and one sink per head,
# 32 experts (gate_up 2880 -> 2·2880 and down 2880 -> 2880, with biases), top-4, router with bias.
OSS20_ATTN = (2880 * 4096 + 4096) + 2 * (2880 * 512 + 512) + (4096 * 2880 + 2880) + 64
OSS20_EXPERT = (2880 * 2 * 2880 + 2 * 2880) + (2880 * 2880 + 2880)
OSS20_ROUTER = 32 * 2880 + 32
OSS20_EMB = 201088 * 2880
OSS20_TOTAL = 24 * (OSS20_ATTN + 32 * OSS20_EXPERT + OSS20_ROUTER + 2 * 2880) + 2880 + 2 * OSS20_EMB
OSS20_ACTIVE = 24 * (OSS20_ATTN + 4 * OSS20_EXPERT + OSS20_ROUTER + 2 * 2880) + 2880 + OSS20_EMB

# DeepSeek-V3.2: h 7168, 61 layers (3 dense of 18432, 58 MoE), MLA with 128 heads (q/k 128 + 64,
# v 128), q_lora 1536, kv_lora 512; indexer 64 heads of 128 (DeepSeek-V3.2-Exp inference/model.py
# Indexer: wq_b, wk, k_norm, weights_proj); 256 experts of 2048, 1 shared, top-8, router with one
# score-correction bias per expert (topk_method noaux_tc).
DS_MLA = (7168 * 1536 + 1536 + 1536 * 128 * (128 + 64)                  # q_a, q_a_layernorm, q_b
          + 7168 * (512 + 64) + 512 + 512 * 128 * (128 + 128)           # kv_a, kv_a_layernorm, kv_b
          + 128 * 128 * 7168)                                           # o
DS_INDEXER = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
DS_EXPERT = 3 * 7168 * 2048
DS_ROUTER = 256 * 7168 + 256
DS_EMB = 129280 * 7168
DS_TOTAL = (2 * DS_EMB + 61 * (DS_MLA + DS_INDEXER) + 3 * 3 * 7168 * 18432
            + 58 * (256 * DS_EXPERT + DS_EXPERT + DS_ROUTER) + 2 * 7168 * 61 + 7168)
DS_ACTIVE = (DS_EMB + 61 * (DS_MLA + DS_INDEXER) + 3 * 3 * 7168 * 18432
             + 58 * (9 * DS_EXPERT + DS_ROUTER) + 2 * 7168 * 61 + 7168)

# Llama-3.1-405B: h 16384, 126 layers, 128 query / 8 KV heads of 128, FFN 53248, vocab 128256.
L405_ATTN = 16384 * 16384 + 2 * 16384 * 8 * 128 + 16384 * 16384
L405_MLP = 3 * 16384 * 53248
L405_TOTAL = 126 * (L405_ATTN + L405_MLP + 2 * 16384) + 16384 + 2 * 128256 * 16384

# GLM-4.7 (aiconfigurator's config; GLM-4.5's dimensions): h 5120, 92 layers (3 dense of 12288,
# 89 MoE), 96 query / 8 KV heads of 128, 160 experts of 1536, 1 shared, top-8. As imported from the
# generic keys: no q/k/v biases, no router correction bias (the config lists neither).
G47_ATTN = 5120 * 96 * 128 + 2 * 5120 * 8 * 128 + 96 * 128 * 5120
G47_EXPERT = 3 * 5120 * 1536
G47_ROUTER = 160 * 5120
G47_EMB = 151552 * 5120
G47_TOTAL = (2 * G47_EMB + 92 * G47_ATTN + 3 * 3 * 5120 * 12288
             + 89 * (160 * G47_EXPERT + G47_EXPERT + G47_ROUTER) + 2 * 5120 * 92 + 5120)
G47_ACTIVE = (G47_EMB + 92 * G47_ATTN + 3 * 3 * 5120 * 12288
              + 89 * (9 * G47_EXPERT + G47_ROUTER) + 2 * 5120 * 92 + 5120)


def test_hand_sums():
    # the written-out sums once more as numbers (guards a typo in the expressions above)
    assert Q30_TOTAL == 30_532_110_336 and Q30_ACTIVE == 3_041_855_488
    assert Q8_TOTAL == 8_190_726_144
    assert C480_TOTAL == 480_154_859_520 and C480_ACTIVE == 34_541_254_656
    assert NX_LINEAR == 33_718_464 and NX_FULL == 27_263_488 and NX_TOTAL == 79_674_292_992
    assert OSS20_EXPERT == 24_891_840 and OSS20_TOTAL == 20_914_757_184 and OSS20_ACTIVE == 3_608_307_264
    assert L405_TOTAL == 405_853_388_800
    assert G47_TOTAL == 352_796_472_320


def test_qwen3_30b_a3b():
    a = spec_acc("qwen3-30b-a3b")
    assert a.total_params == Q30_TOTAL and a.active_params == Q30_ACTIVE
    assert (a.n_moe_layers, a.num_experts, a.experts_per_token) == (48, 128, 8)
    # card: 30.5B total, 29.9B non-embedding (within 0.5 %); 3.3B activated, which counts the
    # embedding lookup too (3.35B; within 3 %)
    assert a.total_params == pytest.approx(30.5e9, rel=5e-3)
    assert a.total_params - 2 * Q30_EMB == pytest.approx(29.9e9, rel=5e-3)
    assert a.active_params + Q30_EMB == pytest.approx(3.3e9, rel=3e-2)
    assert a.kv_cache_elems_per_token == 48 * 2 * 4 * 128


def test_qwen3_8b():
    a = spec_acc("qwen3-8b")
    assert a.total_params == Q8_TOTAL and a.num_experts == 0
    # card: 8.2B, 6.95B non-embedding (within 0.5 %)
    assert a.total_params == pytest.approx(8.2e9, rel=5e-3)
    assert a.total_params - 2 * Q8_EMB == pytest.approx(6.95e9, rel=5e-3)
    assert a.kv_cache_elems_per_token == 36 * 2 * 8 * 128


def test_qwen3_coder_480b_a35b():
    a = spec_acc("qwen3-coder-480b-a35b")
    assert a.total_params == C480_TOTAL and a.active_params == C480_ACTIVE
    assert (a.n_moe_layers, a.num_experts, a.experts_per_token) == (62, 160, 8)
    assert a.shared_expert_params == 0                     # shared_expert_intermediate_size 0
    # card: 480B total (within 0.5 %), 35B activated (with the embedding lookup 35.47B, within 3 %)
    assert a.total_params == pytest.approx(480e9, rel=5e-3)
    assert a.active_params + C480_EMB == pytest.approx(35e9, rel=3e-2)


def test_qwen3_next_80b_a3b():
    a = spec_acc("qwen3-next-80b-a3b")
    assert a.linear_attention_layers == 36
    assert a.attention_params == 36 * NX_LINEAR + 12 * NX_FULL
    assert a.total_params == NX_TOTAL and a.active_params == NX_ACTIVE
    # card: 80B total, 79B non-embedding (whole billions: ±0.5B; the 48 shared-expert gates of 2048
    # and the MTP layer are not counted); 3B activated: 3.25B without embedding and lm_head (±0.5B)
    assert abs(a.total_params - 80e9) <= 0.5e9
    assert abs(a.total_params - 2 * NX_EMB - 79e9) <= 0.5e9
    assert abs(a.active_params - NX_EMB - 3e9) <= 0.5e9
    assert a.kv_cache_elems_per_token == 12 * 2 * 2 * 256     # full-attention layers only


def test_gpt_oss_20b():
    a = spec_acc("gpt-oss-20b")
    assert a.total_params == OSS20_TOTAL and a.active_params == OSS20_ACTIVE
    assert a.params_per_routed_expert == OSS20_EXPERT
    # model card table: 20.91B total, 3.61B active (two decimals: ±0.005B)
    assert abs(a.total_params - 20.91e9) <= 0.005e9
    assert abs(a.active_params - 3.61e9) <= 0.005e9
    raw, _ = load_raw(SPECS / "gpt-oss-20b.toml")
    assert (raw["model"]["native_weights_format"], raw["model"]["native_moe_weights_format"]) == ("bf16", "mxfp4")


def test_deepseek_v32():
    a = spec_acc("deepseek-v3.2")
    assert a.attention_params == 61 * (DS_MLA + DS_INDEXER)
    assert a.total_params == DS_TOTAL and a.active_params == DS_ACTIVE
    assert a.indexer_cache_elems_per_token == 61 * 128      # one indexer key per token per layer
    # report: 671B total, 37B activated (DeepSeek-V3); V3.2's indexer adds 61 x 14.2M = 0.87B
    assert a.total_params == pytest.approx(671e9, rel=2e-3)
    assert a.active_params == pytest.approx(37e9, rel=3e-2)
    raw, _ = load_raw(SPECS / "deepseek-v3.2.toml")
    assert raw["model"]["index_topk"] == 2048 and raw["model"]["attention"] == "mla"


def test_llama_31_405b():
    a = spec_acc("llama-3.1-405b")
    assert a.total_params == L405_TOTAL
    assert a.total_params == pytest.approx(405e9, rel=5e-3)   # "405B"
    assert a.kv_cache_elems_per_token == 126 * 2 * 8 * 128


def test_glm_47():
    a = spec_acc("glm-4.7")
    assert a.total_params == G47_TOTAL and a.active_params == G47_ACTIVE
    assert (a.n_moe_layers, a.num_experts, a.experts_per_token) == (89, 160, 8)
    # GLM-4.5 card: 355B total, 32B active. 352.8B here without the MTP layer (one more MoE layer,
    # ~3.9B, not served): within 1 %; 32.85B active (lm_head included): within 3 %
    assert a.total_params == pytest.approx(355e9, rel=1e-2)
    assert a.active_params == pytest.approx(32e9, rel=3e-2)
    assert a.kv_cache_elems_per_token == 92 * 2 * 8 * 128


@pytest.mark.parametrize("stem", NEW_SPECS)
def test_checked_in_specs_are_current(stem):
    cmd = f"codesign model import specs/models/hf_configs/{stem}.json"
    text = (SPECS / f"{stem}.toml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"# Generated by `{cmd}`."
    assert text == model_toml(VENDORED / f"{stem}.json", command=cmd), f"{stem}.toml is stale: rerun {cmd}"


def cfg(stem: str) -> dict:
    return json.loads((VENDORED / f"{stem}.json").read_text())


def dims(c: dict, *keys):
    return [c.get(k) for k in keys]


def test_vendored_configs_have_the_cross_checked_numbers():
    # the second sources named in specs/models/hf_configs/README.md, number by number
    moe = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
           "num_experts", "num_experts_per_tok", "moe_intermediate_size", "vocab_size", "tie_word_embeddings")
    # AI-Hypercomputer/maxtext hf_model_configs.py qwen3_30b_a3b_thinking_2507_config
    assert dims(cfg("qwen3-30b-a3b"), *moe) == [48, 2048, 32, 4, 128, 128, 8, 768, 151936, False]
    # aliyun/SimAI vidur-alibabacloud/data/hf_configs/qwen3-next-80B-A3B_config.json
    c = cfg("qwen3-next-80b-a3b")
    assert dims(c, *moe) == [48, 2048, 16, 2, 256, 512, 10, 512, 151936, False]
    assert dims(c, "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads",
                "linear_key_head_dim", "linear_value_head_dim", "shared_expert_intermediate_size") == \
        [4, 16, 32, 128, 128, 512]
    # maxtext gpt_oss_20b_dict (from openai/gpt-oss-20b config.json, quantization_config removed)
    c = cfg("gpt-oss-20b")
    assert dims(c, "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                "num_local_experts", "experts_per_token", "intermediate_size", "sliding_window", "vocab_size") == \
        [24, 2880, 64, 8, 64, 32, 4, 2880, 128, 201088]
    assert c["layer_types"] == ["sliding_attention", "full_attention"] * 12
    # quantization_config as gpt-oss-120b's (../shared/data/hf_configs/gpt-oss-120b.json)
    assert c["quantization_config"] == {"modules_to_not_convert": ["model.layers.*.self_attn",
                                        "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"],
                                        "quant_method": "mxfp4"}
    # ai-dynamo/aiconfigurator DSA_MODEL_DIMS["DeepseekV32ForCausalLM"]: MLA ranks and the indexer
    c = cfg("deepseek-v3.2")
    assert dims(c, "hidden_size", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                "v_head_dim", "index_topk", "index_head_dim", "index_n_heads") == \
        [7168, 1536, 512, 128, 64, 128, 2048, 128, 64]
    # Llama 3 paper, table 3 (405B)
    assert dims(cfg("llama-3.1-405b"), "num_hidden_layers", "hidden_size", "intermediate_size",
                "num_attention_heads", "num_key_value_heads") == [126, 16384, 53248, 128, 8]
    # maxtext qwen3_8b_config; Qwen3-8B card: 36 layers, 32 Q / 8 KV heads
    assert dims(cfg("qwen3-8b"), "num_hidden_layers", "num_attention_heads", "num_key_value_heads") == [36, 32, 8]
    # Qwen3-Coder-480B-A35B-Instruct card: 62 layers, 96 Q / 8 KV heads, 160 experts, 8 activated
    assert dims(cfg("qwen3-coder-480b-a35b"), "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "num_experts", "num_experts_per_tok") == [62, 96, 8, 160, 8]
    # zyzshishui/slime scripts/models/glm4.5-355B-A32B.sh (GLM-4.5): 3 dense + 89 MoE layers, hidden
    # 5120, 96 heads, 8 query groups, kv-channels 128, FFN 12288, 160 experts of 1536, top-8, shared
    # expert 1536, vocab 151552
    c = cfg("glm-4.7")
    assert dims(c, "first_k_dense_replace", "num_hidden_layers", "hidden_size", "num_attention_heads",
                "num_key_value_heads", "head_dim", "intermediate_size", "n_routed_experts", "moe_intermediate_size",
                "num_experts_per_tok", "n_shared_experts", "vocab_size") == \
        [3, 92, 5120, 96, 8, 128, 12288, 160, 1536, 8, 1, 151552]
