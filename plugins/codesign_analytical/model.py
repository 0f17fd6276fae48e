"""The analytical serving model: rooflines, α–β collectives, memory tiers, continuous batching.

One design point is a flat dict of scalars in SI units (:data:`PARAMS`); :func:`sweep` maps it to
every metric at every concurrency of the workload. ``jax.vmap(sweep)`` prices a batch of designs,
``jax.grad`` gives sensitivities. There is no Python branching on traced values: infeasible points
are masked, never priced.

Physics, per phase (../shared/docs/DESIGN.md "The cost model's physics"):

* **Weights and KV cache** (per chip): non-expert weights split over TP and PP; routed and shared
  experts over all chips of a pipeline stage (EP × MoE-TP); KV per request of
  ``kv_full·ctx + kv_window·min(ctx, window)`` elements, split over TP up to the KV-head count
  (MLA's latent is replicated over TP ranks). Weights live in HBM (spare SRAM holds a share); the
  KV cache fills SRAM first (kept local), then the engine's share (``kv_memory_fraction``) of the
  HBM left after the weights, then, only with ``deployment.host_kv_cache``, the host tier. Those
  KV slots, and the engine's batch limit (``deployment.max_batch_size``) where the spec sets one,
  cap the decode batch; more users wait for admission (serving engines queue them).
* **Decode step** at batch B: reads the dense weights, the expected distinct experts that B·k
  routings touch per EP shard, Σ_i (1 − (1 − q_i)^B)/ep with expert i's routing share q_i ∝ i^−s
  (``routing_skew`` s; s = 0 is uniform routing, E/ep·(1 − (1 − k/E)^B)), and the batch's KV cache, each tier at its
  bandwidth × achievable fraction; compute 2·active·B plus attention over the context at the
  achievable fraction of the chip peak for the activation format; a roofline per operator
  (attention over the KV cache, dense GEMMs, expert GEMMs: each max(compute, memory), summed) +
  TP all-reduces, EP all-to-all and PP sends (α + size/β) + per-layer and per-step overheads.
  Collectives of a stage larger than the scale-up domain run over the scale-out network; a TP
  group larger than the domain is infeasible unless ``deployment.multinode_tp`` lets it span
  domains (TP 16 over two 8-GPU HGX nodes): its all-reduces are then hierarchical (within each
  domain on its links, the 1/D shards across domains over scale-out).
* **Prefill** of one request: the same terms at ISL tokens (causal attention, quadratic in ISL;
  the lm_head on the last position only).
* **Serving** (closed loop, C users; mean-value analysis): the unknown is the decode batch B
  (requests in decode, not C). Given B: decode throughput X = inst·B·k/((OSL−1)·t_step(B)) (k
  tokens per step: 1 without speculative decoding, 1 + a + … + a^d with d draft tokens verified
  per step at acceptance a); the prefill station (one request's pass T_1 for latency, a full
  token-budget pass amortised per request, T_a, for capacity: CHUNK_TOKENS aggregated,
  PREFILL_WORKER_TOKENS per prefill-worker replica with the pass's fixed overhead included)
  runs at utilisation ρ = X·T_a.
  Aggregated, it adds the M/D/1 wait ρ/(2(1−ρ))·T_a. Disaggregated, a prefill worker packs the
  requests that queued during its running pass into its next one (gated batch service, up to the
  token budget): a request waits for the running pass, ρ·T_own/2, and its own pass is
  T_own = T_p/(1 − ρ), at most a full budget's pass. The start-up wave (all C users start at
  once; the first C requests wait (C−1)/2·T_a) is a transient added to the mean TTFT with weight
  ``burst_fraction`` φ = C/N for a run of N requests (InferenceMAX: N = 10·C).
  Aggregated: chunked prefill rides in decode iterations, TPOT = t_step/(1 − X·T_a). Disaggregated:
  KV transfer, a hand-off latency and admission at the decode pool's next iteration (t_step/2).
  Both: a busy engine receives new requests once every R iterations (SGLang
  ``--scheduler-recv-interval``, ``deployment.scheduler_recv_interval``; unset, the calibrated
  ``admission_wait_steps``, which under attention DP, where SGLang runs no receive interval, stands
  for the hand-off loops' waits on a busy scheduler), a wait of busy·(R − 1)/2 iterations,
  busy = 1 − exp(−(B/dp)(C − 1)/C)
  (the receiving scheduler is one attention-DP rank's, holding B/dp of the batch).
  Disaggregated without speculative decoding, a busy decode worker adds ``handoff_wait_steps``
  iterations more (calibrated per engine: Dynamo + SGLang about 14, Dynamo + TensorRT-LLM about 1;
  docs/baselines.md, session 47).
  Aggregated TensorRT-LLM with its attention-DP balance (``deployment.attention_dp_balance_timeout_iters``
  N) holds a prompt until every rank has one or N iterations have passed: busy·w·N·t_iter more
  (:func:`_adp_balance_wait`).
  Fixed per-layer overheads scale with the kernels a layer launches by architecture
  (:data:`KERNELS_ATTN`, :data:`KERNELS_FFN`). Little's law over the loop, X·(TTFT + D) = C, is solved for B by bisection
  (no gradient) plus one Newton step (implicit-function gradient); TTFT = C/X − D. The batch is
  capped by the KV slots and the batch limit, and the throughput by the prefill capacity 1/T_a (a prefill-bound loop
  runs the decode batch that carries 1/T_a); the users beyond either wait, which TTFT = C/X − D
  counts.
* **Power and area**: static + energy per FLOP, per byte per tier and per link byte; area from
  per-unit figures (see ``specs/technology/n4p.toml``). Without ``[chip.energy]`` power is not
  modelled: ``power_w`` and ``peak_power_w`` are ``chip.tdp``. Without ``[chip.area]``, ``area_mm2``
  is NaN (not modelled) and HBM stacks are not counted against a package limit.

Default achievable fractions and overheads (:data:`DEFAULT_EFFICIENCY`) are documented below and
are what ``codesign calibrate`` refits against measured data.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

import attrs
import numpy as np

from codesign.costmodel import Evaluation
from codesign.evaluation import deployment_problems
from codesign.spec import energy_per_flop, resolve_peaks

#: Achievable fractions and overheads. Sources: large dense GEMMs reach 70-80% of peak on
#: Hopper/Blackwell tensor cores (NVIDIA cuBLAS/CUTLASS published GEMM efficiencies), small-batch
#: decode GEMMs far less; streaming kernels reach ~85-90% of HBM peak (STREAM-like copies on H100
#: and B200, e.g. the "Dissecting the NVIDIA Hopper architecture" microbenchmarks); NCCL/NVLS
#: collectives reach ~80% of link bandwidth. Overheads: a decode step launches several kernels per
#: layer at ~2-5 us each even under CUDA graphs. All are refitted by ``codesign calibrate``.
DEFAULT_EFFICIENCY: dict[str, float] = {
    "compute_prefill": 0.70,
    "compute_decode": 0.50,
    "memory_bandwidth": 0.85,
    "network_bandwidth": 0.80,
    "layer_overhead_s": 10e-6,
    "step_overhead_s": 100e-6,
    # software latency of one collective beyond the link hop (kernel launch, flag/barrier sync of
    # NCCL or the frameworks' custom all-reduce and DeepEP all-to-all kernels): assumption 5 us
    # (small-message all-reduce on NVLink is ~5-15 us in nccl-tests), refitted by `codesign calibrate`
    "collective_latency_s": 5e-6,
    # software latency per peer of an all-to-all's group beyond the first (its kernels signal and
    # wait on every peer: DeepEP's low-latency dispatch + combine of 128 tokens grows from
    # 77 + 114 us at EP 8 to 155 + 273 us at EP 32 over RDMA, deepseek-ai/DeepEP README, H800 + CX7):
    # assumption 0.5 us per peer on NVLink, refitted by `codesign calibrate`. Not charged to a TP
    # all-reduce (see _allreduce)
    "collective_peer_latency_s": 0.5e-6,
    # fixed cost of one prefill pass of the reference model (OVERHEAD_REF_LAYERS dense layers;
    # scaled by the kernels another model launches): assumption, refitted by `codesign calibrate`
    "prefill_overhead_s": 5e-3,
    # per-sequence CPU work per decode step (scheduling, sampling, detokenising): assumption of a
    # few us per sequence, refitted by `codesign calibrate` (plugins/codesign_baseline/calibration.toml)
    "seq_overhead_s": 2e-6,
    # disaggregated hand-off per request: router → prefill worker → KV transfer (NIXL/UCX) → decode
    # worker scheduling; Dynamo disaggregated runs show a 100-250 ms TTFT floor at concurrency 1-4
    # that aggregated runs of the same model on the same system do not (aiconfigurator silicon data);
    # for the reference model (OVERHEAD_REF_LAYERS layers), scaled by another model's layers
    "handoff_overhead_s": 50e-3,
    # weight of the start-up wave in the mean TTFT (see `sweep`): C/N for a benchmark run of N
    # requests that starts all C users at once; InferenceMAX sends N = 10·C (../shared/data/
    # README.md), hence 0.1; refitted per framework by `codesign calibrate`
    "burst_fraction": 0.1,
    # speculative decoding: chance a draft token is accepted when the previous one was, used when
    # the deployment gives no acceptance_rate. DeepSeek-V3 technical report (arXiv:2412.19437,
    # section 5.4.3): 85-90% for the second token of MTP on natural text; assumption 0.7 for
    # benchmark prompts, refitted by `codesign calibrate` on InferenceMAX MTP rows
    "spec_acceptance": 0.7,
    # GEMM rate of a weight format relative to its compute class's peak x compute_* (MX/NV block
    # scales, dequantisation, kernel maturity differ by format). Default 1 (assumption: no
    # difference); the fitted values are in plugins/codesign_baseline/calibration.toml
    "compute_scale_bf16": 1.0,
    "compute_scale_fp8": 1.0,
    "compute_scale_mxfp4": 1.0,
    "compute_scale_nvfp4": 1.0,
    # share of the HBM left after the weights that the engine gives the KV cache (the rest holds
    # activations, CUDA graphs, communication buffers): TensorRT-LLM KvCacheConfig
    # free_gpu_memory_fraction defaults to 0.9 (its recipes use 0.8-0.9); SGLang's
    # mem_fraction_static (0.8-0.88 of all memory for weights + KV) leaves a similar margin
    "kv_memory_fraction": 0.9,
    # decode iterations a request arriving at a busy engine waits, beyond the running one, before
    # the engine receives it, when the deployment gives no scheduler_recv_interval R (which sets it
    # to (R − 1)/2: SGLang --scheduler-recv-interval). Assumption 0.5 (a request received at the
    # next iteration or the one after), refitted per framework by `codesign calibrate`
    "admission_wait_steps": 0.5,
    # decode iterations a request waits, beyond the receive wait, on a busy disaggregated decode
    # worker that runs no speculative decoding, before its first token: the hand-off loops a busy
    # scheduler runs once per iteration (SGLang's pre-allocation, transfer and waiting queues; the
    # prefill's bootstrap hand-shake). Measured: Dynamo + SGLang rows of InferenceMAX and
    # aiconfigurator (GB200, GB300, H200, 1k/1k, prefill pool under 30% busy, more than 4 users per
    # decode worker) exceed the model without it by a median 12-24 measured decode steps, their MTP
    # rows and the Dynamo + TensorRT-LLM rows by about 0-3 (docs/baselines.md, session 47). Default 0
    # (no wait assumed); `codesign calibrate` fits it per engine family and serving stack
    "handoff_wait_steps": 0.0,
    # Zipf exponent s of how routed tokens spread over a MoE layer's experts (expert i of E takes a
    # share of the routings ∝ i^−s), which sets the distinct experts, and so the expert weights, a
    # decode step of B tokens reads (:func:`_expected_touched`). Real routing is not uniform: on
    # DeepSeek-R1 "a few experts are more active than others", stably over hundreds of decode steps
    # and within one request (NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/
    # blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md, figures 3-5 and 9-11, 32 GB200 GPUs).
    # Default 0, uniform routing (no skew assumed); `codesign calibrate` fits one shared value
    # (plugins/codesign_baseline/calibration.toml), starting from :data:`FIT_START`
    "routing_skew": 0.0,
}

#: Where `codesign calibrate` starts a knob whose default its fit space cannot leave: a skew of 0
#: is the edge of its logit space (assumption 0.3, a mild skew; the fit moves it), a wait of 0 steps
#: that of its log space (assumption 2 steps; the fit moves it per engine).
FIT_START: dict[str, float] = {"routing_skew": 0.3, "handoff_wait_steps": 2.0}

#: Knobs that are settings of the serving engine, counted in its own iterations, not properties of
#: the hardware: `codesign calibrate` fits them per engine family only (no per-system offset).
ENGINE_KNOBS = ("admission_wait_steps", "handoff_wait_steps")
#: Knobs that are properties of a model's routing on the served prompts, not of the hardware or the
#: engine: `codesign calibrate` fits one shared value (no per-system or per-framework offset).
WORKLOAD_KNOBS = ("routing_skew",)

#: Allowed range of each knob, ``(low, high, low_open, high_open)``: achievable fractions in (0, 1],
#: probabilities in [0, 1] (acceptance below 1: the series 1 + a + … + a^d needs a < 1), format
#: scales positive; every other knob (overheads, latencies) a time in [0, MAX_KNOB_TIME_S].
#: Upper bound of a time knob [s]: the fitted overheads and latencies are µs to tens of ms; 10 s
#: keeps a typo (1e30) from overflowing float32 into a NaN that the core would blame on the model.
MAX_KNOB_TIME_S = 10.0
KNOB_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    **{k: (0.0, 1.0, True, False) for k in ("compute_prefill", "compute_decode", "memory_bandwidth",
                                             "network_bandwidth", "kv_memory_fraction")},
    "burst_fraction": (0.0, 1.0, False, False),
    "spec_acceptance": (0.0, 1.0, False, True),
    "admission_wait_steps": (0.0, 1000.0, False, False),
    "handoff_wait_steps": (0.0, 1000.0, False, False),
    "routing_skew": (0.0, 1.0, False, False),
    **{f"compute_scale_{f}": (0.0, float("inf"), True, True) for f in ("bf16", "fp8", "mxfp4", "nvfp4")},
}

def knob_problem(name: str, value) -> str | None:
    """Why ``value`` is not a valid value of the efficiency knob ``name`` (:data:`KNOB_RANGES`;
    any other knob is a time in [0, MAX_KNOB_TIME_S]), or None."""
    import math

    lo, hi, lo_open, hi_open = KNOB_RANGES.get(name, (0.0, MAX_KNOB_TIME_S, False, False))
    rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a finite number in {rng} (got {value!r})"
    v = float(value)
    inside = math.isfinite(v) and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    shown = f"{v:g}"
    if math.isfinite(v) and float(shown) != v:  # 1.0000001 is not "1": the digits that make it wrong
        shown = repr(v)
    return None if inside else f"must be a finite number in {rng} (got {shown})"


#: Weight-format families with a ``compute_scale_<family>`` knob: a format's compute class, except
#: that FP4 formats keep their own name (MXFP4 and NVFP4 kernels differ); see :func:`_scale_family`.
SCALE_FAMILIES = ("bf16", "fp8", "mxfp4", "nvfp4")


def _scale_family(fmt) -> str:
    """``compute_scale_*`` family of a registered :class:`~codesign.formats.NumberFormat`."""
    return fmt.name if fmt.compute_class == "fp4" else fmt.compute_class

#: Kernels launched per layer, by architecture (counted from the TensorRT-LLM / vLLM / SGLang
#: modelling code of each block; norms and residual adds fused where the frameworks fuse them).
#: Attention block: GQA = norm, QKV GEMM, RoPE(+KV write), attention, O GEMM, TP all-reduce (6);
#: MLA (DeepSeek-V2/V3 modelling code) = norm, q_a GEMM, q_a norm, q_b GEMM, kv_a GEMM, kv_a norm,
#: RoPE, K/V up-projection (absorbed) GEMMs ×2, FlashMLA, O GEMM, TP all-reduce (12).
#: FFN block: dense = norm, gate/up GEMM, SiLU·mul, down GEMM, all-reduce (5); MoE = norm, router
#: GEMM, top-k, permute/dispatch, grouped GEMM 1, activation, grouped GEMM 2, unpermute/combine,
#: shared expert (gate/up, act, down), all-reduce (12); a MoE without shared experts (gpt-oss,
#: Qwen3 MoE: no ``n_shared_experts`` / ``shared_expert_intermediate_size`` in their configs)
#: launches no shared-expert GEMMs (9). ``layer_overhead_s`` is the overhead of the
#: reference dense GQA layer (11 kernels); another architecture's layer costs kernels/11 times that.
#: Linear attention (Gated DeltaNet, vLLM/SGLang Qwen3-Next code) = norm, in_proj GEMM, conv1d
#: update, gating, gated delta rule, gated norm, out_proj GEMM, TP all-reduce (8).
#: MLA with DSA adds the indexer's wq_b and weights_proj GEMMs, k_norm + RoPE, the FP8 key write,
#: the MQA-logits kernel and the top-k selection (+6: 18).
KERNELS_ATTN = {"gqa": 6.0, "mla": 12.0, "linear": 8.0, "mla_dsa": 18.0}
KERNELS_FFN = {"dense": 5.0, "moe": 12.0, "moe_unshared": 9.0}
KERNELS_REF = KERNELS_ATTN["gqa"] + KERNELS_FFN["dense"]

#: Bisection steps for the closed-loop decode batch before the Newton polish (log-space bracket
#: [1e-3·C, C]: 11 steps leave a relative width of ~0.3%; two Newton steps follow, the second one
#: carrying the gradient). Session 5 used 5 steps (~24%), which agreed with 11 to 2.5e-4 over 3,000
#: random flagship and DeepSeek designs, but near the prefill knee, where the M/D/1 wait has its
#: pole, Newton from a 24% bracket landed off the root: a fresh-clone trial found DeepSeek-R1
#: disaggregated (EP 16, 8k/1k) throughput swinging by up to 55% between neighbouring
#: concurrencies. With 11 and :data:`BOUND_BISECT_STEPS` = 8 the worst dip there is 0.24%
#: (design sweeps per second: 0.82M -> 0.39M, benchmarks/bench_cost_model.py).
BISECT_STEPS = 11

#: Layers of the reference model whose fixed prefill-pass and hand-off costs the knobs
#: ``prefill_overhead_s`` and ``handoff_overhead_s`` give (dense GQA layers, :data:`KERNELS_REF`
#: kernels each); another model's costs scale with its layers (and, for the pass, kernels per layer).
OVERHEAD_REF_LAYERS = 40.0

#: Bisection steps for the decode batch that carries a prefill-bound loop's capacity (log-space
#: bracket [1e-3·B/excess, B]: 8 steps leave a relative width of a few percent, the secant across
#: the bracket polishes it).
BOUND_BISECT_STEPS = 8

#: Highest prefill-station utilisation of the closed-loop solve (the M/D/1 wait is capped there
#: to keep the solve well conditioned). A loop whose decode side could go faster is prefill-bound:
#: its throughput is RHO_MAX/T_a and the other users queue for prefill (see ``sweep``).
RHO_MAX = 0.999

#: Prefill token budget of one engine pass (TensorRT-LLM ``max_num_tokens`` and SGLang
#: ``chunked_prefill_size`` default to 8192 on Hopper/Blackwell; vLLM's ``max_num_batched_tokens``
#: is 8192 in its serving benchmarks). Aggregated engines chunk prefills into decode iterations at
#: this budget (disaggregated prefill workers run larger passes: :data:`PREFILL_WORKER_TOKENS`).
CHUNK_TOKENS = 8192.0

#: Prefill token budget of one pass of a disaggregated prefill worker, per attention-DP replica.
#: The prefill workers of the InferenceMAX/InferenceX disaggregated recipes (srt-slurm
#: ``recipes/``) run larger passes than the aggregated default: TensorRT-LLM context servers
#: ``max_num_tokens`` 16640 (DeepSeek-R1 FP4 8k/1k on GB200, ``trtllm/gb200-fp4/8k1k/mtp/
#: ctx1_gen4_tep8_batch4_eplb0_mtp3.yaml``, ``max_batch_size`` 2 per rank) and 20000 (gpt-oss-120b
#: 1k/1k, ``trtllm/gptoss-fp4/1k1k/stp/ctx1_gen1_dep4_batch512_eplb0_mtp0.yaml``, batch 32); SGLang
#: prefill workers ``chunked-prefill-size`` 131072 over DP 8, 16384 per rank
#: (``gb200-fp8/8k1k/mid-curve.yaml``; SGLang's ``server_args`` divides ``chunked_prefill_size`` by
#: ``dp_size`` under DP attention). 16384 is the middle value. 3-seed holdout TTFT MAPE against
#: CHUNK_TOKENS, with the pass overhead in the capacity (see ``T_a``): GB200 40.5% -> 39.9%,
#: GB300 41.3% -> 37.9%, all systems 30.7% -> 30.1% (docs/baselines.md, session 15).
PREFILL_WORKER_TOKENS = 16384.0

#: Bytes per element of the linear-attention recurrent state: SGLang keeps it in float32 by
#: default (``--mamba-ssm-dtype``, docs/basic_usage/qwen3.md: "The default setting is float32"),
#: whatever the KV-cache format; the conv window stays in the activation dtype (bf16).
STATE_BYTES = 4.0
#: Bytes per cached DSA indexer-key element: FP8 plus one FP32 scale per 128 elements (DeepSeek-V3.2
#: ``Indexer.k_cache`` float8_e4m3fn and ``k_scale_cache`` float32 of head_dim // 128).
INDEXER_KEY_BYTES = 1.0 + 4.0 / 128.0
CONV_STATE_BYTES = 2.0

#: Spec key path -> parameter name of the design pytree. These are the keys a search may vary.
KEYMAP: dict[str, str] = {
    "chip.tdp": "tdp_w",
    "chip.peak_flops.bf16": "peak_bf16",
    "chip.peak_flops.fp8": "peak_fp8",
    "chip.peak_flops.fp6": "peak_fp6",
    "chip.peak_flops.fp4": "peak_fp4",
    "chip.peak_flops.int8": "peak_int8",
    "memory.hbm.capacity": "hbm_cap",
    "memory.hbm.bandwidth": "hbm_bw",
    "memory.sram.capacity": "sram_cap",
    "memory.sram.bandwidth": "sram_bw",
    "memory.host.capacity": "host_cap",
    "memory.host.bandwidth": "host_bw",
    "network.scaleup_bandwidth": "su_bw",
    "network.scaleup_latency": "su_lat",
    "network.scaleup_domain": "su_domain",
    "network.scaleout_bandwidth": "so_bw",
    "network.scaleout_latency": "so_lat",
    "deployment.tp": "tp",
    "deployment.pp": "pp",
    "deployment.ep": "ep",
    "deployment.dp_attention": "dp",
    "deployment.prefill.chips": "p_chips",
    "deployment.prefill.tp": "p_tp",
    "deployment.prefill.ep": "p_ep",
    "deployment.prefill.dp_attention": "p_dp",
    "deployment.decode.chips": "d_chips",
    "deployment.decode.tp": "d_tp",
    "deployment.decode.ep": "d_ep",
    "deployment.decode.dp_attention": "d_dp",
    "deployment.speculative_tokens": "spec_d",
    "deployment.acceptance_rate": "spec_a",
    "deployment.host_kv_cache": "host_kv",
    "deployment.multinode_tp": "multinode_tp",
    "deployment.max_batch_size": "max_batch",
    "deployment.scheduler_recv_interval": "recv_int",
    "deployment.attention_dp_balance_timeout_iters": "adp_timeout",
    # Workload lengths per design (the nominal L; with length_jitter the mean is L·(1 − jitter/2)).
    # Lets `codesign validate`/`calibrate` price many request shapes in one compiled call.
    "workload.isl": "isl_tokens",
    "workload.osl": "osl_tokens",
}

#: Prefix of efficiency knobs in the design pytree: ``p["eff_compute_decode"]`` etc. The knobs are
#: traced like any other parameter (``evaluate`` fills them from ``spec.efficiency``; overrides may
#: vary them as ``"efficiency.<knob>"``), so ``jax.grad`` reaches them and one compiled sweep serves
#: every calibration.
EFF_PREFIX = "eff_"

#: Format keys: searched as categorical names, turned into bytes per element (and a peak class).
FORMAT_KEYS = {
    "deployment.weights_format": "w_bytes",
    "deployment.moe_weights_format": "mw_bytes",
    "deployment.kv_cache_format": "kv_bytes",
    "deployment.activations_format": "a_bytes",
}

#: Categorical spec keys a search (or validate) may vary per design, by name: spec value →
#: parameter value.
#: ``network.scaleup_topology``: 0 switched, 1 full mesh (see :func:`_mesh_share`).
CATEGORICAL_KEYS: dict[str, tuple[str, dict[str, float]]] = {
    "network.scaleup_topology": ("su_mesh", {"switch": 0.0, "full_mesh": 1.0}),
}

CLASSES = ("bf16", "fp8", "fp6", "fp4", "int8")
_TINY = 1e-30


@attrs.frozen
class Static:
    """Everything that is fixed for a compiled sweep: model accounting, workload, mode."""

    mode: str
    layers: int
    n_moe_layers: int
    hidden: int
    heads: int
    kv_heads: int
    mla: bool
    experts: int
    k: int
    attn_params: float
    dense_params: float  # non-expert weights read every step besides attention (FFN, lm_head, router, norms)
    shared_params: float
    per_expert: float
    linear_flops_attn: float  # per token, attention projections
    linear_flops_rest: float  # per token, everything else (FFN/experts active, lm_head, router)
    kv_full: float
    kv_window: float
    window: float
    af_pre_full: float
    af_pre_win: float
    af_dec_full: float
    af_dec_win: float
    isl: float
    osl: float
    isl_max: float
    osl_max: float
    concurrency: tuple
    #: workload.length_jitter (needed when ISL/OSL come from the design pytree).
    jitter: float = 0.0
    #: mean kernels per layer relative to a dense GQA layer (:data:`KERNELS_ATTN`, ``KERNELS_FFN``)
    kernel_factor: float = 1.0
    #: input-embedding parameters resident beside the lm_head (0 when tied): held in memory, never
    #: read in bulk (a lookup reads one row per token), so not part of ``dense_params``
    embed_params: float = 0.0
    #: linear-attention (Gated DeltaNet) cache of one request [bytes], whatever the context: the
    #: recurrent state at :data:`STATE_BYTES` plus the conv window at :data:`CONV_STATE_BYTES`
    state_bytes: float = 0.0
    #: heads the linear-attention state splits over under TP (``linear_num_key_heads``)
    state_heads: int = 1
    #: FLOPs per token of the state update/read-out (recurrent form) and the chunked form's extra
    state_flops: float = 0.0
    state_chunk_flops: float = 0.0
    #: DeepSeek sparse attention: full layers attend at most ``topk`` positions (huge: all); the
    #: indexer caches ``idx_bytes`` per token (all layers) and scores every position with
    #: ``idx_flops`` FLOPs per query token, replicated on every TP rank (DeepSeek-V3.2's Indexer
    #: uses plain, not tensor-parallel, Linear layers)
    topk: float = 1e30
    idx_bytes: float = 0.0
    idx_flops: float = 0.0
    #: output projection FLOPs per token (2·vocab·hidden; part of ``linear_flops_rest``): a prefill
    #: computes it for the last position of each request only
    lm_head_flops: float = 0.0
    #: the spec's ``routing_skew`` knob, static unless the params carry it traced (``eff_routing_skew``:
    #: `codesign calibrate`, an ``efficiency.routing_skew`` override): see :data:`STATIC_KNOBS`
    routing_skew: float = 0.0


def _state_split(s: Static, tp):
    """TP ranks the linear-attention state is split over (whole key-head groups per rank)."""
    import jax.numpy as jnp

    return jnp.minimum(tp, s.state_heads)


def _knobs(p, eff):
    """Efficiency knobs: ``p["eff_<k>"]`` (traced) where present, else ``eff[k]``."""
    out = dict(eff)
    for k in list(DEFAULT_EFFICIENCY) + [k for k in eff if k not in DEFAULT_EFFICIENCY]:
        if EFF_PREFIX + k in p:
            out[k] = p[EFF_PREFIX + k]
    return out


#: Knobs a compiled sweep takes from :class:`Static` (the spec's value) rather than traced in the
#: params, unless an override or `codesign calibrate` puts them there: at a static value the cost
#: model picks a cheaper form (the closed form of uniform routing, or a table of a fixed skew; the
#: Zipf sum over every expert, traced, made a vmapped sweep of the flagship about 50x slower).
STATIC_KNOBS = ("routing_skew",)

#: Token counts of the table a static routing skew is read from (:func:`_expected_touched`):
#: 10^-3 (a decode batch's mean can be a fraction of a request) to 10^8, 64 per decade (a step of
#: 3.7%, where linear interpolation of log count in log tokens stays within 0.01% of the sum).
_TOUCHED_GRID = np.geomspace(1e-3, 1e8, 705)


def _static_skew(spec) -> float:
    """The spec's ``efficiency.routing_skew`` (default :data:`DEFAULT_EFFICIENCY`'s); a bad value
    is named by :meth:`AnalyticalModel.efficiency`, which every pricing calls."""
    v = spec.efficiency.get("routing_skew", DEFAULT_EFFICIENCY["routing_skew"])
    return float(v) if knob_problem("routing_skew", v) is None else DEFAULT_EFFICIENCY["routing_skew"]


def _expected_touched(E, k, tokens, skew=0.0):
    """Expected distinct experts that ``tokens`` tokens with top-``k`` routing touch among ``E``.

    Σ_i 1 − (1 − q_i)^tokens: each token routes to expert i with probability q_i = k·w_i, w_i ∝
    i^−skew (a Zipf law over the experts ranked by load; ``routing_skew``, DEFAULT_EFFICIENCY
    cites the measured imbalance), capped at 1 (the capped share is not given to other experts, so
    at a high skew with many routings per expert, k/E large, one token touches fewer than k). With ``skew`` 0 every q_i is k/E and the sum is
    E·(1 − (1 − k/E)^tokens), uniform routing. A skewed router sends the same tokens to fewer
    distinct experts, so a decode step reads fewer expert weights; at any skew one token touches k
    experts and a large batch all E. ``E`` and ``k`` are static; the shape follows ``tokens``.
    """
    import jax.numpy as jnp

    if isinstance(skew, (int, float)):  # static (the spec's knob): no sum over the experts traced
        if skew == 0:  # uniform routing: the closed form
            return E * (1.0 - jnp.power(1.0 - k / E, tokens))
        w = np.arange(1.0, E + 1.0) ** -float(skew)
        q = np.clip(k * w / w.sum(), 0.0, 1.0)
        table = np.sum(1.0 - (1.0 - q[None, :]) ** _TOUCHED_GRID[:, None], axis=1)
        t = jnp.asarray(tokens)
        lo = _TOUCHED_GRID[0]  # below the table, linearly from 0 (the sum's slope at 0)
        # log-log: the count is ∝ tokens below one token per expert, so exact there
        return jnp.where(t < lo, t * (table[0] / lo),
                         jnp.exp(jnp.interp(jnp.log(jnp.maximum(t, lo)), np.log(_TOUCHED_GRID), np.log(table))))
    w = jnp.power(jnp.arange(1.0, E + 1.0), -skew)
    q = jnp.clip(k * w / jnp.sum(w), 0.0, 1.0)
    return jnp.sum(1.0 - jnp.power(1.0 - q, jnp.asarray(tokens)[..., None]), axis=-1)


def _kv_elems(s: Static, ctx):
    """KV-cache elements of one request at context ``ctx`` [elements]; sliding layers capped."""
    import jax.numpy as jnp

    return s.kv_full * ctx + s.kv_window * jnp.minimum(ctx, s.window)


def _kv_read_elems(s: Static, ctx):
    """KV-cache elements one decode step reads per request at context ``ctx``: sliding layers
    capped at the window, sparse-attention layers at ``index_topk`` (the cache holds them all)."""
    import jax.numpy as jnp

    return s.kv_full * jnp.minimum(ctx, s.topk) + s.kv_window * jnp.minimum(ctx, s.window)


def _attn_flops(af_full, af_win, window, ctx, topk=1e30):
    import jax.numpy as jnp

    return af_full * jnp.minimum(ctx, topk) + af_win * jnp.minimum(ctx, window)


def _sum_min(n, w):
    """``Σ_{p=1..n} min(p, w)``: positions 1..w attend to themselves, later ones to exactly w."""
    import jax.numpy as jnp

    m = jnp.minimum(n, w)
    return m * (m + 1.0) / 2.0 + jnp.maximum(n - w, 0.0) * jnp.minimum(w, n)


def _prefill_attn_flops(af_full, af_win, window, isl, topk=1e30):
    """Causal attention FLOPs of a whole ISL-token prefill, summed over positions 1..ISL (full
    layers attend at most ``topk`` positions under sparse attention)."""
    return af_full * _sum_min(isl, topk) + af_win * _sum_min(isl, window)


def _mesh_share(p, g, out_of_domain=False):
    """Share of the per-chip scale-up bandwidth a collective over ``g`` chips gets: 1 on a switch;
    on a full mesh of D chips (``network.scaleup_topology = "full_mesh"``) each chip has one link
    per peer, so a group of g uses (g − 1)/(D − 1) of them (a point-to-point send: 1/(D − 1)).
    Beyond the domain (scale-out) the NIC bandwidth applies whole."""
    import jax.numpy as jnp

    share = jnp.clip((g - 1.0) / jnp.maximum(p["su_domain"] - 1.0, 1.0), 0.0, 1.0)
    return jnp.where((p["su_mesh"] > 0) & jnp.logical_not(out_of_domain), share, 1.0)


def _allreduce(n, size, bw, lat):
    """α–β all-reduce over ``n`` chips: α + 2(n−1)/n · size / β (zero when n == 1).

    No per-peer latency, unlike the all-to-all: the frameworks' custom all-reduce synchronises all
    peers at once, one thread per peer setting and polling its flag (NVIDIA/TensorRT-LLM
    ``cpp/tensorrt_llm/kernels/customAllReduceKernels.cu``, ``oneShotAllReduceKernel``: ``if (tidx
    < RANKS_PER_NODE)``; vLLM ``csrc/custom_all_reduce.cuh``, ``barrier_at_start``: ``if
    (threadIdx.x < ngpus)``; SGLang's ``trt_reduce`` kernels are TensorRT-LLM's). Measured: gpt-oss-120b
    batch-1 decode on GB200 at TP 8 and TP 4 has the same TPOT (1.87 and 1.90 ms,
    inferencemax_public.csv imx-03143 and imx-03041), where a per-peer term fitted on the
    all-to-alls priced TP 8 0.35 ms slower (session 36)."""
    import jax.numpy as jnp

    t = lat + 2.0 * (n - 1.0) / n * size / bw
    return jnp.where(n > 1.0, t, 0.0)


def _phase(p, s: Static, tokens, ctx, *, prefill: bool, tp, ep, dp, eff, reqs=1.0, q=1.0):
    """Time and traffic of one forward pass through ONE pipeline stage, per chip.

    Args:
        tokens: tokens processed by the whole stage group in this pass (decode: batch B; prefill:
            ``reqs`` · ISL, ``reqs`` requests of one attention replica batched in one pass).
        ctx: attended context per token (decode) or the ISL (prefill).
        reqs: prefill only: requests per attention replica batched in this pass (a prefill engine
            packs requests up to its token budget; the weights are then read once for all).
        q: decode only: query tokens per sequence in this step (1 + draft tokens when speculative
            decoding verifies drafts: FLOPs, routed tokens and activations scale by q, the KV cache
            is read once per sequence).

    Returns:
        dict of per-chip times [s] and byte/FLOP counts for this stage.
    """
    import jax.numpy as jnp

    pp = p["pp"]
    n = tp * dp  # chips per stage
    moe_tp = n / ep
    layers_stage = s.layers / pp
    moe_layers_stage = s.n_moe_layers / pp
    # --- bytes read from memory, per chip
    w_dense = (s.attn_params / tp + s.dense_params / tp) * p["w_bytes"] / pp
    skew = eff["routing_skew"] if EFF_PREFIX + "routing_skew" in p else s.routing_skew
    touched = _expected_touched(s.experts, s.k, tokens * q, skew) if s.experts else 0.0
    experts_shard = touched / ep
    w_expert = (moe_layers_stage * experts_shard * s.per_expert / moe_tp
                + s.shared_params / n / pp) * p["mw_bytes"]
    kv_split = 1.0 if s.mla else jnp.minimum(tp, s.kv_heads)
    reqs_per_replica = tokens / dp if not prefill else 1.0
    # linear attention: the fixed-size state is read and written back every decode step; sparse
    # attention reads its top-k KV entries plus every indexer key
    state = s.state_bytes / _state_split(s, tp) / pp
    kv_read = reqs_per_replica * ((_kv_read_elems(s, ctx) * p["kv_bytes"] / kv_split + s.idx_bytes * ctx) / pp
                                  + 2.0 * state)
    if prefill:
        kv_read = reqs * ((_kv_elems(s, ctx) * p["kv_bytes"] / kv_split + s.idx_bytes * ctx) / pp
                          + state)  # written once
    # --- FLOPs per chip
    # per token: expert GEMMs (shared + k routed) and the rest (dense FFN layers, lm_head, router)
    moe_fl_tok = 2.0 * (s.shared_params + s.k * s.per_expert * s.n_moe_layers) if s.experts else 0.0
    dense_fl_tok = max(s.linear_flops_rest - moe_fl_tok, 0.0)
    if prefill:
        attn_fl = reqs * ((_prefill_attn_flops(s.af_pre_full, s.af_pre_win, s.window, ctx, s.topk)
                           + ctx * (s.state_flops + s.state_chunk_flops)) / tp
                          + s.idx_flops * ctx * (ctx + 1.0) / 2.0) / pp
        # one request per attention replica runs at once (dp requests): its attention on tp chips,
        # the dp·tokens of FFN/expert work spread over all n = tp·dp chips of the stage
        lin_attn = tokens * s.linear_flops_attn / tp / pp
        rest_tokens = dp * tokens / n / pp
    else:
        attn_fl = (q * reqs_per_replica * ((_attn_flops(s.af_dec_full, s.af_dec_win, s.window, ctx, s.topk)
                                            + s.state_flops) / tp + s.idx_flops * ctx) / pp)
        lin_attn = q * tokens * s.linear_flops_attn / n / pp
        rest_tokens = q * tokens / n / pp
    lin_dense = rest_tokens * dense_fl_tok
    if prefill:
        # the lm_head runs on each request's last position only: the engines gather the last
        # hidden state of a prompt before the output projection (TensorRT-LLM gather_context_logits
        # off by default; vLLM and SGLang compute prompt logits only when asked for logprobs). Per
        # request, not per token: 11% of gpt-oss-120b's prefill FLOPs at 1k tokens, 2.5% of
        # DeepSeek-R1's
        lin_dense = (rest_tokens * (dense_fl_tok - s.lm_head_flops)
                     + dp * reqs / n / pp * s.lm_head_flops)
    lin_moe = rest_tokens * moe_fl_tok
    flops = attn_fl + lin_attn + lin_dense + lin_moe
    # each GEMM runs at the tensor-core rate of its slower operand (weights or activations): a
    # BF16 attention projection does not run at the FP4 rate of the experts beside it; attention
    # scores run at the KV cache format's MMA rate, at most FP8 (peaks set per design by
    # `AnalyticalModel.arrays`)
    frac = eff["compute_prefill"] if prefill else eff["compute_decode"]
    pk_w = p["peak_w"]
    pk_mw = p["peak_mw"] if s.experts else pk_w
    pk_attn = p["peak_attn"]
    # per weight-format GEMM rate (p["w_is_<family>"] one-hot, see AnalyticalModel.arrays)
    sc_w = 1.0 + sum(p[f"w_is_{f}"] * (eff[f"compute_scale_{f}"] - 1.0) for f in SCALE_FAMILIES)
    sc_mw = 1.0 + sum(p[f"mw_is_{f}"] * (eff[f"compute_scale_{f}"] - 1.0) for f in SCALE_FAMILIES)
    if not s.experts:
        sc_mw = sc_w
    # an achievable fraction never exceeds the peak: frac·scale is capped at 1
    c_attn = attn_fl / (pk_attn * frac)
    c_dense = (lin_attn + lin_dense) / (pk_w * jnp.minimum(frac * sc_w, 1.0))
    c_moe = lin_moe / (pk_mw * jnp.minimum(frac * sc_mw, 1.0))
    t_compute = c_attn + c_dense + c_moe
    # --- memory tiers: weights in HBM (a share in spare SRAM), KV fills SRAM, HBM, host
    w_resident = p["w_resident"]
    kv_res = p["kv_resident"]  # KV resident per chip at this batch (set by caller)
    # (the HBM holds the engine's share of what the weights leave; the host tier only takes KV when
    # the deployment lets it, deployment.host_kv_cache — otherwise the batch is capped to fit)
    kv_sram = jnp.minimum(kv_res, p["sram_cap"])
    kv_host = jnp.maximum(kv_res - kv_sram - _hbm_kv(p, w_resident, eff), 0.0) * p["host_kv"]
    kv_hbm = kv_res - kv_sram - kv_host
    kv_tot = jnp.maximum(kv_res, _TINY)
    f_sram, f_hbm, f_host = kv_sram / kv_tot, kv_hbm / kv_tot, kv_host / kv_tot
    f_host = jnp.where(kv_res > 0, f_host, 0.0)
    f_hbm = jnp.where(kv_res > 0, f_hbm, 1.0)
    w_sram_share = jnp.clip((p["sram_cap"] - kv_sram) / jnp.maximum(w_resident, _TINY), 0.0, 1.0)
    w_read = w_dense + w_expert
    eta = eff["memory_bandwidth"]
    bytes_hbm = w_read * (1.0 - w_sram_share) + kv_read * f_hbm
    bytes_sram = w_read * w_sram_share + kv_read * f_sram
    bytes_host = kv_read * f_host
    s_hbm = 1.0 / (p["hbm_bw"] * eta)  # seconds per byte of each tier
    s_sram = 1.0 / (jnp.maximum(p["sram_bw"], _TINY) * eta)
    s_host = 1.0 / (jnp.maximum(p["host_bw"], _TINY) * eta)
    s_w = (1.0 - w_sram_share) * s_hbm + w_sram_share * s_sram  # per weight byte
    m_attn = kv_read * (f_hbm * s_hbm + f_sram * s_sram + f_host * s_host)
    m_dense = w_dense * s_w
    m_moe = w_expert * s_w
    t_mem = m_attn + m_dense + m_moe
    # --- collectives (α–β), within the scale-up domain or over scale-out beyond it
    out_of_domain = n > p["su_domain"]
    bw = jnp.where(out_of_domain, p["so_bw"], p["su_bw"]) * eff["network_bandwidth"]

    def bw_group(g):
        """Bandwidth of a collective over ``g`` chips: a full mesh gives it g − 1 of its D − 1 links."""
        return bw * _mesh_share(p, g, out_of_domain)

    # α of one collective: the link hop plus the software cost of a collective kernel (launch,
    # barrier/flag sync), `collective_latency_s`
    lat = jnp.where(out_of_domain, p["so_lat"], p["su_lat"]) + eff["collective_latency_s"]
    peer = eff["collective_peer_latency_s"]  # per peer of an all-to-all's group beyond the first
    D = p["su_domain"]

    def allreduce(g, size):
        """All-reduce over a TP (or MoE-TP) group of ``g`` chips. A group spanning m = g/D scale-up
        domains (multi-node TP, ``deployment.multinode_tp``) runs hierarchically, as NCCL's
        all-reduce does across nodes: reduce-scatter and all-gather over the D chips of each domain
        on its links, and an all-reduce of each chip's 1/D shard across the m domains over
        scale-out (a flat ring at NIC speed would send every byte over scale-out)."""
        t_in = _allreduce(jnp.minimum(g, D), size, p["su_bw"] * eff["network_bandwidth"],
                          p["su_lat"] + eff["collective_latency_s"])
        t_out = _allreduce(g / D, size / D, p["so_bw"] * eff["network_bandwidth"],
                           p["so_lat"] + eff["collective_latency_s"])
        return jnp.where(g > D, t_in + t_out, _allreduce(g, size, bw_group(g), lat))

    tokens_replica = q * tokens / dp if not prefill else tokens
    act = tokens_replica * s.hidden * p["a_bytes"]
    dense_ffn_layers = layers_stage - moe_layers_stage
    t_ar_attn = layers_stage * allreduce(tp, act)
    t_ar_ffn = dense_ffn_layers * allreduce(tp, act)
    # MoE: all-to-all dispatch + combine across EP shards; all-reduce across MoE-TP ranks
    tokens_chip = q * tokens / n if not prefill else tokens / tp
    a2a_bytes = tokens_chip * s.k * s.hidden * p["a_bytes"] * (ep - 1.0) / ep
    t_a2a = jnp.where(ep > 1.0, 2.0 * (lat + (ep - 1.0) * peer + a2a_bytes / bw_group(ep)), 0.0) * moe_layers_stage
    t_ar_moe = moe_layers_stage * allreduce(moe_tp, act)
    t_comm = t_ar_attn + t_ar_ffn + t_a2a + t_ar_moe
    link_bytes = t_comm * bw  # bytes on links ≈ collective time × bandwidth (α time included: an upper bound)
    t_overhead = layers_stage * s.kernel_factor * eff["layer_overhead_s"]
    # roofline per operator, not per pass: attention (KV-cache reads), the dense GEMMs (attention
    # projections, dense FFN, lm_head) and the expert GEMMs are separate kernels that run one after
    # another, each at the max of its own compute and memory time. A single max over the whole pass
    # let a large decode batch hide the KV reads of attention under the experts' compute; per-op
    # rooflines are how GenZ (Bambhaniya et al., arXiv:2406.01698) and LLMCompass (Zhang et al.,
    # ISCA 2024) price a layer
    t = (jnp.maximum(c_attn, m_attn) + jnp.maximum(c_dense, m_dense) + jnp.maximum(c_moe, m_moe)
         + t_comm + t_overhead)
    return {
        "t": t, "t_compute": t_compute, "t_mem": t_mem, "t_comm": t_comm,
        "flops": flops, "bytes_hbm": bytes_hbm, "bytes_sram": bytes_sram, "bytes_host": bytes_host,
        "link_bytes": link_bytes,
    }


def _resident(p, s: Static, tp, ep, dp, reqs_per_replica, ctx_max):
    """Weights and KV resident per chip [B] for an instance of tp·dp chips per stage."""
    import jax.numpy as jnp

    pp = p["pp"]
    n = tp * dp
    # EP ranks hold ceil(E/ep) expert slots each: when ep does not divide E, the frameworks fill the
    # spare slots with redundant copies of hot experts (SGLang --ep-num-redundant-experts, TensorRT-LLM
    # MoE load balancer; e.g. DeepSeek-R1's 256 experts on EP 48: 288 slots, 6 per GPU)
    slots = jnp.ceil(s.experts / ep - 1e-6) if s.experts else 0.0
    w = ((s.attn_params + s.dense_params + s.embed_params) / tp * p["w_bytes"]
         + (s.n_moe_layers * slots * s.per_expert / (n / ep) + s.shared_params / n) * p["mw_bytes"]) / pp
    kv_split = 1.0 if s.mla else jnp.minimum(tp, s.kv_heads)
    kv_req = (_kv_elems(s, ctx_max) * p["kv_bytes"] / kv_split + s.idx_bytes * ctx_max
              + s.state_bytes / _state_split(s, tp)) / pp
    return w, kv_req * reqs_per_replica, kv_req


def _hbm_kv(p, w_resident, eff):
    """HBM per chip [B] the engine gives the KV cache: ``kv_memory_fraction`` of what the weights leave."""
    import jax.numpy as jnp

    return jnp.maximum(p["hbm_cap"] - w_resident, 0.0) * jnp.clip(eff["kv_memory_fraction"], 0.0, 1.0)


def _adp_balance_wait(X, t_iter, K, timeout_iters):
    """Mean wait [s] of a context request under TensorRT-LLM's attention-DP balance, aggregated serving.

    TensorRT-LLM (``attention_dp_config``: ``enable_balance: true``, ``batching_wait_iters: 0``,
    ``timeout_iters`` N; ``PyExecutor._balance_adp_requests``) schedules context requests only in an
    iteration where every one of the K attention-DP ranks holds one (and a free batch slot), or once
    N iterations have passed since the last release; the iteration counter runs whether or not a
    request waits. A request that arrives at a rank whose other users decode (``busy`` in the
    caller; a rank without one releases at once) therefore waits, in cycles of T = N·t_iter, a
    fraction w of T that depends on the requests each rank receives per cycle, ρ = X·T/K:

    * light load, ρ → 0: the counter's phase is uniform, w = 1/2;
    * a rank's requests beyond the one released per cycle queue (one context request per rank per
      iteration at InferenceMAX's ``max_num_tokens`` = ISL + C + 64): the slotted-queue wait
      ρ/(2(1 − ρ)) (capped at ρ = 0.9), scaled by 1 − 2/K because a release where every rank holds
      a request serves them sooner, which for K = 2 happens about as often as the timeout;
    * heavy load, ρ ≫ 1: releases come when all K ranks hold a request, about H_K/ρ of a cycle
      after the last (the longest of K waits for an arrival; H_K the K-th harmonic number).

    w = 1/(1/w_low + ρ/H_K) joins the two regimes. Source: a discrete-event simulation of that
    rule in a closed loop (``tests/adp_balance_sim.py``), which the closed form follows within
    about 30% over K = 2-32 and ρ = 0.04-8 (``tests/test_physics.py``); InferenceMAX's B200 and
    H200 aggregated TensorRT-LLM DeepSeek-R1 rows with attention DP measure 0.3-0.95 T above the
    model without it (docs/baselines.md, session 38).

    Args:
        X: requests per second into the engine. t_iter: iteration time [s]. K: attention-DP ranks.
        timeout_iters: N; 0 (balance off) or K = 1 give no wait.
    """
    import jax.numpy as jnp

    on = (timeout_iters > 0.0) & (K > 1.0)
    K_ = jnp.maximum(K, 2.0)
    T = timeout_iters * t_iter
    rho = X * T / K_
    rho_c = jnp.minimum(rho, 0.9)
    w_low = 0.5 + (1.0 - 2.0 / K_) * rho_c / (2.0 * (1.0 - rho_c))
    h_k = jnp.log(K_) + 0.5772156649 + 1.0 / (2.0 * K_) - 1.0 / (12.0 * K_ ** 2)  # harmonic number H_K
    w = 1.0 / (1.0 / w_low + rho / h_k)
    return jnp.where(on, w * T, 0.0)


def sweep(p: Mapping[str, Any], s: Static, eff: Mapping[str, float]) -> dict:
    """Every metric of one design over the concurrency sweep.

    Args:
        p: the design pytree: scalars in SI units, keys of :data:`PARAMS` (shape ``()``; under
            ``vmap`` each leaf has shape ``(n_designs,)``). Optional keys, all traced: ``eff_<knob>``
            (an efficiency knob, overriding ``eff``), ``isl_tokens``/``osl_tokens`` (nominal lengths
            overriding the workload's; the mean is ``L·(1 − s.jitter/2)``) and ``concurrency`` (one
            concurrency instead of the workload's sweep: point metrics then have shape ``(1,)``).
        s: static model/workload description (:class:`Static`).
        eff: achievable fractions and overheads (:data:`DEFAULT_EFFICIENCY` keys).

    Returns:
        dict of arrays: point metrics with shape ``(c,)`` and design metrics with shape ``()``.
    """
    import jax
    import jax.numpy as jnp

    eff = _knobs(p, eff)
    # concurrency: the workload's sweep, or one per design (p["concurrency"], used by calibrate)
    if "concurrency" in p:
        C = jnp.reshape(jnp.asarray(p["concurrency"], dtype=jnp.float32), (1,))
    else:
        C = jnp.asarray(s.concurrency, dtype=jnp.float32)
    isl_max = p["isl_tokens"] if "isl_tokens" in p else s.isl_max
    osl_max = p["osl_tokens"] if "osl_tokens" in p else s.osl_max
    isl = isl_max * (1.0 - s.jitter / 2.0) if "isl_tokens" in p else s.isl
    osl = osl_max * (1.0 - s.jitter / 2.0) if "osl_tokens" in p else s.osl
    disagg = s.mode == "disaggregated"
    ctx_max = isl_max + osl_max
    ctx_dec = isl + osl / 2.0  # mean attended context during decode
    if disagg:
        tp_d, ep_d, dp_d = p["d_tp"], p["d_ep"], p["d_dp"]
        tp_p, ep_p, dp_p = p["p_tp"], p["p_ep"], p["p_dp"]
        inst_d = p["d_chips"] / (tp_d * dp_d * p["pp"])
        inst_p = p["p_chips"] / (tp_p * dp_p * p["pp"])
        chips = p["d_chips"] + p["p_chips"]
        # a pool is whole instances of tp × dp_attention × pp chips
        pools_ok = ((jnp.mod(p["d_chips"], tp_d * dp_d * p["pp"]) == 0) & (inst_d >= 1.0)
                    & (jnp.mod(p["p_chips"], tp_p * dp_p * p["pp"]) == 0) & (inst_p >= 1.0))
    else:
        tp_d, ep_d, dp_d = p["tp"], p["ep"], p["dp"]
        tp_p, ep_p, dp_p = tp_d, ep_d, dp_d
        inst_d = 1.0
        inst_p = 1.0
        chips = tp_d * dp_d * p["pp"]
        pools_ok = True
    pp = p["pp"]
    bw_pp = p["su_bw"] * eff["network_bandwidth"] * _mesh_share(p, 2.0)  # one link between stages

    # --- capacity: the KV of every running request at its longest context, in the SRAM, the
    # engine's share of the HBM left after the weights and (with deployment.host_kv_cache) the
    # host tier. Requests beyond it wait for admission (engines queue them; TPOT stays at the
    # capped batch's and TTFT grows by Little's law)
    w_res_d, _, kv_req_d = _resident(p, s, tp_d, ep_d, dp_d, 1.0, ctx_max)
    w_res_p, _, kv_req_p = _resident(p, s, tp_p, ep_p, dp_p, 1.0, isl_max)
    kv_cap_chip = p["sram_cap"] + _hbm_kv(p, w_res_d, eff) + p["host_cap"] * p["host_kv"]
    reqs_chip = kv_cap_chip / jnp.maximum(kv_req_d, _TINY)
    slots = reqs_chip * dp_d * inst_d  # continuous, for the batch cap (carries the gradient)
    # users the decode side holds at once: KV slots, and the engine's batch limit where set
    max_conc = jnp.minimum(jnp.floor(reqs_chip) * dp_d, p["max_batch"]) * inst_d
    weights_fit = (w_res_d <= p["hbm_cap"] + p["sram_cap"]) & (w_res_p <= p["hbm_cap"] + p["sram_cap"])

    # speculative decoding: d draft tokens per step (one MTP/EAGLE layer each), verified in one pass
    # of q = 1 + d tokens per sequence; a step yields 1 + a + … + a^d tokens (a: acceptance)
    spec_d, spec_a = p["spec_d"], p["spec_a"]  # spec_a NaN: the deployment leaves it to the knob
    alpha = jnp.clip(jnp.where(jnp.isnan(spec_a), eff["spec_acceptance"], spec_a), 0.0, 0.999)
    tok_step = (1.0 - alpha ** (spec_d + 1.0)) / (1.0 - alpha)

    def decode_step(B):
        """Decode step of an instance holding ``B`` requests (microbatch B/pp through pp stages)."""
        pd = dict(p, w_resident=w_res_d, kv_resident=kv_req_d * B / dp_d)
        dec = _phase(pd, s, B / pp, ctx_dec, prefill=False, tp=tp_d, ep=ep_d, dp=dp_d, eff=eff,
                     q=1.0 + spec_d)
        t_p2p = (pp - 1.0) * (p["su_lat"] + B / pp * s.hidden * p["a_bytes"] / bw_pp)
        # drafting: one layer-equivalent pass per draft token (DeepSeek-V3's MTP module is one
        # transformer block; EAGLE heads likewise)
        t_draft = spec_d * pp * dec["t"] / s.layers
        # per-step CPU work (scheduling, sampling, detokenising) grows with the sequences of a rank
        t = (pp * dec["t"] + t_p2p + t_draft + eff["step_overhead_s"]
             + eff["seq_overhead_s"] * B / dp_d)
        return t, dec, t_p2p

    # --- prefill passes: one request (latency), and a full token budget (capacity)
    pp_ = dict(p, w_resident=w_res_p, kv_resident=0.0 * kv_req_p)
    budget = PREFILL_WORKER_TOKENS if disagg else CHUNK_TOKENS
    b_max = jnp.maximum(budget / isl, 1.0)  # requests per replica packed in one pass
    pre = _phase(pp_, s, isl, isl, prefill=True, tp=tp_p, ep=ep_p, dp=dp_p, eff=eff)
    pre_b = _phase(pp_, s, isl * b_max, isl, prefill=True, tp=tp_p, ep=ep_p, dp=dp_p, eff=eff,
                   reqs=b_max)
    t_p2p_pre = (pp - 1.0) * (p["su_lat"] + isl * s.hidden * p["a_bytes"] / bw_pp)
    T_1 = pp * pre["t"] + t_p2p_pre  # one request alone through all stages
    T_b = pp * pre_b["t"] + (pp - 1.0) * (p["su_lat"] + b_max * isl * s.hidden * p["a_bytes"] / bw_pp)
    # fixed costs scale with the model: a prefill pass runs eagerly (no CUDA graph), so its
    # launch/host cost grows with the kernels it launches (layers × kernels per layer); the
    # disaggregated hand-off registers and sends KV blocks layer by layer. Both knobs are the cost
    # for a reference model of OVERHEAD_REF_LAYERS dense GQA layers (3-seed holdout with the
    # scaling, against flat costs: TTFT MAPE GB200 49.8% -> 42.1%, all systems 38.3% -> 34.8%)
    pass_scale = s.layers * s.kernel_factor / OVERHEAD_REF_LAYERS
    handoff_scale = s.layers / OVERHEAD_REF_LAYERS
    t_pass = eff["prefill_overhead_s"] * pass_scale
    T_p = T_1 + t_pass
    # prefill time the serving pool spends per request at full batching (1 / capacity). A prefill
    # worker's pass pays its fixed cost serially (the recipes' TensorRT-LLM context servers run
    # disable_overlap_scheduler: true, SGLang prefill workers disable-cuda-graph), so it is in the
    # capacity, shared by the b_max requests of a full pass; in an aggregated engine prefill chunks
    # ride in decode iterations and the fixed cost is latency only. (In the capacity of both, at
    # the 8192-token budget: 1-seed holdout GB200 TTFT 45.3% -> 77.0%, gpt-oss-120b 1k/1k prefill
    # workers put past their knee; at PREFILL_WORKER_TOKENS and disaggregated only: see there.)
    T_a = (T_b + (t_pass if disagg else 0.0)) / (b_max * dp_p * inst_p)

    if disagg:
        # KV transfer prefill -> decode pool: within the domain when both pools fit in it
        in_domain = chips <= p["su_domain"]
        kv_bytes_req = kv_req_p * pp * jnp.minimum(tp_p, 1.0 if s.mla else s.kv_heads)
        link_bw = jnp.where(in_domain, p["su_bw"], p["so_bw"]) * eff["network_bandwidth"]
        link_lat = jnp.where(in_domain, p["su_lat"], p["so_lat"])
        T_kv = link_lat + kv_bytes_req / (link_bw * tp_p * dp_p) + eff["handoff_overhead_s"] * handoff_scale
    else:
        T_kv = 0.0

    recv_int = p["recv_int"]
    wait_steps = jnp.where(jnp.isnan(recv_int), eff["admission_wait_steps"],
                           (jnp.maximum(jnp.nan_to_num(recv_int, nan=1.0), 1.0) - 1.0) / 2.0)

    def loop(B):
        """Closed loop at decode batch ``B`` per decode instance (mean-value analysis).

        Returns throughput X [req/s], TPOT, prefill residence R (queue + own prefill), the
        residual g = X·(R + D) − C of Little's law over the whole loop (zero at the solution) and
        the service part S of R (own prefill, hand-off, admission; aggregated without the
        queue; disaggregated R = S, the wait for the pass in flight included).
        """
        t_iter, _, _ = decode_step(B)
        # decode-side throughput at this batch: each iteration yields tok_step tokens per sequence
        a = inst_d * B * tok_step / ((osl - 1.0) * t_iter)
        # receive wait: an engine that is decoding picks up new requests only every so many iterations, so a
        # request arriving at a busy engine waits some iterations beyond the running one; an idle engine
        # receives at once. With --scheduler-recv-interval R (SGLang's SchedulerRecvSkipper) that is (R − 1)/2
        # on average. The skipper asserts not enable_dp_attention (SGLang 0.5.5.post2 to 0.5.8.post1;
        # InferenceX's recipes set R = 10 only on TP low-latency workers), so under attention DP the calibrated
        # admission_wait_steps stands for the waits of the hand-off loops on a busy scheduler, not for a receive
        # interval (docs/baselines.md, session 20). Under attention DP every DP rank runs its own scheduler
        # (SGLang: one Scheduler process per DP rank behind the data-parallel controller; TensorRT-LLM: one
        # executor per rank), which receives the requests routed to it: busy means one of the other users of
        # that rank is decoding (Poisson, mean B/dp·(C − 1)/C: in a closed loop the arriving user's own slot is
        # empty). Per rank rather than per instance: 3-seed holdout TTFT MAPE GB200 48.6% -> 41.3%, all systems
        # 32.4% -> 31.4% (docs/baselines.md, session 10)
        busy = 1.0 - jnp.exp(-B / dp_d * (C - 1.0) / jnp.maximum(C, 1.0))
        recv_wait = busy * wait_steps
        if disagg:
            # the hand-off loops of a busy decode worker (handoff_wait_steps, DEFAULT_EFFICIENCY); none
            # measured with speculative decoding
            recv_wait = recv_wait + busy * jnp.where(spec_d > 0, 0.0, eff["handoff_wait_steps"])
            X = a
            tpot = t_iter / tok_step
            # the decode worker receives the request (after the receive wait), pre-allocates its KV
            # and only then lets the prefill run (SGLang's bootstrap handshake), then the KV
            # hand-off, and the decode worker admits it at its next iteration boundary (mean
            # residual of a running iteration: half of one)
            # a prefill worker packs every request that queued during its running pass into its next
            # one (gated batch service, up to the token budget): at utilisation rho a request waits
            # for the pass in flight (rho * T_own / 2) and its own pass holds the rho share of the
            # others' work, T_own = T_p / (1 - rho), at most a full budget's pass. Capped at RHO_MAX
            # to keep the solve well conditioned; a prefill-bound loop is corrected after the solve
            rho = jnp.minimum(X * T_a, RHO_MAX)
            T_own = jnp.clip(T_p / (1.0 - rho), T_p, jnp.maximum(T_b + T_p - T_1, T_p))
            S = T_own + rho * T_own / 2.0 + T_kv + (0.5 + recv_wait) * t_iter
            R = S
        else:
            # chunked prefill rides in the decode iterations: the share u = X·T_a of engine time
            # goes to prefill tokens, stretching every iteration by 1/(1 − u) (X = a·(1 − u))
            X = a / (1.0 + a * T_a)
            t_mixed = t_iter / jnp.maximum(1.0 - X * T_a, 1e-3)
            tpot = t_mixed / tok_step
            # own prefill: wait to be received and for the running iteration, then ISL/budget mixed
            # iterations
            S = (T_p + (0.5 + recv_wait + isl / CHUNK_TOKENS) * t_mixed
                 + busy * _adp_balance_wait(X, t_mixed, dp_d, p["adp_timeout"]))
            # steady-state wait at the prefill station (rate 1/T_a when it packs full token
            # budgets): M/D/1 for desynchronised arrivals, rho/(2(1 - rho))·T_a. The start-up wave
            # is a transient added after the solve (below), not part of the steady state. Capped
            # at RHO_MAX as above
            rho = jnp.minimum(X * T_a, RHO_MAX)
            R = S + rho / (2.0 * (1.0 - rho)) * T_a
        g = X * (R + (osl - 1.0) * tpot) - C
        return X, tpot, R, g, S

    # solve g(B) = 0 for the decode batch (g increases with B): bisection in log space without
    # gradient, then one Newton step carrying the implicit-function gradient dB/dθ = −g_θ/g_B
    # the batch is capped by the KV slots and the engine's batch limit (deployment.max_batch_size,
    # per decode instance); above them the excess users wait for admission
    B_cap = jnp.maximum(jnp.minimum(jnp.minimum(C, slots) / inst_d, p["max_batch"]), 1e-3)
    B_hi = jax.lax.stop_gradient(B_cap)
    B_lo = jnp.minimum(1e-3 * jnp.maximum(C / inst_d, 1.0), B_hi)  # at least 0.1% of the users decode

    def bisect(_, lohi):
        lo, hi = lohi
        mid = jnp.sqrt(lo * hi)
        neg = loop(mid)[3] < 0
        return jnp.where(neg, mid, lo), jnp.where(neg, hi, mid)

    lo, hi = jax.lax.fori_loop(0, BISECT_STEPS, bisect,
                               (jax.lax.stop_gradient(B_lo), jax.lax.stop_gradient(B_hi)))
    # one safeguarded Newton step polishes the bracket's midpoint (quadratic convergence: the
    # bracket's relative width shrinks to about its square), kept inside [lo, hi]
    Bm = jax.lax.stop_gradient(jnp.sqrt(lo * hi))
    gm, dgm = jax.jvp(lambda b: loop(b)[3], (Bm,), (jnp.ones_like(Bm),))
    B0 = jax.lax.stop_gradient(jnp.clip(Bm - gm / jnp.where(dgm > 0, dgm, jnp.inf), lo, hi))
    g0, dg = jax.jvp(lambda b: loop(b)[3], (B0,), (jnp.ones_like(B0),))
    interior = (B0 < 0.999 * jax.lax.stop_gradient(B_hi))
    step = jnp.where(interior, g0 / jnp.where(jnp.abs(dg) > 0, dg, 1.0), 0.0)
    # a full second Newton step: its value squares the error left by the polish, and at the root its
    # derivative is the implicit-function gradient dB/dθ = −g_θ/g_B (the g·g_Bθ/g_B² term vanishes)
    B = jnp.clip(B0 - step, jax.lax.stop_gradient(lo), jax.lax.stop_gradient(hi))
    # at the cap (KV slots or C) the batch is the cap itself, carrying its gradient (e.g. in
    # kv_memory_fraction or HBM capacity)
    B = jnp.where(interior, B, B_cap)
    X, TPOT, R_p, _, _ = loop(B)
    # prefill-bound: the decode side at B would run faster than the prefill pool's capacity 1/T_a,
    # which no queue can sustain. The throughput is then the capacity X* = RHO_MAX/T_a, the decode
    # batch the one that carries it, and the remaining users wait for prefill (Little's law below).
    # That batch solves X(B) = X* (X rises with B): bisection in log space on [1e-3·B/excess, B]
    # without gradient, then a secant in (1/B, 1/X) across the final bracket carrying it (with a
    # step time affine in B, 1/X is affine in 1/B: disaggregated X = B/t(B)·k, aggregated
    # 1/X = 1/a + T_a). One secant from B alone undershot by up to 17% of X* where t_step falls
    # steeply with B (DeepSeek-R1 disaggregated on EP 16: throughput then swung with concurrency).
    X_star = RHO_MAX / T_a
    excess = X * T_a / RHO_MAX
    bound = excess > 1.0
    B1 = jnp.where(bound, B / jnp.maximum(excess, 1.0), B)

    def bisect_x(_, lohi):
        lo_, hi_ = lohi
        mid = jnp.sqrt(lo_ * hi_)
        low = loop(mid)[0] < X_star
        return jnp.where(low, mid, lo_), jnp.where(low, hi_, mid)

    blo, bhi = jax.lax.fori_loop(0, BOUND_BISECT_STEPS, bisect_x,
                                 (jax.lax.stop_gradient(1e-3 * jnp.minimum(B1, B)), jax.lax.stop_gradient(B)))
    Xlo, Xhi = loop(blo)[0], loop(bhi)[0]
    u0, v0, u1, v1 = 1.0 / bhi, 1.0 / jnp.maximum(Xhi, _TINY), 1.0 / blo, 1.0 / jnp.maximum(Xlo, _TINY)
    dv = v1 - v0
    # (double where: an unbound loop's bracket collapses onto B, and a secant through two equal
    # points would put inf·0 = NaN into every gradient even on the branch not taken)
    use = bound & (jnp.abs(dv) > 1e-6 * jnp.abs(v0))
    dv_safe = jnp.where(use, dv, 1.0)
    u_star = jnp.where(use, u0 + (1.0 / X_star - v0) * (u1 - u0) / dv_safe, u1)
    B_star = jnp.clip(1.0 / jnp.maximum(u_star, _TINY), jax.lax.stop_gradient(blo), jax.lax.stop_gradient(bhi))
    B = jnp.where(bound, B_star, B)
    X_b, TPOT, R_p, _, S_p = loop(B)
    X = jnp.minimum(X_b, X_star)
    B = B * X / jnp.maximum(X_b, _TINY)  # the last fraction of a percent the secant leaves
    D = (osl - 1.0) * TPOT
    # Little's law over the loop: C users cycle through (queue + prefill + KV) and decode; when the
    # batch is capped by the KV slots or by the prefill capacity, the excess users wait
    # (C/X − D > R_p). Prefill-bound, Little's law is the whole queue: the floor is the service S
    # alone (R_p's M/D/1 wait at the solve's cap RHO_MAX, 500·T_a, is no queue length: it pinned
    # TTFT at one value whatever the concurrency). An interior solution satisfies Little's law,
    # R_p = C/X − D, up to the solve's residual; within a fraction of a percent of the prefill
    # capacity the M/D/1 wait's pole makes R_p swing with that residual (a 0.3% bracket on B spans
    # ρ = 0.99 … 0.999) while X and D, smooth in B, stay put: there C/X − D is the queue, floored
    # at the service S (DeepSeek-R1 on 8 + 16 GB200s at C = 300-550: R_p jumped 1-2 s between
    # neighbouring concurrencies and throughput by up to 7%). A batch at its cap, or at the
    # bracket's floor, keeps R_p as the floor
    solved = interior & ~bound & (B > 1.001 * jax.lax.stop_gradient(B_lo))
    TTFT = jnp.maximum(C / X - D, jnp.where(bound | solved, S_p, R_p))
    # start-up wave, a transient outside the steady state: the benchmark client starts all C users
    # at once, so the first C requests queue together at the prefill station and wait
    # (C − 1)/2·T_a on average (FCFS at T_a each) instead of the steady wait. Mean TTFT over a run
    # of N requests mixes the two with weight φ = C/N on the wave: InferenceMAX sends N = 10·C
    # (../shared/data/README.md: "10×conc requests per run"), so φ = 0.1 there; φ is
    # `burst_fraction`, refitted per framework by `codesign calibrate`. Measured InferenceMAX rows
    # show it: gpt-oss-120b 1k/1k on GB200 (1 prefill GPU), C = 1024: median TTFT 0.12 s, p99
    # 8.2 s (the wave's tail, ~C·T_a), mean 0.74 s ≈ 0.9·steady + 0.1·wave.
    phi = jnp.clip(eff["burst_fraction"], 0.0, 1.0)
    w_wave = jnp.maximum(C - 1.0, 0.0) / 2.0 * T_a
    TTFT_steady = TTFT
    TTFT = TTFT + phi * jnp.maximum(w_wave - (TTFT - T_p), 0.0)
    E2E = TTFT + D
    t_step, dec, t_p2p_dec = decode_step(B)
    busy_pre = jnp.minimum(X * T_a, 1.0)  # share of the prefill pool (agg: the engine) busy
    X_req = C / E2E
    mixed = X_req * (isl + osl) / chips
    output = X_req * osl / chips

    # --- design-level: HBM stacks and area (static power scales with area)
    stacks = jnp.maximum(p["hbm_cap"] / p["stack_cap"], p["hbm_bw"] / p["stack_bw"])
    area = (p["area_fixed"] + p["area_per_flop"] * p["peak_fp4eq"] + p["area_per_sram"] * p["sram_cap"]
            + p["area_per_su"] * p["su_bw"] + p["area_per_stack"] * stacks)
    static_w = p["static_w"] + p["static_per_area"] * area

    # --- power (per chip) and energy
    e_fl = p["e_flop"]
    e_step = (e_fl * dec["flops"] + p["e_hbm"] * dec["bytes_hbm"] + p["e_sram"] * dec["bytes_sram"]
              + p["e_host"] * dec["bytes_host"] + p["e_link"] * dec["link_bytes"]) * pp
    e_pre = (e_fl * pre["flops"] + p["e_hbm"] * pre["bytes_hbm"] + p["e_sram"] * pre["bytes_sram"]
             + p["e_link"] * pre["link_bytes"]) * pp
    if disagg:
        dyn_total = (p["d_chips"] * e_step / t_step
                     + p["p_chips"] * busy_pre * e_pre / T_1)  # prefill energy over its pass time
        power = static_w + dyn_total / chips
    else:
        power = static_w + (1.0 - busy_pre) * e_step / t_step + busy_pre * e_pre / T_1
    # a spec without [chip.energy] models no power: the chip is taken to draw its TDP (the published
    # tables' power basis), at every point and at its peak; 0 W gave an infinite tok/s per kW
    power_modelled = p["power_modelled"] > 0.5
    power = jnp.where(power_modelled, power, p["tdp_w"])
    tdp_kw = p["tdp_w"] / 1000.0
    energy_per_tok = power * chips / (X_req * (isl + osl))

    # --- design-level: peak power at full compute, memory and link rates
    peak_power = (static_w + e_fl * p["peak"] + p["e_hbm"] * p["hbm_bw"]
                  + p["e_sram"] * p["sram_bw"] + 2.0 * p["e_link"] * p["su_bw"])
    peak_power = jnp.where(power_modelled, peak_power, p["tdp_w"])
    # one request at the longest context must fit beside the weights; more users than KV slots
    # queue (priced above), so feasibility is a property of the design, not of the concurrency
    # a TP group stays in one scale-up domain unless the deployment lets it span several
    # (deployment.multinode_tp: its collectives are then priced over scale-out in `_phase`)
    tp_in_domain = (tp_d <= p["su_domain"]) & (tp_p <= p["su_domain"])
    feasible_design = (weights_fit & pools_ok & (max_conc >= 1.0) & (tp_d <= s.heads) & (tp_p <= s.heads)
                       & (tp_in_domain | (p["multinode_tp"] > 0.5))
                       & (ep_d <= jnp.maximum(s.experts, 1)) & (ep_p <= jnp.maximum(s.experts, 1))
                       & (ep_d <= tp_d * dp_d) & (ep_p <= tp_p * dp_p)
                       # EP groups tile the chips of a stage (MoE TP = chips / EP is whole)
                       & (jnp.mod(tp_d * dp_d, ep_d) == 0) & (jnp.mod(tp_p * dp_p, ep_p) == 0)
                       & (stacks <= p["max_stacks"] + 1e-9)
                       # TP shards whole attention heads (a fractional head per chip is not a
                       # deployment a serving framework can run); an EP that does not divide the
                       # experts holds redundant copies in the spare slots (see `_resident`)
                       & (jnp.mod(s.heads, tp_d) == 0) & (jnp.mod(s.heads, tp_p) == 0)
                       # a pipeline stage holds at least one layer (pp = 1000 on 36 layers was priced
                       # with 0 GB of weights per chip: fresh-user trial of session 16)
                       & (pp <= s.layers))
    feasible = feasible_design & jnp.ones_like(C, dtype=bool)
    nan = jnp.nan

    def mask(x):
        return jnp.where(feasible, x, nan)

    return {
        "ttft_s": mask(TTFT),
        "ttft_steady_s": mask(TTFT_steady),
        "decode_batch": mask(B * inst_d),
        "prefill_utilization": mask(busy_pre),
        "tpot_s": mask(TPOT),
        "itl_s": mask(TPOT),
        "e2e_latency_s": mask(E2E),
        "interactivity_tok_s_user": mask(1.0 / TPOT),
        "output_tok_s_per_chip": mask(output),
        "mixed_tok_s_per_chip": mask(mixed),
        "mixed_tok_s_per_kw": mask(mixed / tdp_kw),
        "mixed_tok_s_per_kw_modelled": mask(mixed / (power / 1000.0)),
        "power_w": mask(power),
        "energy_j_per_token": mask(energy_per_tok),
        "decode_compute_s": mask(pp * dec["t_compute"] * jnp.ones_like(C)),
        "decode_memory_s": mask(pp * dec["t_mem"] * jnp.ones_like(C)),
        "decode_network_s": mask(pp * dec["t_comm"] + t_p2p_dec),
        "prefill_compute_s": mask(pp * pre["t_compute"] * jnp.ones_like(C)),
        "prefill_memory_s": mask(pp * pre["t_mem"] * jnp.ones_like(C)),
        "prefill_network_s": mask((pp * pre["t_comm"] + t_p2p_pre) * jnp.ones_like(C)),
        "feasible": feasible,
        # design-level
        "chips": chips,
        "tdp_w": p["tdp_w"],
        "peak_power_w": peak_power,
        # NaN, "not modelled", without [chip.area] (costmodel.NAN_DESIGN_METRICS): 0 mm² passed
        # every area constraint
        "area_mm2": jnp.where(p["area_modelled"] > 0.5, area * 1e6, nan),
        "hbm_stacks": stacks,
        "weights_bytes_per_chip": w_res_d,
        # the prefill pool's (disaggregated; the decode pool's aggregated): popped by `evaluate` for
        # the infeasibility reason, not a design metric
        "prefill_weights_bytes_per_chip": w_res_p,
        "max_concurrency": max_conc,
        "feasible_design": feasible_design,
    }


DESIGN_KEYS = ("chips", "tdp_w", "peak_power_w", "area_mm2", "hbm_stacks", "weights_bytes_per_chip",
               "max_concurrency", "feasible_design")


class AnalyticalModel:
    """The :class:`codesign.costmodel.CostModel` of this plugin."""

    def parameters(self) -> list[str]:
        return (sorted(KEYMAP) + sorted(FORMAT_KEYS) + sorted(CATEGORICAL_KEYS)
                + [f"efficiency.{k}" for k in DEFAULT_EFFICIENCY])

    # ------------------------------------------------------------------ spec -> arrays
    def static(self, spec) -> Static:
        from codesign.arch import account

        m = spec.model
        acc = account(m)
        w = spec.workload
        j = w.length_jitter
        attn_lin = 2.0 * acc.attention_params  # projections (biases/sinks negligible)
        rest_lin = acc.linear_flops_per_token - attn_lin
        dense = (acc.active_params - acc.attention_params - acc.shared_expert_params
                 - acc.experts_per_token * acc.params_per_routed_expert * acc.n_moe_layers)
        return Static(
            mode=spec.deployment.mode,
            layers=m.num_layers,
            n_moe_layers=acc.n_moe_layers,
            hidden=m.hidden_size,
            heads=m.num_attention_heads,
            kv_heads=m.num_kv_heads,
            mla=m.attention == "mla",
            experts=acc.num_experts,
            k=acc.experts_per_token,
            attn_params=float(acc.attention_params),
            dense_params=float(dense),
            shared_params=float(acc.shared_expert_params),
            per_expert=float(acc.params_per_routed_expert),
            linear_flops_attn=float(attn_lin),
            linear_flops_rest=float(rest_lin),
            lm_head_flops=2.0 * float(acc.lm_head_params),
            routing_skew=_static_skew(spec),
            kv_full=float(acc.kv_cache_elems_per_token),
            kv_window=float(acc.window_kv_cache_elems_per_token),
            window=float(acc.sliding_window or 0),
            af_pre_full=float(acc.attn_flops_per_ctx_prefill_full),
            af_pre_win=float(acc.attn_flops_per_ctx_prefill_window),
            af_dec_full=float(acc.attn_flops_per_ctx_decode_full),
            af_dec_win=float(acc.attn_flops_per_ctx_decode_window),
            isl=w.isl * (1.0 - j / 2.0),
            osl=w.osl * (1.0 - j / 2.0),
            isl_max=float(w.isl),
            osl_max=float(w.osl),
            concurrency=tuple(int(c) for c in w.concurrency),
            jitter=float(j),
            embed_params=0.0 if m.tie_word_embeddings else float(acc.embedding_params),
            state_bytes=(acc.recurrent_state_elems_per_request * STATE_BYTES
                         + acc.conv_state_elems_per_request * CONV_STATE_BYTES),
            state_heads=int(m.linear_num_key_heads or 1),
            state_flops=float(acc.recurrent_flops_per_token),
            state_chunk_flops=float(acc.recurrent_chunk_flops_per_token),
            topk=float(acc.sparse_attention_topk or 1e30),
            idx_bytes=acc.indexer_cache_elems_per_token * INDEXER_KEY_BYTES,
            idx_flops=float(acc.indexer_flops_per_ctx),
            kernel_factor=float(
                ((acc.linear_attention_layers * KERNELS_ATTN["linear"]
                  + (m.num_layers - acc.linear_attention_layers)
                  * KERNELS_ATTN[("mla_dsa" if m.index_topk else "mla") if m.attention == "mla" else "gqa"])
                 / m.num_layers
                 + (acc.n_moe_layers * (KERNELS_FFN["moe"] if acc.shared_expert_params else KERNELS_FFN["moe_unshared"])
                    + (m.num_layers - acc.n_moe_layers) * KERNELS_FFN["dense"]) / m.num_layers)
                / KERNELS_REF),
        )

    def check(self, spec) -> None:
        """Refuse what :meth:`evaluate` would refuse in the spec itself, without pricing it: its
        ``[efficiency]`` knobs (:meth:`efficiency`). Raises SpecError."""
        self.efficiency(spec)

    def efficiency(self, spec) -> dict[str, float]:
        from codesign.errors import SpecError

        import difflib

        eff = dict(DEFAULT_EFFICIENCY)
        problems = []
        for k, v in spec.efficiency.items():
            file = spec.origin(f"efficiency.{k}")
            if k not in eff:
                close = difflib.get_close_matches(k, list(eff), n=1)
                problems.append((file, f"efficiency.{k}", "unknown knob for the analytical model; "
                                 + (f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(eff)}")))
                continue
            why = knob_problem(k, v)
            if why:
                problems.append((file, f"efficiency.{k}", why))
        if problems:
            raise SpecError(problems)
        eff.update({k: float(v) for k, v in spec.efficiency.items()})
        return eff

    def base_params(self, spec, formats) -> dict[str, float]:
        """The spec as a flat dict of SI floats (parameter names of :data:`KEYMAP` and more)."""
        c, mem, net, d = spec.chip, spec.memory, spec.network, spec.deployment
        pf = c.peak_flops
        p: dict[str, Any] = {
            "tdp_w": c.tdp,
            "hbm_cap": mem.hbm.capacity, "hbm_bw": mem.hbm.bandwidth,
            "sram_cap": mem.sram.capacity if mem.sram else 0.0,
            "sram_bw": mem.sram.bandwidth if mem.sram else 1.0,
            "host_cap": mem.host.capacity if mem.host else 0.0,
            "host_bw": mem.host.bandwidth if mem.host else 1.0,
            "su_bw": net.scaleup_bandwidth, "su_lat": net.scaleup_latency,
            "su_domain": float(net.scaleup_domain),
            "su_mesh": 1.0 if net.scaleup_topology == "full_mesh" else 0.0,
            "so_bw": net.scaleout_bandwidth or net.scaleup_bandwidth / 8.0,
            "so_lat": net.scaleout_latency if net.scaleout_latency is not None else 10 * net.scaleup_latency,
            "tp": d.tp, "pp": d.pp, "ep": d.ep, "dp": d.dp_attention,
            "spec_d": float(d.speculative_tokens),
            "spec_a": np.nan if d.acceptance_rate is None else d.acceptance_rate,
            "host_kv": 1.0 if d.host_kv_cache else 0.0,
            "multinode_tp": 1.0 if d.multinode_tp else 0.0,
            "max_batch": np.inf if d.max_batch_size is None else float(d.max_batch_size),
            "recv_int": np.nan if d.scheduler_recv_interval is None else float(d.scheduler_recv_interval),
            "adp_timeout": (0.0 if d.attention_dp_balance_timeout_iters is None
                            else float(d.attention_dp_balance_timeout_iters)),
        }
        for cls in CLASSES:  # explicit peaks only; missing ones are derived after overrides
            p[f"peak_{cls}"] = getattr(pf, cls)
        for role, pool in (("p", d.prefill), ("d", d.decode)):
            p[f"{role}_chips"] = pool.chips if pool else 1
            p[f"{role}_tp"] = pool.tp if pool else 1
            p[f"{role}_ep"] = pool.ep if pool else 1
            p[f"{role}_dp"] = pool.dp_attention if pool else 1
        p["w_bytes"] = d.weights_format
        p["mw_bytes"] = d.moe_weights_format or d.weights_format
        p["kv_bytes"] = d.kv_cache_format
        p["a_bytes"] = d.activations_format
        # energy and area: flags for "not modelled" (power is then the TDP, area NaN; the sums
        # below stay finite so that gradients through them do too)
        en, ar = c.energy, c.area
        p["power_modelled"] = 1.0 if en is not None else 0.0
        p["area_modelled"] = 1.0 if ar is not None else 0.0
        p["static_w"] = en.static if en else 0.0
        p["static_per_area"] = en.static_per_area if en else 0.0
        # energy per FLOP: a missing class scales by the peak ratio (same power at each class's peak)
        for cls, e in energy_per_flop(en).items():
            p[f"e_{cls}"] = e
        p["e_hbm"] = mem.hbm.energy_per_byte or 0.0
        p["e_sram"] = (mem.sram.energy_per_byte or 0.0) if mem.sram else 0.0
        p["e_host"] = (mem.host.energy_per_byte or 0.0) if mem.host else 0.0
        p["e_link"] = net.scaleup_energy_per_byte or 0.0
        p["area_fixed"] = ar.fixed if ar else 0.0
        p["area_per_flop"] = ar.per_fp4_flop_s if ar else 0.0
        p["area_per_sram"] = ar.per_sram_byte if ar else 0.0
        p["area_per_su"] = ar.per_scaleup_byte_s if ar else 0.0
        p["area_per_stack"] = ar.per_hbm_stack if ar else 0.0
        p["stack_cap"] = ar.hbm_stack_capacity if ar else np.inf
        p["stack_bw"] = ar.hbm_stack_bandwidth if ar else np.inf
        p["max_stacks"] = float(ar.max_hbm_stacks) if ar else np.inf
        return p

    def arrays(self, spec, formats, overrides=None) -> tuple[dict[str, np.ndarray], int]:
        """Base params with overrides applied, as float64 arrays of shape ``(n,)``."""
        from codesign.errors import CodesignError

        p = self.base_params(spec, formats)
        eff = self.efficiency(spec)
        p.update({EFF_PREFIX + k: v for k, v in eff.items() if k not in STATIC_KNOBS})  # those: Static
        p["_eff_names"] = tuple(eff)
        overrides = dict(overrides or {})
        n = 1
        for k, v in overrides.items():
            n = max(n, int(np.size(v)))
        for key, value in overrides.items():
            if key in KEYMAP:
                p[KEYMAP[key]] = value
            elif key.startswith("efficiency.") and key[len("efficiency."):] in p.get("_eff_names", ()):
                p[EFF_PREFIX + key[len("efficiency."):]] = value
            elif key in FORMAT_KEYS:
                p[FORMAT_KEYS[key]] = value
            elif key in CATEGORICAL_KEYS:
                name, table = CATEGORICAL_KEYS[key]
                vals = []
                for v in np.atleast_1d(np.asarray(value, dtype=object)):
                    if not (isinstance(v, str) and v in table):
                        raise CodesignError(f"{key}: expected one of {', '.join(table)} (got {v})")
                    vals.append(table[v])
                p[name] = np.asarray(vals, dtype=np.float64)
            else:
                raise CodesignError(f"the analytical cost model cannot vary {key!r}; it can vary "
                                    + ", ".join(self.parameters()))
        out: dict[str, np.ndarray] = {}
        fmt_names = {}
        for name in ("w_bytes", "mw_bytes", "kv_bytes", "a_bytes"):
            names = np.broadcast_to(np.asarray(p[name], dtype=object), (n,))
            fmt_names[name] = names
            vals = []
            for f in names:
                if f not in formats:
                    raise CodesignError(f"unknown number format {f!r}; registered: {', '.join(sorted(formats))}")
                vals.append(formats[f].bytes_per_element)
            out[name] = np.asarray(vals, dtype=np.float64)
        p.pop("_eff_names")
        for k, v in p.items():
            if k in out:
                continue
            if v is None:
                out[k] = np.full(n, np.nan)
            else:
                out[k] = np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()
        # missing peak classes derived from the given ones (codesign.spec.resolve_peaks)
        given = {c: (None if np.all(np.isnan(out[f"peak_{c}"])) else out[f"peak_{c}"]) for c in CLASSES}
        peaks = resolve_peaks(given)
        for c in CLASSES:
            out[f"peak_{c}"] = np.asarray(peaks[c], dtype=np.float64)
        # peak and energy of the activation format's compute class
        peak = np.empty(n)
        e_flop = np.empty(n)
        for i, f in enumerate(fmt_names["a_bytes"]):
            c = formats[f].compute_class
            peak[i] = out[f"peak_{c}"][i]
            e_flop[i] = out[f"e_{c}"][i] if f"e_{c}" in out else out["e_fp8"][i]
        out["peak"] = peak
        out["e_flop"] = e_flop
        # per-operand GEMM rates: min(weights class, activations class) (attention: below)
        rank = {c: out[f"peak_{c}"] for c in CLASSES}
        for key, name in (("peak_w", "w_bytes"), ("peak_mw", "mw_bytes")):
            v = np.empty(n)
            for i, (fw, fa) in enumerate(zip(fmt_names[name], fmt_names["a_bytes"])):
                v[i] = min(rank[formats[fw].compute_class][i], rank[formats[fa].compute_class][i])
            out[key] = v
        # attention (scores and values over the KV cache) at the KV cache format's MMA rate, at most
        # FP8 and at most the activations': an FP8 KV cache runs FP8 attention kernels (TensorRT-LLM's
        # FP8 context FMHA and FP8 MLA generation kernels on Hopper/Blackwell, FlashAttention-3 FP8),
        # a BF16 one BF16 MMA. (3-seed holdout against BF16 attention throughout: TPOT MAPE 14.2% ->
        # 13.9%, TTFT 34.7% -> 34.2% over all systems; docs/baselines.md, session 4.)
        out["peak_attn"] = np.array([min(rank[formats[fk].compute_class][i], rank["fp8"][i], peak[i])
                                     for i, fk in enumerate(fmt_names["kv_bytes"])])
        # one-hot weight-format family of the dense and the expert GEMMs (compute_scale_* knobs)
        for key, name in (("w_is", "w_bytes"), ("mw_is", "mw_bytes")):
            fam = [_scale_family(formats[f]) for f in fmt_names[name]]
            for f in SCALE_FAMILIES:
                out[f"{key}_{f}"] = np.asarray([1.0 if x == f else 0.0 for x in fam])
        # area scales with tensor-core capability in FP4-equivalent FLOP/s
        out["peak_fp4eq"] = np.maximum.reduce([out["peak_fp4"], 2 * out["peak_fp8"], 4 * out["peak_bf16"]])
        out["_formats"] = fmt_names  # type: ignore[assignment]
        return out, n

    # ------------------------------------------------------------------ evaluate
    def evaluate(self, spec, formats, overrides=None) -> Evaluation:
        """Price the spec (and ``n`` variations given by ``overrides``); see :class:`CostModel`."""
        import jax
        import jax.numpy as jnp

        s = self.static(spec)
        arrs, n = self.arrays(spec, formats, overrides)  # knobs travel in arrs as eff_* (traced)
        arrs.pop("_formats")
        fn = _compiled(s)
        with jax.default_device(jax.devices("cpu")[0]):
            res = fn({k: jnp.asarray(v, dtype=jnp.float32) for k, v in arrs.items()})
        res = {k: np.asarray(v, dtype=np.float64) for k, v in res.items()}
        feasible = res.pop("feasible").astype(bool)
        design = {k: res.pop(k) for k in DESIGN_KEYS}
        w_prefill = res.pop("prefill_weights_bytes_per_chip")
        feasible_design = design.pop("feasible_design").astype(bool)
        structural = deployment_problems(spec, overrides) if not feasible_design.all() else [""] * n
        reasons = [self._reason(structural[i], arrs, design, i, float(w_prefill[i]),
                                   s.mode == "disaggregated")
                   if not feasible_design[i] else "" for i in range(n)]
        conc = np.asarray(s.concurrency, dtype=np.float64)
        # feasibility is per design (users beyond the KV slots queue): a point inherits its reason
        preasons = np.where(feasible, "", np.asarray(reasons, dtype=object)[:, None]).astype(object)
        return Evaluation(concurrency=conc, points=res, feasible=feasible, design=design,
                          reasons=reasons, point_reasons=preasons)

    @staticmethod
    def _reason(structural: str, a, design, i, w_prefill: float = 0.0, disagg: bool = False) -> str:
        """Why design ``i`` is infeasible: the deployment rules every cost model shares
        (``structural``, :func:`codesign.evaluation.deployment_problems`), then this model's own
        (weights of either pool and KV cache in memory, HBM stacks on the package). ``w_prefill``
        [B] is the prefill pool's weights per chip; a disaggregated design whose decode pool fits
        but whose prefill pool does not said only "infeasible deployment" (session 48)."""
        why = [structural] if structural else []
        w = design["weights_bytes_per_chip"][i]
        cap = a["hbm_cap"][i] + a["sram_cap"][i]

        def weights(w, pool=""):
            over = w - cap
            over_s = f"{over / 1e9:.1f} GB" if over >= 0.05e9 else f"{over / 1e6:.1f} MB"
            return (f"{pool}weights need {w / 1e9:.1f} GB per chip, {over_s} more than the memory holds "
                    f"({cap / 1e9:.1f} GB)")

        pools = [(w, "decode pool: " if disagg else "")] + ([(w_prefill, "prefill pool: ")] if disagg else [])
        over = [weights(x, pool) for x, pool in pools if x > cap]
        why += over
        if not over and design["max_concurrency"][i] < 1:
            why.append("the KV cache of one request at the longest context does not fit beside the weights")
        if design["hbm_stacks"][i] > a["max_stacks"][i] + 1e-9:
            why.append(_stacks_reason(float(design["hbm_stacks"][i]), a, i))
        return "; ".join(why) or "infeasible deployment"


def _stacks_reason(stacks: float, a, i: int) -> str:
    """Why design ``i`` (params ``a``) has more HBM stacks than the package holds: the whole stacks
    needed and what asks for them, the HBM capacity or bandwidth over one stack's (each that needs
    more than the package holds). "HBM needs 9.9 stacks" said neither why nor how many whole stacks
    (fresh-user trial, session 43)."""
    from codesign.costmodel import whole_needed
    from codesign.units import format_quantity

    most = int(a["max_stacks"][i])
    need = whole_needed(stacks)
    # at the limit to float32 rounding (8.0000005 stacks), the digits that show it is over
    count = f"{need}" if need > most else f"{stacks:.8g}"
    asks = []
    for key, per_key, kind, what in (("hbm_bw", "stack_bw", "B/s", "bandwidth"),
                                     ("hbm_cap", "stack_cap", "B", "capacity")):
        total, per = float(a[key][i]), float(a[per_key][i])
        if total / per > most + 1e-9:
            asks.append(f"{format_quantity(total, kind, digits=3)} of HBM {what} (memory.hbm.{what}) at "
                        f"{format_quantity(per, kind, digits=3)} per stack (chip.area.hbm_stack_{what}) is "
                        f"{total / per:.3g} stacks")
    return (f"HBM needs {count} stacks, the package holds {most} (chip.area.max_hbm_stacks)"
            + (": " + " and ".join(asks) if asks else ""))


@functools.lru_cache(maxsize=64)
def _compiled(s: Static):
    """``jit(vmap(sweep))`` for one static configuration; the knobs come traced in ``p["eff_*"]``,
    so refitting or varying them never recompiles."""
    import jax

    return jax.jit(jax.vmap(lambda p: sweep(p, s, DEFAULT_EFFICIENCY)))


def single(spec, formats, *, eff=None):
    """The design pytree and a ``f(params) -> metrics`` function for one design (for ``grad``).

    Returns:
        ``(params, fn, static)``: ``params`` a dict of float32 scalars, ``fn`` pure in it.
    """
    import jax.numpy as jnp

    m = AnalyticalModel()
    s = m.static(spec)
    e = dict(m.efficiency(spec), **(eff or {}))
    arrs, _ = m.arrays(spec, formats)
    arrs.pop("_formats")
    params = {k: jnp.asarray(v[0], dtype=jnp.float32) for k, v in arrs.items()}
    params.update({EFF_PREFIX + k: jnp.asarray(v, dtype=jnp.float32) for k, v in e.items()})
    return params, (lambda p: sweep(p, s, e)), s
