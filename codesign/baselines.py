"""Reference designs: a spec's model, workload and deployment on a baseline's hardware.

``[search] reference`` names either a registered baseline (``"gb200"``, from the
``codesign_baselines`` hook) or a spec file relative to the spec. :func:`reference_spec` builds the
reference :class:`~codesign.spec.Spec` that reports compare every design against, priced by the same
cost model on the same workload (a reference spec file's own ``deployment.cost_model`` gives way to
the spec's).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
from attrs import frozen

from .errors import SpecError, close_name
from .spec import Spec, load_raw, spec_from_dict


def _check_cost_model(b, attribute, value) -> None:
    """``cost_model`` is a registered-name string (checked when the record is made; the plugin
    manager names the plugin and skips its baselines)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"baseline {b.name!r}: cost_model = {value!r}; expected the name of the cost model "
                         "its efficiency knobs belong to (a non-empty string, e.g. 'analytical')")


def _check_knob_types(b, attribute, value) -> None:
    """``efficiency`` is a table of knob name (str) -> number, as a spec's ``[efficiency]`` is.
    Whether each knob exists and is in range is the cost model's to say (its ``check(spec)``), asked
    when the baseline is first used (:func:`check_baseline_knobs`). Raises ValueError when the
    record is made: the plugin manager names the plugin and skips its baselines."""
    import numbers

    from .errors import format_value

    if not isinstance(value, dict):
        raise ValueError(f"baseline {b.name!r}: efficiency = {value!r:.80}; expected a dict of knob name -> number")
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, numbers.Real) or isinstance(v, bool):
            shown = format_value(v) if isinstance(v, (str, bool, list, dict)) else repr(v)
            raise ValueError(f"baseline {b.name!r}: efficiency[{k!r}] = {shown}; expected a knob name (str) -> "
                             f"a number (a knob of cost model {b.cost_model!r})")


@frozen(kw_only=True)
class Baseline:
    """A named reference system registered through ``codesign_baselines``.

    Attributes:
        name: lowercase (``"gb200"``).
        description: one line.
        hardware: path to a TOML spec fragment with ``[chip]``, ``[memory]`` and ``[network]``.
        cost_model: the cost model the ``efficiency`` knobs belong to (a non-empty string).
        efficiency: calibrated knobs (``spec.efficiency`` keys of that cost model): knob name (str)
            -> number, in the model's own units (fractions, seconds). Anything else raises
            ValueError when the record is made (the plugin is named, its baselines skipped); a knob
            the cost model does not have, or a value outside its range, is refused by the model's
            ``check(spec)`` when the baseline is first used, as that plugin's bug
            (:func:`check_baseline_knobs`).
        provenance: where the coefficients came from (data file, its hash, rows, errors).
        plugin: the registering plugin's name (set by the plugin manager).
    """

    name: str
    description: str = ""
    hardware: Any = None
    cost_model: str = attrs.field(default="analytical", validator=_check_cost_model)
    efficiency: dict = attrs.field(factory=dict, validator=_check_knob_types)
    provenance: dict = attrs.field(factory=dict)
    plugin: str = ""


def _replace_hardware(spec_raw: dict, hw_raw: dict) -> dict:
    raw = {k: v for k, v in spec_raw.items() if k not in ("chip", "memory", "network", "search")}
    for k in ("chip", "memory", "network"):
        if k in hw_raw:
            raw[k] = hw_raw[k]
    return raw


def _replaced_origins(spec_origins: dict, hw_origins: dict) -> dict:
    """The origins of :func:`_replace_hardware`'s result: the hardware file's for its tables, the
    spec's for the rest, with the spec's merge order (the hardware's files first) so precedence
    between the spec's files still reads: a spec whose own ``mode = "disaggregated"`` overrides an
    included ``tp`` had its ``reference = "gb200"`` refused for the unread tp (session 34)."""
    from .spec import Origins

    order = [*getattr(hw_origins, "order", ()), *getattr(spec_origins, "order", ())]
    out = Origins({k: v for k, v in spec_origins.items()
                   if k[:1] not in (("chip",), ("memory",), ("network",), ("search",))}, order=order)
    out.update({k: v for k, v in hw_origins.items() if k[:1] in (("chip",), ("memory",), ("network",))})
    return out


