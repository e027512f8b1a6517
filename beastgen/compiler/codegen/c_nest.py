"""The C target: the plan walker's statements and expressions (:mod:`.nest`) printed as C, for a shared
library that :mod:`beastgen.compiler.native` compiles with the system C compiler and loads with
ctypes. A warm count then imports neither Numba nor LLVM, and a cold one compiles in a fraction of
Numba's time. The Numba module stays the full enumerator (every other function); this target covers
the plans whose items are all expressions over int, bool and float values, and listed strings
compared with constants (:class:`Unsupported` otherwise): ``count`` and ``split_nodes``
(:class:`CCount`, :class:`CSplitNodes`), ``fill`` and ``count_claimed`` (:class:`CFill`,
:class:`CCountClaimed`).

Python's semantics are the semantics table's (:mod:`.c_expression`): where an operation raises in
Python, a guard tested before the expression rejects the configuration, as the Numba nest's do.
Integers are 64-bit and wrap (compiled with ``-fwrapv``), as in Numba.
"""
from __future__ import annotations

from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..plan import Plan
from ..specialize import Item, infer_type
from .c_expression import (C_TYPES, Unsupported, c_comment, c_expression, c_literal, c_name, c_source,
                           derived_sources, needed_items, value_tables)
from .monotone import loop_ending_filters
from .facts import CARRY, split_level
from .nest import NestWalker

__all__ = ["Unsupported", "c_comment", "generate_c_module", "record_layout"]


class CNest(NestWalker):
    """A C function of the plan's nest (the same loops, tests and split nodes as the Numba nest's,
    so chunks number the same split nodes)."""

    ENDS_LOOPS = True
    DIVISOR_LOOPS = True

    def __init__(self, plan: Plan, symbolic: SymbolicContext, ending: dict[str, str] | None = None,
                 derived: dict[str, tuple[list, str]] | None = None):
        """``derived``: :func:`.c_expression.derived_sources`, when the caller has them."""
        super().__init__(plan, symbolic, ending)
        # needed_items asks which derived values may raise; place_derived prints them
        self.derived = derived_sources(plan, symbolic) if derived is None else derived
        self.needed = needed_items(plan, lambda item: bool(self.derived[item.name][0]))

    def expression(self, expr: L.Expr) -> tuple[list, str]:
        """The guards of ``expr`` (``(test, why)``: where Python raises) and its C source."""
        return c_expression(expr, self.items, self.symbolic)

    def value(self, expr: L.Expr, item: Item | None) -> str:
        """... a derived value's from :func:`.c_expression.derived_sources`."""
        if item is not None and item.kind == "derived" and expr is item.expr:
            tests, source = self.derived[item.name]
        else:
            tests, source = self.expression(expr)
        self.guard(tests)
        return source

    def guard(self, tests: list) -> None:
        for test, why in tests:
            self.reject_if(test, None, why)

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
        """A table at file scope (:func:`.c_expression.value_tables`)."""
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


class CCount(CNest):
    """``count(_lo, _hi, _high)``: the valid configurations below split nodes ``_lo <= node < _hi``."""

    CARRIES = CHUNKED = COUNTS_TAIL = True

    def write(self) -> list[str]:
        self.lines = ["/* Number of valid configurations below split nodes _lo <= node < _hi: the result (as",
                      "   unsigned) plus *_high * 2**62. */",
                      "int64_t count(int64_t _lo, int64_t _hi, int64_t *_high) {"]
        self.walk_nest()
        return self.lines


class CSplitNodes(CNest):
    """``split_nodes()``: how many valid prefixes of ``SPLIT_LEVEL`` levels there are."""

    def write(self) -> list[str]:
        self.lines = ["/* How many split nodes (valid prefixes of SPLIT_LEVEL levels) there are. */",
                      "int64_t split_nodes(void) {"]
        self.walk_split_nodes()
        return self.lines


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


