"""Hierarchical clustering (BEAST's "hierarchical clustering of GPU metrics"), with SciPy.

The metrics: Spearman's rank correlation rho between every two of them over the measured
configurations (ranks: the metrics span decades and relate monotonically rather than linearly),
the distance ``1 - |rho|`` (a quantity and its inverse move together), average linkage; the
clusters are the groups joined below :data:`METRIC_DISTANCE` (|rho| of at least 0.7 on average),
each named after its medoid, the member most correlated with the others.

The configurations: the :data:`FASTEST` fastest, each described by its profile (every metric
standardised: log10 where it spans decades, then z-scores), Ward linkage on the Euclidean
distance, cut into at most :data:`FAMILIES` families; each family named by its best time and the
parameter values most of its members share.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform
from scipy.stats import spearmanr

from .hull import spans_decades

METRIC_DISTANCE = 0.3
FASTEST = 400
FAMILIES = 4


@dataclass
class MetricClusters:
    names: list[str]  # the metrics clustered
    rho: np.ndarray  # Spearman's rho, names x names
    linkage: np.ndarray  # SciPy's linkage matrix
    clusters: list[dict]  # {"name", "members", "rho_with_time"}, the one holding time first
    rows: int  # configurations used (every metric known)
    left_out: list[str] = field(default_factory=list)  # metrics not clustered, and why


@dataclass
class ConfigurationFamilies:
    indices: np.ndarray  # the configurations clustered (into Measurements.configs)
    metrics: list[str]
    profile: np.ndarray  # standardised, indices x metrics
    linkage: np.ndarray
    labels: np.ndarray  # family of each (1 = the family of the fastest)
    families: list[dict]


def cluster_metrics(table: dict[str, np.ndarray]) -> MetricClusters | None:
    """Cluster the columns of ``table`` (equal lengths; one of them "time"); None when fewer than
    three metrics vary over enough configurations."""
    left_out, kept = [], {}
    for name, values in table.items():
        finite = np.isfinite(values)
        if finite.mean() < 0.5:
            left_out.append(f"{name}: known for {finite.mean():.0%} of the configurations")
        elif np.nanstd(values) == 0:
            left_out.append(f"{name}: the same for every configuration")
        else:
            kept[name] = values
    names = list(kept)
    matrix = np.column_stack([kept[n] for n in names]) if names else np.zeros((0, 0))
    complete = np.isfinite(matrix).all(axis=1) if names else np.zeros(0, bool)
    matrix = matrix[complete]
    if len(names) < 3 or len(matrix) < 4:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):  # a metric constant over these rows: NaN
        rho = np.atleast_2d(spearmanr(matrix).statistic)
    rho = np.nan_to_num(rho, nan=0.0)  # a metric constant over the complete rows: no correlation
    np.fill_diagonal(rho, 1.0)
    distance = np.clip(1.0 - np.abs(rho), 0.0, 1.0)
    np.fill_diagonal(distance, 0.0)
    linkage = hierarchy.linkage(squareform(distance, checks=False), method="average")
    labels = hierarchy.fcluster(linkage, t=METRIC_DISTANCE, criterion="distance")
    clusters = []
    for label in np.unique(labels):
        members = [names[i] for i in np.flatnonzero(labels == label)]
        rows = [names.index(m) for m in members]
        medoid = max(members, key=lambda m: np.abs(rho[names.index(m), rows]).mean())
        with_time = rho[names.index("time"), names.index(medoid)] if "time" in names else np.nan
        clusters.append({"name": medoid, "members": members, "rho_with_time": float(with_time)})
    clusters.sort(key=lambda c: ("time" not in c["members"], -abs(c["rho_with_time"]), c["name"]))
    return MetricClusters(names, rho, linkage, clusters, int(complete.sum()), left_out)


def cluster_configurations(times: np.ndarray, configs: list[dict], parameters: list[str],
                           table: dict[str, np.ndarray]) -> ConfigurationFamilies | None:
    """Families among the fastest configurations by their metric profile (see the module
    docstring); None with fewer than :data:`FAMILIES` + 1 configurations or no varying metric."""
    fastest = np.argsort(times, kind="stable")[:FASTEST]
    columns, names = [], []
    for name, values in table.items():
        if name == "time":
            continue
        chosen = values[fastest].astype(float)
        if not np.isfinite(chosen).all() or np.std(chosen) == 0:
            continue
        chosen = np.log10(chosen) if spans_decades(chosen) else chosen
        columns.append((chosen - chosen.mean()) / chosen.std())
        names.append(name)
    if not names or len(fastest) <= FAMILIES:
        return None
    profile = np.column_stack(columns)
    linkage = hierarchy.linkage(profile, method="ward")
    labels = hierarchy.fcluster(linkage, t=FAMILIES, criterion="maxclust")
    renumbered = {}  # family 1 holds the fastest, then by their best time
    for label in labels[np.argsort(times[fastest], kind="stable")]:
        renumbered.setdefault(label, len(renumbered) + 1)
    labels = np.array([renumbered[label] for label in labels])
    families = []
    for family in sorted(renumbered.values()):
        members = fastest[labels == family]
        shared = {}
        for parameter in parameters:
            value, count = Counter(str(configs[i][parameter]) for i in members).most_common(1)[0]
            if count >= 0.8 * len(members) and len({str(c[parameter]) for c in configs}) > 1:
                shared[parameter] = value
        best = members[np.argmin(times[members])]
        families.append({"family": family, "size": int(len(members)),
                         "best_time_s": float(times[members].min()),
                         "median_time_s": float(np.median(times[members])),
                         "best_config": configs[best], "shared_values": shared})
    return ConfigurationFamilies(fastest, names, profile, linkage, labels, families)
