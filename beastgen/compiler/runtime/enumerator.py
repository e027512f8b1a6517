"""Enumeration: every valid configuration as a NumPy structured array (natively in one pass,
threads claiming split nodes into their own buffers; Numba's, counted then filled in chunks), or a
pandas DataFrame."""
from __future__ import annotations

import ctypes
import time
from typing import TYPE_CHECKING

from ..language import nodes as L
from ...errors import BeastError
from .chunking import WHOLE, as_chunk, claiming
from .counter import Counter
from .executable import Executable

if TYPE_CHECKING:
    import numpy as np

_FIRST_BUFFER_BYTES = 256 << 20  # a native enumeration's first buffer per thread (virtual memory)
#: column types by value type (string values are stored as indices into their constant tuple)
_DTYPES = {"int": "int64", "str": "int64", "float": "float64", "bool": "bool"}


class Enumerator:
    """``enumerate`` and ``dataframe`` on one :class:`~.executable.Executable` (its
    :class:`~.counter.Counter` counts Numba's chunks first); the result's columns and their types."""

    def __init__(self, executable: Executable, counter: Counter):
        self.executable = executable
        self.counter = counter
        self.rows_hint = 0  # rows of the last whole native enumeration: the room the next one's buffers get

    def enumerate(self, chunk: tuple[int, int] | None = None, jobs: int = 1,
                  progress=None) -> np.ndarray:
        """Every valid configuration, as a structured array with one field per iterator
        (declaration order); string values are mapped back. With ``chunk=(lo, hi)``, those below the
        split nodes lo <= i < hi: chunks partitioning the nodes concatenate to the whole, in order.
        With ``jobs`` > 1, on that many threads (same rows, same order): natively in one pass (see
        :meth:`_enumerate_native`), else counted then written in chunks balanced by a census.
        ``progress(done, seconds)`` hears the share done (natively: of the split nodes begun;
        Numba's: of its chunks counted, then written, on more than one thread)."""
        import numpy as np
        run = self.executable
        if run.plan is None:
            return np.zeros(0, dtype=[(n, np.int64) for n in run.columns])
        jobs = jobs if chunk is None and not run.small else 1
        if chunk is None and run.native is None and (nest := run.numpy_nest()):  # as in count
            return run.run_vectorised(lambda: self.structured({name: column.astype(self.column_dtype(
                run.specialized.items[name])) for name, column in nest.columns().items()}), progress)
        if run.native is not None:
            return self._enumerate_native(as_chunk(chunk), jobs, progress)
        items = run.specialized.items
        strings = {name for name in run.columns if items[name].value_type == "str"}
        dtype = [(name, self.column_dtype(items[name])) for name in run.columns if name not in strings]
        # compile fill for the result's field views: strided ones (Numba's layout 'A') where the
        # result has several fields; a view of under 2 rows would be typed contiguous ('C'), a
        # second compile of fill that the whole enumeration never calls
        result = np.empty(2, dtype=dtype)
        run.compiled("fill", *(np.empty(0, np.int64) if name in strings else result[name]
                               for name in run.plan.order), 0, 0)
        self.counter.compile_chunking(jobs)
        start = time.perf_counter()
        chunks = self.counter.chunks(jobs, chunk)
        def half(first: int):  # the counts are the first half of the work, the fills the second
            return None if progress is None else lambda done, s: progress((first + done) / 2, s)
        counts = [n * run.counted_tail
                  for n in run.in_threads(jobs, [("count", *c) for c in chunks], half(0), start)]
        offsets = np.cumsum([0] + counts)
        result = np.empty(offsets[-1], dtype=dtype)
        # fill writes straight into the result's fields; string values go through their indices
        columns = {name: (np.empty(offsets[-1], dtype=np.int64) if name in strings else result[name])
                   for name in run.columns}
        filled = run.in_threads(jobs, [
            ("fill", *(columns[name][offsets[i]:offsets[i + 1]] for name in run.plan.order), *c)
            for i, c in enumerate(chunks)], half(1), start)
        assert filled == counts, "fill and count disagree"
        run.last_seconds = time.perf_counter() - start
        if progress is not None:
            progress(1.0, run.last_seconds)
        if not strings:
            return result
        return self.structured({name: columns[name] for name in run.columns})

    def _enumerate_native(self, chunk: tuple[int, int], jobs: int, progress=None) -> np.ndarray:
        """:meth:`enumerate` through the native ``fill``, in one pass: each thread claims the next
        split node as it reaches it (uneven nodes balance themselves) and writes its rows, already
        in the result's layout, into the thread's own buffer; the nodes' rows are then gathered in
        walk order into one of these buffers."""
        import numpy as np
        run = self.executable
        items = run.specialized.items
        dtype = np.dtype([(name, self.column_dtype(items[name])) for name in run.columns])
        lo, hi = chunk
        start = time.perf_counter()
        nodes = max(min(hi, run.split_node_count()) - lo, 0)
        next_node = (ctypes.c_int64 * 1)(lo)  # the next split node to claim
        node_rows, node_owner = np.zeros(nodes, dtype=np.int64), np.zeros(nodes, dtype=np.int64)
        fill = run.native.fill

        def rows_of(thread: int) -> np.ndarray:
            state = np.array([-1, 0], dtype=np.int64)  # the node to redo (-1: none), rows kept
            # room untouched costs no memory (pages arrive as rows are written): start with plenty
            rows = np.empty(max(self.rows_hint, _FIRST_BUFFER_BYTES // max(dtype.itemsize, 1)), dtype=dtype)
            while not fill(ctypes.addressof(next_node), lo, hi, state.ctypes.data, rows.ctypes.data, len(rows),
                           node_rows.ctypes.data, node_owner.ctypes.data, thread):
                grown = np.empty(4 * len(rows), dtype=dtype)  # a node did not fit: redo it
                ctypes.memmove(grown.ctypes.data, rows.ctypes.data, int(state[1]) * dtype.itemsize)
                rows = grown
            return rows

        def report():
            progress(min((next_node[0] - lo) / max(nodes, 1), 1.0), time.perf_counter() - start)
        buffers = ([rows_of(0)] if run.small else
                   claiming(max(jobs, 1), rows_of, next_node, report if progress is not None else None))
        if progress is not None:
            progress(1.0, time.perf_counter() - start)
        total = int(node_rows.sum())
        if chunk == WHOLE:
            self.rows_hint = total
        owners = np.unique(node_owner[node_rows > 0])
        # the buffer of the thread with the most rows becomes the result where it has room for
        # them all (else a new array): the other threads' rows join it node by node from the last
        # (memmove), each node's moving to or past where it is, above the rows still to move
        base = max(owners, key=lambda thread: node_rows[node_owner == thread].sum(), default=0)
        result = buffers[base]
        if len(owners) > 1:
            if len(result) < total:
                result = np.empty(total, dtype=dtype)  # growing the buffer would copy it
            source_ends = np.zeros(nodes, dtype=np.int64)
            for thread in owners:
                mine = node_owner == thread
                source_ends[mine] = np.cumsum(node_rows[mine]) * dtype.itemsize + buffers[thread].ctypes.data
            ends = np.cumsum(node_rows) * dtype.itemsize + result.ctypes.data
            sizes = node_rows * dtype.itemsize
            for node in np.flatnonzero(node_rows)[::-1].tolist():
                size, target, source = int(sizes[node]), int(ends[node]), int(source_ends[node])
                if target != source:
                    ctypes.memmove(target - size, source - size, size)
        result.resize(total, refcheck=False)  # drops the room left over (no copy)
        if any(items[name].value_type == "str" for name in run.columns):
            result = self.structured({name: result[name] for name in run.columns})  # indices mapped back
        run.last_seconds = time.perf_counter() - start
        return result

    def structured(self, columns: dict, extra=()) -> np.ndarray:
        """One structured array: iterator fields in declaration order (strings mapped back), then
        ``extra`` (name, array) fields."""
        import numpy as np
        run = self.executable
        items = run.specialized.items
        fields = []
        for name in run.columns:
            column = columns[name]
            if items[name].value_type == "str":
                column = np.array([p.value for p in items[name].domain[1:]])[column.astype(np.int64)]
            fields.append((name, column))
        fields += list(extra)
        n = len(fields[0][1]) if fields else 0
        result = np.empty(n, dtype=[(name, col.dtype) for name, col in fields])
        for name, col in fields:
            result[name] = col
        return result

    def dataframe(self):
        """:meth:`enumerate` as a pandas DataFrame (needs pandas: ``pip install 'beastgen[data]'``)."""
        try:
            import pandas as pd  # optional (beastgen[data])
        except ImportError:
            raise BeastError("plan.dataframe() needs pandas: pip install 'beastgen[data]' (or use "
                             "plan.enumerate(), a NumPy structured array)") from None
        return pd.DataFrame(self.enumerate())

    def column_dtype(self, item) -> np.dtype:
        import numpy as np
        run = self.executable
        if item.value_type in _DTYPES:
            return np.dtype(_DTYPES[item.value_type])
        if item.function is not None:
            return _function_value_dtype(getattr(run.module, item.function.name))
        # values(...) (or a derived value) reading function values: the types Numba gave them
        from ..specialize.value_types import infer_type

        items = run.specialized.items
        parts = item.domain[1:] if item.domain else [item.expr]
        return np.result_type(*(self.column_dtype(items[p.target]) if isinstance(p, L.Ref)
                                else np.dtype(_DTYPES.get(infer_type(p, items), "float64"))
                                for p in parts))


def _function_value_dtype(dispatcher) -> np.dtype:
    """The element type of what a compiled function iterator returns or yields."""
    import numpy as np
    from numba.core import types  # lazy, as in _numba_typeof

    signatures = dispatcher.nopython_signatures
    if not signatures:
        return np.dtype(np.float64)
    returned = signatures[0].return_type
    element = getattr(returned, "yield_type", None) or getattr(returned, "dtype", None) or returned
    if isinstance(element, types.Boolean):
        return np.dtype(np.bool_)
    if isinstance(element, types.Integer):
        return np.dtype(np.int64)
    return np.dtype(np.float64)
