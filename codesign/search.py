"""Search: Optuna multi-objective optimisation over a spec's ``[search]`` parameters.

Data flow: spec ``[search]`` → :class:`SearchSpace` → Optuna study (ask a batch) → one vectorised
cost-model call for the batch (:func:`codesign.evaluation.evaluate` with array overrides) →
objectives and constraints (``trial.set_constraint``) → tell. Every trial's metrics are stored in
its ``user_attrs`` so that reports are rebuilt from the storage alone, and a rerun of the same
command resumes the same study (a journal file in the output directory by default).

Example ``[search]`` table::

    [search]
    trials = 200
    sampler = "nsga2"
    reference = "../examples/gb200-gpt-oss-120b.toml"   # or a registered baseline: "gb200"
    [search.params]
    "memory.hbm.bandwidth" = { low = "2 TB/s", high = "16 TB/s", log = true }
    "deployment.tp" = { choices = [1, 2, 4, 8] }
    [[search.objectives]]
    metric = "peak_mixed_tok_s_per_kw"
    direction = "maximize"
    [[search.constraints]]
    metric = "peak_power_w"
    max = "700 W"
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import sys
import warnings
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from attrs import frozen

from . import interrupts
from .costmodel import DESIGN_METRICS, POINT_METRICS, SUMMARY_METRICS, WHOLE_NEEDED_METRICS, display_unit, whole_needed
from .errors import (PLUGIN_EXCEPTIONS, BugError, CodesignError, ExitCode, Interrupted, PluginBugError, SpecError,
                     close_name, format_value)
from .evaluation import (FORMAT_FIELDS, TDP_RTOL, _watts, check_names, check_priceable, cost_model_name, meets_slos,
                         slo_bounds)
from .spec import (SearchParam, Spec, absent_tier_problem, deployment_value_problem, quantity_allows_zero, quantity_kind,
                   toml_key_path, unread_key_problem)
from .units import KINDS, QuantityError, format_quantity, parse_in_unit, parse_quantity

FORMAT_KEY = re.compile(r"^deployment\.\w*format$")
INT_KEYS = ({"network.scaleup_domain", "deployment.tp", "deployment.pp", "deployment.ep",
             "deployment.dp_attention", "deployment.max_batch_size", "deployment.scheduler_recv_interval",
             "deployment.attention_dp_balance_timeout_iters",
             "deployment.speculative_tokens"}
            | {f"deployment.{r}.{k}" for r in ("prefill", "decode") for k in ("chips", "tp", "ep", "dp_attention")})

#: Metrics a search can optimise or constrain: summary metrics and design metrics (per design).
SEARCH_METRICS = {**SUMMARY_METRICS, **{k: v for k, v in DESIGN_METRICS.items() if v[1]},
                  "hbm_stacks": ("stacks", "min"), "mixed_tok_s_per_kw_at_tpot": ("tok/s/kW", "max")}

#: Numerics quality of the number format each role uses: SQNR [dB] of the format's ``quantize`` on
#: synthetic standard-normal blocks (:func:`format_sqnr_db`), one value per format name.
NUMERICS_METRICS = {f"{role}_sqnr_db": ("dB", "max") for role in ("weights", "moe_weights", "kv_cache", "activations")}
SEARCH_METRICS.update(NUMERICS_METRICS)

#: Point metrics a constraint may bound as a service-level objective (SLO). An SLO constraint such as
#: ``{ metric = "ttft_s", max = "2 s" }`` drops every concurrency point that misses it before the
#: summary metrics are taken, so ``peak_mixed_tok_s_per_kw`` becomes "peak tok/s per kW at SLO"
#: (goodput), as an architect reads an InferenceMAX curve at a latency target. Its violation
#: (``ttft_s_over_2s``) is the best value over the design's feasible points minus the bound; a design
#: none of whose points meet all SLOs at once is infeasible.
SLO_METRICS = dict(POINT_METRICS)

#: How the reason of a design that misses its SLOs at every concurrency point begins.
SLO_MISS = "no concurrency point meets the SLOs"

#: Unit kind (codesign.units.KINDS) of a metric's SI value, and the factor from SI to the metric's
#: unit, by the end of the metric's name. A constraint bound on such a metric is a quantity with its
#: unit ("2 s", "700 W"); a bare number is refused, as everywhere else in a spec (``max = 2`` on
#: ``ttft_s`` was read as 2 s, and ``max = 50`` meant as a TPOT in ms as 50 s: fresh-user trial).
#: Counts and rates (tok/s/kW, requests, dB, ...) are bounded by bare numbers in their unit, or by
#: strings in a unit of the same dimension ("100 tok/s/kW", "0.1 tok/J"; :func:`_metric_value`).
_METRIC_KIND = {"_s": ("s", 1.0), "_w": ("W", 1.0), "area_mm2": ("m^2", 1e6), "_j_per_token": ("J", 1.0)}

#: Units of metrics that may be negative (an SQNR in dB below 0): their bounds may be too.
_SIGNED_UNITS = ("dB",)


@frozen
class Param:
    """One searched parameter; values are in SI units (format names for format keys)."""

    key: str
    kind: str | None
    type: str  # "float" | "int" | "categorical"
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple = ()


def bound_unit(metric: str) -> str:
    """The unit a search metric's bound is written in (:data:`SEARCH_METRICS`, :data:`SLO_METRICS`;
    "" for any other metric): the one lookup a constraint's name, description and records share."""
    return (SEARCH_METRICS.get(metric) or SLO_METRICS.get(metric) or ("", ""))[0]


@frozen
class Constraint:
    metric: str
    bound: float  # in the metric's own unit
    sense: str  # "max" (metric <= bound) or "min" (metric >= bound)

    @property
    def slo(self) -> bool:
        """A bound on a point metric (filters the concurrency points, see :data:`SLO_METRICS`)."""
        return self.metric in SLO_METRICS

    @property
    def unit(self) -> str:
        """The unit the bound is in (:func:`bound_unit`)."""
        return bound_unit(self.metric)

    @property
    def name(self) -> str:
        unit = self.unit
        return f"{self.metric}_{'over' if self.sense == 'max' else 'under'}_{self.bound:g}{unit}"

    def describe(self) -> str:
        """The constraint as a person reads it: ``peak_power_w <= 700 W``, ``area_mm2 <= 1716 mm²``
        (the unit as printed, :func:`codesign.costmodel.display_unit`; :attr:`name` keeps ``mm^2``)."""
        unit = display_unit(self.unit)
        return f"{self.metric} {'<=' if self.sense == 'max' else '>='} {self.bound:g}" + (f" {unit}" if unit else "")


@frozen
class SearchSpace:
    params: tuple[Param, ...]
    objectives: tuple[tuple[str, str], ...]
    constraints: tuple[Constraint, ...]
    #: Deployment choices evaluated for every design: ``((key, (choice, ...)), ...)``.
    envelope: tuple[tuple[str, tuple], ...] = ()

    def combos(self) -> list[dict]:
        """Every combination of the envelope's choices (``[{}]`` without an envelope)."""
        keys = [k for k, _ in self.envelope]
        return [dict(zip(keys, c)) for c in itertools.product(*[v for _, v in self.envelope])] or [{}]


def _err(spec: Spec, path: str, msg: str) -> SpecError:
    return SpecError([(spec.path or "<spec>", path, msg)])


def build_space(spec: Spec, parameters: list[str]) -> SearchSpace:
    """Validate ``[search]`` against the spec schema and the cost model's variable keys.

    Args:
        parameters: the keys the cost model can vary (:meth:`CostModel.parameters`).

    Raises:
        SpecError: a problem in ``[search]``, at its TOML key path with the dotted key quoted
            (``search.params."memory.hbm.bandwidth"``, as the spec loader names it).
    """
    from .spec import _origin

    s = spec.search
    if s is None:
        raise _err(spec, "search", "missing: `codesign optimize`, `sweep` and `worker` need a [search] table")
    parameters = _readable(spec, parameters)
    problems = []
    params = []
    for key, p in s.params.items():
        where = toml_key_path("search", "params", key)  # search.params."memory.hbm.bandwidth", as the loader says it
        if why := _param_key_problem(spec, key, parameters):  # in the file that wrote the key
            problems.append((_origin(spec.origins, ("search", "params", key), spec.path), where, why))
            continue
        kind = quantity_kind(key)
        try:
            prm = _param(key, kind, p)
        except ParamError as exc:  # a loaded spec has none (codesign.spec checks them): as it says them
            problems.append((spec.path, toml_key_path("search", "params", key, *((exc.field,) if exc.field else ())),
                             str(exc)))
            continue
        if why := searched_value_problem(spec, key, p):  # nor these (codesign.spec checks them)
            problems.append((spec.path, where, why))
            continue
        params.append(prm)
    if not s.params:
        problems.append((spec.path, "search.params", "declare at least one parameter to search"))
    objectives = []
    for i, o in enumerate(s.objectives):
        if why := metric_problem(o.metric) or unmodelled_metric_problem(spec, o.metric):
            problems.append((spec.path, f"search.objectives.{i}.metric", why))
        elif (j := next((j for j, (m, _) in enumerate(objectives) if m == o.metric), None)) is not None:
            # a metric maximised and minimised, or the same objective twice, was searched silently
            problems.append((spec.origin_of("search", "objectives"), f"search.objectives.{i}.metric",
                             f"{o.metric!r} is already search.objectives.{j} ({s.objectives[j].direction}); "
                             "give each metric one objective"))
        objectives.append((o.metric, o.direction))
    if not objectives:
        problems.append((spec.path, "search.objectives", "declare at least one objective"))
    constraints = []
    for i, c in enumerate(s.constraints):
        where = f"search.constraints.{i}"
        if why := metric_problem(c.metric, slo=True) or unmodelled_metric_problem(spec, c.metric):
            problems.append((spec.path, f"{where}.metric", why))
            continue
        if bad := constraint_problem(c):
            problems.append((spec.path, f"{where}.{bad[0]}" if bad[0] else where, bad[1]))
            continue
        sense, raw = ("max", c.max) if c.max is not None else ("min", c.min)
        constraints.append(Constraint(c.metric, _metric_value(c.metric, raw, sense), sense))
    # [workload.slo] is an SLO constraint on each point metric it bounds (it was read, its units
    # checked, and then used by no command: fresh-user trial, session 30)
    for metric, bound in slo_bounds(spec):
        if (c := Constraint(metric, bound, "max")) not in constraints:
            constraints.append(c)
    envelope = []
    for key, choices in s.envelope.items():
        where = toml_key_path("search", "envelope", key)
        if why := _envelope_problem(spec, key, parameters):
            problems.append((_origin(spec.origins, ("search", "envelope", key), spec.path), where, why))
            continue
        if why := envelope_problem(spec.deployment, key, choices, s.params):  # nor these (codesign.spec checks them)
            problems.append((spec.path, where, why))
            continue
        envelope.append((key, _param(key, quantity_kind(key), SearchParam(choices=tuple(choices))).choices))
    if problems:
        raise SpecError(problems)
    return SearchSpace(tuple(params), tuple(objectives), tuple(constraints), tuple(envelope))


def _param_key_problem(spec: Spec, key: str, parameters: list[str] | None) -> str | None:
    """Why ``key`` of ``[search.params]`` cannot be searched: no spec key (a typo), or one the cost
    model (which can vary ``parameters``; None: not known, not judged) cannot vary; None when it can be."""
    if key.startswith("efficiency."):  # a dict of knobs, no spec key path: "no such spec key" misled
        return ("cannot be searched: efficiency knobs are the serving stack's software efficiency, fitted "
                "to measured data by codesign calibrate, not a design choice; set a value in [efficiency] "
                "(or take a baseline's with efficiency_from)")
    try:
        quantity_kind(key)
    except KeyError:
        # a typo gets the closest key the cost model can vary, as a misspelt spec key gets its own
        # (fresh-user trial, session 30: "memory.hbm.bandwith" had no suggestion)
        return "no such spec key" + _param_did_you_mean(
            key, [k for k in parameters or () if not k.startswith("efficiency.")])
    if why := unmodelled_key_problem(spec, key, _varied(spec)):
        return why
    if parameters is not None and key not in parameters:
        searchable = [k for k in parameters if not k.startswith("efficiency.")]  # refused above
        return (f"the cost model {spec.deployment.cost_model!r} cannot vary this key; it can vary "
                f"{', '.join(searchable)}")
    return None


def unmodelled_key_problem(spec: Spec, key: str, varied: Iterable[str] = ()) -> str | None:
    """Why a search or a study grid cannot vary ``key`` on ``spec`` whatever the cost model: a key
    of a memory tier the spec does not declare (:func:`codesign.spec.absent_tier_problem`), a
    deployment key the spec's serving mode does not read (:func:`codesign.spec.unread_key_problem`;
    ``varied``: the other keys the search or grid varies), or ``chip.tdp`` on a chip with no
    ``[chip.energy]``; None otherwise."""
    if why := absent_tier_problem(spec, key) or unread_key_problem(spec.deployment, key, varied):
        return why
    if key == "chip.tdp" and spec.chip.energy is None:
        # power is then not modelled (cost models take it as the TDP): every TDP priced alike, so
        # tok/s per kW rose without bound as the search lowered it (noticed in session 32)
        return ("cannot be searched without [chip.energy]: power is then not modelled but taken as "
                "chip.tdp, so a lower TDP costs nothing and the search drives it to its low bound; give the "
                "chip's energy figures (include specs/technology/n4p.toml, as the shipped hardware does)")
    return None


def _varied(spec: Spec) -> list[str]:
    """The keys ``spec``'s ``[search]`` varies (params and envelope)."""
    return [*spec.search.params, *spec.search.envelope] if spec.search is not None else []


def _readable(spec: Spec, parameters: list[str] | None) -> list[str] | None:
    """The cost model's variable ``parameters`` without the keys ``spec``'s serving mode leaves
    unread (:func:`codesign.spec.unread_key_problem`): what a refusal says "it can vary"."""
    if parameters is None:
        return None
    return [k for k in parameters if not unread_key_problem(spec.deployment, k, _varied(spec))]


def _envelope_problem(spec: Spec, key: str, parameters: list[str] | None) -> str | None:
    """Why ``[search.envelope]`` key ``key`` is refused: one the serving mode leaves unread, said
    as such, else :func:`_envelope_key_problem`."""
    return unread_key_problem(spec.deployment, key, _varied(spec)) or _envelope_key_problem(key, parameters)


def _envelope_key_problem(key: str, parameters: list[str] | None) -> str | None:
    """Why ``key`` of ``[search.envelope]`` is refused (it takes deployment keys the cost model can
    vary), or None."""
    if not key.startswith("deployment.") or (parameters is not None and key not in parameters):
        # name them, and the closest, as [search.params] does (fresh-user trial, session 31: a
        # misspelt "deployment.tpp" got neither)
        why = "the envelope takes deployment keys the cost model can vary"
        allowed = [k for k in parameters or () if k.startswith("deployment.")]
        if not allowed:
            return why
        try:  # a real spec key gets no suggestion: it is not misspelt
            quantity_kind(key)
            hint = ""
            if key.split(".", 1)[0] in ("chip", "memory", "network"):
                # the envelope is the deployments tried per design; hardware is what the search varies
                hint = "; a hardware key is searched in [search.params]"
        except KeyError:
            hint = _did_you_mean(key, allowed, cutoff=0.8)
        return f"{why}{hint} (it can vary {', '.join(allowed)})"
    return None


def _did_you_mean(key: str, candidates, *, cutoff: float) -> str:
    """``"; did you mean 'x'?"`` for the candidate ``key`` most likely stands for
    (:func:`codesign.errors.close_name`: one differing in case, else difflib ratio >= ``cutoff``),
    else ``""``."""
    close = close_name(key, candidates, cutoff=cutoff)
    return f"; did you mean {close!r}?" if close else ""


def _param_did_you_mean(key: str, candidates) -> str:
    """:func:`_did_you_mean` for a misspelt ``[search.params]`` key: first the candidate of the same
    table whose last part is closest to ``key``'s (ratio >= 0.6, as the spec loader judges a
    misspelt key of a table: ``'chip.tdp'`` for ``'chip.tpd'``, which scored 0.875 as a whole key
    and got no guess, while ``[chip] tpd`` got one: fresh-user trial, session 44), else the closest
    whole key (ratio >= 0.9: a table's keys share most of their letters)."""
    table, _, last = key.rpartition(".")
    same = {c.rpartition(".")[2]: c for c in candidates if c.rpartition(".")[0] == table}
    if close := close_name(last, list(same), cutoff=0.6):
        return f"; did you mean {same[close]!r}?"
    return _did_you_mean(key, candidates, cutoff=0.9)


def search_key_problems(spec: Spec, parameters: list[str] | None) -> list[tuple[str, str, str]]:
    """The keys of ``[search.params]`` and ``[search.envelope]`` that :func:`build_space` refuses
    (a misspelt spec key, or one the cost model cannot vary), each ``(file that wrote it, TOML key
    path, why)``; ``[]`` for a spec without ``[search]``. ``codesign evaluate`` refuses them too: it
    prices no search, but a typo there went unsaid until ``codesign optimize`` ran the spec."""
    from .spec import _origin

    if spec.search is None:
        return []
    out = []
    parameters = _readable(spec, parameters)
    for table, keys, problem in (("params", spec.search.params, lambda k: _param_key_problem(spec, k, parameters)),
                                 ("envelope", spec.search.envelope, lambda k: _envelope_problem(spec, k, parameters))):
        for key in keys:
            if why := problem(key):
                path = ("search", table, key)
                out.append((_origin(spec.origins, path, spec.path or "<spec>"), toml_key_path(*path), why))
    return out


def check_search(spec: Spec) -> SearchSpace:
    """The search space of ``spec``, every problem :func:`run_search` would refuse it for said at
    once (unknown cost model or number format, ``[search]`` keys, objectives, constraints, the
    reference), so a CLI can refuse before it prints its warnings or opens storage.

    Raises:
        SpecError: one line per problem, naming file and key path.
    """
    from .pluginmanager import get_plugin_manager

    pm = get_plugin_manager()
    check_names(spec, pm=pm)
    space = _build_space(spec, pm.cost_model_parameters(cost_model_name(spec, pm=pm)), pm)
    _check_searched_formats(spec, space, pm)
    check_priceable(spec, pm=pm)  # a cost model's own refusal ([efficiency] knobs) before the warnings
    if spec.search is not None and spec.search.reference:
        from .baselines import reference_spec

        # a reference that names nothing: optimize printed its warnings above this refusal, and
        # sweep (which prices no reference) ran (fresh-user trial, session 33); a reference file
        # its cost model refuses, likewise (session 36)
        ref = reference_spec(spec, spec.search.reference, pm=pm)
        try:
            check_priceable(ref, pm=pm)
        except SpecError as exc:  # the reference file's problem, and the key that led to it
            # (a user read only the reference file's name and looked for it in vain: session 36)
            via = f" (the search.reference of {spec.origin_of('search', 'reference')})"
            raise SpecError([(f, k, m + via) for f, k, m in exc.problems]) from None
    if problems := unservable_space_problems(spec, space, pm):  # a search no trial of which can succeed
        raise SpecError(problems)
    if problems := _unmodelled_by_cost_model(spec, pm):
        raise SpecError(problems)
    return space


def unmodelled_design_metrics(spec: Spec, pm=None) -> tuple[str, ...]:
    """The design metrics of :data:`codesign.costmodel.NAN_DESIGN_METRICS` (``area_mm2``) that the
    spec's cost model leaves NaN, "not modelled", on the spec's own design: one evaluation of
    ``spec`` as it is (a design metric does not depend on the concurrency; a cost model that does
    not model area gives NaN on every design). ``()`` when it gives each.

    Raises:
        CodesignError: what pricing ``spec`` raises (:func:`codesign.evaluation.evaluate`).
    """
    from .costmodel import NAN_DESIGN_METRICS
    from .evaluation import evaluate

    ev = evaluate(spec, pm=pm)
    return tuple(m for m in NAN_DESIGN_METRICS
                 if m in ev.design and np.isnan(np.asarray(ev.design[m], dtype=float)).all())


def _unmodelled_by_cost_model(spec: Spec, pm) -> list[tuple[str, str, str]]:
    """``(file, key path, why)`` of each ``[[search.objectives]]`` and ``[[search.constraints]]`` entry
    on a design metric the spec's cost model does not model (NaN area_mm2, allowed by the plugin
    contract): every trial ran and was then infeasible, "the cost model gives no area_mm2", exit 1
    (plugin-author trial, session 46). Prices the spec once, only when an entry names such a metric
    (:func:`unmodelled_design_metrics`; the reference is priced later, after the study is opened, and
    perhaps by another cost model or on a chip of other area figures, so it cannot tell)."""
    from .costmodel import NAN_DESIGN_METRICS

    s = spec.search
    named = [(("search", "objectives"), f"search.objectives.{i}.metric", "objective", o.metric)
             for i, o in enumerate(s.objectives)]
    named += [(("search", "constraints"), f"search.constraints.{i}.metric", "constraint", c.metric)
              for i, c in enumerate(s.constraints)]
    if not any(m in NAN_DESIGN_METRICS for *_, m in named):
        return []
    nan = unmodelled_design_metrics(spec, pm)
    who = pm.cost_model_label(cost_model_name(spec, pm=pm))
    return [(spec.origin_of(*table), key, f"{m} is not modelled by {who}: it gives {m} as NaN (\"not "
             f"modelled\", which the plugin contract allows), so no design could be judged on it; drop this "
             f"{what} or use a cost model that models it")
            for table, key, what, m in named if m in nan]


#: The most deployments :func:`unservable_space_problems` enumerates; a search space of more (a wide
#: integer range on a deployment key) is left to the search to mark its designs infeasible.
MAX_DEPLOYMENTS_CHECKED = 100_000


def _where_varied(spec: Spec, key: str, space: SearchSpace) -> tuple[str, str]:
    """``(file, TOML key path)`` of where the search takes ``key``'s values: its ``[search.envelope]``
    or ``[search.params]`` entry (in the file that wrote its values: a spec that includes the flagship
    and sets ``choices`` of one of its parameters), else the spec key itself in the file that set it."""
    if key in dict(space.envelope):
        return spec.origin_of("search", "envelope", key), toml_key_path("search", "envelope", key)
    for prm in space.params:
        if prm.key == key:
            field = "choices" if prm.type == "categorical" else "high"
            return spec.origin_of("search", "params", key, field), toml_key_path("search", "params", key)
    return spec.origin(key), key


def _tried(space: SearchSpace, key: str) -> list | None:
    """Every value the search tries for ``key`` (an envelope's choices, a searched parameter's
    choices or whole numbers); None when it does not vary ``key``, ``[]`` when it varies it over
    more than :data:`MAX_DEPLOYMENTS_CHECKED` values or a continuous range."""
    for k, choices in space.envelope:
        if k == key:
            return list(choices)
    for prm in space.params:
        if prm.key != key:
            continue
        if prm.type == "categorical":
            return list(prm.choices)
        step = int(prm.step or 1)
        if prm.type != "int" or (prm.high - prm.low) / step >= MAX_DEPLOYMENTS_CHECKED:
            return []
        return list(range(int(prm.low), int(prm.high) + 1, step))
    return None


def _largest(space: SearchSpace, key: str, own):
    """The largest value the search tries for ``key`` (``own``, the spec's, when it does not vary it)."""
    for k, choices in space.envelope:
        if k == key:
            return max(choices)
    for prm in space.params:
        if prm.key == key:
            return max(prm.choices) if prm.type == "categorical" else prm.high
    return own


