"""The Numba target's builder: the plan walker's statements and expressions (:mod:`..nest`) printed as a
Numba function, with Python's semantics kept by guards (a zero divisor, a raising space function or
an operation under a short-circuit rejects the configuration). Each generated function is a subclass
(:mod:`.functions`, :mod:`.estimator`)."""
from __future__ import annotations

from ....quoting import comment_text
from ...analysis.symbolic import SymbolicContext
from ...language import nodes as L
from ...language import semantics
from ...language.identity import IdentityMapper
from ...language.printer import PRECEDENCE, expr_source, wrap
from ...specialize import Item, infer_type
from ..facts import stat_slots
from ..guards import guard_test, guards, operation_rule, proven_absent
from ..nest import NestWalker

NJIT = "@numba.njit(cache=True, error_model='python', nogil=True)"  # nogil: chunks run on threads
# Numba cannot lower a generator loaded from its disk cache into a new caller: generators are not cached
NJIT_GENERATOR = "@numba.njit(error_model='python')"
CASTS = {"int": int, "float": float}  # values iterators: bools among ints, ints among floats
#: levels past this many loops go on in a function of their own where Python would not compile the
#: nest whole (at most 20 nested blocks, loops and try, in one function)
_LOOPS_PER_FUNCTION = 14


def _compiles(lines: list[str]) -> bool:
    """Whether Python compiles the function (it refuses more than 20 nested blocks)."""
    try:
        compile("\n".join(lines), "<nest>", "exec")
    except SyntaxError:
        return False
    return True


#: how Numba writes a condition of the semantics table: ``floor`` as ``np.floor``, a float as the
#: table's (C's) is; Numba's ``math.floor`` of a float is an int64, undefined past 2**63 (LLVM then
#: gives any answer: ``(-2.0) ** 1e300``'s fractional-exponent test rejected other rows)
NUMBA_SPELLING = semantics.Spelling("({x} and {y})", "({x} or {y})", "(not {x})",
                                    {"isfinite": "math.isfinite({x})", "isinf": "math.isinf({x})",
                                     "isnan": "math.isnan({x})", "floor": "np.floor({x})"})


def python_truth(source: str, expected: bool) -> str:
    """A value's truth in Python (and Numba: NaN is true), or its falsehood."""
    return f"({source})" if expected else f"(not ({source}))"


def _operand(expr: L.Expr) -> str:
    return f"({expr_source(expr)})"


class NumbaForm(IdentityMapper):
    """An expression as Numba computes it like Python: a float power (the semantics table's
    ``float_pow``: a float operand, or an integer to a negative constant power, which is a float in
    Python) as ``float(a) ** float(b)``, C's ``pow`` as Python's (Numba's ``float ** int``
    multiplies, ``1.1 ** 3`` then differs in its last bit); ``math.floor``, ``math.ceil`` and
    ``int`` of an integer as itself (Numba's go through a float: 2**53 + 1 is lost); ``float`` and
    ``abs`` of a bool through an int (Numba has no ``float`` of a bool, its ``abs`` is a bool)."""

    def __init__(self, items: dict):
        self.items = items

    def map_BinOp(self, expr: L.BinOp) -> L.Expr:
        rebuilt = super().map_BinOp(expr)
        rule = operation_rule(expr, self.items) if expr.op == "**" else None
        if rule is not None and rule.value == "float_pow":
            return L.BinOp("**", *(self.as_float(part) for part in (rebuilt.left, rebuilt.right)))
        return rebuilt

    def as_float(self, expr: L.Expr) -> L.Expr:
        if isinstance(expr, L.Const) and isinstance(expr.value, (int, float)):
            return L.Const(float(expr.value))
        return self.map_Call(L.Call("float", [expr]))

    def map_Call(self, expr: L.Call) -> L.Expr:
        rebuilt = super().map_Call(expr)
        kinds = [infer_type(arg, self.items) for arg in expr.args]
        if expr.func == "float" and kinds == ["bool"]:
            return L.Call("float", [L.BinOp("*", rebuilt.args[0], L.Const(1))])
        if expr.func in ("floor", "ceil", "int") and kinds[0] in ("int", "bool"):
            # the integer itself (the table's ``same``): Numba's math.floor of an int goes through a float
            return L.Call("int", [rebuilt.args[0]]) if kinds[0] == "bool" else rebuilt.args[0]
        if expr.func == "abs" and kinds == ["bool"]:  # abs(True) is the int 1
            return L.Call("abs", [L.Call("int", [rebuilt.args[0]])])
        return rebuilt


