"""beastgen: declarative GPU tuning spaces compiled into fast exact enumerators (BEAST), ranked and
pruned with lower bounds (Telamon).

A space file does ``import beastgen as beast`` and declares settings, iterators, derived values and
filters. A filter REJECTS a configuration when it is true.
"""
from .errors import BeastError, DeviceError, SettingError, SpaceError
from .version import __version__

#: loaded on first use, so that a space file's ``import beastgen`` (and a command answered from
#: the plan cache) does not import the compiler, Numba or the harness, and the command line
#: (``beastgen.cli``, which imports this package first) not even the space language
_LAZY = {"Space": ("compiler.runtime", "Space"), "load": ("loading.load", "load"),
         "kernel": ("harness.kernel", "kernel"), "bound_terms": ("compiler.language.bound_terms", None),
         **{name: ("compiler.language.nodes", name) for name in (
             "bound", "derived", "device", "filter", "iterator", "max", "min", "range", "setting",
             "values", "where")}}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'beastgen' has no attribute {name!r}")
    import importlib
    module, attribute = _LAZY[name]
    value = importlib.import_module(f".{module}", __name__)
    value = value if attribute is None else getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "BeastError", "DeviceError", "SettingError", "SpaceError", "Space", "load",
    "setting", "device", "range", "values", "iterator", "derived", "filter", "bound", "where",
    "min", "max", "kernel", "bound_terms", "__version__",
]
