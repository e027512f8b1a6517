"""Exporting beastgen spaces to other tools.

* :func:`to_kernel_tuner` gives a compiled plan's ``tune_params`` and every valid configuration as
  dicts; :func:`write_kernel_tuner` writes them as JSON that Kernel Tuner loads directly:
  ``Searchspace(None, None, None, from_cache=json.load(open(FILE)))`` (the ``cache`` object maps
  Kernel Tuner's configuration keys, the values joined by commas, to configurations), and
  ``tune_params`` / ``tune_params_keys`` give the parameters for ``tune_kernel``.
* :func:`to_t1` writes a space as a T1 JSON file when T1 can express it: every iterator a fixed
  list of values (``beast.values`` or ``beast.range`` of constants), every filter and every derived
  value it reads an expression. Settings and device properties are replaced by their values for
  the given device and settings; bound terms are left out (they never change the valid set).
  Anything else is a :class:`BeastError` that names the variable and says why.
"""
from __future__ import annotations

import json
import math

from ..compiler.analysis.symbolic import SymbolicContext
from ..compiler.codegen.guards import guards
from ..compiler.language import nodes as L
from ..compiler.language.identity import IdentityMapper
from ..compiler.language.printer import expr_source
from ..compiler.specialize import specialize_space
from ..errors import BeastError
from ..support.output import AtomicOutput
from . import results

_CASTS = {"int": int, "float": float}
_T1_TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "string"}


# --------------------------------------------------------------------------------------------------
# Kernel Tuner
# --------------------------------------------------------------------------------------------------
def to_kernel_tuner(plan, configs=None) -> tuple[dict, list[dict]]:
    """``(tune_params, configurations)`` of a compiled plan (:class:`beastgen.compiler.runtime.CompiledPlan`).

    ``tune_params`` maps each iterator (declaration order) to its values: its domain when the domain
    is a constant list or range, otherwise (a domain that depends on other iterators, or a function
    iterator) the sorted distinct values it takes in the valid configurations. ``configurations``
    lists every valid configuration as a dict of plain Python values (of ``configs``, the plan's
    enumeration, when given).
    """
    configs = plan.enumerate() if configs is None else configs
    columns = plan.columns
    rows = configs.tolist()
    configurations = [dict(zip(columns, row)) for row in rows]
    items = plan.specialized.items
    tune_params = {}
    for index, name in enumerate(columns):
        values = _constant_domain(items[name]) if name in items else None
        if values is None:
            values = sorted({row[index] for row in rows}, key=_sort_key)
        tune_params[name] = values
    return tune_params, configurations


def _sort_key(value):
    return (isinstance(value, str), value)


def _constant_domain(item) -> list | None:
    if item.function is not None or item.domain is None:
        return None
    kind, *parts = item.domain
    parts = [p if isinstance(p, L.Expr) else L.Const(p) for p in parts]  # evaluated function iterators
    if not all(isinstance(p, L.Const) for p in parts):
        return None
    values = [p.value for p in parts]
    if kind == "range":
        return list(range(*values))
    cast = _CASTS.get(item.value_type)
    return [cast(v) for v in values] if cast else values


def kernel_tuner_key(config: dict) -> str:
    """Kernel Tuner's cache key of a configuration: its values joined by commas."""
    return results.kernel_tuner_key(config.values())


def write_kernel_tuner(plan, path: str, configs=None, progress=None) -> int:
    """Write ``tune_params`` and the valid configurations (``configs``, the plan's enumeration,
    when given) as JSON for Kernel Tuner; the count. ``progress(done, seconds)`` hears the share of
    the configurations written."""
    tune_params, configurations = to_kernel_tuner(plan, configs)
    spec = plan.specialized
    document = {
        "beastgen": {"space": spec.space.name, "path": spec.space.path, "device": spec.device.key,
                     "settings": spec.settings, "count": len(configurations),
                     "load_with": "kernel_tuner.searchspace.Searchspace(None, None, None, "
                                  "from_cache=json.load(open(FILE)))"},
        "tune_params_keys": list(tune_params),
        "tune_params": tune_params,
    }
    cache = {}
    for config in configurations:
        key = kernel_tuner_key(config)
        if key in cache:
            raise results.key_clash(key, cache[key], config, "export the space as T1 (--format "
                                    "t1) or its configurations with enumerate", spec.space.path)
        cache[key] = config
    with AtomicOutput(path) as temporary, open(temporary, "w", encoding="utf-8") as f:
        _write_with_cache(f, document, list(cache.items()), progress)
    return len(configurations)


