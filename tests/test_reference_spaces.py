"""The three community reference spaces (AutoTuningAssociation benchmark_hub, T1 JSON, MIT licence)
written as beastgen space files: spaces/dedispersion.py, spaces/hotspot.py, spaces/gemm_clblast.py.

Each space file must be exactly its T1 JSON: the same tuning parameters, in the same order, with the
same values, and the same valid set. The valid set is checked against a brute-force evaluation of
the JSON itself (``eval`` of its value expressions and conditions over the whole Cartesian product,
Python semantics; a condition that raises makes a configuration invalid). That is safe here because
the JSON files are trusted files of this repository's shared/ folder; beastgen itself never evals
them.
"""
import itertools
import json
import os

import pytest

import beastgen

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_DIR = os.path.join(REPO, "data", "reference-spaces")

#: space name -> valid configurations (benchmark_hub / python-constraint2 / brute force)
EXPECTED = {"dedispersion": 11_130, "hotspot": 82_984, "gemm_clblast": 116_928}
CARTESIAN = {"dedispersion": 22_272, "hotspot": 4_440_000, "gemm_clblast": 663_552}


def _json_space(name):
    path = os.path.join(REFERENCE_DIR, f"{name}.json")
    with open(path, encoding="utf-8") as f:
        space = json.load(f)["ConfigurationSpace"]
    names = [p["Name"] for p in space["TuningParameters"]]
    values = [eval(p["Values"], {}) for p in space["TuningParameters"]]  # trusted file (see above)
    conditions = [c["Expression"] for c in space["Conditions"]]
    return names, values, conditions


def _brute_force(names, values, conditions):
    """Every point of the Cartesian product for which all conditions are true (Python semantics)."""
    body = " and ".join(f"({c})" for c in conditions)
    source = (f"def valid({', '.join(names)}):\n"
              f"    try:\n"
              f"        return bool({body})\n"
              f"    except ArithmeticError:\n"  # division/modulo by zero: invalid
              f"        return False\n")
    namespace = {}
    exec(compile(source, "<T1 conditions>", "exec"), namespace)  # trusted file (see above)
    valid = namespace["valid"]
    return {point for point in itertools.product(*values) if valid(*point)}


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    generated_dir = str(tmp_path_factory.mktemp("reference-generated"))
    return {name: beastgen.load(os.path.join(REPO, "spaces", f"{name}.py"))
            .specialize(generated_dir=generated_dir) for name in EXPECTED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_count(plans, name):
    assert plans[name].count() == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parameters_are_the_json_parameters(plans, name):
    """Same names, same order, same values; every parameter is an iterator, single values too."""
    names, values, _ = _json_space(name)
    space = plans[name].specialized.space
    assert list(space.iterators) == names
    assert plans[name].columns == names
    declared = [[c.value for c in var.obj.values] for var in space.iterators.values()]
    assert declared == values
    cartesian = 1
    for v in values:
        cartesian *= len(v)
    assert cartesian == CARTESIAN[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_enumerated_set_is_the_brute_force_set(plans, name):
    names, values, conditions = _json_space(name)
    expected = _brute_force(names, values, conditions)
    assert len(expected) == EXPECTED[name]
    rows = plans[name].enumerate()
    assert list(rows.dtype.names) == names
    enumerated = list(zip(*(rows[n].tolist() for n in names)))
    assert len(enumerated) == len(set(enumerated)) == EXPECTED[name]  # no duplicates
    assert set(enumerated) == expected
