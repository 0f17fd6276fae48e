"""Ctrl-C (SIGINT) and SIGTERM as KeyboardInterrupt, held off while a study storage write is half done.

:func:`catch` makes both signals raise KeyboardInterrupt, so every ``except KeyboardInterrupt``
clean-up (a search batch given back, ``--workers`` stopped, the "interrupted" line) runs for
either. The CLI installs it for every command, and each ``--workers`` process for itself.

Optuna's journal file lock (``JournalFileSymlinkLock``) is not safe against a KeyboardInterrupt
raised inside it: one that lands in ``release`` before its ``os.rename`` makes the lock's own
clean-up ``os.unlink`` a file that does not exist, so the interrupt turned into an internal
``FileNotFoundError`` (exit 3, not 143) and the lock symlink was left behind for the next run to
wait out (seen in CI: ``test_sigterm_mid_run_exits_143_keeps_the_trials_and_resumes``). While a
section is held (:func:`held`: the journal lock, a trial being asked), the handler keeps the
signal and it is raised again as soon as the section ends: after the storage write, before the
storage call returns, so a clean-up reads the storage again instead of trusting what the
interrupted call would have returned. A signal that arrives while a garbage-collection callback
runs (JAX's ``_xla_gc_callback``) or a weakref callback, where Python prints "Exception ignored"
and drops the KeyboardInterrupt, is sent to the main thread again :data:`REDELIVER_S` later
instead (:func:`_unraisable`). Python runs signal handlers on the main thread only; sections are
counted process-wide (the search writes its storage from the main thread).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

_depth = 0
_pending: int | None = None
_armed = None  # the latest catch()'s "re-deliver a swallowed interrupt" function, for _unraisable
_previous_hook = sys.unraisablehook

#: Seconds after which an interrupt that Python swallowed (see :func:`_unraisable`) is raised again.
REDELIVER_S = 0.05


def hold() -> None:
    """Start a section a signal must not break (nested sections count)."""
    global _depth
    _depth += 1


def resume() -> None:
    """End a section begun by :func:`hold`; at the outermost, a signal kept meanwhile is raised
    again, so its handler runs now, outside the section.

    Raises:
        RuntimeError: no section is held (a ``resume`` without its ``hold``).
    """
    global _depth, _pending
    if _depth <= 0:
        raise RuntimeError("interrupts.resume() without interrupts.hold()")
    _depth -= 1
    if _depth == 0 and _pending is not None:
        signum, _pending = _pending, None
        _send_to_main(signum)


@contextlib.contextmanager
def held():
    """A section a signal must not break: ``with held(): ...`` (see :func:`hold`)."""
    hold()
    try:
        yield
    finally:
        resume()


def _send_to_main(signum: int) -> None:
    """Signal the main thread (whose Python handler runs at once when this is the main thread; a
    signal raised from another thread would wait for the main thread's next bytecode, which a
    blocking call such as ``time.sleep`` or ``Process.join`` delays)."""
    main = threading.main_thread()
    if threading.current_thread() is main:
        signal.raise_signal(signum)
    else:
        signal.pthread_kill(main.ident, signum)


def defer(signum: int) -> bool:
    """For a signal handler: True when a section is held, and the signal is kept for
    :func:`resume` (the first only: one interrupt is enough)."""
    global _pending
    if _depth:
        if _pending is None:
            _pending = signum
        return True
    return False


def _unraisable(unraisable) -> None:
    """``sys.unraisablehook`` while :func:`catch` is armed: a KeyboardInterrupt of ours that Python
    swallowed (raised inside a gc callback such as JAX's ``_xla_gc_callback``, a weakref callback or
    a ``__del__``: "Exception ignored in ...") is sent to the main thread again
    :data:`REDELIVER_S` later, so the command stops instead of running on to its end. Anything
    else goes to the hook that was there before."""
    owe = _armed
    if owe is not None and isinstance(unraisable.exc_value, KeyboardInterrupt) and owe():
        return
    _previous_hook(unraisable)


def catch(seen: list) -> dict:
    """Make SIGINT and SIGTERM raise KeyboardInterrupt (held off inside a held section), each
    noted in ``seen`` (its signal number): one raised inside a callback that Python swallows
    anyway (a weakref finaliser) still shows there, and the CLI then exits as interrupted instead
    of 0. Only the first signal raises: a second one (a double kill, Ctrl-C twice) must not break
    the clean-up the first one started. Appending ``0`` to ``seen`` disarms the handler (the
    command is done). Returns ``{signal: previous handler}`` for the handlers it
    set: none when this is not the main thread, where no handler can be set, and none for a signal
    that is ignored (a command started under ``nohup`` or with ``&`` from a script inherits SIGINT
    as SIG_IGN and must not become interruptible; likewise a SIGTERM ignored by whoever started it)."""
    global _depth, _pending, _armed, _previous_hook
    if threading.current_thread() is not threading.main_thread():
        return {}
    _depth, _pending = 0, None  # a section an earlier command in this process left open (a test)
    raised: list[int] = []
    owed: list[int] = []  # a swallowed interrupt whose re-delivery is on its way

    def owe() -> bool:
        """The raised interrupt was swallowed: raise it again soon (True), unless disarmed.
        ``raised`` stays set until the re-delivery, so a signal that lands meanwhile (here, while
        the timer thread starts, inside ``sys.unraisablehook``, where a raise is printed as
        "Exception ignored in sys.unraisablehook" and lost; seen in CI with Ctrl-C to a
        ``--workers`` group) counts as a second one and is only noted."""
        if not raised or 0 in seen:
            return False
        if owed:
            return True
        owed.append(raised[-1])

        def again():
            signum = owed.pop()
            raised.clear()  # the re-delivered signal raises again
            if signal.getsignal(signum) is on_signal and 0 not in seen:  # not once the command is done
                _send_to_main(signum)

        threading.Timer(REDELIVER_S, again).start()
        return True

    def on_signal(signum, frame):
        if defer(signum):  # inside a study storage write: raised again once it is done
            return
        if not seen:
            seen.append(signum)  # noted first: the CLI exits as interrupted even if the raise is lost
        elif raised or 0 in seen:  # raised already (a second signal must not break its clean-up) or disarmed
            seen.append(signum)
            return
        raised.append(signum)
        raise KeyboardInterrupt

    _armed = owe
    if sys.unraisablehook is not _unraisable:
        _previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is signal.SIG_IGN:
            continue
        try:
            previous[signum] = signal.signal(signum, on_signal)
        except (ValueError, OSError):  # pragma: no cover - no signals here
            pass
    return previous
