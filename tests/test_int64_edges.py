"""Issue 28's probes at the 64-bit edge, each as it was found: counts past 2**63, loops whose last
step passes INT64_MAX, abs(-2**63), float-to-int conversions past 64 bits, deep expressions, 21+
iterators, NaN and infinities, NFKC-equal T1 names and a T1 parameter of many values. Every one is
the reference's answer in both targets (C and Numba) or one clear error."""
from __future__ import annotations

import itertools
import json
import re
import textwrap

import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings

import beastgen
from beastgen.cli import main
from beastgen.compiler.codegen.c.module import generate_c_module
from beastgen.compiler.reference import ReferenceEnumerator, reference_count
from beastgen.compiler.runtime import compile_space
from beastgen.errors import BeastError, SpaceError
from beastgen.interop.t1 import t1_space
from beastgen.loading.plancache import compile_cached
from space_strategies import edge_spaces, many_iterator_spaces
from property_sizes import examples

HEADER = "import math\nimport beastgen as beast\n"


pytestmark = pytest.mark.usefixtures("compiled_nests_only")  # NumPy's path: test_vectorised.py


def load(tmp_path, body: str, name: str = "space"):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return beastgen.load(str(path))


def both_counts(space, generated_dir) -> tuple[int, int]:
    """(C target's count, Numba's count) of ``space``; the C target must print it."""
    plan = compile_space(space, "h100", {}, str(generated_dir))
    assert plan.native is not None
    native = plan.count()
    plan.executable.use_numba()  # Numba from here on
    return native, plan.count()


