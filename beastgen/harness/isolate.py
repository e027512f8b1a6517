"""Run a backend in a worker process under a watchdog: a kernel that hangs past its timeout (or
crashes the driver) kills only the worker, which is restarted for the next configuration."""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback

from ..errors import BeastError
from .backends.base import KernelFailure, RunResult

#: seconds a compile may take before it counts as hung
COMPILE_TIMEOUT = 300.0


def die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid`` dies (``kill -9`` of ``tune`` included), even while a
    kernel hangs: Linux sends SIGKILL on the parent's death (``PR_SET_PDEATHSIG``); elsewhere, and
    in case the parent died before that was set, a thread watches for the parent going away."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="beastgen-parent-watch", daemon=True).start()


_PR_SET_PDEATHSIG = 1


def _worker(conn, factory, parent_pid: int) -> None:
    die_with_parent(parent_pid)
    try:
        backend = factory()
    except BaseException as e:  # noqa: BLE001 - report why the device cannot be opened
        conn.send(("fatal", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready", None))
    args = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if message[0] == "args":
            args = message[1]
            continue
        if message[0] == "stop":
            backend.close()
            return
        _, launch, iterations, outputs = message
        try:
            start = time.perf_counter()
            compiled = backend.compile(launch)
            conn.send(("compiled", time.perf_counter() - start))
            result = backend.run(compiled, launch, args, iterations, outputs)
            conn.send(("done", result))
        except KernelFailure as e:
            conn.send(("failure", e.kind, e.message))
        except Exception as e:  # noqa: BLE001 - anything else is a launch failure of this config
            conn.send(("failure", "launch", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"))


class Isolated:
    """``measure(launch, ...)`` in a worker process built by ``factory`` (picklable)."""

    def __init__(self, factory, compile_timeout: float = COMPILE_TIMEOUT):
        self.factory = factory
        self.compile_timeout = compile_timeout
        self.context = multiprocessing.get_context("spawn")
        self.process = None
        self.conn = None
        self.args = None
        self.restarts = 0

    def set_args(self, args: list) -> None:
        self.args = args
        if self.process is not None:
            self.conn.send(("args", args))

    def _start(self) -> None:
        parent, child = self.context.Pipe()
        self.process = self.context.Process(target=_worker, args=(child, self.factory, os.getpid()),
                                            daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        if not parent.poll(120):
            self._kill()
            raise BeastError("the benchmark worker process did not start within 120 s")
        kind, message = self._recv()
        if kind != "ready":
            self._kill()
            raise BeastError(f"the benchmark worker cannot open the device: {message}")
        self.conn.send(("args", self.args))

    def _recv(self):
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return ("crashed", None)

    def _kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join(10)
        self.process = self.conn = None

    def measure(self, launch, iterations: int, outputs: list[int], timeout: float) -> RunResult:
        if self.process is None or not self.process.is_alive():
            if self.process is not None:
                self.restarts += 1
            self._start()
        self.conn.send(("measure", launch, iterations, outputs))
        if not self.conn.poll(self.compile_timeout):
            self._kill()
            raise KernelFailure("timeout", f"compiling took longer than {self.compile_timeout:g} s (killed)")
        reply = self._recv()
        if reply[0] == "compiled":
            compile_seconds = reply[1]
            if not self.conn.poll(timeout):
                self._kill()
                raise KernelFailure("timeout", f"the kernel ran longer than its timeout of {timeout:g} s "
                                               "(the worker was killed)")
            reply = self._recv()
        else:
            compile_seconds = 0.0
        if reply[0] == "done":
            reply[1].compile_seconds = compile_seconds
            return reply[1]
        if reply[0] == "failure":
            raise KernelFailure(reply[1], reply[2])
        code = self.process.exitcode if self.process else None
        self._kill()
        raise KernelFailure("launch", f"the kernel crashed the benchmark worker (exit code {code})")

    def close(self) -> None:
        if self.process is not None and self.process.is_alive():
            try:
                self.conn.send(("stop",))
                self.process.join(5)
            except OSError:
                pass
        self._kill()
