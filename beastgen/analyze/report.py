"""An analysis written out: the PNG figures, one self-contained HTML report (the figures embedded
as data URIs, the tables, no script, nothing fetched: it opens offline), the terminal's summary
(tables) and the numbers as JSON."""
from __future__ import annotations

import base64
import html
import math
import os

import numpy as np

from ..support.output import AtomicOutput
from ..support.table import format_table
from . import figures

#: hull configurations listed per metric (the report; the JSON has them all)
HULL_ROWS = 6


def _seconds(value: float) -> str:
    unit, factor = figures.time_unit(value)
    return f"{value * factor:.4g} {unit}"


def _config_text(config: dict, parameters: list[str]) -> str:
    return ", ".join(f"{name}={config[name]}" for name in parameters)


def _plain(value):
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_figures(analysis, directory: str) -> dict[str, str]:
    """Draw every figure into ``directory``: {figure stem: path} of those drawn."""
    drawn = {}
    for stem, title, kinds in figures.HULL_FIGURES:
        drawn[stem] = (lambda s=stem, t=title, k=kinds: figures.hull_figure(
            analysis, k, os.path.join(directory, f"{s}.png"), t))
    drawn["metric_clusters"] = lambda: figures.metric_cluster_figure(
        analysis, os.path.join(directory, "metric_clusters.png"))
    drawn["configuration_families"] = lambda: figures.families_figure(
        analysis, os.path.join(directory, "configuration_families.png"))
    drawn["parameter_shares"] = lambda: figures.shares_figure(
        analysis, os.path.join(directory, "parameter_shares.png"))
    drawn["parameter_values"] = lambda: figures.values_figure(
        analysis, os.path.join(directory, "parameter_values.png"))
    return {stem: os.path.join(directory, f"{stem}.png") for stem, draw in drawn.items() if draw()}


# -- the numbers -------------------------------------------------------------------------------
def as_dict(analysis, files: dict[str, str] | None = None) -> dict:
    found = analysis.measurements
    best = analysis.best
    shares = analysis.shares
    out = {"source": found.source, "title": found.title, "measured": len(found.configs),
           "failed": found.failed, "run": found.run.get("run"),
           "best": {"time_seconds": float(found.times[best]), "config": found.configs[best],
                    "performance": _plain(analysis.performance[best])},
           "performance": analysis.performance_label,
           "hulls": {name: {"log_x": hull.log_x, "log_y": hull.log_y, "points": hull.points,
                            "configurations": [
                                {"config": found.configs[i], "time_seconds": float(found.times[i]),
                                 "metric": _plain(axis.values[i]),
                                 "performance": _plain(analysis.performance[i])}
                                for i in hull.vertices]}
                     for axis in analysis.axes for name, hull in [(axis.name, analysis.hulls[axis.name])]},
           "metrics": {axis.name: {"kind": axis.kind, "unit": axis.unit, "note": axis.note}
                       for axis in analysis.axes},
           "parameter_shares": {"estimator": "Var(E[log t | x_i]) / Var(log t); pairs: "
                                             "Var(E[log t | x_i, x_j]) / Var(log t) - S_i - S_j",
                                "variance_of_log_time": shares.total_variance,
                                "parameters": shares.single,
                                "pairs": {f"{a} x {b}": v for (a, b), v in shares.pairs.items()},
                                "higher_order_and_noise": shares.rest},
           "best_values": [{**entry, "best_value": _plain(entry["best_value"]),
                            "best_by_median": _plain(entry["best_by_median"])}
                           for entry in shares.best_values],
           "unavailable": analysis.notes, "files": files or {}}
    clusters = analysis.metric_clusters
    if clusters is not None:
        out["metric_clusters"] = {"metrics": clusters.names, "configurations": clusters.rows,
                                  "distance": "1 - |Spearman's rho|, average linkage",
                                  "spearman_rho": [[round(float(v), 4) for v in row] for row in clusters.rho],
                                  "clusters": clusters.clusters}
    if analysis.families is not None:
        out["configuration_families"] = {"metrics": analysis.families.metrics,
                                         "families": analysis.families.families}
    return out


