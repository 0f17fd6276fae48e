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

import itertools
import math
import re
import warnings
from typing import Any

import attrs
import numpy as np
from attrs import frozen

from .costmodel import DESIGN_METRICS, SUMMARY_METRICS
from .errors import CodesignError, SpecError
from .spec import SearchParam, Spec, quantity_kind
from .units import QuantityError, parse_quantity

FORMAT_KEY = re.compile(r"^deployment\.\w*format$")
INT_KEYS = {"network.scaleup_domain", "deployment.tp", "deployment.pp", "deployment.ep",
            "deployment.dp_attention"} | {f"deployment.{r}.{k}" for r in ("prefill", "decode")
                                           for k in ("chips", "tp", "ep", "dp_attention")}

#: Metrics a search can optimise or constrain: summary metrics and design metrics (per design).
SEARCH_METRICS = {**SUMMARY_METRICS, **{k: v for k, v in DESIGN_METRICS.items() if v[1]},
                  "hbm_stacks": ("stacks", "min"), "mixed_tok_s_per_kw_at_tpot": ("tok/s/kW", "max")}

#: Unit kind (codesign.units.KINDS) of a metric's SI value, and the factor from SI to the metric's unit.
_METRIC_KIND = {"_s": ("s", 1.0), "_w": ("W", 1.0), "area_mm2": ("m^2", 1e6)}


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


@frozen
class Constraint:
    metric: str
    bound: float  # in the metric's own unit
    sense: str  # "max" (metric <= bound) or "min" (metric >= bound)

    @property
    def name(self) -> str:
        unit = SEARCH_METRICS.get(self.metric, ("", ""))[0]
        return f"{self.metric}_{'over' if self.sense == 'max' else 'under'}_{self.bound:g}{unit}"


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
        SpecError: a problem in ``[search]``, naming ``search.params.<key>`` etc.
    """
    s = spec.search
    if s is None:
        raise _err(spec, "search", "missing: `codesign optimize` needs a [search] table")
    problems = []
    params = []
    for key, p in s.params.items():
        where = f"search.params.{key}"
        try:
            kind = quantity_kind(key)
        except KeyError:
            problems.append((spec.path, where, "no such spec key"))
            continue
        if key not in parameters:
            problems.append((spec.path, where, f"the cost model {spec.deployment.cost_model!r} cannot "
                                               f"vary this key; it can vary {', '.join(parameters)}"))
            continue
        try:
            params.append(_param(key, kind, p))
        except (QuantityError, ValueError, TypeError) as exc:
            problems.append((spec.path, where, str(exc)))
    if not s.params:
        problems.append((spec.path, "search.params", "declare at least one parameter to search"))
    objectives = []
    for i, o in enumerate(s.objectives):
        if o.metric not in SEARCH_METRICS:
            problems.append((spec.path, f"search.objectives.{i}.metric",
                             f"unknown metric {o.metric!r}; expected one of {', '.join(SEARCH_METRICS)}"))
        objectives.append((o.metric, o.direction))
    if not objectives:
        problems.append((spec.path, "search.objectives", "declare at least one objective"))
    constraints = []
    for i, c in enumerate(s.constraints):
        where = f"search.constraints.{i}"
        if c.metric not in SEARCH_METRICS:
            problems.append((spec.path, f"{where}.metric",
                             f"unknown metric {c.metric!r}; expected one of {', '.join(SEARCH_METRICS)}"))
            continue
        if (c.max is None) == (c.min is None):
            problems.append((spec.path, where, "give exactly one of max or min"))
            continue
        sense, raw = ("max", c.max) if c.max is not None else ("min", c.min)
        try:
            constraints.append(Constraint(c.metric, _metric_value(c.metric, raw), sense))
        except (QuantityError, ValueError) as exc:
            problems.append((spec.path, f"{where}.{sense}", str(exc)))
    envelope = []
    for key, choices in s.envelope.items():
        where = f"search.envelope.{key}"
        if not key.startswith("deployment.") or key not in parameters:
            problems.append((spec.path, where, "the envelope takes deployment keys the cost model can vary"))
            continue
        if key in s.params:
            problems.append((spec.path, where, "is also a searched parameter; use one or the other"))
            continue
        if not choices:
            problems.append((spec.path, where, "list at least one choice"))
            continue
        try:
            envelope.append((key, _param(key, quantity_kind(key), SearchParam(choices=tuple(choices))).choices))
        except (QuantityError, ValueError, TypeError) as exc:
            problems.append((spec.path, where, str(exc)))
    if problems:
        raise SpecError(problems)
    return SearchSpace(tuple(params), tuple(objectives), tuple(constraints), tuple(envelope))


def _metric_value(metric: str, raw) -> float:
    """A constraint bound in the metric's own unit (``"700 W"`` for ``peak_power_w`` → 700)."""
    for suffix, (kind, scale) in _METRIC_KIND.items():
        if metric.endswith(suffix):
            if isinstance(raw, str):
                return parse_quantity(raw, kind) * scale
            break
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ValueError(f"expected a number in the metric's unit (got {raw!r})")
    return float(raw)


