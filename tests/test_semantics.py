"""The semantics table (``beastgen.compiler.language.semantics``) is Python's, and every target
prints it: each operator on each pair of value kinds (bool, int inside 64 bits, float) over a grid
of edge values (0, -0.0, ±1, ±2**31, 2**53 + 1, ±2**62, the 64-bit limits, subnormals, ±1e308,
±inf, NaN), its result's kind, when it raises and its value, against Python's own operators; then
the C target, Numba and NumPy computing the same operations from the table: the same raises, the
same values (NaN and -0.0 told apart)."""
from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import math
import operator
import subprocess

import numpy as np
import pytest

from beastgen.compiler.analysis.symbolic import SymbolicContext
from beastgen.compiler.codegen.c.expression import c_expression, c_source
from beastgen.compiler.codegen.guards import guard_test, guards
from beastgen.compiler.codegen.numba.builder import NUMBA_SPELLING, NumbaForm, python_truth
from beastgen.compiler.language import nodes as L
from beastgen.compiler.language import semantics
from beastgen.compiler.language.printer import expr_source
from beastgen.compiler.specialize.ir import Item
from beastgen.compiler.vectorised import NUMPY_VALUES, _Evaluator

INTS = (0, 1, -1, 2, -3, 7, 2 ** 31, -2 ** 31, 2 ** 53 + 1, 2 ** 62, -2 ** 62, 2 ** 63 - 1, -2 ** 63)
FLOATS = (0.0, -0.0, 0.5, -1.5, 2.0, 3.0, -7.0, 1e308, -1e308, 5e-324, -5e-324, math.inf, -math.inf,
          math.nan, 1e-300, 9.5e18, 1.1)
BOOLS = (False, True)
GRID = {"bool": BOOLS, "int": INTS, "float": FLOATS}
BINARY = ("+", "-", "*", "/", "//", "%", "**")
WORDS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow"}
UNARY = ("neg", "abs", "floor", "ceil", "int", "float")
_PYTHON_BINARY = {**L.BINARY_OPS}
_PYTHON_UNARY = {"neg": operator.neg, "abs": abs, "floor": math.floor, "ceil": math.ceil, "int": int,
                 "float": float}
#: C's pow, the value of a float power (Python's where Python gives a finite float)
_LIBM_POW = ctypes.CDLL(ctypes.util.find_library("m")).pow
_LIBM_POW.argtypes, _LIBM_POW.restype = [ctypes.c_double, ctypes.c_double], ctypes.c_double
PYTHON_OPERATIONS = {"and": lambda x, y: x and y, "or": lambda x, y: x or y, "not": operator.not_,
                     "isfinite": lambda x: math.isfinite(float(x)), "isinf": lambda x: math.isinf(float(x)),
                     "isnan": lambda x: math.isnan(float(x)), "floor": lambda x: float(math.floor(x)) if math.isfinite(float(x)) else float(x)}  # C's
INT64 = range(-2 ** 63, 2 ** 63)


def kind_of(value) -> str:
    return "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "float"


def python_outcome(function, *args):
    """('raises', exception name), ('complex', None) or ('value', the value)."""
    try:
        value = function(*args)
    except Exception as e:  # noqa: BLE001
        return "raises", type(e).__name__
    return ("complex", None) if isinstance(value, complex) else ("value", value)


def same(x, y) -> bool:
    """Equal as Python sees values, NaN equal to NaN and -0.0 told from 0.0, an int from a float."""
    if isinstance(x, float) or isinstance(y, float):
        return isinstance(x, float) and isinstance(y, float) and (repr(x) == repr(y))
    return x == y


def rule_of(op: str, a, b=None):
    if op in UNARY:
        return semantics.unary(op, kind_of(a))
    negative = op == "**" and kind_of(a) != "float" and kind_of(b) != "float" and b < 0
    return semantics.binary(op, kind_of(a), kind_of(b), negative_exponent=negative)


def primitive_value(rule, op: str, a, b=None):
    """The rule's value primitive in Python: Python's operator, C's pow for a float power."""
    if rule.value == "float_pow":
        return _LIBM_POW(float(a), float(b))
    return _PYTHON_UNARY[op](a) if op in UNARY else _PYTHON_BINARY[op](a, b)


