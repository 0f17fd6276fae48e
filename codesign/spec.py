"""The spec: TOML files → frozen attrs classes with every quantity in SI units.

A spec has the sections of DESIGN.md: ``[chip]``, ``[memory]``, ``[network]``, ``[model]``,
``[workload]``, ``[deployment]`` and, for ``codesign optimize``, ``[search]``. A file may pull in
others with a top-level ``include = ["../hardware/gb200.toml", ...]`` (paths relative to the file);
included files are merged first, in order, and the including file's own keys override them, table
by table. Quantities carry units in the TOML (``"8 TB/s"``) and are converted once, here, to SI
floats (see :mod:`codesign.units`).

Errors never escape as tracebacks: :func:`load_spec` raises :class:`~codesign.errors.SpecError`
whose lines name the file that set the key, the dotted key path and what was expected::

    specs/x.toml: memory.hbm.bandwidth: must be > 0 (got '-8 TB/s')
"""

from __future__ import annotations

import collections
import copy
import functools
import os
import re
import sys
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, NewType

import attrs
from attrs import field, frozen

from .errors import SpecError, close_name, format_value
from .units import KINDS, QuantityError, parse_quantity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "Spec", "Chip", "PeakFlops", "Energy", "Area", "Memory", "MemoryTier", "Network", "Model",
    "Workload", "Slo", "Deployment", "Pool", "Search", "SearchParam", "Objective", "Constraint",
    "load_spec", "load_raw", "spec_from_dict", "quantity_kind", "deployment_value_problem", "SPEC_SCHEMA_VERSION",
    "unit_notes", "value_bits_note",
]

SPEC_SCHEMA_VERSION = 1

PosInt = NewType("PosInt", int)
"""A whole number >= 1 (a count: layers, chips, tokens)."""

NonNegInt = NewType("NonNegInt", int)
"""A whole number >= 0 (a count where 0 turns a stage off: ``search.seed_sweep``)."""

SeedInt = NewType("SeedInt", int)
"""A sampler seed: a whole number in [0, 2**32) (numpy's and Optuna's seed range)."""

Jitter = NewType("Jitter", float)
"""``workload.length_jitter``: a fraction in [0, 1)."""

OutputTokens = NewType("OutputTokens", int)
"""An output sequence length: a whole number >= 2 (TPOT = (E2E - TTFT) / (OSL - 1) needs two tokens)."""

#: Why an output length must be 2 or more, said after the range in every message that refuses one.
OSL_WHY = "TPOT = (E2E - TTFT) / (OSL - 1) needs two output tokens"

#: The whole-number types of spec keys and the least value each takes (a study's grid checks its values).
WHOLE_MINIMUM = {PosInt: 1, OutputTokens: 2}

GridLevels = NewType("GridLevels", int)
"""A whole number >= 2: levels per number of a grid (its low and high at least)."""

SamplerName = NewType("SamplerName", str)
"""``search.sampler``: a built-in sampler or one a plugin registers (:func:`codesign.search.sampler_problem`)."""

SearchMetric = NewType("SearchMetric", str)
"""An objective's metric (:data:`codesign.search.SEARCH_METRICS`)."""

BoundMetric = NewType("BoundMetric", str)
"""A constraint's metric: a search metric, or a point metric bound as an SLO (:data:`codesign.search.SLO_METRICS`)."""


def q(kind: str, *, default: Any = attrs.NOTHING, allow_zero: bool = False, doc: str = ""):
    """An attrs field holding a quantity of ``kind`` (a key of :data:`codesign.units.KINDS`)."""
    return field(default=default, metadata={"unit": kind, "allow_zero": allow_zero, "doc": doc})




# --------------------------------------------------------------------------------------- chip
PEAK_CLASSES = ("bf16", "fp8", "fp6", "fp4", "int8")


def resolve_peaks(r: dict) -> dict:
    """Fill missing peak classes (``None``) by the rules of :class:`PeakFlops`.

    Works on floats or numpy arrays (values per design); returns a new dict.
    """
    r = dict(r)
    if r.get("fp8") is None and r.get("fp4") is not None:
        r["fp8"] = r["fp4"] / 2.0
    if r.get("bf16") is None and r.get("fp8") is not None:
        r["bf16"] = r["fp8"] / 2.0
    for narrow, wide in (("fp8", "bf16"), ("fp6", "fp8"), ("fp4", "fp6"), ("int8", "fp8")):
        if r.get(narrow) is None:
            r[narrow] = r[wide]
    return r


@frozen(kw_only=True)
class PeakFlops:
    """Dense peak compute per number-format class [FLOP/s] (never the 2:4-sparse figure).

    Give at least one. A missing wider class is derived from the next narrower one at half its
    rate (bf16 = fp8 / 2 = fp4 / 4, the ratio of every Blackwell and Hopper datasheet in
    hardware_specs.csv); a missing narrower class runs at the next wider class's rate (a chip
    without FP4 tensor cores upcasts FP4 weights and computes in FP8).
    """

    bf16: float | None = q("FLOP/s", default=None)
    fp8: float | None = q("FLOP/s", default=None)
    fp6: float | None = q("FLOP/s", default=None)
    fp4: float | None = q("FLOP/s", default=None)
    int8: float | None = q("FLOP/s", default=None)

    def __attrs_post_init__(self):
        if all(getattr(self, c) is None for c in ("bf16", "fp8", "fp6", "fp4", "int8")):
            raise ValueError("give at least one dense peak (bf16, fp8, fp6, fp4 or int8)")

    def resolved(self) -> dict[str, float]:
        """Peak per class [FLOP/s] with the derivation rules above applied."""
        return resolve_peaks({c: getattr(self, c) for c in PEAK_CLASSES})


@frozen(kw_only=True)
class Energy:
    """Energy figures for modelled power: static power plus dynamic energy per operation."""

    #: Power drawn whatever the load (leakage, clocks) [W], fixed part.
    static: float = q("W", allow_zero=True, default=0.0)
    #: Static power per unit of modelled chip area [W/m^2] (leakage scales with silicon).
    static_per_area: float = q("W/m^2", allow_zero=True, default=0.0)
    #: Energy per dense FLOP for each format class [J/FLOP].
    per_flop_bf16: float | None = q("J/FLOP", default=None)
    per_flop_fp8: float | None = q("J/FLOP", default=None)
    per_flop_fp4: float | None = q("J/FLOP", default=None)


def energy_per_flop(en: Energy | None) -> dict[str, float]:
    """Energy per dense FLOP [J/FLOP] of the classes ``fp4``, ``fp8`` and ``bf16`` from ``en``.

    A missing class runs at the same power at its peak as the given ones (the peaks halve from FP4
    to FP8 to BF16, :class:`PeakFlops`): fp8 = 2·fp4 = bf16/2. With no figure at all, 0 (no
    dynamic energy). Other classes (fp6, int8) take fp8's, as they take its rate or less.
    """
    e4, e8, e16 = ((getattr(en, f"per_flop_{c}") if en is not None else None) for c in ("fp4", "fp8", "bf16"))
    e8 = e8 if e8 is not None else (2 * e4 if e4 is not None else (e16 / 2 if e16 is not None else 0.0))
    return {"fp4": e4 if e4 is not None else e8 / 2, "fp8": e8, "bf16": e16 if e16 is not None else 2 * e8}


@frozen(kw_only=True)
class Area:
    """Per-unit silicon area and packaging figures, so a search cannot buy everything at once."""

    #: Largest buildable logic area (reticle limit times dies per package) [m^2].
    max: float = q("m^2")
    #: Area per dense FP4 FLOP/s of tensor-core compute (FP8/BF16 run on the same units) [m^2 per FLOP/s].
    per_fp4_flop_s: float = q("m^2/(FLOP/s)")
    #: Area per byte of on-chip SRAM, macro plus periphery [m^2/B].
    per_sram_byte: float = q("m^2/B")
    #: Area per B/s of scale-up I/O (SerDes), one direction [m^2 per B/s].
    per_scaleup_byte_s: float = q("m^2/(B/s)")
    #: Logic area of one HBM stack's PHY and controller [m^2].
    per_hbm_stack: float = q("m^2")
    #: Capacity of one HBM stack [B].
    hbm_stack_capacity: float = q("B")
    #: Bandwidth of one HBM stack [B/s].
    hbm_stack_bandwidth: float = q("B/s")
    #: HBM stacks the package can hold (shoreline and interposer limit).
    max_hbm_stacks: PosInt
    #: Area of everything else (control, caches, NoC, media engines) [m^2].
    fixed: float = q("m^2", allow_zero=True)


@frozen(kw_only=True)
class Chip:
    """One accelerator chip (per GPU for multi-die packages such as GB200)."""

    name: str
    #: Thermal design power per chip [W]; the power basis of the Jalapeño table.
    tdp: float = q("W")
    peak_flops: PeakFlops
    energy: Energy | None = field(default=None)
    area: Area | None = None

    @energy.validator
    def _energy_priced(self, att, value):
        # no [chip.energy]: power is not modelled and cost models take the TDP; an empty table, or
        # static_per_area with no [chip.area] to take the area from, priced a chip at 0 W and the
        # analytical model crashed on an infinite tok/s per kW (noticed in session 32)
        if value is None:
            return
        figures = (value.static, value.static_per_area, value.per_flop_fp4, value.per_flop_fp8, value.per_flop_bf16)
        if not any(figures):
            raise ValueError("energy: gives no power (static, static_per_area and every per_flop_* are zero "
                             "or missing); give the chip's figures (specs/technology/n4p.toml has a current "
                             "node's) or drop the [chip.energy] table (power is then taken as chip.tdp)")
        if value.static_per_area and self.area is None:
            raise ValueError("energy.static_per_area: is power per unit of the chip's modelled area, and the "
                             "chip has no [chip.area] to model it from; give [chip.area] (as "
                             "specs/technology/n4p.toml does) or a fixed static power (static = \"150 W\")")


# ------------------------------------------------------------------------------------- memory
@frozen(kw_only=True)
class MemoryTier:
    #: Capacity per chip usable by the serving framework [B].
    capacity: float = q("B", allow_zero=True)
    #: Peak bandwidth per chip [B/s].
    bandwidth: float = q("B/s")
    #: Access energy per byte [J/B] (specs give it per bit: "3.9 pJ/bit").
    energy_per_byte: float | None = q("J/B", default=None, allow_zero=True)


@frozen(kw_only=True)
class Memory:
    """Memory tiers, fastest first: on-chip SRAM (optional), HBM (required), host memory (optional).

    Weights live in HBM; the KV cache fills SRAM first (kept local), then what HBM has left after
    the weights, then spills to the host tier, and is read at each tier's bandwidth.
    """

    sram: MemoryTier | None = None
    hbm: MemoryTier
    host: MemoryTier | None = None

    def __attrs_post_init__(self):
        if self.hbm.bandwidth > HBM_BANDWIDTH_CEIL:
            raise ValueError("hbm.bandwidth: " + _bandwidth_slip(self.hbm.bandwidth, HBM_BANDWIDTH_CEIL,
                                                                 "one chip's HBM bandwidth", 8e12))


#: Largest HBM bandwidth of one chip a spec may give [B/s], and largest scale-up bandwidth
#: [B/s, one direction]: sanity ceilings against a slipped time unit ("8 TB/ms", 8 PB/s, for
#: "8 TB/s"), which the units' own ceiling for a bandwidth cannot catch (an on-wafer SRAM tier runs
#: at 21 PB/s: hardware_specs.csv cerebras_wse3). The most in ../shared/data/hardware_specs.csv is
#: 8 TB/s of HBM (B200, GB200, GB300, MI355X) and 900 GB/s of scale-up (GB200/GB300 NVLink 5); the
#: ceilings are 125 and 1,111 times those (fresh-user trial, session 48: "8 TB/ms" was priced).
HBM_BANDWIDTH_CEIL = 1e15
SCALEUP_BANDWIDTH_CEIL = 1e15


