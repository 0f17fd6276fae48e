"""Spec → cost model → metrics: the one place the core calls a cost-model plugin.

The core knows no particular cost model: it looks up ``deployment.cost_model`` among the
registered ones, calls it inside a guard (a plugin that raises, or returns NaN or negative values
on points it calls feasible, is named in a :class:`~codesign.errors.PluginError`), and returns the
:class:`~codesign.costmodel.Evaluation`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Mapping

import numpy as np

from .costmodel import DESIGN_METRICS, NAN_DESIGN_METRICS, POINT_METRICS, Evaluation
from .errors import PLUGIN_EXCEPTIONS, CodesignError, PluginBugError, PluginError, close_name, format_value
from .spec import Spec, absent_tier_problem

SCHEMA_VERSION = 1


def evaluate(spec: Spec, overrides: Mapping[str, Any] | None = None, *, cost_model: str | None = None,
             pm=None, apply_tdp: bool = True) -> Evaluation:
    """Price ``spec`` (and the ``n`` designs ``overrides`` describe) with its cost model: the one
    call every command makes (a search, a sweep, ``validate``, a study), and the one to script with::

        from codesign import load_spec
        from codesign.evaluation import evaluate
        ev = evaluate(load_spec("specs/examples/gb200-gpt-oss-120b.toml"),
                      {"memory.hbm.bandwidth": np.array([6e12, 7e12, 8e12])})   # 3 designs, B/s
        ev.points["tpot_s"]        # (3, c) seconds; NaN where ev.feasible is False

    Args:
        spec: a loaded spec (:func:`codesign.load_spec`).
        overrides: ``None`` (price the spec alone, ``n = 1``), or spec key path -> values, one per
            design: an array of shape ``(n,)`` (a list, or a scalar / length-1 array for the same
            value on every design). Numeric keys in SI units as plain numbers (B, B/s, FLOP/s, W,
            s: ``8e12``, not ``"8 TB/s"``; ``codesign.units.parse_quantity`` converts), name keys as
            strings (number formats such as ``deployment.kv_cache_format``,
            ``network.scaleup_topology``). Which keys a model can vary: its ``parameters()``
            (:meth:`~codesign.pluginmanager.PluginManager.cost_model_parameters`).
        cost_model: use this registered cost model instead of ``deployment.cost_model``;
            ``"auto"`` picks the most accurate loaded model that supports the spec
            (:meth:`~codesign.pluginmanager.PluginManager.select_cost_model`).
        pm: the plugin manager (default: the process's, :func:`~codesign.pluginmanager.get_plugin_manager`).
        apply_tdp: mark points whose modelled power is above the TDP infeasible
            (:func:`mark_over_tdp`, the default in every command); ``False`` gives the cost model's
            own feasibility (the plugin kit's monotonicity checks, :mod:`codesign.testing`).

    Returns:
        An :class:`~codesign.costmodel.Evaluation` of the ``n`` designs over the workload's ``c``
        concurrencies: ``points`` metric -> ``(n, c)`` (units in the names: ``ttft_s`` [s],
        ``mixed_tok_s_per_kw`` [tok/s/kW]; NaN on infeasible points), ``feasible`` ``(n, c)``,
        ``design`` metric -> ``(n,)``, ``reasons`` (``n`` strings), ``point_reasons`` ``(n, c)``.
        Designs whose deployment no framework serves (:func:`deployment_problems`), and with
        ``apply_tdp`` points above the TDP, are infeasible with their reason.

    Raises:
        OverrideError: (a ``ValueError``) ``overrides`` is not what this takes (:func:`check_overrides`):
            a value that is no number for a numeric key, more than one dimension, arrays of
            different lengths; the message names the override key and what was expected.
        SpecError: an unknown number-format or cost-model name (:func:`check_names`); the cost
            model's ``check(spec)`` refuses the spec (the analytical model's ``[efficiency]`` knobs);
            ``efficiency_from`` names no baseline (:func:`~codesign.baselines.resolve_efficiency`).
        CodesignError: the cost model cannot vary an override key.
        PluginError: the cost model is missing or cannot price this spec; PluginBugError (a
            PluginError) when it raises or breaks the contract (:func:`check_contract`), or an
            ``efficiency_from`` baseline's knobs are ones its model refuses. The message names the
            model (or baseline) and its plugin.
    """
    from .pluginmanager import get_plugin_manager

    from .baselines import resolve_efficiency

    overrides, n = check_overrides(overrides)
    pm = pm or get_plugin_manager()
    spec = resolve_efficiency(spec, pm=pm, cost_model=cost_model)  # the knobs of the model that prices
    check_names(spec, pm=pm, cost_model=cost_model, overrides=overrides)
    name = cost_model_name(spec, cost_model=cost_model, pm=pm)
    info = pm.cost_models.get(name)
    if info is not None and info.supports is not None and cost_model != "auto" \
            and spec.deployment.cost_model != "auto":
        try:
            ok = bool(info.supports(spec))
        except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001
            raise PluginBugError(f"{pm.cost_model_label(name)} raised in "
                              f"supports(): {type(exc).__name__}: {exc}") from exc
        if not ok:
            # name where the choice was made, and what the spec asks for (the roofline example on a
            # disaggregated spec was refused with neither; noticed in session 32)
            where = (f"--cost-model {cost_model}: " if cost_model is not None
                     else f"{spec.origin('deployment.cost_model')}: deployment.cost_model: ")
            asks = f"{spec.deployment.mode} serving of {spec.model.name}"
            raise PluginError(f"{where}{pm.cost_model_label(name)} declares it cannot price this spec "
                              f"({asks}); choose another deployment.cost_model or 'auto'")
    model = pm.cost_model(name)
    info = pm.cost_models[name]
    who = pm.cost_model_label(name)
    _ask_check(model, spec, who)
    try:
        ev = model.evaluate(spec, pm.number_formats, overrides)
    except CodesignError:
        raise
    except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - a plugin bug (sys.exit too) must not become a traceback
        raise PluginBugError(f"{who} raised {type(exc).__name__}: {exc}") from exc
    check_contract(ev, name, pm.plugin_label(info.plugin), n_designs=n,
                   concurrency=spec.workload.concurrency)
    ev = mark_unservable(ev, deployment_problems(spec, overrides))
    return mark_over_tdp(ev) if apply_tdp else ev


def check_overrides(overrides: Mapping[str, Any] | None) -> tuple[dict[str, np.ndarray] | None, int]:
    """The overrides :func:`evaluate` takes, checked and shaped as the cost-model contract gives them
    to a model: ``(arrays, n)``, every value an array of shape ``(n,)`` (a scalar or a length-1 array
    repeated to ``n``), a numeric key's values as numbers (an object array of numbers as float64).
    ``None`` (or an empty dict) gives ``(overrides, 1)``.

    A bad override was the caller's input blamed on the cost model ("cost model 'analytical' ...
    raised ValueError: could not convert string to float", a plugin's bug, exit 3; fresh-user trial,
    session 40). Values are not judged beyond their type and shape: NaN and inf pass (``codesign
    validate`` sends ``deployment.max_batch_size = inf`` for "no limit"), as does a key no spec has
    (the cost model refuses the keys it cannot vary).

    Raises:
        OverrideError: (a ``ValueError``) naming the override key and what was expected: ``overrides``
            not a mapping; a key that is no string; a value that is no number for a numeric spec key
            (:func:`codesign.spec.key_takes_names`; SI units: ``8e12`` for 8 TB/s), no name for a
            name key (a number format, ``network.scaleup_topology``); more than one dimension; an
            empty array; arrays of different lengths (other than 1).
    """
    from .errors import OverrideError
    from .spec import key_takes_names

    if not overrides:
        return overrides, 1
    if not isinstance(overrides, Mapping):
        raise OverrideError(f"overrides: expected a dict of spec key path -> array of shape (n,), "
                            f"got {type(overrides).__name__}")
    arrays: dict[str, np.ndarray] = {}
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise OverrideError(f"overrides key {key!r}: expected a spec key path (str), e.g. 'memory.hbm.bandwidth'")
        where = f"overrides[{key!r}]"
        a = np.asarray(value)
        if a.ndim > 1:
            raise OverrideError(f"{where}: expected one value per design, shape (n,); got shape {a.shape}")
        if a.size == 0:
            raise OverrideError(f"{where}: expected one value per design, shape (n,) with n >= 1; got an empty array")
        try:
            names = key_takes_names(key)
        except KeyError:
            names = None  # no spec key: the cost model says whether it can vary it
        if names is False and a.dtype.kind not in "biuf":
            floats = _as_floats(a)
            if floats is None:
                bad = next((x for x in a.ravel().tolist() if not isinstance(x, numbers.Real)), a.ravel()[0])
                raise OverrideError(f"{where}: expected numbers{_si_hint(key, bad)}")
            a = floats
        elif names and a.dtype.kind not in "UO":
            raise OverrideError(f"{where}: expected names (str), one per design; got {a.dtype} values such as "
                                f"{format_value(a.ravel()[0].item())}")
        elif names and a.dtype.kind == "O":
            bad = [x for x in a.ravel().tolist() if x is not None and not isinstance(x, str)]
            if bad:
                raise OverrideError(f"{where}: expected names (str), one per design; got {format_value(bad[0])}")
        arrays[key] = a
    lengths = {k: a.size for k, a in arrays.items() if a.ndim == 1 and a.size != 1}
    if len(set(lengths.values())) > 1:
        said = ", ".join(f"{k!r} {n}" for k, n in lengths.items())
        raise OverrideError(f"overrides: arrays of different lengths ({said}); expected one value per design, "
                            "the same n for every key (or a scalar / length 1, the same for every design)")
    n = next(iter(lengths.values()), 1)
    return {k: (a if a.shape == (n,) else np.repeat(a.reshape(1), n)) for k, a in arrays.items()}, n


def _si_hint(key: str, bad) -> str:
    """``" in B/s (SI units); got '8 TB/s', which codesign.units.parse_quantity('8 TB/s', 'B/s')
    reads as 8e+12"``: the unit a numeric override is in and what the caller gave."""
    from .spec import quantity_kind
    from .units import parse_quantity

    unit = quantity_kind(key)
    out = (f" in {unit} (SI units)" if unit else "") + f"; got {format_value(bad)}"
    if unit and isinstance(bad, str):
        try:
            out += f", which codesign.units.parse_quantity({bad!r}, {unit!r}) reads as {parse_quantity(bad, unit, allow_zero=True):g}"
        except Exception:  # noqa: BLE001 - a hint only: no quantity of that kind
            pass
    return out


