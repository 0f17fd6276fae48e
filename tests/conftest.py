"""Shared test helpers. Where a new test goes: see tests/README.md."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_env = os.environ.get("CODESIGN_SHARED_DATA")
SHARED = Path(_env) if _env else REPO.parent / "shared" / "data"
SPECS = REPO / "specs"


@pytest.fixture
def cli(capsys):
    """Run ``codesign ARGS`` in-process; returns ``(exit_code, stdout, stderr)``."""
    from codesign.cli import main

    def run(*argv):
        rc = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return rc, out, err

    return run
