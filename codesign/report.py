"""Reports of a search: the Pareto table, ``pareto.csv``/``pareto.json``/``pareto.png`` and each
Pareto design written back as a spec TOML that ``codesign evaluate`` accepts unchanged."""

from __future__ import annotations

import csv
import json
import math
import numbers
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape  # "[ms]" in a header is a unit, not a style tag

from .costmodel import design_value, display_unit, metric_unit
from .baselines import reference_warnings
from .evaluation import cost_model_record, efficiency_record, jsonable, list_edge, slo_bounds
from .search import (BEAT_TOLERANCE, PARETO_RESOLUTION, SEARCH_METRICS, SLO_METRICS, Param, SearchResult, SearchSpace,
                     bound_unit, budget_warnings, versus_reference, hypervolume_series, ratio_metrics, ratios, satisfied, trial_problems)
from .spec import Spec, drop_unread_keys, load_raw
from .units import format_duration, format_quantity, parse_quantity


SCHEMA_VERSION = 1
#: Metrics shown for every Pareto design (after the objectives).
#: ``hbm_stacks`` is the whole stacks the design needs (:func:`codesign.costmodel.whole_needed`), as
#: pareto.json gives it; empty (null) where the cost model does not count them.
SHOWN = ["peak_mixed_tok_s_per_kw", "min_e2e_latency_s", "min_tpot_s", "min_ttft_s",
         "mixed_tok_s_per_kw_at_tpot", "peak_power_w", "area_mm2", "hbm_stacks",
         "peak_concurrency", "ttft_at_peak_s", "tpot_at_peak_s"]
#: Short column headers for searched parameters.
PARAM_SHORT = {
    "chip.peak_flops.fp4": "FP4 peak", "chip.peak_flops.fp8": "FP8 peak", "chip.peak_flops.bf16": "BF16 peak",
    "memory.hbm.bandwidth": "HBM BW", "memory.hbm.capacity": "HBM cap", "memory.sram.capacity": "SRAM",
    "memory.sram.bandwidth": "SRAM BW", "network.scaleup_bandwidth": "scale-up BW", "chip.tdp": "TDP",
    "deployment.tp": "TP", "deployment.ep": "EP", "deployment.dp_attention": "DP attn",
}
#: Short column headers for the terminal table: metric -> (header, scale). The header has no arrow:
#: :func:`column_header` adds one to an objective's alone.
SHORT = {
    "peak_mixed_tok_s_per_kw": ("peak tok/s/kW", 1.0),
    "min_e2e_latency_s": ("min E2E [s]", 1.0),
    "min_tpot_s": ("min TPOT [ms]", 1e3),
    "min_ttft_s": ("min TTFT [ms]", 1e3),
    "mixed_tok_s_per_kw_at_tpot": ("tok/s/kW @ref TPOT", 1.0),
    "peak_power_w": ("peak power [W]", 1.0),
    "area_mm2": ("area [mm²]", 1.0),
    "peak_concurrency": ("peak at conc", 1.0),
    "ttft_at_peak_s": ("TTFT at peak [s]", 1.0),
}


#: Axis names in the field's terms (units and the better direction are added by :func:`_label`).
AXIS_NAMES = {
    "peak_mixed_tok_s_per_kw": "peak mixed tok/s per kW (TDP)",
    "min_e2e_latency_s": "min E2E latency",
    "min_tpot_s": "min TPOT",
    "min_ttft_s": "min TTFT",
    "peak_mixed_tok_s_per_chip": "peak mixed tok/s per chip",
    "mixed_tok_s_per_kw_at_tpot": "mixed tok/s per kW at the reference's min TPOT",
    "area_mm2": "area",
    "peak_power_w": "peak power",
}


#: The arrow of a better direction: an objective's (``[[search.objectives]]`` ``direction``) in the
#: Pareto table's headers and on the plots' axes, and a metric's own (``"max"``/``"min"``, its
#: :data:`codesign.search.SEARCH_METRICS` sense) on a study heatmap's colour bar. The one map of
#: them all (the plots had one of their own, and put an arrow on every metric: session 46).
ARROWS = {"maximize": "↑", "minimize": "↓", "max": "↑", "min": "↓"}


