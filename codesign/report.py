"""Reports of a search: the Pareto table, ``pareto.csv``/``pareto.json``/``pareto.png`` and each
Pareto design written back as a spec TOML that ``codesign evaluate`` accepts unchanged."""

from __future__ import annotations

import collections
import csv
import json
import math
from pathlib import Path
from typing import Any

from rich.markup import escape  # "[ms]" in a header is a unit, not a style tag

from .costmodel import metric_unit
from .evaluation import jsonable
from .search import SEARCH_METRICS, SLO_METRICS, SearchResult, beats, hypervolume_series, ratios, satisfied
from .spec import Spec, load_raw
from .units import format_quantity


SCHEMA_VERSION = 1
#: Metrics shown for every Pareto design (after the objectives).
SHOWN = ["peak_mixed_tok_s_per_kw", "min_e2e_latency_s", "min_tpot_s", "min_ttft_s",
         "mixed_tok_s_per_kw_at_tpot", "peak_power_w", "area_mm2"]
#: Short column headers for searched parameters.
PARAM_SHORT = {
    "chip.peak_flops.fp4": "FP4 peak", "chip.peak_flops.fp8": "FP8 peak", "chip.peak_flops.bf16": "BF16 peak",
    "memory.hbm.bandwidth": "HBM BW", "memory.hbm.capacity": "HBM cap", "memory.sram.capacity": "SRAM",
    "memory.sram.bandwidth": "SRAM BW", "network.scaleup_bandwidth": "scale-up BW", "chip.tdp": "TDP",
    "deployment.tp": "TP", "deployment.ep": "EP", "deployment.dp_attention": "DP attn",
}
#: Short column headers for the terminal table: metric -> (header, scale).
SHORT = {
    "peak_mixed_tok_s_per_kw": ("peak tok/s/kW ↑", 1.0),
    "min_e2e_latency_s": ("min E2E [s] ↓", 1.0),
    "min_tpot_s": ("min TPOT [ms] ↓", 1e3),
    "min_ttft_s": ("min TTFT [ms] ↓", 1e3),
    "mixed_tok_s_per_kw_at_tpot": ("tok/s/kW @ref TPOT ↑", 1.0),
    "peak_power_w": ("peak power [W]", 1.0),
    "area_mm2": ("area [mm²]", 1.0),
}


#: Axis names in the field's terms (units and the better direction are added by :func:`_label`).
AXIS_NAMES = {
    "peak_mixed_tok_s_per_kw": "peak mixed tok/s per kW (TDP)",
    "min_e2e_latency_s": "min E2E latency",
    "min_tpot_s": "min TPOT",
    "min_ttft_s": "min TTFT",
    "peak_mixed_tok_s_per_chip": "peak mixed tok/s per chip",
    "mixed_tok_s_per_kw_at_tpot": "mixed tok/s per kW at the reference's min TPOT",
    "area_mm2": "area",
    "peak_power_w": "peak power",
}


