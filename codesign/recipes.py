"""InferenceMAX disaggregated recipes: decode batch limit and MTP draft count per benchmark point.

InferenceMAX's result rows (``inferencemax_public.csv``) record each disaggregated run's pools
(workers, TP, EP, attention DP of prefill and decode) but not two engine settings that shape its
latency: the decode engine's batch limit (users beyond it wait for a slot, which shows in TTFT) and,
for ``spec_method = mtp`` runs, the number of MTP draft tokens per step. Both are in InferenceX's
benchmark configuration (SemiAnalysisAI/InferenceX ``.github/configs/nvidia-master.yaml``): every
entry (``dsr1-fp4-gb200-dynamo-trt``, ...) lists, per ISL/OSL, search-space items with the pools,
the concurrencies run (``conc-list``) and either a recipe file named after its settings
(``CONFIG_FILE=recipes/trtllm/gb200-fp4/1k1k/mtp/ctx3_gen5_dep4_batch768_eplb0_mtp1.yaml``: 3
prefill workers, 5 decode workers of attention-DP 4, batch 768 per rank, 1 draft token) or, in the
older versions, the settings themselves (``DECODE_MAX_BATCH_SIZE=128``, ``DECODE_MTP_SIZE=1``).

:func:`parse_master` turns such a file (PyYAML, an optional dependency, is needed only here) into
one row per (entry, ISL/OSL, search-space item); :func:`write_csv` writes them to the vendored table
``specs/recipes/inferencemax_recipes.csv`` (sources in that directory's README), which is what
:mod:`codesign.validate` reads (:func:`recipes`, :func:`lookup`; stdlib only). Regenerate with
``python -m codesign.recipes FILE@COMMIT [FILE@COMMIT ...] --out specs/recipes/inferencemax_recipes.csv``.

Units. ``decode_max_batch`` is the recipe's own number: TensorRT-LLM's ``max_batch_size`` is per
attention-DP rank when the decode worker runs attention DP (``dep``/``dp`` in the recipe name, or
``dp-attn: true`` with ``DECODE_MAX_BATCH_SIZE``) and per worker otherwise (``tep``/``tp``).
``decode_batch_per_instance`` is the limit of one decode worker (batch × ranks), the unit of
``deployment.max_batch_size`` (:mod:`codesign.spec`).

The prefill workers' pass. ``prefill_max_tokens`` and ``prefill_max_batch`` are the most tokens and
requests one prefill pass of one prefill replica (an attention-DP rank; the worker without attention
DP) holds: the TensorRT-LLM context servers' ``max_num_tokens`` and ``max_batch_size``
(``PREFILL_MAX_NUM_TOKENS=4608``, ``PREFILL_MAX_BATCH_SIZE=4`` in the settings-style items; the
recipe file's ``trtllm_config.prefill`` otherwise), SGLang's ``chunked-prefill-size`` per DP rank
(:func:`prefill_pass`). The recipe files' values are in :data:`PREFILL_CSV`. They are recorded, not
priced: ``codesign validate`` does not apply them (pricing them lost on the 3-seed holdout,
docs/baselines.md, session 19).
"""

from __future__ import annotations

import argparse
import csv
import functools
import re
import sys
from pathlib import Path
from typing import Any, Iterable

__all__ = ["decode_recipe_name", "parse_master", "write_csv", "recipes", "lookup", "recipe_source", "RECIPES_CSV",
           "COLUMNS"]

RECIPES_CSV = Path(__file__).resolve().parents[1] / "specs" / "recipes" / "inferencemax_recipes.csv"


COLUMNS = ("source", "config", "model_prefix", "hardware", "framework", "precision", "image",
           "spec_decoding", "isl", "osl", "conc_list", "run_conc_list",
           "prefill_num_worker", "prefill_tp", "prefill_ep", "prefill_dp_attn",
           "decode_num_worker", "decode_tp", "decode_ep", "decode_dp_attn",
           "recipe", "decode_max_batch", "decode_batch_scope", "decode_batch_per_instance",
           "mtp_draft_tokens", "prefill_max_tokens", "prefill_max_batch", "note")

#: The prefill settings of the srt-slurm recipe files the items name (``CONFIG_FILE``), read from
#: the files themselves (sources per row in the table; this directory's README).
PREFILL_CSV = RECIPES_CSV.with_name("srt_slurm_prefill.csv")

#: SGLang's ``--max-prefill-tokens`` default (``ServerArgs.max_prefill_tokens = 16384``): the most
#: input tokens one prefill batch admits (``PrefillAdder``'s ``rem_input_tokens``), where a recipe
#: sets none (14 of the table's 83 SGLang files).
SGLANG_MAX_PREFILL_TOKENS = 16384