# -- a level too large for descents to scan -----------------------------------------------------
def test_a_level_of_2_40_values_is_refused_by_estimate_with_one_line(tmp_path, capsys):
    path = tmp_path / "wide.py"
    path.write_text(HEADER + "y = beast.values(1, 2, 3)\nx = beast.range(0, 2 ** 40)\n"
                             "f = beast.filter(x % 3 == y)\n")
    for native in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("BEASTGEN_NATIVE", native)
            assert main(["estimate", str(path), "--generated-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"beastgen: error: {path}:4: cannot estimate: iterator 'x' has "
                              "1,099,511,627,776 values") and "\n" not in err, err


def test_count_on_threads_skips_the_census_of_a_huge_level(tmp_path, monkeypatch):
    """Where a level has more values than descents may scan, ``count -j N`` (Numba) cuts the split
    nodes into equal chunks instead of a census that scans that level 8 times a node (SCAN_LIMIT is
    lowered here so that the reference can check the count)."""
    space = load(tmp_path, "y = beast.values(1, 2, 3)\nx = beast.range(0, 5000)\n"
                           "f = beast.filter(x % 3 == y)\n")
    plan = compile_space(space, "h100", {}, str(tmp_path))
    plan.executable.use_numba()
    monkeypatch.setattr(type(plan.counter), "SCAN_LIMIT", 4999)
    monkeypatch.setattr(type(plan.counter), "split_census", lambda *a, **k: pytest.fail("census ran"))
    assert plan.huge_scanned_level()[1] == 5000
    assert plan.count(jobs=2) == reference_count(space, "h100")
    from beastgen.distributed.chunks import plan_chunks
    cut, census = plan_chunks(plan, 2)  # a cluster's split: equal chunks, no census either
    assert census is None and sum(plan.count(chunk=c) for c in cut) == plan.count()
    with pytest.raises(BeastError, match="cannot estimate: iterator 'x' has 5,000 values"):
        plan.estimate(samples=10)


def test_a_huge_unfiltered_level_is_refused_by_estimate_and_counted_on_threads(tmp_path):
    """Descents scan the counted tail too: x (2**62 values, no filter) is refused by the estimate,
    and counted at once on threads (Numba) without a census."""
    space = load(tmp_path, "y = beast.values(1, 2, 3, 4, 5)\nx = beast.range(0, 2 ** 62)\n")
    plan = compile_space(space, "h100", {}, str(tmp_path))
    plan.executable.use_numba()
    with pytest.raises(BeastError, match=r"space\.py:4: cannot estimate: iterator 'x' has "
                                         "4,611,686,018,427,387,904 values"):
        plan.estimate(samples=10)
    assert plan.count(jobs=2) == 5 * 2 ** 62


# -- counts of 2**63 and more -----------------------------------------------------------------------
@pytest.mark.parametrize("body, expected", [
    ("y = beast.values(1, 2, 3, 4, 5)\nx = beast.range(0, 2 ** 62)\n", 23_058_430_092_136_939_520),
    ("a = beast.range(0, 2 ** 31)\nb = beast.range(0, 2 ** 32)\n", 9_223_372_036_854_775_808),
    ("a = beast.range(0, 2 ** 32)\nb = beast.range(0, 2 ** 32)\n", 2 ** 64),
    ("y = beast.values(1, 2, 3, 4, 5, 6)\nx = beast.range(0, 2 ** 62)\n", 6 * 2 ** 62),
])
def test_counts_past_2_63_never_wrap(tmp_path, body, expected):
    assert both_counts(load(tmp_path, body), tmp_path) == (expected, expected)


def test_a_count_past_2_63_in_json_and_from_the_plan_cache(tmp_path, capsys):
    path = tmp_path / "big.py"
    path.write_text(HEADER + "y = beast.values(1, 2, 3, 4, 5)\nx = beast.range(0, 2 ** 62)\n")
    for _ in range(2):  # cold, then answered from the plan cache's record
        assert main(["count", str(path), "--json", "--generated-dir", str(tmp_path)]) == 0
        record = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert record["count"] == 23_058_430_092_136_939_520
    cached = compile_cached(str(path), generated_dir=str(tmp_path))
    assert type(cached.executable).__name__ == "CachedExecutable" and cached.count() == 23_058_430_092_136_939_520


def test_a_domain_past_64_bits_is_one_clear_error(tmp_path):
    space = load(tmp_path, "a = beast.range(0, 28 * 10 ** 18)\nb = beast.values(1)\n")
    with pytest.raises(SpaceError, match=r"space.py:\d+: iterator 'a': in 28000000000000000000: the integer "
                                         r"28000000000000000000 needs more than 64 bits"):
        compile_space(space, "h100", {}, str(tmp_path))


# -- loops at INT64_MAX and ranges wider than 64 bits ----------------------------------------------
@pytest.mark.parametrize("body", [
    "y = beast.values(1, 2)\nx = beast.range(2 ** 63 - 4, 2 ** 63 - 1, 2)\nf = beast.filter(x + 0 * y == 5)\n",
    "y = beast.values(1, 2)\nx = beast.range(-2 ** 63 + 3, -2 ** 63, -1)\nf = beast.filter(x + 0 * y == 5)\n",
    "x = beast.range(-2 ** 62, 2 ** 62 + 5, 2 ** 61)\ny = beast.values(1, 2)\nf = beast.filter(x + y == 3)\n",
    "x = beast.range(2 ** 62, -2 ** 62 - 5, -2 ** 61)\ny = beast.values(1, 2)\nf = beast.filter(x % 3 == y)\n",
    # an equality filter solved for x: the domain test of its solution
    "y = beast.values(-2, -1, 0, 1, 2, 3)\nx = beast.range(-2 ** 62, 2 ** 62 + 5, 2 ** 61)\n"
    "f = beast.filter(x != y * 2 ** 61)\n",
    "y = beast.values(-2, -1, 0, 1, 2, 3)\nx = beast.range(2 ** 62, -2 ** 62 - 5, -2 ** 61)\n"
    "f = beast.filter(x != y * 2 ** 61)\n",
])
def test_loops_at_the_64_bit_edge_end_and_count_every_value(tmp_path, body):
    space = load(tmp_path, body)
    expected = reference_count(space, "h100")
    assert expected > 0
    assert both_counts(space, tmp_path) == (expected, expected)


def test_abs_of_int64_min_is_refused_like_negation(tmp_path):
    space = load(tmp_path, "x = beast.values(-2 ** 63, 1, 2)\ny = beast.values(1, 2)\n"
                           "f = beast.filter(abs(x) + y == 3)\n")
    with pytest.raises(SpaceError, match=r"filter 'f': abs\(x\) can reach 9.22e\+18, past the 64-bit"):
        compile_space(space, "h100", {}, str(tmp_path))


# -- float to int -----------------------------------------------------------------------------------
@pytest.mark.parametrize("conversion", ["math.floor(x)", "math.ceil(x)", "math.floor(x * 2.0)"])
@pytest.mark.parametrize("big", ["1e19", "1e300", "float('inf')"])
def test_a_float_made_an_integer_past_64_bits_is_refused(tmp_path, conversion, big):
    space = load(tmp_path, f"x = beast.values(1.5, {big}, -3.5)\ny = beast.values(1, 2)\n"
                           f"d = {conversion} + y\nf = beast.filter(d > 5)\n")
    with pytest.raises(SpaceError, match=r"derived 'd': math\.(floor|ceil)\(.*\) (can reach .*, past|"
                                         r"cannot be proven to stay inside) the 64-bit integers"):
        compile_space(space, "h100", {}, str(tmp_path))


def test_an_integer_past_2_53_compared_with_a_float_is_refused(tmp_path):
    """Python compares 2**53 + 1 with 2.0**53 exactly (unequal); C and Numba round the integer
    first (equal): it counted 1 where the reference counts 2. Within 2**53 both agree."""
    space = load(tmp_path, "x = beast.values(2**53 + 1, 3)\nf = beast.filter(x == 9007199254740992.0)\n")
    with pytest.raises(SpaceError, match=r"space.py:4: filter 'f': x == 9007199254740992.0 compares "
                       "the integer x, which can pass 2\\*\\*53, with a float"):
        compile_space(space, "h100", {}, str(tmp_path))
    space = load(tmp_path, "x = beast.values(2**53, 3)\nf = beast.filter(x == 9007199254740992.0)\n", "fits")
    assert both_counts(space, tmp_path) == (1, 1) == (reference_count(space, "h100"),) * 2


def test_float_to_int_proven_inside_64_bits_counts_like_python(tmp_path):
    space = load(tmp_path, """\
        x = beast.range(1, 60)
        y = beast.range(0, 5)
        z = beast.values(-9.223372036854775808e18, 0.5, 9.2e18)
        d = math.ceil(x / y) + math.floor(x * 0.5) + math.floor(beast.min(x * 1e30, 1e10))
        f = beast.filter(d % 7 == 0)
        g = beast.filter(math.floor(z) + x == 3)
        @beast.derived
        def e():
            return int(x * 2.5) + math.ceil(y * 1e-3)
        h = beast.filter(e % 3 == 1)
    """)
    expected = reference_count(space, "h100")
    assert expected > 0
    assert both_counts(space, tmp_path) == (expected, expected)


# -- deep expressions -------------------------------------------------------------------------------
def test_a_250_term_chain_compiles_in_both_targets(tmp_path):
    terms = " + ".join(f"x * {i}" for i in range(250))
    space = load(tmp_path, f"x = beast.range(0, 4)\ny = beast.values(1, 2)\n"
                           f"f = beast.filter(({terms}) % 7 == y)\n")
    expected = reference_count(space, "h100")
    assert 0 < expected < 8
    assert both_counts(space, tmp_path) == (expected, expected)


T1_CHAIN = {"ConfigurationSpace": {
    "TuningParameters": [{"Name": "a", "Values": "[0, 1, 2, 3]"}, {"Name": "b", "Values": "[1, 2]"}],
    "Conditions": [{"Expression": "(" + " + ".join(["a"] * 500) + ") % 7 != b"}]}}


def test_a_500_term_t1_condition_counts_and_the_reference_never_answers_0(tmp_path):
    space = t1_space(T1_CHAIN, str(tmp_path / "chain.json"))
    expected = reference_count(space, "h100")  # room made for the depth
    assert expected == 7  # 500 * a % 7 is 0, 3, 6, 2: only a = 3 with b = 2 is invalid
    assert both_counts(space, tmp_path) == (expected, expected)
    with pytest.raises(SpaceError, match="nested too deeply"):  # at Python's own limit: an error
        sum(1 for _ in ReferenceEnumerator(space, "h100", {}).configurations())


# -- many iterators, NaN and infinities ------------------------------------------------------------
CHAIN_OF_22 = ("i0 = beast.values(0, 1)\n"
               + "".join(f"i{k} = beast.range(i{k - 1}, 2)\n" for k in range(1, 22))
               + "s = " + " + ".join(f"i{k}" for k in range(22)) + "\n"
               + "f = beast.filter(s == 3)\n"
               + "t = beast.bound(1.0 * s + 0.5 * i21, source='test')\n"
               + "u = beast.bound(2.0 * i3, source='test')\n")


def test_22_iterators_in_every_numba_mode(tmp_path):
    """Numba's nests past 14 loops go on in functions of their own (Python compiles 20 nested
    blocks at most); the bound modes are checked by Python's compiler alone (Numba's takes long)."""
    space = load(tmp_path, CHAIN_OF_22)
    expected = reference_count(space, "h100")
    plan = compile_space(space, "h100", {}, str(tmp_path))
    for function in ("count", "count_with_stats", "fill", "count_pruned", "cut_analysis", "rank"):
        assert f"def {function}__part1(" in plan.source
    compile(plan.source, plan.path, "exec")
    assert plan.count() == expected == 22  # the C target
    plan.executable.use_numba()
    assert plan.count() == plan.stats().count == len(plan.enumerate()) == expected
    assert plan.estimate(samples=50, method="knuth").high >= expected


def test_nan_and_infinities_as_listed_values(tmp_path):
    space = load(tmp_path, "x = beast.values(1.0, float('nan'), float('inf'), -float('inf'), 2.5)\n"
                           "y = beast.values(1, 2)\nf = beast.filter(x * y > 3)\n")
    expected = reference_count(space, "h100")
    assert expected == 7
    assert both_counts(space, tmp_path) == (expected, expected)
    plan = compile_space(space, "h100", {}, str(tmp_path))
    plan.executable.use_numba()
    assert plan.stats().count == expected


# -- T1 input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("names", [["\ufb01", "fi"], ["\ufb01", "b"]])
def test_t1_names_that_python_normalizes_are_one_clear_error(tmp_path, names):
    document = {"ConfigurationSpace": {
        "TuningParameters": [{"Name": names[0], "Values": "[1, 2, 3]"}, {"Name": names[1], "Values": "[1, 2]"}],
        "Conditions": [{"Expression": f"{names[0]} > {names[1]}"}]}}
    with pytest.raises(BeastError, match=r"parameter name 'ﬁ' is 'fi' to Python \(NFKC normalization\)"):
        t1_space(document, str(tmp_path / "nfkc.json"))


def test_a_long_t1_value_list_is_printed_once(tmp_path):
    """Each target holds the values once (a table), comments cut them short: the sources grow by
    the values' own text, not by it times the number of nests."""
    document = {"ConfigurationSpace": {
        "TuningParameters": [{"Name": "a", "Values": "list(range(0, 60000, 3))"},
                             {"Name": "b", "Values": "[1, 2, 3, 4]"}],
        "Conditions": [{"Expression": "a % 7 != b"}]}}
    plan = compile_space(t1_space(document, str(tmp_path / "long.json")), "h100", {}, str(tmp_path))
    values_text = len(", ".join(str(v) for v in range(0, 60000, 3)))
    c_source = generate_c_module(plan.plan)
    assert c_source.count("39999") == 1 and len(c_source) < 1.5 * values_text + 100_000
    assert plan.source.count("39999") == 1 and len(plan.source) < values_text + 200_000
    assert plan.count() == reference_count(plan.specialized.space, "h100")


def test_a_literal_t1_list_past_100k_characters_counts(tmp_path):
    """A literal list of 40,000 values (270k characters, refused by the old 100k limit) counts like
    the reference; the limit now leaves room for MAX_VALUES numbers."""
    document = {"ConfigurationSpace": {
        "TuningParameters": [{"Name": "a", "Values": str(list(range(0, 120000, 3)))},
                             {"Name": "b", "Values": "[1, 2, 3, 4]"}],
        "Conditions": [{"Expression": "a % 7 != b"}]}}
    assert len(document["ConfigurationSpace"]["TuningParameters"][0]["Values"]) > 250_000
    plan = compile_space(t1_space(document, str(tmp_path / "literal.json")), "h100", {}, str(tmp_path))
    assert plan.count() == reference_count(plan.specialized.space, "h100")


# -- properties: C = Numba = reference at the edges, or one clear refusal ---------------------------
EDGE_CI = settings(deadline=None, derandomize=True, database=None, phases=[Phase.generate],
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
_spaces = itertools.count()


def check_or_refused(source: str, directory) -> str:
    """Both targets count what the reference counts, or compiling refuses with one line that names
    the 64-bit limit or the nesting; which of the two happened."""
    note(source)
    folder = directory / f"s{next(_spaces)}"
    folder.mkdir()
    (folder / "space.py").write_text(source)
    space = beastgen.load(str(folder / "space.py"))
    try:
        plan = compile_space(space, "h100", {}, str(folder))
    except BeastError as error:
        assert "\n" not in str(error) and re.search(r"64-bit|nested too deeply", str(error)), error
        return "refused"
    expected = reference_count(space, "h100")
    counts = [plan.count()]  # the C target where it prints the plan
    plan.executable.use_numba()
    counts += [plan.count(), plan.stats().count]
    assert counts == [expected] * 3
    return "counted"


@pytest.fixture(scope="module")
def edge_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("edges")


@settings(EDGE_CI, max_examples=examples(12))
@given(source=edge_spaces())
def test_edge_spaces_count_like_the_reference_or_are_refused(edge_dir, source):
    event(check_or_refused(source, edge_dir))


@settings(EDGE_CI, max_examples=examples(2))
@given(source=many_iterator_spaces())
def test_nests_of_20_and_more_iterators_count_like_the_reference(edge_dir, source):
    assert check_or_refused(source, edge_dir) == "counted"


def test_int_of_a_float_past_64_bits_in_a_looping_function(tmp_path, capsys):
    """A space function compiled as a helper (a loop): int() of 1e19 has no 64-bit value, so the
    count stops with one error naming the operation and its line in both targets (it was 0, where
    the reference counts 5), and the filter's own errors still reject."""
    path = tmp_path / "space.py"
    load(tmp_path, """\
        x = beast.values(1.0, 2.5, 1e19, -1e19, 3.0, 7.0)
        @beast.filter
        def f():
            t = 0
            for i in range(2):
                t = t + int(x * (i + 1))
            return t == 9
    """)
    assert reference_count(beastgen.load(str(path)), "h100") == 5
    for native in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("BEASTGEN_NATIVE", native)
            assert main(["count", str(path), "--generated-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err == (f"beastgen: error: {path}:8: filter 'f': int(x * (i + 1)) gives an integer "
                       "past the 64 bits compiled code holds, where Python's integers are exact; "
                       "bound its operands (min, max) or compute it in floating point"), err
