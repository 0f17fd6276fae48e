"""codesign-roofline: an example third-party codesign plugin (docs/plugins.md walks through it).

Registers one cost model, ``roofline``: a bare roofline (FLOPs / peak, bytes / bandwidth, nothing
else), a lower bound on every latency that any real system and any other cost model must respect.
A spec selects it with ``[deployment] cost_model = "roofline"``.

This module is what the ``codesign`` entry point names; it only registers the model and imports
nothing heavy (the model itself lives in :mod:`codesign_roofline.model`).
"""

from __future__ import annotations

import codesign

__version__ = "0.1.0"


def _factory():
    from .model import RooflineModel

    return RooflineModel()


def _supports(spec) -> bool:
    from .model import supports

    return supports(spec)


@codesign.hookimpl
def codesign_cost_models():
    return [
        codesign.CostModelInfo(
            name="roofline",
            version=__version__,
            description="bare roofline: max(FLOPs/peak, bytes/bandwidth), no overheads (a latency lower bound)",
            factory=_factory,
            differentiable=False,
            # No accuracy declared: a bound, not a prediction; "auto" ranks it after models that
            # declare a measured accuracy.
            accuracy=None,
            supports=_supports,
            # 100 % of the peaks: no [efficiency] knobs, so a spec that sets them is refused
            reads_efficiency=False,
        )
    ]
