import dataclasses
import importlib.util
import json

import pytest

from beastgen.devices import cuda, load_profile
from beastgen.devices import profiles as device_profiles
from beastgen.devices.profiles import (DEFAULT_DEVICE, KNOWN_PROPERTIES, RATE_PROPERTIES,
                                       REQUIRED_PROPERTIES, DeviceProfile, architecture_profiles,
                                       builtin_profiles, format_profiles_table, match_name)
from beastgen.errors import DeviceError

KEYS = ["c2050", "k40", "v100", "rtx2080ti", "titanrtx", "a100", "rtx3090",
        "l4", "l40s", "rtx4090", "h100", "h200"]

# compute_capability, sm_count, max_threads_per_block, dims x/y/z, warp, threads/SM, blocks/SM,
# regs/SM, regs/block, regs/thread, smem/SM, static smem/block, opt-in smem/block
TABLE = {
    "c2050": ("2.0", 14, 1024, 1024, 1024, 64, 32, 1536, 8, 32768, 32768, 63, 49152, 49152, 49152),
    "v100": ("7.0", 80, 1024, 1024, 1024, 64, 32, 2048, 32, 65536, 65536, 255, 98304, 49152, 98304),
    "h100": ("9.0", 132, 1024, 1024, 1024, 64, 32, 2048, 32, 65536, 65536, 255, 233472, 49152,
             232448),
}


def test_builtin_profiles_complete():
    profiles = builtin_profiles()
    assert list(profiles) == KEYS
    for key, prof in profiles.items():
        assert prof.key == key and prof.source == "built-in" and prof.name.startswith("NVIDIA")
        assert set(prof.properties) == KNOWN_PROPERTIES - set(RATE_PROPERTIES), key
        p = prof.properties
        assert isinstance(p["compute_capability"], str)
        assert all(type(p[k]) is int for k in REQUIRED_PROPERTIES[1:])
        # peaks are consistent with the lane counts at the listed clock
        hz = p["max_clock_mhz"] * 1e6
        assert p["peak_flops_fp32"] == pytest.approx(p["sm_count"] * p["fp32_lanes_per_sm"] * 2 * hz)
        assert p["peak_flops_fp64"] == pytest.approx(p["sm_count"] * p["fp64_lanes_per_sm"] * 2 * hz)
        assert p["peak_flops_fp16"] >= p["peak_flops_fp32"] > p["peak_flops_fp64"] > 0


@pytest.mark.parametrize("key", sorted(TABLE))
def test_table_values(key):
    p = load_profile(key).properties
    assert tuple(p[k] for k in REQUIRED_PROPERTIES) == TABLE[key]


def test_default_and_aliases():
    assert load_profile(None) is builtin_profiles()[DEFAULT_DEVICE]
    assert DEFAULT_DEVICE == "h100"
    for spec, key in [("H100", "h100"), ("h100-sxm", "h100"), ("H100_SXM5", "h100"),
                      ("titan-rtx", "titanrtx"), ("Titan RTX", "titanrtx"),
                      ("RTX-2080-Ti", "rtx2080ti"), ("NVIDIA GeForce RTX 4090", "rtx4090"),
                      ("L40S", "l40s"), ("l4", "l4"), ("k40c", "k40")]:
        assert load_profile(spec).key == key, spec


def test_unknown_device():
    with pytest.raises(DeviceError) as e:
        load_profile("h10")
    msg = str(e.value)
    assert "unknown device 'h10'" in msg and "did you mean 'h100'" in msg
    assert "known devices: " + ", ".join(KEYS) in msg and ".toml" in msg


def test_user_file_with_base(tmp_path):
    f = tmp_path / "mygpu.toml"
    f.write_text('base = "H100"\nsm_count = 114\nname = "H100 PCIe"\n[custom]\nmy_prop = 7\n')
    prof = load_profile(str(f))
    assert (prof.key, prof.name, prof.source) == ("mygpu", "H100 PCIe", str(f))
    assert prof.get("sm_count") == 114 and prof.get("my_prop") == 7
    assert prof.get("warp_size") == 32
    assert prof.get("peak_flops_fp32") == builtin_profiles()["h100"].get("peak_flops_fp32")


def test_user_file_misspelt_key_is_an_error_at_its_line(tmp_path):
    f = tmp_path / "typo.toml"
    f.write_text('base = "h100"\nname = "mine"\nsm_cont = 100\n')
    with pytest.raises(DeviceError) as e:
        load_profile(str(f))
    assert e.value.where == f"{f}:3"
    assert "unknown property 'sm_cont' (did you mean 'sm_count'?)" in str(e.value)
    assert "[custom]" in str(e.value)
    f.write_text('[fast]\nbase = "a100"\n"max_block_per_sm" = 16\n')  # inside a single table
    with pytest.raises(DeviceError, match="did you mean 'max_blocks_per_sm'") as e:
        load_profile(str(f))
    assert e.value.where == f"{f}:3"
    f.write_text('base = "h100"\n[custom]\nsm_count = 1\n')
    with pytest.raises(DeviceError, match=r"\[custom\] redefines sm_count") as e:
        load_profile(str(f))
    assert e.value.where == f"{f}:3"


def test_user_file_accepts_every_known_property_and_calibrated_device(tmp_path):
    h100 = {**architecture_profiles()["sm_90"].properties, **builtin_profiles()["h100"].properties}
    lines = ['name = "copy"', 'calibrated_device = "opencl:0"', '[custom]', 'extra = 1.5']
    lines[2:2] = [f"{key} = {json.dumps(h100[key])}" for key in sorted(KNOWN_PROPERTIES)]
    f = tmp_path / "full.toml"
    f.write_text("\n".join(lines) + "\n")
    prof = load_profile(str(f))
    assert prof.get("calibrated_device") == "opencl:0" and prof.get("extra") == 1.5
    assert all(prof.get(key) == h100[key] for key in KNOWN_PROPERTIES)


