"""beastgen: declarative GPU tuning spaces compiled into fast exact enumerators (BEAST), ranked and
pruned with lower bounds (Telamon).

A space file does ``import beastgen as beast`` and declares settings, iterators, derived values and
filters. A filter REJECTS a configuration when it is true.
"""
from .errors import BeastError, DeviceError, SettingError, SpaceError
from .compiler.language import bound_terms
from .compiler.language.nodes import (
    bound, derived, device, filter, iterator, max, min, range, setting, values, where,
)
from .compiler.runtime import Space
from .loading import load
from .harness.kernel import kernel
from .version import __version__

__all__ = [
    "BeastError", "DeviceError", "SettingError", "SpaceError", "Space", "load",
    "setting", "device", "range", "values", "iterator", "derived", "filter", "bound", "where",
    "min", "max", "kernel", "bound_terms", "__version__",
]
