"""Shared test helpers. Where a new test goes: see tests/README.md."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_env = os.environ.get("CODESIGN_SHARED_DATA")
SHARED = Path(_env) if _env else REPO.parent / "shared" / "data"
SPECS = REPO / "specs"


def peak_point(points):
    """The point (a JSON point of ``evaluate --json``) a peak tok/s per kW is reached at, as the
    README defines it: the lowest concurrency within 0.01% of the highest ``mixed_tok_s_per_kw``."""
    top = max(p["mixed_tok_s_per_kw"] for p in points)
    return min((p for p in points if p["mixed_tok_s_per_kw"] >= top * (1 - 1e-4)), key=lambda p: p["concurrency"])


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    """Drop JAX's compiled executables after each test module. Each XLA CPU executable maps its
    own code pages, and one pytest process compiles thousands: the full suite reached the kernel's
    vm.max_map_count (65,530) late in the run and XLA segfaulted in backend_compile (maps grew by
    about 1,000 per 8 s of tests; session 35)."""
    yield
    import sys

    if "jax" in sys.modules:
        import jax

        model = sys.modules.get("codesign_analytical.model")
        if model is not None:
            model._compiled.cache_clear()  # jitted functions held by the cost model's own cache
        jax.clear_caches()


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


@_pytest.fixture
def gb200_hardware_gone(tmp_path):
    """``(pm, missing)``: the installed plugins with baseline gb200's hardware file registered at
    ``missing``, a path that does not exist (a broken or incompletely installed plugin)."""
    import attrs

    from codesign.pluginmanager import get_plugin_manager

    real = get_plugin_manager()
    missing = tmp_path / "gone" / "gb200.toml"

    class Broken:
        baselines = {**real.baselines, "gb200": attrs.evolve(real.baselines["gb200"], hardware=missing)}

        def __getattr__(self, name):
            return getattr(real, name)

    return Broken(), missing
