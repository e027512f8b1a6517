"""Progress on stderr for long commands, with tqdm as ``tune`` uses it.

Shown only when stderr is a terminal and the work has run for :data:`DELAY_SECONDS` (a short
command prints nothing more); never when the caller disables it (``--json``, ``--no-progress``).
:class:`ShareBar` follows work that reports the share done; :class:`Elapsed` shows the time spent
on work that cannot (one compiled call), ticking from a thread while the call releases the GIL.
"""
from __future__ import annotations

import sys
import threading

DELAY_SECONDS = 1.0
TICK_SECONDS = 0.5


def _on_terminal() -> bool:
    return hasattr(sys.stderr, "isatty") and sys.stderr.isatty()


class ShareBar:
    """``with ShareBar("counting", enabled) as bar:`` pass ``bar`` as ``progress(done, seconds)``
    (``done`` the share of the work finished, 0 to 1)."""

    def __init__(self, description: str, enabled: bool = True):
        self.bar = None
        if enabled and _on_terminal():
            from tqdm import tqdm
            self.bar = tqdm(total=100, desc=description, unit="%", file=sys.stderr, leave=False,
                            delay=DELAY_SECONDS, dynamic_ncols=True,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")

    def __call__(self, done: float, seconds: float) -> None:
        if self.bar is not None:
            self.bar.update(max(0.0, 100.0 * done - self.bar.n))

    def write(self, message: str) -> None:
        """A message on stderr that does not break the bar."""
        if self.bar is not None:
            self.bar.write(message, file=sys.stderr)
        else:
            print(message, file=sys.stderr, flush=True)

    def __enter__(self) -> "ShareBar":
        return self

    def __exit__(self, *exc) -> bool:
        if self.bar is not None:
            self.bar.close()
        return False


class Elapsed:
    """``with Elapsed("estimating", enabled):`` a line ``estimating: 12s`` after the first second,
    updated twice a second, removed at the end."""

    def __init__(self, description: str, enabled: bool = True):
        self.description = description
        self.enabled = enabled and _on_terminal()
        self.finished = threading.Event()
        self.thread = None

    def _tick(self) -> None:
        if self.finished.wait(DELAY_SECONDS):
            return
        from tqdm import tqdm
        bar = tqdm(total=None, desc=self.description, file=sys.stderr, leave=False,
                   bar_format="{desc}: {elapsed}", delay=DELAY_SECONDS)
        bar.start_t -= DELAY_SECONDS  # the time already spent
        try:
            bar.refresh()
            while not self.finished.wait(TICK_SECONDS):
                bar.refresh()
        finally:
            bar.close()

    def __enter__(self) -> "Elapsed":
        if self.enabled:
            self.thread = threading.Thread(target=self._tick, name="beastgen-progress", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.finished.set()
        if self.thread is not None:
            self.thread.join()
        return False
