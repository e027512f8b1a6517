"""The benchmark harness end to end: PoCL (OpenCL on the CPU) runs of the GEMM space and of small
test spaces (tests/harness_spaces/), the replay backend on real TITAN RTX measurements, resume,
failures (compile error, wrong result, hang), and the missing-pycuda message."""
import json
import os
import sqlite3

import pytest

from beastgen.errors import BeastError

from conftest import REPLAY, REPO

SPACES = os.path.join(REPO, "tests", "harness_spaces")


def _tune(tmp_path, space, **options):
    """A tune whose compiled plan goes to the session's generated directory (BEASTGEN_GENERATED_DIR,
    conftest), where the other tests of the same space find it."""
    from beastgen.harness import tune
    options.setdefault("results", str(tmp_path / "run.db"))
    return tune(space, progress=False, log=lambda message: None, **options)


def _rows(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT config_key, status FROM results").fetchall()


@pytest.mark.slow
@pytest.mark.opencl
def test_gemm_on_pocl_verified_and_resumed_without_running_anything_twice(tmp_path):
    settings = {"M": "48", "N": "32", "K": "24", "max_blk": "16", "max_blk_k": "8"}
    first = _tune(tmp_path, os.path.join(REPO, "spaces", "gemm.py"), device="opencl:0",
                  settings=settings, budget=4, iterations=2)
    assert first.exhaustive == 152 and first.ran_now == 4 and first.evaluated == 4
    assert not first.failures, first.failure_examples  # every run verified against NumPy
    assert first.best_config is not None and first.best_time > first.best_bound > 0
    assert not first.proven and "budget" in first.stopped
    assert not first.bound_violations
    # "interrupted" after 4 runs: the resumed run answers those 4 from the store and runs 3 more
    second = _tune(tmp_path, os.path.join(REPO, "spaces", "gemm.py"), device="opencl:0",
                   settings=settings, budget=3, iterations=2)
    assert second.resumed == 4 and second.ran_now == 3 and second.evaluated == 7
    assert not second.failures
    assert second.best_time <= first.best_time
    rows = _rows(tmp_path / "run.db")
    assert len(rows) == 7 and len({key for key, _ in rows}) == 7 and {s for _, s in rows} == {"ok"}


@pytest.mark.opencl
def test_branch_and_bound_proves_the_best_with_fewer_runs_than_exhaustive(tmp_path):
    from beastgen.cli import main
    plot = tmp_path / "bound.png"
    result = _tune(tmp_path, os.path.join(SPACES, "chain.py"), device="opencl:0", plot=str(plot))
    assert result.exhaustive == 9
    assert result.proven and result.stopped == "proven"
    assert result.best_config["work"] == 1 and not result.failures
    # only the three work=1 configurations have a bound below the best time: the rest is pruned
    assert result.surviving == 3 and result.evaluated == 3 < result.exhaustive
    assert plot.stat().st_size > 1000
    # the same through the command line, resumed from the same store: nothing runs again
    code = main(["tune", os.path.join(SPACES, "chain.py"), "--device", "opencl:0", "--results",
                 str(tmp_path / "run.db"), "--no-progress", "--json"])
    assert code == 0


@pytest.mark.opencl
def test_failures_are_recorded_and_the_search_goes_on(tmp_path):
    result = _tune(tmp_path, os.path.join(SPACES, "bad.py"), device="opencl:0")
    assert result.evaluated == 4 and result.best_config == {"mode": 0}
    assert result.failures == {"compile": 1, "wrong_result": 1, "timeout": 1}
    messages = {f["status"]: f["message"] for f in result.failure_examples}
    assert "this" in messages["compile"] or "error" in messages["compile"].lower()
    assert "relative error" in messages["wrong_result"]
    assert "timeout of 3 s" in messages["timeout"]
    statuses = sorted(s for _, s in _rows(tmp_path / "run.db"))
    assert statuses == ["compile", "ok", "timeout", "wrong_result"]


#: a kernel PoCL takes seconds to compile at its first launch (800 statements, 6 s on a loaded 2-core
#: machine) and microseconds to run (``go`` = 0 skips them)
SLOW_TO_COMPILE = """__kernel void slow(__global float *x, int go) {
  int i = get_global_id(0); float acc = 0.0f;
  if (go) {
%s
  }
  x[i %% 64] = acc;
}""" % "\n".join(f"    acc = acc * {1.0001 + j * 1e-6:.7f}f + x[(i + {j}) % 64];" for j in range(800))


@pytest.mark.opencl
def test_the_drivers_compile_at_the_first_launch_is_not_counted_as_run_time(tmp_path, monkeypatch):
    """PoCL compiles a kernel when it first launches it (for each work-group size and grid): on a
    cold kernel cache (a fresh clone) that took longer than a space's 20 s run timeout (issue 43).
    The worker starts the run's timeout once the first launch executes."""
    import functools

    import numpy as np

    from beastgen.harness.backends.opencl import OpenCLBackend
    from beastgen.harness.isolate import Isolated
    from beastgen.harness.kernel import Launch
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "pocl"))  # cold; the spawned worker inherits it
    runner = Isolated(functools.partial(OpenCLBackend, 0))
    runner.set_args([np.ones(64, np.float32), np.int32(0)])
    try:
        launch = Launch({}, "opencl", SLOW_TO_COMPILE, "slow", {}, (32,), (2,))
        result = runner.measure(launch, 2, [0], timeout=1.5)
    finally:
        runner.close()
    assert len(result.times) == 2 and result.compile_seconds > 1.5
    assert np.array_equal(result.outputs[0], np.zeros(64, np.float32))


