"""``codesign calibrate MEASURED.csv [...] [--out FILE] [--systems gb200,gb300] [--models M,...] [--holdout 0.3] [--seed S] [--json]``.

Fits the analytical cost model's efficiency knobs (shared, per system, per serving-framework family)
by gradient descent on the absolute percentage error soft-capped at 100% (``--loss ape``: uncapped;
``--loss log``: least squares on log error) (:mod:`codesign.calibrate`), and writes a versioned TOML with provenance.
"""

from __future__ import annotations

import sys

from ._common import check_out_file, path_type, seed_type, whole_type

def register(sub) -> None:
    p = sub.add_parser("calibrate", help="fit the analytical model's efficiency knobs to measured data",
                       description="Fit shared, per-system and per-framework efficiency knobs, and per serving "
                                   "stack (Dynamo + an engine) the engine settings, with Adam on "
                                   "jax.grad of the absolute percentage error, soft-capped at 100% (or "
                                   "--loss ape / log), holding out configurations for an honest error.",
                       epilog="Exit codes: 0 the calibration TOML was written; 2 bad input (a missing or "
                              "unreadable file, a bad option, no usable row to fit; one line on stderr); 3 a bug in codesign or a plugin (one internal error: line naming it); "
                              "130 interrupted (Ctrl-C) or 143 terminated (SIGTERM): nothing is written.")
    p.add_argument("measured", nargs="+", help="measured CSVs (aiconfigurator or InferenceMAX schema)")
    p.add_argument("--out", type=path_type, default="calibration.toml", help="output TOML (default: calibration.toml)")
    p.add_argument("--systems", default=None,
                   help="comma-separated systems that get their own knobs (default: gb200,gb300, less "
                        "any --exclude-systems)")
    p.add_argument("--holdout", type=float, default=0.3, help="fraction of configurations held out (default 0.3)")
    p.add_argument("--seed", type=seed_type, default=0, help="holdout split seed (default 0)")
    p.add_argument("--steps", type=whole_type, default=250, help="Adam steps per fit (default 250)")
    p.add_argument("--max-rows", type=whole_type, default=None, help="use at most this many usable rows per file")
    p.add_argument("--loss", choices=("robust", "ape", "log"), default="robust",  # calibrate.DEFAULT_LOSS
                   help="robust: absolute percentage error soft-capped at 100%% (default; a few rows "
                        "8x off cannot pull every knob); ape: the plain absolute percentage error "
                        "MAPE scores; log: least squares on log error")
    p.add_argument("--models", default=None,
                   help="comma-separated model specs to fit on (names of specs/models, e.g. "
                        "gpt-oss-120b,deepseek-r1; default: every model the files price)")
    p.add_argument("--statistic", choices=("median", "mean"), default="median",
                   help="InferenceMAX TTFT/TPOT statistic to fit (default: median, the one InferenceMAX "
                        "publishes; mean adds the benchmark's start-up wave)")
    p.add_argument("--refit-all", action="store_true",
                   help="after scoring the fit on the held-out configurations, fit again on all rows and "
                        "write those coefficients (errors.holdout then scores the procedure; twice the time)")
    p.add_argument("--exclude-systems", default=None, metavar="S1,S2",
                   help="leave these systems' rows out of the fit (leave-one-system-out: validate them "
                        "with --calibration to see the error on hardware the fit never saw)")
    p.add_argument("--no-frameworks", action="store_true",
                   help="no per-framework or per-stack offsets (one set of knobs per system)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout: the file written and its content (knobs, "
                        "provenance, errors before/after on train, holdout and refit)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..calibrate import calibrate, write_calibration
    from ..errors import CodesignError

    if not 0.0 <= args.holdout < 1.0:
        raise CodesignError(f"--holdout must be in [0, 1) (got {args.holdout})")
    if args.steps < 1:
        raise CodesignError(f"--steps must be at least 1 (got {args.steps})")
    if args.max_rows is not None and args.max_rows < 1:
        raise CodesignError(f"--max-rows must be at least 1 (got {args.max_rows})")
    check_out_file(args.out, inputs=args.measured)
    from ..validate import MODELS, SYSTEMS, shared_data_warning

    known = sorted(set(SYSTEMS.values()))

    def name_list(flag: str, text: str, what: str = "system", known: list[str] = known) -> list[str]:
        """The names of a comma-separated flag; an empty one (``--systems ''``) is refused, not
        taken as none."""
        names = [s.strip() for s in text.split(",") if s.strip()]
        if not names:
            raise CodesignError(f"{flag}: expected {what} names separated by commas (got {text!r}); "
                                f"known: {', '.join(known)}")
        return names

    def system_list(flag: str, text: str) -> list[str]:
        names = name_list(flag, text)
        bad = [s for s in names if s not in known]
        if bad:
            raise CodesignError(f"{flag}: unknown system(s) {', '.join(bad)}; known: {', '.join(known)}")
        return names

    excluded = None
    if args.exclude_systems is not None:
        excluded = system_list("--exclude-systems", args.exclude_systems)
    models = None
    if args.models is not None:  # unknown names: calibrate() names them
        models = name_list("--models", args.models, "model", sorted({stem for stem, _ in MODELS.values()}))
    if args.systems is None:  # the default, less the systems left out
        systems = [s for s in ("gb200", "gb300") if s not in (excluded or ())]
    else:
        systems = system_list("--systems", args.systems)
    both = [s for s in (excluded or ()) if s in systems]
    if both:
        rest = [s for s in systems if s not in both]
        raise CodesignError(f"--exclude-systems {', '.join(both)}: also in --systems (a system left out of the "
                            f"fit cannot get its own knobs); drop it from --systems"
                            + (f" (--systems {','.join(rest)})" if rest else ""))
    pending = [f"warning: {w}" for w in [shared_data_warning()] if w]
    if args.refit_all and args.holdout == 0:
        pending.append("note: --refit-all with --holdout 0: nothing is held out, so the one fit already "
                       "uses every row")

    def log(m):  # warnings and notes first, once a file has been read (a refusal stays one line)
        while pending:
            print(pending.pop(0), file=sys.stderr)
        print(m, file=sys.stderr)

    doc = calibrate(args.measured, systems=systems, holdout=args.holdout, seed=args.seed,
                    steps=args.steps, max_rows=args.max_rows, loss=args.loss,
                    frameworks=not args.no_frameworks, statistic=args.statistic, refit_all=args.refit_all,
                    models=models,
                    exclude_systems=excluded,
                    log=log)
    write_calibration(doc, args.out)
    if args.json:
        from ._common import print_json

        print_json({"calibration": str(args.out), **doc})
        return 0
    for part in ("train", "holdout", "refit"):
        e = doc["errors"].get(part) or {}
        if not e:
            continue
        line = ", ".join(f"{m} MAPE {100 * e['before'][m]['mape']:.1f}% → {100 * e['after'][m]['mape']:.1f}%"
                         for m in e["after"])
        print(f"{part}: {line}")
    print(f"wrote {args.out}")
    return 0