class RaisingPowers(IdentityMapper):
    """For an expression run in a try (one computing with a space function's checked integers):
    each float ``**`` whose raises are not all proven absent (:func:`..guards.proven_absent`) as
    ``float_power`` (nestlib), which raises where Python does (Numba's ``**`` gives inf or nan)."""

    def __init__(self, items: dict, symbolic: SymbolicContext):
        self.items, self.symbolic = items, symbolic

    def map_BinOp(self, expr: L.BinOp) -> L.Expr:
        rebuilt = super().map_BinOp(expr)
        if expr.op == "**" and infer_type(rebuilt, self.items) == "float" and not all(
                proven_absent(check, rebuilt, self.symbolic) for check in semantics.FLOAT_POWER_RAISES):
            return L.Call("float_power", [rebuilt.left, rebuilt.right])
        return rebuilt


def value_name(it: Item) -> str:
    """What a level's loop binds: a string iterator's index into its listed values, else the value."""
    return f"{it.name}__index" if it.value_type == "str" else it.name


class NumbaNest(NestWalker):
    """A generated Numba function: ``SIGNATURE`` and ``DOC`` head it; a subclass states its
    prologue, leaf and bookkeeping. ``PARTED``: its levels past :data:`_LOOPS_PER_FUNCTION` loops
    may go on in functions of their own (:meth:`start_part`), taking ``part_state`` and answering
    through ``PART_CALL`` (``{call}``: the part's call)."""

    SIGNATURE = DOC = ""
    PARTED = False
    PART_CALL = "_n += {call}"
    BOUNDS = False  # computes (and tests) the bound terms

    def __init__(self, plan, symbolic, ending=None):
        super().__init__(plan, symbolic, ending)
        self.slot = {item.name: i for i, item in enumerate(stat_slots(plan))}
        self.range_ends: dict[str, tuple[str, str]] = {}  # stop and step of each range loop printed
        self.temps = 0
        self.loops_per_function: int | None = None
        self.top_return = self.RESULT

    # -- the function and its parts --------------------------------------------------------------
    def write(self) -> list[str]:
        """The function, then the parts its nest was split into (see :meth:`start_part`)."""
        lines = self._write_parted(None)
        if self.PARTED and not _compiles(lines):  # too many nested blocks: in parts
            self.__init__(self.plan, self.symbolic, self.ending)
            lines = self._write_parted(_LOOPS_PER_FUNCTION)
        return lines

    def _write_parted(self, loops_per_function: int | None) -> list[str]:
        self.loops_per_function = loops_per_function
        self.parts: list[list[str]] = []  # the outer functions, finished
        self.top_return = self.RESULT
        header = self.header()
        self.lines = [NJIT, *header]
        self.body_start = len(self.lines)  # where the divisor loops' caches are declared
        self.function_name = header[0][4:].split("(")[0]
        self.write_body()
        lines = self.lines
        for part in self.parts:
            lines += [""] + part
        return lines

    def header(self) -> list[str]:
        return [f"def {self.SIGNATURE}:", f'    """{self.DOC}"""']

    def write_body(self) -> None:
        """The lines below the header (a subclass's prologue, walk and leaf)."""
        raise NotImplementedError

    def walk_level(self, level, index: int) -> None:
        if self.loops_per_function and self.loops >= self.loops_per_function \
                and index >= self.split and not level.solved:
            self.start_part(index)
        super().walk_level(level, index)

    def part_state(self, index: int) -> list[str]:
        """The function's state that a part starting at level ``index`` takes."""
        return []

    def start_part(self, index: int) -> None:
        """Go on with levels ``index`` and below in a function of their own: Python allows 20
        nested blocks in one function. It takes what the outer levels bound and the function's
        state, and answers what it added (``fill``: the next row; ``rank``: the heap's size and limit)."""
        computed = ("iterator", "derived") + (("bound",) if self.BOUNDS else ())
        bound = [name for level in self.plan.levels[:index] for item in level.items
                 if item.kind in computed for name in
                 ([item.name, f"{item.name}__index"] if item.value_type == "str" and item.kind == "iterator"
                  else [item.name])]
        name = f"{self.function_name}__part{len(self.parts) + 1}"
        call = f"{name}({', '.join(self.part_state(index) + bound)})"
        self.emit(self.PART_CALL.format(call=call) + "  # the levels below, in a function of their own (nested blocks)")
        self.parts.insert(0, [*self.lines, f"    return {self.top_return}"])
        self.lines = [NJIT, f"def {call}:", f'    """Levels {index} and below of {self.function_name}."""']
        self.body_start = len(self.lines)
        self.depth, self.loops = 1, 0
        self.part_prologue()

    def part_prologue(self) -> None:
        self.emit("_n = 0")

    # -- statements ------------------------------------------------------------------------------
    def statement(self, text: str, why: str | None = None) -> None:
        self.emit(text + (f"  # {why}" if why else ""))

    def if_(self, test: str, why: str | None = None) -> None:
        self.statement(f"if {test}:", why)
        self.depth += 1

    def end(self) -> None:
        self.depth -= 1

    def for_trips(self, var: str, trips: int, why: str | None = None) -> None:
        self.statement(f"for {var} in range({trips}):", why)
        self.depth += 1
        self.loops += 1

    def if_then(self, test: str, text: str, why: str | None = None) -> None:
        self.if_(test, why)
        self.statement(text)
        self.end()

    def else_(self) -> None:
        self.depth -= 1
        self.emit("else:")
        self.depth += 1

    def initialize(self, pairs: list[tuple[str, str]], why: str | None = None) -> None:
        self.assign_each(pairs, why)

    def initialize_choice(self, names: list[str], test: str, when_true: list[str], when_false: list[str]) -> None:
        self.assign(", ".join(names), f"({', '.join(when_true)}) if {test} else ({', '.join(when_false)})")

    def assign_each(self, pairs: list[tuple[str, str]], why: str | None = None) -> None:
        self.assign(", ".join(name for name, _ in pairs), ", ".join(value for _, value in pairs), why)

    def all_of(self, tests: list[str]) -> str:
        return " and ".join(tests)

    def any_of(self, tests: list[str]) -> str:
        return " or ".join(tests)

    def not_(self, name: str) -> str:
        return f"not {name}"

    def between(self, lo: str, value: str, hi: str) -> str:
        return f"{lo} <= {value} <= {hi}"

    def choose(self, test: str, when_true: str, when_false: str) -> str:
        return f"{when_true} if {test} else {when_false}"

    def max_(self, a: str, b: str) -> str:
        return f"max({a}, {b})"

    def min_(self, a: str, b: str) -> str:
        return f"min({a}, {b})"

    def int64(self, source: str) -> str:
        return f"numba.int64({source})"

    HIGH_WORD = "_high[0]"
    TRUE, FALSE = "True", "False"

    def integer(self, value: int) -> str:
        return str(value)

    def unsigned_at_least(self, name: str, bound: int) -> str:
        return f"{name} >= {bound} or {name} < 0"

    def unsigned_high_bits(self, name: str, shift: int) -> str:
        return f"({name} >> {shift}) & {2 ** (64 - shift) - 1}"

    def var(self, name: str) -> str:
        return name

    def quote(self, text: str) -> str:
        return comment_text(text)

    def comment(self, text: str) -> None:
        self.emit(f"# {text}")

    def declare(self, names: list[str]) -> None:
        pass  # Python declares by assigning

    def declare_levels(self, levels) -> None:
        pass

    def define_flag(self, target: str, test: str) -> None:
        self.emit(f"{target} = {test}")

    # -- rejection -------------------------------------------------------------------------------
    def leave(self) -> str:
        """... what the function (or the part of it being written) returns."""
        return f"return {self.top_return}"

    def value(self, expr: L.Expr, item: Item) -> str:
        """... An expression computing with a space function's checked integers
        (``analysis.checked_helpers``) runs in a try instead, its checks raising."""
        checked = self.plan.item_expression(item, expr)
        if checked is not expr:
            return self._checked_value(item, expr, checked)
        return super().value(expr, item)

    def expression(self, expr: L.Expr, item: Item | None) -> tuple[list, str]:
        """... of its Numba form (:class:`NumbaForm`), each guard a raise of the semantics table
        not proven absent, on its path (:func:`..guards.guards`)."""
        expr = NumbaForm(self.items)(expr)
        return ([(guard_test(guard, _operand, NUMBA_SPELLING, python_truth), guard.why)
                 for guard in guards(expr, self.items, self.symbolic)], expr_source(expr))

    def _checked_value(self, item: Item, original: L.Expr, checked: L.Expr) -> str:
        """``checked`` (``original`` with its checked integer operations) in a try that rejects on
        its own errors and stops the count on a checked one: its operands come from a space
        function, whose kinds the semantics table cannot guard by (``g // y`` with a zero ``y``)."""
        expr = RaisingPowers(self.items, self.symbolic)(NumbaForm(self.items)(checked))
        self.temps += 1
        temp = f"{item.name}__t{self.temps}"
        self._checked_try(f"{temp} = {expr_source(expr)}", item, self.plan.checked[item.name], original)
        return temp

    def _checked_try(self, statement: str, item: Item, checked, original: L.Expr) -> None:
        """``statement`` in a try whose exception rejects ``item``'s configuration unless one of its
        checked integer operations left 64 bits: evaluated again recording which
        (``<item>__left``), that one stops the count (``checked.raising``)."""
        left = f"{item.name}__left"
        self.emit(f"{left} = 0")
        self.emit("try:")
        self.emit(f"    {statement}")
        self.emit("except Exception:  # division by zero or similar: rejected")
        self.depth += 1
        self.emit(f"{left} = {checked.left(original)}")
        self.emit(f"if {left} == 0:")
        self.depth += 1
        self.reject(item)
        self.depth -= 2
        self.emit(f"if {left}:")
        self.emit(f"    {checked.raising(left)}")

    def may_raise(self, item: Item) -> bool:
        """Whether a space function's helper may raise: an error of its own, or a checked integer
        operation (``analysis.checked_helpers``)."""
        return item.function.may_raise or bool(self.plan.helpers[item.name].sites)

    def call(self, item: Item, target: str, fallback: str | None = None) -> None:
        """``target = `` the helper's result; where it raises, the configuration is rejected (or
        ``target = fallback``), unless it left the 64-bit integers: that stops the count."""
        fn, helper = item.function, self.plan.helpers[item.name]
        call = f"{fn.name}({', '.join(fn.params)})"
        if fn.form == "generator" and self.may_raise(item):
            call = f"list({call})"
        if not self.may_raise(item):
            self.emit(f"{target} = {call}")
            return
        if helper.sites:
            self.emit(f"{item.name}__left = 0")
        self.emit("try:")
        self.emit(f"    {target} = {call}")
        self.emit(f"except Exception:  # {item.name} raised: {'rejected' if fallback is None else fallback}")
        self.depth += 1
        if helper.sites:  # raising in an except block is beyond Numba: the test is after it
            self.emit(f"{item.name}__left = {helper.left}")
            self.emit(f"if {item.name}__left == 0:  # an error of its own")
            self.depth += 1
        if fallback is None:
            self.reject(item)
        else:
            self.emit(f"{target} = {fallback}")
        self.depth -= 2 if helper.sites else 1
        if helper.sites:
            self.emit(f"if {item.name}__left:")
            self.emit(f"    {helper.raising(f'{item.name}__left')}")

    # -- a loop ----------------------------------------------------------------------------------
    def function_loop(self, it: Item, index: int) -> None:
        fn = it.function
        if fn.form == "generator" and not self.may_raise(it):
            header = f"for {it.name} in {fn.name}({', '.join(fn.params)}):"
        else:
            self.call(it, f"{it.name}__seq")
            header = f"for {it.name} in {it.name}__seq:"
        self.open_loop(header, index)

    def counted_range_start(self, it: Item, lo: str, hi: str, step: str) -> str:
        """Its start and step named (``nestlib``'s range_chunk and range_value count and compute
        the values exactly)."""
        for name, source in (("lo", lo), ("step", step)):
            if source != f"{it.name}__{name}":
                self.assign(f"{it.name}__{name}", source)
        return f"{it.name}__c"

    def chunk_loop(self, it: Item, index: int, lo: str, hi: str, step: str, chunk: str) -> None:
        self.open_loop(f"for {it.name}__k in range(range_chunk({it.name}__lo, {hi}, {it.name}__step, {chunk})):"
                       "  # stop - start may pass 64 bits", index)
        self.assign(it.name, f"range_value({it.name}__lo, {chunk}, {it.name}__k, {it.name}__step)")

    def function_range(self, it: Item) -> list[str]:
        names = [f"{it.name}__lo", f"{it.name}__hi", f"{it.name}__step"]
        if it.unit_step:
            self.call(it, f"{names[0]}, {names[1]}, _")
            return names[:2] + ["1"]
        self.call(it, ", ".join(names))
        return names

    def range_part(self, it: Item, name: str, expr: L.Expr, named: bool) -> str:
        source = self.value(expr, it)
        if not named:
            return source
        self.assign(f"{it.name}__{name}", source)
        return f"{it.name}__{name}"

    def values_table(self, it: Item) -> str:
        return f"{it.name}__VALUES"

    def values_array(self, it: Item) -> str:
        """A tuple, its values cast to the iterator's type (bools among ints, ints among floats)."""
        cast = CASTS.get(it.value_type)
        sources = [self.value(part, it) for part in it.domain[1:]]
        return f"({', '.join(f'{cast.__name__}({source})' if cast else source for source in sources)},)"

    def for_array(self, var: str, array: str, length: int, index: int) -> None:
        self.open_loop(f"for {var} in {array}:", index)

    def for_range(self, var: str, lo: str, hi: str, index: int, step: str = "1", positive: bool = True) -> None:
        self.range_ends[var] = (hi, step)
        args = ([] if lo == "0" and step == "1" else [lo]) + [hi] + ([] if step == "1" else [step])
        self.open_loop(f"for {var} in range({', '.join(args)}):", index)

    DIVISORS, DIVISORS_LIMIT, GCD = "divisors", "DIVISORS_LIMIT", "gcd"

    def divisor_cache(self, cache: str, index: int) -> list[str]:
        return [f"    {cache}div = np.empty(DIVISORS_MAX, np.int64)  # divisors (loop {index})",
                f"    {cache}ndiv = 0", f"    {cache}of = 0"]

    def count_skipped(self, level, index: int, narrowing, span: str, listed: str | None = None) -> None:
        if not self.COUNTS_SKIPPED:
            return
        v = level.iterator.name
        inside = f"count_between({v}__div, {v}__ndiv, 1, {v}__first, {v}__last)"
        if listed is not None:
            self.skipped(narrowing.filter, f"{v}__inside - count_between({listed}, {v}__size, {v}__mul, "
                                           f"{v}__first, {v}__last)")
            return
        if narrowing.filter:
            self.assign(f"{v}__inside", inside, "divisors whose solution lies in its range")
            inside = f"{v}__inside"
        self.skipped(self.plan.levels[index + 1].solved.filter, f"max({span}, 0) - {inside}")

    def skipped(self, item: Item, count: str) -> None:
        """A divisor loop skips ``count`` values that ``item``, the solved filter, would reject (the
        statistics count them)."""

    # -- a solved level's expressions -----------------------------------------------------------
    def solution_parts(self, level) -> tuple[str, str]:
        """The solution's numerator and denominator, inline (after their guards)."""
        solution = level.solved
        self.value(solution.numerator, solution.filter)
        self.value(solution.denominator, solution.filter)
        return (wrap(solution.numerator, PRECEDENCE["*"]),
                wrap(solution.denominator, PRECEDENCE["*"], strict=True))

    def remainder_nonzero(self, numerator: str, denominator: str) -> str:
        return f"{numerator} % {denominator} != 0"

    def quotient_edge(self, numerator: str, denominator: str) -> str:
        """Numba's -2**63 // -1 is 0."""
        return f"{denominator} == -1 and {numerator} == {-2 ** 63}"

    def exact_quotient(self, numerator: str, denominator: str) -> str:
        return f"{numerator} // {denominator}"

    def negation(self, test: str) -> str:
        return f"not ({test})"

    def in_unit_range(self, value: str, lo: str, hi: str) -> str:
        return f"{lo} <= {value} < {hi}"

    def in_wide_range(self, value: str, lo: str, hi: str, step: str) -> str:
        return f"range_contains({lo}, {hi}, {step}, {value})"

    def in_range(self, value: str, lo: str, hi: str, step: str) -> str:
        return (f"(({step} > 0 and {lo} <= {value} < {hi}) or ({step} < 0 and {hi} < {value} <= {lo}))"
                f" and ({value} - {lo}) % {step} == 0")

    # -- a derived value, filter or bound --------------------------------------------------------
    def computes(self, item: Item) -> bool:
        return item.kind != "bound" or self.BOUNDS

    def place_bound(self, item: Item) -> None:
        """A bound term: computed only by the functions that test bounds (:meth:`test_bound`)."""
        if item.function is not None:
            self.call(item, item.name, fallback="0.0")  # a bound term that raises bounds nothing
        elif self.plan.item_expression(item, item.expr) is not item.expr:  # checked integers: a try
            expr = RaisingPowers(self.items, self.symbolic)(NumbaForm(self.items)(
                self.plan.item_expression(item, item.expr)))
            self.emit("try:")
            self.emit(f"    {item.name} = {expr_source(expr)}")
            self.emit("except Exception:  # a bound term that raises bounds nothing")
            self.emit(f"    {item.name} = 0.0")
        else:
            expr = NumbaForm(self.items)(item.expr)
            tests = [guard_test(guard, _operand, NUMBA_SPELLING, python_truth)
                     for guard in guards(expr, self.items, self.symbolic)]
            if tests:  # a bound term that raises bounds nothing
                self.emit(f"{item.name} = 0.0 if {' or '.join(tests)} else {wrap(expr, 1)}")
            else:
                self.emit(f"{item.name} = {expr_source(expr)}")
        self.test_bound(item)

    def test_bound(self, item: Item) -> None:
        """What a function that tests bounds does with a bound term just computed."""
