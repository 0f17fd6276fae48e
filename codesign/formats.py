"""Number formats as the core sees them: a name, a storage cost and the chip peak they use."""

from __future__ import annotations

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
    bits_per_element: float
    compute_class: ComputeClass
    block_size: int | None = None
    per_tensor_bits: float = 0.0
    description: str = ""
    quantize: Callable[..., Any] | None = attrs.field(default=None, eq=False, repr=False)
    plugin: str = ""
    weight_only: bool = False

    @property
    def bytes_per_element(self) -> float:
        """Storage per element [B], block scales included."""
        return self.bits_per_element / 8.0
