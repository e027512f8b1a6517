"""What only a real NVIDIA GPU can show (marker ``gpu``: skipped, saying why, where there is none;
``pytest -m gpu`` runs these alone; benchmarks/gpu_acceptance.py runs them on a GPU machine): the
CUDA backend's set-up check, a measured and verified kernel, a sticky fault and a hung kernel each
ending only their worker, ``--device auto`` read alike through pycuda and cuda-bindings, the
datasheet peaks of the auto profile above what the GPU is measured to do, gemm configurations that
verify and never run below their bound, and Ctrl-C during a tune. The stand-in of
tests/cuda_standin is no GPU: these are skipped under it."""
import functools
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from beastgen.devices import cuda
from beastgen.devices import load_profile
from beastgen.harness.backends.base import KernelFailure
from beastgen.harness.backends.cuda import CUDABackend
from beastgen.harness.isolate import Isolated
from beastgen.harness.kernel import Launch

from conftest import REPO

pytestmark = pytest.mark.gpu

COPY = ('extern "C" __global__ void copy(const float *a, float *b) {\n'
        '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    b[i] = a[i];\n}\n')
#: writes through a null pointer: an illegal address, a sticky error (the context is dead)
FAULT = ('extern "C" __global__ void copy(const float *a, float *b) {\n'
         '    ((volatile float *)0)[threadIdx.x] = a[0];\n}\n')
#: spins until killed (a volatile read the compiler cannot hoist; never NaN, so never false)
HANG = ('extern "C" __global__ void copy(const float *a, float *b) {\n'
        '    volatile const float *p = a;\n    while (p[0] == p[0]) { }\n    b[0] = p[0];\n}\n')
N = 1024


def copy_launch(source: str = COPY) -> Launch:
    return Launch({}, "cuda", source, "copy", {}, (256,), (N // 256,))


@pytest.fixture
def gpu(tmp_path):
    """An Isolated CUDA runner (a worker process holding GPU 0) with the copy's arguments."""
    runner = Isolated(functools.partial(CUDABackend, 0, str(tmp_path / "cache")), 120.0)
    runner.set_args([np.arange(N, dtype=np.float32), np.zeros(N, np.float32)])
    yield runner
    runner.close()


def test_a_kernel_is_checked_measured_and_read_back(gpu):
    gpu.check_setup()
    result = gpu.measure(copy_launch(), 5, [1], timeout=30)
    assert np.array_equal(result.outputs[1], np.arange(N, dtype=np.float32))
    assert len(result.times) == 5 and all(0 < t < 0.01 for t in result.times), result.times


def test_a_sticky_fault_ends_only_its_worker(gpu):
    gpu.check_setup()
    with pytest.raises(KernelFailure) as fault:
        gpu.measure(copy_launch(FAULT), 3, [1], timeout=30)
    assert fault.value.kind == "launch" and "sticky" in fault.value.message, fault.value.message
    result = gpu.measure(copy_launch(), 3, [1], timeout=30)  # a fresh worker, a fresh context
    assert np.array_equal(result.outputs[1], np.arange(N, dtype=np.float32))
    assert gpu.restarts == 1


def test_a_hung_kernel_is_a_timeout_and_the_next_runs(gpu):
    gpu.check_setup()
    with pytest.raises(KernelFailure) as hung:
        gpu.measure(copy_launch(HANG), 1, [1], timeout=3)
    assert hung.value.kind == "timeout"
    result = gpu.measure(copy_launch(), 3, [1], timeout=60)
    assert np.array_equal(result.outputs[1], np.arange(N, dtype=np.float32))


def test_auto_reads_the_same_gpu_through_pycuda_and_cuda_bindings():
    pytest.importorskip("cuda.bindings", reason="cuda-bindings (cuda-python) is not installed")
    name, get = cuda._pycuda_device()
    other_name, other_get = cuda._cuda_python_device()
    assert name == other_name
    attributes = [*cuda.ATTRIBUTES.values(), "COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR",
                  "CLOCK_RATE", "MEMORY_CLOCK_RATE", "GLOBAL_MEMORY_BUS_WIDTH", "PCI_BUS_ID"]
    assert {a: get(a) for a in attributes} == {a: other_get(a) for a in attributes}
    profile = load_profile("auto")
    assert profile.name == name and profile.properties["sm_count"] == get("MULTIPROCESSOR_COUNT")


def test_the_auto_profile_peaks_are_above_what_the_gpu_is_measured_to_do():
    """The bounds divide by the profile's peaks: each must be at least what the GPU does. calibrate
    writes the fastest repetition x RATE_MARGIN; the measurement itself must stay below the peak."""
    from beastgen.harness.calibrate import RATE_MARGIN, calibrate

    peaks = load_profile("auto").properties
    fields = calibrate("cuda:0", repetitions=3, progress=False).fields
    for field in ("max_clock_mhz", "peak_flops_fp32", "peak_flops_fp64", "dram_bandwidth"):
        measured = fields[field].value / RATE_MARGIN
        # the clock is a ratio of two timers read in one block (clock64 over %globaltimer): 0.5%
        slack = 1.005 if field == "max_clock_mhz" else 1.0
        assert 0 < measured <= peaks[field] * slack, (field, measured, peaks[field], fields[field].source)


def test_gemm_configurations_verify_and_never_run_below_their_bound(tmp_path, generated_dir):
    from beastgen.harness.tuning import tune

    result = tune(os.path.join(REPO, "spaces", "gemm.py"), backend="cuda",
                  settings={"M": 1024, "N": 512, "K": 256}, budget=8,
                  results=str(tmp_path / "gemm.db"), generated_dir=generated_dir, progress=False,
                  log=lambda message: None)
    assert result.ran_now == 8 and "wrong_result" not in result.failures, result.failure_examples
    assert result.evaluated - sum(result.failures.values()) >= 1 and np.isfinite(result.best_time)
    assert result.bound_violations == []


def test_ctrl_c_during_a_tune_stops_it_cleanly(tmp_path):
    results = tmp_path / "gemm.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])}
    tune = subprocess.Popen([sys.executable, "-m", "beastgen", "tune",
                             os.path.join(REPO, "spaces", "gemm.py"), "--backend", "cuda",
                             "--set", "M=1024", "N=1024", "K=1024", "--results", str(results),
                             "--no-progress", "--generated-dir", str(tmp_path / "generated")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=str(tmp_path))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and tune.poll() is None and _rows(results) < 2:
        time.sleep(0.5)
    assert tune.poll() is None, tune.communicate()
    tune.send_signal(signal.SIGINT)
    out, err = tune.communicate(timeout=60)
    assert tune.returncode == 130, err
    assert "context stack" not in err and "Aborted" not in err and "Traceback" not in err, err
    assert _rows(results) >= 2  # what was measured stays recorded


def _rows(results) -> int:
    try:
        with sqlite3.connect(results) as db:
            return db.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0
