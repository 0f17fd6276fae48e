"""Physical quantities in specs: parsed once, at the spec boundary, to SI floats.

A quantity in a TOML spec is a string with a unit: ``"8 TB/s"``, ``"186 GB"``, ``"192 GiB"``,
``"700 W"``, ``"2.5 PFLOP/s"``, ``"2 us"``, ``"3.9 pJ/bit"``, ``"800 Gb/s"``. Inside codesign every
quantity is a plain float in SI base units, and names carry the unit as a suffix (``_s``, ``_w``,
``_bytes``, ``_bytes_per_s``, ``_flop_per_s``, ``_j``).

pint's default registry treats bits and bytes as dimensionless (so ``8 TB/s`` converts to Hz) and
parses ``Gb`` as gilbert; it has no FLOP. We therefore build a small registry of our own in which
information (bit, byte) and compute (FLOP) are dimensions of their own, with SI and binary (IEC)
prefixes. A bandwidth given where a power is expected is then a dimensionality error.
An operation (``OP``; ``TOPS`` = 10^12 OP/s, as integer and low-precision datasheets give INT8 or
FP4 peaks) is one FLOP, so ``"5000 TOPS"`` is ``"5000 TFLOP/s"``.

Three readings of pint's are not what an architect wrote, and are refused or corrected here:

- A prefix below one on an operation (``"5 pflops"``, ``"10 pops"``, ``"2 mflops"``) is SI's pico,
  milli, ...: a fraction of an operation, which no one means (the writer meant peta or mega). It
  is refused, saying how it was read and what to write (``"5 PFLOPS"`` or ``"5 PFLOP/s"``); pint
  read it silently and ``evaluate`` priced a TTFT of 10^27 ms (fresh-user trial, session 41).
- ``"10 TFLOPs"`` and ``"5 TOPs"``, datasheets' spelling of a rate, read to pint as a plural: a
  count of operations. Where a compute rate is expected (kind ``"FLOP/s"``) a count can never be
  meant, so they are read as the rate (per second); elsewhere a count where a rate is expected is
  refused as a count.
- A peak compute rate below 1 GFLOP/s, a bandwidth below 100 MB/s or a power below 1 W
  (:data:`SANITY_FLOOR`) is refused as a unit slip (``"8 kB/s"`` for ``"8 TB/s"``), and so is an
  energy above 1 nJ/FLOP or 1 uJ/B, a time above one day, a power above 50 kW or a size above
  100 TB (:data:`SANITY_CEIL`: ``"0.3 PJ/FLOP"`` for ``"0.3 pJ/FLOP"``, ``"1.2 MW"`` for ``"1.2 kW"``); a
  power slip is told the power it most likely stands for (``did you mean '1.2 kW'?``).

A size or bandwidth written in bits (``"186 Gb"``, ``"8 Tb/s"``) is a valid reading, and priced as
such, but an architect writing a chip's memory more often meant bytes: :func:`bits_note` says how
it was read (the spec loader's note, :func:`codesign.spec.unit_notes`).
"""

from __future__ import annotations

import functools
import math
import re

from .errors import format_value

__all__ = ["UNITS", "QuantityError", "parse_quantity", "parse_in_unit", "format_quantity", "SANITY_FLOOR",
           "SANITY_CEIL", "bits_note"]

_DEFINITIONS = """
# SI prefixes
quecto- = 1e-30 = q-
ronto- = 1e-27 = r-
yocto- = 1e-24 = y-
zepto- = 1e-21 = z-
atto- = 1e-18 = a-
femto- = 1e-15 = f-
pico- = 1e-12 = p-
nano- = 1e-9 = n-
micro- = 1e-6 = u- = µ- = μ-
milli- = 1e-3 = m-
centi- = 1e-2 = c-
kilo- = 1e3 = k- = K-
mega- = 1e6 = M-
giga- = 1e9 = G-
tera- = 1e12 = T-
peta- = 1e15 = P-
exa- = 1e18 = E-
zetta- = 1e21 = Z-
yotta- = 1e24 = Y-
# IEC binary prefixes
kibi- = 2**10 = Ki-
mebi- = 2**20 = Mi-
gibi- = 2**30 = Gi-
tebi- = 2**40 = Ti-
pebi- = 2**50 = Pi-
exbi- = 2**60 = Ei-

second = [time] = s = sec
minute = 60 * second = min
hour = 60 * minute = h = hr
meter = [length] = m
joule = [energy] = J
watt = joule / second = W
hertz = 1 / second = Hz
bit = [information] = b
byte = 8 * bit = B
FLOP = [compute] = flop
FLOPS = FLOP / second = flops
# an operation (integer and low-precision datasheets: INT8 or FP4 "TOPS") counts as one FLOP
OP = FLOP = op
OPS = OP / second = ops
dollar = [currency] = USD
# the units of metrics that a [[search.constraints]] bound may give (codesign.search): tokens,
# users, requests, HBM stacks, and decibels (an SQNR level, only ever compared with another dB)
token = [token] = tok
user = [user]
request = [request]
stack = [stack]
decibel = [level] = dB
"""

