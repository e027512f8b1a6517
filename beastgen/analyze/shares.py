"""What each parameter is worth: a functional-ANOVA style decomposition of the variance of
``y = log(time)`` over the measured configurations, each parameter taken as a factor (its
distinct values the levels).

The estimator (conditional means on the measurements, i.e. Sobol indices estimated by binning):

- a parameter's share ``S_i = Var(E[y | x_i]) / Var(y)``: the variance of the mean of ``y`` over
  the configurations with each value of ``x_i`` (weighted by how many have it), over the variance
  of ``y`` (Pearson's correlation ratio eta squared);
- a pair's share ``S_ij = Var(E[y | x_i, x_j]) / Var(y) - S_i - S_j`` (at least 0): what the two
  explain together beyond their own shares, their interaction.

On a full grid of parameter values measured evenly, these are the first- and second-order terms
of the functional ANOVA (Sobol) decomposition, and the shares with the rest ("higher order and
noise") sum to 1. In a constrained space, where the filters tie parameters together, two
correlated parameters each take credit for what they explain jointly, so the shares can sum past
1; and a pair with few configurations per value pair absorbs noise (about ``(cells - 1) / N``
of the noise's share).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


@dataclass
class Shares:
    total_variance: float  # of log(time)
    single: dict[str, float]  # parameter -> share
    pairs: dict[tuple[str, str], float]  # (parameter, parameter) -> interaction share
    best_values: list[dict]  # per parameter: the best value and the spread

    @property
    def rest(self) -> float:
        """What neither a parameter nor a pair explains (higher order and noise), at least 0."""
        return max(0.0, 1.0 - sum(self.single.values()) - sum(self.pairs.values()))


def _codes(values: list) -> tuple[np.ndarray, list]:
    """Each value's level (0, 1, ...) and the levels in sorted order (numbers before text)."""
    levels = sorted(set(values), key=lambda v: (isinstance(v, str), v))
    position = {level: i for i, level in enumerate(levels)}
    return np.array([position[v] for v in values], dtype=np.int64), levels


def _explained(codes: np.ndarray, y: np.ndarray) -> float:
    """Var(E[y | codes]), the conditional means weighted by their counts."""
    counts = np.bincount(codes)
    sums = np.bincount(codes, weights=y)
    present = counts > 0
    means = sums[present] / counts[present]
    return float(np.sum(counts[present] * (means - y.mean()) ** 2) / len(y))


def parameter_shares(parameters: list[str], configs: list[dict], times: np.ndarray) -> Shares:
    """The shares of the variance of log(time) of each varying parameter and each pair of them,
    and each parameter's best value (see the module docstring)."""
    y = np.log(times)
    total = float(y.var())
    coded = {}
    for name in parameters:
        codes, levels = _codes([config[name] for config in configs])
        if len(levels) > 1:
            coded[name] = (codes, levels)
    single = {name: (_explained(codes, y) / total if total > 0 else 0.0)
              for name, (codes, _) in coded.items()}
    pairs = {}
    for a, b in itertools.combinations(coded, 2):
        (codes_a, _), (codes_b, levels_b) = coded[a], coded[b]
        joint = _explained(codes_a * len(levels_b) + codes_b, y) / total if total > 0 else 0.0
        pairs[(a, b)] = max(0.0, joint - single[a] - single[b])
    return Shares(total, single, pairs, best_values(coded, times))


def best_values(coded: dict, times: np.ndarray) -> list[dict]:
    """Per parameter: the value of the fastest configuration, the spread of the times with it
    (best, quartiles), and what the other values cost at best (the ratio of their fastest to the
    fastest overall)."""
    out = []
    fastest = int(np.argmin(times))
    for name, (codes, levels) in coded.items():
        per_value = []
        for level_index, level in enumerate(levels):
            chosen = times[codes == level_index]
            per_value.append({"value": level, "configurations": int(len(chosen)),
                              "best_s": float(chosen.min()), "median_s": float(np.median(chosen)),
                              "p25_s": float(np.percentile(chosen, 25)),
                              "p75_s": float(np.percentile(chosen, 75))})
        best = levels[codes[fastest]]
        others = [v["best_s"] / times[fastest] for v in per_value if v["value"] != best]
        by_median = min(per_value, key=lambda v: v["median_s"])["value"]
        out.append({"parameter": name, "best_value": best, "best_by_median": by_median,
                    "with_best": next(v for v in per_value if v["value"] == best),
                    "others_best_ratio": [min(others), max(others)] if others else [1.0, 1.0],
                    "values": per_value})
    return out
