"""The generated files' names and writing: ``<space>__<device>__<settings-hash>.py`` in the
generated directory, written only when it changed (so that Numba's on-disk cache stays valid)."""
from __future__ import annotations

import hashlib
import os
import re
from typing import TYPE_CHECKING

from ...support.generated_dir import generated_directory, open_private_directory

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
    yours no one else may write; True if written: whole and writable by you alone, through the
    descriptor of its directory, created private where missing and checked
    (:meth:`beastgen.support.generated_dir.PrivateDirectory.write_if_changed`)."""
    return open_private_directory(os.path.dirname(path)).write_if_changed(os.path.basename(path), source)
