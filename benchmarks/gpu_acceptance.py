#!/usr/bin/env python3
"""The first run of beastgen on a new NVIDIA GPU, in one command of a few minutes: what a
performance engineer checks on their first day with the GPU (docs/cuda.md, "First run on a new GPU").

    python3 benchmarks/gpu_acceptance.py                 # on the GPU machine, in the repository root
    BEASTGEN_ACCEPTANCE_STANDIN=1 python3 benchmarks/gpu_acceptance.py    # the same, with no GPU

Each step runs the user's commands with its own time limit, inside one deadline for the whole
(``--deadline``, default 360 s): a hang costs its step, never the run.

  install       pycuda and what it and Kernel Tuner need, from the wheels in .whl/ (pip --target,
                no network: benchmarks/gpu_wheels.sh builds them), beastgen editable from this tree
  devices       ``beastgen devices --device auto``: the GPU's profile from the driver, through pycuda
                and again through cuda-bindings alone (the two must agree)
  calibrate     ``beastgen calibrate --device cuda:0``: a complete profile, every rate measured, each
                set beside the auto profile's datasheet peak (a measurement above it is a finding)
  tune          ``beastgen tune spaces/gemm.py --backend cuda`` (the default search, every result
                verified against NumPy's product) with a budget and a time limit
  bounds        ``check-bounds`` on what the tune measured, against the auto profile: each
                violation named with its term and the device properties it reads
  proof         ``beastgen tune`` on a small gemm space to the proof; checked independently: every
                valid configuration measured or cut (bound at least the best time), "optimal" only
                if so
  tests         ``pytest -m gpu``: the suite's tests that need a GPU
  calibrated_bounds  the same ``check-bounds`` against the calibrated profile (the measured rates × 1.25)
  kernel_tuner  one ``tune_kernel(..., lang="CUDA")`` with ``beastgen.kernel_tuner.Strategy``, warm-
                started by the tune's store, where that module and Kernel Tuner are there

It writes ``$OUT/summary.json`` (``--out``; ``$OUT`` by default, else ./gpu-acceptance), the tune's
plot ``$OUT/gemm-tune.png`` and ``$OUT/logs.tar.gz`` (every step's log and file), after every step,
and prints a table last. Exit status 0 when every step passed.

Restartable: the steps' files and results stores stay in the work folder (``--work``, default
.gpu-acceptance/ in the repository root, ignored by git, so that a device machine kept warm keeps
it). The same command again runs only the steps that have not passed (a tune or proof resumes from
its store, nothing measured twice) and reports the others from the earlier run; ``--steps`` chooses,
``--fresh`` starts anew.

BEASTGEN_ACCEPTANCE_STANDIN=1: the same run where no GPU is, through the stand-in of pycuda.driver
(tests/cuda_standin: an H100's attributes; gemm computed by NumPy, each launch timed at what NumPy
took for the product on this CPU; other kernels' times made up, 0.5 ms) and its nvidia-smi. Only the GPU is missing: the wheels, the install, the commands, the limits and the
summary are those of the real run. No figure of such a run says anything about a GPU; the GPU tests
skip, and Kernel Tuner runs on OpenCL (PoCL, a CPU) where pyopencl is installed.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STANDIN = os.path.join(REPO, "tests", "cuda_standin")
GEMM = os.path.join(REPO, "spaces", "gemm.py")
#: the proof's space: spaces/gemm.py with tiles of at most 16 x 16 x 4 (40 configurations on an H100)
PROOF_SETTINGS = ["max_blk=16", "max_blk_k=4"]
#: seconds kept at the end of the deadline for the summary
RESERVE = 10
#: Kernel Tuner's problem: C (M x N) += A (M x K) B (K x N), single precision
KT_SIZE = 512


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or "gpu-acceptance",
                        help="where summary.json and logs.tar.gz go (default: $OUT, else ./gpu-acceptance)")
    parser.add_argument("--deadline", type=float, default=360, metavar="SECONDS",
                        help="the whole run's time (default 360)")
    parser.add_argument("--steps", help="which steps, comma-separated, from: " + ",".join(STEPS)
                        + " (default: those that have not passed in the work folder's last run, all "
                        "on a first run); install always runs")
    parser.add_argument("--work", default=os.path.join(REPO, ".gpu-acceptance"),
                        help="where the steps' files and results stores are kept from run to run (default "
                        ".gpu-acceptance/ in the repository root, ignored by git): running again resumes")
    parser.add_argument("--fresh", action="store_true", help="empty the work folder first: run every step anew")
    parser.add_argument("--budget", type=int, default=300, help="tune: at most this many configurations")
    parser.add_argument("--tune-time", type=float, default=75, metavar="SECONDS",
                        help="tune: stop searching after this long (default 75)")
    parser.add_argument("--proof-time", type=float, default=75, metavar="SECONDS",
                        help="proof: stop searching after this long (default 75: not proven then)")
    parser.add_argument("--site", default=os.path.join(tempfile.gettempdir(), "beastgen-gpu-site"),
                        help="where the carried wheels are installed (pip --target)")
    parser.add_argument("--check-proof", nargs=2, metavar=("STORE", "TUNE_JSON"), help=argparse.SUPPRESS)
    parser.add_argument("--kernel-tuner-run", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check_proof:
        return check_proof(*args.check_proof)
    if args.kernel_tuner_run:
        return kernel_tuner_run(args.kernel_tuner_run)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a timeout's SIGTERM: summary written
    unknown = set((args.steps or "install").split(",")) - set(STEPS)
    if unknown:
        parser.error(f"unknown steps {', '.join(sorted(unknown))}: choose from {', '.join(STEPS)}")
    return Acceptance(args).run()


class Acceptance:
    """The steps, their shared environment and files, and the summary."""

    def __init__(self, args):
        self.args = args
        self.standin = os.environ.get("BEASTGEN_ACCEPTANCE_STANDIN") == "1"
        self.start = time.monotonic()
        self.deadline = self.start + args.deadline
        self.out = os.path.abspath(args.out)
        self.work = os.path.abspath(args.work)
        if args.fresh and os.path.isdir(self.work):
            import shutil
            shutil.rmtree(self.work)
        os.makedirs(self.work, exist_ok=True)
        self.earlier = self.resume()
        self.site = os.path.abspath(args.site)
        self.beastgen = [sys.executable, "-m", "beastgen"]
        self.results = {}
        self.cpu = {}  # step -> CPU seconds of its commands (user + system, their processes' trees)
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", MPLBACKEND="Agg",
                        BEASTGEN_GENERATED_DIR=self.path("generated"), XDG_CACHE_HOME=self.path("cache"))
        paths = [self.site, os.environ.get("PYTHONPATH", "")]
        if self.standin:
            paths.insert(0, STANDIN)
            self.env["PATH"] = os.pathsep.join([os.path.join(STANDIN, "bin"), self.env.get("PATH", "")])
            self.env.update(STANDIN_GPU="h100", STANDIN_EMULATE="gemm")
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)

    def path(self, name: str) -> str:
        return os.path.join(self.work, name)

    def resume(self) -> dict:
        """The work folder's last run: {step: result} of its steps, and what later steps read of
        them (the auto profile, the tune's store, the calibrated profile); {} on a first run."""
        try:
            with open(self.path("summary.json"), encoding="utf-8") as f:
                earlier = json.load(f)["steps"]
        except (OSError, ValueError, KeyError):
            return {}
        if "profile" in earlier.get("devices", {}):
            self.profile = earlier["devices"]["profile"]
        if earlier.get("tune", {}).get("best_time_ms") is not None and os.path.exists(self.path("gemm.db")):
            self.store = self.path("gemm.db")
        if earlier.get("calibrate", {}).get("status") == "passed" and os.path.exists(self.path("calibrated.toml")):
            self.calibrated = self.path("calibrated.toml")
        return earlier

    # -- running commands ------------------------------------------------------------------------
    def remaining(self) -> float:
        return self.deadline - RESERVE - time.monotonic()

    def command(self, step: str, label: str, argv: list[str], limit: float, env=None) -> dict:
        """Run ``argv`` (its output to ``<step>-<label>.log`` in the work folder) for at most
        ``limit`` seconds and what is left of the deadline; on time, Ctrl-C (SIGINT) to its process
        group, then SIGKILL 15 s later. {rc, seconds, timed_out, log, output}."""
        limit = max(min(limit, self.remaining()), 1)
        log = self.path(f"{step}-{label}.log")
        started, cpu = time.monotonic(), _children_cpu()
        with open(log, "w", encoding="utf-8") as f:
            f.write(f"$ {shlex.join(argv)}\n")
            f.flush()
            process = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=REPO,
                                       env=env or self.env, start_new_session=True)
            timed_out = False
            try:
                process.wait(limit)
            except KeyboardInterrupt:  # the run itself is stopped (Ctrl-C, or SIGTERM: see main)
                _signal_group(process, signal.SIGKILL)
                raise
            except subprocess.TimeoutExpired:
                timed_out = True
                _signal_group(process, signal.SIGINT)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    _signal_group(process, signal.SIGKILL)
                    process.wait()
        seconds, cpu = time.monotonic() - started, _children_cpu() - cpu
        with open(log, encoding="utf-8", errors="replace") as f:
            output = f.read()
        mark = "TIMED OUT" if timed_out else f"exit status {process.returncode}"
        print(f"  [{step}] {label}: {mark} in {seconds:.1f} s ({cpu:.1f} s of CPU)", flush=True)
        self.cpu[step] = self.cpu.get(step, 0.0) + cpu
        return {"rc": process.returncode, "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
                "timed_out": timed_out, "log": os.path.basename(log), "output": output}

    def python(self, step: str, label: str, code: str, limit: float = 60, env=None) -> dict:
        return self.command(step, label, [sys.executable, "-c", code], limit, env)

    # -- the run -----------------------------------------------------------------------------------
    def run(self) -> int:
        if self.args.steps:
            chosen = ["install"] + [s for s in self.args.steps.split(",") if s != "install"]
        else:  # a run again resumes: the steps that passed before are kept
            chosen = [s for s in STEPS if s == "install" or self.earlier.get(s, {}).get("status") != "passed"]
        print(f"beastgen GPU acceptance{' (STAND-IN: no GPU)' if self.standin else ''}: steps "
              f"{', '.join(chosen)}; deadline {self.args.deadline:g} s; work folder {self.work}",
              flush=True)
        for step in STEPS:
            if step not in chosen:
                if step in self.earlier:
                    self.results[step] = {**self.earlier[step], "earlier_run": True}
                continue
            minimum = STEPS[step][1]
            if self.remaining() < minimum:
                self.results[step] = {"status": "skipped", "why": f"less than {minimum} s of the "
                                      f"deadline left ({max(self.remaining(), 0):.0f} s)"}
                continue
            started = time.monotonic()
            try:
                result = STEPS[step][0](self)
            except KeyboardInterrupt:
                self.results[step] = {"status": "failed", "why": "the run was stopped during this step",
                                      "seconds": round(time.monotonic() - started, 1)}
                break
            except Exception as e:  # noqa: BLE001 - a step's own failure is its result, not the run's end
                result = {"status": "failed", "why": f"{type(e).__name__}: {e}"}
            result["seconds"] = round(time.monotonic() - started, 1)
            result["cpu_seconds"] = round(self.cpu.get(step, 0.0), 1)
            self.results[step] = result
            print(f"[{step}] {result['status']}{': ' + result['why'] if result.get('why') else ''} "
                  f"({result['seconds']} s)", flush=True)
            self.write()  # after every step: a run killed from outside still leaves what it did
            if step == "install" and result["status"] != "passed":
                break
        summary = self.write()
        print()
        print(table(summary))
        print(f"\nwrote {self.out}/summary.json, logs.tar.gz and the plots; the work folder {self.work} "
              "is kept: the same command again runs the steps that did not pass (--fresh: all anew)")
        return 0 if summary["passed"] else 1

    def write(self) -> dict:
        """summary.json (in the work folder too: what a run again resumes from), the plots (PNG) and
        logs.tar.gz (every file of the work folder but the generated code and the compile cache) in
        the output folder; the summary."""
        import shutil

        summary = {"standin": self.standin, "seconds": round(time.monotonic() - self.start, 1),
                   "deadline": self.args.deadline, "steps": self.results,
                   "passed": all(r["status"] in ("passed", "skipped") for r in self.results.values())}
        os.makedirs(self.out, exist_ok=True)
        for folder in (self.out, self.work):
            with open(os.path.join(folder, "summary.json"), "w", encoding="utf-8") as f:
                json.dump(summary, f, indent=1, default=str)
        for plot in glob.glob(self.path("*.png")):
            shutil.copy(plot, self.out)
        with tarfile.open(os.path.join(self.out, "logs.tar.gz"), "w:gz") as tar:
            for name in sorted(os.listdir(self.work)):
                if name not in ("generated", "cache"):
                    tar.add(self.path(name), arcname=f"gpu-acceptance/{name}")
        return summary

    # -- the steps ---------------------------------------------------------------------------------
    def install(self) -> dict:
        machine = {"python": sys.version.split()[0], "executable": sys.executable}
        for label, argv in (("nvidia-smi", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                                            "clocks.max.graphics,clocks.max.memory", "--format=csv"]),
                            ("nvcc", ["nvcc", "--version"])):
            try:
                out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=self.env)
                machine[label] = (out.stdout + out.stderr).strip()
            except (OSError, subprocess.TimeoutExpired) as e:
                machine[label] = f"cannot run: {e}"
        result = {"machine": machine}
        wheels = sorted(glob.glob(os.path.join(REPO, ".whl", "*.whl")))
        if wheels:
            if os.path.isdir(self.site):
                import shutil
                shutil.rmtree(self.site)
            pip = self.command("install", "wheels", [
                sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                "--no-cache-dir", "--upgrade", "--target", self.site, *wheels], 120)
            result["wheels"] = [os.path.basename(w) for w in wheels]
            if pip["rc"] != 0:
                return {**result, "status": "failed", "why": f"pip could not install .whl/: {tail(pip)}"}
        else:
            result["wheels"] = "no .whl/ folder: pycuda must already be installed (benchmarks/gpu_wheels.sh)"
        editable = self.command("install", "beastgen", [
            sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
            "--no-index", "-e", REPO], 180)
        if editable["rc"] != 0:  # then from the tree itself, as the tests import it
            result["beastgen_install"] = f"pip install -e failed ({tail(editable)}): PYTHONPATH instead"
            self.env["PYTHONPATH"] = os.pathsep.join([self.env["PYTHONPATH"], REPO])
        script = os.path.join(os.path.dirname(sys.executable), "beastgen")
        if editable["rc"] == 0 and os.path.exists(script):
            self.beastgen = [script]  # the console script a user runs
        version = self.command("install", "version", [*self.beastgen, "--version"], 60)
        if version["rc"] != 0:
            return {**result, "status": "failed", "why": f"beastgen does not run: {tail(version)}"}
        result["beastgen"] = version["output"].splitlines()[-1]
        # the carried pycuda itself (never the stand-in): on a GPU machine it must import
        real = dict(self.env, PYTHONPATH=os.pathsep.join(p for p in (self.site, os.environ.get("PYTHONPATH")) if p))
        probe = self.python("install", "pycuda", "import pycuda, pycuda.driver as d; "
                            "print(pycuda.VERSION_TEXT, 'built for CUDA', d.get_version(), "
                            "'driver supports CUDA', d.get_driver_version())", 60, real)
        result["pycuda"] = probe["output"].splitlines()[-1] if probe["output"] else ""
        if probe["rc"] != 0:
            if self.standin and "libcuda.so.1" in probe["output"]:
                result["pycuda"] = ("import pycuda.driver fails without a driver, as expected here: "
                                    + result["pycuda"])
            else:
                return {**result, "status": "failed", "why": f"pycuda does not import: {tail(probe)}"}
        sys.path.insert(0, REPO)  # the summary's checks below read beastgen's own tables
        return {**result, "status": "passed"}

    def devices(self) -> dict:
        shown = self.command("devices", "auto-pycuda", [*self.beastgen, "devices", "--device", "auto",
                                                        "--json"], 120)
        if shown["rc"] != 0:
            return {"status": "failed", "why": tail(shown)}
        profile = last_json(shown)
        result = {"name": profile["name"], "source": profile["source"],
                  "compute_capability": profile["properties"]["compute_capability"],
                  "sm_count": profile["properties"]["sm_count"], "profile": profile["properties"]}
        self.profile = profile["properties"]
        # cuda-bindings alone: the same command with the carried pycuda (and the stand-in) hidden
        alone = dict(self.env, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
        bindings = self.command("devices", "auto-cuda-bindings", [*self.beastgen, "devices", "--device",
                                                                  "auto", "--json"], 120, alone)
        if bindings["rc"] != 0:
            result["cuda_bindings"] = f"not read: {tail(bindings)}"
            if not self.standin:
                return {**result, "status": "failed", "why": "--device auto through cuda-bindings "
                        f"failed: {tail(bindings)}"}
        else:
            other = last_json(bindings)
            differ = sorted(k for k in set(other["properties"]) | set(profile["properties"])
                            if other["properties"].get(k) != profile["properties"].get(k))
            result["cuda_bindings"] = f"{other['source']}: {'agrees' if not differ else 'DIFFERS'}"
            if differ:
                return {**result, "status": "failed", "why": "pycuda and cuda-bindings read different "
                        f"profiles: {', '.join(differ)}"}
        return {**result, "status": "passed"}

    def calibrate(self) -> dict:
        from beastgen.devices.profiles import PERFORMANCE_PROPERTIES, REQUIRED_PROPERTIES
        from beastgen.harness.calibrate import RATE_MARGIN, TIME_MARGIN

        profile = self.path("calibrated.toml")
        done = self.command("calibrate", "calibrate", [*self.beastgen, "calibrate", "--device", "cuda:0",
                                                       "-o", profile, "--no-progress"], 150)
        if done["rc"] != 0:
            return {"status": "failed", "why": tail(done)}
        shown = self.command("calibrate", "load", [*self.beastgen, "devices", "--device", profile,
                                                   "--json"], 60)
        if shown["rc"] != 0:
            return {"status": "failed", "why": f"the written profile does not load: {tail(shown)}"}
        calibrated = last_json(shown)["properties"]
        missing = [p for p in REQUIRED_PROPERTIES + PERFORMANCE_PROPERTIES if p not in calibrated]
        self.calibrated = profile
        auto = getattr(self, "profile", {})
        rates = {}
        for prop in ("max_clock_mhz", "peak_flops_fp32", "peak_flops_fp64", "dram_bandwidth",
                     "l2_bandwidth", "launch_overhead", "issue_slots_per_sm_per_clock",
                     "lsu_wavefronts_per_sm_per_clock"):
            margin = TIME_MARGIN if prop == "launch_overhead" else RATE_MARGIN
            measured = calibrated[prop] / margin
            rates[prop] = {"measured": measured, "written": calibrated[prop], "auto": auto.get(prop)}
        above = [p for p in ("max_clock_mhz", "peak_flops_fp32", "peak_flops_fp64", "dram_bandwidth")
                 if auto.get(p) and rates[p]["measured"] > auto[p] * (1.005 if p == "max_clock_mhz" else 1)]
        result = {"profile": os.path.basename(profile), "rates": rates, "missing": missing,
                  "measured_above_auto_peak": above}
        if missing:
            return {**result, "status": "failed", "why": f"the profile lacks {', '.join(missing)}"}
        if above and not self.standin:
            return {**result, "status": "failed", "why": "measured above the auto profile's datasheet "
                    f"peak (its bounds would not be proofs): {', '.join(above)}"}
        return {**result, "status": "passed"}

    def tune(self) -> dict:
        store = self.path("gemm.db")
        tune_time = min(self.args.tune_time, self.remaining() - 60)
        done = self.command("tune", "gemm", [
            *self.beastgen, "tune", GEMM, "--backend", "cuda", "--budget", str(self.args.budget),
            "--time", f"{tune_time:.0f}", "--results", store, "--json", "--no-progress",
            "--plot", self.path("gemm-tune.png")], tune_time + 120)
        record = last_json(done)
        if done["rc"] != 0 or record is None:
            return {"status": "failed", "why": tail(done)}
        if record["best_time_ms"] is not None:  # what check-bounds and Kernel Tuner's priors read
            self.store = store
        return tune_summary(record, "wrong_result")

    def bounds(self, label: str = "auto") -> dict:
        """check-bounds of what the tune measured against the ``label`` profile (auto or
        calibrated): each violated term with its source and the device properties it reads."""
        store = getattr(self, "store", None)
        device = "auto" if label == "auto" else getattr(self, "calibrated", None)
        if store is None or device is None:
            return {"status": "skipped", "why": ("the tune measured no configuration" if store is None
                                                 else "no calibrated profile")}
        cache = self.path(f"gemm-cache-{label}.json")  # anew: a tune run again measures more
        export = self.command("bounds", f"export-{label}", [*self.beastgen, "export-results", store,
                                                           "--format", "kernel_tuner", "-o", cache], 60)
        if export["rc"] != 0:
            return {"status": "failed", "why": f"export-results: {tail(export)}"}
        check = self.command("bounds", label, [*self.beastgen, "check-bounds", GEMM, "--device", device,
                                               "--replay", cache, "--json"], 120)
        record = last_json(check)
        if check["rc"] not in (0, 1) or record is None:
            return {"status": "failed", "why": tail(check)}
        violations = record["violations"] + record["fastest_repetition_violations"]
        terms = {}
        for v in violations:
            term = terms.setdefault(v["bottleneck"], {"count": 0, "source": record["sources"].get(v["bottleneck"]),
                                                      "reads": record["facts"].get(v["bottleneck"]), "example": v})
            term["count"] += 1
        result = {label: {"matched": record["matched"], "violations": len(record["violations"]),
                          "fastest_repetition_violations": len(record["fastest_repetition_violations"]),
                          "violated_terms": terms, "real_over_bound": record["real_over_bound"],
                          "dominates": record["dominates"]}}
        if violations:
            return {**result, "status": "failed", "why": (
                f"{label} profile: {len(record['violations'])} violations (mean), "
                f"{len(record['fastest_repetition_violations'])} (fastest) in "
                + ", ".join(f"{t} [{d['source']}] reading {d['reads']}" for t, d in terms.items()))}
        if not record["matched"]:
            return {**result, "status": "skipped", "why": "the tune measured no configuration"}
        return {**result, "status": "passed"}

    def calibrated_bounds(self) -> dict:
        return self.bounds("calibrated")

    def proof(self) -> dict:
        store = self.path("proof.db")
        proof_time = min(self.args.proof_time, self.remaining() - 40)
        done = self.command("proof", "tune", [
            *self.beastgen, "tune", GEMM, "--backend", "cuda", "--set", *PROOF_SETTINGS, "--time",
            f"{proof_time:.0f}", "--results", store, "--json", "--no-progress"], proof_time + 90)
        record = last_json(done)
        if done["rc"] != 0 or record is None:
            return {"status": "failed", "why": tail(done)}
        with open(self.path("proof-tune.json"), "w", encoding="utf-8") as f:
            json.dump(record, f)
        check = self.command("proof", "check", [sys.executable, os.path.abspath(__file__), "--check-proof",
                                                store, self.path("proof-tune.json")], 120)
        verdict = last_json(check)
        if check["rc"] not in (0, 1) or verdict is None:
            return {"status": "failed", "why": f"the proof's check did not run: {tail(check)}"}
        result = {**tune_summary(record, "wrong_result"), "check": verdict}
        if check["rc"] != 0:
            return {**result, "status": "failed", "why": verdict["why"]}
        return result

    def tests(self) -> dict:
        junit = self.path("gpu-tests.xml")
        done = self.command("tests", "pytest", [sys.executable, "-m", "pytest", "-m", "gpu", "-q",
                                                "-p", "no:cacheprovider", f"--junitxml={junit}",
                                                os.path.join(REPO, "tests")], 240)
        try:
            suite = ElementTree.parse(junit).getroot()
            suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
            counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
        except (OSError, ElementTree.ParseError, AttributeError):
            return {"status": "failed", "why": f"pytest wrote no report: {tail(done)}"}
        counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
        skipped = [line for line in done["output"].splitlines() if line.startswith("SKIPPED")]
        result = {**counts, "skip_reasons": skipped[:5]}
        if counts["failures"] or counts["errors"] or done["timed_out"]:
            return {**result, "status": "failed", "why": f"{counts['failures']} failed, {counts['errors']} "
                    f"errors{' (timed out)' if done['timed_out'] else ''}: {tail(done, 600)}"}
        if not counts["passed"] and not self.standin:
            return {**result, "status": "failed", "why": f"no GPU test ran: {'; '.join(skipped[:2])}"}
        return {**result, "status": "passed"}

    def kernel_tuner(self) -> dict:
        probe = self.python("kernel_tuner", "probe", KERNEL_TUNER_PROBE, 60)
        if probe["rc"] == 3:  # one of the two is absent: nothing to run
            return {"status": "skipped", "why": probe["output"].strip().splitlines()[-1]}
        if probe["rc"] != 0:
            return {"status": "failed", "why": f"present, but does not import: {tail(probe)}"}
        if self.standin:
            opencl = self.python("kernel_tuner", "pyopencl", "import pyopencl; pyopencl.get_platforms()", 60)
            if opencl["rc"] != 0:
                return {"status": "skipped", "why": "the stand-in imitates only what beastgen calls of "
                        "pycuda (Kernel Tuner drives pycuda itself), and pyopencl is not here for OpenCL"}
        folder = self.path("kernel-tuner")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "request.json"), "w", encoding="utf-8") as f:
            json.dump({"lang": "OpenCL" if self.standin else "CUDA",
                       "priors": [p for p in [getattr(self, "store", None)] if p]}, f)
        done = self.command("kernel_tuner", "tune_kernel", [sys.executable, os.path.abspath(__file__),
                                                            "--kernel-tuner-run", folder], 150)
        record = last_json(done)
        if done["rc"] != 0 or record is None:
            return {"status": "failed", "why": tail(done)}
        return {**record, "status": "passed"}


