"""The generated C functions, one class each: ``count`` and ``split_nodes`` (:class:`CCount`,
:class:`CSplitNodes`), and the nests that threads share by claiming split nodes, ``fill`` and
``count_claimed`` (:class:`CFill`, :class:`CCountClaimed`). Each states what it adds to the walk
(:mod:`.builder`): its head, its prologue, its bookkeeping at a split node, its leaf.
"""
from __future__ import annotations

from ...plan import Plan
from .builder import CNest
from .expression import Unsupported, c_literal, c_name


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
