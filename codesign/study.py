"""Design-space studies: declarative families of searches, grids and evaluations with a report.

A study is a TOML file of steps, each one of:

* ``optimize``: a ``codesign optimize`` run of a spec (resumable: its study journal lives in the
  study's output directory), optionally compared with rows of the published Jalapeño table;
* ``grid``: a vectorised evaluation of a spec over the product of parameter values (one cost-model
  call), drawn as heatmaps of a metric, one panel per value of a ``facet`` key;
* ``curves``: throughput against interactivity (InferenceMAX style) for several specs, with the
  measured points of a CSV overlaid.

``run_study`` writes ``DIR/report.md`` (figures as PNG beside it) and ``DIR/data.json`` holding every
number the report shows. ``quick=True`` runs the same study on small budgets (tests, CI).

What priced each number is recorded where it can differ: each step names its own spec (specs, for
a curves step), and each spec its own ``deployment.cost_model`` and ``efficiency_from``, so an
optimize or grid step's ``data.json`` entry carries ``cost_model`` (:func:`~codesign.evaluation.cost_model_record`)
and ``efficiency_from`` (:func:`~codesign.evaluation.efficiency_record`), a curves step's each series,
and the report says the same in words (:func:`priced_by`). An optimize step's ``reference`` (its
pareto.json's) carries the reference's own (:func:`~codesign.baselines.reference_priced_by`: a
registered baseline is priced with its calibrated knobs, not the designs').

Example::

    name = "kv-locality"
    title = "When does keeping the KV cache local pay?"
    [[steps]]
    kind = "grid"
    name = "sram-vs-hbm"
    spec = "../specs/kv-locality.toml"
    x = { key = "memory.sram.capacity", values = ["0 MiB", "256 MiB", "1 GiB"] }
    y = { key = "memory.hbm.bandwidth", values = ["2 TB/s", "4 TB/s", "8 TB/s"] }
    facet = { key = "workload.isl", values = [8192, 32768, 131072] }
    metric = "peak_mixed_tok_s_per_kw"
"""

from __future__ import annotations

import collections
import csv
import itertools
import json
import math
import os
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np
from attrs import field, frozen

from .costmodel import DESIGN_METRICS, SUMMARY_METRICS
from .errors import CodesignError, SpecError, close_name, format_value
from .evaluation import at_slo, cost_model_record, efficiency_record, evaluate, jsonable
# FORMAT_KEY: spec keys holding number-format names, not a numeric grid axis
from .search import FORMAT_KEY, repeated_value, unmodelled_key_problem, unmodelled_metric_problem
from .spec import (SPEC_TABLES, WHOLE_MINIMUM, PosInt, context_message, context_tokens, deployment_value_problem,
                   is_file_name, load_raw, load_spec, quantity_allows_zero, quantity_kind, spec_from_dict,
                   toml_key_path, unread_key_problem)
from .units import QuantityError, format_quantity, parse_quantity


@frozen(kw_only=True)
class Axis:
    key: str
    values: tuple[Any, ...]
    label: str = ""


@frozen(kw_only=True)
class Published:
    """Rows of ``jalapeno_published.csv`` to set beside an optimize step's results."""

    file: str
    model: str
    design: str = "jalapeno"
    baseline: str = "gb200"


@frozen(kw_only=True)
class Step:
    kind: Literal["optimize", "grid", "curves"]
    name: str
    title: str = ""
    spec: str | None = None
    specs: tuple[str, ...] = ()
    trials: PosInt = 200
    quick_trials: PosInt = 40
    published: Published | None = None
    x: Axis | None = None
    y: Axis | None = None
    facet: Axis | None = None
    metric: str = "peak_mixed_tok_s_per_kw"
    measured: str | None = None
    measured_filter: dict[str, str] = field(factory=dict)
    labels: tuple[str, ...] = ()
    #: Per spec of a curves step: a baseline whose calibrated knobs price it ("" for the spec's own).
    efficiency_from: tuple[str, ...] = ()
    #: Curves step: deployment choices (``{"deployment.tp" = [1, 2, 4, 8]}``); each spec is
    #: evaluated at every combination and its throughput-interactivity Pareto frontier is drawn,
    #: as InferenceMAX draws the frontier over parallel configurations.
    envelope: dict[str, tuple[Any, ...]] = field(factory=dict)


@frozen(kw_only=True)
class Study:
    name: str
    title: str = ""
    description: str = ""
    steps: tuple[Step, ...]
    path: str = field(default="", metadata={"internal": True})


