"""Errors and exit codes shared by the whole tool.

Every user-facing problem becomes a :class:`CodesignError` (or subclass) whose ``str`` is one line
naming the file, the TOML key path and what was expected. The CLI prints it and exits with
:attr:`ExitCode.USAGE_ERROR`; it never shows a traceback unless ``--debug`` asks.
"""

from __future__ import annotations

import contextlib
import enum
import math
import re


class ExitCode(enum.IntEnum):
    """Exit codes of the ``codesign`` command (modelled on pytest's ``ExitCode``)."""

    OK = 0
    #: The command ran but found nothing feasible (e.g. every design is infeasible).
    NO_RESULT = 1
    #: Bad input: a malformed spec, an unknown option, a missing file.
    USAGE_ERROR = 2
    #: Interrupted by the user (Ctrl-C); the search storage keeps every completed trial.
    INTERRUPTED = 130
    #: Terminated by SIGTERM (``kill``, ``timeout``, a batch scheduler): 128 + 15, as a shell reports
    #: a process SIGTERM ended; handled as Ctrl-C is (the search storage keeps every completed trial).
    TERMINATED = 143
    #: A bug in codesign or a plugin.
    INTERNAL_ERROR = 3


class CodesignError(Exception):
    """A user-facing error; ``str(err)`` is the whole message."""


class SpecError(CodesignError):
    """One or more problems in a spec file: every independent problem the loader found, so a user
    fixes them in one pass (a spec with a misspelt ``[chip]`` key and a negative concurrency named
    both; one whose problems were found by different checks named the first only).

    Args:
        problems: ``(file, key_path, message)`` triples; ``key_path`` is dotted
            (``memory.hbm.bandwidth``) or ``""`` for the whole file.
        file: the file that was being read (the spec given on the command line, whose includes may
            have set the keys the problems name); it heads the count (:meth:`heading`). None: the
            problems' own file when they share one.

    ``str(err)`` is one line per problem (``file: key: message``); the CLI prints
    :meth:`heading` above them when there are several, and ``--json`` carries
    :meth:`as_json`'s list.
    """

    def __init__(self, problems: list[tuple[str, str, str]], file: str | None = None):
        self.problems = list(problems)
        files = list(dict.fromkeys(f for f, _, _ in self.problems))
        self.file = file if file is not None else (files[0] if len(files) == 1 else None)
        super().__init__(self.format())

    def format(self) -> str:
        lines = []
        for file, path, msg in self.problems:
            where = f"{file}: {path}: " if path else f"{file}: "
            lines.append(where + msg)
        return "\n".join(lines)

    def heading(self) -> str | None:
        """``spec.toml: 3 problems`` when there are two or more (``3 problems`` when they come from
        several files and no :attr:`file` was given); None for one problem, whose line says it all."""
        n = len(self.problems)
        if n < 2:
            return None
        return f"{self.file}: {n} problems" if self.file else f"{n} problems"

    def as_json(self) -> list[dict[str, str]]:
        """The problems as ``[{"file": …, "key": dotted key path or "", "message": …}]``."""
        return [{"file": f, "key": k, "message": m} for f, k, m in self.problems]


class OverrideError(CodesignError, ValueError):
    """Overrides given to :func:`codesign.evaluation.evaluate` that it does not take: not a dict of
    spec key path -> values, a value that is no number for a numeric key (``"8 TB/s"`` where SI
    ``8e12`` belongs), values of more than one dimension, or arrays of different lengths. The
    caller's input, not the cost model's bug: a ``ValueError`` for a script, and a
    :class:`CodesignError` (exit :attr:`ExitCode.USAGE_ERROR`) for the CLI. ``str(err)`` names the
    override key and what was expected."""


class PluginError(CodesignError):
    """A plugin failed to load, raised, or returned values that break the contract."""


