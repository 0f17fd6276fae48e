"""Holding off Ctrl-C and SIGTERM while a study storage write is half done.

Optuna's journal file lock (``JournalFileSymlinkLock``) is not safe against a KeyboardInterrupt
raised inside it: one that lands in ``release`` before its ``os.rename`` makes the lock's own
clean-up ``os.unlink`` a file that does not exist, so the interrupt turned into an internal
``FileNotFoundError`` (exit 3, not 143) and the lock symlink was left behind for the next run to
wait out (seen in CI: ``test_sigterm_mid_run_exits_143_keeps_the_trials_and_resumes``).

A signal handler that interrupts (the CLI's) asks :func:`defer` first; while a storage write
holds the lock (:func:`hold` ... :func:`resume`), the signal is kept and raised again as soon as
the lock is released, so the interrupt lands between storage writes, where every
``except KeyboardInterrupt`` clean-up expects it. Signals are handled on the main thread only,
which is the thread that writes the study storage.
"""

from __future__ import annotations

import signal

_depth = 0
_pending: int | None = None


def hold() -> None:
    """Start a section a signal must not break (nested sections count)."""
    global _depth
    _depth += 1


def resume() -> None:
    """End a section begun by :func:`hold`; at the outermost, a signal kept meanwhile is raised
    again (``signal.raise_signal``), so its handler runs now, outside the section."""
    global _depth, _pending
    _depth = max(_depth - 1, 0)
    if _depth == 0 and _pending is not None:
        signum, _pending = _pending, None
        signal.raise_signal(signum)


def defer(signum: int) -> bool:
    """For a signal handler: True when a section is held, and the signal is kept for
    :func:`resume` (the first only: one interrupt is enough)."""
    global _pending
    if _depth:
        if _pending is None:
            _pending = signum
        return True
    return False