#: Expected unit for each kind of quantity: (SI unit string, human name, example).
KINDS: dict[str, tuple[str, str, str]] = {
    "s": ("s", "a time", "2 us"),
    "W": ("W", "a power", "700 W"),
    "J": ("J", "an energy", "1 J"),
    "B": ("B", "a size in bytes", "192 GiB"),
    "B/s": ("B/s", "a bandwidth", "8 TB/s"),
    "FLOP/s": ("FLOP/s", "a compute rate", "2.5 PFLOP/s"),
    "J/FLOP": ("J/FLOP", "an energy per FLOP", "0.3 pJ/FLOP"),
    "J/B": ("J/B", "an energy per byte", "3.9 pJ/bit"),
    "m^2": ("m**2", "an area", "800 mm**2"),
    "m^2/(FLOP/s)": ("m**2/(FLOP/s)", "an area per compute rate", "40 mm**2/(PFLOP/s)"),
    "m^2/B": ("m**2/B", "an area per byte", "0.5 mm**2/MiB"),
    "m^2/(B/s)": ("m**2/(B/s)", "an area per bandwidth", "10 mm**2/(TB/s)"),
    "W/(B/s)": ("W/(B/s)", "a power per bandwidth", "1 W/(TB/s)"),
    "W/m^2": ("W/m**2", "a power per area", "0.14 W/mm**2"),
}


#: Largest magnitude accepted in SI units: far above any real chip (10^30 FLOP/s, B/s, B, W), and
#: far enough below float32's 3.4e38 that derived quantities stay finite in the cost models.
MAX_SI = 1e30

#: Least non-zero value accepted, in SI units, per kind: a sanity floor against unit slips
#: (``"8 kB/s"`` for ``"8 TB/s"``, ``"5 MFLOP/s"`` for ``"5 PFLOP/s"``), not a physical constant. Every
#: compute rate in a spec is a chip's peak, and every bandwidth a chip's memory tier or link, each at
#: least a thousand times above these floors on any accelerator (hardware_specs.csv: GB/s of host
#: links, TB/s of HBM, TFLOP/s of peak compute); a value below one is surely a slip. The bandwidth
#: floor, 100 MB/s, sits below 1 Gb/s Ethernet (125 MB/s), which an architect may give a scale-out
#: network to ask what a slow one costs: one bandwidth kind covers memory tiers and links alike. Every
#: power in a spec (``chip.tdp``, ``chip.energy.static``) is one chip's, a chip with HBM (one stack
#: alone draws watts) and the least of hardware_specs.csv draws 300 W (Groq LPU v1): 1 W is 300 times
#: below it, and catches ``"1.2 mW"`` for ``"1.2 kW"`` (a slip whose m reads as milli).
SANITY_FLOOR: dict[str, float] = {"FLOP/s": 1e9, "B/s": 1e8, "W": 1.0}

#: Largest value accepted, in SI units, per kind: a sanity ceiling against unit slips that pint reads
#: as another prefix (``"0.3 PJ/FLOP"``, peta-joules, for ``"0.3 pJ/FLOP"``; ``"2 Ms"``, megaseconds,
#: for ``"2 ms"``), not a physical constant. Accelerators spend about 0.1-10 pJ per FLOP and 1-20 pJ
#: per bit moved (hardware_specs.csv, ``specs/hardware/``), so 1 nJ/FLOP and 1 uJ/B are at least a
#: hundred times above any of them; every time in a spec is a link latency (us) or a TTFT/TPOT SLO
#: (ms to s), so one day is far above any. Every power in a spec is one chip's (``chip.tdp``,
#: ``chip.energy.static``; per GPU of a multi-die package, :class:`codesign.spec.Chip`: a rack is its
#: ``network.scaleup_domain`` chips, never one ``tdp``), and the largest one chip draws is a wafer's:
#: Cerebras WSE-3, 23 kW for its CS-3 system (hardware_specs.csv, ``cerebras_wse3``); 50 kW is twice
#: that, and a watt figure of any chip above 50 W written with a stray k or M (``"700 kW"``,
#: ``"1.2 MW"`` for ``"1.2 kW"``) lands above it.
#: Every size in a spec is one chip's memory tier (``memory.<tier>.capacity``) or one HBM stack's
#: (``chip.area.hbm_stack_capacity``): the largest in hardware_specs.csv is MI355X's 288 GB of HBM and
#: Cerebras WSE-3's 44 GB of SRAM, and a Grace CPU's LPDDR5X host tier is 480 GB. 100 TB is 200 times
#: the host tier and catches a T for a G in any of them (``"186 TB"``) and a bound far past any chip
#: (``[search.params]`` ``high = "1e12 GiB"`` of SRAM was priced at 5e13 W per chip: fresh-user trial,
#: session 45).
SANITY_CEIL: dict[str, float] = {"J/FLOP": 1e-9, "J/B": 1e-6, "s": 86400.0, "W": 5e4, "B": 1e14}

