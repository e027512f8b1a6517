"""The ``beastgen`` command line: show, generate, count, enumerate, rank, compare, check-bounds,
devices. The parser is built here; each subcommand runs in its own module of ``beastgen.commands``,
imported only when chosen (so ``--help`` and ``count`` do not import the harness, Dask or pandas)."""
from __future__ import annotations

import gc
import importlib
import os
import sys

from . import __version__
from .errors import BeastError
from .loading import warm_count
from .support.generated_dir import GENERATED_DIR_HELP
from .support.interrupt import Terminated, sigterm_as_interrupt

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing before a warm count
if TYPE_CHECKING:
    import argparse

#: subcommand -> its module in ``beastgen.commands``
COMMANDS = {"show": "show", "generate": "generate", "count": "count", "estimate": "estimate",
            "rank": "rank", "compare": "compare", "enumerate": "enumerate", "check-bounds": "check_bounds",
            "tune": "tune", "export": "export", "nvcc-check": "nvcc_check", "calibrate": "calibrate",
            "devices": "devices", "export-results": "export_results", "convert": "convert",
            "predict": "predict", "analyze": "analyze"}


def _set_before_positionals(argv: list[str]) -> list[str]:
    """``--set a=1 SPACE`` as ``SPACE --set a=1``: ``--set`` takes only ``name=value`` words, so the
    words after them are positionals that argparse would otherwise swallow into ``--set``."""
    out, i = [], 0
    while i < len(argv):
        end = i + 1
        if argv[i] == "--set":
            while end < len(argv) and "=" in argv[end] and not argv[end].startswith("-"):
                end += 1
        rest = end
        if end > i + 1 and argv[i] == "--set":
            while rest < len(argv) and not argv[rest].startswith("-"):
                rest += 1
        out += argv[end:rest] + argv[i:end]
        i = rest
    return out


def _add_space_args(p: argparse.ArgumentParser, device=True) -> None:
    p.add_argument("space", help="space file (.py) or T1 JSON space (.json)")
    if device:
        from .devices.profiles import DEFAULT_DEVICE  # here: a warm count builds no parser
        p.add_argument("--device", "-d", default=None,
                       help="device profile: a built-in name (see `beastgen devices`), a .toml file, "
                            f"or 'auto' (default: {DEFAULT_DEVICE})")
    p.add_argument("--set", dest="settings", nargs="+", action="append", metavar="NAME=VALUE",
                   help="override settings (repeatable)")
    p.add_argument("--generated-dir", default=None,
                   help=f"where generated enumerators go (default: {GENERATED_DIR_HELP})")


def _threads(text: str) -> int:
    if not text.isdigit():
        import argparse
        raise argparse.ArgumentTypeError(f"a number of threads (0: one per core), not {text!r}")
    return int(text)


def _add_jobs_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", "-j", type=_threads, default=1, metavar="N",
                   help="threads on this machine, each taking chunks balanced by estimated size "
                        "(0: one per core; default 1)")


def _add_progress_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true",
                   help="no progress line on stderr (shown only on a terminal, after a second)")


def _add_scheduler_arg(p: argparse.ArgumentParser, what: str) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help=f"{what} on a Dask cluster: a scheduler address (tcp://host:8786, "
                            "tls://...), or local:N for N local worker processes (needs pip install "
                            "'beastgen[dask]')")
    group.add_argument("--scheduler-file", dest="scheduler", metavar="FILE",
                       type=lambda path: f"scheduler-file:{os.path.abspath(path)}",
                       help="the same, the scheduler's address read from the file that "
                            "`dask scheduler --scheduler-file FILE` writes")


