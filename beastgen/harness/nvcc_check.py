"""The "nvcc check": compile a sample of a space's configurations with nvcc, run nothing.

For each sampled valid configuration, the CUDA source of the space's kernel (``beast.kernel(source=
{"cuda": ...})``) gets the configuration's defines (exactly as the cuda backend would compile it)
and goes through ``nvcc -arch=sm_XX -cubin -Xptxas -v``. ptxas's report gives the real register
count, spill stores and loads, stack frame and static shared memory of the kernel. They are set
against the space's own register estimate (a derived value, ``regs`` by default, evaluated for the
configuration by the reference enumerator): a configuration whose real use exceeds the estimate is
flagged. No GPU or driver is needed, only nvcc.

The target architecture is the device profile's compute capability (9.0 -> sm_90). An architecture
this nvcc no longer supports (CUDA 13 starts at sm_75) is replaced by the oldest one it supports, and
the report says so. Compiles run in parallel (``jobs`` at a time; each is an nvcc subprocess, so a
thread pool is all the parallelism needed). A compile error is recorded for its configuration with
the first lines of nvcc's message; the check goes on.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..compiler.reference import ReferenceEnumerator
from ..compiler.runtime import compile_space
from ..devices import load_profile
from ..errors import BeastError
from ..loading.load import load
from ..support.table import format_table
from .kernel import find_kernel
from .nvcc import nvcc_path, supported_arches

#: seconds one nvcc compile may take before it is recorded as an error
COMPILE_TIMEOUT = 300.0
#: lines of nvcc's message kept for a compile error
ERROR_LINES = 6

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(text: str) -> dict[str, dict]:
    """ptxas ``-v`` output -> {entry function: {registers, spill_stores, spill_loads, stack, smem}}
    (bytes, except registers). Functions that are not entries (device functions) are ignored."""
    functions: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current = functions.setdefault(entry.group(1), {"arch": entry.group(2), "registers": None,
                                                            "spill_stores": 0, "spill_loads": 0,
                                                            "stack": 0, "smem": 0})
            continue
        if "Compiling" in line and "function" in line:  # a device function: not ours
            current = None
            continue
        if current is None:
            continue
        frame = _FRAME.search(line)
        if frame:
            current["stack"], current["spill_stores"], current["spill_loads"] = map(int, frame.groups())
        used = _USED.search(line)
        if used:
            current["registers"] = int(used.group(1))
            smem = _SMEM.search(line)
            current["smem"] = int(smem.group(1)) if smem else 0
    return functions


def choose_arch(compute_capability, supported: tuple[int, ...]) -> tuple[str, str | None]:
    """('sm_XX', note or None) for a compute capability such as "9.0" (note: why it differs)."""
    try:
        major, _, minor = str(compute_capability).partition(".")
        wanted = int(major) * 10 + int(minor or 0)
    except ValueError:
        raise BeastError(f"compute capability {compute_capability!r} is not MAJOR.MINOR") from None
    if wanted in supported:
        return f"sm_{wanted}", None
    if wanted < supported[0]:
        return (f"sm_{supported[0]}", f"compute capability {compute_capability} (sm_{wanted}) is older "
                f"than this nvcc supports: compiling for its oldest architecture, sm_{supported[0]}")
    below = [a for a in supported if a <= wanted]
    return (f"sm_{below[-1]}", f"this nvcc has no sm_{wanted}: compiling for sm_{below[-1]}, the "
            "newest architecture below it")


def _compile_one(nvcc: str, arch: str, source: str, name: str, workdir: str, index: int) -> dict:
    """Compile one configuration's full source; its ptxas figures, or {'error': message}."""
    path = os.path.join(workdir, f"config{index}.cu")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    command = [nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", path[:-3] + ".cubin", path]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT,
                             cwd=workdir)
    except subprocess.TimeoutExpired:
        return {"error": f"nvcc did not finish within {COMPILE_TIMEOUT:g} s"}
    except OSError as e:
        return {"error": f"cannot run nvcc: {e}"}
    text = (out.stdout + "\n" + out.stderr).replace(path, "kernel.cu")
    if out.returncode != 0:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("ptxas info")]
        message = "\n".join(lines[:ERROR_LINES]) or f"nvcc exited with status {out.returncode}"
        return {"error": message}
    functions = parse_ptxas(text)
    if name not in functions or functions[name]["registers"] is None:
        return {"error": f"ptxas reported no entry function '{name}' (found: "
                         f"{', '.join(functions) or 'none'}); is it extern \"C\" __global__?"}
    return functions[name]


