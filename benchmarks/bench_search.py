"""Seconds and trials for `codesign optimize` to reach 99% of the hypervolume of an exhaustive
vectorised sweep (10^6 Sobol' points) on the flagship spec.

    python benchmarks/bench_search.py [--points 1000000] [--trials 1000] [--repeat 3] [--json]
                                      [--sweep-cache FILE]

The hypervolume reference point is the sweep front's nadir pushed out by 10% of its range; the
study's hypervolume (feasible trials that meet every constraint) is measured after every batch
with the same point, and so is the trial count (every complete trial, the enqueued seeds
included).

Honest timing: the sweep is not timed. Each search runs in a fresh Python process (nothing the
sweep compiled or cached is reused), and its clock starts after the imports, just before
``run_search`` opens the study; so it counts the reference design's evaluation, every JAX
compilation, the seed sweep and its refinement, the gradient seeds and the batches, as a user
running ``codesign optimize`` pays them. ``--repeat`` runs the search that many times (fresh
processes, same seed) and reports the median (each run's figures are kept under ``runs``).

``--sweep-cache FILE`` stores the sweep's target (hypervolume, reference point, front) in FILE and
reuses it when the spec file, point count and sweep seed match (the sweep takes about a minute).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SWEEP_SEED = 12345


def _inputs_hash(spec_path: str) -> str:
    """Hash of what the sweep's result depends on: the merged spec and the cost model's source."""
    import inspect

    from codesign.pluginmanager import get_plugin_manager
    from codesign.spec import load_raw

    raw, _ = load_raw(spec_path)
    h = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode())
    pm = get_plugin_manager()
    for name in sorted(pm.cost_models):
        try:
            h.update(Path(inspect.getfile(type(pm.cost_model(name)))).read_bytes())
        except (TypeError, OSError):
            pass
    for mod in ("costmodel", "evaluation"):
        h.update((REPO / "codesign" / f"{mod}.py").read_bytes())
    return h.hexdigest()


def sweep_target(spec_path: str, points: int, cache: str | None) -> dict:
    """The exhaustive sweep's hypervolume and reference point (objective units), maybe cached."""
    key = {"spec": str(Path(spec_path).resolve()), "inputs_sha256": _inputs_hash(spec_path),
           "points": points, "seed": SWEEP_SEED}
    if cache and Path(cache).is_file():
        doc = json.loads(Path(cache).read_text())
        if doc.get("key") == key:
            return doc
    from codesign.search import run_sweep
    from codesign.spec import load_spec

    t0 = time.perf_counter()
    sw = run_sweep(load_spec(spec_path), points=points, method="sobol", seed=SWEEP_SEED)
    fm = sw["front"]["metrics"]
    objs = [m for m, _ in sw["space"].objectives]
    doc = {"key": key, "points": sw["points"], "feasible": sw["feasible"], "seconds": time.perf_counter() - t0,
           "hypervolume": sw["hypervolume"], "reference_point": sw["reference_point"],
           "directions": [d for _, d in sw["space"].objectives],
           "front": [[float(fm[m][i]) for m in objs] for i in range(len(fm[objs[0]]))]}
    if cache:
        Path(cache).write_text(json.dumps(doc, indent=1))
    return doc


def search_once(spec_path: str, trials: int, seed: int, target: dict) -> dict:
    """One search in this process (the child): seconds and trials to 99% of the target."""
    import numpy as np
    import optuna

    import codesign.search as S
    from codesign.spec import load_spec

    spec = load_spec(spec_path)
    dirs = target["directions"]
    ref = np.asarray([(-x if d == "maximize" else x) for x, d in zip(target["reference_point"], dirs)])
    goal = 0.99 * target["hypervolume"]
    hit: dict = {}
    holder: dict = {}
    curve = []

    def hv_now():
        st = holder["study"]
        ts = [t for t in st.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
              if t.user_attrs.get("feasible") and S.satisfied(t)]
        return S.hypervolume(S._as_min(np.asarray([t.values for t in ts]), dirs), ref) if ts else 0.0

    def progress(done, total):
        if "study" not in holder:
            return
        now = time.perf_counter() - start
        hv = hv_now()
        curve.append((round(now, 3), done, hv / target["hypervolume"]))
        if "t" not in hit and hv >= goal:
            hit.update(t=now, trials=done)

    orig = S._prepare

    def prep(ctx, total, **kw):
        holder["study"] = ctx.study
        return orig(ctx, total, **kw)

    S._prepare = prep
    with tempfile.TemporaryDirectory() as d:
        start = time.perf_counter()
        res = S.run_search(spec, trials=trials, seed=seed, out_dir=Path(d), storage=None, progress=progress)
        total_s = time.perf_counter() - start
        final = hv_now()
    return {"seconds_to_99pct_hypervolume": hit.get("t"), "trials_to_99pct_hypervolume": hit.get("trials"),
            "search_seconds": total_s, "search_trials": len(res.trials), "final_hypervolume": final,
            "final_ratio": final / target["hypervolume"], "curve": curve}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=str(REPO / "specs" / "jalapeno-gpt-oss-120b.toml"))
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="search seed")
    ap.add_argument("--repeat", type=int, default=1, help="searches (fresh processes); the median is reported")
    ap.add_argument("--sweep-cache", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)  # internal: target JSON file
    a = ap.parse_args()

    if a.child:
        json.dump(search_once(a.spec, a.trials, a.seed, json.loads(Path(a.child).read_text())), sys.stdout)
        return 0

    target = sweep_target(a.spec, a.points, a.sweep_cache)
    runs = []
    with tempfile.TemporaryDirectory() as d:
        tf = Path(d) / "target.json"
        tf.write_text(json.dumps(target))
        for _ in range(a.repeat):
            out = subprocess.run([sys.executable, __file__, "--spec", a.spec, "--trials", str(a.trials),
                                  "--seed", str(a.seed), "--child", str(tf)],
                                 check=True, capture_output=True, text=True).stdout
            runs.append(json.loads(out))

    def med(k):
        v = [r[k] for r in runs]
        return None if any(x is None for x in v) else statistics.median(v)

    doc = {"schema_version": 1, "spec": a.spec, "sweep_points": target["points"],
           "sweep_seconds": target["seconds"], "sweep_hypervolume": target["hypervolume"],
           "sweep_front_size": len(target["front"]), "repeat": a.repeat,
           "seconds_to_99pct_hypervolume": med("seconds_to_99pct_hypervolume"),
           "trials_to_99pct_hypervolume": med("trials_to_99pct_hypervolume"),
           "final_ratio": med("final_ratio"), "search_seconds": med("search_seconds"),
           "search_trials": med("search_trials"),
           "runs": [{k: v for k, v in r.items() if k != "curve"} | {"curve": r["curve"][:12]} for r in runs]}
    if a.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        for k, v in doc.items():
            if k != "runs":
                print(f"{k}: {v}")
        for i, r in enumerate(runs):
            print(f"run {i}: " + ", ".join(f"{k}={r[k]}" for k in ("seconds_to_99pct_hypervolume",
                  "trials_to_99pct_hypervolume", "final_ratio", "search_seconds")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
