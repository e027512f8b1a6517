"""Space functions compiled as helpers (loops, generators): every integer they compute is Python's,
or the count stops with one error naming the operation (analysis.checked_helpers, nestlib.int_*)."""
from __future__ import annotations

import itertools
import math
import operator
import textwrap

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings
from hypothesis import strategies as st

import beastgen
from beastgen import nestlib
from beastgen.compiler.reference import reference_count
from beastgen.compiler.runtime import compile_space
from beastgen.errors import BeastError, SpaceError
from space_strategies import edge_helper_spaces
from property_sizes import examples

EDGES = (0, 1, -1, 2, -2, 3, 7, 62, 63, 64, 65, 2 ** 31, -2 ** 32, 3037000499, 3037000500,
         -3037000500, 2 ** 62, -2 ** 62, 2 ** 63 - 2, 2 ** 63 - 1, -2 ** 63 + 1, -2 ** 63)
BINARY = {"int_add": operator.add, "int_sub": operator.sub, "int_mul": operator.mul,
          "int_floordiv": operator.floordiv, "int_mod": operator.mod, "int_pow": operator.pow,
          "int_lshift": operator.lshift, "int_rshift": operator.rshift, "int_gcd": math.gcd}


def _apply(function, a, b):
    left = np.zeros(1, np.int64)
    try:
        return function(a, b, left, 1), left[0]
    except Exception:  # noqa: BLE001 - which error it was is what left says
        return "raised", left[0]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_checked_integer_operations_are_pythons_or_say_where_they_left_64_bits(name):
    """On every pair of edge integers: Python's result where it fits in 64 bits; 'left' (the
    ``left`` array set) where it does not or is a float; Python's own error raised, unrecorded."""
    checked = getattr(nestlib, name)
    run = numba.njit(lambda a, b, left, where: checked(a, b, left, where))
    for a, b in itertools.product(EDGES, EDGES):
        if name in ("int_pow", "int_lshift") and b > 100:
            continue  # Python would compute a huge integer: 'left' is checked below
        try:
            expected = BINARY[name](a, b)
            expected = expected if type(expected) is int and -2 ** 63 <= expected < 2 ** 63 else "left"
        except (ZeroDivisionError, ValueError):
            expected = "raised"
        got, left = _apply(run, a, b)
        assert (got if left == 0 else "left" if got == "raised" and abs(left) == 1 else got) == expected, (a, b)
    if name in ("int_pow", "int_lshift"):  # huge exponents and shifts: Python's results are huge
        assert _apply(run, 3, 2 ** 62) == ("raised", 1)
        assert _apply(run, 0, 2 ** 62) == (0, 0)
        assert _apply(run, -1, 2 ** 62) == ((1, 0) if name == "int_pow" else ("raised", 1))


def test_checked_conversions_follow_python():
    run = numba.njit(lambda x, left: (nestlib.int_of(x, left, 1), nestlib.int_round(x, left, 2),
                                      nestlib.int_floor(x, left, 3), nestlib.int_ceil(x, left, 4),
                                      nestlib.int_trunc(x, left, 5)))
    for x in (2.5, -2.5, 3.5, 0.49999999999999994, -0.0, 9.2e18, -9.223372036854775808e18, 1e15 + 0.5):
        assert run(x, np.zeros(1, np.int64)) == (int(x), round(x), int(np.floor(x)), int(np.ceil(x)), int(x))
    for x, where in ((1e19, 1), (-1e19, 1), (9.223372036854775807e18, 1), (float("nan"), 0), (float("inf"), 0)):
        left = np.zeros(1, np.int64)
        with pytest.raises(Exception):  # noqa: B017 - Numba raises Python's own error or OverflowError
            run(x, left)
        assert left[0] == where, x
    assert run(7, np.zeros(1, np.int64)) == (7,) * 5 and run(True, np.zeros(1, np.int64)) == (1,) * 5


def _space(tmp_path, body: str, name: str = "space"):
    path = tmp_path / f"{name}.py"
    path.write_text("import math\nimport beastgen as beast\n" + textwrap.dedent(body))
    return beastgen.load(str(path))