def reference_spec(spec: Spec, name: str, *, pm=None) -> Spec:
    """The reference design ``name`` for ``spec`` (see module docstring).

    Raises:
        SpecError: ``name`` is neither a registered baseline nor a readable spec file.
    """
    return _reference_of(spec.path, name, pm=pm)


def reference_priced_by(ref: Spec, name: str, *, pm=None) -> dict[str, Any]:
    """What priced the reference ``ref`` that :func:`reference_spec` built for ``search.reference =
    name``, as a report records it beside the numbers (pareto.json's and a study's ``reference``):

    - ``cost_model``: ``{"name", "version", "plugin"}``
      (:func:`~codesign.evaluation.cost_model_record`; the spec's model, ``auto`` resolved for the
      reference),
    - ``efficiency_from``: ``{"baseline", "plugin", "calibration_version"}``
      (:func:`~codesign.evaluation.efficiency_record`) of the baseline whose calibrated knobs priced
      it: a registered baseline's own (``reference = "gb200"``: GB200's knobs, whatever the spec's
      ``efficiency_from``), else the reference spec's ``efficiency_from`` (a reference file's own,
      or the spec's for a file of hardware alone); None for the cost model's default knobs,
    - ``efficiency``: the reference spec's own ``[efficiency]`` knobs over those (``{}`` for none;
      a baseline's knobs are all in ``efficiency_from``).

    A study's report said which cost model priced the reference but not its knobs (session 41)."""
    from .evaluation import cost_model_record, efficiency_record
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    b = pm.baselines.get(name)
    # a baseline's knobs go in as the reference's [efficiency] when its cost model prices it
    # (_reference_of); otherwise the reference has the spec's own knobs
    if b is not None and b.efficiency and dict(ref.efficiency) == dict(b.efficiency):
        eff, own = efficiency_record(attrs.evolve(ref, efficiency_from=name), pm=pm), {}
    else:
        eff, own = efficiency_record(ref, pm=pm), dict(ref.efficiency)
    return {"cost_model": cost_model_record(ref, pm=pm), "efficiency_from": eff, "efficiency": own}


def reference_problems(spec_path: str, name: str) -> list[tuple[str, str, str]]:
    """The problems :func:`reference_spec` finds in the reference ``name`` of the spec file
    ``spec_path`` (``[]`` when it reads), for a spec refused before it is built: the loader
    reports them beside that spec's ``[search]`` problems (codesign.spec.load_spec)."""
    from .errors import CodesignError

    try:
        _reference_of(spec_path, name, check_knobs=False)  # the cost model is asked when the search starts
    except SpecError as exc:
        return exc.problems
    except CodesignError:  # a plugin that fails to load: said when the search starts
        return []
    return []


def _baseline_hardware(b: Baseline, pm, where: str) -> Path:
    """The hardware file of baseline ``b``, which ``where`` (the spec file) names as its reference.

    Raises:
        SpecError: at ``where``'s ``search.reference``, naming the baseline, its plugin and the
            path, when the plugin registered no hardware file or one that does not exist (the
            message named only the missing path: '/…/tpu9.toml: no such file').
    """
    who = f"baseline {b.name!r} (plugin {pm.plugin_label(b.plugin)})"
    if not b.hardware:
        raise SpecError([(where, "search.reference", f"{who} registers no hardware file; the plugin "
                                                     "cannot serve as a reference")])
    path = Path(b.hardware)
    if not path.is_file():
        raise SpecError([(where, "search.reference", f"{who} names the hardware file {str(path)!r}, which "
                                                     f"{'is not a file' if path.exists() else 'does not exist'}; "
                                                     "the plugin is broken or incompletely installed")])
    return path


