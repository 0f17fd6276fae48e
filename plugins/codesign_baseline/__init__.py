"""Baselines for the analytical cost model: GB200, GB300, B200, H200 and H100 calibrated; B300,
MI300X, MI325X and MI355X described by their datasheets only.

Each baseline is a hardware fragment shipped in this package (``<name>.toml``, copies of
``specs/hardware/<name>.toml`` with every number's source) plus the efficiency knobs that
``codesign calibrate`` fitted against measured serving data (``calibration.toml`` here, with its
provenance: data files and SHA-256, rows used and held out, error before and after). A system the
calibration did not see borrows the fitted knobs of the system named in :data:`KNOBS_FALLBACK`
(B300: B200's) or else gets the calibration's ``shared`` knobs (fitted across all systems; the AMD
parts), and its provenance says which.
"""

from __future__ import annotations

import sys
from pathlib import Path

import codesign

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__version__ = "0.1.0"

HERE = Path(__file__).resolve().parent
CALIBRATION = HERE / "calibration.toml"

SYSTEMS = {
    "gb200": "NVIDIA GB200 NVL72 (per GPU, 1200 W)",
    "gb300": "NVIDIA GB300 NVL72 (per GPU, 1400 W)",
    "b200": "NVIDIA HGX B200 (per GPU, 1000 W)",
    "h200": "NVIDIA HGX H200 (per GPU, 700 W)",
    "h100": "NVIDIA HGX H100 SXM (per GPU, 700 W)",
    # datasheet only (hardware_specs.csv): no measured serving data, knobs from KNOBS_FALLBACK or shared
    "b300": "NVIDIA HGX B300 (per GPU, 1200 W; uncalibrated: B200's knobs)",
    "mi300x": "AMD Instinct MI300X 8-GPU platform (per GPU, 750 W; uncalibrated: shared knobs)",
    "mi325x": "AMD Instinct MI325X 8-GPU platform (per GPU, 1000 W; uncalibrated: shared knobs)",
    "mi355x": "AMD Instinct MI355X 8-GPU platform (per GPU, 1400 W; uncalibrated: shared knobs)",
}

#: Whose fitted knobs a system borrows when the calibration has none of its own (and never saw it).
#: B300 -> B200: the same HGX 8-GPU board, NVLink 5 domain of 8 and Blackwell kernels and serving
#: stacks (TensorRT-LLM, SGLang, vLLM builds for SM100); what the knobs carry (per-step and per-layer
#: overheads, achieved fractions of peak) belongs to that stack more than to the extra FP4 rate and
#: memory B300 adds. The AMD parts borrow no NVIDIA system's knobs (other kernels: ROCm, AITER;
#: other scale-up: an xGMI full mesh): they get the shared knobs, fitted across all five systems.
KNOBS_FALLBACK = {"b300": "b200"}


def load_calibration(path: Path = CALIBRATION) -> dict:
    """The calibration TOML as a dict (empty when the file is missing)."""
    if not Path(path).exists():
        return {}
    with open(path, "rb") as f:
        return tomllib.load(f)


