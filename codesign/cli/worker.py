"""``codesign worker SPEC --storage URL``: join a study from any machine that reaches its storage."""

from __future__ import annotations

from ._common import EXIT_BUG, STORAGE_HELP, seed_type, whole_type

import json
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "worker", help="join a shared study (PostgreSQL, SQLite or journal file) and add trials to it",
        description="Open the study of SPEC in --storage (created if new, and then seeded) and ask, "
                    "evaluate and tell batches until it holds --trials trials. Start one per machine "
                    "(or several per machine) against the same PostgreSQL URL; `codesign optimize SPEC "
                    "--storage URL --trials N` then writes the report. The password in a URL is never printed.",
        epilog="Exit codes: 0 the study holds its trials (feasible or not: `codesign optimize SPEC --storage "
               "URL` reports them); 2 bad input (spec, option or storage; an error: line on stderr, or a count line and one line per problem); "
               f"{EXIT_BUG}; 130 interrupted (Ctrl-C) or 143 terminated (SIGTERM): completed trials are "
               "kept in the storage, rerun to continue.")
    p.add_argument("spec", help="spec TOML with a [search] table")
    p.add_argument("--storage", required=True,
                   help=f"where the study is stored: {STORAGE_HELP}")
    p.add_argument("--trials", type=whole_type,
                   help="stop when the study holds this many trials (default: search.trials; with "
                        'search.sampler = "grid", at most the grid\'s size: each design once)')
    p.add_argument("--seed", type=seed_type, help="sampler seed base (default: search.seed; each worker adds its own offset)")
    p.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..errors import CodesignError, ExitCode
    from ..evaluation import cost_model_record, efficiency_record, load_spec_checked
    from ..search import join_study

    # as optimize, sweep and evaluate load it: a spec the loader refuses is also judged on its
    # number-format and cost-model names, so every problem is said at once under the count line
    # ("spec.toml: 2 problems"); load_spec named the loader's alone (fresh-user trial, session 42)
    spec = load_spec_checked(args.spec)
    if args.trials is not None and args.trials < 1:
        raise CodesignError(f"--trials must be >= 1 (got {args.trials})")

    def progress(k):
        print(f"worker: told {k} trial(s)", file=sys.stderr)

    result = join_study(spec, storage=args.storage, trials=args.trials, seed=args.seed, progress=progress,
                        note=lambda m: print(f"worker: note: {m}", file=sys.stderr))
    # what priced the trials it told, as pareto.json records it (the study stores that model's
    # version: no worker of another version joins it)
    doc = {"schema_version": 1, "storage": result.storage, "study": result.study.study_name,
           "cost_model": cost_model_record(spec), "efficiency_from": efficiency_record(spec),
           "new_trials": result.new_trials, "trials": len(result.trials), "pareto": len(result.pareto)}
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        print(f"added {result.new_trials} trial(s); the study now holds {len(result.trials)} complete "
              f"trial(s) in {result.storage}")
    return ExitCode.OK
