"""Property tests: the compiled enumerator is exact against the naive reference enumerator.

A hypothesis strategy (``space_generators.spaces``) writes random small space files (every iterator
kind, dependent and raising bounds, derived values and filters as expressions and as functions,
settings overridden at specialization), and each is compiled and compared, as a multiset of configurations, with
:class:`beastgen.compiler.reference.ReferenceEnumerator`. Every example costs a Numba compilation, so the
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

from beastgen.compiler.native import exact_count
import beastgen
from beastgen.compiler.plan import item_graph, iterator_closure
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.compiler.runtime import compile_space
from beastgen.compiler.specialize import specialize_space
from beastgen.errors import BeastError
from space_generators import spaces
from property_sizes import examples

DEVICE = "v100"
# every example compiles, so no shrinking (minutes): a failure shows its whole space file instead
CI = settings(deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])


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
        assert exact_count(plan.module.count, 0, 2 ** 62) * plan.counted_tail == total
        assert plan.native is None or plan.native.count(0, 2 ** 62) * plan.counted_tail == total
    stats = plan.stats()
    assert stats.count == total
    if plan.plan is not None:
        assert stats.levels[-1][1] >= total
    check_chunks(plan, table)
    check_native(plan, table)
    return plan, total


def _why_no_c_target(plan) -> str:
    from beastgen.compiler.codegen.c.expression import Unsupported
    from beastgen.compiler.codegen.c.module import generate_c_module
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
    plan.executable.use_numba()  # Numba from here on
    try:
        by_numba = [plan.enumerate(), *(plan.enumerate(chunk=c) for c in chunks)]
        assert [rows.dtype for rows in native] == [rows.dtype for rows in by_numba]
        assert [rows.tolist() for rows in native] == [rows.tolist() for rows in by_numba]
        assert table.tolist() == by_numba[0].tolist()
        assert counts == [len(table), *(plan.count(chunk=c) for c in chunks)]
    finally:
        plan.executable.forget_native()


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


pytestmark = pytest.mark.usefixtures("compiled_nests_only")  # NumPy's path: test_vectorised.py


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("properties")


_counter = itertools.count()


@settings(CI, max_examples=examples(44))
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


@settings(CI, max_examples=examples(14))
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


@settings(CI, max_examples=examples(8))
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
    assert "float(z - 1) ** (-1.0)" in plan.source and "float(x) ** 2.0" in plan.source