def read_calibration(path) -> dict:
    """A calibration TOML that ``codesign calibrate --out`` wrote, checked before any row is priced.

    Raises:
        CodesignError: the file is missing, or the path is a directory.
        SpecError: not TOML; a ``schema_version`` other than the one ``codesign calibrate`` writes
            (:data:`codesign.calibrate.CALIBRATION_VERSION`), or none; no ``cost_model`` or another
            model's; a ``[systems.X]`` table for a system this plugin does not know (it would never
            apply: the system would silently get the shared knobs) or a ``[frameworks.Y]`` table for
            an unknown engine family; a knob that the model does not have or a value outside its
            range. Each problem names the file and key path.
    """
    import math

    from codesign.calibrate import CALIBRATION_VERSION, FRAMEWORK_FAMILIES, SERVING_STACKS
    from codesign.errors import CodesignError, SpecError, close_name
    from codesign_analytical.model import DEFAULT_EFFICIENCY, ENGINE_KNOBS, WORKLOAD_KNOBS, knob_problem

    f = str(path)
    if Path(path).is_dir():  # else "no such calibration file", as if the path did not exist
        raise CodesignError(f"{f}: is a directory; expected a calibration TOML file "
                            "(as `codesign calibrate MEASURED.csv --out FILE` writes)")
    if not Path(path).is_file():
        raise CodesignError(f"{f}: no such calibration file (write one with "
                            f"`codesign calibrate MEASURED.csv --out {f}`)")
    try:
        cal = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SpecError([(f, "", f"not a valid TOML file ({e})")]) from None
    if not {"schema_version", "cost_model", "shared"} & set(cal):
        raise CodesignError(f"{f}: not a calibration file (no schema_version, cost_model or [shared]; "
                            "`codesign calibrate MEASURED.csv --out FILE` writes one)")
    problems = []
    rerun = f"(rerun `codesign calibrate MEASURED.csv --out {f}`)"
    if "schema_version" not in cal:
        problems.append((f, "schema_version", f"missing: `codesign calibrate` writes schema_version = "
                                              f"{CALIBRATION_VERSION} {rerun}"))
    elif isinstance(cal["schema_version"], bool) or cal["schema_version"] != CALIBRATION_VERSION:
        problems.append((f, "schema_version", f"unknown version {cal['schema_version']!r}; this codesign "
                                              f"reads schema_version = {CALIBRATION_VERSION} {rerun}"))
    if "cost_model" not in cal:
        problems.append((f, "cost_model", 'missing: a calibration names the cost model it calibrates '
                                          '(cost_model = "analytical", as `codesign calibrate` writes it)'))
    elif cal["cost_model"] != "analytical":
        problems.append((f, "cost_model", f"calibrates {cal['cost_model']!r}; the baselines price with 'analytical'"))
    if not isinstance(cal.get("shared"), dict):
        problems.append((f, "shared", "missing: a calibration has a [shared] table of knobs "
                                      "(as `codesign calibrate` writes it)"))
    tables = [("shared", cal["shared"], True)] if isinstance(cal.get("shared"), dict) else []
    known = {"systems": list(SYSTEMS), "frameworks": sorted(set(FRAMEWORK_FAMILIES.values())),
             "stacks": sorted(set(SERVING_STACKS.values()))}
    for group, physical in (("systems", True), ("frameworks", False), ("stacks", False)):
        sub = cal.get(group, {})
        if not isinstance(sub, dict):
            problems.append((f, group, "must be a table of tables"))
            continue
        for k in sub:
            if k not in known[group]:
                what = {"systems": "system (no baseline of that name)", "frameworks": "engine family",
                        "stacks": "serving stack"}[group]
                near = close_name(k, known[group], cutoff=0.6)  # difflib's default; 'gb200' for 'GB200' too
                problems.append((f, f"{group}.{k}", f"unknown {what}; "
                                 + (f"did you mean {near!r}? " if near else "")
                                 + f"expected one of {', '.join(known[group])}"))
        tables += [(f"{group}.{k}", v, physical) for k, v in sub.items() if k in known[group]]
    for where, t, physical in tables:
        if not isinstance(t, dict):
            problems.append((f, where, "must be a table of knobs"))
            continue
        allowed = ENGINE_KNOBS if where.startswith("stacks.") else tuple(DEFAULT_EFFICIENCY)
        for k, v in t.items():
            if k not in DEFAULT_EFFICIENCY:
                near = close_name(k, allowed, cutoff=0.6)
                problems.append((f, f"{where}.{k}", "unknown knob of the analytical model; "
                                 + (f"did you mean {near!r}? " if near else "")
                                 + "expected one of " + ", ".join(allowed)))
            elif where.startswith("stacks.") and k not in ENGINE_KNOBS:
                problems.append((f, f"{where}.{k}", "a serving stack offsets engine settings only; expected "
                                 "one of " + ", ".join(ENGINE_KNOBS)))
            elif where.startswith("frameworks.") and k in WORKLOAD_KNOBS:
                # a model's routing on the served prompts is the same under any engine (it was
                # applied: fresh-user trial, session 35)
                problems.append((f, f"{where}.{k}", "a property of the served model, not of the engine: it has "
                                 "no framework offset (set it in [shared] or a system's table)"))
            elif physical and (why := knob_problem(k, v)):
                problems.append((f, f"{where}.{k}", why))
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                # framework tables hold offsets in the fit's unconstrained space: any finite number
                problems.append((f, f"{where}.{k}", f"must be a finite number (got {v!r})"))
    if not problems:
        # a framework offset must keep every system's composed knob in range (it is added in the
        # fit's unconstrained space, so a large one can push an overhead past its bound)
        bad: dict = {}  # (table, knob) -> first problem
        # each offset is checked where it applies, so a problem names the table that causes it: a
        # family's for the plain engine (the family's name is one of its framework names), a serving
        # stack's for its framework names, on top of a family that is in range on its own
        fams, stacks = cal.get("frameworks", {}), cal.get("stacks", {})
        checks = ([(f"frameworks.{fam}", fams[fam], fam, None) for fam in fams]
                  + [(f"stacks.{st}", stacks[st], fw, FRAMEWORK_FAMILIES[fw])
                     for fw, st in sorted(SERVING_STACKS.items()) if st in stacks])
        for table, off, fw, family in checks:
            for system in [""] + list(cal.get("systems", {})):  # "": the shared knobs alone
                knobs = efficiency_for(cal, system, fw)[0]
                plain = efficiency_for(cal, system, family)[0] if family else {}
                for k in off or {}:
                    why = knob_problem(k, knobs.get(k))
                    if why and not (family and knob_problem(k, plain.get(k))) and (table, k) not in bad:
                        basis = f"systems.{system}" if system else "shared"
                        bad[table, k] = f"with the {basis} knobs this offset gives {knobs[k]:g}, which {why}"
        problems += [(f, f"{table}.{k}", why) for (table, k), why in bad.items()]
    if problems:
        raise SpecError(problems)
    return cal


