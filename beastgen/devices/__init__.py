"""The device a space is specialized for: its profile (the properties its bound terms and filters
read) from the built-in database or a ``.toml`` file (:mod:`.profiles`), or read from the device
itself: a CUDA GPU through its driver (:mod:`.cuda`, ``--device auto``), an OpenCL device through
pyopencl (:mod:`.opencl`, ``--device opencl:N`` of ``tune``)."""
from __future__ import annotations

import os
from pathlib import Path

from .cuda import detect
from .profiles import DEFAULT_DEVICE, DeviceProfile, builtin_profiles, named_profile, read_profile_file


def load_profile(spec: str | os.PathLike | None) -> DeviceProfile:
    """The profile for ``--device``: None (default), a built-in key/alias, a .toml path, or "auto"."""
    if spec is None:
        return builtin_profiles()[DEFAULT_DEVICE]
    spec = os.fspath(spec)
    if spec.lower().endswith(".toml"):
        return read_profile_file(Path(spec))
    if spec.strip().lower() == "auto":
        return detect()
    return named_profile(spec)
