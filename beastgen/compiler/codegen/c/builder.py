"""The C target's builder: the plan walker's statements and expressions (:mod:`..nest`) printed as C,
for a shared library (:mod:`.module`) that :mod:`beastgen.compiler.native` compiles with the system
C compiler and loads with ctypes. A warm count then imports neither Numba nor LLVM, and a cold one
compiles in a fraction of Numba's time. The Numba module stays the full enumerator (every other
function); this target covers the plans whose items are all expressions over int, bool and float
values, and listed strings compared with constants (:class:`.expression.Unsupported` otherwise).
Each generated function is a subclass (:mod:`.functions`).

Python's semantics are the semantics table's (:mod:`.expression`): where an operation raises in
Python, a guard tested before the expression rejects the configuration, as the Numba nest's do.
Integers are 64-bit and wrap (compiled with ``-fwrapv``), as in Numba.
"""
from __future__ import annotations

from ...analysis.symbolic import SymbolicContext
from ...language import nodes as L
from ...plan import Plan
from ...specialize import Item, infer_type
from ..facts import CARRY
from ..nest import NestWalker
from .expression import C_TYPES, Unsupported, c_comment, c_expression, c_name, derived_sources, needed_items


class CNest(NestWalker):
    """A C function of the plan's nest (the same loops, tests and split nodes as the Numba nest's,
    so chunks number the same split nodes)."""

    ENDS_LOOPS = True
    DIVISOR_LOOPS = True

    def __init__(self, plan: Plan, symbolic: SymbolicContext, ending: dict[str, str] | None = None,
                 derived: dict[str, tuple[list, str]] | None = None):
        """``derived``: :func:`.expression.derived_sources`, when the caller has them."""
        super().__init__(plan, symbolic, ending)
        # needed_items asks which derived values may raise; place_derived prints them
        self.derived = derived_sources(plan, symbolic) if derived is None else derived
        self.needed = needed_items(plan, lambda item: bool(self.derived[item.name][0]))

    def expression(self, expr: L.Expr, item: Item | None) -> tuple[list, str]:
        """... (:func:`.expression.c_expression`; a derived value's from
        :func:`.expression.derived_sources`)."""
        if item is not None and item.kind == "derived" and expr is item.expr:
            return self.derived[item.name]
        return c_expression(expr, self.items, self.symbolic)

    # -- statements ------------------------------------------------------------------------------
    def var(self, name: str) -> str:
        return c_name(name)

    def quote(self, text: str | None) -> str:
        return c_comment(text or "")

    def comment(self, text: str) -> None:
        self.emit(f"// {text}")

    def declare(self, names: list[str]) -> None:
        self.emit(f"int64_t {', '.join(names)};")

    def define_flag(self, target: str, test: str) -> None:
        self.emit(f"int {target} = {test};")

    def statement(self, text: str, why: str | None = None) -> None:
        self.emit(f"{text};" + (f"  // {why}" if why else ""))

    def if_(self, test: str, why: str | None = None) -> None:
        self.emit(f"if ({test}) {{" + (f"  // {why}" if why else ""))
        self.depth += 1

    def end(self) -> None:
        self.depth -= 1
        self.emit("}")

    def if_then(self, test: str, text: str, why: str | None = None) -> None:
        self.emit(f"if ({test}) {text};" + (f"  // {why}" if why else ""))

    def for_trips(self, var: str, trips: int, why: str | None = None) -> None:
        self.emit(f"for (uint64_t {var} = 0; {var} < {trips}; {var}++) {{" + (f"  // {why}" if why else ""))
        self.depth += 1
        self.loops += 1

    def end_function(self) -> None:
        self.lines.append("}")

    def else_(self) -> None:
        self.depth -= 1
        self.emit("} else {")
        self.depth += 1

    def initialize(self, pairs: list[tuple[str, str]], why: str | None = None) -> None:
        self.statement("int64_t " + ", ".join(f"{name} = {value}" for name, value in pairs), why)

    def initialize_choice(self, names: list[str], test: str, when_true: list[str], when_false: list[str]) -> None:
        def operand(source: str) -> str:
            return f"({source})" if "?" in source else source
        self.initialize([(name, self.choose(test, operand(yes), operand(no)))
                         for name, yes, no in zip(names, when_true, when_false)])

    def assign_each(self, pairs: list[tuple[str, str]], why: str | None = None) -> None:
        for position, (name, value) in enumerate(pairs):
            self.assign(name, value, why if position == len(pairs) - 1 else None)

    def all_of(self, tests: list[str]) -> str:
        return " && ".join(tests)

    def any_of(self, tests: list[str]) -> str:
        return " || ".join(tests)

    def not_(self, name: str) -> str:
        return f"!{name}"

    def between(self, lo: str, value: str, hi: str) -> str:
        return f"{value} >= {lo} && {value} <= {hi}"

    def choose(self, test: str, when_true: str, when_false: str) -> str:
        return f"{test} ? {when_true} : {when_false}"

    def max_(self, a: str, b: str) -> str:
        return f"bg_max_i({a}, {b})"

    def min_(self, a: str, b: str) -> str:
        return f"bg_min_i({a}, {b})"

    HIGH_WORD = "*_high"
    TRUE, FALSE = "1", "0"

    def integer(self, value: int) -> str:
        return f"{value}LL"

    def unsigned_at_least(self, name: str, bound: int) -> str:
        return f"(uint64_t){name} >= {bound}ULL"

    def unsigned_high_bits(self, name: str, shift: int) -> str:
        return f"(int64_t)((uint64_t){name} >> {shift})"

    def declare_levels(self, levels) -> None:
        """... (a divisor loop's caches go before them)."""
        self.body_start = len(self.lines)
        for level in levels:
            for item in [level.iterator, *level.body]:
                if item.kind == "iterator" and item.value_type == "str":
                    self.emit(f"int64_t {c_name(item.name)}__index;  // into its listed strings")
                elif item.kind == "iterator" or (item.kind == "derived" and item.name in self.needed):
                    if item.value_type not in C_TYPES:
                        raise Unsupported(f"{item.kind} {item.name!r} of type {item.value_type}")
                    self.emit(f"{C_TYPES[item.value_type]} {c_name(item.name)};")

    # -- a level ---------------------------------------------------------------------------------
    def open_level(self, level, index: int) -> None:
        if level.iterator.function is not None:
            raise Unsupported(f"iterator {level.iterator.name!r} is a space function")
        super().open_level(level, index)

    def range_part(self, it: Item, name: str, expr: L.Expr, named: bool) -> str:
        """... always in a variable."""
        if infer_type(expr, self.items) not in ("int", "bool"):
            raise Unsupported(f"range of {it.name!r} has a non-integer part")
        var = f"{c_name(it.name)}__{name}"
        self.declare([var])
        self.compute(var, expr, it)
        return var

    def counted_range_start(self, it: Item, lo: str, hi: str, step: str) -> str:
        """Its length, in unsigned arithmetic (exact), so ``x += step`` past the last value never
        loops."""
        var = c_name(it.name)
        self.emit(f"uint64_t {var}__length = {step} > 0 ? ({lo} < {hi} ? ((uint64_t){hi} - (uint64_t){lo} - 1) / "
                  f"(uint64_t){step} + 1 : 0) : ({hi} < {lo} ? ((uint64_t){lo} - (uint64_t){hi} - 1) / "
                  f"(0 - (uint64_t){step}) + 1 : 0);  // the range's length: stop - start may pass 64 bits")
        return f"{var}__chunk"

    def chunk_loop(self, it: Item, index: int, lo: str, hi: str, step: str, chunk: str) -> None:
        var = c_name(it.name)
        length, left = f"{var}__length", f"{var}__left"
        self.emit(f"uint64_t {left} = {length} > ({chunk} << 62) ? {length} - ({chunk} << 62) : 0;")
        self.emit(f"if ({left} > {CARRY}ULL) {left} = {CARRY}ULL;")
        self.open_loop(f"for ({var} = (int64_t)((uint64_t){lo} + ({chunk} << 62) * (uint64_t){step}); {left} > 0; "
                       f"{left}--, {var} = (int64_t)((uint64_t){var} + (uint64_t){step})) {{", index)

    HOLDS_STRINGS = False  # a string as its index

    def values_table(self, it: Item) -> str:
        """A table at file scope (:func:`.expression.value_tables`)."""
        if it.value_type not in C_TYPES:
            raise Unsupported(f"values of {it.name!r} of type {it.value_type}")
        return f"{c_name(it.name)}__values"

    def values_array(self, it: Item) -> str:
        array, parts = f"{self.values_table(it)}", it.domain[1:]
        self.emit(f"{C_TYPES[it.value_type]} {array}[{len(parts)}];")
        for position, part in enumerate(parts):
            self.compute(f"{array}[{position}]", part, it)
        return array

    def for_array(self, var: str, array: str, length: int, index: int) -> None:
        self.open_loop(f"for (int64_t {var}__i = 0; {var}__i < {length}; {var}__i++) {{", index)
        self.assign(var, f"{array}[{var}__i]")

    def for_range(self, var: str, lo: str, hi: str, index: int, step: str = "1", positive: bool = True) -> None:
        condition = f"{var} < {hi}" if positive else f"({step} > 0 ? {var} < {hi} : {var} > {hi})"
        self.open_loop(f"for ({var} = {lo}; {condition}; {var + '++' if step == '1' else f'{var} += {step}'}) {{",
                       index)

    DIVISORS, DIVISORS_LIMIT, GCD = "bg_divisors", "BG_DIVISORS_LIMIT", "bg_gcd"

    def divisor_cache(self, cache: str, index: int) -> list[str]:
        return [f"    int64_t {cache}div[BG_DIVISORS_MAX], {cache}ndiv = 0, {cache}of = 0;"
                f"  // the divisors of __of (loop {index})"]

    INT_DIVIDE = "/"

    # -- a solved level's expressions -----------------------------------------------------------
    def solution_parts(self, level) -> tuple[str, str]:
        """The solution's numerator and denominator, in variables of their own."""
        it, solution = level.iterator, level.solved
        for part in (solution.numerator, solution.denominator):
            if infer_type(part, self.items) not in ("int", "bool"):
                raise Unsupported(f"the solution for {it.name!r} is not an integer")
        numerator, denominator = (f"{c_name(it.name)}__{part}" for part in ("num", "den"))
        self.declare([numerator, denominator])
        self.compute(numerator, solution.numerator, solution.filter)
        self.compute(denominator, solution.denominator, solution.filter)
        return numerator, denominator

    def remainder_nonzero(self, numerator: str, denominator: str) -> str:
        return f"bg_mod_nz({numerator}, {denominator}) != 0"

    def quotient_edge(self, numerator: str, denominator: str) -> None:
        """None: bg_floordiv_nz wraps -2**63 / -1 to -2**63, in a level's range only where the
        plan's interval check refused the product (``-1 * -2**63`` passes 64 bits)."""
        return None

    QUOTIENT_NOTE = "the denominator: proven never zero"

    def exact_quotient(self, numerator: str, denominator: str) -> str:
        return f"bg_floordiv_nz({numerator}, {denominator})"

    def negation(self, test: str) -> str:
        return f"!({test})"

    def in_unit_range(self, value: str, lo: str, hi: str) -> str:
        return f"{lo} <= {value} && {value} < {hi}"

    def in_wide_range(self, value: str, lo: str, hi: str, step: str) -> str:
        return (f"({step} > 0 && {lo} <= {value} && {value} < {hi} && ((uint64_t){value} - (uint64_t){lo}) "
                f"% (uint64_t){step} == 0) || ({step} < 0 && {hi} < {value} && {value} <= {lo} && "
                f"((uint64_t){lo} - (uint64_t){value}) % (0 - (uint64_t){step}) == 0)")

    def in_range(self, value: str, lo: str, hi: str, step: str) -> str:
        return (f"(({step} > 0 && {lo} <= {value} && {value} < {hi}) || ({step} < 0 && {hi} < {value} "
                f"&& {value} <= {lo})) && bg_mod({value} - {lo}, {step}) == 0")

    # -- a derived value or filter ----------------------------------------------------------------
    def computes(self, item: Item) -> bool:
        """Derived values and filters (not bound terms), but not a derived value read by bound
        terms alone that cannot raise."""
        if item.kind == "bound":
            return False
        if item.function is not None:
            raise Unsupported(f"{item.kind} {item.name!r} is a space function")
        return item.kind != "derived" or item.name in self.needed