def _bandwidth_slip(value: float, ceil: float, what: str, typical: float) -> str:
    """The message of a bandwidth above its sanity ceiling: the value read, the ceiling, why."""
    from .units import format_quantity

    return (f"reads as {format_quantity(value, 'B/s')}, above {format_quantity(ceil, 'B/s')}, the sanity ceiling of "
            f"{what} ({format_quantity(typical, 'B/s')} is the most in hardware_specs.csv): a unit slip "
            f"(a time unit other than s, e.g. TB/ms)? e.g. '{format_quantity(typical, 'B/s')}'")


# ------------------------------------------------------------------------------------ network
@frozen(kw_only=True)
class Network:
    #: Chips in one scale-up domain (NVLink domain): 8 for HGX, 72 for NVL72.
    scaleup_domain: PosInt
    #: Scale-up bandwidth per chip, one direction [B/s].
    scaleup_bandwidth: float = q("B/s")
    #: Latency of one scale-up collective step (α in the α–β model) [s].
    scaleup_latency: float = q("s", allow_zero=True)
    #: Scale-out bandwidth per chip, one direction [B/s].
    scaleout_bandwidth: float | None = q("B/s", default=None)
    #: Latency of one scale-out step [s].
    scaleout_latency: float | None = q("s", default=None, allow_zero=True)
    #: Energy per byte on the scale-up links [J/B].
    scaleup_energy_per_byte: float | None = q("J/B", default=None, allow_zero=True)
    #: How the scale-up domain is wired: ``"switch"`` (NVLink switches: any group of chips talks at
    #: the full per-chip bandwidth) or ``"full_mesh"`` (point-to-point links, one per peer, as AMD's
    #: 8-GPU Infinity Fabric platforms: a collective over g of the domain's D chips uses g − 1 of
    #: the D − 1 links, so it gets that share of ``scaleup_bandwidth``).
    scaleup_topology: Literal["switch", "full_mesh"] = "switch"

    def __attrs_post_init__(self):
        if self.scaleup_bandwidth > SCALEUP_BANDWIDTH_CEIL:
            raise ValueError("scaleup_bandwidth: " + _bandwidth_slip(
                self.scaleup_bandwidth, SCALEUP_BANDWIDTH_CEIL, "one chip's scale-up bandwidth", 9e11))


# -------------------------------------------------------------------------------------- model
class FieldsError(ValueError):
    """A check across several fields of one table (``num_layers`` and ``layer_types``): ``fields``
    are the keys whose values disagree, the one the message is about first. The loader names the
    key among them that was written last (an including file's override of an included model), in
    the file that wrote it, since that value broke an agreement the others had; the message itself
    names every key it is about, so it reads the same at any of them."""

    def __init__(self, fields: tuple[str, ...], message: str):
        super().__init__(message)
        self.fields = tuple(fields)


class FieldsErrors(ValueError):
    """Several independent :class:`FieldsError` of one table at once (``num_layers`` disagreeing
    with ``layer_types`` and ``num_kv_heads`` not dividing the query heads), each named at its own
    key by the loader: the first one alone hid the others until it was fixed. ``str()`` joins
    their messages."""

    def __init__(self, errors: list[FieldsError]):
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = list(errors)


