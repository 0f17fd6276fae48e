"""The table of contents of codesign's extension points (pluggy, project name ``codesign``).

A plugin is a module (or object) with functions marked ``@codesign.hookimpl`` whose names are the
hooks below. Built-in plugins (``codesign_analytical``, ``codesign_mx``) are registered exactly as a
third party's: through the ``codesign`` entry-point group in their ``pyproject.toml``::

    [project.entry-points.codesign]
    myplugin = "my_package.plugin_module"

Every hook here is a *registration* hook: it takes no arguments and returns a list of typed
records, each with a lowercase ``name``. Results of all plugins are concatenated; a name registered
twice is an error naming both plugins. None is ``firstresult`` or ``historic``.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("codesign")
hookimpl = pluggy.HookimplMarker("codesign")


@hookspec
def codesign_cost_models():
    """Register cost models: functions from a spec (and arrays of searched parameters) to metrics.

    Returns:
        list[codesign.CostModelInfo]: each with ``name`` (what ``deployment.cost_model`` selects),
        ``version``, ``description`` and a zero-argument ``factory`` returning an object that
        follows :class:`codesign.costmodel.CostModel`. The factory is called lazily, so a plugin
        importing JAX costs nothing until its model is used.

    Example::

        @codesign.hookimpl
        def codesign_cost_models():
            return [codesign.CostModelInfo(name="roofline", version="1.0",
                                           description="bare roofline", factory=MyModel)]
    """


@hookspec
def codesign_number_formats():
    """Register number formats (BF16, FP8, MXFP4, ...) usable in ``[deployment]`` and ``[search]``.

    Returns:
        list[codesign.NumberFormat]: each with a lowercase ``name`` (``"mxfp4"``), storage
        ``bits_per_element`` including amortised block scales (MXFP4: 4 + 8/32 = 4.25), the chip
        peak class it computes at (``compute_class``: ``"bf16"``, ``"fp8"``, ``"fp6"``, ``"fp4"`` or
        ``"int8"``), optionally ``quantize``: a JAX function ``x -> dequantised x`` over blocks
        along the last axis, and ``weight_only = True`` for a storage format no GEMM takes
        activations in (INT4 ``int4_g32``; ``deployment.activations_format`` and
        ``deployment.kv_cache_format`` refuse it).

    Example::

        @codesign.hookimpl
        def codesign_number_formats():
            return [codesign.NumberFormat(name="fp8_e4m3", bits_per_element=8, compute_class="fp8")]
    """


@hookspec
def codesign_baselines():
    """Register baselines: named reference systems with calibrated coefficients.

    A baseline is what reports compare against ("1.9× GB200's tok/s per kW"). A spec names one in
    ``[search] reference = "gb200"``: the reference design is then the spec's own model, workload
    and deployment on the baseline's hardware with the baseline's calibrated efficiency knobs.

    Returns:
        list[codesign.Baseline]: each with a lowercase ``name``, a ``hardware`` TOML path (a spec
        fragment with ``[chip]``, ``[memory]``, ``[network]``), the calibrated ``efficiency`` knobs
        of the cost model named ``cost_model``, and ``provenance`` (data file, hash, rows, errors).

    Example::

        @codesign.hookimpl
        def codesign_baselines():
            return [codesign.Baseline(name="gb200", hardware=HERE / "gb200.toml",
                                      cost_model="analytical", efficiency={...})]
    """


@hookspec
def codesign_samplers():
    """Register Optuna samplers that ``[search] sampler = "NAME"`` selects (besides the built-in
    ``nsga2``, ``tpe``, ``gp``, ``random`` and ``grid``, which a plugin cannot replace).

    Returns:
        list[codesign.search.SamplerInfo]: each with a lowercase ``name``, a one-line
        ``description`` and ``factory(seed=int, population=int, space=SearchSpace)`` returning an
        ``optuna.samplers.BaseSampler`` (``population``: designs per batch; ``space``: the
        validated search space). Import Optuna inside the factory, not at module level.

    Example::

        @codesign.hookimpl
        def codesign_samplers():
            def qmc(*, seed, population, space):
                import optuna
                return optuna.samplers.QMCSampler(seed=seed)
            return [SamplerInfo(name="qmc", description="Sobol' QMC", factory=qmc)]
    """
