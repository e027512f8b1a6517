"""What ``beastgen show`` prints (compiler/language/readable.py): shorter, with the same value as
the specialized expression wherever it has one, and an error (a rejected configuration) where it
raises."""
from hypothesis import given, settings, strategies as st

from beastgen.compiler.language import nodes as L
from beastgen.compiler.language.evaluate import Evaluator
from beastgen.compiler.language.printer import expr_source
from beastgen.compiler.language.readable import readable

from property_sizes import examples

NAMES = ("x", "y", "z")


class _Values(Evaluator):
    def __init__(self, values):
        super().__init__()
        self.values = values

    def map_Ref(self, node):
        return self.values[node.target]


def _folded(value, text):
    """A constant the specializer folded: it keeps the source it came from (``4 // 4``)."""
    const = L.Const(value)
    const.shown = text
    return const


LEAVES = st.one_of(st.sampled_from(NAMES).map(L.Ref), st.integers(-2, 4).map(L.Const),
                   st.booleans().map(L.Const),
                   st.integers(-2, 4).map(lambda v: _folded(v, f"({v} + 0)")))


def _grow(children):
    pair = st.tuples(children, children)
    twice = children.map(lambda e: (e, e))  # the same sub-expression on both sides: x >= x
    sides = st.one_of(pair, twice)
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "//", "%"]), sides).map(
            lambda t: L.BinOp(t[0], *t[1])),
        st.tuples(st.sampled_from(sorted(L.COMPARE_OPS)), sides).map(
            lambda t: L.Compare(t[0], *t[1])),
        st.tuples(st.sampled_from(["and", "or"]), st.lists(children, min_size=1, max_size=3),
                  st.booleans()).map(lambda t: L.BoolOp(t[0], t[1] + t[1][-1:] if t[2] else t[1])),
        children.map(L.Not),
        st.tuples(children, sides).map(lambda t: L.IfExp(t[0], *t[1])),
        st.tuples(st.sampled_from(["min", "max"]), sides).map(lambda t: L.Call(t[0], t[1])),
    )


EXPRESSIONS = st.recursive(LEAVES, _grow, max_leaves=12)
VALUES = st.fixed_dictionaries({name: st.integers(-3, 3) for name in NAMES})


def _outcome(expr, values, test):
    try:
        value = _Values(values)(expr)
    except ZeroDivisionError:
        return "rejects"
    return bool(value) if test else value


@settings(max_examples=examples(400), deadline=None)
@given(EXPRESSIONS, VALUES, st.booleans())
def test_readable_has_the_same_value_or_the_same_error(expr, values, test):
    before = expr_source(expr)
    shown = readable(expr, lambda node: True, test=test)  # ints and bools only: no NaN
    assert expr_source(expr) == before  # the specialized expression itself is left as it was
    assert _outcome(shown, values, test) == _outcome(expr, values, test), expr_source(shown)
    assert len(expr_source(shown)) <= len(expr_source(expr)) + 2  # parentheses at most


def test_the_tautologies_of_a_bound_term_library_call_go():
    run, four = L.Ref("a_run"), _folded(4, "beast.device.smem_bank_bytes")
    cases = {
        L.IfExp(L.Compare(">=", run, run), run, L.Ref("b")): "a_run",
        L.BinOp("*", L.Ref("a_lanes"), _folded(1, "smem_bank_bytes // smem_bank_bytes")): "a_lanes",
        L.BoolOp("and", [L.Compare("==", L.BinOp("%", run, four), 0),
                         L.Compare("==", L.BinOp("%", run, four), 0)]): "a_run % 4 == 0",
        L.Call("max", [L.BinOp("//", run, four), L.BinOp("//", run, four)]): "a_run // 4",
    }
    for expr, text in cases.items():
        assert expr_source(readable(expr, lambda node: True)) == text
    tested = L.BoolOp("and", [L.Compare("==", run, 0), _folded(True, "(32 % 32) == 0")])
    assert expr_source(readable(tested, lambda node: True, test=True)) == "a_run == 0"
    nested = L.BoolOp("and", [tested, L.Compare("<", L.Ref("x"), L.Ref("w"))])
    assert expr_source(readable(nested, lambda node: True, test=True)) == "a_run == 0 and x < w"


def test_a_float_or_a_division_keeps_its_comparison():
    x, y = L.Ref("x"), L.Ref("y")
    assert expr_source(readable(L.Compare(">=", x, x), lambda node: False)) == "x >= x"  # NaN
    divided = L.Compare("==", L.BinOp("//", x, y), L.BinOp("//", x, y))
    assert expr_source(readable(divided, lambda node: True)) == "x // y == x // y"  # y may be 0
