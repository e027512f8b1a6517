"""The C target: a plan's ``count`` and ``split_nodes`` nests printed as C, for a shared library
that :mod:`beastgen.compiler.native` compiles with the system C compiler and loads with ctypes. A
warm count then imports neither Numba nor LLVM, and a cold one compiles in a fraction of Numba's
time. The Numba module stays the full enumerator (every other mode); this target covers the plans
whose items are all expressions over int, bool and float values, and listed strings compared with
constants (:class:`Unsupported` otherwise).

Python's semantics are kept where C's differ: floor division and modulo (``bg_floordiv``,
``bg_mod``), float floor division and modulo as CPython computes them, ``min``/``max`` as Python
folds them, and every operation that raises in Python (a zero divisor, a float power that
overflows, ``math.ceil(inf)``...) sets ``_err``, which rejects the configuration as the Numba nest
does. Integers are 64-bit and wrap (compiled with ``-fwrapv``), as in Numba.
"""
from __future__ import annotations

import math

from ...quoting import comment_text
from ..analysis.intervals import NodeTypes
from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..language.mapper import Mapper
from ..plan import Plan
from ..specialize import Item, infer_type
from .nest import PythonPowers, constant_values, countable_tail, split_level


class Unsupported(Exception):
    """The plan has something the C target does not print (a space function, a string...)."""


C_TYPES = {"int": "int64_t", "bool": "int64_t", "float": "double"}

#: the helpers every module starts with: Python's operators where C's differ
PRELUDE = r"""#include <math.h>
#include <stdint.h>

/* C's / and % on 64-bit integers, through the CPU's much faster 32-bit division when both fit
   (as LLVM does for Numba on x86). */
static inline int64_t bg_cdiv(int64_t a, int64_t b) {
    if ((((uint64_t)a | (uint64_t)b) >> 32) == 0) return (int64_t)((uint32_t)a / (uint32_t)b);
    return a / b;
}
static inline int64_t bg_cmod(int64_t a, int64_t b) {
    if ((((uint64_t)a | (uint64_t)b) >> 32) == 0) return (int64_t)((uint32_t)a % (uint32_t)b);
    return a % b;
}
/* Python's // and % on integers (floor, the remainder takes the divisor's sign); a zero divisor
   sets *err (Python raises ZeroDivisionError: the configuration is rejected). */
static inline int64_t bg_floordiv(int64_t a, int64_t b, int *err) {
    if (b == 0) { *err = 1; return 0; }
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = bg_cdiv(a, b);
    return (bg_cmod(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
/* The same for a divisor proven never zero. */
static inline int64_t bg_floordiv_nz(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = bg_cdiv(a, b);
    return (bg_cmod(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t bg_mod_nz(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = bg_cmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t bg_mod(int64_t a, int64_t b, int *err) {
    if (b == 0) { *err = 1; return 0; }
    if (b == -1) return 0;
    int64_t r = bg_cmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
/* CPython's float floor division and modulo (floatobject.c, _float_div_mod). */
static inline void bg_divmod_f(double vx, double wx, double *floordiv, double *mod) {
    double div;
    *mod = fmod(vx, wx);
    div = (vx - *mod) / wx;
    if (*mod) {
        if ((wx < 0) != (*mod < 0)) { *mod += wx; div -= 1.0; }
    } else {
        *mod = copysign(0.0, wx);
    }
    if (div) {
        *floordiv = floor(div);
        if (div - *floordiv > 0.5) *floordiv += 1.0;
    } else {
        *floordiv = copysign(0.0, vx / wx);
    }
}
static inline double bg_floordiv_f(double a, double b, int *err) {
    double q, r;
    if (b == 0.0) { *err = 1; return 0.0; }
    bg_divmod_f(a, b, &q, &r);
    return q;
}
static inline double bg_mod_f(double a, double b, int *err) {
    double q, r;
    if (b == 0.0) { *err = 1; return 0.0; }
    bg_divmod_f(a, b, &q, &r);
    return r;
}
static inline double bg_truediv(double a, double b, int *err) {
    if (b == 0.0) { *err = 1; return 0.0; }
    return a / b;
}
/* int ** int, the exponent proven >= 0 (wraps like Numba). */
static inline int64_t bg_pow_i(int64_t base, int64_t exponent) {
    uint64_t result = 1, b = (uint64_t)base;
    while (exponent > 0) {
        if (exponent & 1) result *= b;
        b *= b;
        exponent >>= 1;
    }
    return (int64_t)result;
}
/* float ** float as Python: 0.0 ** negative raises, a negative base with a fractional exponent
   gives a complex number (rejected, as nestlib.float_power), a finite power that overflows raises
   OverflowError. */
static inline double bg_pow_f(double base, double exponent, int *err) {
    if (base == 0.0 && exponent < 0) { *err = 1; return 0.0; }
    if (base < 0 && exponent != floor(exponent) && isfinite(exponent)) { *err = 1; return 0.0; }
    double result = pow(base, exponent);
    if (isinf(result) && isfinite(base) && isfinite(exponent)) { *err = 1; return 0.0; }
    return result;
}
/* math.ceil, math.floor, int() of a float: an infinity or NaN raises in Python (the interval
   analysis proves every other value inside 64 bits, -2**63 included, or refuses the space). */
static inline int64_t bg_to_int(double x, int *err) {
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) { *err = 1; return 0; }
    return (int64_t)x;
}
static inline int64_t bg_min_i(int64_t a, int64_t b) { return b < a ? b : a; }
static inline int64_t bg_max_i(int64_t a, int64_t b) { return b > a ? b : a; }
static inline double bg_min_f(double a, double b) { return b < a ? b : a; }
static inline double bg_max_f(double a, double b) { return b > a ? b : a; }
static inline int64_t bg_abs_i(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }
"""


