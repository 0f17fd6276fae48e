"""JAX kernels: bit-exact quantise-dequantise of MX, NVFP4, FP8, group-wise INT4 and BF16 (imports JAX).

Everything that must be exact is done with integer arithmetic on the float32 bit patterns
(``lax.bitcast_convert_type``), never with a floating-point ``log2`` or a library cast:

* XLA:CPU flushes float32 subnormals to zero in arithmetic, integer ops do not, so the MX path is
  exact for subnormal inputs, subnormal scales (2^-127) and subnormal outputs.
* ``ml_dtypes``' E4M3 cast turns 465 into NaN instead of saturating, and its E8M0 cast rounds to
  nearest instead of taking the floor; neither is used.

All functions take float32 arrays of any shape; blocks run along the last axis. They trace under
``jax.jit`` and ``jax.vmap`` (rounding mode, recipe and format are static Python values).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from ._spec import ELEMENTS, FORMATS, ElementFormat

_U = jnp.uint32
_I = jnp.int32
_EXP_MASK = 0x7F800000
_ABS_MASK = 0x7FFFFFFF


def _bits(x):
    return lax.bitcast_convert_type(x.astype(jnp.float32), _U)


def _from_bits(b):
    return lax.bitcast_convert_type(b.astype(_U), jnp.float32)


def _decompose(mag):
    """Split |x| (uint32 bits, finite) into ``(sig, ex, flog2)`` with ``|x| = sig * 2**ex``.

    ``sig`` (uint32) has the implicit bit for normals; ``flog2`` (int32) is the exact
    floor(log2|x|) from the exponent bits (subnormals via the leading-zero count); for
    ``|x| == 0`` it is meaningless (callers mask it).
    """
    e = (mag >> 23).astype(_I)
    man = mag & 0x7FFFFF
    normal = e > 0
    sig = jnp.where(normal, man | 0x800000, man)
    ex = jnp.where(normal, e - 150, -149)
    bitlen = 32 - lax.clz(sig).astype(_I)
    return sig, ex, ex + bitlen - 1


def _compose(sign, n, qe):
    """Build the float32 ``(-1)**sign * n * 2**qe`` exactly (normal or subnormal result).

    Args:
        sign: uint32 0/1.
        n: uint32 integer magnitude, < 2**24.
        qe: int32 exponent of the quantum, >= -149 wherever ``n > 0``.
    """
    p = 31 - lax.clz(n).astype(_I)  # floor(log2 n); -1 for n == 0
    be = qe + p + 127
    shl = jnp.clip(23 - p, 0, 31).astype(_U)
    normal_bits = (jnp.clip(be, 0, 255).astype(_U) << 23) | ((n << shl) & 0x7FFFFF)
    sub_bits = n << jnp.clip(qe + 149, 0, 31).astype(_U)
    bits = jnp.where(be >= 1, normal_bits, sub_bits)
    bits = jnp.where(be > 254, jnp.uint32(_EXP_MASK), bits)  # overflow -> Inf (not reached by MX)
    bits = jnp.where(n == 0, jnp.uint32(0), bits)
    return _from_bits((sign << 31) | bits)


def _round_shift(sig, shift, rounding):
    """``round(sig / 2**shift)`` for integer ``sig`` (uint32) and ``shift`` (int32, any sign).

    Round to nearest; ties to even (``"even"``, IEEE 754 roundTiesToEven, OCP MX v1.0 §6.3) or
    away from zero (``"nearest"``, microxcaling's default). Exact for any shift.
    """
    sh = jnp.clip(shift, 0, 31).astype(_U)
    trunc = sig >> sh
    rem = sig - (trunc << sh)
    half = jnp.where(sh > 0, jnp.uint32(1) << jnp.maximum(sh, 1) - 1, jnp.uint32(0))
    if rounding == "even":
        up = (rem > half) | ((rem == half) & ((trunc & 1) == 1))
    else:
        up = rem >= half
    up = up & (sh > 0)
    down_n = trunc + up.astype(_U)
    up_n = sig << jnp.clip(-shift, 0, 31).astype(_U)
    return jnp.where(shift > 0, down_n, up_n)


def quantize_elements(x, s, ef: ElementFormat, rounding: str):
    """Round ``x / 2**s`` to the element format, saturate, and return ``q * 2**s`` (float32).

    This is OCP MX v1.0 §6.3 ("quantize ... to the element data type, rounding to nearest even,
    normal overflows clamped to the max normal"): with the private exponent
    ``p = max(floor(log2|x / 2**s|), emin)`` the element quantum is ``2**(p - mbits)``; values
    above the max normal saturate to it (no Inf/NaN is produced inside the element format).
    INT8 (§5.3.4) uses the fixed quantum 2^-6 and clamps the code to [-128, 127].

    Args:
        x: float32 array (finite values; callers handle NaN/Inf).
        s: int32 array broadcastable to ``x``: the scale exponent (X = 2^s).
        ef: element format.
        rounding: ``"even"`` or ``"nearest"``.

    Returns:
        float32 array, the dequantised values ``element * 2**s`` (exact, subnormals kept).
    """
    b = _bits(x)
    sign = b >> 31
    sig, ex, flog2 = _decompose(b & _ABS_MASK)
    s = jnp.broadcast_to(s, x.shape).astype(_I)
    if ef.is_int:
        qe = s - ef.mbits
        n = _round_shift(sig, qe - ex, rounding)
        limit = jnp.where(sign == 1, jnp.uint32(ef.max_mant + 1), jnp.uint32(ef.max_mant))
        n = jnp.minimum(n, limit)
    else:
        p = jnp.maximum(flog2 - s, ef.emin)
        qe = s + p - ef.mbits
        n = _round_shift(sig, qe - ex, rounding)
        sat = (p > ef.emax) | ((p == ef.emax) & (n > ef.max_mant))
        n = jnp.where(sat, jnp.uint32(ef.max_mant), n)
        qe = jnp.where(sat, s + ef.emax - ef.mbits, qe)
    n = jnp.where(sig == 0, jnp.uint32(0), n)
    return _compose(sign, n, qe)


def shared_exponent(xb, ef: ElementFormat, scale_recipe: str):
    """E8M0 shared exponent per block (OCP MX v1.0 §6.3, E8M0 range §5.4.1).

    ``"floor"``: ``s = floor(log2(amax)) - emax_elem`` with floor(log2) taken from the exponent
    bits of the float32 amax (subnormal amax handled). ``"round_up"``: the smallest ``s`` with
    ``amax / 2**s <= max_normal`` (``ceil(log2(amax / max_normal))``), so amax never saturates.
    Both are clamped to the E8M0 range [-127, 127]; an all-zero block gets -127.

    Args:
        xb: float32 array ``(..., n_blocks, block_size)``.

    Returns:
        ``(s, nonfinite)``: int32 ``(..., n_blocks)`` exponents and a bool mask of blocks holding
        NaN or Inf (their scale is NaN, E8M0 byte 0xFF).
    """
    mag = _bits(xb) & _ABS_MASK
    nonfinite = jnp.any(mag >= _EXP_MASK, axis=-1)
    amax = jnp.max(jnp.where(mag >= _EXP_MASK, jnp.uint32(0), mag), axis=-1)
    sig, _, flog2 = _decompose(amax)
    s = flog2 - ef.emax
    if scale_recipe == "round_up":
        # normalised 24-bit significand of amax vs that of max_normal (max_mant << (23 - mbits))
        bitlen = 32 - lax.clz(sig).astype(_I)
        norm = sig << jnp.clip(24 - bitlen, 0, 31).astype(_U)
        mant_limit = ef.max_mant << (23 - ef.mbits)  # INT8: 127 << 17 = 1.984375 * 2**23
        s = s + (norm > mant_limit).astype(_I)
    s = jnp.clip(s, -127, 127)
    s = jnp.where(amax == 0, -127, s)
    return s, nonfinite


@functools.partial(jax.jit, static_argnames=("element", "block_size", "rounding", "scale_recipe"))
def mx_quantize(x, *, element: str, block_size: int, rounding: str = "even",
                scale_recipe: str = "floor"):
    """MX quantise-dequantise along the last axis (OCP MX v1.0 §5, §6.3).

    Args:
        x: float32 ``(..., n)`` with ``n % block_size == 0``.
        element: element format name (``"e2m1"``, ``"e4m3"``, ``"int8"``, ...).
        block_size: k (32 for the OCP formats).
        rounding: ``"even"`` (spec) or ``"nearest"`` (ties away from zero).
        scale_recipe: ``"floor"`` (spec) or ``"round_up"``.

    Returns:
        ``(y, scale_byte)``: float32 ``(..., n)`` dequantised values (a block with NaN/Inf is all
        NaN) and uint8 ``(..., n // block_size)`` E8M0 scale bytes (s + 127; 0xFF for NaN).
    """
    ef = ELEMENTS[element]
    x = x.astype(jnp.float32)
    xb = x.reshape(x.shape[:-1] + (x.shape[-1] // block_size, block_size))
    s, nonfinite = shared_exponent(xb, ef, scale_recipe)
    y = quantize_elements(xb, s[..., None], ef, rounding)
    y = jnp.where(nonfinite[..., None], jnp.float32(jnp.nan), y)
    scale = jnp.where(nonfinite, 255, s + 127).astype(jnp.uint8)
    return y.reshape(x.shape), scale


def _finite_amax(x):
    mag = _bits(x) & _ABS_MASK
    return _from_bits(jnp.max(jnp.where(mag >= _EXP_MASK, jnp.uint32(0), mag), initial=jnp.uint32(0)))


@functools.partial(jax.jit, static_argnames=("element", "rounding"))
def fp8_quantize(x, *, element: str, rounding: str = "even"):
    """FP8 with an FP32 per-tensor scale (OFP8 rev 1.0 elements, saturating conversion).

    ``scale = amax / max_normal`` (float32, amax over the finite values of the whole array);
    ``y = fp8(x / scale) * scale`` where ``fp8`` rounds (``rounding``) and saturates at the max
    normal. An all-zero tensor uses scale 1. NaN stays NaN; ±Inf stays ±Inf in E5M2 and becomes
    NaN in E4M3 (which has no Inf encoding, OFP8 §3). Float32 arithmetic as XLA does it: a tensor
    whose scale would be float32-subnormal (amax below ~1e-35) is flushed to zeros.

    Args:
        x: float32, any shape.

    Returns:
        float32, same shape.
    """
    ef = ELEMENTS[element]
    x = x.astype(jnp.float32)
    ts = _finite_amax(x) / jnp.float32(ef.max_normal)
    ts = jnp.where(ts > 0, ts, jnp.float32(1.0))
    mag = _bits(x) & _ABS_MASK
    finite = mag < _EXP_MASK
    v = jnp.where(finite, x, 0.0) / ts
    y = quantize_elements(v, jnp.int32(0), ef, rounding) * ts
    if element == "e5m2":
        y = jnp.where(finite, y, x)
    else:
        y = jnp.where(finite, y, jnp.float32(jnp.nan))
    return y


def e4m3_scale(v):
    """Saturating round-to-nearest-even cast of a non-negative float32 to E4M3 (as float32).

    Unlike ``ml_dtypes.float8_e4m3fn`` (which maps 465 to NaN) values above 448 saturate to 448.
    """
    return quantize_elements(v, jnp.int32(0), ELEMENTS["e4m3"], "even")


@functools.partial(jax.jit, static_argnames=("rounding",))
def nvfp4_quantize(x, *, rounding: str = "even"):
    """NVFP4 quantise-dequantise (NVIDIA's two-level scaling for Blackwell).

    Per NVIDIA's NVFP4 description: E2M1 elements, one E4M3 scale per 16 consecutive elements,
    one FP32 scale per tensor. In float32:

    * ``ts = amax_tensor / (448 * 6)`` (amax over finite values of the whole array; 1 if zero);
    * ``bs = e4m3(amax_block / (6 * ts))`` (saturating RNE, see :func:`e4m3_scale`);
    * ``y = e2m1(x / (bs * ts)) * (bs * ts)``; a block whose scale rounds to 0 decodes to zeros.

    A block holding NaN or Inf is all NaN. XLA flushes subnormal float32 intermediates, so tensors
    with amax below ~1e-34 decode to zeros.

    Args:
        x: float32 ``(..., n)`` with ``n % 16 == 0``.

    Returns:
        float32, same shape.
    """
    ef = ELEMENTS["e2m1"]
    x = x.astype(jnp.float32)
    xb = x.reshape(x.shape[:-1] + (x.shape[-1] // 16, 16))
    mag = _bits(xb) & _ABS_MASK
    finite = mag < _EXP_MASK
    nonfinite_block = jnp.any(~finite, axis=-1, keepdims=True)
    ts = _finite_amax(x) / jnp.float32(448.0 * 6.0)
    ts = jnp.where(ts > 0, ts, jnp.float32(1.0))
    amax_b = _from_bits(jnp.max(jnp.where(finite, mag, jnp.uint32(0)), axis=-1, keepdims=True))
    bs = e4m3_scale(amax_b / (jnp.float32(6.0) * ts))
    denom = bs * ts
    safe = jnp.where(denom > 0, denom, jnp.float32(1.0))
    v = jnp.where(finite, xb, 0.0) / safe
    y = quantize_elements(v, jnp.int32(0), ef, rounding) * safe
    y = jnp.where(denom > 0, y, jnp.float32(0.0) * xb)
    y = jnp.where(nonfinite_block, jnp.float32(jnp.nan), y)
    return y.reshape(x.shape)


@functools.partial(jax.jit, static_argnames=("rounding",))
def bf16_quantize(x, *, rounding: str = "even"):
    """Cast float32 -> bfloat16 -> float32 by bit arithmetic (IEEE 754 binary16-brain).

    Keeps the top 16 bits, rounding the dropped 16 to nearest (ties to even, or away from zero
    for ``"nearest"``); overflow rounds to ±Inf as IEEE requires; NaN stays (quiet) NaN.
    """
    b = _bits(x)
    if rounding == "even":
        bias = jnp.uint32(0x7FFF) + ((b >> 16) & 1)
    else:
        bias = jnp.uint32(0x8000)
    r = (b + bias) & jnp.uint32(0xFFFF0000)
    isnan = (b & _ABS_MASK) > _EXP_MASK
    r = jnp.where(isnan, (b | 0x400000) & jnp.uint32(0xFFFF0000), r)
    return _from_bits(r)


#: compressed-tensors clamps a group's scale below at ``torch.finfo(torch.float32).eps`` = 2^-23.
_INT_SCALE_MIN = 2.0 ** -23


@functools.partial(jax.jit, static_argnames=("element", "block_size", "rounding"))
def int_group_quantize(x, *, element: str = "int4", block_size: int = 32, rounding: str = "even"):
    """Symmetric group-wise integer quantise-dequantise with a BF16 scale per group
    (compressed-tensors ``strategy: group``, see :mod:`codesign_mx._spec`).

    Per group of ``block_size`` consecutive elements along the last axis, in float32:

    * ``scale = max(bf16(amax / ((q_max - q_min) / 2)), 2^-23)``: INT4 ``amax / 7.5``, rounded to
      BF16 (nearest, ties to even) as the checkpoint stores it;
    * ``q = clamp(round(x / scale), q_min, q_max)`` (INT4: [-8, 7]; ``rounding`` ``"even"`` is
      ``torch.round``, ``"nearest"`` rounds ties away from zero); ``y = q * scale`` (exact).

    compressed-tensors on BF16 weights rounds ``x / scale`` to BF16 before rounding to an integer;
    here the quotient stays float32 (the input is float32), which can move a code by one only
    within a BF16 ulp of a tie. A group holding NaN or Inf is all NaN (as MX and NVFP4 here). XLA
    flushes float32 subnormals, so a group whose amax is below ~1e-38 decodes to zeros (its scale
    is the 2^-23 floor there too).

    Args:
        x: float32 ``(..., n)`` with ``n % block_size == 0``.
        element: integer element format (key of ``ELEMENTS`` with ``is_int``; ``"int4"``).

    Returns:
        float32, same shape.
    """
    ef = ELEMENTS[element]
    x = x.astype(jnp.float32)
    xb = x.reshape(x.shape[:-1] + (x.shape[-1] // block_size, block_size))
    mag = _bits(xb) & _ABS_MASK
    finite = mag < _EXP_MASK
    nonfinite_block = jnp.any(~finite, axis=-1, keepdims=True)
    amax = _from_bits(jnp.max(jnp.where(finite, mag, jnp.uint32(0)), axis=-1, keepdims=True))
    half_range = ((ef.max_mant + 1) + ef.max_mant) / 2.0  # (q_max - q_min) / 2: INT4 7.5
    scale = bf16_quantize(amax / jnp.float32(half_range))
    scale = jnp.maximum(scale, jnp.float32(_INT_SCALE_MIN))
    v = jnp.where(finite, xb, 0.0) / scale
    # integer rounding and the 2's complement clamp ([-(max_mant + 1), max_mant]) of the element
    # format at scale 2^0, exact on the float32 bits
    q = quantize_elements(v, jnp.int32(0), ef, rounding)
    y = q * scale
    y = jnp.where(nonfinite_block, jnp.float32(jnp.nan), y)
    return y.reshape(x.shape)


def quantize_array(x, name: str, rounding: str, scale_recipe: str):
    """Dispatch on the format name (validated by the caller). Returns float32 ``y``."""
    spec = FORMATS[name]
    if spec.kind == "mx":
        return mx_quantize(x, element=spec.element, block_size=spec.block_size,
                           rounding=rounding, scale_recipe=scale_recipe)[0]
    if spec.kind == "nvfp4":
        return nvfp4_quantize(x, rounding=rounding)
    if spec.kind == "fp8":
        return fp8_quantize(x, element=spec.element, rounding=rounding)
    if spec.kind == "int_group":
        return int_group_quantize(x, element=spec.element, block_size=spec.block_size,
                                  rounding=rounding)
    return bf16_quantize(x, rounding=rounding)
