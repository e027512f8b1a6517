"""``beastgen analyze``: what a tuning's measurements mean, in pictures and tables (BEAST's data
analysis): the performance hull of each metric (:mod:`.hull`), the hierarchical clustering of the
metrics and of the fastest configurations (:mod:`.clusters`), what each parameter is worth
(:mod:`.shares`); drawn by :mod:`.figures`, reported by :mod:`.report`.

The measurements (:mod:`.measurements`) come from a results store or a Kernel Tuner cache file;
with the space file, each configuration also gets the space's metrics (:mod:`.space_metrics`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .clusters import ConfigurationFamilies, MetricClusters, cluster_configurations, cluster_metrics
from .hull import Hull, upper_hull
from .measurements import Measurements, Metric, load
from .shares import Shares, parameter_shares


@dataclass
class Axis:
    """A metric as the pictures draw it: numbers per configuration (a parameter's text values
    as their position among ``labels``)."""

    name: str
    values: np.ndarray
    unit: str
    kind: str
    note: str = ""
    labels: list | None = None  # the values of a parameter that is not a number


@dataclass
class Analysis:
    measurements: Measurements
    performance: np.ndarray
    performance_label: str
    performance_axis: str
    axes: list[Axis]
    hulls: dict[str, Hull]
    metric_clusters: MetricClusters | None
    families: ConfigurationFamilies | None
    shares: Shares
    notes: list[str] = field(default_factory=list)  # what was left out, and why

    @property
    def best(self) -> int:
        return int(np.argmin(self.measurements.times))

    def rho_with_time(self, metric: str) -> float:
        """Spearman's rho of a metric with the time (0 where it was not clustered)."""
        clusters = self.metric_clusters
        if clusters is None or metric not in clusters.names or "time" not in clusters.names:
            return 0.0
        return float(clusters.rho[clusters.names.index(metric), clusters.names.index("time")])


def analyze(path: str, run: str | None = None, space: str | None = None, device: str | None = None,
            settings: dict | None = None, generated_dir: str | None = None,
            progress=lambda share, what: None) -> Analysis:
    """Analyse the measurements in ``path`` (a results store, or a Kernel Tuner cache file);
    ``space`` adds the space's metrics. ``progress(share, what)`` follows the work."""
    found = load(path, run)
    progress(0.1, "reading")
    if space is not None:
        from .space_metrics import add_space_metrics  # compiles the space: only when given one
        add_space_metrics(found, space, device, settings, generated_dir,
                          lambda share: progress(0.1 + 0.4 * share, "the space's metrics"))
    else:
        found.unavailable.append("the bound terms, threads per block, shared memory, registers and "
                                 "occupancy: they need the space (--space SPACE)")
    progress(0.5, "hulls")
    performance = found.performance if found.performance is not None else 1.0 / found.times
    axes = parameter_axes(found) + [Axis(name, m.values, m.unit, m.kind, m.note)
                                    for name, m in found.metrics.items()]
    notes = list(found.unavailable)
    hulls = {axis.name: upper_hull(axis.name, axis.values, performance,
                                   log_x=False if axis.labels is not None else None)
             for axis in axes}
    progress(0.6, "clustering")
    table = {axis.name: axis.values for axis in axes if axis.labels is None}
    table["time"] = found.times
    metric_clusters = cluster_metrics(table)
    if metric_clusters is None:
        notes.append("no clustering of the metrics: fewer than three vary over the configurations")
    else:
        notes += [f"not clustered: {reason}" for reason in metric_clusters.left_out]
    families = cluster_configurations(found.times, found.configs, found.parameters, table)
    progress(0.8, "parameter shares")
    shares = parameter_shares(found.parameters, found.configs, found.times)
    return Analysis(found, performance, found.performance_label, found.performance_axis, axes, hulls, metric_clusters,
                    families, shares, notes)


def parameter_axes(found: Measurements) -> list[Axis]:
    """The parameters that vary, as axes (text values by their sorted position)."""
    axes = []
    for name in found.parameters:
        values = found.parameter_values(name)
        if len(set(map(str, values))) < 2:
            continue
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            axes.append(Axis(name, np.array(values, float), "", "parameter", "a tuning parameter"))
        else:
            labels = sorted(set(map(str, values)))
            axes.append(Axis(name, np.array([labels.index(str(v)) for v in values], float), "",
                             "parameter", "a tuning parameter (its values in sorted order)", labels))
    return axes


__all__ = ["Analysis", "Axis", "Measurements", "Metric", "analyze", "load"]