#: exit status 3 and a line saying which, where Kernel Tuner or beastgen's strategy for it is absent
KERNEL_TUNER_PROBE = """import sys
try:
    import kernel_tuner
except ModuleNotFoundError as e:
    if e.name != "kernel_tuner":
        raise
    sys.exit(print("Kernel Tuner is not installed (its wheel is not in .whl/)") or 3)
try:
    import beastgen.kernel_tuner
except ModuleNotFoundError as e:
    if e.name != "beastgen.kernel_tuner":
        raise
    sys.exit(print("beastgen.kernel_tuner (the Kernel Tuner strategy) is not in this tree yet") or 3)
"""

#: step -> (what runs it, the fewest seconds of the deadline it starts with)
STEPS = {"install": (Acceptance.install, 30), "devices": (Acceptance.devices, 20),
         "tune": (Acceptance.tune, 90), "bounds": (Acceptance.bounds, 20),
         "calibrate": (Acceptance.calibrate, 30), "calibrated_bounds": (Acceptance.calibrated_bounds, 20),
         "proof": (Acceptance.proof, 60), "tests": (Acceptance.tests, 45),
         "kernel_tuner": (Acceptance.kernel_tuner, 45)}


def tune_summary(record: dict, wrong: str) -> dict:
    """What the table and the summary keep of ``beastgen tune --json``: the best time and its rate,
    the runs, the failures (a wrong result fails the step), the bound violations and the verdict."""
    settings = record["settings"]
    ran = record["ran_now"]
    flops = 2.0 * settings["M"] * settings["N"] * settings["K"] * (4 if settings["precision"] in "cz" else 1)
    best = record["best_time_ms"]
    result = {"device": record["device"], "best_time_ms": best, "best_config": record["best_config"],
              "gflops": flops / (best * 1e-3) / 1e9 if best else None, "ran": ran,
              "exhaustive": record["exhaustive"], "failures": record["failures"],
              "failure_examples": record["failure_examples"][:3],
              "bound_violations": len(record["bound_violations"]),
              "bound_violation_examples": record["bound_violations"][:10],
              "seconds_per_configuration": record["seconds"] / ran if ran else None,
              "search_seconds": record["seconds"], "stopped": record["stopped"],
              "verdict": record["certificate"] or "no certificate", "proven": record["proven"]}
    problems = []
    if record["failures"].get(wrong):
        problems.append(f"{record['failures'][wrong]} wrong results")
    if best is None:
        problems.append("no configuration measured successfully")
    if record["bound_violations"]:
        terms = sorted({v["term"] for v in record["bound_violations"]})
        problems.append(f"{len(record['bound_violations'])} bound violations ({', '.join(terms)})")
    return {**result, "status": "failed" if problems else "passed", "why": "; ".join(problems)}