#: an example of each subcommand, shown at the end of its --help (run from the repository root)
EXAMPLES = {
    "show": "beastgen show spaces/gemm.py --device v100 --set precision=d --dag dag.png",
    "generate": "beastgen generate spaces/gemm.py --device a100",
    "count": "beastgen count spaces/gemm.py --device v100 --set precision=d trans_b=1",
    "estimate": "beastgen estimate spaces/gemm.py --method knuth --samples 20000 --seed 1",
    "rank": "beastgen rank spaces/gemm.py --device h100 -k 5",
    "compare": "beastgen compare spaces/gemm.py --threshold 1.5x --plot cuts.png",
    "enumerate": "beastgen enumerate spaces/gemm.py -o gemm.parquet -j 2",
    "check-bounds": "beastgen check-bounds spaces/gemm_clblast.py --device titanrtx "
                    "--replay data/replay/gemm_clblast_rtx_titan.json.gz",
    "tune": "beastgen tune data/reference-spaces/convolution_milo.json --backend replay "
            "--replay data/replay/convolution_milo_a100.json.gz --strategy exhaustive --results run.db",
    "export": "beastgen export data/reference-spaces/hotspot.json --format kernel_tuner -o configs.json",
    "export-results": "beastgen export-results run.db --format kernel_tuner -o cache.json",
    "nvcc-check": "beastgen nvcc-check spaces/gemm.py --device h100 --samples 5",
    "calibrate": "beastgen calibrate --device opencl:0 -o my-device.toml",
    "convert": "beastgen convert kt_script.py -o space.py",
    "predict": "beastgen predict spaces/gemm.py --results inputs.db --set M=100 N=200 K=60 --measure 5",
    "devices": "beastgen devices --device auto",
    "analyze": "beastgen analyze data/replay/gemm_clblast_rtx_titan.json.gz --space spaces/gemm_clblast.py "
               "-o titan-analysis",
}


def _command(sub, name: str, help: str) -> argparse.ArgumentParser:
    """A subcommand's parser: its help as description, and an example at the end of --help."""
    import argparse
    return sub.add_parser(name, help=help, description=help.replace("%%", "%"),
                          epilog=f"example:\n  {EXAMPLES[name]}",
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _count_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--stats", action="store_true", help="iterations per loop level, rejections per filter")
    p.add_argument("--threshold", "-t", default=None,
                   help="bound-pruned count: only configurations whose lower bound is at most this "
                        "time (1.5ms, 250us, 0.002) or factor of the best bound (2x)")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    _add_progress_arg(p)
    _add_jobs_arg(p)
    _add_scheduler_arg(p, "count in chunks")


def _estimate_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--method", choices=["chen", "knuth"], default="chen",
                   help="chen: heuristic sampling, stratified runs (default); knuth: random descents")
    p.add_argument("--samples", "-n", type=int, default=None,
                   help="random descents (knuth) or runs (chen); by default, sampling stops after "
                        "1.5 s (at most 100000 descents or 30000 runs), and a space the census "
                        "predicts countable within that is counted exactly")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random samples (default 0): the same seed gives the same estimate")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    _add_progress_arg(p)
    _add_scheduler_arg(p, "estimate in tasks of independent random streams (seed, seed+1, ...)")


def _rank_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--top", "-k", type=int, default=10, help="how many (default 10)")
    p.add_argument("--threshold", "-t", default=None, help="only bounds at most this (time or factor)")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")


def _compare_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--threshold", "-t", required=True,
                   help="a time (1.5ms, 250us, 0.002) or a factor of the best bound (2x)")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw the per-level picture")


def _enumerate_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("-o", "--output", required=True,
                   help="output file: .csv, .parquet or .npy (with --scheduler: a directory, which "
                        "receives a partitioned Parquet dataset)")
    _add_progress_arg(p)
    _add_jobs_arg(p)
    _add_scheduler_arg(p, "enumerate in chunks")


def _check_bounds_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--replay", required=True, metavar="FILE.json[.gz]", help="Kernel Tuner cache file")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw measured time against each bound term")