# -- the terminal ------------------------------------------------------------------------------
def text_summary(analysis, files: dict[str, str], report: str | None) -> str:
    found = analysis.measurements
    best = analysis.best
    lines = [f"{found.title}: {len(found.configs):,} configurations measured"
             + (f", {found.failed:,} failed" if found.failed else ""),
             f"fastest: {_seconds(found.times[best])} ({_config_text(found.configs[best], found.parameters)})",
             f"performance: {analysis.performance_label}", ""]
    rows, derived = [], 0
    for axis in analysis.axes:
        hull = analysis.hulls[axis.name]
        if not hull.vertices:
            continue
        if axis.kind == "derived":  # many: the report lists them
            derived += 1
            continue
        top = max(hull.vertices, key=lambda i: analysis.performance[i])
        rows.append([axis.name, axis.kind, f"{len(hull.vertices)}", _value(axis, top),
                     f"{analysis.performance[top]:.4g}"])
    lines += ["performance hull (configurations on the upper convex hull of performance against "
              "each metric; the highest):", format_table(
                  ["metric", "kind", "on hull", "metric at the highest", "performance"], rows)]
    if derived:
        lines.append(f"(and {derived} derived values of the space: in the report and the JSON)")
    lines.append("")
    clusters = analysis.metric_clusters
    if clusters is not None:
        lines.append(f"metric clusters (|Spearman's rho| >= {1 - 0.3:.1f} within, "
                     f"{clusters.rows:,} configurations):")
        lines.append(format_table(["cluster", "rho with time", "members"], [
            [c["name"], f"{c['rho_with_time']:+.2f}", ", ".join(c["members"])]
            for c in clusters.clusters]))
        lines.append("")
    shares = analysis.shares
    share_rows = sorted([[name, f"{value:.1%}"] for name, value in shares.single.items()],
                        key=lambda r: -float(r[1][:-1]))
    pair_rows = sorted([[f"{a} x {b}", f"{value:.1%}"] for (a, b), value in shares.pairs.items()],
                       key=lambda r: -float(r[1][:-1]))[:5]
    lines.append("share of the variance of log(time) (functional ANOVA on the measurements):")
    lines.append(format_table(["parameter or pair", "share"], share_rows + pair_rows
                              + [["higher order and noise", f"{shares.rest:.1%}"]]))
    lines.append("")
    by_share = sorted(shares.best_values, key=lambda b: -shares.single[b["parameter"]])
    lines.append("best value of each parameter (the fastest configuration's) and its spread:")
    lines.append(format_table(
        ["parameter", "best value", "configs", "best", "median", "quartiles", "other values' best"],
        [[b["parameter"], str(b["best_value"]), f"{b['with_best']['configurations']:,}",
          _seconds(b["with_best"]["best_s"]), _seconds(b["with_best"]["median_s"]),
          f"{_seconds(b['with_best']['p25_s'])} to {_seconds(b['with_best']['p75_s'])}",
          f"{b['others_best_ratio'][0]:.2f}x to {b['others_best_ratio'][1]:.2f}x"] for b in by_share]))
    if analysis.notes:
        lines += ["", "not available:"] + [f"  {note}" for note in analysis.notes]
    lines.append("")
    lines += [f"wrote {path}" for path in files.values()]
    if report:
        lines.append(f"wrote {report}")
    return "\n".join(lines)


def _value(axis, index: int) -> str:
    value = axis.values[index]
    if axis.labels is not None:
        return axis.labels[int(value)]
    if not np.isfinite(value):
        return "-"
    if axis.unit == "s":
        return _seconds(float(value))
    return f"{value:.4g}" + (f" {axis.unit}" if axis.unit else "")


