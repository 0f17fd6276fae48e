"""``codesign sweep SPEC``: a vectorised sweep of the ``[search]`` space (up to :data:`MAX_POINTS`,
10^7 designs) and its feasible Pareto front."""

from __future__ import annotations

from ._common import path_type, seed_type, whole_type

import csv
import json
import sys

#: The most designs ``--points`` takes. The sampled columns are held whole (10^7 designs of the
#: flagship's 5 parameters: 0.8 GB with the unit samples) while the cost model prices them in
#: ``--chunk`` slices; 10^6 take about 35 s on 2 cores. The summary, ``--points``' help and the
#: check all say this figure (the summary said ~10^6 while the check allowed 10^7; session 41).
MAX_POINTS = 10_000_000


def register(sub) -> None:
    p = sub.add_parser(
        "sweep", help="evaluate up to 10^7 designs of [search] in vectorised chunks; write the Pareto front",
        description="Sample --points designs of SPEC's [search] space (random, Sobol' or grid), price "
                    "them in vectorised chunks (every envelope choice, SLOs and constraints as in "
                    "`codesign optimize`), keep the feasible Pareto front (computed in JAX) and write it "
                    "to DIR/sweep_front.csv and DIR/sweep_front.json. Progress on stderr. DIR must be "
                    "new, empty, or the output directory of a previous sweep (its front files are "
                    "replaced) or `codesign optimize` run of the same spec.",
        epilog="Exit codes: 0 at least one feasible design; 1 no feasible design (the front files are "
               "still written, empty, and the summary names the most common reasons); 2 bad input (spec, option or output directory, "
               "or a search no design of which can be feasible whatever the searched values, as optimize refuses it; an error: line on "
               "stderr, or a count line and one line per problem); 3 a bug in codesign or a plugin (one internal error: line naming it); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).")
    p.add_argument("spec", help="spec TOML with a [search] table")
    p.add_argument("--points", type=whole_type, default=100_000,
                   help="designs to evaluate (default 100000, at most 10^7; 10^6 take about 35 s on 2 cores). "
                        "--method grid evaluates the finest full grid of at most this many: every choice × the same "
                        "number of levels of each number, so usually fewer (the summary gives its shape, --json its grid_shape); a "
                        "--points below the coarsest grid (each number's low and high) is refused, naming its size")
    p.add_argument("--method", choices=("random", "sobol", "grid"), default="sobol", help="sampling (default sobol)")
    p.add_argument("--seed", type=seed_type, help="sampling seed (default: search.seed)")
    p.add_argument("--chunk", type=whole_type, default=50_000, help="designs per vectorised call (default 50000)")
    p.add_argument("--out", metavar="DIR", type=path_type, default=None,
                   help="output directory: new, empty, or a previous sweep's or optimize run's of this spec "
                        "(default: runs/<spec name>)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of a summary")
    p.set_defaults(func=run)


