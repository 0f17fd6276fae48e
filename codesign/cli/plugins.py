"""``codesign plugins list [--json]``: installed plugins, their hooks and what they register."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("plugins", help="list installed plugins")
    psub = p.add_subparsers(dest="plugins_command", metavar="ACTION")
    lp = psub.add_parser("list", help="list plugins, their versions, hooks and status")
    lp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    lp.set_defaults(func=run_list)
    p.set_defaults(func=run_list, json=False)


def run_list(args) -> int:
    from ..pluginmanager import get_plugin_manager

    pm = get_plugin_manager()
    models = pm.cost_models
    formats = pm.number_formats
    rows = []
    for st in pm.status:
        rows.append({
            "name": st.name, "distribution": st.dist, "version": st.version, "module": st.module,
            "status": st.status, "error": st.error, "hooks": st.hooks,
            "cost_models": sorted(m.name for m in models.values() if m.plugin == st.name),
            "number_formats": sorted(f.name for f in formats.values() if f.plugin == st.name),
        })
    if args.json:
        json.dump({"schema_version": 1, "plugins": rows}, sys.stdout, indent=2)
        print()
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="codesign plugins")
    for col in ("name", "distribution", "version", "status", "hooks", "registers"):
        t.add_column(col)
    for r in rows:
        regs = [f"cost model {m}" for m in r["cost_models"]]
        if r["number_formats"]:
            regs.append("formats " + ", ".join(r["number_formats"]))
        status = r["status"] if not r["error"] else f"{r['status']}: {r['error']}"
        t.add_row(r["name"], r["distribution"], r["version"], status,
                  "\n".join(r["hooks"]), "\n".join(regs))
    Console().print(t)
    return 0