def load_study(path: str | os.PathLike) -> Study:
    """Load and validate a study TOML (errors name the file and key path).

    Everything that can be checked without running is checked here, so a long study fails before
    it starts: spec files exist, and load for optimize and grid steps; a grid step's ``metric`` is
    known and each axis ``key`` is a numeric spec key its cost model can vary, with a non-empty
    ``values`` list valid for that key.

    Raises:
        SpecError: a malformed study, a missing spec file, a bad grid step; each problem names the
            study file and the key path (``steps.0.x.values.1``).
    """
    raw, origins = load_raw(path)
    spec_tables = [k for k in SPEC_TABLES if k in raw]
    if "steps" not in raw and spec_tables:
        raise SpecError([(str(path), "", "not a study: it has no [[steps]] and reads as a spec ("
                          + ", ".join(f"[{k}]" for k in spec_tables[:3]) + "); run a spec with `codesign "
                          "optimize` or `codesign evaluate`, and give `codesign study run` a study file "
                          "(studies/*.toml)")])
    st = spec_from_dict(raw, file=os.path.relpath(path), origins=origins, cls=Study)
    st = attrs.evolve(st, path=str(path))
    base = Path(path).parent
    problems = []
    if not st.steps:  # `steps = []` wrote an empty report (fresh-user trial of session 16)
        problems.append((str(path), "steps", "a study needs at least one [[steps]] entry"))
    first: dict[str, int] = {}  # step name -> index of the first step of that name
    for i, s in enumerate(st.steps):
        if not is_file_name(s.name):  # "../x" wrote outside the study's output directory
            problems.append((str(path), f"steps.{i}.name", f"{s.name!r} names the step's output subdirectory "
                             "and figure, so it must be one file name (not empty, no '/', '\\', '.' or '..')"))
        elif s.name in first:  # two steps of one name overwrote each other's outputs and data.json entry
            problems.append((str(path), f"steps.{i}.name", f"{s.name!r} is also the name of steps.{first[s.name]}: "
                             "each step needs its own name (it names the step's outputs and data.json entry)"))
        first.setdefault(s.name, i)
        for j, f in enumerate([s.spec] if s.spec else []):  # curves skip missing specs with a note
            if not (base / f).is_file():
                problems.append((str(path), f"steps.{i}.spec" + (f"s.{j}" if s.specs else ""),
                                 f"no such spec file {f!r}"))
        if s.kind == "optimize" and not s.spec:
            problems.append((str(path), f"steps.{i}", "an optimize step needs spec"))
        if s.kind == "grid" and not (s.spec and s.x and s.y):
            problems.append((str(path), f"steps.{i}", "a grid step needs spec, x and y"))
        if s.kind == "curves" and not s.specs:
            problems.append((str(path), f"steps.{i}", "a curves step needs specs"))
        for name in ("labels", "efficiency_from"):  # one per spec, or none: a short list gave the
            given = getattr(s, name)                # rest no label or, silently, the default knobs
            if s.kind == "curves" and s.specs and given and len(given) != len(s.specs):
                problems.append((str(path), f"steps.{i}.{name}", f"lists {len(given)} entries for "
                                 f"{len(s.specs)} specs: give one per spec (\"\" for none), or leave it out"))
        problems += _curves_envelope_problems(s, f"steps.{i}", str(path), base)
        if s.kind == "grid":
            problems += _grid_problems(s, f"steps.{i}", str(path), base)
        if s.kind in ("optimize", "grid") and s.spec and (base / s.spec).is_file():
            try:  # a step's spec is refused now, not after the steps before it have run
                load_spec(base / s.spec)
            except SpecError as exc:
                problems += exc.problems
    if problems:
        raise SpecError(problems)
    return st


def unit_notes(st: Study) -> list[str]:
    """How the sizes and bandwidths written in bits of a loaded study were read, one line each:
    a grid axis's values (``'studies/x.toml: steps.0.x.values.1 = "256 Mib" (memory.sram.capacity)
    is read as 32 MiB (Mib is mebibits; write MiB for mebibytes)'``) and its steps' specs' own
    (:func:`codesign.spec.unit_notes`, each line once), by the rule of
    :func:`codesign.spec.value_bits_note` (``network.*`` keys are left out: link rates are quoted
    in bits). ``codesign study run`` prints them on stderr, as ``evaluate`` prints a spec's."""
    from .spec import unit_notes as spec_notes
    from .spec import value_bits_note

    base = Path(st.path).parent
    out = []
    for i, s in enumerate(st.steps):
        for name in ("x", "y", "facet"):
            axis = getattr(s, name)
            for j, v in enumerate(axis.values if axis is not None else ()):
                if said := value_bits_note(axis.key, v):
                    out.append(f'{st.path}: steps.{i}.{name}.values.{j} = "{v}" ({axis.key}) {said}')
        for f in [s.spec] if s.spec else s.specs:
            try:
                out += spec_notes(load_spec(base / f))
            except CodesignError:  # a curves step's missing or bad spec: said when the step runs
                continue
    return list(dict.fromkeys(out))


def _curves_envelope_problems(s: Step, where: str, file: str, base: Path) -> list[tuple[str, str, str]]:
    """What is wrong with a curves step's ``envelope``: each key a numeric ``deployment.*`` spec key
    (a misspelt one gets the closest), read by every spec of the step in its serving mode
    (:func:`codesign.spec.unread_key_problem`), and each value one that spec's ``[deployment]``
    accepts (:func:`codesign.spec.deployment_value_problem`), as a search's envelope is judged. Only
    whole numbers >= 1 were allowed, so ``acceptance_rate`` could not be varied, and no range or
    mode was checked: ``speculative_tokens = 40`` was priced, and a disaggregated spec's curve was
    labelled with a ``deployment.tp`` nothing read (fresh-user trial, session 34)."""
    from .spec import Deployment, Pool

    specs = []
    for f in s.specs:
        if (base / f).is_file():  # a missing one is skipped with a note
            try:
                specs.append(load_spec(base / f))
            except SpecError:  # named when the step runs
                pass
    keys = [f"deployment.{a.name}" for a in attrs.fields(Deployment) if not attrs.has(_key_type(f"deployment.{a.name}"))]
    keys += [f"deployment.{pool}.{a.name}" for pool in ("prefill", "decode") for a in attrs.fields(Pool)]
    # numbers, counts and switches (an override array is numeric: true is 1)
    numeric = [k for k in keys if _numeric_key(k) or _key_type(k) is bool]
    problems = []
    for key, values in s.envelope.items():
        at = toml_key_path(*where.split("."), "envelope", key)
        if FORMAT_KEY.match(key):
            problems.append((file, at, "a curves envelope varies numeric deployment keys; give each number "
                                       "format its own spec in specs"))
            continue
        if key not in numeric:
            close = close_name(key, numeric, cutoff=0.6)  # difflib's default
            problems.append((file, at, "not a numeric deployment key" + (f"; did you mean {close!r}?" if close
                                                                         else " (deployment.tp, deployment.ep, …)")))
            continue
        if not values:
            problems.append((file, at, "list at least one value"))
            continue
        for spec in specs:
            if why := unread_key_problem(spec.deployment, key, list(s.envelope)):
                problems.append((file, at, f"{why} ({spec.path})"))
                continue
            for j, v in enumerate(values):
                if isinstance(v, str) or (why := deployment_value_problem(spec, key, v)):
                    problems.append((file, f"{at}.{j}", why if not isinstance(v, str) else
                                     f"expected a number (got {v!r})"))
                    break
            else:
                if rep := _repeated(values, None):
                    problems.append((file, f"{at}.{rep[0]}", rep[1]))
    return list(dict.fromkeys(problems))  # a bad value is bad for every spec alike: said once


