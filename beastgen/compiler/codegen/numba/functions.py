"""The generated Numba functions, one class each: the chunked walks (``count``,
``count_with_stats``, ``fill``), ``split_nodes``, the samplers (``census``, ``probe``) and, with
bound terms, ``count_pruned``, ``cut_analysis`` and ``rank``. Each states what it adds to the walk
(:mod:`.builder`): its prologue, its bookkeeping at a level, a split node or a bound, its leaf.
"""
from __future__ import annotations

from ...specialize import Item
from ..facts import rejects_first, skips_only_solution_rejects, solved_below
from .builder import NumbaNest, value_name


class WalkedNest(NumbaNest):
    """A walk of the whole nest (:meth:`~..nest.NestWalker.walk_nest`); ``CHUNKED``: of the
    subtrees of split nodes ``_lo <= node < _hi`` (one chunk of the work)."""

    PARTED = True

    def write_body(self) -> None:
        self.walk_nest()


class Count(WalkedNest):
    ENDS_LOOPS = DIVISOR_LOOPS = CARRIES = CHUNKED = True
    SIGNATURE = "count(_lo, _hi, _high)"
    DOC = ("Number of valid configurations below split nodes _lo <= node < _hi: the result (as\n"
           "    unsigned) plus _high[0] * 2**62 (see exact_count).")
    COUNTS_TAIL = True

    def part_state(self, index: int) -> list[str]:
        return ["_high"]


class CountWithStats(WalkedNest):
    SIGNATURE = "count_with_stats(_visits, _rejections, _lo, _hi, _high)"
    DOC = ("count(), also adding loop iterations per level to _visits and rejections (filters)\n"
           "    or errors (division by zero...) per STAT_SLOTS to _rejections. The levels above\n"
           "    SPLIT_LEVEL are walked whole whatever the chunk.")
    ENDS_LOOPS = DIVISOR_LOOPS = CARRIES = CHUNKED = WALKS_PAST_CHUNK = True

    def part_state(self, index: int) -> list[str]:
        return ["_visits", "_rejections", "_high"]

    def divisor_loops(self, index: int) -> bool:
        """Only where the values skipped are the solved filter's rejections alone (they are counted)."""
        return super().divisor_loops(index) and skips_only_solution_rejects(
            self.plan, index, self.symbolic)

    COUNTS_SKIPPED = True

    def skipped(self, item: Item, count: str) -> None:
        self.emit(f"_rejections[{self.slot[item.name]}] += {count}  # skipped by the divisor loop: rejected")

    def ends_loop(self, item: Item) -> str | None:
        """Only where each value left would be that filter's rejection (they are counted)."""
        iterator = super().ends_loop(item)
        return iterator if iterator and rejects_first(self.plan, item, self.symbolic) else None

    def leaving(self, item: Item, iterator: str) -> None:
        hi, step = self.range_ends[iterator]
        left = f"({hi}) - {iterator}" if step == "1" else f"1 + (({hi}) - 1 - {iterator}) // ({step})"
        self.emit(f"_rejections[{self.slot[item.name]}] += {left}  # this value and those left: rejected")

    def reject(self, item: Item) -> None:
        self.emit(f"_rejections[{self.slot[item.name]}] += 1")
        super().reject(item)

    def enter(self, index: int) -> None:
        super().enter(index)
        self.emit(f"_visits[{index}] += 1")


class Fill(WalkedNest):
    ENDS_LOOPS = DIVISOR_LOOPS = CHUNKED = True
    PART_CALL = "_n = {call}"

    def header(self) -> list[str]:
        cols = ", ".join(f"_col_{level.iterator.name}" for level in self.plan.levels)
        return [f"def fill({cols}, _lo, _hi):",
                '    """Write every valid configuration below split nodes _lo <= node < _hi into the\n'
                '    columns (string values as indices)."""']

    def part_state(self, index: int) -> list[str]:
        return [f"_col_{level.iterator.name}" for level in self.plan.levels] + ["_n"]

    def part_prologue(self) -> None:
        pass

    def leaf(self) -> None:
        for level in self.plan.levels:
            self.emit(f"_col_{level.iterator.name}[_n] = {value_name(level.iterator)}")
        super().leaf()


class SplitNodes(NumbaNest):
    ENDS_LOOPS = DIVISOR_LOOPS = True
    SIGNATURE = "split_nodes()"
    DOC = ("How many split nodes (valid prefixes of SPLIT_LEVEL levels) there are: a walk of\n"
           "    the levels above the split alone, so a one-thread count can report its progress.")

    def write_body(self) -> None:
        self.walk_split_nodes()


