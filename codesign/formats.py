"""Number formats as the core sees them: a name, a storage cost and the chip peak they use."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Literal

import attrs
from attrs import frozen

ComputeClass = Literal["bf16", "fp8", "fp6", "fp4", "int8"]

#: Order in which a missing chip peak falls back to a wider format (a chip with no FP6 peak runs
#: FP6 GEMMs at its FP8 rate, as Hopper runs FP4 weights: upcast, then FP8 math).
PEAK_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "fp6", "fp8", "bf16"),
    "fp6": ("fp6", "fp8", "bf16"),
    "fp8": ("fp8", "bf16"),
    "int8": ("int8", "fp8", "bf16"),
    "bf16": ("bf16",),
}


#: The chip peaks a format's GEMMs can run at (:data:`ComputeClass`, the ``chip.peak_flops`` keys).
COMPUTE_CLASSES = ("bf16", "fp8", "fp6", "fp4", "int8")


def _check_class(v) -> None:
    """A registered format's ``compute_class`` is a chip peak (``"fp3"`` was accepted and the
    analytical model then raised ``KeyError: 'fp3'``, blamed on it; fresh-user trial, session 26)."""
    if v not in COMPUTE_CLASSES:
        raise ValueError(f"compute_class must be one of {', '.join(COMPUTE_CLASSES)} (got {v!r})")


def _check_bits(field: str, v, *, low: float | None) -> None:
    """A storage cost in bits: finite, above 0 for ``bits_per_element`` (0 priced gpt-oss-120b's
    weights at 0.5 GB per chip), at least 0 for ``per_tensor_bits``."""
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) \
        and (v > low if low is not None else v >= 0)
    if not ok:
        raise ValueError(f"{field} must be a finite number {'> 0' if low is not None else '>= 0'} [bit] (got {v!r})")


def _check_block(v) -> None:
    if v is not None and not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
        raise ValueError(f"block_size must be a whole number > 0 or None (got {v!r})")


@frozen(kw_only=True)
class NumberFormat:
    """A number format registered by a plugin through ``codesign_number_formats``.

    Attributes:
        name: lowercase, stable (``"mxfp4"``); what specs and the CLI use.
        bits_per_element: storage per element [bit] including amortised block scales
            (MXFP4 = 4 + 8/32 = 4.25; NVFP4 = 4 + 8/16 = 4.5).
        compute_class: which chip peak GEMMs in this format run at.
        block_size: elements sharing one scale, or ``None`` for plain formats.
        per_tensor_bits: extra bits per tensor (NVFP4's FP32 second-level scale: 32).
        description: one line for ``plugins list``.
        quantize: optional ``f(x, **options) -> dequantised x`` (JAX, blocks along the last axis).
        plugin: the registering plugin's name (set by the plugin manager).
        weight_only: a storage format no GEMM takes activations in (INT4 ``int4_g32``: W4A16
            kernels dequantise the weights and run at ``compute_class``, the activations' BF16
            rate). ``deployment.activations_format`` and ``deployment.kv_cache_format`` (the KV
            cache stores activations) refuse it (:func:`codesign.evaluation.check_names`); weights
            and MoE weights may use it (priced at its bits per element).
    """

    name: str
    bits_per_element: float = attrs.field(validator=lambda self, a, v: _check_bits(a.name, v, low=0.0))
    compute_class: ComputeClass = attrs.field(validator=lambda self, a, v: _check_class(v))
    block_size: int | None = attrs.field(default=None, validator=lambda self, a, v: _check_block(v))
    per_tensor_bits: float = attrs.field(default=0.0, validator=lambda self, a, v: _check_bits(a.name, v, low=None))
    description: str = ""
    quantize: Callable[..., Any] | None = attrs.field(default=None, eq=False, repr=False)
    plugin: str = ""
    weight_only: bool = False

    @property
    def bytes_per_element(self) -> float:
        """Storage per element [B], block scales included."""
        return self.bits_per_element / 8.0