def test_a_helpers_own_error_rejects_and_leaving_64_bits_stops_the_count(tmp_path):
    """``// b`` by zero is the function's error (rejected, as Python raises); ``a * 2**62`` of a = 2
    leaves 64 bits (an error naming it), in the count and the stats; of a = -2 it just fits."""
    body = """\
        a = beast.values(VALUES)
        b = beast.values(0, 1)
        @beast.filter
        def f():
            t = 0
            for i in range(1):
                t = 10 // b + a * 2 ** 62
            return t < 0
    """
    space = _space(tmp_path, body.replace("VALUES", "1, 2, 3"))
    plan = compile_space(space, "h100", {}, str(tmp_path))
    for count in (plan.count, lambda: plan.stats().count):
        with pytest.raises(BeastError, match=r"space.py:9: filter 'f': a \* 4611686018427387904 gives an "
                           "integer past the 64 bits"):
            count()
    space = _space(tmp_path, body.replace("VALUES", "1, -1, -2"), "fits")
    plan = compile_space(space, "h100", {}, str(tmp_path))
    assert plan.count() == plan.stats().count == reference_count(space, "h100") == 1


def test_a_function_range_past_64_bits_counts_every_value(tmp_path):
    """A space function's ``range`` whose ``stop - start`` passes 64 bits is looped by counting
    its trips (Numba's range counted nothing: 3 where the reference counts 8)."""
    space = _space(tmp_path, """\
        y = beast.values(1, 2)
        @beast.iterator
        def x():
            if y == 1:
                return range(-2**62, 2**62 + 5, 2**61)
            return range(0, 3)
        f = beast.filter(x + 0 * y == 7)
    """)
    plan = compile_space(space, "h100", {}, str(tmp_path))
    assert plan.count() == plan.stats().count == reference_count(space, "h100") == 8


def test_an_expression_on_a_generators_values_is_checked_in_the_nest(tmp_path):
    """``g * y * 2`` of a generator's 2**62 + ... passes 64 bits in the filter's expression (it
    counted 3, wrapped; the reference 6): the count stops naming it; small values count."""
    body = """\
        y = beast.values(1, 2)
        @beast.iterator
        def g():
            for i in range(3):
                yield START + i * y
        f = beast.filter(g * y * 2 < 5)
    """
    plan = compile_space(_space(tmp_path, body.replace("START", "2**62")), "h100", {}, str(tmp_path))
    with pytest.raises(BeastError, match=r"space.py:8: filter 'f': g \* y \* 2 gives an integer past"):
        plan.count()
    space = _space(tmp_path, body.replace("START", "2**40"), "small")
    plan = compile_space(space, "h100", {}, str(tmp_path))
    assert plan.count() == plan.stats().count == reference_count(space, "h100") == 6


def test_a_range_on_a_derived_helpers_value_is_checked(tmp_path):
    """``range(d * 4, d * 4 + 3)`` of a looping derived value d = 2**61 * y: the bounds pass 64 bits
    (they wrapped to small values: 0 where the reference counts 6)."""
    space = _space(tmp_path, """\
        y = beast.values(1, 2)
        @beast.derived
        def d():
            t = 0
            for i in range(2):
                t = t + 2**60 * y
            return t
        x = beast.range(d * 4, d * 4 + 3)
        f = beast.filter(x < 5)
    """)
    plan = compile_space(space, "h100", {}, str(tmp_path))
    with pytest.raises(BeastError, match=r"space.py:10: iterator 'x': d \* 4 gives an integer past"):
        plan.count()


def test_an_integer_constant_past_64_bits_in_a_helper_is_refused(tmp_path):
    space = _space(tmp_path, """\
        a = beast.values(1, 2)
        @beast.filter
        def f():
            t = 0
            for i in range(2):
                t = t + a * 2 ** 64
            return t == 0
    """)
    with pytest.raises(BeastError, match=r"space.py:8: space function 'f': the integer "
                       "18446744073709551616 does not fit in the 64 bits of compiled code"):
        compile_space(space, "h100", {}, str(tmp_path))