@dataclass
class NvccCheck:
    space: str
    device: str
    arch: str
    estimate_name: str
    settings: dict
    valid: int  # valid configurations of the space
    arch_note: str | None = None
    rows: list = field(default_factory=list)  # one dict per sampled configuration

    @property
    def compiled(self) -> list:
        return [r for r in self.rows if r["error"] is None]

    @property
    def exceeding(self) -> list:
        return [r for r in self.compiled if r["exceeds"]]

    def summary(self) -> str:
        compiled, exceeding = self.compiled, self.exceeding
        errors = len(self.rows) - len(compiled)
        spilling = [r for r in compiled if r["spill_stores"] or r["spill_loads"]]
        text = (f"compiled {len(compiled)}/{len(self.rows)} sampled configurations for {self.arch}"
                + (f" ({errors} compile error{'s' if errors > 1 else ''})" if errors else "") + "; "
                + f"{len(exceeding)} exceed the estimate '{self.estimate_name}'")
        if exceeding:
            text += f" (max excess +{max(r['excess'] for r in exceeding)} registers)"
        text += f"; {len(spilling)} spill"
        if spilling:
            text += (f" (max {max(r['spill_stores'] for r in spilling)} bytes stored, "
                     f"{max(r['spill_loads'] for r in spilling)} loaded)")
        return text

    def table(self, columns: list[str]) -> str:
        rows = []
        for i, r in enumerate(self.rows, 1):
            config = [str(r["config"][c]) for c in columns]
            if r["error"] is not None:
                rows.append([str(i), "-", _text(r["estimate"]), "-", "-", "-", "-",
                             "compile error: " + r["error"].splitlines()[0][:100], *config])
                continue
            rows.append([str(i), str(r["registers"]), _text(r["estimate"]),
                         (f"+{r['excess']}" if r["excess"] > 0 else str(r["excess"]))
                         if r["excess"] is not None else "-",
                         str(r["spill_stores"]), str(r["spill_loads"]), str(r["smem"]),
                         "EXCEEDS" if r["exceeds"] else "", *config])
        return format_table(["#", "regs", "estimate", "excess", "spill st", "spill ld", "smem", "flag",
                             *columns], rows)

    def report(self, columns: list[str]) -> str:
        lines = [f"space {self.space} on {self.device}: nvcc -arch={self.arch} -cubin -Xptxas -v, "
                 f"{len(self.rows)} of {self.valid:,} valid configurations"]
        if self.arch_note:
            lines.append(f"note: {self.arch_note}")
        lines += [self.table(columns), self.summary()]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"space": self.space, "device": self.device, "arch": self.arch,
                "arch_note": self.arch_note, "estimate": self.estimate_name, "settings": self.settings,
                "valid": self.valid, "sampled": len(self.rows), "compiled": len(self.compiled),
                "exceeding": len(self.exceeding),
                "max_excess": max((r["excess"] for r in self.exceeding), default=None),
                "spilling": sum(1 for r in self.compiled if r["spill_stores"] or r["spill_loads"]),
                "configurations": self.rows}


def _text(value) -> str:
    return "-" if value is None else str(value)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def nvcc_check(space_path: str, device=None, settings: dict | None = None, samples: int = 20,
               seed: int = 0, jobs: int = 2, estimate: str = "regs", generated_dir: str | None = None,
               arch: str | None = None) -> tuple[NvccCheck, list[str]]:
    """Compile ``samples`` random valid configurations (``seed``) of a space's kernel with nvcc and
    compare ptxas's register count with the space's estimate. Returns the check and the iterator
    columns (for :meth:`NvccCheck.report`). ``arch`` ('sm_90') overrides the profile's."""

    if samples < 1:
        raise BeastError("--samples must be at least 1")
    nvcc = nvcc_path()
    space = load(space_path)
    kernel = find_kernel(space)
    if kernel is None:
        raise BeastError(f"space '{space.name}' declares no kernel (beast.kernel(...)): nothing to "
                         "compile", space.path)
    var = space.variables.get(estimate)
    if var is None or var.kind != "derived":
        raise BeastError(f"space '{space.name}' has no derived value '{estimate}' (the register "
                         "estimate to check)", space.path)
    source = kernel.source_text("cuda")
    profile = load_profile(device)
    note = None
    if arch is None:
        arch, note = choose_arch(profile.get("compute_capability"), supported_arches(nvcc))
    plan = compile_space(space, device=profile, settings=settings or {}, generated_dir=generated_dir)
    typed_settings = {k: _plain(v) for k, v in plan.specialized.settings.items()}
    configs = plan.enumerate()
    columns = list(plan.columns)
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(len(configs), size=min(samples, len(configs)), replace=False)) \
        if len(configs) else []
    reference = ReferenceEnumerator(space, profile, settings or {})
    check = NvccCheck(space.name, f"{profile.key} ({profile.name})", arch, estimate, typed_settings,
                      len(configs), note)

    launches = []
    for index in picked:
        config = {c: _plain(configs[c][index]) for c in columns}
        launches.append(kernel.launch(config, typed_settings, profile, "cuda", source))
    with tempfile.TemporaryDirectory(prefix="beastgen-nvcc-") as workdir, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_compile_one, nvcc, arch, launch.full_source(), launch.name, workdir, i)
                   for i, launch in enumerate(launches)]
        results = [f.result() for f in futures]
    for launch, result in zip(launches, results):
        value = reference.derived_values(launch.config, [estimate])[estimate]
        row = {"config": launch.config, "estimate": _plain(value), "error": result.get("error"),
               "registers": None, "spill_stores": None, "spill_loads": None, "stack": None,
               "smem": None, "excess": None, "exceeds": False}
        if row["error"] is None:
            for key in ("registers", "spill_stores", "spill_loads", "stack", "smem"):
                row[key] = result[key]
            if value is not None:
                excess = result["registers"] - value
                row["excess"] = int(excess) if float(excess).is_integer() else round(float(excess), 2)
                row["exceeds"] = result["registers"] > value
        check.rows.append(row)
    return check, columns


__all__ = ["nvcc_check", "NvccCheck", "parse_ptxas", "choose_arch", "supported_arches", "nvcc_path"]