#: TensorRT-LLM recipe names of srt-slurm (``ishandhanani/srt-slurm`` ``recipes/trtllm/...``):
#: ``[c<C>_]ctx<P>_gen<D>_<mode><N>_batch<B>_eplb<E>_mtp<M>[_<C>]``; mode ``tep``/``tp`` is
#: attention TP over N GPUs (with/without expert parallelism), ``dep``/``dp`` attention DP over N
#: ranks; ``mtp0`` = no speculation; a bare ``mtp`` gives no count.
_NAME = re.compile(r"^(?:c(?P<c1>\d+)_)?ctx(?P<ctx>\d+)_gen(?P<gen>\d+)_(?P<mode>tep|dep|tp|dp)(?P<n>\d+)"
                   r"_batch(?P<batch>\d+)_eplb(?P<eplb>\d+)_mtp(?P<mtp>\d*)(?:_(?P<c2>\d+))?$")


def decode_recipe_name(name: str) -> dict | None:
    """The settings a TensorRT-LLM recipe file name encodes, or ``None`` for another name.

    ``recipes/trtllm/b200-fp4/1k1k/mtp/ctx3_gen5_dep4_batch512_eplb0_mtp1.yaml`` →
    ``{"prefill_workers": 3, "decode_workers": 5, "attention": "dp", "expert_parallel": True,
    "gpus": 4, "batch": 512, "batch_scope": "rank", "eplb": 0, "mtp": 1, "conc": None}``.
    """
    stem = Path(str(name).strip()).name
    stem = stem[:-5] if stem.endswith(".yaml") else stem
    m = _NAME.match(stem)
    if not m:
        return None
    mode = m["mode"]
    conc = m["c1"] or m["c2"]
    return {"prefill_workers": int(m["ctx"]), "decode_workers": int(m["gen"]),
            "attention": "dp" if mode in ("dep", "dp") else "tp", "expert_parallel": mode in ("dep", "tep"),
            "gpus": int(m["n"]), "batch": int(m["batch"]),
            "batch_scope": "rank" if mode in ("dep", "dp") else "worker",
            "eplb": int(m["eplb"]), "mtp": int(m["mtp"]) if m["mtp"] else None,
            "conc": int(conc) if conc else None}


def m_prefix(recipe: str) -> bool:
    """Whether a recipe file name starts with srt-slurm's ``c<C>_`` concurrency prefix."""
    return bool(re.match(r"^c\d+_ctx", Path(recipe).name))


def _settings(items) -> dict[str, str]:
    out = {}
    for s in items or ():
        k, sep, v = str(s).partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


def _b(x) -> bool:
    return x is True or str(x).strip().lower() == "true"


def _hardware(name: str, prefix: str, precision: str) -> str:
    """``dsr1-fp4-gb200-dynamo-trt`` → ``gb200`` (the token after model prefix and precision)."""
    head = f"{prefix}-{precision}-"
    rest = name[len(head):] if name.startswith(head) else name
    return rest.split("-")[0]


