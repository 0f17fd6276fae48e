"""Import a Hugging Face ``config.json`` into the ``[model]`` table of a codesign spec.

:func:`hf_config_to_model_table` reads the config and returns a dict whose keys are exactly the
fields of :class:`codesign.spec.Model`; :func:`model_toml` writes the same table as TOML with a
comment on every value naming where it came from (the config file and the HF key), so a reviewer
can check each number against the released config.

Supported families (the keys each one reads are those of its ``configuration_*.py`` in
``transformers``):

* dense GQA/MHA: ``llama``, ``mistral``, ``qwen2``, ``qwen3`` and other models using the generic
  keys (``head_dim`` absent → ``hidden_size / num_attention_heads``; ``num_key_value_heads``
  absent → MHA; Mistral-style ``sliding_window`` on every layer when ``layer_types`` is absent;
  Qwen-style ``use_sliding_window`` / ``max_window_layers``);
* MoE: ``gpt_oss`` (``num_local_experts``, ``experts_per_token``, attention sinks, expert and
  router biases, MXFP4 experts), ``mixtral`` (``num_local_experts``), ``qwen2_moe``/``qwen3_moe``
  (``num_experts``, ``decoder_sparse_step``, ``mlp_only_layers``), ``minimax_m2`` (MiniMax-M2/M2.1/
  M2.5: ``num_local_experts``, ``num_experts_per_tok``, ``intermediate_size`` per expert, every layer
  MoE, ``use_routing_bias`` → one score-correction bias per expert, full softmax attention on every
  layer (``attn_type_list`` all 1; a 0, MiniMax-Text-01's lightning attention, is refused),
  ``shared_intermediate_size`` must be 0; the per-layer q/k RMSNorms, partial RoPE (``rotary_dim``)
  and the ``num_mtp_modules`` multi-token-prediction modules are noted, not counted);
* MLA + MoE: ``deepseek_v3``, ``kimi_k2`` (and ``deepseek_v2``): ``q_lora_rank``,
  ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``,
  ``n_routed_experts``, ``n_shared_experts``, ``first_k_dense_replace``, ``moe_layer_freq``; the
  multi-token-prediction module (``num_nextn_predict_layers``) is not part of the served model;
* MLA + DeepSeek sparse attention + MoE: ``glm_moe_dsa`` (GLM-5) and ``deepseek_v32``
  (DeepSeek-V3.2): the MLA keys plus the lightning indexer's ``index_topk``, ``index_n_heads`` and
  ``index_head_dim`` (all required);
* hybrid linear attention + MoE: ``qwen3_next`` and ``qwen3_5_moe`` (Qwen3-Next, Qwen3.5; the
  language model under ``text_config``): ``layer_types`` of ``linear_attention`` (Gated DeltaNet:
  ``linear_num_key_heads``, ``linear_num_value_heads``, ``linear_key_head_dim``,
  ``linear_value_head_dim``, ``linear_conv_kernel_dim``) and ``full_attention`` (gated attention,
  ``attn_output_gate``; absent ``layer_types``: every ``full_attention_interval``-th layer is full),
  ``num_experts`` with ``shared_expert_intermediate_size``; the vision tower and the
  ``mtp_num_hidden_layers`` multi-token-prediction layers are not part of the priced model.

Which configs are imported (the cost model prices decoder-only attention transformers only):

* a multimodal config (a ``text_config`` table: Llava, Qwen2.5-VL, Qwen3-VL, Qwen3.5) is read from
  its ``text_config`` by the rules below (the fragment notes it; errors name ``text_config.<key>``,
  or the top-level key for one of :data:`WRAPPER_KEYS` taken from the top level). A ``…For
  ConditionalGeneration`` ``architectures`` inside ``text_config`` (a wrapper's, as a re-save by
  recent ``transformers`` writes it) is ignored: the ``text_config`` is the language model. Where
  the top level repeats a dimension (:data:`DIMENSION_KEYS`) with another value, ``text_config``'s
  is used and the fragment notes both;
* the language-model ``model_type`` of a vision-language release that is a known family's decoder
  under multimodal RoPE (:data:`TEXT_FAMILY`: ``qwen2_5_vl_text``, ``qwen2_vl_text`` → ``qwen2``,
  ``qwen3_vl_text`` → ``qwen3``, ``qwen3_vl_moe_text`` → ``qwen3_moe``) is read with that family's
  keys; so is the original Qwen2-VL/Qwen2.5-VL layout without ``text_config`` (``model_type``
  ``qwen2_vl``/``qwen2_5_vl`` with the text keys at the top level, which ``Qwen2_5_VLConfig`` reads
  as its text config); a multimodal wrapper of another ``model_type`` without ``text_config`` is
  refused as such;
* a ``model_type`` of :data:`DECODER_TYPES` (the families above) is read with that family's keys;
* a ``model_type`` of :data:`NOT_PRICEABLE` (state-space and recurrent models such as ``mamba`` or
  ``rwkv``, attention/SSM hybrids such as ``jamba``, encoder-only models such as ``bert``,
  encoder-decoder models such as ``t5``) is refused, whatever keys it carries;
* any other ``model_type`` is imported with the generic keys only when its ``architectures`` (if
  given) name a ``…ForCausalLM`` and it has every attention and FFN key: ``hidden_size``,
  ``num_hidden_layers``, ``vocab_size``, ``num_attention_heads`` and ``intermediate_size`` (or an
  experts count); the fragment then carries a note that a gated MLP was assumed.

Whatever cannot be read (a missing required key, a non-integer count, an unknown
``layer_types`` entry or quantization method, a model that is not a priceable transformer) raises
:class:`~codesign.errors.CodesignError` with a one-line message naming the file and the key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .errors import CodesignError, SpecError

__all__ = ["hf_config_to_model_table", "model_toml", "import_entries"]

#: HF ``layer_types`` entries this importer understands, and their spec spelling.
LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "linear_attention": "linear"}

#: ``model_type`` values whose attention is DeepSeek's multi-head latent attention.
MLA_TYPES = {"deepseek_v3", "kimi_k2", "deepseek_v2", "glm_moe_dsa", "deepseek_v32"}

#: MLA types with DeepSeek sparse attention (a lightning indexer picks ``index_topk`` positions).
DSA_TYPES = {"glm_moe_dsa", "deepseek_v32"}

#: Hybrids of Gated DeltaNet linear attention and gated full attention (Qwen3-Next, Qwen3.5; the
#: ``*_text`` spellings are the language model's ``model_type`` inside ``text_config``).
HYBRID_TYPES = {"qwen3_next", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_5", "qwen3_5_text"}

#: Decoder-only attention transformers whose ``configuration_*.py`` keys this importer reads (see
#: the module docstring); any other ``model_type`` goes through the generic rule below.
DECODER_TYPES = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss",
                 "minimax_m2", *MLA_TYPES, *HYBRID_TYPES}

#: Language-model ``model_type`` values of vision-language releases whose decoder is a known
#: family's, read with that family's keys (``transformers`` ``configuration_qwen2_5_vl.py``,
#: ``configuration_qwen2_vl.py``: ``Qwen2_5_VLTextConfig``/``Qwen2VLTextConfig`` carry Qwen2's keys
#: and the decoder is Qwen2's, biased q/k/v, under multimodal RoPE, which changes no count;
#: ``configuration_qwen3_vl.py``/``configuration_qwen3_vl_moe.py``: Qwen3's and Qwen3-MoE's keys,
#: ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``, ``decoder_sparse_step``,
#: ``mlp_only_layers``). ``qwen2_vl``/``qwen2_5_vl`` are the wrapper's own ``model_type``: a config
#: without ``text_config`` has the text keys at its top level, and ``Qwen2_5_VLConfig`` builds its
#: text config from them. (``qwen3_vl`` is not listed: ``Qwen3VLConfig`` does not read top-level
#: text keys.)
TEXT_FAMILY = {"qwen2_vl_text": "qwen2", "qwen2_5_vl_text": "qwen2", "qwen2_vl": "qwen2",
               "qwen2_5_vl": "qwen2", "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe"}

#: Keys a config of another ``model_type`` must all have to be imported as a decoder-only
#: transformer (plus ``intermediate_size`` or an experts count for the FFN).
GENERIC_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads")

#: The language model's dimensions: when a multimodal config's top level repeats one of them with
#: another value than its ``text_config``'s, the fragment notes it (``text_config``'s is used).
DIMENSION_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads",
                  "num_key_value_heads", "head_dim", "intermediate_size", "moe_intermediate_size",
                  "n_routed_experts", "num_local_experts", "num_experts", "num_experts_per_tok")

#: Families the cost model cannot price, and why (refused whatever keys they carry).
_SSM = "a state-space/recurrent model (no attention layers)"
_HYBRID = "a hybrid of attention and state-space or linear-attention layers"
_ENCODER = "an encoder-only model (no autoregressive decode)"
_ENCDEC = "an encoder-decoder model"
NOT_PRICEABLE = {
    **dict.fromkeys(("mamba", "mamba2", "falcon_mamba", "rwkv", "rwkv5", "rwkv6", "rwkv7", "xlstm"), _SSM),
    **dict.fromkeys(("jamba", "zamba", "zamba2", "bamba", "falcon_h1", "nemotron_h", "granitemoehybrid",
                     "recurrent_gemma", "lfm2", "minimax"), _HYBRID),
    **dict.fromkeys(("bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra", "deberta",
                     "deberta-v2", "modernbert"), _ENCODER),
    **dict.fromkeys(("t5", "mt5", "umt5", "bart", "mbart", "whisper", "pegasus", "marian"), _ENCDEC),
}

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
#: Keys of a multimodal wrapper's top level that describe its language model when its
#: ``text_config`` lacks them: embedding tying (Qwen3.5) and the checkpoint's storage format (an FP8
#: release's ``quantization_config`` and the ``torch_dtype``/``dtype`` sit beside ``text_config``).
WRAPPER_KEYS = ("tie_word_embeddings", "quantization_config", "torch_dtype", "dtype")

#: ``quantization_config.fmt`` spellings of the FP8 formats (torch dtype names) → ``e4m3``/``e5m2``.
_FP8_FMT = {"float8_e4m3fn": "e4m3", "float8_e4m3": "e4m3", "float8_e5m2": "e5m2"}


class _Entries:
    """Ordered ``(key, value, comment)`` triples: the table plus where each value came from."""

    def __init__(self, fname: str):
        self.fname = fname
        self.items: list[tuple[str, Any, str]] = []
        self.notes: list[str] = []

    def add(self, key: str, value: Any, how: str) -> None:
        self.items.append((key, value, f"{self.fname}: {how}"))

    def table(self) -> dict:
        return {k: v for k, v, _ in self.items}


def _fail(fname: str, key: str, msg: str):
    raise CodesignError(f"{fname}: {key}: {msg}")


def _int(cfg: dict, key: str, fname: str, *, required: bool = True, default=None,
         minimum: int = 1):
    """A whole-number count from the config (``bool`` and ``128.0`` are refused)."""
    if key not in cfg or cfg[key] is None:
        if required:
            _fail(fname, key, "missing (required)")
        return default
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int):
        _fail(fname, key, f"expected a whole number (got {v!r})")
    if v < minimum:
        _fail(fname, key, f"must be a whole number >= {minimum} (got {v})")
    return v


def _bool(cfg: dict, key: str, fname: str, default: bool) -> bool:
    v = cfg.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        _fail(fname, key, f"expected true or false (got {v!r})")
    return v


def _read_config(path: str | os.PathLike, display: str | None = None) -> tuple[dict, str, dict | None]:
    """``(config, name for messages, multimodal wrapper or None)``; ``display`` defaults to the
    file's base name.

    A multimodal config (Llava, Qwen2.5-VL, Qwen3.5: a ``text_config`` table beside a vision
    tower's) gives the language model's config: its ``text_config``, when the top level has no
    ``hidden_size`` or the ``text_config`` has one (a re-saved Qwen2.5-VL repeats the text keys at
    the top level, under its own ``model_type`` and a ``…ForConditionalGeneration`` architecture,
    which the re-save may copy into ``text_config`` too: there it is dropped). A
    ``text_config`` that is no table (a list, a string) is refused; ``null`` is as absent (a plain
    config read from its top level) where the top level has ``hidden_size``, and refused where it
    has none (the language model's dimensions would be its config class's defaults, not the file's)."""
    p = Path(path)
    fname = display or p.name
    shown = display or os.fspath(path)  # as before: read errors name the path
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        from .validate import shared_data_hint

        raise CodesignError(f"{shown}: no such file{shared_data_hint(path)}") from None
    except IsADirectoryError:
        raise CodesignError(f"{shown}: is a directory; expected a Hugging Face config.json") from None
    except UnicodeDecodeError:
        raise CodesignError(f"{shown}: not a UTF-8 text file (expected a Hugging Face config.json)") from None
    except OSError as exc:
        raise CodesignError(f"{shown}: cannot read: {exc.strerror}") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CodesignError(f"{fname}: not valid JSON: {exc}") from None
    if not isinstance(cfg, dict):
        raise CodesignError(f"{fname}: expected a JSON object (a Hugging Face config.json)")
    # Multimodal wrappers keep the language model under text_config.
    inner = cfg.get("text_config")
    if "text_config" in cfg and not isinstance(inner, dict) and (inner is not None or "hidden_size" not in cfg):
        got = json.dumps(inner)
        _fail(fname, "text_config", "expected a table (the language model of a multimodal config) "
              f"(got {got if len(got) <= 60 else got[:57] + '...'})"
              + ("; with no hidden_size at the top level either, the language model's dimensions are not "
                 "in the file" if inner is None else ""))
    if isinstance(inner, dict) and ("hidden_size" not in cfg or "hidden_size" in inner):
        outer = cfg
        cfg = dict(inner)
        # a re-save by recent transformers copies the wrapper's architectures into text_config
        # (["Qwen2_5_VLForConditionalGeneration"]); the text_config is the language model
        archs = cfg.get("architectures")
        if isinstance(archs, list) and archs and all(
                isinstance(a, str) and a.endswith("ForConditionalGeneration") for a in archs):
            del cfg["architectures"]
        # the wrapper may say whether the language model ties its embeddings (Qwen3.5 does) and
        # how the checkpoint is stored (an FP8 release's quantization_config sits at the top level)
        for key in WRAPPER_KEYS:
            if key not in cfg and key in outer:
                cfg[key] = outer[key]
        return cfg, fname, outer
    return cfg, fname, None


def import_entries(path: str | os.PathLike, *, display: str | None = None) -> _Entries:
    """Read a HF config into ordered ``(key, value, source comment)`` entries (see module doc).

    Args:
        display: how error messages name the file (default: its base name); source comments
            always use the base name.
    """
    cfg, fname, outer = _read_config(path, display)
    if outer is None:
        e = _entries(cfg, fname, path)
        if cfg["model_type"] in TEXT_FAMILY and not cfg["model_type"].endswith("_text"):
            e.notes.insert(0, f"{e.fname}: model_type {cfg['model_type']!r} is multimodal, without "
                              "text_config: the language model's keys are the top level's (as its "
                              "config class reads them); the vision tower is not priced")
        return e
    what = (f"model_type {outer['model_type']!r}" if isinstance(outer.get("model_type"), str)
            else "the config")
    taken = [k for k in WRAPPER_KEYS if k not in outer["text_config"] and k in outer]
    try:
        e = _entries(cfg, fname, path)
    except CodesignError as exc:  # every message is "FILE: KEY: what"
        msg = str(exc).removeprefix(f"{fname}: ")
        key = msg.split(": ", 1)[0]
        top = next((k for k in taken if key == k or key.startswith((f"{k}.", f"{k}["))), None)
        if top:  # a key taken from the wrapper's top level is named where it is
            raise CodesignError(f"{fname}: {msg}; {what} is multimodal: its language model is read "
                                f"from text_config, {top} from the top level (text_config has "
                                "none)") from None
        raise CodesignError(f"{fname}: text_config.{msg}; {what} is multimodal: its language "
                            "model is read from text_config") from None
    tie = f", {', '.join(taken)} the top level's" if taken else ""
    e.notes.insert(0, f"{e.fname}: {what} is multimodal: the language model under text_config "
                      f"(model_type {cfg['model_type']!r}) was imported, every key below is "
                      f"text_config's{tie}; the vision tower is not priced")
    # a top level that repeats the text keys (Qwen2.5-VL) with other values: text_config's are used
    inner = outer["text_config"]
    differ = [k for k in DIMENSION_KEYS if outer.get(k) is not None and k in inner and outer[k] != inner[k]]
    if differ:
        one = len(differ) == 1
        top = ", ".join(f"{k} = {json.dumps(outer[k])}" for k in differ)
        text = ", ".join(f"{k} = {json.dumps(inner[k])}" for k in differ)
        e.notes.insert(1, f"{e.fname}: the top level's {top} disagree{'s' if one else ''} with "
                          f"text_config's ({text}); text_config's {'value was' if one else 'values were'} "
                          "used")
    return e


def _entries(cfg: dict, fname: str, path: str | os.PathLike) -> _Entries:
    """:func:`import_entries` of the (language model's) config ``cfg``."""
    e = _Entries(Path(path).name)
    if not isinstance(cfg.get("model_type"), str):
        _fail(fname, "model_type", "missing (required)" if "model_type" not in cfg
              else f"expected a string (got {cfg['model_type']!r})")
    src_mt = cfg["model_type"]
    mt = TEXT_FAMILY.get(src_mt, src_mt)  # a vision-language release's decoder: a known family's
    generic = _check_priceable(cfg, fname, mt)
    mla = mt in MLA_TYPES or "kv_lora_rank" in cfg
    if mla and mt not in MLA_TYPES:
        _fail(fname, "kv_lora_rank", f"latent attention in model_type {src_mt!r} is not supported "
              f"(known MLA types: {', '.join(sorted(MLA_TYPES))})")

    e.add("name", Path(path).stem, "file name")
    e.add("source", e.fname, "file name")
    e.add("architecture", mt, "model_type" if mt == src_mt else
          f"model_type {src_mt!r}: the {mt} decoder (under multimodal RoPE, which changes no count)")

    hidden = _int(cfg, "hidden_size", fname)
    layers = _int(cfg, "num_hidden_layers", fname)
    vocab = _int(cfg, "vocab_size", fname)
    heads = _int(cfg, "num_attention_heads", fname)
    e.add("hidden_size", hidden, "hidden_size")
    e.add("num_layers", layers, "num_hidden_layers")
    e.add("vocab_size", vocab, "vocab_size")
    tie = _bool(cfg, "tie_word_embeddings", fname, False)
    e.add("tie_word_embeddings", tie, "tie_word_embeddings" if "tie_word_embeddings" in cfg
          else "tie_word_embeddings absent (false)")
    ctx = _int(cfg, "max_position_embeddings", fname, required=False)
    if ctx is not None:  # prompt + output the released model serves (RoPE scaling included)
        e.add("context_length", ctx, "max_position_embeddings")
    else:
        e.notes.append(f"{e.fname}: no max_position_embeddings: context_length is not set, so a "
                       "request of any length is priced; set model.context_length in a spec to check it")

    # ---------------------------------------------------------------- attention
    e.add("attention", "mla" if mla else "gqa", f"model_type {src_mt!r}")
    e.add("num_attention_heads", heads, "num_attention_heads")
    if mla:
        nope = _int(cfg, "qk_nope_head_dim", fname)
        rope = _int(cfg, "qk_rope_head_dim", fname)
        e.add("num_kv_heads", heads, "num_attention_heads (MLA: num_key_value_heads is irrelevant; "
              "the cache holds one latent per token)")
        e.add("head_dim", nope + rope, "qk_nope_head_dim + qk_rope_head_dim (query/key head dim)")
    else:
        if "num_key_value_heads" in cfg and cfg["num_key_value_heads"] is not None:
            kv = _int(cfg, "num_key_value_heads", fname)
            e.add("num_kv_heads", kv, "num_key_value_heads")
        else:
            kv = heads
            e.add("num_kv_heads", kv, "num_key_value_heads absent: MHA (= num_attention_heads)")
        if heads % kv:
            _fail(fname, "num_key_value_heads", f"{kv} does not divide num_attention_heads {heads}")
        if cfg.get("head_dim") is not None:
            e.add("head_dim", _int(cfg, "head_dim", fname), "head_dim")
        else:
            if hidden % heads:
                _fail(fname, "head_dim", f"absent and hidden_size {hidden} is not a multiple of "
                      f"num_attention_heads {heads}")
            e.add("head_dim", hidden // heads,
                  "hidden_size / num_attention_heads (head_dim absent)")
    bias = _bool(cfg, "attention_bias", fname, False)
    e.add("attention_bias", bias, "attention_bias" if "attention_bias" in cfg
          else "attention_bias absent (false)")
    if mt == "gpt_oss":
        e.add("attention_sinks", True, "model_type 'gpt_oss': one learned sink logit per head "
              "per layer (GptOssAttention.sinks)")
    if mla:
        q_lora = _int(cfg, "q_lora_rank", fname, required=False)
        if q_lora is not None:
            e.add("q_lora_rank", q_lora, "q_lora_rank")
        e.add("kv_lora_rank", _int(cfg, "kv_lora_rank", fname), "kv_lora_rank")
        e.add("qk_nope_head_dim", nope, "qk_nope_head_dim")
        e.add("qk_rope_head_dim", rope, "qk_rope_head_dim")
        e.add("v_head_dim", _int(cfg, "v_head_dim", fname), "v_head_dim")
    if mt in DSA_TYPES:
        for key in ("index_topk", "index_n_heads", "index_head_dim"):
            e.add(key, _int(cfg, key, fname), f"{key} (DeepSeek sparse attention indexer)")
    if mt in HYBRID_TYPES:
        gate = _bool(cfg, "attn_output_gate", fname, True)
        e.add("attn_output_gate", gate, "attn_output_gate" if "attn_output_gate" in cfg else
              f"attn_output_gate absent: model_type {mt!r} gates attention (q_proj yields query and gate)")

    if mt == "minimax_m2":
        _minimax_m2_attention(cfg, fname, layers)
    lt, how = _layer_types(cfg, fname, layers)
    if lt is None and mt in HYBRID_TYPES:
        every = _int(cfg, "full_attention_interval", fname)
        lt = tuple("full" if (i + 1) % every == 0 else "linear" for i in range(layers))
        how = f"layer i is full attention iff (i + 1) % full_attention_interval ({every}) == 0"
    if lt is not None:
        e.add("layer_types", lt, how)
        if "sliding" in lt:
            e.add("sliding_window", _int(cfg, "sliding_window", fname), "sliding_window")
        if "linear" in lt:
            if mt not in HYBRID_TYPES:
                _fail(fname, f"layer_types[{lt.index('linear')}]", f"linear_attention layers in model_type "
                      f"{mt!r} are not supported (known hybrids: {', '.join(sorted(HYBRID_TYPES))})")
            for key in ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                        "linear_value_head_dim", "linear_conv_kernel_dim"):
                e.add(key, _int(cfg, key, fname), f"{key} (Gated DeltaNet layers)")

    # ---------------------------------------------------------------- FFN
    moe = _moe(cfg, fname, mt, layers)
    if "intermediate_size" in cfg or not moe:
        e.add("intermediate_size", _int(cfg, "intermediate_size", fname), "intermediate_size"
              + (" (dense FFN layers)" if moe and moe["dense_separate"] else
                 " (per expert)" if moe else ""))
    else:
        e.add("intermediate_size", moe["moe_intermediate_size"][0],
              moe["moe_intermediate_size"][1] + " (intermediate_size absent; no dense layer)")
    if "hidden_act" in cfg and cfg["hidden_act"] not in ("silu", "swiglu", "gelu_pytorch_tanh", "gelu"):
        _fail(fname, "hidden_act", f"unknown activation {cfg['hidden_act']!r}")
    e.add("ffn_gated", True, f"model_type {src_mt!r}: gated (GLU) MLP, gate/up/down projections")
    if "mlp_bias" in cfg:
        e.add("mlp_bias", _bool(cfg, "mlp_bias", fname, False), "mlp_bias")
    if moe:
        e.add("moe_layers", moe["moe_layers"][0], moe["moe_layers"][1])
        for key in ("num_experts", "experts_per_token", "moe_intermediate_size", "num_shared_experts"):
            if key in moe:
                e.add(key, *moe[key])
        if mt == "gpt_oss":
            e.add("expert_bias", True, "model_type 'gpt_oss': gate_up_proj_bias, down_proj_bias")
            e.add("router_bias", True, "model_type 'gpt_oss': router Linear(bias=True)")
        elif mla and cfg.get("topk_method") == "noaux_tc":
            e.add("router_bias", True, "topk_method 'noaux_tc': e_score_correction_bias "
                  "(one per routed expert)")
        elif mt == "minimax_m2" and _bool(cfg, "use_routing_bias", fname, False):
            e.add("router_bias", True, "use_routing_bias: e_score_correction_bias (one per routed "
                  "expert, MiniMaxM2SparseMoeBlock)")

    # ---------------------------------------------------------------- formats
    w, m, how = _formats(cfg, fname)
    e.add("native_weights_format", w, how)
    e.add("native_moe_weights_format", m, how)

    # ---------------------------------------------------------------- notes
    if mla:
        e.notes.append(f"{e.fname}: num_key_value_heads = {cfg.get('num_key_value_heads')} is "
                       "irrelevant for MLA (the KV cache is kv_lora_rank + qk_rope_head_dim per token "
                       "per layer)")
    nextn = cfg.get("num_nextn_predict_layers")
    if nextn:
        e.notes.append(f"{e.fname}: num_nextn_predict_layers = {nextn}: the multi-token-prediction "
                       "module is not part of the served model and is not counted")
    if mt == "minimax_m2":
        if cfg.get("num_mtp_modules") and cfg.get("use_mtp", True):
            e.notes.append(f"{e.fname}: num_mtp_modules = {cfg['num_mtp_modules']}: the "
                           "multi-token-prediction modules are not part of the served model and are "
                           "not counted")
        if cfg.get("use_qk_norm"):
            e.notes.append(f"{e.fname}: minimax_m2 q_norm/k_norm (qk_norm_type "
                           f"{cfg.get('qk_norm_type', 'per_layer')!r}: RMSNorms over all query and key "
                           "heads of a layer) are not modelled")
        if cfg.get("rotary_dim") is not None:
            e.notes.append(f"{e.fname}: rotary_dim = {cfg['rotary_dim']} of head_dim "
                           f"{cfg.get('head_dim')}: partial RoPE changes no parameter or FLOP count "
                           "modelled here")
    if mt in ("qwen3", "qwen3_moe"):
        e.notes.append(f"{e.fname}: {mt} per-head q_norm/k_norm (2 x head_dim per layer) is not "
                       "modelled")
    if mt in HYBRID_TYPES:
        e.notes.append(f"{e.fname}: {mt}: text backbone only (a vision tower is not priced); "
                       "the linear-attention recurrent state is kept in float32 when served")
        mtp = cfg.get("mtp_num_hidden_layers")
        if mtp:
            e.notes.append(f"{e.fname}: mtp_num_hidden_layers = {mtp}: the multi-token-prediction "
                           "layers are not part of the served model and are not counted")
    if mt in ("qwen2", "qwen2_moe"):
        e.notes.append(f"{e.fname}: {mt} q/k/v biases (o_proj has none) are not modelled")
    if generic:
        e.notes.append(f"{e.fname}: model_type {mt!r} is not one of the importer's known families; "
                       "imported from the generic keys as a decoder-only transformer with a gated "
                       "(GLU) MLP: check the values against the model's code")
    return e


def _check_priceable(cfg: dict, fname: str, mt: str) -> bool:
    """Refuse a config the cost model cannot price as a decoder-only attention transformer.

    Returns ``True`` when ``mt`` is not a known family and the config is accepted on its generic
    keys (see :data:`DECODER_TYPES`, :data:`NOT_PRICEABLE`, :data:`GENERIC_KEYS`).
    """
    if mt in NOT_PRICEABLE:
        _fail(fname, "model_type", f"{mt!r} is {NOT_PRICEABLE[mt]}; the cost model prices decoder-only "
              "attention transformers only")
    if mt in DECODER_TYPES:
        return False
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and not any(
            isinstance(a, str) and a.endswith("ForCausalLM") for a in archs):
        if any(isinstance(a, str) and a.endswith("ForConditionalGeneration") for a in archs):
            _fail(fname, "architectures", f"{archs}: a multimodal config without text_config, and "
                  f"model_type {mt!r} is not one whose top-level keys are its language model's "
                  f"({', '.join(k for k, v in TEXT_FAMILY.items() if not k.endswith('_text'))}); "
                  "expected the language model's config under text_config")
        _fail(fname, "architectures", f"{archs} is not a causal language model (…ForCausalLM) and "
              f"model_type {mt!r} is not a known decoder-only transformer "
              f"(known: {', '.join(sorted(DECODER_TYPES))})")
    missing = [k for k in GENERIC_KEYS if cfg.get(k) is None]
    if not any(cfg.get(k) for k in ("intermediate_size", "n_routed_experts", "num_local_experts",
                                     "num_experts")):
        missing.append("intermediate_size")
    if missing:
        also = f" (also missing: {', '.join(missing[1:])})" if missing[1:] else ""
        _fail(fname, missing[0], f"missing{also}: model_type {mt!r} is not a known decoder-only "
              f"transformer ({', '.join(sorted(DECODER_TYPES))}), and another model type is imported "
              f"only with every attention and FFN key: {', '.join(GENERIC_KEYS)}, intermediate_size")
    return True


def _minimax_m2_attention(cfg: dict, fname: str, layers: int) -> None:
    """Refuse a ``minimax_m2`` config whose layers are not all full softmax attention.

    ``attn_type_list`` (MiniMax's ``configuration_minimax_m2.py``): 1 is full softmax attention, 0
    MiniMax-Text-01's lightning (linear) attention, which the cost model does not price.
    """
    atl = cfg.get("attn_type_list")
    if atl is None:
        return
    if not isinstance(atl, list):
        _fail(fname, "attn_type_list", f"expected a list (got {atl!r})")
    if len(atl) != layers:
        _fail(fname, "attn_type_list", f"has {len(atl)} entries for num_hidden_layers = {layers}")
    for i, t in enumerate(atl):
        if isinstance(t, bool) or t != 1:
            _fail(fname, f"attn_type_list[{i}]", f"{t!r} is not full softmax attention (1); "
                  "minimax_m2 layers of another attention type (0: lightning attention) are not "
                  "supported")


def _layer_types(cfg: dict, fname: str, layers: int):
    """``(tuple or None, source)``: the per-layer attention kind."""
    if cfg.get("layer_types") is not None:
        lt = cfg["layer_types"]
        if not isinstance(lt, list):
            _fail(fname, "layer_types", f"expected a list (got {lt!r})")
        if len(lt) != layers:
            _fail(fname, "layer_types", f"has {len(lt)} entries for num_hidden_layers = {layers}")
        out = []
        for i, t in enumerate(lt):
            if t not in LAYER_TYPES:
                _fail(fname, f"layer_types[{i}]", f"unknown layer type {t!r} (known: "
                      f"{', '.join(LAYER_TYPES)})")
            out.append(LAYER_TYPES[t])
        return tuple(out), "layer_types"
    sw = cfg.get("sliding_window")
    if sw is None or cfg.get("use_sliding_window") is False:
        return None, ""
    if "max_window_layers" in cfg:
        mwl = _int(cfg, "max_window_layers", fname, minimum=0)
        return (tuple("full" if i < mwl else "sliding" for i in range(layers)),
                "sliding_window on layers >= max_window_layers (Qwen2 convention)")
    return (("sliding",) * layers,
            "sliding_window on every layer (no layer_types; Mistral convention)")


#: Model types whose experts are ``intermediate_size`` wide (their HF MoE blocks size each expert
#: by it: MixtralSparseMoeBlock, GptOssMLP, MiniMaxM2SparseMoeBlock); every other MoE type has a
#: ``moe_intermediate_size`` and is refused without it.
EXPERT_WIDTH_IS_INTERMEDIATE = frozenset({"mixtral", "gpt_oss", "minimax_m2"})


#: The HF keys of a MoE model's routed-experts count (DeepSeek, Mixtral/gpt-oss/MiniMax, Qwen).
EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts")


def _moe(cfg: dict, fname: str, mt: str, layers: int) -> dict | None:
    """The MoE entries ``{spec key: (value, source)}``, or ``None`` for a dense model."""
    ekey = next((k for k in EXPERT_KEYS if cfg.get(k)), None)
    k_keys = [k for k in ("experts_per_token", "num_experts_per_tok") if cfg.get(k) is not None]
    if ekey is None:
        zero = next((k for k in EXPERT_KEYS if cfg.get(k) == 0 and not isinstance(cfg[k], bool)), None)
        if zero and any(cfg.get(k) for k in k_keys):  # routes tokens to experts it does not have
            _fail(fname, zero, f"0 experts, but {k_keys[0]} = {cfg[k_keys[0]]!r} routes each token "
                  "to experts; expected the experts count")
        return None
    n = _int(cfg, ekey, fname)
    out: dict = {"num_experts": (n, ekey)}
    if not k_keys:
        _fail(fname, "num_experts_per_tok", "missing (required for a MoE model)")
    vals = {k: _int(cfg, k, fname) for k in k_keys}
    if len(set(vals.values())) > 1:
        _fail(fname, "experts_per_token", f"disagrees with num_experts_per_tok ({vals})")
    if vals[k_keys[0]] > n:
        _fail(fname, k_keys[0], f"{vals[k_keys[0]]} experts per token, more than the {n} experts ({ekey})")
    out["experts_per_token"] = (vals[k_keys[0]], " = ".join(k_keys))
    if cfg.get("moe_intermediate_size") is not None:
        mi = _int(cfg, "moe_intermediate_size", fname)
        out["moe_intermediate_size"] = (mi, "moe_intermediate_size")
        out["dense_separate"] = True
    elif mt in EXPERT_WIDTH_IS_INTERMEDIATE:
        mi = _int(cfg, "intermediate_size", fname)
        out["moe_intermediate_size"] = (mi, "intermediate_size (per expert)")
        out["dense_separate"] = False
    else:  # HF's config class would fill in its own default, another model's width
        _fail(fname, "moe_intermediate_size", f"missing (required for a {mt} MoE model: the experts' "
              "width; only " + ", ".join(sorted(EXPERT_WIDTH_IS_INTERMEDIATE)) + " size experts by "
              "intermediate_size)")

    if mt in MLA_TYPES or "first_k_dense_replace" in cfg or "moe_layer_freq" in cfg:
        first = _int(cfg, "first_k_dense_replace", fname, required=False, default=0, minimum=0)
        freq = _int(cfg, "moe_layer_freq", fname, required=False, default=1)
        ml = tuple(i >= first and i % freq == 0 for i in range(layers))
        how = (f"layer i is MoE iff i >= first_k_dense_replace ({first}) and "
               f"i % moe_layer_freq ({freq}) == 0")
    elif "decoder_sparse_step" in cfg or "mlp_only_layers" in cfg:
        step = _int(cfg, "decoder_sparse_step", fname, required=False, default=1)
        only = cfg.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                 for i in only):
            _fail(fname, "mlp_only_layers", f"expected a list of layer indices (got {only!r})")
        ml = tuple(i not in only and (i + 1) % step == 0 for i in range(layers))
        how = (f"layer i is MoE iff i not in mlp_only_layers ({only}) and "
               f"(i + 1) % decoder_sparse_step ({step}) == 0")
    else:
        ml = (True,) * layers
        how = f"{ekey}: every layer is MoE"
    if not any(ml):  # e.g. first_k_dense_replace at or above the layer count: a dense model in disguise
        key = next((k for k in ("first_k_dense_replace", "mlp_only_layers") if k in how), ekey)
        _fail(fname, key, f"no layer is MoE ({how}, {layers} layers) although the config has {n} experts")
    out["moe_layers"] = (ml, how)

    if mt == "minimax_m2" and cfg.get("shared_intermediate_size"):
        _fail(fname, "shared_intermediate_size", f"{cfg['shared_intermediate_size']!r}: minimax_m2 "
              "shared experts are not supported (MiniMaxM2SparseMoeBlock has none; expected 0)")
    if cfg.get("n_shared_experts") is not None:
        out["num_shared_experts"] = (_int(cfg, "n_shared_experts", fname, minimum=0),
                                     "n_shared_experts")
    elif cfg.get("shared_expert_intermediate_size"):
        s = _int(cfg, "shared_expert_intermediate_size", fname)
        if s % mi:
            _fail(fname, "shared_expert_intermediate_size",
                  f"{s} is not a multiple of the expert size {mi}")
        out["num_shared_experts"] = (s // mi, "shared_expert_intermediate_size / "
                                     "moe_intermediate_size (shared_expert_gate not modelled)")
    return out