#: Metrics a grid step can draw: one value per design (summary metrics over the concurrency sweep,
#: and design metrics).
GRID_METRICS = (*SUMMARY_METRICS, *DESIGN_METRICS)


def _grid_problems(s: Step, where: str, file: str, base: Path) -> list[tuple[str, str, str]]:
    """What is wrong with a grid step's metric and axes, found before the study starts.

    Every axis key must be a scalar numeric spec key (``memory.sram.capacity``, ``workload.isl``,
    ``deployment.tp``) that the spec's cost model can vary; every value must be valid for that key
    (a quantity of the key's kind such as ``"256 MiB"``, or a number; whole numbers >= 1 for counts);
    ``values`` must not be empty.
    """
    problems = []
    if s.metric not in GRID_METRICS:
        problems.append((file, f"{where}.metric", f"unknown metric {s.metric!r}; expected one of "
                                                  f"{', '.join(GRID_METRICS)}"))
    variable, spec = _variable_keys(base / s.spec) if s.spec and (base / s.spec).is_file() else (None, None)
    varied = [a.key for a in (s.x, s.y, s.facet) if a is not None]
    for name in ("x", "y", "facet"):
        axis = getattr(s, name)
        if axis is None:
            continue
        at = f"{where}.{name}"
        try:
            kind = quantity_kind(axis.key)
            hint = _key_type(axis.key)
        except KeyError:
            problems.append((file, f"{at}.key", f"no such spec key {axis.key!r}"))
            continue
        if FORMAT_KEY.match(axis.key) or hint not in (int, float, *WHOLE_MINIMUM):
            problems.append((file, f"{at}.key", f"{axis.key!r} is not a numeric spec key (a grid axis "
                                                "varies a quantity or a number)"))
            continue
        if variable is not None and axis.key not in variable:
            # not the keys the spec's serving mode leaves unread (an aggregated spec's pools)
            can = [k for k in variable if _numeric_key(k) and not (spec and unread_key_problem(spec.deployment, k, varied))]
            problems.append((file, f"{at}.key", f"the spec's cost model cannot vary {axis.key!r} in a grid; "
                                                f"it can vary {', '.join(can)}"))
            continue
        if spec is not None and (why := unmodelled_key_problem(spec, axis.key, varied)):
            problems.append((file, f"{at}.key", f"{axis.key!r}: {why} ({spec.path})"))
            continue
        if not axis.values:
            problems.append((file, f"{at}.values", "list at least one value"))
            continue
        if axis.key.startswith("workload."):
            kind = None  # workload lengths are plain token counts
        zero = kind is not None and quantity_allows_zero(axis.key)
        bad = False
        for j, v in enumerate(axis.values):
            msg = _value_problem(v, kind, hint, zero)
            if not msg and spec is not None and axis.key.startswith(("deployment.", "workload.")):
                # the [deployment]/[workload] field checks, as a search's values get them (an
                # acceptance_rate of 2 or speculative_tokens = 40 were priced; session 34)
                msg = deployment_value_problem(spec, axis.key, v)
            if msg:
                bad = True
                problems.append((file, f"{at}.values.{j}", msg))
        if not bad and (rep := _repeated(axis.values, kind)):
            problems.append((file, f"{at}.values.{rep[0]}", rep[1]))
    seen = set()
    for name in ("x", "y", "facet"):  # one axis overwrote the other, and the report read ×1.000 (session 34)
        axis = getattr(s, name)
        if axis is not None and axis.key in seen:
            problems.append((file, f"{where}.{name}.key", f"{axis.key!r} is already an axis of this grid; "
                                                          "each axis varies another key"))
        seen.add(axis.key if axis is not None else None)
    if spec is not None and s.metric in GRID_METRICS and (why := unmodelled_metric_problem(spec, s.metric)):
        problems.append((file, f"{where}.metric", f"{why} ({spec.path})"))
    if not problems and s.spec and (base / s.spec).is_file():
        problems += _context_problems(s, where, file, base / s.spec)
    return problems


def _context_problems(s: Step, where: str, file: str, spec_path: Path) -> list[tuple[str, str, str]]:
    """The ``workload.isl``/``workload.osl`` axis values of a grid step whose request (with the
    other length's largest value, an axis's or the spec's) is longer than the spec's model serves
    (``model.context_length``): such a cell cannot be served, so it is named, not priced."""
    axes = {a.key: (name, a) for name in ("x", "y", "facet")
            if (a := getattr(s, name)) is not None and a.key in ("workload.isl", "workload.osl")}
    if not axes:
        return []
    try:
        spec = load_spec(spec_path)
    except CodesignError:  # the step itself reports it
        return []
    ctx = context_tokens(spec.model.context_length)
    if ctx is None:
        return []
    most = {"workload.isl": spec.workload.isl, "workload.osl": spec.workload.osl}
    most.update({k: max(a.values) for k, (_, a) in axes.items()})
    problems = []
    for key, (name, a) in axes.items():
        for j, v in enumerate(a.values):
            isl, osl = (v, most["workload.osl"]) if key == "workload.isl" else (most["workload.isl"], v)
            if isl + osl > ctx:
                problems.append((file, f"{where}.{name}.values.{j}",
                                 context_message(int(isl), int(osl), ctx, spec.origin("model.context_length"),
                                                 spec.model.name)))
    return problems