def _item_row(entry: str, cfg: dict, isl: int, osl: int, item: dict, source: str) -> dict:
    pre, dec = item.get("prefill") or {}, item.get("decode") or {}
    ps, ds = _settings(pre.get("additional-settings")), _settings(dec.get("additional-settings"))
    spec = str(item.get("spec-decoding") or "none").strip().lower()
    framework = str(cfg.get("framework", ""))
    precision = str(cfg.get("precision", ""))
    prefix = str(cfg.get("model-prefix", ""))
    row = {"source": source, "config": entry, "model_prefix": prefix,
           "hardware": _hardware(entry, prefix, precision), "framework": framework,
           "precision": precision, "image": str(cfg.get("image", "")), "spec_decoding": spec,
           "isl": int(isl), "osl": int(osl),
           "conc_list": " ".join(str(int(c)) for c in item.get("conc-list") or ()), "run_conc_list": "",
           "prefill_num_worker": int(pre.get("num-worker", 1)), "prefill_tp": int(pre.get("tp", 1)),
           "prefill_ep": int(pre.get("ep", 1)), "prefill_dp_attn": _b(pre.get("dp-attn", False)),
           "decode_num_worker": int(dec.get("num-worker", 1)), "decode_tp": int(dec.get("tp", 1)),
           "decode_ep": int(dec.get("ep", 1)), "decode_dp_attn": _b(dec.get("dp-attn", False)),
           "recipe": ps.get("CONFIG_FILE", "") or ds.get("CONFIG_FILE", ""),
           "decode_max_batch": "", "decode_batch_scope": "", "decode_batch_per_instance": "",
           "mtp_draft_tokens": "", "prefill_max_tokens": "", "prefill_max_batch": "", "note": ""}
    notes = []
    name = decode_recipe_name(row["recipe"]) if row["recipe"] else None
    if name:
        row["decode_max_batch"] = name["batch"]
        row["decode_batch_scope"] = name["batch_scope"]
        ranks = name["gpus"] if name["batch_scope"] == "rank" else 1
        row["decode_batch_per_instance"] = name["batch"] * ranks
        if name["mtp"] is not None:
            row["mtp_draft_tokens"] = name["mtp"]
        else:
            notes.append("recipe name gives no MTP count")
        if (name["prefill_workers"], name["decode_workers"]) != (row["prefill_num_worker"], row["decode_num_worker"]):
            notes.append(f"name says ctx{name['prefill_workers']}_gen{name['decode_workers']}")
        if name["gpus"] != row["decode_tp"]:
            notes.append(f"name says {name['gpus']} GPUs per decode worker")
        if (name["attention"] == "dp") != row["decode_dp_attn"]:
            dpa = str(row["decode_dp_attn"]).lower()
            notes.append(f"name says attention {name['attention'].upper()}, dp-attn {dpa}")
    elif "DECODE_MAX_BATCH_SIZE" in ds:
        b = int(ds["DECODE_MAX_BATCH_SIZE"])
        row["decode_max_batch"] = b
        scope = "rank" if row["decode_dp_attn"] else "worker"
        row["decode_batch_scope"] = scope
        row["decode_batch_per_instance"] = b * (row["decode_tp"] if scope == "rank" else 1)
        if "DECODE_MTP_SIZE" in ds:
            row["mtp_draft_tokens"] = int(ds["DECODE_MTP_SIZE"])
        elif spec == "none":
            row["mtp_draft_tokens"] = 0
    # the prefill workers' pass: settings-style items give the context servers' TensorRT-LLM
    # max_num_tokens and max_batch_size (per attention-DP rank); recipe files, PREFILL_CSV
    if "PREFILL_MAX_NUM_TOKENS" in ps:
        row["prefill_max_tokens"] = int(ps["PREFILL_MAX_NUM_TOKENS"])
    if "PREFILL_MAX_BATCH_SIZE" in ps:
        row["prefill_max_batch"] = int(ps["PREFILL_MAX_BATCH_SIZE"])
    if row["recipe"] and row["prefill_max_tokens"] == "":
        tokens, batch = prefill_pass(row["recipe"])
        row["prefill_max_tokens"] = "" if tokens is None else tokens
        row["prefill_max_batch"] = "" if batch is None else batch
    conc = [int(c) for c in item.get("conc-list") or ()]
    run = conc
    if name and name["conc"] and m_prefix(row["recipe"]) and conc == [name["conc"]]:
        # srt-slurm's H200 recipes (c<C>_ctx..._gen<D>_...): the recipe file benchmarks C per decode
        # worker (its benchmark.concurrencies is C x D: c32_ctx1_gen11 -> "352")
        run = [c * row["decode_num_worker"] for c in conc]
        notes.append("run concurrency = conc x decode workers (recipe c<C> prefix)")
    elif framework == "dynamo-trt" and "DECODE_MTP_SIZE" in ds:
        # launched through ai-dynamo/dynamo's trtllm performance_sweeps (benchmark_disagg.slurm ->
        # scripts/bench.sh: concurrency=$((concurrency * num_gen_servers)))
        run = [c * row["decode_num_worker"] for c in conc]
        notes.append("run concurrency = conc x decode workers (dynamo performance_sweeps bench.sh)")
    row["run_conc_list"] = " ".join(str(c) for c in run)
    if spec == "none" and row["mtp_draft_tokens"] not in ("", 0):
        notes.append(f"spec-decoding none but {row['mtp_draft_tokens']} draft tokens")
    if spec == "mtp" and row["mtp_draft_tokens"] == 0:
        notes.append("spec-decoding mtp but mtp0")
    row["note"] = "; ".join(notes)
    return row


