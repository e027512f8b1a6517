"""The NumPy path (no compiler): exact against the reference enumerator on the generated spaces of
test_properties and on spaces made to raise; chosen where no C library counts and Numba has not
compiled a small nest."""
import os
from collections import Counter

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from test_properties import CI, DEVICE, reference_rows, spaces, write_space

import beastgen
from beastgen.compiler import vectorised
from beastgen.compiler.runtime import compile_space
from beastgen.compiler.vectorised import Unsupported, VectorisedNest
from conftest import REFERENCE_DIR
from property_sizes import examples


def check_vectorised(space, overrides, directory, block_rows=vectorised.BLOCK_ROWS) -> str:
    """The NumPy walk's count and rows equal the reference's; what was checked (for ``event``)."""
    plan = compile_space(space, DEVICE, dict(overrides), str(directory))
    if plan.plan is None:
        return "empty before any loop"
    try:
        nest = VectorisedNest(plan.plan, block_rows)
    except Unsupported as e:
        return f"unsupported: {e}"
    expected = reference_rows(space, overrides, plan.plan.order)
    columns = nest.columns()
    rows = Counter(zip(*(columns[name].tolist() for name in plan.plan.order)))
    assert rows == expected
    assert nest.count() == sum(expected.values())
    return "checked"


@settings(CI, max_examples=examples(200))
@given(case=spaces(), block_rows=st.sampled_from([1, 3, 64, vectorised.BLOCK_ROWS]))
def test_vectorised_matches_reference(tmp_path_factory, case, block_rows):
    source, overrides, _ = case
    note(f"{source}\nsettings: {overrides}\nblock rows: {block_rows}")
    directory = tmp_path_factory.mktemp("vectorised")
    space = beastgen.load(write_space(directory, source))
    event(check_vectorised(space, overrides, directory, block_rows))


RAISING = """\
import math
import beastgen as beast
a = beast.range(-3, 4)
b = beast.values(0, 1, 2, 2.5)
c = beast.range(0, a + 3, beast.where(a == 1, 0, 1 + (a > 0)))
v = beast.where(b > 0, a // b, a % 3)
w = beast.min(v, c * 2, a + True)
f = beast.filter((b != 0) & (a % b == 1))
g = beast.filter(beast.where(a > 1, c // (a - 2), -c) > 2)

@beast.derived
def mixed():
    return math.floor(a / b) if b != 2.5 else (c and a or b)

h = beast.filter(beast.max(abs(w), v) - mixed > 5)
"""


@pytest.mark.parametrize("block_rows", [1, 5, vectorised.BLOCK_ROWS])
def test_what_raises_is_rejected_as_in_python(tmp_path, block_rows):
    """Zero divisors (in the branch taken only), a zero range step, bools as integers, min/max
    keeping the first of equals, and/or giving the deciding operand: as the reference has them."""
    space = beastgen.load(write_space(tmp_path, RAISING))
    assert check_vectorised(space, {}, tmp_path, block_rows) == "checked"


def test_chosen_where_no_c_library_counts(tmp_path, monkeypatch):
    """BEASTGEN_NATIVE=0 (as where no C compiler is found): a small nest counts and enumerates in
    NumPy without compiling Numba, the rows in the compiled nest's order; with a C library, C."""
    path = os.path.join(REFERENCE_DIR, "dedispersion.json")
    monkeypatch.setenv("BEASTGEN_NATIVE", "0")
    plan = compile_space(beastgen.load(path), None, {}, str(tmp_path / "numpy"))
    assert vectorised.chosen_nest(plan) is not None
    assert plan.count() == 11_130
    rows = plan.enumerate()
    assert len(rows) == 11_130 and not plan.executable.module_loaded and not plan.numba_cached("count")
    monkeypatch.setenv("BEASTGEN_NATIVE", "1")
    native = compile_space(beastgen.load(path), None, {}, str(tmp_path / "c"))
    assert native.native is not None and vectorised.chosen_nest(native) is None
    assert native.enumerate().tolist() == rows.tolist()
    assert rows.dtype == native.enumerate().dtype


def test_a_large_nest_is_not_chosen(tmp_path, monkeypatch):
    monkeypatch.setenv("BEASTGEN_NATIVE", "0")
    monkeypatch.setattr(vectorised, "VECTORISED_ITERATIONS", 1000)
    plan = compile_space(beastgen.load(os.path.join(REFERENCE_DIR, "dedispersion.json")), None, {},
                         str(tmp_path))
    assert plan.iteration_bound > 1000 and vectorised.chosen_nest(plan) is None


@pytest.mark.parametrize("body", [
    "y = beast.values(1, 2)\nx = beast.range(2 ** 63 - 4, 2 ** 63 - 1, 2)\nf = beast.filter(x + 0 * y == 5)\n",
    "x = beast.range(-2 ** 62, 2 ** 62 + 5, 2 ** 61)\ny = beast.values(1, 2)\nf = beast.filter(x + y == 3)\n",
    "x = beast.range(2 ** 62, -2 ** 62 - 5, -2 ** 61)\ny = beast.values(1, 2)\nf = beast.filter(x % 3 == y)\n",
])
def test_ranges_at_the_64_bit_edge(tmp_path, body):
    """A range wider than 64 bits (stop - start does not fit) is sized with Python's integers."""
    space = beastgen.load(write_space(tmp_path, "import beastgen as beast\n" + body))
    assert check_vectorised(space, {}, tmp_path, 1) == "checked"


def test_the_command_line_count_compiles_nothing(write_space, tmp_path, monkeypatch, capsys):
    """``beastgen count`` with no C library: no "compiling" line, and no Numba module written."""
    from beastgen.cli import main
    monkeypatch.setenv("BEASTGEN_NATIVE", "0")
    path = write_space("import beastgen as beast\nx = beast.range(7)\nodd = beast.filter(x % 2 == 1)\n")
    assert main(["count", path, "--generated-dir", str(tmp_path / "gen")]) == 0
    captured = capsys.readouterr()
    assert "compiling" not in captured.err and "\n4 valid configurations" in captured.out
    assert not list((tmp_path / "gen").glob("*.py"))