def _label(metric: str) -> str:
    unit, better = SEARCH_METRICS.get(metric) or SLO_METRICS.get(metric) or metric_unit(metric)
    arrow = {"max": "↑", "min": "↓"}.get(better or "", "")
    name = AXIS_NAMES.get(metric) or metric.replace("_", " ")
    for suffix in (" s", " w", " mm2"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return f"{name} [{unit}] {arrow}".strip()


def _set(raw: dict, key: str, value) -> None:
    parts = key.split(".")
    d = raw
    for p in parts[:-1]:
        d = d.setdefault(p, {})
    d[parts[-1]] = value


def design_toml(spec: Spec, params: dict, result: SearchResult, trial_number: int,
                configs: dict | None = None) -> str:
    """The spec with a trial's parameter values substituted, fully merged, without ``[search]``.

    With a deployment envelope, the file carries the deployment that gave the first objective (so
    ``codesign evaluate`` on it reproduces that number), and a header comment names the
    deployment behind each other metric.
    """
    import tomli_w

    raw, _ = load_raw(spec.path)
    raw.pop("search", None)
    notes = []
    primary = result.space.objectives[0][0] if result.space.objectives else None
    if configs and primary in configs:
        for k, v in configs[primary].items():
            _set(raw, k, int(v) if isinstance(v, (int, float)) and float(v).is_integer() else v)
        for metric, cfg in configs.items():
            if metric in dict(result.space.objectives) or metric in ("min_tpot_s", "min_ttft_s"):
                where = ", ".join(f"{k} = {v}" for k, v in cfg.items())
                notes.append(f"#   {metric}: at {where}")
    for prm in result.space.params:
        v = params[prm.key]
        if prm.kind:
            v = format_quantity(float(v), prm.kind, digits=8)
        elif prm.type == "int" or (isinstance(v, float) and v.is_integer()):
            v = int(v)
        _set(raw, prm.key, v)
    raw["name"] = f"{spec.name or 'design'}-trial-{trial_number}"
    head = (f"# Pareto design {trial_number} of `codesign optimize {spec.path}`; every value is the\n"
            f"# base spec's (see its sources) except the searched ones: {', '.join(params)}.\n")
    if notes:
        head += ("# Written with the deployment of the first objective; each metric's best deployment:\n"
                 + "\n".join(notes) + "\n")
    return head + tomli_w.dumps(raw)


def build_rows(result: SearchResult) -> list[dict[str, Any]]:
    ref = (result.reference or {}).get("metrics", {})
    rows = []
    for t in result.pareto:
        m = {k: (v if v is not None else math.nan) for k, v in t.user_attrs["metrics"].items()}
        rows.append({
            "trial": t.number,
            "params": dict(t.params),
            "metrics": m,
            "vs_reference": ratios(m, ref, result.space) if ref else {},
            "beats_reference": beats(m, ref, result.space) if ref else None,
            "seed_source": t.user_attrs.get("seed_source", "sampler"),
            "configs": t.user_attrs.get("configs", {}),
        })
    return rows


def write_outputs(spec: Spec, result: SearchResult, out: Path) -> dict[str, Any]:
    """Write the report files into ``out`` and return the JSON document."""
    out.mkdir(parents=True, exist_ok=True)
    rows = build_rows(result)
    ddir = out / "designs"
    ddir.mkdir(exist_ok=True)
    for r in rows:
        path = ddir / f"trial-{r['trial']:05d}.toml"
        path.write_text(design_toml(spec, r["params"], result, r["trial"], r.get("configs")), encoding="utf-8")
        r["design_file"] = str(path)
    sens = None
    if rows:
        from .search import sensitivities

        try:
            sens = sensitivities(spec, result.space, [dict(r["params"]) for r in rows])
        except Exception as exc:  # noqa: BLE001 - a report must not fail on an optional extra
            import sys

            print(f"warning: sensitivities unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
    for i, r in enumerate(rows):
        r["sensitivities"] = sens[i] if sens else None
    hv = hypervolume_series(result.trials, result.space)
    objectives = [{"metric": m, "direction": d, "unit": SEARCH_METRICS[m][0]} for m, d in result.space.objectives]
    doc = {
        "schema_version": SCHEMA_VERSION,
        "spec": spec.path,
        "study": result.study.study_name,
        "storage": result.storage,
        "trials": len(result.trials),
        "new_trials": result.new_trials,
        "feasible_trials": sum(1 for t in result.trials if t.user_attrs.get("feasible")
                               and satisfied(t)),
        # why trials were infeasible, most common first (what to change when none is feasible)
        "infeasible_reasons": [{"reason": k, "trials": v} for k, v in collections.Counter(
            t.user_attrs["infeasible_reason"] for t in result.trials
            if not t.user_attrs.get("feasible") and t.user_attrs.get("infeasible_reason")).most_common(3)],
        "objectives": objectives,
        "constraints": [{"name": c.name, "metric": c.metric, c.sense: c.bound, "slo": c.slo}
                        for c in result.space.constraints],
        "hypervolume": hv,
        "sensitivity_definition": "elasticity d ln(objective) / d ln(parameter) by JAX grad at each Pareto design",
        "power_basis": "tdp",
        "reference": result.reference,
        "pareto": rows,
    }
    doc = jsonable(doc)
    (out / "pareto.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    _write_csv(out / "pareto.csv", rows, result)
    _plot(out / "pareto.png", result, spec)
    _plot_hv(out / "hypervolume.png", hv, spec)
    return doc


def _plot_hv(path: Path, hv: dict, spec: Spec) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.0), dpi=120)
    if hv["trials"]:
        ax.step(hv["trials"], hv["hypervolume"], where="post", color="tab:blue")
    ax.set_xlabel("trials")
    ax.set_ylabel("hypervolume of the feasible front ↑ (objective units)")
    ax.set_title(f"{spec.name or spec.path}: reference point {hv.get('reference_point')}", fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _write_csv(path: Path, rows, result: SearchResult) -> None:
    pkeys = [p.key for p in result.space.params]
    units = {p.key: p.kind for p in result.space.params}
    mkeys = list(dict.fromkeys([m for m, _ in result.space.objectives] + SHOWN))
    rkeys = sorted({k for r in rows for k in r["vs_reference"]})
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["trial"] + [f"{k} [{units[k] or '-'} SI]" if units[k] else k for k in pkeys]
                   + mkeys + [f"{k}_vs_reference" for k in rkeys] + ["beats_reference", "design_file"])
        for r in rows:
            w.writerow([r["trial"]] + [r["params"][k] for k in pkeys]
                       + [r["metrics"].get(k, "") for k in mkeys]
                       + [r["vs_reference"].get(k, "") for k in rkeys]
                       + [r["beats_reference"], r["design_file"]])


def _plot(path: Path, result: SearchResult, spec: Spec) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    objs = result.space.objectives
    if len(objs) == 1:
        ykey, ydir = objs[0]
        xkey, xdir = ("min_e2e_latency_s", "minimize") if ykey != "min_e2e_latency_s" else ("peak_mixed_tok_s_per_kw", "maximize")
    else:
        (ykey, ydir), (xkey, xdir) = objs[0], objs[1]
    fig, ax = plt.subplots(figsize=(7.5, 5.2), dpi=120)

    def xy(trials):
        pts = []
        for t in trials:
            m = t.user_attrs.get("metrics", {})
            x, y = m.get(xkey), m.get(ykey)
            if x is not None and y is not None:
                pts.append((x, y))
        return pts

    feasible = [t for t in result.trials if t.user_attrs.get("feasible") and satisfied(t)]
    infeasible = [t for t in result.trials if t not in feasible]
    pi = xy(infeasible)
    if pi:
        ax.scatter(*zip(*pi), s=10, color="0.75", label=f"infeasible or constraint-violating ({len(infeasible)})")
    pf = xy(feasible)
    if pf:
        ax.scatter(*zip(*pf), s=12, color="tab:blue", alpha=0.25, label=f"feasible ({len(feasible)})")
    pp = sorted(xy(result.pareto))
    if pp:
        xs, ys = zip(*pp)
        ax.step(xs, ys, where="post", color="tab:blue", lw=1.5)
        ax.scatter(xs, ys, s=28, color="tab:blue", edgecolor="k", zorder=3, label=f"Pareto front ({len(pp)})")
    ref = result.reference
    if ref and xkey in ref["metrics"] and ykey in ref["metrics"]:
        ax.scatter([ref["metrics"][xkey]], [ref["metrics"][ykey]], marker="*", s=220, color="tab:red",
                   edgecolor="k", zorder=4, label=f"{ref['name']} (reference, best per metric)")
        ax.annotate(ref["name"], (ref["metrics"][xkey], ref["metrics"][ykey]), textcoords="offset points",
                    xytext=(8, 6), color="tab:red")
    ax.set_xlabel(_label(xkey))
    ax.set_ylabel(_label(ykey))
    allx = [p[0] for p in pi + pf] or [1]
    if max(allx) / max(min(allx), 1e-12) > 30:
        ax.set_xscale("log")
    ax.set_title(f"{spec.name or spec.path}: {len(result.trials)} trials, power basis TDP")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing to label when no trial has metrics
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def print_table(doc: dict, console, kinds: dict | None = None) -> None:
    """The Pareto table: searched parameters (with units), metrics, and ratios to the reference."""
    from rich.table import Table

    objs = [o["metric"] for o in doc["objectives"]]
    # the terminal table keeps the essentials; pareto.csv/json carry every metric
    shown = list(dict.fromkeys(objs + ["min_tpot_s", "peak_power_w", "area_mm2"]))
    ref = doc.get("reference") or {}
    t = Table(title=f"Pareto designs: {len(doc['pareto'])} of {doc['trials']} trials "
                    f"({doc['feasible_trials']} feasible)" + (f", vs {ref.get('name')}" if ref else ""))
    params = list(doc["pareto"][0]["params"]) if doc["pareto"] else []
    t.add_column("trial", justify="right")
    for p in params:
        t.add_column(PARAM_SHORT.get(p, p.rsplit(".", 1)[-1].replace("_", " ")), justify="right", no_wrap=True)
    for m in shown:
        t.add_column(escape(SHORT.get(m, (_label(m), 1.0))[0]), justify="right")
    if ref:
        for m in objs:
            t.add_column(escape(f"{SHORT.get(m, (m, 1))[0].split(' [')[0].rstrip(' ↑↓')} ×ref"), justify="right")
        t.add_column("beats ref")

    def f(m, x):
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            return "—"
        scale = SHORT.get(m, ("", 1.0))[1]
        v = x * scale
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"

    if ref:
        t.add_row(*(["ref"] + [""] * len(params) + [f(m, ref["metrics"].get(m)) for m in shown]
                    + ["1"] * len(objs) + [""]), style="red")
    for r in doc["pareto"]:
        row = [str(r["trial"])]
        for p in params:
            v = r["params"][p]
            kind = (kinds or {}).get(p)
            row.append(format_quantity(float(v), kind, digits=3) if kind else str(v))
        row += [f(m, r["metrics"].get(m)) for m in shown]
        if ref:
            row += [f"{r['vs_reference'][m]:.3f}" if m in r["vs_reference"] else "—" for m in objs]
            row.append("yes" if r["beats_reference"] else "no")
        t.add_row(*row)
    console.print(t)
    if not doc["feasible_trials"] and doc.get("infeasible_reasons"):
        console.print("[red]no feasible design[/red]; most common reasons: " + "; ".join(
            f"{r['reason']} ({r['trials']} trials)" for r in doc["infeasible_reasons"]), highlight=False)
    top = doc["pareto"][0] if doc["pareto"] else None
    if top and top.get("sensitivities"):
        st = Table(title=f"Sensitivities at trial {top['trial']} (elasticity: % change of the objective "
                         f"per 1% change of the parameter)")
        st.add_column("parameter")
        for m in objs:
            st.add_column(escape(SHORT.get(m, (_label(m), 1.0))[0]), justify="right")
        for p in top["sensitivities"][objs[0]]:
            st.add_row(p, *[("—" if top["sensitivities"][m].get(p) is None else f"{top['sensitivities'][m][p]:+.3f}")
                            for m in objs])
        console.print(st)
