"""Run a backend in a worker process under a watchdog: a kernel that hangs past its timeout (or
crashes the driver) kills only the worker, which is restarted for the next configuration; a failure
that leaves the device unusable (``DeviceLost``: a sticky CUDA error) is recorded as what it was and
ends the worker the same way. ``check_setup`` runs the backend's set-up check before the first
configuration."""
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
from .backends.base import KernelFailure, Runner, RunResult

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


class DeviceLost(KernelFailure):
    """A configuration's failure after which the backend's device is unusable in this process (a
    sticky CUDA error: illegal address, launch failure, device assert, watchdog timeout). Raised by
    a backend's ``compile`` or ``run``: the failure is recorded as what it was, and the worker ends,
    so that the next configuration gets a fresh one."""


class DaemonicProcess(BeastError):
    """An :class:`Isolated` runner made in a daemonic process, which may not start the worker
    process (``multiprocessing`` forbids a daemon children)."""


def _worker(conn, factory, parent_pid: int) -> None:
    """Serve ``measure`` / ``check`` / ``args`` / ``stop`` messages with one backend. The worker
    leads its own process group (nvcc and its children join it, and Ctrl-C at the terminal reaches
    only ``tune``, which stops the worker), closes the backend on every way out (a CUDA context
    left on pycuda's stack aborts the process) and ends with ``os._exit``."""
    if hasattr(os, "setpgrp"):
        os.setpgrp()
    die_with_parent(parent_pid)
    backend = None
    try:
        try:
            backend = factory()
        except BaseException as e:  # noqa: BLE001 - report why the device cannot be opened
            conn.send(("fatal", str(e) if isinstance(e, BeastError) else f"{type(e).__name__}: {e}"))
            return
        conn.send(("ready", None))
        _serve(conn, backend)
    except (EOFError, OSError, KeyboardInterrupt):
        pass
    finally:
        if backend is not None:
            try:
                backend.close()
            except Exception:  # noqa: BLE001 - a lost device may refuse; the process ends anyway
                pass
        os._exit(0)


def _serve(conn, backend) -> None:
    """The worker's loop; returns on ``stop`` or after a DeviceLost failure."""
    args = None
    while True:
        message = conn.recv()
        if message[0] == "args":
            args = message[1]
            continue
        if message[0] == "stop":
            return
        if message[0] == "check":
            try:
                check = getattr(backend, "check_setup", None)
                if check is not None:
                    check()
                conn.send(("checked", None))
            except BeastError as e:
                conn.send(("fatal", str(e)))
            except Exception as e:  # noqa: BLE001 - the driver's own error: the set-up is wanting
                conn.send(("fatal", f"the set-up check failed: {type(e).__name__}: {e}"))
            continue
        _, launch, iterations, outputs = message
        try:
            start = time.perf_counter()
            compiled = backend.compile(launch)
            compiled_at = time.perf_counter()
            conn.send(("compiled", compiled_at - start, backend.compiles_at_first_launch))
            backend.first_launch_started = lambda: conn.send(("started", time.perf_counter() - compiled_at))
            result = backend.run(compiled, launch, args, iterations, outputs)
            conn.send(("done", result))
        except DeviceLost as e:
            conn.send(("failure", e.kind, e.message, True))
            return
        except KernelFailure as e:
            conn.send(("failure", e.kind, e.message, False))
        except BeastError as e:  # the set-up, found wanting at the first compile
            conn.send(("fatal", str(e)))
        except Exception as e:  # noqa: BLE001 - anything else is a launch failure of this config
            conn.send(("failure", "launch", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}",
                       False))


class Isolated(Runner):
    """A live backend's :class:`~.backends.base.Runner`: ``measure(launch, ...)`` compiles and runs
    in a worker process whose backend ``factory`` (picklable) builds, under the watchdog; made in a
    daemonic process, which could not start that worker, it raises :class:`DaemonicProcess`."""

    def __init__(self, factory, compile_timeout: float = COMPILE_TIMEOUT):
        if multiprocessing.current_process().daemon:
            raise DaemonicProcess(f"process {os.getpid()} on {os.uname().nodename} is daemonic, so it "
                                  "cannot start the worker process that runs the kernels under the "
                                  "watchdog")
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

    def check_setup(self) -> None:
        """Start the worker and have its backend check the set-up (``Backend.check_setup``: for
        CUDA, compile, load and run a trivial kernel); BeastError, the worker stopped, if it fails."""
        if self.process is None:
            self._start()
        self.conn.send(("check",))
        if not self.conn.poll(self.compile_timeout):
            self._kill()
            raise BeastError(f"the set-up check (a trivial kernel) took longer than "
                             f"{self.compile_timeout:g} s")
        kind, message = self._recv()[:2]
        if kind != "checked":
            self._kill()
            raise BeastError(message if kind == "fatal" else "the benchmark worker crashed while "
                             "checking the set-up (a trivial kernel)")

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
            raise BeastError(message if kind == "fatal" else "the benchmark worker crashed while "
                             "opening the device")
        self.conn.send(("args", self.args))

    def _recv(self):
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return ("crashed", None)

    def _kill(self) -> None:
        """Kill the worker's process group (nvcc and its children with it), then reap it."""
        if self.process is not None:
            if hasattr(os, "killpg") and self.process.pid:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
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
        reply, compile_seconds = self._recv(), 0.0
        if reply[0] == "compiled":
            compile_seconds, first_launch_compiles = reply[1:3]
            if first_launch_compiles:  # the run's timeout starts once the driver has compiled
                if not self.conn.poll(self.compile_timeout):
                    self._kill()
                    raise KernelFailure("timeout", "the driver's compile at the first launch took longer "
                                                   f"than {self.compile_timeout:g} s (killed)")
                reply = self._recv()
                if reply[0] == "started":
                    compile_seconds += reply[1]
            if reply[0] in ("compiled", "started"):
                if not self.conn.poll(timeout):
                    self._kill()
                    raise KernelFailure("timeout", f"the kernel ran longer than its timeout of {timeout:g} s "
                                                   "(the worker was killed)")
                reply = self._recv()
        if reply[0] == "done":
            reply[1].compile_seconds = compile_seconds
            return reply[1]
        if reply[0] == "failure":
            _, kind, message, lost = reply
            if lost:  # the worker ends; the next configuration starts a fresh one
                self.process.join(10)
            raise KernelFailure(kind, message)
        if reply[0] == "fatal":
            self._kill()
            raise BeastError(reply[1])
        code = self.process.exitcode if self.process else None
        self._kill()
        raise KernelFailure("launch", f"the kernel crashed the benchmark worker (exit code {code})")

    def close(self) -> None:
        """Stop the worker (it closes its backend); kill it if it does not end within 5 s (a
        kernel still running after Ctrl-C)."""
        if self.process is not None and self.process.is_alive():
            try:
                self.conn.send(("stop",))
                self.process.join(5)
            except OSError:
                pass
        self._kill()
