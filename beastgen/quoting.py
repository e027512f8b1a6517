"""User text written into generated source (docstrings, comments) or a shell command line.

The generated module is imported, so text that comes from users (a space or file name, a ``--set``
string, a device profile's name, a path) must never end the docstring or comment it sits in:

- :func:`docstring_text` escapes ``\\``, ``"`` and every character that is not printable, so the
  result holds no quote, newline or NUL that could close a ``\"\"\"`` string or the line, and
  Python reads it back as exactly the original text (``\\x00``, ``\\n``, ``\\u2028``... are escape
  sequences of a normal, non-raw string literal).
- :func:`comment_text` escapes the characters that are not printable, so a comment stays one line.
- :func:`shell_command` quotes each argument for a POSIX shell (``shlex``), and is also safe to
  place in a docstring unchanged, or says that it cannot be given there.
"""
from __future__ import annotations

import shlex


def _escape_unprintable(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def docstring_text(text: str) -> str:
    """``text`` escaped for the inside of a non-raw ``\"\"\"`` string literal; reading the literal
    gives back ``text`` exactly."""
    out = []
    for char in str(text):
        if char in '\\"':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(_escape_unprintable(char))
    return "".join(out)


#: the longest text a comment shows (a listed domain of a million values is not repeated whole)
COMMENT_LIMIT = 10_000


def comment_text(text: str) -> str:
    """``text`` on one line of a ``#`` comment: characters that are not printable are escaped; past
    :data:`COMMENT_LIMIT` characters, cut short with ``...``."""
    text = str(text)
    cut = text[:COMMENT_LIMIT] + (" ..." if len(text) > COMMENT_LIMIT else "")
    return "".join(char if char.isprintable() else _escape_unprintable(char) for char in cut)


def shell_command(arguments: list[str]) -> str | None:
    """The arguments as one POSIX shell command line, or None when it cannot be written in a
    generated docstring unchanged (an argument holds a quote, a backslash or a character that is not
    printable): the docstring's text must be exactly the command a shell runs."""
    command = shlex.join(str(a) for a in arguments)
    return command if docstring_text(command) == command else None
