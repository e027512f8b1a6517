"""Filters that end their loop (:mod:`beastgen.compiler.codegen.monotone`): a filter whose test, once
true for a value of its level's iterator, stays true for every later value leaves the loop (break)
in both targets. Which filters qualify (proofs, not guesses), and exactness against the naive
reference on random nests built to hold monotone, decreasing and non-monotone tests alike.
"""
from __future__ import annotations

import textwrap
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings
from hypothesis import strategies as st

from beastgen.compiler.native import exact_count
import beastgen
from beastgen.compiler.analysis.symbolic import SymbolicContext
from beastgen.compiler.codegen.monotone import loop_ending_filters
from beastgen.compiler.plan import make_plan
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.compiler.runtime import compile_space
from beastgen.compiler.specialize import specialize_space

from property_sizes import examples

DEVICE = "v100"


def ending(tmp_path, body: str, order=None) -> dict:
    path = tmp_path / "space.py"
    path.write_text("import beastgen as beast\n" + textwrap.dedent(body))
    spec = specialize_space(beastgen.load(str(path)), DEVICE, {})
    return loop_ending_filters(make_plan(spec, order), SymbolicContext(spec.items))


def test_gemm_limits_end_their_loops(gemm_h100):
    found = loop_ending_filters(gemm_h100.plan, SymbolicContext(gemm_h100.specialized.items))
    assert found == {"over_max_threads": "dim_n", "over_max_shmem": "blk_k", "over_max_regs": "blk_k",
                     "low_occupancy": "blk_k"}
    assert "break  # every later dim_n is rejected too" in gemm_h100.source
    assert "break;  // every later dim_n is rejected too" in gemm_h100.native_source()


def test_only_proven_monotone_tests_end_loops(tmp_path):
    found = ending(tmp_path, """
        s = beast.setting(-2)
        a = beast.range(1, 9)
        b = beast.range(0, 9)
        grows = beast.filter(a * b > 20)                 # a >= 1: grows with b
        shrinks = beast.filter(10 - b > 3)               # true first, then false: goes on
        signed = beast.filter(s * a * b > 4)             # s < 0: declines as b grows
        periodic = beast.filter(b % 3 == 2)
        halves = beast.filter(beast.max(b // 2, a) + beast.min(b, 4) >= 9)
        below = beast.filter(40 // (b + 1) < a)          # a constant over a growing divisor
    """, order=["a", "b"])
    assert set(found) == {"grows", "halves", "below"}
    assert set(found.values()) == {"b"}


def test_a_descending_range_or_a_float_test_goes_on(tmp_path):
    found = ending(tmp_path, """
        a = beast.range(1, 9)
        b = beast.range(9, 0, -1)
        c = beast.range(0, 5)
        down = beast.filter(a * b > 20)
        real = beast.filter(c * 0.5 > a)
    """, order=["a", "b", "c"])
    assert found == {}


@pytest.mark.parametrize("test, total", [("b - 3", 3), ("~(3 - b)", 24), ("~(b - 3) | (b > 7)", 21)])
def test_an_integer_tested_for_truth_goes_on(tmp_path, test, total):
    """An int's truth is ``x != 0``: ``b - 3`` grows with b but is false at 3 alone, and
    ``not (3 - b)`` is true there alone. Both ended the loop (C and Numba counted 0 and 9 where
    the reference counts 3 and 24)."""
    body = f"a = beast.range(0, 3)\nb = beast.range(0, 9)\nf = beast.filter({test})\n"
    assert ending(tmp_path, body, order=["a", "b"]) == {}
    space = beastgen.load(str(tmp_path / "space.py"))
    plan = compile_space(space, DEVICE, {}, str(tmp_path))
    assert sum(1 for _ in ReferenceEnumerator(space, DEVICE, {}).configurations()) == total
    tail = plan.counted_tail
    assert plan.native.count(0, 2 ** 62) * tail == exact_count(plan.module.count, 0, 2 ** 62) * tail == total


