"""The bound model against real measurements, per combination of terms: for each, the fraction of
measured configurations branch and bound must run (bound below the best measured time), the
violations against the mean time and the fastest repetition, and real/bound quantiles.

Then what the data allow (a diagnosis, never a bound: these numbers are read off the answers):
- how many configurations run within r x the best (a bound prunes a configuration only when it is at
  least the best time, so it must be within real/best of the real time there);
- each term scaled by the largest factor that keeps it at or below the fastest repetition of every
  configuration (as if the hardware's rate were the highest rate the kernel ever reached), and the
  fraction branch and bound would still run: the most any rescaling of these counts can prune;
- the ceiling of any valid bound that reads only some parameters: it cannot exceed the fastest
  real time among the configurations that share those parameters' values.

    PYTHONPATH=. python benchmarks/bench_bounds.py [SPACE] [--device D] [--replay FILE]
"""
import argparse
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import beastgen  # noqa: E402
from beastgen.harness.recorded import load_replay, term_samples  # noqa: E402
from beastgen.support.table import format_table  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("space", nargs="?", default=os.path.join(REPO, "spaces", "gemm_clblast.py"))
    parser.add_argument("--device", default="titanrtx")
    parser.add_argument("--replay", default=os.path.join(REPO, "data", "replay", "gemm_clblast_rtx_titan.json.gz"))
    args = parser.parse_args()
    replay = load_replay(args.replay)
    plan = beastgen.load(args.space).specialize(device=args.device)
    samples = term_samples(plan, replay)
    terms = plan.bound_terms
    mean = np.array([replay.times[key] for key, _ in samples])
    fastest = np.array([replay.fastest[key] for key, _ in samples])
    values = np.array([[v[t] for t in terms] for _, v in samples])
    best = mean.min()
    combos = [c for n in range(1, len(terms) + 1) for c in itertools.combinations(range(len(terms)), n)]
    if len(terms) > 4:  # singles, all but one, all
        combos = [c for c in combos if len(c) in (1, len(terms) - 1, len(terms))]
    rows = []
    for combo in combos:
        bound = values[:, list(combo)].max(axis=1)
        ratio = mean[bound > 0] / bound[bound > 0]
        rows.append([" + ".join(terms[i] for i in combo), f"{(bound < best).mean():.1%}",
                     str(int((bound > mean).sum())), str(int((bound > fastest).sum())),
                     f"{ratio.min():.3f}" if len(ratio) else "-",
                     f"{np.percentile(ratio, 5):.3f}" if len(ratio) else "-",
                     f"{np.median(ratio):.3f}" if len(ratio) else "-"])
    print(f"{plan.specialized.space.name} on {args.device}: {len(samples):,} measured configurations, "
          f"best {best * 1e3:.3f} ms ({replay.path})")
    print(format_table(["terms", "B&B runs", "violations (mean)", "violations (fastest)",
                        "real/bound min", "5th pct", "median"], rows))
    print()
    print("what the data allow (diagnosis read off the measurements, not bounds):")
    print("configurations whose fastest repetition is at least r x the best: "
          + ", ".join(f"r={r:g} {(fastest >= r * best).mean():.1%}" for r in (1, 1.5, 2, 2.5, 3, 4)))
    positive = values > 0
    scale = np.array([(fastest[positive[:, i]] / values[positive[:, i], i]).min() if positive[:, i].any()
                      else 1.0 for i in range(len(terms))])
    scaled = (values * scale).max(axis=1)
    print("each term x the largest factor the fastest repetitions allow ("
          + ", ".join(f"{t} x{f:.2f}" for t, f in zip(terms, scale))
          + f"): B&B would run {(scaled < best).mean():.1%}")
    parameters = [name for name in replay.keys if len({key[replay.keys.index(name)] for key, _ in samples}) > 1]
    keys = [key for key, _ in samples]
    rows = []
    for count in range(1, len(parameters) + 1):
        chosen = parameters[:count]
        columns = [replay.keys.index(name) for name in chosen]
        group_fastest: dict[tuple, float] = {}
        for key, time in zip(keys, fastest):
            group = tuple(key[c] for c in columns)
            group_fastest[group] = min(group_fastest.get(group, np.inf), time)
        ceiling = np.array([group_fastest[tuple(key[c] for c in columns)] for key in keys])
        rows.append([", ".join(chosen), f"{(ceiling < best).mean():.1%}"])
    print(format_table(["a valid bound reading only", "B&B runs at least"], rows))


if __name__ == "__main__":
    main()
