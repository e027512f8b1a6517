"""The bound model against real measurements, per combination of terms: for each, the fraction of
measured configurations branch and bound must run (bound below the best measured time), the
violations against the mean time and the fastest repetition, and real/bound quantiles.

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
from beastgen.table import format_table  # noqa: E402

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


if __name__ == "__main__":
    main()