def _csv_rows(path) -> list[dict]:
    """The rows of a vendored table (``#`` lines are its header comment); none when it is absent."""
    p = Path(path)
    if not p.is_file():
        return []
    with open(p, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


@functools.lru_cache(maxsize=4)
def _prefill_rows(path: str) -> dict[str, dict]:
    return {r["recipe"]: r for r in _csv_rows(path)}


def prefill_pass(recipe: str, path=None) -> tuple[int | None, int | None]:
    """``(tokens, requests)``: the most tokens and requests one prefill pass of one prefill replica
    (an attention-DP rank; the worker without attention DP) holds under the srt-slurm recipe file
    ``recipe``, from :data:`PREFILL_CSV`; ``None`` where the file gives none (or the recipe is not in
    the table).

    TensorRT-LLM context servers: ``max_num_tokens`` and ``max_batch_size`` (per rank under
    ``enable_attention_dp``). SGLang prefill workers: a batch stops at ``--chunked-prefill-size``
    (divided by ``dp-size`` under ``enable-dp-attention``, as SGLang's ``server_args`` does), at
    ``--max-prefill-tokens`` (per DP rank; default :data:`SGLANG_MAX_PREFILL_TOKENS`) or at the KV
    pool ``--max-total-tokens``, whichever is least (``PrefillAdder``'s ``rem_chunk_tokens``,
    ``rem_input_tokens``, ``rem_total_tokens``); no request limit. A cell with several values (a
    file of several configurations) gives none.
    """
    r = _prefill_rows(str(path or PREFILL_CSV)).get(str(recipe).strip())
    if r is None:
        return None, None
    if r["framework"] != "dynamo-sglang":
        return _int(r["p_max_num_tokens"]), _int(r["p_max_batch_size"])
    cells = {k: r[k].strip() for k in ("p_chunked_prefill_size", "p_max_prefill_tokens", "p_max_total_tokens")}
    if not cells["p_chunked_prefill_size"] or any(v and _int(v) is None for v in cells.values()):
        return None, None
    dp = (_int(r["p_dp_size"]) or 1) if r["p_dp_attn"].strip().lower() == "true" else 1
    limits = [_int(cells["p_chunked_prefill_size"]) // dp,
              _int(cells["p_max_prefill_tokens"]) or SGLANG_MAX_PREFILL_TOKENS]
    if cells["p_max_total_tokens"]:
        limits.append(_int(cells["p_max_total_tokens"]))
    return min(limits), None


def parse_master(doc: Any, source: str = "") -> list[dict]:
    """Rows of an InferenceX master config (a YAML string or the parsed mapping): one per
    (entry, ISL/OSL, search-space item) of the disaggregated entries (``disagg: true``); the
    aggregated ones (``conc-start``/``conc-end`` sweeps, no pools) are left out."""
    if isinstance(doc, str):
        import yaml  # optional dependency: only the regeneration needs it

        doc = yaml.safe_load(doc)
    rows = []
    for entry, cfg in (doc or {}).items():
        if not isinstance(cfg, dict) or not _b(cfg.get("disagg", False)):
            continue
        for seq in cfg.get("seq-len-configs") or ():
            for item in seq.get("search-space") or ():
                if isinstance(item, dict) and "conc-list" in item and "decode" in item:
                    rows.append(_item_row(entry, cfg, seq["isl"], seq["osl"], item, source))
    return rows


def merge(rows: Iterable[dict]) -> list[dict]:
    """Rows of several versions of the file, each distinct item once (``source`` lists every
    version that has it, in order)."""
    out: dict[tuple, dict] = {}
    for r in rows:
        key = tuple((k, str(r[k])) for k in COLUMNS if k not in ("source", "image"))
        if key in out:
            srcs = out[key]["source"].split(" ")
            if r["source"] not in srcs:
                out[key]["source"] = " ".join(srcs + [r["source"]])
        else:
            out[key] = dict(r)
    return list(out.values())


def write_csv(rows: Iterable[dict], path, header: str = "") -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        for line in header.splitlines():
            f.write(f"# {line}\n" if line else "#\n")
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (str(r[k]).lower() if isinstance(r[k], bool) else r[k]) for k in COLUMNS})


# ------------------------------------------------------------------------------ reading, matching
def _int(x) -> int | None:
    try:
        return int(str(x).strip())
    except ValueError:
        return None


@functools.lru_cache(maxsize=4)
def _read(path: str) -> tuple[dict, ...]:
    out = []
    for r in _csv_rows(path):
        r = dict(r)
        r["conc"] = frozenset(int(c) for c in (r["run_conc_list"] or r["conc_list"]).split())
        for k in ("isl", "osl", "prefill_num_worker", "prefill_tp", "prefill_ep", "decode_num_worker",
                  "decode_tp", "decode_ep", "decode_max_batch", "decode_batch_per_instance", "mtp_draft_tokens",
                  "prefill_max_tokens", "prefill_max_batch"):
            r[k] = _int(r[k])
        for k in ("prefill_dp_attn", "decode_dp_attn"):
            r[k] = r[k].strip().lower() == "true"
        out.append(r)
    return tuple(out)