def _tune_arguments(p: argparse.ArgumentParser) -> None:
    from .harness.store import DEFAULT_PATH  # here: only the tune command's parser names the store
    _add_space_args(p, device=False)
    p.add_argument("--device", "-d", default=None,
                   help="opencl: opencl:N (default opencl:0, its profile read from the device) or a profile "
                        "written by `beastgen calibrate` (run on the device it names); cuda: a "
                        "profile or auto (default); replay: a profile (default: the file's GPU)")
    p.add_argument("--backend", "-b", default="opencl", choices=["opencl", "cuda", "replay"],
                   help="where configurations run: an OpenCL device (default), a CUDA GPU, or a "
                        "Kernel Tuner cache file's measurements (replay, with --replay)")
    p.add_argument("--replay", default=None, metavar="FILE.json[.gz]",
                   help="Kernel Tuner cache file answering the runs (--backend replay)")
    p.add_argument("--budget", type=int, default=None, metavar="N", help="at most N runs in this invocation")
    p.add_argument("--time", type=float, default=None, metavar="SECONDS", help="stop after this long")
    p.add_argument("--good-enough", default=None, metavar="TIME",
                   help="stop once a configuration runs in at most TIME (0.6ms, 550us, 2e-3 = "
                        "seconds): the kernel is fast enough")
    p.add_argument("--confidence", type=float, default=None, metavar="C",
                   help="stop once the default search's models are C sure (0.95: 95%%) that no "
                        "configuration left is more than 1%% faster than the best (a model's "
                        "estimate, not a proof, and not calibrated yet: docs/search.md)")
    p.add_argument("--results", default=DEFAULT_PATH, metavar="DB",
                   help=f"SQLite results store; a run resumes from it (default {DEFAULT_PATH})")
    p.add_argument("--strategy", default="guided",
                   choices=["guided", "bound_order", "exhaustive", "random_search", "genetic",
                            "branch_and_bound", "random"],
                   help="guided (default, any space): a learnt order, warm-started by --prior, with "
                        "branch and bound's proof when the space has bound terms; bound_order: "
                        "increasing bound; exhaustive, random_search, genetic: baselines "
                        "(branch_and_bound and random: earlier names of guided and random_search); "
                        "see docs/search.md")
    p.add_argument("--prior", action="append", default=[], metavar="FILE",
                   help="measurements of this space from elsewhere (other GPUs or problem sizes): a "
                        "Kernel Tuner cache file (.json/.json.gz) or a beastgen results store; "
                        "repeatable; orders the default search, never proves anything")
    p.add_argument("--seed", type=int, default=0, help="seed of the guided, random and genetic strategies")
    p.add_argument("--strategy-option", action="append", default=[], metavar="NAME=VALUE",
                   help="set one of the strategy's options (repeatable; the guided search's, with "
                        "and without --prior: docs/search.md); an unknown name lists them")
    p.add_argument("--iterations", type=int, default=None, help="timed runs per configuration (default: the kernel's, else 7)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    p.add_argument("--plot", default=None, metavar="PNG", help="plot measured time against bound")
    p.add_argument("--inputs", default=None, metavar="SPEC",
                   help="measure random (input, configuration) pairs across inputs instead of "
                        "searching one: e.g. 'M=64..2048 N=64..2048 precision=s,d' (ranges drawn "
                        "log-uniformly, choices uniformly); see docs/input-aware.md")
    p.add_argument("--pairs", type=int, default=200, metavar="N",
                   help="--inputs: (input, configuration) pairs to measure (default 200)")
    p.add_argument("--per-input", type=int, default=4, metavar="C",
                   help="--inputs: configurations drawn per input (default 4)")
    _add_scheduler_arg(p, "run each candidate on a worker holding a GPU (--resources GPU=1)")


def _export_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--format", "-f", required=True, choices=["kernel_tuner", "t1"],
                   help="kernel_tuner: tune_params and every valid configuration (JSON, loadable with "
                        "Kernel Tuner's Searchspace(from_cache=...)); t1: the space as T1 JSON")
    p.add_argument("-o", "--output", required=True, help="output JSON file")
    _add_progress_arg(p)


def _export_results_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="the results store tune wrote (--results)")
    p.add_argument("--format", "-f", required=True, choices=["kernel_tuner", "t4"],
                   help="kernel_tuner: a cache file (Kernel Tuner's simulation mode, beastgen's "
                        "--replay); t4: the community's T4 results format")
    p.add_argument("-o", "--output", required=True, help="output JSON file")
    p.add_argument("--run", default=None, help="which run of the store (default: the latest)")
    p.add_argument("--kernel-name", default=None,
                   help="kernel_name of the cache file (default: the space's name)")
    p.add_argument("--device-name", default=None,
                   help="device_name of the cache file (default: the run's device profile)")


def _nvcc_check_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--samples", "-n", type=int, default=20, help="configurations to compile (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random sample")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")


def _devices_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", "-d", default=None,
                   help="print this profile's every property instead of the tables: a built-in "
                        "name, a .toml file, or 'auto' (the GPU the driver reports)")
    p.add_argument("--json", action="store_true", help="with --device: print one JSON object (last line)")


