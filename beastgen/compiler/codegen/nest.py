"""The nest writer: a :class:`~beastgen.compiler.plan.Plan`'s loop nest printed as a Numba function.
Its modes share one shape: ``count``, ``count_with_stats`` and ``fill``, the ``census`` of split
nodes, the ``probe`` estimator and, with bounds, ``count_pruned``, ``cut_analysis`` and ``rank``.
"""
from __future__ import annotations

import math

from ...errors import SpaceError
from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..language.identity import IdentityMapper
from ..language.mapper import Mapper
from ..language.printer import PRECEDENCE, expr_source, wrap
from ..plan import Plan, domain_size
from ...quoting import comment_text
from ..specialize import Item, infer_type

_NONZERO_SAFE = ("/", "//", "%")
NJIT = "@numba.njit(cache=True, error_model='python', nogil=True)"  # nogil: chunks run on threads
# Numba cannot lower a generator loaded from its disk cache into a new caller: generators are not cached
NJIT_GENERATOR = "@numba.njit(error_model='python')"
CASTS = {"int": int, "float": float}  # values iterators: bools among ints, ints among floats
_CHUNKED = ("count", "stats", "fill")  # nests that take a chunk of split nodes (_lo, _hi)
#: nests whose levels past this many loops go on in a function of their own where Python would not
#: compile them whole (at most 20 nested blocks, loops and try, in one function)
_PARTED = ("count", "stats", "fill", "pruned", "analysis", "rank")
_LOOPS_PER_FUNCTION = 14


# --------------------------------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------------------------------
def risky_nodes(expr: L.Expr, nonzero, conditional: bool = False):
    """(node, conditional) for every division/modulo/power that may raise, innermost first;
    ``nonzero(divisor)`` says when a divisor is proven never zero (no guard needed)."""
    return RiskyNodes(nonzero)(expr, conditional)


class RiskyNodes(Mapper):
    """The walk of :func:`risky_nodes`: ``conditional`` is true under a short-circuit operand or an
    if-else branch, where an operation may not run at all."""

    def __init__(self, nonzero):
        self.nonzero = nonzero

    def _children(self, expr: L.Expr, conditional: bool, branches: bool = False):
        for index, child in enumerate(expr.children()):
            yield from self(child, conditional or (branches and index > 0))

    def map_Expr(self, expr: L.Expr, conditional: bool):
        yield from self._children(expr, conditional)

    def map_IfExp(self, expr: L.IfExp, conditional: bool):
        yield from self._children(expr, conditional, branches=True)

    map_BoolOp = map_IfExp

    def map_BinOp(self, expr: L.BinOp, conditional: bool):
        yield from self._children(expr, conditional)
        if expr.op in _NONZERO_SAFE and not self.nonzero(expr.right):
            yield expr, conditional
        elif expr.op == "**" and not isinstance(expr.right, L.Const):
            yield expr, True  # 0 ** -1 and friends: left to try/except

    def map_Call(self, expr: L.Call, conditional: bool):
        yield from self._children(expr, conditional)
        if expr.func == "float_power":
            yield expr, True  # raises where Python does not give a float


class PythonPowers(IdentityMapper):
    """The expression with each float ``**`` that compiled code could compute unlike Python replaced
    by ``float_power`` (nestlib), which raises where Python does not give a float: ``0.0 ** -1``
    (ZeroDivisionError in Python, inf compiled) and a negative base with a fractional exponent
    (a complex number in Python, nan compiled). Either rejects the configuration."""

    def __init__(self, items: dict, symbolic: SymbolicContext):
        self.items, self.symbolic = items, symbolic

    def map_BinOp(self, expr: L.BinOp) -> L.Expr:
        rebuilt = super().map_BinOp(expr)
        if expr.op == "**" and not self._float_power_agrees(rebuilt.left, rebuilt.right) \
                and infer_type(expr, self.items) != "int":
            return L.Call("float_power", [rebuilt.left, rebuilt.right])
        return rebuilt

    def _float_power_agrees(self, base: L.Expr, exponent: L.Expr) -> bool:
        """Whether ``base ** exponent`` is a float (or raises) alike in Python and compiled code."""
        if isinstance(exponent, L.Const) and isinstance(exponent.value, (int, float)) \
                and exponent.value >= 0 and float(exponent.value).is_integer():
            return True  # a whole, nonnegative exponent: any base
        if not self.symbolic.provably_nonnegative(base):
            return False
        return self.symbolic.provably_nonnegative(exponent) or self.symbolic.provably_nonzero(base)


