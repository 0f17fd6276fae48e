"""``codesign evaluate SPEC [--json]``: a spec's design over its concurrency sweep."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="price a spec's design over its concurrency sweep",
                       description="Evaluate the design a spec describes at every concurrency of "
                                   "its workload and print the metrics (the README's Metrics names).",
                       epilog="Exit codes: 0 at least one feasible point; 1 no feasible point (the "
                              "table or document still says why); 2 bad input; 3 a bug in codesign or a plugin (one internal error: line naming it); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM)")
    p.add_argument("spec", help="spec TOML file")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--cost-model", help="use this registered cost model instead of deployment.cost_model")
    p.set_defaults(func=run)


def run(args) -> int:
    import math

    from ..costmodel import design_value
    from ..errors import ExitCode
    from ..evaluation import (SCHEMA_VERSION, at_slo, cost_model_record, deployment_record, efficiency_record,
                              evaluate, load_spec_checked, over_budget, points_json, slo_bounds)
    from ..spec import power_gaps
    from ._common import print_deployment_notes, print_json

    spec = load_spec_checked(args.spec, cost_model=args.cost_model)
    if spec.search is not None:
        _check_search_keys(spec, args.cost_model)
    ev = evaluate(spec, cost_model=args.cost_model)
    # a spec with no [deployment] is priced with the defaults: said (once it is priced: a refused
    # spec gets its error alone), as it was not (fresh-user trial, session 44)
    # and a [deployment] that sets no weights format: the one taken when it is not the model's own
    print_deployment_notes(spec, args.spec, cost_model=args.cost_model)
    # the summary is taken at the spec's [workload.slo] (goodput), as a search's SLO constraints take it
    slo = slo_bounds(spec)
    ev_slo = at_slo(spec, ev)
    summary = {k: float(v[0]) for k, v in ev_slo.summary().items()}
    # the point the peak is reached at (its concurrency, TTFT, TPOT), as optimize reports it
    summary.update({k: design_value(k, v[0]) for k, v in ev_slo.peak_point().items()})
    design = {k: design_value(k, v[0]) for k, v in ev.design.items()}
    # remarks on the figures (also in --json's notes), worded as optimize and sweep word them of their
    # front designs (report.peak_power_note, peak_edge_note, coarse_slo_note): a TDP far below the
    # modelled peak power; a peak at the edge of the concurrency list; under an SLO, a peak whose next
    # concurrency misses it far away (a concurrency between them may meet it)
    from ..evaluation import list_edge, slo_gap
    from ..report import coarse_slo_note, describe_slos, peak_edge_note, peak_power_note

    hot = peak_power_note(design)
    edge = peak_edge_note(summary, list_edge(ev.concurrency), slo=bool(slo))
    coarse = coarse_slo_note(slo_gap(ev.concurrency, ev.feasible[0], ev_slo.feasible[0], summary["peak_concurrency"]),
                             describe_slos(slo)) if slo else None
    notes = [n for n in (hot, edge, coarse) if n]
    # feasible points, none within the SLO: what the SLO asks against the best reached
    from ..report import slo_miss_reason

    missed = (slo_miss_reason({k: v[0] for k, v in ev.points.items()}, ev.feasible[0], slo)
              if slo and not ev_slo.feasible[0].any() else None)
    # the record optimize and sweep give, and the line optimize prints (the table named no cost model,
    # though --cost-model or "auto" may pick another than a reader assumes)
    priced_by = cost_model_record(spec, cost_model=args.cost_model)
    if args.json:
        doc = {
            "schema_version": SCHEMA_VERSION,
            "spec": args.spec,
            # the record optimize and sweep give: {"name", "version", "plugin"}
            "cost_model": priced_by,
            # whose calibrated knobs priced it (efficiency_from: {"baseline", "plugin",
            # "calibration_version"}), or null: its own [efficiency] over the model's defaults
            "efficiency_from": efficiency_record(spec),
            # the [deployment] priced, by its TOML keys, without the ones nothing reads (as the title)
            "deployment": deployment_record(spec, priced_by=priced_by["name"], chips=design["chips"]),
            "power_basis": "tdp",
            # energy figures a spec that models power leaves out, priced at 0 (codesign.spec.power_gaps)
            "power_gaps": power_gaps(spec),
            # what this design's figures do not model (the table says "not modelled"): power without
            # [chip.energy] (power_w and peak_power_w are then chip.tdp), area when area_mm2 is null
            "not_modelled": ([] if spec.chip.energy is not None else ["power"])
                            + (["area"] if not math.isfinite(design["area_mm2"]) else []),
            "design": design,
            "infeasible_reason": ev.reasons[0] or missed or None,
            # the chip's own hard budgets (chip.area.max) this design exceeds; priced as specified
            "over_budget": over_budget(spec, design),
            "points": points_json(ev, 0),
            # [workload.slo] as {metric: upper bound [s]} (null without one); each point says whether
            # it meets it, and the summary is taken over the points that do
            "slo": {m: b for m, b in slo} or None,
            "summary": summary,
            # what to keep in mind reading the figures, one line each (the table prints them below
            # it): a chip.tdp far below the modelled peak power; a peak at the largest concurrency; a
            # concurrency list coarse above the peak at the SLO
            "notes": notes,
        }
        if slo:
            for p, ok in zip(doc["points"], ev_slo.feasible[0]):
                p["meets_slo"] = bool(ok)
        print_json(doc)
    else:
        from ..evaluation import cost_model_choice, priced_by as priced_by_line

        # with why "auto" chose the model, and whose calibrated knobs priced it (as --json's efficiency_from)
        _print_table(spec, ev, summary, design, meets=ev_slo.feasible[0],
                     remarks=[n for n in (edge, coarse) if n],
                     priced_by=priced_by_line(priced_by, choice=cost_model_choice(spec, cost_model=args.cost_model),
                                              efficiency=efficiency_record(spec)))
        from ..report import power_gap_warnings

        for w in power_gap_warnings(spec):
            print(f"warning: {w}", file=sys.stderr)
        if over := over_budget(spec, design):
            # one line, as the other warnings (a rich Console wrapped it at 80 columns: session 44)
            print(f"warning: over the chip's own budget: {'; '.join(over)}; a design that cannot be built, "
                  "priced as specified (a search keeps to it only through [[search.constraints]] on area_mm2).",
                  file=sys.stderr)
        if hot:
            print(f"warning: {hot}", file=sys.stderr)
        if missed:
            print(f"{missed}", file=sys.stderr)
    # as optimize and sweep: a design that no concurrency can run (at its SLO) is no result (a script sees it)
    return ExitCode.OK if ev_slo.feasible.any() else ExitCode.NO_RESULT


def _check_search_keys(spec, cost_model: str | None) -> None:
    """Refuse the ``[search.params]`` and ``[search.envelope]`` keys ``codesign optimize`` refuses
    (a misspelt key, one the spec's cost model cannot vary), as optimize names them: evaluate prices
    no search, but it said nothing of them. Judged against the spec's own ``deployment.cost_model``
    (the one optimize searches with) when it is registered, whatever ``--cost-model`` prices this
    run; else only misspelt keys are refused."""
    from ..errors import SpecError
    from ..evaluation import check_names, cost_model_name
    from ..pluginmanager import get_plugin_manager
    from ..search import search_key_problems

    pm = get_plugin_manager()
    check_names(spec, pm=pm, cost_model=cost_model)  # an unknown name is said first, as evaluate says it
    own = spec.deployment.cost_model
    parameters = (pm.cost_model_parameters(cost_model_name(spec, pm=pm))
                  if own == "auto" or own in pm.cost_models else None)
    if problems := search_key_problems(spec, parameters):
        raise SpecError(problems)


def _fmt(x, scale=1.0, digits=3, unit="", seconds=False):
    """``x × scale`` to ``digits`` significant digits (thousands whole), then `` unit``; "—" (no
    unit) for a missing or non-finite value. ``seconds``: ``x`` is a duration [s], which from 1000 s
    is written with its own unit (:func:`codesign.units.format_duration`: ``"155 days"``, where the
    TTFT column [ms] said ``"13,353,081,000"``; fresh-user trial, session 44)."""
    import math

    from ..units import format_duration

    if x is None or not math.isfinite(x):
        return "—"
    if seconds and abs(x) >= 1000:
        return format_duration(x)
    text = f"{x * scale:,.{digits}g}" if abs(x * scale) < 1000 else f"{x * scale:,.0f}"
    return f"{text} {unit}" if unit else text


def _print_table(spec, ev, summary, design, meets=None, remarks=(), priced_by=None):
    """The table of ``ev``'s points and its summary lines; ``meets`` (per point) whether the point
    meets the spec's [workload.slo], when it sets one; ``remarks``, notes printed under the peak
    (:func:`codesign.report.peak_edge_note`, :func:`codesign.report.coarse_slo_note`);
    ``priced_by``, the last line naming the cost model (:func:`codesign.evaluation.priced_by`), as
    optimize names it."""
    import math

    from rich.console import Console
    from rich.table import Table

    from ..evaluation import _watts, slo_bounds
    from ..report import describe_slos, fit_columns, print_uncut
    from ..report import users as plural_users
    from ..spec import unread_key_problem
    from ..units import format_duration

    bounds = slo_bounds(spec)
    con = Console(width=max(Console().width, 140 if bounds else 132))  # full headers (with units) even when piped
    d = spec.deployment

    def par(x):  # parallelism of one pool (or of the aggregated engine)
        return (f"TP{x.tp}" + (f" DP{x.dp_attention}" if x.dp_attention > 1 else "") + f" EP{x.ep}")

    if d.mode == "disaggregated":
        layout = (f"disaggregated: prefill {_chips(d.prefill.chips)} {par(d.prefill)}, "
                  f"decode {_chips(d.decode.chips)} {par(d.decode)}, PP{d.pp}")
    else:
        layout = f"{d.mode} {par(d)} PP{d.pp}"
    # the deployment settings that change the pricing beyond the parallelism, as the spec gives them
    extras = ([f"MTP/EAGLE {d.speculative_tokens} draft(s)"
               + (f" at acceptance {d.acceptance_rate:g}" if d.acceptance_rate is not None else "")]
              if d.speculative_tokens else [])
    extras += ["multi-node TP"] if d.multinode_tp else []
    extras += [f"batch limit {d.max_batch_size}"] if d.max_batch_size else []
    extras += [f"receive interval {d.scheduler_recv_interval}"] if d.scheduler_recv_interval else []
    # (a balance an overriding file left unread, under dp_attention 1 or disaggregated, prices nothing)
    extras += ([f"attention-DP balance (timeout {d.attention_dp_balance_timeout_iters})"]
               if d.attention_dp_balance_timeout_iters
               and not unread_key_problem(d, "deployment.attention_dp_balance_timeout_iters") else [])
    extras += ["KV offload to host"] if d.host_kv_cache else []
    if extras:
        layout += ", " + ", ".join(extras)
    title = (f"{spec.name or spec.path}: {spec.chip.name} × {_chips(int(design['chips']))}, "
             f"{spec.model.name}, ISL {spec.workload.isl} / OSL {spec.workload.osl}, {layout}")
    cols = [("conc", None, 1), ("TTFT [ms]", "ttft_s", 1e3), ("TPOT [ms]", "tpot_s", 1e3),
            ("E2E [s]", "e2e_latency_s", 1), ("tok/s/user", "interactivity_tok_s_user", 1),
            ("mixed tok/s/chip", "mixed_tok_s_per_chip", 1), ("mixed tok/s/kW (TDP)", "mixed_tok_s_per_kw", 1),
            ("power [W]", "power_w", 1)]
    # optional metrics of the cost model (codesign.costmodel.OPTIONAL_POINT_METRICS): where queueing starts
    cols += [(n, k, sc) for n, k, sc in (("decode batch", "decode_batch", 1), ("prefill busy", "prefill_utilization", 1))
             if k in ev.points]
    from rich.markup import escape

    heads = [name for name, *_ in cols] + ["feasible"] + (["SLO"] if bounds else [])  # SLO: meets [workload.slo]
    rows = []
    notes: dict[str, list[int]] = {}
    for j, c in enumerate(ev.concurrency):
        row = [f"{int(c):,}"]  # thousands separated, as the other columns' numbers ("1,000,000,000" users)
        for _, key, scale in cols[1:]:
            row.append(_fmt(float(ev.points[key][0, j]), scale, seconds=key.endswith("_s")))
        why = (ev.point_reasons[0, j] if ev.point_reasons is not None else "") or ev.reasons[0] \
            or "no reason given by the cost model"  # (an empty reason printed "...: " and nothing)
        row.append("yes" if ev.feasible[0, j] else "no")
        if bounds:
            row.append(("yes" if meets[j] else "no") if ev.feasible[0, j] else "—")
        if not ev.feasible[0, j]:
            notes.setdefault(str(why), []).append(int(c))
        rows.append(row)
    # each column as wide as its longest number (rich cut them all alike to fit: "10000000…" for a
    # concurrency of 10^9, session 42), the headers wrapped between words; a table that is still
    # wider than the console is printed at its own width (the terminal wraps the lines) rather
    # than cut a number
    widths = fit_columns([(h, h, [r[i] for r in rows], True) for i, h in enumerate(heads)], con.width, droppable=[],
                         cheapest_first=True)
    t = Table(title=title)
    for i, (head, w) in enumerate(zip(heads, widths)):
        t.add_column(escape(head), justify="right" if i < len(cols) else "left", width=w)  # "[ms]": a unit, not markup
    for row in rows:
        t.add_row(*row)
    print_uncut(con, t, widths)
    for why, cs in notes.items():
        con.print(f"[red]infeasible[/red] at concurrency {', '.join(map(str, cs))}: {why}")
    if bounds:
        con.print(f"SLO ([workload.slo]): {describe_slos(bounds)}; the figures below are over the points that meet it"
                  + ("" if meets.any() or not ev.feasible[0].any() else ": none does"), highlight=False, markup=False)
    users = summary["peak_concurrency"]  # an int, or NaN without a feasible point
    # durations as a person reads them: a TTFT of 10^7 s said "13,353,081,000 ms" (session 44)
    at = (f" at {plural_users(users)} (TTFT {format_duration(summary['ttft_at_peak_s'])}, "
          f"TPOT {format_duration(summary['tpot_at_peak_s'])})" if isinstance(users, int) else "")
    con.print(f"peak mixed tok/s per kW (TDP {_watts(design['tdp_w'])}): {_fmt(summary['peak_mixed_tok_s_per_kw'])}{at}")
    for note in remarks:
        con.print(f"note: {note}", highlight=False, markup=False)
    con.print(f"min E2E latency: {format_duration(summary['min_e2e_latency_s'])}   "
              f"min TPOT: {format_duration(summary['min_tpot_s'])}")
    area = design["area_mm2"]  # NaN: a cost model that does not model area (printed "area nan mm²")
    # without [chip.energy] the shipped cost models take power as the TDP; a column of "1,200 W"
    # read as modelled power otherwise
    peak = (f"peak power {_watts(design['peak_power_w'])}" if spec.chip.energy is not None
            else "power not modelled (no \\[chip.energy]: taken as chip.tdp)")
    # what happens to users beyond the slots is the cost model's to say: the analytical model
    # queues them, the roofline example refuses the point; read it off the points
    import numpy as np

    beyond = np.asarray(ev.concurrency, dtype=np.float64) > design["max_concurrency"]
    fate = ("; more users queue" if (beyond & ev.feasible[0]).any()
            else "; more users do not fit" if beyond.any() else "")
    # the whole HBM stacks the design needs (an int: costmodel.whole_needed), as --json, pareto.csv/json
    # and sweep_front.csv/json give them; absent or NaN where the cost model does not count them
    stacks = design.get("hbm_stacks")
    hbm = f", {stacks} HBM stack{'' if stacks == 1 else 's'}" if isinstance(stacks, int) else ""
    # thousands separated, as every number of the table above (and the TDP: "1,200 W")
    con.print(f"area {f'{area:,.0f} mm²' if math.isfinite(area) else 'not modelled'}{hbm}, {peak}, "
              f"weights {design['weights_bytes_per_chip'] / 1e9:.1f} GB/chip"
              + (" (decode pool)" if d.mode == "disaggregated" else "")
              + ("" if ev.reasons[0] else
                 f", {'decode slots (KV cache and batch limit' if d.max_batch_size else 'KV slots (KV cache'}"
                 f"{fate}) {design['max_concurrency']:,.0f}"))
    if priced_by is not None:
        con.print(priced_by, highlight=False, markup=False)


def _chips(n: int) -> str:
    """``"1 chip"``, ``"8 chips"`` (the title said "gb200 × 1 chips": fresh-user trial, session 48)."""
    return f"{n} chip" if n == 1 else f"{n} chips"