def cases():
    for op in BINARY:
        for a, b in itertools.product(BOOLS + INTS + FLOATS, repeat=2):
            if op == "**" and kind_of(b) != "float" and kind_of(a) != "float" and b > 70 and abs(a) > 1:
                continue  # past 64 bits (refused by the interval analysis), and gigabytes to compute
            yield op, (a, b)
    for op in UNARY:
        for a in BOOLS + INTS + FLOATS:
            yield op, (a,)


def fits(outcome, rule, args=()) -> bool:
    """Whether Python's result is one a compiled target holds, as the interval analysis refuses
    the rest: an int result inside 64 bits, an int divided by an int inside 2**53 (Python divides
    exactly, compiled code rounds each to a float first)."""
    kind, value = outcome
    if rule.value == "truediv" and all(kind_of(a) != "float" for a in args) and any(abs(a) > 2 ** 53 for a in args):
        return False
    return not (kind == "value" and rule.result == "int" and value not in INT64)


def test_the_table_is_pythons():
    """Every rule's raises hold exactly where Python raises (or gives a complex number), its result
    kind is that of Python's value, and its value primitive gives Python's value."""
    checked = 0
    for op, args in cases():
        function = _PYTHON_UNARY[op] if op in UNARY else _PYTHON_BINARY[op]
        outcome = python_outcome(function, *args)
        rule = rule_of(op, *args)
        if not fits(outcome, rule, args):
            continue
        values = {"a": args[0], "b": args[-1]}
        if rule.value == "float_pow":  # a float power is of its operands as floats (Python converts)
            values = {name: float(value) for name, value in values.items()}
        before = [check for check in rule.raises_before()
                  if semantics.evaluate_condition(check.condition, values, PYTHON_OPERATIONS)]
        value = primitive_value(rule, op, *args) if not before else None
        after = [check for check in rule.raises_after() if not before
                 and semantics.evaluate_condition(check.condition, {**values, "r": value}, PYTHON_OPERATIONS)]
        raised = before + after
        shown = f"{op} {args!r}: Python {outcome}, the table {[c.error for c in raised]}"
        if outcome[0] == "value":
            assert not raised, shown
            assert kind_of(outcome[1]) == ("int" if rule.result == "bool" else rule.result) \
                or (rule.result == "int" and kind_of(outcome[1]) == "bool"), shown
            assert same(value if kind_of(value) == kind_of(outcome[1]) else outcome[1], outcome[1]), \
                f"{shown}: the primitive gives {value!r}"
        elif outcome[0] == "complex":  # the interval analysis refuses a use where Python would not raise
            assert [c.error for c in raised][:1] == ["complex"], shown
        else:  # any raise rejects (a negative base to a huge fractional power overflows in complex)
            assert raised, shown
        checked += 1
    assert checked > 6000


# --------------------------------------------------------------------------------------------------
# The targets, each computing every operation from the table over the grid
# --------------------------------------------------------------------------------------------------
def operand_item(name: str, kind: str, values) -> Item:
    """An iterator listing ``values``: its kind types the expressions, its values ground the proofs."""
    return Item(name, "iterator", None, [], domain=("values", *map(L.Const, values)), value_type=kind)


def target_cases():
    """(name, expression, items, operand values): each binary operator on each pair of kinds (a
    power of integers twice: an exponent >= 0, and a negative constant), each unary one on each kind."""
    for op in BINARY:
        for left, right in itertools.product(GRID, repeat=2):
            if op == "**" and "float" not in (left, right):
                exponents = [v for v in GRID[right] if v >= 0 and v < 70]
                items = {"a": operand_item("a", left, GRID[left]), "b": operand_item("b", right, exponents)}
                yield f"{WORDS[op]}_{left}_{right}", L.BinOp(op, L.Ref("a"), L.Ref("b")), items, GRID[left], exponents
                items = {"a": operand_item("a", left, GRID[left])}
                for exponent in (-1, -2) if right == "int" else ():
                    yield (f"{WORDS[op]}_{left}_m{-exponent}", L.BinOp(op, L.Ref("a"), L.Const(exponent)), items,
                           GRID[left], (exponent,))
                continue
            items = {"a": operand_item("a", left, GRID[left]), "b": operand_item("b", right, GRID[right])}
            yield f"{WORDS[op]}_{left}_{right}", L.BinOp(op, L.Ref("a"), L.Ref("b")), items, GRID[left], GRID[right]
    for func in UNARY:
        for kind in GRID:
            items = {"a": operand_item("a", kind, GRID[kind])}
            expr = L.UnaryOp("-", L.Ref("a")) if func == "neg" else L.Call(func, [L.Ref("a")])
            yield f"{func}_{kind}", expr, items, GRID[kind], None


