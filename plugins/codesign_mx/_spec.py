"""Format parameters of the MX plugin, as plain Python data (no JAX import here).

Sources:
    * OCP Microscaling Formats (MX) Specification v1.0 (September 2023), §5 (MX-compliant
      formats: Table 1 "format names and parameters", §5.4.1 scale E8M0, §5.3 element data types:
      FP8 E4M3/E5M2 §5.3.1, FP6 E3M2/E2M3 §5.3.2, FP4 E2M1 §5.3.3, INT8 §5.3.4) and §6
      (conversion: shared exponent and element rounding, §6.3).
    * OCP 8-bit Floating Point Specification (OFP8) rev 1.0 for the FP8 element formats.
    * NVIDIA's NVFP4 description (Blackwell; "Introducing NVFP4 for efficient and accurate
      low-precision inference", NVIDIA technical blog, 2025): E2M1 elements, one E4M3 scale per
      16 elements, one FP32 scale per tensor.
    * Group-wise INT4 (``int4_g32``) as compressed-tensors (neuralmagic/compressed-tensors) defines
      a symmetric ``num_bits: 4, type: int, strategy: group`` weight scheme: 2's complement codes
      in [-8, 7] (``calculate_range``: ``q_min = -2**(b-1)``, ``q_max = 2**(b-1) - 1``), one scale
      per group in the weight's dtype, ``scale = amax / ((q_max - q_min) / 2) = amax / 7.5``
      clamped below at float32 eps (``calculate_qparams``, symmetric branch, src/compressed_tensors/
      quantization/utils/helpers.py, identical at commits 56bac76c and 024cea3e), and
      ``q = torch.round(clamp(x / scale, q_min, q_max))``, ties to even (``_quantize`` in
      quantization/lifecycle/forward.py @ b29792fd; ``round_to_quantized_type`` in quant_args.py).
      Moonshot's Kimi-K2-Thinking / Kimi-K2.5 checkpoints declare this scheme on their routed
      experts (config.json ``quantization_config``: compressed-tensors, ``format: pack-quantized``,
      ``weights: {num_bits: 4, type: int, symmetric: true, strategy: group, group_size: 32}``,
      ``input_activations: null``, ``ignore: [lm_head, re:.*self_attn.*, re:.*shared_experts.*,
      re:.*mlp\\.(gate|up|gate_up|down)_proj.*]``; the BF16 scales: ggml-org/llama.cpp PR #17083).
      Re-implementations of that QAT/export scale by ``amax / 7`` instead (radixark/miles'
      ``fake_int4_quant``, NVIDIA-NeMo/Automodel ``kimi_k25_vl.quantize_to_int4``), and llama.cpp
      PR #17064 reproduced the shipped weights with Q4_0's ``-8`` changed to ``-7``: the released
      codes likely stay in [-7, 7]. Storage (4.5 bit) and pricing are the same either way; the
      emulation follows compressed-tensors' definition.
"""

from __future__ import annotations

from attrs import frozen


@frozen
class ElementFormat:
    """A scalar element format used inside a block (or alone with a per-tensor scale).

    All values are sign-magnitude: ``value = n * 2**(p - mbits)`` with ``n`` an integer of at most
    ``mbits + 1`` bits and ``p`` the (private) exponent, ``emin <= p <= emax``; below ``emin`` the
    element is subnormal (``p`` stays at ``emin``). The largest magnitude is
    ``max_mant * 2**(emax - mbits)``. For the integer elements (``is_int``) the quantum is fixed
    at ``2**-mbits`` and the codes are 2's complement ``k`` in ``[-(max_mant + 1), max_mant]``
    (INT8 ``[-128, 127]``, INT4 ``[-8, 7]``).

    Attributes:
        name: e.g. ``"e2m1"``.
        ebits: exponent bits (0 for INT8).
        mbits: explicit mantissa bits (fraction bits; 6 for INT8's implicit scale 2^-6).
        emax: exponent of the largest normal number (OCP MX v1.0 Table 1 / §5.3).
        emin: exponent of the smallest normal number (1 - bias).
        max_mant: integer mantissa of the max normal at ``emax`` (E4M3: 448 = 14 * 2**5 -> 14).
        is_int: integer element (INT8 fixed point, OCP MX v1.0 §5.3.4; INT4 integer codes).
    """

    name: str
    ebits: int
    mbits: int
    emax: int
    emin: int
    max_mant: int
    is_int: bool = False

    @property
    def max_normal(self) -> float:
        """Largest finite magnitude (E4M3 448, E5M2 57344, E3M2 28, E2M3 7.5, E2M1 6)."""
        return float(self.max_mant * 2.0 ** (self.emax - self.mbits))


