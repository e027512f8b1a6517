"""What a launch and a work-group cost at least on an OpenCL device (PoCL on the CPU here): the
fastest of R launches of the calibration's empty kernel, 1 to 4096 work-groups of 1 and 32
work-items, by the device's profiling events. These are the only per-launch and per-work-group
costs every kernel pays; on PoCL they are what a CPU bound could add to the FMA, memory and load
terms (see the README: why the PoCL target is out of reach with valid bounds).

    PYTHONPATH=. python benchmarks/bench_workgroup_overhead.py [--device opencl:0] [--repetitions R]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from beastgen.harness.calibrate import open_runner  # noqa: E402
from beastgen.support.table import format_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--repetitions", type=int, default=30)
    args = parser.parse_args()
    runner = open_runner(args.device)
    program = runner.build({})
    rows = []
    try:
        for group in (1, 32):
            for groups in (1, 16, 256, 4096):
                runner.time(program, "empty", groups, group, [])  # warm-up
                fastest = min(runner.time(program, "empty", groups, group, [])
                              for _ in range(args.repetitions))
                rows.append([str(group), f"{groups:,}", f"{fastest * 1e6:.2f}",
                             f"{fastest / groups * 1e9:.1f}"])
    finally:
        runner.close()
    print(f"empty kernel on {args.device}, fastest of {args.repetitions} launches:")
    print(format_table(["work-items per group", "work-groups", "fastest (us)", "per work-group (ns)"], rows))


if __name__ == "__main__":
    main()