# --------------------------------------------------------------------------------------------------
# Sampling: Knuth's descents
# --------------------------------------------------------------------------------------------------
class SampledNest(NumbaNest):
    """A function that descends at random below the levels ``SAMPLED_FROM`` and deeper: each
    scanned level keeps one value among those that pass (:meth:`probe_level`)."""

    def write_body(self) -> None:
        self.scanned = False  # a level was scanned, so the solved levels below it were tested
        self.prologue()
        self.walk(self.plan.levels, self.split)
        self.leaf()

    def sampled(self, index: int) -> bool:
        raise NotImplementedError

    def walk_level(self, level, index: int) -> None:
        if self.sampled(index):
            if not level.solved:
                self.probe_level(level, index, solved_below(self.plan.levels, index))
                self.scanned = True
                return
            if self.scanned:
                return  # a solved level was tested inside its parent's scan
        super().walk_level(level, index)

    def open_descents(self) -> None:
        """Open the loop of _samples random descents."""
        self.emit("for _sample in range(_samples):")
        self.depth += 1
        self.loops += 1
        self.emit("_w = 1.0  # the product of the domain sizes chosen from so far")

    def scanning(self) -> None:
        """At each value a scanned level tries."""

    def probe_level(self, level, index: int, solved: list) -> None:
        """Scan the level's domain, keep one value that passes the level's filters (and those of
        the ``solved`` levels right below it), uniformly (reservoir sampling), and weigh the descent
        by how many passed."""
        it = level.iterator
        value = value_name(it)
        self.emit(f"{it.name}__passed = 0")
        self.open_level(level, index)
        self.scanning()
        self._level_tests(level, solved, index)
        self.emit(f"{it.name}__passed += 1")
        self.emit(f"if np.random.randint(0, {it.name}__passed) == 0:")
        self.emit(f"    {it.name}__chosen = {value}")
        self.depth -= 1
        self.loops -= 1
        self.reject_if(f"{it.name}__passed == 0", it, "nothing passes this level")
        self.emit(f"_w *= {it.name}__passed")
        self.emit(f"{value} = {it.name}__chosen")
        if it.value_type == "str":
            self.emit(f"{it.name} = {it.name}__VALUES[{it.name}__index]")
        self._level_tests(level, solved, index)  # again for the chosen value, for the levels below

    def _level_tests(self, level, solved: list, index: int) -> None:
        for item in level.body:
            self.place(item)
        for offset, below in enumerate(solved, 1):
            self.open_level(below, index + offset)
            for item in below.body:
                self.place(item)


class Census(SampledNest):
    SIGNATURE = "census(_samples, _seed, _configurations, _iterations)"
    DOC = ("The split nodes (valid prefixes of SPLIT_LEVEL levels), in walk order: for each of\n"
           "    the first len(_configurations), _samples Knuth descents below it estimate the valid\n"
           "    configurations in its subtree and the loop iterations it takes to enumerate them\n"
           "    (the work). Returns how many split nodes there are.")

    def sampled(self, index: int) -> bool:
        return index >= self.split

    def prologue(self) -> None:
        self.emit("np.random.seed(_seed)")
        self.emit("_node = 0")
        if self.split == 0:
            self.at_split()

    def at_split(self) -> None:
        """At a split node: open the loop of Knuth descents below it."""
        self.emit("_node += 1")
        self.emit("if _node > _configurations.shape[0]:  # only counting the split nodes")
        self.emit("    continue" if self.loops else "    return 1")
        self.emit("_total = 0.0")
        self.emit("_work = 0.0  # loop iterations, each weighed like the descent that reached it")
        self.open_descents()

    def scanning(self) -> None:
        self.emit("_work += _w")

    def leaf(self) -> None:
        self.emit("_total += _w")
        self.depth -= 1
        self.loops -= 1
        self.emit("_configurations[_node - 1] = _total / _samples")
        self.emit("_iterations[_node - 1] = _work / _samples")
        self.finish("_node")


class Probe(SampledNest):
    SIGNATURE = "probe(_samples, _seed)"
    DOC = ("Knuth's estimator: _samples random descents through the nest; at each level one\n"
           "    value is chosen uniformly among those its filters let through, and a descent that\n"
           "    reaches the innermost level estimates the count as the product of how many passed\n"
           "    at each level (0 when none did). Returns the sum and sum of squares of the estimates.")

    def sampled(self, index: int) -> bool:
        return True

    def prologue(self) -> None:
        self.emit("_n = 0")
        self.emit("np.random.seed(_seed)")
        self.emit("_total = 0.0")
        self.emit("_total_sq = 0.0")
        self.open_descents()

    def leaf(self) -> None:
        self.emit("_total += _w")
        self.emit("_total_sq += _w * _w")
        self.finish("_total, _total_sq")


