"""Hypothesis strategies for random small space files (the generators of the property tests in
``test_properties.py``, shared with ``test_estimate.py``): :func:`spaces` draws every iterator kind,
dependent and raising bounds, derived values and filters as expressions and as functions, and
settings overridden at specialization, with the features each space uses (for ``event``)."""
from __future__ import annotations

import math
import textwrap

from hypothesis import strategies as st

# --------------------------------------------------------------------------------------------------
# Expressions: trees of tuples, rendered as space expressions (beast.where, &, |, ~) or as the body
# of a space function (x if c else y, and, or, not)
# --------------------------------------------------------------------------------------------------
INT_CONSTS = (-3, -2, -1, 0, 1, 2, 3, 4)
FLOAT_CONSTS = (0.5, -1.5, 2.25, 0.1, 3.0, -0.75)
STRINGS = ("x", "y", "z")
LIMIT = 4  # range bounds are clamped to [-LIMIT, LIMIT + 1] unless known to be that small
INF = float("inf")
SETTINGS = ("n", "m", "flag", "mode", "r", "K", "wz")


def render(node, fn: bool) -> str:
    kind = node[0]
    if kind == "n":
        return node[1]
    if kind == "k":
        return constant(node[1], fn)
    if kind == "bin":
        return f"({render(node[2], fn)} {node[1]} {render(node[3], fn)})"
    if kind == "neg":
        return f"(-{render(node[1], fn)})"
    if kind == "call":
        func = {"ceil": "math.ceil", "floor": "math.floor", "abs": "abs"}.get(
            node[1], node[1] if fn else f"beast.{node[1]}")
        return f"{func}({', '.join(render(a, fn) for a in node[2])})"
    if kind == "where":
        test, body, orelse = (render(n, fn) for n in node[1:])
        return f"({body} if {test} else {orelse})" if fn else f"beast.where({test}, {body}, {orelse})"
    if kind == "cmp":
        return f"({render(node[2], fn)} {node[1]} {render(node[3], fn)})"
    if kind in ("and", "or"):
        op = kind if fn else {"and": "&", "or": "|"}[kind]
        return f"({render(node[1], fn)} {op} {render(node[2], fn)})"
    if kind == "not":
        return f"(not {render(node[1], fn)})" if fn else f"(~{render(node[1], fn)})"
    raise AssertionError(kind)


def constant(value, fn: bool) -> str:
    """A constant as source: a negative one (``-0.0`` too) in parentheses (``(-0.0) ** x`` is not
    ``-(0.0 ** x)``); infinities and NaN as ``math.inf``/``math.nan`` in a space expression and as
    ``1e999``/``(1e999 - 1e999)`` in Python text that has no ``math`` (a T1 condition)."""
    if isinstance(value, float) and not math.isfinite(value):
        if value != value:
            return "math.nan" if not fn else "(1e999 - 1e999)"
        return ("math.inf" if not fn else "1e999") if value > 0 else ("(-math.inf)" if not fn else "(-1e999)")
    negative = isinstance(value, (int, float)) and math.copysign(1, value) < 0
    return f"({value!r})" if negative else repr(value)


def has_name(node) -> bool:
    """Whether an expression reads a space name (K is a plain Python number)."""
    if node[0] == "n":
        return node[1] != "K"
    children = node[2] if node[0] == "call" else node[1:]
    return any(isinstance(child, tuple) and has_name(child) for child in children)


