"""``codesign study run STUDY [--out DIR] [--quick] [--json]``: run a design-space study and write its report."""

from __future__ import annotations

import sys
from pathlib import Path

from ._common import EXIT_BUG, path_type


def register(sub) -> None:
    p = sub.add_parser("study", help="run declarative design-space studies",
                       epilog="Exit codes: those of the ACTION (`codesign study ACTION --help`); 2 without one.")
    psub = p.add_subparsers(dest="study_command", metavar="ACTION")
    r = psub.add_parser("run", help="run a study and write report.md, figures and data.json",
                        description="Run every step of STUDY (optimisations resume from their journals) "
                                    "and write a Markdown report with PNG figures and data.json into the --out directory.",
                        epilog="Exit codes: 0 the report was written; 2 bad input (the study, a step's spec, "
                               "an option or the output directory; an error: line on stderr, or a count line and one line per problem); "
                               f"{EXIT_BUG}; 130 interrupted (Ctrl-C) or 143 terminated (SIGTERM): the "
                               "optimisation steps' completed trials are kept, rerun to resume.")
    r.add_argument("study", help="study TOML (e.g. studies/jalapeno.toml)")
    r.add_argument("--out", type=path_type, help="output directory (default: studies/<name>/ beside the study file)")
    r.add_argument("--quick", action="store_true", help="small budgets (tests, CI)")
    r.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout: data.json's content (schema_version, study: the "
                        "study's name, title, quick, steps) with the paths written beside it (report, data: "
                        "data.json's path, figures)")
    r.set_defaults(func=run)

    def _help(args):
        p.print_help()
        return 2

    p.set_defaults(func=_help)


def run(args) -> int:
    from rich.console import Console

    from ..errors import CodesignError, SpecError
    from ..spec import is_file_name
    from ..study import load_study, run_study, unit_notes
    from ._common import ensure_out_dir, print_json

    st = load_study(args.study)
    if not args.out and not is_file_name(st.name):  # "../x" wrote beside the studies directory, "" into it
        raise SpecError([(str(args.study), "name", f"{st.name!r} is the default output directory <study's "
                          "directory>/<name>, so it must be one file name (not empty, no '/', '\\', '.' or "
                          "'..'); rename it or give --out")])
    # checked now; run_study creates it once the study (and each step's spec) has been accepted
    out = ensure_out_dir(Path(args.out) if args.out else Path(args.study).parent / st.name,
                         "--out" if args.out else "output directory", create=False)
    if args.quick and not args.out and _full_report(out):
        raise CodesignError(f"{out}: holds the full run's report (studies ship it); --quick without --out "
                            f"would overwrite it with small-budget results: give --out DIR (e.g. --out "
                            f"runs/{st.name}-quick)")
    for line in unit_notes(st):  # a size or bandwidth written in bits, as evaluate notes a spec's
        print(f"note: {line}", file=sys.stderr)
    err = Console(stderr=True, soft_wrap=True)  # a path or command on one line, as the terminal wraps it
    data = run_study(args.study, out, quick=args.quick,
                     progress=lambda name: err.print(f"[bold]study[/bold] {st.name}: {name}"),
                     note=lambda m: print(m, file=sys.stderr))  # "resuming: N completed trials in ..."
    if args.json:
        # data.json's own document with the paths beside its keys: "study" is the study's name, as
        # in data.json, pareto.json and optimize --json (it held the whole of data.json, so a script
        # read doc["study"]["study"] for the name and doc["study"]["steps"] for what data.json calls
        # "steps": fresh-user trial, session 41)
        print_json({**data, "report": str(out / "report.md"), "data": str(out / "data.json"),
                    "figures": sorted(str(p) for p in out.rglob("*.png"))})
        return 0
    print(f"wrote {out / 'report.md'} and {out / 'data.json'}")
    return 0


def _full_report(out: Path) -> bool:
    """Whether ``out`` holds a study report that was not a ``--quick`` run (its data.json says)."""
    import json

    try:
        return json.loads((out / "data.json").read_text(encoding="utf-8")).get("quick") is False
    except (OSError, ValueError, AttributeError):
        return False
