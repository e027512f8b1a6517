"""Calibrate the guided search's confidence (``beastgen tune --confidence C``) by leave-one-GPU-out
over the replay files: the rule (how the estimate is made, the Gaussian process's spread in it,
the measurements before it may stop, the measurements without an improvement of more than 1% it
waits for: the last three are the options ``confidence_spread``, ``confidence_after``,
``confidence_quiet``) is chosen on the other GPUs' files (development), and the held-out file is
where it is checked.

    python benchmarks/search/confidence.py run [--seeds 3] [--budget 400] [--priors] [--out FILE]
    python benchmarks/search/confidence.py calibrate [--confidence 0.95] [--margin N]
                                                     [--families NAME ...] FILE ...

``run`` searches every replay file (its own configurations, as ``tune_search_constants.py`` does)
for ``--seeds`` seeds and ``--budget`` evaluations, and records, wherever ``beastgen tune`` makes
an estimate (every 1% more measurements), the expected number of better configurations ``E``
(:mod:`beastgen.harness.strategies.guided.confidence`) at every spread of :data:`GRID` in several
ways (:func:`variants`: the shipped independent sum, joint posterior draws, the process with
shortened length scales, its leave-one-out residuals), the measurements and those since the last
improvement of more than 1%; before each measurement the process's probability that it improves
the best by more than 1% and whether it did (:func:`surprise`); and after each evaluation how far
the best is from the file's optimum. The search does not depend on the estimate: one run gives
every rule. ``calibrate`` reads such records: for each family of :data:`FAMILIES` (and for all
of them together) and each file held out, among the rules (the family's estimate at a spread of
:data:`SPREADS`, ``after`` of :data:`AFTER`, ``quiet`` of :data:`QUIET`) whose stops on the files
of the other GPUs are within 1% of the optimum in at least a share ``C`` of the runs that stop
(``--margin``: counting that many more bad stops), the one whose median stop there is earliest (a
run that does not stop counts as stopped at the budget); then that rule's stops on the held-out
file: the share within 1%, the median stop against the median evaluations to within 1%. Last, the
rule chosen the same way on every file.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tune_search_constants import arrays, load, prior_columns  # noqa: E402

from beastgen.harness.strategies.guided import GuidedSearch  # noqa: E402

SPREADS = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0)
AFTER = (0, 20, 40, 60, 100)
QUIET = (0, 10, 20, 30, 50, 80)
TOLERANCE = 0.01


#: the spreads at which each estimate is recorded (any rule's spread is read at the nearest)
GRID = tuple(float(0.2 * 1.12 ** k) for k in range(43))
#: the joint estimate: posterior draws of the configurations likeliest to be faster
JOINT_ROWS, JOINT_DRAWS = 256, 2000
#: the length scales' factors of the shortened processes
SHORTER = (0.5, 0.25)


def variants(confidence, best: float) -> dict:
    """``E`` at every spread of :data:`GRID` by the independent sum (``"gp"``, what the search
    ships) and by joint draws (``"joint"``: ``-log P(none below)`` of the :data:`JOINT_ROWS`
    likeliest configurations of the sample from :data:`JOINT_DRAWS` correlated posterior draws,
    plus the independent sum over the rest, scaled to every open configuration), and ``"t"``: the
    root mean square of the process's leave-one-out standardised residuals on its training set;
    ``"short F"``: the independent sum by the process with its length scales times F of
    :data:`SHORTER`."""
    from scipy.linalg import solve_triangular
    from scipy.special import ndtr

    from beastgen.harness.strategies.models.gaussian_process import _distance, _kernel, _matern
    plain = confidence.expected_better(best, GRID)
    if not any(plain) or not math.isfinite(plain[0]):
        return {"gp": plain, "joint": plain, "t": 1.0, **{f"short {f:g}": plain for f in SHORTER}}
    gp = confidence.process.process
    inverse = solve_triangular(gp.chol, np.eye(len(gp.chol)), lower=True)  # L^-1
    alpha = inverse.T @ gp.w  # K^-1 z
    loo = alpha / np.sqrt((inverse * inverse).sum(axis=0))  # (z_i - mean_-i) / spread_-i
    threshold = math.log(best / (1 + confidence.tolerance))
    possible = confidence.history.unknown(best / (1 + confidence.tolerance))
    keep = np.flatnonzero(possible[confidence.pool])
    mean, deviation = confidence.process.score(confidence.pool, reader="confidence")
    scale = possible.sum() / len(keep)
    below = (threshold - mean[keep]) / deviation[keep]
    order = np.argsort(-below)
    top, rest = keep[order[:JOINT_ROWS]], below[order[JOINT_ROWS:]]
    half = gp.watched["confidence"][1][:, top]
    rows = confidence.process.inputs[confidence.pool[top]]
    covariance = gp._cross(rows, rows) - half.T @ half
    covariance[np.diag_indices_from(covariance)] += 1e-6 * gp.signal
    values, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    draws = gp.scale * root @ np.random.default_rng(len(gp.x)).standard_normal((len(top), JOINT_DRAWS))
    gap = threshold - mean[top]  # a draw is below where spread * draw < gap
    joint = []
    for s in GRID:
        hits = (s * draws < gap[:, None]).any(axis=0).mean()
        none = max(1.0 - hits, 1.0 / JOINT_DRAWS)
        joint.append(float(scale * (-math.log(none) + ndtr(rest / s).sum())))
    found = {"gp": plain, "joint": joint, "t": float(np.sqrt(np.mean(loo * loo)))}
    rows = confidence.process.inputs[confidence.pool[keep]]
    for factor in SHORTER:  # the process with its length scales shortened, the rest as fitted
        length = gp.length * factor
        chol = np.linalg.cholesky(_kernel(gp.x / length, gp.signal, gp.noise)[0])
        half = solve_triangular(chol, gp.signal * _matern(_distance(gp.x / length, rows / length)),
                                lower=True)
        short_mean = gp.offset + gp.scale * (half.T @ solve_triangular(chol, gp.z, lower=True))
        short_deviation = gp.scale * np.sqrt(np.maximum(gp.signal - (half * half).sum(axis=0),
                                                         1e-12 * gp.signal))
        short_below = (threshold - short_mean) / short_deviation
        found[f"short {factor:g}"] = [float(scale * ndtr(short_below / s).sum()) for s in GRID]
    return found


def surprise(confidence, i, best: float, measured: float):
    """Before configuration ``i`` is measured: [whether it turns out more than the tolerance
    faster than ``best``, the process's probability of that at each spread of :data:`GRID`]
    (None before the process's hyperparameters are fitted)."""
    from scipy.special import ndtr
    process = confidence.process
    if not math.isfinite(best) or not process.tuned or not process.ready(confidence.history):
        return None
    threshold = math.log(best / (1 + confidence.tolerance))
    mean, deviation = process.process.predict(process.inputs[[i]])
    below = (threshold - mean[0]) / deviation[0]
    return [bool(math.log(measured) < threshold) if math.isfinite(measured) else False,
            [float(ndtr(below / s)) for s in GRID]]


def trajectory(rows, times, seed, budget, prior=None, options=None) -> dict:
    """One search: per evaluation the best over the optimum; at each evaluation where ``beastgen
    tune`` makes an estimate (every 1% more measurements), [evaluation, measurements,
    measurements without an improvement of more than 1%, :func:`variants`]; per evaluation
    :func:`surprise`; the evaluations to within 1% and to the optimum, the model's CPU seconds."""
    codes, values = arrays(rows)
    n = len(rows)
    search = GuidedSearch(codes, np.zeros(n), np.zeros(n, dtype=np.int64), values, prior, seed,
                          options)
    confidence = search.recipe.confidence
    optimum, best = times.min(), math.inf
    ratios, estimates, reached, estimated, surprises = [], [], {}, -1, []
    for evaluation in range(1, budget + 1):
        i = search.next(best)
        if i is None:
            break
        surprises.append(surprise(confidence, i, best, times[i]))
        search.observe(i, times[i])
        best = min(best, times[i])
        ratios.append(best / optimum)
        for name, factor in (("1%", 1 + TOLERANCE), ("optimum", 1.0)):
            if name not in reached and best <= optimum * factor * (1 + 1e-12):
                reached[name] = evaluation
        measured = len(search.history.measured)
        if measured >= estimated + max(1, measured // 100):  # when the strategy estimates
            estimated = measured
            started = time.process_time()
            with search.threads():
                expected = variants(confidence, best)
            search.model_seconds += time.process_time() - started
            estimates.append([evaluation, measured, confidence.unimproved(), expected])
    return {"ratios": ratios, "estimates": estimates, "reached": reached, "surprises": surprises,
            "model_seconds": search.model_seconds}


def run(args) -> None:
    import glob
    data = {os.path.basename(p): load(p) for p in sorted(glob.glob(os.path.join(REPO, "data", "replay", "*.json.gz")))}
    records = {}
    for seed in range(args.first_seed, args.first_seed + args.seeds):  # every file's first seed first
        for name, (rows, times) in data.items():
            if args.files and not any(f in name for f in args.files):
                continue
            prior = prior_columns(name, rows, data) if args.priors else None
            started = time.perf_counter()
            records[f"{name} {seed}"] = trajectory(rows, times, seed, args.budget, prior)
            print(f"{name} seed {seed}: {records[f'{name} {seed}']['reached']}, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
            with open(args.out, "w") as f:  # after every run: a long one can be read as it goes
                json.dump({"priors": args.priors, "grid": GRID, "budget": args.budget,
                           "runs": records}, f)


def gpu(key: str) -> str:
    """The GPU of a record's key ("[priors ]<kernel>_<variant>_<gpu>.json.gz[ seed]")."""
    return key.split()[-2 if key.split()[-1].isdigit() else -1].split(".")[0].split("_", 2)[-1]


#: how each family reads an estimate ``e`` at a spread ``s`` (``r(s)``: the run's surprise ratio
#: at that spread, :func:`surprise_ratio`): the independent sum, the same with the spread scaled by
#: the leave-one-out residuals' root mean square (never below 1), joint draws, shortened length
#: scales, the most conservative and the average of the process with its fitted, half and
#: quarter length scales, the independent sum and joint draws multiplied by the surprise ratio,
#: and no model at all (only ``after`` and ``quiet``, once the process is fitted: the baseline)
FAMILIES = {
    "gp": lambda e, s, r: _at(e["gp"], s),
    "gp x loo": lambda e, s, r: _at(e["gp"], s * max(1.0, e["t"])),
    "joint": lambda e, s, r: _at(e["joint"], s),
    "joint x loo": lambda e, s, r: _at(e["joint"], s * max(1.0, e["t"])),
    "short 0.5": lambda e, s, r: _at(e["short 0.5"], s),
    "short 0.25": lambda e, s, r: _at(e["short 0.25"], s),
    "max of length scales": lambda e, s, r: max(_at(e[k], s) for k in ("gp", "short 0.5", "short 0.25")),
    "mean of length scales": lambda e, s, r: sum(_at(e[k], s) for k in ("gp", "short 0.5", "short 0.25")) / 3,
    "gp x surprise": lambda e, s, r: _at(e["gp"], s) * r(s),
    "joint x surprise": lambda e, s, r: _at(e["joint"], s) * r(s),
    "no model": lambda e, s, r: 1e-9 if math.isfinite(_at(e["gp"], s)) else math.inf,
}


def surprise_ratio(record, evaluation: int):
    """``r(s)``: (the measurements so far that came in more than the tolerance below the best
    before them + 1) / (the process's expected number of those, at spread ``s``, + 1), at least 1
    (1 for a record without surprises)."""
    seen = [x for x in record.get("surprises", [])[:evaluation] if x is not None]
    if not seen:
        return lambda s: 1.0
    events = sum(x[0] for x in seen)
    expected = np.sum([x[1] for x in seen], axis=0)
    return lambda s: max(1.0, (events + 1) / (_at(expected, s) + 1))


def _at(series, spread):
    """The value of a :data:`GRID` series at the grid's spread nearest ``spread`` (in logs)."""
    k = int(round(math.log(spread / GRID[0]) / math.log(GRID[1] / GRID[0])))
    return series[min(max(k, 0), len(GRID) - 1)]


def stops(record, family, spread, confidence: float) -> dict:
    """For every (after, quiet) of :data:`AFTER` x :data:`QUIET`: the first evaluation at which
    the estimate by ``family`` at ``spread`` reaches ``confidence`` (None: never)."""
    limit = -math.log(confidence)
    rows = record["estimates"]
    read = FAMILIES[family]
    expected = np.array([read(e, spread, surprise_ratio(record, row[0])) for *row, e in rows])
    evaluation, measured, unimproved = (np.array([r[k] for r in rows]) for k in range(3))
    found = {}
    for after in AFTER:
        for quiet in QUIET:
            hit = np.flatnonzero((expected <= limit) & ((expected == 0) | ((measured >= after) & (unimproved >= quiet))))
            found[after, quiet] = int(evaluation[hit[0]]) if len(hit) else None
    return found


def outcome(records, rule, table, budget):
    """(stopped, of those within 1%, stops, evaluations to within 1%) over ``records`` (keys) by
    ``rule`` (family, spread, after, quiet), read from ``table`` (:func:`stops` of every record);
    a run that does not stop or come within 1% counts as ``budget`` + 1 there."""
    family, spread, after, quiet = rule
    found, good, to_one = [], 0, []
    for key, record in records.items():
        at = table[key, family, spread][after, quiet]
        at = at if at is not None and at <= budget else None  # records of a larger budget
        to_one.append(record["reached"].get("1%", budget + 1))
        found.append(at if at is not None else budget + 1)
        if at is not None and record["ratios"][at - 1] <= 1 + TOLERANCE + 1e-12:
            good += 1
    stopped = sum(s <= budget for s in found)
    return stopped, good, found, to_one


def choose(records, rules, table, confidence, budget, margin=0):
    """The rule whose stops on ``records`` are within 1% in a share ``confidence`` of those that
    stop (counting ``margin`` more bad stops than there were), with the earliest median stop (then
    the most runs stopped); None if none holds."""
    best = None
    for rule in rules:
        stopped, good, found, _ = outcome(records, rule, table, budget)
        if stopped and good >= confidence * (stopped + margin):
            key = (statistics.median(found), -stopped)
            if best is None or key < best[0]:
                best = (key, rule)
    return None if best is None else best[1]


def _median(values, budget):
    m = statistics.median(values)
    return f">{budget}" if m > budget else f"{m:g}"


def calibrate(args) -> None:
    records, budgets = {}, []
    for path in args.records:
        with open(path) as f:
            loaded = json.load(f)
        budgets.append(loaded["budget"])
        records.update({f"{'priors ' if loaded['priors'] else ''}{k}": v for k, v in loaded["runs"].items()})
    budget = min(budgets)
    families = args.families or list(FAMILIES)
    table = {(key, family, spread): stops(record, family, spread, args.confidence)
             for key, record in records.items() for family in families for spread in SPREADS}
    name = lambda rule: f"{rule[0]}, spread {rule[1]:g}, after {rule[2]}, quiet {rule[3]}"
    files = sorted({k.rsplit(" ", 1)[0] for k in records})
    print(f"confidence {args.confidence}: rule chosen on the other GPUs' files (development), "
          f"checked on the held-out one ({len(records)} runs, budget {budget})")
    for check in args.check:  # a fixed rule, e.g. the shipped defaults: no choosing
        family, spread, after, quiet = check.rsplit(" ", 3)
        rule = (family, float(spread), int(after), int(quiet))
        if (rule[0], rule[1]) not in {(f, s) for f in families for s in SPREADS}:
            table.update({(key, family, rule[1]): stops(record, family, rule[1], args.confidence)
                          for key, record in records.items()})
        stopped, good, found, to_one = outcome(records, rule, table, budget)
        print(f"\nthe rule {name(rule)} on every file: {stopped} of {len(records)} runs stopped, "
              f"{good} within 1%, median stop {_median(found, budget)}, median to within 1% "
              f"{_median(to_one, budget)}")
    for family in families + ["any family"]:
        chosen_families = families if family == "any family" else [family]
        rules = [(f, s, a, q) for f in chosen_families for s in SPREADS for a in AFTER for q in QUIET]
        print(f"\n{family}:\n")
        print("| held out | rule chosen on the other GPUs | there: stopped, within 1% | stopped | "
              "within 1% of stopped | median stop | median to within 1% | stop / to 1% |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        totals, development = [0, 0, 0], [0, 0, 0]
        for held_out in files:
            others = {k: r for k, r in records.items() if gpu(k) != gpu(held_out)}
            mine = {k: r for k, r in records.items() if k.rsplit(" ", 1)[0] == held_out}
            chosen = choose(others, rules, table, args.confidence, budget, args.margin)
            if chosen is None:
                print(f"| {held_out.split('.')[0]} | none holds | | | | | | |")
                continue
            there = outcome(others, chosen, table, budget)
            development = [development[0] + there[0], development[1] + there[1], development[2] + len(others)]
            stopped, good, found, to_one = outcome(mine, chosen, table, budget)
            totals = [totals[0] + stopped, totals[1] + good, totals[2] + len(mine)]
            stop_median, one_median = statistics.median(found), statistics.median(to_one)
            ratio = ("?" if one_median > budget else f"{stop_median / one_median:.2f}"
                     if stop_median <= budget else f">{budget / one_median:.2f}")
            print(f"| {held_out.split('.')[0]} | {name(chosen)} | {there[0]}/{len(others)}, {there[1]} | "
                  f"{stopped}/{len(mine)} | {good}/{stopped} | {_median(found, budget)} | "
                  f"{_median(to_one, budget)} | {ratio} |")
        if development[0]:
            print(f"\ndevelopment (summed over the folds, a run in each fold it is in): {development[0]} of {development[2]} runs "
                  f"stopped, {development[1]} within 1% ({development[1] / development[0]:.1%})")
        if totals[0]:
            print(f"held out, all files: {totals[0]} of {totals[2]} runs stopped, {totals[1]} of them "
                  f"within 1% ({totals[1] / totals[0]:.1%})")
        overall = choose(records, rules, table, args.confidence, budget, args.margin)
        if overall is not None:
            stopped, good, found, to_one = outcome(records, overall, table, budget)
            print(f"chosen on every file: {name(overall)} (there {stopped} of {len(records)} stopped, "
                  f"{good} within 1%, median stop {_median(found, budget)}, median to within 1% "
                  f"{_median(to_one, budget)})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--budget", type=int, default=400)
    p.add_argument("--priors", action="store_true")
    p.add_argument("--files", nargs="*", default=[])
    p.add_argument("--out", default="confidence.json")
    p = commands.add_parser("calibrate")
    p.add_argument("records", nargs="+")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--margin", type=int, default=0,
                   help="bad stops added to every rule's count on the files it is chosen on")
    p.add_argument("--check", nargs="*", default=[],
                   help="fixed rules 'FAMILY SPREAD AFTER QUIET' to report on every file")
    p.add_argument("--families", nargs="*", default=[], help=f"of {', '.join(FAMILIES)}")
    args = parser.parse_args(argv)
    {"run": run, "calibrate": calibrate}[args.command](args)


if __name__ == "__main__":
    main()