def _label(metric: str, direction: str | None = None) -> str:
    """A plot axis's name of ``metric``: its name, unit and, when ``direction`` (``"maximize"``,
    ``"minimize"``) says it is an objective, its arrow; as :func:`column_header`, no arrow
    otherwise. A one-objective search's plot put ↓ on its min E2E latency axis, no objective of
    it, where the table's column had none (fresh-user trial, session 46)."""
    unit, _ = SEARCH_METRICS.get(metric) or SLO_METRICS.get(metric) or metric_unit(metric)
    name = AXIS_NAMES.get(metric) or metric.replace("_", " ")
    for suffix in (" s", " w", " mm2"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return f"{name} [{display_unit(unit)}] {ARROWS.get(direction or '', '')}".strip()


def column_header(metric: str, direction: str | None = None, ratio: bool = False) -> str:
    """The Pareto table's header of ``metric``'s column (:data:`SHORT`'s, or :func:`_label`'s
    without its arrow), or with ``ratio`` of its ``×ref`` column (the name without its unit:
    "min E2E ×ref"); ↑ or ↓ after it when ``direction`` (``"maximize"``, ``"minimize"``: an
    ``[[search.objectives]]`` direction) says it is an objective, and no arrow otherwise. Every
    column of min TPOT carried ↓ in a search of tok/s per kW and E2E latency, read as a third
    objective (fresh-user trial, session 45)."""
    head = SHORT[metric][0] if metric in SHORT else _label(metric)
    if ratio:
        head = f"{head.split(' [')[0]} ×ref"
    return f"{head} {ARROWS.get(direction or '', '')}".rstrip()


def _set(raw: dict, key: str, value) -> None:
    parts = key.split(".")
    d = raw
    for p in parts[:-1]:
        d = d.setdefault(p, {})
    d[parts[-1]] = value


def design_toml(spec: Spec, params: dict, result: SearchResult, trial_number: int,
                configs: dict | None = None) -> str:
    """The spec with a trial's parameter values substituted, fully merged, without ``[search]``.

    With a deployment envelope, the file carries the deployment that gave the first objective (so
    ``codesign evaluate`` on it reproduces that number), and a header comment names the
    deployment behind each other metric. The search's SLO bounds on ``ttft_s`` and ``tpot_s``
    (``[[search.constraints]]`` maxima, :data:`~codesign.search.SLO_METRICS`) are written into its
    ``[workload.slo]`` (the tighter of a bound and the spec's own), which is what ``evaluate``
    applies, so its summary is taken at the SLO as pareto.json's metrics are; a header comment says
    so, and names any SLO bound ``[workload.slo]`` cannot hold (another point metric, a minimum).
    """
    import tomli_w

    raw, _ = load_raw(spec.path)
    raw.pop("search", None)
    head_slo = _carry_slos(raw, spec, result.space)
    notes = []
    primary = result.space.objectives[0][0] if result.space.objectives else None
    if configs and primary in configs:
        for k, v in configs[primary].items():
            _set(raw, k, int(v) if isinstance(v, (int, float)) and float(v).is_integer() else v)
        for metric, cfg in configs.items():
            if metric in dict(result.space.objectives) or metric in ("min_tpot_s", "min_ttft_s"):
                where = ", ".join(f"{k} = {v}" for k, v in cfg.items())
                notes.append(f"#   {metric}: at {where}")
    for prm in result.space.params:
        v = params[prm.key]
        if prm.kind:
            v = format_quantity(float(v), prm.kind, digits=8)
        elif prm.type == "int" or (isinstance(v, float) and v.is_integer()):
            v = int(v)
        _set(raw, prm.key, v)
    raw["name"] = f"{spec.name or 'design'}-trial-{trial_number}"
    drop_unread_keys(raw)
    head = (f"# Pareto design {trial_number} of `codesign optimize {spec.path}`; every value is the\n"
            f"# base spec's (see its sources) except the searched ones: {', '.join(params)}.\n")
    if notes:
        head += ("# Written with the deployment of the first objective; each metric's best deployment:\n"
                 + "\n".join(notes) + "\n")
    return head + head_slo + tomli_w.dumps(raw)


#: ``[workload.slo]`` key of each point metric it bounds from above (:func:`codesign.evaluation.slo_bounds`).
_SLO_KEYS = {"ttft_s": "ttft", "tpot_s": "tpot"}


def _carry_slos(raw: dict, spec: Spec, space: SearchSpace) -> str:
    """Write the SLO bounds of ``space`` that ``[workload.slo]`` can hold (upper bounds on
    ``ttft_s``, ``tpot_s``) into ``raw``'s ``[workload.slo]``, each the tightest of the search's
    bounds and the spec's own; return the header comment lines that say what came from where ("" when
    the file's ``[workload.slo]`` already held them). A design file without them was evaluated at
    its unconstrained peak (fresh-user trial, session 40: 56,573 tok/s/kW at 1024 users against
    pareto.json's 40,608 at 256 under a TTFT bound of 200 ms)."""
    own = dict(slo_bounds(spec))
    tight = tightest_slos(space)
    lines, left = [], []
    for c in space.constraints:
        if not c.slo:
            continue
        if c.metric not in _SLO_KEYS or c.sense != "max":
            left.append(c.describe())
            continue
        bound = tight[(c.metric, "max")]
        if c.bound != bound or bound == own.get(c.metric):
            continue  # a looser bound of the same metric, or the spec's own [workload.slo]
        key = _SLO_KEYS[c.metric]
        text = format_quantity(bound, "s", digits=15)
        if parse_quantity(text, "s") != bound:  # evaluate must read the very bound the search applied
            text = format_quantity(bound, "s", digits=17)
        _set(raw, f"workload.slo.{key}", text)
        was = f" (tighter than the base spec's {key} = {format_quantity(own[c.metric], 's', digits=15)})" \
            if c.metric in own else ""
        lines.append(f'#   {key} = "{text}": the search\'s [[search.constraints]] {c.describe()}{was}')
    head = ""
    if lines:
        head += ("# [workload.slo] carries the search's SLO bounds, so that codesign evaluate takes its\n"
                 "# figures at the SLO as pareto.json does:\n" + "\n".join(dict.fromkeys(lines)) + "\n")
    if left:
        one = len(left) == 1
        head += (f"# Not in this file: the search's SLO {'bound' if one else 'bounds'} {', '.join(left)}\n"
                 "# ([workload.slo] bounds ttft and tpot from above only); codesign evaluate takes its\n"
                 f"# figures without {'it' if one else 'them'}, so they can differ from pareto.json's.\n")
    return head


def slo_point_metrics(space: SearchSpace) -> set[str]:
    """The point metrics ``space``'s SLOs bound (``ttft_s``, ``tpot_s``, ``itl_s``, ...: its
    constraints with ``slo``), which a report lists no value of. A trial stores each one's best
    value over the design's points, for the constraint to test; in a report it read as one point's
    figure and was ``min_ttft_s``/``min_tpot_s`` again (fresh-user trial, session 41, as
    ``codesign sweep``'s front files since session 40). The bound is in the report's
    ``constraints``."""
    return {c.metric for c in space.constraints if c.slo}


def _reported(metrics: dict, slo: set[str]) -> dict:
    """``metrics`` as a report gives them: counts whole (:func:`_counted`), without the SLOs' point
    metrics ``slo`` (:func:`slo_point_metrics` of the search space)."""
    return _counted({k: v for k, v in metrics.items() if k not in slo})


def build_rows(result: SearchResult) -> list[dict[str, Any]]:
    """``pareto.json``'s rows, one per listed Pareto design (``result.pareto``'s order): ``trial``,
    ``params`` (SI units), ``metrics`` (every metric the cost model reports but the SLOs' point
    metrics, :func:`_reported`; None where a value is not finite), ``vs_reference`` (design /
    reference, :func:`~codesign.search.ratios`), ``beats_reference`` and ``matches_reference``
    (:func:`~codesign.search.versus_reference`: better by more than
    :data:`~codesign.search.BEAT_TOLERANCE` on every objective; within it on one or more and no
    worse on any), ``seed_source``, ``configs`` (envelope choice per metric) and
    ``duplicate_trials``."""
    ref = (result.reference or {}).get("metrics", {})
    slo = slo_point_metrics(result.space)
    rows = []
    for t in result.pareto:
        m = {k: (v if v is not None else math.nan) for k, v in t.user_attrs["metrics"].items()}
        verdict = versus_reference(m, ref, result.space) if ref else None
        rows.append({
            "trial": t.number,
            "params": dict(t.params),
            "metrics": _reported(m, slo),
            "vs_reference": ratios(m, ref, result.space) if ref else {},
            "beats_reference": verdict == "beats" if ref else None,
            # a tie within BEAT_TOLERANCE on an objective is no win (0.99997x the reference's latency)
            "matches_reference": verdict == "matches" if ref else None,
            "seed_source": t.user_attrs.get("seed_source", "sampler"),
            # (the SLOs' point metrics have no value in the row, so no deployment either)
            "configs": {k: v for k, v in t.user_attrs.get("configs", {}).items() if k not in slo},
            # later trials that drew this very design (identical parameter values), merged into it
            "duplicate_trials": result.duplicates.get(t.number, []),
        })
    return rows


#: A number in a reason ("65.2 GB", "tp 3", "<= 0.001 s"), not a digit inside a word (fp8, H100).
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?!\w)")


def _causes(reason: str) -> list[str]:
    """The causes a reason joins with ``"; "`` (one per deployment of the envelope, and one per
    problem of a deployment), each once in order; a ``"; "`` inside parentheses is part of its cause."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(reason):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif ch == ";" and not depth and reason[i + 1:i + 2] == " ":
            parts.append(reason[start:i])
            start = i + 2
    parts.append(reason[start:])
    return list(dict.fromkeys(p.strip() for p in parts if p.strip()))


class CauseCounter:
    """Counts why designs were not feasible, as :func:`infeasible_reasons` describes: :meth:`add`
    each design's problems (:func:`~codesign.search.trial_problems`, or
    :func:`~codesign.search.design_problems` for a sweep's designs), then :meth:`top`."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Any]] = {}

    def add(self, problems, count: int = 1) -> None:
        """Count ``count`` designs whose problems were ``problems`` (each cause once per design)."""
        seen = set()
        for problem in problems:
            for cause in _causes(problem):
                key = _NUMBER.sub("#", cause)
                nums = _NUMBER.findall(cause)
                g = self.groups.setdefault(key, {"reason": cause, "values": [set() for _ in nums], "count": 0})
                for vals, x in zip(g["values"], nums):
                    vals.add(x)
                if key not in seen:
                    seen.add(key)
                    g["count"] += count

    def top(self, top: int = 5, noun: str = "trials") -> list[dict[str, Any]]:
        """The ``top`` most common causes, most common first (the first seen first on a tie): each
        ``{"reason", "pattern", noun: count}``."""
        out = []
        for g in sorted(self.groups.values(), key=lambda g: -g["count"])[:top]:
            values = iter(g["values"])
            pattern = _NUMBER.sub(lambda m: m.group() if len(next(values)) == 1 else "#", g["reason"])
            out.append({"reason": g["reason"], "pattern": pattern, noun: g["count"]})
        return out


def infeasible_reasons(trials, space: SearchSpace, top: int = 5) -> list[dict[str, Any]]:
    """Why trials were not feasible designs: the ``top`` most common causes, most common first.

    Each cause of :func:`~codesign.search.trial_problems` (the cost model's reasons, one per
    deployment of the envelope, and each missed constraint) is counted once per trial, grouped with
    the causes that read the same up to their numbers: "weights need 65.2 GB per chip, ..." at TP 1
    and "weights need 32.6 GB per chip, ..." at TP 2 of that trial, or of another, are one cause. A
    trial with two causes (weights that do not fit and too many HBM stacks; two missed
    constraints) counts under both. Each entry: ``reason``, the first such cause as written (its
    numbers are one trial's); ``pattern``, the same text with ``#`` for each number that differs
    between the causes counted (equal to ``reason`` when they all read the same); ``trials``, how
    many trials had it. (:class:`CauseCounter` counts them; ``codesign sweep`` counts designs.)
    """
    counter = CauseCounter()
    for t in trials:
        counter.add(trial_problems(t, space))
    return counter.top(top)


def reasons_text(reasons: list[dict[str, Any]], noun: str = "trials") -> str:
    """The most common reasons as the reports print them after "no feasible design; most common
    reasons: ": ``REASON (N trials); ...``, "e.g. " before a reason whose numbers differ between its
    designs (it is one example of them). ``noun``: the count's key, ``trials`` or ``designs``."""
    one = noun[:-1]
    return "; ".join(("" if r.get("pattern", r["reason"]) == r["reason"] else "e.g. ")
                     + f"{r['reason']} ({r[noun]} {one if r[noun] == 1 else noun})" for r in reasons)