def expected_outcome(expr, a, b):
    """Python's outcome of ``expr`` for operands ``a`` and ``b``, and whether a target must match it."""
    if isinstance(expr, L.BinOp):
        operand = b if isinstance(expr.right, L.Ref) else expr.right.value
        outcome = python_outcome(_PYTHON_BINARY[expr.op], a, operand)
        return outcome, fits(outcome, rule_of(expr.op, a, operand), (a, operand))
    func = "neg" if isinstance(expr, L.UnaryOp) else expr.func
    outcome = python_outcome(_PYTHON_UNARY[func], a)
    return outcome, fits(outcome, rule_of(func, a), (a,))


def agrees(outcome, raised: bool, value) -> bool:
    if outcome[0] != "value":
        return raised
    expected = outcome[1]
    return not raised and (same(float(value), float(expected)) if isinstance(expected, float) or
                           isinstance(value, float) else int(value) == int(expected))


def operand_pairs(left, right):
    return [(a, None) for a in left] if right is None else list(itertools.product(left, right))


def test_c_target_computes_the_table(tmp_path):
    """Each operation as the C target prints it (its guards, then its value primitive), compiled
    once and called on every pair of the grid."""
    functions, lines = [], [c_source("prelude.h")]
    for name, expr, items, left, right in target_cases():
        tests, source = c_expression(expr, items, SymbolicContext(items))
        kinds = [items[n].value_type for n in ("a", "b") if n in items]
        c_types = ["double" if k == "float" else "int64_t" for k in kinds]
        params = ", ".join(f"{t} v_{n}" for t, n in zip(c_types, "ab"))
        body = [f"    if ({test}) {{ *_raised = 1; return; }}" for test, _ in tests]
        lines += [f"void {name}({params}{', ' if params else ''}int *_raised, double *_float, int64_t *_int) {{",
                  *body, f"    *_float = (double)({source});", f"    *_int = (int64_t)({source});", "}"]
        functions.append((name, expr, items, left, right, c_types))
    (tmp_path / "table.c").write_text("\n".join(lines) + "\n")
    subprocess.run(["cc", "-O1", "-fwrapv", "-shared", "-fPIC", "-o", str(tmp_path / "table.so"),
                    str(tmp_path / "table.c"), "-lm"], check=True)
    library = ctypes.CDLL(str(tmp_path / "table.so"))
    failures = []
    for name, expr, items, left, right, c_types in functions:
        function = getattr(library, name)
        function.argtypes = [ctypes.c_double if t == "double" else ctypes.c_int64 for t in c_types] + [ctypes.c_void_p] * 3
        for a, b in operand_pairs(left, right):
            outcome, holdable = expected_outcome(expr, a, b)
            if not holdable:
                continue
            raised, as_float, as_int = ctypes.c_int(0), ctypes.c_double(0), ctypes.c_int64(0)
            args = [a] if b is None or not isinstance(expr.right if isinstance(expr, L.BinOp) else None, L.Ref) else [a, b]
            function(*args, ctypes.byref(raised), ctypes.byref(as_float), ctypes.byref(as_int))
            value = as_float.value if items_result_float(expr, items) else as_int.value
            if not agrees(outcome, bool(raised.value), value):
                failures.append(f"{expr_source(expr)} a={a!r} b={b!r}: Python {outcome}, C {bool(raised.value)} {value!r}")
    assert not failures, "\n".join(failures[:20])


def items_result_float(expr, items) -> bool:
    from beastgen.compiler.specialize import infer_type
    return infer_type(expr, items) == "float"


