"""What the driver ships to a Dask worker, so that a worker needs nothing from the driver's file
system: the space file with the local modules it imports and the kernel sources beside it
(:class:`SpaceFiles`), written on the worker into its own generated directory and loaded there; and
the check that the worker generates the same enumerator as the driver (:func:`check_same_enumerator`).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from dataclasses import dataclass

from ..compiler.model import imported_module_names
from ..errors import BeastError
from ..support.generated_dir import generated_directory, open_private_directory
from ..version import __version__

#: the most a space's shipped files may hold (they travel with every recipe)
MAX_SHIPPED_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class SpaceFiles:
    """The space file (``name``) and the files beside it that it needs, as (relative path, text)."""

    name: str
    files: tuple
    digest: str  # sha256 over the names and texts: the worker's copy is keyed by it

    @classmethod
    def of(cls, space_path: str, extra: tuple = ()) -> "SpaceFiles":
        """The space file at ``space_path``, the modules beside it that it imports (recursively),
        and the ``extra`` files (paths relative to its directory: kernel sources)."""
        directory = os.path.dirname(os.path.abspath(space_path))
        name = os.path.basename(space_path)
        wanted, texts = [name, *extra], {}
        while wanted:
            relative = wanted.pop()
            if relative in texts:
                continue
            path = os.path.join(directory, relative)
            if os.path.normpath(relative).startswith(os.pardir):
                raise BeastError("a file the space needs lies outside its directory, so it cannot "
                                 "be shipped to the Dask workers: move it beside the space, or name "
                                 "it by an absolute path that the workers see", path)
            try:
                with open(path, encoding="utf-8") as f:
                    texts[relative] = f.read()
            except (OSError, UnicodeDecodeError) as e:
                raise BeastError(f"cannot read a file the space needs on the Dask workers: "
                                 f"{getattr(e, 'strerror', None) or e}", path) from None
            if relative.endswith(".py"):
                wanted += _local_imports(texts[relative], path, directory)
        if sum(len(t) for t in texts.values()) > MAX_SHIPPED_BYTES:
            raise BeastError(f"the space and the files beside it that it imports hold over "
                             f"{MAX_SHIPPED_BYTES >> 20} MiB: too much to ship to the Dask workers",
                             space_path)
        files = tuple(sorted(texts.items()))
        digest = hashlib.sha256(repr(files).encode("utf-8", "surrogatepass")).hexdigest()
        return cls(name, files, digest)

    def materialize(self) -> str:
        """Write the files into this process's generated directory (once per digest), through the
        descriptors of directories created there and checked (:mod:`beastgen.support.generated_dir`); the path of
        the space file there."""
        directory = open_private_directory(worker_generated_dir())
        directory = directory.subdirectory("shipped-spaces").subdirectory(self.digest[:24])
        for relative, text in self.files:
            *folders, name = os.path.normpath(relative).split(os.sep)
            if os.path.isabs(relative) or os.pardir in folders or name in (os.pardir, os.curdir):
                raise BeastError("a shipped file's name leads outside the space's directory",
                                 relative)
            place = directory
            for folder in folders:
                place = place.subdirectory(folder)
            place.write_if_changed(name, text)
        return os.path.join(directory.path, self.name)


def _local_imports(source: str, path: str, directory: str) -> list[str]:
    """Files beside the space (``directory``) that ``source`` imports: ``name.py``, or every
    ``.py`` file of the package ``name/``."""
    found = []
    for name in sorted(imported_module_names(source, path)):
        if os.path.isfile(os.path.join(directory, f"{name}.py")):
            found.append(f"{name}.py")
        elif os.path.isfile(os.path.join(directory, name, "__init__.py")):
            for base, _, files in os.walk(os.path.join(directory, name)):
                found += [os.path.relpath(os.path.join(base, f), directory)
                          for f in files if f.endswith(".py")]
    return found


def worker_generated_dir() -> str:
    """Where a worker writes generated code and shipped spaces: the default generated directory of
    the worker's environment (never its working directory)."""
    return generated_directory()


@contextlib.contextmanager
def importable_beside(space_path: str):
    """The shipped space's directory first on ``sys.path`` while it loads (its local imports)."""
    directory = os.path.dirname(space_path)
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(directory)


def comparable(source: str, space_path: str) -> str:
    """Generated source without what depends on where the space file lies: the ``regenerate:``
    line and the space's path in the locations of its declarations."""
    lines = (line for line in source.splitlines() if not line.startswith("regenerate: "))
    return "\n".join(lines).replace(space_path, "<space>")


def check_same_version(driver_version: str) -> None:
    """A clear error when this worker's beastgen is another version than the driver's."""
    if driver_version != __version__:
        raise BeastError(f"Dask worker {os.uname().nodename} runs beastgen {__version__}, the driver "
                         f"beastgen {driver_version}: install the same version on the workers")


def check_same_enumerator(driver_version: str, driver_source: str, driver_space_path: str,
                          worker_source: str, worker_space_path: str) -> None:
    """A clear error when this worker's beastgen differs from the driver's (its version), or
    generates another enumerator (the first line that differs)."""
    check_same_version(driver_version)
    host = os.uname().nodename
    ours = comparable(worker_source, worker_space_path).splitlines()
    theirs = comparable(driver_source, driver_space_path).splitlines()
    if ours == theirs:
        return
    line = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    mine = ours[line] if line < len(ours) else "(end of file)"
    driver = theirs[line] if line < len(theirs) else "(end of file)"
    raise BeastError(f"Dask worker {host} generates another enumerator than the driver with the same "
                     f"beastgen {__version__} (generated source sha256 "
                     f"{hashlib.sha256(chr(10).join(ours).encode()).hexdigest()[:12]} against "
                     f"{hashlib.sha256(chr(10).join(theirs).encode()).hexdigest()[:12]}); first "
                     f"difference at line {line + 1}: worker {mine.strip()!r}, driver "
                     f"{driver.strip()!r} (another numpy, numba or Python on the worker?)",
                     driver_space_path)