def _param(key: str, kind: str | None, p) -> Param:
    def val(x):
        if kind:
            return parse_quantity(x, kind, allow_zero=True)
        if FORMAT_KEY.match(key):
            if not isinstance(x, str):
                raise TypeError(f"expected a number-format name (got {x!r})")
            return x
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise TypeError(f"expected a number (got {x!r})")
        return x

    if p.choices is not None:
        if p.low is not None or p.high is not None:
            raise ValueError("give either choices or low/high, not both")
        if not p.choices:
            raise ValueError("choices is empty")
        return Param(key, kind, "categorical", choices=tuple(val(c) for c in p.choices))
    if p.low is None or p.high is None:
        raise ValueError("give low and high, or choices")
    low, high = float(val(p.low)), float(val(p.high))
    if not low < high:
        raise ValueError(f"low must be below high (got {p.low!r} and {p.high!r})")
    if p.log and low <= 0:
        raise ValueError("a log-scaled range needs low > 0")
    if key in INT_KEYS:
        return Param(key, kind, "int", low=int(low), high=int(high), log=p.log,
                     step=int(val(p.step)) if p.step is not None else 1)
    return Param(key, kind, "float", low=low, high=high, log=p.log,
                 step=float(val(p.step)) if p.step is not None else None)


def suggest(trial, prm: Param):
    if prm.type == "categorical":
        return trial.suggest_categorical(prm.key, list(prm.choices))
    if prm.type == "int":
        return trial.suggest_int(prm.key, prm.low, prm.high, step=prm.step or 1, log=prm.log)
    return trial.suggest_float(prm.key, prm.low, prm.high, log=prm.log, step=prm.step)


def overrides_from(values: list[dict], space: SearchSpace) -> dict[str, np.ndarray]:
    """Trial parameter dicts → cost-model overrides, arrays of shape ``(n,)``."""
    out = {}
    for prm in space.params:
        col = [v[prm.key] for v in values]
        out[prm.key] = np.asarray(col, dtype=object if FORMAT_KEY.match(prm.key) else np.float64)
    return out


def design_metrics(ev, tpot_reference_s: float | None = None) -> list[dict[str, float]]:
    """Per design: summary metrics plus design metrics, as plain floats (NaN when infeasible)."""
    summ = ev.summary(tpot_reference_s=tpot_reference_s)
    rows = []
    for i in range(ev.n_designs):
        r = {k: float(v[i]) for k, v in summ.items()}
        r.update({k: float(v[i]) for k, v in ev.design.items()})
        rows.append(r)
    return rows


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
        if not math.isfinite(v):
            out[c.name] = 1.0
        else:
            out[c.name] = (v - c.bound) if c.sense == "max" else (c.bound - v)
    return out