#: What a value above :data:`SANITY_CEIL` most likely slipped on: a prefix read in the other case,
#: except for a size, whose slip is a prefix too large (T or P for G).
_PREFIX_CASE = "Prefixes are case-sensitive (m milli, M mega; p pico, P peta)"
_CEIL_WHY = {"B": "Every size in a spec is one chip's memory tier or one HBM stack (288 GB of HBM is the "
                  "most any chip has)"}

#: Why a value below :data:`SANITY_FLOOR` cannot be meant, per kind.
_FLOOR_WHY = {"FLOP/s": "no accelerator is that slow", "B/s": "no accelerator is that slow",
              "W": "no accelerator draws that little"}

#: The units a slip of a kind most likely stands for, and the range ``[low, high)`` in SI units a
#: real value lies in, a thousand wide so that the number written fits it in at most one of them:
#: a chip's power (hardware_specs.csv: 300 W to 23 kW) in W from 50 W, else in kW below 50 kW.
_MEANT: dict[str, tuple[tuple[tuple[str, float], ...], float, float]] = {
    "W": ((("W", 1.0), ("kW", 1e3)), 50.0, 5e4)}


class QuantityError(ValueError):
    """A value that is not a quantity of the expected kind; the message says what was expected."""


@functools.cache
def _registry():
    import pint

    ureg = pint.UnitRegistry(None, autoconvert_offset_to_baseunit=False)
    for line in _DEFINITIONS.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            ureg.define(line)
    return ureg


def UNITS():
    """The codesign unit registry (pint), built on first use."""
    return _registry()


def parse_quantity(value: object, kind: str, *, allow_zero: bool = False) -> float:
    """Convert a spec value such as ``"8 TB/s"`` to a float in SI units.

    Args:
        value: the TOML value: a string with a unit. Bare numbers are refused (a spec states its
            units), except ``0`` where ``allow_zero``.
        kind: a key of :data:`KINDS` (``"B/s"``, ``"W"``, ...).
        allow_zero: accept zero (e.g. no SRAM); negative values are always refused.

    Returns:
        The magnitude in SI base units of ``kind`` (bytes, seconds, watts, FLOP/s, ...). Where
        ``kind`` is ``"FLOP/s"``, a datasheet's ``"10 TFLOPs"`` or ``"5 TOPs"`` (read by pint as a
        plural count) is the rate, 10^13 or 5 x 10^12 FLOP/s.

    Raises:
        QuantityError: not a string with a unit, wrong dimension, not finite, not positive, an
            operation with a prefix below one (``"5 pflops"``: pico, not peta), or non-zero below
            the kind's :data:`SANITY_FLOOR` (1 GFLOP/s, 100 MB/s, 1 W) or above its :data:`SANITY_CEIL`
            (1 nJ/FLOP, 1 uJ/B, one day, 50 kW, 100 TB); a power's says what it most likely stands for.
    """
    import pint

    si, human, example = KINDS[kind]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(f"expected {human} with a unit, e.g. {example!r} (got {format_value(value)})")
    if isinstance(value, (int, float)):
        if value == 0 and allow_zero:
            return 0.0
        raise QuantityError(f"expected {human} with a unit, e.g. {example!r} (got the bare number {value!r})")
    ureg = _registry()
    text = value.strip()
    q = _read(text, value, f"{human}, e.g. {example!r}", si)
    if not isinstance(q, pint.Quantity) or q.dimensionless:
        raise QuantityError(f"expected {human} with a unit, e.g. {example!r} (got {value!r}, no unit)")
    if kind == "FLOP/s" and q.dimensionality == ureg.FLOP.dimensionality and _PLURAL_OPS.match(_unit_part(text)):
        q = q / ureg.second  # "10 TFLOPs": a datasheet's rate, not a count (module docstring)
    try:
        mag = float(q.to(si).magnitude)
    except pint.errors.DimensionalityError:
        raise QuantityError(
            f"expected {human}, e.g. {example!r} (got {value!r}, which is {_describe(q)})"
        ) from None
    if math.isfinite(mag) and mag > SANITY_CEIL.get(kind, math.inf):  # before MAX_SI: the nearer limit
        ceil = format_quantity(SANITY_CEIL[kind], kind)
        raise QuantityError(f"{value!r} reads as {format_quantity(mag, kind)}, above {ceil}, the sanity "
                            f"ceiling of {human}: a unit slip? {_CEIL_WHY.get(kind, _PREFIX_CASE)}, "
                            f"{_slip_fix(text, kind)}")
    _check_range(mag, value, format_quantity(MAX_SI, kind))
    if mag < 0 or (mag == 0 and not allow_zero):
        raise QuantityError(f"must be {'>= 0' if allow_zero else '> 0'} (got {value!r})")
    if 0 < mag < SANITY_FLOOR.get(kind, 0.0):
        floor = format_quantity(SANITY_FLOOR[kind], kind)
        raise QuantityError(f"{value!r} reads as {format_quantity(mag, kind)}, below {floor}, the sanity floor "
                            f"of {human} ({_FLOOR_WHY[kind]}): a unit slip? {_slip_fix(text, kind)}")
    return mag