def _formats(cfg: dict, fname: str) -> tuple[str, str, str]:
    """``(native_weights_format, native_moe_weights_format, source)`` of the checkpoint."""
    qc = cfg.get("quantization_config")
    if not qc:
        key = "torch_dtype" if "torch_dtype" in cfg else "dtype" if "dtype" in cfg else None
        if key is None:
            return "bf16", "bf16", "no quantization_config or torch_dtype (bf16 assumed)"
        dt = cfg[key]
        if dt not in _DTYPES:
            _fail(fname, key, f"unknown dtype {dt!r} (known: {', '.join(_DTYPES)})")
        return _DTYPES[dt], _DTYPES[dt], key
    if not isinstance(qc, dict):
        _fail(fname, "quantization_config", f"expected a table (got {qc!r})")
    method = qc.get("quant_method")
    if method == "mxfp4":
        keep = qc.get("modules_to_not_convert") or []
        w = "bf16" if any("self_attn" in m for m in keep) else "mxfp4"
        return w, "mxfp4", ("quantization_config.quant_method 'mxfp4' (experts); "
                            "modules_to_not_convert keeps attention, router, embeddings, lm_head "
                            "in bf16" if w == "bf16" else "quantization_config.quant_method 'mxfp4'")
    if method == "fp8":
        raw = qc.get("fmt", "e4m3")
        # the torch dtype spelling (MiniMax-M2: "float8_e4m3fn") names the same formats
        fmt = _FP8_FMT.get(raw, raw) if isinstance(raw, str) else raw
        if fmt not in ("e4m3", "e5m2"):
            _fail(fname, "quantization_config.fmt", f"unknown fp8 format {raw!r} (known: "
                  f"e4m3, e5m2, {', '.join(_FP8_FMT)})")
        block = qc.get("weight_block_size")
        how = f"quantization_config.quant_method 'fp8', fmt {raw!r}" + (
            f", weight_block_size {block}" if block else "")
        return f"fp8_{fmt}", f"fp8_{fmt}", how
    _fail(fname, "quantization_config.quant_method",
          f"unknown quantization method {method!r} (known: fp8, mxfp4)")


