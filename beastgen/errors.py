"""Errors beastgen reports to its users: one message naming the cause and the place."""
from __future__ import annotations

import os


class BeastError(Exception):
    """A problem in user input (space file, device, settings) with the place it comes from.

    ``where`` is ``file:line`` when the problem has a location in a space file.
    """

    def __init__(self, message: str, where: str | None = None):
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class SpaceError(BeastError):
    """The space file itself is wrong: syntax, undefined names, cycles, bad iterators."""


class DeviceError(BeastError):
    """An unknown device profile or device property, or no device found."""


class SettingError(BeastError):
    """A ``--set`` for a setting that does not exist or with a value outside its choices."""


def did_you_mean(name: str, candidates) -> str:
    """A ' (did you mean ...?)' suffix for the closest candidates, or ''."""
    import difflib  # here: only an error message needs it

    close = difflib.get_close_matches(name, sorted(candidates), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def a_type(value) -> str:
    """The type of ``value`` with its article, for messages: 'an int', 'a str', 'an ndarray'."""
    name = type(value).__name__
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def display_path(path: str) -> str:
    """Relative to the working directory when the file is under it (stable generated code)."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith(os.pardir) else relative
