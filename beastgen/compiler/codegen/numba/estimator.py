"""The estimator writer: Chen's stratified sampling of the loop nest (``chen``), generated beside
the nests."""
from __future__ import annotations

from ...specialize import Item
from .builder import NJIT, NumbaNest, value_name


class ChenWriter(NumbaNest):
    """``chen``: Chen's heuristic sampling (P. C. Chen, SIAM J. Comput. 21(2), 1992), as Telamon
    estimates its space sizes, written level-synchronously over the nest.

    A tree node of depth ``d`` binds the first ``d`` units, a unit being a scanned level and the
    solved levels right below it (tested inside its scan, as in ``probe``); solved levels above
    every scanned one bind once per run. Each depth keeps per stratum a representative (its
    iterator values and its parent's slot at the depth above, so that restoring it walks up its
    ancestors), a weight and a key. The strata of depth ``d`` are all expanded before any of depth
    ``d + 1``: an order strictly decreasing along the tree, as Chen requires.

    The stratifier is (depth, ``_h``), with ``_h`` the number of values of the next unit that pass
    its filters given the child's bindings (a one-step lookahead, Telamon's "remaining choices"
    for our nest). A child with ``_h == 0`` has no completion and is dropped: exact, it would
    contribute 0. The key is ``_h`` itself, not a log-bucket of it: on gemm (h100) at equal time
    the exact key gave 95% intervals of 27-29% of the exact count against 30-38% for
    ``int(math.log2(_h))`` (20,000 runs: 3.45 s against 3.07 s). Merging fewer strata makes each
    run cheaper but the representatives stand for less similar subtrees, and the variance grows
    faster than the cost shrinks. A linear search finds a key's slot: a depth has few strata.
    """

    #: the stratum key of a child whose next unit lets ``_h`` values through
    KEY = "_h"
    #: units the lookahead spans. 2 counts the grandchildren: on gemm, 18 times the work per run
    #: for 1/100 of the variance (intervals 2.3 times narrower at equal time), but its cost is
    #: the product of three domain sizes per child, so it is not the default
    LOOKAHEAD = 1
    SIGNATURE = "chen(_runs, _seed)"
    DOC = ("Chen's heuristic sampling: _runs independent runs, each unbiased. A run keeps one\n"
           "    representative and a weight per stratum (depth, passes of the next level: see\n"
           "    beastgen's ChenWriter) and expands the strata depth by depth; a child joins its stratum's\n"
           "    weight and replaces its representative with probability (its weight) / (the new\n"
           "    weight); the run's estimate is the weight of the leaves it reached. Returns the sum\n"
           "    and sum of squares of the runs' estimates.")

    def write(self) -> list[str]:
        levels = self.plan.levels
        self.lines = [NJIT, *self.header()]
        prefix = 0
        while prefix < len(levels) and levels[prefix].solved:
            prefix += 1
        units: list[list[int]] = []
        for index in range(prefix, len(levels)):
            if levels[index].solved:
                units[-1].append(index)
            else:
                units.append([index])
        self.emit("np.random.seed(_seed)")
        self.emit("_live = _runs > 0  # true where it is read: see beastgen's ChenWriter.reject")
        self.emit("_total = 0.0")
        self.emit("_total_sq = 0.0")
        self.emit("for _run in range(_runs):")
        self.depth += 1
        self.loops += 1
        self._unit_levels(range(prefix))  # solved levels above every loop: one value, tested once
        self.emit("_est = 0.0  # this run's estimate: the weights of the leaves reached")
        if not units:
            self.emit("_est = 1.0  # nothing to scan: the one configuration passed")
        self.emit("_w0 = [1.0]  # depth 0: the root, alone in its stratum")
        for u in range(len(units)):
            self._expand(units, u)
        self.emit("_total += _est")
        self.emit("_total_sq += _est * _est")
        self.depth = 1
        self.emit("return _total, _total_sq")
        return self.lines

    def reject(self, item: Item) -> None:
        # Numba prunes a branch whose test is constant (a guard such as `if n == 0` on a constant
        # divisor): a rejection always taken would make the code after it dead, and the lists of
        # representatives' values, typed by their appends, untypable. Behind `_live` it never is.
        self.emit("if _live:")
        self.emit("    continue")

    def _unit_levels(self, indices) -> None:
        """Loop over (or solve) levels with their items: a rejection continues the innermost loop."""
        for index in indices:
            self.walk_level(self.plan.levels[index], index)

    def _value(self, index: int) -> str:
        return value_name(self.plan.levels[index].iterator)

    def _expand(self, units: list[list[int]], u: int) -> None:
        """Expand every representative of depth ``u`` over unit ``u``: merge each child that has a
        completion into its stratum of depth ``u + 1``, or add its weight to the run's estimate at
        the last unit."""
        last, nxt = u == len(units) - 1, u + 1
        names = ", ".join(self.plan.levels[i].iterator.name for i in units[u])
        self.emit(f"# -- depth {u}: expand each stratum's representative over {names}")
        if not last:
            self.emit(f"_w{nxt} = [0.0 for _ in range(0)]  # depth {nxt}: the strata's weights,")
            self.emit(f"_key{nxt} = [0 for _ in range(0)]  # keys (the stratifier),")
            self.emit(f"_par{nxt} = [0 for _ in range(0)]  # the representatives' parents at depth {u}")
            for i in units[u]:
                self.emit(f"_v{nxt}_{self._value(i)} = []  # and their values")
        depth, loops = self.depth, self.loops
        self.emit(f"for _r in range(len(_w{u})):")
        self.depth += 1
        self.loops += 1
        self.emit(f"_wr = _w{u}[_r]")
        if u:
            self._restore(units, u)
        self._unit_levels(units[u])
        if last:
            self.emit("_est += _wr  # a leaf")
            self.depth, self.loops = depth, loops
            return
        self.emit("_h = 0  # the lookahead: values of the next unit that pass its filters")
        inner = self.depth, self.loops
        self._unit_levels([i for unit in units[nxt:nxt + self.LOOKAHEAD] for i in unit])
        self.emit("_h += 1")
        self.depth, self.loops = inner
        self.emit("if _h == 0:  # no completion: would contribute 0")
        self.emit("    continue")
        self.emit(f"_key = {self.KEY}")
        self.emit("_slot = -1")
        self.emit(f"for _i in range(len(_key{nxt})):")
        self.emit(f"    if _key{nxt}[_i] == _key:")
        self.emit("        _slot = _i")
        self.emit("        break")
        self.emit("if _slot < 0:  # a new stratum: this child represents it")
        self.emit(f"    _key{nxt}.append(_key)")
        self.emit(f"    _w{nxt}.append(_wr)")
        self.emit(f"    _par{nxt}.append(_r)")
        for i in units[u]:
            self.emit(f"    _v{nxt}_{self._value(i)}.append({self._value(i)})")
        self.emit("else:  # the stratum grows; the child replaces its representative with probability _wr / W")
        self.emit(f"    _w{nxt}[_slot] += _wr")
        self.emit(f"    if np.random.random() * _w{nxt}[_slot] < _wr:")
        self.emit(f"        _par{nxt}[_slot] = _r")
        for i in units[u]:
            self.emit(f"        _v{nxt}_{self._value(i)}[_slot] = {self._value(i)}")
        self.depth, self.loops = depth, loops

    def _restore(self, units: list[list[int]], u: int) -> None:
        """Bind the units above depth ``u`` to representative ``_r``'s values, walking up its
        parents, then recompute those of their derived values that the levels below read (their
        filters passed already)."""
        levels = self.plan.levels
        self.emit("_p = _r")
        for k in range(u, 0, -1):
            for i in units[k - 1]:
                it = levels[i].iterator
                self.emit(f"{self._value(i)} = _v{k}_{self._value(i)}[_p]")
                if it.value_type == "str":
                    self.emit(f"{it.name} = {it.name}__VALUES[{it.name}__index]")
            if k > 1:
                self.emit(f"_p = _par{k}[_p]")
        restored = [item for unit in units[:u] for i in unit for item in levels[i].body
                    if item.kind == "derived"]
        below = [item for unit in units[u:] for i in unit for item in levels[i].items
                 if item.kind != "bound"]
        needed = {dep for item in below for dep in item.deps}
        for item in reversed(restored):  # a derived value read only by those above is not needed
            if item.name in needed:
                needed.update(item.deps)
        for item in restored:
            if item.name in needed:
                self.place(item)
