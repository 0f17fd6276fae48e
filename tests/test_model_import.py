"""Qwen3-32B, Qwen3-235B-A22B and MiniMax-M2.5: the vendored configs, their specs, the
``minimax_m2`` importer family and the names ``codesign validate`` maps to them.

The configs are ``specs/models/hf_configs/*.json`` (sources in that directory's README.md). Every
expected count below is arithmetic on the config numbers, written out, and is checked against the
totals the model publishers state:

* Qwen3-32B model card (huggingface.co/Qwen/Qwen3-32B): "Number of Parameters: 32.8B; Number of
  Paramaters (Non-Embedding): 31.2B; Number of Layers: 64; Number of Attention Heads (GQA): 64 for
  Q and 8 for KV".
* Qwen3-235B-A22B model card (huggingface.co/Qwen/Qwen3-235B-A22B): 235B total, 22B activated,
  234B non-embedding, 94 layers, 64 Q / 4 KV heads, 128 experts, 8 activated.
* MiniMax-M2 (MiniMax-AI/MiniMax-M2 README.md; M2.5 keeps the architecture, MiniMax-AI/MiniMax-M2.5
  docs/transformers_deploy_guide.md): "230 billion total parameters with 10 billion active
  parameters".

Module shapes (what a layer holds): Qwen3 ``modeling_qwen3.py`` / ``modeling_qwen3_moe.py`` (q, k,
v, o without bias; gated MLP or experts gate/up/down; router ``Linear(h, E, bias=False)``);
MiniMax-M2 ``modeling_minimax_m2.py`` (the same attention; ``block_sparse_moe.gate (E, h)`` plus
``e_score_correction_bias (E,)``; experts w1/w3/w2). Two RMSNorms per layer and a final norm;
embeddings untied. Per-head q/k RMSNorms are not counted (the importer notes it).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from codesign.arch import account
from codesign.errors import CodesignError
from codesign.model_import import hf_config_to_model_table, model_toml
from codesign.spec import Model, load_raw, spec_from_dict
from codesign.validate import MODELS, read_measured

REPO = Path(__file__).resolve().parents[1]
VENDORED = REPO / "specs" / "models" / "hf_configs"
SPECS = REPO / "specs" / "models"


def spec_acc(stem: str):
    raw, _ = load_raw(SPECS / f"{stem}.toml")
    return account(spec_from_dict(raw["model"], cls=Model))


# --------------------------------------------------------------------------- hand derivations
# Qwen3-32B: h 5120, 64 layers, 64 query / 8 KV heads of 128, intermediate 25600, vocab 151936.
Q32_ATTN = 5120 * 64 * 128 + 2 * 5120 * 8 * 128 + 64 * 128 * 5120      # q, k, v, o = 94,371,840
Q32_MLP = 3 * 5120 * 25600                                             # gate, up, down = 393,216,000
Q32_EMB = 151936 * 5120                                                # 777,912,320 (lm_head the same)
Q32_TOTAL = 64 * (Q32_ATTN + Q32_MLP + 2 * 5120) + 5120 + 2 * Q32_EMB  # 32,762,106,880

# Qwen3-235B-A22B: h 4096, 94 layers, 64 query / 4 KV heads of 128, 128 experts of 1536, top-8.
Q235_ATTN = 4096 * 64 * 128 + 2 * 4096 * 4 * 128 + 64 * 128 * 4096    # 71,303,168
Q235_EXPERT = 3 * 4096 * 1536                                          # 18,874,368
Q235_ROUTER = 128 * 4096                                               # 524,288
Q235_EMB = 151936 * 4096                                               # 622,329,856
Q235_TOTAL = 94 * (Q235_ATTN + 128 * Q235_EXPERT + Q235_ROUTER + 2 * 4096) + 4096 + 2 * Q235_EMB
Q235_ACTIVE = 94 * (Q235_ATTN + 8 * Q235_EXPERT + Q235_ROUTER + 2 * 4096) + 4096 + Q235_EMB

# MiniMax-M2.5: h 3072, 62 layers, 48 query / 8 KV heads of 128, 256 experts of 1536, top-8,
# router weight plus one correction bias per expert.
MM_ATTN = 3072 * 48 * 128 + 2 * 3072 * 8 * 128 + 48 * 128 * 3072      # 44,040,192
MM_EXPERT = 3 * 3072 * 1536                                            # 14,155,776
MM_ROUTER = 256 * 3072 + 256                                           # 786,688
MM_EMB = 200064 * 3072                                                 # 614,596,608
MM_TOTAL = 62 * (MM_ATTN + 256 * MM_EXPERT + MM_ROUTER + 2 * 3072) + 3072 + 2 * MM_EMB
MM_ACTIVE = 62 * (MM_ATTN + 8 * MM_EXPERT + MM_ROUTER + 2 * 3072) + 3072 + MM_EMB


def test_hand_sums():
    # the written-out sums, evaluated by hand once more (guards a typo in the expressions above)
    assert Q32_TOTAL == 32_762_106_880
    assert Q235_TOTAL == 235_093_610_496 and Q235_ACTIVE == 21_568_409_600
    assert MM_TOTAL == 228_689_320_448 and MM_ACTIVE == 10_415_512_064


def test_qwen3_32b_counts():
    a = spec_acc("qwen3-32b")
    assert a.total_params == Q32_TOTAL
    assert a.attention_params == 64 * Q32_ATTN and a.dense_ffn_params == 64 * Q32_MLP
    # model card: 32.8B total, 31.2B non-embedding (embedding and lm_head excluded), within 0.5 %
    assert a.total_params == pytest.approx(32.8e9, rel=5e-3)
    assert a.total_params - 2 * Q32_EMB == pytest.approx(31.2e9, rel=5e-3)
    # KV cache: 64 layers x 2 (K, V) x 8 heads x 128
    assert a.kv_cache_elems_per_token == 64 * 2 * 8 * 128
    assert a.num_experts == 0


def test_qwen3_235b_a22b_counts():
    a = spec_acc("qwen3-235b-a22b")
    assert a.total_params == Q235_TOTAL and a.active_params == Q235_ACTIVE
    assert (a.n_moe_layers, a.num_experts, a.experts_per_token) == (94, 128, 8)
    assert a.params_per_routed_expert == Q235_EXPERT and a.dense_ffn_params == 0
    # model card: 235B total, 234B non-embedding (within 0.5 %); 22B activated. Our active count
    # leaves out the input embedding (gpt-oss convention); with it the figure is 22.19B. Within 3 %.
    assert a.total_params == pytest.approx(235e9, rel=5e-3)
    assert a.total_params - 2 * Q235_EMB == pytest.approx(234e9, rel=5e-3)
    assert a.active_params == pytest.approx(22e9, rel=3e-2)
    assert a.active_params + Q235_EMB == pytest.approx(22e9, rel=3e-2)
    assert a.kv_cache_elems_per_token == 94 * 2 * 4 * 128


def test_minimax_m25_counts():
    a = spec_acc("minimax-m2.5")
    assert a.total_params == MM_TOTAL and a.active_params == MM_ACTIVE
    assert (a.n_moe_layers, a.num_experts, a.experts_per_token) == (62, 256, 8)
    assert a.params_per_routed_expert == MM_EXPERT and a.router_params == 62 * MM_ROUTER
    assert a.shared_expert_params == 0 and a.dense_ffn_params == 0
    # MiniMax: "230 billion total parameters with 10 billion active". 228.7B without the three
    # MTP modules (not served, not counted): within 1 %; 10.4B active: within 5 %.
    assert a.total_params == pytest.approx(230e9, rel=1e-2)
    assert a.active_params == pytest.approx(10e9, rel=5e-2)
    assert a.kv_cache_elems_per_token == 62 * 2 * 8 * 128


@pytest.mark.parametrize("stem", ["qwen3-32b", "qwen3-235b-a22b", "minimax-m2.5"])
def test_checked_in_specs_are_current(stem):
    cmd = f"codesign model import specs/models/hf_configs/{stem}.json"
    text = (SPECS / f"{stem}.toml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"# Generated by `{cmd}`."
    assert text == model_toml(VENDORED / f"{stem}.json", command=cmd), f"{stem}.toml is stale: rerun {cmd}"


def test_vendored_configs_have_the_cross_checked_numbers():
    # the second sources named in specs/models/hf_configs/README.md, number by number
    q32 = json.loads((VENDORED / "qwen3-32b.json").read_text())
    assert [q32[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                             "head_dim", "intermediate_size", "vocab_size")] == [64, 5120, 64, 8, 128, 25600, 151936]
    q235 = json.loads((VENDORED / "qwen3-235b-a22b.json").read_text())
    assert [q235[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                              "head_dim", "moe_intermediate_size", "num_experts", "num_experts_per_tok",
                              "vocab_size")] == [94, 4096, 64, 4, 128, 1536, 128, 8, 151936]
    mm = json.loads((VENDORED / "minimax-m2.5.json").read_text())
    assert [mm[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                            "head_dim", "intermediate_size", "num_local_experts", "num_experts_per_tok",
                            "vocab_size")] == [62, 3072, 48, 8, 128, 1536, 256, 8, 200064]
    assert not q32["tie_word_embeddings"] and not q235["tie_word_embeddings"] and not mm["tie_word_embeddings"]


# ------------------------------------------------------------------------ minimax_m2 importer
MINIMAX = json.loads((VENDORED / "minimax-m2.5.json").read_text())


def write(tmp_path, cfg, name="cfg.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def test_minimax_m2_fields(tmp_path):
    t = hf_config_to_model_table(VENDORED / "minimax-m2.5.json")
    assert t["architecture"] == "minimax_m2" and t["attention"] == "gqa"
    assert t["moe_layers"] == (True,) * 62 and t["moe_intermediate_size"] == 1536
    assert t["router_bias"] is True                                   # use_routing_bias
    assert t.get("num_shared_experts", 0) == 0
    # fmt "float8_e4m3fn" is torch's name of FP8 E4M3
    assert (t["native_weights_format"], t["native_moe_weights_format"]) == ("fp8_e4m3", "fp8_e4m3")
    toml = model_toml(VENDORED / "minimax-m2.5.json")
    assert "num_mtp_modules = 3" in toml and "not counted" in toml   # MTP noted, not counted
    no_bias = write(tmp_path, {**MINIMAX, "use_routing_bias": False})
    assert "router_bias" not in hf_config_to_model_table(no_bias)


@pytest.mark.parametrize("change, match", [
    ({"attn_type_list": [0] + [1] * 61}, r"attn_type_list\[0\]: 0 is not full softmax attention"),
    ({"attn_type_list": [1] * 61}, "attn_type_list: has 61 entries for num_hidden_layers = 62"),
    ({"attn_type_list": "all"}, "attn_type_list: expected a list"),
    ({"shared_intermediate_size": 1536}, "shared_intermediate_size: 1536: minimax_m2 shared experts"),
    ({"quantization_config": {"quant_method": "fp8", "fmt": "float8_e3m4"}},
     "quantization_config.fmt: unknown fp8 format 'float8_e3m4'"),
])
def test_minimax_m2_refusals(tmp_path, change, match):
    p = write(tmp_path, {**MINIMAX, **change})
    with pytest.raises(CodesignError, match=match) as exc:
        hf_config_to_model_table(p)
    assert "\n" not in str(exc.value)  # one line


def test_old_minimax_hybrid_still_refused(tmp_path):
    # MiniMax-Text-01 (model_type "minimax") mixes lightning attention into its layers
    p = write(tmp_path, {**MINIMAX, "model_type": "minimax"})
    with pytest.raises(CodesignError, match="'minimax' is a hybrid"):
        hf_config_to_model_table(p)


def test_deepseek_fp8_fmt_spelling_unchanged(tmp_path):
    cfg = {"model_type": "qwen3", "hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 100,
           "num_attention_heads": 4, "intermediate_size": 512,
           "quantization_config": {"quant_method": "fp8", "fmt": "e5m2"}}
    assert hf_config_to_model_table(write(tmp_path, cfg))["native_weights_format"] == "fp8_e5m2"


# ------------------------------------------------------------------------- validate mapping
NEW_NAMES = {
    "Qwen/Qwen3-32B": "qwen3-32b", "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B": "qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5", "minimaxm2.5": "minimax-m2.5",
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.1-70b", "llama70b": "llama-3.1-70b", "70b": "llama-3.1-70b",
    "kimik2.5": "kimi-k2",
}


def test_validate_maps_the_new_names():
    for name, stem in NEW_NAMES.items():
        assert MODELS[name][0] == stem, name
        assert (SPECS / f"{stem}.toml").is_file()
    # aliases of another checkpoint's architecture say so in the row's warning
    assert MODELS["meta-llama/Llama-3.3-70B-Instruct"][1].startswith("architecture of llama-3.1-70b")


def test_llama_33_70b_has_llama_31_70b_dimensions():
    # ai-dynamo/aiconfigurator model_configs/meta-llama--Llama-3.3-70B-Instruct_config.json (f577ab84):
    # hidden 8192, intermediate 28672, 80 layers, 64 heads, 8 KV heads, vocab 128256, untied
    raw, _ = load_raw(SPECS / "llama-3.1-70b.toml")
    m = raw["model"]
    assert [m[k] for k in ("hidden_size", "intermediate_size", "num_layers", "num_attention_heads",
                           "num_kv_heads", "vocab_size", "tie_word_embeddings")] == \
        [8192, 28672, 80, 64, 8, 128256, False]


AIC_COLS = ["id", "silicon_data_source", "backend", "model_path", "system", "mode", "isl", "osl",
            "gemm_quant_mode", "moe_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size",
            "moe_tp_size", "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"]


def test_measured_rows_of_the_new_models_are_mapped(tmp_path):
    rows = [
        # (id, model_path, system, gemm, moe, tp, ep)
        ("a", "Qwen/Qwen3-32B", "h100_sxm", "", "", 2, 1),
        ("b", "nvidia/Qwen3-32B-NVFP4", "gb200", "nvfp4", "nvfp4", 2, 1),
        ("c", "Qwen/Qwen3-235B-A22B-FP8", "h100_sxm", "fp8_block", "fp8_block", 8, 1),
        ("d", "MiniMaxAI/MiniMax-M2.5", "b200_sxm", "fp8", "fp8", 4, 4),
        ("e", "some/unknown-model", "h100_sxm", "", "", 1, 1),
    ]
    p = tmp_path / "aic.csv"
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, AIC_COLS)
        w.writeheader()
        for i, model, system, g, mo, tp, ep in rows:
            w.writerow({"id": i, "silicon_data_source": "silicon_concurrency=8", "backend": "trtllm",
                        "model_path": model, "system": system, "mode": "agg", "isl": 1024, "osl": 128,
                        "gemm_quant_mode": g, "moe_quant_mode": mo, "batch_size": 8, "tp_size": tp,
                        "pp_size": 1, "attention_dp_size": 1, "moe_tp_size": tp // ep, "moe_ep_size": ep,
                        "silicon_ttft_ms": 100, "silicon_tpot_ms": 10})
    _, pts = read_measured(p)
    by = {pt.id: pt for pt in pts}
    assert [by[i].model for i in "abcd"] == ["qwen3-32b", "qwen3-32b", "qwen3-235b-a22b", "minimax-m2.5"]
    assert all(by[i].status == "ok" for i in "abcd")
    assert by["a"].formats["weights"] == "bf16"                     # blank quant columns: BF16
    assert by["b"].formats["weights"] == "nvfp4"
    assert by["c"].formats["moe"] == "fp8_e4m3"                    # Qwen's block FP8 (E4M3, 128x128)
    assert by["e"].status == ("unsupported: no model config for some/unknown-model "
                              "(normalised name tried: unknown-model)")


@pytest.mark.parametrize("stem, change, match", [
    # each of these imported as a different model, silently (fresh-user trial)
    ("gpt-oss-20b", {"num_experts_per_tok": 200, "experts_per_token": 200},
     r"experts_per_token: 200 experts per token, more than the 32 experts \(num_local_experts\)"),
    ("gpt-oss-20b", {"num_local_experts": 0}, "num_local_experts: 0 experts, but experts_per_token = 4"),
    ("glm-4.7", {"first_k_dense_replace": 100}, r"first_k_dense_replace: no layer is MoE .* 92 layers"),
    # HF's config class fills in its own default width (another model's) when the key is absent
    ("qwen3-30b-a3b", {"moe_intermediate_size": None}, "moe_intermediate_size: missing .* qwen3_moe"),
])
def test_moe_configs_that_would_import_as_another_model_are_refused(tmp_path, stem, change, match):
    cfg = json.loads((VENDORED / f"{stem}.json").read_text())
    cfg = {k: v for k, v in {**cfg, **change}.items() if v is not None}
    with pytest.raises(CodesignError, match=match) as exc:
        hf_config_to_model_table(write(tmp_path, cfg))
    assert "\n" not in str(exc.value)


# --------------------------------------------------------------------------- multimodal configs
# A multimodal config (Llava, Qwen2.5-VL) keeps the language model's config under text_config,
# beside the vision tower's vision_config; the top-level model_type names the wrapper.
VISION = {"hidden_size": 1024, "model_type": "clip_vision_model"}


def test_a_multimodal_config_imports_its_text_config(tmp_path, cli):
    """Llava layout: only the wrapper's keys at the top level. The model is the text_config's (the
    Qwen3-8B config here: every value of the plain import), and the fragment says so."""
    text = json.loads((VENDORED / "qwen3-8b.json").read_text())
    (tmp_path / "plain").mkdir()
    plain = hf_config_to_model_table(write(tmp_path / "plain", text, "m.json"))  # the same file name
    wrapped = write(tmp_path, {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
                               "text_config": text, "vision_config": VISION}, "m.json")
    assert hf_config_to_model_table(wrapped) == plain
    rc, out, err = cli("model", "import", wrapped)
    assert rc == 0, err
    assert "model_type 'llava' is multimodal: the language model under text_config (model_type 'qwen3') was imported" in out
    assert 'architecture = "qwen3"' in out and "hidden_size = 4096" in out


def test_a_multimodal_config_with_top_level_text_keys_imports_its_text_config(tmp_path):
    """Qwen2.5-VL layout: the text keys at the top level too, under the wrapper's model_type and a
    ...ForConditionalGeneration architecture (refused as no causal LM); the text_config that carries
    hidden_size is the language model."""
    text = json.loads((VENDORED / "qwen3-8b.json").read_text())
    cfg = {**text, "model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"],
           "text_config": text, "vision_config": VISION}
    table = hf_config_to_model_table(write(tmp_path, cfg))
    assert table["architecture"] == "qwen3"
    assert (table["hidden_size"], table["num_layers"], table["num_kv_heads"]) == (4096, 36, 8)


def test_a_multimodal_fp8_release_keeps_its_top_level_quantization_config(tmp_path, cli):
    """An FP8 multimodal release (Qwen3-VL-...-FP8 layout) writes quantization_config beside
    text_config, not in it: the weights are FP8 (quant_method fp8, E4M3 by default, as the plain
    config with the same table says), not bf16, and the note names the key taken from the top."""
    text = json.loads((VENDORED / "qwen3-8b.json").read_text())
    text.pop("quantization_config", None)
    qc = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
    (tmp_path / "plain").mkdir()
    plain = hf_config_to_model_table(write(tmp_path / "plain", {**text, "quantization_config": qc}, "m.json"))
    assert plain["native_weights_format"] == "fp8_e4m3"
    wrapped = write(tmp_path, {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
                               "text_config": text, "vision_config": VISION, "quantization_config": qc}, "m.json")
    assert hf_config_to_model_table(wrapped) == plain
    rc, out, err = cli("model", "import", wrapped)
    assert rc == 0, err
    assert "quantization_config the top level's" in out, out


@pytest.mark.parametrize("text, got", [([1, 2], "[1, 2]"), ("qwen3", '"qwen3"'), (None, "null")])
def test_a_text_config_that_is_no_table_is_refused_as_such(tmp_path, cli, text, got):
    """A wrapper's text_config that is no JSON object was blamed on the wrapper's architectures
    ("... is not a causal language model"); the error names the file and text_config. A null one
    beside a wrapper without hidden_size is refused too: the dimensions are not in the file."""
    f = write(tmp_path, {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
                         "text_config": text, "vision_config": VISION})
    rc, out, err = cli("model", "import", f)
    assert rc == 2 and out == "" and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"error: {f}: text_config: expected a table (the language model of a multimodal "
                          f"config) (got {got})"), err
    assert "architectures" not in err, err


def test_a_null_text_config_beside_a_plain_config_is_as_absent(tmp_path):
    """null is JSON's "no value": a plain config (hidden_size at its top level) with
    "text_config": null imports as the same config without it; a list there is refused."""
    cfg = json.loads((VENDORED / "qwen3-8b.json").read_text())
    (tmp_path / "plain").mkdir()
    plain = hf_config_to_model_table(write(tmp_path / "plain", cfg, "m.json"))
    assert hf_config_to_model_table(write(tmp_path, {**cfg, "text_config": None}, "m.json")) == plain
    with pytest.raises(CodesignError, match=r"m\.json: text_config: expected a table .*\(got \[\]\)"):
        hf_config_to_model_table(write(tmp_path, {**cfg, "text_config": []}, "m.json"))


@pytest.mark.parametrize("text, match", [
    # llava-1.5-7b as released: the dimensions are LlamaConfig's defaults, not written in the file
    ({"model_type": "llama", "vocab_size": 32064, "torch_dtype": "float16"}, r"text_config\.hidden_size: missing"),
    ({"hidden_size": 4096, "num_hidden_layers": 36}, r"text_config\.model_type: missing"),
])
def test_a_multimodal_config_names_the_text_config_key_it_lacks(tmp_path, cli, text, match):
    f = write(tmp_path, {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
                         "text_config": text, "vision_config": VISION, "vocab_size": 32064})
    rc, out, err = cli("model", "import", f)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.search(match, err) and "model_type 'llava' is multimodal" in err, err


# Qwen/Qwen2.5-VL-3B-Instruct config.json as released (huggingface.co/Qwen/Qwen2.5-VL-3B-Instruct;
# the vision_config shortened): the text keys at the top level, no text_config. transformers'
# Qwen2_5_VLConfig builds its text config from them (configuration_qwen2_5_vl.py: "For BC use all
# kwargs to init TextConfig"), and the decoder is Qwen2's (Qwen2_5_VLAttention: biased q/k/v,
# head_dim = hidden_size / num_attention_heads; Qwen2MLP) under multimodal RoPE.
QWEN25_VL_3B = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "vision_start_token_id": 151652,
    "vision_end_token_id": 151653, "vision_token_id": 151654, "image_token_id": 151655,
    "video_token_id": 151656, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 11008, "max_position_embeddings": 128000, "max_window_layers": 70,
    "model_type": "qwen2_5_vl", "num_attention_heads": 16, "num_hidden_layers": 36,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.41.2",
    "use_cache": True, "use_sliding_window": False,
    "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
                      "num_heads": 16, "out_hidden_size": 2048, "patch_size": 14},
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "vocab_size": 151936,
}
#: what the released config says, read by Qwen2's rules
QWEN25_VL_3B_TEXT = {"architecture": "qwen2", "hidden_size": 2048, "num_layers": 36, "vocab_size": 151936,
                     "tie_word_embeddings": True, "attention": "gqa", "num_attention_heads": 16,
                     "num_kv_heads": 2, "head_dim": 2048 // 16, "intermediate_size": 11008,
                     "native_weights_format": "bf16"}


def test_the_original_qwen25_vl_layout_imports_its_top_level_text_keys(tmp_path, cli):
    """model_type qwen2_5_vl without text_config was refused as "not a causal language model"
    although Qwen2.5-VL was said to be supported; it is the Qwen2 decoder of its top-level keys
    (use_sliding_window false: no sliding layers), and the fragment says it is multimodal."""
    f = write(tmp_path, QWEN25_VL_3B)
    table = hf_config_to_model_table(f)
    assert {k: table[k] for k in QWEN25_VL_3B_TEXT} == QWEN25_VL_3B_TEXT
    assert "layer_types" not in table
    rc, out, err = cli("model", "import", f)
    assert rc == 0, err
    assert "model_type 'qwen2_5_vl' is multimodal, without text_config" in out
    assert "vision tower is not priced" in out and "qwen2 q/k/v biases" in out


def test_a_qwen25_vl_config_resaved_by_recent_transformers_imports(tmp_path):
    """A re-save by recent transformers adds text_config with model_type qwen2_5_vl_text (Qwen2_5_VL
    TextConfig) and may copy the wrapper's architectures into it; that was refused ("... is not a
    causal language model ... 'qwen2_5_vl_text' is not a known decoder-only transformer"). It is
    the same Qwen2 decoder as the original layout."""
    text = {k: v for k, v in QWEN25_VL_3B.items() if k != "vision_config"}
    text["model_type"] = "qwen2_5_vl_text"
    for t in (text, {k: v for k, v in text.items() if k != "architectures"}):
        table = hf_config_to_model_table(write(tmp_path, {**QWEN25_VL_3B, "text_config": t}))
        assert {k: table[k] for k in QWEN25_VL_3B_TEXT} == QWEN25_VL_3B_TEXT


@pytest.mark.parametrize("stem, text_type, family, wrapper", [
    ("qwen3-8b", "qwen3_vl_text", "qwen3", "Qwen3VLForConditionalGeneration"),
    ("qwen3-30b-a3b", "qwen3_vl_moe_text", "qwen3_moe", "Qwen3VLMoeForConditionalGeneration"),
])
def test_qwen3_vl_text_configs_are_read_as_their_family(tmp_path, stem, text_type, family, wrapper):
    """Qwen3VLTextConfig / Qwen3VLMoeTextConfig (configuration_qwen3_vl*.py) carry Qwen3's and
    Qwen3-MoE's keys (num_experts, num_experts_per_tok, moe_intermediate_size, decoder_sparse_step,
    mlp_only_layers): a text_config of that model_type, with the wrapper's architectures copied into
    it, imports as the same config under model_type qwen3 / qwen3_moe."""
    cfg = json.loads((VENDORED / f"{stem}.json").read_text())
    assert cfg["model_type"] == family
    (tmp_path / "plain").mkdir()
    plain = hf_config_to_model_table(write(tmp_path / "plain", cfg, "m.json"))
    text = {**cfg, "model_type": text_type, "architectures": [wrapper]}
    wrapped = hf_config_to_model_table(write(tmp_path, {"architectures": [wrapper], "model_type": text_type[:-5],
                                                        "text_config": text, "vision_config": VISION}, "m.json"))
    assert wrapped == plain and wrapped["architecture"] == family


def test_a_multimodal_wrapper_without_text_config_is_refused_as_such(tmp_path, cli):
    """Another wrapper's model_type (Qwen3VLConfig does not read top-level text keys) without
    text_config: the error says it is a multimodal config without text_config."""
    f = write(tmp_path, {**QWEN25_VL_3B, "model_type": "qwen3_vl",
                         "architectures": ["Qwen3VLForConditionalGeneration"]})
    rc, out, err = cli("model", "import", f)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{f}: architectures:" in err and "a multimodal config without text_config" in err, err


@pytest.mark.parametrize("top, key", [
    ({"quantization_config": {"quant_method": "compressed-tensors"}}, "quantization_config.quant_method"),
    ({"quantization_config": {"quant_method": "fp8", "fmt": "e3m4"}}, "quantization_config.fmt"),
    ({"quantization_config": "fp8"}, "quantization_config"),
    ({"torch_dtype": "int8"}, "torch_dtype"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
])
def test_a_bad_key_taken_from_the_wrappers_top_level_is_named_there(tmp_path, cli, top, key):
    """A key of WRAPPER_KEYS that text_config lacks is read from the top level; when it is bad the
    error named it text_config.KEY, a key the file does not have. Once text_config has the key
    itself, the error names text_config's."""
    text = json.loads((VENDORED / "qwen3-8b.json").read_text())
    for k in top:
        text.pop(k, None)
    f = write(tmp_path, {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
                         "text_config": text, "vision_config": VISION, **top})
    rc, out, err = cli("model", "import", f)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"error: {f}: {key}: "), err
    assert f"{next(iter(top))} from the top level (text_config has none)" in err, err
    f = write(tmp_path, {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
                         "text_config": {**text, **top}, "vision_config": VISION})
    rc, out, err = cli("model", "import", f)
    assert rc == 2 and err.startswith(f"error: {f}: text_config.{key}: "), err


def test_top_level_text_keys_that_disagree_with_text_config_are_noted(tmp_path, cli):
    """A top level that repeats the text keys (Qwen2.5-VL) with other values than text_config's:
    text_config's are used (no error), and the fragment's notes name the disagreeing keys, both
    values and which was used; keys that agree are not named."""
    text = {k: v for k, v in QWEN25_VL_3B.items() if k != "vision_config"}
    text["model_type"] = "qwen2_5_vl_text"
    f = write(tmp_path, {**QWEN25_VL_3B, "hidden_size": 3584, "num_hidden_layers": 28, "text_config": text})
    rc, out, err = cli("model", "import", f)
    assert rc == 0, err
    assert ("the top level's hidden_size = 3584, num_hidden_layers = 28 disagree with text_config's "
            "(hidden_size = 2048, num_hidden_layers = 36); text_config's values were used") in out, out
    assert "hidden_size = 2048  #" in out and "num_layers = 36  #" in out
    rc, out, err = cli("model", "import", write(tmp_path, {**QWEN25_VL_3B, "text_config": text}))
    assert rc == 0 and "disagree" not in out, out