def run(args) -> int:

    from ..costmodel import design_value
    from ..errors import CodesignError, ExitCode
    from ..evaluation import cost_model_record, efficiency_record, jsonable, list_edge, load_spec_checked
    from ..search import (INT_KEYS, SEARCH_METRICS, budget_warnings, check_search, grid_levels, grid_points_problem,
                          grid_shape, run_sweep)
    from ..report import SHOWN, CauseCounter, constraint_records, front_notes, param_header, reasons_text, search_slo_line
    from ..search import _check_out_dir, check_study_dir
    from ._common import default_out_dir, ensure_out_dir, print_deployment_notes, progress_bar

    spec = load_spec_checked(args.spec)
    if args.points < 1 or args.points > MAX_POINTS:
        raise CodesignError(f"--points must be between 1 and 10^7 (got {args.points})")
    if args.chunk < 1:
        raise CodesignError(f"--chunk must be >= 1 (got {args.chunk})")
    # checked now, created once the sweep has run (a refused [search] leaves no empty directory)
    out_option = "--out" if args.out else "output directory"
    out = ensure_out_dir(args.out or default_out_dir(spec, args.spec), out_option, create=False)
    # optimize's rule (both default to runs/<spec name>): a directory of unrelated files, or of
    # another spec's study, is refused before the sweep runs, with nothing written
    check_study_dir(out, None, out_option, resumes=False)
    study = spec.name or "codesign-study"  # optimize's study name for this spec (run_search)
    if out.is_dir():
        _check_out_dir(out, study, clash="replace or sit beside that study's results")
    space = check_search(spec)  # what the sweep would refuse, refused before the warnings (as optimize does)
    grid, grid_counts = "", None
    if args.method == "grid":
        # --points is a budget for a grid too: the coarsest full grid above it was evaluated whole
        # (--points 10 priced the flagship's 80 designs; fresh-user trial, session 42). The
        # library's own wording (search.grid_points_problem), framed by the option and the spec
        if problem := grid_points_problem(space, args.points, where=f"{args.spec}'s [search] space"):
            raise CodesignError(f"--points {args.points}: {problem}")
        levels = grid_levels(space, args.points)  # the grid run_sweep samples (search.sample_columns)
        grid = grid_shape(space, levels)
        grid_counts = {p.key: len(lv) for p, lv in zip(space.params, levels)}
    # a spec with no [deployment]: the defaults it takes (but the keys the search varies)
    # and a [deployment] that sets no weights format: the one taken when it is not the model's own
    print_deployment_notes(spec, args.spec, varied=[*spec.search.params, *spec.search.envelope])
    warned = budget_warnings(spec)
    for w in warned:  # an include's constraints replaced by the spec's own, say
        print(f"warning: {w}", file=sys.stderr)
    causes = CauseCounter()
    # named as optimize's bar is, by the spec's name (the bar said "sweep" alone: fresh-user trial)
    with progress_bar("sweep", spec.name or args.spec) as progress:
        res = run_sweep(spec, points=args.points, method=args.method, seed=args.seed, chunk=args.chunk,
                        progress=progress, problems=causes.add)
    # counted over every design when none is feasible (run_sweep stops asking once one is)
    reasons = None if res["feasible"] else causes.top(noun="designs")
    space = res["space"]
    fc, fm = res["front"]["columns"], res["front"]["metrics"]
    # optimize's pareto.csv metrics (report.SHOWN; mixed_tok_s_per_kw_at_tpot needs a reference's
    # TPOT, which a sweep does not price, so the filter below drops it) and the design metrics
    # constraints bound. Not an SLO's point metric: its column ("ttft_s") held the best value over
    # the design's points, the min_ttft_s column again under a name that reads as one point's
    # (fresh-user trial, session 40); the SLO's bound is in the JSON's constraints
    metrics = list(dict.fromkeys([m for m, _ in space.objectives]
                                 + [c.metric for c in space.constraints if not c.slo] + SHOWN))
    metrics = [m for m in metrics if m in fm]
    n = len(next(iter(fc.values()))) if fc else 0
    # counts written as counts (TP 8, not 8.0), as the design files of optimize write them
    whole = {p.key for p in space.params if p.type == "int" or p.key in INT_KEYS}
    rows = [{"params": {k: int(v[i]) if k in whole else jsonable(v[i].item() if hasattr(v[i], "item") else v[i])
                        for k, v in fc.items()},
             "metrics": {k: jsonable(design_value(k, fm[k][i])) for k in metrics},
             # the envelope choice (TP, ...) behind each listed metric: pareto.json's rows' configs
             "configs": {k: v for k, v in res["front"]["configs"][i].items() if k in metrics}}
            for i in range(n)]
    # as pareto.json's notes, over every metric of each front design (tdp_w is no column)
    notes = front_notes([(f"row {i + 1} of sweep_front.csv", {k: fm[k][i] for k in fm}) for i in range(n)],
                        noun="front designs", largest=list_edge(spec.workload.concurrency),
                        slo=any(c.slo for c in space.constraints), objectives=[m for m, _ in space.objectives])
    doc = jsonable({
        "schema_version": 1, "spec": spec.path, "study": study, "cost_model": cost_model_record(spec),
        # whose calibrated knobs priced the designs (spec.efficiency_from), or null: as pareto.json
        "efficiency_from": efficiency_record(spec),
        "method": res["method"], "seed": res["seed"],
        "points": res["points"], "feasible_points": res["feasible"],
        # --method grid: the grid's shape as the summary states it, {parameter: its levels (a
        # categorical's choices)} in the [search] order, whose product is points; null otherwise
        "grid_shape": grid_counts,
        # why designs were not feasible, most common first, when none is (null when some design is):
        # as optimize's infeasible_reasons, counting designs instead of trials
        "infeasible_reasons": reasons,
        "warnings": warned,
        "notes": notes,  # what to keep in mind reading the front's figures (report.front_notes)
        "objectives": [{"metric": m, "direction": d, "unit": SEARCH_METRICS[m][0]} for m, d in space.objectives],
        "constraints": constraint_records(space),  # as pareto.json's
        "hypervolume": res["hypervolume"], "hypervolume_reference_point": res["reference_point"],
        # front designs another one beats within this relative resolution are not listed
        "pareto_resolution": res["pareto_resolution"], "unresolved_points": res["unresolved_points"],
        "front": rows,
    })
    ensure_out_dir(out, out_option)
    (out / "sweep_front.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    with (out / "sweep_front.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        pk = [p.key for p in space.params]
        w.writerow([param_header(k, p.kind) for k, p in zip(pk, space.params)] + metrics)
        for r in rows:
            w.writerow([r["params"][k] for k in pk] + [r["metrics"][m] for m in metrics])
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        left = (f" ({res['unresolved_points']} more within the {res['pareto_resolution']:g} relative resolution "
                "left out)" if res["unresolved_points"] else "")
        how = (f"grid: {grid}, the finest full grid of at most --points {args.points}" if args.method == "grid"
               else args.method)
        print(f"{res['points']} designs ({how}), {res['feasible']} feasible, {n} on the Pareto front{left}; "
              f"hypervolume {res['hypervolume']:.6g}")
        if reasons:
            print(f"no feasible design; most common reasons: {reasons_text(reasons, 'designs')}")
        # the front's figures are taken at the search's SLO, said as evaluate says its own
        if slo := search_slo_line(spec, space, "the front's figures"):
            print(slo)
        for note in notes:
            print(f"note: {note}")
        print(f"wrote {out}/sweep_front.csv and {out}/sweep_front.json")
    return ExitCode.OK if n else ExitCode.NO_RESULT