@pytest.mark.slow
def test_replay_finds_the_measured_optimum(tmp_path, capsys):
    """A whole replay of the TITAN RTX file in bound order: branch and bound without a model (the
    default search, whose models are tested in test_search_order.py, took over 100 minutes for
    this on a loaded 2-core machine)."""
    from beastgen.cli import main
    code = main(["tune", os.path.join(REPO, "spaces", "gemm_clblast.py"), "--backend", "replay",
                 "--replay", REPLAY, "--device", "titanrtx", "--results", str(tmp_path / "r.db"),
                 "--strategy", "bound_order", "--no-progress", "--json"])
    assert code == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert abs(record["best_time_ms"] - 11.466) < 0.001
    # configurations missing from the file were neither measured nor cut: no proof (issue 12)
    assert not record["proven"] and record["bound_violations"] == []
    assert record["stopped"].startswith("best among the measured: 93,533 configurations")
    # branch and bound runs every configuration whose bound is below the best time (measured: 16,806
    # of 17,472, 96.2%; not in the replay: 93,533 of 99,456); the rest are proven slower
    assert record["evaluated"] == 16_806 and record["unmeasured"] == 93_533
    assert record["exhaustive"] == 116928 and record["failures"] == {}


def test_cuda_backend_without_pycuda_says_so(tmp_path):
    try:
        import pycuda  # noqa: F401
        pytest.skip("pycuda is installed")
    except ImportError:
        pass
    with pytest.raises(BeastError, match="needs pycuda"):
        _tune(tmp_path, os.path.join(REPO, "spaces", "gemm.py"), backend="cuda", device="h100")


def test_kernel_declaration_is_not_a_space_variable():
    import beastgen
    from beastgen.harness.kernel import Kernel, find_kernel
    space = beastgen.load(os.path.join(REPO, "spaces", "gemm.py"))
    assert "kernel" not in space.variables
    kernel = find_kernel(space)
    assert isinstance(kernel, Kernel) and kernel.name == "gemm"
    launch = kernel.launch({"dim_m": 4, "dim_n": 8, "blk_m": 16, "blk_n": 24, "blk_k": 8, "vector": 1,
                            "blk_m_a": 4, "blk_n_a": 8, "blk_m_b": 2, "blk_n_b": 16, "tex_a": 0,
                            "tex_b": 1}, {"precision": "s", "trans_a": 0, "trans_b": 0, "M": 40,
                                          "N": 50, "K": 8}, None, "opencl", "")
    assert launch.block == (4, 8) and launch.grid == (3, 3)
    assert launch.defines["VL"] == 4 and launch.defines["REAL"] == "float"


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["exhaustive", "random", "genetic"])
def test_baseline_strategies_share_the_store_with_equal_budgets(tmp_path, strategy):
    result = _tune(tmp_path, os.path.join(REPO, "spaces", "gemm_clblast.py"), backend="replay",
                   replay=REPLAY, device="titanrtx", strategy=strategy, budget=40,
                   results=str(tmp_path / "shared.db"))
    assert result.ran_now == result.evaluated == 40 and not result.proven
    assert result.best_time >= 0.011466 and result.exhaustive == 116928
    rows = _rows(tmp_path / "shared.db")
    assert len(rows) == 40 and len({key for key, _ in rows}) == 40


# -- complex GEMM (precisions c and z) ---------------------------------------------------------------
# Valid configurations of the small space (M=33 N=17 K=9 max_blk=16 max_blk_k=8) on PoCL, chosen to
# cover vector=0/1 (c: 2 complex floats = 16 bytes per load; z: 1 complex double either way), the
# texture flags, and every trans_a/trans_b; the odd M, N, K exercise the guarded edges.
def _gemm_config(dim_m, dim_n, blk_m, blk_n, blk_k, vector, blk_m_a, blk_n_a, blk_m_b, blk_n_b, tex_a,
                 tex_b):
    return dict(dim_m=dim_m, dim_n=dim_n, blk_m=blk_m, blk_n=blk_n, blk_k=blk_k, vector=vector,
                blk_m_a=blk_m_a, blk_n_a=blk_n_a, blk_m_b=blk_m_b, blk_n_b=blk_n_b, tex_a=tex_a,
                tex_b=tex_b)


