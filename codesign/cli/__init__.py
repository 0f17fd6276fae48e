"""The ``codesign`` command line.

Each sub-command lives in its own module of this package with ``register(subparsers)``; heavy
libraries (JAX, Optuna, matplotlib) are imported inside the commands that need them, so
``codesign --help`` and ``codesign plugins list`` stay fast. Results go to stdout (one JSON document
with ``--json``); progress, warnings and errors go to stderr. Exit codes: :class:`codesign.ExitCode`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import CodesignError, ExitCode

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ["evaluate", "optimize", "model", "plugins", "numerics", "validate", "calibrate", "study", "sweep", "worker"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codesign",
        description="Hardware/software co-design of LLM inference systems.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"codesign {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        return int(args.func(args) or 0)
    except CodesignError as exc:
        if args.debug:
            raise
        print("\n".join(f"error: {line}" for line in str(exc).splitlines()), file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except KeyboardInterrupt:
        print("interrupted: completed trials are kept in the study storage; rerun to resume",
              file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # pragma: no cover - e.g. `codesign ... | head`
        return ExitCode.OK


def entry() -> None:  # pragma: no cover - console script
    sys.exit(main())
