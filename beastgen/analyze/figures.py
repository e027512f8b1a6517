"""The pictures of an analysis, with matplotlib (Agg): what a performance engineer would put in a
paper. Log axes where values span decades, units on every axis, legends outside the data,
Okabe and Ito's colour-blind-safe colours, ColorBrewer's RdBu (diverging) and cividis
(sequential) maps.
"""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the Agg backend
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402
from scipy.cluster import hierarchy  # noqa: E402

from .clusters import METRIC_DISTANCE  # noqa: E402

#: Okabe and Ito's palette (colour-blind safe): blue, vermillion, bluish green, orange, sky blue,
#: reddish purple, yellow, black
OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#56B4E9", "#CC79A7", "#F0E442", "#000000"]
POINTS, HULL, BEST = "#56B4E9", "#D55E00", "#000000"
DPI = 100
#: panels of a hull figure at most
HULL_PANELS = 12
#: figure groups: (file stem, title, metric kinds)
HULL_FIGURES = [("hull_parameters", "the parameters", ("parameter",)),
                ("hull_metrics", "the model's and the measurements' metrics",
                 ("bound term", "launch", "resource", "recorded")),
                ("hull_derived", "the space's derived values", ("derived",))]


def time_unit(seconds: float) -> tuple[str, float]:
    """A unit for times around ``seconds``: (name, factor from seconds)."""
    for name, factor in (("s", 1.0), ("ms", 1e3), ("µs", 1e6)):
        if seconds * factor >= 1.0:
            return name, factor
    return "ns", 1e9


def plain_log_ticks(axis) -> None:
    """Tick labels of a log axis as plain numbers (70, 80, 100), not powers of ten."""
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(FuncFormatter(  # 20, 30, 50 between the decades, not every one
        lambda value, _: f"{value:g}" if value > 0 and round(value / 10 ** math.floor(math.log10(value)))
        in (2, 3, 5) else ""))


def value_ticks(ax, labels: list) -> None:
    """A parameter's values as x tick labels, every k-th where they are many."""
    step = max(1, math.ceil(len(labels) / 12))
    ax.set_xticks(range(0, len(labels), step))
    ax.set_xticklabels([str(v) for v in labels[::step]], rotation=45 if len(labels) > 5 else 0,
                       fontsize=8)


def axis_label(axis) -> str:
    return f"{axis.name} ({axis.unit})" if axis.unit else axis.name


def panel_grid(count: int, legend: bool = True):
    """A figure of ``count`` panels (4 a row, 3.6 x 3.0 inches each) with fixed margins: room for
    the labels and, below, a legend (tight_layout would measure every text, seconds a figure)."""
    columns = min(4, count)
    rows = math.ceil(count / columns)
    width, height = 3.6 * columns, 3.0 * rows + 0.5 + (0.5 if legend else 0.0)
    fig, grid = plt.subplots(rows, columns, figsize=(width, height), squeeze=False)
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.15 / width, top=1 - 0.45 / height,
                        bottom=(0.65 + (0.5 if legend else 0.0)) / height, wspace=0.38, hspace=0.5)
    for ax in list(grid.flat)[count:]:
        ax.set_visible(False)
    return fig, grid