#: configurations written at a time (a report of progress after each block)
_BLOCK = 1 << 14


def _write_with_cache(f, document: dict, cache: list[tuple[str, dict]], progress) -> None:
    """``document`` with a last member ``"cache"`` (``cache``: Kernel Tuner's key of each
    configuration, and the configuration), written as ``json.dump(..., indent=1)`` writes it, a
    block of configurations at a time so that ``progress`` hears how far it is."""
    head = json.dumps({**document, "cache": {}}, indent=1)  # ends with '"cache": {}\n}'
    f.write(head[:-len("}\n}")])
    for start in range(0, len(cache), _BLOCK):
        entries = json.dumps(dict(cache[start:start + _BLOCK]), indent=1)[1:-2]  # '\n "key": ...'
        f.write(("," if start else "") + entries.replace("\n", "\n "))  # one level further in
        if progress is not None:
            progress(min(start + _BLOCK, len(cache)) / len(cache), 0.0)
    f.write("\n }\n}\n" if cache else "}\n}\n")


# --------------------------------------------------------------------------------------------------
# T1
# --------------------------------------------------------------------------------------------------
def to_t1(space, path: str | None = None, device=None, settings: dict | None = None) -> dict:
    """The T1 document of ``space`` (specialized to ``device`` and ``settings``); written to
    ``path`` when given. Raises :class:`BeastError` when T1 cannot express the space."""
    spec = specialize_space(space, device, settings or {})
    parameters = []
    for name, var in space.iterators.items():
        item = spec.items.get(name)
        if item is None:
            raise BeastError(f"cannot export to T1: iterator '{name}' has no values for this device "
                             f"and these settings ({spec.empty_reason})", var.origin)
        if item.function is not None:
            deps = ", ".join(item.deps) or "other iterators"
            raise BeastError(f"cannot export to T1: iterator '{name}' is a function iterator whose "
                             f"values depend on {deps}; T1 parameters are fixed lists of values "
                             "(a function iterator of settings and device properties only is "
                             "exported with its values)", var.origin)
        values_text, values = _t1_values(item, var)
        parameters.append({"Name": name, "Type": _T1_TYPES.get(item.value_type, "int"),
                           "Values": values_text, "Default": values[0]})

    conditions = []
    if spec.empty_reason:  # nothing is valid for this device and these settings
        conditions.append({"Expression": "False", "Parameters": []})
    exporter = _Inliner(spec)
    symbolic = SymbolicContext(spec.items)
    for name, item in spec.items.items():
        var = space.variables[name]
        if item.kind == "filter":
            if item.function is not None:
                raise BeastError(f"cannot export to T1: filter '{name}' is written as a function; "
                                 "T1 conditions are Python expressions, so only expression filters "
                                 "can be exported", var.origin)
            expr = exporter.inline(item.expr, name)
            if isinstance(expr, L.Not):  # rejects when not C: valid when C
                valid = expr_source(expr.operand, root=True)
            else:
                valid = f"not ({expr_source(expr, root=True)})"
            conditions.append({"Expression": valid, "Parameters": exporter.parameters(expr)})
        elif item.kind == "derived":
            if item.function is not None:
                if exporter.read_by_filters(name) or item.function.may_raise:
                    raise BeastError(f"cannot export to T1: derived value '{name}' is written as a "
                                     "function; T1 conditions can only inline expressions", var.origin)
                continue
            if guards(item.expr, spec.items, symbolic):
                # a derived value that raises rejects the configuration: so does this condition
                expr = exporter.inline(item.expr, name)
                text = expr_source(expr)
                conditions.append({"Expression": f"({text}) == 0 or True",
                                   "Parameters": exporter.parameters(expr)})
    document = {
        "General": {"BenchmarkName": space.name, "OutputFormat": "JSON",
                    "Origin": f"beastgen export of {space.path} for device {spec.device.key}"
                              + (f" with {spec.settings}" if spec.settings else "")},
        "ConfigurationSpace": {"TuningParameters": parameters, "Conditions": conditions},
    }
    if path is not None:
        _write_json(path, document)
    return document