def _raise_fields(errors: list[FieldsError]) -> None:
    """Raise ``errors``: none, nothing; one, itself; more, :class:`FieldsErrors`."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise FieldsErrors(errors)


class FieldProblems(ValueError):
    """Several fields of one table out of range at once, each a ``"key: message"`` line; the loader
    names each at its key (a table's validators stopped at the first: ``speculative_tokens = 40``
    hid ``max_batch_size = 0``; noticed in session 33). ``str()`` joins the lines."""

    def __init__(self, lines: list[str]):
        super().__init__("; ".join(lines))
        self.lines = list(lines)


def _raise_problems(lines: list[str]) -> None:
    """Raise ``lines`` (``"key: message"``): none, nothing; one, a ValueError; more, :class:`FieldProblems`."""
    if len(lines) == 1:
        raise ValueError(lines[0])
    if lines:
        raise FieldProblems(lines)


#: The Gated DeltaNet keys of a model's ``"linear"`` layers (HF ``linear_*`` of Qwen3-Next / Qwen3.5).
LINEAR_KEYS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
               "linear_value_head_dim", "linear_conv_kernel_dim")


def _set_keys(keys: list[str]):
    """``("a is set" or "a, b and c are set", pick)``, ``pick(singular, plural)`` choosing the word
    that agrees with them: the start of a refusal of keys nothing reads (:class:`Model`)."""
    one = len(keys) == 1
    listed = keys[0] if one else ", ".join(keys[:-1]) + " and " + keys[-1]
    return f"{listed} {'is' if one else 'are'} set", (lambda singular, plural: singular if one else plural)


@frozen(kw_only=True)
class Model:
    """The architecture a cost model needs, usually imported from a Hugging Face ``config.json``.

    Counts are plain integers; ``layer_types`` lists each decoder layer's token mixer
    (``"full"`` attention, ``"sliding"``-window attention or ``"linear"`` attention: Gated
    DeltaNet, whose cache is a fixed-size recurrent state per request), ``moe_layers`` each
    layer's FFN (``True`` for MoE).

    A model is MoE by ``moe_layers``: the experts' keys (``num_experts``, ``experts_per_token``,
    ``moe_intermediate_size``, ``num_shared_experts``, ``expert_bias``, ``router_bias``) on a
    model with no MoE layer are refused, not ignored; so are ``sliding_window`` without a
    ``"sliding"`` layer, the ``linear_*`` keys without a ``"linear"`` one and MLA's keys
    (``q_lora_rank``, ``kv_lora_rank``, ``qk_*_head_dim``, ``v_head_dim``) under GQA. GQA
    (``attention = "gqa"``) needs ``num_attention_heads`` to be a multiple of ``num_kv_heads``; MLA does not read
    ``num_kv_heads`` (the importer writes the query head count there).
    """

    name: str
    source: str = ""
    architecture: str = ""
    hidden_size: PosInt
    num_layers: PosInt
    vocab_size: PosInt
    tie_word_embeddings: bool = False
    #: Longest sequence the released model serves [tokens]: prompt plus output (HF
    #: ``max_position_embeddings``, the extended length where the config carries RoPE scaling). A
    #: workload whose ``isl + osl`` exceeds it is refused; None (not given): not checked.
    context_length: PosInt | None = None
    # attention
    attention: Literal["gqa", "mla"] = "gqa"
    num_attention_heads: PosInt
    num_kv_heads: PosInt
    head_dim: PosInt
    attention_bias: bool = False
    attention_sinks: bool = False
    q_lora_rank: PosInt | None = None
    kv_lora_rank: PosInt | None = None
    qk_nope_head_dim: PosInt | None = None
    qk_rope_head_dim: PosInt | None = None
    v_head_dim: PosInt | None = None
    #: attention layers gate their output with a sigmoid of a second query projection (Qwen3-Next
    #: / Qwen3.5 "gated attention": ``q_proj`` has 2·heads·head_dim outputs)
    attn_output_gate: bool = False
    #: DeepSeek sparse attention (DSA; DeepSeek-V3.2, GLM-5): a lightning indexer of
    #: ``index_n_heads`` × ``index_head_dim`` (FP8) scores every cached token and MLA attends only
    #: the ``index_topk`` best; HF keys of the same names
    index_topk: PosInt | None = None
    index_n_heads: PosInt | None = None
    index_head_dim: PosInt | None = None
    layer_types: tuple[Literal["full", "sliding", "linear"], ...] = ()
    sliding_window: PosInt | None = None
    # linear-attention (Gated DeltaNet) layers: HF ``linear_*`` keys of Qwen3-Next / Qwen3.5
    linear_num_key_heads: PosInt | None = None
    linear_num_value_heads: PosInt | None = None
    linear_key_head_dim: PosInt | None = None
    linear_value_head_dim: PosInt | None = None
    linear_conv_kernel_dim: PosInt | None = None
    # FFN
    intermediate_size: PosInt
    ffn_gated: bool = True
    mlp_bias: bool = False
    moe_layers: tuple[bool, ...] = ()
    num_experts: PosInt | None = None
    experts_per_token: PosInt | None = None
    moe_intermediate_size: PosInt | None = None
    num_shared_experts: int = 0
    expert_bias: bool = False
    router_bias: bool = False
    #: Native weight format of the released checkpoint (experts and other GEMMs).
    native_weights_format: str = "bf16"
    native_moe_weights_format: str = "bf16"

    def __attrs_post_init__(self):
        # every independent disagreement at once, each at its key (the first alone hid the rest); a
        # check that reads a value an earlier one refused is skipped, not said as a second problem
        errs: list[FieldsError] = []
        L = self.num_layers
        n_types, n_moe = len(self.layer_types), len(self.moe_layers)
        if self.layer_types and n_types != L:
            errs.append(FieldsError(("layer_types", "num_layers"),
                                    f"layer_types has {n_types} entries for num_layers = {L}; expected one per layer"))
        if self.moe_layers and n_moe != L and not (self.layer_types and n_moe == n_types):
            # (moe_layers as long as layer_types: num_layers is what disagrees with both, said once)
            errs.append(FieldsError(("moe_layers", "num_layers"),
                                    f"moe_layers has {n_moe} entries for num_layers = {L}; expected one per layer"))
        if "sliding" in self.layer_types and self.sliding_window is None:
            errs.append(FieldsError(("sliding_window", "layer_types"),
                                    "sliding_window is missing (the sliding layers of layer_types need it)"))
        linear = (self.linear_num_key_heads, self.linear_num_value_heads, self.linear_key_head_dim,
                  self.linear_value_head_dim, self.linear_conv_kernel_dim)
        if "linear" in self.layer_types and None in linear:
            errs.append(FieldsError(("linear_num_key_heads", "layer_types"),
                                    "the linear-attention layers of layer_types need "
                                    "linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, "
                                    "linear_value_head_dim and linear_conv_kernel_dim"))
        elif "linear" in self.layer_types and self.linear_num_value_heads % self.linear_num_key_heads:
            errs.append(FieldsError(("linear_num_value_heads", "linear_num_key_heads"),
                                    "linear_num_value_heads must be a multiple of linear_num_key_heads (got "
                                    f"{self.linear_num_value_heads} and {self.linear_num_key_heads})"))
        # keys of a token mixer no layer uses were silently ignored, as the experts' keys were
        # (sliding_window = 128 on a model of full layers priced full attention everywhere)
        unused = [k for k, kind, v in (("sliding_window", "sliding", self.sliding_window),
                                       *((n, "linear", getattr(self, n)) for n in LINEAR_KEYS))
                  if v is not None and kind not in self.layer_types]
        if unused:
            kinds = sorted({"sliding" if k == "sliding_window" else "linear" for k in unused})
            said, pick = _set_keys(unused)
            errs.append(FieldsError((*unused, "layer_types"),
                                    f"{said}, but layer_types has no "
                                    f"{' or '.join(repr(k) for k in kinds)} layer, so "
                                    f"{pick('it would be', 'they would be')} ignored; list each "
                                    "layer's token mixer in layer_types (\"full\", \"sliding\" or \"linear\") "
                                    f"or drop {pick('it', 'them')}"))
        dsa = (self.index_topk, self.index_n_heads, self.index_head_dim)
        if any(v is not None for v in dsa) and None in dsa:
            errs.append(FieldsError(("index_topk", "index_n_heads", "index_head_dim"),
                                    "sparse attention needs index_topk, index_n_heads and index_head_dim"))
        if self.index_topk is not None and not (self.attention == "mla" and self.q_lora_rank):
            errs.append(FieldsError(("index_topk", "attention", "q_lora_rank"),
                                    "DeepSeek sparse attention (index_topk) is modelled on MLA with a q_lora_rank "
                                    "(its indexer projects the compressed query)"))
        # a dense model (no layer of moe_layers is MoE) reads none of the experts' keys: set, they
        # were silently ignored (num_experts = 8 on Llama priced a dense Llama)
        moe_keys = [k for k, v in (("num_experts", self.num_experts), ("experts_per_token", self.experts_per_token),
                                   ("moe_intermediate_size", self.moe_intermediate_size),
                                   ("num_shared_experts", self.num_shared_experts or None),
                                   ("expert_bias", self.expert_bias or None), ("router_bias", self.router_bias or None))
                    if v is not None]
        if moe_keys and not any(self.moe_layers):
            said, pick = _set_keys(moe_keys)
            errs.append(FieldsError((*moe_keys, "moe_layers"),
                                    f"{said}, but no layer is MoE "
                                    "(moe_layers has no true entry), so a "
                                    "dense model would be priced; list each layer's FFN in moe_layers (true for MoE) "
                                    f"or drop {pick('it', 'them')}"))
        elif any(self.moe_layers) and not (self.num_experts and self.experts_per_token and self.moe_intermediate_size):
            errs.append(FieldsError(("moe_layers", "num_experts", "experts_per_token", "moe_intermediate_size"),
                                    "MoE layers need num_experts, experts_per_token and moe_intermediate_size"))
        elif self.num_experts and self.experts_per_token and self.experts_per_token > self.num_experts:
            # (the experts' keys of a dense model are to be dropped, not compared)
            errs.append(FieldsError(("experts_per_token", "num_experts"),
                                    f"experts_per_token must be at most num_experts (got {self.experts_per_token} "
                                    f"of {self.num_experts} experts)"))
        mla_keys = [k for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
                    if getattr(self, k) is not None]
        if self.attention == "gqa" and not mla_keys and self.num_attention_heads % self.num_kv_heads:
            # each key/value head serves an equal group of query heads (HF repeat_kv); MLA caches one
            # latent per token and has no key/value heads in this sense (num_kv_heads is not read)
            # (with MLA's keys set, attention = "gqa" is itself in question: said below, alone)
            errs.append(FieldsError(("num_kv_heads", "num_attention_heads"),
                                    f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                                    f"num_kv_heads ({self.num_kv_heads}): grouped-query attention shares each "
                                    "key/value head among an equal group of query heads"))
        # MLA's keys under GQA were silently ignored: a model file with attention = "gqa" over an
        # included DeepSeek-R1 was priced as GQA with 128 KV heads, 14x fewer tok/s per kW, and
        # kv_lora_rank on gpt-oss passed (fresh-user trial, session 39)
        if self.attention == "gqa" and mla_keys:
            said, pick = _set_keys(mla_keys)
            errs.append(FieldsError((*mla_keys, "attention"),
                                    f"{said}, but attention is \"gqa\", "
                                    f"which reads none of multi-head latent attention's keys, so "
                                    f"{pick('it would be', 'they would be')} ignored; set "
                                    f"attention = \"mla\" or drop {pick('it', 'them')} (a GQA "
                                    "variant of an MLA model is its own model file)"))
        if self.attention == "mla" and None in (self.kv_lora_rank, self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim):
            errs.append(FieldsError(("attention", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"),
                                    "MLA needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim"))
        _raise_fields(errs)


# ----------------------------------------------------------------------------------- workload
#: What an empty ``[workload.slo]`` is told (:class:`Slo`).
EMPTY_SLO = ("sets neither ttft nor tpot; give a target (ttft = \"2 s\", tpot = \"20 ms\") "
             "or drop the [workload.slo] table")


@frozen(kw_only=True)
class Slo:
    ttft: float | None = q("s", default=None)
    tpot: float | None = q("s", default=None)

    def __attrs_post_init__(self):
        # an empty [workload.slo] (or one whose keys were all misspelt away) was taken silently as
        # "no SLO" (fresh-user trial, session 31). The table checks itself as it is structured, so
        # it is named with the other keys' problems of [workload]: Workload's own check never ran
        # when one of them failed (fresh-user trial, session 41)
        if self.ttft is None and self.tpot is None:
            raise ValueError(EMPTY_SLO)


def _jitter_problem(value: float) -> str | None:
    """Why ``value`` is no ``length_jitter`` (a fraction in [0, 1)), or None."""
    return None if 0.0 <= value < 1.0 else f"must be in [0, 1) (got {value})"


def _jitter_hook(value, _type):
    """The structure hook of :data:`Jitter`: checked while [workload] is read, with its other keys
    (as :func:`_seed_hook`)."""
    value = converter().structure(value, float)
    if why := _jitter_problem(value):
        raise ValueError(why)
    return value


def _seed_hook(value, _type):
    """The structure hook of :data:`SeedInt`: checked while the table is read, with its other keys
    (an attrs validator runs only once every key structured, so a bad seed surfaced one run later)."""
    value = _as_whole(value)
    if not 0 <= value < 2**32:
        raise ValueError(f"must be a whole number in [0, 2**32) (got {value})")
    return value


def _min_osl(value):  # Workload(...) built in Python; a spec's osl is refused by its structure hook first
    if value < 2:
        raise ValueError(f"osl: must be a whole number >= 2 (got {value}): {OSL_WHY}")


def _nonempty(inst, att, value):
    if not value:
        raise ValueError("concurrency: must list at least one concurrency")
    twice = sorted(c for c, k in collections.Counter(value).items() if k > 1)
    if twice:  # the point was priced and printed twice (fresh-user trial of session 16)
        raise ValueError(f"concurrency: lists {', '.join(str(c) for c in twice)} more than once; give each "
                         "concurrency once")


@frozen(kw_only=True)
class Workload:
    """Traffic: request shape and the closed-loop concurrency sweep (InferenceMAX style)."""

    name: str = ""
    #: Input sequence length per request [tokens].
    isl: PosInt
    #: Output sequence length per request [tokens]; at least 2, since TPOT is (E2E − TTFT)/(OSL − 1).
    osl: OutputTokens = field(validator=lambda inst, att, v: _min_osl(v))
    #: Requests in flight, closed loop; one point of the sweep each.
    concurrency: tuple[PosInt, ...] = field(validator=_nonempty)
    #: Lengths drawn uniformly from [(1 - length_jitter)·L, L]: InferenceMAX uses 0.2.
    length_jitter: Jitter = field(default=0.0)
    slo: Slo | None = field(default=None)

    @length_jitter.validator
    def _jit(self, att, value):  # Workload(...) built in Python; a spec's is refused by _jitter_hook first
        if why := _jitter_problem(value):
            raise ValueError(f"length_jitter: {why}")


# --------------------------------------------------------------------------------- deployment
@frozen(kw_only=True)
class Pool:
    """A prefill or decode pool in disaggregated serving."""

    chips: PosInt
    tp: PosInt = 1
    ep: PosInt = 1
    dp_attention: PosInt = 1


@frozen(kw_only=True)
class Deployment:
    """How the model is laid out on chips and served."""

    #: Name of the cost-model plugin that prices this spec.
    cost_model: str = "analytical"
    mode: Literal["aggregated", "disaggregated"] = "aggregated"
    #: Tensor parallelism of attention and dense GEMMs (chips per model replica for attention).
    tp: PosInt = 1
    #: Pipeline stages.
    pp: PosInt = 1
    #: Expert parallelism (chips sharing the routed experts).
    ep: PosInt = 1
    #: Attention data parallelism (replicas of attention inside one TP×… group).
    dp_attention: PosInt = 1
    #: Number format of non-expert weights (attention, dense FFN, lm_head).
    weights_format: str = "bf16"
    #: Number format of MoE expert weights; defaults to ``weights_format``.
    moe_weights_format: str | None = None
    kv_cache_format: str = "bf16"
    #: Format the GEMMs compute in; selects the chip peak (bf16, fp8 or fp4 class).
    activations_format: str = "bf16"
    prefill: Pool | None = None
    decode: Pool | None = None
    #: Speculative decoding (MTP heads, EAGLE): draft tokens proposed per decode step; 0 = off.
    speculative_tokens: int = field(default=0)
    #: Chance that a draft token is accepted when the one before it was (each step then yields
    #: 1 + a + a² + … + a^d tokens); ``None``: the cost model's calibrated default.
    acceptance_rate: float | None = field(default=None)
    #: Let the running requests' KV cache spill to the host memory tier (KV offload: SGLang
    #: HiCache, TensorRT-LLM host KV cache, LMCache). Off by default, as the serving engines of the
    #: measured data run: the running batch's KV lives in SRAM/HBM, and requests beyond it wait.
    host_kv_cache: bool = False
    #: Let a TP group span scale-up domains (multi-node TP: its all-reduces run over the scale-out
    #: network, e.g. TP 16 over two 8-GPU HGX nodes, as TensorRT-LLM and SGLang run DeepSeek-R1 on
    #: H100). Off by default: TP larger than the scale-up domain is infeasible, as design searches
    #: require.
    multinode_tp: bool = False
    #: Most requests one decode instance (tp × dp_attention × pp chips; in disaggregated serving one
    #: instance of the decode pool) runs at once: the engine's batch limit (TensorRT-LLM
    #: ``max_batch_size`` per attention-DP rank × ranks, SGLang ``--max-running-requests``, vLLM
    #: ``max_num_seqs``). Users beyond it, or beyond the KV cache's slots, wait for admission.
    #: ``None``: only the KV cache limits the batch.
    max_batch_size: int | None = field(default=None,
                                      metadata={"doc": "the engine's batch limit, per decode instance"})
    #: Decode iterations between the engine's polls for new requests while it decodes (SGLang
    #: ``--scheduler-recv-interval``, default 1; SGLang ``--num-continuous-decode-steps`` acts
    #: alike). A request arriving at a busy engine then waits (R − 1)/2 iterations on average
    #: before it is received. ``None``: the cost model's calibrated default for the framework.
    scheduler_recv_interval: int | None = field(default=None)
    #: TensorRT-LLM's attention-DP balance (``attention_dp_config``: ``enable_balance: true``,
    #: ``batching_wait_iters: 0``, ``timeout_iters`` N) in aggregated serving: a context request is
    #: held until every attention-DP rank has one, or until N iterations have passed since the
    #: last release (``PyExecutor._balance_adp_requests``). InferenceMAX's TensorRT-LLM launch
    #: scripts set N = 60 whenever attention DP is on. ``None``: no balance (TensorRT-LLM's default).
    attention_dp_balance_timeout_iters: int | None = field(
        default=None, metadata={"doc": "read only in aggregated serving with dp_attention > 1; "
                                       "no disaggregated pool holds both prompts and decoding users"})

    def __attrs_post_init__(self):  # every out-of-range count at once, each at its key
        lines = []
        if self.max_batch_size is not None and not 1 <= self.max_batch_size <= 10_000_000:
            lines.append(f"max_batch_size: must be a whole number in [1, 10000000] (got {self.max_batch_size})")
        if self.scheduler_recv_interval is not None and not 1 <= self.scheduler_recv_interval <= 10_000:
            lines.append("scheduler_recv_interval: must be a whole number in [1, 10000] "
                         f"(got {self.scheduler_recv_interval})")
        if (self.attention_dp_balance_timeout_iters is not None
                and not 1 <= self.attention_dp_balance_timeout_iters <= 10_000):
            lines.append("attention_dp_balance_timeout_iters: must be a whole number in [1, 10000] "
                         f"(got {self.attention_dp_balance_timeout_iters})")
        if not 0 <= self.speculative_tokens <= 16:
            lines.append(f"speculative_tokens: must be a whole number in [0, 16] (got {self.speculative_tokens})")
        if self.acceptance_rate is not None and not 0.0 <= self.acceptance_rate < 1.0:
            lines.append(f"acceptance_rate: must be in [0, 1) (got {self.acceptance_rate})")
        _raise_problems(lines)


# ------------------------------------------------------------------------------------- search
@frozen(kw_only=True)
class SearchParam:
    """One searched parameter: ``low``/``high`` (with units where the key has them) or ``choices``."""

    low: Any = None
    high: Any = None
    log: bool = False
    step: Any = None
    choices: tuple[Any, ...] | None = None


@frozen(kw_only=True)
class Objective:
    metric: SearchMetric
    direction: Literal["maximize", "minimize"]


@frozen(kw_only=True)
class Constraint:
    """``metric <= max`` or ``metric >= min`` (values with units where the metric has them)."""

    metric: BoundMetric
    max: Any = None
    min: Any = None

    def __attrs_post_init__(self):  # exactly one bound, in the metric's unit
        from .search import constraint_problem

        if bad := constraint_problem(self):
            raise ValueError(f"{bad[0]}: {bad[1]}" if bad[0] else bad[1])


@frozen(kw_only=True)
class Search:
    """``[search]``; every key is checked when the spec is loaded, except what needs the cost
    model (the keys of ``params`` and ``envelope``: whether it can vary them, and whether they are
    spec keys at all) or another file (``reference``), which the search checks
    (:func:`codesign.search.build_space`). The shape of each ``params`` entry (its bounds, choices
    and step for the key's kind, ``low`` below ``high``; :func:`codesign.search.param_problem`),
    the values a search would try that the spec's ``[deployment]`` refuses
    (:func:`codesign.search.searched_value_problem`), and an ``envelope`` entry's choices (at least
    one, of the key's kind, each one the deployment takes) and a key both searched and in the
    envelope (:func:`codesign.search.envelope_problem`) are checked when the spec is loaded."""

    trials: PosInt = 200
    sampler: SamplerName = "nsga2"
    seed: SeedInt = 0
    #: Trials asked, evaluated in one vectorised call, and told per batch.
    batch_size: PosInt = 32
    #: Sobol' designs evaluated in vectorised calls before the search, followed by a local search of
    #: 5x as many around their feasible front; the designs that add most hypervolume enter the study
    #: as enqueued trials, and more are enqueued around the study's front between batches (0 turns
    #: all of this off).
    seed_sweep: NonNegInt = 4096
    params: dict[str, SearchParam] = field(factory=dict)
    objectives: tuple[Objective, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    #: Name of a reference design (a spec file, relative to this one) to mark and compare against.
    reference: str | None = None
    #: Deployment choices each design (and the reference) is evaluated at; every summary metric
    #: then takes its best value over them, as published comparisons report each metric at its
    #: best configuration. Keys are ``deployment.*`` spec keys, values lists of choices.
    envelope: dict[str, tuple[Any, ...]] = field(factory=dict)
    #: Designs of the study's front, after the first batch, refined by JAX gradients (log-space
    #: parameters, penalty for constraints) and enqueued with ``seed_source = "gradient"`` (0: off).
    gradient_seeds: NonNegInt = 8
    #: Levels per continuous parameter when ``sampler = "grid"`` (categoricals: every choice). Such a
    #: search prices each design of the grid once: its trials are at most the grid's size.
    grid_points: GridLevels = 5


# --------------------------------------------------------------------------------------- spec
@frozen(kw_only=True)
class Spec:
    chip: Chip
    memory: Memory
    network: Network
    model: Model
    workload: Workload
    deployment: Deployment = Deployment()
    search: Search | None = None
    #: Cost-model knobs (achievable fractions, overheads) by name; the cost model validates them.
    #: ``codesign calibrate`` writes these.
    efficiency: dict[str, float] = field(factory=dict)
    #: Take the efficiency knobs of this registered baseline (``"gb200"``: the serving stack as
    #: calibrated on measured GB200 data); keys in ``[efficiency]`` still override them. Lets a new
    #: design and its reference be priced with the same measured software efficiency.
    efficiency_from: str | None = None
    name: str = ""
    description: str = ""
    #: Where the spec was loaded from (not a TOML key).
    path: str = field(default="", metadata={"internal": True})
    #: The file that set each key path (a tuple), for errors found after loading (not a TOML key).
    origins: dict = field(factory=dict, eq=False, repr=False, metadata={"internal": True})

    def origin(self, key: str) -> str:
        """The file that set the dotted ``key`` (an included one if it came from there)."""
        return self.origin_of(*key.split("."))

    def origin_of(self, *path: str) -> str:
        """:meth:`origin` of a key path given by its parts, for keys that hold dots themselves
        (``origin_of("search", "params", "deployment.tp")``)."""
        return _origin(self.origins, path, self.path or "<spec>")


_TOP_ONLY = {"include"}


# ------------------------------------------------------------------------------------ loading
def _read_toml(path: Path, *, by: tuple[str, str] | None) -> dict:
    """The TOML table of ``path``. ``by``: ``(including file, "include")`` when an include named it.

    Raises:
        SpecError: a file that cannot be read (missing, a directory, not UTF-8, permission denied)
            is named at the including file's ``include`` key when an include named it (that is
            what to fix; fresh-user trial, session 42, for a directory), with the included path
            and why; a spec given itself, at its own path. A TOML syntax error is named in the file
            that holds it, with its line.
    """
    def refuse(own: str, included: str) -> SpecError:
        return SpecError([(by[0], by[1], included)] if by else [(str(path), "", own)])

    shown = repr(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise refuse("no such file", f"included file {shown} does not exist") from None
    except IsADirectoryError:
        raise refuse("is a directory, not a spec file",
                     f"included path {shown} is a directory; expected a TOML spec file") from None
    except UnicodeDecodeError:
        raise refuse("not a UTF-8 text file (expected a TOML spec)",
                     f"included file {shown} is not a UTF-8 text file; expected a TOML spec") from None
    except OSError as exc:  # permission denied, a path through a file, ...
        raise refuse(f"cannot read: {exc.strerror}", f"included file {shown} cannot be read: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError([(str(path), "", f"TOML syntax error: {exc}{_toml_line(text, str(exc))}")]) from None


def _toml_line(text: str, message: str) -> str:
    """The line a TOML error points at, and what "Cannot overwrite a value" means (tomllib names
    neither: a key set twice said only "Cannot overwrite a value (at line 25, column 14)")."""
    m = re.search(r"\(at line (\d+), column \d+\)", message)
    lines = text.splitlines()
    if not m or not 1 <= int(m.group(1)) <= len(lines):
        return ""
    why = " (a key set twice, or a table and a key of one name)" if message.startswith("Cannot overwrite") else ""
    return f": {lines[int(m.group(1)) - 1].strip()[:80]!r}{why}"


def _merge(base: dict, over: dict, origins: dict, file: str, prefix: tuple = ()) -> None:
    for key, value in over.items():
        path = prefix + (key,)
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value, origins, file, path)
        else:
            if isinstance(value, list) and isinstance(base.get(key), list) and isinstance(origins, Origins):
                # TOML arrays replace, they do not add up: keep what was replaced, and from which file
                origins.replaced.setdefault(path, []).append((origins.get(path, ""), base[key]))
            base[key] = copy.deepcopy(value)
            _mark(value, origins, file, path)


#: Top-level tables an include replaces whole when it names another model or chip than an earlier
#: include (``name``): its model or hardware, not a patch of the earlier one.
_NAMED_PARTS = {"model": ("model",), "chip": ("chip", "memory", "network")}


def _replace_named(merged: dict, sub: dict, origins: dict) -> None:
    """Drop from ``merged`` (in place) the tables of a model or chip that the include ``sub``
    replaces: ``include = ["gb200-gpt-oss-120b.toml", "models/qwen3-8b.toml"]`` merged the two
    models key by key, and gpt-oss-120b's experts and sliding window, which qwen3-8b does not set,
    stayed under the name qwen3-8b and were priced (fresh-user trial, session 26). A chip of
    another name takes the ``[memory]`` and ``[network]`` tables the include sets with it. The
    including file's own tables still merge (``[model] name = "renamed"`` over an included model)."""
    for part, tables in _NAMED_PARTS.items():
        old, new = merged.get(part), sub.get(part)
        if not (isinstance(old, dict) and isinstance(new, dict)):
            continue
        if old.get("name") is None or new.get("name") is None or old.get("name") == new.get("name"):
            continue
        for t in tables:
            if t in sub and t in merged:
                del merged[t]
                for path in [k for k in origins if k[:1] == (t,)]:
                    del origins[path]


