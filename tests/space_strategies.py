"""Hypothesis strategies for space files at the edges the compiled code must get right or refuse
clearly: 64-bit limits (ranges and values near INT64_MIN/INT64_MAX, steps of 2**61), NaN and
infinities, floats made integers past 64 bits, deep operator chains and nests of 20+ iterators.
Each strategy draws the text of a space file; every domain stays small, so the reference enumerator
(the oracle) answers in milliseconds."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from hypothesis import assume
from hypothesis import strategies as st

from space_generators import has_name, render

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
HEADER = "import math\nimport beastgen as beast\n"

EDGE_ANCHORS = (INT64_MIN, INT64_MIN + 1, -2 ** 62, -5, 0, 2 ** 62, INT64_MAX - 1, INT64_MAX)
EDGE_STEPS = (1, 2, 3, -1, -2, 2 ** 61, -2 ** 61, 2 ** 62, -2 ** 62, 3 * 2 ** 60)
EDGE_INTS = (INT64_MIN, INT64_MIN + 1, -2 ** 62, -1, 0, 1, 7, 2 ** 62, INT64_MAX - 1, INT64_MAX)
EDGE_FLOATS = ("math.nan", "math.inf", "-math.inf", "1e19", "-1e19", "1e300", "0.5", "-2.5",
               "9.2e18", "-9.223372036854775808e18", "-0.0")


@st.composite
def edge_range(draw) -> str:
    """``beast.range`` of at most 6 values whose start, stop or step sits at the 64-bit limits."""
    start = draw(st.sampled_from(EDGE_ANCHORS)) + draw(st.integers(-3, 3))
    step = draw(st.sampled_from(EDGE_STEPS))
    stop = start + step * draw(st.integers(0, 5)) + draw(st.integers(-2, 2))
    assume(INT64_MIN <= start <= INT64_MAX and INT64_MIN <= stop <= INT64_MAX)
    assume(len(range(start, stop, step)) <= 6)
    return f"beast.range({start}, {stop}, {step})"


@st.composite
def edge_values(draw) -> tuple[str, str]:
    """(``beast.values`` text, its type): ints at the 64-bit limits, or floats with NaN and infinities."""
    if draw(st.booleans()):
        values = draw(st.lists(st.sampled_from(EDGE_INTS), min_size=1, max_size=4, unique=True))
        return f"beast.values({', '.join(map(str, values))})", "int"
    values = draw(st.lists(st.sampled_from(EDGE_FLOATS), min_size=1, max_size=4, unique=True))
    return f"beast.values({', '.join(values)})", "float"


INT_FORMS = ("{x} + {y}", "{x} - {y}", "{x} * 2", "abs({x})", "-{x}", "{x} // {y}", "{x} % 3",
             "beast.min({x}, {y})", "{x} // -1", "{x} + 0 * {y}", "({x} - {y}) // 2")
FLOAT_FORMS = ("math.floor({f})", "math.ceil({f} * 2.0)", "math.floor(beast.min({f}, 1e6))",
               "math.ceil(beast.max(beast.min({f}, 1e15), -1e15))", "{f} * {y}")


@st.composite
def edge_spaces(draw) -> str:
    """A space of an edge iterator (a range or listed values), a small one, and a filter (or two)
    reading both through an operation that may leave 64 bits; sometimes a deep chain."""
    lines = [f"x = {draw(edge_range())}" if draw(st.booleans()) else None,
             "y = beast.values(1, 2, 3)"]
    values, kind = draw(edge_values())
    lines[0] = lines[0] or f"x = {values}"
    x_is_float = lines[0] == f"x = {values}" and kind == "float"
    forms = FLOAT_FORMS if x_is_float else INT_FORMS
    for index in range(draw(st.integers(1, 2))):
        form = draw(st.sampled_from(forms))
        expr = form.format(x="x", y="y", f="x")
        test = draw(st.sampled_from(("({e}) % 5 == y", "({e}) > 3", "({e}) == {c}", "({e}) < -{c}")))
        lines.append(f"f{index} = beast.filter({test.format(e=expr, c=draw(st.sampled_from((0, 1, 2 ** 62))))})")
    if draw(st.integers(0, 4)) == 0:
        terms = draw(st.integers(150, 400))
        chain = " + ".join(f"y * {k % 3}" for k in range(terms))
        lines.append(f"deep = beast.filter(({chain}) % 4 == 1)")
    return HEADER + "\n".join(lines) + "\n"


@st.composite
def many_iterator_spaces(draw) -> str:
    """A nest of 19 to 24 iterators (past Python's 20 nested blocks in one function): each a chain
    ``range(previous, 2)`` or a single value, so the space stays small; a filter on their sum."""
    count = draw(st.integers(19, 24))
    lines = ["i0 = beast.values(0, 1)"]
    for k in range(1, count):
        lines.append(f"i{k} = " + ("beast.values(0)" if draw(st.integers(0, 5)) == 0
                                   else f"beast.range(i{k - 1}, 2)"))
    total = " + ".join(f"i{k}" for k in range(count))
    lines.append(f"f = beast.filter(({total}) % {draw(st.integers(2, 5))} == {draw(st.integers(0, 1))})")
    return HEADER + "\n".join(lines) + "\n"


HELPER_INT_FORMS = ("t + x", "t - x", "t * x", "x * (i + 2)", "t // (x - i)", "t % (x + 1)",
                    "-x - t", "abs(x) + i", "x ** 2", "2 ** (i * 31)", "x << i", "x >> (i * 31)",
                    "t * 3 + y", "x // -1", "x % -1 + t")
HELPER_FLOAT_FORMS = ("t + int(x * (i + 1))", "math.floor(x) + i", "math.ceil(x * 2.0)", "round(x)",
                      "math.trunc(x) - t", "int(x / 3.0)", "int(min(x, 1e6)) + t")
HELPER_TESTS = ("t == 3", "t % 7 == 1", "t > 0", "t < -5")
#: filters on a space function's value ``v``: its integers checked in the nest too
HELPER_READERS = ("v == 1", "v * y * 2 < 5", "-v + y < 0", "v - y > 3")


@st.composite
def edge_helper_spaces(draw) -> str:
    """A space whose space function is compiled as a helper (a for or while loop, a generator)
    computing with an edge iterator ``x`` (ints at the 64-bit limits, or floats past them, NaN)."""
    values, kind = draw(edge_values())
    expr = draw(st.sampled_from(HELPER_FLOAT_FORMS if kind == "float" else HELPER_INT_FORMS))
    trips = draw(st.integers(1, 3))
    form = draw(st.sampled_from(("filter", "derived", "while", "generator")))
    lines = [f"x = {values}", "y = beast.values(1, 2, 3)"]
    if form == "generator":
        lines += ["@beast.iterator", "def g():", "    t = y", f"    for i in range({trips}):",
                  f"        t = {expr}", "        yield t",
                  f"f = beast.filter({draw(st.sampled_from(HELPER_READERS)).replace('v', 'g')})"]
    elif form == "while":
        lines += ["@beast.filter", "def f():", "    t, i = y, 0", f"    while i < {trips}:",
                  f"        t = {expr}", "        i += 1", f"    return {draw(st.sampled_from(HELPER_TESTS))}"]
    else:
        lines += [f"@beast.{form}", "def d():" if form == "derived" else "def f():", "    t = y",
                  f"    for i in range({trips}):", f"        t = {expr}",
                  "    return t" if form == "derived" else f"    return {draw(st.sampled_from(HELPER_TESTS))}"]
        if form == "derived":
            lines.append(f"f = beast.filter({draw(st.sampled_from(HELPER_READERS)).replace('v', 'd')})")
    return HEADER + "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# Differential spaces (test_differential.py): Python's own operators at every edge, as a space file
# and as a T1 file, each small enough for brute force (a huge range counted, never walked)
# --------------------------------------------------------------------------------------------------
SMALL = (-3, -2, -1, 0, 1, 2, 3, 5, 7)
EDGE = (2 ** 62, -2 ** 62, 2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1, -2 ** 31, 2 ** 32 + 3, 3 ** 39)
BIG = (2 ** 63, 2 ** 64 - 1, -2 ** 63 - 5, 10 ** 25)  # past 64 bits
FLOATS = (0.5, -1.5, 2.0, 0.0, -0.0, 3.25, -7.0, 1e-3)
SPECIAL = (math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2e-308, 1e308, -1e308, 1e-300, 9.5e18)
EXPONENTS = (-2, -1, 0, 1, 2, 3, 63)
FLOAT_EXPONENTS = (0.5, -1.0, -0.5, 2.0, math.inf, -math.inf, math.nan, 1e300, -1e300)
SETTING_VALUES = ("3", "-4", "0", str(2 ** 63 - 1), str(2 ** 63 + 2), str(2 ** 64 - 1), str(-2 ** 63),
                  str(-2 ** 63 - 3), str(10 ** 25))


@dataclass
class Iteration:
    """An iterator of a differential space: ``values`` of expressions or a ``range`` (start, stop,
    step); ``wide``: a range of about 2**62 values that nothing reads (counted, never walked)."""

    name: str
    kind: str
    parts: list
    value_kind: str
    wide: bool = False


@dataclass
class DifferentialSpace:
    """One random space, written as a space file (``t1`` False: filters REJECT when true) or as a
    T1 file (conditions valid when true), and counted by brute force (:func:`brute_program`)."""

    t1: bool
    iterators: list
    filters: list
    derived: list = field(default_factory=list)  # (name, node, iterators declared before it)
    settings: dict = field(default_factory=dict)  # name -> default
    overrides: dict = field(default_factory=dict)  # name -> text, as --set gives it
    features: set = field(default_factory=set)

    # -- the texts -------------------------------------------------------------------------------
    def declarations(self) -> list:
        """The iterators and derived values in the order they are written: a derived value right
        after the iterator it follows (``derived``: ``(name, node, after)``, ``after`` the number
        of iterators declared before it)."""
        order = []
        for index, it in enumerate(self.iterators):
            order.append(it)
            order += [(name, node) for name, node, after in self.derived if after == index + 1]
        return order

    def space_file(self) -> str:
        lines = ["import math", "import beastgen as beast", ""]
        lines += [f"{name} = beast.setting({value!r})" for name, value in self.settings.items()]
        for declared in self.declarations():
            if isinstance(declared, Iteration):
                parts = ", ".join(render(p, False) for p in declared.parts)
                lines.append(f"{declared.name} = beast.{declared.kind}({parts})")
            else:
                lines.append(f"{declared[0]} = {render(declared[1], False)}")
        lines += [f"f{i} = beast.filter({render(node, False)})" for i, node in enumerate(self.filters)]
        return "\n".join(lines) + "\n"

    def t1_document(self) -> dict:
        return {"General": {"BenchmarkName": "differential", "OutputFormat": "JSON"},
                "ConfigurationSpace": {
                    "TuningParameters": [{"Name": it.name, "Type": it.value_kind,
                                          "Values": "[" + ", ".join(render(p, True) for p in it.parts) + "]"}
                                         for it in self.iterators],
                    "Conditions": [{"Expression": render(node, True), "Parameters": []} for node in self.filters]}}

    def text(self) -> str:
        return json.dumps(self.t1_document(), indent=1) if self.t1 else self.space_file()

    # -- brute force: plain Python over the same expressions -------------------------------------
    def brute_program(self) -> str:
        """A Python function ``brute()`` counting the space in nested loops: a domain, derived value
        or filter that raises rejects (a filter rejects when true; a T1 condition when false);
        wide ranges are counted by their length."""
        settings = {**self.settings, **{k: _setting_value(v, self.settings[k]) for k, v in self.overrides.items()}}
        lines = ["import math", "def rlen(r):", "    return max(0, (r.stop - r.start + r.step - (1 if r.step > 0 else -1)) // r.step)",
                 "def brute():", *(f"    {k} = {v!r}" for k, v in settings.items()), "    total = 0"]
        depth = 1
        for declared in self.declarations():
            pad, reject = "    " * depth, "continue" if depth > 1 else "return 0"
            if not isinstance(declared, Iteration):  # a derived value that raises rejects
                lines += [f"{pad}try:", f"{pad}    {declared[0]} = {render(declared[1], True)}",
                          f"{pad}except Exception:", f"{pad}    {reject}"]
                continue
            if declared.wide:
                continue
            parts = ", ".join(render(p, True) for p in declared.parts)
            domain = f"range({parts})" if declared.kind == "range" else f"({parts},)"
            lines += [f"{pad}try:", f"{pad}    {declared.name}__d = {domain}", f"{pad}except Exception:",
                      f"{pad}    {reject}", f"{pad}for {declared.name} in {declared.name}__d:"]
            depth += 1
        pad = "    " * depth
        lines.append(f"{pad}try:")
        for node in self.filters:
            test = f"not ({render(node, True)})" if self.t1 else f"({render(node, True)})"
            lines.append(f"{pad}    if {test}:")
            lines.append(f"{pad}        continue")
        size = "1"
        for it in self.iterators:
            if it.wide:
                lines.append(f"{pad}    {it.name}__n = rlen(range({', '.join(render(p, True) for p in it.parts)}))")
                size += f" * {it.name}__n"
        lines += [f"{pad}except Exception:", f"{pad}    continue", f"{pad}total += {size}", "    return total"]
        return "\n".join(lines) + "\n"

    def brute_count(self) -> int:
        scope: dict = {}
        exec(compile(self.brute_program(), "<brute>", "exec"), scope)  # noqa: S102 - the test's own text
        return scope["brute"]()


def _setting_value(text: str, default):
    return type(default)(text) if not isinstance(default, bool) else text == "True"


class _Drawer:
    """The choices of one differential space, drawn through hypothesis."""

    def __init__(self, draw, t1: bool):
        self.draw, self.t1 = draw, t1
        self.names: dict[str, str] = {}  # name -> kind (int, float, bool)
        self.features: set[str] = set()

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 99)) < p * 100

    # -- leaves ----------------------------------------------------------------------------------
    def const(self, kind: str):
        if kind == "bool":
            return ("k", self.pick((True, False)))
        if kind == "float":
            if self.chance(0.3):
                self.features.add("special-float")
                return ("k", self.pick(SPECIAL))
            return ("k", self.pick(FLOATS))
        if self.chance(0.12):
            self.features.add("edge-int")
            return ("k", self.pick(EDGE))
        if self.chance(0.03):
            self.features.add("big-int")
            return ("k", self.pick(BIG))
        return ("k", self.pick(SMALL))

    def name_of(self, *kinds):
        names = [n for n, k in self.names.items() if k in kinds]
        return ("n", self.pick(names)) if names else None

    def leaf(self, kind: str):
        kinds = {"int": ("int", "bool"), "float": ("float", "int"), "bool": ("bool",)}[kind]
        name = self.name_of(*kinds) if self.chance(0.7) else None
        if name is None and kind == "bool" and self.chance(0.8):  # a test more often than a constant
            return self.named(("cmp", self.pick(["<", "==", "!="]), self.leaf("int"), self.const("int")), "bool")
        return name or self.const(kind)

    def named(self, node, kind: str):
        """A node of an operation between constants gets a name operand: in a space file Python
        would compute it while the file loads (a raise there, ``&`` bitwise)."""
        if has_name(node):
            return node
        name = self.name_of("int", "bool", "float") or ("k", 1)
        if node[0] in ("bin", "cmp"):
            return (node[0], node[1], name, node[3])
        if node[0] in ("and", "or"):
            return (node[0], ("cmp", "!=", name, ("k", 0)), node[2])
        if node[0] == "not":
            return ("not", ("cmp", ">", name, ("k", 0)))
        if node[0] == "call" and node[1] in ("floor", "ceil"):
            return ("call", node[1], (("bin", "+", name, node[2][0]),))
        return node

    # -- expressions of a kind -------------------------------------------------------------------
    def expr(self, kind: str, depth: int):
        if depth <= 0 or self.chance(0.25):
            return self.leaf(kind)
        make = {"int": self.int_expr, "float": self.float_expr, "bool": self.bool_expr}[kind]
        return self.named(make(depth), kind)

    def int_expr(self, depth: int):
        ops = ["+", "-", "*", "//", "%", "**", "neg", "abs", "min", "max", "where", "//", "%"]
        if not self.t1:
            ops += ["floor", "ceil"]
        op = self.pick(ops)
        self.features.add(f"int {op}")
        sub = lambda: self.expr("int", depth - 1)  # noqa: E731
        if op in ("+", "-", "*"):
            return ("bin", op, sub(), sub())
        if op in ("//", "%"):
            divisor = self.pick(["any", "risky", "name"])
            right = {"any": sub, "name": lambda: self.leaf("int"),
                     "risky": lambda: self.named(("bin", self.pick(["//", "%"]), self.leaf("int"),
                                                  self.leaf("int")), "int")}[divisor]()
            return ("bin", op, sub(), right)
        if op == "**":
            exponent = ("k", self.pick(EXPONENTS)) if self.chance(0.7) else self.leaf("int")
            return ("bin", "**", sub(), exponent)
        if op == "neg":
            return ("neg", sub())
        if op in ("abs",):
            return ("call", "abs", (sub(),))
        if op in ("min", "max"):
            return ("call", op, (sub(), sub()))
        if op == "where":
            return ("where", self.expr("bool", depth - 1), sub(), sub())
        return ("call", op, (self.expr("float", depth - 1),))

    def float_expr(self, depth: int):
        op = self.pick(["+", "-", "*", "/", "//", "%", "**", "**", "neg", "abs", "min", "max", "where", "/"])
        self.features.add(f"float {op}")
        sub = lambda: self.expr("float", depth - 1)  # noqa: E731
        if op == "**":
            exponent = ("k", self.pick(FLOAT_EXPONENTS)) if self.chance(0.5) else sub()
            return ("bin", "**", sub(), exponent)
        if op in ("+", "-", "*", "/", "//", "%"):
            return ("bin", op, sub(), sub())
        if op == "neg":
            return ("neg", sub())
        if op == "abs":
            return ("call", "abs", (sub(),))
        if op in ("min", "max"):
            return ("call", op, (sub(), sub()))
        return ("where", self.expr("bool", depth - 1), sub(), sub())

    def bool_expr(self, depth: int):
        op = self.pick(["cmp", "cmp", "cmp", "and", "or", "not", "truthy", "name"])
        self.features.add(f"bool {op}")
        if op == "name" and self.name_of("bool"):
            return self.name_of("bool")
        if op in ("and", "or"):
            return (op, self.expr("bool", depth - 1), self.expr("bool", depth - 1))
        if op == "not":
            return ("not", self.expr("bool", depth - 1))
        if op == "truthy":
            return self.expr(self.pick(["int", "float"]), depth - 1)
        kinds = (self.pick(["int", "float"]), self.pick(["int", "float"]))
        return ("cmp", self.pick(["<", "<=", ">", ">=", "==", "!="]),
                self.expr(kinds[0], depth - 1), self.expr(kinds[1], depth - 1))

    # -- iterators -------------------------------------------------------------------------------
    def values(self, name: str) -> Iteration:
        kind = self.pick(["int", "int", "float", "bool", "mixed"])
        count = self.draw(st.integers(1, 4))
        if kind == "mixed":
            parts = [self.const(self.pick(["int", "float"])) for _ in range(count)]
        else:
            parts = [self.const(kind) for _ in range(count)]
        if self.t1:  # T1 values are finite numbers (refused otherwise)
            parts = [p if not (isinstance(p[1], float) and not math.isfinite(p[1])) else ("k", 1.5) for p in parts]
        elif self.names and self.chance(0.25):  # values computed from outer iterators
            parts[0] = self.expr("int", 2)
            self.features.add("dependent values")
        values = [p[1] for p in parts if p[0] == "k"]
        value_kind = ("bool" if values and all(isinstance(v, bool) for v in values) and len(values) == len(parts)
                      else "float" if any(isinstance(v, float) for v in values) else "int")
        return Iteration(name, "values", parts, value_kind)

    def clamp(self, node, low: int = -5, high: int = 6):
        """``node`` kept small: ``beast.max(low, beast.min(high, node))``."""
        return ("call", "max", (("k", low), ("call", "min", (("k", high), node))))

    def range_(self, name: str) -> Iteration:
        if self.names and self.chance(0.5):
            self.features.add("dependent range")
            start = self.clamp(self.expr("int", 2))
            stop = self.clamp(self.expr("int", 2)) if self.chance(0.5) else ("bin", "+", start, ("k", self.pick([3, -3, 5])))
            step = ("k", self.pick([1, 1, 2, -1, -2, 3])) if self.chance(0.7) else self.clamp(self.expr("int", 1), -3, 3)
            return Iteration(name, "range", [start, stop, step], "int")
        start = self.pick(range(-5, 4))
        step = self.pick([1, 1, 2, -1, -2, 3])
        stop = start + step * self.draw(st.integers(0, 5)) + self.pick([0, 1, -1])
        if self.chance(0.1):
            self.features.add("edge range")
            offset = self.pick([2 ** 63 - 8, -2 ** 63 + 2, 2 ** 62])
            start, stop = start + offset, stop + offset
        if step < 0:
            self.features.add("negative step")
        return Iteration(name, "range", [("k", start), ("k", stop), ("k", step)], "int")

    def wide(self, name: str, outer: list) -> Iteration:
        """A range of about 2**62 values that nothing reads; its start may read an ``outer`` iterator."""
        ints = ("n", self.pick(outer)) if outer else None
        start = self.clamp(ints, -3, 4) if ints and self.chance(0.7) else ("k", self.pick(SMALL))
        stop = ("k", 2 ** 62 + self.pick([0, 1, 2, 7]))
        if self.chance(0.3):  # downwards
            return Iteration(name, "range", [stop, start, ("k", self.pick([-1, -2]))], "int", wide=True)
        return Iteration(name, "range", [start, stop, ("k", self.pick([1, 1, 3]))], "int", wide=True)


@st.composite
def differential_spaces(draw, t1: bool | None = None) -> DifferentialSpace:
    """A random space for the differential test: 1 to 4 iterators (values with every edge kind,
    constant, dependent and negative-step ranges, at most one wide range read by nothing), derived
    values and 1 to 3 filters of Python's operators over them; as a space file, settings
    (overridden past 64 bits too)."""
    if t1 is None:
        t1 = draw(st.booleans())
    g = _Drawer(draw, t1)
    space = DifferentialSpace(t1, [], [])
    if not t1 and g.chance(0.3):
        space.settings["n"] = g.pick([3, -2, 7])
        g.names["n"] = "int"
        if g.chance(0.6):
            space.overrides["n"] = g.pick(SETTING_VALUES)
            g.features.add("setting override")
    count = draw(st.integers(1, 4))
    for index in range(count):
        name = "abcd"[index]
        it = g.range_(name) if (not t1 and g.chance(0.45)) else g.values(name)
        space.iterators.append(it)
        g.names[name] = it.value_kind
        if not t1 and g.chance(0.2):
            derived = f"d{len(space.derived)}"
            kind = g.pick(["int", "float"])
            node = g.named(g.expr(kind, 2), kind)
            if node[0] in ("n", "k"):  # `d = a` would be a second name of a, not a derived value
                node = ("bin", "+", g.name_of("int", "float") or ("n", name), node)
            space.derived.append((derived, node, len(space.iterators)))
            g.names[derived] = kind
    if not t1 and g.chance(0.3):
        at = draw(st.integers(0, len(space.iterators)))
        outer = [it.name for it in space.iterators[:at] if it.value_kind == "int"]
        space.iterators.insert(at, g.wide("w", outer))
        space.derived = [(name, node, after + (after >= at)) for name, node, after in space.derived]
        g.features.add("wide range")
    space.filters = [g.named(g.expr("bool", 3), "bool") for _ in range(draw(st.integers(1, 3)))]
    space.features = g.features
    return space
