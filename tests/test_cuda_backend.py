"""The CUDA backend's control flow, driven through a STAND-IN of ``pycuda.driver``
(tests/cuda_standin: not pycuda) with real nvcc compiles: the set-up check, a good run, a sticky
fault, a hang, out of memory, a missing nvcc, an unsupported or a newer architecture, a driver that
rejects the toolkit's images, Ctrl-C. They test the failure paths; they are no evidence that a run
on a GPU works (none was lent to these tests)."""
import functools
import glob
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

from beastgen.errors import BeastError
from beastgen.harness.backends.base import Backend, KernelFailure, RunResult
from beastgen.harness.backends.cuda import CUDABackend
from beastgen.harness.isolate import Isolated
from beastgen.harness.kernel import Launch

from conftest import PATIENCE_SECONDS, REPO

STANDIN = os.path.join(REPO, "tests", "cuda_standin")

pytestmark = pytest.mark.skipif(
    subprocess.run(["which", "nvcc"], capture_output=True).returncode != 0,
    reason="nvcc (the CUDA toolkit) is not on PATH: the stand-in imitates the driver, not nvcc")

GOOD = 'extern "C" __global__ void copy(float *a, float *b) { b[threadIdx.x] = a[threadIdx.x]; }\n'


def kernel(marker: str | None = None, source: str = GOOD) -> Launch:
    marked = f"__device__ int {marker};\n" if marker else ""
    return Launch({"marker": marker}, "cuda", marked + source, "copy", {}, (32,), (1,))


@pytest.fixture
def standin(monkeypatch, tmp_path):
    """The stand-in first on sys.path (the spawned worker inherits it), a log of driver events, a
    compile cache of this test's own; the stand-in forgotten afterwards."""
    monkeypatch.syspath_prepend(STANDIN)
    log = tmp_path / "driver.log"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    for name in ("STANDIN_NO_DRIVER", "STANDIN_CC", "STANDIN_MEMORY", "STANDIN_REJECT_IMAGES"):
        monkeypatch.delenv(name, raising=False)
    runners = []

    def isolated(compile_timeout=60.0):
        runner = Isolated(functools.partial(CUDABackend, 0, str(tmp_path / "cache")), compile_timeout)
        runner.set_args([np.arange(32, dtype=np.float32), np.zeros(32, np.float32)])
        runners.append(runner)
        return runner

    isolated.events = lambda: log.read_text().splitlines() if log.exists() else []
    yield isolated
    for runner in runners:
        runner.close()
    for name in ("pycuda.driver", "pycuda"):
        sys.modules.pop(name, None)


def events(standin, what: str) -> list[str]:
    return [line for line in standin.events() if line.split(" ", 1)[1].startswith(what)]


def test_good_run_measures_and_reads_back(standin):
    runner = standin()
    runner.check_setup()
    result = runner.measure(kernel(), 3, [1], timeout=10)
    assert result.times == [0.5e-3] * 3
    assert np.array_equal(result.outputs[1], np.zeros(32, np.float32))  # the stand-in runs nothing
    assert events(standin, "load cubin") and events(standin, "launch copy")


def test_sticky_fault_is_a_launch_failure_and_the_next_configuration_gets_a_fresh_worker(standin):
    runner = standin()
    with pytest.raises(KernelFailure) as failure:
        runner.measure(kernel("STANDIN_FAULT"), 3, [1], timeout=10)
    assert failure.value.kind == "launch" and "illegal memory access" in failure.value.message
    assert "sticky" in failure.value.message
    result = runner.measure(kernel(), 3, [1], timeout=10)  # not a false "compile" failure
    assert result.times and runner.restarts == 1
    contexts = events(standin, "context")
    assert len(contexts) == 2 and contexts[0].split()[0] != contexts[1].split()[0]


