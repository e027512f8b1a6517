"""GPU device profiles: the built-in database, user ``.toml`` profiles and ``--device auto``."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser as the tomli package
    import tomli as tomllib

from beastgen.errors import DeviceError, did_you_mean

DEFAULT_DEVICE = "h100"

#: Hardware limits every profile must define (integers, except the "X.Y" compute capability).
REQUIRED_PROPERTIES = (
    "compute_capability", "sm_count", "max_threads_per_block",
    "max_threads_dim_x", "max_threads_dim_y", "max_threads_dim_z", "warp_size",
    "max_threads_per_sm", "max_blocks_per_sm", "regs_per_sm", "regs_per_block",
    "max_regs_per_thread", "shared_mem_per_sm", "max_shared_mem_per_block",
    "max_shared_mem_per_block_optin",
)
#: Performance upper limits (SI units) of the built-in profiles.
PERFORMANCE_PROPERTIES = (
    "max_clock_mhz", "peak_flops_fp32", "peak_flops_fp64", "peak_flops_fp16",
    "peak_flops_tensor_fp16", "peak_flops_tensor_tf32", "dram_bandwidth", "l2_size",
    "fp32_lanes_per_sm", "fp64_lanes_per_sm",
    # the per-instruction bound terms (beastgen.compiler.language.bound_terms)
    "issue_slots_per_sm_per_clock", "warp_issue_per_clock", "smem_banks", "smem_bank_bytes",
    "lsu_wavefronts_per_sm_per_clock", "l2_bandwidth", "launch_overhead",
)
KNOWN_PROPERTIES = frozenset(REQUIRED_PROPERTIES + PERFORMANCE_PROPERTIES)
#: Keys of a user profile besides properties: its name, a built-in to inherit, and the device
#: `beastgen calibrate` measured (kept among the properties: `beastgen tune` runs there).
PROFILE_KEYS = frozenset(("name", "aliases", "base", "calibrated_device"))
#: The table of a user profile that holds properties of the user's own (``beast.device.<prop>``).
CUSTOM_TABLE = "custom"


@dataclass(frozen=True)
class DeviceProfile:
    """One GPU's properties; ``source`` is "built-in", "auto-detected (...)" or the file path."""

    key: str
    name: str
    properties: dict[str, int | float | str]
    source: str

    def get(self, prop: str, where: str | None = None):
        """The value of ``prop``; DeviceError (at ``where``) when the profile lacks it."""
        try:
            return self.properties[prop]
        except KeyError:
            raise DeviceError(
                f"device '{self.key}' has no property '{prop}'"
                f"{did_you_mean(prop, self.properties)}; known properties: "
                + ", ".join(sorted(self.properties)), where) from None

    def fingerprint(self) -> str:
        """16 hex digits of sha256 over key and properties: changes whenever the profile does."""
        text = json.dumps({"key": self.key, "properties": self.properties},
                          sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __hash__(self):
        return hash((self.key, self.fingerprint()))


def _norm(name: str) -> str:
    """Lower-case, without spaces, '-', '_' and other punctuation: 'Titan-RTX' -> 'titanrtx'."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


@functools.cache
def _database() -> tuple[dict[str, DeviceProfile], dict[str, str]]:
    """The built-in profiles and the map from normalised key/alias/name to key."""
    text = (resources.files("beastgen") / "data" / "devices.toml").read_text(encoding="utf-8")
    profiles, names = {}, {}
    for key, table in tomllib.loads(text).items():
        props = {k: v for k, v in table.items() if k not in ("name", "aliases")}
        profiles[key] = DeviceProfile(key, table["name"], props, "built-in")
        for alias in (key, table["name"], *table.get("aliases", ())):
            names[_norm(alias)] = key
    return profiles, names


def builtin_profiles() -> dict[str, DeviceProfile]:
    """The built-in profiles by key, ordered by compute capability."""
    return _database()[0]


def _builtin(spec: str, where: str | None = None) -> DeviceProfile:
    profiles, names = _database()
    key = names.get(_norm(spec))
    if key is None and re.fullmatch(r"(opencl|cuda):\d+", str(spec).strip().lower()):
        raise DeviceError(
            f"'{spec}' is a device to measure, not a profile: `beastgen calibrate --device {spec} "
            f"-o my.toml` writes its profile, then use --device my.toml (only `tune` runs on "
            f"{spec} itself)", where)
    if key is None:
        raise DeviceError(
            f"unknown device '{spec}'{did_you_mean(_norm(spec), profiles)}; "
            f"known devices: {', '.join(profiles)} (or a path to a .toml profile)", where)
    return profiles[key]


def load_profile(spec: str | os.PathLike | None) -> DeviceProfile:
    """The profile for ``--device``: None (default), a built-in key/alias, a .toml path, or "auto"."""
    if spec is None:
        return builtin_profiles()[DEFAULT_DEVICE]
    spec = os.fspath(spec)
    if spec.lower().endswith(".toml"):
        return _load_file(Path(spec))
    if spec.strip().lower() == "auto":
        return _detect()
    return _builtin(spec)


def _check_keys(data: dict, text: str, where: str) -> None:
    """Every key of a user profile is a known property, a profile key (:data:`PROFILE_KEYS`) or the
    ``[custom]`` table of the user's own properties: a misspelt one is an error at its line."""
    allowed = KNOWN_PROPERTIES | PROFILE_KEYS
    for key, value in data.items():
        if key == CUSTOM_TABLE:
            if not isinstance(value, dict):
                raise DeviceError(f"'{CUSTOM_TABLE}' must be a table ([{CUSTOM_TABLE}]) of your own "
                                  "properties", _line_of(text, key, where))
            clashes = sorted(set(value) & allowed)
            if clashes:
                raise DeviceError(f"[{CUSTOM_TABLE}] redefines {', '.join(clashes)}: set known "
                                  "properties outside [custom]", _line_of(text, clashes[0], where))
        elif key not in allowed:
            raise DeviceError(
                f"unknown property '{key}'{did_you_mean(key, allowed)}; a property of your own "
                f"goes in a [{CUSTOM_TABLE}] table (known properties: `beastgen devices`, "
                "KNOWN_PROPERTIES in beastgen/devices.py)", _line_of(text, key, where))


def _line_of(text: str, key: str, where: str) -> str:
    """``where:LINE`` of the first line that assigns ``key`` (``where`` if none does)."""
    pattern = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return f"{where}:{number}"
    return where


def _load_file(path: Path) -> DeviceProfile:
    """A user profile: a flat table of properties or a single [table]; ``base`` inherits a built-in."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError as e:
        raise DeviceError(f"cannot read device profile: {e.strerror}", where) from None
    except ValueError as e:  # tomllib.TOMLDecodeError, or not UTF-8
        line = re.search(r"at line (\d+)", str(e))
        raise DeviceError(f"invalid device profile: {e}",
                          f"{where}:{line[1]}" if line else where) from None
    name = path.stem
    if data and all(isinstance(v, dict) for v in data.values()) and set(data) != {CUSTOM_TABLE}:
        if len(data) > 1:
            raise DeviceError(
                f"the file holds several profiles ({', '.join(f'[{t}]' for t in data)}); "
                "which one is meant? keep only that table in the file", where)
        (name, data), = data.items()
    _check_keys(data, text, where)
    custom = data.get(CUSTOM_TABLE, {})
    props = {k: v for k, v in data.items() if k not in ("name", "aliases", "base", CUSTOM_TABLE)}
    props.update(custom)
    if "base" in data:
        if not isinstance(data["base"], str):
            raise DeviceError("'base' must be the name of a built-in device, as a string", where)
        props = {**_builtin(data["base"], where).properties, **props}
    missing = [p for p in REQUIRED_PROPERTIES if p not in props]
    if missing:
        raise DeviceError(
            f"device profile lacks required properties: {', '.join(missing)} "
            f"(set them, or set base = \"{DEFAULT_DEVICE}\" to inherit a built-in profile's)", where)
    for prop in REQUIRED_PROPERTIES[1:]:
        if type(props[prop]) is not int or props[prop] <= 0:
            raise DeviceError(f"property '{prop}' must be a positive integer, not {props[prop]!r}",
                              where)
    props["compute_capability"] = str(props["compute_capability"])
    return DeviceProfile(path.stem, str(data.get("name", name)), props, where)


# Profile property -> CUDA device attribute (pycuda's enum names; cuda-python adds CU_DEVICE_ATTRIBUTE_).
_ATTRIBUTES = {
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


def _detect() -> DeviceProfile:
    """Profile of GPU 0, read from the driver through pycuda, else cuda-python."""
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
    props = {p: v for p, a in _ATTRIBUTES.items() if (v := get(a)) is not None}
    props["compute_capability"] = f"{major}.{minor}"
    props["max_regs_per_thread"] = 255 if (major, minor) >= (3, 5) else 63
    props.setdefault("max_shared_mem_per_block_optin", props["max_shared_mem_per_block"])
    clock_mhz = (get("CLOCK_RATE") or 0) / 1000  # the rated boost clock, in kHz
    ref = match_name(name)
    if ref is None:
        if clock_mhz:
            props["max_clock_mhz"] = clock_mhz
    else:  # performance limits of the same GPU model, peaks scaled to this device's SM count
        scale = props["sm_count"] / ref.properties["sm_count"]
        perf = {p: ref.properties[p] * scale if p.startswith("peak_") or p == "l2_bandwidth"
                else ref.properties[p]
                for p in PERFORMANCE_PROPERTIES}
        perf["max_clock_mhz"] = max(perf["max_clock_mhz"], clock_mhz)
        props = {**perf, **props}
        props.setdefault("max_blocks_per_sm", ref.properties["max_blocks_per_sm"])
    missing = [p for p in REQUIRED_PROPERTIES if p not in props]
    if missing:
        raise DeviceError(f"--device auto: the driver does not report {', '.join(missing)} for "
                          f"'{name}'; write a .toml profile for it")
    return DeviceProfile("auto", name, props, f"auto-detected ({api})")


def match_name(device_name: str) -> DeviceProfile | None:
    """The built-in profile whose key, alias or name is the longest run of words in
    ``device_name`` ("NVIDIA GeForce RTX 2080 Ti" -> rtx2080ti), not followed by Ti/Super."""
    profiles, names = _database()
    words = re.findall(r"[a-z0-9]+", device_name.lower())
    best = None
    for i in range(len(words)):
        for j in range(i + 1, len(words) + 1):
            run = "".join(words[i:j])
            if (run in names and words[j:j + 1] not in (["ti"], ["super"])
                    and (best is None or len(run) > len(best))):
                best = run
    return None if best is None else profiles[names[best]]


def format_profiles_table() -> str:
    """The built-in profiles as an aligned plain-text table (for ``beastgen devices``)."""
    rows = [("key", "name", "CC", "SMs", "threads/block", "smem/SM KiB", "regs/SM",
             "FP32 TFLOP/s", "DRAM GB/s")]
    for key, prof in builtin_profiles().items():
        p = prof.properties
        rows.append((key, prof.name, p["compute_capability"], str(p["sm_count"]),
                     str(p["max_threads_per_block"]), str(p["shared_mem_per_sm"] // 1024),
                     str(p["regs_per_sm"]), f"{p['peak_flops_fp32'] / 1e12:.1f}",
                     f"{p['dram_bandwidth'] / 1e9:.0f}"))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(w) if c < 3 else cell.rjust(w)
                 for c, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
