"""T1 JSON spaces (the auto-tuning community's benchmark format) loaded as beastgen spaces.

``ConfigurationSpace.TuningParameters[i]`` becomes a ``ValuesIterator`` named after the parameter,
its ``Values`` string evaluated by the restricted evaluator (:mod:`.restricted`, never ``eval``).
``ConfigurationSpace.Conditions[j]`` (valid when true) becomes a filter ``condition_j`` that
REJECTS when the condition is false: ``Not(<condition>)`` as a beastgen expression tree, so it is
folded, placed at the outermost loop where it can be tested, and compiled like any space file's
expression. A condition that raises (division or modulo by zero) rejects the configuration.

Origins are ``path:TuningParameters[i]`` and ``path:Conditions[j]``. ``Parameters`` lists of the
conditions are hints only: the names a condition reads come from its expression.
"""
from __future__ import annotations

import json
import os

from ..compiler.language import nodes as L
from ..errors import SpaceError
from ..compiler.model import Space, display_path
from .builder import SpaceBuilder
from .restricted import build_condition, evaluate_values


def load_t1(path: str | os.PathLike) -> Space:
    """Read a T1 JSON file into a :class:`beastgen.compiler.model.Space` (no Python source is executed)."""
    path = display_path(os.fspath(path))
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise SpaceError(f"cannot read T1 space file: {e.strerror}", path) from None
    except UnicodeDecodeError as e:
        raise SpaceError(f"not a UTF-8 text file (byte {e.start})", path) from None
    try:
        document = json.loads(source)
    except json.JSONDecodeError as e:
        raise SpaceError(f"not valid JSON: {e.msg} (column {e.colno})", f"{path}:{e.lineno}") from None
    except RecursionError:
        raise SpaceError("the JSON is nested too deeply to be a T1 space", path) from None
    return t1_space(document, path, source)


def t1_space(document, path: str, source: str | None = None, name: str | None = None) -> Space:
    """A T1 document (already parsed JSON) as a space; ``path`` is used for names and origins."""
    if source is None:
        source = json.dumps(document, sort_keys=True)
    if name is None:
        name = os.path.splitext(os.path.basename(path))[0]
    configuration = _field(document, "ConfigurationSpace", dict, path, "the document")
    parameters = _field(configuration, "TuningParameters", list, path, "ConfigurationSpace")
    conditions = configuration.get("Conditions", [])
    if conditions is None:
        conditions = []
    if not isinstance(conditions, list):
        raise SpaceError("ConfigurationSpace.Conditions must be a list", path)

    builder = SpaceBuilder(name, path, source)
    for index, parameter in enumerate(parameters):
        origin = f"{path}:TuningParameters[{index}]"
        if not isinstance(parameter, dict):
            raise SpaceError(f"TuningParameters[{index}] must be an object with Name and Values", origin)
        param_name = parameter.get("Name")
        if "Values" not in parameter:
            raise SpaceError(f"TuningParameters[{index}] ({param_name}) has no Values", origin)
        context = f"TuningParameters[{index}] ({param_name})"
        values = evaluate_values(parameter["Values"], context, origin)
        builder.add_iterator(param_name, values, origin)

    names: dict[str, L.Expr] = dict(builder.iterators)
    for index, condition in enumerate(conditions):
        origin = f"{path}:Conditions[{index}]"
        text = condition.get("Expression") if isinstance(condition, dict) else condition
        if text is None:
            raise SpaceError(f"Conditions[{index}] has no Expression", origin)
        expr = build_condition(text, f"Conditions[{index}]", origin, names)
        rejects = L.Not(expr)
        rejects.origin = origin
        builder.add_filter(rejects, origin, f"condition_{index}")
    return builder.build()


def _field(mapping, key: str, kind: type, path: str, parent: str):
    if not isinstance(mapping, dict) or key not in mapping:
        raise SpaceError(f"{parent} has no '{key}': not a T1 space file", path)
    value = mapping[key]
    if not isinstance(value, kind):
        raise SpaceError(f"{parent}.{key} must be a JSON {'object' if kind is dict else 'list'}", path)
    return value