# -- the HTML report ---------------------------------------------------------------------------
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
.note { color: #555; font-size: 0.9em; } code { background: #f4f4f4; padding: 0 0.2em; }
"""


def _table(headers: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        ('<td class="n">' if i in numeric else "<td>") + f"{html.escape(str(cell))}</td>"
        for i, cell in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _image(path: str, alt: str) -> str:
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
    return f'<p><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}"></p>'


def html_report(analysis, files: dict[str, str]) -> str:
    found = analysis.measurements
    best = analysis.best
    parts = [f"<h1>{html.escape(found.title)}</h1>",
             f"<p>{len(found.configs):,} configurations measured"
             + (f" ({found.failed:,} failed, not analysed)" if found.failed else "")
             + f"; source <code>{html.escape(found.source)}</code>. Fastest: "
             f"<b>{html.escape(_seconds(found.times[best]))}</b> with "
             f"<code>{html.escape(_config_text(found.configs[best], found.parameters))}</code>. "
             f"Performance: {html.escape(analysis.performance_label)}.</p>"]
    parts.append("<h2>The performance hull</h2><p>Each panel: every configuration's performance "
                 "against one metric; the line is the upper convex hull (SciPy's ConvexHull, in the "
                 "axes as drawn: log where values span decades), the frontier an engineer tunes "
                 "along; the star is the fastest configuration.</p>")
    for stem, title, _ in figures.HULL_FIGURES:
        if stem in files:
            parts.append(f"<h3>Against {html.escape(title)}</h3>" + _image(files[stem], f"hull of {title}"))
    for axis in analysis.axes:
        hull = analysis.hulls[axis.name]
        if not hull.vertices:
            continue
        rows = [[_value(axis, i), f"{analysis.performance[i]:.4g}", _seconds(found.times[i]),
                 _config_text(found.configs[i], found.parameters)]
                for i in sorted(hull.vertices, key=lambda i: -analysis.performance[i])[:HULL_ROWS]]
        parts.append(f"<details><summary>{html.escape(axis.name)} ({html.escape(axis.kind)}; "
                     f"{len(hull.vertices)} on the hull){': ' + html.escape(axis.note) if axis.note else ''}"
                     "</summary>" + _table([axis.name, "performance", "time", "configuration"], rows, {0, 1, 2})
                     + "</details>")
    clusters = analysis.metric_clusters
    parts.append("<h2>The metrics clustered</h2>")
    if clusters is not None:
        parts.append("<p>Spearman's rank correlation between every two metrics over the "
                     f"{clusters.rows:,} configurations where all are known; distance 1 − |ρ|, "
                     "average linkage (scipy.cluster.hierarchy); a cluster is a group joined below "
                     "0.3 (|ρ| of at least 0.7), named after its medoid.</p>")
        if "metric_clusters" in files:
            parts.append(_image(files["metric_clusters"], "metric dendrogram and correlation heat map"))
        parts.append(_table(["cluster", "ρ with time", "members"],
                            [[c["name"], f"{c['rho_with_time']:+.2f}", ", ".join(c["members"])]
                             for c in clusters.clusters], {1}))
    else:
        parts.append("<p class='note'>Fewer than three metrics vary: nothing to cluster.</p>")
    if analysis.families is not None:
        parts.append("<h2>The fastest configurations in families</h2><p>The "
                     f"{len(analysis.families.indices)} fastest configurations, each by its metric "
                     "profile (standardised; log where a metric spans decades), Ward linkage; a "
                     "family's shared values are those at least 80% of its members have.</p>")
        if "configuration_families" in files:
            parts.append(_image(files["configuration_families"], "configuration families"))
        parts.append(_table(["family", "configurations", "best", "median", "shared values", "its fastest"], [
            [f["family"], f["size"], _seconds(f["best_time_s"]), _seconds(f["median_time_s"]),
             ", ".join(f"{k}={v}" for k, v in f["shared_values"].items()) or "-",
             _config_text(f["best_config"], found.parameters)] for f in analysis.families.families], {0, 1, 2, 3}))
    shares = analysis.shares
    parts.append("<h2>What each parameter is worth</h2><p>The share of the variance of log(time) "
                 "each parameter explains, Var(E[log t | x<sub>i</sub>]) / Var(log t), and each "
                 "pair's interaction, Var(E[log t | x<sub>i</sub>, x<sub>j</sub>]) / Var(log t) − "
                 "S<sub>i</sub> − S<sub>j</sub>: a functional ANOVA on the measurements. Where "
                 "filters tie parameters together, correlated parameters share credit and the "
                 "shares can sum past 100%.</p>")
    for stem in ("parameter_shares", "parameter_values"):
        if stem in files:
            parts.append(_image(files[stem], stem.replace("_", " ")))
    by_share = sorted(shares.best_values, key=lambda b: -shares.single[b["parameter"]])
    parts.append(_table(["parameter", "share", "best value", "configurations", "best", "median",
                         "quartiles", "other values' best"], [
        [b["parameter"], f"{shares.single[b['parameter']]:.1%}", b["best_value"],
         f"{b['with_best']['configurations']:,}", _seconds(b["with_best"]["best_s"]),
         _seconds(b["with_best"]["median_s"]),
         f"{_seconds(b['with_best']['p25_s'])} to {_seconds(b['with_best']['p75_s'])}",
         f"{b['others_best_ratio'][0]:.2f}x to {b['others_best_ratio'][1]:.2f}x"] for b in by_share],
        {1, 3, 4, 5}))
    pairs = sorted(shares.pairs.items(), key=lambda kv: -kv[1])[:10]
    parts.append(_table(["pair", "interaction share"], [[f"{a} × {b}", f"{v:.1%}"] for (a, b), v in pairs]
                        + [["higher order and noise", f"{shares.rest:.1%}"]], {1}))
    if analysis.notes:
        parts.append("<h2>Not available</h2><ul>" + "".join(
            f"<li>{html.escape(note)}</li>" for note in analysis.notes) + "</ul>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(found.title)}: beastgen analyze</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")


def write_report(analysis, directory: str) -> tuple[dict[str, str], str]:
    """The figures and ``report.html`` in ``directory``: ({stem: PNG path}, the report's path)."""
    os.makedirs(directory, exist_ok=True)
    files = write_figures(analysis, directory)
    path = os.path.join(directory, "report.html")
    with AtomicOutput(path) as temporary:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(html_report(analysis, files))
    return files, path
