"""``codesign optimize SPEC``: multi-objective search over the spec's ``[search]`` parameters."""

from __future__ import annotations

from ._common import STORAGE_HELP, path_type, seed_type, whole_type

import json
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "optimize", help="search hardware/deployment parameters (Optuna, multi-objective)",
        description="Search the [search] parameters of SPEC against its objectives and constraints. "
                    "Progress goes to stderr, the Pareto table to stdout; the output directory (--out DIR) "
                    "receives pareto.csv, pareto.json, pareto.png, hypervolume.png and designs/*.toml. "
                    "Rerunning the same command resumes the study stored in DIR (or in --storage). DIR "
                    "must be new, empty, or the output directory of a previous run.",
        epilog="Exit codes: 0 at least one feasible design; 1 no feasible design (every trial "
               "infeasible: the output files are still written, and the table names the most common "
               "reasons); 2 bad input (spec, option or output directory, or a search no design of which can be feasible whatever the searched values: every deployment it tries one no serving framework runs, or weights no chip it tries holds; an error: line on stderr, or a count line and one line per problem); 3 a bug in codesign or a plugin (one internal error: line naming it); "
               "130 interrupted (Ctrl-C) or 143 terminated (SIGTERM): completed trials are kept, rerun to resume "
               "(or to rebuild a report the interrupt left incomplete).")
    p.add_argument("spec", help="spec TOML with a [search] table")
    p.add_argument("--trials", type=whole_type, help="total trials in the study (default: search.trials; with "
                                                     'search.sampler = "grid", at most the grid\'s size: each '
                                                     "design once)")
    p.add_argument("--seed", type=seed_type, help="sampler seed (default: search.seed)")
    p.add_argument("--out", metavar="DIR", type=path_type, default=None, help="output directory: new, empty, or a previous run's to resume it "
                                                "(default: runs/<spec name>)")
    p.add_argument("--storage", help=f"where the study is stored (default: DIR/study.journal): {STORAGE_HELP}. "
                                     "The password in a URL is never printed. "
                                     "Watch it live: pip install optuna-dashboard && optuna-dashboard DIR/study.journal "
                                     "(or the URL)")
    p.add_argument("--workers", type=whole_type, default=1,
                   help="local worker processes (spawned) sharing the study; default 1 (an uninterrupted run is "
                        "reproducible from --seed; a resumed one may continue differently)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of the table")
    p.set_defaults(func=run)


def _checked(args):
    """Everything optimize refuses before its search, refused in this order, and the warnings of
    the accepted spec printed on stderr: ``(spec, output directory, how messages name it, warnings)``.

    Raises:
        CodesignError: the spec, an option or the output directory (exit 2).
    """
    from ..errors import CodesignError
    from ..evaluation import load_spec_checked
    from ..report import search_warnings
    from ..search import _check_out_dir, check_search, check_study_dir
    from ._common import default_out_dir, ensure_out_dir, print_deployment_notes

    spec = load_spec_checked(args.spec)
    if args.trials is not None and args.trials < 1:
        raise CodesignError(f"--trials must be >= 1 (got {args.trials})")
    if args.workers < 1:
        raise CodesignError(f"--workers must be >= 1 (got {args.workers})")
    # checked now, created by the search once the spec's [search] has been accepted
    out_option = "--out" if args.out else "output directory"
    out = ensure_out_dir(args.out or default_out_dir(spec, args.spec), out_option, create=False)
    # a directory it would refuse is refused before the warnings (as sweep does): they were printed
    # above the refusal of a run that never started (fresh-user trial, session 28). run_search
    # checks again once the study is open
    check_study_dir(out, args.storage, out_option)
    if out.is_dir() and args.storage is None:
        _check_out_dir(out, spec.name or "codesign-study")
    # the [search] keys it refuses are refused before the warnings too (a search key the cost model
    # cannot vary printed the reference's warnings above its refusal; noticed in session 32)
    check_search(spec)
    # a spec with no [deployment]: the defaults it takes (but the keys the search varies)
    # and a [deployment] that sets no weights format: the one taken when it is not the model's own
    print_deployment_notes(spec, args.spec, varied=[*spec.search.params, *spec.search.envelope])
    # an include's constraints replaced by the spec's own; a reference file of another workload
    warned = search_warnings(spec)
    for w in warned:
        print(f"warning: {w}", file=sys.stderr)
    return spec, out, out_option, warned


