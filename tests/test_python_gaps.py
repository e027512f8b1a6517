"""Where compiled code and NumPy differ from Python (hostile probes, issue 28): each case is exact
against the reference enumerator in every path, or one clear error."""
from __future__ import annotations

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from test_properties import CI, DEVICE, check_exact, write_space
from test_vectorised import check_vectorised

import beastgen
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.compiler.runtime import compile_space
from beastgen.errors import BeastError, SpaceError

from property_sizes import examples

MIN_OF_A_NUMBER = """\
import beastgen as beast
a = beast.range(0, 5)
b = beast.range(-2, 3)

@beast.filter
def one():
    return min(a) > 1          # Python raises TypeError: every row rejected

@beast.derived
def low():
    t = (a, b, 3)
    return min(t) + max([a, 1])  # min/max of a sequence is fine

@beast.filter
def empty():
    s = 0
    for i in range(b):
        s += i
    return max(range(a)) > 2 and s >= 0   # max of an empty range raises ValueError
"""


def test_min_of_one_number_raises_as_in_python(tmp_path):
    """``min(x)`` of a number counted x's rows (the expression form and Numba's ``min`` both read it
    as x); Python raises, so the reference rejects every row."""
    space = beastgen.load(write_space(tmp_path, MIN_OF_A_NUMBER))
    assert check_exact(space, {}, tmp_path)[1] == 0
    source = MIN_OF_A_NUMBER.replace("min(a) > 1", "min((a, 1)) > 1")
    space = beastgen.load(write_space(tmp_path, source, "sequence"))
    assert check_exact(space, {}, tmp_path)[1] == 15


@pytest.mark.parametrize("name", ["min", "max"])
def test_beast_min_of_one_argument_is_an_error(tmp_path, name):
    path = write_space(tmp_path, f"import beastgen as beast\na = beast.range(3)\nf = beast.filter(beast.{name}(a) > 1)\n")
    with pytest.raises(SpaceError, match=rf"space.py:3: beast.{name} needs two or more arguments, got 1"):
        beastgen.load(path)



def counts(tmp_path, monkeypatch, source: str) -> dict:
    """The count of each path (C, Numba, NumPy) and of the reference, for rows that may hold NaN
    (a Counter of rows cannot compare those)."""
    path = write_space(tmp_path, source)
    found = {"reference": sum(1 for _ in ReferenceEnumerator(beastgen.load(path), DEVICE, {}).configurations())}
    for name, native, vectorised in (("C", "1", "0"), ("Numba", "0", "0"), ("NumPy", "0", "1")):
        monkeypatch.setenv("BEASTGEN_NATIVE", native)
        monkeypatch.setenv("BEASTGEN_VECTORISED", vectorised)
        plan = compile_space(beastgen.load(path), DEVICE, {}, str(tmp_path / name))
        found[name] = plan.count()
    return found


POWERS = """\
import math
import beastgen as beast
x = beast.values(1e200, -1e200, 2.0, 3, -2.0, math.inf)
y = beast.values(2, 0.5, 3.0, 1e300)
a = beast.range(-4, 5)
square = beast.filter(x ** 2 < 0)        # a finite float power past the largest: OverflowError
power = beast.filter(x ** y > 1e300)     # (-2.0) ** 0.5: complex, rejected
small = beast.filter(a ** 0.5 > 1.9)     # an integer base of known bounds: stays finite
"""


def test_a_float_power_that_overflows_raises_as_in_python(tmp_path, monkeypatch):
    """``1e200 ** 2`` raises OverflowError in Python; Numba and NumPy gave inf (C already raised).
    Numba then counted 28, not 32: its test for a fractional exponent took ``math.floor(1e300)``, an
    int64 past 2**63 (undefined), and LLVM rejected ``(-2.0) ** 3.0`` with it. (NumPy leaves a float
    power to C or Numba: ``NUMPY_VALUES``.)"""
    space = beastgen.load(write_space(tmp_path, POWERS))
    plan, total = check_exact(space, {}, tmp_path)
    assert total == 32 and plan.native is not None
    (tmp_path / "paths").mkdir()
    found = counts(tmp_path / "paths", monkeypatch, POWERS)
    assert found == dict.fromkeys(found, 32), found


def test_a_negative_base_to_a_nan_power_is_nan(tmp_path, monkeypatch):
    """``(-2.0) ** nan`` is nan in Python; Numba's float_power tested ``exponent != floor(exponent)``
    through an int64 (undefined for NaN: LLVM then chose to raise inside a nest, not outside)."""
    source = ("import math\nimport beastgen as beast\nx = beast.values(-1e200, -2.0, 2.0, math.inf)\n"
              "y = beast.values(0.5, math.nan, 2, 1e300)\nf = beast.filter(x ** y > 1e300)\n")
    found = counts(tmp_path, monkeypatch, source)
    assert found == dict.fromkeys(found, 7), found