def knobs_source(cal: dict, system: str) -> str | None:
    """The ``[systems.<name>]`` table whose fitted knobs ``system`` gets: its own; else, when the
    calibration never saw ``system`` (not in ``[domain] systems``), that of its
    :data:`KNOBS_FALLBACK` system if the calibration has one; else ``None`` (the shared knobs)."""
    tables = cal.get("systems") or {}
    if tables.get(system):
        return system
    fallback = KNOBS_FALLBACK.get(system)
    domain = cal.get("domain")
    seen = domain.get("systems", []) if isinstance(domain, dict) else []
    if fallback and tables.get(fallback) and system not in seen:
        return fallback
    return None


def efficiency_for(cal: dict, system: str, framework: str | None = None) -> tuple[dict, str]:
    """Knobs for ``system`` (and serving ``framework``): the system's fitted knobs, else those of its
    :data:`KNOBS_FALLBACK` system (see :func:`knobs_source`), else the shared ones, plus the framework
    family's offset (``[frameworks.<family>]``, in the fit's unconstrained
    space: logit for fractions, log for overheads; see :func:`codesign.calibrate.compose`) and, for
    a serving stack (``dynamo-sglang``: :data:`codesign.validate.SERVING_STACKS`), the stack's
    offset of the engine knobs (``[stacks.<stack>]``).

    Returns:
        ``(knobs, basis)`` where ``basis`` says which tables applied, joined by ``+``
        (``shared+systems.b200+frameworks.sglang`` for a B300 SGLang row of the shipped calibration,
        ``shared+systems.gb200+frameworks.sglang+stacks.dynamo-sglang`` for a GB200 Dynamo + SGLang row).
    """
    from codesign.calibrate import _to_u, compose, framework_family, serving_stack

    knobs = dict(cal.get("shared", {}))
    basis = ["shared"]
    src = knobs_source(cal, system)
    if src:
        knobs.update(cal["systems"][src])
        basis.append(f"systems.{src}")
    fam = framework_family(framework)
    off = cal.get("frameworks", {}).get(fam) if fam else None
    stack = serving_stack(framework)
    st_off = cal.get("stacks", {}).get(stack) if stack else None
    if (off or st_off) and knobs:
        knobs = compose(_to_u(knobs), off, st_off)
        basis += ([f"frameworks.{fam}"] if off else []) + ([f"stacks.{stack}"] if st_off else [])
    return knobs, "+".join(basis)


@codesign.hookimpl
def codesign_baselines():
    cal = load_calibration()
    prov_common = dict(cal.get("provenance", {}))
    out = []
    for name, desc in SYSTEMS.items():
        eff, basis = efficiency_for(cal, name)
        prov = dict(prov_common, calibration_file=str(CALIBRATION), knobs=basis,
                    calibration_version=cal.get("version", "uncalibrated"))
        if cal and name not in cal.get("domain", {}).get("systems", []):
            src = knobs_source(cal, name)
            prov["note"] = (f"{name} not in the calibration data: "
                            + (f"{src}'s fitted knobs (systems.{src})" if src else "shared knobs only"))
        out.append(codesign.Baseline(name=name, description=desc, hardware=HERE / f"{name}.toml",
                                     cost_model="analytical", efficiency=eff, provenance=prov))
    return out
