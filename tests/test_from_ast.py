"""The two ``ast -> expression`` translators over one base (``compiler/language/from_ast.py``):
the function path of specialization and the restricted reader of conditions that arrive as data.
Each translates what they share with Python's semantics (checked against Python itself on random
expressions), and each keeps its own policy for the rest."""
from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import beastgen
from beastgen.compiler.language import nodes as L
from beastgen.compiler.language.evaluate import Evaluator
from beastgen.compiler.specialize import specialize_space
from beastgen.compiler.specialize.functions import FunctionExpression, NoExpression
from beastgen.errors import SpaceError
from beastgen.interop.restricted import ConditionBuilder

from property_sizes import examples

NAMES = ("a", "b", "c")  # a, b: ints; c: a bool

LEAVES = st.sampled_from(NAMES + ("-2", "0", "1", "3", "0.5", "-1.5", "True", "False"))


def _composed(inner):
    pair = st.tuples(inner, inner)
    return st.one_of(
        st.builds(lambda p, op: f"({p[0]} {op} {p[1]})", pair, st.sampled_from(["+", "-", "*", "/", "//", "%"])),
        st.builds(lambda x, k: f"({x} ** {k})", inner, st.sampled_from(["0", "1", "2", "3", "-1", "b"])),
        st.builds(lambda xs, ops: "(" + " ".join(f"{x} {op}" for x, op in zip(xs, ops)) + f" {xs[-1]})",
                  st.lists(inner, min_size=2, max_size=3),
                  st.lists(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), min_size=2, max_size=2)),
        st.builds(lambda p, op: f"({p[0]} {op} {p[1]})", pair, st.sampled_from(["and", "or"])),
        st.builds(lambda x, op: f"({op}{x})", inner, st.sampled_from(["not ", "-", "+"])),
        st.builds(lambda t, p: f"({p[0]} if {t} else {p[1]})", inner, pair),
        st.builds(lambda xs, f: f"{f}({', '.join(xs)})", st.lists(inner, min_size=2, max_size=3),
                  st.sampled_from(["min", "max"])),
        st.builds(lambda x: f"abs({x})", inner),
    )


EXPRESSIONS = st.recursive(LEAVES, _composed, max_leaves=12)


class _Values(Evaluator):
    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def map_Ref(self, node):
        return self.values[node.target]


def _outcome(compute):
    """(type, repr) of the value, or the exception's type: equal outcomes are equal values. A zero's
    sign is left out: ``+x`` is written ``0 + x`` (so that ``+True`` is 1), which makes ``+(-0.0)``
    ``0.0``; no count can tell (the language has no ``copysign``, and dividing by either zero raises)."""
    try:
        value = compute()
    except (ArithmeticError, TypeError, ValueError) as error:
        return type(error).__name__
    return type(value).__name__, repr(abs(value) if value == 0 and isinstance(value, float) else value)


def _restricted(text: str) -> L.Expr:
    builder = ConditionBuilder(text, "test", None, lambda n: L.Ref(n) if n in NAMES else None)
    return builder.build(ast.parse(text, mode="eval").body)


def _function(text: str) -> L.Expr:
    items = dict.fromkeys(NAMES)
    return FunctionExpression(items, {}, {}).translate(ast.parse(text, mode="eval").body)


@settings(max_examples=examples(300), deadline=None, derandomize=True, database=None)
@given(text=EXPRESSIONS, a=st.integers(-3, 3), b=st.integers(-3, 3), c=st.booleans())
def test_both_translators_keep_pythons_semantics(text, a, b, c):
    values = {"a": a, "b": b, "c": c}
    python = _outcome(lambda: eval(text, {"__builtins__": {}, "min": min, "max": max, "abs": abs},  # noqa: S307 - the test's own text
                                   dict(values)))
    for translate in (_restricted, _function):
        assert _outcome(lambda: _Values(values)(translate(text))) == python, (translate.__name__, text)


@pytest.mark.parametrize("text", ["a & b", "a << 1", "~a", "a is b", "a.real", "a[0]", "lambda: a",
                                  "[a, b]", "f(a)", "None", "b'x'", "d"])
def test_what_neither_translates_is_refused_by_each_in_its_own_way(text):
    with pytest.raises(SpaceError) as error:
        _restricted(text)
    assert "\n" not in str(error.value) and repr(text) in str(error.value)
    with pytest.raises(NoExpression):
        _function(text)


def test_membership_is_the_restricted_readers_own():
    assert _Values({"a": 2})(_restricted("a in (1, 2) and a not in [3]")) is True
    with pytest.raises(NoExpression):
        _function("a in (1, 2)")


def test_unary_plus_in_a_space_function_is_a_number(tmp_path):
    """``+flag`` is 1 or 0 in Python: the inlined expression is an int, not the bool."""
    path = tmp_path / "plus.py"
    path.write_text(textwrap.dedent("""\
        import beastgen as beast
        flag = beast.values(True, False)

        @beast.derived
        def level():
            return +flag
    """))
    item = specialize_space(beastgen.load(path), "v100").items["level"]
    assert item.expr is not None and item.value_type == "int"
    assert [_Values({"flag": v})(item.expr) for v in (True, False)] == [1, 0]
