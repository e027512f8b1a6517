"""Shared fixtures: compiled plans are shared across tests (Numba compilation adds up)."""
import os
import signal
import textwrap

import pytest

import beastgen

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
REPLAY = os.path.join(DATA, "replay", "gemm_clblast_rtx_titan.json.gz")
REFERENCE_DIR = os.path.join(DATA, "reference-spaces")


@pytest.fixture(scope="session")
def generated_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("generated"))


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


@pytest.fixture(autouse=True, scope="session")
def _generated_code_outside_the_repository(tmp_path_factory):
    """Tests never write into the repository's own generated/ (checked by test_generated.py)."""
    os.environ["BEASTGEN_GENERATED_DIR"] = str(tmp_path_factory.mktemp("generated-default"))


@pytest.fixture(scope="module")
def compiled_nests_only():
    """For a module that checks the compiled nests (C and Numba): the NumPy path, which would
    otherwise count a small nest with no C library, is off (it is checked in test_vectorised.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEASTGEN_VECTORISED", "0")
        yield


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_delivered():
    """Ctrl-C raises KeyboardInterrupt in the tests and in the commands and workers they start, even
    where the suite was started with SIGINT ignored (in the background of a shell: ``nohup ... &``;
    an ignored signal stays ignored across exec, a handled one is reset to the default)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def pytest_addoption(parser):
    parser.addoption("--fuzz-budget", type=int, default=None,
                     help="spaces of each form the differential test (test_differential.py) checks "
                          "(default: a small fixed budget; also BEASTGEN_FUZZ_BUDGET)")