def _calibrate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", "-d", required=True, help="opencl:N or cuda:N")
    p.add_argument("-o", "--output", default=None, metavar="FILE.toml",
                   help="where the profile goes (default: calibrated-opencl0.toml for opencl:0)")
    p.add_argument("--repetitions", "-r", type=int, default=None, metavar="N",
                   help="runs of each microbenchmark, the fastest kept (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _predict_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p, device=False)
    p.add_argument("--results", default=None, metavar="DB",
                   help="the results store of `tune --inputs` to fit the model on")
    p.add_argument("--model", default=None, metavar="FILE.json",
                   help="a model file written by --save-model (instead of fitting on --results)")
    p.add_argument("--save-model", default=None, metavar="FILE.json", help="write the fitted model")
    p.add_argument("--device", "-d", default=None,
                   help="where to rank (and --measure): the model's backend device by default "
                        "(opencl:0, cuda: auto); a built-in profile or .toml ranks without a device")
    p.add_argument("--backend", "-b", default=None, choices=["opencl", "cuda"],
                   help="the backend that --measure runs on (default: the model's)")
    p.add_argument("--top", type=int, default=10, metavar="K", help="configurations printed (default 10)")
    p.add_argument("--measure", type=int, default=0, metavar="K",
                   help="time the K best predicted on the device and report the fastest")
    p.add_argument("--iterations", type=int, default=None, help="--measure: timed runs per configuration")
    p.add_argument("--table", default=None, metavar="SHAPES.csv",
                   help="inputs, one per line under a header of setting names (with -o)")
    p.add_argument("--output", "-o", default=None, metavar="FILE.json",
                   help="--table: write the chosen configuration of each input here (JSON)")
    p.add_argument("--allow-other-device", action="store_true",
                   help="rank with a model trained on another device")
    p.add_argument("--allow-out-of-range", action="store_true",
                   help="predict more than an octave outside the settings the model was trained on")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")


def _analyze_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="STORE|CACHE",
                   help="a results store that tune wrote, or a Kernel Tuner cache file (.json/.json.gz)")
    p.add_argument("--run", default=None, help="which run of the store (default: the latest)")
    p.add_argument("-o", "--output", default=None, metavar="DIR",
                   help="where the figures and report.html go (default: NAME-analysis)")
    p.add_argument("--space", default=None, metavar="SPACE",
                   help="the space file the measurements were tuned with: adds its bound terms, "
                        "derived values, launch shape and occupancy (compiled for the run's device "
                        "and settings, or the cache file's GPU and problem size)")
    p.add_argument("--device", "-d", default=None,
                   help="--space: the device profile (default: the run's, or the cache file's GPU)")
    p.add_argument("--set", dest="settings", nargs="+", action="append", metavar="NAME=VALUE",
                   help="--space: override settings (repeatable)")
    p.add_argument("--generated-dir", default=None,
                   help=f"--space: where generated enumerators go (default: {GENERATED_DIR_HELP})")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    _add_progress_arg(p)


def _show_arguments(p: argparse.ArgumentParser) -> None:
    _add_space_args(p)
    p.add_argument("--dag", default=None, metavar="FILE",
                   help="draw the dependency DAG, each item at the loop where it is computed: "
                        ".png/.svg/.pdf (matplotlib), .dot (Graphviz) or .graphml")


def _convert_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="a Kernel Tuner script (.py, run until it calls tune_kernel: it is "
                                 "a program, read it first) or a T1 space (.json)")
    p.add_argument("-o", "--output", required=True, metavar="SPACE.py", help="the space file to write")