def check_proof(store: str, tune_json: str) -> int:
    """Independent of the search: each valid configuration of the proof's space is measured (in the
    store) or cut, its bound at least the best time measured, the bound recomputed by the naive
    reference evaluator term by term, leaving out each term that some measurement ran below;
    "optimal" claimed only where none is open. Prints one JSON object; exit status 1 when the tune
    claims optimal and a configuration is open."""
    sys.path.insert(0, REPO)
    import beastgen
    from beastgen.compiler.reference import ReferenceEnumerator

    with open(tune_json, encoding="utf-8") as f:
        record = json.load(f)
    plan = beastgen.load(GEMM).specialize(device="auto", **record["settings"])
    spec = plan.specialized
    reference = ReferenceEnumerator(spec.space, spec.device, spec.settings)
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT config, status, time FROM results").fetchall()
    columns = list(plan.columns)
    measured = {tuple(json.loads(c)[k] for k in columns): (s, t) for c, s, t in rows}
    terms = {}
    for row in plan.enumerate():  # the configurations only: their bounds come from the reference
        config = {k: row[k].item() for k in columns}
        terms[tuple(config[k] for k in columns)] = reference.term_values(config)
    ok = {key: t for key, (s, t) in measured.items() if s == "ok"}
    violated = sorted({term for key, t in ok.items() for term, value in terms.get(key, {}).items()
                       if t < value})
    best = min(ok.values(), default=float("inf"))
    cut = open_ = 0
    for key, values in terms.items():
        if key in measured:
            continue
        bound = max((v for term, v in values.items() if term not in violated), default=0.0)
        if bound >= best:
            cut += 1
        else:
            open_ += 1
    verdict = {"valid": len(terms), "measured": len(measured), "cut": cut, "open": open_,
               "best_ms": best * 1e3, "violated_terms": violated, "claimed_optimal": record["proven"]}
    if record["proven"] and open_:
        verdict["why"] = (f"the tune claims optimal, but {open_} configurations whose bound is below "
                          "the best time were never measured")
    elif record["proven"]:
        verdict["why"] = "optimal: every configuration measured or cut"
    else:
        verdict["why"] = f"not claimed optimal ({record['stopped']}); {open_} neither measured nor cut"
    if violated:
        verdict["why"] += f" (without the violated terms {', '.join(violated)})"
    print(json.dumps(verdict))
    return 1 if record["proven"] and open_ else 0


