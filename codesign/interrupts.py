"""Ctrl-C (SIGINT) and SIGTERM as KeyboardInterrupt, held off while a study storage write is half done.

:func:`catch` makes both signals raise KeyboardInterrupt, so every ``except KeyboardInterrupt``
clean-up (a search batch given back, ``--workers`` stopped, the "interrupted" line) runs for
either. The CLI installs it for every command, and each ``--workers`` process for itself.

Optuna's journal file lock (``JournalFileSymlinkLock``) is not safe against a KeyboardInterrupt
raised inside it: one that lands in ``release`` before its ``os.rename`` makes the lock's own
clean-up ``os.unlink`` a file that does not exist, so the interrupt turned into an internal
``FileNotFoundError`` (exit 3, not 143) and the lock symlink was left behind for the next run to
wait out (seen in CI: ``test_sigterm_mid_run_exits_143_keeps_the_trials_and_resumes``). While a
section is held (:func:`hold` ... :func:`resume`: the journal lock, a trial being asked), the
handler keeps the signal and it is raised again as soon as the section ends, between storage
writes, where the clean-ups expect it. A signal that arrives while a garbage-collection callback
runs (JAX's ``_xla_gc_callback``), where Python would print "Exception ignored" and drop the
KeyboardInterrupt, is raised again a moment later instead. Python runs signal handlers on the main
thread only; the sections are counted process-wide.
"""

from __future__ import annotations

import signal

_depth = 0
_pending: int | None = None

#: Seconds after which a signal that arrived inside a garbage-collection callback is raised again.
REDELIVER_S = 0.05


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


def _in_gc_callback(frame) -> bool:
    """Whether ``frame`` runs inside one of ``gc.callbacks``, where an exception is swallowed."""
    import gc

    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks} - {None}
    while codes and frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def catch(seen: list) -> dict:
    """Make SIGINT and SIGTERM raise KeyboardInterrupt (held off inside a held section), each
    noted in ``seen`` (its signal number): one raised inside a callback that Python swallows
    anyway (a weakref finaliser) still shows there, and the CLI then exits as interrupted instead
    of 0. Only the first signal raises: a second one (a double kill, Ctrl-C twice) must not break
    the clean-up the first one started. Returns ``{signal: previous handler}`` for the handlers it
    set: none when this is not the main thread, where no handler can be set, and none for a signal
    that is ignored (a command started under ``nohup`` or with ``&`` from a script inherits SIGINT
    as SIG_IGN and must not become interruptible; likewise a SIGTERM ignored by whoever started it)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def on_signal(signum, frame):
        if defer(signum):  # inside a study storage write: raised again once it is done
            return
        if _in_gc_callback(frame):  # the KeyboardInterrupt would be swallowed: raise it again soon
            def again():
                if signal.getsignal(signum) is on_signal:  # not once the command has put its handler back
                    signal.raise_signal(signum)

            threading.Timer(REDELIVER_S, again).start()
            return
        seen.append(signum)
        if len(seen) == 1:
            raise KeyboardInterrupt

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is signal.SIG_IGN:
            continue
        try:
            previous[signum] = signal.signal(signum, on_signal)
        except (ValueError, OSError):  # pragma: no cover - no signals here
            pass
    return previous