def _mark(value, origins, file, path):
    origins[path] = file
    if isinstance(value, dict):
        for k, v in value.items():
            _mark(v, origins, file, path + (k,))


class Origins(dict):
    """The file that set each key path (a tuple), as :func:`load_raw` merged them; ``order`` lists
    the files in the order their own keys were merged (an include before the file including it, an
    earlier include before a later one), so a file later in it overrode the ones before;
    ``replaced`` maps the path of an array a later file replaced to ``[(file, array), …]``, each
    replaced array with the file that had set it (``[[search.constraints]]`` of an include, say)."""

    def __init__(self, *args, order=(), **kw):
        super().__init__(*args, **kw)
        self.order = list(order)
        self.replaced: dict[tuple, list] = {}


def load_raw(path: str | os.PathLike, _stack: tuple = (), _by=None) -> tuple[dict, dict]:
    """Read a spec file and its includes, merged, without validating.

    Returns:
        ``(data, origins)``: the merged TOML table, and for each key path (a tuple) the file that
        set it.

    Raises:
        SpecError: a missing or unreadable file, a TOML syntax error, an include cycle.
    """
    p = Path(path)
    display = os.path.relpath(p) if not p.is_absolute() else str(p)
    data = _read_toml(p, by=_by)
    includes = data.pop("include", [])
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise SpecError([(display, "include", "expected a list of file paths")])
    merged: dict = {}
    origins = Origins()
    key = p.resolve()
    if key in _stack:
        raise SpecError([(display, "include", "include cycle: " + " -> ".join(str(s) for s in _stack + (key,)))])
    for inc in includes:
        sub, sub_origins = load_raw(p.parent / inc, _stack + (key,), _by=(display, "include"))
        _replace_named(merged, sub, origins)
        for path, was in sub_origins.replaced.items():
            origins.replaced.setdefault(path, []).extend(was)
        _merge(merged, sub, origins, "", ())
        origins.update(sub_origins)
        origins.order += sub_origins.order
    _merge(merged, data, origins, display, ())
    origins.order.append(display)
    return merged, origins


def _origin(origins: dict, path: tuple, default: str) -> str:
    for n in range(len(path), 0, -1):
        f = origins.get(tuple(path[:n]))
        if f:
            return f
        # a quoted key with dots ("deployment.tp" under [search.params]) is one TOML key
        for j in range(n - 1, 0, -1):
            f = origins.get(tuple(path[:j]) + (".".join(path[j:n]),))
            if f:
                return f
    return default


def _strict(tp, check):
    def hook(value, _type):
        if not check(value):
            raise TypeError(f"expected {_HUMAN[tp]} (got {format_value(value)})")
        return tp(value)
    return hook


_HUMAN = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}


