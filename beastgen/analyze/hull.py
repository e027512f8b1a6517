"""The performance hull (BEAST's "data analysis: convex hull"): for one metric, the upper convex
hull of (metric, performance) over the measured configurations, computed in the coordinates the
picture draws (log10 where an axis spans decades) with SciPy's ConvexHull (Qhull). The
configurations on it are the frontier an engineer tunes along: for every value of the metric, no
measured configuration lies above the hull.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull, QhullError

#: an axis is drawn in log scale when its positive values span this factor or more
DECADES = 100.0


@dataclass
class Hull:
    """The upper hull of one metric: ``vertices`` index the configurations, left to right."""

    metric: str
    log_x: bool
    log_y: bool
    vertices: list[int]
    points: int  # configurations with a value of the metric (drawn)


def spans_decades(values: np.ndarray) -> bool:
    """Whether an axis of these values is better drawn in log scale (all positive, wide range)."""
    finite = values[np.isfinite(values)]
    return len(finite) > 1 and bool((finite > 0).all()) and bool(finite.max() >= DECADES * finite.min())


def upper_hull(metric: str, x: np.ndarray, y: np.ndarray, log_x: bool | None = None,
               log_y: bool | None = None) -> Hull:
    """The upper convex hull of the points ``(x[i], y[i])`` (NaN left out)."""
    log_x = spans_decades(x) if log_x is None else log_x
    log_y = spans_decades(y) if log_y is None else log_y
    keep = np.isfinite(x) & np.isfinite(y)
    if log_x:
        keep &= x > 0
    if log_y:
        keep &= y > 0
    index = np.flatnonzero(keep)
    if not len(index):
        return Hull(metric, log_x, log_y, [], 0)
    px = np.log10(x[index]) if log_x else x[index].astype(float)
    py = np.log10(y[index]) if log_y else y[index].astype(float)
    order = np.lexsort((-py, px))  # by x, the highest first among equal x
    first = np.r_[True, px[order][1:] != px[order][:-1]]
    top = order[first]  # the highest point at each distinct x: only these can be on the upper hull
    if len(top) <= 2:
        return Hull(metric, log_x, log_y, [int(i) for i in index[top]], len(index))
    points = np.column_stack([px[top], py[top]])
    span = points.max(axis=0) - points.min(axis=0)
    scaled = (points - points.min(axis=0)) / np.where(span > 0, span, 1.0)  # Qhull's tolerances
    try:
        hull = ConvexHull(scaled)
    except QhullError:  # every point on one line: its two ends
        return Hull(metric, log_x, log_y, [int(index[top[0]]), int(index[top[-1]])], len(index))
    ring = list(hull.vertices)  # counterclockwise in 2-D
    right = max(ring, key=lambda v: (points[v, 0], points[v, 1]))
    left = min(ring, key=lambda v: (points[v, 0], -points[v, 1]))
    start = ring.index(right)
    chain = []
    for step in range(len(ring)):  # counterclockwise from the rightmost over the top to the leftmost
        vertex = ring[(start + step) % len(ring)]
        chain.append(vertex)
        if vertex == left:
            break
    return Hull(metric, log_x, log_y, [int(index[top[v]]) for v in reversed(chain)], len(index))