def constant_values(item: Item) -> bool:
    return all(isinstance(p, L.Const) for p in item.domain[1:])


def counted_tail_size(levels) -> int:
    """The configurations each prefix that the generated count reaches stands for: the product of
    the :func:`countable_tail` domains. The count functions count prefixes (at most one per loop
    iteration, far below 2**63); the runtime multiplies in Python's exact integers."""
    return math.prod(domain_size(level.iterator) for level in countable_tail(levels))


def countable_tail(levels) -> list:
    """The innermost levels that test nothing and whose domains are constant: only their sizes matter."""
    tail = []
    for level in reversed(levels):
        if level.body or level.solved or not _constant_domain(level):
            break
        tail.insert(0, level)
    return tail if len(tail) < len(levels) else tail[1:]


#: raw (unfiltered) prefix size the split level aims for; a domain that is not constant counts as this
_SPLIT_TARGET = 4096
_UNKNOWN_DOMAIN = 16


def split_level(plan: Plan) -> int:
    """How many outer levels every chunk walks: the split nodes (chunks of the work for
    :mod:`beastgen.distributed`) are the valid prefixes of that depth. The shallowest depth whose raw
    prefix size reaches ``_SPLIT_TARGET``, among depths inside the iterated nest (not the counted tail)
    whose next level is scanned (not solved): the census probes below it."""
    levels = plan.levels
    iterated = len(levels) - len(countable_tail(levels))
    allowed = [k for k in range(1, iterated) if not levels[k].solved]
    for k in allowed:
        raw = math.prod(domain_size(l.iterator) if _constant_domain(l) else _UNKNOWN_DOMAIN
                        for l in levels[:k] if not l.solved)
        if raw >= _SPLIT_TARGET:
            return k
    return allowed[-1] if allowed else 0


def largest_scanned_domain(plan: Plan) -> tuple[Item, int] | None:
    """The iterator with the most values among the levels a random descent scans value by value
    (not solved, with a constant domain; the counted tail included) and its size; None when there
    is none."""
    scanned = [level.iterator for level in plan.levels if not level.solved and _constant_domain(level)]
    return max(((it, domain_size(it)) for it in scanned), key=lambda pair: pair[1], default=None)


def _constant_domain(level) -> bool:
    return level.iterator.function is None and constant_values(level.iterator)


def _solved_below(levels, index: int) -> list:
    """The solved levels right below level ``index`` (tested inside its scan when probing)."""
    below = []
    for level in levels[index + 1:]:
        if not level.solved:
            break
        below.append(level)
    return below


def _compiles(lines: list[str]) -> bool:
    """Whether Python compiles the function (it refuses more than 20 nested blocks)."""
    try:
        compile("\n".join(lines), "<nest>", "exec")
    except SyntaxError:
        return False
    return True


def stat_slots(plan: Plan) -> list[Item]:
    """Items with a counter in the statistics: every filter/bound (rejections), then everything that
    can raise (errors), in placement order."""
    return [item for level in plan.levels for item in level.items]


