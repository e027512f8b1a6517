"""`beastgen tune --backend cuda` end to end: whatever is missing (pycuda, the driver, nvcc), one
clear line, exit 2 and nothing stored; with the pycuda STAND-IN (tests/cuda_standin, no GPU), a
sticky fault is recorded as the launch failure it is, the other configurations run in a fresh
worker, and a resume replays the recorded rows. No evidence that a GPU run works."""
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import PATIENCE_SECONDS, REPO

STANDIN = os.path.join(REPO, "tests", "cuda_standin")
SPACE = os.path.join(REPO, "tests", "harness_spaces", "standin_cuda.py")
NVCC = shutil.which("nvcc")


def tune(tmp_path, space, *, standin=True, path=None, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STANDIN_")}
    env["PYTHONPATH"] = os.pathsep.join(([STANDIN] if standin else []) + [REPO])
    env["PATH"] = path if path is not None else os.pathsep.join(
        [os.path.join(STANDIN, "bin"), env.get("PATH", "")])
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env.update(extra_env or {})
    results = tmp_path / "results.db"
    out = subprocess.run([sys.executable, "-m", "beastgen", "tune", space, "--backend", "cuda",
                          "--results", str(results)], capture_output=True, text=True, env=env,
                         timeout=PATIENCE_SECONDS, cwd=str(tmp_path))
    return out, results


def rows(results) -> dict:
    with sqlite3.connect(results) as db:
        return dict(db.execute("SELECT status, count(*) FROM results GROUP BY status").fetchall())


def assert_one_clear_line(out, results, *words):
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("beastgen: error:"), out.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert not results.exists() or not rows(results)


def test_without_pycuda(tmp_path):
    try:
        import pycuda  # noqa: F401
        pytest.skip("pycuda is installed")
    except ImportError:
        pass
    out, results = tune(tmp_path, os.path.join(REPO, "spaces", "gemm.py"), standin=False)
    assert_one_clear_line(out, results, "needs pycuda, which is not installed")


def test_without_a_driver(tmp_path):
    out, results = tune(tmp_path, os.path.join(REPO, "spaces", "gemm.py"),
                        extra_env={"STANDIN_NO_DRIVER": "1"})
    assert_one_clear_line(out, results, "no CUDA-capable device")


def test_without_nvcc(tmp_path):
    out, results = tune(tmp_path, os.path.join(REPO, "spaces", "gemm.py"),
                        path=os.path.join(STANDIN, "bin"))
    assert_one_clear_line(out, results, "the cuda backend needs nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not on PATH")
def test_sticky_fault_recorded_as_launch_and_resume_replays(tmp_path):
    log = tmp_path / "driver.log"
    out, results = tune(tmp_path, SPACE, extra_env={"STANDIN_LOG": str(log)})
    assert out.returncode == 0, out.stderr
    launches = log.read_text().count("launch zero")
    assert launches == 4 * 4 + 2  # ok: one checked run and 3 timed ones; variant 1: its fault
    assert rows(results) == {"ok": 4, "launch": 2}  # variant 1 faults; never a false "compile"
    with sqlite3.connect(results) as db:
        messages = [m for (m,) in db.execute("SELECT message FROM results WHERE status = 'launch'")]
    assert all("illegal memory access" in m and "sticky" in m for m in messages)
    again, _ = tune(tmp_path, SPACE, extra_env={"STANDIN_LOG": str(log)})
    assert again.returncode == 0 and rows(results) == {"ok": 4, "launch": 2}
    assert log.read_text().count("launch zero") == launches  # every row replayed, none run again
