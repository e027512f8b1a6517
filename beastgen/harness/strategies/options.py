"""A strategy's options, as Kernel Tuner's strategies declare theirs: one table per strategy (or
per recipe of one), ``name: Option(description, default)``, every constant of the strategy in it.
The user sets any of them (``beastgen tune --strategy-option NAME=VALUE``, or
``tune(..., strategy_options={NAME: VALUE})``); an unknown name or a value of the wrong kind is
refused with the names the table has. The documentation is generated from the table
(:func:`markdown`)."""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import NamedTuple

from ...errors import BeastError


class Option(NamedTuple):
    description: str
    default: int | float
    low: float = 0  # the smallest value allowed
    high: float = math.inf  # the largest


def resolve(table: dict[str, Option], given: dict, what: str, others: dict | None = None) -> SimpleNamespace:
    """Every option of ``table`` (``what`` names it in messages), ``given`` ones replacing the
    defaults (numbers, or their text from the command line). ``others``: {option name: where it
    belongs} for names that are options elsewhere (a message says so instead of "unknown")."""
    chosen = {name: option.default for name, option in table.items()}
    for name, value in given.items():
        if name not in table:
            where = (others or {}).get(name)
            known = ", ".join(f"{n} ({o.default:g})" for n, o in table.items())
            raise BeastError(f"{name!r} is not an option of {what}"
                             + (f" (it is one of {where})" if where else "")
                             + (f"; its options: {known}" if table else "; it takes none"))
        chosen[name] = _value(name, value, table[name], what)
    return SimpleNamespace(**chosen)


def _value(name: str, value, option: Option, what: str):
    kind = type(option.default)
    try:
        if isinstance(value, str):
            number = int(value) if kind is int else float(value)
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or (
                kind is int and value != int(value)):
            raise ValueError
        else:
            number = kind(value)
    except (ValueError, OverflowError):
        raise BeastError(f"option {name} of {what} takes {'an integer' if kind is int else 'a number'}, "
                         f"not {value!r} (default {option.default:g})") from None
    if not option.low <= number <= option.high:
        span = f"at least {option.low:g}" if math.isinf(option.high) else \
            f"between {option.low:g} and {option.high:g}"
        raise BeastError(f"option {name} of {what} must be {span}, not {number:g}")
    return number


def parse_assignments(texts: list[str]) -> dict[str, str]:
    """``["NAME=VALUE", ...]`` (``--strategy-option``, repeatable) as {NAME: VALUE}."""
    options = {}
    for text in texts:
        name, equals, value = text.partition("=")
        if not equals or not name.strip() or not value.strip():
            raise BeastError(f"--strategy-option takes NAME=VALUE, not {text!r}")
        options[name.strip()] = value.strip()
    return options


def markdown(table: dict[str, Option]) -> str:
    """The table as a Markdown table: name, default, description."""
    lines = ["| option | default | what it sets |", "|---|---|---|"]
    lines += [f"| `{name}` | {option.default:g} | {option.description} |" for name, option in table.items()]
    return "\n".join(lines)