class NestWriter:
    def __init__(self, plan: Plan, mode: str, symbolic: SymbolicContext):
        self.plan, self.mode, self.symbolic = plan, mode, symbolic
        self.python_powers = PythonPowers(plan.specialized.items, symbolic)
        self.slot = {item.name: i for i, item in enumerate(stat_slots(plan))}
        self.lines: list[str] = []
        self.depth = 1
        self.temps = 0
        self.loops = 0  # loops open where the next line goes
        self.levels_entered = 0  # levels whose iterator is bound where the next line goes

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    _HEADERS = {
        "count": ("count(_lo, _hi)", "Number of valid configurations below split nodes _lo <= node < _hi."),
        "stats": ("count_with_stats(_visits, _rejections, _lo, _hi)",
                  "count(), also adding loop iterations per level to _visits and rejections (filters)\n"
                  "    or errors (division by zero...) per STAT_SLOTS to _rejections. The levels above\n"
                  "    SPLIT_LEVEL are walked whole whatever the chunk."),
        "nodes": ("split_nodes()",
                  "How many split nodes (valid prefixes of SPLIT_LEVEL levels) there are: a walk of\n"
                  "    the levels above the split alone, so a one-thread count can report its progress."),
        "census": ("census(_samples, _seed, _configurations, _iterations)",
                   "The split nodes (valid prefixes of SPLIT_LEVEL levels), in walk order: for each of\n"
                   "    the first len(_configurations), _samples Knuth descents below it estimate the valid\n"
                   "    configurations in its subtree and the loop iterations it takes to enumerate them\n"
                   "    (the work). Returns how many split nodes there are."),
        "pruned": ("count_pruned(_threshold)",
                   "Valid configurations whose bound is at most _threshold; each bound term cuts\n"
                   "    its whole subtree at the level where it is first computable."),
        "analysis": ("cut_analysis(_threshold, _visits, _skipped, _cuts, _removed)",
                     "Exhaustive walk that records where count_pruned() would cut: per level, the\n"
                     "    iterations (_visits) and those inside already-cut subtrees (_skipped), subtrees\n"
                     "    cut (_cuts), and valid configurations they held (_removed). Returns how many\n"
                     "    valid configurations have every bound term at most _threshold, tested only\n"
                     "    once the configuration is complete (no hoisting)."),
        "probe": ("probe(_samples, _seed)",
                  "Knuth's estimator: _samples random descents through the nest; at each level one\n"
                  "    value is chosen uniformly among those its filters let through, and a descent that\n"
                  "    reaches the innermost level estimates the count as the product of how many passed\n"
                  "    at each level (0 when none did). Returns the sum and sum of squares of the estimates."),
        "chen": ("chen(_runs, _seed)",
                 "Chen's heuristic sampling: _runs independent runs, each unbiased. A run keeps one\n"
                 "    representative and a weight per stratum (depth, passes of the next level: see\n"
                 "    beastgen's ChenWriter) and expands the strata depth by depth; a child joins its stratum's\n"
                 "    weight and replaces its representative with probability (its weight) / (the new\n"
                 "    weight); the run's estimate is the weight of the leaves it reached. Returns the sum\n"
                 "    and sum of squares of the runs' estimates."),
        "rank": ("rank(_threshold, _bounds, _terms, _rows)",
                 "The len(_bounds) valid configurations with the smallest bounds (at most _threshold),\n"
                 "    as a max-heap: branch and bound, cutting subtrees whose bound already exceeds the\n"
                 "    largest bound kept. Returns how many were kept."),
    }

    def write(self) -> list[str]:
        """The mode's function, then the parts its nest was split into (see :meth:`_start_part`)."""
        lines = self._write_parted(None)
        if self.mode in _PARTED and not _compiles(lines):  # too many nested blocks: in parts
            self.__init__(self.plan, self.mode, self.symbolic)
            lines = self._write_parted(_LOOPS_PER_FUNCTION)
        return lines

    def _write_parted(self, loops_per_function: int | None) -> list[str]:
        self.loops_per_function = loops_per_function
        self.parts: list[list[str]] = []  # the outer functions, finished
        self.top_return = "_size" if self.mode == "rank" else "_n"
        lines = self._write_function()
        for part in self.parts:
            lines += [""] + part
        return lines

    def _start_part(self, index: int) -> None:
        """Go on with levels ``index`` and below in a function of their own: Python allows 20
        nested blocks in one function. It takes what the outer levels bound and the mode's state,
        and answers what it added (``fill``: the next row; ``rank``: the heap's size and limit)."""
        computed = ("iterator", "derived") + (("bound",) if self.mode in ("pruned", "analysis", "rank") else ())
        bound = [name for level in self.plan.levels[:index] for item in level.items
                 if item.kind in computed for name in
                 ([item.name, f"{item.name}__index"] if item.value_type == "str" and item.kind == "iterator"
                  else [item.name])]
        columns = [f"_col_{level.iterator.name}" for level in self.plan.levels]
        state = {"count": [], "stats": ["_visits", "_rejections"], "fill": columns + ["_n"],
                 "pruned": ["_threshold", "_limit"], "rank": ["_threshold", "_bounds", "_terms", "_rows",
                                                             "_row", "_size", "_limit"],
                 "analysis": ["_threshold", "_visits", "_skipped", "_cuts", "_removed", f"_cut_{index}"]}
        name = f"{self.function_name}__part{len(self.parts) + 1}"
        call = f"{name}({', '.join(state[self.mode] + bound)})"
        self.emit({"fill": f"_n = {call}", "rank": f"_size, _limit = {call}"}.get(self.mode, f"_n += {call}")
                  + "  # the levels below, in a function of their own (nested blocks)")
        self.parts.insert(0, [*self.lines, f"    return {self.top_return}"])
        self.lines = [NJIT, f"def {call}:", f'    """Levels {index} and below of {self.function_name}."""']
        self.depth, self.loops = 1, 0
        if self.mode not in ("fill", "rank"):
            self.emit("_n = 0")
        if self.mode == "rank":
            self.top_return = "_size, _limit"

    def _write_function(self) -> list[str]:
        iterators = [level.iterator for level in self.plan.levels]
        spec = self.plan.specialized
        if self.mode == "fill":
            cols = ", ".join(f"_col_{it.name}" for it in iterators)
            header = [f"def fill({cols}, _lo, _hi):",
                      '    """Write every valid configuration below split nodes _lo <= node < _hi into the\n'
                      '    columns (string values as indices)."""']
        else:
            signature, doc = self._HEADERS[self.mode]
            header = [f"def {signature}:", f'    """{doc}"""']
        self.lines = [NJIT, *header]
        self.function_name = header[0][4:].split("(")[0]
        split = split_level(self.plan)
        if self.mode == "nodes":
            return self._write_split_nodes(split)
        if self.mode != "census":
            self.emit("_size = 0" if self.mode == "rank" else "_n = 0")
        if self.mode in _CHUNKED and split == 0:
            self.emit("if _lo > 0 or _hi < 1:  # the only split node is the root (SPLIT_LEVEL 0)")
            self.emit("    return _n")
        elif self.mode in _CHUNKED:
            self.emit("_node = 0  # split nodes seen (chunks: see SPLIT_LEVEL)")
        if self.mode == "census":
            self.emit("np.random.seed(_seed)")
            self.emit("_node = 0")
            if split == 0:
                self._census_node()
        constant_bounds = [b for b in spec.bound_terms if b in spec.constants]
        if self.mode in ("pruned", "rank"):
            self.emit("_limit = _threshold")
            if constant_bounds:
                self.emit(f"if max({', '.join(constant_bounds + ['0.0'])}) > _limit:  # constant bound terms")
                self.emit("    return 0")
        if self.mode == "rank":
            self.emit(f"_row = np.empty({len(iterators)})")
        if self.mode == "analysis":
            self.emit(f"_cut_0 = 0 if max({', '.join(constant_bounds + ['0.0'])}) > _threshold else -1"
                      "  # level of the first cut")
        if self.mode == "probe":
            self.emit("np.random.seed(_seed)")
            self.emit("_total = 0.0")
            self.emit("_total_sq = 0.0")
            self._open_descents()
        levels = self.plan.levels
        counted = countable_tail(levels) if self.mode in ("count", "pruned") else []
        scanned = False  # probing: a level was scanned, so the solved levels below it were tested
        for index, level in enumerate(levels[:len(levels) - len(counted)]):
            if self.mode == "probe" or (self.mode == "census" and index >= split):
                if not level.solved:
                    self._probe_level(level, index, _solved_below(levels, index))
                    scanned = True
                    continue
                if scanned:
                    continue  # a solved level was tested inside its parent's scan
            if self.loops_per_function and self.loops >= self.loops_per_function and index >= split \
                    and not level.solved:
                self._start_part(index)
            self._loop(level, index)
            for item in level.body:
                self._item(item)
            if index == split - 1 and self.mode in _CHUNKED:
                self._split_gate()
            elif index == split - 1 and self.mode == "census":
                self._census_node()
        if counted:
            self.emit(f"_n += 1  # the innermost loops ({', '.join(l.iterator.name for l in counted)})"
                      " test nothing: a prefix, which the runtime multiplies by their size")
            self.depth = 1
            self.emit("return _n")
            return self.lines
        if self.mode == "fill":
            for it in iterators:
                value = f"{it.name}__index" if it.value_type == "str" else it.name
                self.emit(f"_col_{it.name}[_n] = {value}")
        elif self.mode == "analysis":
            last = f"_cut_{len(iterators)}"
            self.emit(f"if {last} >= 0:")
            self.emit(f"    _removed[{last}] += 1")
            self.emit("    continue")
        elif self.mode == "census":
            self.emit("_total += _w")
            self.depth -= 1
            self.loops -= 1
            self.emit("_configurations[_node - 1] = _total / _samples")
            self.emit("_iterations[_node - 1] = _work / _samples")
            self.depth = 1
            self.emit("return _node")
            return self.lines
        elif self.mode == "probe":
            self.emit("_total += _w")
            self.emit("_total_sq += _w * _w")
            self.depth = 1
            self.emit("return _total, _total_sq")
            return self.lines
        elif self.mode == "rank":
            self._rank_leaf(iterators)
            self.depth = 1
            self.emit(f"return {self.top_return}")
            return self.lines
        self.emit("_n += 1")
        self.depth = 1
        self.emit("return _n")
        return self.lines

    def _write_split_nodes(self, split: int) -> list[str]:
        """The ``split_nodes`` function: the levels above the split, counting what passes them."""
        self.emit("_n = 0")
        for index, level in enumerate(self.plan.levels[:split]):
            self._loop(level, index)
            for item in level.body:
                self._item(item)
        self.emit("_n += 1")
        self.depth = 1
        self.emit("return _n")
        return self.lines

    def _split_gate(self) -> None:
        """Past the split level: go on only below this chunk's split nodes."""
        self.emit("# split node (SPLIT_LEVEL): run only the subtrees of split nodes _lo <= _node - 1 < _hi")
        self.emit("_node += 1")
        self.emit("if _node <= _lo:")
        self.emit("    continue")
        self.emit("if _node > _hi:")
        # the statistics walk the levels above the split whole, so every chunk reports them alike
        self.emit("    continue" if self.mode == "stats" else "    return _n")

    def _census_node(self) -> None:
        """At a split node: open the loop of Knuth descents below it."""
        self.emit("_node += 1")
        self.emit("if _node > _configurations.shape[0]:  # only counting the split nodes")
        self.emit("    continue" if self.loops else "    return 1")
        self.emit("_total = 0.0")
        self.emit("_work = 0.0  # loop iterations, each weighed like the descent that reached it")
        self._open_descents()

    def _open_descents(self) -> None:
        """Open the loop of _samples random descents (probe, census)."""
        self.emit("for _sample in range(_samples):")
        self.depth += 1
        self.loops += 1
        self.emit("_w = 1.0  # the product of the domain sizes chosen from so far")

    def _probe_level(self, level, index: int, solved: list) -> None:
        """Probe mode: scan the level's domain, keep one value that passes the level's filters
        (and those of the ``solved`` levels right below it), uniformly (reservoir sampling), and
        weigh the descent by how many passed."""
        it = level.iterator
        value = f"{it.name}__index" if it.value_type == "str" else it.name
        self.emit(f"{it.name}__passed = 0")
        self._loop(level, index)
        if self.mode == "census":
            self.emit("_work += _w")
        self._level_tests(level, solved, index)
        self.emit(f"{it.name}__passed += 1")
        self.emit(f"if np.random.randint(0, {it.name}__passed) == 0:")
        self.emit(f"    {it.name}__chosen = {value}")
        self.depth -= 1
        self.loops -= 1
        self._reject_if(f"{it.name}__passed == 0", it, "nothing passes this level")
        self.emit(f"_w *= {it.name}__passed")
        self.emit(f"{value} = {it.name}__chosen")
        if it.value_type == "str":
            self.emit(f"{it.name} = {it.name}__VALUES[{it.name}__index]")
        self._level_tests(level, solved, index)  # again for the chosen value, for the levels below

    def _level_tests(self, level, solved: list, index: int) -> None:
        for item in level.body:
            self._item(item)
        for offset, below in enumerate(solved, 1):
            self._loop(below, index + offset)
            for item in below.body:
                self._item(item)

    def _rank_leaf(self, iterators) -> None:
        terms = self.plan.specialized.bound_terms
        self.emit(f"_bound = {terms[0]}")
        self.emit("_term = 0")
        for index, term in enumerate(terms[1:], 1):
            self.emit(f"if {term} > _bound:")
            self.emit(f"    _bound = {term}")
            self.emit(f"    _term = {index}")
        self.emit("if _bound > _limit:")
        self.emit("    continue")
        for column, it in enumerate(iterators):
            value = f"{it.name}__index" if it.value_type == "str" else it.name
            self.emit(f"_row[{column}] = {value}")
        self.emit("_size = heap_offer(_bounds, _terms, _rows, _size, _bound, _term, _row)")
        self.emit("if _size == _bounds.shape[0]:  # full: only better bounds can still enter")
        self.emit("    _limit = min(_threshold, _bounds[0])")

    # -- rejection -------------------------------------------------------------------------------
    def reject(self, item: Item) -> None:
        if self.mode == "stats":
            self.emit(f"_rejections[{self.slot[item.name]}] += 1")
        # before the outermost loop, a rejection rejects everything
        self.emit("continue" if self.loops else f"return {self.top_return}")

    def guarded(self, item: Item, expr: L.Expr, use) -> None:
        """Emit guards for the divisions in ``expr`` then ``use(source)``; try/except when a risky
        operation is conditional (short-circuit or if-else)."""
        self._check_integer_powers(item, expr)
        original, checked = expr, self.plan.item_expression(item, expr)
        has_checks, expr = checked is not expr, self.python_powers(checked)
        risky = list(risky_nodes(expr, self.symbolic.provably_nonzero))
        source = expr_source(expr)
        if any(conditional for _, conditional in risky):
            self.temps += 1
            temp = f"{item.name}__t{self.temps}"
            checked = self.plan.checked.get(item.name) if has_checks else None
            if checked:  # a checked site raises in the try too: evaluated again, it says which
                self.emit(f"{item.name}__left = 0")
            self.emit("try:")
            self.emit(f"    {temp} = {source}")
            self.emit("except Exception:  # division by zero or similar: rejected")
            self.depth += 1
            if checked:
                self.emit(f"{item.name}__left = {checked.left(original)}")
                self.emit(f"if {item.name}__left == 0:")
                self.depth += 1
            self.reject(item)
            self.depth -= 2 if checked else 1
            if checked:
                self.emit(f"if {item.name}__left:")
                self.emit(f"    {checked.raising(f'{item.name}__left')}")
            use(temp)
            return
        seen = set()
        for node, _ in risky:
            divisor = expr_source(node.right)
            if divisor in seen:
                continue
            seen.add(divisor)
            self.emit(f"if {wrap(node.right, PRECEDENCE['cmp'], strict=True)} == 0:  # would divide by zero")
            self.depth += 1
            self.reject(item)
            self.depth -= 1
        use(source)

    def _check_integer_powers(self, item: Item, expr: L.Expr) -> None:
        """Python's int ** negative int is a float, Numba's is an int: refuse what may differ."""
        items = self.plan.specialized.items
        for node in L.walk(expr):
            if (isinstance(node, L.BinOp) and node.op == "**"
                    and infer_type(node.left, items) in ("int", "bool")
                    and infer_type(node.right, items) in ("int", "bool")
                    and not self.symbolic.provably_nonnegative(node.right)):
                raise SpaceError(f"{item.kind} '{item.name}': in {expr_source(node)} the integer "
                                 "exponent may be negative, where Python gives a float and compiled "
                                 "code an integer; write float(...) ** ... or keep the exponent >= 0",
                                 item.origin)

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
    def _loop(self, level, index: int) -> None:
        it = level.iterator
        self.emit(f"# loop {index}: iterator {it.name} ({comment_text(it.origin)}): "
                  f"{comment_text(it.source_text)}")
        if it.function is not None and it.function.form != "range":
            fn = it.function
            if fn.form == "generator" and not self.may_raise(it):
                header = f"for {it.name} in {fn.name}({', '.join(fn.params)}):"
            else:
                self.call(it, f"{it.name}__seq")
                header = f"for {it.name} in {it.name}__seq:"
            self._open(header, index)
            return
        if it.function is None and it.domain[0] == "values":
            self._values_loop(it, index)
            return
        lo, hi, step = self._range_arguments(it)
        if level.solved:
            self._solved(level, index, lo, hi, step)
            return
        if not self.plan.range_fits(it):
            self._counted_range(it, index, lo, hi, step)
            return
        args = [lo, hi] if step == "1" else [lo, hi, step]
        if args == ["0", hi]:
            args = [hi]
        self._open(f"for {it.name} in range({', '.join(args)}):", index)

    def _counted_range(self, it: Item, index: int, lo: str, hi: str, step: str) -> None:
        """A range whose ``stop - start`` may pass 64 bits (where Numba's ``range`` counts nothing):
        its trips counted and its values computed exactly (``nestlib``)."""
        for name, source in (("lo", lo), ("step", step)):
            if source != f"{it.name}__{name}":
                self.emit(f"{it.name}__{name} = {source}")
        self._open(f"for {it.name}__k in range(range_length({it.name}__lo, {hi}, {it.name}__step)):"
                   "  # stop - start may pass 64 bits", index)
        self.emit(f"{it.name} = range_value({it.name}__lo, {it.name}__k, {it.name}__step)")

    def _range_arguments(self, it: Item) -> list[str]:
        """Source for start, stop and step, after the guards they need (a zero step rejects)."""
        if it.function is not None:
            names = [f"{it.name}__lo", f"{it.name}__hi", f"{it.name}__step"]
            if it.unit_step:
                self.call(it, f"{names[0]}, {names[1]}, _")
                return names[:2] + ["1"]
            self.call(it, ", ".join(names))
            self._reject_if(f"{it.name}__step == 0", it, "range() step zero")
            return names
        args = []
        for position, part in enumerate(it.domain[1:]):
            if position == 2 and not self.symbolic.provably_nonzero(part):
                self.guarded(it, part, lambda s: self.emit(f"{it.name}__step = {s}"))
                self._reject_if(f"{it.name}__step == 0", it, "range() step zero")
                args.append(f"{it.name}__step")
            else:
                self.guarded(it, part, args.append)
        return args

    def _values_loop(self, it: Item, index: int) -> None:
        kind, *parts = it.domain
        if constant_values(it):
            if it.value_type == "str":
                self._open(f"for {it.name}__index in range({len(parts)}):", index)
                self.emit(f"{it.name} = {it.name}__VALUES[{it.name}__index]")
            else:
                self._open(f"for {it.name} in {it.name}__VALUES:", index)
            return
        cast = CASTS.get(it.value_type)
        texts = []
        for p in parts:
            holder = []
            self.guarded(it, p, holder.append)
            texts.append(f"{cast.__name__}({holder[0]})" if cast else holder[0])
        self._open(f"for {it.name} in ({', '.join(texts)},):", index)

    def _solved(self, level, index: int, lo: str, hi: str, step: str) -> None:
        """The loop replaced by the only value its equality filter lets through."""
        it, solution = level.iterator, level.solved
        item = solution.filter
        numerator = wrap(solution.numerator, PRECEDENCE["*"])
        denominator = wrap(solution.denominator, PRECEDENCE["*"], strict=True)
        self.emit(f"# filter {item.name} ({comment_text(item.origin)}): rejects when "
                  f"{comment_text(item.source_text)}; solved for "
                  f"{it.name} instead of looping")
        self.guarded(item, solution.numerator, lambda _: None)
        self.guarded(item, solution.denominator, lambda _: None)
        if denominator != "1":
            self._reject_if(f"{numerator} % {denominator} != 0", item, "no integer solution")
            self.emit(f"{it.name} = {numerator} // {denominator}")
        else:
            self.emit(f"{it.name} = {numerator}")
        if step == "1":
            inside = f"{lo} <= {it.name} < {hi}"
        elif not self.plan.range_fits(it):  # stop - start may pass 64 bits
            inside = f"range_contains({lo}, {hi}, {step}, {it.name})"
        else:
            inside = (f"(({step} > 0 and {lo} <= {it.name} < {hi}) or ({step} < 0 and {hi} < {it.name} <= {lo}))"
                      f" and ({it.name} - {lo}) % {step} == 0")
        self._reject_if(f"not ({inside})", item, f"outside the domain of {it.name}")
        self._enter(index)

    def _reject_if(self, test: str, item: Item, why: str) -> None:
        self.emit(f"if {test}:  # {why}")
        self.depth += 1
        self.reject(item)
        self.depth -= 1

    def _open(self, header: str, index: int) -> None:
        self.emit(header)
        self.depth += 1
        self.loops += 1
        self._enter(index)

    def _enter(self, index: int) -> None:
        """Bookkeeping once level ``index``'s iterator is bound."""
        self.levels_entered = index + 1
        if self.mode in ("stats", "analysis"):
            self.emit(f"_visits[{index}] += 1")
        if self.mode == "analysis":
            self.emit(f"_cut_{index + 1} = _cut_{index}")
            self.emit(f"if _cut_{index + 1} >= 0:")
            self.emit(f"    _skipped[{index}] += 1")

    # -- a derived value, filter or bound --------------------------------------------------------
    def _bound(self, item: Item) -> None:
        self.emit(f"# bound {item.name} ({comment_text(item.origin)}): {comment_text(item.source_text)}")
        if item.function is not None:
            self.call(item, item.name, fallback="0.0")  # a bound term that raises bounds nothing
        else:
            expr = self.python_powers(self.plan.item_expression(item, item.expr))
            if any(True for _ in risky_nodes(expr, self.symbolic.provably_nonzero)):
                self.emit("try:")
                self.emit(f"    {item.name} = {expr_source(expr)}")
                self.emit("except Exception:  # a bound term that raises bounds nothing")
                self.emit(f"    {item.name} = 0.0")
            else:
                self.emit(f"{item.name} = {expr_source(expr)}")
        level = self.levels_entered
        if self.mode in ("pruned", "rank"):
            self.emit(f"if {item.name} > _limit:  # cut: every completion is slower than the limit")
            self.emit("    continue")
        elif self.mode == "analysis":
            self.emit(f"if _cut_{level} < 0 and {item.name} > _threshold:")
            self.emit(f"    _cut_{level} = {level - 1}")
            self.emit(f"    _cuts[{level - 1}] += 1")

    def _item(self, item: Item) -> None:
        if item.kind == "bound":
            if self.mode in ("pruned", "analysis", "rank"):
                self._bound(item)
            return
        if item.kind == "derived":
            self.emit(f"# derived {item.name} ({comment_text(item.origin)}): "
                      f"{comment_text(item.source_text)}")
            if item.function is not None:
                self.call(item, item.name)
            else:
                self.guarded(item, item.expr, lambda s: self.emit(f"{item.name} = {s}"))
        elif item.kind == "filter":
            self.emit(f"# filter {item.name} ({comment_text(item.origin)}): rejects when "
                      f"{comment_text(item.source_text)}")
            if item.function is not None:
                self.call(item, f"{item.name}__rejects")
                test = f"{item.name}__rejects"
            else:
                holder = []
                self.guarded(item, item.expr, holder.append)
                test = holder[0]
            self.emit(f"if {test}:")
            self.depth += 1
            self.reject(item)
            self.depth -= 1
