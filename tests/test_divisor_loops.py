"""Divisor loops (``codegen.facts.divides_next``): a range level whose value must divide the next
level's solved numerator (``x * y == n`` solved for ``y``) visits only the divisors of ``n``, in
every enumerating function of both targets; a function iterator whose body folds to one
``return range(...)`` is such a range level. Exact against the reference, and ``--stats`` equal
to a walk of every value (the values skipped counted as the solved filter's rejections)."""
from __future__ import annotations

import importlib.util
import textwrap
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, Phase, event, example, given, note, settings
from hypothesis import strategies as st

from beastgen.compiler.native import exact_count
import beastgen
from beastgen.commands.common import format_stats
from beastgen.compiler.analysis.symbolic import SymbolicContext
from beastgen.compiler.codegen.facts import divides_next, divisor_narrowing, skips_only_solution_rejects, stat_slots
from beastgen.compiler.codegen.numba import functions as numba_functions
from beastgen.compiler.codegen.numba.module import generate_module
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.compiler.runtime import compile_space
from beastgen.errors import SpaceError

from property_sizes import examples

DEVICE = "v100"
EVERYTHING = 2 ** 62
CI = settings(deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def every_value_stats(compiled, directory) -> tuple[list[int], dict[str, int], int]:
    """(visits per level, rejections per filter, count) of a ``count_with_stats`` that walks every
    value of every level (its divisor loops and loop-ending filters switched off), compiled from a
    module of its own."""
    numba_functions.CountWithStats.DIVISOR_LOOPS = numba_functions.CountWithStats.ENDS_LOOPS = False
    try:
        text = generate_module(compiled.plan)
    finally:
        numba_functions.CountWithStats.DIVISOR_LOOPS = numba_functions.CountWithStats.ENDS_LOOPS = True
    name = f"every_value_{len(list(directory.iterdir()))}"
    path = directory / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    slots = stat_slots(compiled.plan)
    visits, rejections = np.zeros(len(compiled.plan.levels), np.int64), np.zeros(len(slots), np.int64)
    count = exact_count(module.count_with_stats, visits, rejections, 0, EVERYTHING)
    return (list(map(int, visits)), {s.name: int(r) for s, r in zip(slots, rejections) if s.kind == "filter"},
            int(count))


def module_text(compiled) -> str:
    compiled.module  # written where it is first needed
    with open(compiled.path) as f:
        return f.read()


def check(directory, source: str, **overrides):
    """Compile ``source``; both targets' counts, the rows and the statistics against the reference
    and a walk of every value. Returns the compiled plan and the levels that visit divisors."""
    path = directory / f"space_{len(list(directory.iterdir()))}.py"
    path.write_text(textwrap.dedent(source))
    space = beastgen.load(str(path))
    expected = Counter(tuple(c[name] for name in space.iterators)
                       for c in ReferenceEnumerator(space, DEVICE, overrides).configurations())
    total = sum(expected.values())
    try:
        compiled = compile_space(space, DEVICE, overrides, str(directory))
    except SpaceError as e:  # a product that may leave 64 bits is refused, with its place
        assert "64-bit integers" in str(e) and str(path) in str(e)
        return None, []
    if compiled.plan is None:
        assert total == 0
        return compiled, []
    plan = compiled.plan
    divisor_levels = [i for i in range(len(plan.levels)) if divides_next(plan, i)]
    assert exact_count(compiled.module.count, 0, EVERYTHING) * compiled.counted_tail == total  # Numba
    if compiled.native is not None:  # C
        assert compiled.native.count(0, EVERYTHING) * compiled.counted_tail == total
        assert compiled.native.split_nodes() == compiled.module.split_nodes()
    assert Counter(map(tuple, compiled.enumerate().tolist())) == expected
    stats = compiled.stats()
    visits, rejections, count = every_value_stats(compiled, directory)
    assert stats.count == count == total
    assert stats.rejections == rejections
    for index, (_, visited) in enumerate(stats.levels):
        assert visited <= visits[index]  # fewer where a level visits divisors or a filter ends it
    return compiled, divisor_levels


# --------------------------------------------------------------------------------------------------
# Random spaces: function iterators returning ranges, a product filter solved
# --------------------------------------------------------------------------------------------------
X_RANGES = [
    "range({lo}, min(n, {k}) + 1)",             # a divisor loop: step 1, from 1 up
    "range({lo}, {k})",                         # constant, possibly empty
    "range(min(n, {k}), 0, -1)",                # descending: scanned
    "range(1, {k}, m)",                         # a step from an outer level: 0 raises, negative
    "range(2 ** 63 - 3, 2 ** 63 - 1)",          # 64-bit edge, no divisor of n inside
    "range({lo}, min(n, 60) // (m + 2) + 1)",   # a bound that may raise (m == -2)
]


@st.composite
def divisor_spaces(draw):
    """A space whose inner function iterator ``y`` is solved from ``x * y (+ d) == n``, ``x`` a
    function iterator lowered to a range (behind an ``if`` on a setting), maybe with a filter or a
    raising derived value at its level, ``n`` with negative, zero and 64-bit values."""
    ns = draw(st.lists(st.integers(-40, 72), min_size=1, max_size=4, unique=True))
    ns += draw(st.sampled_from([[], [], [], [2 ** 62], [-2 ** 63], [0]]))
    ms = draw(st.lists(st.integers(-2, 2), min_size=1, max_size=3, unique=True))
    edge = draw(st.sampled_from([0, 7, -2 ** 63, 2 ** 62]))  # w and c: derived above x (where it is planned)
    w = f"beast.where(m == {draw(st.integers(-2, 2))}, {edge}, n * {draw(st.integers(-3, 3))} + {draw(st.integers(-6, 6))})"
    c = draw(st.sampled_from(["m + 3", "m + 3", "m"]))  # positive, or maybe zero and negative
    x_range = draw(st.sampled_from(X_RANGES[:1] * 4 + X_RANGES)).format(lo=draw(st.integers(1, 3)), k=draw(st.integers(0, 24)))
    other = draw(st.sampled_from(X_RANGES)).format(lo=1, k=draw(st.integers(0, 24)))
    low, high = draw(st.sampled_from([1, 1, 2, draw(st.integers(-30, 3))])), draw(st.sampled_from([str(draw(st.integers(-2, 40))), "m + 9", "w % 41"]))
    y_domain = draw(st.sampled_from([f"beast.range({low}, {high})", "y_function()"]))
    offset = draw(st.sampled_from(["", " + 3", " - m"]))
    lines = ["import beastgen as beast",
             "t = beast.setting(1)",
             f"n = beast.values({', '.join(map(str, ns))})",
             f"m = beast.values({', '.join(map(str, ms))})",
             f"w = {w}",
             f"c = {c}",
             "@beast.iterator",
             "def x():",
             "    if t:",
             f"        return {x_range}",
             f"    return {other}"]
    if y_domain == "y_function()":
        lines += ["@beast.iterator", "def y():", f"    return range({low}, {high})"]
    else:
        lines += [f"y = {y_domain}"]
    lines += [f"shape = beast.filter(x * y{offset} != n)"]
    extra = draw(st.sampled_from(["", "", "", "odd = beast.filter(x % 3 == 1)",
                                  "r = 12 // (x - 2)\nfar = beast.filter(r + y > 30)",
                                  "big = beast.filter(3 * x > n + 20)",  # ends x's loop
                                  "q = n // (x + 1)\nbig = beast.filter(3 * x > q + 20)"]))
    divisibility = draw(st.sampled_from(DIVISIBILITY[1:3] * 2 + DIVISIBILITY))
    return "\n".join(lines + [extra, divisibility]) + "\n", draw(st.sampled_from([1, 1, 0]))


#: filters at the solved level whose disjunction narrows x's divisor loop (facts.divisor_narrowing)
DIVISIBILITY = [
    "",
    "@beast.filter\ndef fits():\n    return w % (x * c) != 0 or n % y != 0",   # gemm's a_incongruent
    "@beast.filter\ndef fits():\n    return y > 7 or w % (c * x) != 0 or (w + 1) % (y * c) != 0",
    "fits = beast.filter(w % y != 0)",
    "q = w // c\n@beast.filter\ndef fits():\n    return q % x != 0 or x % 2 == 1",  # c == 0 raises first
    "fits = beast.filter(w % (x * (c + 1)) != 0)",                              # c + 1 == 0 may raise
]


#: x's range empty above a negative numerator: the narrowed window stays empty (it once became
#: [hi, lo), visiting divisors outside x's range; the solved level still rejected them)
EMPTY_RANGE_NEGATIVE_NUMERATOR = (
    "import beastgen as beast\nt = beast.setting(1)\nn = beast.values(-28, -33, -29)\nm = beast.values(0)\n"
    "w = beast.where(m == 2, 0, n * 0 + 0)\nc = m + 3\n@beast.iterator\ndef x():\n    if t:\n"
    "        return range(3, min(n, 1) + 1)\n    return range(1, min(n, 1) + 1)\ny = beast.range(1, 1)\n"
    "shape = beast.filter(x * y != n)\n\n@beast.filter\ndef fits():\n    return w % (x * c) != 0 or n % y != 0\n",
    1)


@settings(CI, max_examples=examples(24), phases=[Phase.explicit, Phase.generate])
@given(case=divisor_spaces())
@example(case=EMPTY_RANGE_NEGATIVE_NUMERATOR)
def test_divisor_loops_count_like_the_reference(tmp_path_factory, case):
    source, t = case
    note(source)
    note(f"t = {t}")
    directory = tmp_path_factory.mktemp("divisors")
    compiled, divisor_levels = check(directory, source, t=t)
    if compiled is None:
        event("refused: 64 bits")
    elif compiled.plan is not None:
        assert compiled.plan.levels[compiled.plan.order.index("x")].iterator.function is None  # lowered
    event("a divisor loop" if divisor_levels else "no divisor loop")
    for index in divisor_levels:
        narrowing = divisor_narrowing(compiled.plan, index, SymbolicContext(compiled.plan.specialized.items))
        event("narrowed by the partner's range" if narrowing.partner else "not narrowed by the partner's range")
        event(f"narrowed by {len(narrowing.divides)} + {len(narrowing.divided_by)} divisibility tests"
              if narrowing.filter else "not narrowed by a filter")
    if compiled is not None and compiled.plan is not None:
        stats_function = module_text(compiled).split("def count_with_stats")[1].split("\ndef ")[0]
        event("the statistics end a loop" if "those left: rejected" in stats_function else "no loop ends")


# --------------------------------------------------------------------------------------------------
# Hand-written cases
# --------------------------------------------------------------------------------------------------
SHAPES = """
    import beastgen as beast
    trans = beast.setting(0)
    threads = beast.values(32, 48, 64, 96, 256)
    partial_warp = beast.filter(threads % 32 != 0)
    blk_m = beast.values(16, 24, 64)
    blk_k = beast.values(8, 32)
    @beast.iterator
    def blk_m_a():
        return range(1, (blk_k if trans else blk_m) + 1)
    @beast.iterator
    def blk_n_a():
        return range(1, (blk_m if trans else blk_k) + 1)
    a_shape = beast.filter(blk_m_a * blk_n_a != threads)
    @beast.filter
    def a_incongruent():
        if trans:
            return blk_k % blk_m_a != 0 or blk_m % blk_n_a != 0
        return blk_m % blk_m_a != 0 or blk_k % blk_n_a != 0
"""


def test_gemm_shapes_visit_divisors_in_both_targets(tmp_path):
    """gemm's reshaped thread block: the function iterators are ranges, ``blk_n_a`` is solved and
    ``blk_m_a`` visits only the divisors of ``threads``, in both targets; the statistics count the
    values it skips as ``a_shape``'s rejections."""
    for trans in (0, 1):
        compiled, divisor_levels = check(tmp_path, SHAPES, trans=trans)
        plan = compiled.plan
        assert [plan.order[i] for i in divisor_levels] == ["blk_m_a"]
        assert plan.levels[plan.order.index("blk_n_a")].solved.filter.name == "a_shape"
        assert "divisors(blk_m_a__num, blk_m_a__div)" in module_text(compiled).split("def count_with_stats")[1]
        assert "bg_divisors(v_blk_m_a__top, v_blk_m_a__top_div)" in compiled.native_source()  # narrowed
        stats = compiled.stats()
        levels = dict(stats.levels)
        assert levels["blk_m_a"] < 4 * 3 * 2 * 64 / 2  # the values of blk_m_a's ranges, all scanned
        assert format_stats(compiled, stats).splitlines()[-1] == (
            f"loop iterations: {sum(levels.values()):,} in all; iterations per valid configuration: "
            f"{sum(levels.values()) / stats.count:,.1f}")


def test_a_filter_at_the_divisor_level_keeps_the_statistics_exact(tmp_path):
    """A filter placed at the divisor loop's level could reject a skipped value first: the
    statistics walk every value there (the counts still visit divisors)."""
    source = SHAPES.replace("a_shape =", "odd = beast.filter((blk_m_a + blk_k) % 3 == 2)\n    a_shape =")
    compiled, divisor_levels = check(tmp_path, source)
    plan = compiled.plan
    assert divisor_levels and not skips_only_solution_rejects(
        plan, divisor_levels[0], SymbolicContext(plan.specialized.items).provably_nonzero)
    assert "divisors(blk_m_a__" in module_text(compiled).split("def count_with_stats")[0]
    stats_function = module_text(compiled).split("def count_with_stats")[1].split("\ndef ")[0]
    assert "divisors(" not in stats_function


NARROWED = """
    import beastgen as beast
    n = beast.values(-24, 0, 1, 12, 30, 36, 64, 720)
    m = beast.values(-2, 1, 2, 0)
    w = beast.where(m == -2, -2 ** 63, beast.where(m == 1, 2 ** 62, n * 3 - 6))
    c = m + 3
    @beast.iterator
    def x():
        return range(1, 40)
    @beast.iterator
    def y():
        return range(1, m + 9)
    shape = beast.filter(x * y != n)
    @beast.filter
    def fits():
        return FITS
"""


def test_divisor_loops_narrowed_by_the_partner_range_and_a_disjunction(tmp_path):
    """``x`` visits only the divisors of ``n`` whose solution ``y`` lies in ``y``'s range and that
    pass ``fits``' divisibility tests (``w % (x * c)``, ``Y % (y * c)``), with negative, zero and
    64-bit values: both targets, the rows and the statistics equal the reference and a walk of
    every value (the values skipped counted as ``shape``'s and ``fits``' rejections)."""
    for fits in ("w % (x * c) != 0 or n % y != 0", "y > 7 or w % (c * x) != 0 or (w + 1) % (y * c) != 0",
                 "n % (y * c) != 0 or x > 30"):
        compiled, divisor_levels = check(tmp_path, NARROWED.replace("FITS", fits))
        plan = compiled.plan
        assert [plan.order[i] for i in divisor_levels] == ["x"]
        narrowing = divisor_narrowing(plan, divisor_levels[0], SymbolicContext(plan.specialized.items))
        assert narrowing.partner is not None and narrowing.filter.name == "fits"
        assert "= bg_gcd(v_x__" in compiled.native_source() and "= gcd(x__" in module_text(compiled)
        assert dict(compiled.stats().levels)["x"] < every_value_stats(compiled, tmp_path)[0][plan.order.index("x")]
