"""``--device auto``: the profile of CUDA GPU 0, read from the driver through pycuda, else
cuda-python, over a built-in profile of the same model or the architecture base of its compute
capability (the device detection of the CUDA backend, ``harness/backends/cuda.py``)."""
from __future__ import annotations

import re
import shutil

from ..errors import DeviceError
from .profiles import (PERFORMANCE_PROPERTIES, REQUIRED_PROPERTIES, DeviceProfile, architecture_for,
                       architecture_profiles, builtin_profiles, derive_peaks, match_name)

# Profile property -> CUDA device attribute (pycuda's enum names; cuda-python adds CU_DEVICE_ATTRIBUTE_).
ATTRIBUTES = {
    "sm_count": "MULTIPROCESSOR_COUNT",
    "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
    "max_threads_dim_x": "MAX_BLOCK_DIM_X",
    "max_threads_dim_y": "MAX_BLOCK_DIM_Y",
    "max_threads_dim_z": "MAX_BLOCK_DIM_Z",
    "warp_size": "WARP_SIZE",
    "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "max_blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "regs_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "regs_per_block": "MAX_REGISTERS_PER_BLOCK",
    "shared_mem_per_sm": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "max_shared_mem_per_block": "MAX_SHARED_MEMORY_PER_BLOCK",
    "max_shared_mem_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "l2_size": "L2_CACHE_SIZE",
}
#: seconds nvidia-smi may take to say the highest clocks
NVIDIA_SMI_TIMEOUT = 30


def _pycuda_device():
    """(name, attribute getter) of device 0 through pycuda."""
    import pycuda.driver as drv  # optional (beastgen[cuda]); the caller handles ImportError

    drv.init()
    dev = drv.Device(0)

    def get(attr):
        enum = getattr(drv.device_attribute, attr, None)
        return None if enum is None else dev.get_attribute(enum)

    return dev.name(), get


def _cuda_python_device():
    """(name, attribute getter) of device 0 through cuda-python's driver bindings."""
    try:  # optional (cuda-python), newer layout first; the caller handles ImportError
        from cuda.bindings import driver as cu
    except ImportError:
        from cuda import cuda as cu

    def check(result):
        err, *value = result
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"{getattr(err, 'name', err)}")
        return value[0] if value else None

    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    name = check(cu.cuDeviceGetName(256, dev)).split(b"\0")[0].decode()

    def get(attr):
        enum = getattr(cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + attr, None)
        return None if enum is None else check(cu.cuDeviceGetAttribute(enum, dev))

    return name, get


def detect() -> DeviceProfile:
    """Profile of GPU 0, read from the driver through pycuda, else cuda-python: a built-in profile
    of the same model gives the performance fields, else the architecture base of its compute
    capability with the driver's clock and memory (:func:`_from_architecture`)."""
    reasons = []
    for api, reader in (("pycuda", _pycuda_device), ("cuda-python", _cuda_python_device)):
        try:
            name, get = reader()
            break
        except Exception as e:  # ImportError, or the driver's error (no driver, no device)
            reasons.append(f"{api}: {e}")
    else:
        raise DeviceError(
            "--device auto: no CUDA GPU found (pycuda/cuda-python not installed or no driver): "
            f"{'; '.join(reasons)}; use a built-in profile: {', '.join(builtin_profiles())}")
    major, minor = get("COMPUTE_CAPABILITY_MAJOR"), get("COMPUTE_CAPABILITY_MINOR")
    props = {p: v for p, a in ATTRIBUTES.items() if (v := get(a)) is not None}
    props["compute_capability"] = f"{major}.{minor}"
    props["max_regs_per_thread"] = 255 if (major, minor) >= (3, 5) else 63
    props.setdefault("max_shared_mem_per_block_optin", props["max_shared_mem_per_block"])
    clock_mhz = (get("CLOCK_RATE") or 0) / 1000  # the rated boost clock, in kHz
    ref = match_name(name)
    source = f"auto-detected ({api})"
    if ref is not None:  # performance limits of the same GPU model, peaks scaled to this device's SM count
        scale = props["sm_count"] / ref.properties["sm_count"]
        perf = {p: ref.properties[p] * scale if p.startswith("peak_") or p == "l2_bandwidth"
                else ref.properties[p]
                for p in PERFORMANCE_PROPERTIES if p in ref.properties}
        perf["max_clock_mhz"] = max(perf["max_clock_mhz"], clock_mhz)
        props = {**perf, **props}
        props.setdefault("max_blocks_per_sm", ref.properties["max_blocks_per_sm"])
    else:
        props, how = _from_architecture(name, props, get, clock_mhz)
        source += f", {how}"
    missing = [p for p in REQUIRED_PROPERTIES if p not in props]
    if missing:
        raise DeviceError(f"--device auto: the driver does not report {', '.join(missing)} for "
                          f"'{name}'; write a .toml profile for it")
    return DeviceProfile("auto", name, props, source)


def _from_architecture(name: str, props: dict, get, rated_mhz: float) -> tuple[dict, str]:
    """The driver's limits over the architecture base of their compute capability, with the
    highest graphics clock (nvidia-smi), the DRAM bandwidth (memory clock x 2 x bus width) and the
    peaks derived; DeviceError where one of them cannot be known."""
    capability = props["compute_capability"]
    arch = architecture_for(capability)
    advice = (f"write a .toml profile for '{name}' (base = an architecture: "
              f"{', '.join(k for k in architecture_profiles() if k.startswith('sm_'))}; docs/devices.md)")
    if arch is None:
        raise DeviceError(f"--device auto: '{name}' has compute capability {capability}, which no "
                          f"built-in profile or architecture base describes; {advice}")
    clock = _max_graphics_clock_mhz(get)
    if clock is None:
        raise DeviceError(f"--device auto: cannot read the highest graphics clock of '{name}' "
                          "(nvidia-smi --query-gpu=clocks.max.graphics): peaks from the rated clock "
                          f"({rated_mhz:.0f} MHz) are not upper bounds under GPU Boost; {advice}")
    memory_khz, bus_bits = get("MEMORY_CLOCK_RATE"), get("GLOBAL_MEMORY_BUS_WIDTH")
    if not memory_khz or not bus_bits:
        raise DeviceError(f"--device auto: the driver does not report the memory clock and bus width "
                          f"of '{name}' (the DRAM bandwidth); {advice}")
    props = {**arch.properties, **props, "max_clock_mhz": max(clock, rated_mhz),
             "dram_bandwidth": memory_khz * 1e3 * 2 * bus_bits / 8}
    return derive_peaks(props), (f"{arch.key} base: peaks derived from its rates, the highest "
                                 "graphics clock (nvidia-smi) and the memory clock x 2 x bus width")


def _max_graphics_clock_mhz(get) -> float | None:
    """The highest graphics clock nvidia-smi reports for the GPU at the driver's PCI address."""
    address = tuple(get(a) for a in ("PCI_DOMAIN_ID", "PCI_BUS_ID", "PCI_DEVICE_ID"))
    import subprocess  # here: a count with a built-in profile never runs nvidia-smi

    smi = shutil.which("nvidia-smi")
    if smi is None or None in address:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=pci.bus_id,clocks.max.graphics",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=NVIDIA_SMI_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.stdout.splitlines():
        match = re.fullmatch(r"\s*([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.\d+\s*,\s*([\d.]+)\s*",
                             line)
        if match and tuple(int(match[i], 16) for i in (1, 2, 3)) == address:
            return float(match[4])
    return None
