"""Property tests: the compiled enumerator is exact against the naive reference enumerator.

A hypothesis strategy writes random small space files (every iterator kind, dependent and raising
bounds, derived values and filters as expressions and as functions, settings overridden at
specialization), and each is compiled and compared, as a multiset of configurations, with
:class:`beastgen.reference.ReferenceEnumerator`. Every example costs a Numba compilation, so the
example counts are small, derandomized and fixed; the hand-written tests below pin the bugs found.
"""
from __future__ import annotations

import itertools
import textwrap
from collections import Counter

import networkx as nx
import pytest
from hypothesis import HealthCheck, Phase, assume, event, given, note, settings
from hypothesis import strategies as st

import beastgen
from beastgen.errors import BeastError
from beastgen.compiler.plan import item_graph, iterator_closure
from beastgen.reference import ReferenceEnumerator
from beastgen.compiler.runtime import compile_space
from beastgen.compiler.specialize import specialize_space

DEVICE = "v100"
# every example compiles, so no shrinking (minutes): a failure shows its whole space file instead
CI = settings(deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])

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
        return f"({node[1]!r})" if isinstance(node[1], (int, float)) and node[1] < 0 else repr(node[1])
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


# --------------------------------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------------------------------
def reference_rows(space, overrides, columns):
    ref = ReferenceEnumerator(space, DEVICE, dict(overrides))
    return Counter(tuple(config[c] for c in columns) for config in ref.configurations())


def check_exact(space, overrides, generated_dir, order=None):
    """Compile ``space`` (in ``order`` if given) and compare it with the reference."""
    plan = compile_space(space, DEVICE, dict(overrides), str(generated_dir), order=order)
    assert plan.columns == list(space.iterators)
    expected = reference_rows(space, overrides, plan.columns)
    table = plan.enumerate()
    assert list(table.dtype.names) == plan.columns
    assert Counter(map(tuple, table.tolist())) == expected
    total = sum(expected.values())
    assert plan.count() == total
    if plan.path is not None:  # both targets, whichever count() chose
        assert plan.module.count(0, 2 ** 62) * plan.counted_tail == total
        assert plan.native is None or plan.native.count(0, 2 ** 62) * plan.counted_tail == total
    stats = plan.stats()
    assert stats.count == total
    if plan.plan is not None:
        assert stats.levels[-1][1] >= total
    check_chunks(plan, table)
    check_native(plan, table)
    return plan, total


def _why_no_c_target(plan) -> str:
    from beastgen.compiler.codegen.c_nest import Unsupported, generate_c_module
    try:
        generate_c_module(plan.plan)
    except Unsupported as e:
        return str(e)
    return "not built"


def check_native(plan, table):
    """Where the C target prints the plan, its claiming fill and count agree with Numba's: the same
    rows in the same order (whole, on two threads, in chunks) and the same counts."""
    if plan.plan is None or plan.native is None:
        return
    chunks = [(0, 1), (1, 3), (3, 2 ** 40)]
    native = [plan.enumerate(jobs=2), *(plan.enumerate(chunk=c) for c in chunks)]
    counts = [plan.count(jobs=2), *(plan.count(chunk=c) for c in chunks)]
    plan._native = False  # Numba from here on
    try:
        by_numba = [plan.enumerate(), *(plan.enumerate(chunk=c) for c in chunks)]
        assert [rows.dtype for rows in native] == [rows.dtype for rows in by_numba]
        assert [rows.tolist() for rows in native] == [rows.tolist() for rows in by_numba]
        assert table.tolist() == by_numba[0].tolist()
        assert counts == [len(table), *(plan.count(chunk=c) for c in chunks)]
    finally:
        plan._native = None


def check_chunks(plan, table):
    """Chunks of split nodes partition the count and the enumeration, in order."""
    chunks = [(0, 1), (1, 3), (3, 2 ** 40)]
    assert sum(plan.count(chunk=c) for c in chunks) == len(table)
    pieces = [plan.enumerate(chunk=c) for c in chunks]
    assert [row for piece in pieces for row in piece.tolist()] == table.tolist()