def _slip_fix(text: str, kind: str) -> str:
    """What to write for the slip ``text`` of ``kind``: ``"did you mean '1.2 kW'?"``, its number in
    the one unit of :data:`_MEANT` that puts it in the kind's real range (``"1.2 MW"`` and
    ``"1.2 mW"`` -> ``"1.2 kW"``, ``"700 kW"`` -> ``"700 W"``); else the kind's example
    (``"e.g. '2 us'"``): a kind with no such range, or a number no unit puts there."""
    units, low, high = _MEANT.get(kind, ((), 0.0, 0.0))
    m = _LEADING.match(text)
    number = float(m.group()) if m else math.nan
    meant = next((f"{m.group()} {unit}" for unit, scale in units if low <= number * scale < high), None)
    return f"did you mean {meant!r}?" if meant else f"e.g. {KINDS[kind][2]!r}"


def bits_note(value: object, kind: str) -> str | None:
    """How a size or bandwidth written in bits is read, where one of bytes was more likely meant:
    ``bits_note("186 Gb", "B") == "is read as 23.25 GB (Gb is gigabits; write GB for gigabytes)"``
    (186 x 10^9 bits / 8), ``"8 Tb/s"`` on ``"B/s"`` "is read as 1 TB/s (Tb is terabits; ...)".

    Returns:
        The phrase, or None: ``kind`` is not ``"B"`` or ``"B/s"``, ``value`` is no string that
        :func:`parse_quantity` reads, or its unit has no bit in it.
    """
    if kind not in ("B", "B/s") or not isinstance(value, str):
        return None
    try:
        mag = parse_quantity(value, kind, allow_zero=True)
    except QuantityError:
        return None
    ureg = _registry()
    for token in dict.fromkeys(re.findall(r"[A-Za-zµμ_]+", _unit_part(value.strip()))):
        read = ureg.parse_unit_name(token)
        if read and read[0][1] == "bit":
            prefix = read[0][0]
            return (f"is read as {format_quantity(mag, kind)} ({token} is {prefix}bits; write "
                    f"{ureg.get_symbol(prefix + 'byte')} for {prefix}bytes)")
    return None


def parse_in_unit(value: object, unit: str) -> float:
    """A bound written in ``unit`` (a unit expression of this registry, such as ``"tok/s/kW"``), as
    a number in that unit: the bare TOML number as it is (``100``), or a string with a unit of the
    same dimension converted to it (``"100 tok/s/kW"`` -> 100, ``"0.1 tok/J"`` -> 100 on
    ``"tok/s/kW"``, ``"0.1 kW"`` -> 100 on ``"W"``).

    Raises:
        QuantityError: not a number or such a string (a quoted bare number, ``"100"``, is refused
            as a string that gives no unit), of another dimension, not finite, or above
            :data:`MAX_SI` in magnitude.
    """
    import pint

    said = f"a bare TOML number such as 100 or a string with a unit such as '100 {unit}'"
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(f"expected a number in {unit}, the metric's unit: {said} (got {format_value(value)})")
    if not isinstance(value, str):
        mag = float(value)
    else:
        text = value.strip()
        if re.fullmatch(_NUMBER, text):
            raise QuantityError(f"expected a number in {unit}, the metric's unit: write the bare TOML number "
                                f"{text} (no quotes) or the string '{text} {unit}' (got the string {value!r})")
        q = _read(text, value, f"a number in {unit}, the metric's unit", unit)
        try:
            mag = float(q.to(unit).magnitude) if isinstance(q, pint.Quantity) else math.nan
        except pint.errors.DimensionalityError:
            mag = math.nan
        if math.isnan(mag):
            got = "no unit" if not isinstance(q, pint.Quantity) or q.dimensionless else _describe(q)
            raise QuantityError(f"expected a number in {unit}, the metric's unit: {said} "
                                f"(got {value!r}, which is {got})")
        mag = float(f"{mag:.15g}")  # "0.1 tok/J" through tok/s/kW is 100.00000000000001, a digit no one wrote
    _check_range(mag, value, f"{MAX_SI:g} {unit}")
    return mag


