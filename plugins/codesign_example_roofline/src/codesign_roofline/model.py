"""The bare-roofline cost model: a lower bound on serving latency, in numpy.

Every phase takes ``max(FLOPs / peak, bytes / bandwidth)`` (Williams, Waterman and Patterson,
"Roofline: an insightful visual performance model", CACM 52(4), 2009) at 100 % of the datasheet
peaks: no achievable-efficiency fractions, no kernel-launch overheads, no network (collectives are
free), no queueing. Whatever a real system or a detailed model predicts must be at least this slow;
``codesign evaluate --cost-model roofline`` next to ``--cost-model analytical`` shows how far the
detailed model sits above the bound.

Aggregated serving only (one replica of ``tp · pp · dp_attention`` chips, continuous batching at
the workload's concurrency ``C``); :func:`supports` says so, and ``deployment.cost_model = "auto"``
then picks another model for disaggregated specs.

Per design (counts from :func:`codesign.arch.account`, bytes per element from the registered
number formats, block scales included; ``L̄ = L·(1 − jitter/2)`` the mean of lengths drawn from
``[(1 − jitter)·L, L]``):

* **Weights per chip** [B]: non-expert weights (everything but routed and shared experts, the
  embedding included) split over ``tp·pp``; expert weights over ``tp·dp·pp``.
* **KV cache per request per chip** [B]: ``(kv_full·ctx + kv_window·min(ctx, window))·bytes``
  at ``ctx = ISL + OSL``, split over ``min(tp, kv_heads)`` (MLA's latent is not split) and ``pp``.
  The cache fills SRAM first, then HBM left after the weights, then host memory; ``max
  concurrency = floor(capacity / KV per request)·dp``.
* **Decode step** at batch ``B = C``: reads the non-expert weights, the routed experts the batch's
  ``B·k`` routings touch in expectation (``E·(1 − (1 − k/E)^B)`` per MoE layer, uniform routing)
  and the shared experts, plus ``B`` requests' KV cache at the mean context ``ISL̄ + OSL̄/2`` (each
  tier at its bandwidth); FLOPs ``B · decode_flops_per_token(ctx)`` at the peak of the activation
  format's compute class over the ``tp·dp`` chips of a stage (stages run one after the other).
* **Prefill** of one request: ``ISL̄ · prefill_flops_per_token(ISL̄)`` FLOPs; every resident
  weight read once.
* **Serving** (closed loop, ``C`` users): ``E2E = max(TTFT + (OSL̄ − 1)·t_step,
  C·(prefill + decode FLOPs of a request) / (tp·dp·peak))``: the second term is the chip's
  compute per cycle of every user, which no schedule avoids. ``TTFT`` = one prefill alone,
  ``TPOT = (E2E − TTFT)/(OSL̄ − 1)`` (DESIGN.md's definition).
* **Power** [W/chip], from the spec's own energy figures (``[chip.energy]``, each memory tier's
  ``energy_per_byte``; ``specs/technology/n4p.toml`` gives them for the shipped hardware), the same
  terms as the analytical model: static ``static + static_per_area · area``, plus the dynamic
  energy of a request (its prefill's FLOPs, and ``OSL̄ − 1`` shares ``1/C`` of a decode step's FLOPs
  and bytes per tier) times the request rate ``C / E2E``, over the replica's chips. A prefill's
  weight read is not charged: the serving time gives it no time of its own beside the decode
  steps' reads (a batched engine shares one read per iteration), and charging it drew more than
  the chip's peak power at short prompts and high load (fresh-user trial, session 32). So power is
  a lower bound, as the times are, and at most static plus every unit at its peak rate: FLOPs run
  at most at the peak (the E2E bound) and decode bytes at most at each tier's bandwidth (the step
  time). Energy per FLOP is the activation format's class (a missing class from
  the others as the analytical model derives it). Collectives are free here, so links draw nothing.
  The core then marks a point whose power is above ``chip.tdp`` infeasible (a ``tdp = "1 W"`` chip
  was priced at 344 M tok/s per kW when this model took ``power_w = tdp``; fresh-user trial, session
  31). ``peak_power_w`` is static plus every unit at its peak rate (FLOPs, each tier's bandwidth, the
  scale-up links both ways; the host tier left out, as the analytical model does). A spec with no
  ``[chip.energy]`` has no modelled power (memory tiers' figures alone leave the chip's own power
  out: GB200's spec without its technology file priced a chip at a few watts): ``power_w`` is then
  the TDP, as the model cannot check it, and ``peak_power_w`` is the TDP too.
* **Area**: the same per-unit technology figures as the analytical model when the spec gives
  ``[chip.area]`` (compute, SRAM, scale-up I/O, HBM stacks), else NaN.

A point is infeasible (every point metric NaN, ``feasible = False``) when the weights do not fit in
SRAM + HBM, or the ``C`` requests' KV cache does not fit in all tiers.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from codesign.costmodel import Evaluation
from codesign.errors import CodesignError
from codesign.spec import energy_per_flop, resolve_peaks

#: Peak classes and format keys; :data:`_NUMERIC` maps each variable spec key to its base value.
_CLASSES = ("bf16", "fp8", "fp6", "fp4", "int8")
_FORMAT_KEYS = ("deployment.weights_format", "deployment.moe_weights_format",
                "deployment.kv_cache_format", "deployment.activations_format")


def _tier(spec, name, attr):
    t = getattr(spec.memory, name)
    return getattr(t, attr) if t is not None else 0.0


_NUMERIC: dict[str, Any] = {
    "chip.tdp": lambda s: s.chip.tdp,
    **{f"chip.peak_flops.{c}": (lambda s, c=c: getattr(s.chip.peak_flops, c)) for c in _CLASSES},
    "memory.hbm.capacity": lambda s: s.memory.hbm.capacity,
    "memory.hbm.bandwidth": lambda s: s.memory.hbm.bandwidth,
    "memory.sram.capacity": lambda s: _tier(s, "sram", "capacity"),
    "memory.sram.bandwidth": lambda s: _tier(s, "sram", "bandwidth"),
    "memory.host.capacity": lambda s: _tier(s, "host", "capacity"),
    "memory.host.bandwidth": lambda s: _tier(s, "host", "bandwidth"),
    "deployment.tp": lambda s: s.deployment.tp,
    "deployment.pp": lambda s: s.deployment.pp,
    "deployment.dp_attention": lambda s: s.deployment.dp_attention,
}


def supports(spec) -> bool:
    """Aggregated serving only (no prefill/decode pools)."""
    return spec.deployment.mode == "aggregated"


class RooflineModel:
    """The :class:`codesign.costmodel.CostModel` of this plugin (numpy; not differentiable)."""

    def parameters(self) -> list[str]:
        return sorted(_NUMERIC) + list(_FORMAT_KEYS)

    def evaluate(self, spec, formats: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
                 ) -> Evaluation:
        """Price ``spec`` and the ``n`` designs of ``overrides``; see :class:`codesign.CostModel`.

        Points that cannot be served divide by zero on their way to NaN (a rate of 0 tok/s): numpy
        is told that this is expected, so no RuntimeWarning reaches the user's terminal."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._evaluate(spec, formats, overrides)

    def _evaluate(self, spec, formats, overrides) -> Evaluation:
        from codesign.arch import account

        if not supports(spec):
            raise CodesignError("the roofline cost model prices aggregated serving only "
                                f"(deployment.mode is {spec.deployment.mode!r})")
        overrides = dict(overrides or {})
        unknown = [k for k in overrides if k not in _NUMERIC and k not in _FORMAT_KEYS]
        if unknown:
            raise CodesignError(f"the roofline cost model cannot vary {', '.join(unknown)}; it can vary "
                                + ", ".join(self.parameters()))
        n = max([1] + [int(np.size(v)) for v in overrides.values()])

        def num(key):
            v = overrides[key] if key in overrides else _NUMERIC[key](spec)
            if v is None:
                return None
            return np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()

        def fmt(key, default):
            d = spec.deployment
            base = getattr(d, key.split(".")[1]) or default
            names = np.broadcast_to(np.asarray(overrides.get(key, base), dtype=object), (n,))
            for f in names:
                if f not in formats:
                    raise CodesignError(f"unknown number format {f!r}; registered: {', '.join(sorted(formats))}")
            return names

        w_fmt = fmt("deployment.weights_format", None)
        mw_fmt = fmt("deployment.moe_weights_format", spec.deployment.weights_format)
        kv_fmt = fmt("deployment.kv_cache_format", None)
        a_fmt = fmt("deployment.activations_format", None)

        def nbytes(names):
            return np.array([formats[f].bytes_per_element for f in names])

        wb, mwb, kvb = nbytes(w_fmt), nbytes(mw_fmt), nbytes(kv_fmt)
        # peak of the activation format's compute class, missing classes derived as the spec does
        peaks = resolve_peaks({c: num(f"chip.peak_flops.{c}") for c in _CLASSES})
        peak = np.array([peaks[formats[f].compute_class][i] for i, f in enumerate(a_fmt)])

        tdp = num("chip.tdp")
        hbm_cap, hbm_bw = num("memory.hbm.capacity"), num("memory.hbm.bandwidth")
        sram_cap, sram_bw = num("memory.sram.capacity"), num("memory.sram.bandwidth")
        host_cap, host_bw = num("memory.host.capacity"), num("memory.host.bandwidth")
        tp, pp, dp = num("deployment.tp"), num("deployment.pp"), num("deployment.dp_attention")

        m = spec.model
        acc = account(m)
        w = spec.workload
        j = w.length_jitter
        isl, osl = w.isl * (1 - j / 2), w.osl * (1 - j / 2)
        ctx_max = float(w.isl + w.osl)
        C = np.asarray(w.concurrency, dtype=np.float64)  # (c,)

        experts = acc.routed_expert_params + acc.shared_expert_params
        non_expert = acc.total_params - experts
        stage = tp * dp  # chips of one pipeline stage
        chips = stage * pp
        # --- capacity (per chip)
        w_res = non_expert * wb / (tp * pp) + experts * mwb / (stage * pp)  # (n,)
        kv_split = 1.0 if m.attention == "mla" else np.minimum(tp, m.num_kv_heads)
        window = float(acc.sliding_window or 0)

        def kv_elems(ctx):
            return acc.kv_cache_elems_per_token * ctx + acc.window_kv_cache_elems_per_token * np.minimum(ctx, window)

        kv_req = kv_elems(ctx_max) * kvb / kv_split / pp  # (n,)
        kv_cap = sram_cap + np.maximum(hbm_cap - w_res, 0.0) + host_cap
        max_conc = np.floor(kv_cap / kv_req) * dp
        weights_fit = w_res <= hbm_cap + sram_cap
        feasible = weights_fit[:, None] & (C[None, :] <= max_conc[:, None])  # (n, c)

        # --- decode step at batch C (per chip of one stage, summed over the pp stages)
        k, E = acc.experts_per_token, acc.num_experts
        touched = E * (1.0 - (1.0 - k / E) ** C) if E else np.zeros_like(C)  # (c,)
        active_non_expert = acc.active_params - acc.shared_expert_params - k * acc.params_per_routed_expert * acc.n_moe_layers
        w_read = (active_non_expert * wb / tp)[:, None] + (
            (touched[None, :] * acc.params_per_routed_expert * acc.n_moe_layers
             + acc.shared_expert_params) * (mwb / stage)[:, None])  # (n, c)
        ctx_dec = isl + osl / 2.0
        kv_batch = (C[None, :] / dp[:, None]) * (kv_elems(ctx_dec) * kvb / kv_split)[:, None]  # (n, c)
        # KV tiers: SRAM first, then HBM after the weights, then host (capacities per stage chip)
        kv_res = (C[None, :] / dp[:, None]) * (kv_req * pp)[:, None]
        in_sram = np.minimum(kv_res, (sram_cap * pp)[:, None])
        in_hbm = np.minimum(kv_res - in_sram, (np.maximum(hbm_cap - w_res, 0.0) * pp)[:, None])
        frac = np.divide(1.0, kv_res, out=np.zeros_like(kv_res), where=kv_res > 0)
        f_sram, f_hbm = in_sram * frac, in_hbm * frac
        # the rest in bytes, not 1 - f_sram - f_hbm: that left ~1e-16 of the cache on a host tier of
        # 0 B/s (a spec without [memory.host]) and priced TPOT as inf (fresh-user trial, session 26)
        f_host = np.clip((kv_res - in_sram - in_hbm) * frac, 0.0, 1.0)

        def over(bytes_, bw):
            bw = bw[:, None]
            return np.divide(bytes_, bw, out=np.where(bytes_ > 0, np.inf, 0.0), where=bw > 0)

        t_mem = (over(w_read + kv_batch * f_hbm, hbm_bw) + over(kv_batch * f_sram, sram_bw)
                 + over(kv_batch * f_host, host_bw))
        dec_flops_tok = acc.decode_flops_per_token(int(round(ctx_dec)))
        t_comp = C[None, :] * dec_flops_tok / (stage * peak)[:, None]
        t_step = np.maximum(t_mem, t_comp)  # (n, c)

        # --- prefill of one request
        isl_i = max(int(round(isl)), 1)
        pre_flops = isl_i * acc.prefill_flops_per_token(isl_i)
        t_pre = np.maximum(pre_flops / (stage * peak), w_res * pp / hbm_bw)  # (n,)

        # --- serving
        req_flops = pre_flops + (osl - 1.0) * dec_flops_tok
        e2e = np.maximum(t_pre[:, None] + (osl - 1.0) * t_step,
                         C[None, :] * req_flops / (stage * peak)[:, None])
        ttft = np.broadcast_to(t_pre[:, None], e2e.shape)
        tpot = (e2e - ttft) / (osl - 1.0) if osl > 1 else t_step
        x_req = C[None, :] / e2e
        mixed = x_req * (isl + osl) / chips[:, None]
        output = x_req * osl / chips[:, None]
        area_mm2 = self._area_mm2(spec, peaks, sram_cap, hbm_cap, hbm_bw, n)
        power, peak_power = self._power_w(
            spec, a_fmt, formats, tdp, area_mm2,
            peak=peak, hbm_bw=hbm_bw, sram_bw=sram_bw, stage=stage, chips=chips, C=C, e2e=e2e, osl=osl,
            pre_flops=pre_flops, step_flops=C[None, :] * dec_flops_tok,
            step_bytes=(w_read + kv_batch * f_hbm, kv_batch * f_sram, kv_batch * f_host))

        def mask(x):
            return np.where(feasible, x, np.nan)

        points = {
            "ttft_s": mask(ttft), "tpot_s": mask(tpot), "itl_s": mask(tpot),
            "e2e_latency_s": mask(e2e), "interactivity_tok_s_user": mask(1.0 / tpot),
            "output_tok_s_per_chip": mask(output), "mixed_tok_s_per_chip": mask(mixed),
            "mixed_tok_s_per_kw": mask(mixed / (tdp[:, None] / 1e3)),
            "mixed_tok_s_per_kw_modelled": mask(mixed / (power / 1e3)),
            "power_w": mask(power), "energy_j_per_token": mask(power / mixed),
            "decode_compute_s": mask(t_comp), "decode_memory_s": mask(t_mem),
            "prefill_compute_s": mask(np.broadcast_to((pre_flops / (stage * peak))[:, None], e2e.shape)),
        }
        design = {
            "chips": chips, "tdp_w": tdp, "peak_power_w": peak_power,
            "area_mm2": area_mm2,
            "weights_bytes_per_chip": w_res, "max_concurrency": max_conc,
        }
        reasons, preasons = [], np.full(feasible.shape, "", dtype=object)
        for i in range(n):
            why = "" if weights_fit[i] else (
                f"weights need {w_res[i] / 1e9:.1f} GB per chip, SRAM + HBM hold "
                f"{(hbm_cap[i] + sram_cap[i]) / 1e9:.1f} GB")
            reasons.append(why)
            for jj, c in enumerate(C):
                if not feasible[i, jj]:
                    preasons[i, jj] = why or (f"KV cache for {int(c)} requests does not fit "
                                              f"(max concurrency {int(max_conc[i])})")
        return Evaluation(concurrency=C, points=points, feasible=feasible, design=design,
                          reasons=reasons, point_reasons=preasons)

    @staticmethod
    def _power_w(spec, a_fmt, formats, tdp, area_mm2, *, peak, hbm_bw, sram_bw, stage, chips, C, e2e, osl,
                 pre_flops, step_flops, step_bytes):
        """Modelled power at each point and peak power of each design [W/chip] (module docstring).

        ``step_flops`` (c,) or (n, c) is a decode step's FLOPs over the replica; ``step_bytes`` the
        step's bytes from HBM, SRAM and host (n, c) per chip of a stage, summed over the ``pp``
        stages (as the step time takes them), so the replica moves them times the ``stage`` chips
        of one stage; ``pre_flops`` a prefill's FLOPs (its weight read is not charged: module
        docstring). Without ``[chip.energy]`` both are the TDP.
        """
        en, mem = spec.chip.energy, spec.memory
        e_tiers = [mem.hbm.energy_per_byte] + [t.energy_per_byte if t is not None else None
                                               for t in (mem.sram, mem.host)]
        if en is None:
            return np.broadcast_to(tdp[:, None], e2e.shape), tdp.copy()
        e_hbm, e_sram, e_host = (e or 0.0 for e in e_tiers)
        e_link = spec.network.scaleup_energy_per_byte or 0.0
        static = en.static
        if en.static_per_area:
            static = static + en.static_per_area * np.nan_to_num(area_mm2 * 1e-6)  # mm² → m²
        static = np.broadcast_to(np.asarray(static, dtype=np.float64), tdp.shape)
        # energy per FLOP of the activation format's class (missing classes as codesign derives them)
        per_class = energy_per_flop(en)
        e_flop = np.array([per_class.get(formats[f].compute_class, per_class["fp8"]) for f in a_fmt])  # (n,)
        col = lambda x: np.asarray(x, dtype=np.float64)[:, None]  # noqa: E731  (n,) -> (n, 1)
        b_hbm, b_sram, b_host = step_bytes
        e_step = (col(e_flop) * step_flops
                  + (e_hbm * b_hbm + e_sram * b_sram + e_host * b_host) * col(stage))  # J per step, replica
        e_pre = e_flop * pre_flops  # J per prefill, replica (n,)
        e_req = col(e_pre) + (osl - 1.0) * e_step / C[None, :]
        power = col(static) + (C[None, :] / e2e) * e_req / col(chips)
        peak_power = (static + e_flop * peak + e_hbm * hbm_bw + e_sram * np.nan_to_num(sram_bw)
                      + 2.0 * e_link * spec.network.scaleup_bandwidth)
        return power, peak_power

    @staticmethod
    def _area_mm2(spec, peaks, sram_cap, hbm_cap, hbm_bw, n):
        """Die area from the spec's per-unit figures [mm²], NaN without ``[chip.area]``."""
        ar = spec.chip.area
        if ar is None:
            return np.full(n, np.nan)
        fp4eq = np.maximum.reduce([peaks["fp4"], 2 * peaks["fp8"], 4 * peaks["bf16"]])
        stacks = np.maximum(hbm_cap / ar.hbm_stack_capacity, hbm_bw / ar.hbm_stack_bandwidth)
        area = (ar.fixed + ar.per_fp4_flop_s * fp4eq + ar.per_sram_byte * sram_cap
                + ar.per_scaleup_byte_s * spec.network.scaleup_bandwidth + ar.per_hbm_stack * stacks)
        return area * 1e6
