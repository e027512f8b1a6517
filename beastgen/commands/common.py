"""What several commands share: compiling the space named on the command line, describing it, the
JSON record of the target, and the count's report."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import sys

from ..compiler.runtime import Estimate
from ..devices.profiles import DEFAULT_DEVICE
from ..errors import BeastError
from ..loading.plancache import compile_cached
from ..support.table import format_table
from ..support.units import Threshold, parse_threshold


def parse_settings(pairs: list[list[str]] | None) -> dict:
    """The ``--set name=value`` words as a dict of name -> text."""
    settings = {}
    for group in pairs or []:
        for pair in group:
            name, sep, value = pair.partition("=")
            if not sep or not name:
                raise BeastError(f"--set expects name=value, got {pair!r}")
            settings[name.strip()] = value.strip()
    return settings


def parse_kernel_time(text: str | None, option: str) -> float | None:
    """A kernel's run time written as ``0.6ms``, ``550us``, ``2e-3`` (seconds) ... in seconds
    (:func:`beastgen.support.units.parse_threshold` reads it; a factor, zero or infinity is refused)."""
    if text is None:
        return None
    try:
        parsed = parse_threshold(text)
    except BeastError:
        parsed = Threshold()
    if parsed.seconds is None or not 0 < parsed.seconds < math.inf:
        raise BeastError(f"{option} expects a time above zero such as 0.6ms, 550us or 2e-3 (seconds), "
                         f"got {text!r}")
    return parsed.seconds


def jobs(args) -> int:
    return args.jobs or os.cpu_count() or 1


def shows_progress(args) -> bool:
    """Progress lines (on a terminal only) unless --json or --no-progress."""
    return not (getattr(args, "json", False) or getattr(args, "no_progress", False))


def check_plot(args) -> None:
    """``--plot FILE``: matplotlib and the file's folder checked before the work (a tune can take
    hours), not when the picture is drawn."""
    if not getattr(args, "plot", None):
        return
    if importlib.util.find_spec("matplotlib") is None:
        raise BeastError("--plot needs matplotlib: pip install 'beastgen[plot]' (or leave out --plot)")
    folder = os.path.dirname(os.path.abspath(args.plot))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise BeastError("--plot: the picture's folder does not exist or cannot be written", folder)


def compile_target(args):
    """The compiled plan, from the plan cache when nothing it depends on changed."""
    return compile_cached(args.space, device=args.device, settings=parse_settings(args.settings),
                          generated_dir=args.generated_dir)


def announce_compiling(plan) -> None:
    """Say so on stderr when the count is about to compile (Numba's cache does not hold it)."""
    if plan.count_needs_compiling():
        print("compiling the enumerator (cached after the first run)...", file=sys.stderr, flush=True)


#: seconds spent learning a space's size before its enumeration (an exact count when that fits)
SIZE_SECONDS = 0.5


def learn_size(plan):
    """The number of valid configurations (an :class:`~beastgen.compiler.runtime.Estimate`):
    counted when that takes a fraction of :data:`SIZE_SECONDS`, else estimated in that time. A
    nest bounded small (``plan.small``) is counted at once: the C library or the NumPy walk answers
    in milliseconds, where the estimator would first compile with Numba for seconds."""
    plan.load_every_native_function()  # what the enumeration runs, compiled before it is timed
    if plan.small:
        count = float(plan.count())
        return Estimate(count, count, count, 0, plan.last_seconds, "exact")
    return plan.estimate(seconds=SIZE_SECONDS, method="knuth")


def size_text(size) -> str:
    """'82,984 configurations', or for an estimate 'about 83,000' (two digits), 'about 4.6e+11'."""
    if size.method == "exact":
        return f"{size.count:,.0f} configurations"
    rounded = float(f"{size.count:.2g}")
    shown = f"{rounded:,.0f}" if rounded < 1e9 else f"{rounded:.2g}"
    return f"about {shown} configurations"


def describe_target(plan) -> str:
    target = plan.target
    default = " (the built-in default; choose with --device)" if target.device_source == "built-in" \
        and target.device == DEFAULT_DEVICE else ""
    settings = ", ".join(f"{k}={v!r}" for k, v in target.settings.items()) or "none"
    return (f"space {target.space} ({target.path}) on {target.device} "
            f"({target.device_name}){default}\nsettings: {settings}")


def target_record(plan) -> dict:
    target = plan.target
    return {"space": target.space, "path": target.path, "device": target.device,
            "settings": target.settings}


def report_count(args, plan, count: int, stats, record: dict, why_empty: str | None) -> None:
    """After the count's line: why the space is empty, the statistics, the JSON record."""
    if count == 0:
        print(f"empty: {why_empty or 'the space is empty'}")
    if stats:
        print()
        print(format_stats(plan, stats))
    if args.json:
        record = target_record(plan) | {"count": count} | record
        if stats:
            record["stats"] = stats.as_dict()
        print(json.dumps(record))


def format_stats(plan, stats) -> str:
    """Per-level iterations with the filters placed at each level and what they rejected."""
    rows = []
    for index, level in enumerate(plan.plan.levels):
        iterations = stats.levels[index][1]
        rows.append([str(index), level.iterator.name, f"{iterations:,}", "", ""])
        for item in level.items[1:]:
            if item.kind == "filter":
                rows.append(["", "", "", f"filter {item.name}", f"{stats.rejections[item.name]:,}"])
            if stats.errors.get(item.name):
                rows.append(["", "", "", f"{item.kind} {item.name} raised", f"{stats.errors[item.name]:,}"])
        if stats.errors.get(level.iterator.name):
            rows.append(["", "", "", "domain raised", f"{stats.errors[level.iterator.name]:,}"])
    total = sum(iterations for _, iterations in stats.levels)
    per_valid = f"{total / stats.count:,.1f}" if stats.count else "no valid configuration"
    return (format_table(["level", "iterator", "iterations", "filter placed here", "rejected"], rows)
            + f"\nloop iterations: {total:,} in all; iterations per valid configuration: {per_valid}")