def whole_count(value):
    """``value`` as an int when it is a float with a whole value (TOML ``30.0``, a search's float, a
    command-line ``20.0`` → 30, 20); anything else unchanged (2.5, and 1e30 beyond 2**53, stay floats
    for the caller to refuse)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


#: Largest count a spec takes (layers, heads, chips, tokens, users): far above any real one, and
#: small enough that a typo (isl = 100000000000000000000) is refused rather than priced.
MAX_COUNT = 10**9


def _as_whole(value):
    """``value`` as an int (:func:`whole_count`); TypeError naming it when it is no whole number."""
    value = whole_count(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a whole number (got {format_value(value)})")
    return value


def _whole_at_least(minimum: int, why: str = ""):
    """The structure hook of a count >= ``minimum`` (and <= :data:`MAX_COUNT`); ``why`` follows the
    message of a value below it."""
    def hook(value, _type):
        value = whole_count(value)
        if isinstance(value, float) and value.is_integer():  # beyond 2**53: whole, but not a count
            raise ValueError(f"must be a whole number in [{minimum}, {MAX_COUNT}] (got {format_value(value)})")
        value = _as_whole(value)
        if value < minimum:
            raise ValueError(f"must be a whole number >= {minimum} (got {value})" + (f": {why}" if why else ""))
        if value > MAX_COUNT:
            raise ValueError(f"must be a whole number in [{minimum}, {MAX_COUNT}] (got {value})")
        return value
    return hook


_pos_int = _whole_at_least(1)


def _name_hook(problem):
    """The structure hook of a name (a string) that ``problem(name)`` explains when it is wrong."""
    def hook(value, _type):
        if not isinstance(value, str):
            raise TypeError(f"expected a string (got {format_value(value)})")
        if why := problem(value):
            raise ValueError(why)
        return value
    return hook


# [search] names are checked by codesign.search (imported when a [search] table is read): its metric
# tables and, for a sampler that is no built-in, the plugin manager's samplers
def _sampler_problem(name: str) -> str | None:
    from .search import sampler_problem

    return sampler_problem(name)


def _metric_problem(name: str, slo: bool = False) -> str | None:
    from .search import metric_problem

    return metric_problem(name, slo=slo)


def _param_problem(key: str, p: SearchParam) -> tuple[str, str] | None:
    from .search import param_problem

    return param_problem(key, p)


#: What a TOML table of each mapping type of the spec holds, for a value that is no table (a
#: mapping type not listed here is "a table").
_MAPPINGS = {
    dict[str, float]: "a table of cost-model knobs to numbers (compute_decode = 0.7)",
    dict[str, tuple[Any, ...]]: 'a table of deployment keys to lists of choices ("deployment.tp" = [1, 2, 4, 8])',
}


@functools.cache
def converter():
    """The cattrs converter for specs: strict types, unknown keys refused, quantities in SI.

    Quantity fields (attrs metadata ``unit``) are parsed by :func:`codesign.units.parse_quantity`.
    """
    import cattrs
    from cattrs.gen import make_dict_structure_fn, override

    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(bool, _strict(bool, lambda v: isinstance(v, bool)))
    int_hook = _strict(int, lambda v: isinstance(v, int) and not isinstance(v, bool))
    conv.register_structure_hook(int, lambda v, t: int_hook(whole_count(v), t))
    conv.register_structure_hook(
        float, _strict(float, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)))
    conv.register_structure_hook(str, _strict(str, lambda v: isinstance(v, str)))
    conv.register_structure_hook(PosInt, _pos_int)
    conv.register_structure_hook(NonNegInt, _whole_at_least(0))
    conv.register_structure_hook(GridLevels, _whole_at_least(2))
    conv.register_structure_hook(OutputTokens, _whole_at_least(WHOLE_MINIMUM[OutputTokens], OSL_WHY))
    conv.register_structure_hook(SeedInt, _seed_hook)
    conv.register_structure_hook(Jitter, _jitter_hook)
    conv.register_structure_hook(SamplerName, _name_hook(_sampler_problem))
    conv.register_structure_hook(SearchMetric, _name_hook(_metric_problem))
    conv.register_structure_hook(BoundMetric, _name_hook(lambda m: _metric_problem(m, slo=True)))
    conv.register_structure_hook(typing.Any, lambda v, _t: v)

    def _choices(value, _type):  # a list in TOML; a string or a table would iterate char by char
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a list (got {format_value(value)})")
        return tuple(value)

    conv.register_structure_hook_func(lambda t: t == tuple[typing.Any, ...], _choices)

    def _mapping(type_):  # a TOML table ({key = value}); a number, string or array has no .items()
        from cattrs.gen import make_mapping_structure_fn

        structure = make_mapping_structure_fn(type_, conv)
        what = _MAPPINGS.get(type_, "a table")

        def hook(value, _type):
            if not isinstance(value, dict):
                raise TypeError(f"expected {what} (got {format_value(value)})")
            return structure(value, _type)
        return hook

    conv.register_structure_hook_factory(lambda t: typing.get_origin(t) is dict, _mapping)

    def _search_params(value, type_):  # [search.params]: each entry structured, then its shape checked
        from cattrs.errors import IterableValidationError, IterableValidationNote

        if not isinstance(value, dict):
            raise TypeError(f'expected a table of searched keys ("memory.hbm.bandwidth" = {{low = …, high = …}} '
                            f"or {{choices = […]}}) (got {format_value(value)})")
        out, errors = {}, []
        for key, entry in value.items():
            try:
                out[key] = conv.structure(entry, SearchParam)
                if bad := _param_problem(key, out[key]):  # "low: must be below high …" names the field
                    raise ValueError(f"{bad[0]}: {bad[1]}" if bad[0] else bad[1])
            except Exception as exc:  # noqa: BLE001 - collected as cattrs collects a mapping's errors
                exc.add_note(IterableValidationNote(f"Structuring mapping value @ key {key!r}", key, SearchParam))
                errors.append(exc)
        if errors:
            raise IterableValidationError(f"While structuring {type_!r}", errors, type_)
        return out

    conv.register_structure_hook_func(lambda t: t == dict[str, SearchParam], _search_params)

    def _array(value, type_):  # tuple[X, ...]: a TOML array; a table or a string would iterate
        if not isinstance(value, (list, tuple)):
            what = "an array of tables ([[…]] sections)" if attrs.has(typing.get_args(type_)[0]) else "a list"
            raise TypeError(f"expected {what} (got {format_value(value)})")
        return conv._structure_tuple(value, type_)

    conv.register_structure_hook_func(
        lambda t: typing.get_origin(t) is tuple and len(typing.get_args(t)) == 2 and typing.get_args(t)[1] is ...
        and typing.get_args(t)[0] is not typing.Any, _array)

    # workload.concurrency: an empty or repeated list is a structure problem, said with the rest of
    # the spec's (as the Workload validator, it waited until every other key structured: isl = 0 hid
    # concurrency = []; noticed in session 33)
    concurrencies = conv.get_structure_hook(tuple[PosInt, ...])

    def _concurrencies(value, type_):
        out = concurrencies(value, type_)
        try:
            _nonempty(None, None, out)
        except ValueError as exc:
            raise ValueError(str(exc).removeprefix("concurrency: ")) from None
        return out

    conv.register_structure_hook_func(lambda t: t == tuple[PosInt, ...], _concurrencies)

    def _literal(value, type_):  # the allowed strings, and the value as the TOML wrote it
        allowed = typing.get_args(type_)
        if isinstance(value, bool) or value not in allowed:
            # a case slip or the British spelling ('maximise'): fresh-user trial, session 43
            close = close_name(value, allowed)
            mean = f"; did you mean {close!r}?" if close else ""
            raise ValueError(f"expected one of {', '.join(repr(x) for x in allowed)} (got {format_value(value)}){mean}")
        return value

    conv.register_structure_hook_func(lambda t: typing.get_origin(t) is Literal, _literal)

    def quantity_hook(a):
        kind, allow_zero = a.metadata["unit"], a.metadata.get("allow_zero", False)
        return lambda value, _t: parse_quantity(value, kind, allow_zero=allow_zero)

    def factory(cls):
        overrides = {a.name: override(struct_hook=quantity_hook(a))
                     for a in attrs.fields(cls) if a.metadata.get("unit")}
        overrides.update({a.name: override(omit=True)
                          for a in attrs.fields(cls) if a.metadata.get("internal")})
        structure = make_dict_structure_fn(cls, conv, **overrides)

        def hook(value, type_):  # a table; a scalar or an array said "expected a list" (an optional table)
            if not isinstance(value, dict):
                raise TypeError(f"{_expected_table(cls)} (got {format_value(value)})")
            return structure(value, type_)
        return hook

    conv.register_structure_hook_factory(attrs.has, factory)
    return conv


def _format_exception(exc: BaseException, type_) -> str:
    import cattrs

    if isinstance(exc, FieldsError):
        return "\x00FIELDS\x00" + "\x01".join(exc.fields) + "\x00" + str(exc)
    if isinstance(exc, FieldsErrors):
        return "\x03".join(_format_exception(e, type_) for e in exc.errors)
    if isinstance(exc, FieldProblems):
        return "\x00MANY\x00" + "\x02".join(exc.lines)
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        names = [a.name for a in attrs.fields(exc.cl) if not a.metadata.get("internal")]
        return "\x00UNKNOWN\x00" + "\x00".join(
            f"{k}\x01{_did_you_mean(k, names, exc.cl)}" for k in sorted(exc.extra_fields))
    if isinstance(exc, KeyError):
        return "missing (required)"
    if isinstance(exc, AttributeError) and "'keys'" in str(exc):
        return _expected_table(type_)
    if "not in literal" in str(exc):
        allowed = typing.get_args(type_) if type_ is not None else ()
        got = str(exc).split(" not in literal")[0]
        return f"expected one of {', '.join(repr(x) for x in allowed)} (got {got})"
    if isinstance(exc, (QuantityError, ValueError, TypeError)):
        msg = str(exc)
        if "is not iterable" in msg:
            return _expected_table(type_) if attrs.has(type_) else "expected a list"
        if msg.startswith("expected one of"):
            return msg
        if "not in literal" in msg or (type_ is not None and typing.get_origin(type_) is Literal):
            allowed = typing.get_args(type_) if type_ is not None else ()
            return f"expected one of {', '.join(repr(x) for x in allowed)}" if allowed else msg
        return msg
    return f"{type(exc).__name__}: {exc}"


def _expected_table(type_) -> str:
    """What a TOML table for ``type_`` (an attrs class of the spec) looks like."""
    if type_ is SearchParam:
        return "expected a table (e.g. {low = …, high = …} or {choices = […]})"
    if attrs.has(type_):
        keys = [a.name for a in attrs.fields(type_) if not a.metadata.get("internal")]
        return f"expected a table (keys: {', '.join(keys)})"
    return "expected a table"


def _did_you_mean(key: str, names: list[str], cls: type | None = None) -> str:
    """The message for an unknown ``key`` of the table structured as ``cls`` (field ``names``):
    the closest field name; else, for a key that is a field of another table of the spec
    (``max_batch_size`` under ``[deployment.decode]``), the table(s) it belongs in, with the
    field's ``doc`` metadata when it says what the key means there; else every field name."""
    close = close_name(key, names, cutoff=0.6)  # difflib's default; 'TDP' for 'tdp' too
    homes, tree = _key_homes()
    elsewhere = [(table, doc) for table, doc, owner in homes.get(key, ()) if owner is not cls] if cls in tree else []
    belongs = ""
    if elsewhere:
        tables = list(dict.fromkeys(t for t, _ in elsewhere))
        where = tables[0] if len(tables) == 1 else ", ".join(tables[:-1]) + " or " + tables[-1]
        docs = list(dict.fromkeys(d for _, d in elsewhere if d))
        belongs = f"{key} belongs in {where}" + (f" ({docs[0]})" if len(docs) == 1 else "")
    if close:
        return f"unknown key; did you mean {close!r}?" + (f" ({belongs})" if belongs else "")
    if belongs:
        return f"unknown key here; {belongs}"
    return f"unknown key; expected one of {', '.join(names)}"


