"""The interval arithmetic that answers proofs before sympy is sound: every value an integer
expression takes lies in its interval, so what it proves (never zero, never negative) holds."""
import itertools
import os
import subprocess
import sys

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import beastgen
from beastgen.compiler.analysis.symbolic import SymbolicContext
from beastgen.compiler.specialize import specialize_space
from beastgen.errors import SpaceError
from conftest import REPO
from property_sizes import examples

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


@settings(max_examples=examples(150), deadline=None, derandomize=True, database=None)
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


@settings(max_examples=examples(100), deadline=None, derandomize=True, database=None)
@given(divisor=expressions(), rest=expressions(), multiple=st.integers(-2, 2))
def test_a_quotient_of_a_sum_holding_its_divisor_lies_in_the_interval(tmp_path_factory, divisor,
                                                                      rest, multiple):
    """``(r + m*d) // d`` is ``r // d + m``: the shifted interval is sound where it applies."""
    sign = "+" if multiple >= 0 else "-"
    space_sum = f"{rest[0]}" + "".join(f" {sign} ({divisor[0]})" for _ in range(abs(multiple)))
    python_sum = f"{rest[1]}" + "".join(f" {sign} ({divisor[1]})" for _ in range(abs(multiple)))
    path = tmp_path_factory.mktemp("quotient") / "space.py"
    path.write_text(f"import beastgen as beast\nx = beast.values{X_VALUES}\ny = beast.range{Y_RANGE}\n"
                    f"d = x + y + ({space_sum}) // ({divisor[0]})\n")
    try:
        spec = specialize_space(beastgen.load(str(path)), "h100")
    except SpaceError:
        assume(False)
    item = spec.items.get("d")
    assume(item is not None)
    span = SymbolicContext(spec.items).interval(item.expr)
    values = []
    for x, y in itertools.product(X_VALUES, range(*Y_RANGE)):
        scope = {"x": x, "y": y}
        try:  # noqa: S307 - generated above
            values.append(x + y + eval(f"({python_sum}) // ({divisor[1]})", {}, scope))
        except ZeroDivisionError:
            pass
    if span is not None:
        assert all(span[0] <= v <= span[1] for v in values), (span, values)


def test_ceil_div_is_at_least_one(tmp_path):
    """``ceil_div(32, x)`` with x up to 1024 is 1 to 32 (plain corners give 0 to 32), so the
    flagship's shared-memory wavefront sums are proven non-negative without sympy."""
    path = tmp_path / "s.py"
    path.write_text("import beastgen as beast\nx = beast.range(1, 1025)\n"
                    "d = beast.bound_terms.ceil_div(32, x) - 1\n")
    spec = specialize_space(beastgen.load(str(path)), "h100")
    context = SymbolicContext(spec.items)
    assert context.interval(spec.items["d"].expr) == (0, 31)
    assert context.provably_nonnegative(spec.items["d"].expr)


def test_the_flagship_count_imports_no_sympy():
    """Every proof the flagship's code writers ask is answered without sympy: by intervals, or
    known unanswerable by it (a name whose definition sympy is not given: ``resident_blocks``)."""
    script = ("import sys, tempfile\nimport beastgen\n"
              "plan = beastgen.load('spaces/gemm.py').specialize(generated_dir=tempfile.mkdtemp())\n"
              "assert plan.native_source() and plan.source\n"
              "print(sorted(m for m in ('sympy', 'numpy', 'numba') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=REPO), check=True).stdout
    assert out.strip() == "[]"


def test_the_64_bit_check_shares_the_proofs_modulo_bound(tmp_path):
    """One interval arithmetic (analysis.intervals) for the 64-bit check and the proofs: ``x % 8``
    lies in 0..7, so ``x % 8 + 2**63 - 8`` fits in 64 bits and counts (it was refused: 0..8)."""
    from beastgen.compiler.runtime import compile_space
    from beastgen.compiler.reference import reference_count

    path = tmp_path / "space.py"
    path.write_text("import beastgen as beast\nx = beast.range(0, 20)\n"
                    "f = beast.filter(x % 8 + (2**63 - 8) == 2**63 - 1)\n")
    space = beastgen.load(str(path))
    plan = compile_space(space, "h100", {}, str(tmp_path))
    assert plan.count() == reference_count(space, "h100") == 18
    context = SymbolicContext(plan.specialized.items)
    assert context.interval(plan.specialized.items["f"].expr.left) == (2 ** 63 - 8, 2 ** 63 - 1)