def _repeated(values, kind: str | None) -> tuple[int, str] | None:
    """``(index, why)`` of the first value of a grid axis or curves envelope that repeats an
    earlier one (``"1 TB"`` and ``"1000 GB"`` alike; true is 1): it was priced twice and drawn as
    one point ("deployment.tp ∈ [1, 1]"; fresh-user trial, session 35), as a search refuses it."""
    rep = repeated_value([parse_quantity(v, kind, allow_zero=True) if kind else float(v) for v in values])
    if rep is None:
        return None
    return rep[0], f"{format_value(values[rep[0]])} is the same value as {format_value(values[rep[1]])}; list each value once"


def _numeric_key(key: str) -> bool:
    """A scalar, numeric spec key (what a grid axis can vary)."""
    try:
        quantity_kind(key)
        return not FORMAT_KEY.match(key) and _key_type(key) in (int, float, *WHOLE_MINIMUM)
    except KeyError:
        return False


def _key_type(key: str):
    """The declared type of a spec key (``PosInt``, ``OutputTokens``, ``float``, ``str``, ...); KeyError if none."""
    import types
    import typing

    from .spec import Spec

    tp: Any = Spec
    for part in key.split("."):
        if not attrs.has(tp):
            raise KeyError(key)
        hint = typing.get_type_hints(tp).get(part)
        if hint is None:
            raise KeyError(key)
        args = [t for t in typing.get_args(hint) if t is not type(None)]
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        tp = args[0] if union and len(args) == 1 else hint
    return tp


def _value_problem(v, kind: str | None, hint, allow_zero: bool = True) -> str:
    """Why ``v`` is not a valid grid value for a key of unit ``kind`` and type ``hint`` ("" if it
    is); zero only where the spec takes it (``allow_zero``: no SRAM yes, no HBM bandwidth no)."""
    if kind:
        try:
            parse_quantity(v, kind, allow_zero=allow_zero)
        except QuantityError as exc:
            return str(exc)
        return ""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return f"expected a number (got {v!r})"
    if hint in WHOLE_MINIMUM and not (v >= WHOLE_MINIMUM[hint] and float(v).is_integer()):
        return f"expected a whole number >= {WHOLE_MINIMUM[hint]} (got {v!r})"
    if v < 0:
        return f"expected a number >= 0 (got {v!r})"
    return ""


def _variable_keys(spec_path: Path) -> tuple[list[str] | None, Spec | None]:
    """The keys the spec's cost model can vary and the spec (``None`` when that cannot be told
    here: the spec or its cost model fails, which the step itself then reports)."""
    from .pluginmanager import get_plugin_manager

    try:
        spec = load_spec(spec_path)
    except CodesignError:
        return None, None
    try:
        pm = get_plugin_manager()
        return pm.cost_model_parameters(spec.deployment.cost_model, spec=spec), spec
    except CodesignError:
        return None, spec