# --------------------------------------------------------------------------------------------------
# Bound terms
# --------------------------------------------------------------------------------------------------
class BoundedNest(WalkedNest):
    """A walk that computes the bound terms where the plan placed them."""

    BOUNDS = True

    def largest_constant_bound(self) -> str | None:
        """The largest constant bound term (an expression), or None when no term is constant. No
        floor at 0: a term may be negative, and so may the threshold."""
        spec = self.plan.specialized
        constants = [b for b in spec.bound_terms if b in spec.constants]
        if len(constants) > 1:
            return f"max({', '.join(constants)})"
        return constants[0] if constants else None

    def prologue(self) -> None:
        super().prologue()
        self.threshold_prologue()

    def threshold_prologue(self) -> None:
        """``_limit``, the largest bound a configuration kept may have; none when a constant bound
        term is already larger."""
        self.emit("_limit = _threshold")
        if largest := self.largest_constant_bound():
            self.emit(f"if {largest} > _limit:  # constant bound terms")
            self.emit("    return 0")

    def test_bound(self, item: Item) -> None:
        self.emit(f"if {item.name} > _limit:  # cut: every completion is slower than the limit")
        self.emit("    continue")


class CountPruned(BoundedNest):
    ENDS_LOOPS = DIVISOR_LOOPS = CARRIES = True
    SIGNATURE = "count_pruned(_threshold, _high)"
    DOC = ("Valid configurations whose bound is at most _threshold; each bound term cuts\n"
           "    its whole subtree at the level where it is first computable.")
    COUNTS_TAIL = True

    def part_state(self, index: int) -> list[str]:
        return ["_threshold", "_limit", "_high"]


class CutAnalysis(BoundedNest):
    SIGNATURE = "cut_analysis(_threshold, _visits, _skipped, _cuts, _removed)"
    DOC = ("Exhaustive walk that records where count_pruned() would cut: per level, the\n"
           "    iterations (_visits) and those inside already-cut subtrees (_skipped), subtrees\n"
           "    cut (_cuts), and valid configurations they held (_removed). Returns how many\n"
           "    valid configurations have every bound term at most _threshold, tested only\n"
           "    once the configuration is complete (no hoisting).")

    def part_state(self, index: int) -> list[str]:
        return ["_threshold", "_visits", "_skipped", "_cuts", "_removed", f"_cut_{index}"]

    def threshold_prologue(self) -> None:
        largest = self.largest_constant_bound()
        self.emit(f"_cut_0 = 0 if {largest} > _threshold else -1  # level of the first cut" if largest
                  else "_cut_0 = -1  # level of the first cut")

    def enter(self, index: int) -> None:
        super().enter(index)
        self.emit(f"_visits[{index}] += 1")
        self.emit(f"_cut_{index + 1} = _cut_{index}")
        self.emit(f"if _cut_{index + 1} >= 0:")
        self.emit(f"    _skipped[{index}] += 1")

    def test_bound(self, item: Item) -> None:
        level = self.levels_entered
        self.emit(f"if _cut_{level} < 0 and {item.name} > _threshold:")
        self.emit(f"    _cut_{level} = {level - 1}")
        self.emit(f"    _cuts[{level - 1}] += 1")

    def leaf(self) -> None:
        last = f"_cut_{len(self.plan.levels)}"
        self.emit(f"if {last} >= 0:")
        self.emit(f"    _removed[{last}] += 1")
        self.emit("    continue")
        super().leaf()


class Rank(BoundedNest):
    ENDS_LOOPS = DIVISOR_LOOPS = True
    SIGNATURE = "rank(_threshold, _bounds, _terms, _rows)"
    DOC = ("The len(_bounds) valid configurations with the smallest bounds (at most _threshold),\n"
           "    as a max-heap: branch and bound, cutting subtrees whose bound already exceeds the\n"
           "    largest bound kept. Returns how many were kept.")
    RESULT = "_size"
    PART_CALL = "_size, _limit = {call}"

    def part_state(self, index: int) -> list[str]:
        return ["_threshold", "_bounds", "_terms", "_rows", "_row", "_size", "_limit"]

    def part_prologue(self) -> None:
        self.top_return = "_size, _limit"

    def prologue(self) -> None:
        self.emit("_size = 0")
        self.threshold_prologue()
        self.emit(f"_row = np.empty({len(self.plan.levels)})")

    def leaf(self) -> None:
        terms = self.plan.specialized.bound_terms
        self.emit(f"_bound = {terms[0]}")
        self.emit("_term = 0")
        for index, term in enumerate(terms[1:], 1):
            self.emit(f"if {term} > _bound:")
            self.emit(f"    _bound = {term}")
            self.emit(f"    _term = {index}")
        self.emit("if _bound > _limit:")
        self.emit("    continue")
        for column, level in enumerate(self.plan.levels):
            self.emit(f"_row[{column}] = {value_name(level.iterator)}")
        self.emit("_size = heap_offer(_bounds, _terms, _rows, _size, _bound, _term, _row)")
        self.emit("if _size == _bounds.shape[0]:  # full: only better bounds can still enter")
        self.emit("    _limit = min(_threshold, _bounds[0])")
        self.finish(self.top_return)


#: the functions every module has, in its order (then, with bound terms, :data:`BOUND_FUNCTIONS`)
FUNCTIONS = (Count, SplitNodes, CountWithStats, Fill, Census)
BOUND_FUNCTIONS = (CountPruned, CutAnalysis, Rank)
