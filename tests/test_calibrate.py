"""`beastgen calibrate`: the microbenchmarks on PoCL (OpenCL on the CPU) write a loadable device
profile, a tune with that profile never sees a bound violated, the CUDA microbenchmarks compile
with nvcc, and a missing pycuda or a bad --device is one clear error."""
import os
import shutil
import sqlite3
import subprocess

import pytest

from beastgen.devices.profiles import parse_toml  # tomllib, or tomli on Python 3.10
from beastgen.errors import BeastError
from beastgen.harness.calibrate import (CHAINS, LOCAL_OFFSET_SPAN, STRIDES, calibrate, parse_target,
                                        wavefronts, write_profile)
from beastgen.harness.calibrate_kernels import CUDA_SOURCE

from conftest import PATIENCE_SECONDS, REPO

SPACES = os.path.join(REPO, "tests", "harness_spaces")

CALIBRATED = ("max_clock_mhz", "peak_flops_fp32", "dram_bandwidth", "l2_bandwidth", "launch_overhead",
              "issue_slots_per_sm_per_clock", "smem_banks", "smem_bank_bytes",
              "lsu_wavefronts_per_sm_per_clock")


@pytest.fixture(scope="module")
def pocl_profile(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("calibrated") / "pocl.toml")
    calibration = calibrate("opencl:0", repetitions=5, progress=False)
    return calibration, write_profile(calibration, path), path


def test_wavefronts_count_the_busiest_bank():
    assert wavefronts([4 * lane for lane in range(32)]) == 1          # stride 1: one word per bank
    assert wavefronts([8 * lane for lane in range(32)]) == 2          # stride 2: 2-way conflict
    assert wavefronts([128 * lane for lane in range(32)]) == 32       # stride 32: all in bank 0
    assert wavefronts([0] * 32) == 1                                  # one word: a broadcast
    assert wavefronts([16 * lane for lane in range(32)], banks=32, bank_bytes=8) == 2


def test_target_must_name_an_api_and_a_device():
    assert parse_target("opencl:1") == ("opencl", 1) and parse_target("CUDA:0") == ("cuda", 0)
    for bad in ("h100", "opencl", "opencl:x", "vulkan:0"):
        with pytest.raises(BeastError, match="opencl:N or cuda:N"):
            parse_target(bad)


def test_cli_reports_a_bad_device_in_one_line(capsys):
    from beastgen.cli import main
    assert main(["calibrate", "--device", "gpu0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "opencl:N or cuda:N" in err[0]


def test_cuda_without_pycuda_says_so():
    try:
        import pycuda  # noqa: F401
        pytest.skip("pycuda is installed")
    except ImportError:
        pass
    with pytest.raises(BeastError, match="needs pycuda"):
        calibrate("cuda:0", progress=False)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("stride", [1, 32])
def test_cuda_microbenchmarks_compile_with_nvcc(tmp_path, stride):
    source = tmp_path / "calibrate.cu"
    source.write_text(f"#define LOCAL_WORDS {256 * max(STRIDES) + LOCAL_OFFSET_SPAN}\n"
                      f"#define STRIDE {stride}\n" + CUDA_SOURCE)
    done = subprocess.run(["nvcc", "-arch=sm_80", "-cubin", "-Xptxas", "-v", "-o",
                           str(tmp_path / "calibrate.cubin"), str(source)],
                          capture_output=True, text=True, timeout=PATIENCE_SECONDS)
    assert done.returncode == 0, done.stderr
    for kernel in ("empty", "fma_f32", "fma_f64", "int_ops", "read_sum", "copy", "local_read"):
        assert f"Compiling entry function '{kernel}'" in done.stderr
    assert "spill" not in done.stderr.replace("0 bytes spill", "")


@pytest.mark.opencl
def test_calibrate_on_pocl_writes_a_loadable_profile(pocl_profile):
    calibration, profile, path = pocl_profile
    assert profile.properties["calibrated_device"] == "opencl:0"
    for key in CALIBRATED:
        assert profile.properties[key] > 0, key
    p = profile.properties
    # sane: a CPU's FMA peak is within its vector lanes x clock, the launch overhead under a
    # millisecond, caches at least as fast as DRAM, and every rate above what was measured
    assert p["peak_flops_fp32"] <= 2 * p["sm_count"] * p["fp32_lanes_per_sm"] * p["max_clock_mhz"] * 1e6 * 1.0001
    assert 1e9 < p["peak_flops_fp32"] < 1e14 and 1e8 < p["dram_bandwidth"] < 1e13
    assert p["l2_bandwidth"] >= p["dram_bandwidth"] and p["launch_overhead"] < 1e-3
    assert p["smem_banks"] == 32 and p["smem_bank_bytes"] == 4
    text = open(path, encoding="utf-8").read()
    data = parse_toml(text)
    assert data["peak_flops_fp32"] == p["peak_flops_fp32"]
    for key in CALIBRATED:  # each calibrated number says where it comes from
        line = next(line for line in text.splitlines() if line.startswith(f"{key} = "))
        assert "#" in line, line
    assert "measured" in text and "x 1.25" in text and "x 0.8" in text and CHAINS == 16
    assert calibration.seconds < 120


@pytest.mark.slow
@pytest.mark.opencl
def test_branch_and_bound_on_a_calibrated_profile_never_violates_a_bound(tmp_path, pocl_profile):
    """gemm on PoCL with the calibrated profile: no measured time is below its bound, and branch
    and bound proves its best without pruning the configuration an exhaustive run finds best. The
    valid set depends on the profile (its warp size is twice the CPU's float vector width): it is
    counted on this machine's profile, and an exhaustive run must run all of it."""
    import beastgen
    from beastgen.harness import tune
    _, profile, path = pocl_profile
    space = os.path.join(SPACES, "gemm_calibrated.py")
    # tiles that hold a few warps: 10, 25 and 10 configurations for warps of 8, 16 and 32 work-items
    # (SSE, AVX2, AVX-512), each compiled and run by PoCL
    warp = profile.get("warp_size")
    settings = {"M": "8", "N": "8", "K": "64", "max_blk": str(min(warp, 16)),
                "max_blk_k": "4" if warp >= 32 else "2"}
    valid = beastgen.load(space).specialize(device=path, generated_dir=str(tmp_path / "generated"),
                                            **settings).count()
    assert valid > 0
    runs = {}
    for strategy in ("exhaustive", "branch_and_bound"):
        runs[strategy] = tune(space, device=path, settings=settings, strategy=strategy,
                              results=str(tmp_path / f"{strategy}.db"), iterations=3,
                              generated_dir=str(tmp_path / "generated"), progress=False,
                              log=lambda message: None)
    exhaustive, bnb = runs["exhaustive"], runs["branch_and_bound"]
    assert exhaustive.exhaustive == bnb.exhaustive == exhaustive.evaluated == valid
    assert not exhaustive.failures and not bnb.failures
    for run in (exhaustive, bnb):
        assert run.bound_violations == []
        assert all(time >= bound > 0 for bound, time in run.points)
    assert bnb.proven and bnb.evaluated <= bnb.exhaustive
    # the exhaustive optimum's bound is below any time measured, so branch and bound ran it
    with sqlite3.connect(tmp_path / "branch_and_bound.db") as db:
        ran = {row[0] for row in db.execute("SELECT config_key FROM results")}
    from beastgen.harness.store import config_key
    assert config_key(exhaustive.best_config) in ran
    assert exhaustive.best_bound < bnb.best_time
