"""Validate a cost model against measured serving data (``codesign validate``; core, no CLI code).

Two schemas are read (the files in ``<shared>/data/measured/``, described in ``<shared>/data/README.md``):

* **aiconfigurator** (``aiconfigurator_silicon_public.csv``, id column ``id``): one row per measured
  point of ai-dynamo/aiconfigurator's silicon sample. Mapping of the columns, read from the data:

  - ``system`` ``b200_sxm``/``h200_sxm``/``h100_sxm``/``gb200``/``gb300`` → hardware baseline
    ``b200``/``h200``/``h100``/``gb200``/``gb300``; ``b300_sxm`` → ``b300``, a baseline described by
    its datasheet only (no measured data: priced with B200's knobs, marked extrapolated; see
    :data:`SYSTEMS` for every name, the AMD ones included).
  - ``mode`` ``agg``: one worker of ``tp_size × attention_dp_size × pp_size`` GPUs (aiconfigurator's
    convention: ``tp_size`` is the attention TP, ``moe_tp_size × moe_ep_size`` = TP × DP; we take
    ``deployment.ep = moe_ep_size``). ``batch_size`` is the batch of ONE attention-DP rank (the data
    holds ``batch_size × attention_dp_size == concurrency`` for DP rows, ``batch_size ==
    concurrency`` otherwise); when the measured concurrency (``silicon_concurrency=`` in
    ``silicon_data_source``, else ``_c<N>_`` in the id) exceeds ``batch_size × attention_dp_size``
    the benchmark ran several identical workers, and the modelled concurrency of one worker is
    ``min(concurrency, batch_size × attention_dp_size)`` (TTFT/TPOT are per request, so replicas do
    not change them).
  - ``mode`` ``disagg``: prefill pool of ``prefill_num_workers × prefill_tp_size ×
    prefill_attention_dp_size`` GPUs and decode pool likewise; ``decode_batch_size`` is per
    attention-DP rank of one decode worker (``decode_batch_size × decode_num_workers ×
    decode_attention_dp_size == concurrency``); the modelled concurrency is the measured one.
    ``decode_batch_size`` is that share of the users, not the engine's ``max_batch_size``: a
    Dynamo + TensorRT-LLM row takes the decode batch limit of the InferenceX configuration that ran its pools
    at its concurrency (an assumption names it), else the power-of-two rule of the InferenceMAX rows
    (:func:`_aic_recipe_settings`).
  - ``gemm_quant_mode``/``moe_quant_mode`` (any case) → ``weights_format``/``moe_weights_format``
    and the GEMMs' ``activations_format`` (``fp8``/``fp8_block``/``fp8_static``/``fp8_ootb`` →
    ``fp8_e4m3``, ``nvfp4`` → ``nvfp4``, empty/``bfloat16``/``float16`` → ``bf16``; MoE-only
    ``w4a16_mxfp4``/``w4a8_mxfp4_mxfp8`` → ``mxfp4`` experts: :data:`_QUANT`, :data:`_MOE_QUANT`);
    a dense model's logged EP > 1 is priced at EP 1 (:func:`_dense_ep`, both schemas); gpt-oss-120b
    is always its checkpoint's formats (MXFP4 experts, BF16
    attention; hf_configs/gpt-oss-120b.json). The KV cache format is not in the data: assumed
    ``fp8_e4m3`` for FP8/FP4 deployments, ``bf16`` otherwise. ``int4_wo`` (weight-only INT4,
    Kimi-K2.5 on vLLM) → ``int4_g32`` on the weights the model's INT4 release quantizes (Kimi: the
    routed experts only; a dense model: its weights; another MoE model: ``unsupported``), BF16
    activations and KV cache (:func:`_int4_wo_formats`).
  - measured ``silicon_ttft_ms``, ``silicon_tpot_ms``; fixed lengths (``length_jitter = 0``).
  - rows converted from InferenceMAX result files (``silicon_data_source`` ``source_file=2026-...``)
    record no worker counts: disaggregated rows log only InferenceMAX's per-worker prefill TP/EP and
    decode TP, and GB200/GB300 "agg" rows with ``tp_size`` > 8 and EP 1 (and disaggregated ones with
    prefill TP == decode TP > 8) log the run's total GPU count. Their pools come from the InferenceX
    configuration that ran that concurrency with that parallelism where one does
    (:func:`recipe_item_pools`; status ``ok``, an assumption ``pools of the InferenceX configuration recipes/trtllm/
    gb300-fp8/8k1k/stp/ctx7_gen1_dep8_batch256_eplb0_mtp0_2151.yaml ...``), else from the
    nearest disaggregated InferenceMAX row of inferencemax_public.csv (:func:`infer_pools`;
    ``ambiguous: pools inferred from the nearest measured run imx-00273 (2 prefill + 32 decode GPUs)``):
    priced, in ``predictions.csv``, and reported in a separate error table.

* **InferenceMAX** (``inferencemax_public.csv``, id column ``point_id``): ``conc`` users in a closed
  loop, lengths drawn from [0.8·L, L] (``length_jitter = 0.2``). Aggregated rows run on ``tp`` GPUs
  (``tput_per_gpu`` is normalised by ``tp``; the ``total_gpus`` column of some aggregated rows is not
  the GPU count); ``dp_attention`` True means attention TP 1 with ``tp`` DP ranks. Disaggregated rows:
  pools of ``num_prefill_gpu`` / ``num_decode_gpu`` GPUs, ``*_num_workers`` workers each,
  ``*_tp``/``*_ep``/``*_dp_attention`` per worker (Dynamo + SGLang rows logging TP 1 and EP 1 for a
  worker of several GPUs are priced with EP = GPUs per worker, as InferenceX's later recipes of the
  same runs record: :data:`SGLANG_WIDE_EP_FRAMEWORKS`). We compare the model's steady-state TTFT
  (``ttft_steady_s``, no start-up wave) and TPOT with ``median_ttft_s``/``median_tpot_s``, the
  statistic InferenceMAX publishes (:data:`IMX_STATISTIC`; ``statistic="mean"``, ``codesign
  validate --statistic mean``, compares the model's mean TTFT, start-up wave included, with
  ``mean_ttft_s`` instead, the medians where a row has no mean), and
  ``mixed_tok_s_per_chip`` with ``tput_per_gpu_tok_s``. ``spec_method = mtp`` rows are priced with
  :data:`MTP_DRAFT_TOKENS` draft tokens per step (not recorded; an assumption says so) at the calibrated
  acceptance; any other speculative method gets an ``unsupported`` status. A disaggregated row that
  matches an item of InferenceX's benchmark configuration (``specs/recipes/inferencemax_recipes.csv``,
  :mod:`codesign.recipes`: same system, framework, model, precision, ISL/OSL, speculative method,
  prefill and decode workers/TP/EP/attention DP, and its concurrency among those the item ran) takes
  that recipe's decode batch limit (``max_batch_size`` per attention-DP rank × ranks, per decode
  instance) and MTP draft count instead, with an assumption naming the recipe file; items of the same
  pools that ran other concurrencies are not used (recipes are tuned per concurrency), and rows
  without a match keep the defaults (:func:`_recipe_settings`). The power-of-two batch limit of
  :func:`_dynamo_trt_batch_limit` is the fallback for Dynamo + TensorRT-LLM rows without a recipe.
  ``precision`` ``fp4`` of DeepSeek-R1 is NVIDIA's NVFP4 checkpoint (NVFP4 experts, FP8 elsewhere)
  on NVIDIA hardware and AMD's MXFP4 one (MXFP4 weights and activations) on AMD hardware
  (:data:`AMD_SYSTEMS`); 4-bit activations on hardware without FP4 tensor cores (MI300X, MI325X,
  H100, H200) get an ``unsupported`` status. ``bf16``, ``nvfp4``, ``mxfp4``, ``int4`` and a dense
  model's ``fp4`` are read by :func:`_imx_formats`; the categorical cells (precision, speculative
  method, booleans) as InferenceX's ingest reads them (:func:`_imx_cells`), and a ``hardware`` cell
  naming a runner or cluster (``b300-nv``, ``mi355x-amd_0``) as its GPU (:func:`inferencex_gpu_key`).
  An OSL of 1 is ``invalid`` (TPOT needs two output tokens).

A row whose ``conc`` (InferenceMAX) or ``isl``/``osl`` is not a whole number >= 1 is never priced
at a default: it gets the status ``invalid: conc must be a whole number >= 1 (got -4)``, stays in
``predictions.csv`` (its concurrency cell blank when that is what is wrong) and is left out of the
error tables. A file lacking a column its schema needs is refused with one line naming the file, the
schema and the missing columns; a header naming a column twice, with one naming the file and the
column. Rows sharing an id are all kept (``codesign validate`` warns: ``predictions.csv`` joins on
the id).

Rows sharing a static configuration (model, mode, length jitter) are priced in ONE vectorised
:func:`codesign.evaluation.evaluate` call: the group's distinct (system hardware, ISL/OSL, deployment,
formats, efficiency knobs) become override arrays and its distinct concurrencies the workload sweep,
so the cost model compiles once per group.
"""

from __future__ import annotations

import contextvars
import csv
import functools
import hashlib
import math
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import attrs
import numpy as np

from . import recipes as imx_recipes
from .errors import BugError, CodesignError, close_name

__all__ = [
    "Point", "read_measured", "shared_data_dir", "shared_data_warning", "predict", "error_stats", "error_table_rows",
    "write_predictions", "file_sha256", "SYSTEMS", "MODELS", "resolve_model", "duplicate_ids",
]

REPO = Path(__file__).resolve().parents[1]

#: Measured ``system``/``hardware`` names → baseline name (``codesign_baselines``). InferenceMAX
#: rows name the dashboard's GPU key (SemiAnalysisAI/InferenceX-app packages/constants/src/
#: gpu-keys.ts: h100 h200 b200 b300 gb200 gb300 mi300x mi325x mi355x) or a runner type
#: (SemiAnalysisAI/InferenceX CLAUDE.md, .github/configs/runners.yaml: b200-trt,
#: b200-multinode-slurm, h100-multinode-slurm, mi355x-disagg); aiconfigurator rows its systems/
#: file stem (b200_sxm, b300_sxm, h100_sxm, h200_sxm, gb200, gb300).
SYSTEMS = {
    "gb200": "gb200", "gb300": "gb300", "b200": "b200", "b200_sxm": "b200", "b200-trt": "b200",
    "h200": "h200", "h200_sxm": "h200", "h100": "h100", "h100_sxm": "h100",
    "b200-multinode-slurm": "b200", "h100-multinode-slurm": "h100",
    # aiconfigurator's earlier name of the GB200 system (its sdk/common.py SupportedSystems listed
    # "gb200_sxm" beside h100_sxm, h200_sxm, b200_sxm before the systems/ files were named gb200 and
    # gb300), and the GB300 name of the same pattern
    "gb200_sxm": "gb200", "gb300_sxm": "gb300",
    # datasheet-only systems (no measured data in ../shared/data/measured; uncalibrated baselines)
    "b300": "b300", "b300_sxm": "b300",
    "mi300x": "mi300x", "mi325x": "mi325x", "mi355x": "mi355x", "mi355x-disagg": "mi355x",
}

#: The dashboard's GPU keys (SemiAnalysisAI/InferenceX-app packages/constants/src/gpu-keys.ts
#: HW_REGISTRY): a measured cell naming a runner, runner type or cluster of one of them reads as it
#: (:func:`inferencex_gpu_key`).
INFERENCEX_GPU_KEYS = ("h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x")


def inferencex_gpu_key(raw: str) -> str | None:
    """The GPU key InferenceX's ingest reads a hardware cell as, or ``None``: lowercase, everything
    up to the last ``:`` dropped (a cluster label, ``cluster:b300-nv``), then the first segment
    before ``-`` (the runner suffixes ``-nv``, ``-amds``, ``-nvd_0``, ``-dgxc-slurm``, ``-trt``), if
    that is one of :data:`INFERENCEX_GPU_KEYS` (InferenceX-app packages/db/src/etl/normalizers.ts
    ``hwToGpuKey``; runner names from InferenceX .github/configs/runners.yaml: ``h200-cw_0``,
    ``b200-nvd_0``, ``mi300x-amd_0``, ``mi325x-tw_0``, ``gb200-nv_0``, types ``h200-trt``,
    ``b200-nvs``). ``gb-200`` reads as nothing (``gb`` is no key)."""
    base = raw.strip().lower().rsplit(":", 1)[-1].split("-")[0]
    return base if base in INFERENCEX_GPU_KEYS else None

#: How a run of whitespace inside a system name may read (:func:`system_name`): "GB 200" is gb200,
#: "B200 SXM" b200_sxm, "mi355x disagg" mi355x-disagg.
_SPACE_READINGS = ("", "-", "_")


def _system_readings(raw: str) -> dict[str, str]:
    """The :data:`SYSTEMS` names a measured cell can read as → their baselines: the cell without case
    and outer whitespace if that is a name, else each reading of its inner whitespace
    (:data:`_SPACE_READINGS`) that is one."""
    s = raw.strip().lower()
    if s in SYSTEMS:
        return {s: SYSTEMS[s]}
    parts = s.split()
    if len(parts) < 2:
        return {}
    return {n: SYSTEMS[n] for n in dict.fromkeys(sep.join(parts) for sep in _SPACE_READINGS) if n in SYSTEMS}


def system_name(raw: str) -> str:
    """A measured ``system``/``hardware`` cell as :data:`SYSTEMS` spells it ("MI355X", " b300 " name
    the same systems as "mi355x", "b300"). Inner whitespace is ignored like case when that is
    unambiguous: "GB 200" is gb200 because every reading of the space that is a known name
    (:data:`_SPACE_READINGS`) is the same system; a cell whose readings name different systems, or
    none, is returned as written (lowercased, outer whitespace off) and priced by nobody
    (:func:`system_hint` says why). Hyphens and underscores are part of names (b200-trt, b200_sxm)
    and are never dropped, except as InferenceX's ingest drops them: a cell that is no known name
    but names a runner or cluster of one of the dashboard's GPUs (``b300-nv``, ``mi355x-amd_0``,
    ``cluster:b300-nv``) reads as that GPU (:func:`inferencex_gpu_key`)."""
    hits = _system_readings(raw)
    if len(set(hits.values())) == 1:
        return next(iter(hits))
    if not hits and (key := inferencex_gpu_key(raw)):
        return key
    return raw.strip().lower()


def system_hint(raw: str) -> str:
    """`` (...)`` to append to the ``unsupported`` status of an unknown system name: the systems an
    ambiguous name could be, or the known name it differs from only by separators or a typo
    (``gb-200``: ``did you mean gb200?``; a typo by :func:`codesign.errors.close_name` of the same
    series and model number, :func:`_product`), or the known systems where the closest name is
    another product's (``a100_sxm``: not ``h100_sxm``); ``""`` if none."""
    hits = _system_readings(raw)
    if len(set(hits.values())) > 1:
        return " (ambiguous: reads as " + " or ".join(f"{n} ({b})" for n, b in hits.items()) + ")"
    s = raw.strip().lower()
    bare = re.sub(r"[\s_-]+", "", s)
    near = next((n for n in SYSTEMS if re.sub(r"[_-]+", "", n) == bare), None)
    if near is None:
        near = close_name(s, SYSTEMS, cutoff=0.8)
        if near and _product(near) != _product(s):
            # a100 is no typo of h100, nor h20 of h200, but gb20 may be one of gb200: no guess, the list
            return f" (known systems: {', '.join(sorted(set(SYSTEMS.values())))})"
    return f" (did you mean {near}?)" if near else ""


def _product(name: str) -> tuple[str, str]:
    """A system name's series letters and model number, ``("h", "100")`` for ``h100_sxm`` and
    ``("gb", "200")`` for ``GB200``: two names that differ in either are two products, not a typo
    (helper-64, session 45: ``a100_sxm`` was told "did you mean h100_sxm?", ``h20_sxm`` "h200_sxm")."""
    m = re.match(r"\s*([a-z]*)[\s_-]*(\d*)", name.lower())
    return (m.group(1), m.group(2)) if m else ("", "")


#: AMD Instinct systems: InferenceMAX's DeepSeek-R1 ``fp4`` is AMD's MXFP4 checkpoint there
#: (amd/DeepSeek-R1-0528-MXFP4[-Preview], InferenceX .github/configs/amd-master.yaml), NVIDIA's NVFP4
#: one elsewhere.
AMD_SYSTEMS = ("mi300x", "mi325x", "mi355x")
#: Systems without FP4 tensor cores (no ``chip.peak_flops.fp4`` in their hardware spec): FP4 weights
#: are upcast and the GEMMs run with BF16 activations (W4A16).
NO_FP4_SYSTEMS = ("h100", "h200", "mi300x", "mi325x")

#: Measured model names → (model spec stem in specs/models, note when it is an architecture alias).
MODELS: dict[str, tuple[str, str]] = {
    "deepseek-ai/DeepSeek-R1": ("deepseek-r1", ""),
    "nvidia/DeepSeek-R1-NVFP4": ("deepseek-r1", ""),
    "dsr1": ("deepseek-r1", ""),
    # DeepSeek-V3/V3.1 share DeepSeek-R1's config.json dimensions (R1 is post-trained from V3-Base).
    "deepseek-ai/DeepSeek-V3": ("deepseek-r1", "architecture of deepseek-r1 (same config as DeepSeek-V3)"),
    "nvidia/DeepSeek-V3.1-NVFP4": ("deepseek-r1", "architecture of deepseek-r1 (same config as DeepSeek-V3.1)"),
    "openai/gpt-oss-120b": ("gpt-oss-120b", ""),
    "gptoss120b": ("gpt-oss-120b", ""),
    "meta-llama/Llama-3.1-70B": ("llama-3.1-70b", ""),
    "meta-llama/Llama-3.1-8B-Instruct": ("llama-3.1-8b", ""),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ("llama-3.1-8b", ""),
    # Kimi-K2.5's language model has Kimi-K2's dimensions (its vision tower is not priced).
    "moonshotai/Kimi-K2.5": ("kimi-k2", "architecture of kimi-k2 (Kimi-K2-Instruct config; K2.5 text backbone)"),
    "kimik2.5": ("kimi-k2", "architecture of kimi-k2 (Kimi-K2-Instruct config; K2.5 text backbone)"),
    # Llama-3.3-70B-Instruct's config.json (ai-dynamo/aiconfigurator model_configs/
    # meta-llama--Llama-3.3-70B-Instruct_config.json, f577ab84) has Llama-3.1-70B's dimensions: hidden
    # 8192, 80 layers, 64/8 heads, intermediate 28672, vocab 128256, untied. InferenceMAX's first
    # model-prefix for it was "70b" (InferenceX benchmarks/70b_fp8_h200_slurm.sh).
    "meta-llama/Llama-3.3-70B-Instruct": ("llama-3.1-70b", "architecture of llama-3.1-70b (same config dimensions as Llama-3.3-70B-Instruct)"),
    "llama70b": ("llama-3.1-70b", "architecture of llama-3.1-70b (same config dimensions as Llama-3.3-70B-Instruct)"),
    "70b": ("llama-3.1-70b", "architecture of llama-3.1-70b (same config dimensions as Llama-3.3-70B-Instruct)"),
    "Qwen/Qwen3-32B": ("qwen3-32b", ""),
    # NVIDIA's ModelOpt NVFP4 export of Qwen3-32B (its formats come from the row's quant columns).
    "nvidia/Qwen3-32B-NVFP4": ("qwen3-32b", ""),
    "Qwen/Qwen3-235B-A22B": ("qwen3-235b-a22b", ""),
    # Qwen's block-FP8 release of the same weights (formats from the row's quant columns).
    "Qwen/Qwen3-235B-A22B-FP8": ("qwen3-235b-a22b", ""),
    "MiniMaxAI/MiniMax-M2.5": ("minimax-m2.5", ""),
    "minimaxm2.5": ("minimax-m2.5", ""),  # InferenceMAX model-prefix (InferenceX minimaxm2.5_*.sh)
    # hybrid Gated DeltaNet + gated attention (specs/models/hf_configs/qwen3.5-397b-a17b.json)
    "Qwen/Qwen3.5-397B-A17B": ("qwen3.5-397b-a17b", ""),
    "qwen3.5": ("qwen3.5-397b-a17b", ""),  # InferenceMAX model-prefix (InferenceX qwen3.5_*.sh)
    # MLA with DeepSeek sparse attention (specs/models/hf_configs/glm-5.json)
    "zhipuai/GLM-5": ("glm-5", ""),
    "zai-org/GLM-5": ("glm-5", ""),
    "zai-org/GLM-5-FP8": ("glm-5", ""),
    "glm5": ("glm-5", ""),  # InferenceMAX model-prefix (InferenceX glm5_*.sh)
    # InferenceX's ingest alias of the gpt-oss-120b prefix (InferenceX-app packages/db/src/etl/
    # normalizers.ts PREFIX_ALIASES: gptoss -> gptoss120b)
    "gptoss": ("gpt-oss-120b", ""),
    # the Kimi-K2 spec's own checkpoint (../shared/data/hf_configs/kimi-k2-instruct.json)
    "moonshotai/Kimi-K2-Instruct": ("kimi-k2", ""),
    # Kimi-K2-Thinking's config.json (ai-dynamo/aiconfigurator model_configs/moonshotai--Kimi-K2-
    # Thinking_config.json, 821eb9a6) has Kimi-K2-Instruct's dimensions: 61 layers, hidden 7168, 64
    # heads, MLA ranks 1536/512, 384 experts of 2048, top-8, 1 shared, first_k_dense_replace 1
    "moonshotai/Kimi-K2-Thinking": ("kimi-k2", "architecture of kimi-k2 (same config dimensions as Kimi-K2-Thinking)"),
    # Specs added for names the blind split may hold (configs and sources: specs/models/hf_configs)
    "Qwen/Qwen3-30B-A3B": ("qwen3-30b-a3b", ""),
    "Qwen/Qwen3-8B": ("qwen3-8b", ""),
    "Qwen/Qwen3-Coder-480B-A35B": ("qwen3-coder-480b-a35b", ""),
    "Qwen/Qwen3-Next-80B-A3B": ("qwen3-next-80b-a3b", ""),  # Gated DeltaNet hybrid, like Qwen3.5
    "openai/gpt-oss-20b": ("gpt-oss-20b", ""),
    "meta-llama/Llama-3.1-405B": ("llama-3.1-405b", ""),
    # MLA + DeepSeek sparse attention (not DeepSeek-R1's dense MLA)
    "deepseek-ai/DeepSeek-V3.2": ("deepseek-v3.2", ""),
    # GQA + MoE with a shared expert (model_type glm4_moe, imported from its generic keys)
    "zai-org/GLM-4.7": ("glm-4.7", ""),
    # GLM-4.5 (355B-A32B) has GLM-4.7's dimensions: zyzshishui/slime scripts/models/
    # glm4.5-355B-A32B.sh (ffec5340): 92 layers (3 dense + 89 MoE), hidden 5120, 96 heads, 8 query
    # groups of 128, FFN 12288, 160 experts of 1536, top-8, 1 shared expert, vocab 151552
    "zai-org/GLM-4.5": ("glm-4.7", "architecture of glm-4.7 (same config dimensions as GLM-4.5)"),
}


