"""Builds a :class:`beastgen.compiler.model.Space` directly from language objects, the way
:func:`beastgen.compiler.model.load` collects a space file's module (``model._collect``), without executing
any Python source.
"""
from __future__ import annotations

from ..compiler.language import nodes as L
from ..errors import SpaceError
from ..compiler.model import Variable, check_expressions
from ..compiler.runtime import Space
from .restricted import check_name


class SpaceBuilder:
    """Collects named variables in declaration order and returns the :class:`Space`."""

    def __init__(self, name: str, path: str, source: str, module_globals: dict | None = None):
        self.name, self.path, self.source = name, path, source
        self.module_globals = module_globals if module_globals is not None else {}
        self.variables: dict[str, Variable] = {}
        self.iterators: dict[str, L.ValuesIterator] = {}
        #: names a generated name never takes: the module's (``beast``, ``math``) and every global a
        #: restriction reads (a constant printed beside a filter of its name would be shadowed)
        self.reserved: set[str] = {"beast", "math"}

    def add_iterator(self, name: str, values: list, origin: str) -> L.ValuesIterator:
        """A parameter: a ``ValuesIterator`` over its (already evaluated) values."""
        check_name(name, origin)
        if name in self.variables:
            raise SpaceError(f"the parameter name '{name}' is used twice", origin)
        iterator = L.ValuesIterator(list(values))
        iterator.name, iterator.origin = name, origin
        for value in iterator.values:
            value.origin = origin
        self.variables[name] = Variable(name, "iterator", iterator, origin)
        self.iterators[name] = iterator
        return iterator

    def fresh_name(self, base: str) -> str:
        """``base``, or ``base_2``, ``base_3``... when a variable, a constant of the module or a
        :attr:`reserved` name already has that name."""
        name, suffix = base, 1
        while name in self.variables or name in self.module_globals or name in self.reserved:
            suffix += 1
            name = f"{base}_{suffix}"
        return name

    def add_filter(self, expr: L.Expr, origin: str, base: str) -> str:
        """A filter (REJECTS when ``expr`` is true) named ``base`` (made unique)."""
        name = self.fresh_name(base)
        filt = L.Filter(expr, origin)
        filt.name, filt.origin = name, origin
        self.variables[name] = Variable(name, "filter", filt, origin)
        return name

    def add_function_filter(self, name: str, func, info, origin: str) -> str:
        """A filter written as a function (``info``: its :class:`beastgen.compiler.model.FunctionInfo`)."""
        filt = L.Filter(func, origin)
        filt.name, filt.origin = name, origin
        self.variables[name] = Variable(name, "filter", filt, origin, function=info)
        return name

    def build(self) -> Space:
        if not self.iterators:
            raise SpaceError("the space has no tuning parameters", self.path)
        check_expressions(self.variables)
        return Space(self.name, self.path, self.source, dict(self.variables), self.module_globals)