class Gen:
    """Draws the pieces of one space; ``names`` maps each usable name to (type, magnitude bound)."""

    def __init__(self, draw, fn: bool = False):
        self.draw, self.fn = draw, fn
        self.names: dict[str, tuple[str, float]] = {}
        self.features: set[str] = set()

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def chance(self, p=0.5) -> bool:
        return self.pick(range(100)) < p * 100

    def of_type(self, *types):
        """Names of these types; settings once, iterators and derived values thrice (more likely)."""
        return [n for n, (t, _) in self.names.items() if t in types
                for _ in range(1 if n in SETTINGS else 3)]

    # -- leaves ----------------------------------------------------------------------------------
    def int_leaf(self, bool_ok=False):
        names = self.of_type("int", "bool") if bool_ok else self.of_type("int")
        if names and self.chance(0.8):
            name = self.pick(names)
            return ("n", name), self.names[name][1]
        value = self.pick(INT_CONSTS)
        if value < 0:
            self.features.add("negative-constant")
        return ("k", value), abs(value)

    def name_leaf(self, types, fallback):
        names = self.of_type(*types)
        if names:
            name = self.pick(names)
            return ("n", name), self.names[name][1]
        return fallback()

    # -- typed expressions: (node, bound) --------------------------------------------------------
    def int_expr(self, depth, bool_ok=False):
        if depth <= 0 or self.chance(0.3):
            return self.int_leaf(bool_ok)
        op = self.pick(["+", "-", "*", "//", "%", "neg", "abs", "min", "max", "where", "ceil",
                        "floor", "+", "-", "//", "%"])
        if op in ("+", "-", "*"):
            (l, bl), (r, br) = self.int_expr(depth - 1, True), self.int_expr(depth - 1, True)
            node, bound = ("bin", op, l, r), (bl * br if op == "*" else bl + br)
        elif op in ("//", "%"):
            (l, bl), (r, br) = self.int_expr(depth - 1), self.divisor(depth - 1)
            self.features.add("int-" + op)
            node, bound = ("bin", op, l, r), (bl if op == "//" else br)
        elif op in ("neg", "abs"):
            x, bound = self.int_expr(depth - 1)
            node = ("neg", x) if op == "neg" else ("call", "abs", (x,))
            self.features.add(op)
        elif op in ("min", "max"):
            (l, bl), (r, br) = self.int_expr(depth - 1), self.int_expr(depth - 1)
            node, bound = ("call", op, (l, r)), max(bl, br)
            self.features.add("min/max")
        elif op == "where":
            test = self.bool_expr(depth - 1)
            (l, bl), (r, br) = self.int_expr(depth - 1), self.int_expr(depth - 1)
            node, bound = ("where", test, l, r), max(bl, br)
            self.features.add("where")
        else:
            x, b = self.num_expr(depth - 1, want_float=True)
            node, bound = ("call", op, (x,)), b + 1
            self.features.add("ceil/floor")
        return self.named(node), bound

    def divisor(self, depth):
        """Mostly a name or a non-zero constant; sometimes any expression (zero included)."""
        if self.chance(0.3):
            return self.int_expr(depth)
        node, bound = self.int_leaf()
        return (("k", self.pick([2, -3, 3])), 3) if node == ("k", 0) else (node, bound)

    def num_expr(self, depth, want_float=False):
        if not want_float and self.chance(0.5):
            return self.int_expr(depth)
        if depth <= 0 or self.chance(0.25):
            if self.chance(0.4):
                return self.int_leaf()
            return self.name_leaf(["float"], lambda: (("k", self.pick(FLOAT_CONSTS)), 3.0))
        op = self.pick(["/", "/", "+", "*", "-", "//", "%", "min", "where"])
        (l, bl) = self.num_expr(depth - 1)
        (r, br) = self.num_expr(depth - 1, want_float=op != "/")
        self.features.add("float-" + op)
        if op == "min":
            return self.named(("call", "min", (l, r))), max(bl, br)
        if op == "where":
            return self.named(("where", self.bool_expr(depth - 1), l, r)), max(bl, br)
        if op in ("/", "//", "%"):
            return self.named(("bin", op, l, r)), INF
        return self.named(("bin", op, l, r)), (bl * br if op == "*" else bl + br)

    def bool_expr(self, depth):
        choice = self.pick(["cmp", "cmp", "str", "bool", "and", "or", "not", "truthy"])
        if depth <= 0 and choice in ("and", "or", "not"):
            choice = "cmp"
        if choice == "str" and self.of_type("str", "str-setting"):
            name = self.pick(self.of_type("str", "str-setting"))
            other = ("n", "mode") if "mode" in self.names and name != "mode" and self.chance(0.3) \
                else ("k", self.pick(STRINGS))
            self.features.add("str-compare")
            return ("cmp", self.pick(["==", "!="]), ("n", name), other)
        if choice == "bool" and self.of_type("bool"):
            self.features.add("bool-name")
            return ("n", self.pick(self.of_type("bool")))
        if choice in ("and", "or"):
            self.features.add(choice)
            return self.named((choice, self.bool_expr(depth - 1), self.bool_expr(depth - 1)))
        if choice == "not":
            self.features.add("not")
            return self.named(("not", self.bool_expr(depth - 1)))
        if choice == "truthy":  # a number as a condition: its truth value
            self.features.add("truthy-number")
            return self.int_expr(depth)[0]
        (l, _), (r, _) = self.num_expr(depth), self.num_expr(max(depth - 1, 0))
        self.features.add("compare")
        return self.named(("cmp", self.pick(["<", "<=", ">", ">=", "==", "!="]), l, r))

    def named(self, node):
        """In a space expression, an operator between constants would run at load time (bitwise
        ``&``, a division by zero): give such a node a name operand."""
        if self.fn or has_name(node):
            return node
        leaf = ("n", self.pick(self.of_type("int"))) if self.of_type("int") else ("n", "n")
        if node[0] in ("bin", "cmp"):
            return (node[0], node[1], leaf, node[3])
        if node[0] == "not":
            return ("not", ("cmp", ">", leaf, ("k", 0)))
        if node[0] in ("and", "or"):
            return (node[0], ("cmp", "<", leaf, ("k", 1)), node[2])
        return node  # calls and where of constants are evaluated as plain Python at load time

    def bounded(self, depth, limit=LIMIT):
        """An int expression for a range bound, clamped unless small enough already."""
        node, bound = self.int_expr(depth)
        if bound > limit + 1:
            node = ("call", "max", (("k", -limit), ("call", "min", (("k", limit + 1), node))))
            bound = limit + 1
        return node, bound