def test_a_split_below_solved_levels_alone(tmp_path):
    """Every level above the split solved: no loop is open at the split node, whose chunk gate
    returned (it said `continue` outside a loop, which Python refused; found by the test below)."""
    path = tmp_path / "space.py"
    path.write_text(textwrap.dedent("""
        import beastgen as beast
        a = beast.range(0, 6, 1)
        f_a = beast.filter(a != 2)
        b = beast.range(7, 1, -1)
        f_b = beast.filter(b + a != 6)
        c = beast.range(-3, a + b + 5, 1)
        f_c = beast.filter(2 * c > 7)
    """))
    plan = compile_space(beastgen.load(str(path)), DEVICE, {}, str(tmp_path))
    assert plan.plan.order == ["a", "b", "c"] and plan.plan.levels[1].solved
    assert plan.stats().count == plan.count() == exact_count(plan.module.count, 0, 2 ** 62) == 7
    assert [(exact_count(plan.module.count, i, i + 1), plan.native.count(i, i + 1)) for i in range(2)] == [(7, 7), (0, 0)]
    assert len(plan.enumerate(jobs=2)) == len(plan.enumerate()) == 7


# --------------------------------------------------------------------------------------------------
# Exactness on random nests
# --------------------------------------------------------------------------------------------------
CI = settings(deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def terms(names):
    leaf = st.one_of(st.sampled_from(names), st.integers(-3, 4).map(str))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, st.integers(1, 3)).map(lambda t: f"({t[0]} // {t[1]})"),
        st.tuples(st.integers(0, 40), inner).map(lambda t: f"({t[0]} // ({t[1]} + 5))"),
        st.tuples(st.sampled_from(["beast.min", "beast.max"]), inner, inner).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})")), max_leaves=4)


@st.composite
def nests(draw):
    """A space of three range levels (steps of either sign, a bound read from the level above),
    a derived value and filters comparing random integer terms."""
    lines = ["import beastgen as beast", f"s = beast.setting({draw(st.integers(-3, 3))})"]
    names = ["s"]
    for name in "abc":
        start, stop = draw(st.integers(-3, 2)), draw(st.integers(3, 8))
        step = draw(st.sampled_from(["1", "1", "2", "-1"]))
        if step == "-1":
            start, stop = stop, start
        if len(names) > 1 and draw(st.booleans()):
            stop = f"{names[-1]} + {stop}" if step != "-1" else stop
        lines.append(f"{name} = beast.range({start}, {stop}, {step})")
        names.append(name)
        if draw(st.booleans()):
            lines.append(f"d_{name} = {draw(terms(names))}")
            names.append(f"d_{name}")
        for index in range(draw(st.integers(0, 1)) + (name == "c")):
            op = draw(st.sampled_from([">", ">=", "<", "<=", "!="]))
            scale = draw(st.sampled_from([-2, -1, 1, 2]))  # every filter reads its level's iterator
            lines.append(f"f_{name}{index} = beast.filter({scale} * {name} + {draw(terms(names))} {op} "
                         f"{draw(terms(names))})")
    return "\n".join(lines) + "\n"


@settings(CI, max_examples=examples(24))
@given(source=nests())
def test_ending_loops_count_like_the_reference(tmp_path_factory, source):
    note(source)
    directory = tmp_path_factory.mktemp("nest")
    path = directory / "space.py"
    path.write_text(source)
    space = beastgen.load(str(path))
    expected = Counter(tuple(c[name] for name in "abc")
                       for c in ReferenceEnumerator(space, DEVICE, {}).configurations())
    plan = compile_space(space, DEVICE, {}, str(directory))
    total = sum(expected.values())
    if plan.plan is None:
        assert total == 0
        return
    found = loop_ending_filters(plan.plan, SymbolicContext(plan.specialized.items))
    event("a filter ends its loop" if found else "none ends its loop")
    event("empty" if total == 0 else "some valid")
    assert plan.native.count(0, 2 ** 62) * plan.counted_tail == total  # C
    assert exact_count(plan.module.count, 0, 2 ** 62) * plan.counted_tail == total  # Numba
    assert Counter(map(tuple, plan.enumerate().tolist())) == expected
