"""Example 3: driving beastgen from Python, on the shipped reduction space (spaces/reduction.py).

Run it from anywhere, e.g. `python examples/03_python_api.py` from the repository root. It

  1. loads a space file,
  2. specializes it for two devices and for different settings, and counts each,
  3. prints the statistics of one count: loop iterations per level of the generated loop nest,
     and how many candidates each filter rejected,
  4. enumerates the valid configurations into a pandas DataFrame (if pandas is installed; else
     it uses the numpy structured array that `enumerate()` returns),
  5. prints where the generated, Numba-compiled enumerator was written.

Generated modules go to $BEASTGEN_GENERATED_DIR, or else to ~/.cache/beastgen/examples (never into
the repository's generated/).
"""
import os
import time

import beastgen

HERE = os.path.dirname(os.path.abspath(__file__))
SPACE_FILE = os.path.join(HERE, os.pardir, "spaces", "reduction.py")
GENERATED_DIR = os.environ.get("BEASTGEN_GENERATED_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "beastgen", "examples")


def main():
    # 1. load: the file is executed and its settings, iterators, derived values and filters collected
    space = beastgen.load(SPACE_FILE)
    print(space)
    print("settings:", {name: var.obj.default for name, var in space.settings.items()})
    print()

    # 2. specialize: one device profile and one set of settings -> one compiled enumerator
    runs = [
        ("h100", {}),                                               # the defaults
        ("h100", {"precision": "d", "op": "sum", "N": 1 << 22}),     # another problem
        ("v100", {"deterministic": True}),                          # another GPU, no atomics
    ]
    for device, settings in runs:
        start = time.perf_counter()
        plan = space.specialize(device=device, generated_dir=GENERATED_DIR, **settings)
        n = plan.count()
        print(f"{device:5} {str(settings or 'defaults'):45} {n:>8,} configurations "
              f"({time.perf_counter() - start:.2f} s with compilation, {plan.last_seconds * 1e3:.1f} ms to count)")
    print()

    # 3. statistics of the default h100 space
    plan = space.specialize(device="h100", generated_dir=GENERATED_DIR)
    stats = plan.stats()
    print(f"h100 statistics: {stats.count:,} valid")
    print("  loop nest (outermost first): iterations per level")
    for iterator, iterations in stats.levels:
        print(f"    {iterator:18} {iterations:>10,}")
    print("  rejections per filter")
    for name, rejected in sorted(stats.rejections.items(), key=lambda kv: -kv[1]):
        print(f"    {name:22} {rejected:>10,}")
    if plan.specialized.dropped_filters:
        print("  always false for these settings (dropped):", ", ".join(plan.specialized.dropped_filters))
    print()

    # 4. every valid configuration
    try:
        import pandas  # noqa: F401
    except ImportError:
        configs = plan.enumerate()
        print(f"enumerated {len(configs):,} configurations (numpy; install pandas for a DataFrame)")
        print(configs[:5])
    else:
        frame = plan.dataframe()
        print(f"enumerated {len(frame):,} configurations into a DataFrame:")
        print(frame.head().to_string())
        print()
        print("configurations per final stage and grid combination:")
        print(frame.groupby(["final_stage", "combine"]).size().to_string())
    print()

    # 5. the generated enumerator: a readable Python module, compiled by Numba
    print("generated source:", plan.path)
    print("loop order:", " > ".join(plan.plan.order))


if __name__ == "__main__":
    main()
