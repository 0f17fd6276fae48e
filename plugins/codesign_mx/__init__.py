"""codesign_mx: block-scaled number formats (OCP Microscaling v1.0, NVFP4, FP8, INT4, BF16) in JAX.

Registers ``bf16``, ``fp8_e4m3``, ``fp8_e5m2``, ``mxfp8_e4m3``, ``mxfp8_e5m2``, ``mxfp6_e3m2``,
``mxfp6_e2m3``, ``mxfp4``, ``mxint8``, ``nvfp4`` and ``int4_g32`` through
``codesign_number_formats``. ``int4_g32`` is weight-only (INT4 codes, a BF16 scale per 32, the
compressed-tensors group scheme of Kimi-K2-Thinking/K2.5's routed experts; GEMMs at the BF16 rate,
W4A16; see :mod:`codesign_mx._spec`). Each
record's ``quantize`` is ``f(x, *, rounding="even", scale_recipe="floor") -> float32`` (the
dequantised values; blocks along the last axis) and is bit-exact, ``jax.jit``- and
``jax.vmap``-able.

Rules (OCP Microscaling Formats (MX) Specification v1.0):
    * §5.2 (Table 1) and §5.4.1 (E8M0): one E8M0 scale ``X = 2**s`` (s in [-127, 127], byte 0xFF = NaN) per k = 32
      elements; the value of element i is ``X * P_i``.
    * §6.3 (conversion): ``s = floor(log2(max_i |V_i|)) - emax_elem`` (here from the float32
      exponent bits, not a floating-point log2), clamped to [-127, 127]; ``P_i = V_i / X`` rounded
      to the element format (round to nearest, ties to even) with normal overflow clamped to the
      element's max normal. An all-zero block gets s = -127.
    * Any NaN or Inf in a block makes its scale NaN (0xFF) and the whole block NaN (the reference
      implementation microxcaling's CPU path; the spec leaves the other elements undefined).
    * Options: ``rounding="nearest"`` rounds ties away from zero (microxcaling's default);
      ``scale_recipe="round_up"`` picks ``s = ceil(log2(amax / max_elem))`` so amax never
      saturates (the alternative recipe of the MX paper, Rouhani et al. 2023, and NVIDIA's).
      ``scale_recipe`` has no effect on the non-MX formats.

``int4_g32`` (compressed-tensors, not OCP): per group of 32, ``scale = bf16(amax / 7.5)``,
``q = clamp(round(x / scale), -8, 7)``, ``y = q * scale``; ``rounding`` as above.

JAX is imported lazily (first quantisation), so ``codesign plugins list`` stays fast.
"""

from __future__ import annotations

import functools
from typing import Any

import codesign
from codesign.errors import CodesignError

from ._spec import DISTRIBUTIONS, ELEMENTS, FORMATS, ROUNDINGS, SCALE_RECIPES, FormatSpec

__all__ = ["FORMATS", "ELEMENTS", "quantize", "quantize_with_scales", "error_stats",
           "synthetic", "format_spec"]


def format_spec(name: str) -> FormatSpec:
    """The :class:`FormatSpec` of ``name`` (case-insensitive).

    Raises:
        CodesignError: unknown format (the message lists the known ones).
    """
    key = str(name).lower()
    if key not in FORMATS:
        raise CodesignError(f"unknown number format {name!r} (known: {', '.join(FORMATS)})")
    return FORMATS[key]


def _check(x, spec: FormatSpec, rounding: str, scale_recipe: str):
    import jax.numpy as jnp

    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, got {rounding!r}")
    if scale_recipe not in SCALE_RECIPES:
        raise ValueError(f"scale_recipe must be one of {SCALE_RECIPES}, got {scale_recipe!r}")
    x = jnp.asarray(x, dtype=jnp.float32)
    if spec.block_size is not None:
        if x.ndim == 0 or x.shape[-1] % spec.block_size:
            raise ValueError(
                f"{spec.name}: the last axis (length {x.shape[-1] if x.ndim else 'scalar'}) must "
                f"be a multiple of the block size {spec.block_size}")
    return x


def quantize(x, format: str, rounding: str = "even", scale_recipe: str = "floor"):  # noqa: A002
    """Quantise then dequantise ``x`` in ``format``.

    Args:
        x: array-like, cast to float32, shape ``(..., n)``; blocks along the last axis, ``n`` a
            multiple of the block size (32 for MX and ``int4_g32``, 16 for NVFP4).
        format: a registered name, e.g. ``"mxfp4"``.
        rounding: ``"even"`` (ties to even, OCP MX v1.0 §6.3) or ``"nearest"`` (ties away from 0).
        scale_recipe: ``"floor"`` (OCP MX v1.0 §6.3) or ``"round_up"`` (MX formats only).

    Returns:
        jax float32 array of the shape of ``x``: the dequantised values.

    Raises:
        CodesignError: unknown format. ValueError: bad option or last-axis length.
    """
    from . import _quant

    spec = format_spec(format)
    x = _check(x, spec, rounding, scale_recipe)
    return _quant.quantize_array(x, spec.name, rounding, scale_recipe)


