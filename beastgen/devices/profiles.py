"""GPU device profiles: the built-in database, architecture bases and user ``.toml`` profiles.

A built-in profile (``data/devices.toml``) is one GPU with its datasheet's peaks. An architecture
base (``data/architectures.toml``: ``sm_70`` ... ``sm_121``, ``rdna2`` ... ``cdna3``) is what every
GPU of a compute capability shares, with rates per SM per clock; a user profile ``base = "sm_86"``
adds the GPU's own ``sm_count``, ``max_clock_mhz``, ``dram_bandwidth`` and ``l2_size``, and the peaks
are derived (:func:`derive_peaks`). ``--device auto`` does the same from the driver's attributes
(:mod:`beastgen.devices.cuda`).
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import DeviceError, did_you_mean

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
#: Rates per SM per clock the peaks of an architecture-based profile derive from (the built-in GPU
#: profiles give the peaks themselves)
RATE_PROPERTIES = ("fp16_lanes_per_sm", "tensor_fp16_flops_per_sm_per_clock",
                   "tensor_tf32_flops_per_sm_per_clock", "l2_bytes_per_sm_per_clock")
#: peak -> (the rate per SM per clock it derives from, operations per unit of that rate):
#: peak = rate x operations x sm_count x max_clock (an FMA lane does 2 flops per clock)
DERIVED_PEAKS = {
    "peak_flops_fp32": ("fp32_lanes_per_sm", 2), "peak_flops_fp64": ("fp64_lanes_per_sm", 2),
    "peak_flops_fp16": ("fp16_lanes_per_sm", 2),
    "peak_flops_tensor_fp16": ("tensor_fp16_flops_per_sm_per_clock", 1),
    "peak_flops_tensor_tf32": ("tensor_tf32_flops_per_sm_per_clock", 1),
    "l2_bandwidth": ("l2_bytes_per_sm_per_clock", 1),
}
#: what a profile based on an architecture sets itself: the GPU's own numbers
GPU_OWN_PROPERTIES = ("sm_count", "max_clock_mhz", "dram_bandwidth", "l2_size")
KNOWN_PROPERTIES = frozenset(REQUIRED_PROPERTIES + PERFORMANCE_PROPERTIES + RATE_PROPERTIES)
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


def parse_toml(text: str) -> dict:
    """TOML text as a dict (tomllib imported here: a warm count on the default device reads none)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the same parser as the tomli package
        import tomli as tomllib
    return tomllib.loads(text)


def _norm(name: str) -> str:
    """Lower-case, without spaces, '-', '_' and other punctuation: 'Titan-RTX' -> 'titanrtx'."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


@functools.cache
def _database(file: str = "devices.toml") -> tuple[dict[str, DeviceProfile], dict[str, str]]:
    """The profiles of a data file and the map from normalised key/alias/name to key."""
    text = (resources.files("beastgen") / "data" / file).read_text(encoding="utf-8")
    profiles, names = {}, {}
    for key, table in parse_toml(text).items():
        props = {k: v for k, v in table.items() if k not in ("name", "aliases")}
        profiles[key] = DeviceProfile(key, table["name"], props, "built-in")
        for alias in (key, table["name"], *table.get("aliases", ())):
            names[_norm(alias)] = key
    return profiles, names


def architecture_profiles() -> dict[str, DeviceProfile]:
    """The architecture bases by key (``sm_86``, ``cdna3``, ...): no sm_count, clock or peaks."""
    return _database("architectures.toml")[0]


def architecture_for(compute_capability: str) -> DeviceProfile | None:
    """The NVIDIA architecture base of a compute capability ("8.6" -> sm_86), None if none."""
    major, _, minor = str(compute_capability).partition(".")
    return architecture_profiles().get(f"sm_{major}{minor or 0}")


def derive_peaks(props: dict) -> dict:
    """``props`` with each peak it lacks derived from its rate per SM per clock (DERIVED_PEAKS),
    where ``sm_count`` and ``max_clock_mhz`` are known: upper limits when the rates and the clock are."""
    props = dict(props)
    if all(isinstance(props.get(p), (int, float)) and not isinstance(props.get(p), bool)
           for p in ("sm_count", "max_clock_mhz")):
        per_clock = props["sm_count"] * float(props["max_clock_mhz"]) * 1e6
        for peak, (rate, operations) in DERIVED_PEAKS.items():
            if peak not in props and rate in props:
                props[peak] = float(props[rate]) * operations * per_clock
    return props


def builtin_profiles() -> dict[str, DeviceProfile]:
    """The built-in profiles by key, ordered by compute capability."""
    return _database()[0]


def named_profile(spec: str, where: str | None = None) -> DeviceProfile:
    profiles, names = _database()
    key = names.get(_norm(spec))
    if key is None and _norm(spec) in _database("architectures.toml")[1]:
        raise DeviceError(f"'{spec}' is an architecture, not a GPU: write a profile with base = "
                          f"\"{spec}\" and the GPU's {', '.join(GPU_OWN_PROPERTIES)} (docs/devices.md)",
                          where)
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
                "KNOWN_PROPERTIES in beastgen/devices/profiles.py)", _line_of(text, key, where))


def _line_of(text: str, key: str, where: str) -> str:
    """``where:LINE`` of the first line that assigns ``key`` (``where`` if none does)."""
    pattern = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return f"{where}:{number}"
    return where


def read_profile_file(path: Path) -> DeviceProfile:
    """A user profile: a flat table of properties or a single [table]; ``base`` inherits a built-in."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = parse_toml(text)
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
            raise DeviceError("'base' must be the name of a built-in device or an architecture "
                              "(sm_86, ...), as a string", where)
        props = _based(data["base"], props, text, where)
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
    return DeviceProfile(path.stem, str(data.get("name", name)), derive_peaks(props), where)