def _as_floats(a: np.ndarray) -> np.ndarray | None:
    """``a`` (an override of a numeric key that is no numeric array) as float64 when it is an object
    array of numbers, else None: strings ("8 TB/s") and values float() refuses."""
    if a.dtype.kind != "O" or any(isinstance(x, (str, bytes)) for x in a.ravel().tolist()):
        return None
    try:
        return a.astype(np.float64)
    except (TypeError, ValueError):
        return None


#: The keys :func:`deployment_problems` reads (each pool's under ``deployment.decode`` and
#: ``deployment.prefill`` in disaggregated serving): a search that varies none of them tries one
#: deployment rule set for every design.
DEPLOYMENT_RULE_KEYS = ("deployment.tp", "deployment.ep", "deployment.dp_attention", "deployment.pp",
                        "deployment.multinode_tp", "network.scaleup_domain",
                        *(f"deployment.{pool}.{k}" for pool in ("decode", "prefill")
                          for k in ("tp", "ep", "dp_attention", "chips")))


def deployment_problems(spec: Spec, overrides: Mapping[str, Any] | None = None) -> list[str]:
    """Why each design of ``spec`` (and the ``n`` designs ``overrides`` describe) is a deployment no
    serving framework runs, whatever a cost model makes of it: one ``"; "``-joined string per
    design, ``""`` when it is servable. The rules read the spec's own keys (``deployment.tp``,
    ``pp``, ``ep``, ``dp_attention``, the pools of a disaggregated spec, ``multinode_tp``,
    ``network.scaleup_domain``; each taken from ``overrides`` when given) against the model:

    * TP shards whole attention heads: ``tp`` divides ``model.num_attention_heads`` (vLLM and
      SGLang refuse any other: "Total number of attention heads must be divisible by tensor
      parallel size").
    * A TP group stays in one scale-up domain unless ``deployment.multinode_tp`` lets it span them.
    * A pipeline stage holds at least one layer: ``pp <= model.num_layers``.
    * EP shards routed experts over the chips of a stage: ``ep`` at most the model's experts (1 for a
      dense model) and a divisor of the stage's ``tp × dp_attention`` chips.
    * A disaggregated pool's chips are whole instances of ``tp × dp_attention × pp``.

    :func:`evaluate` marks these designs infeasible for every cost model (a third-party model, or
    the roofline example, priced TP 3 on 64 heads, TP 1000 and PP 1000; noticed in session 32).
    The rules run as array masks over every design; messages are written once per distinct design
    that breaks one, so a million-design sweep costs a few strings, not a million."""
    found, index = _broken_rules(spec, overrides)
    texts = np.asarray(["; ".join(m for _, m in pairs) for pairs in found], dtype=object)
    return texts[index].tolist()