def _constraint(c: dict):
    """pareto.json's ``constraints`` entry as a :class:`~codesign.search.Constraint`."""
    from .search import Constraint

    sense = "max" if "max" in c else "min"
    return Constraint(c["metric"], float(c[sense]), sense)


def constraint_records(space: SearchSpace) -> list[dict[str, Any]]:
    """``constraints`` of pareto.json and sweep_front.json: each bound's ``name`` (a key of the
    stored trials' constraint values), ``metric``, ``max`` or ``min`` (in the metric's ``unit``, as
    ``objectives`` writes it) and ``slo`` (a bound on a point metric)."""
    return [{"name": c.name, "metric": c.metric, c.sense: c.bound, "slo": c.slo,
             "unit": c.unit}
            for c in space.constraints]


def _valued(metric: str, value: float) -> str:
    """``value`` of ``metric`` with its unit (:meth:`~codesign.search.Constraint.describe`'s), at the
    digits of a value in the table: ``"1,200 W"``, ``"1,716 mm²"``, ``"0.02 s"``."""
    unit = display_unit(bound_unit(metric))
    return (f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}") + (f" {unit}" if unit else "")


def searched_line(space: SearchSpace) -> str:
    """What a search varied, for the text report above its table: each parameter's range (its
    unit, ``log`` where sampled in log space) or choices, the envelope every design is served
    over, and the objectives: ``"searched: chip.peak_flops.fp4 1-20 PFLOP/s (log), ...; each design
    served at deployment.tp 1, 2, 4, 8; objectives: maximize peak_mixed_tok_s_per_kw, minimize
    min_e2e_latency_s"``. The table's header arrows alone hinted at the objectives, and nothing
    said the ranges or that each design is priced over the envelope (fresh-user trial, session 48)."""
    from .units import format_quantity

    def val(p: Param, v) -> str:
        if p.kind and isinstance(v, (int, float)):
            return format_quantity(float(v), p.kind, digits=3)
        return f"{v:g}" if isinstance(v, float) else str(v)

    said = []
    for p in space.params:
        if p.type == "categorical":
            said.append(f"{p.key} {', '.join(val(p, c) for c in p.choices)}")
        else:
            lo, hi = val(p, p.low), val(p, p.high)
            lo_num, _, lo_unit = lo.partition(" ")
            rng = f"{lo_num}-{hi}" if lo_unit and lo_unit == hi.partition(" ")[2] else f"{lo} to {hi}"
            said.append(f"{p.key} {rng}" + (" (log)" if p.log else ""))
    out = "searched: " + ("; ".join(said) if said else "no parameter")
    if space.envelope:
        out += "; each design served at " + ", ".join(
            f"{k} {', '.join(f'{c:g}' if isinstance(c, float) else str(c) for c in v)}" for k, v in space.envelope)
    out += "; objectives: " + ", ".join(f"{d} {m}" for m, d in space.objectives)
    return out


def constraints_line(constraints: list[dict]) -> str:
    """The bounds a search held its designs to, as optimize prints them above its table:
    ``"constraints: peak_power_w <= 700 W, area_mm2 <= 1716 mm²"`` (each as the infeasible
    reasons write it, :meth:`~codesign.search.Constraint.describe`; an SLO bound marked ``(SLO)``),
    ``"constraints: none"`` without one. ``constraints``: pareto.json's."""
    said = [_constraint(c).describe() + (" (SLO)" if c.get("slo") else "") for c in constraints]
    return "constraints: " + (", ".join(said) if said else "none")


def over_bounds(metrics: dict, constraints: list[dict]) -> list[str]:
    """The names of the design bounds (pareto.json's ``constraints`` that are not SLOs) that
    ``metrics`` are over: the reference is priced under none of them
    (:func:`~codesign.search.reference_envelope`), and GB200's 1,200 W peak stood in the table of a
    700 W search unmarked (fresh-user trial). A metric without a value is over none."""
    out = []
    for c in constraints:
        v = metrics.get(c["metric"])
        if c.get("slo") or not isinstance(v, (int, float)) or not math.isfinite(v):
            continue
        if ("max" in c and v > c["max"]) or ("min" in c and v < c["min"]):
            out.append(c["name"])
    return out


def infeasible_line(doc: dict) -> str | None:
    """The tally of infeasible trials by reason that optimize prints under its table when some
    trials were feasible (with none, the "no feasible design" line says the reasons):
    ``"infeasible: 14 of 30 trials: constraint peak_power_w <= 700 W not met (10 trials); e.g.
    HBM needs 10 stacks, ... (4 trials)"``; None when no trial was infeasible. A trial with several
    reasons counts under each, and pareto.json keeps the most common five: a note says so when the
    counts do not add up to the infeasible trials."""
    n = doc["trials"] - doc["feasible_trials"]
    reasons = doc.get("infeasible_reasons") or []
    if n <= 0 or not reasons:
        return None
    line = f"infeasible: {n} of {trials(doc['trials'])}: {reasons_text(reasons)}"
    if sum(r["trials"] for r in reasons) != n:
        line += f" (a trial with several reasons counts under each; the {len(reasons)} most common shown)"
    return line


def trials(n: int) -> str:
    """``"1 trial"``, ``"2 trials"``: a count of trials as the reports write it."""
    return f"{n} trial" if n == 1 else f"{n} trials"


def _counted(metrics: dict) -> dict:
    """``metrics`` with each count (chips, max_concurrency) whole, as ``codesign evaluate --json``
    gives them (:func:`codesign.costmodel.design_value`)."""
    return {k: design_value(k, v) if isinstance(v, (int, float)) else v for k, v in metrics.items()}


