"""``codesign validate MEASURED.csv [--out DIR] [--json] [--cost-model NAME] [--statistic median|mean] [--uncalibrated | --calibration FILE]``.

Maps every measured row to a spec (see :mod:`codesign.validate` for the column mapping), predicts
TTFT and TPOT (and per-GPU mixed tok/s for InferenceMAX rows) with the calibrated baselines'
knobs, prints error tables (MAPE, median APE, share within 10% / 25%) by system, model and mode over
the ``ok`` rows, one more by system over the ``ambiguous`` rows (priced with an inferred mapping, e.g.
pools inferred from the nearest measured InferenceMAX run; ``errors_ambiguous`` in ``--json``), and writes
``DIR/predictions.csv`` (one line per input row, with ``status``, ``warning``, ``assumptions`` and
``extrapolated``; ``system`` as the input writes it and ``baseline`` the name the tables group it by).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from ..errors import CodesignError
from ._common import path_type


def register(sub) -> None:
    p = sub.add_parser("validate", help="compare the cost model with measured serving data",
                       description="Predict every row of a measured CSV (aiconfigurator or InferenceMAX "
                                   "schema) and report the errors.",
                       epilog="Exit codes: 0 the file was priced (a row that cannot be priced is kept in "
                              "predictions.csv with an invalid: or unsupported: status, and counted on stderr); "
                              "2 bad input (a missing, empty or unreadable file, a missing column, a bad option "
                              "or cost model, or no row that could be priced; one line on stderr); 3 a bug in codesign or a plugin (one internal error: line naming it); "
                              "130 interrupted (Ctrl-C), 143 terminated (SIGTERM).")
    p.add_argument("measured", help="measured CSV (aiconfigurator_silicon_public.csv or inferencemax_public.csv schema)")
    p.add_argument("--out", type=path_type,
                   help="directory for predictions.csv (one line per input row, with its id and system as "
                        "written and, in column baseline, the name the error tables group it by: b200 for "
                        "b200_sxm) and parity.png (predicted against measured TTFT and TPOT)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--cost-model", help="registered cost model to use (default: analytical)")
    p.add_argument("--statistic", choices=("median", "mean"), default="median",
                   help="InferenceMAX TTFT/TPOT statistic to compare with (default: median, the one "
                        "InferenceMAX publishes; mean: the model's mean TTFT, start-up wave included, "
                        "against mean_ttft_s). aiconfigurator rows are means either way")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--uncalibrated", action="store_true",
                     help="use the cost model's default knobs instead of the calibrated baselines'")
    how.add_argument("--calibration", metavar="FILE",
                     help="knobs from this calibration TOML (written by `codesign calibrate --out FILE`) "
                          "instead of the shipped one")
    p.set_defaults(func=run)


def _efficiency_for(uncalibrated: bool, path=None):
    """``(knobs of a point, the calibration's domain, the tables that priced a point, the
    InferenceMAX statistic the calibration was fitted on or None, the SHA-256 of each data file it
    was fitted on)``."""
    none = ((lambda p: {}), None, None, None, set())
    if uncalibrated:
        return none
    try:
        from codesign_baseline import efficiency_for, load_calibration, read_calibration
    except ImportError:  # pragma: no cover - baseline plugin not installed
        return none
    cal = read_calibration(path) if path else load_calibration()
    if not cal:
        return none
    import functools

    # one composition per (system, framework), not several per row (build_spec asks per point and
    # per group; the knobs and the basis come from the same call). Callers only read the dict.
    knobs = functools.cache(lambda system, framework: efficiency_for(cal, system, framework))
    prov = cal.get("provenance") or {}
    return ((lambda p: knobs(p.system_key, p.framework)[0]), cal.get("domain"),
            (lambda p: knobs(p.system_key, p.framework)[1]),
            prov.get("inferencemax_statistic"),
            {d.get("sha256") for d in prov.get("data") or [] if isinstance(d, dict)})


def run(args) -> int:
    from ..validate import (bad_rows_note, error_table_rows, file_notes, file_sha256, predict, priced,
                            read_measured, repeated_list, repeated_note, shared_data_warning, questioned_list,
                            questioned_rows, questioned_rows_note, unknown_rows_note, write_parity_plot,
                            write_predictions)
    from ._common import ensure_out_dir, print_json, progress_bar

    if args.cost_model not in (None, "analytical", "auto"):  # said "<spec>:" from a generated spec
        from ..pluginmanager import get_plugin_manager

        pm = get_plugin_manager()
        if args.cost_model not in pm.cost_models:
            raise CodesignError(f"--cost-model: {pm.unknown_cost_model(args.cost_model)}")
    if args.calibration and args.cost_model not in (None, "analytical", "auto"):
        # its knobs are the analytical model's: the run priced with the defaults of another, silently
        # (fresh-user trial, session 39); the reverse, a file calibrating another model, is refused too
        raise CodesignError(f"--calibration {args.calibration}: a calibration holds the analytical cost model's "
                            f"knobs, and --cost-model {args.cost_model!r} does not read them; drop one of the two")
    schema, points = read_measured(args.measured, args.statistic)
    if args.out:  # checked before the (long) pricing, not when writing
        ensure_out_dir(args.out)
    eff_for, domain, basis_for, fitted, fitted_files = _efficiency_for(args.uncalibrated, args.calibration)
    # warnings once the command line has been accepted (a refusal stays one line)
    if shared := shared_data_warning():
        print(f"warning: {shared}", file=sys.stderr)
    _warn_duplicate_ids(args.measured, schema, points)
    for note in file_notes(points):
        print(f"warning: {args.measured}: {note}", file=sys.stderr)
    # the note: lines, in the order the text output prints them (--json: "notes", without "note: ")
    notes: list[str] = []
    if repeated := repeated_note(points, schema):
        notes.append(f"{args.measured}: {repeated}")
        print(f"note: {notes[-1]}", file=sys.stderr)
    stat = args.statistic if schema == "inferencemax" else "mean"  # the aiconfigurator file records means
    if schema == "inferencemax" and fitted and fitted != stat:
        notes.append(f"the calibration was fitted on InferenceMAX {fitted}s; comparing with {stat}s "
                     f"(--statistic {fitted} compares like with like)")
        print(f"note: {notes[-1]}", file=sys.stderr)
    if args.cost_model and args.cost_model != "analytical":
        # knobs (and the domain they were fitted on) belong to the analytical model
        eff_for, basis_for, domain = (lambda p: {}), None, None
    # rows priced so far on stderr (the aiconfigurator file takes minutes on 2 cores); gone once done
    used: set[str] = set()
    with progress_bar("validate", "rows priced", transient=True) as progress:
        predict(points, efficiency_for=eff_for, cost_model=args.cost_model, domain=domain, basis_for=basis_for,
                progress=progress, used=used)
    # the record optimize, sweep and evaluate give ({"name", "plugin"}); a list only when --cost-model
    # auto picked different models for different rows
    from ..evaluation import cost_model_record

    records = [cost_model_record(None, cost_model=n) for n in sorted(used)]
    cost_model = records[0] if len(records) == 1 else records
    # by load: where the model has the loop at the prefill knee or capacity (shown when it reports a
    # prefill utilisation)
    bys = ("all", "system", "model", "mode") + (
        ("load",) if any(p.status == "ok" and math.isfinite(p.pred_prefill_utilization) for p in points) else ())
    tables = {by: error_table_rows(points, by) for by in bys}
    ambiguous = {by: error_table_rows(points, by, status="ambiguous") for by in ("all", "system")}
    plot = None
    if args.out:
        write_predictions(points, Path(args.out) / "predictions.csv", schema)
        plot = Path(args.out) / "parity.png"
        title = f"{Path(args.measured).name}: predicted vs measured ({stat} TTFT/TPOT" + (
            ", calibrated)" if domain is not None else ", uncalibrated knobs)")
        if not write_parity_plot(points, plot, title):
            plot = None
    status: dict[str, int] = {}
    for p in points:
        k = p.status.split(":")[0]
        status[k] = status.get(k, 0) + 1
    if not any(priced(p.status) for p in points):
        first = next((p.status for p in points if p.status != "ok"), "")
        raise CodesignError(f"{args.measured}: no row could be priced ("
                            + ", ".join(f"{v} {k}" for k, v in sorted(status.items()))
                            + (f"; e.g. {first}" if first else "") + ")")
    # the shipped calibration was fitted on the public files: errors on one of them are in-sample, which
    # the tables did not say (the README did: fresh-user trial, session 30)
    in_sample = domain is not None and file_sha256(args.measured) in fitted_files
    below = _table_notes(points, domain is not None)  # printed under the tables
    notes += below
    in_sample_note = ("the calibration was fitted on this file (its SHA-256 is in the calibration's provenance): "
                      "these errors are in-sample; the error on configurations the fit never saw is its "
                      "[errors.holdout] (docs/baselines.md)")
    if in_sample:
        notes.append(in_sample_note)
    bad = bad_rows_note(points, "each row's reason is its status in predictions.csv")
    if bad:  # bad cells are kept as rows (none is dropped silently), and said here, not only in the CSV
        print(f"warning: {args.measured}: {bad}", file=sys.stderr)
    if unknown := unknown_rows_note(points, "each row's reason is its status in predictions.csv"):
        print(f"warning: {args.measured}: {unknown}", file=sys.stderr)
    if questioned := questioned_rows_note(points, "each row's is in predictions.csv's warning column"):
        print(f"warning: {args.measured}: {questioned}", file=sys.stderr)
    if args.json:
        print_json({"schema_version": 1, "schema": schema, "file": args.measured, "rows": len(points),
                    "statistic": stat,
                    # priced rows compared with the other statistic (they lack this one)
                    "statistic_fallback_rows": sum(priced(p.status) and p.ttft_stat != stat
                                                   for p in points if schema == "inferencemax"),
                    "status": status,
                    # rows repeating an earlier row's measurement (every cell but id and provenance)
                    "repeated_rows": sum(bool(p.repeats) for p in points),
                    # which: {"id", "row", "repeats_id", "repeats_row"} each (rows as the file's lines)
                    "repeats": repeated_list(points),
                    # priced rows whose measured TTFT or TPOT a row warning questions (still counted)
                    "questioned_rows": len(questioned_rows(points)),
                    # which: {"id", "row", "warnings"} each (rows as the file's lines)
                    "questioned": questioned_list(points),
                    "cost_model": cost_model,
                    "calibrated": domain is not None, "calibration": _calibration_file(args, domain),
                    "errors": tables,
                    "errors_ambiguous": ambiguous,
                    # the calibration was fitted on this very file (its SHA-256 in the provenance)
                    "in_sample": bool(in_sample),
                    # the note: lines of the text output (stderr and under the tables), without "note: "
                    "notes": notes,
                    "predictions": str(Path(args.out) / "predictions.csv") if args.out else None,
                    # predicted vs measured TTFT and TPOT of the ok rows (None: no --out, or no row to draw)
                    "parity_plot": str(plot) if plot else None})
        return 0
    _print(schema, points, tables, ambiguous["system"], status, domain is not None, stat, records, below)
    if domain is not None:
        print(f"knobs: {_calibration_file(args, domain)}", file=sys.stderr)
    if in_sample:
        print(f"note: {in_sample_note}", file=sys.stderr)
    if args.out:
        print(f"predictions: {args.out}/predictions.csv", file=sys.stderr)
    if plot:
        print(f"parity plot: {plot}", file=sys.stderr)
    return 0


#: Duplicated ids named in the warning (the rest are counted).
SHOW_IDS = 5


def _warn_duplicate_ids(path, schema: str, points) -> None:
    """One stderr line when ids repeat: every row is kept (and priced if it can be), but
    predictions.csv joins on the id, so rows sharing one can only be told apart by their order (the
    input's). ``rows`` are the file's line numbers (the header is row 1)."""
    from ..validate import duplicate_ids

    dup = duplicate_ids(points)
    if not dup:
        return
    idcol = "point_id" if schema == "inferencemax" else "id"
    shown = "; ".join(f"{i or '(blank)'} on rows {', '.join(str(n + 2) for n in ns)}"
                      for i, ns in list(dup.items())[:SHOW_IDS])
    more = f"; and {len(dup) - SHOW_IDS} more" if len(dup) > SHOW_IDS else ""
    rows = sum(len(ns) for ns in dup.values())
    print(f"warning: {path}: {len(dup)} {idcol} value{'s' if len(dup) > 1 else ''} repeated ({rows} rows: "
          f"{shown}{more}); every row is kept, and predictions.csv lists them in the input's order "
          f"(match rows by order, not by {idcol})", file=sys.stderr)


def _calibration_file(args, domain) -> str | None:
    """The calibration file whose knobs priced the rows (None: the cost model's defaults)."""
    if domain is None:
        return None
    if args.calibration:
        return str(args.calibration)
    from codesign_baseline import CALIBRATION

    return str(CALIBRATION)


def _pct(x):
    import math

    return "—" if x is None or not math.isfinite(x) else f"{100 * x:.1f}%"


def _table_notes(points, calibrated: bool) -> list[str]:
    """The notes printed under the error tables (without ``note: ``): what their ``extrap.`` column
    counts (it had no legend: fresh-user trial), how many rows lie outside the calibration's data,
    and how many priced rows carry assumptions (predictions.csv's ``assumptions`` column)."""
    from ..validate import priced

    if calibrated:
        out = ["extrap. counts a group's rows priced outside the data the calibration was fitted on (a "
               "system, model, framework or mode it did not see, multi-node TP, or an ISL, OSL or "
               "concurrency beyond its range); each row's reasons are in predictions.csv's column 'extrapolated'"]
    else:
        out = ["extrap. counts a group's rows priced outside the data the calibration was fitted on: none here, "
               "as no calibration priced the rows"]
    if n_ex := sum(1 for p in points if p.extrapolated):
        out.append(f"{n_ex} predictions lie outside the calibration's data (column 'extrapolated')")
    if n_as := sum(1 for p in points if priced(p.status) and p.assumptions):
        out.append(f"{n_as} priced row(s) carry assumptions for settings they do not record (MTP draft tokens, "
                   "decode batch limits, inferred pools, ...; column 'assumptions' of predictions.csv)")
    return out


def _print(schema, points, tables, ambiguous, status, calibrated, stat="mean", cost_models=(), notes=()):
    from rich.console import Console
    from rich.table import Table

    # piped or redirected output gets a readable width instead of rich's 80-column fallback
    con = Console() if sys.stdout.isatty() else Console(width=120)
    metrics = [("ttft", "TTFT"), ("tpot", "TPOT")] + ([("tput", "tok/s/GPU")] if schema == "inferencemax" else [])
    knobs = "calibrated" if calibrated else "default"

    def vs(rows_of) -> str:
        """Which measured statistic the TTFT/TPOT errors of the rows ``rows_of`` selects are against
        (the other one is named only if one of those rows had to fall back to it)."""
        sel = [p for p in points if rows_of(p)]
        other = {p.ttft_stat for p in sel if p.ttft_stat != stat}
        if sel and other and all(p.ttft_stat != stat for p in sel):
            # every row fell back: the tables are against the other statistic (a file without
            # median_ttft_s was titled "vs median ... (the other where a row lacks it)": trial, session 48)
            return f"{'/'.join(sorted(other))} TTFT/TPOT (no row has the {stat})"
        return f"{stat} TTFT/TPOT" + (" (the other where a row lacks it)" if other else "")

    main = vs(lambda p: p.status == "ok")
    # the load table's column and title say whose utilisation it is (validate.load_band)
    column = {"load": "prefill utilisation"}
    what = {"all": "overall error", "load": "error by prefill utilisation (the model's, at each row)"}
    titled = [(column.get(by, by), f"{schema}: {what.get(by, f'error by {by}')} vs {main} ({knobs} knobs)", rows)
              for by, rows in tables.items()]
    if ambiguous:
        titled.append(("system", f"{schema}: ambiguous rows, not in the tables above: prefill/decode pools "
                                 f"inferred from the nearest measured InferenceMAX run or the fallback rule (each row's guess is in the "
                                 f"status column of predictions.csv), error by system vs "
                                 f"{vs(lambda p: p.status.startswith('ambiguous'))} ({knobs} knobs)",
                       ambiguous))
    for by, title, rows in titled:
        t = Table(title=title)
        # the overall table has one group: no group column (it had an "all" column holding "all" once)
        grouped = by != "all"
        for col, just in (((by, "left"),) if grouped else ()) + (
                ("metric", "left"), ("rows", "right"), ("MAPE", "right"), ("median APE", "right"),
                ("≤10%", "right"), ("≤25%", "right"), ("extrap.", "right")):
            t.add_column(col, justify=just)
        for r in rows:
            for i, (key, name) in enumerate(metrics):
                s = r[key]
                if not s["n"]:
                    continue
                t.add_row(*([r["group"] if i == 0 else ""] if grouped else []), name, str(s["n"]),
                          _pct(s["mape"]), _pct(s["median_ape"]), _pct(s["within_10"]), _pct(s["within_25"]),
                          str(r["extrapolated"]) if i == 0 else "")
        con.print(t)
    # the extrap. legend under the tables, the counts below the status line; one line each (rich
    # wraps at the console's width otherwise)
    said = [f"note: {n}" for n in notes]
    if said:
        con.print(said[0], highlight=False, markup=False, soft_wrap=True)
    if cost_models:  # as optimize says it
        from ..evaluation import priced_by

        con.print(priced_by(*cost_models), highlight=False, markup=False)
    con.print("rows by status: " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())))
    for line in said[1:]:
        con.print(line, highlight=False, markup=False, soft_wrap=True)
