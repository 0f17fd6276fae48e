"""codesign's analytical cost model, as a plugin (registered through the ``codesign`` entry point).

A roofline-and-queueing model of LLM serving, written in JAX for one design point and vectorised
with ``vmap``; differentiable with ``grad`` in every continuous hardware parameter. The physics is
in :mod:`codesign_analytical.model`; this module only registers it, and imports nothing heavy.
"""

from __future__ import annotations

import codesign

__version__ = "0.1.0"


def _factory():
    from .model import AnalyticalModel

    return AnalyticalModel()


@codesign.hookimpl
def codesign_cost_models():
    return [
        codesign.CostModelInfo(
            name="analytical",
            version=__version__,
            description="JAX roofline + collectives + continuous-batching model (differentiable)",
            factory=_factory,
            differentiable=True,
        )
    ]