def run(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ..errors import ExitCode, interrupted_as
    from ..evaluation import cost_model_choice, priced_by
    from ..report import (print_table, searched_line, reference_choices, reference_headline, search_slo_line, trials,
                          write_outputs)
    from ..search import run_search
    from ._common import ensure_out_dir, progress_bar

    # before run_search: no trial was run and no storage written (a new --out is not created yet,
    # a stored study is as it was); the generic "completed trials, if any, are kept" said otherwise
    with interrupted_as("interrupted before the search started: nothing was run or written; rerun the same "
                        "command to run it"):
        spec, out, out_option, warned = _checked(args)
    err = Console(stderr=True, soft_wrap=True)  # a path or command on one line, as the terminal wraps it
    # a finished study's "nothing to run" had a full bar above it: no bar when the first count is complete
    with progress_bar("optimize", spec.name or args.spec, skip_finished=True) as progress:
        result = run_search(spec, trials=args.trials, seed=args.seed, out_dir=out,
                            storage=args.storage, progress=progress, workers=args.workers,
                            out_option=out_option,  # refuses a directory of unrelated files
                            note=lambda m: print(m, file=sys.stderr))  # "resuming: N completed trials in ..."
    if result.new_trials == 0:
        n = len(result.trials)
        more = "raise --trials to continue"
        if spec.search.sampler.lower() == "grid":  # a grid's trials are capped at its size (search._grid_total)
            from ..search import grid_size

            if n >= grid_size(result.space, spec.search.grid_points):
                more = "it holds the whole grid"
        err.print(f"study already has {n} completed trial{'' if n == 1 else 's'}; nothing to run ({more})")
    ensure_out_dir(out, out_option)
    # the search is done and stored; only the report is cut short, and a rerun of the same
    # command finds nothing to run and writes the report again from the study (in seconds)
    with interrupted_as(f"interrupted while writing the report: the report in {out} is incomplete; the search "
                        f"had finished and its {trials(len(result.trials))} are kept in the study storage "
                        f"({result.storage}): rerun the same command to rebuild the report from the stored "
                        "study"):
        doc = write_outputs(spec, result, out, warnings=warned)
    err.print(f"study: {doc['storage']} (optuna-dashboard {doc['storage']})")
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        con = Console(width=max(Console().width, 160))
        con.print(searched_line(result.space), highlight=False, markup=False)  # what was varied, toward what
        # the figures are taken at the search's SLO (the reference's too), said as evaluate says its own
        if slo := search_slo_line(spec, result.space):
            con.print(slo, highlight=False, markup=False)
        print_table(doc, con, kinds={p.key: p.kind for p in result.space.params})
        ref = doc.get("reference")
        if ref:
            if ref.get("infeasible_reason"):
                con.print(f"[red]the reference {escape(ref['name'])} cannot be served[/red] over "
                          f"{escape(reference_choices(ref))}: {escape(ref['infeasible_reason'])}; no design "
                          "is compared with it (widen " + escape("[search.envelope]") + " or change search.reference)",
                          highlight=False)
            else:  # with how many of them peak far above their own TDP (report.beat_counts)
                con.print(reference_headline(doc), highlight=False, markup=False)
        # with why "auto" chose the model, and whose calibrated knobs priced the designs (efficiency_from)
        con.print(f"{priced_by(doc['cost_model'], choice=cost_model_choice(spec), efficiency=doc['efficiency_from'])}; "
                  "power basis TDP", highlight=False, markup=False)
        con.print(f"wrote {out}/pareto.csv, pareto.json, pareto.png, hypervolume.png and {len(doc['pareto'])} design(s) in {out}/designs/")
        con.print(f"storage: {doc['storage']}")
    return ExitCode.OK if doc["pareto"] else ExitCode.NO_RESULT