def _axis_values(axis: Axis, quick: bool) -> list:
    kind = quantity_kind(axis.key) if not axis.key.startswith("workload.") else None
    vals = [parse_quantity(v, kind, allow_zero=True) if kind else v for v in axis.values]
    if quick and len(vals) > 3:
        vals = [vals[0], vals[len(vals) // 2], vals[-1]]
    return vals


def _fmt_axis(axis: Axis, v) -> str:
    kind = quantity_kind(axis.key) if not axis.key.startswith("workload.") else None
    return format_quantity(float(v), kind, digits=3) if kind else f"{v:g}" if isinstance(v, (int, float)) else str(v)


def run_study(path: str | os.PathLike, out: str | os.PathLike, *, quick: bool = False,
              progress=None, note=None) -> dict:
    """Run every step of the study at ``path`` and write its report into ``out``.

    ``progress(step name)`` hears each step as it starts; ``note(text)`` that an optimize step
    resumes the completed trials of its stored study (:func:`codesign.search.run_search`).

    Returns:
        The ``data.json`` document.
    """
    st = load_study(path)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(path).parent
    data: dict[str, Any] = {"schema_version": 1, "study": st.name, "title": st.title, "quick": quick, "steps": {}}
    md = [f"# {st.title or st.name}", ""]
    if st.description:
        md += [st.description.strip(), ""]
    md += [f"Generated by `codesign study run {path}{' --quick' if quick else ''}`. Every number below "
           f"is also in `data.json`; figures are PNG files beside this report.", ""]
    for step in st.steps:
        if progress:
            progress(step.name)
        if step.kind == "optimize":
            section, d = _optimize(step, base, out, quick, note=note)
        elif step.kind == "curves":
            section, d = _curves(step, base, out, quick, note=note)
        else:
            section, d = _grid(step, base, out, quick)
        md += section + [""]
        data["steps"][step.name] = d
    (out / "data.json").write_text(json.dumps(jsonable(data), indent=2), encoding="utf-8")
    (out / "report.md").write_text("\n".join(md), encoding="utf-8")
    return data


def priced_by(spec: Spec) -> dict[str, Any]:
    """What prices ``spec`` (before :func:`~codesign.baselines.resolve_efficiency`), as a study's
    ``data.json`` records it beside the numbers: ``{"cost_model": {"name", "version", "plugin"}
    (:func:`~codesign.evaluation.cost_model_record`, as pareto.json, sweep_front.json and
    ``evaluate --json`` give it), "efficiency_from": {"baseline", "plugin", "calibration_version"}
    or None (:func:`~codesign.evaluation.efficiency_record`)}``. Per step (per series of a curves
    step), since each spec names its own ``deployment.cost_model`` and ``efficiency_from``."""
    return {"cost_model": cost_model_record(spec), "efficiency_from": efficiency_record(spec)}


def _priced_by_md(priced: dict) -> str:
    """The cost model of :func:`priced_by` in words: ``cost model `analytical` version V (plugin P)``."""
    cm = priced["cost_model"]
    return (f"cost model `{cm['name']}`" + (f" version {cm['version']}" if cm["version"] else "")
            + (f" (plugin {cm['plugin']})" if cm["plugin"] else ""))


def _knobs_md(own: int, priced: dict) -> str:
    """The efficiency knobs of :func:`priced_by` (or of a search's reference,
    :func:`~codesign.baselines.reference_priced_by`) in words: a baseline's calibrated knobs (its
    calibration version and plugin), the spec's ``own`` ``[efficiency]`` knobs (how many), or the
    cost model's defaults; own knobs over a baseline's are counted."""
    eff = priced["efficiency_from"]
    if eff is None:
        return (f"its own [efficiency] knobs ({own}, the rest the cost model's defaults)" if own
                else "the cost model's default efficiency knobs")
    cal = ", ".join(x for x in (f"calibration {eff['calibration_version']}" if eff["calibration_version"] else "",
                                f"plugin {eff['plugin']}" if eff["plugin"] else "") if x)
    return (f"{eff['baseline']}'s calibrated efficiency knobs (`efficiency_from = \"{eff['baseline']}\"`"
            + (f"; {cal}" if cal else "") + ")"
            + (f", {own} of them overridden by its own [efficiency]" if own else ""))


def _optimize_priced_md(spec: Spec, priced: dict, reference: dict | None) -> str:
    """What priced an optimize step's designs and its reference, in words: the cost model, then each
    one's efficiency knobs. The reference's are its own (``reference``, pareto.json's, carries them:
    :func:`~codesign.baselines.reference_priced_by`): a registered baseline's calibrated knobs, or a
    reference file's; the report named the designs' knobs alone (session 41)."""
    designs = _knobs_md(len(spec.efficiency), priced)
    if not reference:
        return f"Designs priced by {_priced_by_md(priced)}, with {designs}."
    ref = _knobs_md(len(reference.get("efficiency") or {}), reference)
    who = f"the reference {reference['name']} with {ref}"
    if reference["cost_model"] == priced["cost_model"]:
        if ref == designs:
            return f"Designs and reference priced by {_priced_by_md(priced)}, both with {designs}."
        return f"Designs and reference priced by {_priced_by_md(priced)}; the designs with {designs}, {who}."
    # cost_model = "auto" picks a model per spec
    return (f"Designs priced by {_priced_by_md(priced)}, with {designs}; the reference {reference['name']} by "
            f"{_priced_by_md(reference)}, with {ref}.")


def _spec_link(spec: Path, report_dir: Path) -> str:
    """A Markdown link to ``spec`` from the report in ``report_dir`` (wherever ``--out`` puts it)."""
    rel = Path(os.path.relpath(spec, report_dir)).as_posix()
    return f"[`{rel}`]({rel})"


# ------------------------------------------------------------------------------- optimize
def _data_path(file: str, base: Path) -> Path:
    """``file`` from the study's directory ``base``; a path into the shared data (a ``published``
    table or a ``measured`` overlay: ``../../shared/data/jalapeno_published.csv``) is read from
    ``$CODESIGN_SHARED_DATA`` where that is set (a checkout whose shared data is elsewhere; the
    default is the checkout's ``../shared/data``)."""
    from .validate import shared_data_dir

    posix = Path(file).as_posix()
    if os.environ.get("CODESIGN_SHARED_DATA") and "shared/data/" in posix:
        return shared_data_dir() / posix.split("shared/data/", 1)[1]
    return base / file


def _published(pub: Published, base: Path) -> dict[str, dict[str, float]]:
    path = _data_path(pub.file, base)
    if not path.is_file():
        raise CodesignError(f"published table {path} not found"
                            + ("" if "shared/data/" not in Path(pub.file).as_posix() else
                               " (a path into the shared data is read from $CODESIGN_SHARED_DATA where it is set)"))
    out: dict[str, dict[str, float]] = {}
    with path.open() as fh:
        for r in csv.DictReader(fh):
            if r["model"] == pub.model and r["system"] in (pub.design, pub.baseline):
                v = float(r["value"])
                metric = r["metric"]
                if metric == "min_tpot_ms":
                    metric, v = "min_tpot_s", v / 1e3
                if metric == "mixed_tok_s_per_kw_at_baseline_min_tpot":
                    metric = "mixed_tok_s_per_kw_at_tpot"
                out.setdefault(r["system"], {})[metric] = v
    return out


TABLE = [("peak_mixed_tok_s_per_kw", "peak mixed tok/s per kW", 1.0, "max"),
         ("min_e2e_latency_s", "min E2E latency [s]", 1.0, "min"),
         ("min_tpot_s", "min TPOT [ms]", 1e3, "min"),
         ("mixed_tok_s_per_kw_at_tpot", "tok/s per kW at the baseline's min TPOT", 1.0, "max")]


def _optimize(step: Step, base: Path, out: Path, quick: bool, note=None):
    from .report import write_outputs
    from .search import run_search

    spec = load_spec(base / step.spec)
    sdir = out / step.name  # created by the search once the spec's [search] has been accepted
    trials = step.quick_trials if quick else step.trials
    result = run_search(spec, trials=trials, seed=None, out_dir=sdir, storage=None, note=note)
    doc = write_outputs(spec, result, sdir)
    priced = priced_by(spec)  # pareto.json's cost_model, and the designs' knobs
    ref = (doc.get("reference") or {}).get("metrics", {})
    # the design the report explains: the Pareto design with the best first objective
    best = doc["pareto"][0] if doc["pareto"] else None
    lines = [f"## {step.title or step.name}", "",
             f"`codesign optimize` of {_spec_link(base / step.spec, out)}: {doc['trials']} trials, "
             f"{doc['feasible_trials']} feasible, "
             f"{len(doc['pareto'])} on the Pareto front; reference: {doc['reference']['name'] if doc.get('reference') else 'none'} "
             f"(each metric at its best deployment).", "",
             _optimize_priced_md(spec, priced, doc.get("reference")), "",
             f"![Pareto front]({step.name}/pareto.png)", ""]
    d: dict[str, Any] = {"pareto": doc["pareto"], "reference": doc.get("reference"), "trials": doc["trials"], **priced}
    if best:
        m = best["metrics"]
        pub = _published(step.published, base) if step.published else {}
        lines += ["| metric | reference (ours) | best design (ours) | ours: design / reference |"
                  + (" published: baseline | published: Jalapeño | published ratio |" if pub else ""),
                  "|---|---|---|---|" + ("---|---|---|" if pub else "")]
        rows = []
        for key, label, scale, better in TABLE:
            r, x = ref.get(key), m.get(key)
            ratio = (x / r) if (r and x is not None and r == r and x == x) else None
            row = {"metric": key, "reference": r, "design": x, "ratio": ratio}
            cells = [label, _n(r, scale), _n(x, scale), _n(ratio, 1, 3)]
            if pub:
                pb, pj = pub.get(step.published.baseline, {}).get(key), pub.get(step.published.design, {}).get(key)
                pr = (pj / pb) if (pb and pj) else None
                row.update({"published_baseline": pb, "published_design": pj, "published_ratio": pr})
                cells += [_n(pb, scale), _n(pj, scale), _n(pr, 1, 3)]
            rows.append(row)
            lines.append("| " + " | ".join(cells) + " |")
        d["table"] = rows
        lines += ["", _explain(spec, best, result, sdir), ""]
        best_file = sdir / "designs" / f"trial-{best['trial']:05d}.toml"
        (sdir / "best-design.toml").write_text(best_file.read_text(), encoding="utf-8")
        d["explanation"] = _breakdown(best_file)
        lines += _breakdown_md(d["explanation"])
    else:
        lines.append("No feasible design was found.")
    return lines, d


def _n(x, scale=1.0, digits=4):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    v = x * scale
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}g}"


