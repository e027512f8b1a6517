"""The generated files' names and writing: ``<space>__<device>__<settings-hash>.py`` in the
generated directory, written only when it changed (so that Numba's on-disk cache stays valid)."""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
from typing import TYPE_CHECKING

from ...trust import generated_directory, private_directory, trusted_file

if TYPE_CHECKING:
    from ..specialize.ir import Specialized


def generated_path(spec: Specialized, generated_dir: str | None = None) -> str:
    """``<space>__<device>__<settings-hash>.py`` in :func:`generated_directory`."""
    return os.path.join(generated_directory(generated_dir), f"{file_name_part(spec.space.name)}__{file_name_part(spec.device.key)}__"
                                   f"{spec.settings_hash()}.py")


def file_name_part(text: str) -> str:
    """``text`` as a plain file name part (letters, digits, ``_``; never a path): other characters
    become ``_``, and then a short hash of the text keeps different texts apart."""
    plain = re.sub(r"[^A-Za-z0-9_]", "_", text)
    if plain == text:
        return text
    return f"{plain[:40]}_{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def write_if_changed(path: str, source: str) -> bool:
    """Write ``source`` unless the file already holds it (keeps Numba's cache valid) and is one of
    yours no one else may write. True if written: whole (through a temporary file, removed when the
    write fails) and writable by you alone; its directory created private where missing."""
    if trusted_file(path):
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == source:
                    return False
        except (OSError, UnicodeDecodeError):
            pass
    private_directory(os.path.dirname(path))
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # left by a killed process of the same pid: its mode is not ours to trust
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "w",
                       encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True
