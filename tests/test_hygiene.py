"""Start-up hygiene: light commands stay light; every module imports cleanly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

HEAVY = ("jax", "optuna", "matplotlib")


@pytest.mark.parametrize("argv", [["--help"], ["plugins", "list", "--json"]])
def test_light_commands_do_not_import_heavy_libraries(argv):
    code = ("import sys; from codesign.cli import main\n"
            "try:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "print('HEAVY:' + ','.join(m for m in %r if m in sys.modules))" % (argv, HEAVY))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last == "HEAVY:", f"{argv} imported {last}"


def test_every_module_imports_with_warnings_as_errors():
    mods = ["codesign", "codesign.cli", "codesign.spec", "codesign.units", "codesign.search", "codesign.report",
            "codesign.evaluation", "codesign.arch", "codesign.model_import", "codesign.baselines",
            "codesign_analytical", "codesign_analytical.model", "codesign_mx", "codesign.testing",
            "codesign.study", "codesign.validate", "codesign.calibrate"]
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in mods)
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr


def test_plugins_list_shows_builtins(cli):
    import json

    rc, out, err = cli("plugins", "list", "--json")
    assert rc == 0
    doc = json.loads(out)
    by = {p["name"]: p for p in doc["plugins"]}
    assert by["analytical"]["status"] == "loaded" and by["analytical"]["cost_models"] == ["analytical"]
    assert "mxfp4" in by["mx"]["number_formats"]
    assert "codesign_cost_models" in by["analytical"]["hooks"]
