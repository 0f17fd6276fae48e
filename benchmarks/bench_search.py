"""Seconds and trials for `codesign optimize` to reach 99% of the hypervolume of an exhaustive
vectorised sweep (10^6 Sobol' points) on the flagship spec.

    python benchmarks/bench_search.py [--points 1000000] [--trials 1000] [--json]

The hypervolume reference point is the sweep front's nadir pushed out by 10% of its range; the
study's hypervolume (feasible trials only) is measured after every batch with the same point.
Time counts from the start of the search (study creation, seed sweep, gradient seeds, batches),
after imports; the sweep itself is not timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=str(REPO / "specs" / "jalapeno-gpt-oss-120b.toml"))
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    import optuna

    from codesign.search import _as_min, hypervolume, run_search, run_sweep, satisfied
    from codesign.spec import load_spec

    spec = load_spec(a.spec)
    t0 = time.perf_counter()
    sw = run_sweep(spec, points=a.points, method="sobol", seed=12345)
    sweep_s = time.perf_counter() - t0
    dirs = [d for _, d in sw["space"].objectives]
    ref = np.asarray([(-x if d == "maximize" else x) for x, d in zip(sw["reference_point"], dirs)])
    target = sw["hypervolume"]
    hit = {}
    start = time.perf_counter()
    holder = {}

    def progress(done, total):
        st = holder.get("study")
        if st is None or "t" in hit:
            return
        ts = [t for t in st.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
              if t.user_attrs.get("feasible") and satisfied(t)]
        if not ts:
            return
        hv = hypervolume(_as_min(np.asarray([t.values for t in ts]), dirs), ref)
        if hv >= 0.99 * target:
            hit.update(t=time.perf_counter() - start, trials=done, hv=hv)

    import codesign.search as S

    orig = S._prepare

    def prep(ctx, total, **kw):
        holder["study"] = ctx.study
        return orig(ctx, total, **kw)

    S._prepare = prep
    with tempfile.TemporaryDirectory() as d:
        res = run_search(spec, trials=a.trials, seed=0, out_dir=Path(d), storage=None, progress=progress)
    total_s = time.perf_counter() - start
    ts = [t for t in res.trials if t.user_attrs.get("feasible") and satisfied(t)]
    final = hypervolume(_as_min(np.asarray([t.values for t in ts]), dirs), ref) if ts else 0.0
    doc = {"schema_version": 1, "spec": a.spec, "sweep_points": sw["points"], "sweep_seconds": sweep_s,
           "sweep_hypervolume": target, "final_hypervolume": final, "final_ratio": final / target,
           "search_seconds": total_s, "search_trials": len(res.trials),
           "seconds_to_99pct_hypervolume": hit.get("t"), "trials_to_99pct_hypervolume": hit.get("trials")}
    if a.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        for k, v in doc.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
