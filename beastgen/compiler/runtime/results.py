"""What a compiled plan answers, as plain data: its target, a count's statistics, an estimate,
the census of its split nodes."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

# numpy is imported where it is used: a native count does not need it
if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Target:
    """What a compiled plan was compiled for, as plain data (the plan cache stores it as JSON)."""

    space: str
    path: str
    device: str
    device_name: str
    device_source: str
    settings: dict

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Stats:
    """Per-level loop iterations and per-item rejections (filters) or errors (division by zero...)."""

    count: int
    levels: list[tuple[str, int]]  # (iterator, iterations executed at that level)
    rejections: dict[str, int]  # filter -> configurations (or subtrees) it rejected
    errors: dict[str, int]  # iterator/derived/filter -> times it raised (rejected)
    seconds: float

    def as_dict(self) -> dict:
        return {"count": self.count, "levels": [{"iterator": n, "iterations": v} for n, v in self.levels],
                "filters": self.rejections, "errors": self.errors, "seconds": self.seconds}


@dataclass
class Estimate:
    """An estimated number of valid configurations and its 95% confidence interval."""

    count: float
    low: float
    high: float
    samples: int  # Knuth: random descents; Chen: runs
    seconds: float
    method: str = "knuth"  # "knuth", "chen", or "exact" (counted within the time budget)

    @classmethod
    def of_sums(cls, total: float, total_sq: float, samples: int, seconds: float,
                method: str) -> "Estimate":
        """The mean of ``samples`` estimates and its 95% confidence interval (normal
        approximation), from their sum and sum of squares."""
        mean = total / samples
        spread = math.sqrt(max(total_sq / samples - mean * mean, 0.0) / samples)
        return cls(mean, max(mean - 1.96 * spread, 0.0), mean + 1.96 * spread, samples, seconds, method)


@dataclass
class Census:
    """Estimates per split node: valid configurations below it, and loop iterations to reach them."""

    configurations: np.ndarray
    iterations: np.ndarray

    def __len__(self) -> int:
        return len(self.configurations)