def hf_config_to_model_table(path: str | os.PathLike, *, display: str | None = None) -> dict:
    """The ``[model]`` table (keys are :class:`codesign.spec.Model` fields) of a HF config.

    The table is validated through :func:`codesign.spec.spec_from_dict` before it is returned.

    Args:
        display: how error messages name the file (default: its base name).

    Raises:
        CodesignError: a key the importer cannot read, or a model it cannot price; the message
            names the file and the key.
    """
    table = import_entries(path, display=display).table()
    _validate(table, display or Path(path).name)
    return table


def _validate(table: dict, fname: str):
    from .spec import Model, spec_from_dict

    try:
        return spec_from_dict(table, cls=Model, file=fname)
    except SpecError as exc:
        raise CodesignError(f"{fname}: imported model is not valid: {exc}") from None


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")  # pragma: no cover


def _wrap_array(key: str, v: tuple, comment: str, width: int = 96) -> str:
    items = [_toml_value(x) for x in v]
    lines, cur = [], ""
    for it in items:
        piece = it + ","
        if cur and len(cur) + 1 + len(piece) > width - 4:
            lines.append(cur)
            cur = piece
        else:
            cur = f"{cur} {piece}" if cur else piece
    if cur:
        lines.append(cur)
    body = "\n".join("    " + ln for ln in lines)
    return f"# {comment}\n{key} = [\n{body}\n]"


def model_toml(path: str | os.PathLike, *, command: str | None = None, display: str | None = None) -> str:
    """A complete spec fragment (a ``[model]`` table) with one source comment per value.

    Args:
        path: the HF ``config.json``.
        command: the command line to record in the header (default
            ``codesign model import PATH``).
        display: how error messages name the file (default: its base name).
    """
    entries = import_entries(path, display=display)
    _validate(entries.table(), display or entries.fname)
    cmd = command or f"codesign model import {os.fspath(path)}"
    out = [f"# Generated by `{cmd}`.",
           f"# Every value names its source: {entries.fname} and the Hugging Face key it came from.",
           "# Re-run the command rather than editing by hand."]
    out += [f"# Note: {n}" for n in entries.notes]
    out += ["", "[model]"]
    for key, value, comment in entries.items:
        line = f"{key} = {_toml_value(value)}  # {comment}"
        if isinstance(value, tuple) and len(line) > 100:
            out.append(_wrap_array(key, value, comment))
        else:
            out.append(line)
    return "\n".join(out) + "\n"