def test_numba_computes_the_table(tmp_path):
    """Each operation as the Numba nest prints it (its guards, then the expression), in one compiled
    function per operand kinds."""
    numba = pytest.importorskip("numba")
    failures = []
    for name, expr, items, left, right in target_cases():
        if name.split("_")[0] not in ("truediv", "floordiv", "mod", "pow", "floor", "ceil", "int", "neg", "abs"):
            continue  # + - * and float(): plain arithmetic, checked through the differential test
        original, expr = expr, NumbaForm(items)(expr)
        symbolic = SymbolicContext(items)
        tests = [guard_test(g, lambda e: f"({expr_source(e)})", NUMBA_SPELLING, python_truth)
                 for g in guards(expr, items, symbolic)]
        params = [n for n in ("a", "b") if n in items]
        text = "\n".join([f"def f({', '.join(params)}):", *(f"    if {t}:\n        return True, 0.0, 0" for t in tests),
                          f"    r = {expr_source(expr)}",
                          "    return False, float(r), int(r)"
                          if not items_result_float(expr, items) else "    return False, float(r), 0"])
        scope = {"math": math, "np": np}
        exec(compile(text, name, "exec"), scope)  # noqa: S102 - the test's own text
        function = numba.njit(error_model="python")(scope["f"])
        for a, b in operand_pairs(left, right):
            outcome, holdable = expected_outcome(original, a, b)
            if not holdable:
                continue
            args = [a, b][:len(params)]
            raised, as_float, as_int = function(*args)
            value = as_float if items_result_float(expr, items) else as_int
            if not agrees(outcome, raised, value):
                failures.append(f"{name} a={a!r} b={b!r}: Python {outcome}, Numba {raised} {value!r}")
    assert not failures, "\n".join(failures[:20])


def test_numba_spells_each_condition_call_as_the_table():
    """Each call a condition may make, as Numba's spelling prints it, gives the table's value on
    every float of the grid. Numba's ``math.floor`` of a float is an int64, undefined past 2**63:
    LLVM may fold it right in a small function and not in a nest (a fractional-exponent test that
    rejected ``(-2.0) ** 3.0`` once ``1e300`` had been an exponent), so the value is checked, not
    only the guards' outcome (``test_numba_computes_the_table``)."""
    numba = pytest.importorskip("numba")
    failures = []
    for call in semantics.CONDITION_CALLS:
        source = semantics.print_condition(f"{call}(a)", {"a": "(a)"}, NUMBA_SPELLING)
        scope = {"math": math, "np": np}
        exec(compile(f"def f(a):\n    return {source}\n", call, "exec"), scope)  # noqa: S102 - the test's own text
        function = numba.njit(error_model="python")(scope["f"])
        for a in FLOATS:
            value, expected = function(a), PYTHON_OPERATIONS[call](a)
            if not (value == expected or value != value and expected != expected):  # NaN: NaN
                failures.append(f"{call}({a!r}): the table {expected!r}, Numba {value!r}")
    assert not failures, "\n".join(failures)


def test_numpy_computes_the_table():
    """Each operation as the vectorised path computes it (its raise masks, then the value primitive
    on harmless operands), over every pair of the grid at once; a float power is not NumPy's
    (:data:`~beastgen.compiler.vectorised.NUMPY_VALUES`)."""
    failures = []
    for name, expr, items, left, right in target_cases():
        rule = None if not isinstance(expr, L.BinOp) else semantics.binary(
            expr.op, items["a"].value_type, items["b"].value_type if "b" in items else "int",
            negative_exponent="b" not in items)
        if rule is not None and rule.value not in NUMPY_VALUES:
            continue
        pairs = operand_pairs(left, right)
        columns = {"a": np.array([a for a, _ in pairs], dtype=_dtype(items["a"]))}
        if "b" in items:
            columns["b"] = np.array([b for _, b in pairs], dtype=_dtype(items["b"]))
        evaluator = _Evaluator({}, columns, len(pairs), items)
        values = np.broadcast_to(np.asarray(evaluator(expr)), (len(pairs),))
        for (a, b), raised, value in zip(pairs, evaluator.raised, values.tolist()):
            outcome, holdable = expected_outcome(expr, a, b)
            if holdable and not agrees(outcome, bool(raised), value):
                failures.append(f"{name} a={a!r} b={b!r}: Python {outcome}, NumPy {bool(raised)} {value!r}")
    assert not failures, "\n".join(failures[:20])


def _dtype(item: Item):
    return {"bool": np.bool_, "int": np.int64, "float": np.float64}[item.value_type]
