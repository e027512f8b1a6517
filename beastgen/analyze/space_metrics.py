"""What the space knows about each measured configuration: every bound term, every numeric
derived value, the launch shape (threads per block and work-groups of the space's kernel) and the
occupancy the space's ``bound_terms.resident_blocks`` describes (resident blocks x threads per
block over the device's threads per SM, from the limits the space gave it: threads, shared memory
and, where given, registers).

The space is compiled for the device and settings the measurements were taken with (a store's run
records them; a Kernel Tuner cache names its GPU and problem size), its valid configurations
enumerated and matched to the measured ones by their parameters, and the values computed over all
of them at once in NumPy (``compiler.vectorised.item_values``), or one configuration at a time by
the reference evaluator where a value is a Python function.
"""
from __future__ import annotations

import re

import numpy as np

from ..compiler.reference import ReferenceEnumerator
from ..compiler.runtime import compile_space
from ..compiler.vectorised import Unsupported, item_values
from ..devices import load_profile
from ..errors import BeastError
from ..harness.backends.replay import ReplayBackend
from ..harness.kernel import find_kernel
from ..harness.recorded import Replay
from ..loading.load import load as load_space
from .measurements import Measurements, Metric

#: bound terms are seconds; these derived values' units are known from bound_terms' arguments
NUMERIC = ("int", "float", "bool")


def add_space_metrics(found: Measurements, space_path: str, device: str | None = None,
                      settings: dict | None = None, generated_dir: str | None = None,
                      progress=lambda share: None) -> None:
    """Add the space's metrics of each measured configuration to ``found.metrics`` (and GFLOP/s
    as its performance where the space defines ``flops``, the floating-point operations of one
    run); what cannot be had goes to ``found.unavailable``."""
    space = load_space(space_path)
    profile = _profile(found, device, space)
    kernel = find_kernel(space)
    chosen = _settings(found, space, kernel)
    chosen.update(settings or {})
    plan = compile_space(space, device=profile, settings=chosen, generated_dir=generated_dir)
    if plan.plan is None:
        raise BeastError(f"the space is empty for these settings ({plan.empty_reason})", space_path)
    missing = [name for name in found.parameters if name not in plan.columns]
    if missing:
        raise BeastError(f"the measured parameters {missing} are not iterators of space "
                         f"'{space.name}'", found.source)
    progress(0.1)
    valid = plan.enumerate()
    rows = _matched_rows(valid, found)
    progress(0.3)
    matched = rows >= 0
    if not matched.all():
        found.unavailable.append(f"{int((~matched).sum()):,} of {len(rows):,} measured configurations "
                                 f"are not valid in space '{space.name}': no space metric for them")
    columns = {name: np.asarray(valid[name])[np.where(matched, rows, 0)] for name in plan.plan.order}
    items = plan.specialized.items
    terms = list(plan.bound_terms) if plan.plan.bounds else []
    derived = [name for name, item in items.items()
               if item.kind == "derived" and item.value_type in NUMERIC]
    values = _values(plan, columns, terms + derived, matched)
    progress(0.7)
    for name in terms:
        source = getattr(space.variables[name].obj, "source", None)
        found.metrics[name] = Metric(values[name], "s", "bound term",
                                     f"lower bound term{f' ({source})' if source else ''}")
    if not terms:
        found.unavailable.append(f"bound terms: space '{space.name}' declares none")
    for name in derived:
        if np.nanstd(values[name]) > 0:
            found.metrics[name] = Metric(values[name], "", "derived", "a derived value of the space")
    _launch(found, plan, kernel, columns, matched)
    _occupancy(found, space, plan, columns, values, profile)
    _flops(found, plan, values, derived)
    progress(1.0)