def test_a_negative_base_to_a_whole_power_past_2_63_is_real(tmp_path, monkeypatch):
    """``(-0.5) ** 1e19`` is 0.0 in Python (1e19 is a whole, even number), not complex: Numba's test
    of a fractional exponent went through ``math.floor`` of it (an int64 past 2**63, undefined),
    and with the exponent bound outside the base's loop LLVM rejected whole rows."""
    source = ("import math\nimport beastgen as beast\ny = beast.values(1e19, 9.5e18, -1e300, 1e300, 2.0)\n"
              "x = beast.values(-0.5, -1.0, -2.0, 3.0, -5e-324)\nf = beast.filter(x ** y > 1.0)\n")
    found = counts(tmp_path, monkeypatch, source)
    assert found == dict.fromkeys(found, 15), found


@pytest.mark.parametrize("test, rounded", [
    ("x == 2.0 ** 53", "x * 1.0 == 2.0 ** 53"),
    ("x / 956 == 766008086344530525 / 956", "x * 1.0 / 956 == 766008086344530525 / 956"),
    ("beast.min(x, 2.0 ** 53) != x", "beast.min(x * 1.0, 2.0 ** 53) != x * 1.0"),
    ("2.5 < x", "2.5 < x * 1.0"),
    ("beast.where(x > 5, x, 0.5) % 7 == 3", "beast.where(x > 5, x * 1.0, 0.5) % 7 == 3"),
])
def test_an_int_past_2_53_compared_with_a_float_is_an_error(tmp_path, test, rounded):
    """Python compares ``2**53 + 1 == 2.0**53`` exactly (False) and divides two ints exactly;
    compiled code and NumPy rounded the int first (``2**53 + 1 == 2.0**53``: 1 configuration where
    the reference counts 2; the quotient: 4 where it counts 3), and so a ``where`` giving an int or
    a float (``(2**60 + 2) % 7``: 9 where it counts 7). Rounding it explicitly agrees."""
    body = (f"import beastgen as beast\nx = beast.values(2 ** 53 + 1, 766008086344530525, 3)\n"
            f"f = beast.filter({test})\n")
    with pytest.raises(SpaceError, match=r"space.py:3: filter 'f': .* (compares|divides|gives) the integer x, "
                                         r"which can pass 2\*\*53, (with a float|by an integer|or a float)"):
        compile_space(beastgen.load(write_space(tmp_path, body)), DEVICE, {}, str(tmp_path))
    space = beastgen.load(write_space(tmp_path, body.replace(test, rounded), "rounded"))
    assert check_vectorised(space, {}, tmp_path) == "checked"


def test_float_overflow_in_numpy_is_silent_as_in_python(tmp_path, recwarn):
    """``1e300 * 10`` is inf in Python without a word; NumPy's path printed RuntimeWarnings."""
    source = ("import beastgen as beast\na = beast.range(-2, 3)\nx = beast.values(1e300, -1e300, 2.5)\n"
              "f = beast.filter(x * 10 + a * 1e308 - x * 10 > 1)\n")
    space = beastgen.load(write_space(tmp_path, source))
    assert check_vectorised(space, {}, tmp_path) == "checked"
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


FLOAT_OF_A_BOOL = """\
import beastgen as beast
a = beast.range(-2, 3)
x = beast.values(-0.0, 0.5)
flag = a > 0

@beast.filter
def inline():
    return float(flag) + float(x) < 0.9      # an expression: C and Numba

@beast.derived
def looped():
    t = 0.0
    for i in range(2):
        t += float(a < i) + 1 / float(x * 2 - 1)
    return t
f = beast.filter(looped > 0)
"""


def test_float_of_a_bool_compiles(tmp_path, monkeypatch):
    """``float(True)`` is 1.0; Numba has no ``float`` of a bool (it refused to compile the nest)."""
    space = beastgen.load(write_space(tmp_path, FLOAT_OF_A_BOOL))
    assert check_exact(space, {}, tmp_path)[1] == 2


RANGE_OF_A_FLOAT = """\
import beastgen as beast
a = beast.range(0, 4)

@beast.derived
def total():
    t = 0
    for j in range(a * 1.0):     # Python: TypeError (every row rejected); Numba's range truncated
        t += j
    return t

@beast.iterator
def b():
    return range(a // 2, a + True)

f = beast.filter(total + b > 2)
"""