def write_outputs(spec: Spec, result: SearchResult, out: Path, warnings: list[str] | None = None) -> dict[str, Any]:
    """Write the report files into ``out`` and return the JSON document. ``warnings``: the search's
    (:func:`search_warnings`), when the caller already has them."""
    out.mkdir(parents=True, exist_ok=True)
    rows = build_rows(result)
    ddir = out / "designs"
    ddir.mkdir(exist_ok=True)
    written = set()
    for r in rows:
        path = ddir / f"trial-{r['trial']:05d}.toml"
        text = design_toml(spec, r["params"], result, r["trial"], r.get("configs"))
        _replace(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        r["design_file"] = str(path)
        written.add(path.name)
    # designs/ holds this front only: a resumed study's front moves on, and a design file of a trial
    # that left it would read as a Pareto design
    for old in ddir.glob("trial-*.toml"):
        if old.name not in written and re.fullmatch(r"trial-\d+\.toml", old.name):
            old.unlink()
    # a Pareto design's sensitivities as the last report of this study gave them (a rerun with
    # nothing to run took 36 s, two thirds of it recomputing these Jacobians; session 28)
    known = _reported_sensitivities(out / "pareto.json", spec, result)
    todo = [r for r in rows if jsonable(r["params"]) != known.get(r["trial"], (None, None))[0]]
    sens = None
    if todo:
        from .search import sensitivities

        try:
            sens = sensitivities(spec, result.space, [dict(r["params"]) for r in todo])
        except Exception as exc:  # noqa: BLE001 - a report must not fail on an optional extra
            import sys

            print(f"warning: sensitivities unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
    new = {id(r): (sens[i] if sens else None) for i, r in enumerate(todo)}
    for r in rows:
        r["sensitivities"] = new[id(r)] if id(r) in new else known[r["trial"]][1]
    hv = hypervolume_series(result.trials, result.space)
    slo = slo_point_metrics(result.space)  # left out of the reference's metrics and configs, as of each row's
    objectives = [{"metric": m, "direction": d, "unit": SEARCH_METRICS[m][0]} for m, d in result.space.objectives]
    doc = {
        "schema_version": SCHEMA_VERSION,
        "spec": spec.path,
        "cost_model": cost_model_record(spec),  # what priced the designs and the reference
        # whose calibrated knobs priced the designs (spec.efficiency_from), or None (as a study's data.json)
        "efficiency_from": efficiency_record(spec),
        "study": result.study.study_name,
        "storage": result.storage,
        # a bound on power or area the search lacks; a reference priced on another model or workload
        "warnings": search_warnings(spec) if warnings is None else warnings,
        # what to keep in mind reading the Pareto designs' figures, one line each (front_notes)
        "notes": front_notes([(f"trial {r['trial']}", r["metrics"]) for r in rows],
                             largest=list_edge(spec.workload.concurrency), slo=bool(slo),
                             objectives=[m for m, _ in result.space.objectives]),
        "trials": len(result.trials),
        "new_trials": result.new_trials,
        "feasible_trials": sum(1 for t in result.trials if t.user_attrs.get("feasible")
                               and satisfied(t)),
        # why trials were not feasible designs, most common first (what to change when none is):
        # the cost model's reasons and each missed constraint (power, area, SLOs), grouped up to
        # their numbers (see infeasible_reasons)
        "infeasible_reasons": infeasible_reasons(result.trials, result.space),
        # trials left off the front because they repeat a listed design (see each row's duplicate_trials)
        "duplicate_trials_merged": sum(len(v) for v in result.duplicates.values()),
        # trials of the exact front left off because a listed design matches them within
        # search.PARETO_RESOLUTION (relative) on every objective and beats them beyond it on one
        "unresolved_trials": list(result.unresolved),
        "pareto_resolution": PARETO_RESOLUTION,
        "objectives": objectives,
        "constraints": constraint_records(result.space),
        "hypervolume": hv,
        "sensitivity_definition": "elasticity d ln(objective) / d ln(parameter) by JAX grad at each Pareto design",
        "power_basis": "tdp",
        # Pareto designs better than the reference on every objective beyond search.BEAT_TOLERANCE
        # (each row's beats_reference), those that match it within that on one or more and are no
        # worse on any (matches_reference), and how many of the first of those peak more than evaluation.PEAK_OVER_TDP_MARGIN above
        # their own chip.tdp (their tok/s per kW divides by a TDP they exceed: see notes); null
        # without a reference, or with one that cannot be served (reference_headline)
        **beat_counts(rows, result.reference),
        "reference": result.reference and dict(
            result.reference, metrics=_reported(result.reference["metrics"], slo),
            configs={k: v for k, v in (result.reference.get("configs") or {}).items() if k not in slo}),
        "pareto": rows,
    }
    doc["infeasible_trials"] = doc["trials"] - doc["feasible_trials"]  # what infeasible_reasons counts the reasons of
    if doc["reference"]:  # the design bounds the reference is over (it is priced under none: over_bounds)
        doc["reference"]["over_constraints"] = over_bounds(doc["reference"]["metrics"], doc["constraints"])
    doc = jsonable(doc)
    text = json.dumps(doc, indent=2)
    _replace(out / "pareto.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    _replace(out / "pareto.csv", lambda tmp: _write_csv(tmp, rows, result))
    _replace(out / "pareto.png", lambda tmp: _plot(tmp, result, spec))
    _replace(out / "hypervolume.png", lambda tmp: _plot_hv(tmp, hv, spec))
    return doc


def beat_counts(rows, reference) -> dict[str, int | None]:
    """``{"beat_reference": n, "beat_reference_peak_over_tdp": k, "match_reference": t}`` of
    pareto.json: ``n`` Pareto designs (``rows``, :func:`build_rows`) beat ``reference`` (the
    search's, ``None`` without one) on every objective, ``t`` more match it (``matches_reference``:
    within :data:`~codesign.search.BEAT_TOLERANCE` on an objective, no worse on any), ``k`` of the ``n`` with a modelled peak power more than
    :data:`~codesign.evaluation.PEAK_OVER_TDP_MARGIN` above their own ``chip.tdp``
    (:func:`codesign.evaluation.peak_over_tdp`); both None without a reference or when it cannot be
    served (``infeasible_reason``). A search of ``chip.tdp`` printed "31 Pareto design(s) beat gb200
    on every objective" while every one of them peaked at 2.2-2.7× its TDP (fresh-user trial,
    session 44): a tok/s per kW on a TDP the chip exceeds is no fair win."""
    from .evaluation import peak_over_tdp

    if not reference or reference.get("infeasible_reason"):
        return {"beat_reference": None, "beat_reference_peak_over_tdp": None, "match_reference": None}
    won = [r for r in rows if r.get("beats_reference")]
    return {"beat_reference": len(won),
            "beat_reference_peak_over_tdp": sum(1 for r in won if peak_over_tdp(r["metrics"]) is not None),
            "match_reference": sum(1 for r in rows if r.get("matches_reference"))}


def reference_headline(doc: dict) -> str | None:
    """The line ``codesign optimize`` prints under its table of how many Pareto designs beat the
    reference on every objective (``doc``: pareto.json's document, :func:`write_outputs`), and how
    many of those peak more than :data:`~codesign.evaluation.PEAK_OVER_TDP_MARGIN` above their own
    TDP (:func:`beat_counts`; the front's note says more); None without a reference or when it
    cannot be served (the caller says why)."""
    from .evaluation import PEAK_OVER_TDP_MARGIN

    ref, n, hot = doc.get("reference"), doc.get("beat_reference"), doc.get("beat_reference_peak_over_tdp")
    if not ref or n is None:
        return None
    line = (f"{n} Pareto design{' beats' if n == 1 else 's beat'} {ref['name']} on every objective (reference: each "
            f"metric at its best over {reference_choices(ref)})")
    if hot:
        who = "it" if n == 1 else f"{hot} of them"
        peaks, its = ("peaks", "its") if hot == 1 else ("peak", "their")
        line += (f"; {who} {peaks} above {1 + PEAK_OVER_TDP_MARGIN:g}× {its} own chip.tdp, so {its} tok/s per kW "
                 "divides by a TDP the chip exceeds (see the note above)")
    tied = doc.get("match_reference")
    if tied:  # "beats ref: matches" in the table: within BEAT_TOLERANCE of the reference somewhere
        line += (f"; {tied} more {'matches' if tied == 1 else 'match'} it within {BEAT_TOLERANCE:.1%} on one "
                 "objective or more and no worse on any")
    return line + "."


def reference_choices(ref: dict) -> str:
    """The deployment choices the reference is priced over, as optimize's lines under its table say
    them (:func:`reference_headline`, and the line of a reference that cannot be served):
    ``"deployment.tp = 1, 2, 4, 8"`` (keys separated by ``"; "``) from pareto.json's
    ``reference["choices"]``, or ``"its deployment"`` when it has none."""
    return "; ".join(f"{k} = {', '.join(str(v) for v in vs)}"
                     for k, vs in (ref.get("choices") or {}).items()) or "its deployment"


def _replace(path: Path, write) -> None:
    """Write ``path`` whole or not at all: ``write(tmp)`` writes a temporary file beside it
    (``.NAME.partial.SUFFIX``: the suffix tells matplotlib the format), which then replaces
    ``path`` (``os.replace``, atomic on one file system). An interrupt (Ctrl-C) or an error while
    it is written leaves the previous file, or none, and never a cut one that reads as whole."""
    tmp = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone once replaced; a cut one is removed


def search_warnings(spec: Spec) -> list[str]:
    """What a search of ``spec`` should say before it runs and keep in its report: a power or area
    bound it lacks (:func:`codesign.search.budget_warnings`), a reference priced on another model or
    workload (:func:`codesign.baselines.reference_warnings`)."""
    return budget_warnings(spec) + power_gap_warnings(spec) + reference_warnings(spec)


def users(n: int) -> str:
    """``"1 user"``, ``"1,024 users"``: a concurrency as the reports write it."""
    return f"{n:,} user" if n == 1 else f"{n:,} users"


def peak_power_note(design) -> str | None:
    """What a modelled peak power far above the design's own ``chip.tdp`` means, for one design, or
    None when it is within :data:`~codesign.evaluation.PEAK_OVER_TDP_MARGIN` of it
    (:func:`codesign.evaluation.peak_over_tdp`). ``design``: its metrics (``peak_power_w`` and
    ``tdp_w`` [W]). The one wording of ``codesign evaluate``'s warning and of :func:`front_notes`
    (optimize, sweep), which says it of the front's highest design."""
    from .evaluation import PEAK_OVER_TDP_MARGIN, _watts, peak_over_tdp

    ratio = peak_over_tdp(design)
    if ratio is None:
        return None
    tdp = _watts(design["tdp_w"])
    return (f"modelled peak power {_watts(design['peak_power_w'])} is {ratio:.2f}× chip.tdp {tdp}: tok/s per kW "
            f"divides by the TDP (the power basis) and a point drawing more than {tdp} is infeasible, but a chip "
            "whose peak is that far above its TDP would throttle under a heavier load than the points priced, "
            f"which is not priced (a peak up to {1 + PEAK_OVER_TDP_MARGIN:g}× the TDP is not flagged: with every "
            "unit at full rate at once a chip exceeds its TDP by design, the shipped specs by up to 1.14×)")


#: The peaks whose operating point is ``peak_concurrency`` (:meth:`codesign.costmodel.Evaluation.peak_point`),
#: as a note names them, and what rises to them: tok/s per kW of TDP is tok/s per chip over the
#: chip's TDP, a constant, so both peak at the same concurrency. Other peaks (per kW of modelled
#: power, at the reference's TPOT) are taken at points of their own.
PEAK_AT_CONCURRENCY = {"peak_mixed_tok_s_per_kw": ("tok/s per kW", "the efficiency"),
                       "peak_mixed_tok_s_per_chip": ("tok/s per chip", "the throughput")}


def peak_edge_note(metrics, largest: int | None, *, slo: bool, search: bool = False,
                   peak: str = "peak_mixed_tok_s_per_kw") -> str | None:
    """What a peak (``peak``, a key of :data:`PEAK_AT_CONCURRENCY`: tok/s per kW, or per chip for a
    search with that objective) at ``largest``, the largest concurrency of ``workload.concurrency``
    (:func:`codesign.evaluation.list_edge`, None for a list of one value), means for one design, or
    None when its peak (``metrics["peak_concurrency"]``) is elsewhere: the efficiency was still
    rising at the edge of the list, so the true peak may lie beyond it; without an SLO (``slo``
    false), that the peak ignores latency, its TTFT (``ttft_at_peak_s`` [s]) and where to set one
    (``search``: also as a ``[[search.constraints]]`` bound). ``concurrency = [1, 1e9]`` put the
    peak at 10^9 users and a TTFT of 155 days without a word (fresh-user trial, session 43). The
    one wording of ``codesign evaluate``'s note and of :func:`front_notes`. The peak is not moved."""
    from .units import format_duration

    c = metrics.get("peak_concurrency")
    if largest is None or not (isinstance(c, numbers.Real) and math.isfinite(c) and int(c) == largest):
        return None
    what, rising = PEAK_AT_CONCURRENCY[peak]
    note = (f"the peak {what} is at {users(largest)}, the largest concurrency of workload.concurrency: "
            f"{rising} was still rising at the edge of the list, so the true peak may lie beyond it")
    if not slo:
        ttft = metrics.get("ttft_at_peak_s")
        its = (f" (its TTFT is {format_duration(float(ttft))})"
               if isinstance(ttft, numbers.Real) and math.isfinite(ttft) else "")
        note += (f"; no SLO is set, so the peak ignores latency{its}: set one in [workload.slo] (ttft, tpot; e.g. "
                 'ttft = "2 s")' + (" or as a [[search.constraints]] bound on ttft_s or tpot_s" if search else "")
                 + ", and the peak is taken over the points that meet it")
    return note


def coarse_slo_note(gap: tuple[int, int] | None, slo: str) -> str | None:
    """What a coarse concurrency list under an SLO means for one design, or None (``gap`` None):
    ``gap`` is ``(peak, next)`` of :func:`codesign.evaluation.slo_gap`, the concurrency of the peak
    at the SLO and the next larger one of ``workload.concurrency``, which misses the SLO and is more
    than :data:`~codesign.evaluation.SLO_GAP_RATIO` times it; ``slo`` the SLO as a person reads it
    (``"TTFT <= 2 s"``). The peak at the SLO is only as good as the list: ``concurrency = [1, 1e9]``
    under a TTFT SLO of 2 s took it at 1 user without a word, though the SLO allows far more users.
    Suggests the powers of 2 between the two (at least one lies there)."""
    if gap is None:
        return None
    lo, hi = gap
    twos = [2 ** k for k in range(max(lo, 1).bit_length(), hi.bit_length() + 1) if lo < 2 ** k < hi]
    eg = ", ".join(f"{c:,}" for c in twos) if len(twos) <= 5 else \
        f"{twos[0]:,}, {twos[1]:,}, …, {twos[-1]:,}"
    apart = f"{hi / lo:,.0f}" if hi / lo >= 100 else f"{hi / lo:.3g}"
    return (f"the peak tok/s per kW at the SLO is at {users(lo)} and the next concurrency of workload.concurrency, "
            f"{users(hi)}, misses the SLO ({slo}): the list is coarse there ({apart}× apart), and a concurrency "
            f"between them may meet the SLO at a higher tok/s per kW; add values between {lo:,} and {hi:,} to "
            f"workload.concurrency (e.g. powers of 2: {eg})")


#: How :func:`describe_slos` names a point metric (others by their own name).
SLO_NAMES = {"ttft_s": "TTFT", "tpot_s": "TPOT", "itl_s": "ITL", "e2e_latency_s": "E2E latency"}


def _slo_value(metric: str, value: float, fmt: str = "g") -> str:
    """A value of an SLO's point ``metric`` with its unit: a time as :func:`~codesign.units.format_time`
    writes it (µs, not us), another in ``fmt`` with its unit."""
    from .costmodel import POINT_METRICS
    from .units import format_time

    unit = POINT_METRICS.get(metric, ("", None))[0]
    return format_time(value) if unit == "s" else f"{value:{fmt}}" + (f" {unit}" if unit else "")


def describe_slos(bounds) -> str:
    """``TTFT <= 2 s, TPOT <= 50 ms``: SLO bounds as a person reads them. ``bounds``: ``(point
    metric, bound in its unit [s for a duration], sense)`` (``sense`` ``"max"``: <=, ``"min"``: >=;
    a pair without it is ``"max"``, as ``[workload.slo]``'s bounds of
    :func:`codesign.evaluation.slo_bounds`)."""
    said = []
    for metric, bound, *sense in bounds:
        op = ">=" if sense and sense[0] == "min" else "<="
        said.append(f"{SLO_NAMES.get(metric, metric)} {op} {_slo_value(metric, bound)}")
    return ", ".join(said)


def slo_miss_reason(points: dict, feasible, bounds) -> str | None:
    """Why no operating point of a design meets its SLO, when some are feasible: the best value
    each missed bound's metric reaches over the feasible points, against the bound ("no
    concurrency meets the SLO: best TPOT 1.2 ms (TPOT <= 1 ms)"). ``points``: the design's point
    metrics ``{metric: values per concurrency}``; ``feasible``: per concurrency; ``bounds``: as
    :func:`describe_slos` takes them. None when a point meets it, or none is feasible (the cost
    model's reason stands). evaluate's summary printed "—" and its ``--json`` an
    ``infeasible_reason`` of null (fresh-user trial, session 48)."""
    import numpy as np

    ok = np.asarray(feasible, dtype=bool)
    if not ok.any():
        return None
    missed = []
    for metric, bound, *sense in bounds:
        vals = np.asarray(points.get(metric, []), dtype=float)
        if vals.shape != ok.shape:
            continue
        v = vals[ok & np.isfinite(vals)]
        if not v.size:
            continue
        best = float(v.max() if sense and sense[0] == "min" else v.min())
        if (best < bound) if sense and sense[0] == "min" else (best > bound):
            missed.append(f"best {SLO_NAMES.get(metric, metric)} {_slo_value(metric, best, '.3g')} "
                          f"({describe_slos([(metric, bound, *sense)])})")
    return ("no concurrency meets the SLO: " + "; ".join(missed)) if missed else None


def tightest_slos(space: SearchSpace) -> dict[tuple[str, str], float]:
    """``{(point metric, sense): bound}``: the tightest of ``space``'s SLO bounds on each metric
    and sense (the least ``max``, the greatest ``min``), the ones that decide which points meet the
    SLO."""
    tight: dict[tuple[str, str], float] = {}
    for c in space.constraints:
        if c.slo:
            k = (c.metric, c.sense)
            tight[k] = min(tight.get(k, c.bound), c.bound) if c.sense == "max" else max(tight.get(k, c.bound), c.bound)
    return tight


def search_slo_line(spec: Spec, space: SearchSpace, figures: str = "the figures below") -> str | None:
    """The line that says a search's figures are taken at its SLO, as ``codesign evaluate`` says it
    of its own: ``"SLO ([[search.constraints]]): TTFT <= 2 s, TPOT <= 20 ms; the figures below are
    over the points that meet it"``. The bounds are the search's SLO constraints (``space``:
    ``[[search.constraints]]`` on point metrics and ``[workload.slo]``, see
    :func:`codesign.search.build_space`), the tightest of each metric and sense, which priced the
    designs and the reference alike; the source names the tables they came from. None without
    an SLO (optimize and sweep never said theirs: fresh-user trial, session 44)."""
    tight = tightest_slos(space)
    if not tight:
        return None
    own = {m for m, _ in slo_bounds(spec)}
    declared = any(c.metric in SLO_METRICS for c in spec.search.constraints) if spec.search is not None else False
    source = " and ".join(t for t, on in (("[[search.constraints]]", declared), ("[workload.slo]", bool(own))) if on)
    return (f"SLO ({source}): {describe_slos([(m, b, s) for (m, s), b in tight.items()])}; {figures} are over the "
            "points that meet it")


def front_notes(designs, noun: str = "Pareto designs", *, largest: int | None = None,
                slo: bool = True, objectives=None) -> list[str]:
    """What to keep in mind reading a front's figures, one line each ([] when nothing): how many
    designs have a modelled peak power far above their own ``chip.tdp`` (:func:`peak_power_note`,
    said of the highest), and how many peak at ``largest``, the largest concurrency of
    ``workload.concurrency`` (:func:`peak_edge_note`, said of the one with the longest TTFT at its
    peak when no SLO bounds the search, ``slo`` false; else of the first); each says how many of
    the front share it, then the fact in the words ``codesign evaluate`` gives it of one design.

    ``designs``: ``(label, metrics)`` per design (``"trial 12"``, a row's metrics as
    ``pareto.json`` gives them). A search of ``chip.tdp`` without a ``peak_power_w`` constraint
    settles at a TDP far below its designs' peak power (tok/s per kW divides by it) and the front said nothing of the
    designs' own peak power; ``concurrency = [1, 1e9]`` put every peak at 10^9 users, at a TTFT of
    155 days (fresh-user trial, session 43). Which point is the peak is not changed.

    ``objectives``: the search's objective metrics (None: tok/s per kW, the table's). The edge note
    speaks of the first of them whose peak is taken at ``peak_concurrency``
    (:data:`PEAK_AT_CONCURRENCY`), and there is none for a search with no such objective: a search
    of min TTFT and min E2E latency was told that "the peak tok/s per kW" was at the edge and that
    "the peak ignores latency", of a figure it did not search (fresh-user trial, session 46)."""
    from .evaluation import PEAK_OVER_TDP_MARGIN, peak_over_tdp

    notes = []
    n = len(designs)
    hot = [(label, m, r) for label, m in designs if (r := peak_over_tdp(m)) is not None]
    if hot:
        label, m, _ = max(hot, key=lambda h: h[2])
        k = len(hot)
        over = f"{1 + PEAK_OVER_TDP_MARGIN:g}×"
        head = (f"peaks above {over} its chip.tdp ({label})" if k == 1 else
                f"peak above {over} their chip.tdp (the highest ratio, {label})")
        notes.append(f"{k} of {n} {noun} {head}: {peak_power_note(m)}; a [[search.constraints]] bound on "
                     "peak_power_w keeps the designs within a power budget")

    def ttft(m) -> float:
        t = m.get("ttft_at_peak_s")
        return float(t) if isinstance(t, numbers.Real) and math.isfinite(t) else -math.inf

    peak = next((m for m in (["peak_mixed_tok_s_per_kw"] if objectives is None else objectives)
                 if m in PEAK_AT_CONCURRENCY), None)
    edge = [(label, m) for label, m in designs
            if peak is not None and peak_edge_note(m, largest, slo=True, peak=peak) is not None]
    if edge:
        k = len(edge)
        label, m = max(edge, key=lambda e: ttft(e[1])) if not slo else edge[0]
        which = (label if k == 1 else f"the longest TTFT at the peak, {label}" if not slo else f"e.g. {label}")
        notes.append(f"{k} of {n} {noun} {'peaks' if k == 1 else 'peak'} at the edge of the concurrency list "
                     f"({which}): {peak_edge_note(m, largest, slo=slo, search=True, peak=peak)}")
    return notes


def power_gap_warnings(spec: Spec) -> list[str]:
    """One line when the spec models power but leaves energy figures out (:func:`codesign.spec.power_gaps`)."""
    from .spec import power_gaps

    gaps = power_gaps(spec)
    if not gaps:
        return []
    return [f"the chip's power leaves out {', '.join(gaps)}: priced at 0, so power_w and tok/s per kW on "
            "the modelled power are too optimistic; give the figures (specs/technology/n4p.toml has a "
            "current node's)"]


def _reported_sensitivities(path: Path, spec: Spec, result: SearchResult) -> dict[int, tuple]:
    """Trial → ``(params, sensitivities)`` of the Pareto designs in the ``pareto.json`` at ``path``
    when it reports this study (same study name, storage and cost model: a study resumes only
    under its own spec and cost-model version, so a design with the same parameters has the same
    sensitivities); {} otherwise, or where a design's sensitivities were unavailable."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or (doc.get("study"), doc.get("storage"), doc.get("cost_model")) != (
            result.study.study_name, result.storage, jsonable(cost_model_record(spec))):
        return {}
    rows = doc.get("pareto") if isinstance(doc.get("pareto"), list) else []
    return {r["trial"]: (r.get("params"), r["sensitivities"]) for r in rows
            if isinstance(r, dict) and isinstance(r.get("trial"), int) and r.get("sensitivities") is not None}


def _plot_hv(path: Path, hv: dict, spec: Spec) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.0), dpi=120)
    if hv["trials"]:
        ax.step(hv["trials"], hv["hypervolume"], where="post", color="tab:blue")
    ax.set_xlabel("trials")
    ax.set_ylabel("hypervolume of the feasible front ↑ (objective units)")
    ref = hv.get("reference_point")
    ref_text = "none" if ref is None else "(" + ", ".join(f"{float(v):.4g}" for v in ref) + ")"
    ax.set_title(f"{spec.name or spec.path}: reference point {ref_text}", fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def param_header(key: str, kind: str | None) -> str:
    """A searched parameter's CSV header (``pareto.csv``, ``sweep_front.csv``): ``KEY [UNIT]``, the
    unit the column's values are in, the SI base unit of the parameter's kind
    (:data:`codesign.units.KINDS`: ``memory.hbm.bandwidth [B/s]``, ``chip.peak_flops.fp4 [FLOP/s]``,
    ``chip.tdp [W]``); the bare ``KEY`` for a parameter without a unit (a count such as
    ``deployment.tp``, a number-format name)."""
    return f"{key} [{kind}]" if kind else key


def csv_columns(space: SearchSpace) -> list[tuple[str, Any]]:
    """The columns of ``pareto.csv``: ``(header, cell(row))`` pairs, ``row`` one of
    :func:`build_rows`'.

    The header is a function of the spec alone (its ``[search]`` parameters and objectives),
    never of the trials: every run of a spec (one that found no feasible design, a resumed one,
    another seed) writes the same header, and so do specs that search the same parameters for
    the same objectives, whatever their constraints and reference. The columns, in order:

    1. ``trial``: the design's trial number (its spec: ``designs/trial-NNNNN.toml``).
    2. One column per searched parameter, in ``[search.params]`` order (:func:`param_header`):
       ``KEY [UNIT]`` for a quantity, its value in that unit, the SI base unit of its kind
       (``memory.hbm.bandwidth [B/s]``, 8 TB/s as ``8000000000000.0``); ``KEY`` for a count
       (``deployment.tp``) or a number-format name.
    3. The metrics: the objectives in ``[[search.objectives]]`` order, then each of :data:`SHOWN`
       that is not an objective (``peak_mixed_tok_s_per_kw``, ``min_e2e_latency_s``,
       ``min_tpot_s``, ``min_ttft_s``, ``mixed_tok_s_per_kw_at_tpot``, ``peak_power_w``,
       ``area_mm2``, ``hbm_stacks`` (whole stacks), then the peak's operating point
       ``peak_concurrency``, ``ttft_at_peak_s``, ``tpot_at_peak_s``:
       :data:`codesign.costmodel.PEAK_POINT_METRICS`), each in its unit
       (:data:`codesign.search.SEARCH_METRICS`; the name says it: ``_s`` s, ``_w`` W, ``_mm2`` mm²,
       ``_per_kw`` tok/s per kW of TDP, ``peak_concurrency`` users, ``hbm_stacks`` stacks). ``pareto.json`` has
       every metric the cost model reports but the SLOs' point metrics (:func:`slo_point_metrics`).
    4. ``METRIC_vs_reference``, design / reference, for each metric of
       :func:`codesign.search.ratio_metrics`: the objectives, then ``peak_mixed_tok_s_per_kw``,
       ``min_e2e_latency_s``, ``min_tpot_s`` and ``mixed_tok_s_per_kw_at_tpot``, each once; to
       :data:`RATIO_DIGITS` significant digits (``1.09756``, not ``1.097561340721312``; full
       precision in ``pareto.json``).
    5. ``beats_reference``: ``True`` when the design is better than the reference on every
       objective by more than :data:`~codesign.search.BEAT_TOLERANCE` (0.1% of the reference's
       value), else ``False`` (a tie within it too: ``matches_reference`` in ``pareto.json``).
    6. ``design_file``: the path of the design's spec TOML.

    A cell is empty where its value does not apply: a metric the design has no value for (NaN or
    infinite, as ``null`` in ``pareto.json``: ``mixed_tok_s_per_kw_at_tpot`` when none of its
    concurrency points is as fast as the reference's min TPOT, and always without a
    ``reference``; a metric the cost model does not report), a ratio or ``beats_reference``
    without a reference, and a ratio where either value is missing or the reference's is 0.
    """
    kinds = {p.key: p.kind for p in space.params}
    cols: list[tuple[str, Any]] = [("trial", lambda r: r["trial"])]
    for k in kinds:
        cols.append((param_header(k, kinds[k]), lambda r, k=k: _cell(r["params"].get(k, ""))))
    for m in dict.fromkeys([m for m, _ in space.objectives] + SHOWN):
        cols.append((m, lambda r, m=m: _cell(r["metrics"].get(m, ""))))
    for m in ratio_metrics(space):
        cols.append((f"{m}_vs_reference", lambda r, m=m: _ratio_cell((r.get("vs_reference") or {}).get(m, ""))))
    cols.append(("beats_reference", lambda r: "" if r.get("beats_reference") is None else r["beats_reference"]))
    cols.append(("design_file", lambda r: r.get("design_file", "")))
    return cols


def _write_csv(path: Path, rows, result: SearchResult) -> None:
    """Write ``pareto.csv``: one line per Pareto design (``pareto.json``'s order) under the
    header of :func:`csv_columns`, which depends on the spec only (a search without a feasible
    design writes the header alone)."""
    cols = csv_columns(result.space)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([h for h, _ in cols])
        for r in rows:
            w.writerow([cell(r) for _, cell in cols])


#: Significant digits of a ``*_vs_reference`` ratio in ``pareto.csv``. A ratio of two float32 metrics
#: computed in float64 printed 17 digits (``1.097561340721312``), past what either metric holds. Six
#: (``%g``'s default) still tell apart two front designs: the front lists no design another one
#: matches within :data:`codesign.search.PARETO_RESOLUTION` (0.01%), and six digits resolve 0.001%.
RATIO_DIGITS = 6


def _ratio_cell(x):
    """A ``*_vs_reference`` cell: the ratio to :data:`RATIO_DIGITS` significant digits, empty as
    :func:`_cell` where there is none."""
    x = _cell(x)
    return float(f"{x:.{RATIO_DIGITS}g}") if isinstance(x, float) else x


def _cell(x):
    """A CSV cell: empty for a metric without a value (NaN, inf, absent), as pareto.json writes null;
    a number as pareto.json (and sweep_front.csv) write it, through :func:`jsonable` (a float32
    result at its shortest digits, ``118181.69``, not the float64 widening ``118181.6875``)."""
    if isinstance(x, (float, np.floating, np.integer)):
        x = jsonable(x)
        return "" if x is None else x
    return x


def _plot(path: Path, result: SearchResult, spec: Spec) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    objs = result.space.objectives
    if len(objs) == 1:
        ykey = objs[0][0]
        xkey = "min_e2e_latency_s" if ykey != "min_e2e_latency_s" else "peak_mixed_tok_s_per_kw"
    else:
        ykey, xkey = objs[0][0], objs[1][0]
    fig, ax = plt.subplots(figsize=(7.5, 5.2), dpi=120)

    def xy(trials):
        pts = []
        for t in trials:
            m = t.user_attrs.get("metrics", {})
            x, y = m.get(xkey), m.get(ykey)
            if x is not None and y is not None:
                pts.append((x, y))
        return pts

    feasible = [t for t in result.trials if t.user_attrs.get("feasible") and satisfied(t)]
    infeasible = [t for t in result.trials if t not in feasible]
    pi = xy(infeasible)
    if pi:
        ax.scatter(*zip(*pi), s=10, color="0.75", label=f"infeasible or constraint-violating ({len(infeasible)})")
    pf = xy(feasible)
    if pf:
        ax.scatter(*zip(*pf), s=12, color="tab:blue", alpha=0.25, label=f"feasible ({len(feasible)})")
    pp = sorted(xy(result.pareto))
    if pp:
        xs, ys = zip(*pp)
        ax.step(xs, ys, where="post", color="tab:blue", lw=1.5)
        ax.scatter(xs, ys, s=28, color="tab:blue", edgecolor="k", zorder=3, label=f"Pareto front ({len(pp)})")
    ref = result.reference
    if ref and xkey in ref["metrics"] and ykey in ref["metrics"]:
        # named in the legend alone: a text label beside the star ran across the front's points
        # when the front starts just right of the reference (fresh-user trial)
        ax.scatter([ref["metrics"][xkey]], [ref["metrics"][ykey]], marker="*", s=220, color="tab:red",
                   edgecolor="k", zorder=4, label=f"{ref['name']} (reference, best per metric)")
    # an arrow on the objectives' axes alone, as on the table's columns (column_header)
    direction = dict(objs)
    ax.set_xlabel(_label(xkey, direction.get(xkey)))
    ax.set_ylabel(_label(ykey, direction.get(ykey)))
    allx = [p[0] for p in pi + pf] or [1]
    if max(allx) / max(min(allx), 1e-12) > 30:
        ax.set_xscale("log")
    ax.set_title(f"{spec.name or spec.path}: {trials(len(result.trials))}, power basis TDP")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing to label when no trial has metrics
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def fit_columns(cols, width: int, droppable: list[str], *, cheapest_first: bool = False) -> list[int]:
    """Content widths of a rich table's columns (0: left out) within ``width`` characters, where
    they fit (:func:`table_width` says how wide they make the table; wider than ``width`` when the
    narrowest widths do not fit, and the caller prints it that wide rather than cut a number).

    Args:
        cols: ``(key, header, cells, whole)`` per column: ``whole`` cells never wrap (a number
            cut to "83,4…" would be wrong); other cells may fold at their spaces (a value and its
            unit on two lines). Headers may wrap between words, never inside one.
        droppable: column keys that may be left out, the first one first.
        cheapest_first: the room left goes first to whole columns (one-line header and cells), the
            one that needs the least first, then as below (``codesign evaluate``'s table, whose
            long headers are to the right).

    Each column gets its narrowest width (its longest cell, or longest word when it may fold, and
    its longest header word); when that does not fit, ``droppable`` columns are left out one by
    one, then the foldable cells fold; the room left widens columns towards one-line headers, one
    character at a time, left to right.
    """
    def need(cells, header, whole):
        parts = cells if whole else [w for c in cells for w in c.split()]
        return max([len(c) for c in parts] + [len(w) for w in header.split()] + [1])

    total = table_width
    natural = [max([len(c) for c in cells] + [len(header)]) for _, header, cells, _ in cols]
    if total(natural) <= width:
        return natural
    keep_whole = [need(cells, header, True) for _, header, cells, _ in cols]
    ws = list(keep_whole)
    for key in droppable:
        if total(ws) <= width:
            break
        for i, c in enumerate(cols):
            if c[0] == key:
                ws[i] = 0
    if total(ws) > width:  # fold the foldable cells (values and units on two lines)
        ws = [need(cells, header, whole) if w else 0 for (_, header, cells, whole), w in zip(cols, ws)]
    room = width - total(ws)
    if cheapest_first:
        for i in sorted((i for i, w in enumerate(ws) if w), key=lambda i: natural[i] - ws[i]):
            if natural[i] - ws[i] <= room:
                room -= natural[i] - ws[i]
                ws[i] = natural[i]
    while room > 0:  # widen towards one-line headers, one character at a time, left to right
        grew = False
        for i, w in enumerate(ws):
            if w and w < natural[i] and room > 0:
                ws[i] += 1
                room -= 1
                grew = True
        if not grew:
            break
    return ws


def table_width(widths: list[int]) -> int:
    """Characters a rich table (its default box, padding 1) takes with columns of content widths
    ``widths`` (:func:`fit_columns`; 0: left out): borders, one per column and one more, and one
    character of padding each side of a column."""
    n = sum(1 for w in widths if w)
    return sum(widths) + 3 * n + 1


def print_uncut(console, table, widths: list[int]) -> None:
    """Print ``table`` on ``console`` at max(console width, its own width), never cutting a cell.

    ``widths`` are its columns' content widths (:func:`fit_columns`, as its columns were added with
    them; 0: left out). rich narrows every column alike ("1,000,0…") to fit a table into the
    console; a table wider than the console (:func:`table_width`) is instead rendered at its own
    width (``table.width`` is set to it) and printed uncropped, and the terminal wraps its lines.
    The console itself is left as it is (what is printed after the table wraps at its width).
    """
    need = table_width(widths)
    if need > console.width:
        table.width = need
        console.print(table, crop=False)
    else:
        console.print(table)


#: Terminal-table columns left out first when the table does not fit the console, most
#: expendable first (every metric stays in pareto.csv/json).
#: The mark on a reference's cell over a bound of the search (:func:`over_bounds`), explained under the table.
OVER_MARK = "*"

EXPENDABLE = ["area_mm2", "peak_power_w", "min_tpot_s", "ttft_at_peak_s", "peak_concurrency", "beats ref"]


def print_table(doc: dict, console, kinds: dict | None = None) -> None:
    """The Pareto table: searched parameters (with units), metrics, and ratios to the reference.

    No number is ever cut (the headline, tok/s per kW, least of all): each column is at least as
    wide as its longest number and its longest header word (:func:`fit_columns`); when the table
    does not fit the console, the :data:`EXPENDABLE` columns are left out first, and a line says
    which, then parameter values fold onto two lines ("3.78" over "PFLOP/s"); a table that still
    does not fit is printed wider than the console (the terminal wraps its lines) rather than cut.
    """
    from rich.table import Table

    objs = [o["metric"] for o in doc["objectives"]]
    # an arrow on the objectives' columns alone (the direction the search takes each)
    direction = {o["metric"]: o.get("direction") for o in doc["objectives"]}
    # the terminal table keeps the essentials; pareto.csv/json carry every metric
    # beside the peak tok/s per kW, the operating point it is reached at (a saturated engine's peak
    # can sit at a TTFT of many seconds: the reference's, in the flagship search)
    shown = list(objs)
    if "peak_mixed_tok_s_per_kw" in objs:
        at = objs.index("peak_mixed_tok_s_per_kw") + 1
        shown[at:at] = ["peak_concurrency", "ttft_at_peak_s"]
    shown = list(dict.fromkeys(shown + ["min_tpot_s", "peak_power_w", "area_mm2"]))
    ref = doc.get("reference") or {}
    rows = doc["pareto"]
    params = list(rows[0]["params"]) if rows else []

    def f(m, x):
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            return "—"
        if m.endswith("_s") and abs(x) >= 1000:  # a duration [s]: "155 days", not "13,353,081" (session 44)
            return format_duration(x)
        scale = SHORT.get(m, ("", 1.0))[1]
        v = x * scale
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"

    # columns (key, header, cells: the reference's row first, then each design's)
    top = ["ref"] if ref else []
    cols = [("trial", "trial", top + [str(r["trial"]) for r in rows])]
    for p in params:
        kind = (kinds or {}).get(p)
        cols.append((p, PARAM_SHORT.get(p, p.rsplit(".", 1)[-1].replace("_", " ")),
                     [""] * len(top) + [format_quantity(float(r["params"][p]), kind, digits=3) if kind
                                        else str(r["params"][p]) for r in rows]))
    for m in shown:
        cols.append((m, column_header(m, direction.get(m)),
                     ([f(m, ref["metrics"].get(m))] if ref else []) + [f(m, r["metrics"].get(m)) for r in rows]))
    if ref:
        for m in objs:
            # the arrow says which side of 1 is better (a user read 1.07 as a gain)
            cols.append((f"{m} ×ref", column_header(m, direction.get(m), ratio=True),
                         ["1" if m in ref["metrics"] else "—"]  # an unservable reference has no value
                         + [f"{r['vs_reference'][m]:.3f}" if m in r["vs_reference"] else "—" for r in rows]))
        cols.append(("beats ref", "beats ref", [""] + ["yes" if r["beats_reference"] else
                                                       "matches" if r.get("matches_reference") else "no" for r in rows]))
    # the reference is priced under none of the search's design bounds: a mark on each of its cells
    # over one (and on its label when such a metric has no column), said under the table
    over = set(over_bounds(ref.get("metrics") or {}, doc.get("constraints") or []))
    over_metrics = {c["metric"] for c in doc.get("constraints") or [] if c["name"] in over}
    if over:
        for key, _, cells in cols:
            if key in over_metrics:
                cells[0] += OVER_MARK
    merged = doc.get("duplicate_trials_merged") or 0
    unresolved = doc.get("unresolved_trials") or []
    title = (f"Pareto designs: {len(rows)} of {trials(doc['trials'])} ({doc['feasible_trials']} feasible"
             + (f"; {merged} repeat trial(s) of a listed design merged" if merged else "")
             + (f"; {len(unresolved)} within {doc.get('pareto_resolution', 1e-4):.2%} of a listed design left out"
                if unresolved else "") + ")"
             + (f", vs {ref.get('name')}" if ref else ""))

    widths = fit_columns([(key, header, cells, key not in params) for key, header, cells in cols],
                         console.width, droppable=[k for k in EXPENDABLE if k not in objs])
    if over and not all(any(k == m and w for (k, _, _), w in zip(cols, widths)) for m in over_metrics):
        cols[0][2][0] += OVER_MARK  # "ref*": a bound it is over has no column in this table
    if doc.get("constraints") is not None:  # the bounds the designs were held to (pareto.json's constraints)
        console.print(constraints_line(doc["constraints"]), highlight=False, markup=False)
    t = Table(title=title)
    for (key, header, _), w in zip(cols, widths):
        if w:
            t.add_column(escape(header), justify="left" if key == "beats ref" else "right", width=w)
    for i in range(len(top) + len(rows)):
        t.add_row(*[cells[i] for (_, _, cells), w in zip(cols, widths) if w], style="red" if i < len(top) else None)
    print_uncut(console, t, widths)  # a table still too wide for the console: at its own width
    if over:
        said = "; ".join(f"its {c['metric']} is {_valued(c['metric'], ref['metrics'][c['metric']])}, "
                         f"{'above' if 'max' in c else 'below'} the bound {_valued(c['metric'], c.get('max', c.get('min')))}"
                         for c in doc["constraints"] if c["name"] in over)
        console.print(f"{OVER_MARK} the reference is over a bound of the search ([[search.constraints]]): {said}. "
                      "It is shown as priced: the bounds hold the searched designs, not the reference.",
                      highlight=False, markup=False)
    left_out = [header for (_, header, _), w in zip(cols, widths) if not w]
    if left_out:
        console.print(f"(left out to fit {console.width} columns: {', '.join(left_out)}; pareto.csv and "
                      f"pareto.json have every metric)", highlight=False, markup=False)
    hv = doc.get("hypervolume") or {}
    if hv.get("hypervolume"):
        # the README says optimize prints it, as sweep does (fresh-user trial, session 36)
        console.print(f"hypervolume {hv['hypervolume'][-1]:.6g} after {trials(hv['trials'][-1])} (from this "
                      "run's own reference point: it follows this run's progress, it does not compare runs; "
                      "hypervolume.png)", highlight=False, markup=False)
    if not doc["feasible_trials"] and doc.get("infeasible_reasons"):
        # a reason whose numbers differ between its trials is one example of them ("e.g.")
        console.print("[red]no feasible design[/red]; most common reasons: "
                      + escape(reasons_text(doc["infeasible_reasons"])), highlight=False)
    elif line := infeasible_line(doc):  # why the other trials were not feasible, counted by reason
        console.print(line, highlight=False, markup=False)
    for note in doc.get("notes") or []:  # a TDP far below the designs' peak power, ...
        console.print(f"note: {note}", highlight=False, markup=False)
    best = rows[0] if rows else None
    if best and best.get("sensitivities"):
        st = Table(title=f"Sensitivities at trial {best['trial']} (elasticity: % change of the objective "
                         f"per 1% change of the parameter)")
        st.add_column("parameter")
        for m in objs:
            st.add_column(escape(column_header(m, direction.get(m))), justify="right")
        for p in best["sensitivities"][objs[0]]:
            st.add_row(p, *[("—" if best["sensitivities"][m].get(p) is None else f"{best['sensitivities'][m][p]:+.3f}")
                            for m in objs])
        # a searched parameter missing from the table was left out without a word (fresh-user trial,
        # session 36): JAX's gradient has no meaning across a list of choices
        discrete = [p for p in params if p not in best["sensitivities"][objs[0]]]
        if discrete:
            st.caption = (f"not shown: {', '.join(discrete)} (searched over a list of choices, where a gradient "
                          "has no meaning)")
        console.print(st)
