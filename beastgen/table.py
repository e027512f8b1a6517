"""Plain-text tables for results."""
from __future__ import annotations


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns aligned: text left, numbers right."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]

    def line(cells):
        out = []
        for cell, width in zip(cells, widths):
            cell = str(cell)
            numeric = cell.replace(",", "").replace(".", "").replace("-", "").isdigit()
            out.append(cell.rjust(width) if numeric else cell.ljust(width))
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])