@functools.cache
def _key_homes() -> tuple[dict[str, list[tuple[str, str, type]]], frozenset]:
    """Every field of the spec's tables: ``({name: [(table as TOML writes it, doc, class)]},
    classes of the spec)``, so that a key put in the wrong table can be pointed to its own."""
    homes: dict[str, list[tuple[str, str, type]]] = {}
    seen: set = set()

    def inner(hint):
        """``(attrs class, how it nests)`` inside a field's type, or None."""
        args = [t for t in typing.get_args(hint) if t is not type(None)]
        origin = typing.get_origin(hint)
        if attrs.has(hint):
            return hint, "table"
        if origin in (typing.Union, __import__("types").UnionType) and len(args) == 1:
            return inner(args[0])
        if origin is tuple and args and attrs.has(args[0]):
            return args[0], "array"
        if origin is dict and len(args) == 2 and attrs.has(args[1]):
            return args[1], "entry"
        return None

    def walk(cls, path: str, shown: str):
        seen.add(cls)
        hints = typing.get_type_hints(cls)
        for a in attrs.fields(cls):
            if a.metadata.get("internal"):
                continue
            homes.setdefault(a.name, []).append((shown, a.metadata.get("doc", ""), cls))
            sub = inner(hints[a.name])
            if sub:
                p = f"{path}.{a.name}" if path else a.name
                walk(sub[0], p, {"table": f"[{p}]", "array": f"[[{p}]]", "entry": f"a [{p}] entry"}[sub[1]])

    walk(Spec, "", "the top level")
    return homes, frozenset(seen)


def is_file_name(name: str) -> bool:
    """``name`` is one file name, safe to join to a directory: not empty or blank, not ``.`` or ``..``, and
    without a path separator (``/`` or ``\\``) or NUL. A spec's ``name`` (the default output
    directory ``runs/<name>``) and a study step's ``name`` (its output subdirectory) must be one."""
    return name.strip() not in ("", ".", "..") and not any(c in name for c in "/\\\0")


def toml_key_path(*parts) -> str:
    """The dotted TOML key path of ``parts``, a key that is no bare TOML key (one with a dot, as
    ``[search.params]`` keys have) quoted: ``search.params."memory.hbm.bandwidth".low``."""
    from .errors import _toml_key

    return ".".join(_toml_key(k) for k in parts)


_CATTRS_STEP = re.compile(r"""\.([^.\[]+)|\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?[0-9]+)\]""")


def _cattrs_path(where: str) -> tuple[str, ...]:
    """The keys of a cattrs error path (``$.search.params['memory.hbm.bandwidth'].low``): a field,
    a mapping key (as its repr) or a list index each."""
    import ast

    return tuple(m.group(1) if m.group(1) is not None else str(ast.literal_eval(m.group(2)))
                 for m in _CATTRS_STEP.finditer(where))


def _cattrs_problems(exc, origins: dict, file: str) -> list[tuple[str, str, str]]:
    import cattrs

    problems = []
    meant = set()  # the key paths that a misspelt key stands for (its "did you mean")
    for line in cattrs.transform_error(exc, path="$", format_exception=_format_exception):
        msg, _, where = line.rpartition(" @ ")
        path = _cattrs_path(where)
        if msg.startswith("\x00UNKNOWN\x00"):
            for item in msg.split("\x00")[2:]:
                key, _, text = item.partition("\x01")
                problems.append((_origin(origins, path + (key,), file), toml_key_path(*path, key), text))
                m = re.match(r"^unknown key; did you mean '([^']+)'\?", text)
                if m:
                    meant.add(toml_key_path(*path, m.group(1)))
            continue
        if msg.startswith("\x00FIELDS\x00"):
            for one in msg.split("\x03"):
                _, _, names, text = one.split("\x00", 3)
                problems.append(_fields_problem(names.split("\x01"), text, path, origins, file))
            continue
        for msg in msg.removeprefix("\x00MANY\x00").split("\x02") if msg.startswith("\x00MANY\x00") else [msg]:
            at = path
            m = re.match(r"^([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*): (.*)$", msg, flags=re.S)
            if m:  # a validator named its field (or a key below it): point at the key, and at the file that set it
                at += tuple(m.group(1).split("."))
                msg = m.group(2)
            # a missing key is set by no file: it is the spec being read that lacks it (not the include
            # that happened to set the rest of its table)
            problems.append((file if msg == "missing (required)" else _origin(origins, at, file),
                             toml_key_path(*at), msg))
    # a misspelt key (``tdpp``, ``[memory.hbmm]``) also leaves the key it stands for missing: that
    # follows from the typo, which its own line names ("did you mean 'tdp'?"), and would be blamed on
    # whichever file (an include) set the rest of the table. Only the typo is reported.
    return [(f, key, text) for f, key, text in problems
            if not (text == "missing (required)" and any(key == k or key.startswith(k + ".") for k in meant))]


def _fields_problem(fields, message: str, path: tuple, origins: dict, file: str) -> tuple[str, str, str]:
    """The problem of a :class:`FieldsError` of the table at ``path``: named at the key among
    ``fields`` that was written last, in the file that wrote it (``include = [model.toml]`` then
    ``num_layers = 10`` is the including file's mistake, not the model file's ``layer_types``).
    When the key the message is about (the first) is missing, it is named, in the file that wrote
    the last of the others. The files that set the other keys are added to the message."""
    setters = {f: origins[path + (f,)] for f in fields if origins.get(path + (f,))}
    if not setters:
        return _origin(origins, path + (fields[0],), file), toml_key_path(*path, fields[0]), message
    order = getattr(origins, "order", ())
    rank = {f: i for i, f in enumerate(order)}  # precedence: a file's last position in the merge
    latest = max(setters, key=lambda f: rank.get(setters[f], len(order) if setters[f] == file else -1))
    blamed = setters[latest]
    key = latest if fields[0] in setters else fields[0]
    by_file: dict[str, list[str]] = {}
    for f, g in setters.items():
        if g != blamed:
            by_file.setdefault(g, []).append(f)
    others = [(f"{ks[0]} is" if len(ks) == 1 else f"{', '.join(ks[:-1])} and {ks[-1]} are") + f" set in {g}"
              for g, ks in by_file.items()]
    return blamed, toml_key_path(*path, key), message + (f" ({'; '.join(others)})" if others else "")


def spec_from_dict(data: dict, *, file: str = "<spec>", origins: dict | None = None, cls=Spec):
    """Validate a merged spec table into ``cls`` (default :class:`Spec`) through cattrs.

    Raises:
        SpecError: every problem found, one per line, each naming the file that set the key.
    """
    import cattrs

    problems = []
    origins = origins if origins is not None else {}
    if cls is Spec:
        data = _without_overridden_search_duplicates(data, origins, file)
    spec = None
    try:
        spec = converter().structure(data, cls)
    except cattrs.BaseValidationError as exc:
        problems = _cattrs_problems(exc, origins, file)
    except (FieldsError, FieldsErrors) as exc:  # a top-level __attrs_post_init__ check of several keys
        errors = exc.errors if isinstance(exc, FieldsErrors) else [exc]
        raise SpecError([_fields_problem(e.fields, str(e), (), origins, file) for e in errors], file=file) from None
    except (ValueError, TypeError) as exc:  # a top-level __attrs_post_init__ check
        raise SpecError([(file, "", str(exc))], file=file) from None
    if cls is Spec:
        # [search] values the [deployment] refuses, and the checks across tables: named with the
        # structure's problems, in one run (each was said only once every other problem was fixed)
        problems += _searched_value_problems(data, origins, file)
        problems += _across_table_problems(spec, data, origins, file)
    if problems:
        raise SpecError(problems, file=file)
    if cls is Spec:
        spec = _without_overridden_search_keys(spec, data, origins, file)
    return spec


_FAILED = object()  # a table, or key, of the spec whose own structure failed (its problem is named)


def _across_table_problems(spec: Spec | None, data: dict, origins: dict, file: str) -> list[tuple[str, str, str]]:
    """The checks of a spec that read keys of more than one table (or a table's keys together): a
    host KV cache without a host tier to hold it, a request longer than the model's context, a
    disaggregated deployment without both pools, and ``[deployment]`` keys its serving mode leaves
    unread (:func:`_unread_key_problems`).

    ``spec`` is the structured spec, or None when the spec has structure problems: each check then
    reads the tables it needs, structured alone, and is skipped when one of them has a problem of
    its own (a check of a value that failed would only restate that problem): a misspelt
    ``[chip]`` key no longer hides a request longer than the model's context, but a ``[memory.host]``
    with a bad capacity is not also said to be missing."""
    conv = converter()

    def alone(value, tp):
        try:
            return conv.structure(value, tp)
        except Exception:  # noqa: BLE001 - the spec's structure names it
            return _FAILED

    if spec is not None:
        deployment, host = spec.deployment, spec.memory.host
        isl, osl = spec.workload.isl, spec.workload.osl
        varied = [*spec.search.params, *spec.search.envelope] if spec.search is not None else []
    else:
        dep = data.get("deployment", {})
        deployment = alone(dep, Deployment) if isinstance(dep, dict) else _FAILED
        mem = data.get("memory")
        host = (_FAILED if not isinstance(mem, dict) else None if "host" not in mem
                else alone(mem["host"], MemoryTier))
        work = data.get("workload") if isinstance(data.get("workload"), dict) else {}
        isl = alone(work["isl"], PosInt) if "isl" in work else _FAILED
        osl = alone(work["osl"], OutputTokens) if "osl" in work else _FAILED
        search = data.get("search") if isinstance(data.get("search"), dict) else {}
        varied = [k for t in ("params", "envelope") if isinstance(search.get(t), dict) for k in search[t]]
    out = []
    at = lambda key: _origin(origins, tuple(key.split(".")), file)  # noqa: E731
    if deployment is not _FAILED and deployment.host_kv_cache and host is not _FAILED:
        key = "deployment.host_kv_cache"
        if host is None:
            out.append((at(key), key, "true, but [memory] has no host tier to hold the KV cache (add [memory.host] "
                                      "with capacity and bandwidth, or drop the key)"))
        elif host.capacity == 0:
            # a 0 B host tier holds nothing: priced exactly as host_kv_cache = false, silently (session 27)
            where = _origin(origins, ("memory", "host", "capacity"), file)
            out.append((at(key), key, f"true, but memory.host.capacity is 0 B (in {where}): the host tier can hold "
                                      "no KV cache (give it a capacity, or drop the key)"))
    if isl is not _FAILED and osl is not _FAILED and (why := _context_problem(isl, osl, data, origins, file)):
        out.append((at("workload.isl"), "workload.isl", why))
    if deployment is _FAILED:
        return out
    pools_missing = False
    if deployment.mode == "disaggregated":
        missing = [k for k in ("prefill", "decode") if getattr(deployment, k) is None]
        if missing:
            pools_missing = True
            out.append((at("deployment.mode"), "deployment.mode",
                        f"\"disaggregated\" needs [deployment.{missing[0]}]"
                        + (" and [deployment.decode]" if len(missing) == 2 else "")
                        + " with the pool's chips (and tp, ep, dp_attention)"))
    # a key that the mode leaves unread follows from the mode, already named when it lacks its pools
    out += [p for p in _unread_key_problems(deployment, varied, data, origins, file)
            if not (pools_missing and "mode" in _SWITCHES[p[1].split(".")[1]])]
    return out