def test_user_file_single_table_and_several(tmp_path):
    f = tmp_path / "one.toml"
    f.write_text('[fast]\nbase = "a100"\nmax_blocks_per_sm = 16\n')
    prof = load_profile(f)
    assert prof.key == "one" and prof.name == "fast" and prof.get("max_blocks_per_sm") == 16
    f = tmp_path / "two.toml"
    f.write_text('[a]\nbase = "a100"\n[b]\nbase = "v100"\n')
    with pytest.raises(DeviceError, match=r"several profiles \(\[a\], \[b\]\); which one"):
        load_profile(str(f))


def test_user_file_missing_required(tmp_path):
    f = tmp_path / "partial.toml"
    f.write_text('compute_capability = "8.0"\nsm_count = 10\n')
    with pytest.raises(DeviceError) as e:
        load_profile(str(f))
    assert e.value.where == str(f)
    assert "lacks required properties: max_threads_per_block" in str(e.value)
    assert "max_shared_mem_per_block_optin" in str(e.value)


def test_user_file_bad_base_and_bad_value(tmp_path):
    f = tmp_path / "b.toml"
    f.write_text('base = "h1000"\n')
    with pytest.raises(DeviceError, match="unknown device 'h1000'") as e:
        load_profile(str(f))
    assert e.value.where == str(f)
    f.write_text('base = "h100"\nsm_count = "many"\n')
    with pytest.raises(DeviceError, match="'sm_count' must be a positive integer"):
        load_profile(str(f))


def test_user_file_malformed_or_missing(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('base = "h100"\nsm_count = \n')
    with pytest.raises(DeviceError) as e:
        load_profile(str(f))
    assert e.value.where == f"{f}:2" and str(f) in str(e.value)
    with pytest.raises(DeviceError, match="cannot read device profile") as e:
        load_profile(str(tmp_path / "nope.toml"))
    assert "nope.toml" in str(e.value)


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None
                    or importlib.util.find_spec("cuda") is not None,
                    reason="a CUDA binding is installed")
def test_auto_without_cuda():
    with pytest.raises(DeviceError) as e:
        load_profile("auto")
    msg = str(e.value)
    assert "--device auto: no CUDA GPU found" in msg and "pycuda" in msg
    assert "use a built-in profile: c2050, k40" in msg


def test_auto_with_fake_driver(monkeypatch):
    attrs = {"MULTIPROCESSOR_COUNT": 114, "MAX_THREADS_PER_BLOCK": 1024, "MAX_BLOCK_DIM_X": 1024,
             "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64, "WARP_SIZE": 32,
             "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
             "MAX_REGISTERS_PER_BLOCK": 65536, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
             "MAX_SHARED_MEMORY_PER_BLOCK": 49152, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
             "L2_CACHE_SIZE": 52428800, "CLOCK_RATE": 1755000,
             "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0}
    monkeypatch.setattr(cuda, "_pycuda_device", lambda: ("NVIDIA H100 PCIe", attrs.get))
    prof = load_profile("auto")
    h100 = builtin_profiles()["h100"].properties
    assert prof.key == "auto" and prof.name == "NVIDIA H100 PCIe"
    assert prof.source == "auto-detected (pycuda)"
    assert prof.get("sm_count") == 114 and prof.get("max_regs_per_thread") == 255
    assert prof.get("max_blocks_per_sm") == 32  # not reported: taken from the matched h100
    assert prof.get("max_clock_mhz") == 1980.0
    assert prof.get("peak_flops_fp32") == pytest.approx(h100["peak_flops_fp32"] * 114 / 132)
    assert match_name("NVIDIA GeForce RTX 3090 Ti") is None
    assert match_name("NVIDIA L40") is None
    assert match_name("Tesla K40c").key == "k40"


def test_get_unknown_property():
    prof = load_profile("v100")
    with pytest.raises(DeviceError) as e:
        prof.get("sm_cout", where="space.beast:3")
    assert e.value.where == "space.beast:3"
    assert "did you mean 'sm_count'" in str(e.value) and "known properties: " in str(e.value)


def test_fingerprint():
    prof = load_profile("h100")
    fp = prof.fingerprint()
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fp == load_profile("H100").fingerprint()
    changed = dataclasses.replace(prof, properties={**prof.properties, "sm_count": 131})
    assert changed.fingerprint() != fp
    assert load_profile("h200").fingerprint() != fp
    assert hash(prof) == hash(load_profile("h100"))


def test_profiles_table():
    table = format_profiles_table()
    lines = table.splitlines()
    assert len(lines) == 1 + len(KEYS) and "FP32 TFLOP/s" in lines[0]
    for key, line in zip(KEYS, lines[1:]):
        assert line.startswith(key + " ")
    assert "NVIDIA H100 SXM5 80GB" in table and "3350" in table


def test_no_alias_collisions():
    from importlib import resources

    from beastgen.devices.profiles import parse_toml  # tomllib, or tomli on Python 3.10

    data = parse_toml((resources.files("beastgen") / "data" / "devices.toml").read_text())
    seen = {}
    for key, table in data.items():
        for alias in (key, table["name"], *table["aliases"]):
            assert alias == table["name"] or alias == alias.lower()
            assert seen.setdefault(device_profiles._norm(alias), key) == key, alias
    assert isinstance(load_profile("a100"), DeviceProfile)
