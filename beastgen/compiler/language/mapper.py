"""The one way to walk a space expression: a :class:`Mapper` subclass per purpose (printing,
evaluating, ...), as loopy's mappers and sympy's printers do."""

#: (mapper class, node class) -> the name of the method that maps it, found once: looking along
#: the node's MRO at every call was a tenth of a cold count's compile stages
_METHODS: dict[tuple[type, type], str] = {}


class Mapper:
    """``mapper(node, *args)`` calls ``map_<Class>(node, *args)`` for the first class along the node's
    MRO that the mapper defines a method for, so one method may serve a family of node types."""

    def __call__(self, node, *args):
        try:
            name = _METHODS[type(self), type(node)]
        except KeyError:
            name = _method_name(self, type(node))
        return getattr(self, name)(node, *args)


def _method_name(mapper: Mapper, node_class: type) -> str:
    """The name of ``mapper``'s method for ``node_class`` (remembered); TypeError where it has none."""
    for cls in node_class.__mro__:
        name = f"map_{cls.__name__}"
        if getattr(mapper, name, None) is not None:
            _METHODS[type(mapper), node_class] = name
            return name
    raise TypeError(f"{type(mapper).__name__} cannot map {node_class.__name__}")