def deployment_value_problem(spec: Spec | Deployment | Workload, key: str, value) -> str | None:
    """Why ``value`` cannot be ``spec``'s ``deployment.*`` or ``workload.*`` ``key`` by the spec's
    own field checks (types, ranges, validators), or None: for a value a search would try (an
    envelope choice, a searched bound; ``workload.isl`` = 0 was priced, and the cost model's NaN
    blamed on the plugin, exit 3). ``spec`` may be the section itself (the loader judges the
    ``[search]`` values before the spec is built). None too for a key outside those sections or
    another section than the one given, a number format, or a pool the spec does not have. A float
    with a whole value stands for the integer (design files write it as one)."""
    import cattrs

    section, _, rest = key.partition(".")
    cls = {"deployment": Deployment, "workload": Workload}.get(section)
    if cls is None or rest.endswith("format"):
        return None
    obj = spec if isinstance(spec, (Deployment, Workload)) else getattr(spec, section, None)
    if not isinstance(obj, cls):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    conv = converter()
    raw = conv.unstructure(obj)
    d = raw
    *parents, leaf = rest.split(".")
    for p in parents:
        if not isinstance(d.get(p), dict):
            return None
        d = d[p]
    if leaf not in d:
        return None
    d[leaf] = value
    try:
        conv.structure(raw, cls)
    except cattrs.BaseValidationError as exc:
        msgs = [m for _, where, m in _cattrs_problems(exc, {}, "<spec>") if where.endswith(leaf)]
        return msgs[0] if msgs else "not a valid value here"
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _searched_value_problems(data: dict, origins: dict, file: str) -> list[tuple[str, str, str]]:
    """The problems of the merged spec table ``data``'s ``[search]`` that take its ``[deployment]``
    but no cost model: a searched bound or choice, or an envelope choice, the deployment refuses;
    an envelope key also searched, with no choice, or a choice not of its kind
    (:func:`codesign.search.searched_value_problem`, :func:`codesign.search.envelope_problem`).
    Found on the raw tables beside the structure problems, so one load names them all; an entry
    whose own shape is wrong is left to its structure hook, and the values to a ``[deployment]``
    that does not read (its own problems are named)."""
    search = data.get("search")
    if not isinstance(search, dict):
        return []
    from .search import envelope_problem, searched_value_problem

    conv = converter()
    try:
        deployment = conv.structure(data.get("deployment", {}), Deployment)
    except Exception:  # noqa: BLE001 - named by the spec's own structure
        deployment = None
    try:
        workload = conv.structure(data.get("workload"), Workload) if isinstance(data.get("workload"), dict) else None
    except Exception:  # noqa: BLE001 - named by the spec's own structure
        workload = None
    params = search.get("params") if isinstance(search.get("params"), dict) else {}
    envelope = search.get("envelope") if isinstance(search.get("envelope"), dict) else {}
    problems = []
    for key, entry in params.items():
        try:
            p = conv.structure(entry, SearchParam)
        except Exception:  # noqa: BLE001 - named by the [search.params] hook
            continue
        section = workload if key.startswith("workload.") else deployment
        if section is not None and (why := searched_value_problem(section, key, p)):
            path = ("search", "params", key)
            problems.append((_origin(origins, path, file), toml_key_path(*path), why))
    for key, choices in envelope.items():
        if isinstance(choices, list) and (why := envelope_problem(deployment, key, choices, params)):
            path = ("search", "envelope", key)
            problems.append((_origin(origins, path, file), toml_key_path(*path), why))
    if workload is not None and not problems:
        problems += _searched_context_problems(data, params, workload, origins, file)
    return problems


def context_tokens(value) -> int | None:
    """A model's ``context_length`` as a token count: an int, or a whole float (``131072.0`` stands
    for the integer); None for anything else (not given, or invalid: its own check names it)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _context_problem(isl: int, osl: int, data: dict, origins: dict, file: str) -> str | None:
    """Why a request of ``isl`` + ``osl`` tokens cannot be served by the merged spec table
    ``data``'s model (its ``context_length``: HF ``max_position_embeddings``), or None (it fits, or
    the model gives no context length or an invalid one, named by its own check)."""
    model = data.get("model")
    ctx = context_tokens(model.get("context_length") if isinstance(model, dict) else None)
    if ctx is None or isl + osl <= ctx:
        return None
    return context_message(isl, osl, ctx, _origin(origins, ("model", "context_length"), file))


def context_message(isl: int, osl: int, ctx: int, where: str, model: str | None = None) -> str:
    """Why a request of ``isl`` + ``osl`` tokens, longer than the ``ctx``-token context length set
    in file ``where`` (of the model named ``model``, or "the model"), cannot be served: the one
    wording of the spec's check, the searched lengths' and a study grid's cells."""
    whose = f"{model}'s" if model else "the model's"
    return (f"isl + osl = {isl:,} + {osl:,} = {isl + osl:,} tokens, longer than {whose} context "
            f"length, {ctx:,} tokens (model.context_length in {where}): the model cannot serve such a "
            "request. Shorten the request, or raise model.context_length if the model is served with "
            "a longer context")


def _searched_context_problems(data: dict, params: dict, workload, origins: dict, file: str) -> list:
    """The searched ``workload.isl``/``workload.osl`` whose largest value, with the other length's
    largest (searched or set), is longer than the model's context length: named at the searched
    key (:func:`_context_problem`); one problem when both are searched, at ``workload.isl``, naming
    the other (it was said twice, once per key: fresh-user trial, session 28)."""
    from .search import searched_max

    conv = converter()
    most = {"workload.isl": workload.isl, "workload.osl": workload.osl}
    for key in most:
        if key in params:
            try:
                top = searched_max(key, conv.structure(params[key], SearchParam))
            except Exception:  # noqa: BLE001 - named by the [search.params] hook
                return []
            if top is None:
                return []
            most[key] = int(top)
    searched = [k for k in most if k in params]
    if not searched:  # a set workload beyond the context: the spec's own check names it
        return []
    why = _context_problem(most["workload.isl"], most["workload.osl"], data, origins, file)
    if why is None:
        return []
    k, *other = searched
    also = (f"with {toml_key_path('search', 'params', other[0])} up to {most[other[0]]:,} tokens, "
            if other else "")
    return [(_origin(origins, ("search", "params", k), file), toml_key_path("search", "params", k),
             also + "the search would try " + why)]


#: The tables of a spec file (the fields of :class:`Spec` that are tables): a file with none of them
#: and ``[[steps]]`` is a study, and a study file with any of them and no ``[[steps]]`` is a spec.
SPEC_TABLES = tuple(name for name, tp in typing.get_type_hints(Spec).items()
                    if any(attrs.has(t) for t in (typing.get_args(tp) or (tp,))))


def absent_tier_problem(spec: Spec, key: str) -> str | None:
    """Why ``key`` (a spec key path a search, grid or override varies) cannot be varied on ``spec``:
    a ``memory.sram.*`` or ``memory.host.*`` key of a tier the spec does not declare. The tier's
    other figures (its bandwidth, its energy per byte) are then missing, and cost models took them
    as 0: GB200 with 256 MiB of SRAM at 0 B/s was priced at a TPOT of 44 million seconds, as
    feasible (noticed in session 33). None when the key is not such a key."""
    parts = key.split(".")
    if len(parts) == 3 and parts[0] == "memory" and parts[1] in ("sram", "host") \
            and getattr(spec.memory, parts[1]) is None:
        return (f"the spec has no [memory.{parts[1]}] tier to vary; declare it with its capacity and "
                f"bandwidth (a capacity of \"0 MiB\" is allowed) and vary it from there")
    return None


#: The pools only disaggregated serving reads, and the layout keys only aggregated serving reads.
_POOL_KEYS = ("prefill", "decode")
_TOP_LEVEL_LAYOUT = ("tp", "ep", "dp_attention")


def unread_key_problem(deployment: Deployment, key: str, varied: Iterable[str] = ()) -> str | None:
    """Why ``key`` (a ``deployment.*`` spec key path, a table or a key in it) is not read by any
    cost model under ``deployment``, or None. Such a key was priced as if absent, silently: a
    search over ``deployment.prefill.tp`` of an aggregated spec, or over ``acceptance_rate`` with
    no draft tokens, returned designs that differed only in a key nothing read (noticed in
    session 34). ``varied``: the other keys the same search or grid varies (a varied
    ``speculative_tokens`` makes ``acceptance_rate`` read).

    * ``[deployment.prefill]`` and ``[deployment.decode]`` are read only when
      ``mode = "disaggregated"``;
    * ``deployment.tp``, ``ep`` and ``dp_attention`` only when it is ``"aggregated"`` (each pool
      has its own; ``pp`` is read in both);
    * ``acceptance_rate`` only with ``speculative_tokens`` > 0;
    * ``attention_dp_balance_timeout_iters`` only in aggregated serving with ``dp_attention`` > 1
      (TensorRT-LLM balances prompts across attention-DP ranks of an engine that also decodes; no
      disaggregated worker holds both)."""
    parts = key.split(".")
    if len(parts) < 2 or parts[0] != "deployment":
        return None
    if deployment.mode == "aggregated" and parts[1] in _POOL_KEYS:
        return (f'not read: deployment.mode is "aggregated", and only disaggregated serving has a '
                f'{parts[1]} pool (set deployment.mode = "disaggregated" with both pools to price them)')
    if deployment.mode == "disaggregated" and len(parts) == 2 and parts[1] in _TOP_LEVEL_LAYOUT:
        return (f'not read: deployment.mode is "disaggregated", where each pool has its own '
                f'(deployment.prefill.{parts[1]}, deployment.decode.{parts[1]})')
    if key == "deployment.acceptance_rate" and deployment.speculative_tokens == 0 \
            and "deployment.speculative_tokens" not in set(varied):
        return ("not read: deployment.speculative_tokens is 0, so no draft token is proposed to be accepted "
                "(set speculative_tokens, the MTP or EAGLE draft tokens per decode step)")
    if key == "deployment.attention_dp_balance_timeout_iters":
        if deployment.mode == "disaggregated":
            return ('not read: deployment.mode is "disaggregated", where no worker holds both prompts and '
                    "decoding users (TensorRT-LLM's attention-DP balance applies to aggregated serving)")
        if deployment.dp_attention <= 1 and "deployment.dp_attention" not in set(varied):
            return ("not read: deployment.dp_attention is 1, so there are no attention-DP ranks to balance "
                    "(set dp_attention > 1)")
    return None


def drop_unread_keys(raw: dict) -> list[str]:
    """Remove from a merged spec table ``raw`` the ``deployment`` keys its serving mode leaves
    unread (:func:`unread_key_problem`), which a spec may inherit from an include it overrides;
    returns the keys removed. A flattened copy (an optimize design file) then loads on its own:
    written with ``mode = "disaggregated"`` beside an inherited ``tp = 8``, it was refused
    (fresh-user trial, session 34)."""
    import types

    dep = raw.get("deployment")
    if not isinstance(dep, dict):
        return []
    view = types.SimpleNamespace(mode=dep.get("mode", "aggregated"), speculative_tokens=dep.get("speculative_tokens", 0),
                                 dp_attention=dep.get("dp_attention", 1))
    gone = [k for k in list(dep) if unread_key_problem(view, f"deployment.{k}")]
    for k in gone:
        del dep[k]
    return [f"deployment.{k}" for k in gone]


def _same_file(file: str):
    """A test of whether a file name (of a spec's origins) names ``file``, in whatever form each is
    written (``a/../b.toml`` beside ``b.toml``)."""
    norm = lambda f: os.path.normcase(os.path.abspath(f))  # noqa: E731
    target = norm(file)
    return lambda f: f == file or norm(f) == target


def _unread_key_problems(deployment: Deployment, varied: list[str], data: dict, origins: dict,
                         file: str) -> list[tuple[str, str, str]]:
    """The spec's own ``deployment`` keys :func:`unread_key_problem` finds unread, refused unless
    the key that makes them unread was set by a file that overrides the one that set them (later
    in the merge: an including file over its include, at any depth): ``mode = "aggregated"`` over
    a disaggregated base overrides its pools on purpose, and TOML cannot delete an include's keys.
    Refused, then: a forgotten ``mode = "disaggregated"`` (pools written over an included
    aggregated deployment, or with no mode at all), and a file that contradicts itself. A key
    that the spec's ``[search]`` reads at some of its choices (it varies ``dp_attention`` or
    ``speculative_tokens``) is not refused: it was, as if nothing varied the switch (session 39)."""
    dep = data.get("deployment") if isinstance(data.get("deployment"), dict) else {}
    # a search that varies a switch reads the key at some of its choices (``varied``: the keys of
    # [search.params] and [search.envelope])
    out = []
    for name, switches in _SWITCHES.items():
        key = f"deployment.{name}"
        if name not in dep or not (why := unread_key_problem(deployment, key, varied)):
            continue
        where = _origin(origins, ("deployment", name), file)
        if _overridden(dep, switches, where, origins, file):
            continue
        out.append((where, key, why))
    return out