def _read(text: str, value: str, where: str, unit: str):
    """pint's reading of ``text`` (the spec's string ``value``, stripped): a ``pint.Quantity``, or a
    plain number where ``text`` gives no unit.

    Raises:
        QuantityError: ``"cannot read {value!r} as {where} (why)"``, where ``text`` is not one number
            then a unit (:func:`_shape_problem`), names an operation no one means
            (:func:`_operation_problem`), or pint cannot read it (pint's message; for a unit name
            that is no unit, the re-casings that read as ``unit``'s dimension, :func:`_case_fixes`:
            ``"did you mean '1200 W'?"``).
    """
    import pint

    if why := _shape_problem(text) or _operation_problem(text):
        raise QuantityError(f"cannot read {value!r} as {where} ({why})")
    try:
        return _registry().Quantity(text)
    except Exception as exc:  # pint raises many types (incl. AssertionError) on malformed text
        detail = str(exc) or "malformed expression"
        if isinstance(exc, pint.errors.UndefinedUnitError):
            if powered := _power_fixes(text, unit):  # "800 mm2": a unit's power without ** or ^
                detail += f"; a power of a unit is written with ** or ^: did you mean {' or '.join(map(repr, powered[1:]))}?"
            elif fixes := _case_fixes(text, unit):
                said = " or ".join([", ".join(repr(f) for f in fixes[:-1]), repr(fixes[-1])] if len(fixes) > 1
                                   else [repr(fixes[0])])
                detail += f"; unit names and prefixes are case-sensitive: did you mean {said}?"
            elif others := _other_readings(text):  # "1200 w" for a bandwidth: 'W', a power, was meant
                names = " and ".join(repr(n) for n in _unknown_names(text))
                read = ", ".join(f"{fix!r} {'is ' if i == 0 else ''}{what}" for i, (fix, what) in enumerate(others))
                raise QuantityError(f"expected {where} (got {value!r}: {names} is no unit; unit names are "
                                    f"case-sensitive, and {read})") from None
        raise QuantityError(f"cannot read {value!r} as {where} ({detail})") from None


#: A unit name with a power glued to it, as a datasheet writes "mm2" (mm²): its unit and the power.
_GLUED_POWER = re.compile(r"([A-Za-zµμ_]+?)([2-4])")


def _power_fixes(text: str, unit: str) -> list:
    """Where the unit part of ``text`` glues a power to a unit's name ("800 mm2", "0.1364 W/mm2"),
    which pint reads as the unknown unit ``mm2``, and writing the power with ``**`` reads as
    ``unit``'s dimension: ``[names, text with "**", text with "^"]``, e.g.
    ``[["mm2"], "800 mm**2", "800 mm^2"]`` (:func:`_read` says the last two); ``[]`` otherwise (a name that is no unit
    whatever its power, or a reading of another dimension: "800 mm3" as an area). A spec's area in
    "800 mm2" was refused as "'mm2' is not defined in the unit registry" (fresh-user trial)."""
    ureg = _registry()
    m = _LEADING.match(text)
    if m is None:  # pragma: no cover - _shape_problem refused it
        return []
    names = [t for t in dict.fromkeys(re.findall(r"[A-Za-zµμ_]+\d*", text[m.end():]))
             if not ureg.parse_unit_name(t)]
    glued = [re.fullmatch(_GLUED_POWER, n) for n in names]
    if not names or not all(g and ureg.parse_unit_name(g.group(1)) for g in glued):
        return []
    head, tail = text[:m.end()], text[m.end():]
    out = []
    for op in ("**", "^"):
        fixed = tail
        for g in glued:
            fixed = re.sub(rf"(?<![A-Za-zµμ_]){re.escape(g.group(0))}(?![A-Za-zµμ_\d])",
                           g.group(1) + op + g.group(2), fixed)
        out.append(head + fixed)
    try:
        q = ureg.Quantity(out[0])
        if q.dimensionality != ureg.Quantity(1, unit).dimensionality:
            return []
    except Exception:  # noqa: BLE001 - pint raises many types on malformed text
        return []
    return [[g.group(0) for g in glued], *out]


