"""The exactness failures of the round-4 hostile probes (issue 37: F3 to F7, F10, F17, F18, X8),
each as it was found and in fresh variants (other constants, other operators of the same class):
every path (the command line and the Python API, on C, NumPy and Numba) gives Python's count, or
every one refuses with one line naming the place; never a crash, a signal, a traceback or a
negative count. The paths run in the differential test's worker process (a signal is a finding)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import PATIENCE_SECONDS
from test_differential import Worker, check_paths

NUMBA = ["api-numba", "cli-numba"]
FAST = ["reference", "api-c", "cli-c", "api-numpy", "cli-numpy"]
HEADER = "import math\nimport beastgen as beast\n"


def t1(parameters: dict, *conditions: str) -> str:
    return json.dumps({"ConfigurationSpace": {
        "TuningParameters": [{"Name": name, "Values": values} for name, values in parameters.items()],
        "Conditions": [{"Expression": text, "Parameters": []} for text in conditions]}})


#: (name, file suffix, text, settings, Python's count or None for a refusal on every path)
CASES = [
    # F3: 0.0 ** -inf is inf in Python (C rejected it)
    ("F3 powinf", ".py", HEADER + "x = beast.values(0.0, -0.0, 0.5, 2.0)\ny = beast.values(-1e999, -1.0, 1e999, 2.0)\n"
                                  "f = beast.filter(x ** y < 1.0)\n", {}, 6),
    ("F3 negzero", ".json", t1({"x": "[1, 2, 3]"}, "(-0.0) ** -1e999 + x > 0"), {}, 3),
    ("F3 variant", ".py", HEADER + "x = beast.values(0.0, -0.0, 1.0, -1.0, 3.0)\ny = beast.values(-math.inf, math.inf, -2.0, 0.5, math.nan)\n"
                                   "f = beast.filter(x ** y > 1)\n", {}, 18),
    # F4: int ** negative int is a float (or raises): C counted 4, the Python API 0
    ("F4 zpow", ".py", HEADER + "p = beast.values(1, 2, 4, 3)\nf = beast.filter((8 % p) ** -1 == 5)\n", {}, 1),
    ("F4 zpow2", ".json", t1({"p": "[1, 2, 4, 3]"}, "(8 % p) ** -1 != 5"), {}, 1),
    ("F4 negpow3", ".json", t1({"p": "[-4]", "q": "[1, 2]"}, "p ** -2 < 1"), {}, 2),
    ("F4 negpow", ".json", t1({"p": "[-4, 2, 3]", "q": "[1, 2]"}, "p ** -2 < 1"), {}, 6),
    ("F4 variant", ".py", HEADER + "p = beast.values(1, 2, 3, 4, 5, 7)\nq = beast.values(0, 1)\n"
                                   "f = beast.filter((7 % p + q) ** -2 == 0.25)\n", {}, 7),
    ("F4 exponent of either sign", ".py", HEADER + "p = beast.values(2, 3)\nq = beast.values(-1, 2)\n"
                                                   "f = beast.filter(p ** q > 1)\n", {}, None),
    # F5: a setting past 64 bits (Numba wrong, C and NumPy a traceback): refused on every path
    ("F5 bigset2", ".py", HEADER + "n = beast.setting(64)\na = beast.values(-7, -3, 3, 7, 10, 11, 13)\n"
                                   "b = beast.values(1, 2, -2, -1)\nf = beast.filter(n % a != b)\n",
     {"n": str(2 ** 63 + 2)}, None),
    ("F5 at the edge", ".py", HEADER + "n = beast.setting(64)\na = beast.values(-7, -3, 3, 7, 10, 11, 13)\n"
                                       "b = beast.values(1, 2, -2, -1)\nf = beast.filter(n % a != b)\n",
     {"n": str(2 ** 63 - 1)}, 2),
    ("F5 variants", ".py", HEADER + "n = beast.setting(64)\na = beast.values(3, 7)\n"
                                    "f = beast.filter((n // a > 0) | (-n < a))\n", {"n": str(-2 ** 63 - 1)}, None),
    ("F5 folded into a loop bound", ".py", HEADER + "n = beast.setting(-2)\na = beast.values(False)\n"
     "b = beast.range(beast.max(-5, beast.min(6, abs(a))), beast.max(-5, beast.min(6, n // 5)), 3)\n"
     "f = beast.filter(a >= b)\n", {"n": str(-2 ** 63 - 3)}, None),  # the fuzzer's: C counted, Numba a NameError
    # F6: a count of 2**63 or more summed over outer loops was printed negative
    ("F6 wrapf3", ".py", HEADER + "z = beast.values(0, 1)\na = beast.range(z, 2**62 + 2)\nb = beast.range(z, z - 7, -2)\n"
                                  "f = beast.filter(z <= b)\n", {}, 3 * (2 ** 62 + 2) + 3 * (2 ** 62 + 1)),
    ("F6 p102_11", ".py", HEADER + "z = beast.values(0, 1, 2)\na = beast.range(z - z, 2**62 + 2)\n", {}, 3 * (2 ** 62 + 2)),
    ("F6 downwards", ".py", HEADER + "z = beast.values(0, 1, 2, 3)\na = beast.range(2**62 + z, z, -1)\n",
     {}, 4 * 2 ** 62),
    ("F6 past 2**64", ".py", HEADER + "z = beast.values(0, 1, 2)\na = beast.range(-2**63 + z, 2**63 - 1)\n",
     {}, sum(2 ** 64 - 1 - z for z in range(3))),
    # F7: SIGFPE (an errored divisor reached a machine division)
    ("F7 fpe", ".py", HEADER + "p = beast.values(False, True)\nq = beast.values(0, 1, 2)\n"
                               "f = beast.filter(q % (p // p) == 0)\n", {}, 0),
    ("F7 fpe5", ".json", t1({"p": "[0, 1]", "q": "[0, 1, 2]"}, "(q % (p // p)) == 0"), {}, 3),
    ("F7 variants", ".py", HEADER + "p = beast.values(0, 1, 2)\nq = beast.values(-3, 0, 5)\n"
                                    "f = beast.filter((q // (p % p + p // p) > 0) | (q % ((p - 1) // (p - 1)) != 0))\n",
     {}, 2),
    ("F7 INT64_MIN % -1", ".py", HEADER + "x = beast.values(-2**63, 5)\ny = beast.values(-1, 3)\n"
                                          "f = beast.filter(x % y == 0)\n", {}, 2),
    # the fuzzer's: a power of a power of a nonnegative base is never complex (the T1 file was
    # refused where the file `convert` wrote from it counted)
    ("power of a nonnegative power", ".json", t1({"a": "[0, 4, 16]"}, "(a ** 0.5) ** 0.5 != 2"), {}, 2),
    ("power of a nonnegative power (fuzz)", ".json", t1({"a": "[5, 5]"}, "a == -2",
                                                       "(a ** -0.5) ** (-1e999 if a != -3 else a) == (a // a if a < 5 else a - a)",
                                                       "-a % a > a ** a"), {}, 0),
    # X8: the reference enumerator counts a range of 2**62 values that nothing reads
    ("X8 reference", ".py", HEADER + "w = beast.range(2**62)\na = beast.values(1, 2, 3)\nf = beast.filter(a > 1)\n",
     {}, 2 ** 62),
]


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    running = Worker(tmp_path_factory.mktemp("probes"))
    yield running
    running.stop()


@pytest.mark.parametrize("name, suffix, text, settings, expected", CASES, ids=[case[0] for case in CASES])
def test_every_path_counts_as_python_or_refuses(name, suffix, text, settings, expected, worker, tmp_path):
    path = tmp_path / f"space{suffix}"
    path.write_text(text)
    results = worker.run({"file": str(path), "settings": settings, "generated": str(tmp_path / "generated"),
                          "paths": FAST + (NUMBA if name.startswith(("F5", "F6", "F4 zpow", "F7 fpe")) else [])})
    reference = results.pop("reference")
    if expected is None:
        assert "error" not in reference
        assert check_paths(results, -1, path.name, name) == "refused"
    else:
        assert reference == {"count": expected}
        assert check_paths(results, expected, path.name, name) == "counted"


def test_convert_prints_negative_zero_in_parentheses(tmp_path):
    """F10: ``(-0.0) ** -1e999`` was written ``-0.0 ** (-math.inf)``, read by Python as
    ``-(0.0 ** -inf)``; ``show`` prints with the same printer."""
    source = tmp_path / "negzero.json"
    source.write_text(t1({"x": "[1, 2, 3]"}, "(-0.0) ** -1e999 + x > 0"))
    converted = tmp_path / "negzero.py"
    run = [sys.executable, "-m", "beastgen"]
    subprocess.run([*run, "convert", str(source), "-o", str(converted)], check=True, capture_output=True)
    assert "(-0.0) ** (-math.inf)" in converted.read_text()
    shown = subprocess.run([*run, "show", str(source)], check=True, capture_output=True, text=True).stdout
    assert "(-0.0) **" in shown and "-0.0 **" not in shown.replace("(-0.0) **", "")
    import beastgen
    from beastgen.compiler.reference import reference_count
    assert reference_count(beastgen.load(str(converted))) == 3


@pytest.mark.parametrize("values, why", [
    ("range(2**64)[-1:]", "the range has more than 1,048,576 elements"),  # F18: a traceback
    ("range(2**64)[5]", "the range has more than 1,048,576 elements"),
    ("[[1] * 2**20 for _ in range(2**10)]", "builds more than 4,194,304 elements in all"),  # F17: gigabytes
    ("[[1] * 2**20 for _ in range(40)][0]", "builds more than 4,194,304 elements in all"),  # F17: 350 MB
    ("['x' * 2**20 for _ in range(2**10)]", "builds more than 4,194,304 elements in all"),
])
def test_t1_values_beyond_the_caps_are_one_line_in_bounded_memory(values, why, tmp_path):
    """F17, F18: a Values expression within every per-list cap still built gigabytes; a slice of
    a range past 64 bits raised OverflowError. One line each, at once, in little memory."""
    path = tmp_path / "values.json"
    path.write_text(t1({"p": values}))
    # the peak of this process's own memory (VmHWM): ru_maxrss also holds the memory of the process
    # it was forked from (the test run's), which Linux folds into it at exec
    probe = ("import re, sys\nfrom beastgen.cli import main\nstatus = main(['count', sys.argv[1]])\n"
             "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
             "print(peak, status, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                          timeout=PATIENCE_SECONDS)
    *lines, usage = done.stderr.strip().splitlines()
    peak_kib, status = map(int, usage.split())
    assert status == 2 and len(lines) == 1 and why in lines[0] and "values.json:TuningParameters[0]" in lines[0]
    assert peak_kib < 400_000  # the interpreter and beastgen's imports: well below a gigabyte


def test_a_count_past_2_63_is_exact_in_threads_chunks_and_statistics(tmp_path):
    """F6 on every way a count runs: the C count (one thread, threads claiming split nodes, chunks)
    and Numba's (the same, and the statistics' count)."""
    from beastgen.compiler.runtime import compile_space
    import beastgen
    path = tmp_path / "wide.py"
    path.write_text(HEADER + "z = beast.values(0, 1, 2)\nb = beast.range(z, z + 3)\n"
                             "a = beast.range(2**62 - z, b - 2**62, -1)\nf = beast.filter(b % 2 == 1)\n")
    expected = sum(2 ** 63 - z - b for z in range(3) for b in range(z, z + 3) if b % 2 == 0)
    plan = compile_space(beastgen.load(str(path)), "h100", {}, str(tmp_path / "generated"))
    chunks = [(0, 1), (1, 3), (3, 2 ** 40)]
    assert plan.native is not None
    assert plan.count() == plan.count(jobs=2) == sum(plan.count(chunk=c) for c in chunks) == expected
    plan._native = False  # Numba from here on
    assert plan.count() == plan.count(jobs=2) == sum(plan.count(chunk=c) for c in chunks) == expected
    assert plan.stats().count == expected