def unservable_everywhere(spec: Spec, overrides: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """When no design of ``spec`` that ``overrides`` describe is servable (:func:`deployment_problems`
    finds a problem in each), their distinct problems, each beside the key whose value breaks the
    rule: ``[(key, message)]``, ``key`` a :data:`DEPLOYMENT_RULE_KEYS` entry (``"deployment.tp"``
    for "tp 3 does not divide the model's 64 attention heads" and for "tp 16 is larger than the
    scale-up domain", ``"deployment.decode.chips"`` for a pool of no whole instances); ``[]`` when
    one design is servable. A search that tries no servable deployment is refused before it starts
    (:func:`codesign.search.unservable_space_problems`)."""
    found, index = _broken_rules(spec, overrides)
    if (index == len(found) - 1).any():  # found's last entry, [], is the servable designs'
        return []
    return list(dict.fromkeys(pair for i in np.unique(index).tolist() for pair in found[i]))


def _broken_rules(spec: Spec, overrides: Mapping[str, Any] | None) -> tuple[list[list[tuple[str, str]]], np.ndarray]:
    """The rules of :func:`deployment_problems` over every design: ``(found, index)``, ``found`` a
    ``[(key, message)]`` list per distinct design that breaks a rule and ``[]`` last, ``index`` the
    entry of ``found`` of each design (``(n,)`` ints)."""
    overrides = overrides or {}
    n = max([1] + [int(np.size(v)) for v in overrides.values()])
    d, m = spec.deployment, spec.model

    def val(key, base):
        return np.broadcast_to(np.asarray(overrides.get(key, base), dtype=np.float64), (n,))

    disagg = d.mode == "disaggregated"
    groups = ([("decode", "deployment.decode", d.decode), ("prefill", "deployment.prefill", d.prefill)]
              if disagg else [("", "deployment", d)])
    cols = [val("deployment.pp", d.pp), val("deployment.multinode_tp", float(d.multinode_tp)),
            val("network.scaleup_domain", spec.network.scaleup_domain)]
    for _, key, g in groups:
        cols += [val(f"{key}.tp", g.tp if g else 1), val(f"{key}.ep", g.ep if g else 1),
                 val(f"{key}.dp_attention", g.dp_attention if g else 1)]
        if disagg:
            cols.append(val(f"{key}.chips", g.chips if g else 1))
    table = np.stack(cols, axis=1)
    heads, layers, experts = m.num_attention_heads, m.num_layers, (m.num_experts or 0) if any(m.moe_layers) else 0
    step = 4 if disagg else 3

    def pool_rules(name, key, tp, ep, dp, chips, pp, multinode, domain):
        """One pool's rules, ``[(broken, key, message)]``; its own scope, so each message reads its
        own pool's columns (the messages are closures: written in the loop of :func:`rules`, every
        pool's read the last pool's ``tp``, and a disaggregated decode TP 16 was reported as
        "prefill tp 1")."""
        stage = tp * dp
        tag = f"{name} " if name else ""
        out = [
            (tp > heads, f"{key}.tp", lambda: f"{tag}tp {tp:g} is above the model's {heads} attention heads"),
            ((tp <= heads) & (np.mod(heads, tp) != 0), f"{key}.tp",
             lambda: f"{tag}tp {tp:g} does not divide the model's {heads} attention heads"),
            ((tp > domain) & ~multinode, f"{key}.tp",
             lambda: f"{tag}tp {tp:g} is larger than the scale-up domain ({domain:g} chips; "
                     "deployment.multinode_tp = true lets a TP group span domains)"),
        ]
        if chips is not None:
            inst = tp * dp * pp
            out.append(((chips < inst) | (np.mod(chips, inst) != 0), f"{key}.chips",
                        lambda: f"{name} chips {chips:g} are not whole instances of tp × dp_attention × pp "
                                f"= {inst:g} chips"))
        out += [
            (ep > max(experts, 1), f"{key}.ep", lambda: f"{tag}ep {ep:g} is above the model's {experts} experts"),
            (ep > stage, f"{key}.ep",
             lambda: f"{tag}ep {ep:g} is larger than the {stage:g} chip{'s' if stage != 1 else ''} "
                     "of a stage (tp × dp_attention)"),
            ((ep <= stage) & (np.mod(stage, ep) != 0), f"{key}.ep",
             lambda: f"{tag}ep {ep:g} does not divide the {stage:g} chips of a stage (tp × dp_attention)"),
        ]
        return out

    def rules(t):
        """``[(broken, key, message)]`` over the columns of ``t``: array columns give each rule's
        mask, one row (scalars) gives its truth and the message. One set of rules for both."""
        pp, multinode, domain = t[..., 0], t[..., 1] > 0.5, t[..., 2]
        out = []
        for i, (name, key, _) in enumerate(groups):
            tp, ep, dp = (t[..., 3 + i * step + j] for j in range(3))
            chips = t[..., 6 + i * step] if disagg else None
            out += pool_rules(name, key, tp, ep, dp, chips, pp, multinode, domain)
        out.append((pp > layers, "deployment.pp", lambda: f"pp {pp:g} is above the model's {layers} layers "
                                                          "(a pipeline stage holds at least one layer)"))
        return out

    # the masks over every design; strings only for the distinct designs that break a rule (a
    # million-design sweep spent 4 s in np.unique over every row)
    bad = np.logical_or.reduce([broken for broken, _, _ in rules(table)])
    if not bad.any():
        return [[]], np.zeros(n, dtype=int)
    combos, inverse = np.unique(table[bad], axis=0, return_inverse=True)
    found = [[(key, say()) for broken, key, say in rules(row) if broken] for row in combos] + [[]]
    index = np.full(n, len(combos))  # [] for the designs that break no rule
    index[bad] = np.asarray(inverse).reshape(-1)
    return found, index


def mark_unservable(ev: Evaluation, problems: list[str]) -> Evaluation:
    """``ev`` with every design that has a :func:`deployment_problems` entry infeasible at every
    point (its point metrics NaN, as the contract has them). The problems come first in its reasons,
    design and point, before the cost model's own: they are the cause (the roofline example's "KV
    cache does not fit" hid "tp 16 is larger than the scale-up domain" from C = 64 up; fresh-user
    trial, session 33). A reason that already says them (the analytical model's) is kept as is."""
    import attrs

    bad = np.array([bool(p) for p in problems])
    if not bad.any():
        return ev

    def first(problem: str, own: str) -> str:
        return own if problem in own else "; ".join(x for x in (problem, own) if x)

    over = ev.feasible & bad[:, None]
    points = {k: np.where(over, np.nan, v) for k, v in ev.points.items()}
    reasons = list(ev.reasons) or [""] * ev.n_designs
    reasons = [first(p, r) if p else r for r, p in zip(reasons, problems)]
    point_reasons = ev.point_reasons
    if point_reasons is not None:
        point_reasons = np.asarray(point_reasons, dtype=object).copy()
        for d in np.nonzero(bad)[0]:
            point_reasons[d] = [first(problems[d], str(r or "")) for r in point_reasons[d]]
    return attrs.evolve(ev, points=points, feasible=ev.feasible & ~bad[:, None], point_reasons=point_reasons,
                        reasons=reasons)


#: Relative margin above the TDP before a point's modelled power counts as over it (float32 sweeps).
TDP_RTOL = 1e-6


def slo_bounds(spec: Spec) -> list[tuple[str, float]]:
    """The ``[workload.slo]`` of ``spec`` as ``[(point metric, upper bound [s])]``: ``ttft`` bounds
    ``ttft_s``, ``tpot`` bounds ``tpot_s``; ``[]`` when it sets none. The search takes each as an SLO
    constraint (``[[search.constraints]]`` ``{ metric = "ttft_s", max = … }``, see
    :data:`codesign.search.SLO_METRICS`), and :func:`at_slo` applies them to an evaluation."""
    slo = spec.workload.slo
    if slo is None:
        return []
    return [(m, float(v)) for m, v in (("ttft_s", slo.ttft), ("tpot_s", slo.tpot)) if v is not None]


def meets_slos(ev: Evaluation, slos) -> np.ndarray:
    """``(n, c)`` bool: the feasible points of ``ev`` that meet every ``(point metric, bound, sense)``
    of ``slos`` (``sense`` ``"max"``: metric <= bound; ``"min"``: metric >= bound). The one SLO test of
    the search's constraints and of :func:`at_slo`."""
    ok = ev.feasible.copy()
    with np.errstate(invalid="ignore"):
        for metric, bound, sense in slos:
            v = np.asarray(ev.points[metric], dtype=np.float64)
            ok &= (v <= bound) if sense == "max" else (v >= bound)
    return ok


def at_slo(spec: Spec, ev: Evaluation) -> Evaluation:
    """``ev`` with only the feasible points that meet the spec's ``[workload.slo]`` left feasible
    (the others keep their metrics), so that its summary is taken at the SLO: peak tok/s per kW at
    SLO (goodput), as a search's SLO constraints take it. ``ev`` itself when the spec sets no SLO."""
    bounds = slo_bounds(spec)
    if not bounds:
        return ev
    import attrs

    return attrs.evolve(ev, feasible=meets_slos(ev, [(m, b, "max") for m, b in bounds]))


def mark_over_tdp(ev: Evaluation) -> Evaluation:
    """``ev`` with every feasible point whose modelled power per chip is above the design's TDP
    marked infeasible (its metrics NaN, as the contract has them), the reason given per point
    (``point_reasons``, when the model gives reasons) and per design that has no feasible point left.

    The priced rates of such a point are not attainable: the chip would throttle to its TDP, which
    no cost model here prices, and ``mixed_tok_s_per_kw`` divides by the TDP (the published tables'
    power basis). ``tdp = "1 mW"`` on GB200 printed 65 billion tok/s per kW, and a search of
    ``chip.tdp`` drove it to its lower bound, far below the designs' own power (session 30). Power
    is ``power_w`` [W/chip], TDP ``tdp_w`` [W/chip], both in every cost model's contract
    (:data:`codesign.costmodel.POINT_METRICS`, ``DESIGN_METRICS``). Peak power above the TDP is
    not refused (see :func:`over_budget`): only an operating point's own power."""
    import attrs

    tdp = np.asarray(ev.design.get("tdp_w", np.nan), dtype=np.float64).reshape(-1)
    power = ev.points.get("power_w")
    if power is None:
        return ev
    power = np.asarray(power, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        over = ev.feasible & np.isfinite(power) & (power > tdp[:, None] * (1.0 + TDP_RTOL))
    if not over.any():
        return ev
    points = {k: np.where(over, np.nan, v) for k, v in ev.points.items()}
    feasible = ev.feasible & ~over

    def why(d: int) -> str:  # one reason per design (the CLI groups the points that share one)
        lo, hi, cap = float(power[d][over[d]].min()), float(power[d][over[d]].max()), float(tdp[d])
        if _watts(hi) == _watts(cap):  # "700 W > 700 W": just over, said with the decimals that show it
            n = next((k for k in range(1, 7) if f"{hi:.{k}f}" != f"{cap:.{k}f}"), 6)
            span, limit = f"{hi:,.{n}f} W", f"{cap:,.{n}f} W"
        else:
            span = _watts(hi) if _watts(lo) == _watts(hi) else f"{_watts(lo).removesuffix(' W')}-{_watts(hi)}"
            limit = _watts(cap)
        return f"modelled power {span}/chip > chip.tdp {limit}: the chip would throttle, which is not priced"

    hot = np.full(over.shape[0], "", dtype=object)
    for d in np.nonzero(over.any(axis=1))[0]:
        hot[d] = why(int(d))
    point_reasons = ev.point_reasons
    if point_reasons is not None:
        point_reasons = np.where(over, hot[:, None], np.asarray(point_reasons, dtype=object)).astype(object)
    reasons = list(ev.reasons)
    if reasons:
        for d in np.nonzero(~feasible.any(axis=1) & over.any(axis=1))[0]:
            reasons[d] = reasons[d] or hot[d]
    return attrs.evolve(ev, points=points, feasible=feasible, point_reasons=point_reasons, reasons=reasons)


FORMAT_FIELDS = ("weights_format", "moe_weights_format", "kv_cache_format", "activations_format")


#: Deployment fields that never take a weight-only format (:attr:`codesign.formats.NumberFormat.weight_only`),
#: and why. Activations: a weight-only format (int4_g32) has no tensor-core path for them; its GEMMs
#: dequantise the weights and run at the activations' rate (W4A16). KV cache: it holds activations
#: (the keys and values attention computes each step), not weights.
WEIGHT_ONLY_REFUSED = {
    "activations_format": (": no GEMM takes activations in it; use the format the activations run in, e.g. "
                           "'bf16' (INT4 weights with BF16 activations, W4A16)"),
    "kv_cache_format": (", but the KV cache stores activations (keys and values); expected a format "
                        "activations are stored in, e.g. 'bf16' or 'fp8_e4m3'"),
}


def check_priceable(spec: Spec, *, pm) -> None:
    """Ask the spec's cost model whether it would refuse ``spec`` (its optional ``check(spec)``,
    :class:`~codesign.costmodel.CostModel`), without pricing it: the analytical model's efficiency
    knobs (``[efficiency] compute_decode = 7``) were refused only at the search's first pricing,
    under warnings that ``codesign optimize`` had already printed (CI, session 35). ``spec`` is
    resolved (``efficiency_from``) as :func:`evaluate` resolves it.

    Raises:
        SpecError: what the cost model refuses; PluginBugError: ``check`` raised anything else.
    """
    from .baselines import resolve_efficiency

    spec = resolve_efficiency(spec, pm=pm)
    name = cost_model_name(spec, pm=pm)
    _ask_check(pm.cost_model(name), spec, pm.cost_model_label(name))


def _ask_check(model, spec: Spec, who: str) -> None:
    """``model.check(spec)`` where the model defines it; anything but a CodesignError it raises is
    its bug (PluginBugError naming ``who``)."""
    check = getattr(model, "check", None)
    if check is None:
        return
    try:
        check(spec)
    except CodesignError:
        raise
    except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - a plugin bug must not become a traceback
        raise PluginBugError(f"{who} raised in check(): {type(exc).__name__}: {exc}") from exc


def check_names(spec: Spec, *, pm, cost_model: str | None = None, overrides=None,
                override_keys: dict | None = None) -> None:
    """Refuse unknown number-format and cost-model names with the spec key that names them, and a
    weight-only format (:attr:`codesign.formats.NumberFormat.weight_only`) as
    ``deployment.activations_format`` or ``deployment.kv_cache_format`` (the KV cache stores
    activations: the keys and values the attention layers compute).

    ``override_keys`` names where an override's values came from (``{"deployment.activations_format":
    (file, 'search.params."deployment.activations_format"')}``, or the key path alone, in the spec's
    own file), so the message points at the search table in the file that wrote it.

    Raises:
        SpecError: one line per unknown name (file, ``deployment.<key>``, the registered names) or
            misplaced weight-only format.
    """
    from .errors import SpecError

    where = spec.path or "<spec>"
    problems = []
    formats = pm.number_formats
    for f in FORMAT_FIELDS:
        key = f"deployment.{f}"
        names = [getattr(spec.deployment, f)]
        at = spec.origin(key)  # the file that set the key (an included deployment, say), as the loader names it
        if overrides and key in overrides:
            names = list(dict.fromkeys(np.asarray(overrides[key], dtype=object).ravel().tolist()))
            at, key = _override_source(override_keys, key, where)
        for v in names:
            if why := _format_problem(f, v, formats):
                problems.append((at, key, why))
    for key, v in (overrides or {}).items():
        # a capacity given to a tier the spec lacks, with no bandwidth to read it at (search and
        # study refuse the key first, at their own table); a capacity of 0 stands for the absent
        # tier, and codesign validate sends each system's own tiers, both figures, whichever
        # system the group's spec is
        if key.endswith(".capacity") and (why := absent_tier_problem(spec, key)):
            bw = np.asarray(overrides.get(key.removesuffix("capacity") + "bandwidth", 0.0), dtype=np.float64)
            if np.any((np.asarray(v, dtype=np.float64) > 0) & ~(bw > 0)):
                problems.append((*_override_source(override_keys, key, where), why))
    name = cost_model or spec.deployment.cost_model
    if why := _cost_model_problem(name, pm):
        # an included file's bad name was blamed on the top-level spec (fresh-user trial, session 31)
        problems.append((spec.origin("deployment.cost_model") if not cost_model else where,
                         "deployment.cost_model" if not cost_model else "--cost-model", why))
    if problems:
        raise SpecError(problems)


def _format_problem(field: str, name, formats) -> str | None:
    """Why the number format ``name`` cannot be ``deployment.<field>`` (not registered in
    ``formats``, or weight-only where activations are stored), or None (also for None: unset)."""
    if name is None:
        return None
    if name not in formats:
        close = close_name(name, sorted(formats))  # 'MXFP4' for 'mxfp4' (fresh-user trial, session 43)
        mean = f" (did you mean {close!r}?)" if close else ""
        return f"unknown number format {name!r}{mean}; registered: {', '.join(sorted(formats))}"
    if field in WEIGHT_ONLY_REFUSED and formats[name].weight_only:
        return f"{name!r} is a weight-only number format{WEIGHT_ONLY_REFUSED[field]}"
    return None


def _cost_model_problem(name: str, pm) -> str | None:
    """Why ``name`` names no registered cost model (``"auto"`` does), or None."""
    if name == "auto" or name in pm.cost_models:
        return None
    return pm.unknown_cost_model(name)  # with the registered ones and how a cost model is installed


def load_spec_checked(path, *, cost_model: str | None = None, pm=None) -> Spec:
    """:func:`codesign.spec.load_spec`, whose refusal of a spec also names the number-format and
    cost-model names of its ``[deployment]`` that :func:`check_names` refuses: those are checked
    against the plugins once the spec has loaded, so a misspelt ``[chip]`` key hid
    ``weights_format = "fp5"`` until it was fixed. A name whose own value the loader refused (not
    a string) is left to that line. ``cost_model``: a command line's ``--cost-model``, priced
    instead of ``deployment.cost_model`` (which is then not judged). A spec that loads has its
    :func:`codesign.spec.unit_notes` (a size or bandwidth written in bits) printed on stderr, one
    ``note:`` line each, as the commands that load a spec with it print their warnings.

    Raises:
        SpecError: every problem, the loader's first (:attr:`~codesign.errors.SpecError.file` the
            spec's), then the names'.
    """
    import sys

    from .errors import SpecError
    from .spec import load_spec, unit_notes

    try:
        spec = load_spec(path)
    except SpecError as exc:
        more = _raw_name_problems(path, exc, cost_model=cost_model, pm=pm)
        if not more:
            raise
        raise SpecError(exc.problems + more, file=exc.file) from None
    for line in unit_notes(spec):
        print(f"note: {line}", file=sys.stderr)
    return spec


def _raw_name_problems(path, exc, *, cost_model: str | None, pm) -> list[tuple[str, str, str]]:
    """The :func:`check_names` problems of the spec file ``path`` that ``load_spec`` refused with
    ``exc``, read from its merged TOML; [] when it cannot be read (``exc`` says why) or the plugins
    do not load (said once the spec is fixed)."""
    import os
    from pathlib import Path

    from .spec import _origin, load_raw

    try:
        data, origins = load_raw(path)
        if pm is None:
            from .pluginmanager import get_plugin_manager

            pm = get_plugin_manager()
        formats, _ = pm.number_formats, pm.cost_models
    except CodesignError:
        return []
    file = os.path.relpath(path) if not Path(path).is_absolute() else str(path)
    dep = data.get("deployment") if isinstance(data.get("deployment"), dict) else {}
    said = {k for _, k, _ in exc.problems}
    out = []
    for f in (*FORMAT_FIELDS, *(() if cost_model else ("cost_model",))):
        key, v = f"deployment.{f}", dep.get(f)
        if not isinstance(v, str) or key in said:
            continue
        why = _cost_model_problem(v, pm) if f == "cost_model" else _format_problem(f, v, formats)
        if why:
            out.append((_origin(origins, ("deployment", f), file), key, why))
    return out


def _override_source(override_keys: dict | None, key: str, where: str) -> tuple[str, str]:
    """``(file, key path)`` that an override of ``key`` came from (:func:`check_names`)."""
    src = (override_keys or {}).get(key, key)
    return src if isinstance(src, tuple) else (where, src)


def cost_model_name(spec: Spec, *, cost_model: str | None = None, pm=None) -> str:
    """The registered name of the cost model that prices ``spec`` (``"auto"`` resolved)."""
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    return pm.resolve_cost_model(cost_model or spec.deployment.cost_model, spec)


def cost_model_record(spec: Spec | None, *, cost_model: str | None = None, pm=None) -> dict[str, str]:
    """What priced ``spec``, for a report: ``{"name": registered name ("auto" resolved), "version":
    the model's own (:attr:`~codesign.costmodel.CostModelInfo.version`, which changes with its
    numbers), "plugin": "NAME (DIST VERSION)"}`` (a result is only as good as its cost model;
    pareto.json and sweep_front.json did not say which one, even when ``auto`` picked a third
    party's, and no report gave the model's version, which CostModelInfo promises: fresh-user
    trial, session 39).
    ``cost_model``: the one a command line chose instead of ``deployment.cost_model``
    (``evaluate --cost-model``), or a name already resolved (``spec`` None: ``validate`` records
    the name each group of rows was priced with)."""
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    name = cost_model_name(spec, cost_model=cost_model, pm=pm)
    info = pm.cost_models.get(name)
    return {"name": name, "version": info.version if info is not None else "",
            "plugin": pm.plugin_label(info.plugin) if info is not None else ""}


def cost_model_choice(spec: Spec, *, cost_model: str | None = None, pm=None) -> str | None:
    """Why ``"auto"`` priced ``spec`` with the model it did, as :func:`priced_by` says it: ``"the
    first by name of the 2 loaded cost models that can price this spec (none declares its accuracy)"``,
    ``"the one loaded cost model that can price this spec"``, or the most accurate by its declared
    median |TPOT error|; None where the spec or ``cost_model`` (``evaluate --cost-model``) names
    the model (the rule: :meth:`~codesign.pluginmanager.CodesignPluginManager.select_cost_model`).
    "priced by cost model 'analytical'" did not say that nobody had asked for it (fresh-user trial)."""
    from .pluginmanager import get_plugin_manager

    if (cost_model or spec.deployment.cost_model) != "auto":
        return None
    pm = pm or get_plugin_manager()
    candidates, _ = pm.cost_model_candidates(spec)
    if len(candidates) <= 1:
        return "the one loaded cost model that can price this spec"
    n = f"{len(candidates)} loaded cost models that can price this spec"
    best = candidates[0]
    if best.accuracy is None:
        return f"the first by name of the {n} (none declares its accuracy)"
    return f"the most accurate of the {n} (declared median |TPOT error| {best.accuracy:.0%})"


def _version_said(version: str) -> str:
    """A cost model's version as :func:`priced_by` says it: ``"version 0.1.0"``, and a local label
    after ``+`` explained: ``"version 0.4.0+75993c66 (release 0.4.0, code build 75993c66)"`` (the
    analytical model's label is a hash of its model.py). A version is the
    model's own (:attr:`~codesign.costmodel.CostModelInfo.version`), and a search refuses to resume
    under another; the bare "+75993c66" was read as noise (fresh-user trial)."""
    if not version:
        return "version unknown"
    release, plus, label = version.partition("+")
    if not plus:
        return f"version {version}"
    return f"version {version} (release {release}, code build {label})"


def priced_by(*records: dict[str, str], choice: str | None = None, efficiency: dict | None = None) -> str:
    """The line a text report names its cost model(s) with, from :func:`cost_model_record` records:
    ``priced by cost model 'analytical' version 0.4.0+… (release 0.4.0, code build …), plugin
    analytical (codesign 0.1.0)``, several joined by "; " (``validate``, a group of
    rows per model); evaluate, optimize and validate say it alike. ``choice``: why ``"auto"`` chose
    it (:func:`cost_model_choice`), said as ``"; chosen automatically (deployment.cost_model =
    'auto'): …"``; ``efficiency``: :func:`efficiency_record`, said as ``"; efficiency knobs calibrated
    for gb200 (calibration 2026-12-07, plugin baseline (codesign 0.1.0))"``."""
    line = "priced by cost model " + "; ".join(
        f"{r['name']!r} {_version_said(r['version'])}" + (f", plugin {r['plugin']}" if r.get("plugin") else "")
        for r in records)
    if efficiency:
        said = ", ".join(x for x in (f"calibration {efficiency['calibration_version']}"
                                     if efficiency.get("calibration_version") else "",
                                     f"plugin {efficiency['plugin']}" if efficiency.get("plugin") else "") if x)
        if efficiency.get("note"):  # borrowed knobs: not calibrated on this system's measurements
            line += (f"; efficiency knobs of baseline {efficiency['baseline']}, not calibrated on it "
                     f"({efficiency['note']}" + (f"; {said})" if said else ")"))
        else:
            line += f"; efficiency knobs calibrated for {efficiency['baseline']}" + (f" ({said})" if said else "")
    if choice:
        line += f"; chosen automatically (deployment.cost_model = 'auto'): {choice}"
    return line


def efficiency_record(spec: Spec, *, pm=None) -> dict[str, str] | None:
    """Whose calibrated efficiency knobs priced ``spec``, for a report beside
    :func:`cost_model_record`: ``{"baseline": the registered baseline ``efficiency_from`` names,
    "plugin": "NAME (DIST VERSION)" of the plugin that registers it, "calibration_version": its
    provenance's ``calibration_version`` (the shipped baselines: the calibration TOML's
    ``version``; "" where the baseline gives none)}``, and ``"note"``, its provenance's note, where
    it has one (a system the calibration never saw: whose knobs it borrows); None when the spec names no
    ``efficiency_from`` (its own ``[efficiency]`` knobs over the cost model's defaults). Give it the
    spec before :func:`~codesign.baselines.resolve_efficiency`, which clears ``efficiency_from``.
    A study's report named neither the cost model nor the knobs behind its numbers (session 40)."""
    if not spec.efficiency_from:
        return None
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    b = pm.baselines.get(spec.efficiency_from)
    out = {"baseline": spec.efficiency_from, "plugin": pm.plugin_label(b.plugin) if b is not None else "",
           "calibration_version": str((b.provenance or {}).get("calibration_version", "")) if b is not None else ""}
    # a baseline whose knobs were not fitted on its own measurements says whose it borrows
    # ("mi355x not in the calibration data: shared knobs only"; B300's are B200's): "calibrated for
    # mi355x" was said of the AMD parts (fresh-user trial, session 48)
    note = str((b.provenance or {}).get("note", "")) if b is not None else ""
    if note:
        out["note"] = note
    return out


def deployment_record(spec: Spec, *, priced_by: str, chips: int) -> dict[str, Any]:
    """The deployment that priced ``spec``, for a report: its ``[deployment]`` keys by their TOML
    names (the spec converter's unstructured ``Deployment``, pools as tables), with ``cost_model``
    the registered name ``priced_by`` that priced it (``"auto"`` or ``--cost-model`` resolved),
    ``moe_weights_format`` as priced (``weights_format`` when unset; left out for a dense model,
    which has no experts to read it) and ``chips`` the design's
    (both pools' in disaggregated serving). A key nothing reads under this deployment
    (:func:`~codesign.spec.unread_key_problem`: the pools of aggregated serving, the top-level
    ``tp``/``ep``/``dp_attention`` of disaggregated serving, ``acceptance_rate`` without draft
    tokens, the attention-DP balance outside aggregated attention DP) is left out: an overriding
    file may leave it set, priced as if absent, as the table's title leaves it unnamed. A read key
    the spec leaves unset is null (no batch limit, the cost model's default)."""
    from .spec import converter, unread_key_problem

    d = spec.deployment
    raw = converter().unstructure(d)
    out: dict[str, Any] = {"cost_model": priced_by, "mode": d.mode, "chips": chips}
    out.update((k, v) for k, v in raw.items()
               if k not in out and not unread_key_problem(d, f"deployment.{k}"))
    # the experts' format is read only where a layer is MoE (a dense Llama listed nvfp4: trial 39)
    if any(spec.model.moe_layers):
        out["moe_weights_format"] = d.moe_weights_format or d.weights_format
    else:
        out.pop("moe_weights_format", None)
    return out


def check_contract(ev: Evaluation, name: str, plugin: str, *, n_designs: int | None = None,
                   concurrency=None) -> None:
    """Refuse an answer the core cannot use, naming the cost model and its plugin.

    Checks what the core relies on (the full contract, with monotonicity and roofline bounds, is
    :mod:`codesign.testing`): an :class:`Evaluation`; ``feasible`` of shape ``(n, c)``; every
    :data:`~codesign.costmodel.POINT_METRICS` key with shape ``(n, c)``; every
    :data:`~codesign.costmodel.DESIGN_METRICS` key with shape ``(n,)``, each an array (not a
    list); no NaN, infinite or
    negative point metric on a point the model calls feasible; NaN in every point metric (its own
    too) on a point it calls infeasible (an infeasible design is never priced); every
    :data:`~codesign.costmodel.DESIGN_METRICS` value a finite number ``>= 0`` on every design,
    feasible or not (:data:`~codesign.costmodel.NAN_DESIGN_METRICS`, ``area_mm2``, may also be NaN:
    not modelled); no negative value in a design metric of the model's own.

    Args:
        n_designs: the expected ``n`` (designs asked for), if known.
        concurrency: the workload's sweep, if known (``ev.concurrency`` must equal it).

    Raises:
        PluginBugError: the first violation found.
    """
    who = f"cost model {name!r} (plugin {plugin})"
    if not isinstance(ev, Evaluation):
        raise PluginBugError(f"{who} returned {type(ev).__name__}, expected codesign.Evaluation")
    # arrays, not lists: the core indexes them as arrays (a list of lists was an internal TypeError
    # naming no plugin: fresh-user trial, session 39)
    fields = [("feasible", ev.feasible), ("concurrency", ev.concurrency),
              *((f"point metric {k}", v) for k, v in ev.points.items()),
              *((f"design metric {k}", v) for k, v in ev.design.items())]
    for what, values in fields:
        if not (hasattr(values, "shape") and hasattr(values, "dtype")):
            raise PluginBugError(f"{who} returned {what} as {type(values).__name__}, expected an array "
                                 "(numpy.ndarray)")
    f = np.asarray(ev.feasible)
    c = np.asarray(ev.concurrency)
    if f.ndim != 2 or f.dtype != bool:
        raise PluginBugError(f"{who} returned feasible with shape {f.shape} and dtype {f.dtype}, "
                          f"expected a bool array (n_designs, n_concurrency)")
    if c.shape != (f.shape[1],):
        raise PluginBugError(f"{who} returned concurrency with shape {c.shape}, expected ({f.shape[1]},)")
    if concurrency is not None and not np.array_equal(c, np.asarray(concurrency, dtype=c.dtype)):
        raise PluginBugError(f"{who} returned concurrency {c.tolist()}, the workload asks for "
                          f"{list(concurrency)}")
    if n_designs is not None and f.shape[0] != n_designs:
        raise PluginBugError(f"{who} returned {f.shape[0]} designs, {n_designs} were asked for")
    missing = [k for k in POINT_METRICS if k not in ev.points]
    if missing:
        raise PluginBugError(f"{who} did not return the point metrics {', '.join(missing)}")
    missing = [k for k in DESIGN_METRICS if k not in ev.design]
    if missing:
        raise PluginBugError(f"{who} did not return the design metrics {', '.join(missing)}")
    for metric, values in ev.points.items():
        v = np.asarray(values)
        if v.shape != f.shape:
            raise PluginBugError(f"{who} returned {metric} with shape {v.shape}, expected {f.shape}")
        if not np.issubdtype(v.dtype, np.number):
            raise PluginBugError(f"{who} returned {metric} of dtype {v.dtype}, expected numbers")
        bad = f & ~(np.isfinite(v) & (v >= 0))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise PluginBugError(f"{who} returned {metric} = {v[i, j]} "
                              f"at concurrency {int(c[j])} on a feasible point")
        # an infeasible point is never priced: a number there was printed by evaluate and could
        # reach a summary that did not mask it (fresh-user trial, session 40)
        priced = ~f & ~np.isnan(v)
        if priced.any():
            i, j = np.argwhere(priced)[0]
            at = f" of design {i}" if f.shape[0] > 1 else ""
            raise PluginBugError(f"{who} returned {metric} = {format_value(float(v[i, j]))} at concurrency "
                                 f"{int(c[j])}{at}, a point it calls infeasible (feasible = False); an "
                                 "infeasible point is NaN in every point metric, never priced")
    for metric, values in ev.design.items():
        v = np.asarray(values)
        if v.shape != (f.shape[0],):
            raise PluginBugError(f"{who} returned design metric {metric} with shape {v.shape}, "
                              f"expected ({f.shape[0]},)")
        if metric in DESIGN_METRICS:
            # the design exists whether or not it can serve: its chips, TDP, peak power, weights per
            # chip and KV slots are numbers (a NaN chips was an internal ValueError in evaluate's
            # table, an inf peak power passed into reports); area_mm2 alone may be NaN, "not modelled"
            if not (np.issubdtype(v.dtype, np.number) and not np.issubdtype(v.dtype, np.complexfloating)):
                raise PluginBugError(f"{who} returned design metric {metric} of dtype {v.dtype}, "
                                     f"expected numbers")
            allowed = np.isnan(v) if metric in NAN_DESIGN_METRICS else np.zeros(v.shape, dtype=bool)
            bad = ~(np.isfinite(v) & (v >= 0)) & ~allowed
            if bad.any():
                i = int(np.argwhere(bad)[0][0])
                at = f" for design {i}" if v.size > 1 else ""
                rule = ("a finite number >= 0, or NaN when not modelled" if metric in NAN_DESIGN_METRICS
                        else "a finite number >= 0 on every design, feasible or not")
                raise PluginBugError(f"{who} returned design metric {metric} = {format_value(float(v[i]))}"
                                     f"{at}; expected {rule}")
        elif np.issubdtype(v.dtype, np.number) and (v < 0).any():
            raise PluginBugError(f"{who} returned design metric {metric} = {v[v < 0][0]} (negative)")
    if len(ev.reasons) != f.shape[0]:
        raise PluginBugError(f"{who} returned {len(ev.reasons)} reasons for {f.shape[0]} designs "
                          f"(one string per design, \"\" when feasible)")
    if ev.point_reasons is not None and np.shape(ev.point_reasons) != f.shape:
        raise PluginBugError(f"{who} returned point_reasons with shape {np.shape(ev.point_reasons)}, "
                          f"expected {f.shape}")


def points_json(ev: Evaluation, i: int = 0) -> list[dict]:
    """The points of design ``i`` as JSON-ready dicts (DESIGN.md metric names; null when infeasible)."""
    out = []
    for j, c in enumerate(ev.concurrency):
        row: dict[str, Any] = {"concurrency": int(c)}
        for k, v in ev.points.items():
            x = float(v[i, j])
            row[k] = x if np.isfinite(x) else None
        row["feasible"] = bool(ev.feasible[i, j])
        if not row["feasible"] and ev.point_reasons is not None:
            row["infeasible_reason"] = str(ev.point_reasons[i, j])
        out.append(row)
    return out


def jsonable(x):
    """NaN/inf → None, numpy scalars → Python; a float that is exactly a float32 (what the JAX cost
    models compute in) → the shortest decimal that reads back as that float32 (``1099.4``, not
    ``1099.4000244140625``: the digits beyond are the widening to float64, not the model's). Whole
    numbers (a byte count) and any other float are kept as they are."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        if not np.isfinite(x):
            return None
        x = float(x)
        if abs(x) < 3.0e38 and not x.is_integer() and float(f32 := np.float32(x)) == x:
            return float(str(f32))  # numpy prints a float32's shortest round-trip digits
        return x
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    return x


def _watts(w: float) -> str:
    """``"325 W"``, ``"1,200 W"``, ``"0.001 W"``: whole watts, or three significant digits below 10 W."""
    return f"{w:,.0f} W" if w >= 10 else f"{w:.3g} W"


def over_budget(spec: Spec, design: Mapping[str, float]) -> list[str]:
    """The chip's own hard budgets one design exceeds, one phrase each (``"area 3,019 mm² >
    chip.area.max 1,716 mm²"``, thousands separated as evaluate's other figures); ``[]`` when within them.

    ``design`` holds one design's metrics (``area_mm2`` [mm²], NaN when not modelled).
    ``chip.area.max`` is the largest buildable logic area (reticle limit times dies per package), a
    design above it cannot be built; it is still priced as specified (a search bounds area only
    through ``[[search.constraints]]``; a study's grid marks it †), so ``codesign evaluate`` says
    it instead of printing its tokens per kW without comment. Peak power above the TDP is not
    listed: a chip at full tilt on every unit exceeds its TDP by design (the shipped B200, GB200 and
    Jalapeño specs do, by up to 14%) and is held to it by throttling, which no cost model here prices;
    :func:`peak_over_tdp` says when it is far above."""
    area = float(design.get("area_mm2", math.nan))
    if spec.chip.area is not None and math.isfinite(area) and area > spec.chip.area.max * 1e6 * (1 + 1e-9):
        return [f"area {area:,.0f} mm² > chip.area.max {spec.chip.area.max * 1e6:,.0f} mm²"]
    return []


#: How far a design's modelled peak power (``peak_power_w``: static power plus every unit at its full
#: rate at once) may exceed its TDP before ``codesign evaluate``, ``optimize`` and ``sweep`` say so
#: (:func:`peak_over_tdp`). A chip at full tilt on every unit exceeds its TDP by design and is held
#: to it by throttling: the shipped B200 and Jalapeño specs by 11.8% and 13.6% (GB200 by 0.005%:
#: :data:`codesign.study.PEAK_POWER_RTOL`, the grid's †, is the rounding margin of a peak *at* its
#: TDP, not this). A quarter over leaves the shipped specs silent and names a TDP set well below
#: what the chip draws: GB200 with ``tdp = "700 W"`` peaks at 1,200 W (71% over), and a search of
#: ``chip.tdp`` with no ``peak_power_w`` constraint drives it to its lower bound (session 30).
PEAK_OVER_TDP_MARGIN = 0.25


def list_edge(concurrency) -> int | None:
    """The largest concurrency of a ``workload.concurrency`` list, where a peak tok/s per kW says the
    efficiency was still rising at the edge of the list; None for a list of one value (a peak there
    is no edge: nothing was seen rising). The one rule of ``codesign evaluate``'s note and of
    :func:`codesign.report.front_notes` (optimize, sweep)."""
    cs = {int(c) for c in concurrency}
    return max(cs) if len(cs) > 1 else None


def peak_over_tdp(design: Mapping[str, float]) -> float | None:
    """``peak_power_w / tdp_w`` of one design (its design metrics, [W] each) when the peak is more
    than :data:`PEAK_OVER_TDP_MARGIN` above the TDP, else None (also when either is missing, not
    finite or the TDP is not above 0).

    Such a design is still priced (on its TDP, the power basis; :func:`mark_over_tdp` refuses only
    the points whose own modelled power exceeds the TDP), but its tok/s per kW divides by a power
    the chip exceeds under a heavier load than the points priced, where it would throttle, which no
    cost model here prices."""
    try:
        peak, tdp = float(design["peak_power_w"]), float(design["tdp_w"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(peak) and math.isfinite(tdp) and tdp > 0):
        return None
    return peak / tdp if peak > tdp * (1.0 + PEAK_OVER_TDP_MARGIN) else None


#: How far apart (a ratio) the concurrency of the peak at an SLO and the next larger concurrency of
#: ``workload.concurrency``, which misses the SLO, may be before a report says the list is coarse
#: there (:func:`slo_gap`): the shipped lists double (1, 2, 4, ..., 1024), and a doubling is fine
#: enough; ``concurrency = [1, 1e9]`` under a TTFT SLO of 2 s is not.
SLO_GAP_RATIO = 2.0


def slo_gap(concurrency, feasible, meets, peak) -> tuple[int, int] | None:
    """``(peak, next)`` when the peak at an SLO (``peak``, its concurrency [users]) has a next larger
    concurrency in ``concurrency`` (the workload's list, any order) whose point is feasible but
    misses the SLO, more than :data:`SLO_GAP_RATIO` times ``peak``: a concurrency between them may
    meet the SLO at a higher tok/s per kW, which the list did not price. None otherwise (no SLO
    miss next, the two close enough, ``peak`` not a concurrency of the list: NaN without a feasible
    point at the SLO).

    ``feasible``, ``meets``: one design's ``(c,)`` bools, its points feasible before the SLO and
    those that also meet it (:func:`meets_slos`, :func:`at_slo`), in ``concurrency``'s order."""
    try:
        p = float(peak)
    except (TypeError, ValueError):
        return None
    cs = [float(c) for c in concurrency]
    if not math.isfinite(p) or p not in cs:
        return None
    above = [j for j, c in enumerate(cs) if c > p]
    if not above:
        return None
    j = min(above, key=lambda j: cs[j])
    if not bool(feasible[j]) or bool(meets[j]) or cs[j] <= SLO_GAP_RATIO * p:
        return None
    return int(p), int(cs[j])