def unservable_space_problems(spec: Spec, space: SearchSpace, pm=None) -> list[tuple[str, str, str]]:
    """Why no design of ``spec``'s search space can ever be feasible, whatever the searched values:
    ``[(file, TOML key path, message)]``, ``[]`` when a design may be. Two rules, both certain for
    every point of the space and every cost model:

    * every deployment the search tries (each combination of the envelope's and the searched
      deployment keys' values, and ``network.scaleup_domain``'s) breaks a rule no serving framework
      runs (:func:`codesign.evaluation.unservable_everywhere`: TP 3 of 64 attention heads, TP above
      every scale-up domain the search reaches, ...), named at the key that breaks it where the
      search takes its values;
    * the model's weights at the narrowest weight formats the search tries
      (:func:`codesign.arch.account`'s ``total_params``, experts at ``moe_weights_format``), spread
      over the most chips of an instance it tries (``tp × dp_attention × pp``), are more per chip
      than the largest memory that holds weights (HBM + SRAM capacity at the top of their searched
      ranges; the host tier holds KV cache only, :class:`codesign.spec.Memory`): at least one chip
      of every instance holds that share, whatever the cost model.

    A space of more than :data:`MAX_DEPLOYMENTS_CHECKED` deployments, or a continuous range on a
    deployment key, is not judged by the first rule. Anything that depends on the searched values
    (weights that fit only at some TP or some HBM capacity) is left to the search, which marks each
    such design infeasible. ``optimize``, ``sweep`` and ``worker`` refuse such a space (exit 2) through
    :func:`check_search` before a trial is run: a search of TP 3 ran its 50 trials to say that no
    design was feasible (fresh-user trial, session 44)."""
    from .evaluation import DEPLOYMENT_RULE_KEYS, unservable_everywhere

    problems = []
    tried = {k: v for k in DEPLOYMENT_RULE_KEYS if (v := _tried(space, k)) is not None}
    try:
        axes = [np.asarray(v, dtype=np.float64) for v in tried.values()]
    except (TypeError, ValueError):  # a value the rules do not read as a number: the search says why
        axes = None
    if axes is not None and all(a.size for a in axes) and math.prod(a.size for a in axes) <= MAX_DEPLOYMENTS_CHECKED:
        grid = np.meshgrid(*axes, indexing="ij")  # every combination of the values tried
        by_key: dict[str, list[str]] = {}
        for key, msg in unservable_everywhere(spec, {k: g.ravel() for k, g in zip(tried, grid)}):
            by_key.setdefault(key, []).append(msg)
        for key, msgs in by_key.items():
            # "tp 16 is larger than the scale-up domain (2 to 8 chips; ...)", one group per rule; every
            # rule broken is said (its first line) before a rule's further lines, and up to six lines
            # in all: a fourth rule, then a rule's second line ("tp 16, 48 or 128 ... (3 to 8 chips")
            # were hidden behind "and 1 more" (fresh-user trials, session 45)
            groups = merged_rule_groups(msgs)
            msgs = [g[0] for g in groups] + [m for g in groups for m in g[1:]]
            cap = max(MAX_RULE_LINES, len(groups))
            shown = "; ".join(msgs[:cap]) + (f"; and {len(msgs) - cap} more" if len(msgs) > cap else "")
            problems.append((*_where_varied(spec, key, space),
                             f"no deployment the search tries can be served, so every design would be infeasible: "
                             f"{shown}"))
    if why := _weights_never_fit(spec, space, pm):
        problems.append((*_where_varied(spec, "memory.hbm.capacity", space), why))
    return problems


#: Lines of deployment-rule messages a refused search's error shows (more if more rules are broken:
#: each rule's first line is always shown), before "and N more".
MAX_RULE_LINES = 6
#: A number in a deployment rule's message (``"tp 16"``, ``"(8 chips;"``, ``"1e+06"``), not a digit
#: of a name.
_RULE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?!\w)")


def merged_rule_messages(msgs: list[str]) -> list[str]:
    """The deployment-rule messages ``msgs`` (one per broken rule and distinct deployment,
    :func:`codesign.evaluation.unservable_everywhere`) with those that differ only in their numbers
    said once, each number's values listed: ``"tp 16 is larger than the scale-up domain (2 chips;
    …)"`` to ``"(8 chips; …)"`` are ``"tp 16 is larger than the scale-up domain (2 to 8 chips; …)"``,
    and TP 16 and 32 over domains of 1, 2, 4 and 8 chips ``"tp 16 or 32 is larger than the scale-up
    domain (1, 2, 4 or 8 chips; …)"``. Each merged line stays true of every pair it lists: lines are
    merged on one number at a time where all their other numbers agree, so values that break the
    rule only in some combinations stay apart (TP 8 at a domain of 4 but not of 8: ``"tp 8 or 16 …
    (4 chips; …)"``, ``"tp 16 … (8 chips; …)"``). Runs of three or more consecutive whole numbers are
    written ``"2 to 8"``. In the order of first appearance of each message's wording."""
    return [m for g in merged_rule_groups(msgs) for m in g]


def merged_rule_groups(msgs: list[str]) -> list[list[str]]:
    """:func:`merged_rule_messages`' lines, one list per rule (a message's wording without its
    numbers), in the order of each rule's first appearance: a rule broken over values that merge on
    no single number (TP 3 to 128 over domains of 2, TP 16 to 128 over 3 to 8) has several lines."""
    rows: dict[str, list[tuple[frozenset, ...]]] = {}
    for msg in msgs:
        template = _RULE_NUMBER.sub("{}", msg.replace("{", "{{").replace("}", "}}"))
        values = tuple(frozenset([v]) for v in _RULE_NUMBER.findall(msg))
        if values not in rows.setdefault(template, []):
            rows[template].append(values)
    out = []
    for template, group in rows.items():
        for slot in range(len(group[0]) if group else 0):  # merge the rows that differ in this number alone
            merged: dict[tuple, set] = {}
            for r in group:
                merged.setdefault(r[:slot] + r[slot + 1:], set()).update(r[slot])
            group = [rest[:slot] + (frozenset(vals),) + rest[slot:] for rest, vals in merged.items()]
        out.append([template.format(*(_listed(vals) for vals in r)) for r in group])
    return out


def _listed(values) -> str:
    """Number strings as a message lists them, in increasing order: ``"8"``, ``"16 or 32"``, ``"1, 2,
    4 or 8"``, ``"2 to 8"`` (a run of three or more consecutive whole numbers), ``"1 to 3 or 8"``."""
    nums = sorted(values, key=float)
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while (j + 1 < len(nums) and float(nums[j]).is_integer() and float(nums[j + 1]).is_integer()
               and float(nums[j + 1]) == float(nums[j]) + 1):
            j += 1
        parts += [f"{nums[i]} to {nums[j]}"] if j - i >= 2 else nums[i:j + 1]
        i = j + 1
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _weights_never_fit(spec: Spec, space: SearchSpace, pm=None) -> str | None:
    """The second rule of :func:`unservable_space_problems`: why the weights fit on no chip of any
    design the search tries, or None when they may fit."""
    from .arch import account
    from .pluginmanager import get_plugin_manager

    formats = (pm or get_plugin_manager()).number_formats
    d, mem = spec.deployment, spec.memory

    def narrowest(key: str, own: str | None):
        names = _tried(space, key) or [own]
        try:
            return min((formats[n].bytes_per_element, n) for n in names)
        except KeyError:  # check_names refuses it first
            return None

    w = narrowest("deployment.weights_format", d.weights_format)
    mw = (narrowest("deployment.moe_weights_format", d.moe_weights_format)
          if d.moe_weights_format is not None or _tried(space, "deployment.moe_weights_format") is not None else w)
    if w is None or mw is None:
        return None
    acc = account(spec.model)
    experts = acc.routed_expert_params + acc.shared_expert_params
    weights = (acc.total_params - experts) * w[0] + experts * mw[0]
    tiers = [(f"memory.{t}.capacity", _largest(space, f"memory.{t}.capacity", getattr(mem, t).capacity))
             for t in ("hbm", "sram") if getattr(mem, t, None) is not None]
    most = sum(float(c) for _, c in tiers)
    pools = ([("decode pool", "deployment.decode", d.decode), ("prefill pool", "deployment.prefill", d.prefill)]
             if d.mode == "disaggregated" else [("", "deployment", d)])
    pp = int(_largest(space, "deployment.pp", d.pp))
    for name, key, g in pools:
        tp = int(_largest(space, f"{key}.tp", g.tp if g else 1))
        dp = int(_largest(space, f"{key}.dp_attention", g.dp_attention if g else 1))
        chips = tp * dp * pp
        # a float32 cost model's own figure differs from this one by its rounding, either way
        # (the analytical model's gpt-oss-120b at TP 8 is 304 B in 8.1 GB above it): refused only
        # clear of that
        if weights / chips <= most * (1.0 + 1e-6):
            continue
        fmts = w[1] if mw[1] == w[1] else f"{mw[1]} experts, {w[1]} other weights"
        held = " + ".join(f"{k} {format_quantity(float(c), 'B', digits=3)}" for k, c in tiers)
        return (f"the weights fit no design of the search, so every design would be infeasible: "
                f"{spec.model.name or 'the model'}'s {acc.total_params / 1e9:.3g}B parameters take at least "
                f"{format_quantity(weights, 'B', digits=3)} ({fmts}, the narrowest formats the search tries), "
                f"{format_quantity(weights / chips, 'B', digits=3)} per chip over the {chips} chip{'' if chips == 1 else 's'} of the largest "
                f"{name + ' ' if name else ''}instance it tries (tp {tp} × dp_attention {dp} × pp {pp}), more than "
                f"one chip holds at most ({held} = {format_quantity(most, 'B', digits=3)}); search more memory "
                "or a larger TP")
    return None


def _check_searched_formats(spec: Spec, space: SearchSpace, pm) -> None:
    """Refuse the number-format choices of ``[search.params]`` and ``[search.envelope]`` that
    :func:`codesign.evaluation.check_names` refuses, each named at its search key in the file that
    wrote it (an included ``[search]`` table, say). ``codesign sweep`` named an unknown one at
    ``deployment.kv_cache_format`` once its progress bar had started (noticed in session 34)."""
    from .errors import SpecError

    keys = {f"deployment.{f}" for f in FORMAT_FIELDS}
    problems = []
    for table, pairs in (("params", [(prm.key, prm.choices) for prm in space.params]), ("envelope", space.envelope)):
        fmts = {k: v for k, v in pairs if k in keys and v}
        try:
            if fmts:
                check_names(spec, pm=pm, overrides=fmts,
                            override_keys={k: (spec.origin_of("search", table, k), toml_key_path("search", table, k))
                                           for k in fmts})
        except SpecError as exc:
            problems += exc.problems
    if problems:
        raise SpecError(problems)


def _build_space(spec: Spec, parameters: list[str], pm) -> SearchSpace:
    """:func:`build_space`, with a ``search.reference`` that names no baseline or readable spec
    reported beside the other ``[search]`` problems (it is otherwise read after the space is
    built, so fixing the space revealed it)."""
    try:
        return build_space(spec, parameters)
    except SpecError as exc:
        if spec.search is None or not spec.search.reference:
            raise
        from .baselines import reference_spec

        try:
            reference_spec(spec, spec.search.reference, pm=pm)
        except SpecError as ref:
            raise SpecError(exc.problems + [p for p in ref.problems if p not in exc.problems]) from None
        except CodesignError:
            pass
        raise


def metric_problem(metric: str, *, slo: bool = False) -> str | None:
    """Why ``metric`` is no metric a search can optimise (with ``slo``: nor a point metric a
    constraint may bound as an SLO); None when it is one."""
    names = list(SEARCH_METRICS) + (list(SLO_METRICS) if slo else [])
    if metric in names:
        return None
    # 'ttft' for 'ttft_s': a spec key's typo gets a guess, a metric name's got the list only (session 41)
    close = close_name(str(metric), names, cutoff=0.75)
    guess = f"did you mean {close!r}? " if close else ""
    return f"unknown metric {metric!r}; {guess}expected one of {', '.join(names)}"


def _param_high(p: SearchParam, kind: str = "W") -> float | None:
    """The largest value a searched quantity may take (``high``, or the largest choice) in SI
    units; None when it cannot be read (the space's own check says why)."""
    from .units import QuantityError, parse_quantity

    try:
        values = [p.high] if p.choices is None else list(p.choices)
        return max(parse_quantity(v, kind) for v in values if v is not None)
    except (QuantityError, TypeError, ValueError):
        return None


#: Metrics the shipped cost models take from ``[chip.area]`` and ``[chip.energy]``: without the
#: table they are not modelled (area NaN and no HBM stacks counted; power the TDP).
AREA_METRICS = ("area_mm2", "hbm_stacks")
POWER_METRICS = ("peak_power_w", "power_w")


def unmodelled_metric_problem(spec: Spec, metric: str) -> str | None:
    """Why a search cannot optimise or bound ``metric`` on ``spec``: an area metric on a chip with
    no ``[chip.area]``, a power metric on one with no ``[chip.energy]``; None otherwise. Every
    trial was infeasible ("the cost model gives no area_mm2") or the search optimised a constant,
    the TDP (fresh-user trial, session 33)."""
    if metric in AREA_METRICS and spec.chip.area is None:
        return (f"{metric} is not modelled for this chip: it has no [chip.area] ({spec.origin('chip')}); "
                "give its area figures (the shipped hardware includes specs/technology/n4p.toml)")
    if metric in POWER_METRICS and spec.chip.energy is None:
        return (f"{metric} is not modelled for this chip: it has no [chip.energy] ({spec.origin('chip')}), "
                "so every design draws its chip.tdp; give its energy figures (the shipped hardware "
                "includes specs/technology/n4p.toml)")
    return None


def budget_warnings(spec: Spec) -> list[str]:
    """What a search of ``spec`` leaves unbounded that a chip architect would bound: when
    ``[search.params]`` varies the hardware (a ``chip.*``, ``memory.*`` or ``network.*`` key) and
    ``[[search.constraints]]`` has no upper bound on ``peak_power_w`` (each design is still priced at
    its ``chip.tdp`` whatever it would draw) or on ``area_mm2`` (a design larger than the package can
    be built is kept). One line each, naming the constraint to add; [] when both are bounded or the
    hardware is fixed. A spec that includes one with constraints and adds its own replaces them
    (TOML arrays replace): the case this catches (noticed in session 27)."""
    search = spec.search
    if search is None:
        return []
    varied = [k for k in search.params if k.split(".", 1)[0] in ("chip", "memory", "network")]
    if not varied:
        return []
    bounded = {c.metric for c in search.constraints if c.max is not None}
    shown = ", ".join(varied[:3]) + (", …" if len(varied) > 3 else "")
    out = []
    if spec.chip.energy is None:
        out.append(f"the search varies the hardware ({shown}) of a chip with no [chip.energy]: power is not "
                   "modelled (every design draws its chip.tdp), so nothing stops the search from buying every "
                   "unit at its top bound; give the chip's energy figures (include specs/technology/n4p.toml)")
    elif "peak_power_w" not in bounded:
        # a searched TDP: the budget is the highest TDP the search may choose, not the base spec's
        searched_tdp = search.params.get("chip.tdp")
        top = _param_high(searched_tdp) if searched_tdp is not None else None
        tdp = format_quantity(top if top is not None else spec.chip.tdp, "W")  # a TOML value (no "1,200")
        basis = "its own chip.tdp" if searched_tdp is not None else f"chip.tdp ({_watts(spec.chip.tdp)})"
        out.append(f"the search varies the hardware ({shown}) with no constraint on peak_power_w: every "
                   f"design is priced at {basis} and nothing bounds its peak power (every unit at full rate at once: a "
                   "point drawing more than the TDP is infeasible, the peak is not); add [[search.constraints]] "
                   f'metric = "peak_power_w", max = "{tdp}"' + _replaced_bound(spec, "peak_power_w"))
    if spec.chip.area is None:
        out.append(f"the search varies the hardware ({shown}) of a chip with no [chip.area]: area is not "
                   "modelled, so no package limit holds the design back; give the chip's area figures "
                   "(include specs/technology/n4p.toml)")
    elif "area_mm2" not in bounded and (who := _not_modelling_area(spec)):
        # no constraint to suggest: one on area_mm2 is refused (check_search), every design's area
        # NaN (plugin-author trial, session 46: the warning named the very constraint that cannot hold)
        out.append(f"the search varies the hardware ({shown}) and {who} does not model area (it gives "
                   "area_mm2 as NaN): no package limit holds the design back; price the search with a "
                   "cost model that models area to bound it")
    elif "area_mm2" not in bounded:
        area = spec.chip.area
        # "1716 mm²", as every other message gives an area (format_quantity writes TOML, "mm**2";
        # the unit parser reads either)
        most = (f'"{format_quantity(area.max, "m^2").replace("**2", "²")}"' if area is not None
                else "the package's area")
        out.append(f"the search varies the hardware ({shown}) with no constraint on area_mm2: a design "
                   f"larger than the package can be built is kept; add [[search.constraints]] "
                   f'metric = "area_mm2", max = {most} (chip.area.max)' + _replaced_bound(spec, "area_mm2"))
    return out


def _not_modelling_area(spec: Spec) -> str | None:
    """``cost model 'NAME' (plugin ...)`` when the spec's cost model gives ``area_mm2`` as NaN on the
    spec's design (:func:`unmodelled_design_metrics`); None when it models area, or when pricing
    the spec fails (the search names that failure itself)."""
    from .pluginmanager import get_plugin_manager

    pm = get_plugin_manager()
    try:
        if "area_mm2" not in unmodelled_design_metrics(spec, pm):
            return None
        return pm.cost_model_label(cost_model_name(spec, pm=pm))
    except CodesignError:
        return None


def _replaced_bound(spec: Spec, metric: str) -> str:
    """``" (… replace those of INCLUDED, which bounded it …)"`` when a file ``spec`` includes bounded
    ``metric`` in its ``[[search.constraints]]`` and the array of another file replaced it (TOML
    arrays replace, they do not append; :class:`codesign.spec.Origins` keeps what was replaced);
    ``""`` otherwise (the budget warning said what to add but not where the bound had gone:
    fresh-user trial, session 28)."""
    origins = spec.origins or {}
    own = origins.get(("search", "constraints"))
    for f, cons in getattr(origins, "replaced", {}).get(("search", "constraints"), ()):
        if own and any(isinstance(c, dict) and c.get("metric") == metric and c.get("max") is not None
                       for c in cons):
            return (f" (the [[search.constraints]] of {own} replace those of the included {f}, which "
                    "bounded it: TOML arrays replace, they do not add up)")
    return ""


def constraint_problem(c) -> tuple[str, str] | None:
    """``(key, why)`` when the ``[[search.constraints]]`` entry ``c`` (of a known metric) gives
    neither or both of max and min (key ``""``), or a bound not in the metric's unit (key ``"max"``
    or ``"min"``); None when its bound is fine."""
    if (c.max is None) == (c.min is None):
        return "", "give exactly one of max or min"
    sense, raw = ("max", c.max) if c.max is not None else ("min", c.min)
    try:
        _metric_value(c.metric, raw, sense)
    except (QuantityError, ValueError) as exc:
        return sense, str(exc)
    return None


def searched_value_problem(deployment, key: str, p: SearchParam) -> str | None:
    """Why a value the ``[search.params]`` entry ``p`` of ``key`` lets the search try (its bounds,
    or each choice) is one the spec refuses for that ``deployment.*`` or ``workload.*`` key, judged
    on ``deployment`` (the spec, or that section of it; :func:`codesign.spec.deployment_value_problem`):
    ``low 0: must be a whole number >= 1``. Every design the search writes is a spec ``codesign evaluate`` takes unchanged.
    None when each value is fine, for a key outside those sections, and for an entry of a bad
    shape or a key that is no spec key (:func:`param_problem` and :func:`build_space` name those).
    Needs no cost model, so the spec loader checks it (codesign.spec)."""
    prm = _param_or_none(key, p)
    if prm is None:
        return None
    tried = prm.choices if prm.type == "categorical" else (prm.low, prm.high)
    if key in INT_KEYS and not key.startswith(("deployment.", "workload.")):
        # a hardware count (network.scaleup_domain): its section is not judged by the deployment's
        # checks, so a searched 0 was tried and every such trial came out infeasible (session 27)
        def judge(v):
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer() and v >= 1
            return None if ok else "must be a whole number >= 1"
    else:
        def judge(v):
            return deployment_value_problem(deployment, key, v)
    bad = next(((v, m) for v in tried if (m := judge(v))), None)
    if bad is None:
        return None
    what = "choice" if prm.type == "categorical" else ("low" if bad[0] == prm.low else "high")
    shown = bad[0] if what == "choice" else getattr(p, what)  # as the spec wrote it
    return f"{what} {format_value(shown)}: {_without_got(bad[1])}"


def _param_or_none(key: str, p: SearchParam):
    """``key``'s searched parameter, or None for an entry of a bad shape or a key that is no spec
    key (:func:`param_problem` and :func:`build_space` name those)."""
    try:
        return _param(key, quantity_kind(key), p)
    except (KeyError, QuantityError, ValueError, TypeError):
        return None


def searched_max(key: str, p: SearchParam):
    """The largest value the ``[search.params]`` entry ``p`` of ``key`` lets the search try (its
    ``high``, or its largest choice, in the key's base unit), or None for an entry of a bad shape
    or a key that is no spec key."""
    prm = _param_or_none(key, p)
    if prm is None:
        return None
    try:
        return max(prm.choices) if prm.type == "categorical" else prm.high
    except (TypeError, ValueError):  # choices of mixed kinds: named by param_problem
        return None


def repeated_value(parsed) -> tuple[int, int] | None:
    """``(j, i)``, i < j, of the first value of ``parsed`` (values in SI units, as written values
    read: ``"1 TB"`` and ``"1000 GB"`` alike) that repeats an earlier one; None when all differ.
    A search's choices and a study's grid axes and curves envelopes refuse such a list."""
    seen: dict = {}
    for j, v in enumerate(parsed):
        if v in seen:
            return j, seen[v]
        seen[v] = j
    return None


def envelope_problem(deployment, key: str, choices, searched) -> str | None:
    """Why the ``[search.envelope]`` entry ``key = choices`` is wrong by the spec alone: ``key`` is
    also a ``[search.params]`` key (``searched``), ``choices`` is empty, or a choice is not of the
    key's kind or is one the spec's ``deployment`` refuses (``choice 0: must be a whole number >=
    1``; with ``deployment`` None, only the kind). None when it is fine, and for a key that is no
    ``deployment.*`` spec key: :func:`build_space` names it, with the keys the cost model can vary.
    Needs no cost model, so the spec loader checks it (codesign.spec)."""
    if not key.startswith("deployment."):
        return None
    try:
        kind = quantity_kind(key)
    except KeyError:
        return None
    if key in searched:
        return "is also a searched parameter; use one or the other"
    if not choices:
        return "list at least one choice"
    if deployment is not None:
        bad = next(((c, m) for c in choices if (m := deployment_value_problem(deployment, key, c))), None)
        if bad:
            return f"choice {format_value(bad[0])}: {_without_got(bad[1])}"
    try:
        _param(key, kind, SearchParam(choices=tuple(choices)))
    except (QuantityError, ValueError, TypeError) as exc:
        return str(exc)
    return None


def _without_got(msg: str) -> str:
    """``msg`` without a trailing ``(got VALUE)``: for a caller that names the value itself
    (``low 0: must be a whole number in [1, 10000000]``, not ``… (got 0)``)."""
    return re.sub(r"\s*\(got [^()]*\)$", "", msg)


