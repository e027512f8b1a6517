"""Does the default search still propose what it proposed? Records, for every replay file with and
without priors and a few seeds, the first evaluations of ``beastgen tune --backend replay``
(the whole tool: space, plan, strategy, results store), and compares a run against that record.

    python benchmarks/search/same_proposals.py            # compare with tests/search_proposals.json
    python benchmarks/search/same_proposals.py --record   # (re)write it: only for an intended change

A run is the order of the configurations the results store holds (each as its position in the
replay file) and the count of proposals the file could not answer. The record was first taken on
main at d1f60c5 (before the search was split into models, proposers and recipes); an intended
change of the search's behaviour re-records it and says so in its commit.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_search import DEVICES, space_for  # noqa: E402

RECORD = os.path.join(REPO, "tests", "search_proposals.json")
REPLAY = os.path.join(REPO, "data", "replay")
SEEDS = (0, 1, 2)
EVALUATIONS = 120


def files() -> list[str]:
    return sorted(os.path.join(REPLAY, f) for f in os.listdir(REPLAY) if f.endswith(".json.gz"))


def run(path: str, priors: bool, seed: int, evaluations: int, workdir: str,
        generated_dir: str | None = None) -> dict:
    """{"evaluated": [position in the file of each evaluation, in order], "unmeasured": count}; the
    compiled plan goes to ``generated_dir`` (default: ``workdir``'s), where other runs find it."""
    from beastgen.harness import tune
    from beastgen.harness.recorded import load_replay
    from beastgen.harness.store import read_run
    space = space_for(path)
    others = [f for f in files() if f != path and space_for(f) == space] if priors else None
    store = os.path.join(workdir, f"{os.path.basename(path)}-{priors}-{seed}.db")
    result = tune(space, backend="replay", replay=path, device=DEVICES.get(os.path.basename(path)),
                  seed=seed, budget=evaluations, results=store, priors=others,
                  generated_dir=generated_dir or os.path.join(workdir, "generated"), progress=False,
                  log=lambda message: None)
    replay = load_replay(path)
    position = {key: i for i, key in enumerate(sorted(list(replay.times) + list(replay.failed),
                                                      key=repr))}
    _, rows = read_run(store)
    keys = list(replay.keys)
    return {"evaluated": [position[tuple(row["config"][k] for k in keys)] for row in rows],
            "unmeasured": result.unmeasured}


def record_all(chosen: list[str], seeds, evaluations: int) -> dict:
    runs = {}
    with tempfile.TemporaryDirectory() as workdir:
        for path in chosen:
            for priors in (False, True):
                for seed in seeds:
                    name = f"{os.path.basename(path)} {'with' if priors else 'without'} priors seed {seed}"
                    runs[name] = run(path, priors, seed, evaluations, workdir)
                    print(name, len(runs[name]["evaluated"]), file=sys.stderr, flush=True)
    return runs


def differences(expected: dict, got: dict) -> list[str]:
    """One line per run that differs from the record: where the evaluations first part."""
    lines = []
    for name, runs in got.items():
        want = expected[name]
        if runs == want:
            continue
        a, b = want["evaluated"], runs["evaluated"]
        first = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        lines.append(f"{name}: evaluation {first + 1} differs (recorded {a[first:first + 3]}, now "
                     f"{b[first:first + 3]}; unmeasured {want['unmeasured']} -> {runs['unmeasured']})")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help=f"write {os.path.relpath(RECORD, REPO)}")
    args = parser.parse_args(argv)
    runs = record_all(files(), SEEDS, EVALUATIONS)
    if args.record:
        with open(RECORD, "w") as f:
            json.dump({"evaluations": EVALUATIONS, "runs": runs}, f, separators=(",", ":"))
            f.write("\n")
        print(f"recorded {len(runs)} runs in {RECORD}")
        return 0
    with open(RECORD) as f:
        expected = json.load(f)["runs"]
    lines = differences(expected, runs)
    print("\n".join(lines) if lines else f"all {len(runs)} runs propose as recorded")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
