"""Architecture base profiles (data/architectures.toml): a five-line profile on ``base = "sm_86"``
equals one written out by hand and counts spaces/gemm.py the same (bound-pruned counts included);
``--device auto`` builds the same from the driver's attributes (through the pycuda STAND-IN of
tests/cuda_standin: no GPU here) for a GPU no built-in profile describes; derived peaks equal the
datasheets' where the clock is the datasheet's; bad or missing numbers are one clear error."""
import json
import os
import sys

import pytest

import beastgen
from beastgen.devices import load_profile
from beastgen.devices.profiles import (DERIVED_PEAKS, GPU_OWN_PROPERTIES, REQUIRED_PROPERTIES,
                                       architecture_profiles, builtin_profiles, derive_peaks)
from beastgen.errors import DeviceError

from conftest import PATIENCE_SECONDS, REPO

PROFILES = os.path.join(REPO, "tests", "profiles")
STANDIN = os.path.join(REPO, "tests", "cuda_standin")


def test_base_profile_equals_the_hand_written_one_and_counts_gemm_the_same(generated_dir):
    short = load_profile(os.path.join(PROFILES, "a6000_base.toml"))
    by_hand = load_profile(os.path.join(PROFILES, "a6000_by_hand.toml"))
    with open(os.path.join(PROFILES, "a6000_base.toml")) as f:
        assert sum(1 for line in f if line.strip() and not line.startswith("#")) == 5
    assert short.properties == by_hand.properties
    space = beastgen.load(os.path.join(REPO, "spaces", "gemm.py"))
    plans = [space.specialize(device=p, generated_dir=generated_dir) for p in (short, by_hand)]
    counts = [[plan.count(), plan.count(0.005), plan.count(0.01)] for plan in plans]
    assert counts[0] == counts[1] and counts[0][1] < counts[0][0]


def test_every_architecture_is_complete_but_for_the_gpus_own_numbers():
    for key, arch in architecture_profiles().items():
        missing = set(REQUIRED_PROPERTIES) - set(arch.properties)
        assert missing == {"sm_count"}, key
        assert not set(GPU_OWN_PROPERTIES) & set(arch.properties), key
        assert all(rate in arch.properties for rate, _ in DERIVED_PEAKS.values()), key


@pytest.mark.parametrize("device", ["a100", "h100", "l40s", "titanrtx", "v100"])
def test_derived_peaks_reach_the_built_in_datasheet_peaks(device):
    """With a built-in GPU's SMs and clock, the architecture's rates give at least its peaks (the
    rates are upper limits over the architecture: equal for these full-rate parts)."""
    gpu = builtin_profiles()[device].properties
    arch = architecture_profiles()["sm_" + gpu["compute_capability"].replace(".", "")].properties
    derived = derive_peaks({**arch, "sm_count": gpu["sm_count"], "max_clock_mhz": gpu["max_clock_mhz"]})
    for peak in DERIVED_PEAKS:
        assert derived[peak] >= gpu[peak] * (1 - 1e-5), (device, peak)  # devices.toml rounds to 6 digits


def test_amd_base_for_opencl(tmp_path):
    path = tmp_path / "mi300x.toml"
    path.write_text('base = "cdna3"\nsm_count = 304\nmax_clock_mhz = 2100\n'
                    'dram_bandwidth = 5.3e12\nl2_size = 4194304\n')
    p = load_profile(path).properties
    assert p["warp_size"] == 64
    assert p["peak_flops_fp32"] == pytest.approx(163.4e12, rel=1e-3)  # the MI300X datasheet
    assert p["peak_flops_tensor_fp16"] == pytest.approx(1307.4e12, rel=1e-3)


