"""``codesign numerics``: quantise arrays and measure quantisation error in registered formats.

Sub-commands::

    codesign numerics quantize --format NAME [--rounding even|nearest]
                               [--scale-recipe floor|round_up] IN.npy OUT.npy
    codesign numerics error --format NAME (IN.npy | --synthetic normal|laplace|student-t)
                            [--blocks N] [--seed S] [--rounding ...] [--scale-recipe ...] [--json]
    codesign numerics formats [--json]

Formats come from the plugin manager (``codesign_number_formats``); the format must carry a
``quantize`` function. JAX is imported only inside the run functions (through the plugin).

``error --synthetic`` measures every format on the same values: ``--blocks N`` (default 1024) gives
N x 32 values (N blocks of the MX block size, 32), drawn from ``--seed``, whatever the format's own
block size: NVFP4 quantises them as 2N blocks of 16, a per-tensor format (FP8, ``bf16``) as one
tensor. Their SQNRs compare like for like (the count was N of each format's blocks, so NVFP4 was
measured on half as many elements, and other values, as the MX formats).

``--scale-recipe`` picks how an MX block's E8M0 shared exponent is chosen: given explicitly with a
``codesign_mx`` format that has no such exponent (``bf16``, FP8, NVFP4, ``int4_g32``, whose scale
is ``bf16(amax / 7.5)``) it is refused rather than silently ignored. ``--rounding`` (ties to even
or away from zero) applies to every ``codesign_mx`` format, ``int4_g32`` included (the tie of
``x / scale`` between two integer codes).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from ..errors import PLUGIN_EXCEPTIONS, CodesignError, PluginBugError, close_name
from ._common import EXIT_BUG, EXIT_SIGNALS, _check_parents, check_out_file, path_type, seed_type, whole_type

SCHEMA_VERSION = 1

#: Values per ``numerics error --blocks`` block of synthetic data: the OCP MX block size, a multiple
#: of NVFP4's 16, so every format is measured on the same ``--blocks`` x 32 values.
SYNTHETIC_BLOCK = 32


def register(sub) -> None:
    p = sub.add_parser("numerics", help="quantise arrays in number formats (MX, NVFP4, FP8, ...)",
                       epilog="Exit codes: those of the ACTION (`codesign numerics ACTION --help`); without one, "
                              "it lists the formats as `codesign numerics formats` does.")
    psub = p.add_subparsers(dest="numerics_command", metavar="ACTION")

    q = psub.add_parser("quantize", help="quantise-dequantise a float32 .npy file",
                        epilog="Exit codes: 0 OUT was written; 2 bad input (an unknown format or one without "
                               "quantize, an IN that is no float32 .npy array, an OUT that cannot be written or "
                               "is IN, an option the format does not take; one line on stderr); "
                               f"{EXIT_BUG}; {EXIT_SIGNALS}.")
    q.add_argument("--format", required=True, help="format name (see `numerics formats`)")
    _options(q)
    q.add_argument("input", metavar="IN", help="input .npy (float32, blocks along the last axis)")
    q.add_argument("output", metavar="OUT", type=path_type, help="output .npy (float32, dequantised values)")
    q.set_defaults(func=run_quantize)

    e = psub.add_parser("error", help="quantisation error statistics (MSE, SQNR, scales)",
                        epilog="Exit codes: 0 the statistics were printed; 2 bad input (an unknown format or one "
                               "without quantize, an IN that is no float32 .npy array or has no finite element, "
                               "--blocks out of range, an option the format or the input does not take; one line "
                               f"on stderr); {EXIT_BUG}; {EXIT_SIGNALS}.")
    e.add_argument("--format", required=True, help="format name (see `numerics formats`)")
    _options(e)
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("input", metavar="IN", nargs="?", help="input .npy (float32)")
    src.add_argument("--synthetic", choices=["normal", "laplace", "student-t"],
                     help="use random unit-scale blocks instead of a file")
    e.add_argument("--blocks", type=whole_type, default=None, metavar="N",
                   help=f"synthetic data of N x {SYNTHETIC_BLOCK} values (N blocks of the MX block size "
                        f"{SYNTHETIC_BLOCK}; default 1024: 32768 values), the same values for every format "
                        "(NVFP4 quantises them as 2N blocks of 16)")
    e.add_argument("--seed", type=seed_type, default=None, help="synthetic seed (default 0)")
    e.add_argument("--json", action="store_true",
                   help="one JSON document on stdout; a non-finite number (NaN, infinity: e.g. the SQNR "
                        "of an exact quantisation) is written as null")
    e.set_defaults(func=run_error)

    f = psub.add_parser("formats", help="list registered number formats",
                        epilog="Exit codes: 0 the formats were listed; 2 a bad option (or a plugin that failed to "
                               f"load, under CODESIGN_STRICT_PLUGINS=1); {EXIT_BUG}; {EXIT_SIGNALS}.")
    f.add_argument("--json", action="store_true", help="one JSON document on stdout")
    f.set_defaults(func=run_formats)

    p.set_defaults(func=run_formats, json=False)


#: what ``--rounding`` and ``--scale-recipe`` mean when not given (``codesign_mx``'s defaults)
DEFAULT_ROUNDING = "even"
DEFAULT_SCALE_RECIPE = "floor"


def _options(p) -> None:
    # default None: an option the user gave is told apart from its default (_check_options)
    p.add_argument("--rounding", choices=["even", "nearest"], default=None,
                   help="ties to even (OCP MX spec, torch.round; default) or away from zero")
    p.add_argument("--scale-recipe", dest="scale_recipe", choices=["floor", "round_up"],
                   default=None, help="MX formats only: E8M0 shared-exponent recipe (default floor, "
                                      "per the spec)")


def _check_options(fmt, args) -> None:
    """Refuse ``--scale-recipe`` given for a ``codesign_mx`` format without an E8M0 shared
    exponent, then fill in the defaults of the options not given.

    A format of another plugin is not checked: its ``quantize`` receives both options as before.

    Raises:
        CodesignError: ``--scale-recipe`` with a non-MX ``codesign_mx`` format (one line).
    """
    if args.scale_recipe is not None and not _has_scale_recipe(fmt):
        import codesign_mx

        mx = ", ".join(n for n, f in codesign_mx.FORMATS.items() if f.kind == "mx")
        raise CodesignError(
            f"--scale-recipe applies only to MX formats ({mx}): it picks the E8M0 shared "
            f"exponent of a block, and {fmt.name!r} has none; drop --scale-recipe")
    if args.rounding is None:
        args.rounding = DEFAULT_ROUNDING
    if args.scale_recipe is None:
        args.scale_recipe = DEFAULT_SCALE_RECIPE


def _has_scale_recipe(fmt) -> bool:
    """Whether ``--scale-recipe`` means anything for ``fmt``: False for a ``codesign_mx`` format
    without an E8M0 shared exponent (``bf16``, FP8, NVFP4, ``int4_g32``); a format of another plugin
    receives the option, so it counts as used."""
    if getattr(fmt.quantize, "__module__", "") != "codesign_mx":
        return True
    import codesign_mx

    return codesign_mx.format_spec(fmt.name).kind == "mx"


def _format(name: str):
    from ..pluginmanager import get_plugin_manager

    formats = get_plugin_manager().number_formats
    key = name.lower()
    if key not in formats:
        have = ", ".join(sorted(formats)) or "none"
        close = close_name(key, sorted(formats))  # as a spec's format names: 'mxfp44' -> 'mxfp4'
        mean = f" (did you mean {close!r}?)" if close else ""
        raise CodesignError(f"unknown number format {name!r}{mean}; registered: {have}")
    fmt = formats[key]
    if fmt.quantize is None:
        raise CodesignError(f"number format {key!r} (plugin {fmt.plugin}) has no quantize function")
    return fmt


#: Upper bound of ``numerics error --blocks`` (10^7 blocks of 32 float32 values: 1.3 GB, and a few
#: working copies of it, on a 24 GiB machine); 10^11 raised MemoryError, an "internal error".
MAX_BLOCKS = 10_000_000


def _load(path: str, fmt):
    import numpy as np

    p = Path(path)
    if p.is_dir():
        raise CodesignError(f"{path}: is a directory; expected a .npy file")
    if not p.is_file():
        raise CodesignError(f"{path}: no such file")
    try:
        with open(p, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise CodesignError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if magic[:2] != b"PK" and magic != b"\x93NUMPY":
        # np.load would blame pickled data for any file without the NumPy header
        raise CodesignError(f"{path} is not a NumPy .npy array file (no NumPy header; not a "
                            "readable .npy file)")
    try:
        x = np.load(p, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is a user error
        why = ("it holds Python objects (pickled), not numbers" if "pickle" in str(exc)
               else f"{type(exc).__name__}: {exc}")
        raise CodesignError(f"{path}: not a readable .npy file ({why})") from None
    if not isinstance(x, np.ndarray):
        raise CodesignError(f"{path}: expected one array in a .npy file, not an archive")
    if x.dtype != np.float32:
        raise CodesignError(f"{path}: dtype must be float32, got {x.dtype}")
    if x.ndim == 0:
        raise CodesignError(f"{path}: expected an array with at least one axis, got a scalar")
    if x.size == 0:
        raise CodesignError(f"{path}: the array holds no elements (shape {x.shape})")
    if fmt.block_size and x.shape[-1] % fmt.block_size:
        raise CodesignError(
            f"{path}: last axis has length {x.shape[-1]}, not a multiple of {fmt.name}'s block "
            f"size {fmt.block_size} (shape {x.shape})")
    return x


def _quantize(fmt, x, args):
    try:
        return fmt.quantize(x, rounding=args.rounding, scale_recipe=args.scale_recipe)
    except ValueError as exc:  # the format's refusal of an option or value: the user's input
        raise CodesignError(f"{fmt.name}: {exc}") from exc
    except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - anything else is the plugin's bug, named
        raise PluginBugError(f"number format {fmt.name!r} (plugin {fmt.plugin}) raised in quantize: "
                             f"{type(exc).__name__}: {exc}") from exc


def run_quantize(args) -> int:
    import numpy as np

    fmt = _format(args.format)
    _check_options(fmt, args)
    x = _load(args.input, fmt)
    out = Path(args.output)
    if out.is_dir():
        raise CodesignError(f"{args.output}: is a directory; expected the output .npy file's path")
    if not out.parent.is_dir():
        _check_parents(out, "output", args.output)  # a file in the way: "does not exist" hid it
        raise CodesignError(f"{args.output}: directory {out.parent} does not exist")
    check_out_file(out, "output", inputs=[args.input])  # `quantize a.npy a.npy` replaced its input
    y = np.asarray(_quantize(fmt, x, args), dtype=np.float32)
    with open(out, "wb") as fh:  # np.save on a path would append ".npy"
        np.save(fh, y)
    print(f"wrote {out} ({fmt.name}, shape {tuple(y.shape)})", file=sys.stderr)
    return 0


def _stats(fmt, x, args) -> dict:
    """MSE, SQNR, max error, scale histogram; MX formats through codesign_mx for the scales."""
    import numpy as np

    if getattr(fmt.quantize, "__module__", "") == "codesign_mx":
        import codesign_mx

        try:
            return codesign_mx.error_stats(x, fmt.name, rounding=args.rounding,
                                           scale_recipe=args.scale_recipe)
        except ValueError as exc:
            raise CodesignError(f"{fmt.name}: {exc}") from exc
    y = np.asarray(_quantize(fmt, x, args), dtype=np.float64)
    x64 = x.astype(np.float64)
    ok = np.isfinite(x64) & np.isfinite(y)
    err = (y - x64)[ok]
    noise = float(np.sum(err ** 2))
    n = int(err.size)
    return {"mse": noise / n if n else float("nan"),
            "sqnr_db": float("inf") if noise == 0 else
            float(10 * np.log10(np.sum(x64[ok] ** 2) / noise)),
            "max_abs_error": float(np.max(np.abs(err))) if n else float("nan"),
            "scale_histogram": {}, "n_elements": n, "nan_blocks": 0}


def _num(v: float):
    """JSON-safe float: ``NaN`` and ``Infinity`` are not JSON, so a non-finite value becomes
    ``null`` (e.g. ``sqnr_db`` of an exact quantisation, ``mse`` of an all-NaN input)."""
    import math

    return v if math.isfinite(v) else None


def run_error(args) -> int:
    fmt = _format(args.format)
    _check_options(fmt, args)
    if not args.synthetic and (args.blocks is not None or args.seed is not None):
        given, what = (("--blocks", "its blocks") if args.blocks is not None else ("--seed", "its values"))
        raise CodesignError(f"{given} applies to --synthetic data only (the input file gives {what})")
    if args.synthetic:
        import codesign_mx

        blocks = 1024 if args.blocks is None else args.blocks
        seed = 0 if args.seed is None else args.seed
        if not 1 <= blocks <= MAX_BLOCKS:
            raise CodesignError(f"--blocks must be in [1, {MAX_BLOCKS:,}] (got {blocks}; each block is "
                                f"{SYNTHETIC_BLOCK} float32 values held in memory)")
        n = blocks * SYNTHETIC_BLOCK  # the same count, and values, for every format
        width = fmt.block_size or SYNTHETIC_BLOCK
        if n % width:  # a plugin's format whose block does not divide the values
            raise CodesignError(f"--blocks {blocks}: its {n} values ({blocks} x {SYNTHETIC_BLOCK}) are not a "
                                f"whole number of {fmt.name}'s blocks of {width}; give a --blocks that makes "
                                f"them one (a multiple of {math.lcm(width, SYNTHETIC_BLOCK) // SYNTHETIC_BLOCK})")
        # filled in C order, so the n values are those of any other row width with the same seed
        x = codesign_mx.synthetic(args.synthetic, n // width, width, seed)
        own = f" ({n // width} blocks of {width})" if fmt.block_size else ""
        source = f"synthetic {args.synthetic}, {n} values{own}, seed {seed}"
    else:
        import numpy as np

        x = _load(args.input, fmt)
        source = args.input
        if not np.isfinite(x).any():
            raise CodesignError(f"{args.input}: no finite element (of {x.size}) to measure the error on")
    st = _stats(fmt, x, args)
    hist = {str(k): v for k, v in sorted(st["scale_histogram"].items())}
    if args.json:
        doc = {"schema_version": SCHEMA_VERSION, "format": fmt.name, "source": source,
               "rounding": args.rounding,
               # null where no E8M0 shared exponent is chosen (fp8, bf16, nvfp4, int4_g32)
               "scale_recipe": args.scale_recipe if _has_scale_recipe(fmt) else None,
               "n_elements": st["n_elements"], "mse": _num(st["mse"]),
               "sqnr_db": _num(st["sqnr_db"]), "max_abs_error": _num(st["max_abs_error"]),
               "scale_histogram": hist, "nan_blocks": st["nan_blocks"]}
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{fmt.name} quantisation error ({source})")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row("elements", str(st["n_elements"]))
    t.add_row("MSE", f"{st['mse']:.6g}")
    t.add_row("SQNR (dB)", f"{st['sqnr_db']:.4f}")
    t.add_row("max abs error", f"{st['max_abs_error']:.6g}")
    if st["nan_blocks"]:
        t.add_row("NaN blocks", str(st["nan_blocks"]))
    con = Console()
    con.print(t)
    if hist:
        h = Table(title="E8M0 scale histogram")
        h.add_column("exponent s (X = 2^s)", justify="right")
        h.add_column("blocks", justify="right")
        for k, v in hist.items():
            h.add_row(k, str(v))
        con.print(h)
    return 0


def run_formats(args) -> int:
    from ..pluginmanager import get_plugin_manager

    formats = get_plugin_manager().number_formats
    rows = [{"name": f.name, "bits_per_element": f.bits_per_element,
             "block_size": f.block_size, "per_tensor_bits": f.per_tensor_bits,
             "compute_class": f.compute_class, "weight_only": f.weight_only, "plugin": f.plugin,
             "description": f.description} for f in sorted(formats.values(), key=lambda f: f.name)]
    if args.json:
        json.dump({"schema_version": SCHEMA_VERSION, "formats": rows}, sys.stdout, indent=2)
        print()
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="number formats")
    t.add_column("name", no_wrap=True)
    t.add_column("bits/element", justify="right", no_wrap=True)
    t.add_column("block", justify="right", no_wrap=True)
    t.add_column("compute", no_wrap=True)
    t.add_column("description")
    for r in rows:
        t.add_row(r["name"], f"{r['bits_per_element']:g}", str(r["block_size"] or "-"),
                  r["compute_class"], r["description"])
    Console().print(t)
    return 0
