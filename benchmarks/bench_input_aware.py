"""Input-aware tuning (ISAAC) on a real device, honestly evaluated.

Trains the model across inputs (``tune --inputs``: random (input, configuration) pairs) on
``spaces/gemm.py`` and its OpenCL kernel (PoCL on the CPU by default), then for held-out inputs
drawn from the same ranges (another seed) compares, each as a ratio to the true best at that input
(an exhaustive search there):

- the model's top-1 (no measurement at that input),
- the best of its top-5 measured (5 measurements),
- the configuration tuned (exhaustively) for the nearest training input (same choices, nearest in
  log size), reused,

with the measurements each spends. Every time comes from the same exhaustive measurement of the
held-out input, so the ratios compare configurations, not the noise of separate runs. Stores
(``--work``) make a re-run resume: nothing measured is run again.

    python benchmarks/bench_input_aware.py [--pairs 400] [--held-out 10] [--work DIR]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time


sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from beastgen.harness import input_model  # noqa: E402
from beastgen.harness.inputs import collect, input_settings, parse_inputs  # noqa: E402
from beastgen.harness.store import config_key, read_runs  # noqa: E402
from beastgen.harness.tuning import setup_backend, tune  # noqa: E402
from beastgen.loading.load import load  # noqa: E402
from beastgen.support.table import format_table  # noqa: E402

SPACE = os.path.join(os.path.dirname(__file__), "..", "spaces", "gemm.py")


def exhaustive(settings: dict, store: str, iterations: int) -> dict:
    """config_key -> time (seconds; inf when it failed) of every valid configuration at ``settings``."""
    tune(SPACE, settings={k: str(v) for k, v in settings.items()}, strategy="exhaustive",
         results=store, iterations=iterations, progress=False, log=lambda m: None)
    for description, rows in read_runs(store, "exhaustive"):
        if all(str(description["settings"].get(k)) == str(v) for k, v in settings.items()):
            return {config_key(r["config"]): (r["time"] if r["status"] == "ok" else math.inf)
                    for r in rows}
    raise RuntimeError(f"no exhaustive run at {settings}")


def nearest(training: list[dict], target: dict, spec) -> dict:
    """The training input with the same choices nearest to ``target`` in log size."""
    sizes = [r.name for r in spec.ranges if not r.choices]
    same = [t for t in training if all(t[r.name] == target[r.name] for r in spec.ranges if r.choices)]
    return min(same or training, key=lambda t: sum(math.log(t[s] / target[s]) ** 2 for s in sizes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", default="M=16..256 N=16..256 K=16..256 precision=s,d")
    parser.add_argument("--fixed", default="max_blk=16 max_blk_k=4",
                        help="settings held fixed (they shrink the space)")
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--per-input", type=int, default=4)
    parser.add_argument("--held-out", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--work", default="bench-input-aware")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    train_db, eval_db = (os.path.join(args.work, n) for n in ("train.db", "eval.db"))
    fixed = dict(w.split("=", 1) for w in args.fixed.split())
    space = load(SPACE)
    spec = parse_inputs(args.inputs, space)
    start = time.perf_counter()
    done = collect(SPACE, args.inputs, args.pairs, per_input=args.per_input, settings=fixed,
                   results=train_db, seed=0, iterations=args.iterations, log=lambda m: None)
    print(done.report(train_db), flush=True)
    model = input_model.fit(train_db, space)
    print(f"model: {len(model['features'])} features, penalty {model['penalty']:.3g}, "
          f"cross-validated rms error {model['cv_rms_log_error']:.3f} (log time)", flush=True)
    profile, runner, _ = setup_backend("opencl", None, None, space)
    runner.close()
    training = [d["settings"] for d, _ in read_runs(train_db, "inputs")]
    rows, ratios = [], {"top1": [], "top5": [], "nearest": []}
    for j in range(args.held_out):
        held = input_settings(spec, 1000, j, {})  # seed 1000: never a training input's draw
        overrides = {**fixed, **held}
        ranked, predicted, typed, _, _ = input_model.rank_input(space, model, profile, overrides,
                                                                allow_out_of_range=True, top=5)
        truth = exhaustive(overrides, eval_db, args.iterations)
        best = min(truth.values())
        keys = [config_key({x: r[x].item() for x in ranked.dtype.names
                            if x not in ("bound", "bottleneck")}) for r in ranked[:5]]
        near = nearest(training, typed, spec)
        near_times = exhaustive({**fixed, **{r.name: near[r.name] for r in spec.ranges}}, eval_db,
                                args.iterations)
        near_key = min(near_times, key=near_times.get)
        result = {"top1": truth[keys[0]] / best, "top5": min(truth[k] for k in keys) / best,
                  "nearest": truth.get(near_key, math.inf) / best}
        for k, v in result.items():
            ratios[k].append(v)
        rows.append([", ".join(f"{r.name}={typed[r.name]}" for r in spec.ranges),
                     f"{best * 1e6:.1f} us", f"{result['top1']:.3f}", f"{result['top5']:.3f}",
                     f"{result['nearest']:.3f}", ", ".join(f"{r.name}={near[r.name]}" for r in spec.ranges),
                     f"{len(truth)}"])
        print(f"held-out input {j + 1} of {args.held_out} done", flush=True)
    valid = statistics.median(int(r[-1]) for r in rows)
    print()
    print(format_table(["held-out input", "true best", "top-1", "best of top-5", "nearest reused",
                        "nearest training input", "valid"], rows))
    print()
    print(format_table(["method", "median ratio to the true best", "worst", "measurements per new input"], [
        ["model top-1", f"{statistics.median(ratios['top1']):.3f}", f"{max(ratios['top1']):.3f}", "0"],
        ["model best of top-5", f"{statistics.median(ratios['top5']):.3f}", f"{max(ratios['top5']):.3f}", "5"],
        ["nearest training input's tuned", f"{statistics.median(ratios['nearest']):.3f}",
         f"{max(ratios['nearest']):.3f}", f"0 (+{valid:.0f} once, exhaustive at the training input)"],
        ["exhaustive at the input", "1.000", "1.000", f"{valid:.0f} (median)"]]))
    print(f"\ntraining: {done.pairs} pairs over {done.inputs} inputs (shared by every new input); "
          f"device {profile.key} ({profile.name}); {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