def _unknown_names(text: str) -> list[str]:
    """The names in the unit part of ``text`` (after its leading number) that are no unit."""
    m = _LEADING.match(text)
    tail = text[m.end():] if m else text
    return [t for t in dict.fromkeys(re.findall(r"[A-Za-zµμ_]+", tail)) if not _registry().parse_unit_name(t)]


def _recasings(text: str) -> list:
    """``text`` with the names of its unit part that are no unit re-cased, each way that pint reads
    as a quantity with a unit and no operation slip (:func:`_operation_problem`), as ``(text,
    pint.Quantity)``: fewest letters re-cased first. ``[]`` where a name is longer than 6 letters or
    has no re-casing that is a unit."""
    import itertools

    import pint

    ureg = _registry()
    m = _LEADING.match(text)
    if m is None:  # pragma: no cover - _shape_problem refused it
        return []
    head, tail = text[:m.end()], text[m.end():]
    names = _unknown_names(text)
    if not names or any(len(t) > 6 for t in names):
        return []
    options = []
    for name in names:
        cased = {"".join(c) for c in itertools.product(*((ch.lower(), ch.upper()) if ch.isascii() else (ch,)
                                                          for ch in name))} - {name}
        known = sorted((c for c in cased if ureg.parse_unit_name(c)),
                       key=lambda c: (sum(a != b for a, b in zip(c, name)), c))
        if not known:
            return []
        options.append(known)
    readings = []
    for combo in itertools.product(*options):
        fixed = tail
        for name, cased in zip(names, combo):
            fixed = re.sub(rf"(?<![A-Za-zµμ_]){re.escape(name)}(?![A-Za-zµμ_])", cased, fixed)
        try:
            q = ureg.Quantity(head + fixed)
        except Exception:
            continue
        if isinstance(q, pint.Quantity) and not q.dimensionless and _operation_problem(head + fixed) is None:
            readings.append((head + fixed, q))
    return readings


def _case_fixes(text: str, unit: str) -> list[str]:
    """``text`` with the names of its unit part that are no unit re-cased, where that reads as a
    quantity of ``unit``'s dimension: ``"1200 w"`` -> ``["1200 W"]`` on ``"W"``, ``"3 tb/s"`` ->
    ``["3 Tb/s", "3 TB/s"]`` on ``"B/s"`` (bits or bytes: both are bandwidths, so both are said).
    Fewest letters re-cased first, and one of those that read as the same quantity (``"1 kW"``, not
    also ``"1 KW"``); ``[]`` where none fits, a name is longer than 6 letters, or more than three
    fit (no obvious fix)."""
    want = _registry().Quantity(1, unit).dimensionality
    fixes = []
    for fixed, q in _recasings(text):
        if q.dimensionality == want:
            mag = float(q.to(unit).magnitude)
            if not any(math.isclose(mag, other, rel_tol=1e-12) for _, other in fixes):  # "1 KW" is "1 kW"
                fixes.append((fixed, mag))
    return [fix for fix, _ in fixes] if len(fixes) <= 3 else []


def _other_readings(text: str) -> list[tuple[str, str]]:
    """Where no re-casing of ``text`` reads as the dimension expected (:func:`_case_fixes` found
    none), the re-casings that read as another quantity a spec holds, as ``(text, what it is)``:
    ``"1200 w"`` -> ``[("1200 W", "a power")]``, ``"1200 gb"`` -> ``[("1200 Gb", "a size in bits"),
    ("1200 GB", "a size in bytes")]``; one per kind, fewest letters re-cased first. ``[]`` where
    none reads as such a quantity (``"8 tb/s/w"``, a bandwidth per power) or more than three kinds
    do (no obvious reading). A bandwidth written "1200 w" was refused with pint's "'w' is not
    defined" alone, never saying that it was a power (fresh-user trial, session 46)."""
    seen: dict[str, str] = {}
    for fixed, q in _recasings(text):
        what = _describe(q)
        if not what.startswith("in "):  # a kind of KINDS (or an operation count), not a bare unit
            seen.setdefault(what, fixed)
    return [(fixed, what) for what, fixed in seen.items()] if len(seen) <= 3 else []


def _check_range(mag: float, value: object, most: str) -> None:
    """Refuse a magnitude ``mag`` (in SI or the caller's unit, read from the spec's ``value``) that is
    not finite or above :data:`MAX_SI`, which ``most`` writes in that unit."""
    if not math.isfinite(mag):
        raise QuantityError(f"must be finite (got {format_value(value)})")
    if abs(mag) > MAX_SI:
        raise QuantityError(f"out of range (got {format_value(value)}; at most {most})")