def evaluate_envelope(spec: Spec, values: list[dict], space: SearchSpace, evaluate,
                      tpot_reference_s: float | None = None) -> tuple[list[dict], list[dict], list[str]]:
    """Evaluate designs at every envelope combination in ONE cost-model call.

    Returns, per design: the metrics (each summary metric at its best over the combinations),
    the combination that gave each metric, and why the design is infeasible (``""`` if it is not).
    """
    combos = space.combos()
    m = len(combos)
    rows_in = [dict(v, **c) for v in values for c in combos]  # design-major
    keys = [p.key for p in space.params] + [k for k, _ in space.envelope]
    overrides = {k: np.asarray([r[k] for r in rows_in], dtype=object if FORMAT_KEY.match(k) else np.float64)
                 for k in keys}
    ev = evaluate(spec, overrides if keys else None)
    flat = design_metrics(ev, tpot_reference_s=tpot_reference_s)
    metrics, configs, reasons = [], [], []
    better = {k: v[1] for k, v in SEARCH_METRICS.items()}
    for d in range(len(values)):
        block = flat[d * m:(d + 1) * m]
        best: dict[str, float] = {}
        where: dict[str, dict] = {}
        for metric in block[0]:
            vals = [(r[metric], i) for i, r in enumerate(block) if math.isfinite(r[metric])]
            if not vals:
                best[metric] = math.nan
                continue
            v, i = (min if better.get(metric) == "min" else max)(vals)
            best[metric] = v
            where[metric] = {k: _plain(x) for k, x in combos[i].items()}
        metrics.append(best)
        configs.append(where)
        rs = [ev.reasons[d * m + i] for i in range(m)]
        reasons.append("" if any(not r for r in rs) else "; ".join(dict.fromkeys(rs)))
    return metrics, configs, reasons


def reference_envelope(ref_spec: Spec, space: SearchSpace, evaluate) -> dict[str, Any]:
    """Evaluate a reference design over the envelope's deployment choices (and over categorical
    ``deployment.*`` search parameters, so it gets every deployment choice the designs get).

    Each metric takes its best value over the choices, as published comparisons report each
    metric at its best configuration. Returns ``{"metrics", "configs", "choices"}``.
    """
    dep = [p for p in space.params if p.key.startswith("deployment.") and p.type == "categorical"]
    env = SearchSpace((), space.objectives, (), tuple(space.envelope) + tuple((p.key, p.choices) for p in dep))
    metrics, configs, _ = evaluate_envelope(ref_spec, [{}], env, evaluate)
    return {"metrics": {k: v for k, v in metrics[0].items() if math.isfinite(v)}, "configs": configs[0],
            "choices": {k: [_plain(c) for c in v] for k, v in env.envelope}}


def _plain(x):
    if isinstance(x, (np.floating, float)) and float(x).is_integer():
        return int(x)
    return x.item() if hasattr(x, "item") else x


def ratios(metrics: dict, ref: dict, space: SearchSpace) -> dict[str, float]:
    """design / reference for each objective (and the Jalapeño-table metrics where present)."""
    keys = [m for m, _ in space.objectives] + [k for k in ("peak_mixed_tok_s_per_kw", "min_e2e_latency_s",
                                                          "min_tpot_s", "mixed_tok_s_per_kw_at_tpot")]
    out = {}
    for k in dict.fromkeys(keys):
        a, b = metrics.get(k, math.nan), ref.get(k, math.nan)
        if math.isfinite(a) and math.isfinite(b) and b != 0:
            out[k] = a / b
    return out


def beats(metrics: dict, ref: dict, space: SearchSpace) -> bool:
    """True if the design is strictly better than the reference on every objective."""
    for metric, direction in space.objectives:
        a, b = metrics.get(metric, math.nan), ref.get(metric, math.nan)
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        if (direction == "maximize" and not a > b) or (direction == "minimize" and not a < b):
            return False
    return True


def satisfied(trial) -> bool:
    """True if a finished trial met every constraint (Optuna: feasible when all values <= 0)."""
    c = trial.constraints or {}
    values = c.values() if isinstance(c, dict) else c
    return all(v <= 0 for v in values)


