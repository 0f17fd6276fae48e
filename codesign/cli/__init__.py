"""The ``codesign`` command line.

Each sub-command lives in its own module of this package with ``register(subparsers)``; heavy
libraries (JAX, Optuna, matplotlib) are imported inside the commands that need them, so
``codesign --help`` and ``codesign plugins list`` stay fast. Results go to stdout (one JSON document
with ``--json``); progress, warnings and errors go to stderr. Exit codes: :class:`codesign.ExitCode`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import errno
import signal
import sys

from .. import interrupts
from ..errors import BugError, CodesignError, ExitCode, Interrupted, SpecError

#: errno of an OSError that is the machine's (a full disk, a quota, a read-only file system): exit 2
_FULL_DISK = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ["evaluate", "optimize", "model", "plugins", "numerics", "validate", "calibrate", "study", "sweep", "worker"]


class _Parser(argparse.ArgumentParser):
    """argparse with the tool's error contract: a usage error is one ``error:`` line (naming the
    command's ``--help``) and exit 2; with ``--json`` anywhere on the command line, stdout also gets
    ``{"error": {...}}``, as for every other failure. (Sub-command parsers inherit the class.)"""

    def error(self, message):  # noqa: D401 - argparse hook
        prog = self.prog
        if prog == "codesign" and message.startswith("unrecognized arguments"):
            # argparse reports a sub-command's unknown flags from the top-level parser: name the
            # (innermost) sub-command, whose --help lists its flags
            path = _command_path(self, [a for a in _ARGV if not a.startswith("-")])
            prog = " ".join(["codesign", *path])
            message += _unknown_option_hint(self, path, message.split(": ", 1)[1].split(" "))
        print(f"error: {prog}: {message} (see `{prog} --help`)", file=sys.stderr)
        _json_error("--json" in _ARGV, f"{prog}: {message}", ExitCode.USAGE_ERROR)
        raise SystemExit(int(ExitCode.USAGE_ERROR))


_ARGV: list[str] = []  # the argv main() parses (tests call main() directly)


def _command_path(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """The sub-command names that ``words`` (the command line's non-option words) walk through
    ``parser``'s sub-parsers: ``["model", "show"]`` for ``codesign model show x.toml``."""
    for action in parser._actions:  # argparse keeps sub-parsers in a _SubParsersAction
        if isinstance(action, argparse._SubParsersAction) and words and words[0] in action.choices:
            return [words[0], *_command_path(action.choices[words[0]], words[1:])]
    return []


#: The spec key that gives, to a command reading a spec, what another command's option gives
#: (``optimize --cost-model`` was refused with no word of where optimize's cost model comes from)
_SPEC_KEY_OF_OPTION = {"--cost-model": ("the cost model", "deployment.cost_model")}


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every sub-command parser under ``parser``, as (its command words, the parser)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _parsers(sub, (*path, name))


def _unknown_option_hint(parser: argparse.ArgumentParser, path: list[str], extras: list[str]) -> str:
    """What to say after "unrecognized arguments: ..." (``extras``, the words argparse did not take)
    for the sub-command ``path``: for an option another command takes, the commands that take it
    and, for a command reading a spec, the spec key that does its job there, with a guess for a
    misspelt cost model (``optimize --cost-model rooflin``: fresh-user trial, session 46, where it
    said only "unrecognized arguments"); for any other, the command's own option it most likely
    stands for (:func:`codesign.errors.close_name`: ``--trails`` -> ``--trials``). "" when there is
    nothing to add."""
    from ..errors import close_name

    commands = dict(_parsers(parser))
    own = commands.get(tuple(path))
    if own is None:
        return ""
    own_options = [o for a in own._actions for o in a.option_strings if o.startswith("--")]
    notes = []
    for i, word in enumerate(extras):
        if not word.startswith("--"):
            continue
        option, _, value = word.partition("=")
        if not value and i + 1 < len(extras) and not extras[i + 1].startswith("-"):
            value = extras[i + 1]
        takers = [" ".join(["codesign", *p]) for p, sub in commands.items()
                  if any(option in a.option_strings for a in sub._actions)]
        if not takers:
            guess = close_name(option[2:], [o[2:] for o in own_options], cutoff=0.75)  # without the '--' all share
            if guess:
                notes.append(f"did you mean --{guess}?")
            continue
        note = f"{option} is an option of {' and '.join(f'`{t}`' for t in takers)}"
        what, key = _SPEC_KEY_OF_OPTION.get(option, (None, None))
        if key and any(a.dest == "spec" for a in own._actions):
            note += f"; `codesign {' '.join(path)}` takes {what} from its spec's {key}"
            if option == "--cost-model" and value:
                note += _cost_model_guess(value)
        notes.append(note)
    return "".join(f"; {n}" for n in notes)


def _cost_model_guess(name: str) -> str:
    """"; 'rooflin' is no registered cost model: did you mean 'roofline'?" for a cost-model
    name no plugin registers (with the registered close name, when there is one), else ""."""
    from ..errors import PLUGIN_EXCEPTIONS
    from ..pluginmanager import get_plugin_manager

    try:
        pm = get_plugin_manager()
        models = sorted(pm.cost_models)
    except PLUGIN_EXCEPTIONS:  # noqa: BLE001 - a usage error is being reported: a broken plugin adds nothing to it
        return ""
    if name in models or name == "auto":
        return ""
    guess = pm.cost_model_guess(name)  # PluginManager.unknown_cost_model's guess
    return f"; {name!r} is no registered cost model" + (f": did you mean {guess!r}?" if guess else
                                                             f" (registered: {', '.join(models) or 'none'})")


def build_parser() -> argparse.ArgumentParser:
    from ._common import EXIT_BUG, EXIT_SIGNALS

    parser = _Parser(
        prog="codesign",
        description="Hardware/software co-design of LLM inference systems.",
        # as every command's --help ends (0f9b663); 1 only where a command's code path returns
        # ExitCode.NO_RESULT. The top level listed none (fresh-user trial, session 41)
        epilog="Exit codes: 0 the command did what it was asked; 1 no feasible design (evaluate, optimize "
               "and sweep only; their output is still given and says why); 2 bad input (an error: line "
               f"naming the file, key path and what was expected; no command given); {EXIT_BUG}; "
               f"{EXIT_SIGNALS}. `codesign COMMAND --help` gives each command's.",
    )
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks for errors (the exit codes stay the same)")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"codesign {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    _ARGV[:] = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help/--version (0) or a usage error (2, printed by _Parser.error)
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return ExitCode.USAGE_ERROR
    interrupted: list[int] = []  # the signals (SIGINT, SIGTERM) that interrupted the command
    previous = interrupts.catch(interrupted)
    _broken_pipe_as_exception()
    try:
        rc = int(args.func(args) or 0)
        if interrupted:  # a Ctrl-C (or SIGTERM) that a callback swallowed (a finaliser; a gc callback gets it again)
            raise KeyboardInterrupt
        return rc
    except BugError as exc:  # a plugin raised or broke the contract, a worker crashed: not the input
        if args.debug:  # the traceback, then the same line and exit code as without --debug
            _print_traceback()
        # under --debug the advice to rerun with --debug is gone, and its "and report it" with it
        # ("not in your input and report it.": plugin-author trial, session 46)
        rerun = ("; please report it, with the traceback above" if args.debug else
                 f"; rerun with `codesign --debug {args.command} ...` for the traceback and report it")
        print(f"internal error: {exc}\n{exc.hint}{rerun}.{_kept(exc)}", file=sys.stderr)
        _json_error(getattr(args, "json", False), f"internal error: {exc}", ExitCode.INTERNAL_ERROR)
        return ExitCode.INTERNAL_ERROR
    except CodesignError as exc:
        if args.debug:  # the traceback, then the same line and exit code as without --debug
            _print_traceback()
        heading = exc.heading() if isinstance(exc, SpecError) else None  # "spec.toml: 3 problems"
        lines = ([heading] if heading else []) + str(exc).splitlines()
        print("\n".join(f"error: {line}" for line in lines) + _kept(exc), file=sys.stderr)
        _json_error(getattr(args, "json", False), str(exc), ExitCode.USAGE_ERROR,
                    problems=exc.as_json() if isinstance(exc, SpecError) else None)
        return ExitCode.USAGE_ERROR
    except KeyboardInterrupt as exc:
        searches = ("optimize", "worker", "study")  # the commands that keep an Optuna study
        line = (str(exc) if isinstance(exc, Interrupted)  # it says what the interrupt left (a report half written)
                else "interrupted: completed trials, if any, are kept in the study storage; rerun to resume"
                if args.command in searches else "interrupted")
        print(line, file=sys.stderr)
        # 130 for Ctrl-C, 143 for SIGTERM (the shell's 128 + signal number)
        code = ExitCode.TERMINATED if interrupted[:1] == [signal.SIGTERM] else ExitCode.INTERRUPTED
        _json_error(getattr(args, "json", False), line, code)  # a script reading stdout gets a document
        return code
    except BrokenPipeError:  # e.g. `codesign evaluate ... | head -1`: the reader has what it wanted
        try:  # the interpreter's last flush of stdout would fail again ("Exception ignored", exit 120)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor (a test)
            pass
        return ExitCode.OK
    except OSError as exc:
        if exc.errno not in _FULL_DISK:  # any other OSError is a bug (below)
            return _internal_error(args, exc)
        # a full disk (or quota, or read-only file system) under a running command is the machine's,
        # not a bug (fresh-user trial, session 41: optimize on a full tmpfs said "a bug in codesign")
        where = f" ({exc.filename})" if exc.filename else ""
        line = (f"cannot write{where}: {exc.strerror or exc}; free space or write elsewhere (--out) and rerun"
                + ("; completed trials are kept in the study storage" if args.command in ("optimize", "worker", "study")
                   else ""))
        print(f"error: {line}{_kept(exc)}", file=sys.stderr)
        _json_error(getattr(args, "json", False), line, ExitCode.USAGE_ERROR)
        return ExitCode.USAGE_ERROR
    except Exception as exc:  # a bug in codesign or a plugin: one line, the traceback behind --debug
        return _internal_error(args, exc)
    finally:
        interrupted.append(0)  # disarm: a signal from here on (the command is done) raises nothing
        if previous:
            for signum, handler in previous.items():
                if handler is not None:  # None: a handler not set from Python, which cannot be put back
                    signal.signal(signum, handler)


def _broken_pipe_as_exception() -> None:
    """rich ends the process with exit 1 when stdout is closed under it (``Console.on_broken_pipe``,
    its documented hook: ``codesign evaluate ... | head -1`` exited 1, which here means "no feasible
    design"; fresh-user trial, session 26). It raises BrokenPipeError instead, which :func:`main`
    handles as for a ``print``."""
    from rich.console import Console

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError

    Console.on_broken_pipe = on_broken_pipe


def _print_traceback() -> None:
    """``--debug``: the traceback of the exception being handled, on stderr."""
    import traceback

    traceback.print_exc(file=sys.stderr)



def _internal_error(args, exc: BaseException) -> int:
    """A bug in codesign or a plugin: one line (the traceback behind --debug), exit 3."""
    if args.debug:  # the traceback, then the same line and exit code as without --debug
        _print_traceback()
    import traceback

    where = traceback.extract_tb(exc.__traceback__)[-1]
    msg = f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
    rerun = "" if args.debug else f"rerun with `codesign --debug {args.command} ...` for the traceback and "
    print(f"internal error: {msg}\nThis is a bug in codesign or a plugin, not in your input; "
          f"{rerun}report it.{_kept(exc)}", file=sys.stderr)
    _json_error(getattr(args, "json", False), f"internal error: {msg}", ExitCode.INTERNAL_ERROR)
    return ExitCode.INTERNAL_ERROR


def _kept(exc: BaseException) -> str:
    """The line a search that failed after storing trials adds below its error (``\\n`` first):
    that its completed trials are kept and how to resume (``search._note_kept``); "" otherwise."""
    note = getattr(exc, "study_kept", None)
    return f"\n{note}" if note else ""


def _json_error(wanted: bool, message: str, code: ExitCode, problems: list[dict] | None = None) -> None:
    """With ``--json`` (``wanted``), a failed command still prints one JSON document on stdout (a
    script reads ``error`` instead of parsing stderr): ``{"error": {"message": ..., "exit_code": ...}}``;
    a spec's problems (:class:`~codesign.errors.SpecError`) also as ``"problems": [{"file", "key",
    "message"}, …]``, one per problem, so a script need not split the message."""
    if wanted:
        import json

        doc = {"message": message, "exit_code": int(code)}
        if problems is not None:
            doc["problems"] = problems
        try:
            print(json.dumps({"error": doc}), flush=True)
        except BrokenPipeError:  # `... --json | head -c 100`: the reader stopped (a traceback here)
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
                pass


def entry() -> None:  # pragma: no cover - console script
    code = main()
    if code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED):
        # Ctrl-C (or SIGTERM) in the middle of a JAX computation: the interpreter's shutdown can crash in XLA's
        # worker threads (SIGSEGV, exit -11, seen on validate and optimize). Everything a run keeps
        # is on disk by now (study storage commits each trial), so leave without finalisation
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    sys.exit(code)
