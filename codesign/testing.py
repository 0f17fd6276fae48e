"""The cost-model contract suite: subclass it in your plugin's tests and every check runs on your model.

Modelled on optuna's ``optuna/testing/pytest_samplers.py``: a base class of pytest tests that an
implementation subclasses, naming what to test. Every built-in cost model passes it
(``tests/test_contract.py``); so should yours (``docs/plugins.md``, "Test it against the contract")::

    # tests/test_contract.py of your plugin
    from codesign.testing import CostModelContract

    class TestMyModel(CostModelContract):
        cost_model = "mymodel"                      # the name your plugin registers
        spec_path = "specs/my-example.toml"         # optional: a spec your model can price

What it checks, on one spec (by default ``specs/examples/gb200-gpt-oss-120b.toml`` of a codesign
checkout) and small batches derived from it:

* **registration**: a lowercase name, a version, ``accuracy`` unset or a fraction, parameters that
  are spec keys;
* **shapes and units**: every :data:`~codesign.costmodel.POINT_METRICS` key with shape ``(n, c)``,
  every :data:`~codesign.costmodel.DESIGN_METRICS` key with shape ``(n,)``, the workload's
  concurrency; the definitions between metrics (README, Metrics) (``interactivity = 1/TPOT``,
  ``E2E = TTFT + (OSL̄ − 1)·TPOT``, tok/s per kW = tok/s per chip / TDP in kW,
  ``energy per token = power / tok/s``, mixed/output = (ISL + OSL)/OSL);
* **extra metric names** (a warning, not a failure): an extra metric named as a known one with its
  unit suffix dropped or changed (``ttft``, ``tpot_ms``; :func:`unitless_extra_metrics`);
* **batches**: a batch of ``n`` designs equals the designs priced one at a time;
* **NaN handling**: infeasible points are NaN in every point metric (the optional ones and the
  model's own too) with ``feasible=False`` and a reason; feasible points finite and non-negative; a
  design whose weights cannot fit is infeasible;
  design metrics finite and non-negative on every design, feasible or not (``area_mm2`` may be NaN,
  not modelled);
* **determinism**: the same call twice gives identical arrays;

Every check prices through :func:`codesign.evaluation.evaluate`, so the rules the core enforces on
every call (:func:`codesign.evaluation.check_contract`: shapes, finite feasible points, NaN on
infeasible ones, design metrics) fail any check whose pricing breaks them, with the core's message
naming the model, the metric and the point; the NaN checks above need ``memory.hbm.capacity``
among the model's parameters to build infeasible designs, the core's rule does not.

* **monotonicity**: more HBM bandwidth never slows decode (TPOT), more compute never slows prefill
  (TTFT), more HBM capacity never lowers the maximum concurrency;
* **roofline bounds**: ``TPOT ≥ active weight bytes / (decode chips · fastest bandwidth)`` and
  ``TTFT ≥ prefill FLOPs of the shortest request / (prefill chips · peak)``: no model is faster
  than physics;
* **JAX** (only when the model declares ``differentiable=True``): :meth:`CostModelContract.single`
  gives a pure ``fn(params) -> metrics`` of one design; ``jax.grad`` of the summed TPOT w.r.t. HBM
  bandwidth is finite and ≤ 0, and ``jax.vmap(fn)`` over a batch equals :func:`codesign.evaluation.evaluate`.

This module imports pytest and numpy; it is a test helper, and nothing in the CLI imports it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np
import pytest

from .costmodel import DESIGN_METRICS, OPTIONAL_POINT_METRICS, POINT_METRICS, Evaluation

__all__ = ["CostModelContract", "DEFAULT_SPEC", "active_weight_bytes", "min_prefill_flops"]

#: The spec the suite prices unless a subclass sets ``spec_path`` (present in a source checkout).
DEFAULT_SPEC = Path(__file__).resolve().parents[1] / "specs" / "examples" / "gb200-gpt-oss-120b.toml"

_HBM_BW = "memory.hbm.bandwidth"
_HBM_CAP = "memory.hbm.capacity"
_CLASSES = ("bf16", "fp8", "fp6", "fp4", "int8")
#: Designs per batch in every batched check (one size: a JAX model compiles once per batch size).
N = 4


def active_weight_bytes(spec, formats) -> float:
    """Bytes of the weights one decode token must read [B]: every active parameter once.

    Non-expert active parameters (attention, dense FFN, router, norms, lm_head; the embedding
    lookup excluded) at ``deployment.weights_format``; the ``k`` routed experts per MoE layer and
    the shared experts at ``deployment.moe_weights_format`` (block scales included).
    """
    from .arch import account

    acc = account(spec.model)
    d = spec.deployment
    expert = acc.experts_per_token * acc.params_per_routed_expert * acc.n_moe_layers + acc.shared_expert_params
    wb = formats[d.weights_format].bytes_per_element
    mwb = formats[d.moe_weights_format or d.weights_format].bytes_per_element
    return (acc.active_params - expert) * wb + expert * mwb


def min_prefill_flops(spec) -> float:
    """FLOPs of the prefill of the shortest request the workload sends [FLOP].

    Lengths are drawn from ``[(1 − jitter)·ISL, ISL]``; the causal prefill of ``L`` tokens costs
    ``L · prefill_flops_per_token(L)`` (:meth:`codesign.arch.Accounting.prefill_flops_per_token`).
    """
    from .arch import account

    w = spec.workload
    isl = max(int(np.floor(w.isl * (1.0 - w.length_jitter))), 1)
    return isl * account(spec.model).prefill_flops_per_token(isl)


def _pool_chips(spec, role: str) -> int:
    """Chips of one instance that serves ``role`` (``"decode"`` or ``"prefill"``)."""
    d = spec.deployment
    pool = getattr(d, role) if d.mode == "disaggregated" else None
    if pool is not None:
        return pool.tp * pool.dp_attention * d.pp
    return d.tp * d.dp_attention * d.pp


def _rises(x: np.ndarray, feasible: np.ndarray, rtol: float) -> list[tuple[int, int]]:
    """``(row, column)`` where ``x[row + 1] > x[row]`` (beyond ``rtol``), both points feasible."""
    both = feasible[1:] & feasible[:-1]
    up = both & (x[1:] > x[:-1] * (1.0 + rtol) + 1e-30)
    return [tuple(int(i) for i in ij) for ij in np.argwhere(up)]


class CostModelContract:
    """Base class of the contract tests; subclass it and set :attr:`cost_model`.

    Attributes:
        cost_model: the registered name of the model under test (``deployment.cost_model``).
        spec_path: the spec to price (a TOML path); ``None`` uses :data:`DEFAULT_SPEC`. It must be
            feasible at its first concurrency point and vary memory, compute and capacity keys the
            model accepts (the checks whose key the model cannot vary are skipped with a reason).
        skip_reason: when set, the tests skip with this reason if the model is not registered
            (e.g. an optional plugin); otherwise a missing model fails.
        rtol: relative tolerance of equality and monotonicity checks (float32 models need ~1e-5).
        jax_params: spec key -> key of :meth:`single`'s parameter pytree, for the JAX checks
            (default: HBM bandwidth is ``"hbm_bw"``).
    """

    cost_model: ClassVar[str] = ""
    spec_path: ClassVar[str | os.PathLike | None] = None
    skip_reason: ClassVar[str | None] = None
    rtol: ClassVar[float] = 1e-5
    jax_params: ClassVar[Mapping[str, str]] = {_HBM_BW: "hbm_bw"}

    # ------------------------------------------------------------------ hooks for subclasses
    def single(self, spec, formats) -> tuple[dict, Any]:
        """``(params, fn)`` for one design, ``fn(params) -> {metric: array (c,)}``, pure in JAX.

        Differentiable models must override this (the analytical model returns the first two
        items of ``codesign_analytical.model.single(spec, formats)``).
        """
        raise NotImplementedError(
            f"cost model {self.cost_model!r} declares differentiable=True: override "
            f"{type(self).__name__}.single(spec, formats) -> (params, fn) so the suite can check grad and vmap")

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture(scope="class")
    @classmethod
    def pm(cls):
        from .pluginmanager import get_plugin_manager

        return get_plugin_manager()

    @pytest.fixture(scope="class")
    @classmethod
    def info(cls, pm):
        if not cls.cost_model:
            pytest.fail(f"{cls.__name__}: set the class attribute cost_model to the name under test")
        if cls.cost_model not in pm.cost_models:
            msg = (f"cost model {cls.cost_model!r} is not registered "
                   f"(registered: {', '.join(sorted(pm.cost_models)) or 'none'})")
            if cls.skip_reason:
                pytest.skip(f"{cls.skip_reason}: {msg}")
            pytest.fail(msg + "; is its plugin installed (`codesign plugins list`)?")
        return pm.cost_models[cls.cost_model]

    @pytest.fixture(scope="class")
    @classmethod
    def model(cls, pm, info):
        return pm.cost_model(cls.cost_model)

    @pytest.fixture(scope="class")
    @classmethod
    def formats(cls, pm):
        return pm.number_formats

    @pytest.fixture(scope="class")
    @classmethod
    def spec(cls):
        from .spec import load_spec

        path = Path(cls.spec_path) if cls.spec_path is not None else DEFAULT_SPEC
        if not path.exists():
            pytest.skip(f"spec {path} not found: set {cls.__name__}.spec_path to a spec your model prices")
        return load_spec(path)

    @pytest.fixture(scope="class")
    @classmethod
    def parameters(cls, model):
        return list(model.parameters())

    @pytest.fixture(scope="class")
    @classmethod
    def base(cls, info, spec, pm):
        return cls.run(spec, None, pm)

    @classmethod
    def run(cls, spec, overrides, pm, *, apply_tdp: bool = True) -> Evaluation:
        """Price through the core (:func:`codesign.evaluation.evaluate`): contract checks included;
        ``apply_tdp=False`` leaves points above the TDP as the model priced them."""
        from .evaluation import evaluate

        return evaluate(spec, overrides, cost_model=cls.cost_model, pm=pm, apply_tdp=apply_tdp)

    @classmethod
    def need(cls, parameters, *keys):
        missing = [k for k in keys if k not in parameters]
        if missing:
            pytest.skip(f"cost model {cls.cost_model!r} cannot vary {', '.join(missing)}")

    # ------------------------------------------------------------------ registration
    def test_registration(self, info, parameters):
        from .spec import quantity_kind

        assert info.name == self.cost_model and info.name == info.name.lower()
        assert isinstance(info.version, str) and info.version, "declare a version"
        assert isinstance(info.description, str)
        assert isinstance(info.differentiable, bool)
        assert info.accuracy is None or 0.0 < info.accuracy < 10.0, \
            f"accuracy is a median relative error (0.15 = 15 %), got {info.accuracy}"
        assert isinstance(parameters, list) and all(isinstance(k, str) for k in parameters)
        for key in parameters:
            if key.startswith("efficiency."):
                continue
            try:
                quantity_kind(key)
            except KeyError:
                pytest.fail(f"parameters() lists {key!r}, which is no spec key")

    def test_supports_the_spec(self, info, spec):
        assert info.supports is None or info.supports(spec), \
            f"{self.cost_model!r} declines the contract spec; set spec_path to one it supports"

    # ------------------------------------------------------------------ shapes and units
    def test_point_metric_shapes(self, base, spec):
        c = len(spec.workload.concurrency)
        np.testing.assert_array_equal(base.concurrency, spec.workload.concurrency)
        assert base.feasible.shape == (1, c) and base.feasible.dtype == bool
        for k in POINT_METRICS:
            assert k in base.points, f"missing point metric {k}"
            assert np.shape(base.points[k]) == (1, c), f"{k} has shape {np.shape(base.points[k])}"
        for k, v in base.points.items():
            assert np.shape(v) == (1, c), f"extra point metric {k} has shape {np.shape(v)}"

    def test_extra_metric_names_carry_their_unit(self, base):
        """A warning (not a failure) for each extra metric named as a known one without its unit
        suffix, or with another unit's (:func:`unitless_extra_metrics`): ``ttft`` was accepted
        and then read as no metric a search knows (plugin-author trial, session 46)."""
        import warnings

        for name, known in unitless_extra_metrics([*base.points, *base.design]):
            warnings.warn(f"cost model {self.cost_model!r} returns the extra metric {name!r}: name it with "
                          f"its unit suffix, in SI units, as {known!r} is (docs/plugins.md, extra metrics)",
                          UserWarning, stacklevel=1)

    def test_design_metric_shapes(self, base):
        for k in DESIGN_METRICS:
            assert k in base.design, f"missing design metric {k}"
        for k, v in base.design.items():
            assert np.shape(v) == (1,), f"design metric {k} has shape {np.shape(v)}"
        assert len(base.reasons) == 1
        assert base.point_reasons is None or np.shape(base.point_reasons) == base.feasible.shape

    def test_contract_spec_is_feasible(self, base):
        assert base.feasible[0, 0], ("the contract spec must be feasible at its first concurrency: "
                                     f"{base.reasons[0] or base.point_reasons}")

    def test_definitions_between_metrics(self, base, spec):
        """The metric definitions (README, Metrics); catches unit slips (ms for s, W for kW)."""
        f = base.feasible
        p = {k: np.asarray(v)[f] for k, v in base.points.items()}
        w = spec.workload
        osl = w.osl * (1.0 - w.length_jitter / 2.0)
        isl = w.isl * (1.0 - w.length_jitter / 2.0)
        tdp_kw = float(base.design["tdp_w"][0]) / 1e3
        rt = max(self.rtol * 10, 1e-4)
        # each identity names itself when it fails (a bare "ACTUAL 1.2968 DESIRED 1.0" said none:
        # fresh-user trial, session 39)
        np.testing.assert_allclose(p["interactivity_tok_s_user"] * p["tpot_s"], 1.0, rtol=rt,
                                   err_msg="interactivity_tok_s_user = 1 / tpot_s")
        np.testing.assert_allclose(p["e2e_latency_s"], p["ttft_s"] + (osl - 1.0) * p["tpot_s"], rtol=rt,
                                   err_msg="e2e_latency_s = ttft_s + (mean OSL - 1) * tpot_s")
        np.testing.assert_allclose(p["mixed_tok_s_per_kw"], p["mixed_tok_s_per_chip"] / tdp_kw, rtol=rt,
                                   err_msg="mixed_tok_s_per_kw = mixed_tok_s_per_chip / TDP [kW]")
        np.testing.assert_allclose(p["mixed_tok_s_per_kw_modelled"],
                                   p["mixed_tok_s_per_chip"] / (p["power_w"] / 1e3), rtol=rt,
                                   err_msg="mixed_tok_s_per_kw_modelled = mixed_tok_s_per_chip / power_w [kW]")
        np.testing.assert_allclose(p["energy_j_per_token"], p["power_w"] / p["mixed_tok_s_per_chip"], rtol=rt,
                                   err_msg="energy_j_per_token = power_w / mixed_tok_s_per_chip")
        np.testing.assert_allclose(p["mixed_tok_s_per_chip"] / p["output_tok_s_per_chip"], (isl + osl) / osl, rtol=rt,
                                   err_msg="mixed_tok_s_per_chip / output_tok_s_per_chip = (ISL + OSL) / OSL (means)")
        assert np.all(p["e2e_latency_s"] >= p["ttft_s"]), "e2e_latency_s >= ttft_s"

    # ------------------------------------------------------------------ batches
    def test_batch_shapes_and_rows(self, spec, pm, parameters):
        self.need(parameters, _HBM_BW)
        bw = spec.memory.hbm.bandwidth * np.array([0.25, 0.5, 0.75, 1.0])
        ev = self.run(spec, {_HBM_BW: bw}, pm)
        c = len(spec.workload.concurrency)
        assert ev.feasible.shape == (N, c)
        assert all(np.shape(v) == (N, c) for v in ev.points.values())
        assert all(np.shape(v) == (N,) for v in ev.design.values())
        assert len(ev.reasons) == N
        for i in (0, 2):
            one = self.run(spec, {_HBM_BW: bw[i:i + 1]}, pm)
            np.testing.assert_array_equal(one.feasible[0], ev.feasible[i])
            for k in POINT_METRICS:
                np.testing.assert_allclose(one.points[k][0], ev.points[k][i], rtol=self.rtol, err_msg=k)

    # ------------------------------------------------------------------ NaN handling
    def test_feasible_points_finite_nonnegative(self, base):
        f = base.feasible
        for k, v in base.points.items():
            v = np.asarray(v)[f]
            assert np.all(np.isfinite(v)) and np.all(v >= 0), f"{k} on feasible points: {v}"

    def test_design_metrics_finite_nonnegative(self, spec, pm, parameters):
        """Every design metric is a finite number >= 0 on every design, feasible or not (the chips,
        TDP and peak power of a design that cannot serve are still numbers); ``area_mm2`` may be
        NaN, "not modelled" (:data:`codesign.costmodel.NAN_DESIGN_METRICS`)."""
        from .costmodel import NAN_DESIGN_METRICS

        over = None
        if _HBM_CAP in parameters:  # one design whose weights cannot fit among feasible ones
            over = {_HBM_CAP: np.array([1e6] + [spec.memory.hbm.capacity] * (N - 1))}
        ev = self.run(spec, over, pm)
        for k in DESIGN_METRICS:
            v = np.asarray(ev.design[k], dtype=float)
            ok = (np.isfinite(v) & (v >= 0)) | (np.isnan(v) if k in NAN_DESIGN_METRICS else False)
            assert np.all(ok), f"design metric {k}: {v}"

    def test_infeasible_design_is_nan(self, spec, pm, parameters):
        """A design whose weights cannot fit (1 MB of HBM) is infeasible everywhere, NaN, explained."""
        self.need(parameters, _HBM_CAP)
        ev = self.run(spec, {_HBM_CAP: np.array([1e6] + [spec.memory.hbm.capacity] * (N - 1))}, pm)
        assert not ev.feasible[0].any(), "1 MB of HBM cannot hold the weights"
        for k in ev.points:  # POINT_METRICS, the optional ones and the model's own
            assert np.all(np.isnan(ev.points[k][0])), f"{k} is not NaN on infeasible points"
        assert ev.reasons[0], "an infeasible design needs a reason"
        assert ev.feasible[1, 0]

    def test_infeasible_points_are_nan_and_explained(self, spec, pm, parameters):
        self.need(parameters, _HBM_CAP)
        cap = spec.memory.hbm.capacity * np.array([0.25, 0.5, 0.75, 1.0])
        ev = self.run(spec, {_HBM_CAP: cap}, pm)
        conc = np.asarray(ev.concurrency)
        for i in range(ev.n_designs):
            for j in range(conc.size):
                if ev.feasible[i, j]:
                    # more users than KV slots may queue for admission (priced), but a point is
                    # never priced when not even one request's KV cache fits
                    assert ev.design["max_concurrency"][i] >= 1, \
                        "a feasible point on a design whose KV cache holds no request"
                    continue
                for k in ev.points:
                    assert np.isnan(ev.points[k][i, j]), f"{k} is not NaN on an infeasible point"
                if ev.point_reasons is not None:
                    assert ev.point_reasons[i, j], "an infeasible point needs a reason"

    # ------------------------------------------------------------------ determinism
    def test_deterministic(self, spec, pm, base):
        again = self.run(spec, None, pm)
        np.testing.assert_array_equal(again.feasible, base.feasible)
        for k in base.points:
            np.testing.assert_array_equal(again.points[k], base.points[k], err_msg=k)
        for k in base.design:
            np.testing.assert_array_equal(again.design[k], base.design[k], err_msg=k)

    # ------------------------------------------------------------------ monotonicity
    def test_more_hbm_bandwidth_never_slows_decode(self, spec, pm, parameters):
        self.need(parameters, _HBM_BW)
        # below the spec's bandwidth: a larger one may not be buildable (HBM stacks per package)
        ev = self.run(spec, {_HBM_BW: spec.memory.hbm.bandwidth * np.array([0.25, 0.5, 0.75, 1.0])}, pm)
        assert (ev.feasible[1:] & ev.feasible[:-1]).any(), "nothing feasible to compare"
        bad = _rises(ev.points["tpot_s"], ev.feasible, self.rtol)
        assert not bad, f"TPOT rises with HBM bandwidth at (design, point) {bad}:\n{ev.points['tpot_s']}"

    def test_more_compute_never_slows_prefill(self, spec, pm, parameters):
        pf = spec.chip.peak_flops
        keys = [f"chip.peak_flops.{c}" for c in _CLASSES if getattr(pf, c) is not None]
        self.need(parameters, *keys)
        s = np.array([0.5, 1.0, 2.0, 4.0])
        ev = self.run(spec, {k: getattr(pf, k.rsplit(".", 1)[1]) * s for k in keys}, pm)
        assert (ev.feasible[1:] & ev.feasible[:-1]).any(), "nothing feasible to compare"
        bad = _rises(ev.points["ttft_s"], ev.feasible, self.rtol)
        assert not bad, f"TTFT rises with compute at (design, point) {bad}:\n{ev.points['ttft_s']}"

    def test_more_hbm_capacity_never_lowers_max_concurrency(self, spec, pm, parameters):
        self.need(parameters, _HBM_CAP)
        # the model's own feasibility: with more KV slots a point may batch more users and draw more
        # power, and the core marks a point above the TDP infeasible (mark_over_tdp), by design
        ev = self.run(spec, {_HBM_CAP: spec.memory.hbm.capacity * np.array([0.25, 0.5, 0.75, 1.0])}, pm,
                      apply_tdp=False)
        mc = np.asarray(ev.design["max_concurrency"], dtype=float)  # finite: the core checks design metrics
        assert np.all(np.diff(mc) >= 0), f"max_concurrency falls as HBM grows: {mc}"
        assert np.all(ev.feasible[1:] >= ev.feasible[:-1]), "a point became infeasible with more HBM"

    # ------------------------------------------------------------------ roofline bounds
    def test_tpot_not_below_memory_roofline(self, base, spec, formats):
        """TPOT ≥ active weight bytes / (decode chips · bandwidth of the fastest tier holding them)."""
        mem = spec.memory
        bw = max([mem.hbm.bandwidth] + ([mem.sram.bandwidth] if mem.sram and mem.sram.capacity > 0 else []))
        bound = active_weight_bytes(spec, formats) / (_pool_chips(spec, "decode") * bw)
        tpot = base.points["tpot_s"][base.feasible]
        assert np.all(tpot >= bound * (1.0 - self.rtol)), \
            f"TPOT {tpot.min():.4g} s is below the memory roofline {bound:.4g} s"

    def test_ttft_not_below_compute_roofline(self, base, spec, formats):
        """TTFT ≥ prefill FLOPs of the shortest request / (prefill chips · peak of the activation format)."""
        peak = spec.chip.peak_flops.resolved()[formats[spec.deployment.activations_format].compute_class]
        bound = min_prefill_flops(spec) / (_pool_chips(spec, "prefill") * peak)
        ttft = base.points["ttft_s"][base.feasible]
        assert np.all(ttft >= bound * (1.0 - self.rtol)), \
            f"TTFT {ttft.min():.4g} s is below the compute roofline {bound:.4g} s"

    # ------------------------------------------------------------------ JAX
    def _jax(self, info):
        if not info.differentiable:
            pytest.skip(f"cost model {self.cost_model!r} declares differentiable=False")
        return pytest.importorskip("jax")

    def test_grad_hbm_bandwidth_finite_and_nonpositive(self, info, spec, formats):
        jax = self._jax(info)
        import jax.numpy as jnp

        params, fn = self.single(spec, formats)[:2]
        key = self.jax_params[_HBM_BW]
        g = jax.grad(lambda p: jnp.nansum(fn(p)["tpot_s"]))(params)[key]
        g = float(g)
        assert np.isfinite(g), f"d TPOT / d {key} is {g}"
        assert g <= 0.0, f"d TPOT / d {key} = {g} > 0: more bandwidth slows decode"

    def test_vmap_matches_evaluate(self, info, spec, formats, pm):
        jax = self._jax(info)
        import jax.numpy as jnp

        params, fn = self.single(spec, formats)[:2]
        key = self.jax_params[_HBM_BW]
        bw = spec.memory.hbm.bandwidth * np.array([0.25, 0.5, 0.75, 1.0])
        batch = {k: jnp.broadcast_to(v, (N,) + jnp.shape(v)) for k, v in params.items()}
        batch[key] = jnp.asarray(bw, dtype=jnp.asarray(params[key]).dtype)
        out = jax.jit(jax.vmap(fn))(batch)
        ev = self.run(spec, {_HBM_BW: bw}, pm)
        for k in ("tpot_s", "ttft_s", "mixed_tok_s_per_kw"):
            np.testing.assert_allclose(np.asarray(out[k], dtype=np.float64), ev.points[k],
                                       rtol=max(self.rtol * 10, 1e-4), err_msg=k)


def unitless_extra_metrics(names) -> list[tuple[str, str]]:
    """``(name, known)`` for each of ``names`` (metric names a cost model returns) that is no known
    metric but one of :data:`~codesign.costmodel.POINT_METRICS`, ``OPTIONAL_POINT_METRICS`` or
    ``DESIGN_METRICS`` with its unit suffix dropped (``ttft`` for ``ttft_s``) or changed (``tpot_ms``
    for ``tpot_s``): such a name reads as a known metric to a person, but no search, constraint or
    report knows it. ``[]`` when every extra name is unlike the known ones."""
    known = [*POINT_METRICS, *OPTIONAL_POINT_METRICS, *DESIGN_METRICS]
    stems = {k.rsplit("_", 1)[0]: k for k in known if "_" in k}
    out = []
    for name in names:
        if name in known:
            continue
        stem = name.rsplit("_", 1)[0] if "_" in name else None
        if name in stems:
            out.append((name, stems[name]))
        elif stem in stems:
            out.append((name, stems[stem]))
    return out
