"""The native count and enumeration: the C target (:mod:`.codegen.c_nest`) compiled by the system C
compiler into a shared library beside the generated module, and called through ctypes (which
releases the GIL, so threads share the work as the Numba nest's do).

The library's file name holds the sha256 of its C source, so a changed plan never loads a stale
library; the plan cache records the library's own sha256, checked before it is loaded. Where no C
compiler is found (``$CC``, ``cc``, ``gcc``, ``clang``), the plan is one the C target does not print,
or ``BEASTGEN_NATIVE=0``, counting and enumerating go through Numba as before.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys

NATIVE_ENV = "BEASTGEN_NATIVE"
#: -fwrapv: 64-bit integers wrap as Numba's do; no -ffast-math (NaN and infinities must follow IEEE)
C_FLAGS = ["-O2", "-fwrapv", "-shared", "-fPIC"]
SOURCE_SUFFIX, LIBRARY_SUFFIX = ".c", ".so"
FUNCTIONS = ("count", "split_nodes")


def enabled() -> bool:
    return os.environ.get(NATIVE_ENV, "1").strip().lower() not in ("0", "no", "off", "false")


def c_compiler() -> str | None:
    chosen = os.environ.get("CC")
    if chosen:
        return shutil.which(chosen.split()[0])
    return next((found for name in ("cc", "gcc", "clang") if (found := shutil.which(name))), None)


def library_path(directory: str, space_name: str, c_source: str) -> str:
    """Where the library of ``c_source`` lives: named by its sha256, so settings that change only
    what the count does not read (a problem size read by bound terms alone) share one library."""
    digest = hashlib.sha256(c_source.encode()).hexdigest()[:16]
    return os.path.join(directory, f"{space_name}__c{digest}{LIBRARY_SUFFIX}")


def build_library(directory: str, space_name: str, c_source: str) -> str | None:
    """The compiled library of ``c_source`` (compiled unless already there), its source beside it;
    None when there is no C compiler, or it fails (said on stderr: counting goes on with Numba)."""
    target = library_path(directory, space_name, c_source)
    if os.path.exists(target):
        return target
    compiler = c_compiler()
    if compiler is None:
        return None
    stem = os.path.splitext(target)[0]
    source = stem + SOURCE_SUFFIX
    # per process, renamed into place: workers on one machine may compile it at once
    tmp_source, tmp = f"{stem}.{os.getpid()}{SOURCE_SUFFIX}", f"{target}.{os.getpid()}.tmp"
    try:
        with open(tmp_source, "w", encoding="utf-8") as f:
            f.write(c_source)
    except OSError as e:
        print(f"beastgen: cannot write {tmp_source} ({e.strerror or e}); counting with Numba",
              file=sys.stderr)
        return None
    try:
        subprocess.run([compiler, *C_FLAGS, "-o", tmp, tmp_source, "-lm"], check=True,
                       capture_output=True, text=True)
        os.replace(tmp_source, source)
        os.replace(tmp, target)
    except (OSError, subprocess.CalledProcessError) as e:
        detail = (getattr(e, "stderr", "") or str(e)).strip().splitlines()
        print(f"beastgen: the C compiler ({compiler}) failed on {tmp_source}"
              f"{': ' + detail[0] if detail else ''}; counting with Numba", file=sys.stderr)
        return None
    return target


class NativeNest:
    """The library's ``count(lo, hi)`` and ``split_nodes()``, with the Numba nest's signatures, and
    its ``fill`` and ``count_claimed``, which threads share by claiming split nodes (see
    :class:`beastgen.compiler.codegen.c_nest.CClaimingWriter`)."""

    def __init__(self, path: str):
        self.path = path
        library = ctypes.CDLL(os.path.abspath(path))
        self.count = library.count
        self.count.argtypes = [ctypes.c_int64, ctypes.c_int64]
        self.count.restype = ctypes.c_int64
        self.split_nodes = library.split_nodes
        self.split_nodes.argtypes = []
        self.split_nodes.restype = ctypes.c_int64
        self.fill = library.fill  # rows of split nodes claimed from a shared counter
        self.fill.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                              ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_int64]
        self.fill.restype = ctypes.c_int64
        self.count_claimed = library.count_claimed
        self.count_claimed.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        self.count_claimed.restype = ctypes.c_int64

    @property
    def source_path(self) -> str:
        """The C source the library was compiled from (beside it)."""
        return os.path.splitext(self.path)[0] + SOURCE_SUFFIX

    def function(self, name: str):
        return {"count": self.count, "split_nodes": self.split_nodes}[name]


def load(path: str) -> NativeNest | None:
    """The library at ``path``; None (said on stderr: counting goes on with Numba) when it does not load."""
    try:
        return NativeNest(path)
    except (OSError, AttributeError) as e:
        print(f"beastgen: cannot load {path} ({e}); counting with Numba", file=sys.stderr)
        return None