def _explain(spec, best, result, sdir) -> str:
    moved = []
    for p in result.space.params:
        v = best["params"][p.key]
        moved.append(f"`{p.key}` = {format_quantity(float(v), p.kind, digits=3) if p.kind else v}")
    return "Winning design (best on the first objective): " + ", ".join(moved) + "."


def _breakdown(design_path: Path) -> dict:
    """Where time goes in each phase of a design, at its lowest and highest concurrency."""
    spec = load_spec(design_path)
    ev = evaluate(spec)
    out = {}
    for j in (0, len(ev.concurrency) - 1):
        if not ev.feasible[0, j]:
            continue
        c = int(ev.concurrency[j])
        out[str(c)] = {k: float(ev.points[k][0, j]) for k in (
            "ttft_s", "tpot_s", "decode_compute_s", "decode_memory_s", "decode_network_s",
            "prefill_compute_s", "prefill_memory_s", "prefill_network_s") if k in ev.points}
    return out


def _breakdown_md(bd: dict) -> list[str]:
    if not bd:
        return []
    lines = ["Where time goes (per decode step and per prefill, milliseconds, the cost model's breakdown "
             "metrics: compute and memory each summed over the pass, network added; how compute and "
             "memory combine into a step is the cost model's):", "",
             "| concurrency | decode compute | decode memory | decode network | TPOT | prefill compute | prefill memory | prefill network | TTFT |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c, r in bd.items():
        lines.append(f"| {c} | " + " | ".join(_n(r.get(k), 1e3) + " ms" for k in (
            "decode_compute_s", "decode_memory_s", "decode_network_s", "tpot_s",
            "prefill_compute_s", "prefill_memory_s", "prefill_network_s", "ttft_s")) + " |")
    return lines


# ----------------------------------------------------------------------------------- grid
def _cell(metric: str, v: float) -> str:
    if metric.endswith("_s"):
        return f"{v * 1e3:.3g} ms"
    return f"{v / 1e3:.3g}k" if abs(v) >= 1e4 else f"{v:.3g}"


#: Relative margin above the TDP before a grid design's peak power counts as over its budget (†).
PEAK_POWER_RTOL = 1e-3


def _grid(step: Step, base: Path, out: Path, quick: bool):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spec = load_spec(base / step.spec)
    xs, ys = _axis_values(step.x, quick), _axis_values(step.y, quick)
    fs = _axis_values(step.facet, quick) if step.facet else [None]
    combos = list(itertools.product(fs, ys, xs))
    overrides = {step.x.key: np.asarray([c[2] for c in combos], dtype=np.float64),
                 step.y.key: np.asarray([c[1] for c in combos], dtype=np.float64)}
    if step.facet:
        overrides[step.facet.key] = np.asarray([c[0] for c in combos], dtype=np.float64)
    ev = evaluate(spec, overrides)
    summ = at_slo(spec, ev).summary()  # at the spec's [workload.slo], where it sets one
    vals = summ[step.metric] if step.metric in summ else ev.design[step.metric]
    grid = np.asarray(vals, dtype=np.float64).reshape(len(fs), len(ys), len(xs))
    # designs over the chip's own budgets (area, power at full rates) are drawn but marked †
    over = np.zeros(len(combos), dtype=bool)
    if spec.chip.area is not None:
        over |= ev.design["area_mm2"] > spec.chip.area.max * 1e6 + 1e-6
    # each design's own TDP (a grid may vary chip.tdp), with room for the technology figures'
    # rounding: they are given to 3-4 digits and derived to put GB200 at its TDP, which they do
    # to 1200.058 W (specs/technology/n4p.toml); that was marked † as over its own budget
    over |= ev.design["peak_power_w"] > np.asarray(ev.design["tdp_w"], dtype=np.float64) * (1 + PEAK_POWER_RTOL)
    over = over.reshape(grid.shape)
    fig, axes = plt.subplots(1, len(fs), figsize=(4.2 * len(fs) + 1, 3.8), dpi=110, squeeze=False)
    vmin, vmax = np.nanmin(grid) if np.isfinite(grid).any() else 0, np.nanmax(grid) if np.isfinite(grid).any() else 1
    for k, f in enumerate(fs):
        ax = axes[0, k]
        im = ax.imshow(grid[k], origin="lower", aspect="auto", vmin=vmin, vmax=vmax, cmap="viridis")
        ax.set_xticks(range(len(xs)), [_fmt_axis(step.x, v) for v in xs], rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(ys)), [_fmt_axis(step.y, v) for v in ys], fontsize=7)
        ax.set_xlabel(step.x.label or step.x.key)
        if k == 0:
            ax.set_ylabel(step.y.label or step.y.key)
        if f is not None:
            ax.set_title(f"{step.facet.label or step.facet.key} = {_fmt_axis(step.facet, f)}", fontsize=9)
        for i in range(len(ys)):
            for j in range(len(xs)):
                v = grid[k, i, j]
                txt = "×" if not np.isfinite(v) else _cell(step.metric, v)
                if over[k, i, j]:
                    txt += "†"
                ax.text(j, i, txt, ha="center", va="center", fontsize=6,
                        color="w" if np.isfinite(v) and v < (vmin + vmax) / 2 else "k")
    from .costmodel import display_unit, metric_unit
    from .report import ARROWS

    # the mapped metric's unit and own better direction (a heatmap has no objective): a design metric
    # without one (tdp_w, chips) was labelled "tdp_w [] ↓", its unit blank and an arrow it has not
    unit, better = metric_unit(step.metric)
    fig.colorbar(im, ax=axes[0, :].tolist(), label=f"{step.metric} [{display_unit(unit)}] {ARROWS.get(better or '', '')}".strip())
    fig.suptitle(step.title or step.name, fontsize=10)
    png = out / f"{step.name}.png"
    fig.savefig(png, bbox_inches="tight")
    plt.close(fig)
    priced = priced_by(spec)
    d = {"x": {"key": step.x.key, "values": xs}, "y": {"key": step.y.key, "values": ys},
         "facet": {"key": step.facet.key, "values": fs} if step.facet else None,
         "metric": step.metric, "values": grid.tolist(), "over_budget": over.tolist(), **priced}
    # why each × is one (the cost model's reason, or the core's for a deployment no framework runs):
    # a grid over TP 3, 8 and 128 drew × with no word of why (fresh-user trial, session 33)
    why = np.asarray([r if r else "" for r in (ev.reasons or [""] * len(combos))], dtype=object)
    why = np.where(np.isfinite(grid.reshape(-1)), "", why).reshape(grid.shape)
    d["infeasible_reasons"] = why.tolist()
    lines = [f"## {step.title or step.name}", "", f"`{step.metric}` of {_spec_link(base / step.spec, out)} over "
             f"{step.x.key} × {step.y.key}" + (f", one panel per {step.facet.key}" if step.facet else "")
             + f" ({len(combos)} designs in one vectorised call; × marks an infeasible design, † one "
             f"over the chip's area or power budget: {int(over.sum())} of {over.size}).", "",
             f"Priced by {_priced_by_md(priced)}, with {_knobs_md(len(spec.efficiency), priced)}.", "",
             f"![{step.name}]({step.name}.png)", ""]
    reasons = collections.Counter(r for r in why.reshape(-1) if r)
    for r, n in reasons.most_common(5):
        lines.append(f"- × ({n} design{'s' if n != 1 else ''}): {r}")
    if len(reasons) > 5:
        lines.append(f"- × ({sum(reasons.values()) - sum(n for _, n in reasons.most_common(5))} more designs, "
                     f"{len(reasons) - 5} other reasons: data.json's infeasible_reasons)")
    # the gain from the x axis at each facet, in words
    for k, f in enumerate(fs):
        g = grid[k]
        if np.isfinite(g[:, 0]).any() and np.isfinite(g[:, -1]).any():
            gain = np.nanmax(g[:, -1]) / np.nanmax(g[:, 0])
            lines.append(f"- {('' if f is None else f'{step.facet.key} = {_fmt_axis(step.facet, f)}: ')}"
                         f"going from {_fmt_axis(step.x, xs[0])} to {_fmt_axis(step.x, xs[-1])} of "
                         f"{step.x.key} changes the best {step.metric} by ×{gain:.3f}.")
    return lines, d