def _reference_of(spec_path: str, name: str, *, pm=None, check_knobs: bool = True) -> Spec:
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    spec_raw, spec_origins = load_raw(spec_path)
    baselines = pm.baselines
    where = spec_path or "<spec>"
    if name in baselines:
        b = baselines[name]
        hw_raw, hw_origins = load_raw(_baseline_hardware(b, pm, spec_origins.get(("search", "reference")) or where))
        raw = _replace_hardware(spec_raw, hw_raw)
        if b.efficiency and b.cost_model == (raw.get("deployment", {}).get("cost_model", "analytical")):
            raw["efficiency"] = dict(b.efficiency)
        origins = _replaced_origins(spec_origins, hw_origins)
        ref = spec_from_dict(raw, file=str(b.hardware), origins=origins)
        if check_knobs and "efficiency" in raw and raw["efficiency"] == dict(b.efficiency):
            setter = spec_origins.get(("search", "reference")) or where
            check_baseline_knobs(b, ref, pm=pm, used=f"search.reference = {name!r} in {setter}")
        return attrs.evolve(ref, name=f"{name} (baseline)", path=str(b.hardware), origins=origins)
    # a relative reference is relative to the file that set `search.reference` (which may be an
    # included file), like an include path
    setter = spec_origins.get(("search", "reference")) or spec_path
    path = Path(setter).parent / name if setter else Path(name)
    if not path.exists():
        have = ", ".join(sorted(baselines)) or "none registered"
        close = close_name(name, sorted(baselines))  # 'GB200' for 'gb200'
        mean = f"; did you mean {close!r}?" if close else ""
        raise SpecError([(where, "search.reference",
                          f"{name!r} is neither a registered baseline ({have}){mean} nor a spec file (no file "
                          f"{path}: a relative path is read from the directory of the file that sets it)")])
    raw_ref, origins = load_raw(path)
    if "model" not in raw_ref or "workload" not in raw_ref:
        raw_ref, origins = _replace_hardware(spec_raw, raw_ref), _replaced_origins(spec_origins, origins)
    # priced by the spec's cost model, whatever the reference file (or the deployment it includes)
    # names: a spec that set cost_model = "toy" had its designs priced by toy and its reference by
    # the analytical model, and printed "11× the reference" (fresh-user trial, session 26)
    deployment = raw_ref.setdefault("deployment", {})
    if isinstance(deployment, dict):  # (anything else is refused by the loader, naming the file)
        mine = spec_raw.get("deployment")
        deployment["cost_model"] = mine.get("cost_model", "analytical") if isinstance(mine, dict) else "analytical"
    ref = spec_from_dict(raw_ref, file=os.path.relpath(path), origins=origins)
    # with the files that set each key, so a problem found after loading (a number format no
    # plugin registers) is named in the reference's include that wrote it, not the reference file
    return attrs.evolve(ref, name=ref.name or path.stem, path=str(path), origins=origins)