# --------------------------------------------------------------------------------------------------
# Space files
# --------------------------------------------------------------------------------------------------
def fn_block(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


ITERATOR_KINDS = ("range_const", "range_dep", "values-int", "fn_range", "gen-while", "values_dep",
                  "fn_seq", "fn_const", "values-float", "gen-for", "values-str", "values-bool",
                  "gen-fib", "values-int-float", "values-int-bool")


def iterator_decl(g: Gen, fg: Gen, name: str, kind: str):
    """Source, type and magnitude bound of a random iterator of ``kind`` named ``name``."""
    g.features.add(kind)
    E = lambda node: render(node, False)  # noqa: E731
    F = lambda node: render(node, True)  # noqa: E731
    if kind == "range_const":
        lo = g.pick(range(-LIMIT, 3))
        hi = lo + g.pick([3, 5, 1, 7])
        step = g.pick([1, 1, 2, -1, -2, 3])
        if step < 0:
            lo, hi = hi, lo
            g.features.add("negative-step")
        if lo == 0 and step == 1 and g.chance():
            return f"{name} = beast.range({hi})\n", "int", max(abs(lo), abs(hi))
        if g.chance(0.3):
            return f"{name} = beast.range(-n, n + {abs(hi)}, {abs(step)})\n", "int", LIMIT + 6
        return f"{name} = beast.range({lo}, {hi}, {step})\n", "int", max(abs(lo), abs(hi))
    if kind == "range_dep":
        (start, bs), (stop, bt) = g.bounded(2), g.bounded(2)
        width = g.pick([4, 6, 2, 3])
        shape = g.pick(["up", "down", "any"])
        if shape == "up":  # never empty (but a bound may divide by zero)
            stop, bt = ("bin", "+", start, ("k", width)), bs + width
        elif shape == "down":
            stop, bt = ("bin", "-", start, ("k", width)), bs + width
            g.features.add("negative-step")
        step, _ = g.bounded(1, limit=2)
        if shape == "up":
            step = ("call", "max", (("k", 1), step)) if g.chance() else ("k", 1)
        elif shape == "down":
            step = ("call", "min", (("k", -1), step)) if g.chance() else ("k", -1)
        elif step[0] == "k" and step[1] == 0:
            step = ("k", 2)
        args = [E(start), E(stop)] + ([E(step)] if step != ("k", 1) else [])
        if step[0] != "k":
            g.features.add("dynamic-step")
        return f"{name} = beast.range({', '.join(args)})\n", "int", max(bs, bt)
    if kind.startswith("values-"):  # constant values
        flavor = kind[len("values-"):]
        count = g.draw(st.integers(2, 5)) if g.chance(0.8) else 1
        pools = {"int": INT_CONSTS, "float": FLOAT_CONSTS, "bool": (True, False), "str": STRINGS,
                 "int-float": INT_CONSTS + FLOAT_CONSTS, "int-bool": INT_CONSTS + (True, False)}
        vals = [g.pick(pools[flavor]) for _ in range(count)]
        typ = {"int": "int", "float": "float", "bool": "bool", "str": "str",
               "int-bool": "int"}.get(flavor, "float")
        if flavor == "int-float" and all(isinstance(v, int) for v in vals):
            typ = "int"
        if flavor == "bool" or (flavor == "int-bool" and all(isinstance(v, bool) for v in vals)):
            typ = "bool"
        bound = max(abs(v) for v in vals) if typ != "str" else 0
        return f"{name} = beast.values({', '.join(map(repr, vals))})\n", typ, bound
    if kind == "values_dep":
        parts = [g.int_expr(2, bool_ok=g.chance(0.3)) for _ in range(g.draw(st.integers(1, 3)))]
        parts.append((("k", g.pick(INT_CONSTS)), 3))
        return (f"{name} = beast.values({', '.join(E(p) for p, _ in parts)})\n", "int",
                max(b for _, b in parts))
    if kind == "fn_range":
        (lo, bl), (top, bt) = fg.bounded(2), fg.bounded(1)
        cond, width = fg.bool_expr(1), g.pick([4, 2, 6])
        up, down = f"{F(lo)}, {F(lo)} + {width}", f"{F(lo)} + {width}, {F(lo)}"
        args = g.pick([up, f"{up}, 2", f"{down}, -1", f"{up}, {F(fg.bounded(1, limit=1)[0])}",
                       f"{up}, (1 if {F(cond)} else -1)"])
        if g.chance():
            body = f"if {F(cond)}:\n    return range({F(top)})\nreturn range({args})"
        else:
            body = f"return range({F(lo)}, ({F(lo)} + {width}) if {F(cond)} else {F(top)})"
        return fn_block(f"@beast.iterator\ndef {name}():\n" + textwrap.indent(body, "    ")), \
            "int", max(bl + width, bt)
    if kind == "fn_seq":
        as_float = g.chance(0.3)
        elem = (lambda: fg.num_expr(1, want_float=True)) if as_float else (lambda: fg.int_expr(2))
        first = [elem() for _ in range(g.draw(st.integers(2, 4)))]
        second = [elem() for _ in range(g.draw(st.integers(1, 3)))]
        bound = max(b for _, b in first + second)
        if as_float:
            first = [(("bin", "*", n, ("k", 1.0)), b) for n, b in first]
            second = [(("bin", "*", n, ("k", 1.0)), b) for n, b in second]
        left, right = ("[", "]") if g.chance() else ("(", ",)")
        if left == "(":  # a tuple's length is part of its type: one return only
            body = f"return {left}{', '.join(F(n) for n, _ in first)}{right}"
            g.features.add("fn-tuple")
        else:
            body = f"""
                if {F(fg.bool_expr(1))}:
                    return [{', '.join(F(n) for n, _ in first)}]
                return [{', '.join(F(n) for n, _ in second)}]
            """
            g.features.add("fn-list")
        return fn_block(f"@beast.iterator\ndef {name}():\n" + textwrap.indent(
            textwrap.dedent(body).strip("\n"), "    ")), "float" if as_float else "int", bound
    if kind.startswith("gen-"):
        flavor = kind[len("gen-"):]
        (lo, bl), (hi, bh) = fg.bounded(1), fg.bounded(2)
        if g.chance(0.7):
            hi, bh = ("bin", "+", lo, ("k", g.pick([4, 6, 2]))), bl + 6
        if flavor == "while":
            inc = g.pick(["1", "2", f"1 + abs({F(fg.int_expr(1)[0])}) % 2"])
            body = f"""
                x = {F(lo)}
                while x < {F(hi)}:
                    if {F(fg.bool_expr(1))}:
                        yield x
                    x += {inc}
            """
            bound = max(bl, bh)
        elif flavor == "for":
            (div, _) = fg.int_expr(1)
            body = f"""
                for k in range({F(lo)}, {F(hi)}):
                    yield k * 3 // {F(div)}
            """
            bound = 3 * max(bl, bh)
        else:
            body = f"""
                prev = nxt = 1
                while nxt <= {F(hi)}:
                    yield nxt
                    nxt, prev = nxt + prev, nxt
            """
            bound = bh
        return fn_block(f"@beast.iterator\ndef {name}():\n" + textwrap.indent(
            textwrap.dedent(body).strip("\n"), "    ")), "int", bound
    # fn_const: a function iterator of settings only, run once in plain Python at specialization
    body = g.pick([
        "if n > 2:\n    return range(n - 3, n)\nreturn [n, -n, 0]",
        "return range(1, n + 1, 1 if m >= 0 else 2)",
        "k = m - 3\nwhile k < n:\n    yield k\n    k += 2",
        "return (n, 2 * n) if m != 1 else ()",
    ])
    return fn_block(f"@beast.iterator\ndef {name}():\n" + textwrap.indent(body, "    ")), "int", 12


def derived_decl(g: Gen, fg: Gen, name: str):
    """Source, type and bound of a random derived value."""
    kind = g.pick(["expr", "expr", "fn", "fn1", "const"])
    g.features.add("derived-" + kind)
    if kind == "const":
        node, bound = g.pick([(("bin", "-", ("bin", "*", ("n", "n"), ("k", 2)), ("k", 1)), 11),
                              (("bin", "//", ("k", 12), ("bin", "-", ("n", "n"), ("k", 2))), 12),
                              (("call", "max", (("n", "m"), ("k", 1))), 5)])
        return f"{name} = {render(node, False)}\n", "int", bound
    is_float = g.chance(0.3)
    make = (lambda d: fg.num_expr(d, want_float=True)) if is_float else fg.int_expr
    if kind == "expr":
        node, bound = (g.num_expr(2, want_float=True) if is_float else g.int_expr(3))
        if not has_name(node):  # constants would make a plain number (possibly 0) of the name
            node, bound = ("bin", "+", node, ("n", "n")), bound + 5
        return f"{name} = {render(node, False)}\n", "float" if is_float else "int", bound
    if kind == "fn1":  # one return: specialization may inline it as an expression
        node, bound = make(3)
        return fn_block(f"@beast.derived\ndef {name}():\n    return {render(node, True)}"), \
            "float" if is_float else "int", bound
    (t, bt), (r1, b1), (r2, b2) = make(2), make(1), make(2)
    op = g.pick(["+", "-", "*", "//", "%"])
    bound = INF if op in "//%" and is_float else max(bt * b1 if op == "*" else bt + b1, b2, bt)
    body = f"""
        t = {render(t, True)}
        if {render(fg.bool_expr(1), True)}:
            return t {op} {render(r1, True)}
        return {render(r2, True)} if {render(fg.bool_expr(1), True)} else t
    """
    return fn_block(f"@beast.derived\ndef {name}():\n" + textwrap.indent(
        textwrap.dedent(body).strip("\n"), "    ")), "float" if is_float else "int", bound


def filter_decl(g: Gen, fg: Gen, name: str, constant: str | None = None) -> str:
    """A random filter; ``constant``: 'const' or 'const-fn' for one that only reads settings."""
    kind = g.pick(["expr", "fn", "fn1"] if constant is None else [constant])
    g.features.add("filter-" + kind)
    if kind == "expr":
        cond = g.bool_expr(2)
        if g.chance(0.8):  # rejecting less often keeps more of the space
            cond = g.named(("and", cond, g.bool_expr(1)))
        return f"{name} = beast.filter({render(cond, False)})\n"
    if kind == "const":
        return f"{name} = beast.filter({g.pick(['n > 4', '(n == 5) & (m < 0)', 'm * 3 > n + 7'])})\n"
    if kind == "const-fn":
        return fn_block(f"""
            @beast.filter
            def {name}():
                return n % (m + 1) == 3
        """)
    if kind == "fn1":  # one return, with a chained comparison: a < b <= c
        (a, _), (b, _), (c, _) = fg.num_expr(1), fg.num_expr(2), fg.num_expr(1)
        test = f"{render(a, True)} < {render(b, True)} <= {render(c, True)}"
        return fn_block(f"@beast.filter\ndef {name}():\n    return {test} or "
                        f"{render(fg.bool_expr(2), True)} and {render(fg.bool_expr(1), True)}")
    body = f"""
        if {render(fg.bool_expr(1), True)}:
            return {render(fg.bool_expr(2), True)}
        return {render(fg.bool_expr(1), True)} and {render(fg.num_expr(1)[0], True)} % 2 == 0
    """
    if g.chance(0.7):
        body = body.replace("return (", f"return {render(fg.bool_expr(1), True)} and (", 1)
    return fn_block(f"@beast.filter\ndef {name}():\n" + textwrap.indent(
        textwrap.dedent(body).strip("\n"), "    "))


@st.composite
def spaces(draw, max_iterators=4):
    """(space source, settings overrides, features): a random small space."""
    g, fg = Gen(draw), Gen(draw, fn=True)
    fg.features = g.features
    lines = ["import math", "", "import beastgen as beast", ""]
    defaults = {"n": draw(st.integers(1, 4)), "m": draw(st.integers(-2, 3))}
    lines += [f"n = beast.setting({defaults['n']})", f"m = beast.setting({defaults['m']})"]
    names = {"n": ("int", 5), "m": ("int", 3)}
    if g.chance(0.4):
        lines.append(f"flag = beast.setting({draw(st.booleans())})")
        names["flag"] = ("bool", 1)
    if g.chance(0.4):
        lines.append(f"mode = beast.setting({g.pick(STRINGS[:2])!r}, choices=['x', 'y'])")
        names["mode"] = ("str-setting", 0)
    if g.chance(0.3):
        lines.append(f"r = beast.setting({g.pick(FLOAT_CONSTS)!r})")
        names["r"] = ("float", 3)
        g.features.add("float-setting")
    if g.chance(0.3):
        lines.append("K = 3  # a plain module constant")
        names["K"] = ("int", 3)
        g.features.add("module-constant")
    if g.chance(0.3):
        lines.append("wz = beast.device.warp_size // 16")
        names["wz"] = ("int", 2)
        g.features.add("device")
    g.names = fg.names = names
    overrides = {}
    for setting, choices in (("n", range(0, 6)), ("m", range(-2, 4)), ("flag", (True, False)),
                             ("mode", ("x", "y")), ("r", (0.25, -2.5, 4.0))):
        if setting in names and g.chance(0.35):
            value = g.pick(choices)
            overrides[setting] = str(value) if setting == "n" and g.chance(0.3) else value
            g.features.add("override")

    n_iterators = max(draw(st.integers(2, max_iterators)), draw(st.integers(2, max_iterators)))
    n_derived, n_filters = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    # interleave: after each iterator, some derived values and filters over what exists so far
    slots = sorted(draw(st.lists(st.integers(0, n_iterators - 1), min_size=n_derived + n_filters,
                                 max_size=n_derived + n_filters)))
    kinds = draw(st.permutations(["derived"] * n_derived + ["filter"] * n_filters))
    counters = {"derived": 0, "filter": 0}
    iterator_kinds = draw(st.permutations(ITERATOR_KINDS))  # different kinds in one space
    for index, iterator in enumerate("abcd"[:n_iterators]):
        text, typ, bound = iterator_decl(g, fg, iterator, iterator_kinds[index])
        lines.append(text.rstrip("\n"))
        names[iterator] = (typ, bound)
        for slot, kind in zip(slots, kinds):
            if slot != index:
                continue
            name = f"{'v' if kind == 'derived' else 'f'}{counters[kind]}"
            counters[kind] += 1
            if kind == "derived":
                text, typ, bound = derived_decl(g, fg, name)
                names[name] = (typ, bound)
            else:
                text = filter_decl(g, fg, name)
            lines.append(text.rstrip("\n"))
    if g.chance(0.15):  # constant for the settings: dropped, or rejects everything
        lines.append(filter_decl(g, fg, "fixed", g.pick(["const", "const-fn"])).rstrip("\n"))
    return "\n".join(lines) + "\n", overrides, frozenset(g.features)
