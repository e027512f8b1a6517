"""Output files written whole or not at all.

:class:`AtomicOutput` checks the path *before* the work (it creates the directory and, for a
moment, an empty temporary file next to the target, so a bad path fails at once with one clear
error), the work writes a temporary file made when the ``with`` is entered, and only a finished
write renames it onto the target. An error, a full disk, Ctrl-C, SIGTERM or SIGHUP removes the
temporary file; a check whose work fails before its output is written leaves nothing: no file that
looks complete, and no ``.partial``, is left behind.
"""
from __future__ import annotations

import csv
import os
import re
import tempfile

from ..errors import BeastError


class AtomicOutput:
    """``with AtomicOutput(path) as tmp:`` write ``tmp``; it becomes ``path`` on success only.
    Construct it before the work: the constructor is the check (it leaves no file)."""

    def __init__(self, path: str):
        self.path = path
        self.temporary = None
        if os.path.isdir(os.path.abspath(path)):
            raise BeastError("the output is a directory; give a file name", path)
        self._create()
        self.discard()

    def _create(self) -> None:
        """The temporary file beside the target (its directory made where missing)."""
        target = os.path.abspath(self.path)
        directory = os.path.dirname(target)
        try:
            os.makedirs(directory, exist_ok=True)
            handle, self.temporary = tempfile.mkstemp(
                prefix=f".{os.path.basename(target)}.", suffix=".partial", dir=directory)
            os.close(handle)
            os.chmod(self.temporary, 0o666 & ~_umask())  # as open() would create it
        except FileExistsError:
            raise BeastError("cannot write the output there: a part of its directory is a file",
                             self.path) from None
        except (OSError, ValueError) as e:
            raise BeastError(f"cannot write the output there: {_reason(e)}", self.path) from None

    def __enter__(self) -> str:
        self._create()
        return self.temporary

    def __exit__(self, kind, error, traceback) -> bool:
        if kind is None:
            try:
                os.replace(self.temporary, self.path)
                self.temporary = None
                return False
            except OSError as e:
                error, kind = e, OSError
        self.discard()
        if isinstance(error, OSError):
            raise BeastError(f"cannot write the output: {_reason(error)}", self.path) from None
        return False

    def discard(self) -> None:
        """Remove the temporary file, if any (the target is left as it was)."""
        if self.temporary is not None:
            try:
                os.unlink(self.temporary)
            except OSError:
                pass
            self.temporary = None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _reason(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error)


#: what a spreadsheet reads as the start of a formula (OWASP, "CSV injection"): ``=``, ``+``,
#: ``-``, ``@``, a tab, a carriage return
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: a text that is a plain number (``-2``, ``+1.5e3``): a spreadsheet reads it as that number
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def write_csv(path: str, names, rows, text_columns=()) -> None:
    """A header and the rows, quoted where needed by the csv module (a value ``a,b`` stays one field).
    A text value (in a column of ``text_columns``, by index) that a spreadsheet would run as a
    formula (it starts with one of :data:`FORMULA_STARTS`: ``=HYPERLINK(...)``, ``-2+3``,
    ``@SUM(1)``) is written with a leading ``'``, as OWASP recommends; numbers, negative ones
    included, and texts that are plain numbers are written as they are."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(names)
        if text_columns:
            rows = (_defused(row, text_columns) for row in rows)
        writer.writerows(rows)


def _defused(row, text_columns) -> list:
    row = list(row)
    for i in text_columns:
        value = row[i]
        if isinstance(value, str) and value.startswith(FORMULA_STARTS) \
                and not _PLAIN_NUMBER.fullmatch(value):
            row[i] = "'" + value
    return row


def write_parquet(path: str, configs) -> None:
    """A structured array as a Parquet file, a column per field, written by pyarrow from the fields
    copied contiguous (a pandas DataFrame in between took twice as long)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = field_columns(configs)
    pq.write_table(pa.Table.from_arrays([arrow_array(c) for c in columns.values()],
                                        names=list(columns)), path)


def arrow_array(column):
    """A contiguous NumPy column as a pyarrow array: numbers and bools from their buffers (pyarrow's
    own conversion imports pandas, a quarter of a second), anything else (strings) converted."""
    import numpy as np
    import pyarrow as pa

    if column.dtype == np.bool_:
        bits = np.packbits(column, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(column), [None, pa.py_buffer(bits)])
    if column.dtype.kind in "if":
        return pa.Array.from_buffers(pa.from_numpy_dtype(column.dtype), len(column),
                                     [None, pa.py_buffer(column)])
    return pa.array(column)


def field_columns(configs, block: int = 8192) -> dict:
    """The fields of a structured array as contiguous arrays, copied a block of rows at a time: each
    row comes from memory once, not once per field (about twice as fast)."""
    import numpy as np

    names = configs.dtype.names
    columns = {name: np.empty(len(configs), dtype=configs.dtype[name]) for name in names}
    for start in range(0, len(configs), block):
        rows = configs[start:start + block]
        for name in names:
            columns[name][start:start + block] = rows[name]
    return columns
