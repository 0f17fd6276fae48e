"""``codesign model``: import a Hugging Face config, show a model's accounting.

* ``codesign model import CONFIG.json [-o OUT.toml]`` writes a ``[model]`` spec fragment with a
  source comment on every value (stdout by default).
* ``codesign model show CONFIG_OR_SPEC [--isl N] [--json]`` prints parameter counts, KV-cache size
  and FLOPs per token of a HF config or of a TOML spec (or fragment) with a ``[model]`` table.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..errors import CodesignError, SpecError
from ._common import EXIT_BUG, EXIT_SIGNALS, whole_type

SCHEMA_VERSION = 1
DEFAULT_ISL = 8192


def register(sub) -> None:
    p = sub.add_parser("model", help="import a Hugging Face config; show a model's accounting",
                       epilog="Exit codes: those of the ACTION (`codesign model ACTION --help`); 2 without one.")
    psub = p.add_subparsers(dest="model_command", metavar="ACTION")

    ip = psub.add_parser("import", help="HF config.json -> [model] spec fragment (TOML)",
                         description="Write the [model] table of a Hugging Face config.json. Only "
                                     "decoder-only attention transformers are imported: a known "
                                     "model_type (llama, mistral, qwen2/3, mixtral, qwen2/3_moe, gpt_oss, "
                                     "deepseek_v2/v3, kimi_k2), or another one whose architectures name "
                                     "a ...ForCausalLM and that has hidden_size, num_hidden_layers, "
                                     "vocab_size, num_attention_heads and intermediate_size; state-space, "
                                     "hybrid, encoder-only and encoder-decoder models are refused. A "
                                     "multimodal config is read from its text_config (the language "
                                     "model; the vision tower is not priced), a Qwen2-VL/Qwen2.5-VL one "
                                     "without text_config from its top-level text keys; the language "
                                     "models of Qwen2-VL, Qwen2.5-VL and Qwen3-VL (qwen2_vl_text, "
                                     "qwen2_5_vl_text, qwen3_vl_text, qwen3_vl_moe_text) are read as "
                                     "qwen2, qwen3 and qwen3_moe.",
                         epilog="Exit codes: 0 the TOML was written (stdout or -o); 2 bad input (a missing or "
                                "unreadable config, a model that is not imported, an -o that cannot be written "
                                f"or is the config; one line on stderr); {EXIT_BUG}; {EXIT_SIGNALS}.")
    ip.add_argument("config", help="a Hugging Face config.json")
    ip.add_argument("-o", "--output", help="write the TOML here (default: stdout)")
    ip.set_defaults(func=run_import)

    sp = psub.add_parser("show", help="parameters, KV cache and FLOPs per token of a model",
                         epilog="Exit codes: 0 the accounting was printed; 2 bad input (a missing or unreadable "
                                "file, no [model] table, a bad model key or --isl; one line on stderr); "
                                f"{EXIT_BUG}; {EXIT_SIGNALS}.")
    sp.add_argument("source", help="a HF config.json, or a TOML spec/fragment with a [model] table")
    sp.add_argument("--isl", type=whole_type, default=DEFAULT_ISL,
                    help=f"input sequence length for the FLOPs figures (default {DEFAULT_ISL})")
    sp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    sp.set_defaults(func=run_show)

    def _usage(args):
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=_usage)


def run_import(args) -> int:
    from ..model_import import model_toml

    text = model_toml(args.config, display=args.config)  # errors name the path as typed
    if args.output and Path(args.output).exists() and Path(args.output).samefile(args.config):
        raise CodesignError(f"{args.output}: is the input config; writing the TOML there would replace "
                            "the Hugging Face config (give another -o, e.g. specs/models/NAME.toml)")
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CodesignError(f"{args.output}: cannot write: {exc.strerror}") from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def load_model(source: str | os.PathLike):
    """A :class:`~codesign.spec.Model` from a HF ``config.json`` or a TOML file with ``[model]``.

    Raises:
        CodesignError: unreadable file, no ``[model]`` table, or an invalid model.
    """
    from ..model_import import hf_config_to_model_table
    from ..spec import Model, Origins, load_raw, spec_from_dict

    p = Path(source)
    if p.suffix.lower() == ".json":
        shown = os.fspath(source)  # errors name the path as the user typed it
        return spec_from_dict(hf_config_to_model_table(p, display=shown), cls=Model, file=shown)
    try:
        raw, origins = load_raw(p)
    except UnicodeDecodeError:  # spec.load_raw reads text; a binary file is a user error
        raise CodesignError(f"{os.fspath(source)}: not a UTF-8 text file (expected a TOML spec "
                            "or a Hugging Face config.json)") from None
    display = os.path.relpath(p) if not p.is_absolute() else str(p)
    if not isinstance(raw.get("model"), dict):
        raise CodesignError(f"{display}: no [model] table")
    sub = Origins({k[1:]: f for k, f in origins.items() if k[:1] == ("model",) and len(k) > 1},
                  order=getattr(origins, "order", ()))
    try:
        return spec_from_dict(raw["model"], cls=Model, file=display, origins=sub)
    except SpecError as exc:
        raise SpecError([(f, "model." + k if k else "model", msg)
                         for f, k, msg in exc.problems]) from None


def run_show(args) -> int:
    from ..arch import account

    if args.isl < 1:
        raise CodesignError(f"--isl: must be a whole number >= 1 (got {args.isl})")
    model = load_model(args.source)
    a = account(model)
    isl = args.isl
    doc = {
        "schema_version": SCHEMA_VERSION,
        "name": model.name,
        "total_params": a.total_params,
        "active_params": a.active_params,
        "kv_cache_elems_per_token": a.kv_cache_elems_per_token,
        "window_kv_cache_elems_per_token": a.window_kv_cache_elems_per_token,
        "sliding_window": a.sliding_window,
        "sparse_attention_topk": a.sparse_attention_topk,
        "indexer_cache_elems_per_token": a.indexer_cache_elems_per_token,
        "linear_attention_layers": a.linear_attention_layers,
        "recurrent_state_elems_per_request": a.recurrent_state_elems_per_request,
        "conv_state_elems_per_request": a.conv_state_elems_per_request,
        "prefill_flops_per_token": a.prefill_flops_per_token(isl),
        "decode_flops_per_token": a.decode_flops_per_token(isl),
        "isl": isl,
        "context_length": model.context_length,  # None: the config gives none
    }
    if model.context_length is not None and isl > model.context_length:
        # the FLOPs are still counted (a formula of the ISL), but no request of that length is served
        print(f"warning: --isl {isl:,} is longer than {model.name}'s context length, "
              f"{model.context_length:,} tokens (model.context_length)", file=sys.stderr)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0

    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{model.name} ({model.architecture or model.attention})")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_column("detail")

    def row(label, value, unit=""):
        t.add_row(label, value, unit)

    def params(n):
        return f"{n / 1e9:,.3f} B" if n else "0"

    row("total parameters", params(a.total_params), f"{a.total_params:,}")
    row("active parameters / token", params(a.active_params),
        f"{a.active_params:,} (lm_head in, embedding out)")
    row("  embedding", params(a.embedding_params))
    row("  lm_head", params(a.lm_head_params), "tied" if model.tie_word_embeddings else "")
    row("  attention", params(a.attention_params))
    row("  dense FFN", params(a.dense_ffn_params))
    if a.n_moe_layers:
        row("  routed experts", params(a.routed_expert_params),
            f"{a.n_moe_layers} layers × {a.num_experts}, top-{a.experts_per_token}")
        row("  shared experts", params(a.shared_expert_params))
        row("  router", params(a.router_params))
    row("  norms", params(a.norm_params))
    row("context length", f"{model.context_length:,}" if model.context_length else "not given",
        "tokens, prompt + output (HF max_position_embeddings)")
    row("KV cache / token (unbounded)", f"{a.kv_cache_elems_per_token:,}", "elements")
    if a.sliding_window:
        row("KV cache / token (window)", f"{a.window_kv_cache_elems_per_token:,}",
            f"elements, up to {a.sliding_window} tokens")
    if a.sparse_attention_topk:
        row("indexer keys / token", f"{a.indexer_cache_elems_per_token:,}",
            f"elements (FP8); attention reads the top {a.sparse_attention_topk:,} positions")
    if a.linear_attention_layers:
        row("linear-attention state / request", f"{a.recurrent_state_elems_per_request:,}",
            f"elements over {a.linear_attention_layers} layers, whatever the context "
            f"(+ {a.conv_state_elems_per_request:,} conv window)")
    row(f"prefill FLOPs / token (ISL {isl:,})", f"{doc['prefill_flops_per_token']:.4g}", "FLOP")
    row(f"decode FLOPs / token (context {isl:,})", f"{doc['decode_flops_per_token']:.4g}", "FLOP")
    Console().print(t)
    return 0