def _based(base: str, props: dict, text: str, where: str) -> dict:
    """``props`` over a built-in device's, or over an architecture's (then the GPU's own numbers,
    GPU_OWN_PROPERTIES, must be among ``props``)."""
    architectures, names = _database("architectures.toml")
    key = names.get(_norm(base))
    if key is None:
        try:
            return {**named_profile(base, where).properties, **props}
        except DeviceError as e:
            raise DeviceError(f"{e.message}; or an architecture: {', '.join(architectures)}",
                              where) from None
    missing = [p for p in GPU_OWN_PROPERTIES if p not in props]
    if missing:
        raise DeviceError(f"a profile based on the architecture '{key}' sets the GPU's own "
                          f"{', '.join(missing)} (its datasheet; max_clock_mhz the highest graphics "
                          "clock, nvidia-smi -q -d CLOCK: Max Clocks)", where)
    for prop in GPU_OWN_PROPERTIES:
        if isinstance(props[prop], bool) or not isinstance(props[prop], (int, float)) or props[prop] <= 0:
            raise DeviceError(f"property '{prop}' must be a positive number, not {props[prop]!r}",
                              _line_of(text, prop, where))
    return {**architectures[key].properties, **props}


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
    return _aligned(rows)


def format_profile(profile: DeviceProfile) -> str:
    """One profile's every property, one per line (for ``beastgen devices --device``)."""
    width = max(map(len, profile.properties), default=0)
    lines = [f"{profile.key}: {profile.name}", f"source: {profile.source}"]
    for prop, value in profile.properties.items():
        text = f"{value:.6g}" if isinstance(value, float) else str(value)
        lines.append(f"  {prop.ljust(width)}  {text}")
    return "\n".join(lines)


def format_architectures_table() -> str:
    """The architecture bases (``base = KEY`` in a profile) as an aligned plain-text table."""
    rows = [("base", "name", "warp", "FP32/FP64 lanes per SM", "tensor FP16 flop/SM/clock",
             "smem/SM KiB")]
    for key, prof in architecture_profiles().items():
        p = prof.properties
        rows.append((key, prof.name, str(p["warp_size"]),
                     f"{p['fp32_lanes_per_sm']}/{p['fp64_lanes_per_sm']}",
                     str(p["tensor_fp16_flops_per_sm_per_clock"]), str(p["shared_mem_per_sm"] // 1024)))
    return _aligned(rows)


def _aligned(rows: list[tuple[str, ...]]) -> str:
    """Rows as plain-text columns: the first three left-aligned, the others right-aligned."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(w) if c < 3 else cell.rjust(w)
                 for c, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
