"""Spec → cost model → metrics: the one place the core calls a cost-model plugin.

The core knows no particular cost model: it looks up ``deployment.cost_model`` among the
registered ones, calls it inside a guard (a plugin that raises, or returns NaN or negative values
on points it calls feasible, is named in a :class:`~codesign.errors.PluginError`), and returns the
:class:`~codesign.costmodel.Evaluation`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .costmodel import Evaluation
from .errors import CodesignError, PluginError
from .spec import Spec

SCHEMA_VERSION = 1


def evaluate(spec: Spec, overrides: Mapping[str, Any] | None = None, *, cost_model: str | None = None,
             pm=None) -> Evaluation:
    """Price ``spec`` (and the ``n`` designs ``overrides`` describe) with its cost model.

    Args:
        spec: a loaded spec.
        overrides: spec key path -> array ``(n,)`` in SI units (format names for format keys).
        cost_model: use this registered cost model instead of ``deployment.cost_model``.

    Raises:
        PluginError: the cost model is missing, raises, or breaks the contract.
    """
    from .pluginmanager import get_plugin_manager

    pm = pm or get_plugin_manager()
    name = cost_model or spec.deployment.cost_model
    model = pm.cost_model(name)
    info = pm.cost_models[name]
    try:
        ev = model.evaluate(spec, pm.number_formats, overrides)
    except CodesignError:
        raise
    except Exception as exc:  # noqa: BLE001 - a plugin bug must not become a traceback
        raise PluginError(f"cost model {name!r} (plugin {info.plugin}) raised "
                          f"{type(exc).__name__}: {exc}") from exc
    check_contract(ev, name, info.plugin)
    return ev


def check_contract(ev: Evaluation, name: str, plugin: str) -> None:
    """Refuse NaN, infinite or negative metrics on points the model calls feasible."""
    f = ev.feasible
    for metric, values in ev.points.items():
        v = np.asarray(values)
        if v.shape != f.shape:
            raise PluginError(f"cost model {name!r} (plugin {plugin}) returned {metric} with shape "
                              f"{v.shape}, expected {f.shape}")
        bad = f & ~(np.isfinite(v) & (v >= 0))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise PluginError(f"cost model {name!r} (plugin {plugin}) returned {metric} = {v[i, j]} "
                              f"at concurrency {int(ev.concurrency[j])} on a feasible point")


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
    """NaN/inf → None, numpy scalars → Python."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x) if np.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    return x