def _profile(found: Measurements, device: str | None, space):
    """``--device``, else the run's device (an OpenCL device's profile read from it again, as
    tune read it), else the cache file's GPU's, as the replay backend chooses it (a built-in
    profile, or for a space that reads no device property, one that only names the GPU)."""
    spec = device if device is not None else found.run.get("device")
    if spec is not None:
        live = re.fullmatch(r"opencl:?(\d+)", str(spec).strip().lower())
        if live:
            from ..devices.opencl import get_device, opencl_profile  # pyopencl: here only
            return opencl_profile(get_device(int(live.group(1))), int(live.group(1)))
        try:
            return load_profile(spec)
        except BeastError as e:
            if device is not None:
                raise
            raise BeastError(f"the run's device '{spec}' has no built-in profile ({e.message}): "
                             "pass --device NAME or a profile file", found.source) from None
    named = Replay(found.source, found.device_name, "", found.problem_size, found.parameters, {})
    return ReplayBackend(named).device_profile(space)  # as tune --backend replay chooses


def _settings(found: Measurements, space, kernel) -> dict:
    """The settings the measurements were taken with: a store's run's; a cache file's problem
    size, given to the kernel's ``problem_size`` settings (else M, N, K), as the replay backend does."""
    if found.run:
        return {name: str(value) for name, value in found.run["settings"].items()
                if name in space.settings}
    names = kernel.problem_size if kernel and kernel.problem_size else \
        tuple(n for n in ("M", "N", "K") if n in space.settings)
    return {name: str(value) for name, value in zip(names, found.problem_size)}


