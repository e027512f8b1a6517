"""Where compiled code and NumPy differ from Python (hostile probes, issue 28): each case is exact
against the reference enumerator in every path, or one clear error."""
from __future__ import annotations

import pytest
from test_properties import check_exact, write_space

import beastgen
from beastgen.errors import SpaceError

MIN_OF_A_NUMBER = """\
import beastgen as beast
a = beast.range(0, 5)
b = beast.range(-2, 3)

@beast.filter
def one():
    return min(a) > 1          # Python raises TypeError: every row rejected

@beast.derived
def low():
    t = (a, b, 3)
    return min(t) + max([a, 1])  # min/max of a sequence is fine

@beast.filter
def empty():
    s = 0
    for i in range(b):
        s += i
    return max(range(a)) > 2 and s >= 0   # max of an empty range raises ValueError
"""


def test_min_of_one_number_raises_as_in_python(tmp_path):
    """``min(x)`` of a number counted x's rows (the expression form and Numba's ``min`` both read it
    as x); Python raises, so the reference rejects every row."""
    space = beastgen.load(write_space(tmp_path, MIN_OF_A_NUMBER))
    assert check_exact(space, {}, tmp_path)[1] == 0
    source = MIN_OF_A_NUMBER.replace("min(a) > 1", "min((a, 1)) > 1")
    space = beastgen.load(write_space(tmp_path, source, "sequence"))
    assert check_exact(space, {}, tmp_path)[1] == 15


@pytest.mark.parametrize("name", ["min", "max"])
def test_beast_min_of_one_argument_is_an_error(tmp_path, name):
    path = write_space(tmp_path, f"import beastgen as beast\na = beast.range(3)\nf = beast.filter(beast.{name}(a) > 1)\n")
    with pytest.raises(SpaceError, match=rf"space.py:3: beast.{name} needs two or more arguments, got 1"):
        beastgen.load(path)