def sample_uniform(space: SearchSpace, n: int, seed: int) -> list[dict]:
    """``n`` random designs from the search space (log-uniform where the parameter is log-scaled)."""
    rng = np.random.default_rng(seed)
    cols = {}
    for p in space.params:
        if p.type == "categorical":
            idx = rng.integers(0, len(p.choices), n)
            cols[p.key] = [p.choices[i] for i in idx]
        else:
            u = rng.random(n)
            if p.log:
                x = np.exp(np.log(p.low) + u * (np.log(p.high) - np.log(p.low)))
            else:
                x = p.low + u * (p.high - p.low)
            if p.type == "int":
                x = np.clip(np.round(x), p.low, p.high).astype(int)
            elif p.step:
                x = np.clip(p.low + np.round((x - p.low) / p.step) * p.step, p.low, p.high)
            cols[p.key] = list(x)
    return [{k: _plain(v[i]) for k, v in cols.items()} for i in range(n)]


def pareto_mask(values: np.ndarray, directions: list[str]) -> np.ndarray:
    """Non-dominated rows of ``values`` (shape ``(n, k)``), each column maximised or minimised."""
    v = np.asarray(values, dtype=np.float64).copy()
    for j, d in enumerate(directions):
        if d == "maximize":
            v[:, j] = -v[:, j]
    n = len(v)
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        if not keep[i]:
            continue
        dominated = np.all(v <= v[i], axis=1) & np.any(v < v[i], axis=1)
        if dominated.any():
            keep[i] = False
    return keep


def sweep_seeds(spec: Spec, space: SearchSpace, n: int, seed: int, evaluate, limit: int) -> list[dict]:
    """Designs on the feasible Pareto front of a vectorised random sweep of ``n`` points.

    The whole sweep is one batched cost-model call; its best points enter the study as enqueued
    trials (tagged ``seed_source = "sweep"``), so a short search starts from a good front.
    """
    values = sample_uniform(space, n, seed)
    metrics, _, _ = evaluate_envelope(spec, values, space, evaluate)
    ok = []
    for i, m in enumerate(metrics):
        vals, feasible = objective_values(m, space)
        if feasible and all(v <= 0 for v in constraint_values(m, space, True).values()):
            ok.append((i, vals))
    if not ok:
        return []
    idx = np.asarray([i for i, _ in ok])
    front = idx[pareto_mask(np.asarray([v for _, v in ok]), [d for _, d in space.objectives])]
    if len(front) > limit:  # spread along the first objective
        order = front[np.argsort([metrics[i][space.objectives[0][0]] for i in front])]
        front = order[np.linspace(0, len(order) - 1, limit).round().astype(int)]
    return [values[i] for i in front]


def redact(url: str) -> str:
    """A storage URL with any password replaced by ``***``."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def make_sampler(name: str, seed: int, population: int):
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
    raise CodesignError(f"unknown sampler {name!r}; expected nsga2, tpe, gp or random")


def open_storage(url: str | None, out_dir):
    """An Optuna storage: a journal file in ``out_dir`` by default, or an RDB URL."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if url is None or url.startswith("journal:") or url.endswith(".journal"):
        path = url[len("journal:"):] if url and url.startswith("journal:") else (url or str(out_dir / "study.journal"))
        return optuna.storages.JournalStorage(JournalFileBackend(path)), path
    try:
        return optuna.storages.RDBStorage(url), redact(url)
    except Exception as exc:  # noqa: BLE001 - sqlalchemy/driver errors carry the URL
        msg = redact(str(exc).splitlines()[0]).replace(url, redact(url))
        raise CodesignError(f"cannot open storage {redact(url)}: {msg}") from None


@attrs.define
class SearchResult:
    study: Any
    space: SearchSpace
    trials: list  # completed FrozenTrials
    pareto: list  # FrozenTrials on the feasible Pareto front
    reference: dict | None
    storage: str
    new_trials: int


