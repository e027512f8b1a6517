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


def test_the_64_bit_check_shares_the_proofs_modulo_bound(tmp_path):
    """One interval arithmetic (analysis.intervals) for the 64-bit check and the proofs: ``x % 8``
    lies in 0..7, so ``x % 8 + 2**63 - 8`` fits in 64 bits and counts (it was refused: 0..8)."""
    from beastgen.compiler.runtime import compile_space
    from beastgen.reference import reference_count

    path = tmp_path / "space.py"
    path.write_text("import beastgen as beast\nx = beast.range(0, 20)\n"
                    "f = beast.filter(x % 8 + (2**63 - 8) == 2**63 - 1)\n")
    space = beastgen.load(str(path))
    plan = compile_space(space, "h100", {}, str(tmp_path))
    assert plan.count() == reference_count(space, "h100") == 18
    context = SymbolicContext(plan.specialized.items)
    assert context.interval(plan.specialized.items["f"].expr.left) == (2 ** 63 - 8, 2 ** 63 - 1)
