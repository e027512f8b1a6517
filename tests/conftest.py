"""Shared fixtures: compiled plans are shared across tests (Numba compilation adds up)."""
import contextlib
import functools
import os
import platform
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

import beastgen
import property_sizes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
REPLAY = os.path.join(DATA, "replay", "gemm_clblast_rtx_titan.json.gz")
REFERENCE_DIR = os.path.join(DATA, "reference-spaces")
#: how long a test waits for an event (a command's first result, its exit) before it calls the wait
#: a hang: seconds on a quiet machine, many minutes where other work keeps both cores busy
PATIENCE_SECONDS = 1800


@pytest.fixture(scope="session")
def generated_dir(_generated_code_outside_the_repository):
    """The session's generated directory, the one commands and plans default to in the tests
    ($BEASTGEN_GENERATED_DIR): a plan compiled by one test serves the others, whichever way they ask."""
    return _generated_code_outside_the_repository


@pytest.fixture(scope="session")
def gemm_space():
    return beastgen.load(os.path.join(REPO, "spaces", "gemm.py"))


@pytest.fixture(scope="session")
def gemm_h100(gemm_space, generated_dir):
    return gemm_space.specialize(device="h100", generated_dir=generated_dir)


@pytest.fixture
def write_space(tmp_path):
    """Write a space file from (dedented) text; returns its path."""
    def write(text, name="space.py"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)
    return write


@pytest.fixture
def store_held_elsewhere():
    """``with store_held_elsewhere(path) as pid:``: another process (``pid``) holds the results store
    at ``path`` open, its lock taken, while the body runs; killed after it."""
    @contextlib.contextmanager
    def held(path: str):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        holder = subprocess.Popen([sys.executable, "-c", "import time\n"
                                   "from beastgen.harness.store import Store\n"
                                   f"s = Store({path!r}); print('open', flush=True); time.sleep(300)"],
                                  env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "open"
            yield holder.pid
        finally:
            holder.kill()
            holder.wait()
    return held


@pytest.fixture(autouse=True, scope="session")
def _generated_code_outside_the_repository(tmp_path_factory):
    """Tests never write into the repository's own generated/ (checked by test_generated.py).
    pytest-xdist's workers share one (in the run's temporary directory, above each worker's own), so
    a plan that one worker compiled, and Numba's cache of it, serve the others."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        directory = tmp_path_factory.getbasetemp().parent / "generated-default"
        directory.mkdir(mode=0o700, exist_ok=True)  # private, as beastgen.support.generated_dir asks
    else:
        directory = tmp_path_factory.mktemp("generated-default")
    os.environ["BEASTGEN_GENERATED_DIR"] = str(directory)
    return os.environ["BEASTGEN_GENERATED_DIR"]


@pytest.fixture(scope="module")
def compiled_nests_only():
    """For a module that checks the compiled nests (C and Numba): the NumPy path, which would
    otherwise count a small nest with no C library, is off (it is checked in test_vectorised.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEASTGEN_VECTORISED", "0")
        yield


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_delivered():
    """Ctrl-C raises KeyboardInterrupt in the tests and in the commands and workers they start, and
    SIGHUP has its default action there (the SIGHUP tests), even where the suite was started with
    them ignored (in the background of a shell: ``nohup ... &``;
    an ignored signal stays ignored across exec, a handled one is reset to the default)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    hangup = signal.signal(signal.SIGHUP, signal.SIG_DFL)  # nohup ignores it; beastgen then keeps it ignored
    yield
    signal.signal(signal.SIGINT, previous)
    signal.signal(signal.SIGHUP, hangup)


@pytest.hookimpl(hookwrapper=True)
def pytest_cmdline_main(config):
    """With pytest-xdist (beastgen[dev]) the suite runs on every core unless ``-n`` says otherwise
    (``-n 0``: one process): ``-n logical --dist worksteal``, a worker that is done taking tests queued
    on another, so that the few long tests leave no core idle at the end. Without pytest-xdist (a GPU
    machine's ``pytest -m gpu``) it runs in one process."""
    if (config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput")
            and config.option.numprocesses is None):
        config.option.numprocesses = "logical"
        if config.option.dist == "no":
            config.option.dist = "worksteal"
    yield


def pytest_configure(config):
    """The quick set (``-m 'not slow'``) draws fewer examples in each property test
    (tests/property_sizes.py); every other run, the README's whole suite included, draws them all."""
    property_sizes.QUICK = property_sizes.leaves_out_slow(config.option.markexpr)


def pytest_addoption(parser):
    parser.addoption("--fuzz-budget", type=int, default=None,
                     help="spaces of each form the differential test (test_differential.py) checks "
                          "(default: a small fixed budget; also BEASTGEN_FUZZ_BUDGET)")


#: run in a fresh interpreter: which GPU pycuda's driver sees (the stand-in of tests/cuda_standin says so)
_GPU_PROBE = """
import pycuda
if "stand-in" in getattr(pycuda, "VERSION_TEXT", ""):
    raise SystemExit("the pycuda found is the stand-in of tests/cuda_standin, not a GPU")
import pycuda.driver as driver
driver.init()
print(driver.Device(0).name())
"""


@functools.lru_cache(maxsize=None)
def gpu_missing() -> str | None:
    """Why the tests marked ``gpu`` cannot run here (no nvcc, pycuda, driver or GPU), or None."""
    if shutil.which("nvcc") is None:
        return "no nvcc (the CUDA toolkit) on PATH"
    try:
        out = subprocess.run([sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True,
                             timeout=120)
    except subprocess.TimeoutExpired:
        return "pycuda's driver did not answer within 120 s"
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines()
        return f"pycuda cannot open GPU 0 ({lines[-1] if lines else f'exit status {out.returncode}'})"
    return None


def pytest_collection_modifyitems(config, items):
    """A test marked ``gpu`` (pyproject's markers) is skipped, saying why, where no GPU is."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    reason = gpu_missing() if gpu else None
    for item in gpu if reason else []:
        item.add_marker(pytest.mark.skip(reason=f"needs an NVIDIA GPU: {reason}"))

#: beastgen[dev] brings PoCL (OpenCL on the CPU) from pip where PyPI has it: Linux on x86-64
PIP_BRINGS_OPENCL = sys.platform == "linux" and platform.machine() == "x86_64"


@functools.cache
def _no_opencl_device() -> str | None:
    """Why no OpenCL device can run a kernel here (None when one can)."""
    try:
        from beastgen.devices.opencl import list_devices
        return None if list_devices() else "no OpenCL device"
    except Exception as error:  # noqa: BLE001 - no pyopencl, no platform: said below
        return str(error)


def pytest_runtest_setup(item):
    """A test marked ``opencl`` runs kernels on ``opencl:0``. Where pip brings PoCL, a missing device
    is a broken install and fails the test; elsewhere the test is skipped, saying so."""
    if item.get_closest_marker("opencl") is None or (why := _no_opencl_device()) is None:
        return
    if PIP_BRINGS_OPENCL:
        pytest.fail(f"{why}: `pip install -e '.[dev]'` installs PoCL (pocl-binary-distribution), "
                    "which pyopencl's wheels find by themselves", pytrace=False)
    pytest.skip(f"{why}, and PyPI has no PoCL for {sys.platform} on {platform.machine()}: install "
                "an OpenCL driver")
