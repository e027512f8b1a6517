"""`beastgen nvcc-check`: the GEMM space's CUDA kernel compiled with nvcc for a sample of
configurations (ptxas registers against the space's `regs` estimate), per-configuration compile
errors, the ptxas parser, the architecture choice, and the message when nvcc is missing."""
import json
import os
import shutil

import pytest

from beastgen.errors import BeastError
from beastgen.harness.nvcc_check import choose_arch, nvcc_check, parse_ptxas

from conftest import REPO

SPACES = os.path.join(REPO, "tests", "harness_spaces")
GEMM = os.path.join(REPO, "spaces", "gemm.py")
SMALL = {"max_blk": "32", "max_blk_k": "8"}

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="nvcc (the CUDA toolkit) is not on PATH")

PTXAS_SAMPLE = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'gemm' for 'sm_90'
ptxas info    : Function properties for gemm
    24 bytes stack frame, 20 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 8192 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 52.071 ms
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 380 bytes cmem[0]
"""


def test_ptxas_parser_on_captured_output():
    functions = parse_ptxas(PTXAS_SAMPLE)
    assert set(functions) == {"gemm", "other"}
    assert functions["gemm"] == {"arch": "sm_90", "registers": 128, "spill_stores": 20,
                                 "spill_loads": 16, "stack": 24, "smem": 8192}
    assert functions["other"]["registers"] == 12 and functions["other"]["smem"] == 0


def test_arch_from_compute_capability():
    supported = (75, 80, 86, 89, 90, 100, 120)
    assert choose_arch("9.0", supported) == ("sm_90", None)
    arch, note = choose_arch("7.0", supported)  # V100: CUDA 13 dropped sm_70
    assert arch == "sm_75" and "older" in note and "sm_70" in note
    arch, note = choose_arch("0.0", supported)  # an OpenCL profile
    assert arch == "sm_75" and note
    arch, note = choose_arch("10.3", supported)
    assert arch == "sm_100" and "sm_103" in note


def test_missing_nvcc_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(BeastError, match="needs nvcc"):
        nvcc_check(GEMM, device="h100", settings=SMALL, samples=1)


@needs_nvcc
def test_gemm_sample_compiles_for_h100(tmp_path, capsys):
    from beastgen.cli import main
    code = main(["nvcc-check", GEMM, "--device", "h100", "--set", "max_blk=32", "max_blk_k=8",
                 "--samples", "6", "--seed", "3", "--generated-dir", str(tmp_path), "--json"])
    assert code == 0
    out = capsys.readouterr().out
    result = json.loads(out.strip().splitlines()[-1])
    assert result["arch"] == "sm_90" and result["arch_note"] is None
    assert result["sampled"] == 6 and result["compiled"] == 6, out
    for row in result["configurations"]:
        assert row["error"] is None and row["registers"] > 0 and row["estimate"] > 0
        assert row["exceeds"] == (row["registers"] > row["estimate"])
        assert row["excess"] == row["registers"] - row["estimate"]
        assert row["smem"] == 4 * (row["config"]["blk_m"] + row["config"]["blk_n"]) * row["config"]["blk_k"]
    assert f"compiled 6/6 sampled configurations for sm_90; {result['exceeding']} exceed" in out
    assert "EXCEEDS" in out if result["exceeding"] else "EXCEEDS" not in out


@needs_nvcc
def test_compile_errors_are_recorded_per_configuration(tmp_path):
    check, columns = nvcc_check(os.path.join(SPACES, "nvcc_modes.py"), device="v100", samples=10,
                                generated_dir=str(tmp_path))
    assert columns == ["mode"] and check.arch == "sm_75" and "older" in check.arch_note
    rows = {r["config"]["mode"]: r for r in check.rows}
    assert set(rows) == {0, 1, 2}
    assert rows[1]["registers"] is None and "error" in rows[1]["error"]
    assert "Traceback" not in rows[1]["error"] and len(rows[1]["error"].splitlines()) <= 6
    assert rows[0]["error"] is None and rows[0]["registers"] > 0 and not rows[0]["exceeds"]
    assert rows[2]["error"] is None and rows[2]["exceeds"] and rows[2]["excess"] == rows[2]["registers"] - 4
    assert check.summary().startswith("compiled 2/3 sampled configurations for sm_75 (1 compile error); "
                                      "1 exceed the estimate 'regs'")
    assert "compile error:" in check.report(columns)
