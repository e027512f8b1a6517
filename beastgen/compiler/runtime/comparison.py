"""Lower bounds at work: the exhaustive-versus-pruned comparison (Telamon's Figure 2), its table and
its plot (``CompiledPlan.compare``, ``beastgen compare``).

Every bound term is a lower bound on a configuration's run time on its own; a configuration's bound
is the maximum of its terms. Bound-pruned enumeration keeps the valid configurations whose bound is
at most the threshold, cutting a whole subtree as soon as a term computed at its level exceeds it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import BeastError
from ...support.table import format_table
from ...support.units import Threshold, format_seconds


@dataclass
class LevelCuts:
    """One loop level of the comparison."""

    iterator: str
    visited_exhaustive: int  # iterations without any bound
    visited_hoisted: int  # iterations with each bound term tested where it can first be computed
    visited_innermost: int  # iterations with every bound term tested only innermost (no hoisting)
    subtrees_cut: int  # subtrees cut at this level by bound terms (hoisted)
    configurations_removed: int  # valid configurations inside those subtrees
    bound_terms: list[str] = field(default_factory=list)  # bound terms placed at this level


@dataclass
class Comparison:
    space: str
    device: str
    threshold: Threshold
    threshold_seconds: float
    best_bound_seconds: float
    exhaustive: int
    bound_pruned: int
    bound_pruned_innermost: int  # must equal bound_pruned
    levels: list[LevelCuts]

    def as_dict(self) -> dict:
        return {"space": self.space, "device": self.device, "threshold": str(self.threshold),
                "threshold_seconds": self.threshold_seconds,
                "best_bound_seconds": self.best_bound_seconds, "exhaustive": self.exhaustive,
                "bound_pruned": self.bound_pruned,
                "bound_pruned_without_hoisting": self.bound_pruned_innermost,
                "levels": [vars(level) for level in self.levels]}

    def table(self) -> str:
        rows = [[str(i), lv.iterator, f"{lv.visited_exhaustive:,}", f"{lv.visited_hoisted:,}",
                 f"{lv.visited_innermost:,}", f"{lv.subtrees_cut:,}", f"{lv.configurations_removed:,}",
                 ", ".join(lv.bound_terms)] for i, lv in enumerate(self.levels)]
        return format_table(["level", "iterator", "visited (no bound)", "visited (hoisted)",
                             "visited (innermost)", "subtrees cut", "configs removed",
                             "bound terms placed here"], rows)


def plot_comparison(comparison: Comparison, path: str) -> None:
    """Per level: nodes visited without bounds, with hoisted bounds, subtrees cut and configurations
    removed (log scale), in the spirit of Telamon's Figure 2."""
    try:  # optional (beastgen[plot]), and slow to import: only for --plot
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BeastError("--plot needs matplotlib: pip install 'beastgen[plot]'") from None

    levels = comparison.levels
    x = list(range(len(levels)))
    series = [("visited, no bound", [lv.visited_exhaustive for lv in levels]),
              ("visited, bounds hoisted", [lv.visited_hoisted for lv in levels]),
              ("visited, bounds innermost", [lv.visited_innermost for lv in levels]),
              ("subtrees cut", [lv.subtrees_cut for lv in levels]),
              ("valid configurations removed", [lv.configurations_removed for lv in levels])]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(8, len(levels) * 0.9), 5))
    for i, (label, values) in enumerate(series):
        ax.bar([at + (i - len(series) / 2 + 0.5) * width for at in x], [max(v, 0) for v in values], width, label=label)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xticks(x, [lv.iterator for lv in levels], rotation=45, ha="right")
    ax.set_xlabel("loop level (outermost first)")
    ax.set_ylabel("count (log scale)")
    ax.set_title(f"{comparison.space} on {comparison.device}: threshold {format_seconds(comparison.threshold_seconds)}"
                 f" ({comparison.threshold}); {comparison.bound_pruned:,} of {comparison.exhaustive:,} kept")
    # outside the axes, right of them: inside, it covered the last level's bars
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
