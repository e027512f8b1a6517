"""Hypothesis strategies for space files at the edges the compiled code must get right or refuse
clearly: 64-bit limits (ranges and values near INT64_MIN/INT64_MAX, steps of 2**61), NaN and
infinities, floats made integers past 64 bits, deep operator chains and nests of 20+ iterators.
Each strategy draws the text of a space file; every domain stays small, so the reference enumerator
(the oracle) answers in milliseconds."""
from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

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