_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_LEADING = re.compile(rf"^{_NUMBER}(?=\s|[A-Za-z(]|$)")
_EXPONENT = re.compile(r"(\*\*|\^)\s*\(?[+-]?\d+(?:\.\d+)?\)?")
#: A datasheet's plural of an operation, the unit alone: "TFLOPs", "TOPs" (a rate, module docstring).
_PLURAL_OPS = re.compile(r"^[A-Za-zµμ]*(?:FLOP|OP)s$")
_OPERATIONS = ("FLOP", "FLOPS", "OP", "OPS")
#: SI prefixes below one and their powers of ten: on an operation, a fraction of one.
_SUB_UNIT = {"centi": -2, "milli": -3, "micro": -6, "nano": -9, "pico": -12, "femto": -15, "atto": -18,
             "zepto": -21, "yocto": -24, "ronto": -27, "quecto": -30}


def _unit_part(text: str) -> str:
    """The unit expression after the leading number of ``text`` (stripped)."""
    m = _LEADING.match(text)
    return text[m.end():].strip() if m else text


def _operation_problem(text: str) -> str | None:
    """Why a unit of ``text`` is an operation no one means, with what to write; or None.

    ``"5 pflops"``: pint reads p as SI's pico (10^-12), a fraction of an operation, where the writer
    meant peta; it was priced (fresh-user trial, session 41). ``"10 tflops"``: no unit (prefixes and
    FLOP are case-sensitive). Either way the upper-case spelling is suggested where it reads as an
    operation with a prefix of one or more ("5 PFLOPS", "10 TFLOPS")."""
    ureg = _registry()
    for token in dict.fromkeys(re.findall(r"[A-Za-zµμ_]+", _unit_part(text))):
        try:
            read = ureg.parse_unit_name(token)
        except Exception:  # pragma: no cover - parse_unit_name answers () for an unknown name
            read = ()
        ops = [(prefix, name) for prefix, name, _ in read if name in _OPERATIONS]
        fraction = next(((p, n) for p, n in ops if p in _SUB_UNIT), None)
        if read and fraction is None:
            continue  # a unit, and not a fraction of an operation
        upper = [(p, n) for p, n, _ in ureg.parse_unit_name(token.upper()) if n in _OPERATIONS and p not in _SUB_UNIT]
        if fraction is None and not upper:
            continue  # an unknown unit, not an operation's: pint names it
        fix = text.replace(token, token.upper())
        if upper and upper[0][1].endswith("S"):  # a rate: also the FLOP/s spelling
            fix_rate = text.replace(token, token.upper()[:-1] + "/s")
            write = f"write {fix!r} or {fix_rate!r}"
        else:
            write = f"write {fix!r}"
        if fraction is None:
            return f"{token!r} is no unit: unit prefixes and FLOP are case-sensitive; {write}"
        prefix, name = fraction
        read_as = f"{token!r} reads as {prefix}-{name}: {token[0]} is SI's {prefix} (10^{_SUB_UNIT[prefix]}), " \
                  "a fraction of an operation"
        if not upper:
            return f"{read_as}; unit prefixes are case-sensitive (e.g. 'TFLOP/s', 'PFLOPS')"
        return f"{read_as}; for {upper[0][0]} {write}"
    return None


def _shape_problem(text: str) -> str | None:
    """Why ``text`` is not one number followed by a unit expression, or None. pint reads more than
    that, and silently: "8,5 TB/s" as 85 TB/s (the comma dropped) and "700 W 3" as 2,100 W (a
    product); both were priced (fresh-user trial, session 33). Exponents in the unit stay
    allowed ("mm**2", "W/m^2")."""
    if "," in text:
        return "a comma is not a decimal point; write one number such as 8.5, with no thousands separator"
    m = _LEADING.match(text)
    if m is None:
        return "expected a number, then its unit"
    unit = _EXPONENT.sub("", text[m.end():])
    if re.search(r"(?<![A-Za-z_])\d", unit):
        return "expected one number, then its unit; the unit part holds another number"
    return None


def _in_bits(q) -> bool:
    """Whether the pint quantity ``q`` is written in bits (``"900 Gb"``, ``"8 Tbit"``), no byte."""
    names = [_registry().parse_unit_name(name) for name, _ in q.unit_items()]
    read = {r[0][1] for r in names if r}
    return "bit" in read and "byte" not in read


def _describe(q) -> str:
    dims = q.dimensionality
    if dims == _registry().FLOP.dimensionality:
        return "a count of operations, not a rate (per second: 'TFLOP/s', 'TFLOPS')"
    if dims == _registry().hertz.dimensionality:  # no spec key is one, but a clock is what "2 GHz" gives
        return "a frequency"
    for kind, (si, human, _) in KINDS.items():
        try:
            if _registry().Quantity(1, si).dimensionality == dims:
                if kind == "B" and _in_bits(q):
                    return "a size in bits"  # "900 Gb" was called "a size in bytes"
                return human
        except Exception:  # pragma: no cover - registry always parses KINDS
            continue
    return f"in {q.units:~}"