#: The deployment keys that decide whether another is read (:func:`unread_key_problem`).
_SWITCHES = {**{k: ("mode",) for k in (*_POOL_KEYS, *_TOP_LEVEL_LAYOUT)}, "acceptance_rate": ("speculative_tokens",),
             "attention_dp_balance_timeout_iters": ("mode", "dp_attention")}


def _overridden(dep: dict, switches: tuple[str, ...], where: str, origins: dict, file: str) -> bool:
    """Whether the merged ``[deployment]`` table ``dep`` sets one of ``switches`` in a file that
    overrides ``where`` (comes later in the merge: an including file over its include, at any
    depth; the spec's own file last)."""
    rank = _merge_rank(origins, file)
    return any(switch in dep and rank(_origin(origins, ("deployment", switch), file)) > rank(where)
               for switch in switches)


def _without_overridden_search_duplicates(data: dict, origins: dict, file: str) -> dict:
    """``data`` without the ``[search.params]`` or ``[search.envelope]`` entry of a key that both
    tables name, where a file that overrides the one that set the entry (later in the merge) set
    the other: the spec that includes the flagship and searches ``deployment.tp`` in its own
    ``[search.params]`` was refused for the flagship's envelope ``deployment.tp``, which TOML cannot
    delete, and the error named the flagship (fresh-user trial, session 35). Both in one file is
    still refused (:func:`codesign.search.envelope_problem`)."""
    search = data.get("search")
    if not isinstance(search, dict) or not isinstance(search.get("params"), dict) \
            or not isinstance(search.get("envelope"), dict):
        return data
    both = set(search["params"]) & set(search["envelope"])
    if not both:
        return data
    rank = _merge_rank(origins, file)
    params, envelope = dict(search["params"]), dict(search["envelope"])
    for key in both:
        p_rank = rank(_origin(origins, ("search", "params", key), file))
        e_rank = rank(_origin(origins, ("search", "envelope", key), file))
        if p_rank > e_rank:
            del envelope[key]
        elif e_rank > p_rank:
            del params[key]
    return {**data, "search": {**search, "params": params, "envelope": envelope}}


def _merge_rank(origins: dict, file: str):
    """A file's precedence in the merge that built ``origins``: its last position among the
    includes, the spec's own ``file`` last (highest)."""
    order = getattr(origins, "order", ())
    own = _same_file(file)  # the file names of origins and ``file`` may differ in form (a reference's)
    return lambda f: len(order) if own(f) else max((i for i, g in enumerate(order) if g == f), default=-1)


def _without_overridden_search_keys(spec: Spec, data: dict, origins: dict, file: str) -> Spec:
    """``spec`` without the ``[search.params]`` and ``[search.envelope]`` deployment keys its
    serving mode leaves unread where the key that makes them unread was set by a file that
    overrides the one that set them, as :func:`_unread_key_problems` lets such ``[deployment]``
    keys be: a spec that includes the aggregated flagship and sets ``mode = "disaggregated"`` was
    refused for the flagship's ``[search.envelope] "deployment.tp"``, which TOML cannot delete
    (noticed in session 34). The search refuses the others (:func:`codesign.search.build_space`)."""
    s = spec.search
    dep = data.get("deployment") if isinstance(data.get("deployment"), dict) else {}
    if s is None or not dep:
        return spec
    varied = [*s.params, *s.envelope]

    def dropped(table: str, key: str) -> bool:
        parts = key.split(".")
        if len(parts) < 2 or parts[1] not in _SWITCHES or not unread_key_problem(spec.deployment, key, varied):
            return False
        return _overridden(dep, _SWITCHES[parts[1]], _origin(origins, ("search", table, key), file), origins, file)

    params = {k: v for k, v in s.params.items() if not dropped("params", k)}
    envelope = {k: v for k, v in s.envelope.items() if not dropped("envelope", k)}
    if len(params) == len(s.params) and len(envelope) == len(s.envelope):
        return spec
    return attrs.evolve(spec, search=attrs.evolve(s, params=params, envelope=envelope))


def power_gaps(spec: Spec) -> list[str]:
    """The energy figures a spec that models power (it has ``[chip.energy]``) leaves out, each as
    the key to give: static power, energy per FLOP, and the energy per byte of each memory tier it
    declares and of the scale-up links. The cost models price a missing figure at 0, so such a chip
    draws less than it would ([chip.energy] with only ``per_flop_fp4`` drew 1.07 W at one user;
    fresh-user trial, session 33). ``[]`` when nothing is missing or power is not modelled."""
    en, mem = spec.chip.energy, spec.memory
    if en is None:
        return []
    out = []
    if not (en.static or en.static_per_area):
        out.append("chip.energy.static (or static_per_area)")
    if en.per_flop_fp4 is None and en.per_flop_fp8 is None and en.per_flop_bf16 is None:
        out.append("chip.energy.per_flop_fp8 (or per_flop_fp4, per_flop_bf16)")
    for name in ("sram", "hbm", "host"):
        tier = getattr(mem, name)
        if tier is not None and tier.energy_per_byte is None and (name == "hbm" or tier.capacity > 0):
            out.append(f"memory.{name}.energy_per_byte")
    if spec.network.scaleup_energy_per_byte is None:
        out.append("network.scaleup_energy_per_byte")
    return out


def unit_notes(spec: Spec) -> list[str]:
    """How the spec's sizes and bandwidths written in bits were read, one line each, naming the file
    that set the key: ``'gb200.toml: memory.hbm.capacity = "186 Gb" is read as 23.25 GB (Gb is
    gigabits; write GB for gigabytes)'`` (:func:`codesign.units.bits_note`). Bits are a valid unit
    and priced as written, but ``"186 Gb"`` for a chip's 186 GB of HBM was priced as 23.25 GB with
    exit 0 (fresh-user trial, session 44). A ``[search.params]`` bound or choice gets the same note
    under its key path (``search.params."memory.hbm.capacity".choices.0 = "576 Gb" is read as 72
    GB ...``): a search of such a range searched it in bits silently. ``[network]`` and its
    ``network.*`` search parameters are left out (its links' rates are quoted in bits: Ethernet and
    InfiniBand's ``"800 Gb/s"``, every shipped hardware spec's scale-out); ``[]`` for a spec with no
    file (``spec.path``) or none written in bits."""
    if not spec.path:
        return []
    try:
        data, _ = load_raw(spec.path)
    except SpecError:  # pragma: no cover - the spec was loaded from it
        return []
    out = []

    def walk(table: dict, prefix: tuple) -> None:
        for k, v in table.items():
            path = prefix + (k,)
            if isinstance(v, dict) and path not in (("search",), ("network",)):
                walk(v, path)
            elif isinstance(v, str) and (said := value_bits_note(".".join(path), v)):
                out.append(f'{spec.origin_of(*path)}: {".".join(path)} = "{v}" {said}')

    walk(data, ())
    params = (data.get("search") or {}).get("params") or {}
    for key, entry in params.items() if isinstance(params, dict) else ():
        if not isinstance(entry, dict):  # pragma: no cover - the loader refused it
            continue
        given = [((f,), entry.get(f)) for f in ("low", "high")]
        given += [(("choices", str(j)), c) for j, c in enumerate(entry.get("choices") or ())]
        for field_path, v in given:
            if isinstance(v, str) and (said := value_bits_note(key, v)):
                at = toml_key_path("search", "params", key, *field_path)
                out.append(f'{spec.origin_of("search", "params", key, field_path[0])}: {at} = "{v}" {said}')
    return out


def value_bits_note(key: str, value: object) -> str | None:
    """:func:`codesign.units.bits_note` of ``value`` given for the spec key ``key`` (a size or
    bandwidth written in bits: ``"is read as 23.25 GB (Gb is gigabits; ...)"``), the one rule of
    the spec's own keys, its ``[search.params]`` and a study's grid axes: None for a key of no size
    or bandwidth, no spec key, or a ``network.*`` key (link rates are quoted in bits)."""
    from .units import bits_note

    if key.split(".", 1)[0] == "network":
        return None
    try:
        kind = quantity_kind(key)
    except KeyError:
        return None
    return bits_note(value, kind or "")


def load_spec(path: str | os.PathLike) -> Spec:
    """Load and validate a spec file (with its includes).

    Raises:
        SpecError: one line per problem, naming file and key path.
    """
    data, origins = load_raw(path)
    display = os.path.relpath(path) if not Path(path).is_absolute() else str(path)
    if "steps" in data and not set(SPEC_TABLES) & set(data):
        raise SpecError([(display, "", "a study, not a spec: it has [[steps]] and none of a spec's tables "
                                       "([chip], [model], [workload] …); run it with `codesign study run`")])
    try:
        spec = spec_from_dict(data, file=display, origins=origins)
    except SpecError as exc:
        reference = data.get("search", {}).get("reference") if isinstance(data.get("search"), dict) else None
        if not isinstance(reference, str) or not all(p[1].startswith("search.") for p in exc.problems) \
                or any(p[1] == "search.reference" for p in exc.problems):
            raise
        # only [search] is wrong: its reference is read too, so a bad one is said in the same run
        # (the search does the same for the problems it finds, codesign.search._build_space)
        from .baselines import reference_problems

        seen = {(p[1], p[2]) for p in exc.problems}  # the reference re-reads this spec's [search]
        more = [p for p in reference_problems(str(path), reference) if (p[1], p[2]) not in seen]
        if not more:
            raise
        raise SpecError(exc.problems + more, file=display) from None
    return attrs.evolve(spec, path=str(path), origins=origins)


def quantity_kind(path: str, cls=Spec) -> str | None:
    """The unit kind (e.g. ``"B/s"``) of a dotted spec key path, ``None`` for a plain number.

    Raises:
        KeyError: the path names no field of the spec.
    """
    a = _leaf_field(path, cls)
    return a.metadata.get("unit") if a is not None else None


def quantity_allows_zero(path: str, cls=Spec) -> bool:
    """Whether the quantity at a dotted spec key path may be zero (no SRAM, no static power), as the
    spec itself accepts it; a bandwidth, capacity of HBM or peak rate must be > 0.

    Raises:
        KeyError: the path names no field of the spec.
    """
    a = _leaf_field(path, cls)
    return bool(a.metadata.get("allow_zero", False)) if a is not None else True


def key_takes_names(path: str, cls=Spec) -> bool:
    """Whether the dotted spec key ``path`` holds a name (a string: ``deployment.weights_format``,
    ``network.scaleup_topology``) rather than a number (a quantity, a count, a switch, an
    ``efficiency.<knob>``).

    Raises:
        KeyError: the path names no field of the spec.
    """
    import typing

    if path.startswith("efficiency.") and path.count(".") == 1:
        return False  # [efficiency] knobs: name -> number
    tp = _leaf_field(path, cls, want_type=True)
    if typing.get_origin(tp) is typing.Literal:
        return all(isinstance(a, str) for a in typing.get_args(tp))
    return tp is str


def _leaf_field(path: str, cls=Spec, *, want_type: bool = False):
    """The attrs field of a dotted spec key path that holds a value (not a table); with
    ``want_type``, its type (``Optional`` unwrapped) instead."""
    import typing

    tp = cls
    a = None
    for part in path.split("."):
        if not attrs.has(tp):
            raise KeyError(path)
        fields = {f.name: f for f in attrs.fields(tp)}
        if part not in fields:
            raise KeyError(path)
        a = fields[part]
        hint = typing.get_type_hints(tp)[part]
        args = [t for t in typing.get_args(hint) if t is not type(None)]
        tp = args[0] if typing.get_origin(hint) in (typing.Union, __import__("types").UnionType) and len(args) == 1 else hint
    if attrs.has(tp):
        raise KeyError(path)
    return tp if want_type else a


def _check_kinds():  # pragma: no cover - import-time sanity of this module's declarations
    for cls in (PeakFlops, Energy, Area, MemoryTier, Network, Slo):
        for a in attrs.fields(cls):
            u = a.metadata.get("unit")
            assert u is None or u in KINDS, (cls, a.name, u)


_check_kinds()