#: gpt-oss checkpoints: MXFP4 experts, BF16 attention whatever the row's quant columns say
#: (gpt-oss-20b ships the same quantization_config as gpt-oss-120b; see :func:`_gpt_oss_formats`).
GPT_OSS = ("gpt-oss-120b", "gpt-oss-20b")


# ----------------------------------------------------------------------------- model-name rule
# A measured name that is not a key of MODELS is read by one rule, so a re-release of a known
# checkpoint needs no table entry: case is ignored, the org (or a local path) is dropped, then
# quantisation/packaging suffixes, post-training variants and documented dated revisions are
# stripped from the end, one at a time, and the name is looked up after every step. Only suffixes
# that keep the weights' architecture are stripped; anything else (DeepSeek-V3.2's "-v3.2", MoE
# "-a3b" sizes, "-flash", "-air", "-exp") is part of the name, so another architecture is never
# reached by stripping.

#: A quantised or re-packaged checkpoint of the same weights: NVIDIA ModelOpt (-NVFP4, -FP8, -FP4,
#: revisions -v2), AMD Quark (-MXFP4[-Preview], -FP8-KV), Red Hat/Neural Magic (-FP8-dynamic,
#: -quantized.w4a16), Qwen (-FP8, -FP8-Static-PerTensor), InferenceMAX precision-suffixed prefixes
#: (dsr1-fp8; InferenceX-app packages/db/src/etl/normalizers.ts PRECISION_SUFFIX). The row's quant
#: columns, not the name, set the number formats.
_QUANT_SUFFIX = re.compile(
    r"(?:-(?:nvfp4|mxfp4|fp4|fp8|fp16|bf16|int4|int8|w4a16|w4a8|w8a8|w8a16|awq|gptq)"
    r"(?:-(?:dynamic|static|pertensor|per-tensor|block|kv|preview|v\d+))*"
    r"|-quantized\.w\d+a\d+)$")
#: Post-training variants, which keep the base model's config.json.
_VARIANT_SUFFIX = re.compile(r"-(?:instruct|thinking)$")
_DATE_SUFFIX = re.compile(r"-(\d{4})$")
#: Dated revisions documented to keep the architecture, by the name they revise:
#: DeepSeek-R1-0528 ("a minor version upgrade ... during post-training", its model card; InferenceMAX's
#: dsr1 is R1-0528, InferenceX-app packages/constants/src/models.ts); DeepSeek-V3-0324 (a post-training
#: update of V3, 671B/37B, its model card); Qwen3-235B-A22B-*-2507 (specs/models/hf_configs/README.md:
#: only max_position_embeddings and rope_theta change); Qwen3-30B-A3B-*-2507 (AI-Hypercomputer/maxtext
#: hf_model_configs.py qwen3_30b_a3b_thinking_2507_config: Qwen3-30B-A3B's dimensions).
_REVISIONS: dict[str, tuple[str, ...]] = {
    "deepseek-r1": ("0528",), "dsr1": ("0528",), "deepseek-v3": ("0324",),
    "qwen3-235b-a22b": ("2507",), "qwen3-30b-a3b": ("2507",),
}


def _name_key(name: str) -> str:
    """A measured model name without case, org or path (Meta's former ``Meta-Llama-3.1-*`` repository
    names are the ``Llama-3.1-*`` checkpoints)."""
    s = name.strip().lower().rstrip("/").rsplit("/", 1)[-1]
    return s[len("meta-"):] if s.startswith("meta-llama-") else s


@functools.cache
def _models_by_key() -> dict[str, tuple[str, str]]:
    """Every normalised form of every :data:`MODELS` key (``meta-llama/Llama-3.1-8B-Instruct`` is
    found as ``llama-3.1-8b-instruct`` and as ``llama-3.1-8b``). Where two keys reach one form, the
    one reached with fewer suffixes stripped wins, then the one that is not an architecture alias
    (``kimi-k2`` is Kimi-K2-Instruct's own spec, not Kimi-K2-Thinking's alias of it)."""
    best: dict[str, tuple[tuple[int, bool], tuple[str, str]]] = {}
    for k, v in MODELS.items():
        for n, (key, _) in enumerate(_strip_steps(k)[0]):
            rank = (n, bool(v[1]))
            if key not in best or rank < best[key][0]:
                best[key] = (rank, v)
    return {key: v for key, (_, v) in best.items()}


def _keep_suffix(s: str):
    """The quantisation or variant suffix ending ``s`` (a match), else ``None``."""
    return _QUANT_SUFFIX.search(s) or _VARIANT_SUFFIX.search(s)


def _strip_steps(name: str) -> tuple[list[tuple[str, str]], str]:
    """``([(name, suffix stripped to reach it), ...], refusal)``: the normalised names the rule tries,
    in order (the first is the name without case and org), and why stripping stopped early (a dated
    revision not known to keep the architecture), else ``""``."""
    s = _name_key(name)
    steps = [(s, "")]
    while True:
        m = _keep_suffix(s)
        if not m:
            m = _DATE_SUFFIX.search(s)
            if not m:
                return steps, ""
            core = s[:m.start()]  # the revised model: its own variant/quant suffixes off
            while (v := _keep_suffix(core)):
                core = core[:v.start()]
            if m.group(1) not in _REVISIONS.get(core, ()):
                return steps, f"revision -{m.group(1)} is not known to keep {core}'s architecture"
        s = s[:m.start()]
        steps.append((s, m.group(0)))


def close_model_name(name: str) -> str | None:
    """The known normalised model name (:func:`_models_by_key`) that ``name``, which none matches,
    most likely misspells (:func:`~codesign.errors.close_name`, tried on each name the rule
    reaches, :func:`_strip_steps`), among those whose numbers (sizes, versions, experts) are the
    same as the name's: ``llama-3.1-70b-instruct`` for ``Llama-3.1-70B-Instructt``, but nothing
    for ``Llama-3.1-405B-Instruct`` (not 70B) or ``Qwen3-30B-A3B`` (not ``qwen3-32b``), another
    model whose spec would price the row wrongly. ``None`` when there is no such name."""
    steps, _ = _strip_steps(name)
    # the known names, and with a variant suffix the rule strips (llama-3.1-70b-instruct)
    known = list(dict.fromkeys(k + v for k in _models_by_key() for v in ("", "-instruct", "-thinking")))
    for key, _ in steps:
        digits = re.findall(r"\d+", key)
        same = [k for k in known if re.findall(r"\d+", k) == digits]
        if (hit := close_name(key, same)) is not None:
            return hit
    return None


def resolve_model(name: str) -> tuple[str | None, list[str], str]:
    """``(spec stem or None, warnings, normalised name tried)`` for a measured model name.

    A key of :data:`MODELS` maps as written; any other name through the rule above, with a warning
    that names the rule and the suffixes it stripped (plus the entry's own alias note).
    """
    m = MODELS.get(name.strip())
    if m is not None:
        return m[0], [m[1]] if m[1] else [], name.strip()
    steps, refusal = _strip_steps(name)
    table = _models_by_key()
    stripped: list[str] = []
    for key, suffix in steps:
        if suffix:
            stripped.append(suffix)
        hit = table.get(key)
        if hit is not None:
            how = ("; stripped " + ", ".join(stripped)) if stripped else ""
            warnings = [f"model name rule: {name.strip()} read as {key} (case and org ignored{how})"]
            return hit[0], warnings + ([hit[1]] if hit[1] else []), key
    tried = steps[-1][0]
    return None, [refusal] if refusal else [], tried

#: GPUs per scale-up node of the 8-GPU systems (HGX NVLink, AMD xGMI; a worker above this is
#: multi-node): hardware_specs.csv scaleup_domain_size_chips.
NODE_GPUS = {"b200": 8, "h200": 8, "h100": 8, "b300": 8, "mi300x": 8, "mi325x": 8, "mi355x": 8}
#: Rack-scale NVLink systems.
RACK_SYSTEMS = ("gb200", "gb300")

#: Statuses whose rows are priced (``ambiguous`` rows are priced but kept out of the error tables).
PRICED = ("ok", "ambiguous")


def priced(status: str) -> bool:
    return status == "ok" or status.startswith("ambiguous")


#: aiconfigurator quant modes (``gemm_quant_mode`` and ``moe_quant_mode``, read lowercase) → number
#: format. The names are aiconfigurator's ``GEMMQuantMode``/``MoEQuantMode`` (aic-core/src/
#: aiconfigurator_core/sdk/common.py): ``bfloat16``/``float16`` (w16a16; earlier versions named it
#: ``float16``), ``fp8``, ``fp8_static`` (FP8 with static scales), ``fp8_ootb`` (TensorRT-LLM's TRT
#: backend FP8), ``fp8_block``, ``nvfp4``; ``bf16``/``fp16``/blank as the public file writes 16 bits.
_QUANT = {"fp8": "fp8_e4m3", "fp8_block": "fp8_e4m3", "fp8_static": "fp8_e4m3", "fp8_ootb": "fp8_e4m3",
          "nvfp4": "nvfp4", "mxfp4": "mxfp4",
          "bf16": "bf16", "fp16": "bf16", "bfloat16": "bf16", "float16": "bf16", "": "bf16"}
#: MoE-only quant modes (``MoEQuantMode``): MXFP4 expert weights, with BF16 activations
#: (``w4a16_mxfp4``, "native data format for gpt oss"; ``w4a16_mxfp4_cutlass``, Hopper) or MXFP8
#: ones (``w4a8_mxfp4_mxfp8``, ``w4a8_mxfp4_mxfp8_trtllm``, Blackwell). The model's activations
#: format is one for all GEMMs: the row's ``gemm_quant_mode``'s.
_MOE_QUANT = {**_QUANT, "w4a16_mxfp4": "mxfp4", "w4a16_mxfp4_cutlass": "mxfp4", "w4a8_mxfp4_mxfp8": "mxfp4",
              "w4a8_mxfp4_mxfp8_trtllm": "mxfp4"}
#: The :data:`_QUANT` names of 16-bit weights (an ``int4_wo`` row's other mode may be one).
_QUANT_16 = {k for k, v in _QUANT.items() if v == "bf16"}

#: aiconfigurator's weight-only INT4 quant mode (``gemm_quant_mode``/``moe_quant_mode``
#: ``int4_wo``, ``precision`` ``int4``): group-wise INT4 weights, ``int4_g32`` (see
#: :func:`_int4_wo_formats` for which weights).
INT4_WO = "int4_wo"
#: INT4 releases that quantize the routed experts ONLY, by checkpoint name (lowercase, org dropped:
#: the release, not the architecture, decides; Kimi-K2-Instruct's spec is shared by its FP8 release
#: and third-party INT4 ones). An ``int4_wo`` row of another MoE checkpoint is ``unsupported``
#: (which of its weights are INT4 is not known); a dense model's can only be on its dense weights.
INT4_EXPERTS_ONLY = {
    # moonshotai/Kimi-K2-Thinking and Kimi-K2.5 config.json quantization_config: compressed-tensors
    # "pack-quantized", weights {num_bits 4, type int, symmetric, strategy group, group_size 32},
    # input_activations null, ignore [lm_head, re:.*self_attn.*, re:.*shared_experts.*,
    # re:.*mlp\.(gate|up|gate_up|down)_proj.*]: attention, shared experts, the dense layer-0 MLP
    # and lm_head stay BF16 (the checkpoint dtype; K2.5 also keeps its vision tower and projector
    # out). Corroborated by NVIDIA-NeMo/Automodel
    # kimi_k25_vl/state_dict_adapter.py (_is_quantized_expert_key: mlp.experts.* but not
    # shared_experts or layer 0) and lightseekorg/tokenspeed PR #444 ("Only the routed experts are
    # quantized (attn / shared / dense / lm_head / vision stay bf16)"). The aiconfigurator
    # model_configs copies of these configs (moonshotai--Kimi-K2.5_config.json, 821eb9a6 / 997a02f7)
    # drop quantization_config.
    "kimi-k2.5": "moonshotai/Kimi-K2.5 config.json quantization_config",
    "kimik2.5": "moonshotai/Kimi-K2.5 config.json quantization_config (InferenceMAX prefix)",
    "kimi-k2-thinking": "moonshotai/Kimi-K2-Thinking config.json quantization_config",
}


