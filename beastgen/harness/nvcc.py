"""nvcc, as the CUDA backend, ``calibrate`` and ``nvcc-check`` run it.

The backend compiles a kernel's source as it is (C++, no ``extern "C" {}`` wrapped around it, as
``nvcc-check`` compiles it: a kernel that includes cuda_fp16.h or cub compiles in both), in a
temporary directory removed afterwards, and keeps nvcc's whole message when it fails. Images are
cached by the sha256 of the source, target, options and ``nvcc --version``, written atomically (a
temporary file renamed into place), so two tunes at once never read a torn image. nvcc and its
children (cicc, ptxas) run in the caller's process group: the benchmark worker leads its own, so
killing it on a compile timeout kills them too (``isolate.Isolated``).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from ..errors import BeastError

#: characters of nvcc's message kept for a compile failure
MESSAGE_CHARS = 4000


class NvccError(Exception):
    """nvcc failed on one source; the message is nvcc's own (paths of the temporary directory cut)."""


def nvcc_path(who: str = "nvcc-check") -> str:
    """The nvcc on PATH; BeastError (naming ``who`` needs it) when there is none."""
    path = shutil.which("nvcc")
    if path is None:
        raise BeastError(f"{who} needs nvcc (the CUDA toolkit) on PATH, and it is not there: "
                         "install the CUDA toolkit or add its bin/ directory to PATH")
    return path


@functools.lru_cache(maxsize=None)
def supported_arches(nvcc: str) -> tuple[int, ...]:
    """The real architectures this nvcc compiles for, as numbers (75, 80, ..., 120), sorted."""
    try:
        out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BeastError(f"cannot run {nvcc} --list-gpu-arch: {e}") from None
    arches = sorted({int(m) for m in re.findall(r"compute_(\d+)\b", out.stdout)})
    if out.returncode != 0 or not arches:
        raise BeastError(f"{nvcc} --list-gpu-arch listed no architecture: {out.stderr.strip()[:300]}")
    return tuple(arches)


@functools.lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    """The release line of ``nvcc --version`` ("release 13.0, V13.0.88"), the whole text if none."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BeastError(f"cannot run {nvcc} --version: {e}") from None
    release = re.search(r"release [^\n]*", out.stdout)
    return release[0].strip() if release else out.stdout.strip()


def compile_target(capability: tuple[int, int], supported: tuple[int, ...]) -> tuple[str, str]:
    """(``"cubin"``, ``"sm_XY"``) for a GPU of compute ``capability`` this nvcc knows;
    (``"ptx"``, ``"compute_XY"``) of its newest architecture for a GPU newer than it (the driver
    compiles the PTX); BeastError for a GPU older than its oldest architecture."""
    wanted = capability[0] * 10 + capability[1]
    if wanted in supported:
        return "cubin", f"sm_{wanted}"
    if wanted < supported[0]:
        raise BeastError(
            f"this nvcc compiles for sm_{supported[0]} and newer, and the GPU is sm_{wanted} "
            f"(compute capability {capability[0]}.{capability[1]}): install a CUDA toolkit that "
            "still supports it (CUDA 12.x compiles for sm_50 and newer)")
    return "ptx", f"compute_{max(a for a in supported if a <= wanted)}"


def compile_cuda(source: str, nvcc: str, target: str, arch: str, options=(),
                 cache_dir: str | None = None) -> bytes:
    """The cubin or PTX (``target``) of ``source`` for ``arch``; NvccError with nvcc's message."""
    options = list(options)
    path = None
    if cache_dir:
        key = hashlib.sha256(repr((source, target, arch, options, nvcc_version(nvcc))).encode())
        path = os.path.join(cache_dir, f"{key.hexdigest()}.{target}")
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError:
            pass
    with tempfile.TemporaryDirectory(prefix="beastgen-nvcc-") as workdir:
        with open(os.path.join(workdir, "kernel.cu"), "w", encoding="utf-8") as f:
            f.write(source)
        command = [nvcc, f"--{target}", f"-arch={arch}", *options, "-o", f"kernel.{target}",
                   "kernel.cu"]
        try:
            out = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
        except OSError as e:
            raise NvccError(f"cannot run {nvcc}: {e}") from None
        if out.returncode != 0:
            text = (out.stdout + out.stderr).replace(workdir + os.sep, "").strip()
            raise NvccError(f"nvcc --{target} -arch={arch} {' '.join(options)} failed "
                            f"(exit status {out.returncode}):\n{text[:MESSAGE_CHARS]}")
        with open(os.path.join(workdir, f"kernel.{target}"), "rb") as f:
            image = f.read()
    if path is not None:
        _write_atomically(path, image)
    return image


def _write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it there (best effort: a
    cache that cannot be written only costs the next compile)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".part")
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except OSError:
        pass
