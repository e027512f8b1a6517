"""The plan walker, target-neutral: one walk of a :class:`~beastgen.compiler.plan.Plan`'s loop nest
(each level's loop opened or solved, its items placed, the split node marked), the algorithm
written once in a small statement vocabulary that every target's builder (:mod:`.numba.builder`,
:mod:`.c.builder`) prints, as loopy's ``ASTBuilderBase`` and sympy's ``CodePrinter`` family do. The
facts about the plan it reads are :mod:`.facts`'; the guards where Python raises, :mod:`.guards`'.
"""
from __future__ import annotations

from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..plan import Plan
from ..specialize import Item
from .facts import (CARRY, Narrowing, constant_values, countable_tail, divides_next, divisor_narrowing,
                    is_constant, split_level)
from .monotone import loop_ending_filters


class NestWalker:
    """One walk of the plan's nest: the walker holds the algorithm, each target (a subclass:
    :class:`.numba.builder.NumbaNest`, :class:`.c.builder.CNest`) prints it. The algorithm, written
    once here: a level opened (:meth:`open_level`: :meth:`values_loop`, :meth:`range_parts` then
    :meth:`range_loop`, :meth:`counted_range`, :meth:`solved_level` or :meth:`divisor_loop` with
    its :meth:`partner_bounds` and :meth:`divisibility`), its items placed (:meth:`place`:
    :meth:`place_derived`, :meth:`place_filter`, each :meth:`value` after its guards), the count
    carried (:meth:`carry`), a chunk's split nodes gated (:meth:`chunk_start`, :meth:`chunk_gate`),
    the leaf counted (:meth:`leaf`) and the function ended (:meth:`finish`); and the two walks
    every target's functions make: the whole nest (:meth:`walk_nest`) and the levels above the
    split (:meth:`walk_split_nodes`). It is written in a small statement vocabulary that each
    target prints (:meth:`statement`, :meth:`assign`, :meth:`initialize`, :meth:`declare`,
    :meth:`declare_levels`, :meth:`define_flag`, :meth:`if_`, :meth:`else_`, :meth:`end`,
    :meth:`if_then`, :meth:`for_range`, :meth:`for_array`, :meth:`for_trips`, :meth:`break_`,
    :meth:`skip`, :meth:`leave`, :meth:`return_`, :meth:`comment`) over expressions it prints
    (:meth:`expression`: a space expression's guards and source, :meth:`all_of`, :meth:`choose`,
    :meth:`in_range`, ...). A target still writes the few forms that are its own: Numba's
    space-function calls (:meth:`call`, :meth:`function_range`) and bound terms, C's declarations.

    A generated function (a subclass of the target) gives what it does at a level it enters
    (:meth:`enter`), at the split node (:meth:`at_split`), before the walk (:meth:`prologue`) and
    at its leaf (:meth:`leaf`). Lines are indented by :attr:`depth`; :attr:`loops` counts the
    loops open (a rejection outside every loop leaves the function). ``ENDS_LOOPS``: a filter that
    rejects every later value of its level once it rejects one (:mod:`.monotone`) leaves the loop
    (:meth:`ends_loop`); a function that reports every loop iteration keeps walking.
    ``DIVISOR_LOOPS``: a level whose values must divide the next level's numerator
    (:func:`.facts.divides_next`) visits only its divisors (:meth:`divisor_loop`)."""

    ENDS_LOOPS = False
    DIVISOR_LOOPS = False
    #: whether :meth:`count_skipped` counts the values a divisor loop skips (the statistics)
    COUNTS_SKIPPED = False
    #: a count: at the top of each level above the innermost walked one (:attr:`carry_levels`), the
    #: count so far above 2**62 moves to the high word (``_high``, units of 2**62): a closed form
    #: that a compiler gives an inner loop adds less than 2**63 (a range's length, proven inside 64
    #: bits, or a counted range's chunk), and the outer loops never add up in one word, so a count of
    #: any size is exact (:func:`~beastgen.compiler.runtime.core.exact_count` joins the words)
    CARRIES = False
    carry_levels = 0
    #: a chunk's walk: only the subtrees of split nodes ``_lo <= node < _hi`` (:meth:`chunk_gate`)
    CHUNKED = False
    #: a chunk's walk that goes on past its last split node (the statistics walk the levels above
    #: the split whole, so every chunk reports them alike)
    WALKS_PAST_CHUNK = False
    #: :meth:`walk_nest` counts the countable tail (:func:`.facts.countable_tail`) instead of walking it
    COUNTS_TAIL = False
    #: what the function returns when it leaves outside every loop (:meth:`leave`)
    RESULT = "_n"

    def __init__(self, plan: Plan, symbolic: SymbolicContext, ending: dict[str, str] | None = None):
        """``ending``: :func:`.monotone.loop_ending_filters`, when the caller has it (one analysis
        for all its functions)."""
        self.plan, self.symbolic = plan, symbolic
        self.items = plan.specialized.items
        if not self.ENDS_LOOPS:
            ending = {}
        self.ending = loop_ending_filters(plan, symbolic) if ending is None else ending
        self.lines: list[str] = []
        self.depth = 1
        self.loops = 0  # loops open where the next line goes
        self.levels_entered = 0  # levels whose iterator is bound where the next line goes
        self.split = split_level(plan)
        self.counted: list = []  # the countable tail, where :meth:`walk_nest` counts it

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def walk_nest(self) -> None:
        """The walk of the whole nest (the countable tail counted where ``COUNTS_TAIL``): its
        variables declared, the :meth:`prologue`, the levels with the split node marked, the
        :meth:`leaf`."""
        levels = self.plan.levels
        self.counted = countable_tail(levels) if self.COUNTS_TAIL else []
        walked = levels[:len(levels) - len(self.counted)]
        self.carry_levels = len(walked) - 1
        self.declare_levels(walked)
        self.prologue()
        self.walk(walked, self.split)
        self.leaf()

    def walk_split_nodes(self) -> None:
        """The walk of the levels above the split alone, counting the split nodes (the valid
        prefixes of ``SPLIT_LEVEL`` levels)."""
        levels = self.plan.levels[:self.split]
        self.declare_levels(levels)
        self.initialize([("_n", "0")])
        self.walk(levels, 0)
        self.leaf()

    def prologue(self) -> None:
        """Before the walk: the count, and a chunk's split-node gate (:meth:`chunk_start`)."""
        self.initialize([("_n", "0")])
        if self.CHUNKED:
            self.chunk_start()

    def chunk_start(self) -> None:
        """A chunk's walk starts: at split level 0 the root is the only split node, in the chunk
        or not; else the split nodes seen are counted."""
        if self.split == 0:
            self.if_then(self.any_of(["_lo > 0", "_hi < 1"]), self.leave(),
                         "the only split node is the root (SPLIT_LEVEL 0)")
        else:
            self.initialize([("_node", "0")], "split nodes seen (chunks: see SPLIT_LEVEL)")

    def at_split(self) -> None:
        """Right below the split level: what a function does at a split node (a chunk's walk:
        :meth:`chunk_gate`)."""
        if self.CHUNKED:
            self.chunk_gate()

    def chunk_gate(self) -> None:
        """Past the split level: go on only below this chunk's split nodes (every level above the
        split solved, no loop is open: the one node is this chunk's or not)."""
        self.comment("split node (SPLIT_LEVEL): run only the subtrees of split nodes _lo <= _node - 1 < _hi")
        self.assign("_node", "1", operator="+=")
        self.if_then("_node <= _lo", self.skip())
        self.if_then("_node > _hi", self.skip() if self.WALKS_PAST_CHUNK else self.leave())

    def walk(self, levels, split: int) -> None:
        """Walk ``levels`` (the outermost first), marking the split node below level ``split - 1``."""
        for index, level in enumerate(levels):
            self.walk_level(level, index)
            if index == split - 1:
                self.at_split()

    def walk_level(self, level, index: int) -> None:
        """Open the level's loop (or solve it), then place its items in order."""
        self.open_level(level, index)
        for item in level.body:
            self.place(item)

    def open_level(self, level, index: int) -> None:
        it = level.iterator
        self.loop_comment(it, index)
        if it.function is not None and it.function.form != "range":
            self.function_loop(it, index)
        elif it.function is None and it.domain[0] == "values":
            self.values_loop(it, index)
        else:
            lo, hi, step = self.range_parts(it)
            if self.divisor_loops(index):
                self.divisor_loop(level, index, lo, hi)
            elif level.solved:
                self.solved_level(level, index, lo, hi, step)
            elif not self.plan.range_fits(it):
                self.counted_range(it, index, lo, hi, step)
            else:
                self.range_loop(it, index, lo, hi, step)

    def divisor_loops(self, index: int) -> bool:
        """Whether level ``index`` opens as :meth:`divisor_loop`: where :func:`.facts.divides_next` says it
        may and ``DIVISOR_LOOPS`` (a function that reports every loop iteration keeps scanning)."""
        return self.DIVISOR_LOOPS and divides_next(self.plan, index)

    def place(self, item: Item) -> None:
        """A derived value, filter or bound term, computed (and tested) where the plan put it, after
        its comment; nothing where the function does not compute it (:meth:`computes`)."""
        if self.computes(item):
            self.comment(self.describe(item))
            getattr(self, f"place_{item.kind}")(item)

    def computes(self, item: Item) -> bool:
        """Whether the function computes ``item`` (a target refuses what it cannot compute)."""
        return True

    def place_derived(self, item: Item) -> None:
        if item.function is not None:
            self.call(item, self.var(item.name))
        else:
            self.compute(self.var(item.name), item.expr, item)

    def place_filter(self, item: Item) -> None:
        """The filter's test (a space function's, or an expression's after its guards); where it
        rejects, the loop left when every later value is rejected too (:meth:`ends_loop`), else the
        configuration rejected."""
        if item.function is not None:
            test = self.var(f"{item.name}__rejects")
            self.call(item, test)
        else:
            test = self.value(item.expr, item)
        self.if_(test)
        iterator = self.ends_loop(item)
        if iterator:
            self.leaving(item, iterator)
            self.break_(f"every later {self.quote(iterator)} is rejected too: the test only turns true as it grows")
        else:
            self.reject(item)
        self.end()

    def leaving(self, item: Item, iterator: str) -> None:
        """Before ``item``, a filter ending its loop, leaves the loop of ``iterator`` (the
        statistics count the values it leaves)."""

    def open_loop(self, header: str, index: int | None) -> None:
        """Open a loop, level ``index``'s (entered at once; None: entered later)."""
        self.emit(header)
        self.depth += 1
        self.loops += 1
        if index is not None:
            self.enter(index)

    def enter(self, index: int) -> None:
        """Once level ``index``'s iterator is bound (a function's bookkeeping extends it)."""
        self.levels_entered = index + 1
        if self.CARRIES and index < self.carry_levels:
            self.carry()

    def carry(self) -> None:
        """The count's carry into its high word (see :attr:`CARRIES`)."""
        self.if_(self.unsigned_at_least("_n", CARRY), "the count's carry into its high word (units of 2**62)")
        self.assign(self.HIGH_WORD, self.unsigned_high_bits("_n", 62),
                    "_n as unsigned: a closed-form inner loop may pass 2**63", operator="+=")
        self.assign("_n", self.integer(CARRY - 1), operator="&=")
        self.end()

    def finish(self, result: str) -> None:
        """The function's end: every block closed, ``result`` returned."""
        self.close_blocks()
        self.return_(result)
        self.end_function()

    def close_blocks(self) -> None:
        while self.depth > 1:
            self.end()

    def leaf(self) -> None:
        """Below the innermost level walked: count the configuration reached, which stands for the
        product of the counted tail's domains (:attr:`counted`), and return the count."""
        names = ", ".join(level.iterator.name for level in self.counted)
        why = f"the innermost loops ({names}) test nothing: a prefix, which the runtime multiplies by their size"
        self.assign("_n", "1", why if self.counted else None, operator="+=")
        self.finish("_n")

    def ends_loop(self, item: Item) -> str | None:
        """The iterator whose loop ``item``, a filter, leaves when it rejects; None: it goes on."""
        return self.ending.get(item.name)

    # -- statements a target prints (the algorithms below are written once, with these) ---------
    def statement(self, text: str, why: str | None = None) -> None:
        """A simple statement (``text``, in the target's syntax), with the comment ``why`` as given
        (the caller quotes any user text in it with :meth:`quote`)."""
        raise NotImplementedError

    def assign(self, target: str, value: str, why: str | None = None, operator: str = "=") -> None:
        """``target = value`` (or ``operator``, an augmented assignment such as ``+=``)."""
        self.statement(f"{target} {operator} {value}", why)

    def if_(self, test: str, why: str | None = None) -> None:
        """Open a block run where ``test`` holds (closed by :meth:`end`)."""
        raise NotImplementedError

    def end(self) -> None:
        """Close the innermost block."""
        raise NotImplementedError

    def if_then(self, test: str, text: str, why: str | None = None) -> None:
        """One simple statement ``text`` (:meth:`statement`'s) run where ``test`` holds."""
        raise NotImplementedError

    def break_(self, why: str | None = None) -> None:
        self.statement("break", why)

    def skip(self) -> str:
        """The statement that goes on with the next value of the innermost loop, or outside every
        loop leaves the function (:meth:`leave`)."""
        return "continue" if self.loops else self.leave()

    def leave(self) -> str:
        """The statement that leaves the function outside every loop: returns :attr:`RESULT`."""
        return f"return {self.RESULT}"

    def reject(self, item: Item | None) -> None:
        """Reject the configuration, ``item``'s rejection (a function counting rejections
        extends it)."""
        self.statement(self.skip())

    def return_(self, value: str) -> None:
        self.statement(f"return {value}")

    def else_(self) -> None:
        """Close an :meth:`if_` block and open the one run where its test fails."""
        raise NotImplementedError

    def initialize(self, pairs: list[tuple[str, str]], why: str | None = None) -> None:
        """New 64-bit integer variables, each ``(name, value)``."""
        raise NotImplementedError

    def initialize_choice(self, names: list[str], test: str, when_true: list[str], when_false: list[str]) -> None:
        """New 64-bit integer variables ``names``, set to ``when_true`` where ``test`` holds, else
        to ``when_false``."""
        raise NotImplementedError

    def assign_each(self, pairs: list[tuple[str, str]], why: str | None = None) -> None:
        """``name = value`` for each ``(name, value)`` (no value reads a name among them)."""
        raise NotImplementedError

    # -- expressions a target prints ---------------------------------------------------------
    def all_of(self, tests: list[str]) -> str:
        raise NotImplementedError

    def any_of(self, tests: list[str]) -> str:
        raise NotImplementedError

    def not_(self, name: str) -> str:
        """The negation of a variable (a :meth:`negation` of a test parenthesises it)."""
        raise NotImplementedError

    def between(self, lo: str, value: str, hi: str) -> str:
        """``lo <= value <= hi``."""
        raise NotImplementedError

    def choose(self, test: str, when_true: str, when_false: str) -> str:
        raise NotImplementedError

    def max_(self, a: str, b: str) -> str:
        raise NotImplementedError

    def min_(self, a: str, b: str) -> str:
        raise NotImplementedError

    def int64(self, source: str) -> str:
        """``source`` as a 64-bit integer."""
        return source

    def for_trips(self, var: str, trips: int, why: str | None = None) -> None:
        """Open a loop (binding no level) of ``var`` over ``range(trips)``."""
        raise NotImplementedError

    def end_function(self) -> None:
        """Close the function (after its last return)."""

    #: the count's high word (units of 2**62) and the truth values as the target writes them
    HIGH_WORD = TRUE = FALSE = ""

    def integer(self, value: int) -> str:
        """A 64-bit integer literal."""
        raise NotImplementedError

    def unsigned_at_least(self, name: str, bound: int) -> str:
        """Whether 64-bit ``name``, read as unsigned, is at least ``bound``."""
        raise NotImplementedError

    def unsigned_high_bits(self, name: str, shift: int) -> str:
        """64-bit ``name``, read as unsigned, shifted right by ``shift``."""
        raise NotImplementedError

    def var(self, name: str) -> str:
        """The target's variable for a space name (or a name built on one: ``x__num``)."""
        raise NotImplementedError

    def quote(self, text: str) -> str:
        """User text (a name, a source) as it may stand in one of the target's comments."""
        raise NotImplementedError

    def comment(self, text: str) -> None:
        """A comment line (``text`` already quoted)."""
        raise NotImplementedError

    def declare(self, names: list[str]) -> None:
        """Declare 64-bit integer variables ``names`` (set later)."""
        raise NotImplementedError

    def declare_levels(self, levels) -> None:
        """Declare the variables of ``levels``' items, before the walk."""
        raise NotImplementedError

    def value(self, expr: L.Expr, item: Item | None) -> str:
        """The source of ``expr``, after its guards (:meth:`expression`), each rejecting (as
        ``item``'s) where Python raises: so nothing raises in the compiled expression."""
        tests, source = self.expression(expr, item)
        for test, why in tests:
            self.reject_if(test, item, why)
        return source

    def expression(self, expr: L.Expr, item: Item | None) -> tuple[list, str]:
        """The guards of ``expr`` (``(test, why)``, each test true where Python raises) and its
        source, in the target's syntax."""
        raise NotImplementedError

    def compute(self, target: str, expr: L.Expr, item: Item | None) -> None:
        """``target = expr`` after the guards that reject (as ``item``'s) where Python raises."""
        self.assign(target, self.value(expr, item))

    def call(self, item: Item, target: str, fallback: str | None = None) -> None:
        """``target = `` the value of ``item``'s space function; where it raises, the configuration
        is rejected (or ``target = fallback``). A target without space functions refuses their items
        before."""
        raise NotImplementedError

    def define_flag(self, target: str, test: str) -> None:
        """A new truth value ``target``, set to ``test`` (source common to every target)."""
        raise NotImplementedError

    def loop_comment(self, it: Item, index: int) -> None:
        self.comment(f"loop {index}: iterator {self.quote(it.name)} ({self.quote(it.origin)}): "
                     f"{self.quote(it.source_text)}")

    def describe(self, item: Item) -> str:
        """An item's comment: its kind, name, place and source (a filter's: when it rejects)."""
        return (f"{item.kind} {self.quote(item.name)} ({self.quote(item.origin)}): "
                f"{'rejects when ' if item.kind == 'filter' else ''}{self.quote(item.source_text)}")

    def solved_comment(self, level) -> None:
        """The comment opening a solved level: its filter, solved for the level's iterator."""
        self.comment(f"{self.describe(level.solved.filter)}; solved for {self.quote(level.iterator.name)} "
                     "instead of looping")

    # -- a loop ----------------------------------------------------------------------------------
    def values_loop(self, it: Item, index: int) -> None:
        """A loop over listed values: constant ones from the module's table (strings by their
        index into it), others computed (after their guards) into an array first."""
        var, count = self.var(it.name), len(it.domain) - 1
        if not constant_values(it):
            self.for_array(var, self.values_array(it), count, index)
        elif it.value_type != "str":
            self.for_array(var, self.values_table(it), count, index)
        else:
            self.for_range(self.var(f"{it.name}__index"), "0", str(count), index)
            if self.HOLDS_STRINGS:
                self.assign(var, f"{self.values_table(it)}[{self.var(f'{it.name}__index')}]")

    #: whether the target holds a string iterator's value (else its index alone)
    HOLDS_STRINGS = True

    def values_table(self, it: Item) -> str:
        """The constant values of ``it`` (a table of the module's)."""
        raise NotImplementedError

    def values_array(self, it: Item) -> str:
        """The values of ``it``, computed (after their guards)."""
        raise NotImplementedError

    def for_array(self, var: str, array: str, length: int, index: int) -> None:
        """Open level ``index``'s loop: ``var`` over the ``length`` values of ``array``."""
        raise NotImplementedError

    def for_range(self, var: str, lo: str, hi: str, index: int | None, step: str = "1",
                  positive: bool = True) -> None:
        """Open level ``index``'s loop (see :meth:`open_loop`): ``var`` over ``range(lo, hi, step)``
        (a step not ``positive`` may be negative; never zero), proven inside 64 bits."""
        raise NotImplementedError

    def range_parts(self, it: Item) -> list[str]:
        """Source for start, stop and step, after their guards; a step not proven nonzero tested
        for zero (Python's ``range`` raises: rejected)."""
        if it.function is not None:
            parts, check = self.function_range(it), not it.unit_step
        else:
            check = not self.symbolic.provably_nonzero(it.domain[3])
            parts = [self.range_part(it, name, part, named=name == "step" and check)
                     for name, part in zip(("lo", "hi", "step"), it.domain[1:])]
        if check:
            self.reject_if(f"{parts[2]} == 0", it, "range() step zero")
        return parts

    def function_range(self, it: Item) -> list[str]:
        """Start, stop and step of the range a space function returns (step ``1`` where
        ``it.unit_step``)."""
        raise NotImplementedError

    def range_part(self, it: Item, name: str, expr: L.Expr, named: bool) -> str:
        """Source for part ``name`` (lo, hi, step) of ``it``'s range, after its guards; ``named``:
        in a variable ``<it>__<name>`` (tested after)."""
        raise NotImplementedError

    def range_loop(self, it: Item, index: int, lo: str, hi: str, step: str) -> None:
        self.for_range(self.var(it.name), lo, hi, index, step, self.step_positive(it))

    def step_positive(self, it: Item) -> bool:
        """Whether the step of ``it``'s range is proven positive."""
        if it.function is not None:
            return it.unit_step
        step = it.domain[3]
        return self.symbolic.provably_nonnegative(step) and self.symbolic.provably_nonzero(step)

    def counted_range(self, it: Item, index: int, lo: str, hi: str, step: str) -> None:
        """A range whose ``stop - start`` (or last value plus step) may pass 64 bits: its trips
        counted exactly, in chunks of at most 2**62 trips (up to 2**64 - 1 in all), so that a
        count's carry runs between them (a compiler closes an empty inner loop in one addition)."""
        chunk = self.counted_range_start(it, lo, hi, step)
        self.for_trips(chunk, 4, "chunks of at most 2**62 trips")
        if self.CARRIES:
            self.carry()
        self.chunk_loop(it, index, lo, hi, step, chunk)

    def counted_range_start(self, it: Item, lo: str, hi: str, step: str) -> str:
        """What the chunks of ``it``'s counted range read; returns the chunk's variable."""
        raise NotImplementedError

    def chunk_loop(self, it: Item, index: int, lo: str, hi: str, step: str, chunk: str) -> None:
        """Open level ``index``'s loop over the trips of chunk ``chunk`` of ``it``'s counted range."""
        raise NotImplementedError

    # -- a solved level --------------------------------------------------------------------------
    def solved_level(self, level, index: int, lo: str, hi: str, step: str) -> None:
        """The loop replaced by the only value its equality filter lets through: the numerator over
        the denominator (proven never zero) where it divides, rejected outside the level's domain."""
        it, solution = level.iterator, level.solved
        item, var = solution.filter, self.var(it.name)
        self.solved_comment(level)
        numerator, denominator = self.solution_parts(level)
        if denominator == "1":
            self.assign(var, numerator)
        else:
            self.reject_if(self.remainder_nonzero(numerator, denominator), item, "no integer solution")
            edge = self.quotient_edge(numerator, denominator)
            if edge and not self.symbolic.provably_nonnegative(solution.denominator):
                self.reject_if(edge, item, "the solution 2**63 lies outside every domain")
            self.assign(var, self.exact_quotient(numerator, denominator), self.QUOTIENT_NOTE)
        unit = it.unit_step if it.function is not None else is_constant(it.domain[3], 1)
        if unit:
            inside = self.in_unit_range(var, lo, hi)
        elif not self.plan.range_fits(it):  # stop - start may pass 64 bits
            inside = self.in_wide_range(var, lo, hi, step)
        else:
            inside = self.in_range(var, lo, hi, step)
        self.reject_if(self.negation(inside), item, f"outside the domain of {self.quote(it.name)}")
        self.enter(index)

    def solution_parts(self, level) -> tuple[str, str]:
        """The source of the solution's numerator and denominator (after their guards)."""
        raise NotImplementedError

    def remainder_nonzero(self, numerator: str, denominator: str) -> str:
        """Whether Python's ``numerator % denominator`` (the denominator never zero) is not 0."""
        raise NotImplementedError

    def quotient_edge(self, numerator: str, denominator: str) -> str | None:
        """Where the target's :meth:`exact_quotient` differs from Python's (the quotient 2**63, of
        ``-2**63 // -1``, outside every domain); None where it never lands in a domain."""
        raise NotImplementedError

    #: a comment on the solution's assignment
    QUOTIENT_NOTE = None

    def exact_quotient(self, numerator: str, denominator: str) -> str:
        """Python's ``numerator // denominator`` (the denominator never zero)."""
        raise NotImplementedError

    def negation(self, test: str) -> str:
        raise NotImplementedError

    def in_unit_range(self, value: str, lo: str, hi: str) -> str:
        """Whether ``value`` is in ``range(lo, hi)``."""
        raise NotImplementedError

    def in_wide_range(self, value: str, lo: str, hi: str, step: str) -> str:
        """Whether ``value`` is in ``range(lo, hi, step)``, whose ``stop - start`` may pass 64 bits."""
        raise NotImplementedError

    def in_range(self, value: str, lo: str, hi: str, step: str) -> str:
        """Whether ``value`` is in ``range(lo, hi, step)``, proven inside 64 bits."""
        raise NotImplementedError

    # -- divisor loops ---------------------------------------------------------------------------
    def divisor_loop(self, level, index: int, lo: str, hi: str) -> None:
        """``for it in range(lo, hi)`` visiting only the divisors of the next level's numerator when
        that is cheaper (found once per numerator, in a cache declared at the function's top: it
        rarely changes), else all; narrowed (:func:`.facts.divisor_narrowing`) to ``[__first, __last)`` by
        the solved iterator's range and to the multiples of ``__mul`` that divide ``__top`` by a
        filter (the numerator's own divisors then listed only where the statistics count the values
        skipped: :attr:`COUNTS_SKIPPED`)."""
        it, solution = level.iterator, self.plan.levels[index + 1].solved
        narrowing = divisor_narrowing(self.plan, index, self.symbolic)
        var = self.var(it.name)
        num, by_divisors, first, last, mul, size, k, end, i = (
            f"{var}__{part}" for part in ("num", "by_divisors", "first", "last", "mul", "size", "k", "end", "i"))
        lists_numerator = not narrowing.filter or self.COUNTS_SKIPPED
        for cache in [f"{var}__"] * lists_numerator + [f"{var}__top_"] * bool(narrowing.filter):
            self.lines[self.body_start:self.body_start] = self.divisor_cache(cache, index)
        self.comment(f"only divisors of the numerator pass the solved level below "
                     f"(filter {self.quote(solution.filter.name)})")
        for name, source in ((f"{var}__lo", lo), (f"{var}__hi", hi)):
            if source != name:
                self.assign(name, source)
        lo, hi = f"{var}__lo", f"{var}__hi"
        self.declare([num])
        # raises for every value alike: rejected
        self.assign(num, self.int64(self.value(solution.numerator, solution.filter)))
        if narrowing.partner:
            self.partner_bounds(level, index, narrowing.partner)
        self.if_(f"{num} < 0", "-n has the divisors of n (-2**63 stays negative)")
        self.assign(num, f"-{num}")
        self.end()
        span = f"({hi} - {lo})"
        tests = [f"{lo} >= 1", self.between("1", num, self.DIVISORS_LIMIT)]
        if not narrowing.filter:
            tests.append(f"({self.any_of([f'{num} == {var}__of', f'{span} >= 1024', f'{num} < {span} * {span}'])})")
        self.define_flag(by_divisors, self.all_of(tests))
        listed = f"{var}__top_div" if narrowing.filter else f"{var}__div"  # the values visited, over __mul
        self.initialize([(first, lo), (last, hi), (mul, "1"), (size, "0")])
        self.if_(by_divisors)
        if lists_numerator:
            self.list_divisors(f"{var}__", num)
            self.assign(size, f"{var}__ndiv")
        if narrowing.partner:
            partner = self.var(self.plan.levels[index + 1].iterator.name)
            self.if_(self.any_of([self.not_(f"{var}__positive"), f"{partner}__phi < 1"]))
            self.assign_each([(first, lo), (last, lo)], "no solution in its range")
            self.else_()
            self.assign(first, self.max_(lo, f"{num} {self.INT_DIVIDE} {partner}__phi + 1"))
            self.assign(last, self.min_(hi, f"{num} {self.INT_DIVIDE} {partner}__plo + 1"))
            self.end()
        self.count_skipped(level, index, narrowing, span)
        if narrowing.filter:
            self.divisibility(level, index, narrowing)
            self.count_skipped(level, index, narrowing, span, listed)
        self.end()
        self.initialize_choice([k, end], by_divisors, ["0", self.choose(f"{first} < {last}", size, "0")], [lo, hi])
        self.declare([i])
        self.for_range(i, k, end, None)
        self.assign(var, self.choose(by_divisors, f"{mul} * {listed}[{i}]", i))
        self.if_(f"{var} < {first}")
        self.statement("continue")
        self.end()
        self.if_(f"{var} >= {last}", "past the range: so are the larger divisors")
        self.break_()
        self.end()
        self.enter(index)

    def list_divisors(self, cache: str, number: str) -> None:
        """``<cache>div[:<cache>ndiv]``: the divisors of ``number``, found again only where it is
        not ``<cache>of``, the number they are of."""
        self.if_(f"{number} != {cache}of")
        self.assign(f"{cache}ndiv", f"{self.DIVISORS}({number}, {cache}div)")
        self.assign(f"{cache}of", number)
        self.end()

    def count_skipped(self, level, index: int, narrowing: Narrowing, span: str, listed: str | None = None) -> None:
        """The statistics' count of the values the divisor loop skips: those outside the window
        (the solved filter's rejections), or with ``listed``, those the narrowing filter rejects."""

    #: the divisor loop's names in the target: the function listing divisors, the largest number
    #: listed, the greatest common divisor of two 64-bit integers (as unsigned)
    DIVISORS = DIVISORS_LIMIT = GCD = ""

    def divisor_cache(self, cache: str, index: int) -> list[str]:
        """The lines (at the function's top) declaring ``<cache>div``, ``ndiv`` and ``of``."""
        raise NotImplementedError

    def partner_bounds(self, level, index: int, partner: tuple) -> None:
        """The solved iterator's range, computed once for the divisor loop (it cannot raise):
        ``<solved>__plo`` and ``__phi``, and whether the numerator is positive (``<it>__positive``)."""
        solved = self.plan.levels[index + 1]
        name, var = self.var(solved.iterator.name), self.var(level.iterator.name)
        self.comment(f"filter {self.quote(solved.solved.filter.name)} also rejects a solution outside "
                     f"{self.quote(solved.iterator.name)}'s range [__plo, __phi) (__plo >= 1 proven): "
                     f"only num // __phi < {self.quote(level.iterator.name)} <= num // __plo pass")
        self.declare([f"{name}__plo", f"{name}__phi"])
        for part, expr in zip(("plo", "phi"), partner):
            self.compute(f"{name}__{part}", expr, solved.iterator)
        self.define_flag(f"{var}__positive", f"{var}__num > 0")

    #: integer division as the target writes it (in the divisibility comment)
    INT_DIVIDE = "//"

    def divisibility(self, level, index: int, narrowing: Narrowing) -> None:
        """``__top`` and ``__mul``: the values that pass the filter's divisibility tests are the
        multiples of ``__mul`` dividing the numerator, ``__mul * d`` for the divisors d of ``__top``
        (0: none): ``d`` divides ``gcd(n, X / c, ...)`` (into ``__top``) and the solution divides
        ``gcd(n, Y / c, ...)`` (into ``__whole``); a ``c`` that does not divide its X or Y sets
        ``__none``; ``__top_div[:__size]``, the divisors of ``__top``."""
        var = self.var(level.iterator.name)
        name, solved = self.quote(level.iterator.name), self.quote(self.plan.levels[index + 1].iterator.name)
        divide = self.INT_DIVIDE
        self.comment(f"filter {self.quote(narrowing.filter.name)} rejects unless {name} divides gcd(n, X {divide} c) "
                     f"for each X % ({name} * c) != 0 it tests, and n {divide} {name} (= {solved}) divides "
                     f"gcd(n, Y {divide} c) for each Y % ({solved} * c) != 0")
        self.initialize([(f"{var}__top", f"{var}__num"), (f"{var}__whole", f"{var}__num"), (f"{var}__none", self.FALSE)])
        pairs = [("top", pair) for pair in narrowing.divides] + [("whole", pair) for pair in narrowing.divided_by]
        for position, (target, (dividend, factor)) in enumerate(pairs):
            part = f"{var}__x{position}"
            self.declare([part])
            self.compute(part, dividend, narrowing.filter)
            if factor is not None:
                self.declare([f"{part}__c"])
                self.compute(f"{part}__c", factor, narrowing.filter)
                self.if_(self.remainder_nonzero(part, f"{part}__c"))
                self.assign(f"{var}__none", self.TRUE)
                self.else_()
                self.assign(part, f"{part}__c", "c >= 1 proven: no overflow", operator=f"{divide}=")
                self.end()
            self.assign(f"{var}__{target}", f"{self.GCD}({var}__{target}, {part})")
        self.assign(f"{var}__mul", f"{var}__num {divide} {var}__whole",
                    f"the solution divides __whole: {name} is a multiple of this")
        self.assign(f"{var}__top", self.choose(self.all_of([self.not_(f"{var}__none"), f"{var}__top % {var}__mul == 0"]),
                                               f"{var}__top {divide} {var}__mul", "0"))
        self.list_divisors(f"{var}__top_", f"{var}__top")
        self.assign(f"{var}__size", f"{var}__top_ndiv")

    def reject_if(self, test: str, item: Item | None, why: str) -> None:
        self.if_(test, why)
        self.reject(item)
        self.end()