def hull_figure(analysis, kinds, path: str, title: str, most: int = HULL_PANELS) -> bool:
    """One panel per metric of ``kinds``: every configuration's performance against the metric,
    the upper convex hull and its configurations, the fastest marked; the ``most`` metrics most
    correlated with time where there are more. False if no such metric."""
    axes_drawn = [a for a in analysis.axes if a.kind in kinds and analysis.hulls[a.name].points
                  and np.nanmin(a.values) < np.nanmax(a.values)]
    if not axes_drawn:
        return False
    if len(axes_drawn) > most:
        axes_drawn = sorted(axes_drawn, key=lambda a: -abs(analysis.rho_with_time(a.name)))[:most]
        title += f" (the {most} most correlated with time)"
    fig, grid = panel_grid(len(axes_drawn))
    y = analysis.performance
    best = analysis.best
    for ax, axis in zip(grid.flat, axes_drawn):
        hull = analysis.hulls[axis.name]
        x, label = axis.values, axis_label(axis)
        if axis.unit == "s":  # seconds in the unit of their median
            unit, factor = time_unit(float(np.nanmedian(x)))
            x, label = x * factor, f"{axis.name} ({unit})"
        ax.plot(x, y, linestyle="", marker="o", markersize=2, markeredgewidth=0, color=POINTS,
                alpha=0.45)
        vertices = hull.vertices
        ax.plot(x[vertices], y[vertices], color=HULL, linewidth=1.4, marker="o", markersize=4,
                markeredgecolor="black", markeredgewidth=0.5)
        if np.isfinite(x[best]):
            ax.scatter([x[best]], [y[best]], marker="*", s=90, color=BEST, zorder=5)
        if hull.log_x:
            ax.set_xscale("log")
        if hull.log_y:
            ax.set_yscale("log")
        if axis.labels is not None:
            value_ticks(ax, axis.labels)
        ax.set_xlabel(label, fontsize=9)
        ax.set_ylabel(analysis.performance_axis, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(True, color="#dddddd", linewidth=0.5)
    legend = [Line2D([], [], color=POINTS, marker="o", linestyle="", markersize=4,
                     label="a measured configuration"),
              Line2D([], [], color=HULL, marker="o", markeredgecolor="black", markersize=4,
                     label="upper convex hull (the frontier)"),
              Line2D([], [], color=BEST, marker="*", linestyle="", markersize=9, label="the fastest")]
    fig.legend(handles=legend, loc="lower center", ncol=3, frameon=False, fontsize=9)
    fig.suptitle(f"{analysis.measurements.title}: performance against {title}", fontsize=11)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def metric_cluster_figure(analysis, path: str) -> bool:
    """The metrics' dendrogram beside their correlation heat map (Spearman's rho), the leaves in
    the dendrogram's order, each cluster's labels in its colour."""
    clusters = analysis.metric_clusters
    if clusters is None:
        return False
    n = len(clusters.names)
    size = max(6.0, 3.0 + 0.28 * n)
    fig = plt.figure(figsize=(size + 4.0, size))
    grid = fig.add_gridspec(1, 4, width_ratios=[1.2, 3.0, 0.9, 0.1], wspace=0.02)
    left, heat, bar = fig.add_subplot(grid[0]), fig.add_subplot(grid[1]), fig.add_subplot(grid[3])
    hierarchy.set_link_color_palette(OKABE_ITO[:6])  # no yellow: the labels take these colours
    tree = hierarchy.dendrogram(clusters.linkage, orientation="left", no_labels=True, ax=left,
                                color_threshold=METRIC_DISTANCE, above_threshold_color="#999999")
    hierarchy.set_link_color_palette(None)
    order = tree["leaves"][::-1]  # the heat map's rows top to bottom: the dendrogram's leaves
    left.set_xlabel("distance 1 − |ρ|", fontsize=9)
    left.axvline(METRIC_DISTANCE, color="#555555", linestyle=":", linewidth=0.8)
    for side in ("top", "right", "left"):
        left.spines[side].set_visible(False)
    left.set_yticks([])
    left.invert_xaxis()
    matrix = clusters.rho[np.ix_(order, order)]
    image = heat.imshow(matrix, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    labels = [clusters.names[i] for i in order]
    colours = dict(zip(tree["leaves"], tree["leaves_color_list"]))
    heat.set_yticks(range(n))
    heat.set_yticklabels(labels, fontsize=8)
    heat.yaxis.tick_right()
    heat.set_xticks(range(n))
    heat.set_xticklabels(labels, rotation=90, fontsize=8)
    for tick, index in zip(heat.get_yticklabels(), order):
        tick.set_color(colours[index] if colours[index] != "#999999" else "black")
    fig.colorbar(image, cax=bar, label="Spearman's rank correlation ρ")
    fig.suptitle(f"{analysis.measurements.title}: the metrics clustered "
                 f"({clusters.rows:,} configurations)", fontsize=11)
    fig.subplots_adjust(left=0.03, right=0.92, bottom=0.05 + 1.6 / size, top=0.93)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def families_figure(analysis, path: str) -> bool:
    """The fastest configurations clustered by their metric profile: the dendrogram above the heat
    map of the standardised metrics, each family in its colour, their times below."""
    families = analysis.families
    if families is None:
        return False
    count, metrics = families.profile.shape
    fig = plt.figure(figsize=(11, 3.2 + 0.22 * metrics))
    grid = fig.add_gridspec(3, 2, height_ratios=[1.4, 0.25 * metrics, 0.8], width_ratios=[40, 1],
                            hspace=0.05, wspace=0.02)
    top, heat, times_ax, bar = (fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0]),
                                fig.add_subplot(grid[2, 0]), fig.add_subplot(grid[1, 1]))
    fig.add_subplot(grid[0, 1]).set_visible(False)
    fig.add_subplot(grid[2, 1]).set_visible(False)
    tree = hierarchy.dendrogram(families.linkage, no_labels=True, ax=top, color_threshold=0,
                                above_threshold_color="#999999", link_color_func=lambda k: "#777777")
    order = tree["leaves"]
    top.set_axis_off()
    image = heat.imshow(np.clip(families.profile[order].T, -3, 3), cmap="RdBu_r", vmin=-3, vmax=3,
                        aspect="auto", interpolation="nearest")
    heat.set_yticks(range(metrics))
    heat.set_yticklabels(families.metrics, fontsize=8)
    heat.set_xticks([])
    for family in np.unique(families.labels):
        columns = np.flatnonzero(families.labels[order] == family)
        colour = OKABE_ITO[(family - 1) % len(OKABE_ITO)]
        heat.plot(columns, np.full(len(columns), -0.9), "s", color=colour, markersize=3, clip_on=False)
    heat.set_ylim(metrics - 0.5, -1.3)
    fig.colorbar(image, cax=bar, label="z-score")
    times = analysis.measurements.times[families.indices[order]]
    unit, factor = time_unit(float(times.min()))
    colours = [OKABE_ITO[(f - 1) % len(OKABE_ITO)] for f in families.labels[order]]
    times_ax.bar(range(count), times * factor, width=1.0, color=colours)
    times_ax.set_xlim(-0.5, count - 0.5)
    times_ax.set_ylim(times.min() * factor * 0.98, times.max() * factor * 1.01)
    times_ax.set_ylabel(f"time ({unit})", fontsize=9)
    times_ax.set_xlabel(f"the {count} fastest configurations, in the dendrogram's order", fontsize=9)
    times_ax.tick_params(labelsize=8)
    handles = [Line2D([], [], color=OKABE_ITO[(f["family"] - 1) % len(OKABE_ITO)], marker="s",
                      linestyle="", label=f"family {f['family']}: {f['size']} configs, best "
                      f"{f['best_time_s'] * factor:.4g} {unit}") for f in families.families]
    fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), frameon=False, fontsize=8)
    fig.suptitle(f"{analysis.measurements.title}: the fastest configurations clustered by their "
                 "metric profile", fontsize=11)
    fig.subplots_adjust(left=0.2, right=0.93, top=0.92, bottom=0.16)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def shares_figure(analysis, path: str, shown: int = 12) -> bool:
    """The largest shares of the variance of log(time): parameters, pairs, the rest."""
    shares = analysis.shares
    entries = [(name, value, "parameter") for name, value in shares.single.items()]
    entries += [(f"{a} × {b}", value, "pair") for (a, b), value in shares.pairs.items()]
    entries = sorted(entries, key=lambda e: -e[1])[:shown]
    if not entries:
        return False
    entries.append(("higher order and noise", shares.rest, "rest"))
    colours = {"parameter": OKABE_ITO[0], "pair": OKABE_ITO[3], "rest": "#999999"}
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * len(entries)))
    positions = np.arange(len(entries))[::-1]
    ax.barh(positions, [e[1] for e in entries], color=[colours[e[2]] for e in entries])
    ax.set_yticks(positions)
    ax.set_yticklabels([e[0] for e in entries], fontsize=9)
    for position, (_, value, _) in zip(positions, entries):
        ax.text(value + 0.005, position, f"{value:.1%}", va="center", fontsize=8)
    ax.set_xlim(0, max(e[1] for e in entries) * 1.15 + 0.02)
    ax.set_xlabel("share of the variance of log(time)", fontsize=9)
    ax.legend(handles=[Line2D([], [], color=c, marker="s", linestyle="", label=k)
                       for k, c in (("a parameter", colours["parameter"]),
                                    ("a pair's interaction", colours["pair"]),
                                    ("higher order and noise", colours["rest"]))],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    ax.set_title(f"{analysis.measurements.title}: what each parameter is worth", fontsize=11)
    ax.tick_params(labelsize=8)
    height = 1.2 + 0.32 * len(entries)
    fig.subplots_adjust(left=0.3, right=0.72, top=1 - 0.45 / height, bottom=0.55 / height)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def values_figure(analysis, path: str, shown: int = 8) -> bool:
    """For the parameters with the largest shares: the times at each value (box: quartiles,
    whiskers: 5th and 95th percentiles), the fastest at each value, the fastest overall."""
    shares = analysis.shares
    chosen = sorted(shares.best_values, key=lambda b: -shares.single[b["parameter"]])[:shown]
    if not chosen:
        return False
    times = analysis.measurements.times
    unit, factor = time_unit(float(times.min()))
    fig, grid = panel_grid(len(chosen))
    for ax, entry in zip(grid.flat, chosen):
        name = entry["parameter"]
        values = [v["value"] for v in entry["values"]]
        column = [str(config[name]) for config in analysis.measurements.configs]
        data = [times[np.array(column) == str(v)] * factor for v in values]
        ax.boxplot(data, positions=range(len(values)), whis=(5, 95), showfliers=False, widths=0.6,
                   patch_artist=True, boxprops={"facecolor": OKABE_ITO[4], "alpha": 0.6},
                   medianprops={"color": "black"})
        ax.plot(range(len(values)), [v["best_s"] * factor for v in entry["values"]], "v",
                color=OKABE_ITO[1], markersize=5)
        ax.axhline(times.min() * factor, color=BEST, linestyle=":", linewidth=0.8)
        if times.max() >= 10 * times.min():
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
        value_ticks(ax, values)
        ax.set_xlabel(f"{name} (share {shares.single[name]:.1%})", fontsize=9)
        ax.set_ylabel(f"time ({unit})", fontsize=9)
        ax.tick_params(labelsize=8)
    legend = [Line2D([], [], color=OKABE_ITO[4], marker="s", linestyle="", markersize=8,
                     label="quartiles (whiskers: 5th to 95th percentile)"),
              Line2D([], [], color=OKABE_ITO[1], marker="v", linestyle="", label="the fastest with this value"),
              Line2D([], [], color=BEST, linestyle=":", label="the fastest overall")]
    fig.legend(handles=legend, loc="lower center", ncol=3, frameon=False, fontsize=9)
    fig.suptitle(f"{analysis.measurements.title}: time at each value of the parameters that matter most",
                 fontsize=11)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True
