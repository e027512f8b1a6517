"""``beastgen calibrate``: measure a device with microbenchmarks and write a device profile TOML.

Every measured number becomes an UPPER bound on the hardware's speed, so that the lower bounds
built on the profile stay proofs:

- each microbenchmark keeps its FASTEST repetition (noise on a shared machine only adds time);
- every rate (FLOP/s, bytes/s, clock, instructions and wavefronts per clock) is multiplied by
  RATE_MARGIN, and the launch overhead (a time) by TIME_MARGIN;
- on a CPU, whose cores other processes share, each throughput benchmark also runs as one
  work-group (one core), and the per-core rate x cores is kept when it is higher;
- a quantity per clock is the measured rate x RATE_MARGIN / the profile's clock, so that (quantity
  per clock) x clock is the measured rate x RATE_MARGIN whatever the clock is.

The clock: CUDA reads it (``clock64`` ticks over ``%globaltimer`` nanoseconds, under FMA load).
OpenCL cannot; there it is derived from the FMA rate as peak / (2 x FP32 lanes per unit x units),
and the clock the device reports is kept where that is higher (the lanes of an OpenCL profile are an
upper limit, so the derived clock alone could be below the real one).

Each written number carries its source as a TOML comment. The profile holds every property (the
limits read from the device as ``--device opencl:N`` / ``auto`` reads them), so it needs no base;
``calibrated_device`` names the device it was measured on, where ``beastgen tune --device FILE.toml``
runs.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from ..devices import load_profile
from ..devices.profiles import DeviceProfile
from ..errors import BeastError
from .calibrate_kernels import CHAINS, LOCAL_LOADS, LOCAL_OFFSET_SPAN
from .calibrate_runners import open_runner, parse_target  # noqa: F401 - parse_target: commands/calibrate.py

#: measured rates are multiplied by this before they are written (an upper bound on the speed)
RATE_MARGIN = 1.25
#: the measured launch overhead (a time) is multiplied by this before it is written
TIME_MARGIN = 0.8
#: repetitions of each throughput benchmark (the fastest is kept)
REPETITIONS = 20
#: repetitions of the empty kernel
LAUNCH_REPETITIONS = 300
#: seconds one repetition of a throughput benchmark is sized to take
TARGET_SECONDS = 0.002
#: local-memory strides measured (in 4-byte words); 1 is conflict-free, 32 a 32-way conflict
STRIDES = (1, 2, 4, 32)
#: the shared-memory bank model the wavefront rate is calibrated against (NVIDIA since Maxwell)
SMEM_BANKS = 32
SMEM_BANK_BYTES = 4
#: the most loads any x86 core executes per clock (AMD Zen 5: 4; Intel Golden/Lion Cove: 3). One load
#: (at most 64 contiguous bytes, or one element of a gather) holds at most one word of each bank, so
#: a request of W wavefronts needs at least W loads: on a CPU, wavefronts per clock <= this
CPU_LOADS_PER_CLOCK = 4
#: the most micro-ops any x86 core dispatches per clock (AMD Zen 5, Intel Lion Cove: 8)
CPU_DISPATCH_PER_CLOCK = 8


def wavefronts(addresses, banks: int = SMEM_BANKS, bank_bytes: int = SMEM_BANK_BYTES) -> int:
    """Wavefronts one warp-level shared-memory access needs: the most distinct words any one bank
    is asked for (``addresses``: the byte address each lane reads; equal words are broadcast)."""
    words = {int(a) // bank_bytes for a in addresses}
    per_bank: dict[int, int] = {}
    for word in words:
        per_bank[word % banks] = per_bank.get(word % banks, 0) + 1
    return max(per_bank.values(), default=0)


@dataclass
class Field:
    """One calibrated profile property: its value and where it comes from (the TOML comment)."""

    value: float | int
    source: str


@dataclass
class Calibration:
    """A calibrated profile: the base properties read from the device, the calibrated ones over them."""

    target: str
    name: str
    base: DeviceProfile
    base_source: str
    fields: dict[str, Field] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def toml(self) -> str:
        """The profile as TOML, every calibrated number with its source in a comment."""
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines = [f"# beastgen device profile: `beastgen calibrate --device {self.target}`, {stamp}",
                 f"# {self.name}",
                 f"# Measured rates are the FASTEST repetition x {RATE_MARGIN} (RATE_MARGIN) and the",
                 f"# launch overhead the fastest empty kernel x {TIME_MARGIN} (TIME_MARGIN): upper bounds",
                 "# on the device's speed, so that lower bounds built on this profile stay valid.",
                 *(f"# {note}" for note in self.notes),
                 f"name = {_toml_value(self.name)}",
                 f"calibrated_device = {_toml_value(self.target)}  # where `beastgen tune` runs it",
                 "",
                 f"# -- {self.base_source}"]
        for key, value in self.base.properties.items():
            if key not in self.fields:
                lines.append(f"{key} = {_toml_value(value)}")
        lines += ["", f"# -- calibrated by microbenchmarks ({self.seconds:.1f} s)"]
        for key, f in self.fields.items():
            lines.append(f"{key} = {_toml_value(f.value)}  # {f.source}")
        return "\n".join(lines) + "\n"


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value)) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    text = str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# -- the microbenchmarks --------------------------------------------------------------------------------
@dataclass
class Rate:
    """A measured rate (per second) and how it was obtained."""

    value: float
    how: str


class Calibrator:
    """Runs the microbenchmarks on a runner and collects the calibrated fields."""

    def __init__(self, runner, repetitions: int = REPETITIONS, bar=None):
        self.runner = runner
        self.repetitions = repetitions
        self.bar = bar
        profile = runner.profile.properties
        self.units = int(profile["sm_count"])
        self.warp = int(profile["warp_size"])
        self.group = _power_of_two_at_most(min(256, runner.max_group))
        self.groups = self.units * (4 if runner.is_cpu else 8)
        self.results: dict[str, Rate] = {}
        self.clock_hz = None  # read by the CUDA FMA benchmark

    def _step(self, what: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(what)

    def _done(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def fastest(self, program, name, groups, group, args, repetitions=None) -> float:
        runner = self.runner
        runner.time(program, name, groups, group, args)  # warm-up: first-launch costs are not kept
        return min(runner.time(program, name, groups, group, args)
                   for _ in range(repetitions or self.repetitions))

    def sized(self, program, name, groups, group, make_args, start: int = 64) -> tuple[int, float]:
        """(iterations, fastest seconds) with iterations grown until one run takes TARGET_SECONDS."""
        iterations = start
        while True:
            seconds = self.runner.time(program, name, groups, group, make_args(iterations))
            if seconds >= TARGET_SECONDS / 4 or iterations >= 1 << 26:
                break
            iterations *= 4 if seconds < TARGET_SECONDS / 32 else 2
        iterations = max(1, int(iterations * TARGET_SECONDS / max(seconds, 1e-9)))
        return iterations, self.fastest(program, name, groups, group, make_args(iterations))

    def throughput(self, what: str, program, name, make_args, work, start: int = 64) -> Rate:
        """The rate (``work(iterations, work-items)`` per second) of the whole device, and on a CPU
        the higher of that and one work-group's rate x the compute units."""
        iterations, seconds = self.sized(program, name, self.groups, self.group, make_args, start)
        rate = work(iterations, self.groups * self.group) / seconds
        how = (f"{what}: {self.groups} work-groups of {self.group}, {iterations} iterations, fastest "
               f"of {self.repetitions}: {seconds * 1e3:.3f} ms")
        if self.runner.is_cpu:
            iterations1, seconds1 = self.sized(program, name, 1, self.group, make_args, start)
            one = work(iterations1, self.group) / seconds1 * self.units
            if one > rate:
                rate = one
                how = (f"{what}: one work-group of {self.group} (one core), {iterations1} iterations, "
                       f"fastest of {self.repetitions}: {seconds1 * 1e3:.3f} ms, x {self.units} units")
        return Rate(rate, how)

    # each benchmark below records its Rate(s) in self.results
    def launch(self, program) -> None:
        self._step("launch overhead")
        seconds = self.fastest(program, "empty", 1, 1, [], LAUNCH_REPETITIONS)
        self.results["launch"] = Rate(seconds, f"empty kernel (1 work-item), fastest of "
                                               f"{LAUNCH_REPETITIONS}: {seconds * 1e6:.2f} us")
        self._done()

    def fma(self, program, fp64_program) -> None:
        runner = self.runner
        self._step("FP32 FMA")
        items = self.groups * self.group
        out32 = runner.empty(items * 4 * runner.vw32)
        clocks = runner.empty(self.groups * 16) if runner.api == "cuda" else None

        def args32(iterations):
            extra = [clocks] if clocks is not None else []
            return [out32, np.float32(0.999), np.float32(0.001), np.int32(iterations), *extra]

        def flops(width):
            return lambda iterations, items: 2.0 * CHAINS * width * iterations * items

        self.results["fp32"] = self.throughput(f"fma_f32 ({CHAINS} chains of {runner.vw32} lanes per "
                                               "work-item)", program, "fma_f32", args32,
                                               flops(runner.vw32))
        if clocks is not None:  # the SM clock while the FMA benchmark ran: ticks per nanosecond
            ticks = runner.read(clocks, np.zeros(self.groups * 2, np.uint64)).reshape(-1, 2)
            ticks = ticks[ticks[:, 1] > 0].astype(np.float64)
            if not len(ticks):
                raise BeastError("the FP32 FMA benchmark reported no clock (no block wrote its "
                                 "clock64 ticks): the calibration kernels did not run as built")
            self.clock_hz = float(np.max(ticks[:, 0] / ticks[:, 1])) * 1e9
        self._done()
        if fp64_program is not None:
            self._step("FP64 FMA")
            out64 = runner.empty(items * 8 * runner.vw64)
            self.results["fp64"] = self.throughput(
                f"fma_f64 ({CHAINS} chains of {runner.vw64} lanes per work-item)", fp64_program,
                "fma_f64", lambda it: [out64, np.float64(0.999), np.float64(0.001), np.int32(it)],
                flops(runner.vw64))
            self._done()

    def integer(self, program) -> None:
        self._step("integer issue")
        width = self.runner.vw32
        out = self.runner.empty(self.groups * self.group * 4 * width)

        def warp_instructions(iterations, items):  # a shift and an xor per chain step and lane
            return 2.0 * CHAINS * iterations * items * width / self.warp

        self.results["issue"] = self.throughput(
            f"int_ops ({CHAINS} chains of {width} lanes per work-item, 2 instructions per step)",
            program, "int_ops", lambda it: [out, np.uint32(0x9E3779B9), np.int32(it)],
            warp_instructions)
        self._done()

    def memory(self, program, llc_bytes: int) -> None:
        runner = self.runner
        self._step("DRAM bandwidth")
        vector = 4 * runner.vw32  # bytes per element of the kernels' floatv
        chunk = 8 * self.groups * self.group
        nbytes = min(max(4 * llc_bytes, 64 << 20), runner.max_alloc, runner.memory // 4)
        n = nbytes // vector // chunk * chunk
        mib = n * vector / 2**20
        source = runner.buffer(np.ones(n * runner.vw32, np.float32))
        target = runner.empty(n * vector)
        sums = runner.empty(self.groups * self.group * vector)
        rates = []
        for groups in [self.groups] + ([1] if runner.is_cpu else []):
            scale = self.units if groups == 1 else 1
            where = (f"one work-group (one core), x {self.units} units" if groups == 1 else
                     f"{groups} work-groups of {self.group}")
            seconds = self.fastest(program, "read_sum", groups, self.group,
                                   [source, sums, np.uint32(n), np.int32(1)])
            rates.append(Rate(n * vector / seconds * scale,
                              f"read_sum of {mib:.0f} MiB, {where}, fastest of {self.repetitions}: "
                              f"{seconds * 1e3:.2f} ms"))
            seconds = self.fastest(program, "copy", groups, self.group, [source, target, np.uint32(n)])
            rates.append(Rate(2 * n * vector / seconds * scale,
                              f"copy of {mib:.0f} MiB (read + write), {where}, fastest of "
                              f"{self.repetitions}: {seconds * 1e3:.2f} ms"))
        self.results["dram"] = max(rates, key=lambda r: r.value)
        self.results["dram"].how += "; the fastest of read_sum and copy"
        self._done()
        if llc_bytes <= 0:
            return
        self._step("L2 bandwidth")
        self.results["l2"] = self.cache_bandwidth(program, sums, llc_bytes, vector)
        self._done()

    def cache_bandwidth(self, program, sums, llc_bytes: int, vector: int) -> Rate:
        """read_sum's rate over a buffer of at most a quarter of the last-level cache: fewer and
        smaller work-groups where one pass of the usual launch would take more (on a small L2 it
        took 75-85% of it, and passes partly missed the cache: a rate below the truth, an invalid
        bound); the launch is at least one work-group per unit and one warp per work-group."""
        groups, group = self.groups, self.group
        quarter = llc_bytes // 4
        groups = min(groups, max(self.units, quarter // (8 * group * vector)))
        while 8 * groups * group * vector > quarter and group > self.warp:
            group //= 2
        chunk = 8 * groups * group
        n = max(quarter // vector // chunk, 1) * chunk
        cached = self.runner.buffer(np.ones(n * self.runner.vw32, np.float32))
        saved = self.groups, self.group
        self.groups, self.group = groups, group
        try:
            return self.throughput(
                f"read_sum of {n * vector / 2**20:.2f} MiB ({100 * n * vector / llc_bytes:.0f}% of the "
                f"{llc_bytes / 2**20:.1f} MiB last-level cache), repeated passes", program, "read_sum",
                lambda passes: [cached, sums, np.uint32(n), np.int32(passes)],
                lambda passes, items: float(vector) * n * passes, start=4)
        finally:
            self.groups, self.group = saved

    def local(self, words: int) -> None:
        """Warp-level local-memory requests per second at each stride, as wavefronts per second of
        the bank model (requests x wavefronts per request); the highest is kept."""
        rates = []
        detail = []
        for stride in STRIDES:
            self._step(f"local memory, stride {stride}")
            program = self.runner.build({"LOCAL_WORDS": words, "STRIDE": stride})
            out = self.runner.empty(self.groups * self.local_group * 4)
            per_request = wavefronts([4 * stride * lane for lane in range(self.warp)])

            def work(iterations, items, per_request=per_request):
                return items / self.warp * iterations * LOCAL_LOADS * per_request

            saved = self.group
            self.group = self.local_group
            try:
                rate = self.throughput(f"local_read stride {stride} ({per_request} wavefront"
                                       f"{'s' if per_request > 1 else ''} per request)", program,
                                       "local_read", lambda it: [out, np.int32(it)], work)
            finally:
                self.group = saved
            rates.append(rate)
            detail.append(f"stride {stride}: {rate.value / self.units / 1e9:.3g}e9")
            self._done()
        best = max(rates, key=lambda r: r.value)
        best.how += ("; the highest over strides (wavefronts/s per unit " + ", ".join(detail) + ")")
        self.results["lsu"] = best

    @property
    def local_group(self) -> int:
        """Work-group size of local_read: as large as the local memory allows (at most self.group)."""
        group = self.group
        while group > self.warp and 4 * (group * max(STRIDES) + LOCAL_OFFSET_SPAN) > self.runner.local_bytes:
            group //= 2
        return group


def _power_of_two_at_most(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def calibrate(target: str, repetitions: int = REPETITIONS, progress: bool = True) -> Calibration:
    """Measure ``target`` (``opencl:N`` or ``cuda:N``) and return its calibrated profile."""
    start = time.perf_counter()
    runner = open_runner(target)
    try:
        return _calibrate(runner, target, repetitions, progress, start)
    finally:
        runner.close()


def _calibrate(runner, target, repetitions, progress, start) -> Calibration:
    base = runner.profile
    props = base.properties
    for prop in ("sm_count", "warp_size", "fp32_lanes_per_sm", "max_clock_mhz"):
        base.get(prop)  # DeviceError now, not after every benchmark
    bar = _progress(progress, 6 + len(STRIDES) + int(runner.has_fp64))
    calibrator = Calibrator(runner, repetitions, bar)
    words = calibrator.local_group * max(STRIDES) + LOCAL_OFFSET_SPAN
    try:
        program = runner.build({"LOCAL_WORDS": words})
        fp64 = None
        if runner.has_fp64:
            fp64 = runner.build({"LOCAL_WORDS": words}, fp64=True) if runner.api == "opencl" else program
        calibrator.launch(program)
        calibrator.fma(program, fp64)
        calibrator.integer(program)
        calibrator.memory(program, int(props.get("l2_size", 0)))
        calibrator.local(words)
    finally:
        if bar is not None:
            bar.close()
    return _fields(runner, target, base, calibrator, time.perf_counter() - start)


def _fields(runner, target, base: DeviceProfile, calibrator: Calibrator, seconds: float) -> Calibration:
    """The calibrated profile fields from the measured rates."""
    props = base.properties
    results = calibrator.results
    units = calibrator.units
    calibration = Calibration(target, base.name, base, runner.base_source, seconds=seconds)
    put = calibration.fields.__setitem__
    margin = f"x {RATE_MARGIN}"

    peak32 = results["fp32"].value * RATE_MARGIN
    lanes = int(base.get("fp32_lanes_per_sm"))
    if calibrator.clock_hz:
        clock = calibrator.clock_hz * RATE_MARGIN
        clock_source = (f"measured {calibrator.clock_hz / 1e6:.0f} MHz (clock64 ticks per %globaltimer "
                        f"ns, the fastest block of the FP32 FMA benchmark) {margin}")
    else:
        derived = peak32 / (2 * lanes * units)
        reported = float(props["max_clock_mhz"]) * 1e6
        clock = max(derived, reported)
        clock_source = (f"OpenCL cannot read the clock: derived from the calibrated FP32 peak / (2 x "
                        f"{lanes} lanes x {units} units) = {derived / 1e6:.0f} MHz; the device reports "
                        f"{reported / 1e6:.0f} MHz; the higher is kept")
    clock_mhz = clock / 1e6
    put("max_clock_mhz", Field(round(clock_mhz, 1), clock_source))
    put("peak_flops_fp32", Field(peak32, f"measured {results['fp32'].value:.4g} FLOP/s {margin} "
                                         f"({results['fp32'].how})"))
    if "fp64" in results:
        put("peak_flops_fp64", Field(results["fp64"].value * RATE_MARGIN,
                                     f"measured {results['fp64'].value:.4g} FLOP/s {margin} "
                                     f"({results['fp64'].how})"))
    if float(props.get("peak_flops_fp16", 0)) < peak32:
        put("peak_flops_fp16", Field(peak32, "not measured: at least the calibrated FP32 peak"))
    put("dram_bandwidth", Field(results["dram"].value * RATE_MARGIN,
                                f"measured {results['dram'].value:.4g} B/s {margin} "
                                f"({results['dram'].how})"))
    if "l2" in results:
        l2 = max(results["l2"].value, results["dram"].value) * RATE_MARGIN
        put("l2_bandwidth", Field(l2, f"measured {results['l2'].value:.4g} B/s {margin}, at least the "
                                      f"DRAM bandwidth ({results['l2'].how})"))
    else:
        calibration.notes.append("l2_bandwidth not measured: the device reports no cache size")
    put("launch_overhead", Field(results["launch"].value * TIME_MARGIN,
                                 f"measured {results['launch'].value:.4g} s x {TIME_MARGIN} "
                                 f"({results['launch'].how})"))
    fma_issue = results["fp32"].value / (2 * props["warp_size"])  # an FMA is one warp instruction
    issue = max(results["issue"].value, fma_issue)
    issue_per_clock = issue * RATE_MARGIN / units / clock
    issue_source = (f"measured {issue / units:.4g} warp instructions/s per unit (the higher of "
                    f"{results['issue'].how}, and FMAs / {props['warp_size']} lanes) {margin} / "
                    "max_clock")
    lsu_per_clock = results["lsu"].value * RATE_MARGIN / units / clock
    lsu_source = (f"measured {results['lsu'].value / units:.4g} wavefronts/s per unit {margin} / "
                  f"max_clock ({results['lsu'].how})")
    if runner.is_cpu:  # where the measurement is below what the core's pipes allow, keep the limit
        vectors = max(int(props["warp_size"]) // runner.vw32, 1)
        if CPU_DISPATCH_PER_CLOCK / vectors > issue_per_clock:
            issue_per_clock = CPU_DISPATCH_PER_CLOCK / vectors
            issue_source = (f"{CPU_DISPATCH_PER_CLOCK} micro-ops per clock (the most any x86 core "
                            f"dispatches) / {vectors} vectors per warp instruction: above the "
                            f"{issue_source}")
        if CPU_LOADS_PER_CLOCK > lsu_per_clock:
            lsu_per_clock = CPU_LOADS_PER_CLOCK
            lsu_source = (f"{CPU_LOADS_PER_CLOCK} loads per clock (the most any x86 core executes; "
                          f"a wavefront needs at least one load): above the {lsu_source}")
    put("issue_slots_per_sm_per_clock", Field(round(issue_per_clock, 4), issue_source))
    put("smem_banks", Field(SMEM_BANKS, "the bank model the wavefront rate is calibrated against "
                                        "(NVIDIA since Maxwell: 32 banks of 4 bytes)"))
    put("smem_bank_bytes", Field(SMEM_BANK_BYTES, "idem"))
    put("lsu_wavefronts_per_sm_per_clock", Field(round(lsu_per_clock, 4), lsu_source))
    if runner.is_cpu:
        calibration.notes.append(
            "A CPU: a 'warp' is warp_size work-items (2 x the native float vector width), "
            "the banks are a model (no CPU has them)")
    return calibration


def _progress(enabled: bool, total: int):
    if not enabled:
        return None
    try:  # optional: no bar without tqdm
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="calibrating", unit="benchmark", file=sys.stderr,
                dynamic_ncols=True, disable=None)


def write_profile(calibration: Calibration, path: str) -> DeviceProfile:
    """Write ``calibration`` as TOML to ``path`` and load it back (it must load as a profile)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(calibration.toml())
    return load_profile(path)