def run_search(spec: Spec, *, trials: int | None, seed: int | None, out_dir, storage: str | None,
               progress=None, evaluate=None) -> SearchResult:
    """Run (or resume) the search a spec's ``[search]`` declares.

    Args:
        trials: total completed trials wanted in the study (default ``search.trials``); a resumed
            study only runs the missing ones.
        seed: sampler seed (default ``search.seed``).
        out_dir: directory for the default journal storage.
        storage: an Optuna storage URL (``postgresql://…``, ``sqlite:///…``) or a journal path.
        progress: optional ``callback(done, total)``.

    Raises:
        SpecError: bad ``[search]``; PluginError: the cost model failed.
    """
    import optuna

    from .baselines import reference_spec
    from .evaluation import evaluate as _evaluate
    from .pluginmanager import get_plugin_manager

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    evaluate = evaluate or _evaluate
    pm = get_plugin_manager()
    model = pm.cost_model(spec.deployment.cost_model)
    space = build_space(spec, model.parameters())
    s = spec.search
    total = trials if trials is not None else s.trials
    seed = s.seed if seed is None else seed
    store, where = open_storage(storage, out_dir)
    name = spec.name or "codesign-study"
    directions = [d for _, d in space.objectives]
    sampler = make_sampler(s.sampler, seed, population=max(8, min(50, s.batch_size)))
    study = optuna.create_study(study_name=name, storage=store, directions=directions,
                                sampler=sampler, load_if_exists=True)
    if list(study.directions) != [optuna.study.StudyDirection.MAXIMIZE if d == "maximize"
                                  else optuna.study.StudyDirection.MINIMIZE for d in directions]:
        raise CodesignError(f"the study {name!r} in {where} has other objectives; use another --out or --storage")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([m for m, _ in space.objectives])
    study.set_user_attr("spec", spec.path)

    ref = None
    if s.reference:
        ref_spec = reference_spec(spec, s.reference, pm=pm)
        ref = reference_envelope(ref_spec, space, evaluate)
        ref["name"] = ref_spec.name or s.reference
    tpot_ref = ref["metrics"].get("min_tpot_s") if ref else None

    # A killed run leaves RUNNING trials in a private journal: fail them so counts stay right.
    if storage is None:
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            study.tell(t.number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
    done = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    todo = max(total - done, 0)
    if done == 0 and todo > 0 and s.seed_sweep > 0:
        for v in sweep_seeds(spec, space, s.seed_sweep, seed, evaluate, limit=max(1, min(todo // 4, 25))):
            study.enqueue_trial(v, user_attrs={"seed_source": "sweep"}, skip_if_exists=True)
    new = 0
    if progress:
        progress(done, total)
    while new < todo:
        batch = min(s.batch_size, todo - new)
        asked = [study.ask() for _ in range(batch)]
        values = [{p.key: suggest(t, p) for p in space.params} for t in asked]
        rows, configs, reasons = evaluate_envelope(spec, values, space, evaluate, tpot_reference_s=tpot_ref)
        for t, m, cfg, reason in zip(asked, rows, configs, reasons):
            if space.envelope:
                t.set_user_attr("configs", cfg)
            vals, ok = objective_values(m, space)
            for cname, cval in constraint_values(m, space, ok).items():
                t.set_constraint(cname, float(cval))
            t.set_user_attr("metrics", {k: (v if math.isfinite(v) else None) for k, v in m.items()})
            t.set_user_attr("feasible", ok)
            if reason or not ok:
                t.set_user_attr("infeasible_reason", reason or "no feasible concurrency point")
            study.tell(t, vals)
        new += batch
        if progress:
            progress(done + new, total)
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    pareto = [t for t in study.best_trials if t.user_attrs.get("feasible")
              and satisfied(t)]
    pareto.sort(key=lambda t: t.values[0], reverse=directions[0] == "maximize")
    return SearchResult(study, space, complete, pareto, ref, where, new)