def c_name(name: str) -> str:
    """A space name as a C identifier: prefixed, so no name meets a C keyword or libc function."""
    if not name.isascii() or not name.isidentifier():
        raise Unsupported(f"name {name!r} is not an ASCII identifier")
    return f"v_{name}"


def c_comment(text: str) -> str:
    """User text for a ``//`` comment: printable ASCII without backslashes (a trailing backslash
    would splice the next line into the comment)."""
    return "".join(c if " " <= c <= "~" and c != "\\" else "?" for c in comment_text(text))


def c_literal(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        if not -2 ** 63 <= value < 2 ** 63:
            raise Unsupported(f"the integer {value} needs more than 64 bits")
        if value == -2 ** 63:
            return "(-9223372036854775807LL - 1)"
        text = f"{value}LL" if abs(value) > 1 else str(value)
        return f"({text})" if value < 0 else text
    if isinstance(value, float):
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        return f"({value.hex()})" if value < 0 else value.hex()
    raise Unsupported(f"the constant {value!r} is not a number")


class CExpression(Mapper):
    """C source for an expression, fully parenthesized; proofs (``symbolic``) that a divisor is never
    zero, or that both operands are nonnegative, choose plainer operations. :attr:`may_fail` becomes
    true once an operation that can set ``_err`` is printed."""

    def __init__(self, items: dict, symbolic: SymbolicContext):
        self.items = items
        self.nonzero, self.nonnegative = symbolic.provably_nonzero, symbolic.provably_nonnegative
        self.may_fail = False
        self.types = NodeTypes(items)  # each node typed once (a 900-term chain took 7 s)

    def type_of(self, expr: L.Expr) -> str:
        kind = self.types(expr)
        if kind not in C_TYPES:
            raise Unsupported(f"a value of type {kind}")
        return "float" if kind == "float" else "int"

    def source(self, expr: L.Expr) -> str:
        self.type_of(expr)
        name = getattr(expr, "name", None)
        if name is not None and name in self.items:
            return c_name(name)
        return self(expr)

    def map_object(self, expr):
        raise Unsupported(f"no C form for {type(expr).__name__}")

    def map_Const(self, expr: L.Const) -> str:
        return c_literal(expr.value)

    def map_Ref(self, expr: L.Ref) -> str:
        if expr.target not in self.items:
            raise Unsupported(f"a reference to {expr.target!r} outside the nest")
        return c_name(expr.target)

    def _checked(self, call: str, divisor: L.Expr | None = None) -> str:
        if divisor is None or not self.nonzero(divisor):
            self.may_fail = True
        return call

    def map_BinOp(self, expr: L.BinOp) -> str:
        left, right = self.source(expr.left), self.source(expr.right)
        floats = "float" in (self.type_of(expr.left), self.type_of(expr.right))
        op = expr.op
        if op in ("+", "-", "*"):
            return f"({left} {op} {right})"
        if op == "/":
            if self.nonzero(expr.right):
                return f"((double)({left}) / (double)({right}))"
            return self._checked(f"bg_truediv((double)({left}), (double)({right}), &_err)")
        if op in ("//", "%"):
            helper = {"//": "bg_floordiv", "%": "bg_mod"}[op]
            if floats:
                return self._checked(f"{helper}_f({left}, {right}, &_err)", expr.right)
            if self.nonzero(expr.right):
                if self.nonnegative(expr.left) and self.nonnegative(expr.right):
                    return f"bg_c{'div' if op == '//' else 'mod'}({left}, {right})"  # C's agrees
                return f"{helper}_nz({left}, {right})"
            return self._checked(f"{helper}({left}, {right}, &_err)")
        if op == "**":
            if floats:
                return self._checked(f"bg_pow_f((double)({left}), (double)({right}), &_err)")
            return f"bg_pow_i({left}, {right})"  # a negative exponent was refused (nest writer)
        raise Unsupported(f"operator {op}")

    def map_UnaryOp(self, expr: L.UnaryOp) -> str:
        return f"(-{self.source(expr.operand)})"

    def map_Not(self, expr: L.Not) -> str:
        return f"(!{self.source(expr.operand)})"

    def map_Compare(self, expr: L.Compare) -> str:
        if "str" in (infer_type(expr.left, self.items), infer_type(expr.right, self.items)):
            return self._string_compare(expr)
        return f"({self.source(expr.left)} {expr.op} {self.source(expr.right)})"

    def _string_compare(self, expr: L.Compare) -> str:
        """A string iterator (looped over by index) compared with a string constant: which indices
        hold that string."""
        iterator, constant = expr.left, expr.right
        if isinstance(iterator, L.Const):
            iterator, constant = constant, iterator
        name = getattr(iterator, "name", None) or getattr(iterator, "target", None)
        item = self.items.get(name)
        if (expr.op not in ("==", "!=") or not isinstance(constant, L.Const) or item is None
                or item.kind != "iterator" or item.domain[0] != "values" or not constant_values(item)):
            raise Unsupported("a string comparison other than iterator == constant")
        indices = [str(i) for i, p in enumerate(item.domain[1:]) if p.value == constant.value]
        index = f"{c_name(item.name)}__index"
        test = " || ".join(f"{index} == {i}" for i in indices) or "0"
        return f"({test})" if expr.op == "==" else f"(!({test}))"

    def map_BoolOp(self, expr: L.BoolOp) -> str:
        operands = [self.source(o) for o in expr.operands]
        if all(infer_type(o, self.items) == "bool" for o in expr.operands):
            return "(" + f" {'&&' if expr.op == 'and' else '||'} ".join(operands) + ")"
        # Python's value: the deciding operand (operands are pure: evaluating one twice is harmless)
        result = operands[-1]
        for operand in reversed(operands[:-1]):
            result = (f"({operand} ? {result} : {operand})" if expr.op == "and"
                      else f"({operand} ? {operand} : {result})")
        return result

    def map_IfExp(self, expr: L.IfExp) -> str:
        return f"({self.source(expr.test)} ? {self.source(expr.body)} : {self.source(expr.orelse)})"

    def map_Call(self, expr: L.Call) -> str:
        args = [self.source(a) for a in expr.args]
        floats = any(self.type_of(a) == "float" for a in expr.args)
        func = expr.func
        if func in ("min", "max"):
            helper = f"bg_{func}_{'f' if floats else 'i'}"
            result = f"(double)({args[0]})" if floats else args[0]
            for arg in args[1:]:
                result = f"{helper}({result}, {arg})"
            return result
        if func == "abs":
            return f"fabs({args[0]})" if floats else f"bg_abs_i({args[0]})"
        if func in ("ceil", "floor", "int"):
            if not floats:
                return f"((int64_t)({args[0]}))"
            inner = args[0] if func == "int" else f"{func}({args[0]})"
            return self._checked(f"bg_to_int({inner}, &_err)")
        if func == "float":
            return f"((double)({args[0]}))"
        if func == "float_power":
            return self._checked(f"bg_pow_f((double)({args[0]}), (double)({args[1]}), &_err)")
        raise Unsupported(f"function {func}")


def value_tables(plan: Plan) -> list[str]:
    """The constant listed domains as file-scope arrays, one per iterator, which every nest reads."""
    lines = []
    for level in plan.levels:
        it = level.iterator
        kind = it.value_type
        if it.function is None and it.domain[0] == "values" and constant_values(it) and kind in C_TYPES:
            cast = {"int": int, "bool": int, "float": float}[kind]
            literals = ", ".join(c_literal(cast(p.value)) for p in it.domain[1:])
            lines.append(f"static const {C_TYPES[kind]} {c_name(it.name)}__values[{len(it.domain) - 1}] = "
                         f"{{{literals}}};")
    return lines


def needed_items(plan: Plan, may_fail) -> set[str]:
    """The items a count computes: iterators, filters, derived values that may raise (a raise
    rejects), and what they read, transitively; not what only bound terms read."""
    items = plan.specialized.items
    pending = [name for name, item in items.items() if item.kind in ("iterator", "filter")
               or (item.kind == "derived" and (item.function is not None or may_fail(item)))]
    needed: set[str] = set()
    while pending:
        name = pending.pop()
        if name in needed or name not in items:
            continue
        needed.add(name)
        pending += items[name].deps
    return needed


class CNestWriter:
    """The ``count(_lo, _hi)`` and ``split_nodes()`` nests of a plan as C (the same loops, tests
    and split nodes as the Numba nest's, so chunks number the same split nodes)."""

    def __init__(self, plan: Plan, symbolic: SymbolicContext):
        self.plan, self.symbolic = plan, symbolic
        self.items = plan.specialized.items
        self.python_powers = PythonPowers(self.items, symbolic)
        self.lines: list[str] = []
        self.depth = 1
        self.loops = 0
        # every derived expression, printed once: needed_items asks which may fail, _item uses them
        self.derived = {name: self.expression(item.expr) for name, item in self.items.items()
                        if item.kind == "derived" and item.function is None}
        self.needed = needed_items(plan, lambda item: self.derived[item.name][1])

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def expression(self, expr: L.Expr) -> tuple[str, bool]:
        """C source for ``expr`` and whether it can fail (set ``_err``)."""
        printer = CExpression(self.items, self.symbolic)
        source = printer.source(self.python_powers(expr))
        return source, printer.may_fail

    def assign(self, target: str, expr: L.Expr) -> None:
        self._store(target, *self.expression(expr))

    def _store(self, target: str, source: str, may_fail: bool) -> None:
        self.emit(f"{target} = {source};")
        if may_fail:
            self.reject_if("_err", "raised (division by zero or similar): rejected", reset=True)

    def reject(self) -> str:
        return "continue;" if self.loops else "return _n;"

    def reject_if(self, test: str, why: str, reset: bool = False) -> None:
        self.emit(f"if ({test}) {{  // {why}")
        if reset:
            self.emit("    _err = 0;")
        self.emit(f"    {self.reject()}")
        self.emit("}")

    # -- functions -------------------------------------------------------------------------------
    def count(self) -> list[str]:
        levels = self.plan.levels
        split = split_level(self.plan)
        counted = countable_tail(levels)
        self.depth, self.loops = 1, 0
        self.lines = ["/* Number of valid configurations below split nodes _lo <= node < _hi. */",
                      "int64_t count(int64_t _lo, int64_t _hi) {"]
        self._declarations(levels)
        self.emit("int64_t _n = 0;")
        if split == 0:
            self.emit("if (_lo > 0 || _hi < 1) return _n;  // the only split node is the root")
        else:
            self.emit("int64_t _node = 0;  // split nodes seen")
        for index, level in enumerate(levels[:len(levels) - len(counted)]):
            self._level(level, index)
            if index == split - 1:
                self.emit("// split node (SPLIT_LEVEL): only the subtrees of split nodes _lo <= _node - 1 < _hi")
                self.emit("_node += 1;")
                self.emit(f"if (_node <= _lo) {self.reject()}")
                self.emit("if (_node > _hi) return _n;")
        self._count_leaf(counted)
        return self._close()

    def _count_leaf(self, counted) -> None:
        """Count the configurations reached: the product of the ``counted`` innermost domains."""
        if counted:
            self.emit(f"_n += 1;  // the innermost loops ({', '.join(level.iterator.name for level in counted)})"
                      " test nothing: a prefix, which the runtime multiplies by their size")
        else:
            self.emit("_n += 1;")

    def split_nodes(self) -> list[str]:
        split = split_level(self.plan)
        self.lines = ["/* How many split nodes (valid prefixes of SPLIT_LEVEL levels) there are. */",
                      "int64_t split_nodes(void) {"]
        self.depth, self.loops = 1, 0
        self._declarations(self.plan.levels[:split])
        self.emit("int64_t _n = 0;")
        for index, level in enumerate(self.plan.levels[:split]):
            self._level(level, index)
        self.emit("_n += 1;")
        return self._close()

    def _close(self) -> list[str]:
        while self.depth > 1:
            self.depth -= 1
            self.emit("}")
        self.emit("return _n;")
        self.lines.append("}")
        return self.lines

    def _declarations(self, levels) -> None:
        self.emit("int _err = 0;  // set by an operation that raises in Python")
        for level in levels:
            for item in [level.iterator, *level.body]:
                if item.kind == "iterator" and item.value_type == "str":
                    self.emit(f"int64_t {c_name(item.name)}__index;  // into its listed strings")
                elif item.kind == "iterator" or (item.kind == "derived" and item.name in self.needed):
                    if item.value_type not in C_TYPES:
                        raise Unsupported(f"{item.kind} {item.name!r} of type {item.value_type}")
                    self.emit(f"{C_TYPES[item.value_type]} {c_name(item.name)};")

    # -- a level ---------------------------------------------------------------------------------
    def _level(self, level, index: int) -> None:
        it = level.iterator
        if it.function is not None:
            raise Unsupported(f"iterator {it.name!r} is a space function")
        self.emit(f"// loop {index}: iterator {c_comment(it.name)} ({c_comment(it.origin or '')}): "
                  f"{c_comment(it.source_text)}")
        if it.domain[0] == "values":
            self._values(it)
        elif level.solved:
            self._solved(level)
        else:
            self._range(it)
        for item in level.body:
            self._item(item)

    def _range_parts(self, it: Item) -> list[str]:
        names = [f"{c_name(it.name)}__{part}" for part in ("lo", "hi", "step")]
        for name, part in zip(names, it.domain[1:]):
            if infer_type(part, self.items) not in ("int", "bool"):
                raise Unsupported(f"range of {it.name!r} has a non-integer part")
            self.emit(f"int64_t {name};")
            self.assign(name, part)
        return names

    def _range(self, it: Item) -> None:
        lo, hi, step = self._range_parts(it)
        var = c_name(it.name)
        step_value = it.domain[3]
        if self.symbolic.provably_nonnegative(step_value) and self.symbolic.provably_nonzero(step_value):
            condition = f"{var} < {hi}"
        else:
            self.reject_if(f"{step} == 0", "range() step zero")
            condition = f"({step} > 0 ? {var} < {hi} : {var} > {hi})"
        if not self.plan.range_fits(it):
            self._counted_range(var, lo, hi, step)
            return
        self._open(f"for ({var} = {lo}; {condition}; {var} += {step}) {{")

    def _counted_range(self, var: str, lo: str, hi: str, step: str) -> None:
        """A range whose last value plus step (or ``stop - start``) may pass 64 bits: its trips
        counted in unsigned arithmetic (exact), so ``x += step`` past the last value never loops."""
        left = f"{var}__left"
        self.emit(f"uint64_t {left} = {step} > 0 ? ({lo} < {hi} ? ((uint64_t){hi} - (uint64_t){lo} - 1) / "
                  f"(uint64_t){step} + 1 : 0) : ({hi} < {lo} ? ((uint64_t){lo} - (uint64_t){hi} - 1) / "
                  f"(0 - (uint64_t){step}) + 1 : 0);  // the range's length: stop - start may pass 64 bits")
        self._open(f"for ({var} = {lo}; {left} > 0; {left}--, {var} = (int64_t)((uint64_t){var} + "
                   f"(uint64_t){step})) {{")

    def _values(self, it: Item) -> None:
        kind = it.value_type
        if kind == "str" and constant_values(it):
            index = f"{c_name(it.name)}__index"
            self._open(f"for ({index} = 0; {index} < {len(it.domain) - 1}; {index}++) {{")
            return
        if kind not in C_TYPES:
            raise Unsupported(f"values of {it.name!r} of type {kind}")
        var, parts = c_name(it.name), it.domain[1:]
        if not constant_values(it):  # constant ones: a table at file scope (value_tables)
            self.emit(f"{C_TYPES[kind]} {var}__values[{len(parts)}];")
            for position, part in enumerate(parts):
                self.assign(f"{var}__values[{position}]", part)
        self._open(f"for (int64_t {var}__i = 0; {var}__i < {len(parts)}; {var}__i++) {{")
        self.emit(f"{var} = {var}__values[{var}__i];")

    def _solved(self, level) -> None:
        it, solution = level.iterator, level.solved
        item = solution.filter
        lo, hi, step = self._range_parts(it)
        var = c_name(it.name)
        self.emit(f"// filter {c_comment(item.name)} ({c_comment(item.origin or '')}): rejects when "
                  f"{c_comment(item.source_text)}; solved for {c_comment(it.name)} instead of looping")
        for part in (solution.numerator, solution.denominator):
            if infer_type(part, self.items) not in ("int", "bool"):
                raise Unsupported(f"the solution for {it.name!r} is not an integer")
        numerator, denominator = f"{var}__num", f"{var}__den"
        self.emit(f"int64_t {numerator}, {denominator};")
        self.assign(numerator, solution.numerator)
        self.assign(denominator, solution.denominator)
        self.reject_if(f"bg_mod_nz({numerator}, {denominator}) != 0", "no integer solution")
        self.emit(f"{var} = bg_floordiv_nz({numerator}, {denominator});  // the denominator: proven never zero")
        inside = f"{lo} <= {var} && {var} < {hi}"
        if not (isinstance(it.domain[3], L.Const) and it.domain[3].value == 1) and not self.plan.range_fits(it):
            inside = (f"({step} > 0 && {lo} <= {var} && {var} < {hi} && ((uint64_t){var} - (uint64_t){lo}) "
                      f"% (uint64_t){step} == 0) || ({step} < 0 && {hi} < {var} && {var} <= {lo} && "
                      f"((uint64_t){lo} - (uint64_t){var}) % (0 - (uint64_t){step}) == 0)")  # may pass 64 bits
        elif not (isinstance(it.domain[3], L.Const) and it.domain[3].value == 1):
            inside = (f"(({step} > 0 && {lo} <= {var} && {var} < {hi}) || ({step} < 0 && {hi} < {var} "
                      f"&& {var} <= {lo})) && bg_mod({var} - {lo}, {step}, &_err) == 0")
        self.reject_if(f"!({inside})", f"outside the domain of {c_comment(it.name)}")

    def _open(self, header: str) -> None:
        self.emit(header)
        self.depth += 1
        self.loops += 1

    # -- a derived value or filter ----------------------------------------------------------------
    def _item(self, item: Item) -> None:
        if item.kind == "bound":
            return
        if item.function is not None:
            raise Unsupported(f"{item.kind} {item.name!r} is a space function")
        if item.kind == "derived" and item.name not in self.needed:
            return  # read by bound terms alone, and it cannot raise
        self.emit(f"// {item.kind} {c_comment(item.name)} ({c_comment(item.origin or '')}): "
                  f"{'rejects when ' if item.kind == 'filter' else ''}{c_comment(item.source_text)}")
        if item.kind == "derived":
            self._store(c_name(item.name), *self.derived[item.name])
            return
        source, may_fail = self.expression(item.expr)
        if may_fail:
            self.emit(f"if (({source}) || _err) {{")
            self.emit("    _err = 0;")
        else:
            self.emit(f"if ({source}) {{")
        self.emit(f"    {self.reject()}")
        self.emit("}")


#: bytes per value in a row of ``fill``: the result's field types (runtime's int64, bool, float64)
FIELD_SIZES = {"int": 8, "bool": 1, "float": 8, "str": 8}  # a string as its index (int64)


def record_layout(plan: Plan) -> list[tuple[str, str, int]]:
    """(iterator, value type, byte offset) of each field of a row written by ``fill``: the iterators
    in declaration order (``plan.columns``), packed as NumPy packs a structured dtype."""
    items, offset, layout = plan.specialized.items, 0, []
    for name in plan.specialized.space.iterators:
        kind = items[name].value_type
        if kind not in FIELD_SIZES:
            raise Unsupported(f"iterator {name!r} of type {kind}")
        layout.append((name, kind, offset))
        offset += FIELD_SIZES[kind]
    return layout


#: positive divisors of n, for the loops that visit only those (``CClaimingWriter._divisor_loop``)
DIVISORS = r"""#include <string.h>

#define BG_DIVISORS_LIMIT 1048576  /* |n| up to this: at most 240 divisors, found in 1024 steps */
#define BG_DIVISORS_MAX 256
/* The positive divisors of 1 <= n <= BG_DIVISORS_LIMIT, ascending, into out; how many. */
static int64_t bg_divisors(int64_t n, int64_t *out) {
    int64_t large[BG_DIVISORS_MAX], small = 0, big = 0;
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d == 0) {
            out[small++] = d;
            if (d * d != n) large[big++] = n / d;
        }
    }
    while (big > 0) out[small++] = large[--big];
    return small;
}
"""


def _refs(expr: L.Expr) -> set[str]:
    return {node.target for node in L.walk(expr) if isinstance(node, L.Ref)}


class CClaimingWriter(CNestWriter):
    """The nests that threads share by claiming split nodes one at a time from a shared counter
    (atomically, in increasing order: uneven nodes balance themselves), walking the subtrees of the
    nodes they claim: ``fill`` writes each valid configuration as a row of the result (the countable
    tail iterated too), ``count_claimed`` counts them. Both visit, in a range loop whose iterator is
    the denominator of the next level's solution, only the values that can pass it."""

    FILL = ("int64_t fill(int64_t *_next, int64_t _lo, int64_t _hi, int64_t *_state, unsigned char *_rows, "
            "int64_t _capacity, int64_t *_node_rows, int64_t *_node_owner, int64_t _thread)")
    COUNT = "int64_t count_claimed(int64_t *_next, int64_t _lo, int64_t _hi)"

    def reject(self) -> str:
        return "continue;" if self.loops else "goto _done;"

    def fill(self) -> list[str]:
        layout = record_layout(self.plan)
        self.lines = [
            "/* Every valid configuration below split nodes _lo <= node < _hi, as rows of _rows (fields in",
            "   declaration order, packed: int64, bool as one byte, double). The thread claims split nodes",
            "   from *_next and writes the rows of each node it claims after the previous one's;",
            "   _node_rows[node - _lo] gets their number and _node_owner[node - _lo] gets _thread. _state:",
            "   the node to redo first (-1: claim one) and the rows already written. Returns 1 when no node",
            "   is left; 0 when _capacity rows are not enough, with _state set to redo the node in progress",
            "   (into a larger buffer holding the rows so far). */",
            f"{self.FILL} {{"]
        self._claiming_nest(self.plan.levels, "_state[0] >= 0 ? _state[0] : ", "_state[1]", record=True)
        self.emit("if (_n >= _capacity) {  // no room: redo this node into a larger buffer")
        self.emit("    _state[0] = _claim;")
        self.emit("    _state[1] = _start;")
        self.emit("    return 0;")
        self.emit("}")
        self.emit(f"_row = _rows + _n * {c_literal(sum(FIELD_SIZES[kind] for _, kind, _ in layout))};")
        for name, kind, offset in layout:
            if kind == "bool":
                self.emit(f"_row[{offset}] = (unsigned char)({c_name(name)} != 0);")
            else:
                value = c_name(name) + ("__index" if kind == "str" else "")
                self.emit(f"memcpy(_row + {offset}, &{value}, 8);")
        self.emit("_n += 1;")
        return self._finish("1", record=True)

    def count_claimed(self) -> list[str]:
        levels = self.plan.levels
        counted = countable_tail(levels)
        self.lines = ["/* Valid configurations below the split nodes _lo <= node < _hi this thread claims from",
                      "   *_next (see fill). */",
                      f"{self.COUNT} {{"]
        self._claiming_nest(levels[:len(levels) - len(counted)], "", "0", record=False)
        self._count_leaf(counted)
        return self._finish("_n", record=False)

    def _claiming_nest(self, levels, redo: str, rows_before: str, record: bool) -> None:
        """Declarations, the first claim, and the loops of ``levels`` with the claim gate."""
        split = split_level(self.plan)
        self._declarations(levels)
        for index, level in enumerate(levels):
            if self._divides_next(index):
                var = c_name(level.iterator.name)
                self.emit(f"int64_t {var}__div[BG_DIVISORS_MAX], {var}__ndiv = 0, {var}__of = 0;"
                          "  // the divisors of __of")
        self.emit(f"int64_t _n = {rows_before};  // configurations so far")
        self.emit("int64_t _start = _n;  // ... before the claimed node")
        self.emit(f"int64_t _claim = {redo}__atomic_fetch_add(_next, 1, __ATOMIC_RELAXED);")
        self.emit("int64_t _node = 0;  // split nodes seen")
        if record:
            self.emit("unsigned char *_row;")
        self.emit(f"if (_claim >= _hi) return {'1' if record else '0'};")
        if split == 0:
            self.emit(f"if (_claim > 0) return {'1' if record else '0'};  // the only split node is the root")
            self.emit("_node = 1;")
        for index, level in enumerate(levels):
            self._level(level, index)
            if index == split - 1:
                self._claim_gate(record)

    def _finish(self, result: str, record: bool) -> list[str]:
        while self.depth > 1:
            self.depth -= 1
            self.emit("}")
        self.lines.append("_done:")
        if record:
            self.emit("if (_claim < _node) {  // the last node claimed was walked")
            self._record_node()
            self.emit("}")
        self.emit(f"return {result};")
        self.lines.append("}")
        return self.lines

    def _record_node(self) -> None:
        self.emit("    _node_rows[_claim - _lo] = _n - _start;")
        self.emit("    _node_owner[_claim - _lo] = _thread;")

    def _claim_gate(self, record: bool) -> None:
        """Past the split level: once the claimed node is walked (recorded), claim the next; skip
        the nodes before it."""
        self.emit("// split node (SPLIT_LEVEL): walk the subtree of the node claimed, skip the others")
        self.emit("_node += 1;")
        self.emit("if (_node - 1 > _claim) {  // the claimed node is done: claim the next")
        if record:
            self._record_node()
            self.emit("    _start = _n;")
        self.emit("    _claim = __atomic_fetch_add(_next, 1, __ATOMIC_RELAXED);")
        self.emit(f"    if (_claim >= _hi) return {'1' if record else '_n'};")
        self.emit("}")
        self.emit("if (_node - 1 < _claim) continue;")

    def _level(self, level, index: int) -> None:
        if not self._divides_next(index):
            super()._level(level, index)
            return
        it = level.iterator
        self.emit(f"// loop {index}: iterator {c_comment(it.name)} ({c_comment(it.origin or '')}): "
                  f"{c_comment(it.source_text)}")
        self._divisor_loop(it, self.plan.levels[index + 1].solved)
        for item in level.body:
            self._item(item)

    def _divides_next(self, index: int) -> bool:
        """Whether level ``index`` is a range with step 1 whose iterator is the denominator of the
        next level's solution, with a numerator computed above it: only its values dividing the
        numerator can pass (every other value leaves no integer solution: rejected), so the loop
        may visit just those."""
        levels = self.plan.levels
        if index + 1 >= len(levels) or levels[index + 1].solved is None:
            return False
        level, solution = levels[index], levels[index + 1].solved
        it = level.iterator
        return (it.function is None and level.solved is None and it.domain[0] == "range"
                and isinstance(it.domain[3], L.Const) and it.domain[3].value == 1
                and isinstance(solution.denominator, L.Ref) and solution.denominator.target == it.name
                and infer_type(solution.numerator, self.items) in ("int", "bool")
                and not _refs(solution.numerator) & {it.name, *(item.name for item in level.body)})

    def _divisor_loop(self, it: Item, solution) -> None:
        """``for it in range(lo, hi)`` visiting only the divisors of the next level's numerator when
        that is cheaper (the divisors are found once per numerator: it rarely changes), else all."""
        lo, hi, _ = self._range_parts(it)
        var = c_name(it.name)
        num, k, end, by_divisors = (f"{var}__{part}" for part in ("num", "k", "end", "by_divisors"))
        self.emit(f"// only divisors of the numerator pass the solved level below "
                  f"(filter {c_comment(solution.filter.name)})")
        self.emit(f"int64_t {num}, {k}, {end};")
        self.assign(num, solution.numerator)  # raises for every value of it alike: rejected
        self.emit(f"if ({num} < 0) {num} = -{num};  // -n has the divisors of n (INT64_MIN stays < 0)")
        self.emit(f"int {by_divisors} = {lo} >= 1 && {num} >= 1 && {num} <= BG_DIVISORS_LIMIT && "
                  f"({num} == {var}__of || {hi} - {lo} >= 1024 || {num} < ({hi} - {lo}) * ({hi} - {lo}));")
        self.emit(f"if ({by_divisors}) {{")
        self.emit(f"    if ({num} != {var}__of) {{")
        self.emit(f"        {var}__ndiv = bg_divisors({num}, {var}__div);")
        self.emit(f"        {var}__of = {num};")
        self.emit("    }")
        self.emit(f"    {k} = 0;")
        self.emit(f"    {end} = {var}__ndiv;")
        self.emit("} else {")
        self.emit(f"    {k} = {lo};")
        self.emit(f"    {end} = {hi};")
        self.emit("}")
        self._open(f"for (; {k} < {end}; {k}++) {{")
        self.emit(f"{var} = {by_divisors} ? {var}__div[{k}] : {k};")
        self.emit(f"if ({var} < {lo}) continue;")
        self.emit(f"if ({var} >= {hi}) break;")


def generate_c_module(plan: Plan, symbolic: SymbolicContext | None = None) -> str:
    """The C source of the plan's count, split_nodes, fill and count_claimed; raises
    :class:`Unsupported`."""
    spec = plan.specialized
    symbolic = symbolic or SymbolicContext(spec.items)
    header = [f"// beastgen C target of space {c_comment(spec.space.name)} on {c_comment(spec.device.key)}: "
              "do not edit.",
              f"// loop order: {', '.join(c_comment(name) for name in plan.order)}",
              f"// SPLIT_LEVEL = {split_level(plan)}",
              "// A filter REJECTS a configuration when it is true; _err rejects one whose values raise.",
              ""]
    writer = CNestWriter(plan, symbolic)
    count = writer.count()
    nodes = writer.split_nodes()
    fill = CClaimingWriter(plan, symbolic).fill()
    claimed = CClaimingWriter(plan, symbolic).count_claimed()
    tables = value_tables(plan)
    return "\n".join(header + [PRELUDE] + tables + [""] * bool(tables) + count + [""] + nodes
                     + ["", DIVISORS] + fill + [""] + claimed) + "\n"
