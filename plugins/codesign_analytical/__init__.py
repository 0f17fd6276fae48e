"""codesign's analytical cost model, as a plugin (registered through the ``codesign`` entry point).

A roofline-and-queueing model of LLM serving, written in JAX for one design point and vectorised
with ``vmap``; differentiable with ``grad`` in every continuous hardware parameter. The physics is
in :mod:`codesign_analytical.model`; this module only registers it, and imports nothing heavy.
"""

from __future__ import annotations

import codesign

__version__ = "0.4.0"


def _model_version() -> str:
    """``__version__`` plus the first 8 hex digits of model.py's SHA-256: any change to the physics
    (even one not yet released as a version) changes the reported version, so a search stored with
    an older model is not resumed with a newer one (:func:`codesign.search.run_search`)."""
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256(Path(__file__).with_name("model.py").read_bytes()).hexdigest()[:8]
    return f"{__version__}+{digest}"


def _factory():
    from .model import AnalyticalModel

    return AnalyticalModel()


@codesign.hookimpl
def codesign_cost_models():
    return [
        codesign.CostModelInfo(
            name="analytical",
            version=_model_version(),
            description="JAX roofline + collectives + continuous-batching model (differentiable)",
            factory=_factory,
            differentiable=True,
        )
    ]
