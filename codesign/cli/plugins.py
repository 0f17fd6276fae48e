"""``codesign plugins list [--json]``: installed plugins, their hooks, status and what they register.

A plugin that failed to load is listed with status ``failed`` and its error, one whose entry-point
name another distribution's plugin took with ``skipped`` and why; the command still
succeeds (exit 0) unless ``CODESIGN_STRICT_PLUGINS=1`` makes plugin failures fatal (exit 2). Per
cost model it shows the declared accuracy (median relative TPOT error) and where it was measured.
"""

from __future__ import annotations

import json
import sys

SCHEMA_VERSION = 1


def register(sub) -> None:
    p = sub.add_parser("plugins", help="list installed plugins",
                       description="List installed codesign plugins (entry-point group `codesign`).",
                       epilog="Exit codes: those of the ACTION (`codesign plugins ACTION --help`); without one, "
                              "it lists the plugins as `codesign plugins list` does.")
    psub = p.add_subparsers(dest="plugins_command", metavar="ACTION")
    from ._common import EXIT_BUG, EXIT_SIGNALS

    lp = psub.add_parser("list", help="list plugins, their versions, hooks, status and cost models",
                         epilog="Exit codes: 0 the plugins were listed (one that failed to load is listed as "
                                "failed, with its error); 2 a bad option, or a plugin that failed to load under "
                                f"CODESIGN_STRICT_PLUGINS=1; {EXIT_BUG}; {EXIT_SIGNALS}.")
    lp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    lp.add_argument("--hook", metavar="NAME", help="only plugins implementing this hook (e.g. codesign_cost_models, or cost_models as the table shows it)")
    lp.set_defaults(func=run_list)
    p.set_defaults(func=run_list, json=False, hook=None)


def collect(pm) -> dict:
    """The ``plugins list --json`` document for plugin manager ``pm``."""
    models = pm.cost_models
    formats = pm.number_formats
    baselines = pm.baselines
    rows = []
    for st in pm.status:
        # a plugin skipped because its entry-point name is taken registers nothing (what that name
        # registers is the loaded plugin's)
        def mine(records, st=st):
            return [] if st.status == "skipped" else sorted(r.name for r in records.values() if r.plugin == st.name)

        rows.append({
            "name": st.name, "distribution": st.dist, "version": st.version, "module": st.module,
            "status": st.status, "error": st.error, "hooks": st.hooks,
            "cost_models": mine(models), "number_formats": mine(formats), "baselines": mine(baselines),
        })
    cms = [{
        "name": m.name, "plugin": m.plugin, "version": m.version, "description": m.description,
        "differentiable": m.differentiable, "accuracy": m.accuracy, "accuracy_source": m.accuracy_source,
        "declares_supports": m.supports is not None,
    } for m in sorted(models.values(), key=lambda m: m.name)]
    return {"schema_version": SCHEMA_VERSION, "plugins": rows, "cost_models": cms,
            "problems": list(pm.problems)}


def hook_name(name: str) -> str:
    """The hook ``--hook NAME`` names: a hook of :mod:`codesign.hookspecs` as written
    (``codesign_cost_models``) or as the table's hooks column shows it (``cost_models``).

    Raises:
        CodesignError: ``name`` is no hook (with the close one, :func:`codesign.errors.close_name`,
            and the hooks); it listed no plugin, exit 0, as if none implemented it, and the
            table's own spelling, ``cost_models``, did the same (fresh-user trial, session 46).
    """
    from .. import hookspecs
    from ..errors import CodesignError, close_name

    hooks = sorted(n for n in dir(hookspecs) if n.startswith("codesign_"))
    for hook in (name, f"codesign_{name}"):
        if hook in hooks:
            return hook
    # compared without the prefix every hook shares ('zzz' is no closer to one hook than another)
    close = close_name(name.removeprefix("codesign_"), [h.removeprefix("codesign_") for h in hooks], cutoff=0.6)
    mean = f" (did you mean 'codesign_{close}'?)" if close else ""
    raise CodesignError(f"--hook: no hook named {name!r}{mean}; hooks: {', '.join(hooks)}")


def run_list(args) -> int:
    from ..pluginmanager import get_plugin_manager

    doc = collect(get_plugin_manager())
    if args.hook:
        hook = hook_name(args.hook)
        doc["plugins"] = [r for r in doc["plugins"] if hook in r["hooks"]]
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    rows = []
    for r in doc["plugins"]:
        regs = [f"cost model {m}" for m in r["cost_models"]]
        if r["number_formats"]:
            regs.append("formats " + ", ".join(r["number_formats"]))
        if r["baselines"]:
            regs.append("baselines " + ", ".join(r["baselines"]))
        status = r["status"] if not r["error"] else f"{r['status']} (see below)"
        # "codesign-bwmodel 0.1.0", as messages name a plugin's distribution: a version column of
        # its own left too little of 80 columns for the names
        rows.append((r["name"], f"{r['distribution']} {r['version']}".strip(), status,
                     "\n".join(h.removeprefix("codesign_") for h in r["hooks"]), "\n".join(regs)))
    # a name, distribution, version or hook is never broken ("codesign-bw model", "number_format s" at
    # 80 columns: plugin-author trial, session 46): those columns are as wide as their longest word,
    # and what a plugin registers (a list) wraps between its items in the width left, folding a
    # name only on a terminal too narrow for it (overflow="fold": never cut to "codesign-roo…")
    con = Console()
    t = Table(title="codesign plugins")
    heads = ("name", "distribution", "status", "hooks", "registers")
    whole = [max(len(w) for cell in (col, *(row[i] for row in rows)) for w in cell.split())
             for i, col in enumerate(heads[:-1])]
    # each column's borders and padding take 3 characters; "registers" keeps 12 (a format name)
    if sum(whole) + 3 * len(heads) + 1 + 12 > con.width:  # a terminal too narrow: rich folds all
        whole = [None] * len(whole)
    for col, width in zip(heads, [*whole, None]):  # a fixed width: rich's own shrinking ignores a min_width
        t.add_column(col, overflow="fold", width=width)
    for row in rows:
        t.add_row(*row)
    con.print(t)
    # a failure's reason is one long line: printed whole under the table, where a narrow column
    # would have folded it into a tall cell or hidden it
    for r in doc["plugins"]:
        if r["error"]:
            con.print(Text.assemble((r["name"], "bold"), f" {r['status']}: {r['error']}"), soft_wrap=True)
    # with no accuracy declared, "the smallest declared error" named no model: auto then takes the
    # first name, in alphabetical order, that can price the spec (PluginManager.select_cost_model)
    # (a caption read "picks the first by name that can price the spec: none declares its error";
    # tightened after a fresh-user trial)
    if any(c["accuracy"] is not None for c in doc["cost_models"]):
        auto = '"auto": the smallest declared error among those that can price the spec'
    else:
        auto = '"auto": the first by name that can price the spec, as none declares an accuracy'
    m = Table(title=f"cost models (deployment.cost_model; {auto})")
    for col in ("name", "plugin", "version", "accuracy (median |TPOT err|)", "differentiable"):
        m.add_column(col, overflow="fold")
    for c in doc["cost_models"]:
        acc = "undeclared" if c["accuracy"] is None else f"{c['accuracy']:.0%}"
        if c["accuracy_source"]:
            acc += f" ({c['accuracy_source']})"
        m.add_row(c["name"], c["plugin"], c["version"], acc, "yes" if c["differentiable"] else "no")
    con.print(m)
    return 0