class BugError(CodesignError):
    """A bug in codesign or a plugin, caught and described in one line: not the user's input. The
    CLI prints it as ``internal error:`` with :attr:`hint` and exits with
    :attr:`ExitCode.INTERNAL_ERROR` (a worker process that crashed, say)."""

    hint = "This is a bug in codesign or a plugin, not in your input"


class Interrupted(KeyboardInterrupt):
    """An interrupt (Ctrl-C, SIGTERM) that came with what it left behind: ``str(err)`` is the line
    the CLI prints instead of its usual "interrupted: ..." (exit 130 or 143, as any interrupt).
    ``codesign optimize`` raises it when the interrupt lands while the report is written."""


@contextlib.contextmanager
def interrupted_as(message: str):
    """A stage of a command whose interrupt says what it left behind: a KeyboardInterrupt (Ctrl-C,
    or SIGTERM as :func:`codesign.interrupts.catch` raises it) inside the ``with`` block becomes
    :class:`Interrupted` with ``message``; an :class:`Interrupted` raised inside, which says it of
    its own stage, passes unchanged.

    Example: ``with interrupted_as("interrupted before the search started: nothing was run or
    written; ..."): spec = checked(args)``."""
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(message) from None


class PluginBugError(PluginError, BugError):
    """A plugin raised, or returned values that break the contract: a bug in that plugin, not in
    the user's input (exit :attr:`ExitCode.INTERNAL_ERROR`; a :class:`PluginError` that the user
    can act on, an unknown cost model name or one that declines the spec, stays
    :attr:`ExitCode.USAGE_ERROR`)."""

    hint = "This is a bug in that plugin, not in your input"


#: What a call into plugin code catches, to name the plugin: any exception, and ``SystemExit`` (a
#: plugin's ``sys.exit(5)`` is that plugin's bug, exit 3 with its name, not codesign's exit status:
#: the command exited 5 and said nothing, fresh-user trial of session 27). Never
#: ``KeyboardInterrupt``: Ctrl-C and SIGTERM stay interrupts (:mod:`codesign.interrupts`).
PLUGIN_EXCEPTIONS = (Exception, SystemExit)


def format_value(value) -> str:
    """A TOML value as a message shows it: as the user wrote it in TOML, not as Python's ``repr``.

    ``true``/``false`` for booleans, ``{low = 0, high = 8}`` for tables, ``[1, 2]`` for arrays,
    ``nan``/``inf`` for non-finite floats, a quoted string (``'8 TB/s'``) for strings.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))  # not numpy's "np.float64(2.5)"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _toml_key(key) -> str:
    """``key`` as a TOML key: bare when it may be (``low``), else a basic string
    (``"memory.hbm.bandwidth"``, quotes and backslashes escaped)."""
    import json

    key = str(key)
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def close_name(name, candidates, *, cutoff: float = 0.8) -> str | None:
    """The one of ``candidates`` that ``name`` most likely stands for, for a message's "did you
    mean": one that differs from it in case alone (``'MXFP4'`` for ``'mxfp4'``, ``'Aggregated'``);
    else the closest by :func:`difflib.get_close_matches` (ratio >= ``cutoff``), compared without
    case (``'maximise'``, the British spelling, for ``'maximize'``; ``'NSGA-2'`` for ``'nsga2'``);
    else None, also for a ``name`` that is no string. Every "did you mean" of a name (a key, a
    number format, a metric, a cost model) asks this one. Case-blind: difflib alone compares case,
    so ``moe_weights_format = "MXFP4"`` got no guess (fresh-user trial, session 43)."""
    import difflib

    if not isinstance(name, str):
        return None
    names = [str(c) for c in candidates]
    folded = name.casefold()
    same = [c for c in names if c.casefold() == folded]
    if same:
        return same[0]
    by_fold = {}
    for c in names:
        by_fold.setdefault(c.casefold(), c)
    close = difflib.get_close_matches(folded, list(by_fold), n=1, cutoff=cutoff)
    return by_fold[close[0]] if close else None
