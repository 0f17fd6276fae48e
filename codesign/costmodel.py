"""The cost-model contract and the metric vocabulary (DESIGN.md, vLLM's benchmark client, InferenceMAX).

A cost model turns one spec, plus optional arrays of searched parameter values, into an
:class:`Evaluation`: every point metric at every concurrency of the workload sweep, for every
design in the batch. The core knows no particular cost model; plugins register them through the
``codesign_cost_models`` hook.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

import attrs
import numpy as np
from attrs import frozen

if TYPE_CHECKING:  # pragma: no cover
    from .formats import NumberFormat
    from .spec import Spec

#: Metrics reported per concurrency point: name -> (unit for display, better direction or None).
POINT_METRICS: dict[str, tuple[str, str | None]] = {
    "ttft_s": ("s", "min"),
    "tpot_s": ("s", "min"),
    "itl_s": ("s", "min"),
    "e2e_latency_s": ("s", "min"),
    "interactivity_tok_s_user": ("tok/s/user", "max"),
    "output_tok_s_per_chip": ("tok/s", "max"),
    "mixed_tok_s_per_chip": ("tok/s", "max"),
    "mixed_tok_s_per_kw": ("tok/s/kW", "max"),
    "mixed_tok_s_per_kw_modelled": ("tok/s/kW", "max"),
    "power_w": ("W", "min"),
    "energy_j_per_token": ("J/tok", "min"),
}

#: Point metrics a cost model may add (consumers fall back to the metric named after the comma).
#: ``ttft_steady_s``: mean TTFT in steady state, without a benchmark's start-up wave (all users
#: starting at once); what a median over a long run measures. Falls back to ``ttft_s``.
#: ``decode_batch``: requests decoding at once over the whole deployment (the running batch; users
#: beyond it wait for admission or prefill). ``prefill_utilization``: share of the prefill capacity
#: (the prefill pool, or an aggregated engine's prefill share) in use; near 1 the loop is
#: prefill-bound and TTFT grows with every added user.
OPTIONAL_POINT_METRICS: dict[str, tuple[str, str | None]] = {
    "ttft_steady_s": ("s", "min"),
    "decode_batch": ("requests", None),
    "prefill_utilization": ("1", None),
}

#: Metrics of a whole design (independent of concurrency).
DESIGN_METRICS: dict[str, tuple[str, str | None]] = {
    "chips": ("chips", None),
    "tdp_w": ("W", None),
    "peak_power_w": ("W", "min"),
    "area_mm2": ("mm^2", "min"),
    "weights_bytes_per_chip": ("B", None),
    "max_concurrency": ("requests", "max"),
}

#: Design metrics a cost model may leave NaN, "not modelled" (every other design metric is a finite
#: number >= 0 on every design, feasible or not: :func:`codesign.evaluation.check_contract`).
NAN_DESIGN_METRICS = ("area_mm2",)

#: Design metrics that count whole things (chips; requests served at once): JSON documents give a
#: whole value as an integer (``"chips": 8``), as they give the concurrency.
COUNT_DESIGN_METRICS = ("chips", "max_concurrency", "peak_concurrency")


#: Design metrics a cost model gives as a fractional need of whole things, which reports give as the
#: whole count needed (:func:`whole_needed`): ``hbm_stacks``, the analytical model's HBM capacity or
#: bandwidth over one stack's (the larger), which it prices area on and a search may bound or
#: minimise as it is. ``"hbm_stacks": 6.67`` in ``evaluate --json`` read as a stack count; a package
#: carries 7 (fresh-user trial, session 43).
WHOLE_NEEDED_METRICS = ("hbm_stacks",)


def whole_needed(x: float) -> int:
    """The whole count a fractional need ``x`` takes: ``x`` rounded up, past a float32 cost model's
    rounding (relative 1e-6: 6 TB/s over 1.2 TB/s per stack is 5.00000048 there, 5 stacks, not 6).

    Raises:
        ValueError: ``x`` is not finite (callers keep NaN and inf as they are)."""
    if not math.isfinite(x):
        raise ValueError(f"no whole count of {x}")
    return max(0, math.ceil(x * (1.0 - 1e-6)))


def design_value(key: str, x) -> float | int:
    """A metric's value for a JSON document: a float; a count (:data:`COUNT_DESIGN_METRICS`) with a
    whole value as an int, so ``"chips": 8``, not ``8.0`` (``evaluate``, ``optimize`` and ``sweep``
    alike); a fractional need (:data:`WHOLE_NEEDED_METRICS`) as the whole count it takes, an int
    (``"hbm_stacks": 7`` for 6.67). NaN and inf stay floats (``jsonable`` makes them null)."""
    x = float(x)
    if key in WHOLE_NEEDED_METRICS and math.isfinite(x):
        return whole_needed(x)
    return int(x) if key in COUNT_DESIGN_METRICS and x.is_integer() else x

#: Summary metrics, computed by :meth:`Evaluation.summary` from the feasible points.
SUMMARY_METRICS: dict[str, tuple[str, str]] = {
    "peak_mixed_tok_s_per_kw": ("tok/s/kW", "max"),
    "min_e2e_latency_s": ("s", "min"),
    "min_tpot_s": ("s", "min"),
    "min_ttft_s": ("s", "min"),
    "peak_mixed_tok_s_per_chip": ("tok/s", "max"),
    "peak_mixed_tok_s_per_kw_modelled": ("tok/s/kW", "max"),
}

#: The operating point of ``peak_mixed_tok_s_per_kw``: the concurrency (users) of the feasible point
#: where the peak is reached and that point's TTFT and TPOT [s], computed by
#: :meth:`Evaluation.peak_point`. A peak tok/s per kW says nothing of the latency it is served at
#: (a saturated engine's peak can sit at a TTFT of minutes); these say it. Reported beside the peak,
#: never searched (no direction).
PEAK_POINT_METRICS: dict[str, tuple[str, None]] = {
    "peak_concurrency": ("users", None),
    "ttft_at_peak_s": ("s", None),
    "tpot_at_peak_s": ("s", None),
}


#: Relative resolution of the peak's operating point: throughputs within it of the peak are the
#: peak (float32 noise on a plateau; the search's Pareto resolution, 0.01%).
PEAK_RESOLUTION = 1e-4


#: How a unit of these tables is printed for a person where its written form differs: the tables
#: keep ``mm^2``, a form the unit parser reads (a bound's unit, :func:`codesign.units.parse_in_unit`)
#: and the ``unit`` field of ``optimize``/``sweep`` JSON gives, while every text, table and plot
#: says ``mm²`` (``Constraint.describe`` printed ``area_mm2 <= 1716 mm^2`` beside evaluate's
#: ``area 1,716 mm²``).
DISPLAY_UNITS = {"mm^2": "mm²"}


def display_unit(unit: str) -> str:
    """``unit`` as a person reads it (:data:`DISPLAY_UNITS`; any other unit as it is)."""
    return DISPLAY_UNITS.get(unit, unit)


def metric_unit(name: str) -> tuple[str, str | None]:
    """``(unit, better)`` of any metric name; raises KeyError for an unknown one."""
    for table in (SUMMARY_METRICS, POINT_METRICS, OPTIONAL_POINT_METRICS, DESIGN_METRICS, PEAK_POINT_METRICS):
        if name in table:
            return table[name]
    raise KeyError(name)


@frozen(kw_only=True)
class Evaluation:
    """A cost model's answer for a batch of designs over the concurrency sweep.

    Attributes:
        concurrency: shape ``(c,)``, the workload's sweep.
        points: metric name -> array of shape ``(n, c)`` (``n`` designs); every key of
            :data:`POINT_METRICS` that the model computes. Infeasible points hold NaN in every
            point metric (the core refuses a number there as the model's bug:
            :func:`codesign.evaluation.check_contract`).
        feasible: bool array ``(n, c)``: the point can be served (weights and KV fit, ...).
        design: metric name -> array ``(n,)`` (see :data:`DESIGN_METRICS`).
        reasons: per design, why it is infeasible (``""`` when it is not); one string each.
        point_reasons: ``(n, c)`` strings, why each point is infeasible (``""`` when feasible).
    """

    concurrency: np.ndarray
    points: dict[str, np.ndarray]
    feasible: np.ndarray
    design: dict[str, np.ndarray] = attrs.field(factory=dict)
    reasons: list[str] = attrs.field(factory=list)
    point_reasons: np.ndarray | None = None

    @property
    def n_designs(self) -> int:
        return int(self.feasible.shape[0])

    def summary(self, *, tpot_reference_s: float | None = None) -> dict[str, np.ndarray]:
        """Summary metrics over the feasible points of each design, each shape ``(n,)``.

        ``peak_*`` is the maximum and ``min_*`` the minimum over the feasible concurrency points;
        NaN where a design has no feasible point. With ``tpot_reference_s`` it adds
        ``mixed_tok_s_per_kw_at_tpot`` (the Jalapeño table's "throughput at the baseline's TBT"):
        the highest mixed tok/s per kW among feasible points with TPOT <= the reference, NaN when
        no point is that fast (there is no throughput at that interactivity, rather than zero).
        """
        f = self.feasible
        out: dict[str, np.ndarray] = {}

        def reduce(metric, fn, fill):
            x = np.where(f, self.points[metric], fill)
            r = fn(x, axis=1)
            return np.where(f.any(axis=1), r, np.nan)

        out["peak_mixed_tok_s_per_kw"] = reduce("mixed_tok_s_per_kw", np.max, -np.inf)
        out["peak_mixed_tok_s_per_chip"] = reduce("mixed_tok_s_per_chip", np.max, -np.inf)
        if "mixed_tok_s_per_kw_modelled" in self.points:
            out["peak_mixed_tok_s_per_kw_modelled"] = reduce("mixed_tok_s_per_kw_modelled", np.max, -np.inf)
        out["min_e2e_latency_s"] = reduce("e2e_latency_s", np.min, np.inf)
        out["min_tpot_s"] = reduce("tpot_s", np.min, np.inf)
        out["min_ttft_s"] = reduce("ttft_s", np.min, np.inf)
        if tpot_reference_s is not None:
            ok = f & (self.points["tpot_s"] <= tpot_reference_s)
            x = np.where(ok, self.points["mixed_tok_s_per_kw"], -np.inf)
            out["mixed_tok_s_per_kw_at_tpot"] = np.where(ok.any(axis=1), x.max(axis=1), np.nan)
        return out

    def peak_point(self) -> dict[str, np.ndarray]:
        """The operating point of each design's peak mixed tok/s per kW (:data:`PEAK_POINT_METRICS`),
        each shape ``(n,)``: the lowest concurrency whose feasible point is within
        :data:`PEAK_RESOLUTION` of the highest ``mixed_tok_s_per_kw`` (a plateau is reached at its
        start) and that point's ``ttft_s`` and ``tpot_s``. NaN where a design has no feasible
        point, as the peak is."""
        f = self.feasible
        x = np.where(f, np.nan_to_num(np.asarray(self.points["mixed_tok_s_per_kw"], dtype=np.float64),
                                      nan=-np.inf), -np.inf)
        # the lowest concurrency within PEAK_RESOLUTION of the peak: on a plateau (users beyond the
        # batch limit queue at the same throughput) float32 noise in the last digit picked 512 users
        # at a 91 s TTFT over 128 at 13 s (fresh-user trial, session 39)
        top = x.max(axis=1, keepdims=True)
        i = np.argmax(x >= top - PEAK_RESOLUTION * np.abs(top), axis=1)
        rows = np.arange(f.shape[0])
        ok = f.any(axis=1)
        conc = np.broadcast_to(np.asarray(self.concurrency, dtype=np.float64), f.shape)
        return {"peak_concurrency": np.where(ok, conc[rows, i], np.nan),
                "ttft_at_peak_s": np.where(ok, np.asarray(self.points["ttft_s"], dtype=np.float64)[rows, i], np.nan),
                "tpot_at_peak_s": np.where(ok, np.asarray(self.points["tpot_s"], dtype=np.float64)[rows, i], np.nan)}

    def take(self, i: int) -> "Evaluation":
        """The single design ``i`` as an :class:`Evaluation` with ``n == 1``."""
        sl = slice(i, i + 1)
        return Evaluation(
            concurrency=self.concurrency,
            points={k: v[sl] for k, v in self.points.items()},
            feasible=self.feasible[sl],
            design={k: v[sl] for k, v in self.design.items()},
            reasons=self.reasons[sl],
            point_reasons=None if self.point_reasons is None else self.point_reasons[sl],
        )


class CostModel(Protocol):
    """What a cost model's factory returns.

    A cost model may also define ``check(spec) -> None``: raise
    :class:`~codesign.errors.SpecError` (file, key path, what was expected) for a spec it would
    refuse to price, without pricing it (it must be cheap: no compilation). The core calls it
    before every ``evaluate``, and ``codesign optimize``, ``sweep`` and ``worker`` call it before
    they print their warnings or open storage, so that a refusal is the one line a user sees
    (:func:`codesign.evaluation.check_priceable`). Optional: a model without it is first asked
    when it prices.
    """

    def parameters(self) -> list[str]:
        """Spec key paths (``"memory.hbm.bandwidth"``) that :meth:`evaluate` accepts as arrays."""

    def evaluate(
        self,
        spec: "Spec",
        formats: Mapping[str, "NumberFormat"],
        overrides: Mapping[str, Any] | None = None,
    ) -> Evaluation:
        """Price a batch of designs.

        Args:
            spec: the base design (SI units throughout).
            formats: every registered number format by name.
            overrides: spec key path -> array ``(n,)`` of values in SI units (or format names for
                format keys); ``n`` designs are the base spec with these values substituted.
                ``None`` prices the base spec alone (``n == 1``).

        Returns:
            An :class:`Evaluation` with ``n`` designs.
        """


def _as_accuracy(value):
    """A declared accuracy as a Python float (a numpy scalar too: ``plugins list --json`` prints it);
    anything that is no real number is left as it is, for :func:`_check_accuracy` to refuse."""
    import numbers

    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else value


def _check_accuracy(info, attribute, value) -> None:
    """``accuracy`` is ``None`` (undeclared) or a finite number > 0. NaN reached ``plugins list
    --json`` as a bare ``NaN`` (invalid JSON) and a negative value won ``cost_model = "auto"``
    (fresh-user trial, session 27). Raised inside a plugin's ``codesign_cost_models``, the plugin
    manager names the plugin and skips its records."""
    import math

    if value is None or (isinstance(value, float) and math.isfinite(value) and value > 0):
        return
    from .errors import format_value

    raise ValueError(f"cost model {info.name!r}: accuracy = {format_value(value)}; expected None (undeclared) "
                     f"or the measured median relative TPOT error, a finite number > 0 (0.15 = 15 %)")


@frozen(kw_only=True)
class CostModelInfo:
    """A cost model registered through ``codesign_cost_models``.

    Attributes:
        name: lowercase; ``deployment.cost_model`` selects it.
        version: the model's own version (reported with every result, and stored with every
            search: a search is not resumed under another version, so change it with the numbers).
        description: one line.
        factory: zero-argument callable returning a :class:`CostModel`.
        differentiable: ``True`` if ``evaluate`` is built on JAX and supports ``grad``.
        accuracy: declared median relative error of ``tpot_s`` against measurements (``0.15`` =
            15 %), a finite number > 0, or ``None`` when undeclared (anything else, NaN or a
            negative number, raises ValueError). ``deployment.cost_model = "auto"`` picks the loaded
            model with the smallest declared ``accuracy`` that supports the spec; undeclared
            models rank last.
        accuracy_source: where ``accuracy`` was measured (data file, rows, date), one line.
        supports: optional ``f(spec) -> bool``: can this model price ``spec`` at all (e.g. only
            aggregated serving)? Must be cheap and import nothing heavy. ``None`` means "any spec".
        reads_efficiency: ``False`` for a model with no achievable-efficiency knobs (a bare
            roofline): a spec priced by it that sets ``[efficiency]`` or ``efficiency_from`` is
            refused (exit 2, :func:`codesign.baselines.resolve_efficiency`) rather than priced
            without them. ``True`` (the default): the model reads ``spec.efficiency`` and validates
            its keys in its ``check(spec)``.
        plugin: the registering plugin's name (set by the plugin manager).
    """

    name: str
    version: str
    description: str
    factory: Callable[[], CostModel] = attrs.field(eq=False, repr=False)
    differentiable: bool = False
    accuracy: float | None = attrs.field(default=None, converter=_as_accuracy, validator=_check_accuracy)
    accuracy_source: str = ""
    supports: Callable[[Any], bool] | None = attrs.field(default=None, eq=False, repr=False)
    reads_efficiency: bool = True
    plugin: str = ""
