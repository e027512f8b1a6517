"""Settings resolution: every setting's value, the defaults overridden by the caller's values
(text from the command line converted to the default's type) and checked."""
from __future__ import annotations

from ..language import nodes as L
from ...errors import SettingError, a_type, did_you_mean
from ..model import Space


def resolve_settings(space: Space, overrides: dict) -> dict:
    """Every setting's value: defaults, overridden (and type-converted) by ``overrides``."""
    known = space.settings
    values = {}
    for name, value in overrides.items():
        if name not in known:
            raise SettingError(f"no setting named '{name}' in space '{space.name}'"
                               + did_you_mean(name, known)
                               + (f"; settings: {', '.join(known)}" if known else "; it has none"))
    for name, var in known.items():
        setting: L.Setting = var.obj
        value = overrides.get(name, setting.default)
        value = _convert(name, value, setting.default)
        problem = setting.problem(value)
        if problem:
            raise SettingError(f"setting '{name}' = {value!r} {problem}", var.origin)
        values[name] = value
    return values


def _convert(name, value, default):
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() in ("1", "true", "yes"):
                return True
            if value.lower() in ("0", "false", "no"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(value, 0)
        return float(value)
    except ValueError:
        raise SettingError(f"setting '{name}' expects {a_type(default)} "
                           f"(default {default!r}), got {value!r}") from None