def test_hang_is_a_timeout_and_the_worker_is_replaced(standin):
    runner = standin()
    runner.check_setup()
    hung = runner.process.pid
    with pytest.raises(KernelFailure) as failure:
        runner.measure(kernel("STANDIN_HANG"), 3, [1], timeout=1.0)
    assert failure.value.kind == "timeout"
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)
    assert runner.measure(kernel(), 2, [1], timeout=10).times


def test_out_of_memory_is_one_clear_launch_failure(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_MEMORY", "200")  # the set-up check's 128 bytes fit, the arguments not
    runner = standin()
    runner.check_setup()
    with pytest.raises(KernelFailure) as failure:
        runner.measure(kernel(), 3, [1], timeout=10)
    assert failure.value.kind == "launch" and "out of GPU memory" in failure.value.message
    assert "Traceback" not in failure.value.message


def test_missing_nvcc_is_a_set_up_error(standin, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BeastError, match="the cuda backend needs nvcc"):
        standin().check_setup()


def test_architecture_older_than_the_toolkit_is_a_set_up_error(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_CC", "5.0")  # older than any CUDA 12/13 nvcc
    with pytest.raises(BeastError, match="GPU is sm_50"):
        standin().check_setup()


def test_gpu_newer_than_the_toolkit_gets_ptx(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_CC", "15.0")
    runner = standin()
    runner.check_setup()
    assert runner.measure(kernel(), 1, [1], timeout=10).times
    assert events(standin, "load ptx") and not events(standin, "load cubin")


def test_driver_rejecting_the_toolkit_is_a_set_up_error(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_REJECT_IMAGES", "1")
    with pytest.raises(BeastError, match="driver .* cannot load or run a trivial kernel"):
        standin().check_setup()


def test_no_driver_is_a_set_up_error(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_NO_DRIVER", "1")
    with pytest.raises(BeastError, match="no usable GPU 0 .*no CUDA-capable device"):
        standin().check_setup()


def test_compile_failure_keeps_nvccs_reason_and_no_temporary_directory(standin):
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "beastgen-nvcc-*")))
    runner = standin()
    with pytest.raises(KernelFailure) as failure:
        runner.measure(kernel(source=GOOD.replace("b[threadIdx.x]", "undefined_thing")), 1, [1], 10)
    assert failure.value.kind == "compile" and "undefined_thing" in failure.value.message
    assert "is undefined" in failure.value.message
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "beastgen-nvcc-*"))) <= before


def test_cpp_headers_compile_and_a_mangled_kernel_is_named(standin):
    runner = standin()
    with_header = "#include <cuda_fp16.h>\n" + GOOD  # needs C++: no extern "C" { } around the source
    assert runner.measure(kernel(source=with_header), 1, [1], timeout=10).times
    with pytest.raises(KernelFailure, match='declare it extern "C"'):
        runner.measure(kernel(source=GOOD.replace('extern "C" ', "")), 1, [1], timeout=10)


def test_ctrl_c_stops_the_worker_cleanly(standin):
    """Ctrl-C while the kernel runs (the driver has logged the slow kernel's start: an event, not a
    delay, so that a slow compile on a busy machine cannot come first)."""
    runner = standin()
    runner.check_setup()
    worker = runner.process

    def interrupt_once_the_kernel_runs():
        while not events(standin, "slow"):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_the_kernel_runs, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        runner.measure(kernel("STANDIN_SLOW"), 1, [1], timeout=600)
    runner.close()  # what tune's `finally` does: the worker ends its run, pops its context, exits
    assert worker.exitcode == 0 and events(standin, "pop")


def test_interrupt_reaching_the_worker_pops_its_context(standin):
    runner = standin()
    runner.check_setup()
    worker = runner.process
    os.kill(worker.pid, signal.SIGINT)
    worker.join(PATIENCE_SECONDS)
    assert worker.exitcode == 0 and events(standin, "pop")


