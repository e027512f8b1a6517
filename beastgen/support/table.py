"""Plain-text tables for results."""
from __future__ import annotations

import re

#: a number as the tables print it: a sign, thousands separators, decimals, an exponent, and a unit
#: or percent sign after it ("-1,234.5", "+3", "1.5e-05", "7.24 ms", "43.9%", "inf")
_NUMBER = re.compile(r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+|inf|nan)(?:[eE][+-]?\d+)?"
                     r"(?:\s?[a-zA-Zµ/]+|%)?")
#: cells that stand for "no value" and do not decide a column's alignment
_EMPTY = {"", "-", "—", "n/a"}


def _is_number(cell: str) -> bool:
    return _NUMBER.fullmatch(cell.strip()) is not None


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns aligned: a column whose every value is a number (signed or not, with or without a
    unit) right-aligned with its header, any other column left-aligned."""
    table = [[str(cell) for cell in row] for row in [headers, *rows]]
    widths = [max(len(cell) for cell in column) for column in zip(*table)]
    numeric = [all(_is_number(cell) for cell in column[1:] if cell.strip() not in _EMPTY)
               and any(cell.strip() not in _EMPTY for cell in column[1:])
               for column in zip(*table)]

    def line(cells):
        return "  ".join(cell.rjust(width) if right else cell.ljust(width)
                         for cell, width, right in zip(cells, widths, numeric)).rstrip()

    rule = ["-" * width for width in widths]
    return "\n".join([line(table[0]), "  ".join(rule), *map(line, table[1:])])