def kernel_tuner_run(folder: str) -> int:
    """One ``tune_kernel`` of spaces/kernels/gemm.cl (single precision, KT_SIZE cubed, untransposed)
    over a small grid of its parameters, with beastgen's search as the strategy, warm-started by the
    gemm tune's store (another problem size on this GPU); Kernel Tuner verifies each result against
    NumPy's product. Prints one JSON object."""
    import numpy as np
    from kernel_tuner import tune_kernel

    import beastgen.kernel_tuner

    with open(os.path.join(folder, "request.json"), encoding="utf-8") as f:
        request = json.load(f)
    with open(os.path.join(REPO, "spaces", "kernels", "gemm.cl"), encoding="utf-8") as f:
        kernel = f.read()
    # Kernel Tuner defines the parameters by their (lower-case) names; the kernel reads upper case
    # the parameters are spaces/gemm.py's iterators (so that the tune's store matches them as a
    # prior); Kernel Tuner defines each by its name, and the kernel reads its own upper-case names
    names = {"dim_m": "DIM_M", "dim_n": "DIM_N", "blk_m": "BLK_M", "blk_n": "BLK_N", "blk_k": "BLK_K",
             "blk_m_a": "DIM_M_A", "blk_n_a": "DIM_N_A", "blk_m_b": "DIM_M_B", "blk_n_b": "DIM_N_B",
             "tex_a": "TEX_A", "tex_b": "TEX_B"}
    header = "".join(f"#define {macro} {name}\n" for name, macro in names.items())
    header += ("#define REAL float\n#define REAL_IS_DOUBLE 0\n#define COMPLEX 0\n#define TRANS_A 0\n"
               "#define TRANS_B 0\n#if vector\n#define VL 4\n#else\n#define VL 1\n#endif\n")  # VL: one token
    # the powers of two of spaces/gemm.py's ranges, so that the tune's measured configurations of
    # power-of-two tiles are in the grid (a prior none of whose configurations is in the space is refused)
    tune_params = {"dim_m": [4, 8, 16, 32], "dim_n": [4, 8, 16, 32], "blk_m": [16, 32, 64, 128],
                   "blk_n": [16, 32, 64, 128], "blk_k": [2, 4, 8, 16, 32], "vector": [0, 1],
                   "blk_m_a": [4, 8, 16, 32, 64, 128], "blk_n_a": [1, 2, 4, 8, 16, 32],
                   "blk_m_b": [1, 2, 4, 8, 16, 32], "blk_n_b": [4, 8, 16, 32, 64, 128], "tex_a": [0, 1],
                   "tex_b": [0, 1]}
    restrictions = [  # spaces/gemm.py's filters of these parameters (type_len = 1 + 3 * vector)
        "dim_m * dim_n <= 1024", "(dim_m * dim_n) % 32 == 0",
        "blk_m % dim_m == 0", "blk_n % dim_n == 0",
        "blk_m_a * blk_n_a == dim_m * dim_n", "blk_m_b * blk_n_b == dim_m * dim_n",
        "blk_m % (blk_m_a * (1 + 3 * vector)) == 0", "blk_k % blk_n_a == 0",
        "blk_k % (blk_m_b * (1 + 3 * vector)) == 0", "blk_n % blk_n_b == 0",
        "5 * (blk_m // dim_m) * (blk_n // dim_n) >= 6 * (blk_m // dim_m + blk_n // dim_n)",
    ]
    n = KT_SIZE
    rng = np.random.default_rng(1)
    a, b, c = (rng.uniform(-1, 1, n * n).astype(np.float32) for _ in range(3))
    alpha, beta = np.float32(1.5), np.float32(0.5)
    args = [np.int32(n), np.int32(n), np.int32(n), alpha, a, np.int32(n), b, np.int32(n), beta, c,
            np.int32(n)]
    expected = (alpha * (a.reshape(n, n).T.astype(np.float64) @ b.reshape(n, n).T) + beta *
                c.reshape(n, n).T).T.ravel().astype(np.float32)  # column-major
    answer = [None] * 9 + [expected, None]
    priors = [p for p in request["priors"] if os.path.exists(p)]
    started = time.monotonic()
    results, env = tune_kernel(
        "gemm", header + kernel, (n, n), args, tune_params, restrictions=restrictions,
        grid_div_x=["blk_m"], grid_div_y=["blk_n"], block_size_names=["dim_m", "dim_n"],
        lang=request["lang"], answer=answer, atol=1e-2, quiet=True,
        strategy=beastgen.kernel_tuner.Strategy(priors=priors), strategy_options={"max_fevals": 20})
    seconds = time.monotonic() - started
    valid = [r for r in results if isinstance(r.get("time"), (int, float))]
    best = min(valid, key=lambda r: r["time"]) if valid else None
    print(json.dumps({
        "lang": request["lang"], "device": env.get("device_name"), "priors": [os.path.basename(p) for p in priors],
        "evaluated": len(results), "valid": len(valid), "seconds": round(seconds, 1),
        "best_time_ms": best["time"] if best else None,
        "gflops": 2.0 * n ** 3 / (best["time"] * 1e-3) / 1e9 if best else None,
        "best_config": {k: best[k] for k in tune_params} if best else None}))
    return 0 if best else 1