def test_base_profile_errors_name_what_is_missing(tmp_path):
    path = tmp_path / "short.toml"
    path.write_text('base = "sm_89"\nsm_count = 58\n')
    with pytest.raises(DeviceError, match="sets the GPU's own max_clock_mhz, dram_bandwidth, l2_size"):
        load_profile(path)
    path.write_text('base = "sm_89"\nsm_count = 58\nmax_clock_mhz = "fast"\n'
                    'dram_bandwidth = 3e11\nl2_size = 1\n')
    with pytest.raises(DeviceError, match=r"short.toml:3: .*max_clock_mhz' must be a positive number"):
        load_profile(path)
    path.write_text('base = "sm_99"\n')
    with pytest.raises(DeviceError, match="or an architecture: sm_70, sm_75"):
        load_profile(path)
    with pytest.raises(DeviceError, match="'sm_86' is an architecture, not a GPU"):
        load_profile("sm_86")


@pytest.fixture
def standin_driver(monkeypatch):
    """The pycuda stand-in and its nvidia-smi first on the paths; forgotten afterwards."""
    monkeypatch.syspath_prepend(STANDIN)
    monkeypatch.setenv("PATH", os.path.join(STANDIN, "bin") + os.pathsep + os.environ["PATH"])
    for name in ("STANDIN_NO_DRIVER", "STANDIN_CC", "STANDIN_LOG", "STANDIN_GPU"):
        monkeypatch.delenv(name, raising=False)
    yield
    for name in ("pycuda.driver", "pycuda"):
        sys.modules.pop(name, None)


def test_auto_builds_a_gpu_outside_the_built_ins_from_its_architecture(standin_driver, tmp_path):
    auto = load_profile("auto")
    assert auto.name == "NVIDIA RTX A6000" and "sm_86 base" in auto.source
    path = tmp_path / "same.toml"  # nvidia-smi's highest clock (2100), memory clock x 2 x bus width
    path.write_text('base = "sm_86"\nsm_count = 84\nmax_clock_mhz = 2100.0\n'
                    'dram_bandwidth = 768.096e9\nl2_size = 6291456\n')
    assert auto.properties == load_profile(path).properties


def test_devices_shows_the_h100_the_driver_reports(standin_driver, monkeypatch, capsys):
    """`beastgen devices --device auto --json` on the stand-in's H100 (the GPU machine's): the
    driver's limits over the built-in h100's performance fields, every property printed."""
    from beastgen.cli import main

    monkeypatch.setenv("STANDIN_GPU", "h100")
    assert main(["devices", "--device", "auto", "--json"]) == 0
    out = capsys.readouterr().out
    record = json.loads(out.strip().splitlines()[-1])
    h100 = builtin_profiles()["h100"].properties
    assert record["name"] == "NVIDIA H100 80GB HBM3" and record["source"] == "auto-detected (pycuda)"
    assert record["properties"]["sm_count"] == 132 and record["properties"]["compute_capability"] == "9.0"
    assert {p: record["properties"][p] for p in ("peak_flops_fp32", "dram_bandwidth", "max_clock_mhz")} \
        == {p: h100[p] for p in ("peak_flops_fp32", "dram_bandwidth", "max_clock_mhz")}
    assert "source: auto-detected (pycuda)" in out and all(f"  {p} " in out for p in record["properties"])


def test_auto_without_the_highest_clock_says_so(standin_driver, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DeviceError, match="cannot read the highest graphics clock .* write a .toml"):
        load_profile("auto")


def test_auto_on_an_unknown_architecture_says_so(standin_driver, monkeypatch):
    monkeypatch.setenv("STANDIN_CC", "15.0")
    with pytest.raises(DeviceError, match="compute capability 15.0, which no built-in profile or "
                                          "architecture base describes"):
        load_profile("auto")


def test_devices_command_lists_the_architecture_bases():
    import subprocess

    out = subprocess.run([sys.executable, "-m", "beastgen", "devices"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": REPO}, timeout=PATIENCE_SECONDS)
    assert out.returncode == 0
    tail = out.stdout.split("architecture bases:", 1)[1]
    assert all(f"\n{key} " in tail for key in architecture_profiles())