class CClaimingWriter(CNest):
    """A nest that threads share by claiming split nodes one at a time from a shared counter
    (atomically, in increasing order: uneven nodes balance themselves), walking the subtrees of the
    nodes they claim. ``RECORD``: it writes rows (``fill``); ``ROWS_BEFORE``, the rows written
    before it starts; ``REDO``, the node it claims first where one is to be redone."""

    RECORD = False
    ROWS_BEFORE = "0"
    REDO = ""

    def leave(self) -> str:
        return "goto _done"

    def prologue(self) -> None:
        """The first claim."""
        done = "1" if self.RECORD else "0"
        self.initialize([("_n", self.ROWS_BEFORE)], "configurations so far")
        self.emit("int64_t _start = _n;  // ... before the claimed node")
        self.emit(f"int64_t _claim = {self.REDO}__atomic_fetch_add(_next, 1, __ATOMIC_RELAXED);")
        self.emit("int64_t _node = 0;  // split nodes seen")
        if self.RECORD:
            self.emit("unsigned char *_row;")
        self.emit(f"if (_claim >= _hi) return {done};")
        if self.split == 0:
            self.emit(f"if (_claim > 0) return {done};  // the only split node is the root")
            self.emit("_node = 1;")

    def finish(self, result: str) -> None:
        """... with the label a rejection outside every loop jumps to (``goto _done``) before the
        return, and the last node claimed recorded."""
        self.close_blocks()
        self.lines.append("_done:")
        if self.RECORD:
            self.emit("if (_claim < _node) {  // the last node claimed was walked")
            self._record_node()
            self.emit("}")
        self.return_(result)
        self.end_function()

    def _record_node(self) -> None:
        self.emit("    _node_rows[_claim - _lo] = _n - _start;")
        self.emit("    _node_owner[_claim - _lo] = _thread;")

    def at_split(self) -> None:
        """Past the split level: once the claimed node is walked (recorded), claim the next; skip
        the nodes before it."""
        self.emit("// split node (SPLIT_LEVEL): walk the subtree of the node claimed, skip the others")
        self.emit("_node += 1;")
        self.emit("if (_node - 1 > _claim) {  // the claimed node is done: claim the next")
        if self.RECORD:
            self._record_node()
            self.emit("    _start = _n;")
        self.emit("    _claim = __atomic_fetch_add(_next, 1, __ATOMIC_RELAXED);")
        self.emit(f"    if (_claim >= _hi) return {'1' if self.RECORD else '_n'};")
        self.emit("}")
        self.if_then("_node - 1 < _claim", self.skip())


class CFill(CClaimingWriter):
    """``fill``: each valid configuration of the claimed nodes as a row (the countable tail
    iterated too)."""

    RECORD = True
    ROWS_BEFORE = "_state[1]"
    REDO = "_state[0] >= 0 ? _state[0] : "
    SIGNATURE = ("int64_t fill(int64_t *_next, int64_t _lo, int64_t _hi, int64_t *_state, unsigned char *_rows, "
                 "int64_t _capacity, int64_t *_node_rows, int64_t *_node_owner, int64_t _thread)")

    def write(self) -> list[str]:
        self.lines = [
            "/* Every valid configuration below split nodes _lo <= node < _hi, as rows of _rows (fields in",
            "   declaration order, packed: int64, bool as one byte, double). The thread claims split nodes",
            "   from *_next and writes the rows of each node it claims after the previous one's;",
            "   _node_rows[node - _lo] gets their number and _node_owner[node - _lo] gets _thread. _state:",
            "   the node to redo first (-1: claim one) and the rows already written. Returns 1 when no node",
            "   is left; 0 when _capacity rows are not enough, with _state set to redo the node in progress",
            "   (into a larger buffer holding the rows so far). */",
            f"{self.SIGNATURE} {{"]
        self.walk_nest()
        return self.lines

    def leaf(self) -> None:
        """The configuration as the next row."""
        layout = record_layout(self.plan)
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
        self.assign("_n", "1", operator="+=")
        self.finish("1")


class CCountClaimed(CClaimingWriter):
    """``count_claimed``: the valid configurations of the claimed nodes."""

    SIGNATURE = "int64_t count_claimed(int64_t *_next, int64_t _lo, int64_t _hi, int64_t *_high)"
    CARRIES = COUNTS_TAIL = True

    def write(self) -> list[str]:
        self.lines = ["/* Valid configurations below the split nodes _lo <= node < _hi this thread claims from",
                      "   *_next (see fill): the result (as unsigned) plus *_high * 2**62. */",
                      f"{self.SIGNATURE} {{"]
        self.walk_nest()
        return self.lines


#: the library's functions in their order in the module, and who writes each
C_FUNCTIONS = {"count": CCount, "split_nodes": CSplitNodes, "fill": CFill, "count_claimed": CCountClaimed}


def generate_c_module(plan: Plan, symbolic: SymbolicContext | None = None,
                      functions=tuple(C_FUNCTIONS)) -> str:
    """The C source of the plan's ``functions`` (of :data:`C_FUNCTIONS`: by default all of count,
    split_nodes, fill and count_claimed); raises :class:`Unsupported`."""
    spec = plan.specialized
    symbolic = symbolic or SymbolicContext(spec.items)
    header = [f"// beastgen C target of space {c_comment(spec.space.name)} on {c_comment(spec.device.key)}: "
              "do not edit.",
              f"// loop order: {', '.join(c_comment(name) for name in plan.order)}",
              f"// SPLIT_LEVEL = {split_level(plan)}",
              "// A filter REJECTS a configuration when it is true; so does a guard where Python raises.",
              ""]
    ending, derived = loop_ending_filters(plan, symbolic), derived_sources(plan, symbolic)
    parts = ["\n".join(C_FUNCTIONS[name](plan, symbolic, ending, derived).write())
             for name in C_FUNCTIONS if name in functions]
    tables = value_tables(plan)
    return "\n".join(header + [c_source("prelude.h"), c_source("divisors.h")] + tables
                     + [""] * bool(tables) + ["\n\n".join(parts)]) + "\n"