#: Element formats (OCP MX v1.0 §5.3; OFP8 for E4M3/E5M2). E4M3 has no Inf and its max is
#: 1.75 * 2^8 = 448 (S.1111.110); E5M2 max 1.75 * 2^15 = 57344; FP6 E3M2 1.75 * 2^4 = 28;
#: FP6 E2M3 1.875 * 2^2 = 7.5; FP4 E2M1 1.5 * 2^2 = 6 (subnormal 0.5). INT8: 2's complement
#: with implicit scale 2^-6, i.e. k/64 with k in [-128, 127], max 127/64 = 1.984375 (emax 0).
#: INT4: 2's complement integer codes k in [-8, 7] (quantum 2^0; the scale is a separate float).
ELEMENTS: dict[str, ElementFormat] = {
    "e4m3": ElementFormat("e4m3", 4, 3, 8, -6, 14),
    "e5m2": ElementFormat("e5m2", 5, 2, 15, -14, 7),
    "e3m2": ElementFormat("e3m2", 3, 2, 4, -2, 7),
    "e2m3": ElementFormat("e2m3", 2, 3, 2, 0, 15),
    "e2m1": ElementFormat("e2m1", 2, 1, 2, 0, 3),
    "int8": ElementFormat("int8", 0, 6, 0, 0, 127, is_int=True),
    "int4": ElementFormat("int4", 0, 0, 0, 0, 7, is_int=True),
}


@frozen
class FormatSpec:
    """One registered number format.

    Attributes:
        name: lowercase registry name.
        kind: ``"mx"`` (E8M0 scale per block, OCP MX v1.0), ``"nvfp4"`` (E4M3 scale per 16 + FP32
            per tensor), ``"fp8"`` (per-tensor FP32 scale), ``"int_group"`` (symmetric integer
            codes, one BF16 scale per group, compressed-tensors) or ``"bf16"`` (plain cast).
        element: element format name (key of :data:`ELEMENTS`), ``None`` for bf16.
        block_size: elements per scale, ``None`` for per-tensor formats.
        bits_per_element: storage [bit/element] including amortised block scales.
        compute_class: chip peak class.
        per_tensor_bits: extra bits per tensor.
        description: one line.
        weight_only: storage-only format: no GEMM takes activations in it (the kernels dequantise
            it to BF16, W4A16); ``codesign_number_formats`` passes it on to the core, which refuses
            it as ``deployment.activations_format`` and ``deployment.kv_cache_format``.
    """

    name: str
    kind: str
    element: str | None
    block_size: int | None
    bits_per_element: float
    compute_class: str
    per_tensor_bits: float = 0.0
    description: str = ""
    weight_only: bool = False


FORMATS: dict[str, FormatSpec] = {f.name: f for f in [
    FormatSpec("bf16", "bf16", None, None, 16.0, "bf16",
               description="bfloat16, round-to-nearest-even cast"),
    FormatSpec("fp8_e4m3", "fp8", "e4m3", None, 8.0, "fp8", 32.0,
               description="OFP8 E4M3 (max 448, no Inf) with an FP32 per-tensor scale"),
    FormatSpec("fp8_e5m2", "fp8", "e5m2", None, 8.0, "fp8", 32.0,
               description="OFP8 E5M2 (max 57344) with an FP32 per-tensor scale"),
    FormatSpec("mxfp8_e4m3", "mx", "e4m3", 32, 8 + 8 / 32, "fp8",
               description="OCP MXFP8: E4M3 elements, E8M0 scale per 32"),
    FormatSpec("mxfp8_e5m2", "mx", "e5m2", 32, 8 + 8 / 32, "fp8",
               description="OCP MXFP8: E5M2 elements, E8M0 scale per 32"),
    FormatSpec("mxfp6_e3m2", "mx", "e3m2", 32, 6 + 8 / 32, "fp6",
               description="OCP MXFP6: E3M2 elements, E8M0 scale per 32"),
    FormatSpec("mxfp6_e2m3", "mx", "e2m3", 32, 6 + 8 / 32, "fp6",
               description="OCP MXFP6: E2M3 elements, E8M0 scale per 32"),
    FormatSpec("mxfp4", "mx", "e2m1", 32, 4 + 8 / 32, "fp4",
               description="OCP MXFP4: E2M1 elements, E8M0 scale per 32"),
    FormatSpec("mxint8", "mx", "int8", 32, 8 + 8 / 32, "int8",
               description="OCP MXINT8: INT8 (k/64) elements, E8M0 scale per 32"),
    FormatSpec("nvfp4", "nvfp4", "e2m1", 16, 4 + 8 / 16, "fp4", 32.0,
               description="NVIDIA NVFP4: E2M1 elements, E4M3 scale per 16, FP32 per-tensor scale"),
    # INT4 weights with a BF16 scale per 32: 4 + 16/32 = 4.5 bit. No Hopper/Blackwell chip has an
    # INT4 tensor-core peak in our hardware specs, and the serving kernels (vLLM's compressed-tensors
    # WNA16 MoE: Marlin, or the Triton int4_w4a16 fused MoE) dequantise to BF16 and run BF16 MMA, so
    # the compute class is bf16 and the format is weight-only (W4A16).
    FormatSpec("int4_g32", "int_group", "int4", 32, 4 + 16 / 32, "bf16", weight_only=True,
               description="INT4 weights (codes -8..7), BF16 scale per 32 (compressed-tensors "
                           "symmetric group); weight-only, GEMMs at the BF16 rate (W4A16)"),
]}

ROUNDINGS = ("even", "nearest")
SCALE_RECIPES = ("floor", "round_up")
DISTRIBUTIONS = ("normal", "laplace", "student-t")