# -- helpers ---------------------------------------------------------------------------------------
def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's children and theirs, those ended so far."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _signal_group(process, sig) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def tail(done: dict, chars: int = 400) -> str:
    """The end of a command's output, on one line."""
    text = " | ".join(line for line in done["output"].strip().splitlines()[-6:] if line.strip())
    state = "timed out" if done["timed_out"] else f"exit status {done['rc']}"
    return f"{state}: {text[-chars:]}"


def last_json(done: dict):
    """The JSON object a command printed last (``--json``), or None."""
    for line in reversed(done["output"].strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def table(summary: dict) -> str:
    """The short table printed last."""
    steps = summary["steps"]
    rows = [("GPU acceptance" + (" (STAND-IN: no GPU: gemm times are NumPy's on this CPU, others made up)"
                                 if summary["standin"] else ""),
             f"{summary['seconds']:.0f} s of {summary['deadline']:.0f}; "
             + ("ALL PASSED" if summary["passed"] else "FAILED: " + ", ".join(
                 s for s, r in steps.items() if r["status"] == "failed")))]
    for step, result in steps.items():
        rows.append((f"{step}", f"{result['status']} ({result.get('seconds', 0):.0f} s, "
                                f"{result.get('cpu_seconds', 0):.0f} s of CPU"
                                f"{'; an earlier run' if result.get('earlier_run') else ''})"
                     + (f": {result['why'][:160]}" if result.get("why") else "")))
    devices = steps.get("devices", {})
    if devices.get("name"):
        rows.append(("GPU", f"{devices['name']}, sm_{str(devices['compute_capability']).replace('.', '')}, "
                            f"{devices['sm_count']} SMs ({devices['source']}); cuda-bindings: "
                            f"{str(devices.get('cuda_bindings'))[:120]}"))
    rates = steps.get("calibrate", {}).get("rates")
    if rates:
        def rate(prop, unit, scale):
            r = rates[prop]
            auto = f" (auto {r['auto'] / scale:.4g})" if r.get("auto") else ""
            return f"{r['measured'] / scale:.4g} {unit}{auto}"
        rows.append(("calibrated (measured)", ", ".join([
            rate("max_clock_mhz", "MHz", 1), rate("peak_flops_fp32", "TFLOP/s fp32", 1e12),
            rate("peak_flops_fp64", "TFLOP/s fp64", 1e12), rate("dram_bandwidth", "TB/s DRAM", 1e12),
            rate("l2_bandwidth", "TB/s L2", 1e12), rate("launch_overhead", "us launch", 1e-6)])))
    for step in ("tune", "proof"):
        t = steps.get(step, {})
        if t.get("ran") is not None:
            best = (f"best {t['best_time_ms']:.4g} ms = {t['gflops']:.0f} GFLOP/s" if t.get("best_time_ms")
                    else "no best")
            per = t.get("seconds_per_configuration")
            rows.append((f"{step} (gemm)", f"{best}; {t['ran']} run of {t['exhaustive']:,}, "
                                           f"{per:.2f} s each" if per else f"{best}; {t['ran']} run"))
            rows.append((f"{step} verdict", f"{t['verdict']} ({t['stopped']}); failures {t['failures'] or 0}; "
                                            f"bound violations {t['bound_violations']}"))
    check = steps.get("proof", {}).get("check")
    if check:
        rows.append(("proof check", f"{check['valid']} valid: {check['measured']} measured, {check['cut']} "
                                    f"cut, {check['open']} open: {check['why']}"))
    for step, label in (("bounds", "auto"), ("calibrated_bounds", "calibrated")):
        if isinstance(steps.get(step, {}).get(label), dict):
            b = steps[step][label]
            rows.append((f"check-bounds ({label})", f"{b['violations']} violations (mean), "
                                                    f"{b['fastest_repetition_violations']} (fastest) of "
                                                    f"{b['matched']} measured; real/bound min "
                                                    f"{b['real_over_bound'].get('min', float('nan')):.3g}"))
    tests = steps.get("tests", {})
    if "tests" in tests:
        rows.append(("gpu tests", f"{tests['passed']} passed, {tests['failures']} failed, "
                                  f"{tests['errors']} errors, {tests['skipped']} skipped"))
    kt = steps.get("kernel_tuner", {})
    if kt.get("best_time_ms"):
        rows.append(("Kernel Tuner + beastgen", f"{kt['lang']}: best {kt['best_time_ms']:.4g} ms = "
                                                f"{kt['gflops']:.0f} GFLOP/s at {KT_SIZE}^3, {kt['valid']} valid "
                                                f"of {kt['evaluated']} evaluated"))
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


if __name__ == "__main__":
    sys.exit(main())