def _t1_values(item, var) -> tuple[str, list]:
    kind, *parts = item.domain
    # a function iterator of settings and device properties only was evaluated: plain values
    parts = [p if isinstance(p, L.Expr) else L.Const(p) for p in parts]
    if not all(isinstance(p, L.Const) for p in parts):
        deps = ", ".join(item.deps) or "other variables"
        raise BeastError(f"cannot export to T1: the values of iterator '{item.name}' depend on "
                         f"{deps}; T1 parameters are fixed lists of values", var.origin)
    values = [p.value for p in parts]
    if kind == "range":
        start, stop, step = values
        domain = list(range(start, stop, step))
        if not domain:
            raise BeastError(f"cannot export to T1: iterator '{item.name}' has no values", var.origin)
        text = f"list(range({start}, {stop}))" if step == 1 else f"list(range({start}, {stop}, {step}))"
        return text, domain
    cast = _CASTS.get(item.value_type)
    values = [cast(v) for v in values] if cast else values
    for v in values:
        if isinstance(v, float) and not math.isfinite(v):
            raise BeastError(f"cannot export to T1: iterator '{item.name}' has the value {v!r}",
                             var.origin)
    return repr(values), values


class _Inliner(IdentityMapper):
    """Specialized IR -> plain expressions over the iterators (derived values inlined, constants
    as literals), printable as T1 Python; ``owner`` names the variable in errors."""

    def __init__(self, spec):
        self.spec = spec
        self.items = spec.items
        self.owner, self.depth = "", 0

    def read_by_filters(self, name: str) -> bool:
        return any(name in item.deps for item in self.items.values() if item.kind in ("filter", "derived"))

    def parameters(self, expr) -> list[str]:
        names = {n.target for n in L.walk(expr) if isinstance(n, L.Ref)}
        return [n for n in self.spec.space.iterators if n in names]

    def inline(self, expr, owner: str):
        """``expr`` (of the variable ``owner``) with every derived value it reads inlined."""
        self.owner, self.depth = owner, 0
        return self(expr)

    def map_Expr(self, expr):
        raise BeastError(f"cannot export to T1: '{self.owner}' uses {type(expr).__name__}",
                         self._origin(self.owner))

    def map_Const(self, expr):
        value = expr.value
        if not isinstance(value, (bool, int, float, str)) or (
                isinstance(value, float) and not math.isfinite(value)):
            raise BeastError(f"cannot export to T1: '{self.owner}' uses the constant {value!r}, which "
                             "T1 cannot write", self._origin(self.owner))
        return L.Const(value)  # the value, not the name it was folded from

    def map_Ref(self, expr):
        item = self.items.get(expr.target)
        if item is None or item.kind == "iterator":
            return L.Ref(expr.target)
        if item.function is not None:
            raise BeastError(f"cannot export to T1: '{self.owner}' reads the derived value "
                             f"'{item.name}', which is written as a function",
                             self._origin(item.name))
        if self.depth >= 100:
            raise BeastError(f"cannot export to T1: '{self.owner}' nests derived values too deeply")
        self.depth += 1
        try:
            return self(item.expr)
        finally:
            self.depth -= 1

    def map_Call(self, expr):
        if expr.func not in ("min", "max", "abs"):
            raise BeastError(f"cannot export to T1: '{self.owner}' calls {expr.func}(), which the T1 "
                             "reader accepts only as min, max or abs", self._origin(self.owner))
        return super().map_Call(expr)

    def _origin(self, name: str):
        var = self.spec.space.variables.get(name)
        return var.origin if var else None


def _write_json(path: str, document: dict) -> None:
    with AtomicOutput(path) as temporary, open(temporary, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")