def reference_warnings(spec: Spec, *, pm=None) -> list[str]:
    """What makes the ratios to ``spec``'s ``search.reference`` compare unlike things: a reference
    spec file that brings its own model or workload (a registered baseline takes the spec's) priced
    on another model or traffic than the spec's, or serving in another mode (aggregated against
    disaggregated designs). A spec that includes the flagship and sets ISL
    200,000 was compared with GB200 at 8k/1k without a word (fresh-user trial, session 28). One line
    each; [] without a reference, for a baseline, or when the reference cannot be read (the search
    names that)."""
    from .errors import CodesignError

    if spec.search is None or not spec.search.reference:
        return []
    try:
        ref = reference_spec(spec, spec.search.reference, pm=pm)
        knobs = [dict(resolve_efficiency(s, pm=pm).efficiency) for s in (spec, ref)]
    except CodesignError:
        return []
    out = []  # the knobs line, then the unlike-case lines (model, workload), then the cost model's
    if knobs[0] != knobs[1]:
        # a spec with efficiency_from = "gb200" over the flagship's reference file (default knobs)
        # printed ×ref 0.6 without a word (fresh-user trial, session 35)
        def said(s: Spec, k: dict) -> str:
            if s.name.endswith(" (baseline)"):
                return "its calibrated knobs"
            return (f"efficiency_from = {s.efficiency_from!r}" if s.efficiency_from
                    else "its own [efficiency] knobs" if k else "the default knobs")
        out.append(f"the designs are priced with {said(spec, knobs[0])} and the reference {ref.name!r} with "
                   f"{said(ref, knobs[1])}: its ×ref ratios compare the knobs as well as the hardware. Give "
                   "both the same knobs (efficiency_from in both, or neither)")
    if ref.name.endswith(" (baseline)"):
        return out
    unlike = []
    if ref.model != spec.model:
        unlike.append(f"the reference {ref.name!r} ({ref.path}) is priced on its own model, {ref.model.name!r}, "
                   f"not this spec's {spec.model.name!r}" + ("" if ref.model.name != spec.model.name
                                                             else " (the same name, other values)"))
    if ref.deployment.mode != spec.deployment.mode:
        # a disaggregated search over the flagship's aggregated reference file compared the two
        # serving modes without a word (fresh-user trial, session 48)
        unlike.append(f"the reference {ref.name!r} ({ref.path}) serves {ref.deployment.mode}, as its own "
                      f"[deployment] says, and this spec's designs serve {spec.deployment.mode}")
    # not its SLO: the search holds the reference to this spec's SLOs, as it holds the designs
    # (codesign.search.reference_envelope), whatever the reference file's own [workload.slo]
    a, b = attrs.evolve(ref.workload, name="", slo=None), attrs.evolve(spec.workload, name="", slo=None)
    if a != b:
        diff = [f"{f.name} {_shown(getattr(a, f.name))} (this spec {_shown(getattr(b, f.name))})"
                for f in attrs.fields(type(a)) if getattr(a, f.name) != getattr(b, f.name)]
        unlike.append(f"the reference {ref.name!r} ({ref.path}) is priced on its own workload: "
                      + ", ".join(diff))
    if unlike:
        unlike[-1] += ("; its ×ref ratios compare unlike cases. Name a baseline (reference = \"gb200\": it "
                       "takes this spec's model and workload) or a reference file for this case")
    out += unlike
    from .pluginmanager import get_plugin_manager

    named = _own_cost_model(ref.path)
    mine = spec.deployment.cost_model
    known = mine == "auto" or mine in (pm or get_plugin_manager()).cost_models  # else refused, not warned
    if named is not None and named != mine and known:
        out.append(f"the reference {ref.name!r} ({ref.path}) names deployment.cost_model {named!r}; it is "
                   f"priced by this spec's, {mine!r}, so that designs and reference "
                   "compare on one model (the reference file's choice is not used)")
    return out


def _shown(value) -> str:
    """A workload value as a person reads it: an SLO as ``TTFT 150 ms, TPOT 4 ms``, none as ``none``
    (the warning printed the Python repr ``Slo(ttft=0.15, tpot=0.004)``; fresh-user trial, session 31)."""
    from .errors import format_value
    from .spec import Slo
    from .units import format_quantity

    if value is None:
        return "none"
    if isinstance(value, Slo):
        parts = [f"{k.upper()} {format_quantity(v, 's')}" for k, v in (("ttft", value.ttft), ("tpot", value.tpot))
                 if v is not None]
        return ", ".join(parts) or "none"
    return format_value(value)


def _own_cost_model(path: str | None) -> str | None:
    """The ``deployment.cost_model`` a reference spec file (or a file it includes) sets, or None."""
    if not path:
        return None
    try:
        raw, _ = load_raw(path)
    except Exception:  # noqa: BLE001 -- read once already; a problem there is reported by the loader
        return None
    dep = raw.get("deployment")
    named = dep.get("cost_model") if isinstance(dep, dict) else None
    return named if isinstance(named, str) else None


