"""The reference enumerator: deliberately naive, pure Python, over the loaded model.

It shares nothing with the optimizing pipeline but the inputs: iterators are nested in a plain
topological order, every derived value and filter is evaluated only at the innermost level, and
space functions run as the user's own Python code. A count does not walk the iterators that
nothing reads: each configuration of the others stands for the product of their sizes (so a range
of 2**62 values is counted, as the compiled paths count it). Tests use it to prove the compiled enumerator
exact. A filter REJECTS a configuration when it is true; a configuration for which any derived
value or filter raises is rejected too.
"""
from __future__ import annotations

import types

import networkx as nx

from ..devices import load_profile
from ..devices.profiles import DeviceProfile
from ..support.deep import deeply, too_deep
from .language import nodes as L
from .language.evaluate import Evaluator
from .model import Space
from .specialize import dependency_graph, function_globals, resolve_settings


class _Raised(Exception):
    pass


def _size(domain) -> int:
    """How many values ``domain`` has: a list's length; a range's, past 64 bits too (``len`` raises)."""
    if not isinstance(domain, range):
        return len(domain)
    step = domain.step
    return max(0, (domain.stop - domain.start + step - (1 if step > 0 else -1)) // step)


class ReferenceEnumerator:
    def __init__(self, space: Space, device=None, settings: dict | None = None):
        self.space = space
        self.profile = device if isinstance(device, DeviceProfile) else load_profile(device)
        self.inputs = dict(resolve_settings(space, settings or {}))
        for name, var in space.variables.items():
            if var.kind == "device":
                self.inputs[name] = self.profile.get(var.obj.prop)
        graph = dependency_graph(space)
        order = list(nx.lexicographical_topological_sort(graph, key=list(space.variables).index))
        self.iterators = [n for n in order if space.variables[n].kind == "iterator"]
        self.checks = [n for n in order if space.variables[n].kind in ("derived", "filter")]
        self.bound_terms = [n for n in space.variables if space.variables[n].kind == "bound"]
        # iterators that no iterator, derived value or filter reads: a count needs their sizes only
        self.unread = [n for n in self.iterators
                       if not any(space.variables[m].kind in ("iterator", "derived", "filter")
                                  for m in graph.successors(n))]

    def configurations(self):
        """Yield each valid configuration as a dict {iterator: value}, in nest order."""
        yield from self._nest(0, {})

    def count(self) -> int:
        """How many valid configurations (room made for deeply nested expressions). The iterators
        nothing reads are not walked: each valid configuration of the others stands for the product
        of their domains' sizes (a range of 2**62 values is counted, not listed)."""
        walked = [n for n in self.iterators if n not in self.unread]

        def count():
            return sum(self._unread_size(config) for config in self._nest(0, {}, walked))
        return deeply(count)

    def _unread_size(self, config: dict) -> int:
        """The product of the unread iterators' domain sizes below ``config`` (0 where one raises)."""
        size = 1
        for name in self.unread:
            try:
                domain = self._domain(name, config, {})
            except _Raised:
                return 0
            size *= _size(domain)
        return size

    def bound(self, config: dict) -> tuple[float, str | None]:
        """The bound of a valid configuration (the largest term; a term that raises bounds nothing,
        i.e. counts as 0) and the term that dominates it (the first one declared, on ties)."""
        env: dict = {}
        best, name = 0.0, None
        for term in self.bound_terms:
            try:
                value = float(self._value(term, config, env))
            except _Raised:
                value = 0.0
            if name is None or value > best:
                best, name = value, term
        return best, name

    def term_values(self, config: dict) -> dict:
        """{bound term: its value} for a valid configuration (0.0 for a term that raises)."""
        env: dict = {}
        out = {}
        for term in self.bound_terms:
            try:
                out[term] = float(self._value(term, config, env))
            except _Raised:
                out[term] = 0.0
        return out

    def derived_values(self, config: dict, names=None) -> dict:
        """{name: value} of the space's derived values (or only ``names``) for one configuration
        ({iterator: value}); a value whose computation raises is None."""
        env: dict = {}
        out = {}
        for name in names if names is not None else \
                [n for n, v in self.space.variables.items() if v.kind == "derived"]:
            try:
                out[name] = self._value(name, config, env)
            except _Raised:
                out[name] = None
        return out

    def _nest(self, depth: int, config: dict, iterators=None):
        iterators = self.iterators if iterators is None else iterators
        if depth == len(iterators):
            env: dict = {}
            try:
                rejected = any(bool(self._value(n, config, env)) and
                               self.space.variables[n].kind == "filter" for n in self.checks)
            except _Raised:
                return
            if not rejected:
                yield dict(config)
            return
        name = iterators[depth]
        try:
            domain = list(self._domain(name, config, {}))
        except _Raised:
            return
        for value in domain:
            config[name] = value
            yield from self._nest(depth + 1, config, iterators)
        config.pop(name, None)

    # -- evaluation ------------------------------------------------------------------------------
    def _value(self, name: str, config: dict, env: dict):
        if name in config:
            return config[name]
        if name in self.inputs:
            return self.inputs[name]
        if name not in env:
            var = self.space.variables[name]
            if var.function is not None:
                env[name] = self._call(var.function.func, config, env)
            else:
                env[name] = self._eval(var.expr, config, env, root=var.expr is var.obj)
        return env[name]

    def _domain(self, name: str, config: dict, env: dict):
        var = self.space.variables[name]
        if var.function is not None:
            return self._call(var.function.func, config, env)
        it = var.obj
        if isinstance(it, L.RangeIterator):
            args = [self._eval(p, config, env) for p in (it.start, it.stop, it.step)]
            try:
                return range(*args)
            except (TypeError, ValueError):
                raise _Raised from None
        return [self._eval(v, config, env) for v in it.values]

    def _call(self, func, config: dict, env: dict):
        scope = function_globals(self.space, self.profile)
        for name in func.__code__.co_names:
            obj = scope.get(name)
            target = obj.name if isinstance(obj, L.Expr) else name  # an alias reads its target
            var = self.space.variables.get(target)
            if target in config or target in self.inputs or (var is not None and var.kind == "derived"):
                scope[name] = self._value(target, config, env)
        bound = types.FunctionType(func.__code__, scope, func.__name__)
        try:
            result = bound()
            return list(result) if isinstance(result, types.GeneratorType) else result
        except Exception:  # noqa: BLE001 - the user's code raised: rejected
            raise _Raised from None

    def _eval(self, node: L.Expr, config: dict, env: dict, root: bool = False):
        """The value of ``node`` (the ``root`` computed even when named); a raise rejects."""
        evaluator = _ConfigEvaluator(self, config, env)
        try:
            return evaluator(node) if root else evaluator.evaluate(node)
        except (_Raised, _Unevaluable):
            raise
        except RecursionError:  # the oracle's own limit, not the space's semantics: never a rejection
            raise too_deep() from None
        except Exception:  # noqa: BLE001 - division by zero and friends: rejected
            raise _Raised from None


class _ConfigEvaluator(Evaluator):
    """A named sub-expression is the enumerator's value of that variable for the configuration."""

    def __init__(self, enumerator: ReferenceEnumerator, config: dict, env: dict):
        super().__init__(enumerator.profile)
        self.enumerator, self.config, self.env = enumerator, config, env

    def has_value(self, name: str) -> bool:
        return True

    def named_value(self, name: str):
        return self.enumerator._value(name, self.config, self.env)

    def map_Expr(self, node):
        raise _Unevaluable(f"cannot evaluate {type(node).__name__}")


class _Unevaluable(TypeError):
    """A node the reference cannot evaluate: a bug, never a rejection."""


def reference_count(space: Space, device=None, **settings) -> int:
    return ReferenceEnumerator(space, device, settings).count()
