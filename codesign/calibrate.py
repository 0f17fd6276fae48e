"""Fit the analytical model's efficiency knobs to measured serving data (``codesign calibrate``).

Method (core, no CLI code):

* Measured rows are read and mapped by :mod:`codesign.validate` (same mapping, same statuses).
* Rows are split into train and holdout **by served configuration** (system, model, framework,
  mode, ISL/OSL, formats, deployment; every concurrency of a configuration on the same side), with a
  seeded random permutation: the holdout error is that of configurations the fit never saw.
* Knobs live in an unconstrained space: fractions (``compute_*``, ``memory_bandwidth``,
  ``network_bandwidth``, ``burst_fraction``) as ``sigmoid(u)``, overheads (``*_overhead_s``) as
  ``exp(u)``.
* Loss: mean over rows of the squared log error of TTFT and TPOT (and, for InferenceMAX rows, of
  per-GPU mixed throughput), plus a small L2 pull towards the starting point in the unconstrained
  space (few, physically meaningful knobs generalise; the pull keeps knobs the data cannot see at
  their documented defaults).
* Optimiser: Adam written here (optax is not a dependency), on ``jax.grad`` of the loss through
  ``codesign_analytical.model.sweep`` under ``jax.vmap`` (one design per measured row, each with its
  own concurrency, ISL/OSL and hardware), one compiled function per (model, mode, jitter) group.
* Fit order: ``shared`` knobs on every system's training rows (what an unseen system gets), then
  for each system of ``systems`` a refinement started from, and pulled towards, the shared knobs.

The output TOML (:func:`write_calibration`) carries provenance: data files and their SHA-256, rows
used and held out, MAPE before and after on train and holdout, and the training domain (systems,
models, modes, ISL/OSL/concurrency ranges) that ``codesign validate`` uses to flag extrapolation.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .validate import (Point, build_spec, error_stats, file_sha256, group_points, hardware_paths,
                       read_measured)

__all__ = ["split_holdout", "Fitter", "calibrate", "write_calibration", "domain_of", "CALIBRATION_VERSION"]

CALIBRATION_VERSION = 1
FRACTIONS = ("compute_prefill", "compute_decode", "memory_bandwidth", "network_bandwidth",
             "burst_fraction")


def _to_u(knobs: dict) -> dict:
    out = {}
    for k, v in knobs.items():
        if k in FRACTIONS:
            v = min(max(v, 1e-4), 1 - 1e-4)
            out[k] = math.log(v / (1 - v))
        else:
            out[k] = math.log(max(v, 1e-12))
    return out


def _from_u(u: dict):
    import jax.numpy as jnp

    return {k: (1 / (1 + jnp.exp(-v)) if k in FRACTIONS else jnp.exp(v)) for k, v in u.items()}


def split_holdout(points: list[Point], fraction: float, seed: int) -> tuple[list[Point], list[Point]]:
    """Train/holdout split of the ``ok`` points by configuration (:meth:`Point.config_key`)."""
    ok = [p for p in points if p.status == "ok"]
    keys = sorted({p.config_key() for p in ok}, key=repr)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(keys))
    n_hold = int(round(fraction * len(keys)))
    hold = {keys[i] for i in perm[:n_hold]}
    return [p for p in ok if p.config_key() not in hold], [p for p in ok if p.config_key() in hold]


class Fitter:
    """Compiled, differentiable predictions for a fixed set of points.

    ``predict(knobs) -> (ttft, tpot, tput)`` arrays aligned with ``points`` (NaN where infeasible);
    ``loss(u)`` the objective in the unconstrained space.
    """

    def __init__(self, points: list[Point], pm=None):
        import jax
        import jax.numpy as jnp

        from codesign_analytical.model import EFF_PREFIX, AnalyticalModel, sweep, DEFAULT_EFFICIENCY

        from .pluginmanager import get_plugin_manager

        pm = pm or get_plugin_manager()
        hardware = hardware_paths(pm)
        self.points = [p for p in points if p.status == "ok" and p.system_key in hardware]
        model = AnalyticalModel()
        self.groups = []
        cache: dict = {}
        pos = {id(p): i for i, p in enumerate(self.points)}
        for key, pts in group_points(self.points).items():
            spec, ov, index, _ = build_spec(pts, lambda p: {}, hardware=hardware, cache=cache)
            per_row = {k: v[index] for k, v in ov.items()}  # one design per row
            arrs, n = model.arrays(spec, pm.number_formats, per_row)
            arrs.pop("_formats")
            s = model.static(spec)
            p = {k: jnp.asarray(v, dtype=jnp.float32) for k, v in arrs.items() if not k.startswith(EFF_PREFIX)}
            p["concurrency"] = jnp.asarray([q.concurrency for q in pts], dtype=jnp.float32)

            def f(p, eff, s=s):
                r = sweep(dict(p, **{EFF_PREFIX + k: v for k, v in eff.items()}), s, DEFAULT_EFFICIENCY)
                return r["ttft_s"][0], r["tpot_s"][0], r["mixed_tok_s_per_chip"][0]

            fn = jax.vmap(f, in_axes=(0, None))
            meas = np.array([[q.ttft_s, q.tpot_s, q.tput] for q in pts], dtype=np.float64)
            self.groups.append((fn, p, np.array([pos[id(q)] for q in pts]), meas))
        self._pred = jax.jit(self._predict_all)

    def _predict_all(self, eff):
        import jax.numpy as jnp

        return [jnp.stack(fn(p, eff), axis=-1) for fn, p, _, _ in self.groups]

    def predict(self, knobs: dict) -> np.ndarray:
        """``(n, 3)`` TTFT, TPOT, mixed tok/s per chip for every point."""
        import jax.numpy as jnp

        out = np.full((len(self.points), 3), np.nan)
        res = self._pred({k: jnp.asarray(v, dtype=jnp.float32) for k, v in knobs.items()})
        for (fn, p, idx, _), r in zip(self.groups, res):
            out[idx] = np.asarray(r, dtype=np.float64)
        return out

    def loss_fn(self, u0: dict, pull: float):
        import jax.numpy as jnp

        groups = [(fn, p, jnp.asarray(np.log(np.where(np.isfinite(m) & (m > 0), m, 1.0))),
                   jnp.asarray(np.isfinite(m) & (m > 0)))
                  for fn, p, _, m in self.groups]
        total = sum(int(np.asarray(w).any(axis=1).sum()) for *_, w in groups) or 1

        def loss(u):
            eff = _from_u(u)
            acc = 0.0
            for fn, p, logm, w in groups:
                pred = jnp.stack(fn(p, eff), axis=-1)
                ok = w & jnp.isfinite(pred) & (pred > 0)
                e = jnp.where(ok, jnp.log(jnp.where(ok, pred, 1.0)) - logm, 0.0)
                acc = acc + jnp.sum(e * e)
            reg = sum((u[k] - u0[k]) ** 2 for k in u)
            return acc / total + pull * reg

        return loss


def adam(loss, u: dict, steps: int = 300, lr: float = 0.05, log: Callable | None = None) -> dict:
    """Minimise ``loss(u)`` over a dict of scalars with Adam (β1 0.9, β2 0.999)."""
    import jax
    import jax.numpy as jnp

    vg = jax.jit(jax.value_and_grad(loss))
    u = {k: jnp.asarray(v, dtype=jnp.float32) for k, v in u.items()}
    m = {k: jnp.zeros(()) for k in u}
    v = {k: jnp.zeros(()) for k in u}
    b1, b2, eps = 0.9, 0.999, 1e-8
    best, best_u = math.inf, u
    for t in range(1, steps + 1):
        val, g = vg(u)
        val = float(val)
        if math.isfinite(val) and val < best:
            best, best_u = val, u
        g = {k: jnp.nan_to_num(g[k]) for k in u}
        m = {k: b1 * m[k] + (1 - b1) * g[k] for k in u}
        v = {k: b2 * v[k] + (1 - b2) * g[k] ** 2 for k in u}
        u = {k: u[k] - lr * (m[k] / (1 - b1 ** t)) / (jnp.sqrt(v[k] / (1 - b2 ** t)) + eps) for k in u}
        if log and (t % 50 == 0 or t == 1):
            log(f"  step {t:4d}  loss {val:.4f}")
    return {k: float(x) for k, x in best_u.items()}


def _errors(pred: np.ndarray, pts: list[Point]) -> dict:
    out = {}
    for j, name, attr in ((0, "ttft", "ttft_s"), (1, "tpot", "tpot_s"), (2, "tput", "tput")):
        st = error_stats(pred[:, j], [getattr(p, attr) for p in pts])
        if st["n"]:
            out[name] = st
    return out


def domain_of(points: list[Point]) -> dict:
    """The training domain: systems, models, modes and ISL/OSL/concurrency ranges."""
    if not points:
        return {}
    return {
        "systems": sorted({p.system_key for p in points}),
        "models": sorted({p.model for p in points if p.model}),
        "modes": sorted({p.mode for p in points}),
        "isl": [min(p.isl for p in points), max(p.isl for p in points)],
        "osl": [min(p.osl for p in points), max(p.osl for p in points)],
        "concurrency": [min(p.concurrency for p in points), max(p.concurrency for p in points)],
    }


def calibrate(files: list, *, systems: list[str] | None = None, holdout: float = 0.3, seed: int = 0,
              steps: int = 300, lr: float = 0.05, pull: float = 1e-3, log: Callable | None = None,
              max_rows: int | None = None, pm=None) -> dict:
    """Fit shared and per-system knobs; returns the calibration document (see module docstring).

    Args:
        files: measured CSVs (either schema).
        systems: systems (baseline names) that get their own refinement; ``None``: none.
        max_rows: use at most this many ``ok`` rows per file (seeded sample; for tests).
    """
    from codesign_analytical.model import DEFAULT_EFFICIENCY

    log = log or (lambda *_: None)
    points: list[Point] = []
    data = []
    for f in files:
        schema, pts = read_measured(f)
        ok = [p for p in pts if p.status == "ok"]
        if max_rows is not None and len(ok) > max_rows:
            rng = np.random.default_rng(seed)
            keep = {id(ok[i]) for i in rng.choice(len(ok), max_rows, replace=False)}
            pts = [p for p in pts if id(p) in keep]
        points += pts
        data.append({"file": Path(f).name, "schema": schema, "sha256": file_sha256(f), "rows": len(pts)})
    train, hold = split_holdout(points, holdout, seed)
    log(f"{len(train)} training rows, {len(hold)} held out ({len(points)} read)")
    f_train, f_hold = Fitter(train, pm), Fitter(hold, pm) if hold else None
    train, hold = f_train.points, (f_hold.points if f_hold else [])
    # drop rows the model calls infeasible whatever the knobs (capacity/TP limits do not depend on them)
    u0 = _to_u(DEFAULT_EFFICIENCY)
    log("fitting shared knobs")
    u_shared = adam(f_train.loss_fn(u0, pull), u0, steps=steps, lr=lr, log=log)
    shared = {k: float(v) for k, v in _from_u(u_shared).items()}
    per_system: dict[str, dict] = {}
    for sysname in systems or []:
        sub = [p for p in train if p.system_key == sysname]
        if len(sub) < 10:
            log(f"{sysname}: {len(sub)} training rows, keeping the shared knobs")
            continue
        log(f"refining {sysname} on {len(sub)} rows")
        fs = Fitter(sub, pm)
        u = adam(fs.loss_fn(u_shared, 10 * pull), u_shared, steps=steps, lr=lr, log=log)
        per_system[sysname] = {k: float(v) for k, v in _from_u(u).items()}

    def knobs_for(p):
        return per_system.get(p.system_key, shared)

    def eval_set(fitter, pts):
        if fitter is None or not pts:
            return {}
        before = fitter.predict(DEFAULT_EFFICIENCY)
        # after: per system knobs
        after = np.full_like(before, np.nan)
        for name in {p.system_key for p in pts}:
            idx = np.array([i for i, p in enumerate(pts) if p.system_key == name])
            after[idx] = fitter.predict(per_system.get(name, shared))[idx]
        res = {"before": _errors(before, pts), "after": _errors(after, pts), "by_system": {}}
        for name in sorted({p.system_key for p in pts}):
            idx = [i for i, p in enumerate(pts) if p.system_key == name]
            sub = [pts[i] for i in idx]
            res["by_system"][name] = {"rows": len(idx), "before": _errors(before[idx], sub),
                                      "after": _errors(after[idx], sub)}
        return res

    doc = {
        "schema_version": CALIBRATION_VERSION,
        "version": _dt.date.today().isoformat(),
        "cost_model": "analytical",
        "shared": shared,
        "systems": per_system,
        "domain": domain_of(train),
        "provenance": {
            "data": data,
            "rows_read": len(points),
            "rows_train": len(train),
            "rows_holdout": len(hold),
            "holdout_fraction": holdout,
            "holdout_unit": "configuration (system, model, framework, mode, ISL/OSL, formats, deployment)",
            "seed": seed,
            "steps": steps,
            "learning_rate": lr,
            "pull": pull,
            "loss": "mean squared log error of TTFT, TPOT (and InferenceMAX per-GPU mixed tok/s)",
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        },
        "errors": {"train": eval_set(f_train, train), "holdout": eval_set(f_hold, hold)},
    }
    return doc


def write_calibration(doc: dict, path) -> None:
    """Write the calibration document as TOML (NaN-free; nested tables)."""
    import tomli_w

    def clean(x):
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items() if not (isinstance(v, float) and not math.isfinite(v))}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if isinstance(x, (np.floating,)):
            return float(x)
        if isinstance(x, (np.integer,)):
            return int(x)
        return x

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    header = ("# Calibrated efficiency knobs of the analytical cost model, written by `codesign calibrate`.\n"
              "# Do not edit by hand: rerun the command (see [provenance]).\n")
    Path(path).write_text(header + tomli_w.dumps(clean(doc)), encoding="utf-8")