_PRETTY = {
    "B/s": [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1.0, "B/s")],
    # up to TB, as a bandwidth's TB/s: 8 x 10^12 B was "8e+03 GB" at 3 digits (a study's axis label)
    "B": [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")],
    "FLOP/s": [(1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s"), (1.0, "FLOP/s")],
    "W": [(1.0, "W")],
    "s": [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")],
    "J": [(1.0, "J"), (1e-3, "mJ"), (1e-6, "uJ"), (1e-9, "nJ"), (1e-12, "pJ")],
    "J/FLOP": [(1e-12, "pJ/FLOP"), (1e-15, "fJ/FLOP")],
    "J/B": [(1e-12 / 8, "pJ/bit")],
    "m^2": [(1e-6, "mm**2")],
}


#: IEC (binary) units of a size in bytes, for a size that is a whole binary quantity (``1 GiB``, a
#: SRAM or cache capacity): :func:`format_quantity` writes it in them where the SI form at the digits
#: asked is not exact (a study report said "1.07 GB" of ``"1 GiB"``, session 41).
_BINARY = {"B": [(2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "B")]}


def _scaled(value: float, scales, digits: int) -> tuple[str, bool]:
    """``value`` in the largest unit of ``scales`` it reaches (the last one below all of them), to
    ``digits`` significant digits; and whether that text reads back as ``value`` exactly (to 1e-12
    relative, the float rounding of the division)."""
    for scale, unit in scales:
        if abs(value) >= scale or (scale, unit) == scales[-1]:
            text = f"{value / scale:.{digits}g}"
            return f"{text} {unit}", math.isclose(float(text) * scale, value, rel_tol=1e-12, abs_tol=0.0)
    raise AssertionError("unreachable")


def format_quantity(value: float, kind: str, digits: int = 6) -> str:
    """Format an SI float back as a spec string (the inverse of :func:`parse_quantity`), to
    ``digits`` significant digits in the largest unit of its kind it reaches.

    ``format_quantity(8e12, "B/s") == "8 TB/s"``. A size in bytes is written in SI units
    (``"186 GB"``, ``"8 TB"``) unless it is exact in binary ones and not in SI ones at those digits:
    ``format_quantity(2**30, "B", digits=3) == "1 GiB"`` (not ``"1.07 GB"``), ``64 * 2**20`` is
    ``"64 MiB"``. Used to write designs as spec TOML and the reports' parameter values.
    """
    scales = _PRETTY.get(kind)
    if not scales:
        return f"{value:.{digits}g} {KINDS[kind][0]}"
    text, exact = _scaled(value, scales, digits)
    if not exact and kind in _BINARY:
        binary, exact_binary = _scaled(value, _BINARY[kind], digits)
        if exact_binary and "e" not in binary:  # "1e+03 MiB" reads worse than "1.05 GB"
            return binary
    return text


def format_duration(seconds: float) -> str:
    """A duration as a person reads it, to 3 significant digits: ``"446 ms"``, ``"12.5 s"``, then
    minutes from 2 min, hours from 2 h and days from 2 days (``"155 days"``: a TTFT of 13,353,081 s,
    which seconds alone gave as ``"1.34e+07 s"``); ``"—"`` when it is not finite. Microseconds are
    ``"µs"`` (``"80.4 µs"``), as a table writes ``mm²``: the ASCII ``"us"`` of :func:`format_quantity`
    is for spec TOML, and the roofline plugin's "min TPOT: 80.4 us" read as a word (fresh-user trial)."""
    if not math.isfinite(seconds):
        return "—"
    for scale, unit in ((86400.0, "days"), (3600.0, "h"), (60.0, "min")):
        if seconds >= 2 * scale:
            v = seconds / scale
            return f"{v:,.0f} {unit}" if v >= 1000 else f"{v:.3g} {unit}"
    return format_time(seconds)


def format_time(seconds: float) -> str:
    """A time to 3 significant digits in s, ms or µs, as a person reads it (:func:`format_quantity`'s,
    whose ASCII ``"us"`` is for spec TOML, with ``"µs"``): ``"1.2 ms"``, ``"100 µs"``. The tail of
    :func:`format_duration` (which goes on to minutes, hours and days) and an SLO line's bound."""
    text = format_quantity(seconds, "s", digits=3)
    return text[:-len(" us")] + " µs" if text.endswith(" us") else text