def shared_data_dir() -> Path:
    """``$CODESIGN_SHARED_DATA`` or ``<repo>/../shared/data``."""
    env = os.environ.get("CODESIGN_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def shared_data_warning() -> str | None:
    """What is missing when ``$CODESIGN_SHARED_DATA`` is set but holds no pool recipes
    (``measured/inferencemax_public.csv``), and the fallback; ``None`` when it is unset or holds
    them. ``validate`` and ``calibrate`` print it once, before any row is priced."""
    env = os.environ.get("CODESIGN_SHARED_DATA")
    if not env or shared_recipe_file().is_file():
        return None
    d = Path(env)
    missing = ("no such directory" if not d.is_dir() else "it has no measured/ directory"
               if not (d / "measured").is_dir() else "it has no measured/inferencemax_public.csv")
    return (f"CODESIGN_SHARED_DATA={env}: {missing} (expected the shared data directory, holding "
            "measured/inferencemax_public.csv); the disaggregated rows that do not record their "
            "prefill/decode pools get them from the read file's own runs where it has them, else from "
            "a sizing rule, instead of InferenceMAX recipes")


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@attrs.define
class Point:
    """One measured serving point mapped to what the cost model needs."""

    id: str
    schema: str
    system: str
    model_name: str
    framework: str
    mode: str = "aggregated"
    model: str | None = None
    isl: int = 0
    osl: int = 0
    jitter: float = 0.0
    #: which statistic ``ttft_s`` is: ``mean`` (includes the benchmark's start-up wave; the
    #: aiconfigurator file) or ``median`` (InferenceMAX rows by default: the steady state, no wave)
    ttft_stat: str = "mean"
    concurrency: int = 1
    formats: dict = attrs.field(factory=dict)
    deploy: dict = attrs.field(factory=dict)
    ttft_s: float = math.nan
    tpot_s: float = math.nan
    tput: float = math.nan
    status: str = "ok"
    #: what to look at: a row the file repeats, a cell that looks wrong, a logged cell read another
    #: way, ... (predictions.csv's ``warning`` column)
    warnings: list = attrs.field(factory=list)
    #: what the mapping filled in that the row does not record, from a launch script, an InferenceX
    #: configuration, an engine default or a rule (MTP draft tokens, decode batch limit, SGLang's
    #: receive interval, inferred pools, a stand-in architecture): predictions.csv's
    #: ``assumptions`` column, apart from the warnings (848 of the 1,418 InferenceMAX rows carry
    #: one; fresh-user trial)
    assumptions: list = attrs.field(factory=list)
    #: the warnings (also in ``warnings``) that question a measured cell: TTFT above the end-to-end
    #: latency (:func:`_imx`), a prediction 100x off (:func:`unit_slip_warnings`); a priced row
    #: with one is a questioned row (:func:`questioned_rows`)
    questioned: list = attrs.field(factory=list)
    # predictions
    pred_ttft_s: float = math.nan
    pred_tpot_s: float = math.nan
    pred_tput: float = math.nan
    #: the cost model's optional point metrics at the row (:data:`DIAGNOSTICS`; NaN where the model
    #: reports none)
    pred_decode_batch: float = math.nan
    pred_prefill_utilization: float = math.nan
    extrapolated: list = attrs.field(factory=list)
    #: the id of an earlier row of the same file whose cells this row repeats, but for its id and
    #: provenance (:data:`PROVENANCE_COLUMNS`): the same measurement captured twice; "" otherwise
    repeats: str = ""
    #: the file row (the header is row 1) of the row this one repeats; 0 when it repeats none
    repeats_row: int = 0

    @property
    def system_key(self) -> str:
        name = system_name(self.system)
        return SYSTEMS.get(name, name)

    def config_key(self) -> tuple:
        """Identifies a served configuration (everything but the concurrency): the holdout unit."""
        # (the inferred decode batch limit "mb", the receive interval "ri", from the launch script
        # by concurrency or from the recipe file, and the attention-DP balance timeout "ab" are
        # engine settings: not part of the unit)
        return (self.system_key, self.model_name, self.framework, self.mode, self.isl, self.osl,
                tuple(sorted(self.formats.items())),
                tuple(sorted((k, v) for k, v in self.deploy.items() if k not in ("mb", "ri", "ab"))))


def _gpt_oss_formats(pt: Point) -> dict:
    """gpt-oss-120b's MXFP4 experts: MXFP8 activations on Blackwell, BF16 on Hopper (no FP4/MX
    tensor cores). Source: TensorRT-LLM's GPT-OSS deployment guide, MoE backend support matrix
    (B200/GB200/B300/GB300: MXFP8 activations x MXFP4 weights, TRTLLM backend; H200: BF16 x MXFP4,
    TRITON backend); vLLM's Hopper path is likewise W4A16. AMD: MI300X/MI325X (gfx942, no FP4 or
    MX tensor cores) run the MXFP4 experts through triton_kernels' matmul_ogs, W4A16 (ROCm/ATOM
    PR #220: the Triton MXFP4 MoE path is gfx94x's); MI355X (gfx950) through AITER's per_1x32 MoE,
    which picks FP8 activations for the interleaved SwiGLU above 512 tokens per GEMM and BF16 below
    (ROCm/aiter PR #3593): FP8 as on Blackwell, right for prefill, where the rate matters; decode
    at those batches is bound by memory (:data:`NO_FP4_SYSTEMS`)."""
    act = "bf16" if pt.system_key in NO_FP4_SYSTEMS else "fp8_e4m3"
    return dict(weights="bf16", moe="mxfp4", kv="fp8_e4m3", act=act)


#: Draft tokens per step assumed for InferenceMAX ``spec_method = mtp`` rows that match no InferenceX
#: recipe (:func:`_recipe_settings`; not recorded in the data): TensorRT-LLM's DeepSeek-R1 recipe
#: sets ``num_nextn_predict_layers: 3``, SGLang's ``--speculative-num-steps 3``.
MTP_DRAFT_TOKENS = 3
#: Frameworks whose recipes set another draft count: AMD's disaggregated SGLang (MoRI) runs pass
#: ``DECODE_MTP_SIZE=2`` (InferenceX .github/configs/amd-master.yaml, dsr1-*-mi355x-sglang-disagg).
MTP_DRAFT_TOKENS_BY_FRAMEWORK = {"sglang-disagg": 2, "mori-sglang": 2}


# ------------------------------------------------------------------------------ reading
def _f(x, default=math.nan) -> float:
    try:
        return float(x) if x not in ("", None) else default
    except ValueError:
        return default


def _i(x, default=1) -> int:
    v = _f(x, math.nan)
    return int(round(v)) if math.isfinite(v) and v > 0 else default


def _whole(x) -> int | None:
    """``x`` as a whole number >= 1, or ``None`` (blank, non-numeric, fractional, zero, negative)."""
    v = _f(x, math.nan)
    return int(v) if math.isfinite(v) and v >= 1 and v == int(v) else None


def _measured(pt: Point, r: dict, col: str) -> float:
    """The measured value of column ``col`` (NaN when blank); an ``invalid`` status on ``pt`` when
    the cell is not blank but not a finite number > 0 (``fast``, ``inf``, ``-1``, ``0``)."""
    raw = (r.get(col) or "").strip()
    v = _f(raw)
    if raw and not (math.isfinite(v) and v > 0) and not pt.status.startswith("invalid"):
        pt.status = f"invalid: {col} must be a finite number > 0 (got {raw})"
    return v if raw and math.isfinite(v) and v > 0 else math.nan


def _counts(pt: Point, r: dict, cols, positive=()) -> None:
    """An ``invalid`` status on ``pt`` when one of the parallelism/worker-count columns ``cols`` is
    not blank but not a whole number >= 0 (``nan``, ``2.5``, ``-1``); blank cells and 0 (both files
    write 0.0 for "not used") keep their documented defaults, except in the columns ``positive``
    that the row's mode prices (a TP, EP or GPU count of 0 would be priced as 1: ``>= 1``)."""
    for col in cols:
        raw = (r.get(col) or "").strip()
        floor = 1 if col in positive else 0
        if raw and (_f(raw) != 0 or floor) and _whole(raw) is None and not pt.status.startswith("invalid"):
            pt.status = f"invalid: {col} must be a whole number >= {floor} (got {raw})"
            return


def _disagg_counts(pt: Point, r: dict) -> None:
    """An ``invalid`` status on ``pt`` (a disaggregated InferenceMAX row) whose GPU counts are blank,
    or which records one pool's worker count but not the other's.

    Both files' disaggregated rows log ``num_prefill_gpu`` and ``num_decode_gpu``; the legacy rows
    (``gpu_count_consistency`` ``legacy_total_equals_num_prefill_gpu``, imx-00156 and four more) log
    0 workers in *both* pools and the run's total GPUs as each pool, and take their pools from the
    InferenceX configuration or the nearest run (:func:`infer_pools`). A row with one worker count 0 or blank
    and the other one set is no legacy row: guessing its pools from another run would price a
    configuration it did not run, so it is not priced (the cell is named).
    """
    if pt.status.startswith("invalid"):
        return
    for col in ("num_prefill_gpu", "num_decode_gpu"):
        if not (r.get(col) or "").strip():
            pt.status = f"invalid: {col} is blank (a disaggregated row needs its prefill and decode GPU counts)"
            return
    cells = {col: (r.get(col) or "").strip() for col in ("prefill_num_workers", "decode_num_workers")}
    known = {col: _whole(v) is not None for col, v in cells.items()}
    if any(known.values()) and not all(known.values()):
        col = next(c for c, k in known.items() if not k)
        other = next(c for c, k in known.items() if k)
        pt.status = (f"invalid: {col} must be a whole number >= 1 when {other} is set (got "
                     f"{cells[col] or 'nothing'}; only legacy rows leave both worker counts 0)")


def _lengths(pt: Point, r: dict) -> None:
    """``pt.isl``/``pt.osl`` from the row's ``isl``/``osl`` (0 when not a whole number >= 1, with an
    ``invalid`` status). An OSL of 1 is invalid too: TPOT = (E2E - TTFT) / (OSL - 1) needs two output
    tokens (the spec's own ``workload.osl`` rule), and a row of one output token, priced inside a
    group whose base spec is another row's, reached the cost model unchecked and divided by zero
    (an internal error that stopped the whole file)."""
    pt.isl, pt.osl = _invalid(pt, r, "isl") or 0, _invalid(pt, r, "osl") or 0
    if pt.osl == 1 and not pt.status.startswith("invalid"):
        pt.status = ("invalid: osl must be a whole number >= 2 (got 1): TPOT = (E2E - TTFT) / (OSL - 1) "
                     "needs two output tokens")


def _invalid(pt: Point, r: dict, col: str) -> int | None:
    """The whole-number column ``col`` of row ``r``; an ``invalid`` status on ``pt`` when it is not
    a whole number >= 1 (the row is then kept in predictions.csv and out of the error tables)."""
    v = _whole(r.get(col))
    if v is None and not pt.status.startswith("invalid"):
        pt.status = f"invalid: {col} must be a whole number >= 1 (got {(r.get(col) or '').strip() or 'nothing'})"
    return v


#: Columns each schema needs: on every row, and on the rows of one mode only. The schema of a file
#: is recognised by its ``MARKERS`` (the id and measured columns).
MARKERS = {"aiconfigurator": ("id", "silicon_ttft_ms", "silicon_tpot_ms"),
           "inferencemax": ("point_id", "conc", "tput_per_gpu_tok_s")}
REQUIRED = {
    "aiconfigurator": {
        "": ("id", "system", "model_path", "backend", "mode", "isl", "osl", "gemm_quant_mode",
             "moe_quant_mode", "silicon_ttft_ms", "silicon_tpot_ms"),
        "agg": ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size", "batch_size"),
        "disagg": ("prefill_num_workers", "prefill_tp_size", "prefill_pp_size", "prefill_attention_dp_size",
                   "prefill_moe_ep_size", "decode_num_workers", "decode_tp_size", "decode_pp_size",
                   "decode_attention_dp_size", "decode_moe_ep_size", "decode_batch_size"),
    },
    "inferencemax": {
        "": ("point_id", "hardware", "model_key", "framework", "precision", "disagg", "isl", "osl", "conc",
             "tput_per_gpu_tok_s"),
        "False": ("tp", "ep", "dp_attention"),
        "True": ("num_prefill_gpu", "num_decode_gpu", "prefill_num_workers", "prefill_tp", "prefill_ep",
                 "prefill_dp_attention", "decode_num_workers", "decode_tp", "decode_ep",
                 "decode_dp_attention"),
    },
}
#: At least one column of each group (the model is compared with the mean, else the median).
ONE_OF = {"aiconfigurator": (), "inferencemax": (("mean_ttft_s", "median_ttft_s"),
                                                 ("mean_tpot_s", "median_tpot_s"))}
_SCHEMA_NAMES = {"aiconfigurator": "aiconfigurator", "inferencemax": "InferenceMAX"}


def _schema_of(path, cols: set, rows: list[dict]) -> str:
    """The schema whose marker columns the file has most of; every required column checked."""
    score = {name: len(cols & set(m)) for name, m in MARKERS.items()}
    if not (cols & {"silicon_ttft_ms", "silicon_tpot_ms"}):
        score["aiconfigurator"] = 0  # "id" alone says nothing
    schema = max(score, key=lambda k: score[k])
    if score[schema] == 0:
        raise CodesignError(f"{path}: neither the aiconfigurator (id, silicon_ttft_ms, silicon_tpot_ms) "
                            "nor the InferenceMAX (point_id, conc, tput_per_gpu_tok_s) schema")
    req = REQUIRED[schema]
    mode_col = "mode" if schema == "aiconfigurator" else "disagg"
    need = list(req[""])
    if mode_col in cols:
        # the mode as the row mappers read it (_aic: agg/disagg in any case; _imx: True/False as _imx_bool)
        norm = (lambda c: (c or "").strip().lower()) if schema == "aiconfigurator" else _imx_bool
        for mode in dict.fromkeys(norm(r.get(mode_col)) for r in rows):
            need += req.get(mode, ())
    missing = [c for c in dict.fromkeys(need) if c not in cols]
    missing += [" or ".join(g) for g in ONE_OF[schema] if not cols & set(g)]
    if missing:
        present = [c for c in MARKERS[schema] if c in cols]
        raise CodesignError(
            f"{path}: looks like the {_SCHEMA_NAMES[schema]} schema (has {', '.join(present)}) but lacks "
            f"required column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return schema


#: InferenceMAX statistics ``read_measured`` can compare with (:data:`IMX_STATISTIC` by default).
STATISTICS = ("median", "mean")
#: The InferenceMAX TTFT/TPOT statistic compared by default: the median. It is the statistic
#: InferenceMAX publishes (the InferenceX dashboard API carries ``median_*`` for every point and
#: the mean for only 176 of the 650 dashboard captures in inferencemax_public.csv), and it is the
#: benchmark's steady state: the mean adds the start-up burst (all ``conc`` users at once) and
#: warm-up stalls of the first requests (p99 TTFT of 8–70 s where the median is 0.1–0.6 s), which
#: belong to the harness, not to the hardware.
IMX_STATISTIC = "median"


def shared_data_hint(path) -> str:
    """``"; the measured data ... CODESIGN_SHARED_DATA ..."`` when a missing ``path`` names the
    shared data directory (``.../shared/data/...``) and the variable is unset, else ``""``: the
    README's tour from a clone not beside ``shared/`` failed naming only the path (session 41)."""
    if os.environ.get("CODESIGN_SHARED_DATA") or "shared/data" not in Path(path).as_posix():
        return ""
    return ("; the shared data is not beside this clone: set CODESIGN_SHARED_DATA to its directory "
            "(the README's quick start)")


def read_measured(path, statistic: str = IMX_STATISTIC) -> tuple[str, list[Point]]:
    """Read a measured CSV in either schema; returns ``(schema, points)`` with one point per row.

    ``statistic`` (``"median"`` or ``"mean"``) is which InferenceMAX TTFT/TPOT column a row is
    compared with (the other where the row lacks it; :data:`IMX_STATISTIC`); the aiconfigurator
    file has one statistic, the mean (its converter records ``mean_ttft``/``mean_tpot``).

    A row whose concurrency (InferenceMAX ``conc``) or ISL/OSL is not a whole number >= 1 gets the
    status ``invalid: ...``: it stays in ``predictions.csv`` and out of the error tables, without
    the warnings its mapping added (it is never priced). Rows sharing an id are all kept
    (:func:`duplicate_ids` finds them).

    Raises:
        CodesignError: the file is missing, unreadable, in neither schema, names a column twice in
            its header (the message names the file and the column), or lacks a column its schema
            requires (the message names the file, the schema and the missing columns).
    """
    p = Path(path)
    if not p.exists():
        raise CodesignError(f"{path}: no such file{shared_data_hint(path)}")
    if p.is_dir():
        raise CodesignError(f"{path}: is a directory; expected a measured CSV file")
    try:
        with open(p, newline="", encoding="utf-8-sig") as f:  # -sig: a spreadsheet's BOM is not a column name
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
    except UnicodeDecodeError:
        raise CodesignError(f"{path}: not a UTF-8 text file (expected a measured CSV)") from None
    except csv.Error as exc:
        raise CodesignError(f"{path}: not a readable CSV file ({exc})") from None
    except OSError as exc:
        raise CodesignError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not rows:
        raise CodesignError(f"{path}: no rows")
    if statistic not in STATISTICS:
        raise CodesignError(f"statistic must be one of {', '.join(STATISTICS)} (got {statistic!r})")
    _refuse_duplicate_columns(path, header)
    cols = {c for c in header if c}
    # a row with fewer cells than the header (csv gives None) or more (under the key None) is kept,
    # its cells read as blank, and marked invalid after parsing: never priced from shifted columns
    bad_shape = {}
    for n, r in enumerate(rows):
        extra = r.pop(None, None)
        missing = [k for k, v in r.items() if v is None]
        if missing or extra:
            got = len(header) - len(missing) + len(extra or [])
            bad_shape[n] = f"invalid: row {n + 2} has {got} cells, the header {len(header)}"
            for k in missing:
                r[k] = ""
    schema = _schema_of(path, cols, rows)
    # where the pool recipes are looked for when no shared data is found (shared_recipe_file)
    reading = _READING.set(str(p.resolve()))
    try:
        if schema == "aiconfigurator":
            pts = [_aic(r) for r in rows]
        else:
            # an InferenceMAX file's own disaggregated runs are pool recipes too (for its rows that do
            # not record worker counts), beside the shared file's: a file validated away from the
            # shared data
            token = _OWN_RECIPES.set(str(p.resolve()))
            try:
                pts = [_imx(r, statistic) for r in rows]
            finally:
                _OWN_RECIPES.reset(token)
    finally:
        _READING.reset(reading)
    for n, why in bad_shape.items():
        pts[n].status = why
    for n, m in repeated_rows(schema, header, rows).items():
        # the file's row number (the header is row 1): rows may share an id
        pts[n].repeats = f"{pts[m].id} (row {m + 2})" if pts[m].id else f"row {m + 2}"
        pts[n].repeats_row = m + 2
        pts[n].warnings.append(f"repeats the measurement of {pts[n].repeats}")  # an invalid row's go below
    notes = _absent_column_notes(schema, cols, statistic)
    for pt in pts:
        if pt.status.startswith("invalid"):
            # never priced: what mapping the row assumed (MTP draft tokens, recipe batch limits, ...)
            # is no warning of it; its status says why it is invalid
            pt.warnings.clear()
            pt.assumptions.clear()
            pt.questioned.clear()
        else:
            pt.warnings.extend(notes)
    return schema, pts


#: Columns that say where a row came from (its id, the dump or capture that held it), not what was
#: measured: a row equal to an earlier one in every other cell repeats that measurement
#: (:func:`repeated_rows`). The public aiconfigurator file holds 249 such rows (220 of its 2026-04-06
#: dump repeating another dump's row, 29 records of its 2026-03-25 dump written twice;
#: ``silicon_data_source`` names the dump).
PROVENANCE_COLUMNS = {"aiconfigurator": ("id", "silicon_data_source"),
                      "inferencemax": ("point_id", "source_dataset", "source")}


def repeated_rows(schema: str, header: list[str], rows: list[dict]) -> dict[int, int]:
    """Rows that repeat an earlier row's measurement: 0-based index → the index of the first row with
    the same cells in every column but :data:`PROVENANCE_COLUMNS` (a cell that reads as a number
    compared as that number, ``16`` as ``16.0`` and ``451.02`` as ``451.020``; any other as written,
    blank cells included). Every row is kept and priced; this only says which ones count the same
    measurement twice in the error tables."""
    def cell(v) -> object:
        v = (v or "").strip()
        try:
            x = float(v)
        except ValueError:
            return v
        return x if math.isfinite(x) else v

    skip = set(PROVENANCE_COLUMNS.get(schema, ()))
    keep = [c for c in header if c and c not in skip]
    first: dict[tuple, int] = {}
    out: dict[int, int] = {}
    for n, r in enumerate(rows):
        key = tuple(cell(r.get(c)) for c in keep)
        if key in first:
            out[n] = first[key]
        else:
            first[key] = n
    return out


def repeated_list(points: list[Point]) -> list[dict]:
    """The rows that repeat an earlier row's measurement (:func:`repeated_rows`), as ``validate
    --json`` lists them: ``{"id", "row", "repeats_id", "repeats_row"}`` each, in the file's order,
    rows numbered as the file's lines (the header is row 1; ``points`` are the file's rows in
    order, as :func:`read_measured` gives them) and a blank id as null. ``repeated_rows`` gave their
    count alone, so a script could not tell which rows to drop (fresh-user trial, session 46)."""
    return [{"id": p.id or None, "row": n + 2, "repeats_id": points[p.repeats_row - 2].id or None,
             "repeats_row": p.repeats_row}
            for n, p in enumerate(points) if p.repeats_row]


def repeated_note(points: list[Point], schema: str) -> str | None:
    """One line counting the rows that repeat an earlier row's measurement (:func:`repeated_rows`),
    naming the first; ``None`` when there are none."""
    rep = [p for p in points if p.repeats]
    if not rep:
        return None
    cols = PROVENANCE_COLUMNS.get(schema, ("id",))
    what = " and ".join(cols) if len(cols) < 3 else f"{', '.join(cols[:-1])} and {cols[-1]}"
    return (f"{len(rep)} row(s) repeat an earlier row's measurement (every cell but {what} equal, e.g. "
            f"{rep[0].id or '(no id)'} repeats {rep[0].repeats}): each is priced and counted in the error "
            "tables as a row of its own; predictions.csv's warning column names the row each repeats")


#: How a file-level note starts (:func:`file_notes`): an optional column the file lacks, pool recipes
#: that could not be read (written by :func:`_absent_column_notes` and :func:`infer_pools`).
ABSENT_COLUMN = "absent column "
NO_RECIPES = "no InferenceMAX pool recipes: "
FILE_NOTE_PREFIXES = (ABSENT_COLUMN, NO_RECIPES)


#: The columns of the InferenceMAX schema (``inferencemax_public.csv``'s header): a column of a file
#: not among them is one :func:`_misspelt` may offer for an absent one.
INFERENCEMAX_COLUMNS = (
    "point_id", "source_dataset", "model_key", "model_checkpoint", "hardware", "runner_label",
    "framework", "precision", "spec_method", "disagg", "is_multinode", "isl", "osl", "conc", "tp",
    "ep", "dp_attention", "prefill_tp", "prefill_ep", "prefill_dp_attention", "prefill_num_workers",
    "decode_tp", "decode_ep", "decode_dp_attention", "decode_num_workers", "num_prefill_gpu",
    "num_decode_gpu", "total_gpus", "tput_per_gpu_tok_s", "input_tput_per_gpu_tok_s",
    "output_tput_per_gpu_tok_s", "median_ttft_s", "mean_ttft_s", "p99_ttft_s", "median_tpot_s",
    "mean_tpot_s", "p99_tpot_s", "median_itl_s", "mean_itl_s", "median_e2el_s", "mean_e2el_s",
    "p99_e2el_s", "median_intvty_tok_s_user", "mean_intvty_tok_s_user", "measured_avg_gpu_power_w",
    "measured_joules_per_total_token", "measured_tps_per_kw_gpu_only",
    "sa_allin_utility_kw_per_gpu_2025_10", "derived_tps_per_kw_sa_utility_2025_10",
    "sa_allin_it_kw_per_gpu_2026_07", "derived_tps_per_kw_sa_it_2026_07", "gpu_tdp_w",
    "derived_tps_per_kw_tdp", "gpu_count_consistency", "image", "date", "date_quality", "run_url",
    "source",
)


def _misspelt(absent: list[str], cols: set) -> str:
    """`` (the file has 'median_ttft_ms': a misspelling?)`` when the file has a column outside the
    schema (:data:`INFERENCEMAX_COLUMNS`) close to an ``absent`` one (:func:`~codesign.errors.close_name`),
    else ``""``: a header typo switched every row to the other statistic with nothing but the
    absent name said (fresh-user trial, session 46)."""
    unknown = sorted(cols - set(INFERENCEMAX_COLUMNS))
    close = [c for a in absent if (c := close_name(a, unknown))]
    if not close:
        return ""
    return (f" (the file has {', '.join(repr(c) for c in dict.fromkeys(close))}: "
            f"{'a misspelling' if len(close) == 1 else 'misspellings'}?)")


def _absent_column_notes(schema: str, cols: set, statistic: str) -> list[str]:
    """What pricing assumes for the optional InferenceMAX columns a file lacks (a warning on every
    row, and once on stderr: :func:`file_notes`); a lacking file is never priced silently."""
    if schema != "inferencemax":
        return []
    notes = []
    if "spec_method" not in cols:
        notes.append(f"{ABSENT_COLUMN}spec_method{_misspelt(['spec_method'], cols)}: every row priced without "
                     "speculative decoding (an MTP run would be mispriced)")
    other = "mean" if statistic == "median" else "median"
    lacking = [c for c in (f"{statistic}_ttft_s", f"{statistic}_tpot_s") if c not in cols]
    if lacking:
        notes.append(f"{ABSENT_COLUMN}{', '.join(lacking)}{_misspelt(lacking, cols)}: rows compared with their "
                     f"{other} TTFT/TPOT instead of the {statistic}")
    return notes


def file_notes(points: list[Point]) -> list[str]:
    """The distinct file-level notes among the points' warnings (:data:`FILE_NOTE_PREFIXES`), in
    order: what the CLI prints once instead of leaving it in every row of predictions.csv only.
    The pool-recipes note is left out when :func:`shared_data_warning` has a message: that warning,
    printed up front, already names the cause and the fallback (the rows keep the note)."""
    skip = (NO_RECIPES,) if shared_data_warning() else ()
    return list(dict.fromkeys(w for p in points for w in p.warnings
                              if w.startswith(FILE_NOTE_PREFIXES) and not (skip and w.startswith(skip))))


def bad_rows_note(points: list[Point], where: str) -> str | None:
    """One line counting the rows of a file (``where``: its path, or what the rows report into)
    whose cells are bad (status ``invalid``), naming the first three with their reasons; ``None``
    when there are none. Such rows are kept (as ``invalid:`` rows of predictions.csv), never priced
    or fitted: the CLI prints this so that they are not only in the CSV."""
    bad = [(n, p) for n, p in enumerate(points) if p.status.startswith("invalid")]
    if not bad:
        return None
    return f"{len(bad)} row(s) with bad cells were not priced ({_shown(bad)}); {where}"


def _shown(rows: list[tuple[int, Point]]) -> str:
    """The first three of ``(index in the file's rows, point)`` as a stderr line names them: id, file
    row (the header is row 1, as the repeated-row note counts) and reason: ``my-002 (row 4): no
    hardware spec for system h100x``. An id alone did not find a row whose id is blank or repeated
    (fresh-user trial, session 46)."""
    shown = "; ".join(f"{p.id or '(no id)'} (row {n + 2}): {p.status.split(': ', 1)[-1]}" for n, p in rows[:3])
    return shown + ("; …" if len(rows) > 3 else "")


#: How the status of a row naming a model or system codesign does not know starts (:func:`_model`,
#: :func:`_system`).
UNKNOWN_NAME = ("unsupported: no model config for ", "unsupported: no hardware spec for system ")


def unknown_rows_note(points: list[Point], where: str) -> str | None:
    """One line counting the rows (``points``: the file's rows in order) that name a model or
    system codesign does not know, naming the first three with their file rows and reasons (the
    close known name, where there is one); ``None`` when there are none. They had only a count in
    the status summary (fresh-user trial, session 46)."""
    unknown = [(n, p) for n, p in enumerate(points) if p.status.startswith(UNKNOWN_NAME)]
    if not unknown:
        return None
    return (f"{len(unknown)} row(s) naming a model or system codesign does not know were not priced "
            f"({_shown(unknown)}); {where}")


def questioned_rows(points: list[Point]) -> list[tuple[int, Point]]:
    """``(index in the file's rows, point)`` of the priced rows with a warning questioning a
    measured cell (``Point.questioned``: :func:`_imx`'s TTFT above the E2E latency,
    :func:`unit_slip_warnings`); they stay priced and counted, and stderr counts them
    (:func:`questioned_rows_note`). They were found by the end of the warnings' text."""
    return [(n, p) for n, p in enumerate(points) if priced(p.status) and p.questioned]


def questioned_list(points: list[Point]) -> list[dict]:
    """The questioned rows (:func:`questioned_rows`) as ``validate --json`` lists them:
    ``{"id", "row", "warnings"}`` each, in the file's order, ``row`` the file's line (the header is
    row 1, as :func:`repeated_list` numbers them), a blank id as null, ``warnings`` the ones that
    question the row (also in its predictions.csv ``warning`` cell). ``questioned_rows`` gave their
    count alone (fresh-user trial)."""
    return [{"id": p.id or None, "row": n + 2, "warnings": list(p.questioned)} for n, p in questioned_rows(points)]


def questioned_rows_note(points: list[Point], where: str) -> str | None:
    """One line counting the priced rows whose measured TTFT or TPOT a warning questions, naming
    the first with its file row and warning; ``None`` when there are none. They are priced and in
    the error tables, where one such cell moved a three-row TTFT MAPE from 24% to 49% while the
    warning was only in predictions.csv (fresh-user trial, session 46)."""
    rows = questioned_rows(points)
    if not rows:
        return None
    n, p = rows[0]
    said = p.questioned[0]
    return (f"{len(rows)} priced row(s) have a measured TTFT or TPOT that looks wrong, counted in the error "
            f"tables (e.g. {p.id or '(no id)'} (row {n + 2}): {said}); {where}")


def _refuse_duplicate_columns(path, header: list[str]) -> None:
    """A header naming a column twice is refused (csv.DictReader would keep the last cell silently)."""
    where: dict[str, list[int]] = defaultdict(list)
    for n, c in enumerate(header, 1):
        if c:  # blank names (trailing commas of a spreadsheet export) are never read
            where[c].append(n)
    dup = {c: ns for c, ns in where.items() if len(ns) > 1}
    if dup:
        what = "; ".join(f"{c} {'twice' if len(ns) == 2 else f'{len(ns)} times'} (columns "
                         f"{', '.join(map(str, ns))})" for c, ns in dup.items())
        raise CodesignError(f"{path}: duplicate column{'s' if len(dup) > 1 else ''} in the header: {what}; "
                            "expected each column name once")


def duplicate_ids(points: list[Point]) -> dict[str, list[int]]:
    """Ids held by more than one point → the 0-based indices of those points, in input order (every
    row is kept: predictions.csv, which joins on the id, lists them in that order)."""
    where: dict[str, list[int]] = defaultdict(list)
    for n, p in enumerate(points):
        where[p.id].append(n)
    return {i: ns for i, ns in where.items() if len(ns) > 1}


def _system(pt: Point) -> None:
    """Mark a row whose system cell is blank invalid, and one naming no known system unsupported
    (an invalid or unsupported row keeps its first reason)."""
    if pt.status != "ok":
        return
    if not (pt.system or "").strip():
        pt.status = f"invalid: no system name ({'hardware' if pt.schema == 'inferencemax' else 'system'} is empty)"
    elif system_name(pt.system) not in SYSTEMS:
        pt.status = f"unsupported: no hardware spec for system {pt.system}{system_hint(pt.system)}"
    elif not _system_readings(pt.system):  # read by InferenceX's runner-name rule
        pt.warnings.append(f"{'hardware' if pt.schema == 'inferencemax' else 'system'} {pt.system.strip()} read "
                           f"as {system_name(pt.system)} (InferenceX's ingest rule: the GPU key before the "
                           "first '-', after any cluster prefix)")


def _model(pt: Point) -> None:
    if not (pt.model_name or "").strip():
        if pt.status == "ok":
            col = "model_key" if pt.schema == "inferencemax" else "model_path"
            pt.status = f"invalid: no model name ({col} is empty)"
        return
    stem, warnings, tried = resolve_model(pt.model_name)
    if stem is None:
        if pt.status == "ok":  # an invalid row stays invalid
            why = f"; {warnings[0]}" if warnings else ""
            guess = close_model_name(pt.model_name)
            why += f"; did you mean {guess}?" if guess else ""
            pt.status = f"unsupported: no model config for {pt.model_name} (normalised name tried: {tried}{why})"
        return
    pt.model = stem
    # a MODELS entry's note (``architecture of kimi-k2 (Kimi-K2-Instruct config; ...)``) is the
    # stand-in architecture the row is priced with: an assumption; the name rule's reading a warning
    stand_in = {note for _, note in MODELS.values() if note}
    pt.assumptions.extend(w for w in warnings if w in stand_in)
    pt.warnings.extend(w for w in warnings if w not in stand_in)
    ctx = _context_length(stem)
    if ctx and pt.isl + pt.osl > ctx:  # it was served: priced, not refused (base_raw drops the check)
        pt.warnings.append(f"ISL + OSL = {pt.isl + pt.osl:,} tokens, longer than {stem}'s context length "
                           f"({ctx:,} tokens, models/{stem}.toml context_length): the run served a longer "
                           "context than the released config gives (RoPE scaling), priced as measured")


@functools.cache
def _context_length(model: str) -> int | None:
    """``context_length`` of ``specs/models/<model>.toml`` (HF ``max_position_embeddings``), or None."""
    from .spec import context_tokens, load_raw

    md, _ = load_raw(models_dir() / f"{model}.toml")
    return context_tokens((md.get("model") or {}).get("context_length"))


@functools.cache
def _has_routed_experts(model: str) -> bool:
    """Whether ``specs/models/<model>.toml`` has routed experts (``num_experts`` > 0)."""
    from .spec import load_raw

    md, _ = load_raw(models_dir() / f"{model}.toml")
    return bool((md.get("model") or {}).get("num_experts") or 0)


def _int4_wo_formats(pt: Point, g: str, mo: str) -> dict | str:
    """Formats of an aiconfigurator ``int4_wo`` row, or the ``unsupported`` reason.

    Rule (which weights the INT4 is on must be known, never guessed):

    * a checkpoint of :data:`INT4_EXPERTS_ONLY` (Kimi-K2.5, Kimi-K2-Thinking) with
      ``moe_quant_mode`` ``int4_wo``: routed experts ``int4_g32``, every other weight BF16, whatever
      ``gemm_quant_mode`` says (the release has no INT4 outside the experts);
    * a dense model (no routed experts): its weights are the only place the INT4 can be, so
      ``weights`` (and the unused ``moe``) are ``int4_g32``;
    * any other MoE model: ``unsupported`` (its INT4 release is not recorded here).

    Activations BF16 (weight-only: vLLM runs compressed-tensors W4A16 MoE with Marlin or the
    Triton int4_w4a16 fused-MoE kernel, vllm/model_executor/layers/quantization/compressed_tensors/
    compressed_tensors_moe.py ``CompressedTensorsWNA16[Marlin]MoEMethod``: BF16 MMA). KV cache BF16:
    vLLM's ``--kv-cache-dtype auto`` (default) is the model dtype (vllm/config/cache.py
    ``CacheConfig.cache_dtype``), BF16 here, and the Kimi configs set ``kv_cache_scheme: null``.

    Known simplification: the analytical model prices the shared experts at ``moe_weights_format``
    (right for NVIDIA's NVFP4 DeepSeek checkpoints, which quantize them): for Kimi it counts their
    2.64B parameters at 4.5 instead of 16 bits (0.47 GB per GPU at TP 8, read every decode step).
    """
    dense_ok = {INT4_WO} | _QUANT_16
    if not {g, mo} <= dense_ok:
        return f"unsupported: number format {INT4_WO} mixed with {g if g not in dense_ok else mo}"
    if not _has_routed_experts(pt.model):
        return dict(weights="int4_g32", moe="int4_g32", kv="bf16", act="bf16")
    if pt.model_name.strip().lower().rsplit("/", 1)[-1] in INT4_EXPERTS_ONLY and mo == INT4_WO:
        return dict(weights="bf16", moe="int4_g32", kv="bf16", act="bf16")
    return (f"unsupported: {INT4_WO} on {pt.model_name}: which weights its INT4 release quantizes "
            "is not recorded (INT4_EXPERTS_ONLY in codesign/validate.py)")


def _aic(r: dict) -> Point:
    mode = (r.get("mode") or "").strip().lower()  # aiconfigurator writes agg/disagg; "AGG" is the same mode
    pt = Point(id=r["id"], schema="aiconfigurator", system=r["system"], model_name=r["model_path"],
               framework=r["backend"], mode="disaggregated" if mode == "disagg" else "aggregated")
    pt.ttft_s = _measured(pt, r, "silicon_ttft_ms") / 1e3
    pt.tpot_s = _measured(pt, r, "silicon_tpot_ms") / 1e3
    if mode not in ("agg", "disagg") and not pt.status.startswith("invalid"):
        pt.status = f"invalid: mode must be agg or disagg (got {(r.get('mode') or '').strip() or 'nothing'})"
    _counts(pt, r, [c for c in r if c and c.endswith(("tp_size", "pp_size", "dp_size", "ep_size", "num_workers"))],
            positive=(("tp_size", "pp_size") if pt.mode == "aggregated" else
                      tuple(f"{p}_{c}" for p in ("prefill", "decode") for c in ("tp_size", "pp_size", "num_workers"))))
    _lengths(pt, r)
    _model(pt)
    _system(pt)
    # the measured concurrency: silicon_concurrency=N in silicon_data_source, else _c<N>_ in the id;
    # one that is there but not a whole number >= 1 makes the row invalid (never priced at another)
    m = re.search(r"silicon_concurrency=([^;\s]*)", r.get("silicon_data_source") or "")
    m2 = re.search(r"_c(\d+)(?:_|$)", r["id"])
    conc = _whole(m.group(1)) if m else (_whole(m2.group(1)) if m2 else None)
    bad_conc = conc is None and bool(m or m2)
    if bad_conc and not pt.status.startswith("invalid"):
        pt.status = ("invalid: silicon_concurrency in silicon_data_source must be a whole number >= 1 "
                     f"(got {m.group(1) or 'nothing'})" if m else
                     f"invalid: the concurrency _c{m2.group(1)}_ in the id must be a whole number >= 1")
    # a batch size that is there must be a whole number >= 1 (blank: not recorded)
    _counts(pt, r, ["batch_size" if pt.mode == "aggregated" else "decode_batch_size"],
            positive=("batch_size", "decode_batch_size"))
    # formats
    g, mo = ((r[c] or "").strip().lower() for c in ("gemm_quant_mode", "moe_quant_mode"))
    if pt.model in GPT_OSS:
        pt.formats = _gpt_oss_formats(pt)
    elif g in _QUANT and mo in _MOE_QUANT:
        low = _QUANT[g] != "bf16"
        pt.formats = dict(weights=_QUANT[g], moe=_MOE_QUANT[mo], kv="fp8_e4m3" if low else "bf16",
                          act=_QUANT[g])
    elif INT4_WO in (g, mo) and pt.model is not None:
        got = _int4_wo_formats(pt, g, mo)
        if isinstance(got, dict):
            pt.formats = got
        elif pt.status == "ok":
            pt.status = got
    elif pt.status == "ok":
        col, bad = (("gemm_quant_mode", g) if g not in _QUANT else ("moe_quant_mode", mo))
        pt.status = f"unsupported: number format {bad} ({col}) has no registered equivalent"
    if pt.mode == "aggregated":
        tp, pp, dp = _i(r["tp_size"]), _i(r["pp_size"]), _i(r["attention_dp_size"])
        total = 0
        ep = _i(r["moe_ep_size"])
        mtp = _i(r["moe_tp_size"], 0)
        bs = _i(r["batch_size"], 0)
        dp0 = dp  # batch_size is per attention-DP rank as logged
        node = NODE_GPUS.get(pt.system_key)
        if node and tp * dp > node and mtp and mtp == ep and mtp * ep == tp * dp:
            # tp_size (or attention_dp_size) logged as TP x EP: e.g. dsr1_b200_sglang_fp4_agg_*_cfg201
            # (tp_size 64, moe 8x8) is the run 2026_04_06_..._tp8_ep8_1038 (same TTFT/TPOT) and
            # InferenceMAX imx-00139 (TP8 EP8 on 8 GPUs). The worker is moe_tp GPUs.
            pt.warnings.append(f"tp_size×attention_dp_size {tp * dp} = moe_tp×moe_ep on a {node}-GPU node: "
                               f"read as {mtp} GPUs, EP {ep}")
            tp, dp = (1, mtp) if dp > 1 else (mtp, 1)
            mtp, ep = 1, ep
        elif pt.system_key in RACK_SYSTEMS and tp * dp > 8 and ep == 1 and dp == 1:
            # e.g. 2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_1024x1024_c32_tp36_ep1_11 is like InferenceMAX
            # imx-02190 (disaggregated, 4 prefill + 32 decode GPUs, TTFT 232 vs 237 ms): tp_size is the
            # run's total GPU count; the pools are inferred below (infer_pools).
            total = tp
        elif (framework_family(pt.framework) == "vllm" and not (r.get("attention_dp_size") or "").strip()
              and mtp and ep and mtp * ep > tp and (mtp * ep) % tp == 0):
            # vLLM without expert parallelism shards every MoE layer over all tp × dp ranks
            # (FusedMoEParallelConfig.make: "flatten_tp_across_dp", tp_size = dp_size × tp_size;
            # vllm/model_executor/layers/fused_moe/config.py), so a MoE TP wider than tp_size is the
            # run's data parallelism: e.g. the Qwen3-235B-A22B-FP8 H200 rows with tp_size 1 and
            # moe_tp_size 4 (235 GB of weights, which one 141 GB GPU cannot hold) measure the TPOT of
            # the tp_size 4 rows (41-44 ms against 34-46 ms), those with moe_tp_size 2 that of tp_size 2
            # (55-59 ms against 51-59 ms)
            dp = mtp * ep // tp
            pt.warnings.append(f"moe_tp×moe_ep {mtp * ep} > tp_size {tp} and no attention_dp_size: read as "
                               f"vLLM data parallelism {dp} (vLLM shards the MoE over tp × dp ranks)")
        if conc is None:
            conc = bs * dp0 if bs else None
        unknown = conc is None
        if unknown:
            pt.status = pt.status if pt.status != "ok" else "unsupported: no concurrency or batch size"
            conc = 1
        inst = min(conc, bs * dp0) if bs else conc
        if inst < conc:
            pt.warnings.append(f"{conc // max(inst, 1)} replicas of {inst} requests each; one modelled")
        pt.concurrency = 0 if unknown else max(inst, 1)  # 0: not recorded (a blank cell, never a fake 1)
        if mtp and ep and mtp * ep != tp * dp:
            pt.warnings.append(f"moe_tp×moe_ep = {mtp * ep} ≠ tp×dp = {tp * dp}")
        pt.deploy = {"tp": tp, "pp": pp, "ep": min(ep, tp * dp), "dp": dp}
        _adp_balance(pt, dp, "as InferenceMAX's launch scripts set it: not recorded in the file")
        if total and pt.status == "ok":
            pt.warnings.append(f"tp_size {total} read as the total GPUs of a disaggregated run")
            pt.concurrency = conc
            infer_pools(pt, r.get("precision", ""), total=total)
    else:
        pw, dw = _i(r["prefill_num_workers"]), _i(r["decode_num_workers"])
        ptp, pdp, pep = _i(r["prefill_tp_size"]), _i(r["prefill_attention_dp_size"]), _i(r["prefill_moe_ep_size"])
        dtp, ddp, dep = _i(r["decode_tp_size"]), _i(r["decode_attention_dp_size"]), _i(r["decode_moe_ep_size"])
        ppp, dpp = _i(r["prefill_pp_size"]), _i(r["decode_pp_size"])
        if ppp != 1 or dpp != 1:
            pt.status = pt.status if pt.status != "ok" else "unsupported: pipeline parallelism in a disaggregated pool"
        if conc is None:
            conc = _i(r["decode_batch_size"]) * dw * ddp
        pt.concurrency = conc
        pt.deploy = {"p_chips": pw * ptp * pdp, "p_tp": ptp, "p_ep": min(pep, ptp * pdp), "p_dp": pdp,
                     "d_chips": dw * dtp * ddp, "d_tp": dtp, "d_ep": min(dep, dtp * ddp), "d_dp": ddp,
                     "pp": 1}
        blank = [c for c in ("prefill_num_workers", "decode_num_workers") if not (r[c] or "").strip()]
        if len(blank) == 1 and not pt.status.startswith("invalid"):
            # the converted rows (below) leave both worker counts blank; one blank is a bad cell
            pt.status = (f"invalid: {blank[0]} is blank while the other pool's worker count is set "
                         "(rows converted from InferenceMAX leave both blank)")
        if blank and pt.status == "ok":
            # rows converted from InferenceMAX result files (source_file=2026-03-25/2026-04-06.csv) log
            # InferenceMAX's prefill_tp, prefill_ep (as both moe_ep sizes) and decode_tp, but no worker
            # counts, batch sizes or attention DP: e.g. ..._gb300_trtllm_fp8_..._c2151_tp4_ep4_1198 is
            # imx-00320 (7 prefill workers of 4 GPUs, 1 decode worker of 8, DP attention). On a rack,
            # prefill tp == decode tp > 8 (..._gb200_trtllm_fp4_disagg_8192x1024_c102_tp28_ep1_1122 =
            # imx-00158) is the run's total GPU count.
            if pt.system_key in RACK_SYSTEMS and ptp == dtp > 8:
                pt.warnings.append(f"prefill/decode tp_size {ptp} read as the total GPUs of the run")
                infer_pools(pt, r.get("precision", ""), total=ptp)
            else:
                infer_pools(pt, r.get("precision", ""), logged=(ptp, pep, dtp))
        elif pt.status == "ok" and framework_family(pt.framework) == "trtllm":
            # the pools are recorded but the decode batch limit is not: decode_batch_size is C per
            # decode rank (decode_batch_size × decode_num_workers × decode_attention_dp_size = C on
            # all 155 rows with worker counts), never the engine's limit
            _aic_recipe_settings(pt, r.get("precision", ""))
    if bad_conc:
        pt.concurrency = 0  # a blank cell in predictions.csv, not the batch size's stand-in
    _dense_ep(pt)
    return pt


def _dense_ep(pt: Point) -> None:
    """Price a dense model's row logged with expert parallelism (EP > 1, of either pool) at EP 1, with
    a warning (in place). A model without routed experts has nothing to distribute: an engine's
    expert-parallel setting changes no weight's placement (vLLM's ``--enable-expert-parallel``
    applies to FusedMoE layers only), while the cost model refuses an EP above the model's 0 experts
    (``infeasible: ... ep 4 is above the model's 0 experts``), so a dense row taking a MoE
    configuration's logged EP was never priced. The public rows of dense models log EP 1."""
    if pt.model is None or _has_routed_experts(pt.model):
        return
    keys = [k for k in ("ep", "p_ep", "d_ep") if int(pt.deploy.get(k, 1)) > 1]
    if not keys:
        return
    name = {"ep": "EP", "p_ep": "prefill EP", "d_ep": "decode EP"}
    said = ", ".join(f"{name[k]} {int(pt.deploy[k])}" for k in keys)
    for k in keys:
        pt.deploy[k] = 1
    pt.warnings.append(f"{said} logged for {pt.model}, a dense model (no routed experts to distribute): "
                       "priced with EP 1")


#: InferenceX's precision aliases (InferenceX-app packages/db/src/etl/normalizers.ts
#: ``PRECISION_ALIASES``: the dashboard files NVFP4 and MXFP4 runs as ``fp4``); the recipes and pool
#: recipes are keyed by the aliased name, the number formats by the one written (:func:`_imx_formats`).
IMX_PRECISION_ALIASES = {"nvfp4": "fp4", "mxfp4": "fp4"}


def _imx_bool(cell) -> str:
    """An InferenceMAX boolean cell as the public file writes it (``True``/``False``): the ingest
    reads ``true``/``True`` and ``false``/``False`` alike (InferenceX-app normalizers.ts
    ``parseOptionalBool``); any other cell is returned stripped, as written."""
    c = (cell or "").strip()
    return {"true": "True", "false": "False"}.get(c.lower(), c)


def _imx_cells(r: dict) -> tuple[dict, str]:
    """``(row, precision as written)``: a copy of InferenceMAX row ``r`` with its categorical cells
    read as InferenceX's ingest reads them (booleans :func:`_imx_bool`; ``spec_method`` lowercase,
    blank = ``none``, as ``normalizeSpecMethod``; ``precision`` lowercase and
    :data:`IMX_PRECISION_ALIASES`), and the precision lowercased but not aliased (``mxfp4`` names
    the format, for :func:`_imx_formats`). The public file's cells read as themselves."""
    r = dict(r)
    for col in ("disagg", "dp_attention", "prefill_dp_attention", "decode_dp_attention"):
        if col in r and r[col] is not None:
            r[col] = _imx_bool(r[col])
    if "spec_method" in r:
        r["spec_method"] = (r["spec_method"] or "").strip().lower() or "none"
    spelled = (r.get("precision") or "").strip().lower()
    if "precision" in r:
        r["precision"] = IMX_PRECISION_ALIASES.get(spelled, spelled)
    return r, spelled


def _imx_formats(pt: Point, prec: str) -> dict | str:
    """Number formats of an InferenceMAX row of precision ``prec`` (lowercase, as written), or the
    ``unsupported`` reason.

    * gpt-oss: its checkpoint's formats whatever ``prec`` says (:func:`_gpt_oss_formats`);
    * ``fp8``: FP8 throughout;
    * ``bf16``/``fp16``: BF16 weights, activations and KV cache (a 16-bit checkpoint: InferenceX's
      ``qwen3.5-bf16-mi355x-sglang`` serves Qwen/Qwen3.5-397B-A17B, the BF16 release, with SGLang's
      default ``--kv-cache-dtype auto``, the model dtype; amd-master.yaml);
    * ``fp4`` on AMD (:data:`AMD_SYSTEMS`), or ``mxfp4`` anywhere: AMD's MXFP4 checkpoints, MXFP4
      weights and activations (AMD Quark ``w_mxfp4_a_mxfp4``, group 32, every linear layer but
      lm_head: amd/DeepSeek-R1-MXFP4 README, commit d39da30; amd/Llama-3.3-70B-Instruct-MXFP4-Preview
      and amd/Qwen3.5-397B-A17B-MXFP4 are the InferenceX MI355X fp4 checkpoints of the other models);
      on MI300X/MI325X (no FP4 tensor cores) :func:`predict` refuses them;
    * ``fp4``/``nvfp4`` otherwise: NVIDIA's ModelOpt FP4 checkpoints. A MoE model: DeepSeek-R1's,
      experts in NVFP4 and the rest FP8 (the calibrated reading of every public DeepSeek-R1 fp4
      row); a dense model (no routed experts): every linear layer of the transformer blocks in NVFP4,
      weights and activations ("Only the weights and activations of the linear operators within
      transformers blocks are quantized", the nvidia/Llama-3.1-405B-Instruct-FP4 model card; InferenceX's
      llama70b fp4 runs serve nvidia/Llama-3.3-70B-Instruct-FP4, InferenceX-app normalizers.ts
      MODEL_TO_KEY), where the MoE rule priced the whole dense model in FP8;
    * ``int4``: the INT4 weight-only rule of the aiconfigurator rows (:func:`_int4_wo_formats`:
      InferenceX's ``kimik2.5-int4-*-vllm`` serve moonshotai/Kimi-K2.5, INT4 routed experts);
    * anything else: ``unsupported: precision ...``.

    The KV cache is FP8 for FP8/FP4 precisions (not in the data, as for the aiconfigurator rows).
    """
    if pt.model in GPT_OSS:
        return _gpt_oss_formats(pt)
    if prec == "fp8":
        return dict(weights="fp8_e4m3", moe="fp8_e4m3", kv="fp8_e4m3", act="fp8_e4m3")
    if prec in ("bf16", "fp16"):
        return dict(weights="bf16", moe="bf16", kv="bf16", act="bf16")
    if prec == "mxfp4" or (prec == "fp4" and pt.system_key in AMD_SYSTEMS):
        return dict(weights="mxfp4", moe="mxfp4", kv="fp8_e4m3", act="mxfp4")
    if prec in ("fp4", "nvfp4"):
        if pt.model is not None and not _has_routed_experts(pt.model):
            return dict(weights="nvfp4", moe="nvfp4", kv="fp8_e4m3", act="nvfp4")
        return dict(weights="fp8_e4m3", moe="nvfp4", kv="fp8_e4m3", act="nvfp4")
    if prec == "int4" and pt.model is not None:
        got = _int4_wo_formats(pt, INT4_WO, INT4_WO)
        return got if isinstance(got, dict) else got.replace(f"{INT4_WO} on", "int4 on", 1)
    return f"unsupported: precision {prec or '(blank)'}"


def _imx(r: dict, statistic: str = "median") -> Point:
    r, spelled = _imx_cells(r)
    # the measured TTFT/TPOT: the chosen statistic, the other one where a row lacks it
    # (both TTFT and TPOT of one statistic: a row lacking either is compared on the other one)
    first, other = (("median", "mean") if statistic == "median" else ("mean", "median"))
    pt = Point(id=r["point_id"], schema="inferencemax", system=r["hardware"], model_name=r["model_key"],
               framework=r["framework"],
               mode="disaggregated" if (r.get("disagg") or "").strip() == "True" else "aggregated", jitter=0.2)
    got = {st: (_measured(pt, r, f"{st}_ttft_s"), _measured(pt, r, f"{st}_tpot_s")) for st in STATISTICS}
    stat = first if all(map(math.isfinite, got[first])) or not any(map(math.isfinite, got[other])) else other
    pt.ttft_stat = stat
    pt.ttft_s, pt.tpot_s = got[stat]
    for st in STATISTICS:  # a TTFT longer than the end-to-end latency it is part of: a wrong cell
        ttft, e2el = got[st][0], _f((r.get(f"{st}_e2el_s") or "").strip())
        if math.isfinite(ttft) and math.isfinite(e2el) and e2el > 0 and ttft > e2el:
            pt.questioned.append(f"{st} TTFT {ttft:.6g} s exceeds the {st} end-to-end latency {e2el:.6g} s "
                                 f"({st}_ttft_s > {st}_e2el_s): each request's TTFT is part of its "
                                 "end-to-end latency, so one of the two cells is wrong")
            pt.warnings.append(pt.questioned[-1])
    pt.tput = _measured(pt, r, "tput_per_gpu_tok_s")
    if (r.get("disagg") or "").strip() not in ("True", "False") and not pt.status.startswith("invalid"):
        pt.status = f"invalid: disagg must be True or False (got {(r.get('disagg') or '').strip() or 'nothing'})"
    _counts(pt, r, ("tp", "ep", "prefill_tp", "prefill_ep", "prefill_num_workers", "decode_tp", "decode_ep",
                    "decode_num_workers", "num_prefill_gpu", "num_decode_gpu", "total_gpus"),
            positive=("total_gpus",) + (("prefill_tp", "prefill_ep", "decode_tp", "decode_ep", "num_prefill_gpu",
                                         "num_decode_gpu") if pt.mode == "disaggregated" else ("tp", "ep")))
    # a bad count is never priced as 1: the row is kept, marked invalid, out of the error tables
    pt.concurrency = _invalid(pt, r, "conc") or 0
    _lengths(pt, r)
    _model(pt)
    _system(pt)
    spec_method = r.get("spec_method", "none") or "none"
    if spec_method == "mtp":
        # DeepSeek's multi-token-prediction heads: 3 draft tokens per step, the TensorRT-LLM
        # DeepSeek-R1 recipe (speculative_config: decoding_type MTP, num_nextn_predict_layers 3) and
        # SGLang's (--speculative-num-steps 3); acceptance is the calibrated `spec_acceptance`
        # (unless the row's InferenceX recipe gives the count: see below)
        spec_tokens = MTP_DRAFT_TOKENS_BY_FRAMEWORK.get(pt.framework.strip().lower(), MTP_DRAFT_TOKENS)
    elif spec_method != "none":
        spec_tokens = 0
        if pt.status == "ok":
            pt.status = f"unsupported: speculative decoding ({spec_method}) is not modelled"
    else:
        spec_tokens = 0
    got = _imx_formats(pt, spelled)
    if isinstance(got, dict):
        pt.formats = got
    elif pt.status == "ok":
        pt.status = got

    placeholder = []  # pools whose logged TP 1 / EP 1 is read as wide EP ("prefill", "decode"; one warning)

    def pool(prefix, gpus, workers):
        per = max(int(round(gpus / max(workers, 1))), 1)
        tp, ep = _i(r[f"{prefix}tp"]), _i(r[f"{prefix}ep"])
        dpa = (r[f"{prefix}dp_attention"] or "").strip() == "True"
        if tp == 1 and ep == 1 and per > 1 and pt.framework.strip().lower() in SGLANG_WIDE_EP_FRAMEWORKS:
            # InferenceX's first configuration of these Dynamo + SGLang runs logged TP 1 and EP 1 for
            # workers of 4-48 GPUs; its later versions of the same items log EP = GPUs per worker
            # (e.g. 1 decode worker of 48 GPUs: decode_ep 48), see SGLANG_WIDE_EP_FRAMEWORKS
            placeholder.append(prefix[:-1])
            ep = per
        elif not dpa and tp != per:  # (a placeholder TP 1 is said once, by the pools' warning)
            pt.warnings.append(f"{prefix or 'agg '}tp {tp} ≠ {per} GPUs per worker; using {per}")
        return (*_worker_layout(per, ep, dpa), per)

    if pt.mode == "aggregated":
        tp, ep, dp = _worker_layout(_i(r["tp"]), _i(r["ep"]), (r["dp_attention"] or "").strip() == "True")
        pt.deploy = {"tp": tp, "pp": 1, "ep": ep, "dp": dp}
        _adp_balance(pt, dp)
    else:
        pg, dg = _f(r["num_prefill_gpu"]), _f(r["num_decode_gpu"])
        pw, dw = _i(r["prefill_num_workers"]), _i(r["decode_num_workers"])
        _disagg_counts(pt, r)
        if not (pg > 0 and dg > 0):
            if pt.status == "ok":
                pt.status = "unsupported: disaggregated row without prefill/decode GPU counts"
            pg, dg = 1, 1
        ptp, pep, pdp, pper = pool("prefill_", pg, pw)
        dtp, dep, ddp, dper = pool("decode_", dg, dw)
        filed = None
        dpa = {k: (r[f"{k}_dp_attention"] or "").strip() for k in ("prefill", "decode")}
        if placeholder and _whole(r["prefill_num_workers"]) and _whole(r["decode_num_workers"]):
            filed = _placeholder_pools(pt, r.get("precision", ""), spec_method, (pw, pper), (dw, dper),
                                       {"prefill": (ptp, pep, pdp), "decode": (dtp, dep, ddp)}, placeholder, dpa)
        if filed is not None:
            (ptp, pep, pdp) = filed.get("prefill", (ptp, pep, pdp))
            (dtp, dep, ddp) = filed.get("decode", (dtp, dep, ddp))
        elif placeholder:
            got = {"prefill": (ptp, pep, pdp), "decode": (dtp, dep, ddp)}
            pt.warnings.append(f"{_placeholder_logged(placeholder, dpa)}, priced with EP = GPUs per worker and the "
                               f"logged attention DP: {_say_pools({k: got[k] for k in placeholder})} (no srt-slurm "
                               "recipe file is named for these pools, and InferenceX's nvidia-master.yaml@8ccec7a7 "
                               "lists such runs with EP = GPUs per worker)")
        pt.deploy = {"p_chips": int(pg), "p_tp": ptp, "p_ep": pep, "p_dp": pdp,
                     "d_chips": int(dg), "d_tp": dtp, "d_ep": dep, "d_dp": ddp, "pp": 1}
        if filed is not None:
            _file_recv_interval(pt, filed["files"])
        if pt.status == "ok" and not (_whole(r["prefill_num_workers"]) and _whole(r["decode_num_workers"])) \
                and _whole(r.get("total_gpus")):
            # legacy rows without worker counts log the run's total GPUs as TP and as both pools
            # (gpu_count_consistency "legacy_total_equals_num_prefill_gpu"): pools from a recipe
            infer_pools(pt, r.get("precision", ""), total=_i(r["total_gpus"]), spec_known=True,
                        spec=spec_method)
    drafts = None
    if pt.mode == "disaggregated" and _whole(r.get("prefill_num_workers")) and _whole(r.get("decode_num_workers")):
        drafts = _recipe_settings(pt, r, spec_method)
    if spec_method == "mtp":
        if drafts:  # the recipe's draft count replaces the assumed one
            spec_tokens = drafts
        else:
            pt.assumptions.append(f"MTP speculative decoding: {spec_tokens} draft tokens per step assumed "
                                  "(not recorded); acceptance not recorded either: the cost model's own "
                                  "(the analytical model's spec_acceptance knob)")
    if pt.mode == "disaggregated" and pt.framework == "dynamo-trt":
        _dynamo_trt_batch_limit(pt)  # the fallback where no recipe gave the batch limit
    if spec_tokens:
        pt.deploy["spec"] = spec_tokens
    ri = sglang_recv_interval(pt)
    if ri is not None:
        pt.deploy["ri"] = ri
        src = f"InferenceMAX's {pt.system_key.upper()} DeepSeek-R1 launch script"
        pt.assumptions.append(f"SGLang --scheduler-recv-interval {ri}, from {src}" if ri > 1 else
                              f"SGLang --scheduler-recv-interval 1 (SGLang's default: {src} sets none)")
    if not (pt.tpot_s > 0 and pt.ttft_s > 0) and pt.status == "ok":
        pt.status = "unsupported: no measured TTFT/TPOT"
    _dense_ep(pt)
    return pt


#: TensorRT-LLM ``attention_dp_config.timeout_iters`` of InferenceMAX's aggregated DeepSeek-R1
#: TensorRT-LLM runs with attention DP: the launch scripts that turn attention DP on write
#: ``attention_dp_config: {batching_wait_iters: 0, enable_balance: true, timeout_iters: 60}`` into
#: their ``extra_llm_api_options`` (InferenceMAX/InferenceMAX benchmarks/dsr1_fp4_b200_trt_slurm.sh,
#: dsr1_fp8_b200_trt_slurm.sh; ``deployment.attention_dp_balance_timeout_iters``).
IMX_ADP_BALANCE_TIMEOUT_ITERS = 60
#: TensorRT-LLM's default ``attention_dp_config.timeout_iters`` (``AttentionDpConfig`` in
#: tensorrt_llm/llmapi/llm_args.py), which the gpt-oss-120b launch script leaves in place: it writes
#: ``attention_dp_config: {enable_balance: true}`` only (InferenceMAX/InferenceMAX
#: benchmarks/gptoss_fp4_b200_trt_slurm.sh).
TRTLLM_DEFAULT_ADP_TIMEOUT_ITERS = 50


def _adp_balance(pt: Point, dp: int, assumed: str | None = None) -> None:
    """Give an aggregated TensorRT-LLM row with attention DP (``dp`` > 1) the attention-DP balance
    timeout of InferenceMAX's launch scripts (``pt.deploy["ab"]``, with an assumption that says
    where it comes from): 60 iterations for DeepSeek-R1 (:data:`IMX_ADP_BALANCE_TIMEOUT_ITERS`), TensorRT-LLM's
    default 50 for gpt-oss (:data:`TRTLLM_DEFAULT_ADP_TIMEOUT_ITERS`). ``assumed`` says why a row of
    another source takes them (the aiconfigurator file records no engine settings; its aggregated
    TensorRT-LLM DeepSeek-R1 rows with attention DP measure 3.7× the TTFT the model gives them without
    it, median of 32 rows, and 1.2× with it: docs/baselines.md, session 38)."""
    if dp <= 1 or framework_family(pt.framework) != "trtllm":
        return
    if pt.model in GPT_OSS:
        timeout, how = TRTLLM_DEFAULT_ADP_TIMEOUT_ITERS, ("TensorRT-LLM's default: InferenceMAX's gpt-oss-120b launch "
                                                          "script sets enable_balance only")
    else:
        timeout, how = IMX_ADP_BALANCE_TIMEOUT_ITERS, "InferenceMAX's TensorRT-LLM launch scripts set it with attention DP"
    pt.deploy["ab"] = timeout
    pt.assumptions.append(f"TensorRT-LLM attention-DP balance, timeout {timeout} iterations "
                          f"({assumed + '; ' if assumed else ''}{how})")


def sglang_recv_interval(pt: Point) -> int | None:
    """SGLang's ``--scheduler-recv-interval`` of an InferenceMAX run where its launch script is public,
    else None (the cost model's calibrated ``admission_wait_steps`` applies).

    InferenceMAX's single-node launch scripts (ishandhanani/InferenceMAX@d22bf9c, benchmarks/):
    ``dsr1_fp8_b200_docker.sh`` and ``dsr1_fp4_b200_docker.sh`` pass 30 when CONC >= 16, else 10;
    ``dsr1_fp8_h200_slurm.sh`` passes none (SGLang's default, 1). The measured B200 rows show it: at
    C = 16 median TTFT jumps by 10-17 decode steps over C = 8 while the prefill is under 5% busy,
    and the H200 rows do not.
    """
    if pt.framework.strip().lower() != "sglang" or pt.model != "deepseek-r1" or pt.mode != "aggregated":
        return None
    if pt.system_key == "b200":
        return 30 if pt.concurrency >= 16 else 10
    if pt.system_key == "h200":
        return 1
    return None


#: Frameworks whose disaggregated InferenceMAX rows may log placeholder parallelism (``*_tp`` 1 and
#: ``*_ep`` 1 for a worker of several GPUs). InferenceX's ``nvidia-master.yaml`` at 344ac6c2 lists
#: every GB200 Dynamo + SGLang DeepSeek-R1 item with prefill/decode TP 1, EP 1; the same items at
#: 8ccec7a7 and 0004cf5f list EP = GPUs per worker (fp8 1k/1k, 3 prefill workers + 1 decode worker
#: of 48 GPUs: prefill EP 8, decode EP 48; specs/recipes/inferencemax_recipes.csv), which is SGLang's
#: wide-EP DeepSeek deployment (``--ep-size`` equal to the worker's ``--tp-size``). Such a row is
#: priced with EP = GPUs per worker (a warning says so); without it, EP 1 put every expert on every
#: rank's MoE-TP shard. Where the InferenceX configuration names the srt-slurm recipe file of the row's pools,
#: the file's TP/EP/attention DP price them instead (:func:`_placeholder_pools`). Explicit counts
#: (``decode_tp 4, decode_ep 1``) are kept.
SGLANG_WIDE_EP_FRAMEWORKS = frozenset({"dynamo-sglang"})


def _placeholder_pools(pt: Point, precision: str, spec_method: str, prefill: tuple[int, int],
                       decode: tuple[int, int], logged: dict, which: list[str], dpa: dict) -> dict | None:
    """The ``(tp, ep, dp)`` of the pools ``which`` (``"prefill"``, ``"decode"``) of a row that logged
    placeholder parallelism for them (TP 1, EP 1; see :data:`SGLANG_WIDE_EP_FRAMEWORKS`), from the
    InferenceX configurations that name a srt-slurm recipe file (``CONFIG_FILE``) for the same pools: the
    row's system, model, framework family, precision, ISL/OSL and speculative method
    (:func:`_items_of`), ``prefill``/``decode`` = (workers, GPUs per worker) with the item's TP equal
    to the GPUs per worker (the files set ``tp-size`` to the worker's GPUs, with or without
    attention DP), and the row's ``logged`` layout (``{pool: (tp, ep, dp)}``) for a pool not in
    ``which``. Returns ``{"prefill": ..., "decode": ... (the pools in which), "files": the file
    names}``, or ``None`` (the wide-EP reading applies) where no such item exists or the items
    disagree. ``dpa``: the row's logged attention-DP cells, named in the warning.

    The item is matched on its pools, not on its concurrencies: a file sets a topology's engines,
    and InferenceX ran some topologies at concurrencies its later item no longer lists (the
    10-prefill-worker GB200 FP4 8k/1k runs at C = 8192, an item of their own at 8ccec7a7); the
    warning says so where the item did not run the row's C.

    Why: the December 2025 GB200 runs logged TP 1 / EP 1 and the attention DP of the 344ac6c2 items,
    and 8ccec7a7 kept that attention DP while filling in EP; the 0004cf5f items name the files, and
    for four topologies (41 rows) the files differ: ``recipes/gb200-fp4/8k1k/max-tpt.yaml`` (10 prefill
    workers, NVIDIA/srt-slurm@975f228f) and ``8k1k/mid-curve.yaml`` (6, @eb889c08) run the prefill
    workers at ``tp-size 4``, ``ep-size 1``, ``enable-dp-attention: false`` (logged: attention DP for
    max-tpt, priced DEP 4; none for mid-curve, priced TEP 4 with 8ccec7a7's EP 4);
    ``1k1k/low-latency.yaml`` (@7c50317d) and ``8k1k/low-latency.yaml`` (@b26af4b6) both pools at
    ``tensor-parallel-size 4``, ``expert-parallel-size 1``, no attention DP
    (logged: attention DP on both pools at 1k/1k, on the decode pool at 8k/1k). The measured rows
    side with the files: the 10-worker runs' input rate per prefill GPU (``input_tput_per_gpu_tok_s``
    10,142 at C = 2048, imx-02381) is the 6-worker TP 4 runs' (10,100 at C = 1024, imx-02337), where
    attention DP 4 packs a token budget per GPU into one pass (priced at 1.45× the capacity: TTFT
    1.5 s predicted against 12.7 s measured)."""
    items = []
    for it, _ in _items_of(pt, precision, spec_method):
        if not it["recipe"] or (it["prefill_num_worker"], it["prefill_tp"], it["decode_num_worker"],
                                it["decode_tp"]) != (prefill[0], prefill[1], decode[0], decode[1]):
            continue
        if it["prefill_ep"] is None or it["decode_ep"] is None:
            continue
        lay = {"prefill": _worker_layout(prefill[1], it["prefill_ep"], it["prefill_dp_attn"]),
               "decode": _worker_layout(decode[1], it["decode_ep"], it["decode_dp_attn"])}
        if any(lay[k] != logged[k] for k in ("prefill", "decode") if k not in which):
            continue  # the item's layout contradicts a pool the row logs explicitly
        items.append((it, lay))
    if not items or any(lay != items[0][1] for _, lay in items):
        return None
    lay = items[0][1]
    files = sorted({it["recipe"] for it, _ in items})
    versions = ", ".join(sorted({s for it, _ in items for s in it["source"].split()}))
    ran = sorted({c for it, _ in items for c in it["conc"]})

    note = "" if pt.concurrency in ran else (f", run there at concurrencies {', '.join(map(str, ran))}, "
                                             f"not this row's {pt.concurrency}")
    pt.warnings.append(
        f"{_placeholder_logged(which, dpa)}, priced as the srt-slurm recipe "
        f"file{'s' if len(files) > 1 else ''} {', '.join(map(imx_recipes.recipe_source, files))} "
        f"configure{'' if len(files) > 1 else 's'} them: {_say_pools({k: lay[k] for k in which})} (the file "
        f"InferenceX's nvidia-master.yaml@{versions} names for these worker counts{note})")
    return {**{k: lay[k] for k in which}, "files": files}


def _say_pools(pools: dict) -> str:
    """``{"prefill": (tp, ep, dp), ...}`` in words, for a warning: ``prefill pool TP 4 / EP 1 / no
    attention DP, decode pool attention DP 32 / EP 32`` (no ``;``: predictions.csv joins a row's
    warnings with it)."""
    def say(tp, ep, dp):
        return f"attention DP {dp} / EP {ep}" if dp > 1 else f"TP {tp} / EP {ep} / no attention DP"
    return ", ".join(f"{k} pool {say(*v)}" for k, v in pools.items())


def _placeholder_logged(which: list[str], dpa: dict) -> str:
    """The start of both warnings of a row with placeholder pools ``which`` (``dpa``: the logged
    attention-DP cells by pool)."""
    return ("placeholder TP 1 / EP 1 logged for workers of several GPUs (attention DP logged: "
            + ", ".join(f"{k} {dpa[k] or '-'}" for k in which) + ")")


def _file_recv_interval(pt: Point, files: list[str]) -> None:
    """Set ``pt.deploy["ri"]`` to the decode workers' ``--scheduler-recv-interval`` of the srt-slurm
    recipe ``files`` the row ran (:func:`codesign.recipes.decode_recv_interval`), when they set one
    and agree, and say so; otherwise the calibrated ``admission_wait_steps`` stands."""
    got = {imx_recipes.decode_recv_interval(f) for f in files}
    if len(got) != 1 or None in got:
        return
    ri = got.pop()
    pt.deploy["ri"] = ri
    pt.assumptions.append(f"the decode workers' SGLang --scheduler-recv-interval {ri}, from "
                          f"{', '.join(map(imx_recipes.recipe_source, files))}, replaces the calibrated admission wait")


def _recipe_settings(pt: Point, r: dict, spec_method: str) -> int | None:
    """Decode batch limit and MTP draft count of a disaggregated InferenceMAX row from the InferenceX
    recipe it ran (in place; returns the recipe's draft tokens per step, ``None`` if it gives none).

    The row must match one recipe item of ``specs/recipes/inferencemax_recipes.csv``
    (:mod:`codesign.recipes`) exactly: hardware, framework, model, precision, ISL/OSL, speculative
    method, prefill and decode workers/TP/EP/attention DP, and its concurrency among the item's
    ``run_conc_list``. Several matching items (versions of the file) are used only if they agree on
    batch and draft count. An item of the same topology that ran other concurrencies is not used
    (InferenceX tunes batch and drafts per concurrency: the same topology carries batch 64 at C =
    1075 and 128 at C = 2150); the row keeps the fallback and a note says so. Sets ``pt.deploy["mb"]``
    (the per-decode-instance limit, batch × attention-DP ranks) when the recipe gives a batch, and
    ``pt.deploy["ri"]`` when the recipe files the items name set the decode workers' receive
    interval (:func:`_file_recv_interval`).
    """
    key = imx_recipes.topology(
        pt.system_key, pt.framework, pt.model or pt.model_name, r.get("precision", ""), pt.isl, pt.osl,
        spec_method, *((_i(r[f"{p}_num_workers"]), _i(r[f"{p}_tp"]), _i(r[f"{p}_ep"]),
                        r[f"{p}_dp_attention"] == "True") for p in ("prefill", "decode")))
    exact, near = imx_recipes.lookup(key, pt.concurrency)
    if not exact:
        if near:
            runs = sorted({c for rc in near for c in rc["conc"]})
            pt.warnings.append(f"InferenceX configurations of these pools ran concurrencies {', '.join(map(str, runs))}, "
                               f"not this row's {pt.concurrency}: their decode batch limit and MTP drafts not used")
        return None
    settings = {(rc["decode_batch_per_instance"], rc["mtp_draft_tokens"]) for rc in exact}
    if len(settings) > 1:
        pt.warnings.append("InferenceX configurations of this run disagree (" + " vs ".join(
            f"{rc['recipe'] or rc['config']}: batch {rc['decode_batch_per_instance']}, "
            f"MTP {rc['mtp_draft_tokens']}" for rc in exact) + "): not used")
        return None
    rc = exact[0]
    files = sorted({it["recipe"] for it in exact if it["recipe"]})
    if files and "ri" not in pt.deploy:
        _file_recv_interval(pt, files)
    mb, drafts = rc["decode_batch_per_instance"], rc["mtp_draft_tokens"]
    if mb is None and (drafts is None or spec_method != "mtp"):
        return None  # e.g. the SGLang recipes: their names give neither
    name = rc["recipe"] or f"{rc['config']} (DECODE_MAX_BATCH_SIZE={rc['decode_max_batch']})"
    said = []
    if mb:
        pt.deploy["mb"] = mb
        inst = _decode_instances(pt.deploy)
        said.append(f"decode batch limit {rc['decode_max_batch']} per {_batch_unit(rc)} ({mb} per decode "
                    f"instance, {_slots_said(pt, mb * inst)}")
    if drafts and spec_method == "mtp":
        said.append(f"{drafts} MTP draft token{'s' if drafts > 1 else ''} per step")
    versions = ", ".join(rc["source"].split())
    # "configuration", as the other warnings name an item of InferenceX's benchmark configuration
    pt.assumptions.append(f"{' and '.join(said)} from the InferenceX configuration {name} "
                          f"(nvidia-master.yaml@{versions})")
    return drafts if spec_method == "mtp" else None


def _aic_recipe_settings(pt: Point, precision: str) -> None:
    """Decode batch limit and MTP draft count of an aiconfigurator Dynamo + TensorRT-LLM
    disaggregated row that records its pools, from the InferenceX configuration that ran them (in place).

    The aiconfigurator rows of ``db-dump`` runs record both pools (workers, TP, attention DP, MoE
    EP) but not the decode workers' ``max_batch_size``: their ``decode_batch_size`` is the
    concurrency per decode rank (``decode_batch_size × decode_num_workers ×
    decode_attention_dp_size`` equals the concurrency on every public row). Several are InferenceX
    runs whose item (``specs/recipes/inferencemax_recipes.csv``) sets a limit below the concurrency:
    ``dsr1_gb300_trtllm_fp4_disagg_1024x8192_c245_cfg404`` (1 prefill worker of 2 GPUs, 7 TEP8
    decode workers, C = 245) is ``recipes/trtllm/gb300-fp4/1k8k/stp/ctx1_gen7_tep8_batch32_eplb0_mtp0.yaml``,
    224 decode slots for 245 users, and measures a TTFT of 7.7 s for a 1k prompt (the same run,
    converted from InferenceMAX as ``..._c245_tp2_ep2_1635``, already took that item's limit through
    :func:`recipe_item_pools`). The row's pools are keyed as InferenceMAX logs them (per worker:
    workers, GPUs as TP, MoE EP, attention DP on or off; :func:`codesign.recipes.topology`) under
    either speculative method, as the row does not record one; the items that ran its concurrency
    give ``pt.deploy["mb"]`` when they agree on the batch limit, and MTP draft tokens
    (``pt.deploy["spec"]``) when they are all MTP items and agree on the count. Without an item the
    power-of-two rule of :func:`_dynamo_trt_batch_limit` applies, as for the InferenceMAX rows.
    """
    d = pt.deploy
    sides = []
    for k in ("p", "d"):
        per = max(int(d[f"{k}_tp"]) * max(int(d[f"{k}_dp"]), 1), 1)
        sides.append((int(d[f"{k}_chips"]) // per, per, int(d[f"{k}_ep"]), int(d[f"{k}_dp"]) > 1))
    exact = []
    for method in ("none", "mtp"):
        key = imx_recipes.topology(pt.system_key, "dynamo-trt", pt.model or pt.model_name, precision,
                                   pt.isl, pt.osl, method, *sides)
        exact += [(rc, method) for rc in imx_recipes.lookup(key, pt.concurrency)[0]]
    limits = {rc["decode_batch_per_instance"] for rc, _ in exact}
    if len(limits) == 1 and None not in limits:
        rc = exact[0][0]
        mb = d["mb"] = rc["decode_batch_per_instance"]
        said = (f"decode batch limit {rc['decode_max_batch']} per {_batch_unit(rc)} "
                f"({_slots_said(pt, mb * _decode_instances(d))}")
        drafts = {rc["mtp_draft_tokens"] for rc, _ in exact}
        if {m for _, m in exact} == {"mtp"} and len(drafts) == 1 and None not in drafts:
            d["spec"] = drafts.pop()
            said += f" and {d['spec']} MTP draft token{'s' if d['spec'] != 1 else ''} per step"
        names = sorted({rc["recipe"] or rc["config"] for rc, _ in exact})
        versions = sorted({v for rc, _ in exact for v in rc["source"].split()})
        which = (f"configuration {names[0]}" if len(names) == 1 else
                 f"configurations {' and '.join(names)}")
        also = ""
        if len(names) > 1:
            also = "; they agree on the limit"
            if {m for _, m in exact} == {"none", "mtp"}:
                also += (", not on speculative decoding, which the row does not record: "
                         "priced without MTP")
        pt.assumptions.append(f"{said} from the InferenceX {which} (nvidia-master.yaml@{', '.join(versions)}), "
                              f"which ran these pools at concurrency {pt.concurrency}{also} (the row's "
                              f"decode_batch_size, {pt.concurrency / (_decode_instances(d) * max(int(d['d_dp']), 1)):g}, "
                              "is its users per decode rank, not the engine's limit)")
        return
    _dynamo_trt_batch_limit(pt)


def _slots_said(pt: Point, slots: int) -> str:
    """``"224 slots: 21 of 245 users wait)"`` (``"48 slots)"`` when every user has one): the tail of
    a batch-limit warning (:func:`_recipe_settings`, :func:`_aic_recipe_settings`)."""
    return f"{slots} slots" + (f": {pt.concurrency - slots} of {pt.concurrency} users wait)"
                               if slots < pt.concurrency else ")")


def _batch_unit(rc: dict) -> str:
    """What an InferenceX configuration's decode batch limit is per: ``decode_batch_scope`` ``rank`` (attention
    DP) or a whole decode worker."""
    return "attention-DP rank" if rc["decode_batch_scope"] == "rank" else "decode worker"


def _decode_instances(d: dict) -> int:
    """Decode instances of a disaggregated deployment ``d`` (``Point.deploy``): its decode chips over
    one instance's TP × attention-DP ranks (at least 1)."""
    return max(int(d["d_chips"]) // max(int(d["d_tp"]) * max(int(d["d_dp"]), 1), 1), 1)


def _dynamo_trt_batch_limit(pt: Point) -> None:
    """Decode batch limit of an InferenceMAX Dynamo + TensorRT-LLM disaggregated row (in place), the
    fallback where no InferenceX recipe gives it (:func:`_recipe_settings`).

    The recipes set ``DECODE_MAX_BATCH_SIZE`` per attention-DP rank (InferenceMAX's
    ``benchmarks/dynamo`` launcher passes it to ``benchmark_disagg.slurm``; the CSV does not record
    it) and then run ~1.05–1.3× that many users per rank (C = 2150 on 8 ranks, 1075 on 16, 5152 on
    40), so the surplus waits for a decode slot and TTFT carries it. The limit is read as the largest
    power of two at or below C per rank: on the public rows with C per rank 1.0–1.3× a power of two
    (144 rows), the decode users implied by the measured TTFT and TPOT, C·D/(TTFT + D), sit at a
    median 0.93–0.96 of that power of two; measured TTFTs of 3.7–4.8 s at C = 192 and 666 on GB300
    (0.4–1.0 s predicted without the limit) are the surplus's wait.
    """
    d = pt.deploy
    if "mb" in d:  # already set (pools taken from a recipe apply it themselves)
        return
    ranks = max(int(d["d_dp"]), 1)  # attention-DP ranks per decode instance
    inst = _decode_instances(d)
    c_rank = pt.concurrency / (inst * ranks)
    per_rank = 2 ** int(math.floor(math.log2(max(c_rank, 1.0))))
    # only where the recipe pattern holds: 1–1.3× a power of two of at least 8 users per rank (below
    # that, and further above, rows show no such limit: e.g. C = 24 on 4 TP8 workers, 6 per rank,
    # measured TTFT 0.22 s, as unlimited; C = 1536 on 4 ranks, 384 each, 1.4 s)
    if not (per_rank >= 8 and c_rank <= 1.3 * per_rank):
        return
    d["mb"] = per_rank * ranks
    slots = per_rank * inst * ranks
    if slots < pt.concurrency:
        unit = "attention-DP rank" if ranks > 1 else "decode worker"
        # the engine setting as the row's file would name it (the aiconfigurator file's
        # decode_batch_size is the users per rank, not it)
        setting = "DECODE_MAX_BATCH_SIZE" if pt.schema == "inferencemax" else "the decode max_batch_size"
        pt.assumptions.append(f"decode batch limit {per_rank} per {unit} assumed (the largest power of two at or "
                              f"below the {pt.concurrency / (inst * ranks):g} users per {unit}; {setting} is not "
                              f"recorded): {per_rank} × "
                              f"{inst * ranks} = {slots} decode slots, {pt.concurrency - slots} of "
                              f"{pt.concurrency} users wait for one")


# ------------------------------------------------------------------------------ pool inference
#: Serving-framework families: a Dynamo disaggregated deployment runs the same engine as the
#: aggregated one (``dynamo-trt`` is TensorRT-LLM, ``dynamo-sglang`` SGLang); InferenceMAX calls
#: TensorRT-LLM ``trt``, aiconfigurator ``trtllm``. Used for recipe matching here and for the
#: calibration's per-framework offsets (:mod:`codesign.calibrate`). AMD's disaggregated SGLang
#: (MoRI KV transfer) is ``sglang-disagg`` in InferenceX's configs and ``mori-sglang`` on the
#: dashboard, which also renames ``dynamo-trtllm`` to ``dynamo-trt`` (InferenceX-app
#: packages/constants/src/framework-aliases.ts). AMD's own engine ``atom`` (ROCm/ATOM) is no family:
#: its rows are priced without a framework offset, and validate says so.
FRAMEWORK_FAMILIES = {"trtllm": "trtllm", "trt": "trtllm", "tensorrt-llm": "trtllm", "dynamo-trt": "trtllm",
                      "dynamo-trtllm": "trtllm",
                      "sglang": "sglang", "dynamo-sglang": "sglang", "sglang-disagg": "sglang",
                      "mori-sglang": "sglang", "vllm": "vllm", "dynamo-vllm": "vllm"}


def framework_family(framework: str | None) -> str | None:
    """The engine family of a framework name (``dynamo-trt`` -> ``trtllm``), ``None`` if unknown."""
    return FRAMEWORK_FAMILIES.get((framework or "").strip().lower())


#: Serving stacks that run an engine family behind another front end and router (NVIDIA Dynamo's
#: disaggregated SGLang, TensorRT-LLM and vLLM workers): their engine settings (the analytical
#: model's ``ENGINE_KNOBS``, e.g. the receive wait in decode iterations) are not the standalone
#: engine's, so ``codesign calibrate`` fits them an offset of their own on top of the family's
#: (``[stacks.<name>]``). InferenceMAX's GB200/GB300/H200 Dynamo + SGLang rows wait 12-20 decode
#: iterations more than the SGLang family's fitted wait at moderate load (docs/baselines.md).
SERVING_STACKS = {"dynamo-sglang": "dynamo-sglang", "dynamo-trt": "dynamo-trtllm",
                  "dynamo-trtllm": "dynamo-trtllm", "dynamo-vllm": "dynamo-vllm"}


def serving_stack(framework: str | None) -> str | None:
    """The serving stack of a framework name (:data:`SERVING_STACKS`), ``None`` for a plain engine."""
    return SERVING_STACKS.get((framework or "").strip().lower())


#: Fallback rule when no recipe has the row's system, model, family and precision: decode workers
#: (of the logged decode TP) holding at most FALLBACK_BATCH requests each, and one prefill worker
#: (of the logged prefill TP) per FALLBACK_DECODE_PER_PREFILL decode GPUs (rounded up): the medians of
#: conc / decode_num_workers and num_decode_gpu / prefill_num_workers over the disaggregated rows of
#: inferencemax_public.csv with worker counts (dynamo-trt 64 and 16, dynamo-sglang 128 and 12,
#: all rows 102 and 12; key "" for other frameworks).
FALLBACK_BATCH = {"trtllm": 64, "sglang": 128, "": 102}
FALLBACK_DECODE_PER_PREFILL = {"trtllm": 16, "sglang": 12, "": 12}
#: Recipes whose concurrency is within the same factor-of-CONC_BAND band of the row's rank before
#: the logged per-worker shape (:func:`infer_pools`).
CONC_BAND = 4.0
#: The fallback's decode pool is at most one NVL72 rack (the largest decode pool in that file: 72).
FALLBACK_MAX_DECODE_GPUS = 72


@attrs.define
class Recipe:
    """A disaggregated InferenceMAX row with worker counts, as a pool recipe."""

    id: str
    key: tuple  # (system, model, framework family, precision)
    isl: int
    osl: int
    conc: int
    logged: tuple  # InferenceMAX's (prefill_tp, prefill_ep, decode_tp): what converted rows log
    deploy: dict  # the pools as _imx maps the row
    spec: str = "none"  # speculative decoding of the run (spec_method)

    @property
    def gpus(self) -> int:
        return self.deploy["p_chips"] + self.deploy["d_chips"]


#: The InferenceMAX file being read (:func:`read_measured`; resolved path, "" for none): its own
#: disaggregated runs are pool recipes beside the shared file's, read only if a row needs them.
_OWN_RECIPES: contextvars.ContextVar[str] = contextvars.ContextVar("own_recipes", default="")

#: The measured file being read, either schema (:func:`read_measured`; resolved path, "" for none):
#: :func:`shared_recipe_file` looks beside it when no shared data is found.
_READING: contextvars.ContextVar[str] = contextvars.ContextVar("reading", default="")

#: The pool recipes' file name, in the shared data's ``measured/`` directory.
RECIPE_FILE = "inferencemax_public.csv"


def _recipe_key(rc: Recipe) -> tuple:
    """What tells two pool recipes apart (a run read from two files is one recipe)."""
    return rc.id, rc.key, rc.isl, rc.osl, rc.conc


def shared_recipe_file() -> Path:
    """The default source of pool recipes: ``<shared>/measured/inferencemax_public.csv``
    (:func:`shared_data_dir`); with ``$CODESIGN_SHARED_DATA`` unset and no such file beside the
    clone, the file of that name beside the measured file being read (:func:`read_measured`), where
    the shared data's ``measured/`` directory holds it. ``validate ../shared/data/measured/FILE``
    from a clone elsewhere looked for it at ``<repo>/../shared/data`` alone and warned that the
    recipes were missing while reading that very file (fresh-user trial, session 44)."""
    default = shared_data_dir() / "measured" / RECIPE_FILE
    if os.environ.get("CODESIGN_SHARED_DATA") or default.is_file() or not (reading := _READING.get()):
        return default
    beside = Path(reading).parent / RECIPE_FILE
    return beside if beside.is_file() else default


def _recipe_places() -> str:
    """Where :func:`shared_recipe_file` looked, for a note that found no recipes: the shared data's
    file, and the one beside the file being read when that was looked at too."""
    default = shared_data_dir() / "measured" / RECIPE_FILE
    reading = _READING.get()
    beside = Path(reading).parent / RECIPE_FILE if reading else None
    if os.environ.get("CODESIGN_SHARED_DATA") or beside is None or beside == default:
        return f"{default} not found"
    return f"{default} not found, nor {beside}"


def _worker_layout(gpus: int, ep: int, dp_attention: bool) -> tuple[int, int, int]:
    """``(tp, ep, dp)`` of a worker of ``gpus`` GPUs: with attention DP, attention TP 1 and one DP
    rank per GPU; otherwise TP over all its GPUs. EP is capped at the worker's GPUs."""
    return (1, min(ep, gpus), gpus) if dp_attention else (gpus, min(ep, gpus), 1)


def pool_recipes(path=None) -> tuple[Recipe, ...]:
    """The pool recipes of ``path`` (default :func:`shared_recipe_file`); empty when the file is
    absent (then only the fallback rule infers pools). Read once per file (the path is resolved, so
    validating the shared file itself reads it once)."""
    return _recipes(str(Path(path or shared_recipe_file()).resolve()))


@functools.lru_cache(maxsize=4)
def _recipes(path: str) -> tuple[Recipe, ...]:
    if not os.path.isfile(path):
        return ()
    with open(path, newline="", encoding="utf-8") as f:
        # (a short or long row, which read_measured marks invalid, is no recipe)
        rows = [_imx_cells(r)[0] for r in csv.DictReader(f) if None not in r and None not in r.values()
                and _imx_bool(r.get("disagg")) == "True"
                and _whole(r.get("prefill_num_workers")) and _whole(r.get("decode_num_workers"))]
    out = []
    for r in rows:
        pt = _imx(r)  # MTP rows are kept: the converted aiconfigurator rows include MTP runs
        if pt.model and system_name(pt.system) in SYSTEMS and not pt.status.startswith("invalid"):
            out.append(Recipe(pt.id, (pt.system_key, pt.model, framework_family(pt.framework) or pt.framework,
                                      r["precision"]), pt.isl, pt.osl, pt.concurrency,
                              (_i(r["prefill_tp"]), _i(r["prefill_ep"]), _i(r["decode_tp"])), pt.deploy,
                              r.get("spec_method") or "none"))
    return tuple(out)


def _items_of(pt: Point, precision: str, spec: str | None = None) -> Iterable[tuple[dict, str]]:
    """``(item, speculative method)`` of the InferenceX configurations (``specs/recipes/inferencemax_recipes.csv``)
    of the row's system, model, framework family (``trtllm`` ≈ ``dynamo-trt``, ``sglang`` ≈
    ``dynamo-sglang``), precision and ISL/OSL, with no or MTP speculative decoding, and with the
    method ``spec`` where given."""
    want = (pt.system_key, framework_family(pt.framework) or pt.framework, precision, pt.isl, pt.osl)
    for it in imx_recipes.recipes():
        method = (it["spec_decoding"] or "none").strip().lower()
        if ((it["hardware"], framework_family(it["framework"]) or it["framework"], it["precision"],
             it["isl"], it["osl"]) != want or method not in ("none", "mtp")
                or (spec is not None and method != spec)
                or resolve_model(it["model_prefix"])[0] != pt.model):
            continue
        yield it, method


def recipe_item_pools(pt: Point, precision: str, *, logged: tuple | None = None, total: int = 0,
                      spec: str | None = None) -> tuple[dict, list[dict]] | None:
    """The pools of a disaggregated row that does not record its worker counts, from the InferenceX
    configuration (an item of InferenceX's benchmark configuration) that ran it; None when no item,
    or items that disagree, match.

    An item of ``specs/recipes/inferencemax_recipes.csv`` (:func:`codesign.recipes.recipes`) matches
    when it has the row's system, model, framework family (``trtllm`` ≈ ``dynamo-trt``, ``sglang`` ≈
    ``dynamo-sglang``), precision and ISL/OSL, ran the row's concurrency (``run_conc_list``) and
    logs the row's per-worker parallelism (``logged`` = prefill TP, prefill EP, decode TP, as
    InferenceMAX logs them) or, for a row that records only its run's GPUs, has ``total`` of them;
    with ``spec`` (the row records its speculative method), the item's must be the same. InferenceX
    sizes the pools per item and runs an item at its own concurrencies, so a matching item is the
    run's configuration. It is used only when every matching item (versions of the file) gives the
    same pools, speculative decoding, decode batch limit and draft count. A worker holds the item's
    TP GPUs, or its EP where larger (the Dynamo + SGLang items from 8ccec7a7 on log EP = GPUs per
    worker and TP 1); the Dynamo + SGLang items of 344ac6c2, which log TP 1 and EP 1 for workers of
    4-48 GPUs (:data:`SGLANG_WIDE_EP_FRAMEWORKS`), never match.

    Returns:
        ``(deploy, items)``: the :attr:`Point.deploy` of the item's pools, with ``mb`` (the decode
        batch limit per decode instance) and ``spec`` (MTP draft tokens per step) where the item
        gives them, and the matching items.
    """
    def gpus(it, side):
        tp, ep = it[f"{side}_tp"] or 0, it[f"{side}_ep"] or 0
        if it["framework"].strip().lower() in SGLANG_WIDE_EP_FRAMEWORKS and tp == ep == 1:
            return 0  # a placeholder: the worker's GPUs are not in the item
        return max(tp, ep)

    found = []
    for it, method in _items_of(pt, precision, spec):
        if pt.concurrency not in it["conc"]:
            continue
        gp, gd = gpus(it, "prefill"), gpus(it, "decode")
        pw, dw = it["prefill_num_worker"] or 0, it["decode_num_worker"] or 0
        if not (gp and gd and pw and dw):
            continue
        if logged is not None and (it["prefill_tp"], it["prefill_ep"], it["decode_tp"]) != tuple(logged):
            continue
        if total and pw * gp + dw * gd != total:
            continue
        dep: dict = {}
        for side, k, g, n in (("prefill", "p", gp, pw), ("decode", "d", gd, dw)):
            tp, ep, dp = _worker_layout(g, it[f"{side}_ep"] or 1, bool(it[f"{side}_dp_attn"]))
            dep.update({f"{k}_chips": n * g, f"{k}_tp": tp, f"{k}_ep": ep, f"{k}_dp": dp})
        dep["pp"] = 1
        if it["decode_batch_per_instance"]:
            dep["mb"] = it["decode_batch_per_instance"]
        if method == "mtp":
            dep["spec"] = it["mtp_draft_tokens"] or MTP_DRAFT_TOKENS_BY_FRAMEWORK.get(
                it["framework"].strip().lower(), MTP_DRAFT_TOKENS)
        found.append((dep, it))
    if not found or any(d != found[0][0] for d, _ in found):
        return None
    return found[0][0], [it for _, it in found]


def infer_pools(pt: Point, precision: str, *, logged: tuple | None = None, total: int = 0,
                recipes: Iterable[Recipe] | None = None, spec_known: bool = False,
                spec: str | None = None) -> None:
    """Prefill/decode pools of a disaggregated row that does not record its worker counts.

    The row says its system, framework, precision, ISL/OSL, concurrency and either the per-worker
    parallelism InferenceMAX logs (``logged`` = prefill TP, prefill EP, decode TP) or only the
    run's total GPU count (``total``). First choice: the InferenceX configuration that ran
    this concurrency with this parallelism (:func:`recipe_item_pools`), whose pools, decode batch
    limit and MTP drafts are taken; the status stays ``ok`` and an assumption names the item (on the
    aiconfigurator rows converted from InferenceMAX results, 400 of 772, against the nearest-run
    rule below: TTFT MAPE GB300 65.9% -> 32.6%, B200 96.2% -> 45.2%, GB200 42.9% -> 37.2%; TPOT
    GB300 38.8% -> 23.6%, GB200 26.5% -> 21.2%; docs/baselines.md, session 20; fitted on since
    session 21). Otherwise, the
    nearest recipe of :func:`pool_recipes` with the same
    system, model, framework family (``trtllm`` ≈ ``dynamo-trt``, ``sglang`` ≈ ``dynamo-sglang``)
    and precision is taken whole (GPUs, per-worker TP/EP and attention DP of both pools): nearest
    means same ISL/OSL first, then a concurrency in the same factor-of-4 band (:data:`CONC_BAND`),
    then the same logged TP/EP (or the closest total GPU count), then the closest concurrency in log
    space, then a run without speculative decoding. Without such a
    recipe, the fallback rule (:data:`FALLBACK_BATCH`, :data:`FALLBACK_DECODE_PER_PREFILL`) sizes
    the pools from the logged per-worker TP; a total-only row is then left unpriced. Sets
    ``pt.mode``, ``pt.deploy`` and, for the recipe and fallback rules, an ``ambiguous: pools
    inferred ...`` status (priced, kept out of the default error tables). ``spec_known``: the row records its own speculative decoding, so a
    recipe's (MTP) is not taken with its pools; ``spec`` is that method (``"none"``, ``"mtp"``), which
    an InferenceX configuration must then share.
    """
    got = recipe_item_pools(pt, precision, logged=logged, total=total, spec=spec if spec_known else None)
    if got is not None:
        pt.deploy, items = dict(got[0]), got[1]
        names = sorted({it["recipe"] or it["config"] for it in items})
        versions = sorted({v for it in items for v in it["source"].split()})
        if (framework_family(pt.framework) or pt.framework) == "trtllm" and "mb" not in pt.deploy:
            _dynamo_trt_batch_limit(pt)  # the item gives no batch limit: Dynamo + TensorRT-LLM's pattern
        pt.assumptions.append(f"pools of the InferenceX configuration {' = '.join(names)} (nvidia-master.yaml@"
                              f"{', '.join(versions)}), which ran concurrency {pt.concurrency} with this row's "
                              + ("per-worker TP/EP" if logged is not None else f"{total} GPUs")
                              + (f", {pt.deploy['spec']} MTP draft token{'s' if pt.deploy['spec'] != 1 else ''} per step"
                                 if pt.deploy.get("spec") else ""))
        pt.mode = "disaggregated"
        # the item is the run's own configuration, as for the InferenceMAX rows whose batch limit
        # and MTP drafts come from the same items: ``ok`` (fitted and in the error tables)
        return
    if recipes is None:
        recipes = pool_recipes()
        # the file being read, if it is an InferenceMAX file, adds its own runs (the shared file's
        # rows once: validating the shared file itself adds nothing)
        own_file = _OWN_RECIPES.get()
        own = pool_recipes(own_file) if own_file else ()
        if own is recipes:  # the file read is the shared one
            own = ()
        elif own:
            seen = {_recipe_key(rc) for rc in recipes}
            own = tuple(rc for rc in own if _recipe_key(rc) not in seen)
        recipes = tuple(recipes) + own
        src = shared_recipe_file()
        if not src.is_file():
            # the recipes come from the shared InferenceMAX file: say so rather than silently
            # pricing these rows by the fallback rule alone
            pt.warnings.append(f"{NO_RECIPES}{_recipe_places()} (set CODESIGN_SHARED_DATA "
                               "to the directory holding measured/inferencemax_public.csv)"
                               + ("; the read file's own disaggregated runs used" if own else ""))
    fam = framework_family(pt.framework) or pt.framework
    conc = max(pt.concurrency, 1)

    def distance(rc: Recipe) -> tuple:
        shape = (abs(math.log(rc.gpus / total)) if total
                 else sum(a != b for a, b in zip(rc.logged, logged or ())))
        # concurrency in factor-of-4 bands ranks before the logged shape: InferenceMAX sizes the pools
        # per concurrency, so a recipe of the same shape run at 1/10 of the row's users starves its
        # prefill pool (aiconfigurator GB300 ambiguous rows: TTFT MAPE 219% with shape first, 83%
        # with this band, GB200 65% -> 46%; B200 and H200 within 1 point)
        band = round(abs(math.log(rc.conc / conc)) / math.log(CONC_BAND))
        return (rc.isl, rc.osl) != (pt.isl, pt.osl), band, shape, abs(math.log(rc.conc / conc)), rc.spec != "none"

    near = [rc for rc in recipes if rc.key == (pt.system_key, pt.model, fam, precision)]
    if near:
        rc = min(near, key=distance)
        # the pools only: a recipe's decode batch limit follows from its own concurrency, and its
        # receive interval from the recipe file its own run is tied to (not carried to this row)
        pt.deploy = {k: v for k, v in rc.deploy.items() if k not in ("mb", "ri")}
        how = f"the nearest measured run {rc.id}"
        if spec_known:  # the row says its own speculative decoding: only the pools are taken
            pt.deploy.pop("spec", None)
        if fam == "trtllm":  # a Dynamo + TensorRT-LLM recipe: its batch-limit pattern, at this C
            _dynamo_trt_batch_limit(pt)
        pt.assumptions.append(f"pools of the measured run {rc.id}: ISL/OSL {rc.isl}/{rc.osl}, concurrency {rc.conc}, "
                              "logged prefill TP/EP {}/{}, decode TP {}".format(*rc.logged)
                              + (f", a {rc.spec} run, priced with its speculative decoding (the row "
                                 "does not say whether it used it)" if rc.spec != "none" and not spec_known else ""))
    elif logged:
        ptp, pep, dtp = logged
        dw = min(math.ceil(conc / FALLBACK_BATCH.get(fam, FALLBACK_BATCH[""])),
                 max(FALLBACK_MAX_DECODE_GPUS // dtp, 1))
        pw = math.ceil(dw * dtp / FALLBACK_DECODE_PER_PREFILL.get(fam, FALLBACK_DECODE_PER_PREFILL[""]))
        p_tp, p_ep, p_dp = _worker_layout(ptp, pep, False)
        d_tp, d_ep, d_dp = _worker_layout(dtp, pep, False)
        pt.deploy = {"p_chips": pw * ptp, "p_tp": p_tp, "p_ep": p_ep, "p_dp": p_dp,
                     "d_chips": dw * dtp, "d_tp": d_tp, "d_ep": d_ep, "d_dp": d_dp, "pp": 1}
        how = "the fallback rule, as no measured InferenceMAX run has this system, model, framework and precision"
    else:
        pt.status = (f"unsupported: {total} GPUs of a disaggregated run without pool sizes and no "
                     f"measured InferenceMAX run of {pt.system_key} {pt.model} {fam} {precision} to take them from")
        return
    pt.mode = "disaggregated"
    pt.status = (f"ambiguous: pools inferred from {how} ({pt.deploy['p_chips']} prefill + "
                 f"{pt.deploy['d_chips']} decode GPUs)")


# ------------------------------------------------------------------------------ prediction
#: Deployment settings only some points carry: key in ``Point.deploy`` → (spec key, value when
#: unset): multi-node TP (:func:`mark_multinode_tp`; 0 = off), SGLang's receive interval
#: (:func:`sglang_recv_interval`; NaN = the cost model's calibrated wait) and TensorRT-LLM's
#: attention-DP balance timeout (:data:`IMX_ADP_BALANCE_TIMEOUT_ITERS`; 0 = no balance).
_OPTIONAL_DKEYS = {"mn": ("deployment.multinode_tp", 0.0), "ri": ("deployment.scheduler_recv_interval", np.nan),
                   "ab": ("deployment.attention_dp_balance_timeout_iters", 0.0)}
_DKEYS = {"tp": "deployment.tp", "pp": "deployment.pp", "ep": "deployment.ep", "dp": "deployment.dp_attention",
          "p_chips": "deployment.prefill.chips", "p_tp": "deployment.prefill.tp", "p_ep": "deployment.prefill.ep",
          "p_dp": "deployment.prefill.dp_attention", "d_chips": "deployment.decode.chips",
          "d_tp": "deployment.decode.tp", "d_ep": "deployment.decode.ep", "d_dp": "deployment.decode.dp_attention"}
_FKEYS = {"weights": "deployment.weights_format", "moe": "deployment.moe_weights_format",
          "kv": "deployment.kv_cache_format", "act": "deployment.activations_format"}


def models_dir() -> Path:
    return REPO / "specs" / "models"


def hardware_paths(pm=None) -> dict[str, Path]:
    """Baseline name → hardware TOML (the baseline plugin's shipped fragments)."""
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    return {name: Path(b.hardware) for name, b in pm.baselines.items() if b.hardware and Path(b.hardware).is_file()}


def missing_hardware(pm=None) -> dict[str, str]:
    """Baseline name → why its hardware TOML cannot be read (a plugin that registers a file that is
    not there: broken or incompletely installed), naming the baseline, its plugin and the path; such
    a system's rows are ``unsupported`` with that reason (they stopped the run at
    '/…/x.toml: no such file', naming neither)."""
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    return {name: (f"baseline {name!r} (plugin {pm.plugin_label(b.plugin)}) names the hardware file "
                   f"{str(b.hardware)!r}, which {'is not a file' if Path(b.hardware).exists() else 'does not exist'}; "
                   "the plugin is broken or incompletely installed")
            for name, b in pm.baselines.items() if b.hardware and not Path(b.hardware).is_file()}


def base_raw(system: str, model: str, *, hardware: dict[str, Path], cache: dict | None = None) -> dict:
    """Merged raw spec table of ``system`` hardware + ``model`` (no workload/deployment yet)."""
    from .spec import load_raw

    cache = {} if cache is None else cache
    key = (system, model)
    if key not in cache:
        hw, _ = load_raw(hardware[system])
        md, _ = load_raw(models_dir() / f"{model}.toml")
        raw = {k: v for k, v in hw.items() if k in ("chip", "memory", "network")}
        # a measured run was served, whatever its length: the spec's context-length check (for
        # workloads one designs) is not applied; _model warns about a row beyond it
        raw["model"] = {k: v for k, v in md["model"].items() if k != "context_length"}
        cache[key] = raw
    import copy

    return copy.deepcopy(cache[key])


def group_points(points: Iterable[Point]) -> dict[tuple, list[Point]]:
    """Points that can be priced in one vectorised call: same model, mode and length jitter.

    Everything else (system hardware, ISL/OSL, deployment, formats, efficiency knobs) varies per
    design through override arrays, so the cost model compiles once per group.
    """
    groups: dict[tuple, list[Point]] = defaultdict(list)
    for p in points:
        if not priced(p.status):
            continue
        groups[(p.model, p.mode, p.jitter)].append(p)
    return groups


#: Hardware spec keys that differ between systems, sent as override arrays.
HW_KEYS = ("chip.tdp", "chip.peak_flops.bf16", "chip.peak_flops.fp8", "chip.peak_flops.fp6",
           "chip.peak_flops.fp4", "chip.peak_flops.int8", "memory.hbm.capacity", "memory.hbm.bandwidth",
           "memory.sram.capacity", "memory.sram.bandwidth", "memory.host.capacity",
           "memory.host.bandwidth", "network.scaleup_bandwidth", "network.scaleup_latency",
           "network.scaleup_domain", "network.scaleout_bandwidth", "network.scaleout_latency",
           "network.scaleup_topology")
_ABSENT = {"capacity": 0.0, "bandwidth": 1.0}


def hw_values(spec) -> dict[str, float | str]:
    """The :data:`HW_KEYS` of a structured spec (absent tiers: capacity 0, bandwidth 1 B/s;
    categorical keys such as ``network.scaleup_topology`` as their names)."""
    out = {}
    for key in HW_KEYS:
        obj: Any = spec
        for part in key.split("."):
            obj = getattr(obj, part, None) if obj is not None else None
        if obj is None:
            obj = _ABSENT.get(key.rsplit(".", 1)[-1], math.nan)
        out[key] = obj if isinstance(obj, str) else float(obj)  # categorical keys go as their names
    # a missing peak class runs at the rate PeakFlops' rules give (per design, so never NaN)
    from .spec import resolve_peaks

    pk = {c: out.get(f"chip.peak_flops.{c}") for c in ("bf16", "fp8", "fp6", "fp4", "int8")}
    pk = {c: (None if v is None or not math.isfinite(v) else v) for c, v in pk.items()}
    for c, v in resolve_peaks(pk).items():
        if f"chip.peak_flops.{c}" in out:
            out[f"chip.peak_flops.{c}"] = float(v)
    return out


def build_spec(pts: list[Point], efficiency_for, *, hardware, cache=None):
    """The group's base spec (first point's system and deployment) and override arrays.

    Returns:
        ``(spec, overrides, config_index, concurrencies)``: ``config_index[i]`` is the design row of
        point ``i``; the sweep is the sorted distinct concurrencies of the group.
    """
    from .spec import spec_from_dict

    cache = {} if cache is None else cache
    p0 = pts[0]

    def raw_for(p, concs):
        raw = base_raw(p.system_key, p.model, hardware=hardware, cache=cache)
        raw["workload"] = {"name": "measured", "isl": p.isl, "osl": p.osl, "concurrency": concs,
                           "length_jitter": p.jitter}
        dep: dict[str, Any] = {"cost_model": "analytical", "mode": p.mode,
                               "weights_format": p.formats["weights"], "moe_weights_format": p.formats["moe"],
                               "kv_cache_format": p.formats["kv"], "activations_format": p.formats["act"]}
        if p.mode == "disaggregated":
            dep["prefill"] = {"chips": p.deploy["p_chips"], "tp": p.deploy["p_tp"], "ep": p.deploy["p_ep"],
                              "dp_attention": p.deploy["p_dp"]}
            dep["decode"] = {"chips": p.deploy["d_chips"], "tp": p.deploy["d_tp"], "ep": p.deploy["d_ep"],
                             "dp_attention": p.deploy["d_dp"]}
        else:
            dep.update(tp=p.deploy["tp"], pp=p.deploy["pp"], ep=p.deploy["ep"], dp_attention=p.deploy["dp"])
        if p.deploy.get("mn"):
            dep["multinode_tp"] = True
        raw["deployment"] = dep
        raw["efficiency"] = dict(efficiency_for(p))
        raw["name"] = f"{p.system_key}-{p.model}-{p.mode}-{p.isl}x{p.osl}"
        return raw

    concs = sorted({p.concurrency for p in pts})
    spec = spec_from_dict(raw_for(p0, concs), file=f"<measured {p0.id}>")
    hw = {}
    for p in pts:
        if p.system_key not in hw:
            hw[p.system_key] = hw_values(spec_from_dict(raw_for(p, [1]), file=f"<measured {p.id}>"))
    configs: dict[tuple, int] = {}
    index = []
    for p in pts:
        k = (p.system_key, p.isl, p.osl, tuple(sorted(p.deploy.items())), tuple(sorted(p.formats.items())),
             tuple(sorted(efficiency_for(p).items())))
        index.append(configs.setdefault(k, len(configs)))
    keys = list(configs)
    overrides: dict[str, Any] = {}
    for key in HW_KEYS:
        overrides[key] = np.array([hw[k[0]][key] for k in keys])
    overrides["workload.isl"] = np.array([k[1] for k in keys], dtype=np.float64)
    overrides["workload.osl"] = np.array([k[2] for k in keys], dtype=np.float64)
    for name, path in _DKEYS.items():
        if name in p0.deploy:
            overrides[path] = np.array([dict(k[3])[name] for k in keys], dtype=np.float64)
    # decode batch limit per decode instance (inf: only the KV cache limits it)
    overrides["deployment.max_batch_size"] = np.array([dict(k[3]).get("mb", np.inf) for k in keys],
                                                      dtype=np.float64)
    # settings only some points carry, sent only by groups that have such a point (other cost models
    # never see the key), with the value that means "unset" for the rest
    for name, (path, unset) in _OPTIONAL_DKEYS.items():
        if any(name in dict(k[3]) for k in keys):
            overrides[path] = np.array([dict(k[3]).get(name, unset) for k in keys], dtype=np.float64)
    # speculative decoding (draft tokens per step; 0 = off) for every point of the group
    overrides["deployment.speculative_tokens"] = np.array([dict(k[3]).get("spec", 0) for k in keys],
                                                          dtype=np.float64)
    for name, path in _FKEYS.items():
        overrides[path] = np.array([dict(k[4])[name] for k in keys], dtype=object)
    knobs = sorted({n for k in keys for n, _ in k[5]})
    for n in knobs:
        overrides[f"efficiency.{n}"] = np.array([dict(k[5]).get(n, np.nan) for k in keys])
        if np.isnan(overrides[f"efficiency.{n}"]).any():
            raise CodesignError(f"efficiency knob {n} is set for some systems of a group and not others")
    return spec, overrides, np.asarray(index), concs


def predict(points: list[Point], *, efficiency_for=None, cost_model: str | None = None, pm=None,
            domain: dict | None = None, basis_for=None, progress=None,
            used: set | None = None) -> list[Point]:
    """Fill ``pred_*`` of every ``ok`` point (in place) and return the points.

    A point whose activations are a 4-bit format (compute class ``fp4``: DeepSeek-R1 ``fp4`` rows)
    on hardware whose spec has no ``chip.peak_flops.fp4`` (MI300X, MI325X, H100, H200) gets the
    status ``unsupported: ...``: the spec's peak rules would run it at the FP8 rate, but no serving
    engine runs 4-bit activations there (FP4 weights with BF16 activations, gpt-oss on Hopper or
    MI300X, are priced).

    Args:
        efficiency_for: ``f(point) -> dict`` of efficiency knobs (default: none, the model's own
            defaults); every point of a model/mode group must set the same knob names.
        domain: the calibration's training domain (see :func:`codesign.calibrate.domain_of`); a point
            outside it gets ``extrapolated`` reasons.
        basis_for: ``f(point) -> str``, the calibration tables that priced the point, joined by
            ``+`` (``codesign_baseline.efficiency_for``'s basis: ``shared+systems.b200+frameworks.sglang``);
            named in the reasons of a point whose system is outside ``domain``.
        progress: optional ``callback(done, total)``: rows priced so far of those grouped for
            pricing, after each group (a spec per system, model, framework and mode).
        used: receives the registered name of each cost model that priced a group (``auto``
            resolved per group's spec), for the report.
    """
    from .evaluation import cost_model_name, evaluate
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    hardware = hardware_paths(pm)
    efficiency_for = efficiency_for or (lambda p: {})
    refuse_systems_without_hardware(points, hardware, pm)
    refuse_fp4_without_fp4_units(points, hardware, pm)
    mark_multinode_tp(points, hardware)
    cache: dict = {}
    groups = group_points(points)
    total, done = sum(len(pts) for pts in groups.values()), 0
    for key, pts in groups.items():
        if progress:
            progress(done, total)
        done += len(pts)
        spec, overrides, index, concs = build_spec(pts, efficiency_for, hardware=hardware, cache=cache)
        name = cost_model_name(spec, cost_model=cost_model, pm=pm)
        if used is not None:
            used.add(name)
        can_vary = set(pm.cost_model_parameters(name))
        if set(overrides) <= can_vary:
            runs = [(pts, index, concs, evaluate(spec, overrides, cost_model=cost_model, pm=pm))]
        else:
            runs = _per_config(pts, index, efficiency_for, hardware, cache, can_vary, name, cost_model, pm)
        for run_pts, run_index, run_concs, ev in runs:
            _fill(run_pts, run_index, run_concs, ev)
    if progress:
        progress(total, total)
    for p in points:
        slips = unit_slip_warnings(p)
        p.questioned += slips
        p.warnings += slips
    if domain is not None:
        for p in points:
            basis = basis_for(p) if basis_for is not None and priced(p.status) else None
            p.extrapolated = extrapolation(p, domain, basis) if priced(p.status) else []
    return points


def _per_config(pts, index, efficiency_for, hardware, cache, can_vary, name, cost_model, pm):
    """A group priced one configuration at a time, for a cost model that cannot vary every key a
    group's vectorised call sends (a third-party model declares what it varies in ``parameters()``):
    each configuration's own spec, and only the override keys the model declares. A configuration
    the model refuses (``CodesignError``: a mode or setting it does not price) marks its rows
    ``unsupported: cost model NAME: why`` instead of stopping the run.

    Raises:
        BugError: the model's bug (:class:`~codesign.errors.PluginBugError`: it raised, returned NaN
            or a negative time, broke the contract) stops the run, exit 3 naming the plugin, as
            ``codesign evaluate`` does: it was a row status, exit 0, even with
            ``CODESIGN_STRICT_PLUGINS=1`` (fresh-user trial, session 46).

    Returns:
        ``[(points, index into the run's designs, concurrencies, Evaluation)]``, one per priced
        configuration.
    """
    from .evaluation import evaluate

    runs = []
    for i in sorted(set(int(i) for i in index)):
        sub = [p for p, k in zip(pts, index) if k == i]
        spec, overrides, sub_index, concs = build_spec(sub, efficiency_for, hardware=hardware, cache=cache)
        keep = {k: v for k, v in overrides.items() if k in can_vary}
        try:
            ev = evaluate(spec, keep, cost_model=cost_model, pm=pm)
        except BugError:
            raise  # the plugin's bug (it raised, NaN, a broken contract): exit 3 naming it, as evaluate gives
        except CodesignError as exc:
            for p in sub:
                p.status = f"unsupported: {exc}" if name in str(exc) else f"unsupported: cost model {name}: {exc}"
            continue
        runs.append((sub, sub_index, concs, ev))
    return runs


#: How far a prediction may be from its measurement (a factor either way) before the row's warning
#: asks whether the measured cell is in the wrong unit: seconds written in a ms column are 1000x
#: too small (aiconfigurator ``silicon_ttft_ms = 0.110429`` for a 1k Llama-70B prefill, fresh-user
#: trial, session 46: a TTFT MAPE of 40331%). A model's own miss can exceed it too (InferenceMAX
#: rows whose users queue for minutes), hence a question, and the row stays priced and counted.
UNIT_SLIP_FACTOR = 100.0
#: A ratio within this factor of 1000 (either way) is what a ms/s slip gives when the model is
#: otherwise within 3.16× of the row, and only then does the warning name a unit slip; a row 126× off
#: (InferenceMAX imx-00175: 35 s measured TTFT against 277 ms predicted) asked "a unit slip (ms vs
#: s)?" where no slip gives 126× (fresh-user trial, session 47)
UNIT_SLIP_BAND = 10 ** 0.5


def _factor(q: float) -> str:
    """A ratio to the measured value as a message says it: ``4033× the measured`` above 1,
    ``1/128 of the measured`` below."""
    return f"{q:.0f}× the measured" if q >= 1 else f"1/{1 / q:.0f} of the measured"


def _ms(seconds: float) -> str:
    """A time in ms to 4 significant figures, whole ms from 1 s on (``34993``, not ``3.499e+04``)."""
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 1000 else f"{ms:.4g}"


def unit_slip_warnings(p: Point) -> list[str]:
    """The warnings of a priced point whose predicted TTFT or TPOT is more than
    :data:`UNIT_SLIP_FACTOR` times its measured value or less than 1/that: each names the metric,
    both values in ms, their ratio and the measured column, and asks whether it is a unit slip (ms
    vs s) when the ratio is within :data:`UNIT_SLIP_BAND` of 1000, else to check the cell. Information only: the row stays priced and in the error tables (the data are the
    user's). Empty for a point not priced or without both values."""
    out = []
    for metric, meas, pred in (("TTFT", p.ttft_s, p.pred_ttft_s), ("TPOT", p.tpot_s, p.pred_tpot_s)):
        if not (priced(p.status) and math.isfinite(meas) and math.isfinite(pred) and meas > 0 and pred > 0):
            continue
        q = pred / meas
        if 1 / UNIT_SLIP_FACTOR <= q <= UNIT_SLIP_FACTOR:
            continue
        col = (f"silicon_{metric.lower()}_ms" if p.schema == "aiconfigurator"
               else f"{p.ttft_stat}_{metric.lower()}_s")
        slip = 1000 / UNIT_SLIP_BAND <= max(q, 1 / q) <= 1000 * UNIT_SLIP_BAND
        out.append(f"predicted {metric} {_ms(pred)} ms is {_factor(q)} {_ms(meas)} ms ({col}): "
                   + ("a unit slip (ms vs s) in that cell? If the cell is right, the model misses this row "
                      "by that factor" if slip else
                      f"more than {UNIT_SLIP_FACTOR:.0f}× off, though not the 1000× of a ms/s slip: check "
                      "that cell; if it is right, the model misses this row by that factor"))
    return out


#: The optional point metrics (:data:`codesign.costmodel.OPTIONAL_POINT_METRICS`) that say why a
#: prediction is what it is: how many users the model has decoding, and how busy its prefill
#: capacity is (near 1 the loop is prefill-bound and TTFT mostly queue). ``predictions.csv`` writes
#: each as ``pred_<metric>`` (:class:`Point` has the attribute of that name).
DIAGNOSTICS = ("decode_batch", "prefill_utilization")


def _fill(pts, index, concs, ev) -> None:
    """Set the ``pred_*`` (or an ``infeasible`` status) of ``pts`` from ``ev`` (design ``index[i]``
    of point ``i``, concurrency columns ``concs``)."""
    col = {c: j for j, c in enumerate(concs)}
    for p, i in zip(pts, index):
        j = col[p.concurrency]
        if not ev.feasible[i, j]:
            p.status = "infeasible: " + str(ev.point_reasons[i, j] if ev.point_reasons is not None else "")
            continue
        # a median TTFT is the steady state: the start-up wave sits in the tail
        ttft_key = ("ttft_steady_s" if p.ttft_stat == "median" and "ttft_steady_s" in ev.points
                    else "ttft_s")
        p.pred_ttft_s = float(ev.points[ttft_key][i, j])
        p.pred_tpot_s = float(ev.points["tpot_s"][i, j])
        if p.schema == "inferencemax":
            p.pred_tput = float(ev.points["mixed_tok_s_per_chip"][i, j])
        for metric in DIAGNOSTICS:  # why the prediction is what it is, where the model says
            if metric in ev.points:
                setattr(p, f"pred_{metric}", float(ev.points[metric][i, j]))


def mark_multinode_tp(points: list[Point], hardware: dict) -> None:
    """Let a measured run whose TP group spans scale-up domains be priced (in place).

    A priced point with a TP (aggregated, or of either pool) larger than its system's
    ``network.scaleup_domain`` ran multi-node TP: TensorRT-LLM's ``tep16`` DeepSeek-R1 recipes put
    decode TP 16 on two 8-GPU HGX H100 nodes (InferenceMAX imx-00351), Dynamo + SGLang runs log
    prefill and decode workers of TP 16 there (imx-00403). It was measured,
    so it is feasible: ``pt.deploy["mn"] = 1`` sets ``deployment.multinode_tp`` for its spec
    (:func:`build_spec`), which prices those all-reduces over the scale-out network, and a warning
    per pool says so.

    Args:
        points: measured points (deployments and warnings changed in place).
        hardware: baseline name → hardware TOML (:func:`hardware_paths`).
    """
    for p in points:
        if not priced(p.status) or p.system_key not in hardware:
            continue
        dom = (_hardware_raw(str(hardware[p.system_key])).get("network") or {}).get("scaleup_domain")
        if not (isinstance(dom, int) and not isinstance(dom, bool) and dom > 0):
            continue
        pools = ((("prefill", "p_tp"), ("decode", "d_tp")) if p.mode == "disaggregated" else (("", "tp"),))
        for name, key in pools:
            tp = int(p.deploy.get(key, 1))
            if tp > dom:
                p.deploy["mn"] = 1
                p.warnings.append(f"{name + ' ' if name else ''}TP {tp} spans {-(-tp // dom)} scale-up domains "
                                  f"of {dom} chips: its all-reduces are priced hierarchically, within each "
                                  "domain on its links and across domains over the scale-out network (multi-node TP)")


@functools.lru_cache(maxsize=32)
def _hardware_raw(path: str) -> dict:
    """A baseline's hardware TOML, includes resolved (read once per file; callers only read it)."""
    from .spec import load_raw

    return load_raw(path)[0]


def refuse_systems_without_hardware(points: list[Point], hardware: dict, pm) -> None:
    """``unsupported`` status (in place) on priced points whose system has no readable hardware
    spec: no baseline of that name, or a baseline whose hardware file is missing
    (:func:`missing_hardware` names baseline, plugin and path). :func:`predict` and
    :class:`codesign.calibrate.Fitter` both apply it, so a fit leaves out, with the reason, the rows
    validate refuses.

    Args:
        points: measured points (statuses changed in place).
        hardware: baseline name → hardware TOML (:func:`hardware_paths`).
        pm: the plugin manager.
    """
    broken = missing_hardware(pm)
    for p in points:
        if priced(p.status) and p.system_key not in hardware:
            p.status = (f"unsupported: {broken[p.system_key]}" if p.system_key in broken
                        else f"unsupported: no hardware spec for system {p.system}")


def refuse_fp4_without_fp4_units(points: list[Point], hardware: dict, pm) -> None:
    """``unsupported`` status (in place) on priced points with 4-bit activations on hardware whose
    spec gives no ``chip.peak_flops.fp4`` (see :func:`predict`; :class:`codesign.calibrate.Fitter`
    applies it too, so a fit never trains on rows validate refuses).

    Args:
        points: measured points (statuses changed in place).
        hardware: baseline name → hardware TOML (:func:`hardware_paths`).
        pm: the plugin manager (its registered number formats give each format's compute class).
    """
    for p in points:
        if not priced(p.status) or p.system_key not in hardware:
            continue
        act = p.formats.get("act")
        fmt = pm.number_formats.get(act)
        if fmt is None or fmt.compute_class != "fp4":
            continue
        peaks = (_hardware_raw(str(hardware[p.system_key])).get("chip") or {}).get("peak_flops") or {}
        if not (isinstance(peaks, dict) and "fp4" in peaks):
            p.status = (f"unsupported: {act} activations need FP4 tensor cores and {p.system_key} has none "
                        f"(no chip.peak_flops.fp4 in {Path(hardware[p.system_key]).name})")


def extrapolation(p: Point, domain: dict, basis: str | None = None) -> list[str]:
    """Why ``p`` lies outside the calibration's training domain (empty when inside).

    ``basis`` (which calibration tables priced ``p``, see :func:`predict`) lets the reason for a
    system outside the data say whose knobs priced it. A framework of no known engine family
    (:data:`FRAMEWORK_FAMILIES`), or of a family outside ``domain["frameworks"]`` when the domain
    lists them, is priced without a framework offset, and the reasons say so.
    """
    why = []
    if p.system_key not in domain.get("systems", [p.system_key]):
        msg = f"system {p.system_key} not in calibration data"
        if basis is not None:
            parts = basis.split("+")
            src = next((b.split(".", 1)[1] for b in parts if b.startswith("systems.")), None)
            msg += (f": priced with {src}'s fitted knobs (systems.{src})" if src
                    else ": priced with the shared knobs (fitted across the calibration's systems)")
        why.append(msg)
    fam = framework_family(p.framework)
    if fam is None or fam not in domain.get("frameworks", [fam]):
        what = "no known engine family" if fam is None else f"engine family {fam}"
        why.append(f"framework {p.framework} ({what}) not in calibration data: priced without a "
                   "framework offset")
    if p.model and p.model not in domain.get("models", [p.model]):
        why.append(f"model {p.model} not in calibration data")
    if p.mode not in domain.get("modes", [p.mode]):
        why.append(f"mode {p.mode} not in calibration data")
    if p.deploy.get("mn") and not domain.get("multinode_tp", False):
        why.append("multi-node TP not in calibration data (its knobs were fitted on TP within one "
                   "scale-up domain)")
    for name, v in (("isl", p.isl), ("osl", p.osl), ("concurrency", p.concurrency)):
        lo, hi = domain.get(name, [v, v])
        if v < lo or v > hi:
            why.append(f"{name} {v} outside calibrated [{lo}, {hi}]")
    return why


# ------------------------------------------------------------------------------ errors
def ape(pred, meas) -> np.ndarray:
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    return np.abs(pred - meas) / np.abs(meas)


def error_stats(pred, meas) -> dict:
    """MAPE, median APE, share within 10% and 25% (as fractions) over finite pairs."""
    e = ape(pred, meas)
    e = e[np.isfinite(e)]
    if e.size == 0:
        return {"n": 0, "mape": math.nan, "median_ape": math.nan, "within_10": math.nan, "within_25": math.nan}
    return {"n": int(e.size), "mape": float(e.mean()), "median_ape": float(np.median(e)),
            "within_10": float((e <= 0.10).mean()), "within_25": float((e <= 0.25).mean())}


METRICS = (("ttft", "ttft_s", "pred_ttft_s"), ("tpot", "tpot_s", "pred_tpot_s"), ("tput", "tput", "pred_tput"))


#: Bands of the cost model's prefill utilisation for the error table ``by="load"`` (upper bounds,
#: labels sort in order). Below 0.7 a loop's TTFT is mostly service; from 0.7 to 0.99 it is at the
#: knee, where a capacity error of a few tens of percent decides whether users queue; at the cap
#: (0.99 to 1) the model has the loop prefill-bound. A utilisation above 1, which the analytical
#: model never reports (it caps it at 0.999) but another cost model may, gets a band of its own.
LOAD_BANDS = ((0.3, "0.00-0.30"), (0.7, "0.30-0.70"), (0.9, "0.70-0.90"), (0.99, "0.90-0.99"),
              (math.nextafter(1.0, 2.0), "0.99-1.00"), (math.inf, "above 1.00"))


def load_band(util: float) -> str:
    """The :data:`LOAD_BANDS` label of a prefill utilisation (``"not reported"`` for NaN: the cost
    model reports none)."""
    if not math.isfinite(util):
        return "not reported"
    return next(label for hi, label in LOAD_BANDS if util < hi)


def error_table_rows(points: list[Point], by: str, status: str = "ok") -> list[dict]:
    """Error statistics grouped by ``by`` (``"system"``, ``"model"``, ``"mode"``, ``"framework"``,
    ``"load"``: the band of the cost model's prefill utilisation at the row, :func:`load_band`; or
    ``"all"``) over the rows whose status starts with ``status`` (``"ok"``; ``"ambiguous"`` for the
    rows whose mapping is known to be incomplete)."""
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        if not (p.status == status if status == "ok" else p.status.startswith(status)):
            continue
        k = {"system": p.system_key, "model": p.model or p.model_name, "mode": p.mode,
             "framework": p.framework, "all": "all", "load": load_band(p.pred_prefill_utilization)}[by]
        groups[k].append(p)
    out = []
    for k in sorted(groups):
        pts = groups[k]
        row = {"group": k, "n": len(pts), "extrapolated": sum(1 for p in pts if p.extrapolated)}
        for name, m, pr in METRICS:
            row[name] = error_stats([getattr(p, pr) for p in pts], [getattr(p, m) for p in pts])
        out.append(row)
    return out


#: The band drawn either side of parity in ``parity.png`` (the error tables' "within 25%").
PARITY_BAND = 0.25


def write_parity_plot(points: list[Point], path, title: str) -> int:
    """``parity.png``: predicted against measured TTFT and TPOT [ms] of the ``ok`` rows (the rows
    the error tables count), one panel each, log-log, a colour per system (the tables' grouping
    name), hollow markers for rows priced outside the calibration's range (``extrapolated``), a
    black x over the rows a warning questions (:func:`questioned_rows`), the parity line and a
    ±:data:`PARITY_BAND` band; each panel's title gives its rows and MAPE.
    Returns the number of rows drawn (0: no file written)."""
    rows = [p for p in points if p.status == "ok"]
    panels = []
    for metric, meas, pred in (("TTFT", "ttft_s", "pred_ttft_s"), ("TPOT", "tpot_s", "pred_tpot_s")):
        xy = [(getattr(p, meas) * 1e3, getattr(p, pred) * 1e3, p.system_key, bool(p.extrapolated), bool(p.questioned))
              for p in rows]
        xy = [r for r in xy if math.isfinite(r[0]) and math.isfinite(r[1]) and r[0] > 0 and r[1] > 0]
        panels.append((metric, [r[:4] for r in xy], [r[:2] for r in xy if r[4]]))
    if not any(xy for _, xy, _ in panels):
        return 0
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = sorted({r[2] for _, xy, _ in panels for r in xy})
    colour = {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(systems)}
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), dpi=120)
    for ax, (metric, xy, asked) in zip(axes, panels):
        if not xy:
            ax.set_title(f"{metric}: no priced row has both values")
            continue
        for sysname in systems:
            for hollow in (False, True):
                pts = [(x, y) for x, y, s, e in xy if s == sysname and e == hollow]
                if pts:
                    c = colour[sysname]
                    ax.scatter(*zip(*pts), s=12, alpha=0.6, linewidths=0.8,
                               facecolors="none" if hollow else [c], edgecolors=[c],
                               label=f"{sysname}{' (extrapolated)' if hollow else ''} ({len(pts)})")
        if asked:  # rows a warning questions (a cell that looks wrong): still counted, marked
            ax.scatter(*zip(*asked), s=40, marker="x", color="k", linewidths=1.0,
                       label=f"questioned row, see its warning ({len(asked)})")
        lo = min(min(x, y) for x, y, _, _ in xy) / 1.5
        hi = max(max(x, y) for x, y, _, _ in xy) * 1.5
        ax.plot([lo, hi], [lo, hi], color="k", lw=1)
        for f_ in (1 - PARITY_BAND, 1 + PARITY_BAND):
            ax.plot([lo, hi], [lo * f_, hi * f_], color="k", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        mape = 100.0 * sum(abs(y / x - 1.0) for x, y, _, _ in xy) / len(xy)
        ax.set_title(f"{metric}: {len(xy)} rows, MAPE {mape:.1f}% (dashed: ±{PARITY_BAND:.0%})", fontsize=10)
        ax.set_xlabel(f"measured {metric} [ms]")
        ax.set_ylabel(f"predicted {metric} [ms]")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="upper left", markerscale=1.5)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return sum(len(xy) for _, xy, _ in panels)


def write_predictions(points: list[Point], path, schema: str) -> None:
    """``predictions.csv``: the input's id column, predictions, status, warning, assumptions,
    extrapolated.

    ``warning`` holds a row's warnings (``Point.warnings``: what to look at), ``assumptions`` what
    the mapping filled in that the row does not record (``Point.assumptions``: MTP draft tokens, a
    decode batch limit, inferred pools, ...), each joined with `` | `` (a message may hold ``; ``).

    ``system`` is the input's own name, as written (``b200_sxm``, ``GB 200``), as the id is; ``baseline``
    beside it is the registered baseline whose hardware spec priced the row (:data:`SYSTEMS`:
    ``b200`` for ``b200_sxm``), the name the error tables group ``system`` by
    (:func:`error_table_rows`), so the two outputs join on it; blank for a system no baseline
    describes (an ``unsupported:`` or ``invalid:`` row).

    ``pred_decode_batch`` (requests decoding at once over the modelled deployment: one worker of an
    aiconfigurator row that ran several, whose ``concurrency`` is that worker's) and
    ``pred_prefill_utilization`` (share of the prefill capacity in use, 0-1) are the cost model's
    :data:`DIAGNOSTICS` at the row: blank where the model reports none or the row was not priced.

    InferenceMAX files add ``statistic``: which TTFT/TPOT statistic (``median`` or ``mean``) the
    measured and predicted columns of the row are (:func:`read_measured`).

    A concurrency that is not a whole number >= 1 (``conc`` ``abc``, none recorded) is a blank cell,
    never a made-up 0 or 1. An ``invalid`` row was never mapped nor priced: only its id, system,
    model, concurrency (when valid), status, warnings and assumptions are written; ``mode``,
    ``statistic`` and the measured columns (which statistic was read, and which mode, depended on
    the mapping) are blank.
    """
    idcol = "point_id" if schema == "inferencemax" else "id"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = [idcol, "system", "baseline", "model", "mode", "concurrency", "measured_ttft_ms", "pred_ttft_ms",
            "measured_tpot_ms", "pred_tpot_ms"]
    if schema == "inferencemax":
        cols += ["measured_tput_per_gpu_tok_s", "pred_tput_per_gpu_tok_s", "statistic"]
    cols += [f"pred_{m}" for m in DIAGNOSTICS] + ["status", "warning", "assumptions", "extrapolated"]

    def fmt(x, scale=1.0):
        return "" if not (isinstance(x, float) and math.isfinite(x)) else f"{x * scale:.6g}"

    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for p in points:
            bad = p.status.startswith("invalid")
            conc = p.concurrency if p.concurrency >= 1 else ""  # 0: not a number, or not recorded
            # the error tables' name of the system (blank: no baseline describes it)
            base = SYSTEMS.get(system_name(p.system), "") if (p.system or "").strip() else ""
            if bad:
                row = [p.id, p.system, base, p.model or p.model_name, "", conc, "", "", "", ""]
                row += ["", "", ""] if schema == "inferencemax" else []
            else:
                row = [p.id, p.system, base, p.model or p.model_name, p.mode, conc, fmt(p.ttft_s, 1e3),
                       fmt(p.pred_ttft_s, 1e3), fmt(p.tpot_s, 1e3), fmt(p.pred_tpot_s, 1e3)]
                if schema == "inferencemax":  # which TTFT/TPOT statistic both columns are
                    row += [fmt(p.tput), fmt(p.pred_tput), p.ttft_stat]
            row += [fmt(getattr(p, f"pred_{m}")) for m in DIAGNOSTICS]
            # a warning or an assumption may hold "; "
            row += [p.status, " | ".join(p.warnings), " | ".join(p.assumptions), "; ".join(p.extrapolated)]
            w.writerow(row)