def _metric_value(metric: str, raw, sense: str = "max") -> float:
    """A constraint bound in the metric's own unit (``"700 W"`` for ``peak_power_w`` → 700). A
    metric of a physical unit (:data:`_METRIC_KIND`) takes a quantity with its unit and refuses a
    bare number (:func:`codesign.units.parse_quantity`), and also takes its own unit
    (``"0.5 J/tok"`` on ``energy_j_per_token``); any other a bare number in its unit (``100`` for
    100 tok/s/kW) or a string with a unit of its dimension, converted (``"100 tok/s/kW"``,
    ``"0.1 tok/J"``: :func:`codesign.units.parse_in_unit`). A bound of a metric that is never
    negative (all but the SQNRs in dB) must be >= 0 as a ``min`` (below 0 it bounds nothing, and
    reads as a slip; 0 is accepted, vacuous) and > 0 as a ``max`` (0 or below leaves no design);
    ``sense`` (``"max"`` or ``"min"``) says which.

    Raises:
        QuantityError: a physical metric's bound without its unit, a bound of another dimension, a
            quoted bare number (``"100"``), or a min < 0 or max <= 0 of a metric that is never negative."""
    unit = bound_unit(metric)
    for suffix, (kind, scale) in _METRIC_KIND.items():
        if metric.endswith(suffix):
            try:
                # (15 digits: "1716 mm**2" through m² is 1715.9999999999998, a digit no user wrote)
                # a min of 0 is vacuous but as written, on an area or a time as on a rate (the
                # quantity parser refused "0 mm**2" as "must be > 0": fresh-user trial, session 47)
                return float(f"{parse_quantity(raw, kind, allow_zero=sense == 'min') * scale:.15g}")
            except QuantityError as exc:
                # the metric's own unit where it is not of the kind's dimension ("0.5 J/tok" on a J kind)
                if not (isinstance(raw, str) and _reads_in(raw, unit) and not _reads_in(raw, KINDS[kind][0])):
                    raise exc from None
                value = parse_in_unit(raw, unit)
            break
    else:
        # "100 tok/s" on a tok/s/kW metric was refused without saying what to write (session 40);
        # "100 tok/s/kW", its own unit, was refused too, and a quoted "100" as no bare number (41)
        value = parse_in_unit(raw, unit)
    # a min of 0 is vacuous but says what it means; below 0 it reads as a slip (a sign, a unit)
    if unit not in _SIGNED_UNITS and (value < 0 if sense == "min" else value <= 0):
        what = (f"must be >= 0: {metric} is never negative, so a min of {value:g} holds for every design"
                if sense == "min" else f"must be > 0: {metric} is never negative, so no design meets a max of {value:g}")
        raise QuantityError(f"{what} (got {format_value(raw)})")
    # a whole count (hbm_stacks) is reported as the whole count its fractional need takes, so a
    # bound of 7.5 stacks let a design needing 7.3 (7.3 <= 7.5) through to a report of 8 stacks
    # (review, session 43): a bound on it is a whole number too
    if metric in WHOLE_NEEDED_METRICS and not float(value).is_integer():
        raise QuantityError(f"must be a whole number: {metric} counts whole stacks, and a design "
                            f"needing {value:g} takes {whole_needed(value)} (got {format_value(raw)})")
    return value


def _reads_in(raw: str, unit: str) -> bool:
    """Whether the string ``raw`` is a quantity of ``unit``'s dimension."""
    try:
        parse_in_unit(raw, unit)
    except QuantityError:
        return False
    return True


class ParamError(ValueError):
    """A problem of one ``[search.params]`` entry; :attr:`field` names the key of its inline table
    at fault (``low``, ``high``, ``step``, ``choices``, ``log``), or is ``""`` for the table as a
    whole (both ``choices`` and ``low``/``high``, or neither)."""

    def __init__(self, field: str, msg: str):
        super().__init__(msg)
        self.field = field


def param_problem(key: str, p: SearchParam) -> tuple[str, str] | None:
    """``(field, why)`` when the ``[search.params]`` entry ``p`` of ``key`` has a bad shape: a
    bound or choice not of the key's kind (a quantity with its unit, a number, a number-format
    name), an empty ``choices``, ``low`` not below ``high``, a log range from 0 or below, a
    ``step`` <= 0, a count's bounds or step not whole; None when it is fine. Needs no cost model,
    so the spec loader checks it (codesign.spec); a key that is no spec key is left to
    :func:`build_space`, with the keys the cost model can vary."""
    try:
        kind = quantity_kind(key)
    except KeyError:
        return None
    try:
        _param(key, kind, p)
    except ParamError as exc:
        return exc.field, str(exc)
    except (QuantityError, ValueError, TypeError) as exc:
        return "", str(exc)
    return None


def _param(key: str, kind: str | None, p) -> Param:
    """The searched parameter ``key`` of the entry ``p``, its values in SI units.

    Raises:
        ParamError: naming the entry's key at fault (:func:`param_problem`).
    """
    def val(x, field):
        try:
            if kind:  # zero only where the spec takes it (no SRAM: yes; no HBM bandwidth: no)
                return parse_quantity(x, kind, allow_zero=quantity_allows_zero(key))
            if FORMAT_KEY.match(key):
                if not isinstance(x, str):
                    raise TypeError(f"expected a number-format name (got {format_value(x)})")
                return x
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise TypeError(f"expected a number (got {format_value(x)})")
            return x
        except (QuantityError, ValueError, TypeError) as exc:
            raise ParamError(field, str(exc)) from None

    if p.choices is not None:
        if p.low is not None or p.high is not None:  # blamed on choices: an include may set low/high
            raise ParamError("choices", "give either choices or low/high, not both")
        if not p.choices:
            raise ParamError("choices", "list at least one choice")
        values = tuple(val(c, "choices") for c in p.choices)
        # a choice listed twice (1 and 1, or "1 TB" and "1000 GB") would be drawn twice as often
        if rep := repeated_value(values):
            raise ParamError("choices", f"{format_value(p.choices[rep[0]])} is the same choice as "
                                        f"{format_value(p.choices[rep[1]])}; list each choice once")
        return Param(key, kind, "categorical", choices=values)
    if (p.low is None) != (p.high is None):
        raise ParamError("low" if p.low is None else "high", "missing: give low and high, or choices")
    if p.low is None:
        raise ParamError("", "give low and high, or choices")
    if FORMAT_KEY.match(key):  # a name has no range ("could not convert string to float" otherwise)
        raise ParamError("low", "a number-format key takes choices (choices = [\"fp8_e4m3\", \"nvfp4\"]), not low/high")
    low, high = float(val(p.low, "low")), float(val(p.high, "high"))
    for name, v in (("low", low), ("high", high)):
        if key in INT_KEYS and not (math.isfinite(v) and v.is_integer()):
            raise ParamError(name, f"must be a whole number for a count (got {format_value(getattr(p, name))})")
        if not math.isfinite(v):
            raise ParamError(name, f"must be a finite number (got {format_value(getattr(p, name))})")
    if not low < high:
        raise ParamError("low", f"must be below high (got low = {format_value(p.low)}, high = {format_value(p.high)})")
    if p.log and low <= 0:
        raise ParamError("log", f"a log-scaled range needs low > 0 (got low = {format_value(p.low)})")
    if key in INT_KEYS:
        step = val(p.step, "step") if p.step is not None else 1
        if not (step >= 1 and float(step).is_integer()):
            raise ParamError("step", f"must be a whole number >= 1 for a count (got {format_value(p.step)})")
        if p.log and step != 1:
            raise ParamError("step", "a log-scaled count takes step = 1 (Optuna samples it on a log scale)")
        if (high - low) % step:
            raise ParamError("high", f"must be low plus a whole number of steps (got low = {format_value(p.low)}, "
                                     f"high = {format_value(p.high)}, step = {format_value(p.step)})")
        return Param(key, kind, "int", low=int(low), high=int(high), log=p.log, step=int(step))
    step = float(val(p.step, "step")) if p.step is not None else None
    if step is not None and not (math.isfinite(step) and step > 0):
        raise ParamError("step", f"must be a finite number > 0 (got {format_value(p.step)})")
    return Param(key, kind, "float", low=low, high=high, log=p.log, step=step)


def suggest(trial, prm: Param):
    if prm.type == "categorical":
        return trial.suggest_categorical(prm.key, list(prm.choices))
    if prm.type == "int":
        return trial.suggest_int(prm.key, prm.low, prm.high, step=prm.step or 1, log=prm.log)
    return trial.suggest_float(prm.key, prm.low, prm.high, log=prm.log, step=prm.step)


def columns(values: list[dict], keys) -> dict[str, np.ndarray]:
    """Parameter dicts → columns ``key -> array (n,)`` (object arrays for number-format names)."""
    return {k: np.asarray([v[k] for v in values], dtype=object if FORMAT_KEY.match(k) else np.float64)
            for k in keys}


# ------------------------------------------------------------------------------- numerics
_SQNR_CACHE: dict[str, float] = {}


def format_sqnr_db(name: str, pm=None) -> float:
    """SQNR [dB] of number format ``name`` on synthetic N(0, 1) data, cached per format name.

    The data are 64 × 1024 standard-normal values (seed 0) quantised in blocks along the last axis
    by the format's registered ``quantize`` (for MX formats the OCP MX v1.0 block of 32; the MX
    plugin's ``codesign_mx.error_stats`` reports the same figure: MXFP4 ≈ 18.7 dB). A format
    without ``quantize`` counts as lossless (``inf``).
    """
    if name in _SQNR_CACHE:
        return _SQNR_CACHE[name]
    from .pluginmanager import get_plugin_manager

    fmt = (pm or get_plugin_manager()).number_formats.get(name)
    if fmt is None:
        raise CodesignError(f"unknown number format {name!r}")
    if fmt.quantize is None:
        val = math.inf
    else:
        x = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32)
        try:
            y = np.asarray(fmt.quantize(x), dtype=np.float64)
        except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - a plugin's bug, named
            raise PluginBugError(f"number format {name!r} (plugin {fmt.plugin}) raised in quantize: "
                                 f"{type(exc).__name__}: {exc}") from exc
        err = float(np.sum((x.astype(np.float64) - y) ** 2))
        val = math.inf if err == 0 else 10.0 * math.log10(float(np.sum(x.astype(np.float64) ** 2)) / err)
    _SQNR_CACHE[name] = val
    return val


def _role_formats(spec: Spec, over: dict, n: int) -> dict[str, np.ndarray]:
    d = spec.deployment
    base = {"weights": d.weights_format, "moe_weights": d.moe_weights_format or d.weights_format,
            "kv_cache": d.kv_cache_format, "activations": d.activations_format}
    out = {}
    for role, default in base.items():
        col = over.get(f"deployment.{role}_format")
        if col is None and role == "moe_weights":
            col = over.get("deployment.weights_format")
        out[role] = np.asarray(col, dtype=object) if col is not None else np.full(n, default, dtype=object)
    return out


# ------------------------------------------------------------------------------- evaluation
def _better(metric: str) -> str:
    b = (SEARCH_METRICS.get(metric) or DESIGN_METRICS.get(metric) or (None, None))[1]
    return "min" if b == "min" else "max"


#: Rows (designs × envelope choices) per cost-model call. Every call is padded to this size so that
#: a JIT-compiled cost model compiles once per process, whatever the batch (a compile costs seconds,
#: a padded call of 1024 rows about 10 ms).
BLOCK_ROWS = 1024


