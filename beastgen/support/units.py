"""Times as a user writes and reads them: a threshold (``1.5ms``, ``250us``, ``0.002`` seconds, ``2x``
the best bound, ``inf``) and a number of seconds printed with its unit."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import BeastError

_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class Threshold:
    """A time threshold, in seconds, or a factor of the best bound (``2x``)."""

    seconds: float | None = None
    factor: float | None = None

    def resolve(self, best_bound: float) -> float:
        """In seconds. A factor of a best bound below zero is refused: it would lie below the best
        bound and keep nothing (:meth:`CompiledPlan.threshold_seconds` names the negative term)."""
        if self.factor is None:
            return self.seconds
        if best_bound < 0:
            raise BeastError(f"threshold {self}: the best bound, {format_seconds(best_bound)}, is "
                             f"below zero, and {self.factor:g}x of it is below every bound: give "
                             "the threshold as a time")
        return self.factor * best_bound

    def __str__(self):
        return f"{self.factor:g}x the best bound" if self.factor is not None else format_seconds(self.seconds)


def parse_threshold(text: str) -> Threshold:
    """``1.5ms``, ``250us``, ``0.002`` (seconds), ``2x`` (of the best bound) or ``inf``."""
    cleaned = text.strip().lower()
    if cleaned in ("inf", "infinity", "none"):
        return Threshold(seconds=math.inf)
    if cleaned.startswith("-"):
        raise BeastError(f"threshold {text!r} is negative: a run time is never below zero; give a "
                         "time (1.5ms, 250us, 0.002) or a factor of the best bound (2x)")
    match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(x|s|ms|us|µs|ns)?", cleaned)
    if not match:
        raise BeastError(f"cannot read threshold {text!r}: give a time (1.5ms, 250us, 0.002) "
                         "or a factor of the best bound (2x)")
    value, unit = float(match.group(1)), match.group(2) or ""
    if unit == "x":
        if value < 1:
            raise BeastError(f"threshold factor {text!r} is below 1x: nothing would be kept")
        return Threshold(factor=value)
    return Threshold(seconds=value * _UNITS[unit])


def format_seconds(seconds: float) -> str:
    if seconds is None or math.isinf(seconds):
        return "inf"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds:.3g} s"
