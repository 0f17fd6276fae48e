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
# --- shared reference data (issue 4: validate/calibrate/baselines) -------------------------------
import os as _os
from pathlib import Path as _Path

import pytest as _pytest


def shared_data_path() -> _Path:
    """``$CODESIGN_SHARED_DATA`` or ``<repo>/../shared/data``."""
    env = _os.environ.get("CODESIGN_SHARED_DATA")
    return _Path(env) if env else _Path(__file__).resolve().parents[1].parent / "shared" / "data"


@_pytest.fixture
def shared_data() -> _Path:
    p = shared_data_path()
    if not (p / "measured").is_dir():
        _pytest.skip(f"shared data not found at {p} (set CODESIGN_SHARED_DATA)")
    return p