def envelope_arrays(spec: Spec, cols: dict[str, np.ndarray], n: int, space: SearchSpace, evaluate,
                    tpot_reference_s: float | None = None, *, with_reasons: bool = True,
                    block_rows: int | None = None):
    """:func:`_envelope_block` over blocks of ``block_rows`` rows (default :data:`BLOCK_ROWS`), the
    last one padded; same return value."""
    m = len(space.combos())
    per = max(1, (block_rows or BLOCK_ROWS) // m)
    if not cols or n <= 0:
        return _envelope_block(spec, cols, n, space, evaluate, tpot_reference_s, with_reasons=with_reasons)
    parts = []
    for s0 in range(0, n, per):
        k = min(per, n - s0)
        idx = np.arange(s0, s0 + per)
        idx[k:] = s0  # pad with the block's first design
        chunk = {key: np.asarray(v)[idx] for key, v in cols.items()}
        met, best, rs = _envelope_block(spec, chunk, per, space, evaluate, tpot_reference_s, with_reasons=with_reasons)
        parts.append(({key: v[:k] for key, v in met.items()}, {key: v[:k] for key, v in best.items()},
                      rs[:k] if rs is not None else None))
    if len(parts) == 1:
        return parts[0]
    metrics = {key: np.concatenate([p[0][key] for p in parts]) for key in parts[0][0]}
    best = {key: np.concatenate([p[1][key] for p in parts]) for key in parts[0][1]}
    reasons = [r for p in parts for r in p[2]] if with_reasons else None
    return metrics, best, reasons


def _envelope_block(spec: Spec, cols: dict[str, np.ndarray], n: int, space: SearchSpace, evaluate,
                    tpot_reference_s: float | None = None, *, with_reasons: bool = True):
    """Evaluate ``n`` designs at every envelope combination in ONE vectorised cost-model call.

    Args:
        cols: searched key -> array ``(n,)`` (SI units; number-format names for format keys).
        tpot_reference_s: adds ``mixed_tok_s_per_kw_at_tpot`` (tok/s/kW at TPOT <= this) [s].
        with_reasons: also return why each design is infeasible (Python strings; off for sweeps).

    Returns:
        ``(metrics, best, reasons)``: ``metrics`` metric -> array ``(n,)``, each at its best over the
        envelope combinations (NaN where no combination is feasible); ``best`` metric -> index
        ``(n,)`` of the combination that gave it; ``reasons`` list of ``n`` strings (``""`` if
        feasible) or None.
    """
    combos = space.combos()
    m = len(combos)
    over = {k: np.repeat(np.asarray(v), m) for k, v in cols.items()}
    for key, _ in space.envelope:
        vals = [c[key] for c in combos]
        over[key] = np.tile(np.asarray(vals, dtype=object if FORMAT_KEY.match(key) else np.float64), n)
    ev = evaluate(spec, over if over else None)
    rows = n * m
    feas = ev.feasible
    slos = [c for c in space.constraints if c.slo]
    flat: dict[str, np.ndarray] = {}
    if slos:
        mask = meets_slos(ev, [(c.metric, c.bound, c.sense) for c in slos])
        for c in slos:
            v = np.asarray(ev.points[c.metric], dtype=np.float64)
            with np.errstate(invalid="ignore"):
                if c.sense == "max":
                    best = np.where(feas, v, np.inf).min(axis=1)
                else:
                    best = np.where(feas, v, -np.inf).max(axis=1)
            flat[c.metric] = np.where(feas.any(axis=1), best, np.nan)
        ev_s = attrs.evolve(ev, feasible=mask)
    else:
        mask, ev_s = feas, ev
    flat.update({k: np.asarray(v, dtype=np.float64) for k, v in ev_s.summary(tpot_reference_s=tpot_reference_s).items()})
    flat.update({k: np.asarray(v, dtype=np.float64) for k, v in ev.design.items()})
    if "hbm_stacks" not in flat:
        flat["hbm_stacks"] = np.full(rows, np.nan)
    wanted = {c.metric for c in space.constraints} | {o for o, _ in space.objectives}
    if wanted & set(NUMERICS_METRICS):
        fm = _role_formats(spec, over, rows)
        for role, names in fm.items():
            table = {f: format_sqnr_db(f) for f in set(names.tolist())}
            flat[f"{role}_sqnr_db"] = np.asarray([table[f] for f in names], dtype=np.float64)
    metrics, best = {}, {}
    for k, v in flat.items():
        a = np.asarray(v, dtype=np.float64).reshape(n, m)
        lo = (_better(k) == "min") if k not in {c.metric for c in slos} else \
            next(c.sense == "max" for c in slos if c.metric == k)
        fill = np.where(np.isnan(a), np.inf if lo else -np.inf, a)
        idx = fill.argmin(axis=1) if lo else fill.argmax(axis=1)
        val = a[np.arange(n), idx]
        best[k] = idx
        metrics[k] = val
    # the peak's operating point (concurrency, TTFT, TPOT) at the choice that gives the peak
    if "peak_mixed_tok_s_per_kw" in best:
        pk = best["peak_mixed_tok_s_per_kw"]
        for k, v in ev_s.peak_point().items():
            metrics[k] = np.asarray(v, dtype=np.float64).reshape(n, m)[np.arange(n), pk]
            best[k] = pk
    # design-level metrics that depend on the deployment (chips, weights per chip, max concurrency)
    # are reported at the combination that gives the first objective, the deployment the design
    # file is written with, so one record never mixes deployments
    primary = space.objectives[0][0] if space.objectives else None
    if space.envelope and primary in best:
        pidx = best[primary]
        for k in ev.design:
            a = np.asarray(flat[k], dtype=np.float64).reshape(n, m)
            metrics[k] = a[np.arange(n), pidx]
            best[k] = pidx
    reasons = None
    if with_reasons:
        reasons = []
        slo_miss = feas.any(axis=1) & ~mask.any(axis=1)
        for d in range(n):
            rs = []
            for i in range(m):
                r = ev.reasons[d * m + i] if ev.reasons else ""
                if not r and slo_miss[d * m + i]:
                    r = f"{SLO_MISS} (" + ", ".join(c.describe() for c in slos) + ")"
                rs.append(r)
            reasons.append("" if any(not r for r in rs) else "; ".join(dict.fromkeys(rs)))
    return metrics, best, reasons


def evaluate_envelope(spec: Spec, values: list[dict], space: SearchSpace, evaluate,
                      tpot_reference_s: float | None = None) -> tuple[list[dict], list[dict], list[str]]:
    """Evaluate designs at every envelope combination in ONE cost-model call.

    Returns, per design: the metrics (each summary metric at its best over the combinations),
    the combination that gave each metric, and why the design is infeasible (``""`` if it is not).
    """
    combos = space.combos()
    n = len(values)
    cols = columns(values, [p.key for p in space.params])
    arr, best, reasons = envelope_arrays(spec, cols, n, space, evaluate, tpot_reference_s)
    metrics, configs = [], []
    for d in range(n):
        row = {k: float(v[d]) for k, v in arr.items()}
        metrics.append(row)
        configs.append({k: {kk: _plain(x) for kk, x in combos[int(best[k][d])].items()}
                        for k, v in row.items() if math.isfinite(v)} if space.envelope else {})
    return metrics, configs, reasons


def objective_values(metrics: dict, space: SearchSpace) -> tuple[list[float], bool]:
    """Objective values for Optuna; an infeasible design gets finite worst values and False."""
    vals = []
    ok = True
    for metric, direction in space.objectives:
        v = metrics.get(metric, math.nan)
        if not math.isfinite(v):
            ok = False
            v = -1.0 if direction == "maximize" else 1e12
        vals.append(float(v))
    return vals, ok


def constraint_values(metrics: dict, space: SearchSpace, feasible: bool) -> dict[str, float]:
    """Constraint name → violation (<= 0 satisfied), plus ``infeasible`` for unpriceable designs."""
    out = {"infeasible": 0.0 if feasible else 1.0}
    for c in space.constraints:
        v = metrics.get(c.metric, math.nan)
        if math.isnan(v):
            out[c.name] = 1.0
        elif math.isinf(v):
            out[c.name] = -1.0 if (v > 0) == (c.sense == "min") else 1.0
        else:
            out[c.name] = (v - c.bound) if c.sense == "max" else (c.bound - v)
    return out


def feasible_objectives(metrics: dict[str, np.ndarray], space: SearchSpace) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`objective_values` and constraints: ``(values (n, k), ok (n,))``."""
    vals = np.stack([np.asarray(metrics[m], dtype=np.float64) for m, _ in space.objectives], axis=1)
    ok = np.all(np.isfinite(vals), axis=1)
    with np.errstate(invalid="ignore"):
        for c in space.constraints:
            v = np.asarray(metrics[c.metric], dtype=np.float64)
            ok &= (v <= c.bound) if c.sense == "max" else (v >= c.bound)
    return vals, ok


def reference_envelope(ref_spec: Spec, space: SearchSpace, evaluate,
                       tpot_reference_s: float | None = None) -> dict[str, Any]:
    """Evaluate a reference design over the envelope's deployment choices (and over categorical
    ``deployment.*`` search parameters, so it gets every deployment choice the designs get), the
    keys its own serving mode reads (:func:`codesign.spec.unread_key_problem`); ``"choices"`` lists
    those it was priced over.

    Each metric takes its best value over the choices, as published comparisons report each
    metric at its best configuration, over the points that meet the search's SLOs (its
    point-metric constraints), as the designs' do; its design bounds (power, area) do not apply. Returns ``{"metrics", "configs", "choices"}``, and
    ``"infeasible_reason"`` where an objective has no value at any choice (the reference cannot be
    served there: TP above the model's heads or the scale-up domain, weights that do not fit).
    """
    dep = [p for p in space.params if p.key.startswith("deployment.") and p.type == "categorical"]
    # only the choices the reference's own serving mode reads: an aggregated reference of a
    # disaggregated search was reported "at its best over deployment.decode.tp = 1, 2, 4, 8" (and
    # at decode.tp 1) while priced at its own TP (fresh-user trial, session 34)
    pairs = [*space.envelope, *((p.key, p.choices) for p in dep)]
    varied = [k for k, _ in pairs]
    # priced at the search's SLOs (its point-metric bounds: [workload.slo] and [[search.constraints]]
    # on ttft_s, tpot_s, ...), as the designs are, but under none of its design bounds (the 1200 W
    # GB200 is the reference of a 700 W search): a reference priced without the SLO peaked at a TTFT
    # of 25-38 s against designs held to 2 s, and the ×ref ratios and "beats ref" compared the two
    # (fresh-user trial, session 39)
    env = SearchSpace((), space.objectives, tuple(c for c in space.constraints if c.slo),
                      tuple((k, v) for k, v in pairs if not unread_key_problem(ref_spec.deployment, k, varied)))
    metrics, configs, reasons = evaluate_envelope(ref_spec, [{}], env, evaluate, tpot_reference_s)
    out = {"metrics": {k: v for k, v in metrics[0].items() if math.isfinite(v)}, "configs": configs[0],
           "choices": {k: [_plain(c) for c in v] for k, v in env.envelope}}
    if any(m not in out["metrics"] for m, _ in space.objectives):
        out["infeasible_reason"] = reasons[0] or _no_value_reason(metrics[0], space, tpot_reference_s)
    return out


def _plain(x):
    if isinstance(x, (np.floating, float)) and float(x).is_integer():
        return int(x)
    return x.item() if hasattr(x, "item") else x


#: Metrics every design is compared with the reference on besides its objectives: the Jalapeño table's.
RATIO_METRICS = ("peak_mixed_tok_s_per_kw", "min_e2e_latency_s", "min_tpot_s", "mixed_tok_s_per_kw_at_tpot")


def ratio_metrics(space: SearchSpace) -> list[str]:
    """The metrics :func:`ratios` may give: the objectives in their order, then
    :data:`RATIO_METRICS`, each once. A function of the spec alone (``pareto.csv``'s columns)."""
    return list(dict.fromkeys([m for m, _ in space.objectives] + list(RATIO_METRICS)))


def ratios(metrics: dict, ref: dict, space: SearchSpace) -> dict[str, float]:
    """design / reference for each metric of :func:`ratio_metrics` where both values are finite
    and the reference's is not 0."""
    out = {}
    for k in ratio_metrics(space):
        a, b = metrics.get(k, math.nan), ref.get(k, math.nan)
        if math.isfinite(a) and math.isfinite(b) and b != 0:
            out[k] = a / b
    return out


#: Relative margin by which a design must be better than the reference on an objective to beat it
#: there; within it the two match. The cost model computes in float32 and its inputs carry 3-4
#: significant digits, and the table prints ×ref ratios to 3 decimals: a design at 0.99997× the
#: reference's E2E latency (×ref "1.000") was reported as beating it (fresh-user trial, session 46).
#: 0.1% is ten times the Pareto front's resolution (:data:`PARETO_RESOLUTION`), still far below
#: any gain worth a new chip.
BEAT_TOLERANCE = 1e-3


def versus_reference(metrics: dict, ref: dict, space: SearchSpace) -> str:
    """How a design compares with the reference over every objective: ``"beats"`` where it is better
    by more than :data:`BEAT_TOLERANCE` (relative to the reference's value) on each; ``"matches"``
    where on each it is better or within that tolerance, and within it on one at least (a tie is
    no win); else ``"no"`` (worse beyond the tolerance on one, or a value either lacks)."""
    tied = False
    for metric, direction in space.objectives:
        a, b = metrics.get(metric, math.nan), ref.get(metric, math.nan)
        if not (math.isfinite(a) and math.isfinite(b)):
            return "no"
        gain = (a - b) if direction == "maximize" else (b - a)  # > 0: the design is better
        margin = BEAT_TOLERANCE * abs(b)
        if gain < -margin:
            return "no"
        tied = tied or gain <= margin
    return "matches" if tied else "beats"


def trial_problems(trial, space: SearchSpace) -> list[str]:
    """Why a finished trial is not a feasible design, one reason per problem; ``[]`` for a
    feasible design.

    A design the cost model cannot serve at all (weights that do not fit, a TP that does not
    divide the heads) has that one reason: no constraint matters until it is fixed. A design it
    can serve has each constraint it misses (``constraint peak_power_w <= 700 W not met``), and
    the SLO reason when no concurrency point meets the SLOs (an SLO constraint is missed exactly
    then).
    """
    return design_problems(bool(trial.user_attrs.get("feasible")), trial.user_attrs.get("infeasible_reason"),
                           trial.constraints or {}, trial.user_attrs.get("metrics") or {}, space)


def design_problems(feasible: bool, reason: str | None, constraints: dict, metrics: dict,
                    space: SearchSpace) -> list[str]:
    """:func:`trial_problems` of a design recorded as :func:`_record` records a trial (``sweep``
    prices its designs in arrays, without trials): ``feasible`` its objectives have values,
    ``reason`` its ``infeasible_reason``, ``constraints`` :func:`constraint_values`' violations,
    ``metrics`` its metrics with ``None`` for a value it has not."""
    out = []
    if not feasible:
        if reason and not reason.startswith(SLO_MISS):
            return [reason]
        if reason:
            out.append(reason)
    c = constraints
    if isinstance(c, dict):
        for con in space.constraints:
            if con.slo or not c.get(con.name, 0.0) > 0:
                continue
            if metrics.get(con.metric) is not None:
                out.append(f"constraint {con.describe()} not met")
            elif feasible:
                # a priced design without the value: a cost model that does not model it (NaN
                # area_mm2 is allowed) made every design infeasible with no reason given
                out.append(f"constraint {con.describe()} not met: the cost model gives no {con.metric} "
                           "(not modelled: drop the constraint or use a cost model that models it)")
    return out


def satisfied(trial) -> bool:
    """True if a finished trial met every constraint (Optuna: feasible when all values <= 0)."""
    c = trial.constraints or {}
    values = c.values() if isinstance(c, dict) else c
    return all(v <= 0 for v in values)


# ------------------------------------------------------------------------------- sampling
def _from_unit(p: Param, u: np.ndarray):
    """Map ``u`` in [0, 1) to parameter values (log-uniform where ``p.log``)."""
    if p.type == "categorical":
        idx = np.minimum((u * len(p.choices)).astype(int), len(p.choices) - 1)
        return np.asarray(p.choices, dtype=object if FORMAT_KEY.match(p.key) else np.float64)[idx]
    if p.log:
        x = np.exp(np.log(p.low) + u * (np.log(p.high) - np.log(p.low)))
    else:
        x = p.low + u * (p.high - p.low)
    if p.type == "int":
        return np.clip(np.round(x), p.low, p.high).astype(np.float64)
    if p.step:
        x = p.low + np.round((x - p.low) / p.step) * p.step
    # within the bounds whatever the rounding: exp(log(low)) can land an ulp below low, and Optuna
    # then warns that the enqueued value is out of range (fresh-user trial of session 16)
    return np.clip(x, p.low, p.high)


#: Significant digits a grid level is rounded to (:func:`_levels`): exp/log and the step's
#: arithmetic leave noise in the last of float64's ~16 (4 x 10^12 B/s, the middle of a log grid
#: from 1 to 16 TB/s, was 3999999999999.997 in sweep_front.csv; session 44), and no bound of a
#: spec is given to more than 12.
GRID_DIGITS = 12


def _levels(p: Param, k: int) -> list:
    """``k`` grid levels of a parameter (every choice of a categorical; log-spaced if ``log``),
    each of a number rounded to :data:`GRID_DIGITS` significant digits within its bounds."""
    if p.type == "categorical":
        return list(p.choices)
    if p.type == "int":
        n_int = int((p.high - p.low) // (p.step or 1)) + 1
        if n_int <= k:
            return [int(p.low + i * (p.step or 1)) for i in range(n_int)]
    u = np.linspace(0.0, 1.0, max(k, 2))
    return sorted({_plain(min(max(float(f"{x:.{GRID_DIGITS}g}"), p.low), p.high)) for x in _from_unit(p, u)})


def grid_levels(space: SearchSpace, n: int) -> list[list]:
    """The levels of each parameter (in ``space.params`` order) of the finest full grid of at most
    ``n`` designs: every choice of a categorical, and ``L = floor((n / choices) ** (1 / d))`` levels
    of each of the ``d`` other parameters (log-spaced where ``log``; an int range with fewer values
    takes them all). ``L`` is at least 2 (a number's low and high), so the grid (the product of the
    lengths) is larger than ``n`` only when even that coarsest grid is: :func:`sample_columns`
    refuses it."""
    ps = space.params
    n_cat = math.prod(len(p.choices) for p in ps if p.type == "categorical")
    d = sum(1 for p in ps if p.type != "categorical")
    k = max(2, int(math.floor((n / max(n_cat, 1)) ** (1.0 / d) + 1e-9))) if d else 1
    return [_levels(p, k) for p in ps]


def grid_shape(space: SearchSpace, levels: list[list]) -> str:
    """A grid's size as its factors: ``2 chip.peak_flops.fp4 levels × 5 memory.hbm.capacity choices``
    (``levels`` as :func:`grid_levels` or :func:`grid_space` give them, in ``space.params`` order)."""
    return " × ".join(f"{len(lv)} {p.key} {'choices' if p.type == 'categorical' else 'levels'}"
                      for p, lv in zip(space.params, levels))


def grid_points_problem(space: SearchSpace, n: int, where: str = "this [search] space") -> str | None:
    """Why a grid of at most ``n`` designs of ``space`` cannot be sampled, or None when it can.

    The finest full grid (:func:`grid_levels`) takes each number's low and high at least, so when
    even that coarsest grid has more than ``n`` designs the problem is, for the flagship's space and
    ``n = 10``: "the coarsest full grid of this [search] space has 80 designs (2 chip.peak_flops.fp4
    levels × ... × 2 network.scaleup_bandwidth levels: every choice, and each number's low and
    high), more than the 10 asked for; ask for 80 or more, or sample with sobol or random, which
    take any count". ``where`` names the space (``codesign sweep`` gives the spec's path). The one
    wording :func:`sample_columns` raises and ``codesign sweep --method grid`` refuses ``--points``
    with (before its warnings), so the two cannot drift.
    """
    levels = grid_levels(space, n)
    size = math.prod(len(lv) for lv in levels)
    if size <= n:
        return None
    return (f"the coarsest full grid of {where} has {size} designs ({grid_shape(space, levels)}: every choice, "
            f"and each number's low and high), more than the {n} asked for; ask for {size} or more, or sample "
            "with sobol or random, which take any count")


def sample_columns(space: SearchSpace, n: int, seed: int, method: str = "random") -> tuple[dict, int]:
    """Up to ``n`` designs as columns ``key -> array``; returns ``(columns, count)``.

    Methods: ``random`` (uniform, log-uniform where ``log``), ``sobol`` (scrambled Sobol'
    low-discrepancy sequence, scipy.stats.qmc), both exactly ``n``, and ``grid``: the finest full
    grid of at most ``n`` designs (:func:`grid_levels`), so usually fewer.

    Raises:
        CodesignError: ``grid`` when even the coarsest full grid (every choice, each number's low
            and high) has more than ``n`` designs (:func:`grid_points_problem`): it evaluated that
            grid, 80 designs of the flagship for ``n = 10`` (fresh-user trial, session 42).
    """
    ps = space.params
    if method == "grid":
        if problem := grid_points_problem(space, n):
            raise CodesignError(problem)
        grids = grid_levels(space, n)
        mesh = np.meshgrid(*[np.arange(len(g)) for g in grids], indexing="ij")
        cols = {p.key: np.asarray(g, dtype=object if FORMAT_KEY.match(p.key) else np.float64)[ix.ravel()]
                for p, g, ix in zip(ps, grids, mesh)}
        return cols, int(mesh[0].size)
    if method == "sobol":
        from scipy.stats import qmc

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "balance properties ... n a power of 2"
            u = qmc.Sobol(d=len(ps), scramble=True, seed=seed).random(n)
    elif method == "random":
        u = np.random.default_rng(seed).random((n, len(ps)))
    else:
        raise CodesignError(f"unknown sampling method {method!r}; expected random, sobol or grid")
    return {p.key: _from_unit(p, u[:, j]) for j, p in enumerate(ps)}, n


def sample_uniform(space: SearchSpace, n: int, seed: int) -> list[dict]:
    """``n`` random designs from the search space (log-uniform where the parameter is log-scaled)."""
    cols, n = sample_columns(space, n, seed)
    return _rows(cols, n)


def _rows(cols: dict, n: int, idx=None) -> list[dict]:
    idx = range(n) if idx is None else idx
    return [{k: _plain(v[i]) for k, v in cols.items()} for i in idx]


# ------------------------------------------------------------------------------- Pareto, HV
def _as_min(values, directions) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).copy()
    for j, d in enumerate(directions):
        if d == "maximize":
            v[:, j] = -v[:, j]
    return v


#: Up to this many rows, :func:`pareto_mask` with more than two objectives compares all pairs in
#: NumPy (the local search's fronts); above it, blocks in JAX.
_NUMPY_PARETO_ROWS = 1024


def pareto_mask(values: np.ndarray, directions: list[str], block: int = 2048) -> np.ndarray:
    """Non-dominated rows of ``values`` (shape ``(n, k)``), each column maximised or minimised.

    On exact integer ranks: two objectives sort lexicographically and keep a row when its second
    rank is below the running minimum of the rows before it (O(n log n), NumPy); more
    objectives compare all pairs in NumPy up to :data:`_NUMPY_PARETO_ROWS` rows, else visit rows by
    increasing rank sum (a dominating row always comes first) in JAX blocks,
    each compared with the front so far and with itself in one broadcast. Of identical rows one
    is kept.
    """
    v = _as_min(values, directions)
    n, k = v.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    ranks = np.stack([np.unique(v[:, j], return_inverse=True)[1].ravel() for j in range(k)], axis=1).astype(np.int32)
    if k == 1:
        return ranks[:, 0] == ranks[:, 0].min()
    if k == 2:  # NumPy: the same O(n log n) sweep without a JAX compile per array shape
        order = np.lexsort((ranks[:, 1], ranks[:, 0]))
        y = ranks[order, 1]
        prev = np.concatenate([[np.iinfo(np.int32).max], np.minimum.accumulate(y)[:-1]])
        keep = np.zeros(n, dtype=bool)
        keep[order[y < prev]] = True
        return keep
    if n <= _NUMPY_PARETO_ROWS:  # small sets: one NumPy broadcast, no JAX compile per shape
        le = np.all(ranks[None, :, :] <= ranks[:, None, :], axis=2)
        lt = np.any(ranks[None, :, :] < ranks[:, None, :], axis=2)
        same = np.all(ranks[None, :, :] == ranks[:, None, :], axis=2) & np.tri(n, k=-1, dtype=bool)
        return ~np.any(le & lt, axis=1) & ~np.any(same, axis=1)
    import jax.numpy as jnp

    r = jnp.asarray(ranks)
    order = np.argsort(ranks.sum(axis=1), kind="stable")
    front = jnp.zeros((0, k), dtype=jnp.int32)
    kept = []
    for s in range(0, n, block):
        idx = order[s:s + block]
        b = r[idx]

        def dominated(a, by):  # a (p, k), by (q, k) -> (p,)
            le = jnp.all(by[None, :, :] <= a[:, None, :], axis=2)
            lt = jnp.any(by[None, :, :] < a[:, None, :], axis=2)
            return jnp.any(le & lt, axis=1)

        dom = dominated(b, b)
        if front.shape[0]:
            dom = dom | dominated(b, front)
        # identical rows: keep the first of each
        same = jnp.all(b[None, :, :] == b[:, None, :], axis=2) & (jnp.arange(len(idx))[None, :] < jnp.arange(len(idx))[:, None])
        if front.shape[0]:
            same_f = jnp.any(jnp.all(front[None, :, :] == b[:, None, :], axis=2), axis=1)
        else:
            same_f = jnp.zeros(len(idx), dtype=bool)
        ok = np.asarray(~dom & ~jnp.any(same, axis=1) & ~same_f)
        kept.append(idx[ok])
        front = jnp.concatenate([front, b[ok]])
    keep = np.zeros(n, dtype=bool)
    keep[np.concatenate(kept)] = True
    return keep


def hv_reference_point(front_min: np.ndarray) -> np.ndarray:
    """Reference point for hypervolume (minimisation form): the front's nadir pushed out by 10% of
    its range in each objective (a common convention, e.g. Ishibuchi et al., EMO 2017)."""
    nadir, ideal = front_min.max(axis=0), front_min.min(axis=0)
    span = np.where(nadir > ideal, nadir - ideal, np.maximum(np.abs(nadir), 1e-12))
    return nadir + 0.1 * span


def hypervolume(values_min: np.ndarray, ref: np.ndarray) -> float:
    """Hypervolume dominated by ``values_min`` (rows, minimisation form) up to ``ref``."""
    v = np.asarray(values_min, dtype=np.float64)
    v = v[np.all(v < ref, axis=1)] if len(v) else v
    if len(v) == 0:
        return 0.0
    if v.shape[1] == 2:  # sweep: sort by the first objective, sum rectangles
        v = v[np.lexsort((v[:, 1], v[:, 0]))]
        best_y = np.minimum.accumulate(v[:, 1])
        xs = np.append(v[1:, 0], ref[0])
        return float(np.sum((xs - v[:, 0]) * (ref[1] - best_y)))
    from optuna._hypervolume import compute_hypervolume

    return float(compute_hypervolume(v, np.asarray(ref, dtype=np.float64)))


def hypervolume_series(trials: list, space: SearchSpace, ref: np.ndarray | None = None,
                       points: int = 200) -> dict[str, Any]:
    """Hypervolume of the feasible trials' front after each trial (by trial number).

    Returns ``{"reference_point", "trials", "hypervolume"}``: the reference point is the final
    feasible front's :func:`hv_reference_point` unless given (objective units, not minimisation
    form); at most ``points`` samples.
    """
    dirs = [d for _, d in space.objectives]
    ts = sorted(trials, key=lambda t: t.number)
    ok = [t for t in ts if t.user_attrs.get("feasible") and satisfied(t) and t.values is not None]
    if not ok:
        return {"reference_point": None, "trials": [], "hypervolume": []}
    vals = _as_min(np.asarray([t.values for t in ok]), dirs)
    if ref is None:
        ref = hv_reference_point(vals[pareto_mask(vals, ["minimize"] * len(dirs))])
    ref_min = np.asarray(ref, dtype=np.float64)
    numbers = np.asarray([t.number for t in ok])
    total = ts[-1].number + 1
    marks = sorted(set(np.linspace(1, total, min(points, total)).round().astype(int).tolist()))
    hv = [hypervolume(vals[numbers < m], ref_min) for m in marks]
    ref_out = [(-x if d == "maximize" else x) for x, d in zip(ref_min, dirs)]
    return {"reference_point": ref_out, "trials": marks, "hypervolume": hv}


# ------------------------------------------------------------------------------- seeds
def _to_unit(p: Param, x) -> np.ndarray:
    """Inverse of :func:`_from_unit`: parameter values -> ``u`` in [0, 1] (a categorical choice ->
    the middle of its cell)."""
    if p.type == "categorical":
        pos = {c: i for i, c in enumerate(p.choices)}
        return (np.asarray([pos[v] for v in np.asarray(x).tolist()], dtype=np.float64) + 0.5) / len(p.choices)
    x = np.asarray(x, dtype=np.float64)
    if p.log:
        u = np.log(x / p.low) / np.log(p.high / p.low)
    else:
        u = (x - p.low) / (p.high - p.low)
    return np.clip(u, 0.0, 1.0)


def _unit_columns(space: SearchSpace, u: np.ndarray) -> dict[str, np.ndarray]:
    return {p.key: _from_unit(p, np.clip(u[:, j], 0.0, 1.0 - 1e-12)) for j, p in enumerate(space.params)}


def _spread(vals: np.ndarray, dirs: list[str], limit: int) -> np.ndarray:
    """Indices of at most ``limit`` rows of a non-dominated set ``vals`` that keep most of its
    hypervolume: for two objectives, greedy by hypervolume contribution (the two extremes first;
    reference point :func:`hv_reference_point` of the set); otherwise evenly along the first
    objective."""
    n = len(vals)
    if n <= limit:
        return np.arange(n)
    v = _as_min(vals, dirs)
    order = np.argsort(v[:, 0], kind="stable")
    if v.shape[1] != 2 or limit < 2:
        return order[np.linspace(0, n - 1, limit).round().astype(int)]
    ref = hv_reference_point(v)
    chosen = [int(order[0]), int(order[-1])]
    while len(chosen) < limit:
        # a point's gain against the chosen staircase: the part of its box no chosen point covers
        c = v[chosen]
        c = c[np.argsort(c[:, 0])]
        # for each candidate, the chosen neighbours left (x below) and right of it
        j = np.searchsorted(c[:, 0], v[:, 0], side="right")
        left_y = np.where(j > 0, c[np.maximum(j - 1, 0), 1], ref[1])
        right_x = np.where(j < len(c), c[np.minimum(j, len(c) - 1), 0], ref[0])
        gain = np.maximum(right_x - v[:, 0], 0.0) * np.maximum(np.minimum(left_y, ref[1]) - v[:, 1], 0.0)
        gain[chosen] = -1.0
        best = int(np.argmax(gain))
        if gain[best] <= 0:
            break
        chosen.append(best)
    return np.asarray(sorted(chosen, key=lambda i: v[i, 0]))


#: Local search (:func:`front_search`): log10 range of the step size (a fraction of each
#: parameter's range), and the share of children of the front's two ends.
_STEP_LOG10 = (-3.0, -0.5)
_ENDS = 0.25


def front_search(spec: Spec, space: SearchSpace, n: int, seed: int, evaluate, *, refine: int = 0,
                 tpot_reference_s: float | None = None, rounds: int | None = None,
                 start: list[dict] | None = None) -> dict[str, np.ndarray]:
    """A vectorised sweep and local search for the feasible Pareto front, outside Optuna.

    ``n`` scrambled Sobol' designs (or the designs ``start``), then ``refine`` more in ``rounds``
    rounds (default: one per :data:`BLOCK_ROWS` call), each one
    vectorised cost-model call over children of the current feasible front (a quarter of them
    of its two ends, so that it grows outwards too): a Gaussian step in the unit cube (log-space
    for log parameters; the step size log-uniform between 0.1% and 30% of the range, so both
    coarse moves and fine moves along a constraint boundary happen), with a categorical choice
    redrawn at random now and then, or a point between two neighbours on the front (filling its
    gaps). Deterministic for a given ``seed``. Calls are padded to :data:`BLOCK_ROWS` rows, the
    shape the search compiles anyway.

    Returns:
        ``{"u": (m, d), "values": (m, k), "ok": (m,)}`` for every evaluated design (``u`` in the
        unit cube, :func:`_unit_columns` maps it back to parameter values).
    """
    ps = space.params
    dirs = [d for _, d in space.objectives]
    if (n <= 0 and not start) or not ps:
        return {"u": np.zeros((0, len(ps))), "values": np.zeros((0, len(dirs))), "ok": np.zeros(0, bool)}

    def run(u):
        met, _, _ = envelope_arrays(spec, _unit_columns(space, u), len(u), space, evaluate, tpot_reference_s,
                                    with_reasons=False)
        return feasible_objectives(met, space)

    if start:
        U = np.stack([_to_unit(p, [v[p.key] for v in start]) for p in ps], axis=1)
    else:
        cols, n = sample_columns(space, n, seed, "sobol")
        U = np.stack([_to_unit(p, cols[p.key]) for p in ps], axis=1)
    V, OK = run(U)
    idx = np.flatnonzero(OK)
    arch = idx[pareto_mask(V[idx], dirs)]  # the feasible front so far
    cat = np.asarray([p.type == "categorical" for p in ps])
    ncat = np.asarray([len(p.choices) if p.type == "categorical" else 1 for p in ps])
    rng = np.random.default_rng([seed & 0xFFFFFFFF, 0x5eed])
    per_design = max(1, BLOCK_ROWS // len(space.combos()))
    rounds = (rounds or max(1, refine // per_design)) if refine > 0 else 0
    for r in range(rounds):
        m = refine // rounds + (1 if r < refine % rounds else 0)
        if not len(arch):
            break
        front = arch[_spread(V[arch], dirs, max(2, per_design // 8))]
        front = front[np.argsort(_as_min(V[front], dirs)[:, 0], kind="stable")]
        k = len(front)
        par = rng.integers(0, k, m)
        # a quarter of the children go to the front's two ends, so that it also grows outwards
        end = rng.random(m) < _ENDS
        par = np.where(end, np.where(rng.random(m) < 0.5, 0, k - 1), par)
        base = U[front[par]].copy()
        sigma = 10.0 ** rng.uniform(*_STEP_LOG10, (m, 1))
        step = rng.standard_normal((m, len(ps))) * sigma
        step *= rng.random((m, len(ps))) < max(0.5, 1.0 / len(ps))
        child = base + np.where(cat, 0.0, step)
        # a point between the parent and its neighbour on the front (gap filling)
        gap = (rng.random(m) < 0.3) & (k > 1)
        nb = np.clip(par + np.where(rng.random(m) < 0.5, -1, 1), 0, k - 1)
        t = rng.random((m, 1))
        child = np.where(gap[:, None], base + t * (U[front[nb]] - base) + 0.1 * step, child)
        # categorical choices: mostly the parent's (or its neighbour's when filling a gap), sometimes redrawn
        redraw = cat & (rng.random((m, len(ps))) < 0.1)
        pick = np.where(gap[:, None] & (rng.random((m, len(ps))) < 0.5), U[front[nb]], base)
        fresh = (rng.integers(0, 1 << 30, (m, len(ps))) % ncat + 0.5) / ncat
        child = np.where(cat, np.where(redraw, fresh, pick), child)
        child = np.clip(child, 0.0, 1.0)
        v, ok = run(child)
        cand = np.concatenate([arch, len(U) + np.flatnonzero(ok)])
        U, V, OK = np.concatenate([U, child]), np.concatenate([V, v]), np.concatenate([OK, ok])
        arch = cand[pareto_mask(V[cand], dirs)]
    return {"u": U, "values": V, "ok": OK}


def sweep_seeds(spec: Spec, space: SearchSpace, n: int, seed: int, evaluate, limit: int,
                tpot_reference_s: float | None = None, *, refine: int = 0) -> list[dict]:
    """Designs on the feasible Pareto front of a vectorised sweep of ``n`` points, refined by a
    vectorised local search of ``refine`` more (:func:`front_search`).

    At most ``limit`` designs, chosen to keep most of the front's hypervolume (:func:`_spread`);
    they enter the study as enqueued trials (tagged ``seed_source = "sweep"``), so a short search
    starts from a good front.
    """
    got = front_search(spec, space, n, seed, evaluate, refine=refine, tpot_reference_s=tpot_reference_s)
    idx = np.flatnonzero(got["ok"])
    if not len(idx) or limit <= 0:
        return []
    dirs = [d for _, d in space.objectives]
    front = idx[pareto_mask(got["values"][idx], dirs)]
    front = front[_spread(got["values"][front], dirs, limit)]
    cols = _unit_columns(space, got["u"][front])
    return _rows(cols, len(front))


# ------------------------------------------------------------------------------- samplers
@frozen(kw_only=True)
class SamplerInfo:
    """A sampler registered through the ``codesign_samplers`` hook.

    Attributes:
        name: lowercase; ``[search] sampler`` selects it.
        description: one line.
        factory: ``factory(seed=int, population=int, space=SearchSpace) -> optuna.samplers.BaseSampler``.
        plugin: the registering plugin's name (set by the plugin manager).
    """

    name: str
    description: str = ""
    factory: Any = attrs.field(default=None, eq=False, repr=False)
    plugin: str = ""


BUILTIN_SAMPLERS = {
    "nsga2": "NSGA-II (Optuna NSGAIISampler; population = batch size), the default",
    "tpe": "multivariate TPE (Optuna TPESampler)",
    "gp": "Gaussian-process Bayesian optimisation (Optuna GPSampler)",
    "random": "uniform random (Optuna RandomSampler)",
    "grid": "Optuna GridSampler: every categorical choice × search.grid_points levels per number, each "
            "design once (trials beyond the grid's size are not run)",
}


def grid_space(space: SearchSpace, points: int) -> dict[str, list]:
    """The grid of ``sampler = "grid"``: categoricals and small int ranges take every value, other
    parameters ``points`` levels (log-spaced where ``log``), as Optuna ``GridSampler`` wants."""
    return {p.key: _levels(p, points) for p in space.params}


def grid_size(space: SearchSpace, points: int) -> int:
    """Designs in a ``sampler = "grid"`` search's grid (:func:`grid_space` at ``search.grid_points``
    = ``points``): the product of its parameters' level counts."""
    return math.prod(len(lv) for lv in grid_space(space, points).values())


def _grid_sampler(search_space: dict[str, list], seed: int):
    """Optuna's ``GridSampler`` without its stop: once every design of the grid has been asked it
    calls ``study.stop()``, which raises outside ``Study.optimize`` (this module asks and tells
    itself), so a search that ran its whole grid ended in an internal error (fresh-user trial, session
    42). The trials a grid runs are capped at its size instead (:func:`_grid_total`)."""
    import optuna

    class GridSampler(optuna.samplers.GridSampler):
        def after_trial(self, study, trial, state, values) -> None:  # noqa: D401 - Optuna hook
            return None

    return GridSampler(search_space, seed=seed)


def _grid_total(ctx, total: int, note=None) -> int:
    """``total`` trials of a ``sampler = "grid"`` search capped at the grid's size (a grid prices
    each design once: a second pass repeats the first), with a ``note`` saying how many of the
    grid's designs run; ``total`` itself for any other sampler."""
    s = ctx.spec.search
    if s.sampler.lower() != "grid":
        return total
    levels = list(grid_space(ctx.space, s.grid_points).values())
    size = math.prod(len(lv) for lv in levels)  # grid_size's, from the levels the note shows
    what = (f'the grid (search.sampler = "grid", search.grid_points = {s.grid_points}) has {size} designs '
            f"({grid_shape(ctx.space, levels)})")
    if total > size:
        if note:
            note(f"{what}: the search runs {size} trials, not the {total} asked for (a grid prices each design once)")
        return size
    if total < size and note:
        note(f"{what}: {total} trials price {total} of them, picked at random; ask for {size} trials for the "
             "whole grid")
    return total


def make_sampler(name: str, seed: int, population: int, space: SearchSpace | None = None,
                 grid_points: int = 5, pm=None):
    """The Optuna sampler ``name``: a built-in (:data:`BUILTIN_SAMPLERS`) or a plugin's, behind a
    guard that names the plugin when one of its methods raises (``.inner`` is the plugin's).

    Raises:
        PluginBugError: the plugin's factory raised or returned no ``optuna.samplers.BaseSampler``.
        CodesignError: no such sampler."""
    import optuna

    name = name.lower()
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=population)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if name == "grid":
        if space is None:
            raise CodesignError("the grid sampler needs the search space")
        return _grid_sampler(grid_space(space, grid_points), seed)
    from .pluginmanager import get_plugin_manager

    plugins = (pm or get_plugin_manager()).samplers
    if name in plugins:
        info = plugins[name]
        who = f"sampler {name!r} (plugin {info.plugin})"
        try:
            sampler = info.factory(seed=seed, population=population, space=space)
        except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - a plugin bug must not become a traceback
            raise PluginBugError(f"{who} failed to start: {type(exc).__name__}: {exc}") from exc
        if not isinstance(sampler, optuna.samplers.BaseSampler):
            raise PluginBugError(f"{who} returned {type(sampler).__name__}, expected an optuna.samplers.BaseSampler")
        return _GuardedSampler(sampler, who)
    raise CodesignError(sampler_problem(name, pm=pm))


@functools.cache  # the class is built once, on first use: optuna is imported lazily
def _guarded_sampler_class():
    import optuna

    class GuardedSampler(optuna.samplers.BaseSampler):
        """A plugin's sampler, whose methods Optuna calls inside ``ask``/``tell``: one raising is
        named as that plugin's bug (:class:`~codesign.errors.PluginBugError`, exit 3) instead of
        an internal error naming neither (noticed in session 26). ``inner`` is the plugin's."""

        def __init__(self, inner, who: str):
            self.inner, self.who = inner, who

        def _call(self, method: str, *args):
            try:
                return getattr(self.inner, method)(*args)
            except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - a plugin bug must not become a traceback
                if isinstance(exc, optuna.exceptions.OptunaError) and not isinstance(exc, optuna.exceptions.StorageInternalError):
                    raise  # Optuna's own signalling (a pruned or stopped trial) passes through
                raise PluginBugError(f"{self.who} raised in {method}(): {type(exc).__name__}: {exc}") from exc

        def infer_relative_search_space(self, study, trial):
            return self._call("infer_relative_search_space", study, trial)

        def sample_relative(self, study, trial, search_space):
            return self._call("sample_relative", study, trial, search_space)

        def sample_independent(self, study, trial, param_name, param_distribution):
            return self._call("sample_independent", study, trial, param_name, param_distribution)

        def before_trial(self, study, trial):
            return self._call("before_trial", study, trial)

        def after_trial(self, study, trial, state, values):
            return self._call("after_trial", study, trial, state, values)

        def reseed_rng(self):
            return self._call("reseed_rng")

    return GuardedSampler


def _GuardedSampler(inner, who: str):
    """``inner`` (a plugin's sampler) behind :func:`_guarded_sampler_class`'s guard."""
    return _guarded_sampler_class()(inner, who)


def sampler_problem(name: str, pm=None) -> str | None:
    """Why ``name`` (any case) is no sampler :func:`make_sampler` can start: neither a built-in
    (:data:`BUILTIN_SAMPLERS`) nor one a plugin registers (the plugin manager is asked only for a
    name that is no built-in); None when it is one."""
    name = name.lower()
    if name in BUILTIN_SAMPLERS:
        return None
    from .pluginmanager import get_plugin_manager

    plugins = (pm or get_plugin_manager()).samplers
    if name in plugins:
        return None
    names = list(BUILTIN_SAMPLERS) + sorted(plugins)
    close = close_name(name, names)  # 'nsga-2' for 'nsga2'
    guess = f"did you mean {close!r}? " if close else ""
    return f"unknown sampler {name!r}; {guess}expected one of {', '.join(names)}"


# ------------------------------------------------------------------------------- storage
#: ``[search]`` keys that may change between runs of one study (budgets, not the problem).
_RESUMABLE_KEYS = {("search", "trials"), ("search", "batch_size"), ("search", "seed_sweep"),
                   ("search", "gradient_seeds")}


def spec_fingerprint(spec: Spec) -> dict:
    """The merged spec as flat ``{dotted key: value}`` (budget keys left out), as stored with a study."""
    import json

    from .spec import load_raw

    raw, _ = load_raw(spec.path)
    flat: dict[str, Any] = {}

    def walk(d, prefix=()):
        for k, v in d.items():
            path = prefix + (k,)
            if path in _RESUMABLE_KEYS:
                continue
            if isinstance(v, dict):
                walk(v, path)
            else:
                flat[".".join(path)] = json.loads(json.dumps(v, default=str))

    walk(raw)
    if spec.efficiency:
        flat["(efficiency)"] = {k: float(v) for k, v in sorted(spec.efficiency.items())}
    return flat


def _check_fingerprint(study, spec: Spec, name: str, where: str, pm=None,
                       elsewhere: str = "another --out (or --storage)") -> None:
    """Refuse to resume a study that was run with a different spec or a different version of its
    cost model (mixed results otherwise: stored trials keep the metrics their model gave)."""
    if not spec.path:
        return
    now = spec_fingerprint(spec)
    if pm is not None:
        from .evaluation import cost_model_name

        cm = cost_model_name(spec, pm=pm)
        info = pm.cost_models.get(cm)
        now["(cost model)"] = f"{cm} {info.version}" if info is not None else cm
    old = study.user_attrs.get("spec_fingerprint")
    if old is None:
        if not study.get_trials(deepcopy=False):
            study.set_user_attr("spec_fingerprint", now)
        return
    changed = sorted(k for k in set(old) | set(now) if old.get(k) != now.get(k))
    if changed:
        shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
        if changed == ["(cost model)"]:
            raise CodesignError(
                f"the study {name!r} in {where} was run with cost model {old.get('(cost model)') or 'of an older codesign'}"
                f", not {now['(cost model)']}; its trials would mix with the new ones. Use {elsewhere} "
                f"to start a new study, or delete the old one.")
        raise CodesignError(
            f"the study {name!r} in {where} was run with a different spec (changed: {shown}); its trials "
            f"would mix with the new ones. Use {elsewhere} to start a new study, or "
            f"restore the spec to resume.")


def scrub(text: str, url: str) -> str:
    """``text`` with every fragment of ``url``'s password replaced by ``***``.

    A driver may split a malformed URL elsewhere than we do (at the first ``@``, say) and echo a
    piece of the password inside its own message; so every ``@``/``:``-separated piece of the
    user-info after the user name is scrubbed, whatever the message's layout.
    """
    netloc = url.split("://", 1)[-1].split("/", 1)[0]
    if "@" not in netloc:
        return text
    info = netloc[:netloc.rfind("@")]
    pieces = [info.split(":", 1)[1]] if ":" in info else []
    pieces += [t for t in re.split(r"[:@]", info)[1:] if len(t) >= 2]
    for piece in sorted(set(pieces), key=len, reverse=True):
        if piece:
            # a piece as a whole, not inside a word: a password "e" left "OperationalError" as
            # "Op***rationalError" and told which letters the password holds
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(piece)}(?![A-Za-z0-9])", "***", text)
    return text


def redact(url: str) -> str:
    """A storage URL (or any text holding one) with passwords replaced by ``***``.

    The user-info part is everything between ``://`` and the LAST ``@`` before the host, so an
    empty user name (``postgresql://:pw@host``) and an unencoded ``@`` in the password are covered;
    ``password=`` query parameters too.
    """
    def userinfo(m):
        info = m.group(2)
        user = info.split(":", 1)[0] if ":" in info else None
        return m.group(1) + (f"{user}:***@" if user is not None else f"{info}@")

    url = re.sub(r"(://)([^/\s]*)@", userinfo, url)
    if "://" not in url:  # a URL typed without its scheme (user:pw@host/db) still carries a password
        url = re.sub(r"^(/*)([^/\s:@]+):[^/\s]*@", r"\1\2:***@", url)
    return re.sub(r"(?i)(password=)[^&\s]*", r"\1***", url)


def _repair_journal(path: str) -> None:
    """Drop a torn last line (a process killed mid-append) so that appends stay parseable."""

    try:
        with open(path, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            fh.seek(max(0, size - (1 << 20)))
            tail = fh.read()
            cut = tail.rfind(b"\n")
            fh.truncate(size - len(tail) + cut + 1 if cut >= 0 else 0)
    except (FileNotFoundError, NotADirectoryError):  # no journal yet (its directory may be a file: refused later)
        pass


def _driver_url(url: str) -> str:
    """SQLAlchemy 2.1 maps ``postgresql://`` to psycopg 3; use psycopg2 (the ``postgres`` extra,
    ``psycopg2-binary``) when only that driver is installed."""
    import importlib.util

    if url.startswith("postgres://"):  # libpq's (and Heroku's) alias; SQLAlchemy knows postgresql:// only
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://") and importlib.util.find_spec("psycopg") is None \
            and importlib.util.find_spec("psycopg2") is not None:
        return "postgresql+psycopg2://" + url.split("://", 1)[1]
    return url


#: Seconds between the heartbeats a process records for the trials it is running in a database
#: storage (PostgreSQL, SQLite; Optuna's ``heartbeat_interval``). A running trial unheard of for
#: :data:`HEARTBEAT_GRACE` intervals belongs to a process that died without a word (SIGKILL, the
#: OOM killer, a lost machine): the next batch of any process on the study fails it and enqueues its
#: design again where it was enqueued (a seed, a refill), so the study still reaches its trial count.
#: Without heartbeats such a trial stayed RUNNING for good and was counted towards ``--trials``.
#: ``CODESIGN_HEARTBEAT_S`` (a whole number of seconds) overrides it, for tests.
HEARTBEAT_S = 20
#: Heartbeat intervals a running trial may go unheard of before it is failed (Optuna's
#: ``grace_period`` = this × :data:`HEARTBEAT_S`: 2 minutes by default, beyond a first batch's JAX
#: compilation, during which the heartbeat thread keeps beating).
HEARTBEAT_GRACE = 6


def heartbeat_s() -> int:
    """:data:`HEARTBEAT_S`, or ``CODESIGN_HEARTBEAT_S`` where it is set to a whole number >= 1."""
    raw = os.environ.get("CODESIGN_HEARTBEAT_S", "").strip()
    if not raw:
        return HEARTBEAT_S
    if not raw.isdigit() or int(raw) < 1:
        raise CodesignError(f"CODESIGN_HEARTBEAT_S={raw!r}: expected a whole number of seconds >= 1")
    return int(raw)


def _requeue_stale(study, trial) -> None:
    """Optuna's ``heartbeat_stale_trial_callback``: a trial failed for its silent process gives its
    design back where it was an enqueued one, as :func:`_give_back` does for an interrupted batch."""
    if "fixed_params" in trial.system_attrs:
        study.enqueue_trial(dict(trial.system_attrs["fixed_params"]),
                            user_attrs={"seed_source": trial.user_attrs["seed_source"]}
                            if "seed_source" in trial.user_attrs else None)


def _fail_stale(study) -> None:
    """Fail the running trials of ``study`` whose process has stopped beating (database storages;
    nothing for a journal, whose own run fails them when it resumes: :func:`_prepare`)."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def _wait_for_running(study) -> bool:
    """A study that is full only with the running trials of other processes (database storages):
    wait until they are told or, their process silent beyond the grace period, failed
    (:func:`_fail_stale`). Returns whether any was failed (the caller then runs their places),
    ``False`` at once for a journal (no heartbeats) or when none is running. A worker that simply
    left would otherwise leave the study short of its trial count whenever the last process to
    stop was not the one that died (shared PostgreSQL, one machine lost)."""
    import time

    import optuna
    from optuna.storages._heartbeat import is_heartbeat_enabled

    storage = study._storage
    if not is_heartbeat_enabled(storage):
        return False
    interval = storage.get_heartbeat_interval()
    deadline = time.monotonic() + interval * (HEARTBEAT_GRACE + 2)
    said = False
    while True:
        running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        if not running:
            return False
        if said is False:
            print(f"waiting for {len(running)} running trial(s) of other processes (a trial whose process "
                  f"is silent for {interval * HEARTBEAT_GRACE} s is failed and run again)", file=sys.stderr)
            said = True
        _fail_stale(study)
        failed = {t.number for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,))}
        if any(t.number in failed for t in running):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(min(interval, 2.0))


class _Heartbeat:
    """Records a heartbeat for each trial of a batch (:meth:`add`, at once) and again every
    interval from a daemon thread until the batch is told (``with`` block), for a storage with
    heartbeats; does nothing for one without (a journal)."""

    def __init__(self, study):
        from optuna.storages._heartbeat import is_heartbeat_enabled

        self._storage = study._storage
        self._on = is_heartbeat_enabled(self._storage)
        self._ids: list[int] = []
        self._stop = None

    def add(self, trial) -> None:
        if self._on:
            self._ids.append(trial._trial_id)
            self._storage.record_heartbeat(trial._trial_id)

    def __enter__(self):
        if self._on:
            import threading

            self._stop = threading.Event()
            interval = self._storage.get_heartbeat_interval()

            def beat():
                while not self._stop.wait(interval):
                    for tid in list(self._ids):
                        try:
                            self._storage.record_heartbeat(tid)
                        except Exception:  # noqa: BLE001 - a missed beat is retried next interval
                            pass
            threading.Thread(target=beat, name="codesign-heartbeat", daemon=True).start()
        return self

    def __exit__(self, *exc):
        if self._stop is not None:
            self._stop.set()
        return False


def _rdb_storage(url: str, attempts: int = 6, beat: int = HEARTBEAT_S):
    """Optuna's RDBStorage for ``url``, with heartbeats (:data:`HEARTBEAT_S`), retried when workers
    started together race to create its
    tables on an empty database: PostgreSQL lets only one concurrent CREATE TABLE of a name win and
    fails the others with a unique violation on ``pg_type`` ("duplicate key value violates unique
    constraint pg_type_typname_nsp_index", seen with three ``codesign worker`` processes on a new
    database) or "already exists"; the next attempt finds the tables made."""
    import random
    import time

    import optuna

    for i in range(attempts):
        try:
            with warnings.catch_warnings():  # "heartbeat_interval is an experimental feature"
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, heartbeat_interval=beat, grace_period=beat * HEARTBEAT_GRACE,
                                                  heartbeat_stale_trial_callback=_requeue_stale)
        except Exception as exc:  # noqa: BLE001 - sqlalchemy's IntegrityError / ProgrammingError
            text = str(exc)
            if i == attempts - 1 or not ("duplicate key" in text or "already exists" in text):
                raise
            time.sleep(0.2 + random.random() * 0.5 * (i + 1))


def _make_parent(path: Path, what: str, storage: str | None = None) -> None:
    """Create the missing directory of a study's file (``what`` names the file in the message).

    With ``storage`` (the ``--storage`` value the file comes from) the message starts with
    ``--storage VALUE:``, its password redacted, as the other storage errors do; without it (the
    default journal in the output directory) it names ``what``.

    Created here, once the spec has been accepted (not by the CLI); :func:`join_study` refuses a
    missing directory before, and :func:`run_search` removes what was created when the run is
    refused before it starts."""
    parent = path.parent
    lead = (f"--storage {redact(storage)}: cannot create the directory {parent}" if storage
            else f"cannot create the directory {parent} for {what}")
    if not parent.is_dir():
        blocker = _file_in_the_way(parent)
        if blocker is not None:  # mkdir said "File exists" or "Not a directory"
            raise CodesignError(f"{lead}: {blocker} exists and is not a directory")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CodesignError(f"{lead}: {exc.strerror or exc}") from None


def _file_in_the_way(directory: Path) -> Path | None:
    """The file (no directory) that ``directory`` is, or is under, so that it cannot exist: the
    nearest existing one of ``directory`` and its parents, when that is no directory; else None."""
    nearest = next((p for p in (directory, *directory.parents) if p.exists()), None)
    return nearest if nearest is not None and not nearest.is_dir() else None


def _sqlite_path(url: str | None) -> Path | None:
    """The database file of a ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``
    URL (any ``sqlite+driver``), as SQLAlchemy reads it (relative to the current directory,
    ``%20`` decoded); None for any other storage, an in-memory database, a ``file:`` URI
    (``?uri=true``) or a URL SQLAlchemy cannot parse (its own error says so)."""
    if not url or not re.match(r"^sqlite(\+\w+)?://", url):
        return None
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - sqlalchemy's ArgumentError / ValueError: reported when opened
        return None
    db = parsed.database
    if not db or db.strip() != db or db == ":memory:" or db.startswith("file:") \
            or str(parsed.query.get("uri", "")).lower() in ("true", "1"):
        return None
    return Path(db)


def _check_port(url: str) -> None:
    """Refuse a storage URL whose port (after the host's ``:``) is no integer 1..65535, before the
    driver answers "invalid literal for int() with base 10" (an empty port too). A URL without a
    port is left alone."""
    from urllib.parse import urlsplit

    try:
        netloc = urlsplit(url).netloc
    except ValueError:  # a "[" or "]" where urlsplit takes none: SQLAlchemy reads the rest as the port
        netloc = re.split(r"[/?#]", url.split("://", 1)[-1], maxsplit=1)[0]
        host = netloc.rpartition("@")[2]
        if re.fullmatch(r"(\[[^\[\]]*\])?[^\[\]]*", host):
            return  # brackets balanced (one in a password, a bracketed name that is no IP): the driver's word
        if "@" not in netloc and ":" in netloc and not netloc.startswith("["):
            # user:password/db without its "@host": the password is the would-be port, not echoed
            shown = redact(url).replace(netloc, netloc.split(":", 1)[0] + ":***", 1)
            raise CodesignError(f"--storage {shown}: malformed host (a password goes in user:password@host)")
        raise CodesignError(f"--storage {redact(url)}: malformed host: an unclosed '[' or a stray ']'; an IPv6 "
                            "address goes in brackets with its port after them "
                            "(postgresql://user:password@[::1]:5432/db)")
    host = netloc.rpartition("@")[2].rpartition("]")[2]  # past the password and an IPv6 address
    port = host.rpartition(":")[2] if ":" in host else None
    if port is not None and not (re.fullmatch(r"[0-9]+", port) and 1 <= int(port) <= 65535):
        shown = redact(url)
        if "@" not in netloc and not port.isdigit():
            # user:password/db without its "@host": the URL syntax reads the password as the port,
            # so the port is not echoed either
            shown = shown.replace(f"{netloc}", f"{netloc[: len(netloc) - len(port)]}***", 1)
            raise CodesignError(f"--storage {shown}: the port must be an integer 1..65535 "
                                "(a password goes in user:password@host)")
        raise CodesignError(f"--storage {shown}: the port must be an integer 1..65535")


#: Seconds after which a journal lock that points nowhere is taken as left by a killed run (Optuna
#: releases a live-looking lock after its grace period, 10 s here; a dangling one it never can).
DANGLING_LOCK_S = 10.0


def _clear_dangling_lock(path: str) -> None:
    """Remove ``path``'s lock symlink when it points nowhere and is older than
    :data:`DANGLING_LOCK_S`: one a killed run of an older codesign left with a relative target
    (see :func:`open_storage`), on which Optuna's lock would wait forever."""
    import time

    lock = path + ".lock"
    try:
        if os.path.islink(lock) and not os.path.exists(lock) \
                and time.time() - os.lstat(lock).st_mtime > DANGLING_LOCK_S:
            os.unlink(lock)
    except OSError:  # gone meanwhile (another process took it away)
        pass


#: Seconds after which a journal lock nobody releases is taken as stale and forcibly released
#: (Optuna's ``grace_period``; it counts from the journal's last change, as Optuna stats the
#: lock's target).
LOCK_GRACE_S = 10


class _JournalLock:
    """Optuna's symlink lock on a journal (``JournalFileSymlinkLock``, absolute ``path``), with
    Ctrl-C and SIGTERM held off from acquiring it until it is released (:mod:`codesign.interrupts`):
    a KeyboardInterrupt raised inside Optuna's ``release`` before its rename made the lock's own
    clean-up unlink a missing file (an internal FileNotFoundError, exit 3 instead of 143, and the
    lock left behind). A signal kept meanwhile is raised as the lock is released: after the write,
    before the storage call returns, so a clean-up reads the storage again rather than trusting
    what the interrupted call returned. Signals are also held off while this process waits for
    another's lock: at most until a stale lock is forcibly released, :data:`LOCK_GRACE_S` after the
    journal last changed (Optuna's own wait would otherwise, on KeyboardInterrupt, release the
    other process's live lock). ``release`` leaves a stray rename file rather than raising when it
    is interrupted between its rename and unlink (library use, without the CLI's handler).

    A plain class (duck-typed for ``JournalFileBackend``'s ``lock_obj``) at module level, so the
    storage still pickles; Optuna is imported only when one is made.
    """

    def __init__(self, path: str, grace_period: int = LOCK_GRACE_S) -> None:
        from optuna.storages.journal import JournalFileSymlinkLock

        self._inner = JournalFileSymlinkLock(path, grace_period=grace_period)
        self._lock_file = path + ".lock"  # Optuna's LOCK_FILE_SUFFIX

    def acquire(self) -> bool:
        interrupts.hold()
        try:
            return self._inner.acquire()
        except BaseException:
            interrupts.resume()
            raise

    def release(self) -> None:
        import uuid

        lock = self._lock_file
        moved = lock + str(uuid.uuid4()) + ".rename"  # Optuna's RENAME_FILE_SUFFIX
        try:
            try:
                os.rename(lock, moved)
            except OSError:
                raise RuntimeError("Error: did not possess lock") from None  # Optuna's own message
            try:
                os.unlink(moved)
            except FileNotFoundError:  # pragma: no cover - removed by someone else
                pass
        finally:
            interrupts.resume()  # a signal kept meanwhile is raised here, the lock released


def open_storage(url: str | None, out_dir, *, repair: bool = False):
    """An Optuna storage: a journal file in ``out_dir`` by default (or ``journal:PATH``, ``*.journal``)
    shared between local processes through Optuna's file lock, or an RDB URL
    (``postgresql://user:pw@host/db``, ``sqlite:///file.db``) for many hosts.

    Returns ``(storage, printable location)``; the location never holds a password.
    """
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if url is not None and not url.strip():  # read as the path "" (the current directory): "is a directory"
        raise CodesignError(f"--storage {url!r}: empty; give a journal file path, sqlite:///PATH or "
                            "postgresql://user:password@host/db")
    if _is_journal(url):
        path = url[len("journal:"):] if url and url.startswith("journal:") else (url or str(out_dir / "study.journal"))
        _check_journal(url, path)
        if repair:
            _repair_journal(path)
        _make_parent(Path(path), f"the journal {path}", url)
        _clear_dangling_lock(path)
        # the lock is a symlink to the journal, its target resolved from the link's directory: a
        # relative path (runs/x/study.journal) made a link to runs/x/runs/x/study.journal, which
        # Optuna's stale-lock check cannot stat, so a lock left by a killed run was never released
        # and every later run spun on it forever
        backend = JournalFileBackend(path, lock_obj=_JournalLock(os.path.abspath(path)))
        return optuna.storages.JournalStorage(backend), path
    if ":memory:" in url or re.match(r"(?i)^sqlite(\+\w+)?:///?\s*$", url.split("?", 1)[0]):
        raise CodesignError(f"--storage {redact(url)}: an in-memory database keeps nothing (the trials vanish "
                            "when the process exits, and no other worker can join it); give a file "
                            "(sqlite:///runs/study.db, runs/study.journal) or a server URL")
    if not _SCHEME.match(url):
        # a path that is no *.journal (study.log, a directory, study.db) or a URL without its scheme:
        # SQLAlchemy's "Could not parse SQLAlchemy URL from given URL string" said none of this
        what = "is a directory; " if Path(url).is_dir() else ""
        raise CodesignError(f"--storage {redact(url)}: {what}expected a journal file (a path ending in .journal, "
                            "or journal:PATH for any file name) or a database URL (postgresql://user:password@host/db, "
                            "sqlite:///relative/path.db, sqlite:////absolute/path.db)")
    _check_port(url)
    db = _sqlite_path(url)
    if db is not None:  # SQLite creates the file, not its directory ("unable to open database file")
        _make_parent(db, f"the database {redact(url)}", url)
    beat = heartbeat_s()
    try:
        import logging

        logging.getLogger("sqlalchemy").setLevel(logging.ERROR)
        return _rdb_storage(_driver_url(url), beat=beat), redact(url)
    except ImportError as exc:  # Optuna: "Failed to import DB access module", from SQLAlchemy's driver import
        cause = exc if isinstance(exc, ModuleNotFoundError) else (exc.__cause__ or exc)
        scheme = url.split("://", 1)[0]
        if not isinstance(cause, ModuleNotFoundError):  # there, but it fails to load (libpq.so missing, versions)
            why = scrub(redact(str(cause).splitlines()[0] if str(cause) else type(cause).__name__), url)
            raise CodesignError(f"--storage {redact(url)}: the database driver for {scheme}:// is installed "
                                f"but fails to load: {why}") from None
        missing = cause.name  # the scheme's DB driver is not installed
        raise CodesignError(
            f"--storage {redact(url)}: the database driver for {scheme}:// is not installed"
            + (f" (no module {missing!r})" if missing else "")
            + "; codesign supports and tests a journal file (PATH.journal or journal:PATH), sqlite:///PATH and "
            'postgresql://user:password@host/db with psycopg2 (pip install -e ".[postgres]" installs it)') from None
    except Exception as exc:  # noqa: BLE001 - sqlalchemy/driver errors carry the URL
        msg = scrub(redact(str(exc).splitlines()[0] if str(exc) else type(exc).__name__), url)
        netloc = url.split("://", 1)[-1].split("/", 1)[0]
        if netloc.count("@") > 1:
            msg += " (an '@' inside the password must be written %40)"
        if re.match(r"^postgres(ql)?(\+\w+)?://", url) and "Can't load plugin" in msg:
            msg += ' (no PostgreSQL driver installed: pip install -e ".[postgres]" installs psycopg2-binary)'
        elif "Can't load plugin" in msg:  # SQLAlchemy knows no dialect of that name (foo://)
            msg = (f"no database of the scheme {url.split('://', 1)[0]}:// is known; codesign supports and tests a "
                   "journal file (PATH.journal or journal:PATH), sqlite:///PATH and postgresql://user:password@host/db")
        raise CodesignError(f"cannot open storage {redact(url)}: {msg}") from None


# ------------------------------------------------------------------------------- gradients
#: Summary metric -> (point metric, reduction over the concurrency points and envelope choices).
_SMOOTH = {"peak_mixed_tok_s_per_kw": ("mixed_tok_s_per_kw", "max"),
           "peak_mixed_tok_s_per_chip": ("mixed_tok_s_per_chip", "max"),
           "peak_mixed_tok_s_per_kw_modelled": ("mixed_tok_s_per_kw_modelled", "max"),
           "min_e2e_latency_s": ("e2e_latency_s", "min"), "min_tpot_s": ("tpot_s", "min"),
           "min_ttft_s": ("ttft_s", "min")}


def _jax_model(spec: Spec, pm):
    """``(model, single)`` when the spec's cost model is differentiable (it offers
    ``single(spec, formats) -> (params, fn, static)`` and ``arrays``, as the analytical model does),
    else None."""
    import importlib

    model = pm.cost_model(cost_model_name(spec, pm=pm))
    single = getattr(model, "single", None) or getattr(importlib.import_module(type(model).__module__), "single", None)
    if single is None or not hasattr(model, "arrays"):
        return None
    return model, single


class _Relaxation:
    """A smooth relaxation of the search objectives of ``n`` designs for ``jax.grad``.

    Continuous (``float``) parameters are mapped to ``u`` in [0, 1] (log-space where ``log``);
    the cost model's pytree leaves that depend on them follow linearly (their Jacobian at the
    design, by a forward difference of the model's ``arrays``: derived peaks, FP4-equivalent
    FLOP/s). Summary metrics become soft maxima/minima (temperature ``tau`` on log values) over
    the concurrency points that are feasible and meet the SLOs, and over the envelope choices.
    """

    def __init__(self, spec: Spec, space: SearchSpace, values: list[dict], pm):
        got = _jax_model(spec, pm)
        self.ok = got is not None and any(p.type == "float" for p in space.params) and bool(values)
        if not self.ok:
            return
        model, single = got
        formats = pm.number_formats
        params0, fn, _ = single(spec, formats)
        self.fn, self.space = fn, space
        self.cont = [p for p in space.params if p.type == "float"]
        combos = space.combos()
        n, m = len(values), len(combos)
        cols = columns(values, [p.key for p in space.params])
        over = {k: np.repeat(v, m) for k, v in cols.items()}
        for key, _ in space.envelope:
            over[key] = np.tile(np.asarray([c[key] for c in combos], dtype=object if FORMAT_KEY.match(key) else np.float64), n)
        arrs, _ = model.arrays(spec, formats, over)
        keys = [k for k in params0 if k in arrs]
        self.static = {k: v for k, v in params0.items() if k not in arrs}
        self.base = {k: np.asarray(arrs[k], dtype=np.float64).reshape(n, m) for k in keys}
        self.x0 = np.stack([np.asarray(cols[p.key], dtype=np.float64) for p in self.cont], axis=1)
        self.jac = {}
        for j, p in enumerate(self.cont):
            h = 1e-3 * (p.high - p.low)
            over2 = dict(over, **{p.key: over[p.key] + h})
            a2, _ = model.arrays(spec, formats, over2)
            for k in keys:
                with np.errstate(invalid="ignore"):  # inf - inf: a parameter at "no limit"
                    d = (np.asarray(a2[k], dtype=np.float64).reshape(n, m) - self.base[k]) / h
                d = np.where(np.isfinite(d), d, 0.0)
                if np.any(d != 0):
                    self.jac.setdefault(k, np.zeros((n, m, len(self.cont))))[..., j] = d
        self.lo = np.asarray([p.low for p in self.cont])
        self.hi = np.asarray([p.high for p in self.cont])
        self.log = np.asarray([p.log for p in self.cont])
        with np.errstate(divide="ignore", invalid="ignore"):
            self.u0 = np.clip(np.where(self.log, np.log(self.x0 / self.lo) / np.log(self.hi / self.lo),
                                       (self.x0 - self.lo) / (self.hi - self.lo)), 0.0, 1.0)
        self.values = values
        self.spec_key = (spec.path, spec.name, spec.deployment.cost_model, tuple(self.static))

    def x_of(self, u):
        import jax.numpy as jnp

        lo, hi, lg = jnp.asarray(self.lo), jnp.asarray(self.hi), jnp.asarray(self.log)
        llo, lhi = jnp.where(lg, lo, 1.0), jnp.where(lg, hi, 2.0)  # no log(0) in the unused branch
        return jnp.where(lg, jnp.exp(jnp.log(llo) + u * (jnp.log(lhi) - jnp.log(llo))), lo + u * (hi - lo))

    def log_metrics(self, u, base, jac, x0, names, tau):
        """Log of each metric in ``names`` for one design (``u`` shape ``(d,)``); None where the
        metric has no smooth form."""
        import jax
        import jax.numpy as jnp

        x = self.x_of(u)
        p = {k: (b + jac[k] @ (x - x0)) if k in jac else b for k, b in base.items()}
        p.update({k: jnp.broadcast_to(v, next(iter(base.values())).shape) for k, v in self.static.items()})
        out = jax.vmap(self.fn)(p)
        feasible = out["feasible"]
        if "power_w" in out and "tdp_w" in out:  # as codesign.evaluation.mark_over_tdp: no point above the TDP
            feasible = feasible & ~(out["power_w"] > out["tdp_w"][..., None] * (1.0 + TDP_RTOL))
        slo = jnp.ones_like(feasible, dtype=bool)
        for c in self.space.constraints:
            if c.slo and c.metric in out:
                v = out[c.metric]
                slo = slo & ((v <= c.bound) if c.sense == "max" else (v >= c.bound))
        res = []
        for name in names:
            if name in _SMOOTH:
                metric, how = _SMOOTH[name]
                v = out[metric]
                ok = feasible & slo & jnp.isfinite(v) & (v > 0)
            elif name in out and out[name].ndim == 1:
                v = out[name]
                ok = jnp.isfinite(v) & (v > 0)
                how = _better(name)
            else:
                res.append(None)
                continue
            lv = jnp.log(jnp.where(ok, v, 1.0))
            sgn = 1.0 if how == "max" else -1.0
            z = jnp.where(ok, sgn * lv, -jnp.inf).ravel()
            any_ok = jnp.any(ok)
            z = jnp.where(any_ok, z, 0.0)
            # log-mean-exp: exact when the points agree (a design metric over the envelope), below
            # the hard maximum by at most tau·log(points) otherwise
            r = tau * (jax.nn.logsumexp(z / tau) - jnp.log(jnp.maximum(jnp.sum(ok), 1)))
            res.append(jnp.where(any_ok, sgn * r, jnp.nan))
        return res

    def _values_and_jacobian(self, names: list[str], u: np.ndarray, tau: float):
        """``(values (n, len(names)), d values / d u (n, len(names), d))`` of the log metrics, in one
        jitted ``vmap(jacfwd)`` call, compiled once per process and spec (designs padded to 8)."""
        import jax
        import jax.numpy as jnp

        key = (self.spec_key, tuple(names), tuple(sorted(self.jac)), tuple(self.lo), tuple(self.hi), tuple(self.log))
        fn = _JAC_CACHE.get(key)
        if fn is None:
            def f(uu, base, jac, x0, t):
                lm = self.log_metrics(uu, base, jac, x0, names, t)
                return jnp.stack([x if x is not None else jnp.nan for x in lm])

            def vj(uu, base, jac, x0, t):
                return f(uu, base, jac, x0, t), jax.jacfwd(f)(uu, base, jac, x0, t)

            fn = _JAC_CACHE[key] = jax.jit(jax.vmap(vj, in_axes=(0, 0, 0, 0, None)))
        n, vs, js = len(u), [], []
        for s0 in range(0, n, 8):  # fixed blocks of 8 designs: one compile whatever n
            ix = np.arange(s0, s0 + 8)
            ix[ix >= n] = s0
            vals, jac = fn(jnp.asarray(u[ix]), {k: jnp.asarray(v[ix]) for k, v in self.base.items()},
                           {k: jnp.asarray(v[ix]) for k, v in self.jac.items()}, jnp.asarray(self.x0[ix]), tau)
            k = min(8, n - s0)
            vs.append(np.asarray(vals, dtype=np.float64)[:k])
            js.append(np.asarray(jac, dtype=np.float64)[:k])
        return np.concatenate(vs), np.concatenate(js)

    def refine(self, steps: int = 25, lr: float = 0.03, tau: float = 0.02, seed: int = 0) -> list[dict]:
        """Sign-gradient steps on a weighted sum of log objectives minus a quadratic penalty on the
        relative violation of each smooth constraint (``area_mm2``, ``peak_power_w``, ...); one
        weight vector per design (spread along the front for two objectives, Dirichlet otherwise).
        Returns the refined designs."""
        objs = self.space.objectives
        cons = [c for c in self.space.constraints if not c.slo]
        names = [m for m, _ in objs] + [c.metric for c in cons]
        n, k = len(self.values), len(objs)
        if k == 2:
            t = np.linspace(0.0, 1.0, n) if n > 1 else np.asarray([0.5])
            w = np.stack([1.0 - t, t], axis=1) * 0.9 + 0.05
        else:
            w = np.random.default_rng(seed).dirichlet(np.ones(k), size=n)
        sgn = np.asarray([1.0 if d == "maximize" else -1.0 for _, d in objs])
        bound = np.asarray([math.log(c.bound) if c.bound > 0 else 0.0 for c in cons])
        csgn = np.asarray([1.0 if c.sense == "max" else -1.0 for c in cons])
        u = self.u0.copy()
        for i in range(steps):
            vals, jac = self._values_and_jacobian(names, u, tau)
            jac = np.nan_to_num(jac)
            grad = -np.einsum("nk,k,nkd->nd", w, sgn, jac[:, :k])
            if cons:
                viol = np.nan_to_num(csgn * (vals[:, k:] - bound), nan=0.0) + 0.005
                grad += np.einsum("nc,c,ncd->nd", 2e4 * np.maximum(viol, 0.0), csgn, jac[:, k:])
            u = np.clip(u - lr * (1.0 - i / steps) * np.sign(grad), 0.0, 1.0)
        out = []
        for i, v in enumerate(self.values):
            d = dict(v)
            for j, p in enumerate(self.cont):
                d[p.key] = _plain(_from_unit(p, np.asarray([u[i, j]]))[0])
            out.append(d)
        return out

    def elasticities(self) -> list[dict[str, dict[str, float]]]:
        """Per design: objective -> parameter -> ∂ log objective / ∂ log parameter (elasticity)."""
        objs = [m for m, _ in self.space.objectives]
        names = objs + [c.metric for c in self.space.constraints if not c.slo]  # shares refine's compile
        _, jacu = self._values_and_jacobian(names, self.u0, 1e-4)
        # d log x / d u: ln(high/low) for log params, (high - low) / x for linear ones
        with np.errstate(divide="ignore", invalid="ignore"):
            dudlogx = np.where(self.log, 1.0 / np.log(self.hi / self.lo), self.x0 / (self.hi - self.lo))
        out = []
        for i in range(len(self.values)):
            out.append({o: {p.key: (float(jacu[i, a, j] * dudlogx[i, j]) if np.isfinite(jacu[i, a, j]) else None)
                            for j, p in enumerate(self.cont)} for a, o in enumerate(objs)})
        return out


_JAC_CACHE: dict = {}


def gradient_seeds(spec: Spec, space: SearchSpace, values: list[dict], pm=None, seed: int = 0) -> list[dict]:
    """Refine designs by JAX gradients on a smooth relaxation (:class:`_Relaxation`); returns
    ``[]`` when the cost model is not differentiable or nothing is continuous."""
    from .pluginmanager import get_plugin_manager

    rel = _Relaxation(spec, space, values, pm or get_plugin_manager())
    return rel.refine(seed=seed) if rel.ok else []


def sensitivities(spec: Spec, space: SearchSpace, values: list[dict], pm=None) -> list[dict] | None:
    """Elasticities of each objective w.r.t. each continuous parameter at each design (JAX grad),
    ``(∂ objective / ∂ parameter) · parameter / objective``; None for a non-differentiable model."""
    from .baselines import resolve_efficiency
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    rel = _Relaxation(resolve_efficiency(spec, pm=pm), space, values, pm)
    return rel.elasticities() if rel.ok else None


# ------------------------------------------------------------------------------- the search
@attrs.define
class SearchResult:
    study: Any
    space: SearchSpace
    trials: list  # completed FrozenTrials
    pareto: list  # FrozenTrials on the feasible Pareto front
    reference: dict | None
    storage: str
    new_trials: int
    #: Pareto trial number -> later trials of the very same design (identical parameter values),
    #: left out of ``pareto``.
    duplicates: dict = attrs.field(factory=dict)
    #: Trials of the exact front left out of ``pareto`` because a listed design is as good within
    #: :data:`PARETO_RESOLUTION` on every objective and better beyond it on one (:func:`resolved_front`).
    unresolved: list = attrs.field(factory=list)


@attrs.define
class _Context:
    spec: Spec
    study: Any
    space: SearchSpace
    reference: dict | None
    storage: str
    evaluate: Any
    seed: int
    #: trials (any state) the study held when it was opened: 0 for a new study
    held: int = 0


def _open_study(spec: Spec, *, seed: int | None, out_dir, storage: str | None, evaluate=None,
                rank: int = 0, repair: bool = False, claim: bool = False,
                elsewhere: str = "another --out (or --storage)") -> _Context:
    """Open (or create) the spec's study. With ``claim``, ``out_dir`` receives this study's report:
    refuse when it already holds another study's (:func:`_check_out_dir`)."""
    import optuna

    from .baselines import reference_priced_by, reference_spec, resolve_efficiency
    from .evaluation import evaluate as _evaluate
    from .pluginmanager import get_plugin_manager

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    evaluate = evaluate or _evaluate
    pm = get_plugin_manager()
    spec = resolve_efficiency(spec, pm=pm)  # efficiency_from: the same knobs for gradients and evaluations
    # an unknown deployment.cost_model (or format) is named at its file and key, as evaluate names
    # it (optimize said "no cost model named ... is registered" alone: fresh-user trial, session 30)
    check_names(spec, pm=pm)
    space = _build_space(spec, pm.cost_model_parameters(cost_model_name(spec, pm=pm)), pm)
    s = spec.search
    seed = s.seed if seed is None else seed
    store, where = open_storage(storage, out_dir, repair=repair)
    name = spec.name or "codesign-study"
    if claim:
        _check_out_dir(Path(out_dir), name, store if storage is None else None)
    directions = [d for _, d in space.objectives]
    # each worker process gets its own sampler stream (seed + rank) so that they do not propose
    # the same designs; the single-process search (rank 0) is reproducible from the seed. Not a
    # grid: its seed shuffles the grid, whose designs the study's trials name by their index in
    # it, so every process and every rerun takes the study's one seed, search.seed (part of the
    # stored spec; not --seed), as Optuna's GridSampler asks of distributed runs: a rerun under
    # another seed re-ran designs and left others out (fresh-user trial, session 42)
    grid = s.sampler.lower() == "grid"
    try:
        sampler = make_sampler(s.sampler, s.seed if grid else seed + rank, population=max(8, min(50, s.batch_size)),
                               space=space, grid_points=s.grid_points, pm=pm)
    except CodesignError as exc:
        if isinstance(exc, (SpecError, PluginBugError)):  # a plugin's failing factory is its bug, exit 3
            raise
        raise SpecError([(spec.path or "<spec>", "search.sampler", str(exc))]) from None
    try:
        study = optuna.create_study(study_name=name, storage=store, directions=directions,
                                    sampler=sampler, load_if_exists=True)
    except Exception as exc:  # noqa: BLE001 - driver errors may carry the URL
        raise CodesignError(f"cannot open study {name!r} in {where}: "
                            f"{scrub(redact(str(exc).splitlines()[0]), storage or '')}") from None
    held = len(study.get_trials(deepcopy=False))
    if held and not grid:  # a grid's sampler asks the storage which of its designs are left
        # a resumed or continued study: a sampler restarted from the same seed proposes what it
        # proposed the first time (NSGA-II's stream over the same stored population: a run continued
        # from 40 to 50 trials re-ran trials 10-19, fresh-user trial of session 16). Its stream goes
        # on from the trials the study holds instead, still reproducible from the seed and history
        sampler = make_sampler(s.sampler, (seed + rank + 7919 * held) % 2**32, population=max(8, min(50, s.batch_size)),
                               space=space, grid_points=s.grid_points, pm=pm)
        study.sampler = sampler
    if list(study.directions) != [optuna.study.StudyDirection.MAXIMIZE if d == "maximize"
                                  else optuna.study.StudyDirection.MINIMIZE for d in directions]:
        raise CodesignError(f"the study {name!r} in {where} has other objectives; use {elsewhere}")
    _check_fingerprint(study, spec, name, where, pm=pm, elsewhere=elsewhere)
    # searched number formats are checked against the user's spec and its [search] table before
    # the reference (priced with the same choices) could be blamed for them
    _check_searched_formats(spec, space, pm)
    ref = None
    if s.reference:
        ref_spec = reference_spec(spec, s.reference, pm=pm)
        ref = reference_envelope(ref_spec, space, evaluate)
        ref["name"] = ref_spec.name or s.reference
        ref.update(reference_priced_by(ref_spec, s.reference, pm=pm))  # its cost model and knobs
        tp = ref["metrics"].get("min_tpot_s")
        if tp is not None:  # the reference's own tok/s/kW at its minimum TPOT (Jalapeño table)
            again = reference_envelope(ref_spec, space, evaluate, tpot_reference_s=tp)
            if "mixed_tok_s_per_kw_at_tpot" in again["metrics"]:
                ref["metrics"]["mixed_tok_s_per_kw_at_tpot"] = again["metrics"]["mixed_tok_s_per_kw_at_tpot"]
    return _Context(spec, study, space, ref, where, evaluate, seed, held)


def _give_back(study, trials) -> int:
    """Fail the unfinished ``trials`` (frozen) and enqueue again those that were enqueued (a seed of
    the sweep, a gradient seed, a refill): the seeds are made once, before the first trial, so a
    run interrupted while they ran lost its best starting designs (the resumed front had 2 designs,
    not 25). Returns the number enqueued again."""
    import optuna

    for t in trials:
        study.tell(t.number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
    requeued = [t for t in trials if "fixed_params" in t.system_attrs]
    for t in requeued:
        study.enqueue_trial(dict(t.system_attrs["fixed_params"]),
                            user_attrs={"seed_source": t.user_attrs["seed_source"]}
                            if "seed_source" in t.user_attrs else None)
    return len(requeued)


def _prepare(ctx: _Context, total: int, *, private: bool, progress=None) -> None:
    """Study attributes, clean-up of a killed private run, and the seeds (sweep, then gradient)."""
    import optuna

    study, s, space = ctx.study, ctx.spec.search, ctx.space
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([m for m, _ in space.objectives])
    study.set_user_attr("spec", ctx.spec.path)
    # A killed run leaves RUNNING trials in a private journal: fail them so counts stay right.
    if private:
        stale = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        requeued = _give_back(study, stale)
        if stale:
            print(f"resuming: {len(stale)} trial(s) interrupted mid-batch were marked failed and will be "
                  f"replaced ({requeued} enqueued seed design(s) enqueued again); every completed "
                  f"trial is kept", file=sys.stderr)
    trials = study.get_trials(deepcopy=False)
    done = sum(1 for t in trials if t.state == optuna.trial.TrialState.COMPLETE)
    todo = max(total - done, 0)
    if done or not todo or s.sampler.lower() == "grid" or any("seed_source" in t.user_attrs for t in trials):
        return
    tpot_ref = ctx.reference["metrics"].get("min_tpot_s") if ctx.reference else None
    if s.seed_sweep > 0:
        seeds = sweep_seeds(ctx.spec, space, s.seed_sweep, ctx.seed, ctx.evaluate,
                            limit=max(1, min(todo // 4, 25)), tpot_reference_s=tpot_ref,
                            refine=REFINE_PER_SWEEP * s.seed_sweep)
        for v in seeds:
            study.enqueue_trial(v, user_attrs={"seed_source": "sweep"}, skip_if_exists=True)


#: Designs the seed stage's local search evaluates per design of the seed sweep (``seed_sweep``):
#: the default 4096-point sweep is followed by 20480 designs around its front (1-2 s on 2 cores),
#: and finds a front well beyond that of a 10^6-point sweep (benchmarks/bench_search.py).
REFINE_PER_SWEEP = 5
#: Designs the local search evaluates around the study's front between batches (:func:`_refill`).
REFILL_DESIGNS = 2048


def _feasible_front(ctx: _Context) -> tuple[list, np.ndarray]:
    """The study's complete feasible trials on the Pareto front and their objective values."""
    import optuna

    dirs = [d for _, d in ctx.space.objectives]
    ts = [t for t in ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
          if t.user_attrs.get("feasible") and satisfied(t) and t.values is not None
          and all(p.key in t.params for p in ctx.space.params)]
    if not ts:
        return [], np.zeros((0, len(dirs)))
    vals = np.asarray([t.values for t in ts], dtype=np.float64)
    keep = np.flatnonzero(pareto_mask(vals, dirs))
    return [ts[i] for i in keep], vals[keep]


def _refill(ctx: _Context, step: int, room: int) -> int:
    """Between batches (single-process runs): refine the study's feasible front and enqueue up to
    ``room`` designs for the next batch. After the first batch: JAX-gradient refinement of
    ``search.gradient_seeds`` front designs (``seed_source = "gradient"``; its compile is shared
    with the report's sensitivities); after every batch: a vectorised local search of
    :data:`REFILL_DESIGNS` designs around the front (:func:`front_search`), whose new
    non-dominated designs that add most hypervolume are enqueued (``seed_source = "refill"``).
    Deterministic for a given study and seed. Returns the number of designs enqueued."""
    s, space = ctx.spec.search, ctx.space
    if room <= 0 or s.seed_sweep <= 0 or s.sampler.lower() == "grid":
        return 0
    front, vals = _feasible_front(ctx)
    if not front:
        return 0
    dirs = [d for _, d in space.objectives]
    known = {tuple(sorted((k, _plain(v)) for k, v in t.params.items())) for t in front}
    out = 0
    start = [{p.key: t.params[p.key] for p in space.params} for t in front]
    if step == 1 and s.gradient_seeds > 0 and any(p.type == "float" for p in space.params):
        pick = [start[i] for i in _spread(vals, dirs, min(s.gradient_seeds, room))]
        try:
            grads = gradient_seeds(ctx.spec, space, pick, seed=ctx.seed)
        except CodesignError:
            raise
        except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - an optional extra, in the cost model's JAX code
            # a differentiable cost model's single()/arrays() raising stopped the search with an
            # internal error naming neither (noticed in session 26); the search goes on without them
            from .pluginmanager import get_plugin_manager

            pm = get_plugin_manager()
            who = pm.cost_model_label(cost_model_name(ctx.spec, pm=pm))
            print(f"warning: gradient seeds unavailable: {who} raised {type(exc).__name__}: {exc}; "
                  "the search goes on without them", file=sys.stderr)
            grads = []
        for v in grads:
            ctx.study.enqueue_trial(v, user_attrs={"seed_source": "gradient"}, skip_if_exists=True)
            out += 1
    room -= out
    if room <= 0:
        return out
    tpot_ref = ctx.reference["metrics"].get("min_tpot_s") if ctx.reference else None
    got = front_search(ctx.spec, space, 0, ctx.seed + 7919 * step, ctx.evaluate, refine=REFILL_DESIGNS,
                       tpot_reference_s=tpot_ref, start=start)
    idx = np.flatnonzero(got["ok"])
    if not len(idx):
        return out
    f = idx[pareto_mask(got["values"][idx], dirs)]
    f = f[_spread(got["values"][f], dirs, len(front) + room)]
    cols = _unit_columns(space, got["u"][f])
    for v in _rows(cols, len(f)):
        if out >= room:
            break
        key = tuple(sorted(v.items()))
        if key in known:
            continue
        ctx.study.enqueue_trial(v, user_attrs={"seed_source": "refill"}, skip_if_exists=True)
        out += 1
    return out


def _work(ctx: _Context, quota: int | None, total: int | None, progress=None) -> int:
    """Ask a batch, evaluate it in one vectorised call, tell; until ``quota`` new trials (or, with
    ``quota=None``, until the study holds ``total`` complete plus running trials and no enqueued
    design waits: designs enqueued beyond ``total`` by workers refining at once are run too). Between batches
    :func:`_refill` enqueues refined front designs (one process and every worker alike). Returns
    the number of trials this process told."""
    import optuna

    study, space, s = ctx.study, ctx.space, ctx.spec.search
    tpot_ref = ctx.reference["metrics"].get("min_tpot_s") if ctx.reference else None
    new = 0
    while True:
        _fail_stale(study)  # a dead process's running trials (database storages), before counting them
        if quota is not None:
            want = quota - new
        else:
            S = optuna.trial.TrialState
            held = Counter(t.state for t in study.get_trials(deepcopy=False, states=(S.COMPLETE, S.RUNNING, S.WAITING)))
            # designs still waiting in a full study are run all the same (asks take them first): two
            # or more workers refining at once can enqueue more than the study has room for (each
            # sees the same room), and a worker that left them would leave the study with WAITING
            # trials nobody runs (seen with 3 PostgreSQL workers)
            want = max(total - held[S.COMPLETE] - held[S.RUNNING], held[S.WAITING])
        if want <= 0:
            if quota is None and _wait_for_running(study):
                continue  # a silent process's trials were failed: their places are free again
            break
        batch = min(s.batch_size, want)
        asked: list = []
        heart = _Heartbeat(study)
        try:
            with heart:
                for _ in range(batch):
                    # a signal while the trial is created is raised once it is in `asked`, so the
                    # clean-up below gives it back (one left RUNNING otherwise: fresh-user stress test)
                    with interrupts.held(), warnings.catch_warnings():
                        # Optuna warns that a heartbeat "is supposed to be used with Study.optimize":
                        # here _Heartbeat beats for the trials asked, as optimize's thread does
                        warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
                        asked.append(study.ask())
                    heart.add(asked[-1])
                values = [{p.key: suggest(t, p) for p in space.params} for t in asked]
                rows, configs, reasons = evaluate_envelope(ctx.spec, values, space, ctx.evaluate,
                                                           tpot_reference_s=tpot_ref)
            for t, m, cfg, reason in zip(asked, rows, configs, reasons):
                try:
                    _record(t, m, cfg, reason, space, tpot_ref)
                    study.tell(t, objective_values(m, space)[0])
                except (optuna.exceptions.UpdateFinishedTrialError, ValueError):
                    if not _finished(study, t):
                        raise
                    # another worker took the same enqueued trial and told it first: SQLite has no
                    # row locks, so Optuna's RDB storage can hand one WAITING trial to two processes
                    # (PostgreSQL's SELECT ... FOR UPDATE and the journal's file lock do not). The
                    # same design gave the same values; the copy told first stands, this one is dropped
                    continue
                new += 1
        except BaseException as exc:
            # Ctrl-C or SIGTERM mid-batch: this batch's untold trials are failed (and enqueued
            # designs enqueued again) now, not left RUNNING for good in a shared storage, where no
            # later run can tell them from another worker's (fresh-user trial of session 16). A
            # cost model raising on the batch likewise: its trials were left RUNNING, in a database
            # storage until their heartbeat went stale. The trials told before stay complete
            mine = {t.number for t in asked}
            try:
                _give_back(study, [u for u in study.get_trials(deepcopy=False,
                                                               states=(optuna.trial.TrialState.RUNNING,))
                                   if u.number in mine])
            except Exception:  # noqa: BLE001 - the storage failing too: the first error is the one to report
                if isinstance(exc, KeyboardInterrupt):
                    raise
            raise
        if progress:
            progress(new)
        # trials still wanted: this process's quota, or the study's total less its complete and
        # running trials (a `codesign worker` sharing a storage), less the designs already enqueued
        # (by any worker): asks take those first, so every enqueued design is run before the study
        # is full and none is left waiting. One read of the storage per batch
        S = optuna.trial.TrialState
        held = Counter(t.state for t in study.get_trials(deepcopy=False, states=(S.COMPLETE, S.RUNNING, S.WAITING)))
        left = (quota - new if quota is not None else total - held[S.COMPLETE] - held[S.RUNNING]) - held[S.WAITING]
        if left > 0:
            _refill(ctx, new // max(1, s.batch_size), min(left, s.batch_size) // 2)
    return new


def _record(t, m: dict, cfg, reason, space: SearchSpace, tpot_ref: float | None) -> None:
    """Store a priced trial's envelope configs, constraint values, metrics and feasibility on ``t``."""
    if space.envelope:
        t.set_user_attr("configs", cfg)
    ok, why, cons, metrics = _design_record(m, reason, space, tpot_ref)
    for cname, cval in cons.items():
        t.set_constraint(cname, float(cval))
    t.set_user_attr("metrics", metrics)
    t.set_user_attr("feasible", ok)
    if why:
        t.set_user_attr("infeasible_reason", why)


def _design_record(m: dict, reason, space: SearchSpace, tpot_ref: float | None):
    """What :func:`_record` stores of a priced design, and :func:`design_problems` reads:
    ``(feasible, infeasible reason or None, constraint violations, metrics with None for a
    non-finite value)``."""
    ok = objective_values(m, space)[1]
    why = (reason or _no_value_reason(m, space, tpot_ref)) if (reason or not ok) else None
    return ok, why, constraint_values(m, space, ok), {k: (v if math.isfinite(v) else None) for k, v in m.items()}


def _finished(study, t) -> bool:
    """Whether trial ``t`` is finished in the storage (told by another process)."""
    return any(u.number == t.number and u.state.is_finished() for u in study.get_trials(deepcopy=False))


def _no_value_reason(metrics: dict, space: SearchSpace, tpot_ref: float | None) -> str:
    """Why a design that the cost model priced has no value for an objective."""
    missing = [o for o, _ in space.objectives if not math.isfinite(metrics.get(o, math.nan))]
    if missing == ["mixed_tok_s_per_kw_at_tpot"] and tpot_ref is not None:
        return (f"no concurrency point reaches the reference's min TPOT ({tpot_ref * 1e3:.3g} ms), so "
                f"mixed_tok_s_per_kw_at_tpot has no value")
    return "no feasible concurrency point"


#: Relative difference below which two objective values count as equal when the report lists the
#: Pareto front: the cost model computes in float32 and its inputs carry 3-4 significant digits, so a
#: design 0.002% faster and 35% less efficient than another (72 vs 96 GB of HBM, fresh-user trial of
#: session 25) is not a trade-off the model resolves. The table prints 3 significant digits.
PARETO_RESOLUTION = 1e-4


def resolved_front(values: np.ndarray, directions: list[str], rel: float = PARETO_RESOLUTION) -> np.ndarray:
    """Rows of an exact Pareto front ``values`` (shape ``(n, k)``) that no other row beats by more
    than ``rel`` (relative) on one objective while being no worse than ``rel`` on any: the mask of
    rows to list. A row is only left out for a row that is itself kept (rows are visited best-first
    by rank sum), so the front never loses both of a pair. Errors: none; ``n == 0`` gives an empty mask.
    """
    v = _as_min(np.asarray(values, dtype=np.float64), directions)
    n = len(v)
    keep = np.ones(n, dtype=bool)
    if n < 2:
        return keep
    tol = rel * np.maximum(np.abs(v), 1e-300)
    ranks = np.stack([np.argsort(np.argsort(v[:, j], kind="stable"), kind="stable") for j in range(v.shape[1])], 1)
    kept = np.zeros((0, v.shape[1]))
    for i in np.argsort(ranks.sum(axis=1), kind="stable"):
        # a kept row as good as i within i's tolerance everywhere, and better beyond it once
        if np.any(np.all(kept <= v[i] + tol[i], axis=1) & np.any(kept < v[i] - tol[i], axis=1)):
            keep[i] = False
        else:
            kept = np.vstack([kept, v[i]])
    return keep


def _result(ctx: _Context, new: int) -> SearchResult:
    import optuna

    study = ctx.study
    directions = [d for _, d in ctx.space.objectives]
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    pareto = [t for t in study.best_trials if t.user_attrs.get("feasible") and satisfied(t)]
    # a search over choices (or whole numbers) draws the same design again: list it once, as its
    # first trial, and keep the numbers of the repeats
    same: dict[tuple, list] = {}
    for t in sorted(pareto, key=lambda t: t.number):
        same.setdefault(tuple(sorted((k, _plain(v)) for k, v in t.params.items())), []).append(t)
    pareto = [ts[0] for ts in same.values()]
    duplicates = {ts[0].number: [u.number for u in ts[1:]] for ts in same.values() if len(ts) > 1}
    pareto.sort(key=lambda t: t.values[0], reverse=directions[0] == "maximize")
    listed = resolved_front(np.asarray([t.values for t in pareto], dtype=np.float64).reshape(len(pareto),
                                                                                             len(directions)),
                            directions)
    unresolved = [t.number for t, k in zip(pareto, listed) if not k]
    pareto = [t for t, k in zip(pareto, listed) if k]
    return SearchResult(study, ctx.space, complete, pareto, ctx.reference, ctx.storage, new, duplicates, unresolved)


def run_search(spec: Spec, *, trials: int | None, seed: int | None, out_dir, storage: str | None,
               progress=None, evaluate=None, workers: int = 1,
               out_option: str = "output directory", note=None) -> SearchResult:
    """Run (or resume) the search a spec's ``[search]`` declares.

    Args:
        trials: total completed trials wanted in the study (default ``search.trials``); a resumed
            study only runs the missing ones.
        seed: sampler seed (default ``search.seed``).
        out_dir: the study's output directory (its report goes there) and the home of the default
            journal storage; created once the spec has been accepted, and refused when it is
            neither new, empty nor a study directory (:func:`check_study_dir`) or holds another
            study (:func:`_check_out_dir`).
        storage: an Optuna storage URL (``postgresql://…``, ``sqlite:///…``) or a journal path;
            the missing directory of a journal or SQLite database is created (and removed again,
            with a new journal or database, when the run is refused before it starts).
        progress: optional ``callback(done, total)``.
        note: optional ``callback(text)``: hears, before the search starts, that the storage
            already held completed trials of this study (``resuming: 37 completed trials in
            runs/x/study.journal``, :func:`_resuming`); nothing for a new study.
        out_option: how an error names ``out_dir`` (``"--out"`` when the user gave it).
        workers: local worker processes (``spawn``), each asking and telling batches on the same
            storage (the journal file through Optuna's file lock); 1 runs in this process.

    Raises:
        SpecError: bad ``[search]``; PluginError: the cost model failed; CodesignError: ``out_dir``
            holds unrelated files or another study, or the stored study was run with another spec
            or cost model.
    """
    if spec.search is None:
        build_space(spec, [])  # raises "search: missing"
    total = trials if trials is not None else spec.search.trials
    out_dir = Path(out_dir)
    check_study_dir(out_dir, storage, out_option)
    journal = _journal_path(storage, out_dir)  # None: an RDB URL
    private = journal is not None
    file = journal if journal is not None else _sqlite_path(storage)  # the study's file, if it has one
    fresh = file is not None and not file.exists()
    made = _missing_dirs(file.parent) if file is not None else []
    ctx = None
    try:
        ctx = _open_study(spec, seed=seed, out_dir=out_dir, storage=storage, evaluate=evaluate, repair=private,
                          claim=True)
        total = _grid_total(ctx, total, note)
        _prepare(ctx, total, private=private)
    except BaseException as exc:
        # refused before any trial ran (the cost model refused the spec, say, or the output
        # directory holds another study): leave no new journal (or SQLite database) behind, or the
        # corrected spec would clash with its recorded spec, and no directory this call created.
        # The seed sweep runs here too, outside Optuna: a cost model raising (or Ctrl-C) in its
        # local search loses no trial, the study holds none before its seeds are enqueued
        if fresh:
            try:
                file.unlink(missing_ok=True)
            except OSError:  # its directory is a file (NotADirectoryError): nothing was made there
                pass
        for d in made:  # deepest first; stops at the first one that is not empty
            try:
                d.rmdir()
            except OSError:
                break
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            if fresh:  # its new journal (or database) is gone: "completed trials, if any, are kept" was untrue
                raise Interrupted("interrupted before the search ran a trial: nothing was stored (no study is "
                                  f"kept in {file}); rerun the same command to start the search") from None
            if ctx is not None:
                raise _interrupted(ctx) from None
        raise
    done = _resuming(ctx, total, note)
    todo = max(total - done, 0)
    if progress:
        progress(done, total)
    try:
        if workers <= 1 or todo == 0:
            new = _work(ctx, todo, None, progress=(lambda k: progress(done + k, total)) if progress else None)
        else:
            new = _spawn_workers(spec, ctx, workers, todo, storage, out_dir, seed,
                                 poll=(lambda k: progress(done + k, total)) if progress else None)
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):
            raise
        raise _interrupted(ctx) from None
    except Exception as exc:
        # a cost model raising once trials are stored (in the refinement between batches, say) is
        # no refused input: its study is kept, and the error says so and how to resume, as an
        # interrupt's line does (a plugin's error said nothing of the trials kept: fresh-user trial)
        _note_kept(ctx, exc)
        raise
    return _result(ctx, new)


def _interrupted(ctx: _Context) -> Interrupted:
    """The line an interrupt (Ctrl-C, SIGTERM) of a search whose study storage is kept ends with:
    how many completed trials it holds and where, and how to go on. The CLI's generic "completed
    trials, if any, are kept in the study storage" was printed even by a run interrupted before its
    first batch, whose new journal had been removed (fresh-user trial, session 43). The count is
    read again from the storage (the interrupted batch's trials were given back); when it cannot be
    read, the generic line is said."""
    import optuna

    try:
        n = len(ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    except Exception:  # noqa: BLE001 - the storage failing too: the generic line, never a second error
        return Interrupted("interrupted: completed trials, if any, are kept in the study storage; rerun to resume")
    if n:
        return Interrupted(f"interrupted: {n} completed trial{'' if n == 1 else 's'} {'is' if n == 1 else 'are'} "
                           f"kept in the study storage ({ctx.storage}); rerun the same command to resume")
    return Interrupted(f"interrupted before any trial completed: the study storage ({ctx.storage}) holds none "
                       "yet; rerun the same command to start the search")


def _note_kept(ctx: _Context, exc: BaseException) -> None:
    """Set ``exc.study_kept`` (the CLI prints it below the error) to ``completed trials are kept in
    the study storage (N in WHERE); rerun to resume`` when ``ctx``'s study holds completed trials.
    Nothing when it holds none, or when the storage cannot be read (the error may be the storage's)."""
    import optuna

    try:
        n = len(ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
        if n:
            exc.study_kept = f"completed trials are kept in the study storage ({n} in {ctx.storage}); rerun to resume"
    except Exception:  # noqa: BLE001 - a note, never a second error
        pass


def _resuming(ctx: _Context, total: int, note=None) -> int:
    """The completed trials already in ``ctx``'s study; when there are some, and fewer than
    ``total`` (there is a search to continue), ``note`` hears ``resuming: N completed trials in
    WHERE`` (a rerun, or a worker joining a running search, says that it continues a study rather
    than starting one; a rerun with nothing left to run says only that)."""
    import optuna

    done = len(ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    if note and 0 < done < total:
        note(f"resuming: {done} completed trial{'' if done == 1 else 's'} in {ctx.storage}")
    return done


#: A URL's scheme (``postgresql://``, ``sqlite:///``): a ``--storage`` with one is a database URL,
#: even when its path ends in ``.journal``.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _is_journal(storage: str | None) -> bool:
    """``storage`` names a journal file: none given (the default), ``journal:PATH``, or a path
    ending in ``.journal`` without a URL scheme (``postgresql://u:pw@host/x.journal`` is a URL)."""
    return (storage is None or storage.startswith("journal:")
            or (storage.endswith(".journal") and not _SCHEME.match(storage)))


def _check_journal(storage: str | None, path: str) -> None:
    """Refuse a journal path that is empty, starts or ends with a space (``journal:   `` wrote a
    file named by the spaces; `` /tmp/x.journal`` a directory named " ") or is a directory."""
    if not path.strip() or path != path.strip():
        raise CodesignError(f"--storage {storage}: the journal path is empty or starts or ends with a space; "
                            "give a file path (runs/study.journal, journal:runs/study.log)")
    if Path(path).is_dir():
        raise CodesignError(f"--storage {storage}: {path} is a directory; give a journal file in it "
                            f"({Path(path) / 'study.journal'})")


def _journal_path(storage: str | None, out_dir: Path) -> Path | None:
    """The journal file a study is stored in: ``out_dir/study.journal`` by default, the
    ``journal:PATH`` or ``*.journal`` of ``storage``; None for an RDB URL."""
    if storage is None:
        return Path(out_dir) / "study.journal"
    if storage.startswith("journal:"):
        return Path(storage[len("journal:"):])
    return Path(storage) if _is_journal(storage) else None


def _report_doc(path: Path) -> dict | None:
    """The ``pareto.json`` at ``path`` if ``codesign optimize`` wrote it (see report.write_outputs),
    else None."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and "schema_version" in doc and isinstance(doc.get("study"), str) else None


def _is_report(path: Path) -> bool:
    """``path`` is a ``pareto.json`` that ``codesign optimize`` wrote (see report.write_outputs)."""
    return _report_doc(path) is not None


def _reported_storage(path: Path) -> str | None:
    """The storage a ``pareto.json`` report records when it is not the journal beside it in its
    directory (``--storage`` elsewhere: a database URL, or a journal file outside), else None."""
    rec = (_report_doc(path) or {}).get("storage")
    if not isinstance(rec, str) or not rec:
        return None
    if "://" not in rec:  # a journal file (or a path that names one): the default one is no elsewhere
        try:
            if (_journal_path(rec, path.parent) or Path(rec)).resolve() == (path.parent / "study.journal").resolve():
                return None
        except OSError:
            return None
    return rec


def _is_sweep_report(path: Path) -> bool:
    """``path`` is a ``sweep_front.json`` that ``codesign sweep`` wrote (see cli/sweep.py)."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "schema_version" in doc and isinstance(doc.get("front"), list)


def check_study_dir(out_dir, storage: str | None = None, option: str = "output directory", *,
                    resumes: bool = True) -> None:
    """Refuse an output directory that is neither new, nor empty, nor a codesign study directory,
    before anything is written into it.

    A codesign study directory is one a previous ``codesign optimize`` (:func:`run_search`) wrote,
    which a rerun resumes: it holds the study's journal (``study.journal``, or the journal file of
    ``storage`` when that lies inside the directory), as a run stopped before its report leaves
    it, or the report ``pareto.json`` (the only marker when the study is stored elsewhere); or the
    ``sqlite:///`` database file of ``storage`` inside the directory (an interrupted run); or the
    ``sweep_front.json`` of a ``codesign sweep`` (both commands default to ``runs/<spec name>``,
    and their files do not clash). Which study it holds is checked once the spec is known
    (:func:`_check_out_dir`). Any other non-empty directory would have its ``pareto.csv``,
    ``pareto.png`` and ``designs/trial-*.toml`` (or ``sweep_front.csv``) overwritten and a study's
    files mixed into its own. ``codesign sweep`` applies the same rule (``storage`` None).

    A run without ``storage`` (``resumes``: ``codesign optimize``, not ``sweep``) is refused too when
    the directory holds no ``study.journal`` but the ``pareto.json`` of a study stored elsewhere
    (a ``--storage`` database or journal): it would start a new study and overwrite that report; the
    message names the storage to rerun with.

    Args:
        option: how the message names the directory (``"--out"`` when the user gave it).
        resumes: the caller stores a study there (``codesign optimize``); False for ``codesign sweep``.

    Raises:
        CodesignError: one line naming the directory, what it holds and what was expected; also
            when ``out_dir`` exists and is not a directory.
    """

    out_dir = Path(out_dir)
    shown = f"{option} {os.fspath(out_dir)}"
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise CodesignError(f"{shown}: exists and is not a directory")
    try:
        entries = sorted(p.name for p in out_dir.iterdir())
    except OSError as exc:
        raise CodesignError(f"{shown}: cannot list the directory: {exc.strerror or exc}") from None
    if storage is None and resumes and not (out_dir / "study.journal").is_file():
        elsewhere = _reported_storage(out_dir / "pareto.json")
        if elsewhere is not None:
            # the report of a study stored elsewhere (--storage): a rerun without --storage started a
            # new study in DIR/study.journal and overwrote that report (fresh-user trial, session 27)
            raise CodesignError(f"{shown} holds the report of a study stored in {elsewhere} (its pareto.json); "
                                f"rerun with --storage {elsewhere} to resume it (without --storage a new study "
                                f"would start in {os.fspath(out_dir / 'study.journal')} and overwrite that report), "
                                f"or use another --out. Nothing was written.")
    if storage is not None and resumes:
        _check_other_storage(out_dir, storage, shown)
    if (not entries or (out_dir / "study.journal").is_file() or _is_report(out_dir / "pareto.json")
            or _is_sweep_report(out_dir / "sweep_front.json")):
        return
    own = _journal_path(storage, out_dir) or _sqlite_path(storage)
    if own is not None and own.is_file() and out_dir.resolve() in own.resolve().parents:
        return  # the run's own storage file, left there by an interrupted run: it resumes
    held = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    raise CodesignError(f"{shown}: not empty (it holds {held}) and not a codesign study directory; expected "
                        f"a new or empty directory, or the output directory of a previous `codesign optimize` "
                        f"(with its study.journal, its --storage file or pareto.json; rerun to resume) or "
                        f"`codesign sweep` (with its sweep_front.json). Nothing was written; use another --out.")


def _check_other_storage(out_dir: Path, storage: str, shown: str) -> None:
    """Refuse a run with ``--storage`` into a directory that holds the report of a study kept in
    other storage: its own ``study.journal`` (a run without ``--storage``), or the storage its
    ``pareto.json`` records. The run would write its report over that one (a fresh-user trial,
    session 36, found optimize's default directory rewritten with another storage's study; the
    converse, a rerun without ``--storage``, was refused since session 27).

    Raises:
        CodesignError: one line naming the directory, the storage it belongs to and what to do.
    """
    own = _journal_path(storage, out_dir) or _sqlite_path(storage)  # None: a server URL

    def same_file(rec: str) -> bool | None:
        """``rec`` (a recorded journal path) is ``own``; None when that cannot be told."""
        try:
            return own is not None and Path(rec).resolve() == own.resolve()
        except OSError:
            return None

    beside = out_dir / "study.journal"
    held = None
    if beside.is_file() and beside.stat().st_size and not same_file(str(beside)):
        held, rerun = os.fspath(beside), "rerun without --storage to resume it"
    else:
        rec = _reported_storage(out_dir / "pareto.json")
        if rec is not None and ("://" in rec and rec != redact(storage)
                                or "://" not in rec and same_file(rec) is False and Path(rec).is_file()):
            held, rerun = rec, f"rerun with --storage {rec} to resume it"
    if held is not None:
        raise CodesignError(f"{shown} holds the report of a study stored in {held}, not in --storage "
                            f"{redact(storage)}; {rerun}, or use another --out for this one (its report "
                            "would overwrite that one). Nothing was written.")


def _missing_dirs(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first."""
    out = []
    for p in (path, *path.parents):
        if p.exists() or p == p.parent:
            break
        out.append(p)
    return out


def _check_out_dir(out_dir: Path, name: str, journal_store=None,
                   clash: str = "overwrite its pareto.csv and designs/") -> None:
    """Refuse to write study ``name``'s report into ``out_dir`` when the directory already holds
    another study: one in its ``study.journal`` (``journal_store``: that journal, already open when
    it is the study's own storage) or the one its ``pareto.json`` reports. Its ``pareto.csv`` and
    ``designs/`` would be overwritten by this study's, and its journal would hold two studies.
    A ``sweep_front.json`` names its study too (that of the spec swept). The same study resumes.
    (A PostgreSQL URL holds many studies, keyed by name; only the output
    directory's files conflict there.) ``clash`` says what running there would do (``codesign
    sweep``'s front would sit beside another spec's study).

    Raises:
        CodesignError: one line naming the directory, the study in it and what to do.
    """
    import json

    import optuna

    held: dict[str, str] = {}  # study name -> its spec, as it was recorded
    journal = out_dir / "study.journal"
    store = journal_store
    if store is None and journal.is_file() and journal.stat().st_size:
        from optuna.storages.journal import JournalFileBackend

        try:
            store = optuna.storages.JournalStorage(JournalFileBackend(str(journal)))
        except Exception:  # noqa: BLE001 - not a journal we can read: the report check still runs
            store = None
    if store is not None:
        try:
            studies = store.get_all_studies()
        except Exception:  # noqa: BLE001 - as above
            studies = []
        for st in studies:
            held.setdefault(st.study_name, str(st.user_attrs.get("spec") or ""))
    # the study optimize reported, and the one a sweep's front belongs to (codesign sweep records
    # its spec's study name: a sweep of another spec replaced the front without a word, session 27)
    swept: set[str] = set()  # studies held by a sweep front only
    for report in (out_dir / "pareto.json", out_dir / "sweep_front.json"):
        if not report.is_file():
            continue
        try:
            doc = json.loads(report.read_text(encoding="utf-8"))
            if isinstance(doc, dict) and isinstance(doc.get("study"), str):
                if doc["study"] not in held and report.name == "sweep_front.json":
                    swept.add(doc["study"])
                held.setdefault(doc["study"], str(doc.get("spec") or ""))
        except (OSError, ValueError):
            pass
    if not held or name in held:
        return
    others = list(held)
    specs = [held[o] for o in others if held[o]]
    what = (f"the study {others[0]!r}" if len(others) == 1 else "the studies " + ", ".join(repr(o) for o in others)) \
        + (f" (spec {', '.join(dict.fromkeys(specs))})" if specs else "")
    resume = (f"rerun {specs[0]} to resume {others[0]!r}" if len(others) == 1 and specs
              else "rerun its own spec to resume it")
    if set(others) <= swept:  # only a sweep's front: nothing to resume, nothing of a study to overwrite
        what = "the sweep front of " + what
        resume = f"rerun {specs[0]} there" if len(others) == 1 and specs else "rerun its own spec there"
        clash = "replace or sit beside that sweep front"
    raise CodesignError(f"output directory {out_dir} already holds {what}, not this spec's study {name!r}; "
                        f"running {name!r} there would {clash}. Use another "
                        f"--out for {name!r}, or {resume}.")


#: Seconds an interrupted ``--workers`` run waits for its workers to give back their batches and
#: exit before it kills them (a worker inside a JAX compile reacts only once it returns).
WORKER_STOP_S = 30.0


def _spawn_workers(spec, ctx, workers, todo, storage, out_dir, seed, poll=None) -> int:
    import multiprocessing as mp
    import time

    import optuna

    n0 = len(ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    quotas = [todo // workers + (1 if i < todo % workers else 0) for i in range(workers)]
    cx = mp.get_context("spawn")  # fork can deadlock JAX (DESIGN.md)
    errors = cx.SimpleQueue()  # each failed worker's one line, reported once by this process
    procs = [cx.Process(target=_worker_process, args=(spec.path, storage, str(out_dir), q, seed, i + 1),
                        kwargs={"errors": errors}, daemon=False) for i, q in enumerate(quotas) if q > 0]
    try:
        for p in procs:
            p.start()
        while any(p.is_alive() for p in procs):
            time.sleep(0.5)
            if poll:
                poll(len(ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))) - n0)
    except KeyboardInterrupt:
        # SIGTERM each worker (its handler raises KeyboardInterrupt, so it gives back its batch
        # between storage writes and exits 130), then wait for them: a worker killed where it
        # stood left its batch RUNNING and, inside the journal lock, the lock (stress test)
        for p in procs:
            if p.pid is not None and p.is_alive():  # started, still running
                p.terminate()
        deadline = time.monotonic() + WORKER_STOP_S
        for i, p in enumerate(procs):
            if p.pid is not None:
                p.join(max(deadline - time.monotonic(), 0.0))
                if p.is_alive():  # pragma: no cover - a worker stuck past WORKER_STOP_S
                    p.kill()
                    p.join()
                    print(f"worker {i + 1} did not stop within {WORKER_STOP_S:g} s and was killed: its "
                          "trials in flight stay RUNNING (a rerun fails them when the storage is this run's own)",
                          file=sys.stderr)
        raise
    for p in procs:
        p.join()
    bad = [p.exitcode for p in procs if p.exitcode]
    if bad:
        lines = []
        while not errors.empty():
            lines.append(errors.get())
        # the first worker's message, once (every worker of a broken plugin says the same); a
        # worker's bug (exit 3, or a signal) is no input error
        why = ((lines[0] + "; " if lines else "") + f"{len(bad)} of {len(procs)} worker process(es) failed "
               f"(exit codes {bad}); completed trials are kept in the storage, rerun to resume")
        raise CodesignError(why) if all(c == ExitCode.USAGE_ERROR for c in bad) else BugError(why)
    n1 = len(ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    if poll:
        poll(n1 - n0)
    return n1 - n0


def _worker_process(spec_path: str, storage: str | None, out_dir: str, quota: int | None, seed: int | None,
                    rank: int, *, errors=None) -> None:
    """The target of a ``--workers`` process: :func:`worker_main`, exiting as the CLI does (2 on
    bad input, 3 on a bug, 130 when interrupted) instead of multiprocessing's traceback and exit 1.
    Its one-line message ("worker N: ...") goes to the ``errors`` queue, for the parent to report
    once, or to stderr (``error:``/``internal error:``) without one."""
    import traceback

    def fail(code, head, msg):
        line = f"worker {rank}: {' / '.join(msg.splitlines())}"
        if errors is not None:
            errors.put(line)
        else:
            print(f"{head}{line}", file=sys.stderr)
        sys.exit(int(code))

    seen: list[int] = []
    interrupts.catch(seen)  # Ctrl-C or the parent's SIGTERM: KeyboardInterrupt, held off in storage writes
    try:
        worker_main(spec_path, storage, out_dir, quota, seed, rank)
        if seen:  # an interrupt a finaliser swallowed: still an interrupted worker
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        sys.exit(int(ExitCode.INTERRUPTED))
    except BugError as exc:
        fail(ExitCode.INTERNAL_ERROR, "internal error: ", str(exc))
    except CodesignError as exc:
        fail(ExitCode.USAGE_ERROR, "error: ", str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug: one line, where it happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        fail(ExitCode.INTERNAL_ERROR, "internal error: ",
             f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})")
    finally:
        seen.append(0)  # disarm: a signal once the work is done must not raise in multiprocessing's exit


def worker_main(spec_path: str, storage: str | None, out_dir: str, quota: int | None, seed: int | None,
                rank: int, total: int | None = None, progress=None) -> int:
    """One worker: open the study in ``storage`` and add ``quota`` trials (or, with ``quota=None``,
    work until the study holds ``total`` trials). Used by ``--workers`` (spawned processes) and by
    ``codesign worker`` (any machine that reaches the storage)."""

    from .spec import load_spec

    spec = load_spec(spec_path)
    ctx = _open_study(spec, seed=seed, out_dir=Path(out_dir), storage=storage, rank=rank)
    if quota is None:
        total = _grid_total(ctx, spec.search.trials if total is None else total)
    # a worker refines the shared front between its batches as a single process does: without it
    # the front of a --workers 2 run was its 25 seed designs and nothing the search found
    # (hypervolume 7908 against one process's 7928, 25 Pareto designs against 72)
    return _work(ctx, quota, total, progress=progress)


def join_study(spec: Spec, *, storage: str, trials: int | None, seed: int | None, progress=None,
               note=None) -> SearchResult:
    """``codesign worker``: join the study in ``storage`` until it holds ``trials`` (default
    ``search.trials``) complete or running trials; seeds it first if it is new.

    ``note(text)``, if given, hears when the storage held no trial of this spec's study yet (the
    worker starts it: a mistyped ``--storage`` path would otherwise start a separate study silently),
    or how many completed trials it holds (:func:`_resuming`).

    Raises:
        CodesignError: a journal path or SQLite database (``sqlite:///dir/study.db``) whose
            directory is, or is under, a file, or does not exist (a worker joins a study where it is kept; ``optimize``
            creates the directory of its own study), as ``numerics quantize`` refuses an output
            file in a missing directory.
    """

    if spec.search is None:
        build_space(spec, [])  # raises "search: missing"
    journal = _journal_path(storage, Path("."))
    if journal is not None:
        _check_journal(storage, storage[len("journal:"):] if storage.startswith("journal:") else storage)
    file = journal if journal is not None else _sqlite_path(storage)  # a journal or SQLite database
    blocker = _file_in_the_way(file.parent) if file is not None else None
    if blocker is not None:  # f/x.journal, or f/a/x.journal under a file f: "does not exist" hid why
        raise CodesignError(f"--storage {redact(storage)}: {file.parent} exists and is not a directory"
                            if blocker == file.parent else
                            f"--storage {redact(storage)}: {file.parent} is under {blocker}, which is a file, "
                            "not a directory")
    if file is not None and not file.parent.is_dir():
        raise CodesignError(f"--storage {redact(storage)}: directory {file.parent} does not exist (a worker joins "
                            "the study kept there; check the path, or create the directory to start a study in it)")
    # what the search would refuse (its [search] keys, the cost model's own check), refused before
    # the study is created: a worker on a refused spec left a journal whose recorded spec then
    # refused the corrected one (plugin-author trial, session 36)
    check_search(spec)
    total = trials if trials is not None else spec.search.trials
    rank = os.getpid() % 9973 + 1
    ctx = _open_study(spec, seed=seed, out_dir=Path("."), storage=storage, rank=rank,
                      elsewhere="another --storage")  # a worker has no --out
    total = _grid_total(ctx, total, note)
    if note and not ctx.held:  # counted when the study was opened: no second read of the storage
        note(f"no trial of study {ctx.study.study_name!r} in {redact(storage)} yet: this worker starts it "
             "(if you meant to join a running search, check --storage)")
    _resuming(ctx, total, note)
    _prepare(ctx, total, private=False)
    new = _work(ctx, None, total, progress=progress)
    return _result(ctx, new)


# ------------------------------------------------------------------------------- sweep
def _tell_problems(met: dict[str, np.ndarray], reasons: list[str], ok: np.ndarray, space: SearchSpace,
                   problems) -> None:
    """``problems(design_problems, count)`` for each distinct list of problems among the designs of
    ``met`` (arrays, :func:`envelope_arrays`) that are not feasible (``~ok``)."""
    from collections import Counter

    keys = list(dict.fromkeys([m for m, _ in space.objectives] + [c.metric for c in space.constraints]))
    seen: Counter = Counter()
    for d in np.flatnonzero(~ok):
        row = {k: float(met[k][d]) for k in keys if k in met}
        feasible, why, cons, metrics = _design_record(row, reasons[d], space, None)
        seen[tuple(design_problems(feasible, why, cons, metrics, space))] += 1
    for ps, count in seen.items():
        problems(list(ps), count)


def run_sweep(spec: Spec, *, points: int, method: str = "sobol", seed: int | None = None,
              chunk: int = 50_000, evaluate=None, progress=None, problems=None) -> dict[str, Any]:
    """Evaluate ``points`` designs of the ``[search]`` space in vectorised chunks and keep the
    feasible Pareto front (:func:`pareto_mask`).

    Args:
        points: designs to evaluate (``codesign sweep`` takes up to 10^7; ``grid`` gives the finest
            full grid of at most that many, see :func:`sample_columns`).
        method: ``random``, ``sobol`` or ``grid``.
        chunk: designs per vectorised cost-model call (each call is padded to this size, so the
            cost model compiles once).
        progress: optional ``callback(done, total)``.
        problems: optional ``callback(problems, count)``: hears why designs were not feasible
            (:func:`design_problems`, as ``optimize`` counts its trials'; ``count`` designs had
            exactly those ``problems``) for every design of each chunk priced while no feasible
            design had been found, so every design's when none is feasible (the reasons cost a
            Python string per design and envelope choice: once a chunk holds a feasible design,
            the later chunks are priced without them).

    Returns:
        ``{"space", "points", "feasible", "front": {"columns", "metrics", "configs"}, "unresolved_points",
        "pareto_resolution", "hypervolume", "reference_point"}``: the front as parameter columns and
        metric columns (arrays; empty, under the same names, when no design is feasible) and, per
        front design, ``configs``: the envelope choice that gave each of its metrics, ``{metric:
        {envelope key: value}}`` over the finite ones (``{}`` without a ``[search.envelope]``), as
        :func:`evaluate_envelope` gives a trial's and ``pareto.json``'s rows carry it; without
        the ``unresolved_points`` designs that another front design beats within
        :data:`PARETO_RESOLUTION` (:func:`resolved_front`, as ``optimize`` lists its front); the
        hypervolume is the exact front's.
    """
    from .evaluation import evaluate as _evaluate
    from .pluginmanager import get_plugin_manager

    evaluate = evaluate or _evaluate
    pm = get_plugin_manager()
    check_names(spec, pm=pm)  # as run_search
    space = _build_space(spec, pm.cost_model_parameters(cost_model_name(spec, pm=pm)), pm)
    seed = spec.search.seed if seed is None else seed
    cols, n = sample_columns(space, points, seed, method)
    m = len(space.combos())
    dirs = [d for _, d in space.objectives]
    keep_cols: list[dict] = []
    keep_met: list[dict] = []
    keep_best: list[dict] = []  # per kept design, the index of the envelope choice behind each metric
    n_feasible = 0
    if progress:
        progress(0, n)
    for s0 in range(0, n, chunk):
        sl = slice(s0, min(n, s0 + chunk))
        part = {k: np.asarray(v)[sl] for k, v in cols.items()}
        k = sl.stop - sl.start
        why = problems is not None and n_feasible == 0
        met, best, reasons = envelope_arrays(spec, part, k, space, evaluate, with_reasons=why,
                                             block_rows=min(chunk, n) * m)
        vals, ok = feasible_objectives(met, space)
        if why:
            _tell_problems(met, reasons, ok, space, problems)
        n_feasible += int(ok.sum())
        idx = np.flatnonzero(ok)
        if len(idx):
            f = idx[pareto_mask(vals[idx], dirs)]
            keep_cols.append({kk: v[f] for kk, v in part.items()})
            keep_met.append({kk: v[f] for kk, v in met.items()})
            keep_best.append({kk: np.asarray(v)[f] for kk, v in best.items()})
        if progress:
            progress(sl.stop, n)
    doc: dict[str, Any] = {"space": space, "points": n, "feasible": n_feasible, "method": method, "seed": seed}
    if not keep_cols:
        # an empty front keeps the metric names a feasible one has (sweep_front.csv's header was
        # the parameter columns alone: fresh-user trial, session 40)
        doc.update(front={"columns": {k: v[:0] for k, v in part.items()},
                          "metrics": {k: np.asarray(v)[:0] for k, v in met.items()}, "configs": []},
                   unresolved_points=0, pareto_resolution=PARETO_RESOLUTION, hypervolume=0.0, reference_point=None)
        return doc
    fc = {k: np.concatenate([c[k] for c in keep_cols]) for k in keep_cols[0]}
    fm = {k: np.concatenate([c[k] for c in keep_met]) for k in keep_met[0]}
    fb = {k: np.concatenate([c[k] for c in keep_best]) for k in keep_best[0]}
    vals, _ = feasible_objectives(fm, space)
    f = pareto_mask(vals, dirs)
    order = np.argsort(-vals[f, 0] if dirs[0] == "maximize" else vals[f, 0], kind="stable")
    sel = np.flatnonzero(f)[order]
    fc = {k: v[sel] for k, v in fc.items()}
    fm = {k: v[sel] for k, v in fm.items()}
    fb = {k: v[sel] for k, v in fb.items()}
    vmin = _as_min(vals[sel], dirs)
    ref = hv_reference_point(vmin)
    # listed as optimize lists its front: a design beaten beyond PARETO_RESOLUTION on one objective
    # by one no worse than that on any is left out (counted); the hypervolume is the exact front's
    listed = resolved_front(vals[sel], dirs)
    fm = {k: v[listed] for k, v in fm.items()}
    fb = {k: v[listed] for k, v in fb.items()}
    combos = space.combos()
    # each metric's envelope choice, as evaluate_envelope gives a trial's (pareto.json's configs)
    configs = [{k: {kk: _plain(x) for kk, x in combos[int(fb[k][d])].items()}
                for k in fb if math.isfinite(float(fm[k][d]))} if space.envelope else {}
               for d in range(int(listed.sum()))]
    doc.update(front={"columns": {k: v[listed] for k, v in fc.items()}, "metrics": fm, "configs": configs},
               unresolved_points=int((~listed).sum()), pareto_resolution=PARETO_RESOLUTION,
               hypervolume=hypervolume(vmin, ref),
               reference_point=[(-x if d == "maximize" else x) for x, d in zip(ref, dirs)])
    return doc