def _matched_rows(valid: np.ndarray, found: Measurements) -> np.ndarray:
    """For each measured configuration, its row in the space's enumeration ``valid`` (-1: not
    valid in the space): both sets of rows coded column by column, then matched whole."""
    codes_valid, codes_measured = [], []
    for name in found.parameters:
        measured = found.parameter_values(name)
        column = np.asarray(valid[name])
        if column.dtype.kind in "biuf" and all(isinstance(v, (int, float)) for v in measured):
            _, inverse = np.unique(np.concatenate([column.astype(float), np.asarray(measured, float)]),
                                   return_inverse=True)
        else:
            _, inverse = np.unique(np.concatenate([column.astype(str), np.asarray(measured, str)]),
                                   return_inverse=True)
        codes_valid.append(inverse[:len(column)])
        codes_measured.append(inverse[len(column):])
    rows, inverse = np.unique(np.concatenate([np.column_stack(codes_valid),
                                              np.column_stack(codes_measured)]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    position = np.full(len(rows), -1, dtype=np.int64)
    position[inverse[:len(valid)][::-1]] = np.arange(len(valid))[::-1]  # the first valid row of each
    return position[inverse[len(valid):]]


def _values(plan, columns: dict, names: list[str], matched: np.ndarray) -> dict[str, np.ndarray]:
    """Each of ``names`` at each configuration (NaN where unmatched or where computing it raises)."""
    constants = plan.specialized.constants
    folded = {name: np.full(len(matched), float(constants[name])) for name in names
              if name in constants and isinstance(constants[name], (int, float))}
    names = [name for name in names if name not in folded]
    if not names:
        return folded
    try:
        values = item_values(plan.plan, columns, names)
    except Unsupported:  # a Python function among them: the reference evaluator, one at a time
        spec = plan.specialized
        reference = ReferenceEnumerator(spec.space, spec.device, spec.settings)
        terms = set(plan.bound_terms) & set(names)
        values = {name: np.full(len(matched), np.nan) for name in names}
        order = plan.plan.order
        for i in np.flatnonzero(matched):
            config = {name: columns[name][i].item() for name in order}
            computed = reference.derived_values(config, [n for n in names if n not in terms])
            computed.update(reference.term_values(config) if terms else {})
            for name in names:
                value = computed.get(name)
                values[name][i] = float(value) if isinstance(value, (int, float)) else np.nan
    return {name: np.where(matched, column, np.nan) for name, column in {**folded, **values}.items()}


def _launch(found: Measurements, plan, kernel, columns: dict, matched: np.ndarray) -> None:
    """Threads per block and work-groups of the space's kernel, per configuration."""
    if kernel is None:
        found.unavailable.append("work-groups: the space declares no kernel "
                                 "(beast.kernel(..., block=..., grid=...))")
        return
    settings = plan.specialized.settings
    threads, groups = np.full(len(matched), np.nan), np.full(len(matched), np.nan)
    order = plan.plan.order
    for i in np.flatnonzero(matched):
        config = {name: columns[name][i].item() for name in order}
        launch = kernel.launch(config, settings, plan.specialized.device, "opencl", "")
        threads[i], groups[i] = np.prod(launch.block), np.prod(launch.grid)
    found.metrics["threads per block"] = Metric(threads, "threads", "launch", "the kernel's block")
    found.metrics["work-groups"] = Metric(groups, "blocks", "launch", "the kernel's grid")


def _occupancy(found, space, plan, columns, values, profile) -> None:
    """Occupancy and what a block holds, from the space's ``bound_terms.resident_blocks``."""
    declared = [(name, var.obj.occupancy_inputs) for name, var in space.variables.items()
                if var.kind == "derived" and isinstance(getattr(var.obj, "occupancy_inputs", None), dict)]
    if not declared:
        what = ("" if "threads per block" in found.metrics else "threads per block, ") + \
            "occupancy, shared memory per block, registers per thread"
        found.unavailable.append(f"{what}: the space does not call bound_terms.resident_blocks("
                                 "threads, shared_bytes, regs_per_thread)")
        return
    name, inputs = declared[0]
    labels = {"threads": ("threads per block", "threads"),
              "shared_bytes": ("shared memory per block", "bytes"),
              "regs_per_thread": ("registers per thread", "registers")}
    known = {}
    for role, (label, unit) in labels.items():
        column = _input_column(inputs[role], plan, columns, values)
        if column is None:
            if role != "threads" or label not in found.metrics:
                found.unavailable.append(f"{label}: not given to bound_terms.resident_blocks in "
                                         f"'{name}'" if inputs[role] is None or isinstance(inputs[role], (int, float))
                                         else f"{label}: '{inputs[role]}' is not a named value of the space")
            continue
        known[role] = column
        if label not in found.metrics:
            found.metrics[label] = Metric(column, unit, "launch" if role == "threads" else "resource",
                                          f"'{inputs[role].name}', as given to bound_terms.resident_blocks")
    resident = _input_column(name, plan, columns, values)
    threads = known.get("threads")
    if resident is None or threads is None:
        found.unavailable.append(f"occupancy: '{name}' or its threads per block is not computed per configuration")
        return
    limits = "threads and shared memory" + (", registers" if "regs_per_thread" in known else
                                             " (registers not given: an upper bound)")
    found.metrics["occupancy"] = Metric(resident * threads / profile.get("max_threads_per_sm"), "",
                                        "resource", f"'{name}' x threads / max_threads_per_sm ({limits})")


def _input_column(expr, plan, columns: dict, values: dict):
    """The values of a space value (a name, or an expression bound to one) at each
    configuration, or None where it has no name."""
    name = expr if isinstance(expr, str) else getattr(expr, "name", None)
    size = len(next(iter(columns.values())))
    if name is None:
        return None
    if name in plan.specialized.constants and isinstance(plan.specialized.constants[name], (int, float)):
        return np.full(size, float(plan.specialized.constants[name]))
    if name in columns:
        return np.asarray(columns[name], dtype=np.float64)
    if name in values:
        return values[name]
    if name in plan.specialized.items:
        try:
            return item_values(plan.plan, columns, [name])[name]
        except Unsupported:
            return None
    return None


def _flops(found: Measurements, plan, values: dict, derived: list[str]) -> None:
    """GFLOP/s where the space defines ``flops`` (a constant or a derived value)."""
    if found.performance is not None and "GFLOP/s" in found.performance_label:
        return
    constants = plan.specialized.constants
    if "flops" in constants and isinstance(constants["flops"], (int, float)):
        flops = np.full(len(found.times), float(constants["flops"]))
    elif "flops" in derived:
        flops = values["flops"]
    else:
        found.unavailable.append("GFLOP/s: the space defines no `flops` (the floating-point operations "
                                 "of one run): performance is 1 / time")
        return
    found.performance = flops / found.times / 1e9
    found.performance_label = "GFLOP/s (the space's flops / time)"
    found.performance_axis = "GFLOP/s"
