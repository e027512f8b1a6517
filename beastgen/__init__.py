"""beastgen: declarative GPU tuning spaces compiled into fast exact enumerators (BEAST), ranked and
pruned with lower bounds (Telamon).

A space file does ``import beastgen as beast`` and declares settings, iterators, derived values and
filters. A filter REJECTS a configuration when it is true.
"""
__version__ = "0.1.0"

from .errors import BeastError, DeviceError, SettingError, SpaceError  # noqa: E402
from .language import (  # noqa: E402
    bound, derived, device, filter, iterator, max, min, range, setting, values, where,
)
from .model import Space, load  # noqa: E402
from .harness.kernel import kernel  # noqa: E402
from . import bound_terms  # noqa: E402

__all__ = [
    "BeastError", "DeviceError", "SettingError", "SpaceError", "Space", "load",
    "setting", "device", "range", "values", "iterator", "derived", "filter", "bound", "where",
    "min", "max", "kernel", "bound_terms", "__version__",
]