HELPERS_CI = settings(deadline=None, derandomize=True, database=None, phases=[Phase.generate],
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
_spaces = itertools.count()


@pytest.fixture(scope="module")
def helper_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("helpers")


@settings(HELPERS_CI, max_examples=examples(10))
@given(source=edge_helper_spaces())
def test_looping_helpers_at_the_64_bit_edge_count_like_the_reference_or_stop_clearly(helper_dir, source):
    """Both targets (the C target falls back to Numba for helpers) and the stats count what the
    reference counts, or stop with one line naming an operation past the 64 bits."""
    note(source)
    folder = helper_dir / f"s{next(_spaces)}"
    folder.mkdir()
    (folder / "space.py").write_text(source)
    space = beastgen.load(str(folder / "space.py"))
    try:
        plan = compile_space(space, "h100", {}, str(folder))
        counts = [plan.count()]
        plan.executable.use_numba()
        counts += [plan.count(), plan.stats().count]
    except BeastError as error:
        assert "\n" not in str(error) and ("64 bits" in str(error) or "negative power" in str(error)
                                            or "one type" in str(error)), error  # mixed_numbers
        event("stopped")
        return
    assert counts == [reference_count(space, "h100")] * 3
    event("counted")


def _both_paths(space, folder) -> list[int]:
    """The default path's count, then Numba's (``BEASTGEN_NATIVE=0 BEASTGEN_VECTORISED=0``) count
    and stats count."""
    counts = [compile_space(space, "h100", {}, str(folder)).count()]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEASTGEN_NATIVE", "0")
        patch.setenv("BEASTGEN_VECTORISED", "0")
        plan = compile_space(space, "h100", {}, str(folder))
        return counts + [plan.count(), plan.stats().count]


def test_checked_float_powers_are_pythons():
    """``int_pow`` of floats is Python's float power: ZeroDivisionError for ``0.0 ** -1`` and
    OverflowError past the floats (compiled code gives inf), a complex number (compiled nan) said
    in ``left``; NaN and the infinities as in Python. ``float_power`` (the nest's) raises alike."""
    run = numba.njit(lambda a, b, left: nestlib.int_pow(a, b, left, 3))
    values = (0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1 / 3, -8.0, 10.0, 1e200, -1e200, 1e-200,
              400.0, -400.0, 3.0, -3.0, math.inf, -math.inf, math.nan, 2.5, 10, -3, 0, True)
    for a, b in itertools.product(values, values):
        if type(a) in (int, bool) and type(b) in (int, bool):
            continue  # the integer power: checked above
        try:
            expected = a ** b
            expected = "complex" if isinstance(expected, complex) else repr(float(expected))
        except (ZeroDivisionError, OverflowError) as error:
            expected = type(error).__name__
        left = np.zeros(1, np.int64)
        try:
            got = repr(run(a, b, left))
        except (ZeroDivisionError, OverflowError) as error:
            got = "complex" if left[0] == -3 else type(error).__name__
        try:
            nest = repr(nestlib.float_power(float(a), float(b)))
        except ValueError:
            nest = "complex"
        except (ZeroDivisionError, OverflowError) as error:
            nest = type(error).__name__
        if (a, b) == (-1e200, 2.5):  # Python's complex power overflows: an error either way
            assert expected == "OverflowError" and got == nest == "complex"
            continue
        assert got == nest == expected, (a, b)


def test_a_float_power_in_a_helper_counts_like_python(tmp_path):
    """``0.0 ** -1.0`` and ``10.0 ** 400.0`` raise in Python (rejected), gave inf compiled (it
    counted 4 where the reference counts 2); a negative base to a fractional power, a complex number
    in Python, stops the count naming it."""
    body = """\
        a = beast.values(0.0, 10.0, 2.0, BASE)
        b = beast.values(-1.0, 400.0, 0.5)
        @beast.filter
        def f():
            t = 0.0
            for i in range(1):
                t = a ** b
            return t < 1.5
    """
    space = _space(tmp_path, body.replace("BASE", "3.0"))
    assert _both_paths(space, tmp_path) == [reference_count(space, "h100")] * 3 == [4] * 3
    space = _space(tmp_path, body.replace("BASE", "-8.0"), "complex")
    with pytest.raises(BeastError, match=r"complex.py:9: filter 'f': a \*\* b raises .* a negative "
                       "number to a fractional power"):
        compile_space(space, "h100", {}, str(tmp_path)).count()


def test_checked_comparisons_of_an_int_with_a_float_are_exact():
    """Python compares an int with a float exactly; compiled code rounded the int first."""
    ints = (0, 1, -1, 3, 2 ** 53, 2 ** 53 + 1, -2 ** 53 - 1, 2 ** 62 + 1, 2 ** 63 - 1, -2 ** 63, -2 ** 63 + 1)
    floats = (0.0, -0.0, 0.5, -0.5, 3.5, -3.5, 2.0 ** 53, -2.0 ** 53, 2.0 ** 62, 2.0 ** 63, -2.0 ** 63,
              1e19, -1e19, math.inf, -math.inf, math.nan)
    for name, plain in (("cmp_lt", operator.lt), ("cmp_le", operator.le), ("cmp_gt", operator.gt),
                        ("cmp_ge", operator.ge), ("cmp_eq", operator.eq), ("cmp_ne", operator.ne)):
        compare = getattr(nestlib, name)
        run = numba.njit(lambda a, b: compare(a, b))
        for a, b in [*itertools.product(ints, floats), *itertools.product(floats, ints)]:
            assert run(a, b) == plain(a, b), (name, a, b)
        assert run(3, 4) == plain(3, 4) and run("a", "b") == plain("a", "b")


def test_checked_true_division_is_pythons_or_says_where():
    """int / int: Python's correctly rounded quotient where both operands are floats exactly,
    else ``left`` is set (compiled code rounds each operand first: 1 / (2**53 + 1) differs)."""
    run = numba.njit(lambda a, b, left: nestlib.int_truediv(a, b, left, 1))
    for a, b in itertools.product(EDGES + (2 ** 53 + 1, 10), EDGES + (2 ** 53 + 1, 10)):
        left = np.zeros(1, np.int64)
        try:
            got = run(a, b, left)
        except (ZeroDivisionError, OverflowError):
            got = "left" if left[0] == 1 else "raised"
        expected = a / b if b else "raised"
        assert got == expected or (got == "left" and not (float(a) == a and float(b) == b)), (a, b)
    assert run(1.5, 2, np.zeros(1, np.int64)) == 0.75


def test_a_helpers_comparison_and_division_past_2_53_count_like_python(tmp_path):
    """``n == 2.0**53`` of n = 2**53 + 1 is False in Python, was True compiled (it counted 2 where
    the reference counts 1); ``n / 3`` of that n cannot round as Python does: the count stops."""
    body = """\
        y = beast.values(1, 2)
        @beast.filter
        def f():
            n = 0
            for i in range(y):
                n = 2 ** 53 + i
            return EXPR
    """
    space = _space(tmp_path, body.replace("EXPR", "n == 2.0 ** 53 or 2.0 ** 53 < n < 2.0 ** 53"))
    assert _both_paths(space, tmp_path) == [reference_count(space, "h100")] * 3 == [1] * 3
    space = _space(tmp_path, body.replace("EXPR", "n / 3 > 0"), "division")
    with pytest.raises(BeastError, match=r"division.py:9: filter 'f': n / 3 divides an integer that "
                       "no float holds exactly"):
        compile_space(space, "h100", {}, str(tmp_path)).count()


def test_a_floor_division_on_a_generators_value_is_checked(tmp_path):
    """``g // y`` of g = -2**63, y = -1 is 2**63 in Python, 0 compiled (it counted 3 where the
    reference counts 2): the count stops naming it; a zero ``y`` still rejects, as in Python."""
    body = """\
        y = beast.values(-1, 1, 0)
        z = beast.values(1)
        @beast.iterator
        def g():
            for i in range(2):
                yield START + i * z
        f = beast.filter(g // y > 0)
    """
    space = _space(tmp_path, body.replace("START", "-2**62"))
    assert _both_paths(space, tmp_path) == [reference_count(space, "h100")] * 3 == [2] * 3
    space = _space(tmp_path, body.replace("START", "-2**63"), "edge")
    with pytest.raises(BeastError, match=r"edge.py:9: filter 'f': g // y gives an integer past"):
        compile_space(space, "h100", {}, str(tmp_path)).count()


def test_an_equality_filter_on_a_helpers_value_is_not_solved_unchecked(tmp_path):
    """``x != g * 4`` solved for x computed ``g * 4`` unchecked (g from a function's range of 2**62,
    ...: 2**64 wrapped to 0, it counted 4 where the reference counts 2): such a filter is tested,
    its operation checked."""
    space = _space(tmp_path, """\
        y = beast.values(1, 2)
        @beast.iterator
        def g():
            if y == 1:
                return range(2**62, 2**62 + 2)
            return range(0, 2)
        x = beast.range(0, 10)
        f = beast.filter(x != g * 4)
    """)
    with pytest.raises(BeastError, match=r"space.py:10: filter 'f': g \* 4 gives an integer past"):
        compile_space(space, "h100", {}, str(tmp_path)).count()


@pytest.mark.parametrize("values", ["beast.values(-2**63, -3, 5, 6)", "GENERATOR"])
def test_a_solved_filter_whose_solution_is_2_63_rejects(tmp_path, values):
    """``x * c != g`` solved: ``g // c`` of g = -2**63, c = -1 is 2**63, outside every domain,
    where Numba's nest gave 0 (it counted 2 where the reference counts 1); likewise a generator's g."""
    generator = "@beast.iterator\ndef g():\n    for v in (-2**63, -3, 5, 6):\n        yield v\n"
    source = (f"c = beast.values(-1, -2)\n{generator if values == 'GENERATOR' else f'g = {values}'}\n"
              "x = beast.range(0, 10)\nf = beast.filter(x * c != g)\n")
    space = _space(tmp_path, source)
    assert _both_paths(space, tmp_path) == [reference_count(space, "h100")] * 3 == [1] * 3


def test_a_generators_value_compared_with_a_float_is_exact(tmp_path):
    """``g == 2.0 ** 53`` of g = 2**53 + 1 is False in Python, was True compiled (it counted 1
    where the reference counts 2): the nest compares it exactly (nestlib.cmp_eq)."""
    space = _space(tmp_path, """\
        z = beast.values(1)
        @beast.iterator
        def g():
            for i in range(3):
                yield 2**53 + i * z
        f = beast.filter(g == 2.0 ** 53)
    """)
    assert _both_paths(space, tmp_path) == [reference_count(space, "h100")] * 3 == [2] * 3


def test_a_float_power_past_the_floats_in_the_nest_rejects_as_in_python(tmp_path):
    """``a ** 2`` of a = 1e200 and ``x ** y`` of y = 2000.0 raise OverflowError in Python (rejected),
    gave inf in Numba's nest (it counted 2 where C and the reference count 1; 2 for 0): each
    such power is nestlib.float_power, unless an integer base to a small constant exponent."""
    space = _space(tmp_path, "a = beast.values(1e200, 2.0, 3.0)\nf = beast.filter(a ** 2 < 5)\n")
    assert _both_paths(space, tmp_path) == [reference_count(space, "h100")] * 3 == [1] * 3
    space = _space(tmp_path, "x = beast.range(1, 4)\ny = beast.values(2000.0, 1.0)\n"
                             "f = beast.filter(x ** y < 5)\n", "exponent")
    assert _both_paths(space, tmp_path) == [reference_count(space, "h100")] * 3 == [0] * 3


def test_min_of_an_int_and_a_float_in_a_helper_stops_the_count(tmp_path):
    """Python's ``min(k, 4.5)`` is the int k or the float 4.5, Numba's always a float: a
    ``range(min(k, 4.5))`` was refused for every k (count 0, the reference 3). Mixing an int and a
    float in a helper's min/max stops the count naming it; one kind each counts as Python."""
    source = ("import beastgen as beast\nk = beast.range(1, 6)\n\n@beast.filter\ndef f():\n"
              "    total = 0\n    for i in range(min(k, {other})):\n        total += i\n"
              "    return total > 3\n")
    path = tmp_path / "space.py"
    path.write_text(source.format(other="4.5"))
    with pytest.raises(SpaceError, match=r"space.py:7: filter 'f': min\(k, 4.5\) chooses between an "
                                         "integer and a float"):
        compile_space(beastgen.load(str(path)), "h100", {}, str(tmp_path / "gen")).count()
    path.write_text(source.format(other="4"))
    space = beastgen.load(str(path))
    assert compile_space(space, "h100", {}, str(tmp_path / "gen")).count() == 3 == reference_count(space, "h100")


#: a helper's int and float in one variable or container (analysis.mixed_numbers): the body of
#: filter f (or a space's tail) over k = 0..4, and the refusal's line and what it names
MIXED_REFUSED = {
    "min of a tuple": ("    total = 0\n    for i in range(min((k, 4.5))):\n        total += i\n"
                       "    return total > 3\n", 7, r"min\(\(k, 4.5\)\) chooses among ints and floats"),
    "an int past 2**53 in a tuple of floats": (
        "    return k + 2 ** 53 - 1 in (9007199254740992.0, 1.5)\n", 6,
        r"k \+ 9007199254740992 - 1 in \(9007199254740992.0, 1.5\) compares an int past 2\*\*53"),
    "in a list": ("    for i in range(1):\n        pass\n    return k + 2 ** 53 - 1 in [9007199254740992.0, 1.5]\n",
                  8, "compares an int past 2\\*\\*53 with a float"),
    "in a tuple of an int and a float": ("    for i in range(1):\n        pass\n    return k in (0.5, 1)\n",
                                         8, r"k in \(0.5, 1\) looks for a value among ints and floats"),
    "max of a list": ("    total = 0\n    for i in range(max([k, 0.5])):\n        total += i\n"
                      "    return total > 3\n", 7, r"max\(\[k, 0.5\]\) chooses among ints and floats"),
    "a loop over a tuple": ("    for v in (k + 2 ** 53, 0.5):\n        if v == 2 ** 53 + 1:\n"
                            "            return True\n    return False\n", 6, "is a sequence of ints and floats"),
    "a tuple indexed by a variable": (
        "    t = False\n    for i in range(2):\n        t = t or (k + 2 ** 53, 0.5)[i] == 2 ** 53 + 1\n"
        "    return t\n", 8, "indexes a tuple of ints and floats"),
    "a variable assigned in branches": (
        "    for i in range(1):\n        if k > 0:\n            v = k + 2 ** 53\n        else:\n"
        "            v = 0.5\n    return v == 2 ** 53 + 1\n", 11, "v may be an int or a float"),
    "a conditional expression": ("    for i in range(1):\n        pass\n"
                                 "    return (k + 2 ** 53 if k > 0 else 0.5) == 2 ** 53 + 1\n", 8,
                                 "if k > 0 else 0.5 may be an int or a float"),
    "or of an int and a float": ("    total = 0\n    for i in range(k or 4.5):\n        total += 1\n"
                                 "    return total > 3\n", 7, r"k or 4.5 may be an int or a float"),
    "an accumulator read by range": (
        "    t = 0 if k < 3 else 2.5\n    total = 0\n    for i in range(t):\n        total += 1\n"
        "    return total > 5\n", 8, "t may be an int or a float"),
    "an element stored into a list": (
        "    v = [0, 0]\n    for i in range(k):\n        v[0] = 0.5\n    return v[0] > 0.2\n", 8,
        "v is a list of ints and floats"),
    "a derived value returning an int or a float, floor-divided": (
        "    for i in range(1):\n        if k > 0:\n            return k\n    return 0.5\n", 12,
        "d // 2 reads d, a space function's value that may be an int or a float"),
}
MIXED_ACCEPTED = {  # where the float compiled code holds gives Python's answer: counted, as Python
    "an exact accumulator": "    s = 0\n    for i in range(k):\n        s += 0.5 * i\n    return s > 1\n",
    "a small int or a float compared": ("    v = 0\n    for i in range(k):\n        v = v + 0.5\n"
                                        "    return v < 1 or v == 2\n"),
    "exact arithmetic on a small int or a float": ("    v = 0\n    for i in range(k):\n"
                                                   "        v = v * 2 + 0.5\n    return v // 2 == 1 or v % 2 > 1\n"),
    "a derived small int or float, compared": ("DERIVED    if k > 2:\n        return k\n"
                                               "    for i in range(1):\n        pass\n    return 0.5\n"),
    "a tuple unpacked and compared": ("    for i in range(1):\n        pass\n    a, b = k + 2 ** 53, 0.5\n"
                                      "    return (a, b) == (2 ** 53 + 1, 0.5) or a == 2 ** 53 + 3\n"),
}


def _mixed_space(tmp_path, body: str, reader: str | None = None):
    path = tmp_path / "space.py"
    head = "import beastgen as beast\nk = beast.values(0, 1, 2, 3, 4)\n\n"
    if reader:  # a derived value d, read by filter g
        path.write_text(head + "@beast.derived\ndef d():\n" + body + f"\n\ng = beast.filter({reader})\n")
    else:
        path.write_text(head + "@beast.filter\ndef f():\n" + body)
    return beastgen.load(str(path))


PATHS = {"default": {}, "numba": {"BEASTGEN_NATIVE": "0", "BEASTGEN_VECTORISED": "0"},
         "numpy": {"BEASTGEN_NATIVE": "0"}}


@pytest.mark.parametrize("case", list(MIXED_REFUSED), ids=list(MIXED_REFUSED))
def test_a_helper_mixing_ints_and_floats_where_compiled_code_differs_is_refused(tmp_path, case):
    """Each site where Numba gives an int and a float one type (a float) and Python's answer
    differs (the count was 0 for min((k, 4.5)) where the reference counts 4; `in` compared an int
    past 2**53 rounded): one SpaceError at the line, on every path; the reference still counts."""
    body, line, what = MIXED_REFUSED[case]
    derived = "reads d" in what
    space = _mixed_space(tmp_path, body, "d // 2 == 1" if derived else None)
    assert reference_count(space, "h100") >= 0
    label = "filter 'g'" if derived else "filter 'f'"
    for name, env in PATHS.items():
        with pytest.MonkeyPatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            with pytest.raises(SpaceError, match=rf"space.py:{line}: {label}: .*({what}).*: compiled code "
                               "(gives a variable or container one type|makes it a float)") as raised:
                compile_space(space, "h100", {}, str(tmp_path / name)).count()
            assert "\n" not in str(raised.value) and "write float(...)" in str(raised.value)


@pytest.mark.parametrize("case", list(MIXED_ACCEPTED), ids=list(MIXED_ACCEPTED))
def test_a_helper_mixing_ints_and_floats_exactly_counts_as_python(tmp_path, case):
    """An int that a float holds exactly, read only where a float gives the same answer (arithmetic
    with a float, a comparison): counted on every path, as the reference counts."""
    body = MIXED_ACCEPTED[case]
    reader = "d == 2 ** 53 + 1" if body.startswith("DERIVED") else None
    space = _mixed_space(tmp_path, body.removeprefix("DERIVED"), reader)
    counts = _both_paths(space, tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEASTGEN_NATIVE", "0")
        counts.append(compile_space(space, "h100", {}, str(tmp_path)).count())
    assert counts == [reference_count(space, "h100")] * 4


NEST_MEETINGS = {  # the helper's value, the space's tail, the refusal
    "min feeding a range": ("k", "e = beast.min(d, 2.5)\nx = beast.range(0, e)\n",
                            r"space.py:13: range bounds and step of 'x' must be integers: e is a float"),
    "where past 2**53": ("k + 2 ** 53", "e = beast.where(y > 1, d, 0.5)\nf = beast.filter(e == 2 ** 53 + 1)\n",
                         r"space.py:10: derived 'd': t gives an integer past 2\*\*53 that meets a float "
                         "in the nest"),
    "min of a helper's int past 2**53 and a float": (
        "k + 2 ** 53", "e = beast.min(d * 1, 0.5)\nf = beast.filter(e == 2 ** 53 + 1)\n",
        r"space.py:12: derived 'e': min\(d \* 1, 0.5\) gives a space function's integer or a float"),
}


def test_min_of_a_generators_ints_and_a_float_counts_as_python(tmp_path):
    """``min(max(c, a), 2.25)`` of a generator's c compared in a filter: the ints are checked
    within 2**53 as c runs, so the nest's float compares as Python's int does (found by
    test_vectorised's generated spaces, which this refused)."""
    path = tmp_path / "space.py"
    path.write_text("import beastgen as beast\na = beast.range(-2, 3)\n\n@beast.iterator\ndef c():\n"
                    "    x = a\n    while x < 4:\n        yield x\n        x += 1\n\n"
                    "f = beast.filter(0 < beast.min(beast.max(c, a), 2.25))\n")
    space = beastgen.load(str(path))
    assert reference_count(space, "h100") == 6  # the filter rejects c > 0
    assert _both_paths(space, tmp_path) == [6] * 3


@pytest.mark.parametrize("case", list(NEST_MEETINGS), ids=list(NEST_MEETINGS))
def test_a_nest_expression_letting_a_helpers_int_meet_a_float_is_refused(tmp_path, case):
    """``range(0, min(d, 2.5))`` of a looping derived d = 0..3: Python's min keeps the int d
    (range(0, 2.5) of d = 3 raises, rejected), the nest's is a float (truncated: it counted 10
    where the reference counts 6); ``where(y > 1, d, 0.5) == 2**53 + 1`` of d = k + 2**53 rounded d
    (8 where the reference counts 9): d's results are checked within 2**53 as they run (the count
    stops naming it), and ``d * 1``, which no check of d bounds, is refused: on every path."""
    value, tail, message = NEST_MEETINGS[case]
    path = tmp_path / "space.py"
    path.write_text("import beastgen as beast\nk = beast.values(0, 1, 2, 3)\ny = beast.values(1, 2)\n\n"
                    f"@beast.derived\ndef d():\n    t = 0\n    for i in range(1):\n        t = {value}\n"
                    f"    return t\n\n{tail}")
    space = beastgen.load(str(path))
    assert reference_count(space, "h100") == (6 if "range" in tail else 8 if "min" in tail else 7)
    for name, env in PATHS.items():
        with pytest.MonkeyPatch.context() as patch:
            for key, val in env.items():
                patch.setenv(key, val)
            with pytest.raises(SpaceError, match=message):
                compile_space(space, "h100", {}, str(tmp_path / name)).count()


def test_len_of_a_number_in_a_helper_rejects_as_in_python(tmp_path):
    """``len(k)`` of a number raises TypeError in Python (the row rejected); Numba could not type it
    (the count stopped with a compiler's dump): nestlib.sequence_len raises as Python does."""
    space = _space(tmp_path, """\
        k = beast.values(0, 1, 2, 3, 4)
        @beast.filter
        def f():
            n = 0
            for i in range(1):
                n = len(range(k)) + len((k, k)) if k < 3 else len(k)
            return n > 3
    """)
    counts = _both_paths(space, tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEASTGEN_NATIVE", "0")
        counts.append(compile_space(space, "h100", {}, str(tmp_path)).count())
    assert counts == [reference_count(space, "h100")] * 4 == [2] * 4


MIXED_ELEMENTS = ("k", "k + 2 ** 53", "0.5", "2.0 ** 53", "3", "k * 1.5", "-k", "k - 2 ** 53")
MIXED_USES = (
    "return {c}[0] == 2 ** 53 + 1", "return min({c}) > 2", "return max({c}) < 2",
    "return k + 2 ** 53 - 1 in {c}", "return {c} == (k, 0.5)",
    "for v in {c}:\n        if v == 2 ** 53 + 1:\n            return True\n    return False",
    "t = {c}\n    for i in range(len(t)):\n        if t[i] > 2:\n            return True\n    return False",
    "total = 0\n    for i in range(max({c})):\n        total += 1\n    return total > 2",
    "v = {a}\n    if k > 2:\n        v = {b}\n    return v == 2 ** 53 + 1",
    "v = {a}\n    for i in range(k):\n        v = v + {b}\n    return v > 3",
    "v = {a} if k > 2 else {b}\n    return len(range(v)) > 1", "return k in {c}",
    "v = {a}\n    for i in range(k):\n        v = v * 2 + {b}\n    return v // 2 == 1",
    "v = {a}\n    for i in range(2):\n        v = abs(v) - {b}\n    return int(v) > 2",
)


@st.composite
def mixed_helper_spaces(draw) -> str:
    """A filter compiled as a helper whose tuples, lists, variables and conditional expressions
    hold ints (some past 2**53) and floats, read by min/max, ``in``, loops, indexing, range."""
    elements = draw(st.lists(st.sampled_from(MIXED_ELEMENTS), min_size=1, max_size=3))
    use = draw(st.sampled_from(MIXED_USES))
    tuple_only = "== (k, 0.5)" in use  # a list never equals a tuple, and Numba cannot compare them
    container = ("({},)" if tuple_only or draw(st.booleans()) else "[{}]").format(", ".join(elements))
    use = use.format(c=container, a=draw(st.sampled_from(MIXED_ELEMENTS)),
                                                   b=draw(st.sampled_from(MIXED_ELEMENTS)))
    return ("import beastgen as beast\nk = beast.values(0, 1, 2, 3, 4)\n\n@beast.filter\ndef f():\n"
            f"    for i in range(1):\n        pass\n    {use}\n")


@settings(HELPERS_CI, max_examples=examples(12))
@given(source=mixed_helper_spaces())
def test_helpers_mixing_ints_and_floats_count_like_the_reference_or_are_refused(helper_dir, source):
    """Compiled code (a helper is Numba's on every path) counts what the reference counts, or
    refuses the space with one line naming the mixed value."""
    note(source)
    folder = helper_dir / f"m{next(_spaces)}"
    folder.mkdir()
    (folder / "space.py").write_text(source)
    space = beastgen.load(str(folder / "space.py"))
    try:
        count = compile_space(space, "h100", {}, str(folder)).count()
    except BeastError as error:
        assert "\n" not in str(error) and ("one type" in str(error) or "integer and a float" in str(error)), error
        event("refused")
        return
    assert count == reference_count(space, "h100")
    event("counted")


def test_a_range_bound_of_a_helpers_float_is_refused(tmp_path):
    """``range(0, d)`` of a looping derived d = 0.5 * k: Python's range raises for a float (every
    row rejected, the reference counts 0), the nest's truncated it (it counted 4)."""
    path = tmp_path / "space.py"
    path.write_text("import beastgen as beast\nk = beast.values(0, 1, 2, 3, 4)\n\n@beast.derived\n"
                    "def d():\n    t = 0.0\n    for i in range(1):\n        t = 0.5 * k\n    return t\n\n"
                    "x = beast.range(0, d)\n")
    space = beastgen.load(str(path))
    assert reference_count(space, "h100") == 0
    with pytest.raises(SpaceError, match=r"space.py:11: range bounds and step of 'x' must be integers: "
                       "d is a float"):
        compile_space(space, "h100", {}, str(tmp_path)).count()