def test_range_of_a_float_raises_in_a_helper(tmp_path):
    """``range(2.0)`` raises in Python; Numba's ``range`` truncated it (3 where the reference
    counts 0). The second space: the same with an int, and an iterator's own range."""
    space = beastgen.load(write_space(tmp_path, RANGE_OF_A_FLOAT))
    assert check_exact(space, {}, tmp_path)[1] == 0
    space = beastgen.load(write_space(tmp_path, RANGE_OF_A_FLOAT.replace("a * 1.0", "a * 1"), "ints"))
    assert check_exact(space, {}, tmp_path)[1] == 4


def python_expressions(leaves):
    """Python expressions over the space's names: every operator, builtin and short-circuit."""
    def grow(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%", "<", "<=", "==", "!=",
                                              "and", "or"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda e: f"(not {e})"), inner.map(lambda e: f"(-{e})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
            st.tuples(st.sampled_from(["min", "max"]), inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
            st.tuples(st.sampled_from(["abs", "int", "float", "math.floor", "math.ceil"]), inner).map(
                lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, st.sampled_from(["0", "2", "3"])).map(lambda t: f"({t[0]} ** {t[1]})"))
    return st.recursive(st.sampled_from(leaves), grow, max_leaves=8)


@settings(CI, max_examples=examples(150))
@given(derived=python_expressions(["a", "b", "x", "0", "2", "-3", "0.5", "-0.0", "True"]),
       test=python_expressions(["a", "b", "x", "y", "1", "-1.5", "7"]),
       xs=st.sets(st.sampled_from(["-2.5", "-0.0", "0.5", "3", "1e300", "-7.0"]), min_size=1, max_size=3))
def test_numpy_computes_function_bodies_as_python(tmp_path_factory, derived, test, xs):
    """Random bodies of space functions (their expression forms): the NumPy path's rows and
    count equal the reference's, or the space is refused with one error (no compiler runs)."""
    source = (f"import math\nimport beastgen as beast\na = beast.range(-3, 3)\nb = beast.values(-2, 0, True)\n"
              f"x = beast.values({', '.join(sorted(xs))})\n\n@beast.derived\ndef y():\n    return {derived}\n\n"
              f"@beast.filter\ndef f():\n    return {test}\n")
    note(source)
    directory = tmp_path_factory.mktemp("bodies")
    try:
        space = beastgen.load(write_space(directory, source))
        event(check_vectorised(space, {}, directory, 3))
    except BeastError as e:
        event(f"refused: {str(e).split(': ')[2][:20] if str(e).count(': ') > 1 else e}")


@pytest.mark.parametrize("test", ["x ** 0.5 == 2", "x ** y != 4", "abs(x ** 0.5) > 1", "x ** 0.5"])
def test_a_power_that_may_be_complex_is_refused_where_python_would_not_raise(tmp_path, test):
    """``(-3) ** 0.5`` is a complex number in Python: ``== 2`` is False there (the reference keeps
    the row), while compiled code's power rejected it (C = Numba = 4 where the reference counts 7).
    Used where Python raises on it too (an ordering), both reject and it counts."""
    body = f"import beastgen as beast\nx = beast.range(-3, 4)\ny = beast.values(2.0, 0.5)\nf = beast.filter({test})\n"
    with pytest.raises(SpaceError, match=r"space.py:4: filter 'f': x \*\* .* may be a complex number in Python"):
        compile_space(beastgen.load(write_space(tmp_path, body)), DEVICE, {}, str(tmp_path))
    ordered = body.replace(test, "x ** y > 1.5")
    plan, total = check_exact(beastgen.load(write_space(tmp_path, ordered, "ordered")), {}, tmp_path)
    assert total == 6  # of 14: rejected ±2 and ±3 squared, the negative bases to 0.5 (TypeError), 3 ** 0.5


def test_a_derived_value_that_may_be_complex_is_refused_unless_only_ordered(tmp_path):
    """A derived ``p = x ** 0.5`` never read keeps the row in Python (a complex number raises
    nothing) where compiled code's power rejected it; read only by an ordering, both reject."""
    body = "import beastgen as beast\nx = beast.range(-3, 4)\np = x ** 0.5\n"
    with pytest.raises(SpaceError, match=r"space.py:3: derived 'p': x \*\* 0.5 may be a complex number"):
        compile_space(beastgen.load(write_space(tmp_path, body)), DEVICE, {}, str(tmp_path))
    ordered = body + "f = beast.filter(p > 1.5)\n"
    plan, total = check_exact(beastgen.load(write_space(tmp_path, ordered, "ordered")), {}, tmp_path)
    assert total == 3  # 0, 1 and 2; the negatives raise TypeError in Python, 3 ** 0.5 > 1.5
