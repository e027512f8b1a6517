"""Ctrl-C during compiled work.

Python runs signal handlers only in the main thread, between bytecodes: a compiled nest that runs
for an hour in the main thread ignores Ctrl-C for an hour. The generated nests release the GIL
(``nogil=True``), so they run in a worker thread instead while the main thread waits in short
slices: Ctrl-C raises ``KeyboardInterrupt`` in the main thread within :data:`POLL_SECONDS`. The
worker thread cannot be stopped inside compiled code; it is a daemon thread, and the command line
exits at once (``beastgen.cli.main``). Chunks not started yet are cancelled.

SIGTERM and SIGHUP (a closed terminal) are handled the same way (:class:`Terminated`, a
``KeyboardInterrupt``), so that temporary files (:class:`beastgen.support.output.AtomicOutput`, a C
compile's) are removed, and a running C compiler stopped, on the way out.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading

POLL_SECONDS = 0.1
#: loop iterations a nest may take and still run in the calling thread, with no thread started:
#: at about 3 ns each (the flagship's nest takes 1 to 3.5), the POLL_SECONDS that Ctrl-C waits
#: anyway
SMALL_NEST_ITERATIONS = 1 << 25


def call_interruptibly(function, *args):
    """``function(*args)``; from the main thread, in a daemon thread that Ctrl-C does not wait for."""
    if threading.current_thread() is not threading.main_thread():
        return function(*args)
    outcome = {}

    def target():
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread as is
            outcome["error"] = error

    worker = threading.Thread(target=target, name="beastgen-compiled", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(POLL_SECONDS)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def wait_interruptibly(futures, on_done=None) -> None:
    """Wait for every future in short slices (Ctrl-C cancels those not started and raises);
    ``on_done(future)`` is called as each one finishes."""
    import concurrent.futures  # here: a count in the calling thread never needs it (logging...)

    pending = set(futures)
    try:
        while pending:
            done, pending = concurrent.futures.wait(pending, POLL_SECONDS,
                                                    concurrent.futures.FIRST_COMPLETED)
            for future in done:
                if on_done is not None:
                    on_done(future)
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()
        raise


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``signal``), raised in the main thread like Ctrl-C."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__()
        self.signal = signal.Signals(signum)

    @property
    def exit_status(self) -> int:
        """128 plus the signal's number, as the shell reports a process the signal ended."""
        return 128 + self.signal


def _raise_terminated(signum, frame):
    raise Terminated(signum)


#: signals whose default action ends the process with no clean-up, raised as :class:`Terminated`
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread (each
    where it had its default action, which would end the process with no clean-up)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [s for s in TERMINATING if signal.getsignal(s) is signal.SIG_DFL]
    for signum in taken:
        signal.signal(signum, _raise_terminated)
    try:
        yield
    finally:
        for signum in taken:
            signal.signal(signum, signal.SIG_DFL)


#: signals whose Python handlers raise an interruption: Ctrl-C's and :data:`TERMINATING`
INTERRUPTING = (signal.SIGINT, *TERMINATING)


@contextlib.contextmanager
def interruptions_noted():
    """Within the block, every interruption a signal handler raises (Ctrl-C's KeyboardInterrupt,
    :class:`Terminated`) is noted in the list it yields, then raised as before. A signal while Numba
    compiles may land in one of llvmlite's ctypes callbacks, which swallows the exception and leaves
    Numba failing with an unrelated error; the note tells them apart, and keeps which signal it was.
    The traceback ctypes would print for a swallowed interruption is not printed."""
    noted: list[BaseException] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    previous = {s: signal.getsignal(s) for s in INTERRUPTING}
    previous = {s: handler for s, handler in previous.items() if callable(handler)}

    def note(signum, frame):
        try:
            previous[signum](signum, frame)
        except BaseException as error:
            noted.append(error)
            raise
    unraisable_hook = sys.unraisablehook

    def print_unless_noted(unraisable):
        if not any(unraisable.exc_value is error for error in noted):
            unraisable_hook(unraisable)
    for signum in previous:
        signal.signal(signum, note)
    sys.unraisablehook = print_unless_noted
    try:
        yield noted
    finally:
        sys.unraisablehook = unraisable_hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)