class SleepyCompiler(Backend):
    """A backend whose compile starts a child process and never returns (a hung nvcc)."""

    def __init__(self, pid_file: str):
        self.pid_file = pid_file

    def device_profile(self):
        return None

    def compile(self, launch):
        child = subprocess.Popen(["sleep", "600"])
        with open(self.pid_file, "w") as f:
            f.write(str(child.pid))
        time.sleep(600)

    def run(self, compiled, launch, args, iterations, outputs) -> RunResult:
        raise AssertionError("never reached")


def test_compile_timeout_kills_the_compilers_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    runner = Isolated(functools.partial(SleepyCompiler, str(pid_file)), compile_timeout=2.0)
    try:
        with pytest.raises(KernelFailure, match="compiling took longer"):
            runner.measure(kernel(), 1, [], timeout=10)
    finally:
        runner.close()
    child = int(pid_file.read_text())
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not _ended(child):
        assert time.monotonic() < deadline, f"the compiler's child {child} survived the compile timeout"
        time.sleep(0.1)


def _ended(pid: int) -> bool:
    """The process is gone, or a zombie (killed, not yet reaped by init)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:  # reaped since; or no /proc, and kill found it alive
        return os.path.isdir("/proc")


def test_cuda_calibrate_runner_writes_a_complete_profile(standin, monkeypatch, tmp_path):
    """The CUDA runner end to end on the stand-in (its times are made up: only the flow and the
    profile's completeness are tested, no number)."""
    from beastgen.devices.profiles import DERIVED_PEAKS, KNOWN_PROPERTIES
    from beastgen.harness.calibrate import calibrate, write_profile

    monkeypatch.setenv("PATH", os.path.join(STANDIN, "bin") + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    profile = write_profile(calibrate("cuda:0", repetitions=1, progress=False), str(tmp_path / "a.toml"))
    assert set(profile.properties) == KNOWN_PROPERTIES | {"calibrated_device"}
    assert profile.get("max_clock_mhz") == pytest.approx(2100 * 1.25)  # stand-in clock x RATE_MARGIN
    assert all(profile.get(peak) > 0 or peak == "peak_flops_tensor_tf32" for peak in DERIVED_PEAKS)
    assert events(standin, "pop")


def test_pycuda_that_does_not_import_is_not_called_missing(standin, monkeypatch):
    """A pycuda built against another CUDA fails to import its driver module: said as such."""
    from beastgen.harness.backends.cuda import import_pycuda

    monkeypatch.setitem(sys.modules, "pycuda.driver", None)  # the import of pycuda.driver fails
    with pytest.raises(BeastError, match=r"pycuda is installed but does not import .*pycuda>=2025\.1\.2"):
        import_pycuda()


def test_the_acceptance_scripts_kernel_tuner_step_says_what_is_missing():
    """benchmarks/gpu_acceptance.py's kernel_tuner step skips with one line where Kernel Tuner or
    beastgen's strategy for it is not installed (exit status 3 of its probe), and runs where both are."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_acceptance", os.path.join(REPO, "benchmarks", "gpu_acceptance.py"))
    acceptance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(acceptance)

    def probe(hidden: str):
        hide = f"import sys; sys.modules[{hidden!r}] = None\n" if hidden else ""  # import raises then
        return subprocess.run([sys.executable, "-c", hide + acceptance.KERNEL_TUNER_PROBE],
                              capture_output=True, text=True, cwd=REPO,
                              timeout=PATIENCE_SECONDS)

    absent = probe("kernel_tuner")
    assert absent.returncode == 3 and absent.stdout.strip() == (
        "Kernel Tuner is not installed (its wheel is not in .whl/)")
    assert "Traceback" not in absent.stderr
    try:
        import kernel_tuner  # noqa: F401
    except ImportError:
        return  # the strategy's own line needs Kernel Tuner importable
    no_strategy = probe("beastgen.kernel_tuner")
    assert no_strategy.returncode == 3 and "beastgen.kernel_tuner" in no_strategy.stdout
    both = probe("")
    assert both.returncode == (0 if importlib.util.find_spec("beastgen.kernel_tuner") else 3)