COMPLEX_GEMM_CASES = [
    ("c", 0, 0, _gemm_config(8, 4, 16, 16, 4, 1, 8, 4, 2, 16, 1, 0)),
    ("c", 1, 1, _gemm_config(8, 4, 16, 16, 4, 1, 2, 16, 8, 4, 0, 1)),
    ("c", 0, 1, _gemm_config(8, 4, 16, 12, 8, 0, 4, 8, 4, 8, 1, 1)),
    ("z", 0, 0, _gemm_config(8, 4, 16, 12, 8, 1, 4, 8, 8, 4, 1, 1)),
    ("z", 1, 0, _gemm_config(8, 4, 16, 12, 8, 0, 2, 16, 8, 4, 0, 0)),
    ("z", 0, 1, _gemm_config(8, 4, 16, 12, 8, 1, 4, 8, 4, 8, 0, 1)),
]


@pytest.fixture(scope="module")
def gemm_kernel():
    import beastgen
    from beastgen.harness.kernel import find_kernel
    return find_kernel(beastgen.load(os.path.join(REPO, "spaces", "gemm.py")))


@pytest.fixture(scope="module")
def pocl():
    from beastgen.harness.backends.opencl import OpenCLBackend
    backend = OpenCLBackend(0)
    yield backend
    backend.close()


def test_complex_gemm_declaration(gemm_kernel):
    config = _gemm_config(8, 4, 16, 16, 4, 1, 8, 4, 2, 16, 0, 0)
    settings = {"trans_a": 1, "trans_b": 0, "M": 5, "N": 3, "K": 4}
    c = gemm_kernel.launch(config, {**settings, "precision": "c"}, None, "opencl", "").defines
    z = gemm_kernel.launch(config, {**settings, "precision": "z"}, None, "opencl", "").defines
    assert (c["REAL"], c["REAL_IS_DOUBLE"], c["COMPLEX"], c["VL"]) == ("float", 0, 1, 2)
    assert (z["REAL"], z["REAL_IS_DOUBLE"], z["COMPLEX"], z["VL"]) == ("double", 1, 1, 1)
    for precision, dtype in (("c", "complex64"), ("z", "complex128")):
        s = {**settings, "precision": precision}
        args = gemm_kernel.make_arguments(s)
        # M N K, alpha (re, im), A, lda, B, ldb, beta (re, im), C, ldc
        assert len(args) == 13 and [args[i].dtype.name for i in (5, 7, 11)] == [dtype] * 3
        assert args[6] == 4 and args[8] == 4 and args[12] == 5  # lda = K (A stored K x M), ldb, ldc
        expected = gemm_kernel.expected(args, s)
        assert list(expected) == [11] and expected[11].dtype == "complex128"
        assert gemm_kernel.tolerance_for(s) > 0


def test_verify_compares_complex_outputs_as_complex():
    import numpy as np
    from beastgen.harness.kernel import verify
    want = np.array([1 + 2j, -3 + 0.5j, 0.25 - 1j])
    assert verify({0: want.astype(np.complex64)}, {0: want}, 1e-6) is None
    wrong = np.conj(want).astype(np.complex64)  # right real parts, wrong imaginary parts
    assert "relative error" in verify({0: wrong}, {0: want}, 1e-4)


@pytest.mark.opencl
@pytest.mark.parametrize("precision, trans_a, trans_b, config", COMPLEX_GEMM_CASES)
def test_complex_gemm_on_pocl_matches_numpy(gemm_kernel, pocl, precision, trans_a, trans_b, config):
    import numpy as np
    from beastgen.harness.kernel import verify
    settings = {"precision": precision, "trans_a": trans_a, "trans_b": trans_b, "M": 33, "N": 17,
                "K": 9, "max_blk": 16, "max_blk_k": 8}
    args = gemm_kernel.make_arguments(settings)
    expected = gemm_kernel.expected(args, settings)
    launch = gemm_kernel.launch(config, settings, None, "opencl", gemm_kernel.source_text("opencl"))
    assert launch.grid == (3, 2)  # 33 rows in blocks of 16, 17 columns in blocks of 16 or 12
    run = pocl.run(pocl.compile(launch), launch, args, 1, list(expected))
    got = run.outputs[11]
    assert got.dtype == {"c": np.complex64, "z": np.complex128}[precision]
    assert np.abs(got.imag).max() > 0.5  # a real result would not pass for a complex one
    assert verify(run.outputs, expected, gemm_kernel.tolerance_for(settings)) is None
