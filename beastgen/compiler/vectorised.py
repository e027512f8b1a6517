"""A count and an enumeration with no compiler: the plan walked level by level in NumPy arrays.

Each level turns the rows that reached it (one per valid prefix, a column per item computed so
far) into one row per value of its iterator (``np.repeat`` of the rows, the values as an array
expression), then computes the level's derived values and filters as array expressions and keeps
the rows no filter rejects, as early as the plan places them. A computation that raises in Python
(a zero divisor, ``range`` with step 0, ``math.floor`` of an infinity) rejects its row, as in the
reference enumerator; ``where`` and ``and``/``or`` compute their branches for the rows that take
them only. Rows go through the levels in blocks of at most :data:`BLOCK_ROWS`, so memory stays
bounded. Integers are int64, as in the compiled nest (the interval analysis refuses a space whose
integers could leave 64 bits).

It is chosen (:func:`chosen_nest`) for a small nest where no C library counts and Numba would
have to compile first: the cost estimate is the nest's loop iterations
(:meth:`~beastgen.compiler.plan.Plan.iteration_bound`) against what compiling takes. Where a C
compiler exists, C counts: its -O0 build of a small nest (0.05 to 0.1 s) is about what importing
NumPy costs, and the library then answers every warm run from the plan cache without NumPy.
"""
from __future__ import annotations

import os

import networkx as nx
import numpy as np

from .codegen.guards import operation_rule
from .language import nodes as L
from .language import semantics
from .language.mapper import Mapper
from .plan import Plan, range_length
from .specialize import infer_type

#: rows one block holds at most (a column of int64 is then 2 MiB)
BLOCK_ROWS = 1 << 18
#: ``BEASTGEN_VECTORISED=0`` turns this path off (Numba then compiles, as before it existed)
VECTORISED_ENV = "BEASTGEN_VECTORISED"
#: nests of at most this many loop iterations run here rather than wait for Numba to compile (a
#: second or more): the T1 spaces take 1 to 5 ns per iteration bounded (hotspot: 20 M in 0.04 to
#: 0.1 s), so even ten times that stays under Numba's compile
VECTORISED_ITERATIONS = 1 << 25
NUMBERS = ("int", "float", "bool")


class Unsupported(Exception):
    """A part of the plan this path does not compute (a Python function, a string, a power with
    a varying or negative exponent)."""


def chosen_nest(compiled) -> "VectorisedNest | None":
    """The vectorised nest of a :class:`~beastgen.compiler.runtime.CompiledPlan` where it is
    cheaper than compiling: its nest is bounded by :data:`VECTORISED_ITERATIONS` loop iterations,
    no C library counts (no C compiler, ``BEASTGEN_NATIVE=0``, a plan the C target cannot print)
    and Numba's cache lacks the count (and ``BEASTGEN_VECTORISED`` is not ``0``)."""
    bound = compiled.iteration_bound
    if (not enabled() or bound is None or bound > VECTORISED_ITERATIONS or compiled.native is not None
            or compiled.numba_cached("count") or compiled.plan is None):
        return None
    try:
        return VectorisedNest(compiled.plan)
    except Unsupported:
        return None


def enabled() -> bool:
    return os.environ.get(VECTORISED_ENV, "1").strip().lower() not in ("0", "no", "off", "false")