#: each subcommand, in --help's order: its help, and the function adding its arguments
SUBCOMMANDS = {
    "show": ("variables, dependency DAG and the loop nest with each filter placed", _show_arguments),
    "generate": ("write the generated enumerator", _add_space_args),
    "count": ("count the valid configurations", _count_arguments),
    "estimate": (
        "estimate the number of valid configurations (Knuth's estimator or Chen's heuristic "
        "sampling, 95%% confidence interval) without counting",
        _estimate_arguments),
    "rank": ("the configurations with the smallest lower bounds", _rank_arguments),
    "compare": ("exhaustive versus bound-pruned counts, and where the cuts happen", _compare_arguments),
    "enumerate": ("write every valid configuration to a file", _enumerate_arguments),
    "check-bounds": (
        "check the bound model against real measurements (a Kernel Tuner cache file)",
        _check_bounds_arguments),
    "tune": (
        "benchmark configurations on a device and search for the fastest (a learnt search, proven "
        "by branch and bound where the space has bound terms, or a baseline strategy)",
        _tune_arguments),
    "export": (
        "write the space for another tool: its valid configurations for Kernel Tuner, or the "
        "space as T1 JSON",
        _export_arguments),
    "export-results": (
        "write a tune run's results for another tool: a Kernel Tuner cache file or T4 results "
        "JSON (times in ms)",
        _export_results_arguments),
    "nvcc-check": (
        "compile a sample of configurations of the space's CUDA kernel with nvcc (nothing runs) "
        "and compare ptxas's registers with the space's estimate `regs`",
        _nvcc_check_arguments),
    "calibrate": (
        "measure a device with microbenchmarks (clock, FMA rate, DRAM and L2 bandwidth, "
        "local-memory wavefronts, launch overhead) and write a device profile for --device "
        "FILE.toml",
        _calibrate_arguments),
    "predict": (
        "the best configurations of an input by the model across inputs (fitted on a tune "
        "--inputs store, or a model file), optionally timed; --table: one per input of a CSV, as "
        "JSON",
        _predict_arguments),
    "convert": (
        "write a Kernel Tuner script's tune_params and restrictions (or a T1 JSON space) as a "
        "readable beastgen space file",
        _convert_arguments),
    "analyze": (
        "what a tuning's measurements mean (a results store or a Kernel Tuner cache file): the "
        "performance hull of each metric, the metrics and the fastest configurations clustered, "
        "each parameter's share of the variance of log time; PNG figures and one HTML report",
        _analyze_arguments),
    "devices": ("list the built-in device profiles, or show one profile (--device)", _devices_arguments),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; of ``command`` alone when given (a run parses one command:
    building the others' parsers would cost it a few milliseconds)."""
    import argparse  # here: a warm count (beastgen.loading.warm_count) parses no arguments
    parser = argparse.ArgumentParser(
        prog="beastgen",
        description="Compile declarative GPU tuning spaces into fast exact enumerators. "
                    "A filter REJECTS a configuration when it is true.")
    parser.add_argument("--version", action="version", version=f"beastgen {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help, add_arguments) in SUBCOMMANDS.items():
        if command is not None and name != command:
            continue
        p = _command(sub, name, help=help)
        if add_arguments is not None:
            add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (None: this process's own); its exit status. After a count on
    the process's own command line, what it built is frozen out of the garbage collector's reach,
    so that the interpreter's exit does not walk it (about 8 ms of a cold count): a count leaves
    nothing open (no file, process or connection) that only a collection at exit would close."""
    try:
        return _run(argv)
    finally:
        words = sys.argv[1:]
        if argv is None and words[:1] == ["count"] and not any(w.startswith("--scheduler") for w in words):
            gc.freeze()


def _run(argv: list[str] | None) -> int:
    argv = _set_before_positionals(sys.argv[1:] if argv is None else argv)
    if hasattr(sys.stdout, "reconfigure"):  # each line out at once, into a pipe too (| tee)
        sys.stdout.reconfigure(line_buffering=True)
    try:
        with sigterm_as_interrupt():
            status = warm_count.run(argv)  # a warm count of a T1 file, from its record alone
            if status is not None:
                return status
            args = build_parser(argv[0] if argv and argv[0] in SUBCOMMANDS else None).parse_args(argv)
            return command_module(args).run(args)
    except BeastError as e:
        print(f"beastgen: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        terminated = isinstance(e, Terminated)
        try:  # (a hung-up terminal may refuse it)
            print(f"beastgen: {f'terminated ({e.signal.name})' if terminated else 'interrupted (Ctrl-C)'}",
                  file=sys.stderr)
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(e.exit_status if terminated else 130)  # now: compiled work may still run in a thread


def command_module(args):
    """The module that runs ``args.command``: with ``--scheduler``, the one that runs on Dask."""
    name = "on_cluster" if getattr(args, "scheduler", None) else COMMANDS[args.command]
    return importlib.import_module(f"{__package__}.commands.{name}")


if __name__ == "__main__":
    sys.exit(main())
