"""The interval arithmetic that answers proofs before sympy is sound: every value an integer
expression takes lies in its interval, so what it proves (never zero, never negative) holds."""
import itertools

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import beastgen
from beastgen.compiler.analysis.symbolic import SymbolicContext
from beastgen.compiler.specialize import specialize_space
from beastgen.errors import SpaceError

X_VALUES = (-3, 0, 2, 5)
Y_RANGE = (1, 9, 3)  # 1, 4, 7
CALLS = {"min": "beast.min", "max": "beast.max", "abs": "abs"}


def expressions():
    """(space expression, Python expression) over x, y: + - * // %, min, max, abs, where."""
    leaves = st.sampled_from([("x", "x"), ("y", "y")] + [(str(k), str(k)) for k in (-2, 0, 1, 3)])

    def extend(inner):
        binary = st.tuples(st.sampled_from(["+", "-", "*", "//", "%"]), inner, inner).map(
            lambda t: (f"({t[1][0]} {t[0]} {t[2][0]})", f"({t[1][1]} {t[0]} {t[2][1]})"))
        call = st.tuples(st.sampled_from(sorted(CALLS)), inner, inner).map(
            lambda t: (f"{CALLS[t[0]]}({t[1][0]})", f"abs({t[1][1]})") if t[0] == "abs" else
            (f"{CALLS[t[0]]}({t[1][0]}, {t[2][0]})", f"{t[0]}({t[1][1]}, {t[2][1]})"))
        where = st.tuples(inner, inner, inner).map(
            lambda t: (f"beast.where({t[0][0]} > 1, {t[1][0]}, {t[2][0]})",
                       f"({t[1][1]} if {t[0][1]} > 1 else {t[2][1]})"))
        return binary | call | where
    return st.recursive(leaves, extend, max_leaves=6)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(expression=expressions())
def test_every_value_lies_in_the_interval(tmp_path_factory, expression):
    space_text, python = expression
    path = tmp_path_factory.mktemp("interval") / "space.py"
    path.write_text(f"import beastgen as beast\nx = beast.values{X_VALUES}\ny = beast.range{Y_RANGE}\n"
                    f"d = x + y + {space_text}\n")
    try:
        spec = specialize_space(beastgen.load(str(path)), "h100")
    except SpaceError:  # a constant part divides by zero as the file runs
        assume(False)
    context = SymbolicContext(spec.items)
    item = spec.items.get("d")
    span = context.interval(item.expr) if item is not None else None
    values = []
    for x, y in itertools.product(X_VALUES, range(*Y_RANGE)):
        try:
            values.append(x + y + eval(python, {}, {"x": x, "y": y}))  # noqa: S307 - generated above
        except ZeroDivisionError:
            pass
    if span is not None:
        assert all(span[0] <= v <= span[1] for v in values), (span, values)
        if context.provably_nonzero(item.expr):
            assert 0 not in values
        if context.provably_nonnegative(item.expr):
            assert min(values, default=0) >= 0


def test_what_intervals_prove_needs_no_sympy(tmp_path):
    """Divisors of the T1 reference spaces are proven without sympy (its import costs ~0.4 s)."""
    path = tmp_path / "s.py"
    path.write_text("import beastgen as beast\nx = beast.values(1, 2, 4)\ny = beast.range(0, 6)\n"
                    "v = beast.where(x > 1, 4, 1)\nd = (x * v + y) // (y % 3 + x)\n")
    spec = specialize_space(beastgen.load(str(path)), "h100")
    context = SymbolicContext(spec.items)
    divisor = spec.items["d"].expr.right
    assert context.interval(divisor) == (1, 6)
    assert context.provably_nonzero(divisor) and context.provably_nonnegative(spec.items["d"].expr)
    assert not context.provably_nonzero(spec.items["y"].domain[1])  # a constant 0 is never proven