def check_baseline_knobs(b: Baseline, spec: Spec, *, pm, knobs: dict | None = None, used: str = "") -> None:
    """Ask the cost model the baseline ``b`` calibrates (``b.cost_model``, which prices ``spec``)
    whether it takes ``b``'s efficiency knobs (``knobs``: those of them in effect, by default all),
    through the model's optional ``check(spec)`` on ``spec`` with those knobs, without pricing.

    A knob the model does not have, or a value outside its range, is the baseline plugin's bug: it
    was refused at the user's spec, which only named the baseline (``efficiency_from = "tpu9"``,
    ``search.reference = "tpu9"``), exit 2 (fresh-user trial, session 40). The answer is kept on the
    plugin manager per baseline and knobs, so a search asks once, not once per batch.

    Args:
        used: where the user's spec named the baseline, for the message (``"efficiency_from =
            'tpu9' in my.toml"``).

    Raises:
        PluginBugError: naming the baseline, its plugin and distribution, each refused knob with its
            value and the cost model's reason (exit 3).
        PluginError: ``b.cost_model`` is not registered (:meth:`~codesign.pluginmanager.PluginManager.cost_model`).
    """
    from .errors import PLUGIN_EXCEPTIONS, CodesignError, PluginBugError, format_value

    knobs = dict(b.efficiency) if knobs is None else dict(knobs)
    if not knobs:
        return
    key = (b.name, b.plugin, b.cost_model, tuple(sorted(knobs.items())))
    checked = getattr(pm, "checked_baselines", None)
    if checked is not None and key in checked:
        return
    model = pm.cost_model(b.cost_model)
    check = getattr(model, "check", None)
    if check is not None:
        try:
            check(attrs.evolve(spec, efficiency=knobs, efficiency_from=None))
        except SpecError as exc:
            bad = [(k, m) for _, k, m in exc.problems
                   if k.startswith("efficiency.") and k.removeprefix("efficiency.") in knobs]
            if bad:
                said = "; ".join(f"{k} = {format_value(knobs[k.removeprefix('efficiency.')])}: {m}" for k, m in bad)
                raise PluginBugError(f"baseline {b.name!r} (plugin {pm.plugin_label(b.plugin)}) registers "
                                     f"efficiency knobs that its cost model {b.cost_model!r} refuses"
                                     + (f" ({used})" if used else "") + f": {said}") from None
            # anything else is the spec's own, said when it is priced
        except CodesignError:
            pass  # the spec's own problem (not the knobs'), said when it is priced
        except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - the cost model's bug, as _ask_check names it
            raise PluginBugError(f"{pm.cost_model_label(b.cost_model)} raised in check(): "
                                 f"{type(exc).__name__}: {exc}") from exc
    if checked is not None:
        checked.add(key)