def quantize_with_scales(x, format: str, rounding: str = "even",  # noqa: A002
                         scale_recipe: str = "floor"):
    """MX formats only: dequantised values and the E8M0 scale bytes.

    Returns:
        ``(y, scale_e8m0)``: float32 ``(..., n)`` and uint8 ``(..., n // 32)``, byte = s + 127
        (OCP MX v1.0 §5.4.1 E8M0, bias 127), 0xFF for a NaN scale.
    """
    from . import _quant

    spec = format_spec(format)
    if spec.kind != "mx":
        raise ValueError(f"{spec.name} has no E8M0 block scales")
    x = _check(x, spec, rounding, scale_recipe)
    return _quant.mx_quantize(x, element=spec.element, block_size=spec.block_size,
                              rounding=rounding, scale_recipe=scale_recipe)


def error_stats(x, format: str, rounding: str = "even",  # noqa: A002
                scale_recipe: str = "floor") -> dict[str, Any]:
    """Quantisation error of ``x`` in ``format``.

    Statistics use float64 over elements where both input and output are finite.

    Args:
        x: array-like ``(..., n)`` (see :func:`quantize`).

    Returns:
        dict with ``mse`` (mean squared error, units of x squared), ``sqnr_db``
        (10·log10(Σx² / Σ(x - q(x))²) [dB]; ``inf`` if error-free), ``max_abs_error``,
        ``scale_histogram`` (MX formats: E8M0 exponent s -> number of blocks, NaN-scale blocks
        excluded; empty for other formats), ``n_elements`` (compared), ``nan_blocks``.
    """
    import numpy as np

    spec = format_spec(format)
    xn = np.asarray(x, dtype=np.float32)
    if spec.kind == "mx":
        y, sc = quantize_with_scales(xn, spec.name, rounding, scale_recipe)
        sc = np.asarray(sc).ravel()
        exps, counts = np.unique(sc[sc != 255].astype(np.int64) - 127, return_counts=True)
        hist = {int(e): int(c) for e, c in zip(exps, counts)}
        nan_blocks = int(np.sum(sc == 255))
    else:
        y = quantize(xn, spec.name, rounding, scale_recipe)
        hist, nan_blocks = {}, 0
    y = np.asarray(y, dtype=np.float64)
    x64 = xn.astype(np.float64)
    ok = np.isfinite(x64) & np.isfinite(y)
    err = (y - x64)[ok]
    sig = float(np.sum(x64[ok] ** 2))
    noise = float(np.sum(err ** 2))
    n = int(err.size)
    return {
        "mse": noise / n if n else float("nan"),
        "sqnr_db": (float("inf") if noise == 0 else float(10 * np.log10(sig / noise)))
        if n else float("nan"),
        "max_abs_error": float(np.max(np.abs(err))) if n else float("nan"),
        "scale_histogram": hist,
        "n_elements": n,
        "nan_blocks": nan_blocks,
    }


def synthetic(distribution: str, n_blocks: int, block_size: int = 32, seed: int = 0):
    """Random test blocks, unit scale, from ``numpy.random.default_rng(seed)``.

    Args:
        distribution: ``"normal"`` (standard normal), ``"laplace"`` (loc 0, scale 1) or
            ``"student-t"`` (Student's t, df = 3; ``"student_t3"`` also accepted).
        n_blocks: number of blocks (rows).
        block_size: elements per block (columns).
        seed: generator seed.

    Returns:
        numpy float32 array ``(n_blocks, block_size)``. The generator fills it in C order, so the
        values depend on ``n_blocks * block_size`` and ``seed`` only: blocks of 16 and of 32 with
        the same count of values hold the same values (``codesign numerics error`` measures every
        format on the same ones).

    Raises:
        CodesignError: unknown distribution.
    """
    import numpy as np

    d = {"student_t3": "student-t", "student-t3": "student-t", "student_t": "student-t",
         "t": "student-t"}.get(distribution, distribution)
    rng = np.random.default_rng(seed)
    shape = (int(n_blocks), int(block_size))
    if d == "normal":
        x = rng.standard_normal(shape)
    elif d == "laplace":
        x = rng.laplace(0.0, 1.0, shape)
    elif d == "student-t":
        x = rng.standard_t(3, shape)
    else:
        raise CodesignError(f"unknown distribution {distribution!r} "
                            f"(known: {', '.join(DISTRIBUTIONS)})")
    return x.astype(np.float32)


def _make_quantizer(name: str):
    def q(x, *, rounding: str = "even", scale_recipe: str = "floor"):
        return quantize(x, name, rounding=rounding, scale_recipe=scale_recipe)

    q.__name__ = f"quantize_{name}"
    q.__doc__ = f"Quantise-dequantise in {name} (see :func:`codesign_mx.quantize`)."
    return q


@functools.cache
def _records() -> tuple:
    return tuple(
        codesign.NumberFormat(
            name=f.name, bits_per_element=f.bits_per_element, compute_class=f.compute_class,
            block_size=f.block_size, per_tensor_bits=f.per_tensor_bits,
            description=f.description, quantize=_make_quantizer(f.name),
            weight_only=f.weight_only)
        for f in FORMATS.values())


@codesign.hookimpl
def codesign_number_formats():
    """Register the eleven formats of this plugin (see the module docstring)."""
    return list(_records())