def recipes(path=None) -> tuple[dict, ...]:
    """The rows of the vendored recipe table (default :data:`RECIPES_CSV`), typed; empty when the
    file is absent. Read once per path."""
    return _read(str(path or RECIPES_CSV))


def topology(hardware: str, framework: str, model: str, precision: str, isl: int, osl: int, spec: str,
             prefill: tuple, decode: tuple) -> tuple:
    """The key a benchmark row and a recipe item share: ``prefill``/``decode`` are (workers, TP, EP,
    attention DP)."""
    return (hardware.strip().lower(), framework.strip().lower(), model, precision.strip().lower(),
            int(isl), int(osl), (spec or "none").strip().lower(),
            tuple(int(x) for x in prefill[:3]) + (bool(prefill[3]),),
            tuple(int(x) for x in decode[:3]) + (bool(decode[3]),))


@functools.lru_cache(maxsize=4)
def _index(path: str) -> dict[tuple, list[dict]]:
    from .validate import resolve_model  # InferenceX model-prefix -> spec stem, as for measured rows

    idx: dict[tuple, list[dict]] = {}
    for r in _read(path):
        key = topology(r["hardware"], r["framework"], resolve_model(r["model_prefix"])[0] or r["model_prefix"],
                       r["precision"], r["isl"], r["osl"], r["spec_decoding"],
                       (r["prefill_num_worker"], r["prefill_tp"], r["prefill_ep"], r["prefill_dp_attn"]),
                       (r["decode_num_worker"], r["decode_tp"], r["decode_ep"], r["decode_dp_attn"]))
        idx.setdefault(key, []).append(r)
    return idx


def decode_recv_interval(recipe: str, path=None) -> int | None:
    """The decode workers' ``--scheduler-recv-interval`` under the srt-slurm recipe file ``recipe``
    (:data:`PREFILL_CSV` column ``d_scheduler_recv_interval``, read from the file); ``None`` where the
    file sets none, the cell holds several ``;``-separated values (configurations of one file that
    differ), or the file is not in the table."""
    r = _prefill_rows(str(path or PREFILL_CSV)).get(str(recipe).strip())
    return _int((r or {}).get("d_scheduler_recv_interval") or "")


def recipe_source(recipe: str, path=None) -> str:
    """``recipe`` (an srt-slurm recipe file path such as ``recipes/gb200-fp4/8k1k/max-tpt.yaml``)
    prefixed with the repository and short commit it was read at (:data:`PREFILL_CSV` columns
    ``repo``, ``commit``): ``NVIDIA/srt-slurm@975f228f:recipes/...``; the bare path where the
    table does not hold the file (a TensorRT-LLM recipe of the InferenceX repository, say)."""
    r = _prefill_rows(str(path or PREFILL_CSV)).get(str(recipe).strip())
    if not r or not (r.get("repo") or "").strip() or not (r.get("commit") or "").strip():
        return str(recipe)
    return f"{r['repo'].strip()}@{r['commit'].strip()[:8]}:{str(recipe).strip()}"


def lookup(key: tuple, conc: int, path=None) -> tuple[list[dict], list[dict]]:
    """``(exact, near)``: the recipe items of topology ``key`` (:func:`topology`) that ran ``conc``
    users (``run_conc_list``), and those of the same topology that did not."""
    items = _index(str(path or RECIPES_CSV)).get(key, [])
    exact = [r for r in items if conc in r["conc"]]
    return exact, [r for r in items if conc not in r["conc"]]


# ------------------------------------------------------------------------------ regeneration
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codesign.recipes", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="FILE@SOURCE",
                    help="an InferenceX master config, with the version it is (e.g. nvidia-master.yaml@0004cf5f)")
    ap.add_argument("--out", default=str(RECIPES_CSV))
    args = ap.parse_args(argv)
    rows = []
    for spec in args.files:
        path, sep, source = spec.rpartition("@")
        path, source = (path, source) if sep else (spec, "")
        rows += parse_master(Path(path).read_text(encoding="utf-8"), source or Path(path).name)
    rows = merge(rows)
    write_csv(rows, args.out, header="InferenceMAX disaggregated recipes; sources and columns: README.md "
                                     "in this directory. Generated by python -m codesign.recipes.")
    print(f"{len(rows)} recipe items -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