def resolve_efficiency(spec: Spec, *, pm=None, cost_model: str | None = None) -> Spec:
    """Apply ``efficiency_from``: the named baseline's calibrated knobs, overridden by the spec's
    own ``[efficiency]`` keys. Returns the spec unchanged when it names none (idempotent).

    Args:
        cost_model: the cost model a command line chose instead of ``deployment.cost_model``
            (``evaluate --cost-model``); ``None``: the spec's own. The knobs are checked against the
            model that prices, since they belong to one cost model: ``evaluate --cost-model
            roofline`` on a spec with ``efficiency_from = "gb200"`` priced without GB200's knobs and
            said nothing (fresh-user trial, session 40).

    Raises:
        SpecError: the name is not a registered baseline, or its knobs belong to another cost
            model than the one that prices; or the spec sets ``[efficiency]`` knobs and the model
            that prices declares it reads none (:attr:`~codesign.costmodel.CostModelInfo.reads_efficiency`).
            Each names the file that set the key, the model chosen and where (``--cost-model`` or
            ``deployment.cost_model``), and what to change.
        PluginBugError: the baseline's knobs in effect (those the spec does not override) are ones
            its cost model refuses (:func:`check_baseline_knobs`): the baseline plugin's bug.
    """
    if not spec.efficiency_from and not spec.efficiency:
        return spec
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    own = spec.deployment.cost_model
    chosen = cost_model if cost_model is not None else own
    # who chose the model, as the user wrote it
    said = f"--cost-model {chosen!r}" if cost_model is not None else f"deployment.cost_model {chosen!r}"
    if spec.efficiency and not spec.efficiency_from:
        _check_knobs_read(spec, pm, cost_model, said)
    if not spec.efficiency_from:
        return spec
    if chosen != "auto" and chosen not in pm.cost_models:
        # an unregistered name (a typo, a plugin not installed) is named by
        # codesign.evaluation.check_names, as for [efficiency]: told "does not read its knobs", a
        # user removed efficiency_from only to learn the model does not exist (fresh-user trial)
        return spec
    b = pm.baselines.get(spec.efficiency_from)
    where = spec.origin("efficiency_from")
    if b is None:
        have = ", ".join(sorted(pm.baselines)) or "none registered"
        close = close_name(spec.efficiency_from, sorted(pm.baselines))  # 'GB200' for 'gb200'
        mean = f"; did you mean {close!r}?" if close else ""
        raise SpecError([(where, "efficiency_from",
                          f"{spec.efficiency_from!r} is not a registered baseline ({have}){mean}")])
    # --cost-model auto prices with the model it picks for this spec (evaluate names it); the spec's
    # own "auto" is judged as written, since a search's reference takes the knobs by that name
    # (_reference_of) and designs and reference must share them
    target = _resolved(pm, chosen, spec) if cost_model == "auto" else chosen
    if b.cost_model != target:
        todo = ["remove efficiency_from"]
        if cost_model is not None and own == b.cost_model:
            todo.append(f"drop --cost-model (the spec's deployment.cost_model, {own!r}, reads them)")
        elif cost_model is not None:
            todo.append(f"price with --cost-model {b.cost_model}")
        else:
            todo.append(f"set deployment.cost_model = {b.cost_model!r}")
        shown = (f"{said} picks {target!r}, which does not read its knobs" if target != chosen
                 else f"{said} names no one model to give them to" if target == "auto"
                 else f"{said} does not read its knobs")
        raise SpecError([(where, "efficiency_from", f"baseline {b.name!r} calibrates cost model {b.cost_model!r}, "
                                                    f"and {shown}; {' or '.join(todo)}")])
    if spec.efficiency:  # the baseline's model reads knobs; the spec's own keys are its too
        _check_knobs_read(spec, pm, cost_model, said)
    check_baseline_knobs(b, spec, pm=pm, knobs={k: v for k, v in b.efficiency.items() if k not in spec.efficiency},
                         used=f"efficiency_from = {b.name!r} in {spec.origin('efficiency_from')}")
    return attrs.evolve(spec, efficiency={**b.efficiency, **spec.efficiency}, efficiency_from=None)


def _resolved(pm, name: str, spec: Spec) -> str | None:
    """``name``, or the model ``"auto"`` picks for ``spec``; None when none can (said elsewhere)."""
    from .errors import CodesignError

    try:
        return pm.resolve_cost_model(name, spec)
    except CodesignError:
        return None


def _check_knobs_read(spec: Spec, pm, cost_model: str | None, said: str) -> None:
    """Refuse ``[efficiency]`` knobs when the model that prices reads none
    (:attr:`~codesign.costmodel.CostModelInfo.reads_efficiency`): they were dropped silently. An
    unregistered name is left to :func:`codesign.evaluation.check_names`."""
    own = spec.deployment.cost_model
    name = _resolved(pm, cost_model if cost_model is not None else own, spec)
    info = pm.cost_models.get(name) if name is not None else None
    if info is None or info.reads_efficiency:
        return
    keys = sorted(spec.efficiency)
    todo = ["remove [efficiency]"]
    if cost_model is not None:
        mine = _resolved(pm, own, spec)
        if mine is not None and mine != name and (o := pm.cost_models.get(mine)) is not None and o.reads_efficiency:
            todo.append(f"drop --cost-model (the spec's deployment.cost_model, {own!r}, reads them)")
    else:
        todo.append("choose a deployment.cost_model that reads them")
    shown = f"{said} picks {name!r}, which" if (cost_model if cost_model is not None else own) == "auto" else said
    raise SpecError([(spec.origin(f"efficiency.{keys[0]}"), "efficiency",
                      f"[efficiency] sets {', '.join(keys)}, and {shown} reads no efficiency knobs (it would "
                      f"price without them); {' or '.join(todo)}")])