# --------------------------------------------------------------------------------- curves
def _plain_num(v):
    return int(v) if isinstance(v, (int, float, np.floating)) and float(v).is_integer() else v


def _curves(step: Step, base: Path, out: Path, quick: bool, note=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5), dpi=120)
    d: dict[str, Any] = {"series": {}, "measured": {}}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    missing = []
    unserved: list[tuple[str, str]] = []  # (label, why) of the specs with no point to draw
    knobs: dict[str, list[str]] = {}  # cost model in words -> each spec's label and knobs
    for i_spec, f in enumerate(step.specs):
        if not (base / f).is_file():
            missing.append(f)
            if note:
                note(f"warning: curves step {step.name}: {base / f} not found; no curve for it")
            continue
        spec = load_spec(base / f)
        eff_from = step.efficiency_from[i_spec] if i_spec < len(step.efficiency_from) else ""
        if eff_from:
            spec = attrs.evolve(spec, efficiency_from=eff_from)
        keys = list(step.envelope)
        combos = list(itertools.product(*[step.envelope[k] for k in keys])) or [()]
        overrides = {k: np.asarray([c[i] for c in combos], dtype=np.float64) for i, k in enumerate(keys)}
        ev = evaluate(spec, overrides or None)
        ok = at_slo(spec, ev).feasible  # the points that meet the spec's [workload.slo], where it sets one
        label = step.labels[i_spec] if i_spec < len(step.labels) else (spec.name or Path(f).stem)
        priced = priced_by(spec)
        knobs.setdefault(_priced_by_md(priced), []).append(f"{label} with {_knobs_md(len(spec.efficiency), priced)}")
        if not ok.any():  # nothing to draw: said, not plotted on a log axis (exit 3; session 34)
            why = (next((r for r in ev.reasons if r), "") or "no point is feasible") if not ev.feasible.any() \
                else "no point meets the spec's [workload.slo]"
            unserved.append((label, why))
            d["series"][label] = {"concurrency": [], "interactivity_tok_s_user": [], "mixed_tok_s_per_chip": [],
                                  "deployment": [], "infeasible_reason": why, **priced}
            continue
        x = ev.points["interactivity_tok_s_user"][ok]
        y = ev.points["mixed_tok_s_per_chip"][ok]
        cc = np.broadcast_to(ev.concurrency, ok.shape)[ok]
        cfg = np.repeat(np.arange(len(combos)), ok.shape[1]).reshape(ok.shape)[ok]
        # frontier: no other point has both more interactivity and more throughput
        order = np.argsort(-x)
        keep, best = [], -np.inf
        for i in order:
            if y[i] > best:
                keep.append(i)
                best = y[i]
        keep = np.asarray(sorted(keep, key=lambda i: x[i]), dtype=int)
        kind = f"model, {eff_from} calibration" if eff_from else "model"
        color = colors[i_spec % len(colors)]
        if len(combos) > 1:
            ax.scatter(x, y, s=6, color=color, alpha=0.25)
        ax.plot(x[keep], y[keep], "-o", ms=3, color=color, label=f"{label} ({kind})")
        x, y = x[keep], y[keep]
        configs = [{k: _plain_num(combos[cfg[i]][j]) for j, k in enumerate(keys)} for i in keep]
        d["series"][label] = {"concurrency": cc[keep].tolist(), "interactivity_tok_s_user": x.tolist(),
                              "mixed_tok_s_per_chip": y.tolist(), "deployment": configs, **priced}
    no_measured = None
    if step.measured:
        mpath = _data_path(step.measured, base)
        if not mpath.is_file():  # the curves stand without it; the report says it is missing
            no_measured = mpath
        else:
            with mpath.open() as fh:
                rows = [r for r in csv.DictReader(fh) if all(r.get(k) == v for k, v in step.measured_filter.items())]
            by_hw: dict[str, list] = {}
            for r in rows:
                try:
                    by_hw.setdefault(r["hardware"], []).append((float(r["median_intvty_tok_s_user"]),
                                                                float(r["tput_per_gpu_tok_s"])))
                except (KeyError, ValueError):
                    continue
            for j, (hw, pts) in enumerate(sorted(by_hw.items())):
                ax.scatter(*zip(*pts), s=10, marker="x", alpha=0.6, color=colors[(j + 5) % len(colors)],
                           label=f"{hw} measured (InferenceMAX)")
                d["measured"][hw] = pts
    ax.set_xlabel("interactivity [tok/s/user] →  (1 / TPOT)")
    ax.set_ylabel("mixed tok/s per chip ↑")
    if any(v["mixed_tok_s_per_chip"] for v in d["series"].values()) or d["measured"]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3, which="both")
    ax.set_title(step.title or step.name)
    fig.tight_layout()
    fig.savefig(out / f"{step.name}.png")
    plt.close(fig)
    if no_measured is not None:
        measured = (f"without measured points: {no_measured} not found (a path into the shared data is read from "
                    "$CODESIGN_SHARED_DATA where it is set).")
    elif step.measured:
        measured = "with the measured InferenceMAX points overlaid as crosses."
    else:
        measured = "without measured points."
    lines = [f"## {step.title or step.name}", "",
             "Throughput per chip against interactivity (model: each spec's frontier over "
             + (", ".join(f"{k} ∈ {list(v)}" for k, v in step.envelope.items()) or "its deployment")
             + " and the concurrency sweep; faint dots are the dominated configurations), " + measured,
             "", f"![{step.name}]({step.name}.png)", ""]
    lines += [f"Priced by {cm}: " + "; ".join(who) + "." for cm, who in knobs.items()] + ([""] if knobs else [])
    lines += [f"- {label}: no curve, {why}." for label, why in unserved] + ([""] if unserved else [])
    # a spec file that is not there was skipped: said, not dropped (it was, silently: the list of
    # missing specs was overwritten by the measured file's; fresh-user trial, session 35)
    lines += [f"- {f}: no curve, the spec file is not found." for f in missing] + ([""] if missing else [])
    if missing:
        d["missing_specs"] = list(missing)
    if no_measured is not None:
        d["measured_missing"] = str(no_measured)
    return lines, d