class VectorisedNest:
    """The plan's nest over NumPy arrays: :meth:`count` and :meth:`columns`."""

    def __init__(self, plan: Plan, block_rows: int = BLOCK_ROWS):
        self.plan, self.block_rows = plan, block_rows
        self.constants, self.items = plan.specialized.constants, plan.specialized.items
        for level in plan.levels:
            for item in level.items:
                _check_supported(item, plan.specialized.items)

    def count(self) -> int:
        """How many valid configurations (each block's rows past the last level)."""
        return sum(n for _, n in self._blocks(0, {}, 1, counting=True))

    def columns(self) -> dict[str, np.ndarray]:
        """Every valid configuration's iterator values, a column per iterator, in nest order."""
        names = self.plan.order
        parts = {name: [] for name in names}
        for block, n in self._blocks(0, {}, 1, counting=False):
            for name in names:
                parts[name].append(np.broadcast_to(block[name], (n,)))
        return {name: np.concatenate(parts[name]) if parts[name] else np.zeros(0, np.int64)
                for name in names}

    # -- the walk ------------------------------------------------------------------------------
    def _blocks(self, depth: int, block: dict, n: int, counting: bool):
        """(columns, rows) of the rows that pass every level from ``depth`` on, in nest order (a
        count's last level, when it checks nothing, is not written out: its sizes are summed)."""
        if depth == len(self.plan.levels):
            yield block, n
            return
        level = self.plan.levels[depth]
        checks = [item for item in level.items[1:] if item.kind in ("derived", "filter")]
        values = self._domain(level.iterator, block, n)
        if counting and not checks and depth == len(self.plan.levels) - 1:
            yield block, _exact_sum(values[2])
            return
        for rows, size in self._expanded(level.iterator.name, block, values):
            for item in checks:
                rows, size = self._check(item, rows, size)
            if size:
                yield from self._blocks(depth + 1, rows, size, counting)

    def _domain(self, item, block: dict, n: int):
        """(kind, data, sizes) of an iterator's values for each row: ``('range', (start, step))``
        or ``('values', matrix)``, and how many each row has (none where computing them raised)."""
        kind, *parts = item.domain
        evaluator = _Evaluator(self.constants, block, n, self.items)
        parts = [np.broadcast_to(np.asarray(evaluator(part)), (n,)) for part in parts]
        keep = ~evaluator.raised
        if kind == "range":
            start, stop, step = (_integers(p) for p in parts)
            keep &= step != 0  # range(..., 0) raises
            safe = np.where(step == 0, 1, step)
            if self.plan.range_fits(item):
                sizes = np.where(safe > 0, (stop - start + safe - 1) // safe, (start - stop - safe - 1) // -safe)
            else:  # stop - start may leave 64 bits: Python's integers (the values wrap back inside)
                sizes = np.array([range_length(int(a), int(b), int(c)) for a, b, c in zip(start, stop, safe)],
                                 dtype=np.int64)
            data = (start, safe)
        else:
            data = np.stack(parts, axis=1) if parts else np.zeros((n, 0), np.int64)
            sizes = np.full(n, len(parts), np.int64)
        sizes = np.where(keep, np.maximum(sizes, 0), 0)
        return kind, data, sizes

    def _expanded(self, name: str, block: dict, values):
        """The rows of ``block`` repeated once per value of the level's iterator, in blocks of at
        most ``block_rows`` rows (one prefix's values split where they alone are more)."""
        kind, data, sizes = values
        ends = np.cumsum(sizes)
        starts = ends - sizes
        total, done = (int(ends[-1]) if len(ends) else 0), 0  # rows of the expansion, given so far
        while done < total:
            stop = min(total, done + self.block_rows)
            first = int(np.searchsorted(ends, done, side="right"))  # the rows done..stop-1 fall in
            last = int(np.searchsorted(ends, stop - 1, side="right")) + 1
            counts = np.minimum(ends[first:last], stop) - np.maximum(starts[first:last], done)
            which = np.repeat(np.arange(first, last), np.maximum(counts, 0))
            offsets = np.arange(done, stop) - starts[which]
            rows = {key: (column[which] if np.ndim(column) else column) for key, column in block.items()}
            if kind == "range":
                start, step = data
                rows[name] = start[which] + offsets * step[which]
            else:
                rows[name] = data[which, offsets]
            yield rows, stop - done
            done = stop

    def _check(self, item, rows: dict, size: int):
        """``rows`` with a derived value's column added, or a filter applied; the rows where it
        raised (or the filter rejects) dropped."""
        evaluator = _Evaluator(self.constants, rows, size, self.items)
        value = evaluator(item.expr)
        keep = ~evaluator.raised
        if item.kind == "filter":
            keep &= ~_truth(value, size)
        else:
            rows = dict(rows, **{item.name: np.broadcast_to(np.asarray(value), (size,))})
        if keep.all():
            return rows, size
        return {key: (column[keep] if np.ndim(column) else column) for key, column in rows.items()}, int(keep.sum())


def item_values(plan: Plan, columns: dict, names) -> dict[str, np.ndarray]:
    """The derived values and bound terms ``names`` at the configurations given by their iterator
    ``columns`` (arrays of one length), computed as the nest computes them, each after what it
    reads; as floats, NaN where Python would raise computing it or what it reads. Raises
    :class:`Unsupported` for an item this path does not compute (a Python function...)."""
    values, raised = _item_columns(plan, columns, names)
    return {name: np.where(raised[name], np.nan, values[name]) for name in names}


def bound_values(plan: Plan, columns: dict) -> tuple[np.ndarray, np.ndarray]:
    """(bound, dominating term) of the valid configurations given by their iterator ``columns``,
    as the compiled ``rank`` computes them: a term that raises is 0.0, the bound the largest term,
    the term its index in ``bound_terms``, the first declared on ties. In blocks of at most
    :data:`BLOCK_ROWS` configurations. Raises :class:`Unsupported` where a term (or what it reads)
    is not computed here (:func:`bounds_computable`)."""
    spec = plan.specialized
    terms = spec.bound_terms
    computed = [t for t in terms if t not in spec.constants]
    size = len(next(iter(columns.values()))) if columns else 0
    if not bounds_computable(plan):
        raise Unsupported("a bound term, or what it reads, that NumPy does not compute")
    bounds, dominant = np.empty(size), np.empty(size, dtype=np.int64)
    for start in range(0, size, BLOCK_ROWS):
        block = {name: np.asarray(columns[name][start:start + BLOCK_ROWS]) for name in plan.order}
        values, raised = _item_columns(plan, block, computed) if computed else ({}, {})
        n = len(block[plan.order[0]]) if plan.order else 0
        bound, which = None, np.zeros(n, dtype=np.int64)
        for index, term in enumerate(terms):
            value = (np.full(n, float(spec.constants[term])) if term in spec.constants
                     else np.where(raised[term], 0.0, values[term]))
            if bound is None:
                bound = value
                continue
            larger = value > bound
            bound, which = np.where(larger, value, bound), np.where(larger, index, which)
        bounds[start:start + n], dominant[start:start + n] = bound, which
    return bounds, dominant


def bounds_computable(plan: Plan) -> bool:
    """Whether :func:`bound_values` computes the plan's bound terms: every iterator a number (a
    string's order is its index, not its text) and every term, and what it reads, an expression of
    the kinds :class:`_Evaluator` computes."""
    spec = plan.specialized
    if any(spec.items[name].value_type not in NUMBERS for name in plan.order):
        return False
    wanted = set()
    for term in spec.bound_terms:
        if term not in spec.constants:
            wanted |= {term} | nx.ancestors(plan.graph, term)
    try:
        for level in plan.levels:
            for item in level.items[1:]:
                if item.name in wanted and item.kind in ("derived", "bound"):
                    if item.function is not None or item.expr is None:
                        raise Unsupported(item.name)
                    _Supported(spec.items)(item.expr)
    except Unsupported:
        return False
    return True


def _item_columns(plan: Plan, columns: dict, names) -> tuple[dict, dict]:
    """({name: float column}, {name: where it or what it reads raised}) of the derived values and
    bound terms ``names``: see :func:`item_values`."""
    size = len(next(iter(columns.values()))) if columns else 0
    rows = {name: np.asarray(columns[name]) for name in plan.order}
    raised = {name: np.zeros(size, dtype=bool) for name in plan.order}
    wanted = set(names)
    for name in names:
        wanted |= nx.ancestors(plan.graph, name)
    for level in plan.levels:
        for item in level.items[1:]:
            if item.name not in wanted or item.kind not in ("derived", "bound"):
                continue
            if item.function is not None or item.expr is None:
                raise Unsupported(item.name)
            _Supported(plan.specialized.items)(item.expr)
            evaluator = _Evaluator(plan.specialized.constants, rows, size, plan.specialized.items)
            rows[item.name] = np.broadcast_to(np.asarray(_number(evaluator(item.expr))), (size,))
            raised[item.name] = evaluator.raised.copy()
            for dependency in item.deps:
                if dependency in raised:
                    raised[item.name] |= raised[dependency]
    return ({name: rows[name].astype(np.float64) for name in names},
            {name: raised[name] for name in names})


def _check_supported(item, items: dict) -> None:
    """Raise :class:`Unsupported` where this path does not compute an item as Python would."""
    if item.kind == "bound":  # a count does not compute bounds
        return
    if item.function is not None or item.value_type not in NUMBERS or item.expr is None and item.domain is None:
        raise Unsupported(item.name)
    parts = item.domain[1:] if item.kind == "iterator" else [item.expr]
    if item.kind == "iterator" and item.domain[0] == "range" and any(
            infer_type(part, items) not in ("int", "bool") for part in parts):
        raise Unsupported(f"{item.name}: a range of other than integers")
    for part in parts:
        _Supported(items)(part)


def _exact_sum(sizes: np.ndarray) -> int:
    """The sum of a level's sizes as an exact integer (int64's sum of many large sizes wraps): the
    high and low 32 bits summed apart (a block of 2**18 rows stays far inside 64 bits)."""
    sizes = sizes.astype(np.uint64)
    return (int((sizes >> np.uint64(32)).sum()) << 32) + int((sizes & np.uint64(0xFFFFFFFF)).sum())


def _integers(values) -> np.ndarray:
    array = np.asarray(values)
    return array.astype(np.int64) if array.dtype == np.bool_ else array


def _number(values):
    """Booleans as integers (Python's ``True + True`` is 2; NumPy's is True)."""
    if isinstance(values, np.ndarray) and values.dtype == np.bool_:
        return values.astype(np.int64)
    return int(values) if isinstance(values, (bool, np.bool_)) else values


def _truth(values, size: int) -> np.ndarray:
    """Python's truth of each value (NaN is true)."""
    values = np.broadcast_to(np.asarray(values), (size,))
    return values if values.dtype == np.bool_ else values != 0


class _Supported(Mapper):
    """Raises :class:`Unsupported` at a node :class:`_Evaluator` does not compute: one the semantics
    table has no rule for (a string, a space function's value)."""

    def __init__(self, items: dict):
        self.items = items

    def map_Expr(self, node):
        raise Unsupported(type(node).__name__)

    def map_Const(self, node):
        if not isinstance(node.value, (bool, int, float)):
            raise Unsupported(repr(node.value))

    def map_Ref(self, node):
        pass

    def map_BinOp(self, node):
        rule = operation_rule(node, self.items)
        if rule is None or rule.value not in NUMPY_VALUES:
            raise Unsupported(f"{node.op} of these values")
        for child in node.children():
            self(child)

    def map_Call(self, node):
        rule = operation_rule(node, self.items)
        if node.func not in _CALLS or rule is None or (node.func not in ("min", "max") and rule.value not in NUMPY_VALUES):
            raise Unsupported(node.func)
        for child in node.children():
            self(child)

    map_UnaryOp = map_BinOp

    def map_Compare(self, node):
        for child in node.children():
            self(child)

    map_BoolOp = map_Not = map_IfExp = map_Compare


class _Evaluator(Mapper):
    """An expression's values over ``size`` rows (an array, or a scalar where it does not vary);
    ``raised``: the rows where Python would have raised, among those whose value was needed
    (``active``: the rows a ``where`` or ``and``/``or`` computes a branch for)."""

    def __init__(self, constants: dict, columns: dict, size: int, items: dict):
        self.constants, self.columns, self.size, self.items = constants, columns, size, items
        self.raised = np.zeros(size, dtype=bool)

    def __call__(self, node, active=True):
        return super().__call__(node, active)

    def _raise_where(self, condition, active) -> None:
        self.raised |= np.broadcast_to(condition, (self.size,)) & active

    def map_Const(self, node, active):
        return node.value

    def map_Ref(self, node, active):
        if node.target in self.columns:
            return self.columns[node.target]
        return self.constants[node.target]

    def map_UnaryOp(self, node, active):
        return self._operation(node, [self(node.operand, active)], active)

    def map_Not(self, node, active):
        return ~_truth(self(node.operand, active), self.size)

    def map_Compare(self, node, active):
        left, right = self(node.left, active), self(node.right, active)
        return np.asarray(L.COMPARE_OPS[node.op](np.asarray(left), np.asarray(right)))

    def map_BinOp(self, node, active):
        return self._operation(node, [self(node.left, active), self(node.right, active)], active)

    def _operation(self, node, operands: list, active):
        """The rule of ``node`` (the semantics table): the rows where one of its raises holds are
        marked raised (where they are ``active``) and computed on harmless operands (1), then its
        value primitive (:data:`NUMPY_VALUES`)."""
        rule = operation_rule(node, self.items)
        values = [_number(v) for v in operands]
        with np.errstate(all="ignore"):  # overflow to inf, nan: Python's floats give them silently
            raised = self._raises(rule.raises_before(), values, None)
            if raised is not None:
                values = [np.where(raised, 1, v) for v in values]
                self._raise_where(raised, active)
            value = NUMPY_VALUES[rule.value](*values)
            after = self._raises(rule.raises_after(), values, value)
        if after is not None:
            self._raise_where(after, active)
        return value

    def _raises(self, checks, values: list, value):
        """Where any of ``checks`` holds (an array), or None when there is none to check."""
        found = None
        for check in checks:
            held = np.asarray(semantics.evaluate_condition(
                check.condition, {"a": values[0], "b": values[-1], "r": value}, _NUMPY_OPERATIONS), dtype=bool)
            found = held if found is None else found | held
        return found

    def map_BoolOp(self, node, active):
        value = self(node.operands[0], active)
        for operand in node.operands[1:]:  # the deciding operand's value, as in Python
            pending = _truth(value, self.size) == (node.op == "and")
            value = np.where(pending, self(operand, active & pending), value)
        return value

    def map_IfExp(self, node, active):
        test = _truth(self(node.test, active), self.size)
        return np.where(test, self(node.body, active & test), self(node.orelse, active & ~test))

    def map_Call(self, node, active):
        args = [self(a, active) for a in node.args]
        if node.func in ("min", "max"):  # Python keeps the first of equal values
            value = _number(args[0])
            for other in map(_number, args[1:]):
                value = np.where(other < value if node.func == "min" else other > value, other, value)
            return value
        return self._operation(node, args, active)


def _to_int(rounding):
    """A float rounded (``np.floor``...) to int64 (NaN and the infinities raise: marked, given 0)."""
    def convert(values):
        values = np.asarray(values)
        if values.dtype.kind != "f":
            return values
        rounded = rounding(values)
        return np.where(np.isfinite(rounded), rounded, 0).astype(np.int64)
    return convert


#: each value primitive of the semantics table in NumPy; no ``float_pow``: NumPy's float power is
#: not C's ``pow`` (its SIMD loops give ``1.1 ** 3.0`` one bit off, ``x ** 0.5`` of a scalar exponent
#: is ``sqrt(x)``, -0.0 for -0.0): such a space counts with C or Numba
NUMPY_VALUES = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "neg": np.negative, "abs": np.abs,
    "floor": _to_int(np.floor), "ceil": _to_int(np.ceil), "trunc": _to_int(np.trunc),
    "same": lambda a: a, "to_float": lambda a: np.asarray(a, dtype=np.float64),
}
_NUMPY_OPERATIONS = {"and": np.logical_and, "or": np.logical_or, "not": np.logical_not,
                     "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan, "floor": np.floor}
_CALLS = ("min", "max", "abs", "floor", "ceil", "int", "float")