def size_class(total: int) -> str:
    return "configurations: " + ("0" if not total else f"< {10 ** len(str(total))}")


def write_space(directory, source, name="space"):
    path = directory / f"{name}.py"
    path.write_text(source)
    return path


def random_valid_order(space, overrides, draw):
    """A random topological order of the iterators (a loop order compile_space accepts)."""
    spec = specialize_space(space, DEVICE, dict(overrides))
    if spec.empty_reason:
        return None
    graph = item_graph(spec.items)
    iterators = [n for n, item in spec.items.items() if item.kind == "iterator"]
    loops = nx.DiGraph()
    loops.add_nodes_from(iterators)
    for name in iterators:
        loops.add_edges_from((dep, name) for dep in iterator_closure(graph, spec.items, name) - {name})
    priority = draw(st.permutations(iterators))
    return list(nx.lexicographical_topological_sort(loops, key=priority.index))


@pytest.fixture(autouse=True, scope="module")
def _compiled_nests_only():
    """This module checks the compiled nests (C and Numba); the NumPy path that would otherwise
    count a small nest with no C library is checked in test_vectorised.py."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEASTGEN_VECTORISED", "0")
        yield


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("properties")


_counter = itertools.count()


@settings(CI, max_examples=44)
@given(case=spaces())
def test_compiled_matches_reference(workdir, case):
    source, overrides, features = case
    note(f"{source}\nsettings: {overrides}")
    for feature in sorted(features):  # pytest --hypothesis-show-statistics lists how often
        event(feature)
    directory = workdir / f"s{next(_counter)}"
    directory.mkdir()
    space = beastgen.load(write_space(directory, source))
    plan, total = check_exact(space, overrides, directory)
    event(size_class(total))
    if plan.path is not None:
        event("C target" if plan.native else "no C target: " + _why_no_c_target(plan))


@settings(CI, max_examples=14)
@given(case=spaces(max_iterators=3), data=st.data())
def test_any_loop_order_matches_reference(workdir, case, data):
    source, overrides, features = case
    note(f"{source}\nsettings: {overrides}")
    for feature in sorted(features):
        event(feature)
    directory = workdir / f"o{next(_counter)}"
    directory.mkdir()
    space = beastgen.load(write_space(directory, source))
    assume(reference_rows(space, overrides, list(space.iterators)))  # the reference is cheap
    order = random_valid_order(space, overrides, data.draw)
    note(f"loop order: {order}")
    event(size_class(check_exact(space, overrides, directory, order=order)[1]))


@settings(CI, max_examples=8)
@given(case=spaces(max_iterators=3))
def test_census_numbers_the_split_nodes(workdir, case):
    """One census entry per split node: the nodes' chunks add up to the count, nothing lies past
    the last, and a node with a positive estimate has configurations (a descent found one)."""
    source, overrides, _ = case
    directory = workdir / f"c{next(_counter)}"
    directory.mkdir()
    plan = compile_space(beastgen.load(write_space(directory, source)), DEVICE, dict(overrides),
                         str(directory))
    estimates = plan.split_census(samples_per_node=4).configurations
    per_node = [plan.count(chunk=(i, i + 1)) for i in range(len(estimates))]
    assert sum(per_node) == plan.count()
    assert plan.count(chunk=(len(estimates), 2 ** 40)) == 0
    assert all(n > 0 for n, e in zip(per_node, estimates) if e > 0)


# --------------------------------------------------------------------------------------------------
# Hand-written regressions: each space pins a bug the properties found (or a tricky corner)
# --------------------------------------------------------------------------------------------------
def exact(tmp_path, source, **overrides):
    """Load ``source``, compile it with ``overrides``, check it against the reference: the plan
    and its number of configurations."""
    path = write_space(tmp_path, textwrap.dedent(source), f"space_{len(list(tmp_path.iterdir()))}")
    return check_exact(beastgen.load(path), overrides, tmp_path)


TRICKY = """
    import beastgen as beast
    n = beast.setting(6)
    a = beast.range(1, n + 1)
    b = beast.range(a, 3 * n, a)
    c = beast.values(0, 1)
    d = beast.values('x', 'y')
    @beast.iterator
    def fib():
        prev = nxt = 1
        while nxt <= b:
            yield nxt
            nxt, prev = nxt + prev, nxt
    @beast.iterator
    def e():
        return range(1, b // a + 1)
    q = b // (a - 2)
    @beast.derived
    def r():
        return (fib % (c - 1)) if d == 'x' else 7 / (a - 3)
    too_big = beast.filter(a * b > 40)
    odd = beast.filter((b % 2 == 1) & (d == 'y'))
    @beast.filter
    def weird():
        return r > q
"""


def test_tricky_space(tmp_path):
    assert exact(tmp_path, TRICKY)[1] == 75
    assert exact(tmp_path, TRICKY, n="4")[1] > 0  # a setting given as text, as --set does


def test_single_values_and_rejection_before_the_outer_loop(tmp_path):
    """beast.values(x) with one argument crashed (language.range shadowed the builtin); a division
    by zero in the outermost loop's domain emitted `continue` outside any loop."""
    source = """
        import beastgen as beast
        n = beast.setting(3)
        a = beast.values(n // (n - 2), 3)
        b = beast.values(-3)
        c = beast.values([1, 2])
    """
    assert exact(tmp_path, source)[1] == 4
    plan, total = exact(tmp_path, source, n=2)
    assert total == 0 and plan.stats().errors == {"a": 1}


def test_filters_on_named_variables(tmp_path):
    """beast.filter(flag) / beast.filter(a): the condition is another variable (it crashed both
    enumerators and was not a dependency)."""
    source = """
        import beastgen as beast
        flag = beast.setting(False)
        a = beast.range(3)
        v = a - 1
        nonzero = beast.filter(a)
        off = beast.filter(flag)
        minus_one = beast.filter(v)
    """
    assert exact(tmp_path, source)[1] == 0
    source = source.replace("v = a - 1", "v = a")
    plan, total = exact(tmp_path, source)
    assert total == 1 and plan.specialized.dropped_filters == ["off"]
    plan, total = exact(tmp_path, source, flag=True)
    assert total == 0 and "'off'" in plan.empty_reason


def test_generator_whose_yields_fold_away(tmp_path):
    """A closure iterator whose only yield sits under a constant-false branch yields nothing."""
    source = """
        import beastgen as beast
        flag = beast.setting(False)
        a = beast.range(4)
        @beast.iterator
        def g():
            x = 0
            while x < a:
                if flag:
                    yield x
                x += 1
    """
    plan, total = exact(tmp_path, source)
    assert total == 0 and "yields nothing" in plan.empty_reason
    assert exact(tmp_path, source, flag=True)[1] == 6


def test_generator_whose_loop_never_runs(tmp_path):
    """Numba prunes a branch testing constants (x = 8 ... while x < 4) and then could not type the
    generator whose yield it pruned; the yield under a constant-false `if` likewise."""
    source = """
        import beastgen as beast
        n = beast.setting(4)
        a = beast.range(3)
        @beast.iterator
        def g():
            x = 8
            if x > 9:
                yield -1
            while x < n:
                yield x + a
                x += 1
    """
    assert exact(tmp_path, source)[1] == 0
    assert exact(tmp_path, source, n=10)[1] == 6


def test_aliases_in_space_functions(tmp_path):
    """A module-level alias (size = n, first = a) read by a space function, compiled or constant."""
    source = """
        import beastgen as beast
        n = beast.setting(3)
        size = n
        a = beast.range(4)
        first = a
        @beast.iterator
        def b():
            return range(first, size + 1)
        @beast.derived
        def twice():
            return size * 2
        @beast.filter
        def f():
            return first + b == twice - 3
    """
    assert exact(tmp_path, source)[1] == 8


def test_values_with_bools_among_ints_and_function_values(tmp_path):
    """values(3, False, 4) and values(b, True) are int iterators (a tuple of mixed types cannot
    be looped over by Numba); values(v, 1) takes the type Numba gives the function v."""
    source = """
        import beastgen as beast
        a = beast.values(3, False, 4)
        b = beast.range(2)
        c = beast.values(b, True)
        @beast.derived
        def v():
            return b * 2 if a else -1
        d = beast.values(v, 1)
        @beast.derived
        def w():
            return a / 2
        e = beast.values(w, 0.5)
    """
    plan, total = exact(tmp_path, source)
    assert total == 3 * 2 * 2 * 2 * 2
    table = plan.enumerate()
    assert [table.dtype[name].kind for name in "abcde"] == ["i", "i", "i", "i", "f"]


def test_range_step_zero_for_these_settings(tmp_path):
    """A range step that folds to zero rejects everything, as range() raises, instead of failing."""
    source = """
        import beastgen as beast
        n = beast.setting(3)
        a = beast.range(0, 5, n - 3)
        b = beast.range(a, 5, beast.max(a - 1, -1))
    """
    plan, total = exact(tmp_path, source)
    assert total == 0 and "ValueError" in plan.empty_reason
    assert exact(tmp_path, source, n=4)[1] == sum(len(range(a, 5, max(a - 1, -1)))
                                                   for a in range(5) if max(a - 1, -1))


def test_divisor_constant_zero_in_a_range_step(tmp_path):
    """A step that always divides by zero rejects every configuration."""
    source = """
        import beastgen as beast
        a = beast.values(1, 2)
        b = beast.range(-4, 0)
        d = beast.range(b, b - 1, beast.min(-1, a // 0))
    """
    plan, total = exact(tmp_path, source)
    assert total == 0 and plan.stats().errors["d"] == 8


def test_modulo_by_a_derived_zero(tmp_path):
    """A divisor that is a derived value always zero: rejected, not a crash while generating."""
    source = """
        import beastgen as beast
        a = beast.range(-2, 3)
        zero = abs((a // a) % (a % a))
        b = beast.values(1, 2)
        f = beast.filter((a % zero) == b)
    """
    plan, total = exact(tmp_path, source)
    assert total == 0


BRANCHY = """\
import beastgen as beast
x = beast.range(-3, 6)
y = beast.range(0, 4)

@beast.derived
def area():
    w = x * 2
    h = y + 1
    if w > h:
        w -= h
        return w * h
    elif x == 0:
        return 0
    total = min(w, h) + abs(x) // 2
    return total

@beast.filter
def uneven():
    r = 7 // 2
    if y == 0:
        return x % 2 == 1
    return (area + r) % y == 0
"""


@pytest.mark.parametrize("raising", [False, True])
def test_function_bodies_of_assignments_and_branches(tmp_path, raising):
    """Assignments and if/else around returns become one expression (the C target prints it);
    an assignment that may raise keeps the function, since Python computes it on every path."""
    source = BRANCHY + ("\n@beast.derived\ndef risky():\n    q = 12 // y\n    if x > 0:\n"
                        "        return x\n    return q\n" if raising else "")
    space = beastgen.load(write_space(tmp_path, source))
    plan, total = check_exact(space, {}, tmp_path)
    items = plan.specialized.items
    assert items["area"].function is None and items["uneven"].function is None
    assert (items["risky"].function is not None) if raising else plan.native is not None
    assert total == (9 if raising else 13)  # y == 0 raises in risky(), whatever x is


def test_loops_over_divisors(tmp_path):
    """A range whose iterator divides the next level's solved numerator visits only divisors in
    the C target's fill and claimed count: numerators negative, zero (every value divides it),
    past the divisor limit, and ranges too short for divisors to pay keep the plain loop's rows and
    order."""
    source = """
        import beastgen as beast
        k = beast.setting(1)
        n = beast.values(-12, 0, 7, 36, 60, 720, 2 ** 21 + 6)
        lo = beast.values(1, 2, 5)
        x = beast.range(lo, 29)
        y = beast.range(-40, 40)
        shape = beast.filter(x * y != n * k)
        t = beast.values(0, 1)
    """
    plan, total = exact(tmp_path, source)
    assert plan.native is not None and "__div" in plan.native_source()
    assert total > 0
    exact(tmp_path, source, k=-1)


def test_a_derived_value_that_can_raise_reads_what_it_needs(tmp_path):
    """A derived value read by a bound term alone is still computed where it can raise (a raise
    rejects the configuration), and so is what it reads: the C target left the latter out and
    rejected every configuration on an uninitialized value."""
    source = """
        import beastgen as beast
        a = beast.range(1, 5)
        b = beast.range(1, 4)
        t = a * b
        r = 12 // (t - 2)
        cost = beast.bound(r * 1e-6)
    """
    plan, total = exact(tmp_path, source)
    assert plan.native is not None and total == 10


def test_every_loop_order(tmp_path):
    source = textwrap.dedent("""
        import beastgen as beast
        a = beast.range(-3, 4)
        b = beast.values(0.5, -1.5, 2)
        @beast.iterator
        def c():
            x = a
            while x < 4:
                yield x
                x += 2
        q = a // (c - 1)
        f = beast.filter((q % 2 == 1) | (b * c > 2))
        g = beast.filter(beast.where(b > 0, a / b, c) > 3)
    """)
    space = beastgen.load(write_space(tmp_path, source))
    totals = set()
    orders = [["a", "c", "b"], ["a", "b", "c"], ["b", "a", "c"]]
    for index, order in enumerate(orders):
        directory = tmp_path / f"order{index}"
        directory.mkdir()
        totals.add(check_exact(space, {}, directory, order=order)[1])
    assert len(totals) == 1 and totals.pop() > 0
    with pytest.raises(ValueError, match="before"):
        compile_space(space, DEVICE, {}, str(tmp_path), order=["c", "a", "b"])


# --------------------------------------------------------------------------------------------------
# Limitations: clear errors naming the space function and its line
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("body, message", [
    ("if a > 1:\n        return [a, 1]\n    return (a, 2)", "Can't unify return type"),
    ("if a > 1:\n        return [a, 1]\n    return [True]", "inside Numba"),
])
def test_function_iterator_of_mixed_types_is_a_clear_error(tmp_path, body, message):
    path = write_space(tmp_path, f"import beastgen as beast\na = beast.range(3)\n"
                                 f"@beast.iterator\ndef s():\n    {body}\n")
    plan = beastgen.load(path).specialize(device=DEVICE, generated_dir=str(tmp_path))
    with pytest.raises(BeastError, match=message) as error:
        plan.count()
    assert error.value.where == f"{path}:3" and "iterator 's'" in error.value.message


def test_string_values_must_be_constants(tmp_path):
    path = write_space(tmp_path, "import beastgen as beast\na = beast.range(3)\n"
                                 "label = beast.where(a > 1, 'x', 'y')\n"
                                 "b = beast.values(label, 'z')\n")
    with pytest.raises(BeastError, match="string values of 'b' must be constants") as error:
        beastgen.load(path).specialize(device=DEVICE, generated_dir=str(tmp_path))
    assert error.value.where == f"{path}:4"


def test_float_divisor_that_rounds_to_zero_is_rejected(tmp_path):
    """sympy's exact reals would prove (a + 1e-17) - a nonzero; in doubles it is 0.0."""
    source = """
        import beastgen as beast
        a = beast.range(1, 4)
        tiny = (a + 1e-17) - a
        f = beast.filter(1 / tiny > 0)
    """
    assert exact(tmp_path, source)[1] == 0


def test_float_powers_raise_where_python_does(tmp_path):
    """0.0 ** negative raises in Python (inf compiled) and a negative base to a fractional power is
    complex in Python (nan compiled): both reject the configuration, as in the reference."""
    plan, total = exact(tmp_path, """
        import beastgen as beast
        x = beast.range(-3, 4)
        y = beast.values(-1.0, 0.5, 2.0, 3)
        z = beast.range(0, 3)
        p = x ** y
        q = (z - 1) ** -1.0
        big = beast.filter(p > 2)
        small = beast.filter(q < -0.5)
        square = beast.filter(x ** 2.0 > 8)
        """)
    assert total == 14 and plan.stats().errors == {"q": 1, "p": 3}
    assert "float_power(z - 1, -1.0)" in plan.source and "x ** 2.0" in plan.source
