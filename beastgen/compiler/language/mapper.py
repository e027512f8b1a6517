"""The one way to walk a space expression: a :class:`Mapper` subclass per purpose (printing,
evaluating, ...), as loopy's mappers and sympy's printers do."""


class Mapper:
    """``mapper(node, *args)`` calls ``map_<Class>(node, *args)`` for the first class along the node's
    MRO that the mapper defines a method for, so one method may serve a family of node types."""

    def __call__(self, node, *args):
        for cls in type(node).__mro__:
            method = getattr(self, f"map_{cls.__name__}", None)
            if method is not None:
                return method(node, *args)
        raise TypeError(f"{type(self).__name__} cannot map {type(node).__name__}")
