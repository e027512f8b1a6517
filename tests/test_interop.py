"""Spaces from other tools (T1 JSON, Kernel Tuner) and exports to them (beastgen.interop).

Compiled plans are module-scoped: each space is compiled once, into a tmp_path_factory directory.
The test's own condition strings are evaluated with Python's eval to compute expected sets (they
are this file's literals); beastgen itself never evals anything (checked below).
"""
import builtins
import functools
import itertools
import json
import os

import pytest

import beastgen
from beastgen import cli
from beastgen.compiler.language import nodes as L
from beastgen.compiler.reference import reference_count
from beastgen.errors import BeastError, SpaceError
from beastgen.interop import (
    from_kernel_tuner,
    load_t1,
    to_kernel_tuner,
    to_t1,
    write_kernel_tuner,
)
from beastgen.interop.restricted import build_condition, evaluate_values

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_DIR = os.path.join(REPO, "data", "reference-spaces")
EXPECTED = {"dedispersion": 11_130, "hotspot": 82_984, "gemm_clblast": 116_928}


def _reference_json(name):
    return os.path.join(REFERENCE_DIR, f"{name}.json")


def _t1_document(parameters, conditions):
    """A T1 document from [(name, values expression)] and [condition expression]."""
    return {"General": {"BenchmarkName": "test", "OutputFormat": "JSON"},
            "ConfigurationSpace": {
                "TuningParameters": [{"Name": n, "Type": "int", "Values": v, "Default": None}
                                     for n, v in parameters],
                "Conditions": [{"Expression": c, "Parameters": []} for c in conditions]}}


def _write_t1(directory, name, parameters, conditions):
    path = os.path.join(str(directory), f"{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(_t1_document(parameters, conditions), f)
    return path


def _brute_force(tune_params: dict, conditions: list[str]) -> set:
    """The valid set by brute force over the Cartesian product (this file's own trusted strings)."""
    names = list(tune_params)
    source = f"lambda {', '.join(names)}: ({') and ('.join(conditions) or 'True'})"
    valid = eval(source)
    result = set()
    for point in itertools.product(*tune_params.values()):
        try:
            if valid(*point):
                result.add(point)
        except ArithmeticError:  # a condition that raises: invalid
            pass
    return result


def _rows(plan) -> set:
    rows = plan.enumerate()
    return set(zip(*(rows[n].tolist() for n in plan.columns)))


# --------------------------------------------------------------------------------------------------
# T1: the three reference spaces
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("interop-generated"))


@pytest.fixture(scope="module")
def t1_plans(gen_dir):
    return {name: beastgen.load(_reference_json(name)).specialize(generated_dir=gen_dir)
            for name in EXPECTED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_t1_reference_counts_through_beastgen_load(t1_plans, name):
    assert t1_plans[name].count() == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_t1_reference_counts_through_the_cli(t1_plans, gen_dir, capsys, name):
    # the same generated file as the fixture's: Numba's disk cache is reused
    assert cli.main(["count", _reference_json(name), "--generated-dir", gen_dir, "--json"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["count"] == EXPECTED[name]
    assert record["space"] == name


def test_t1_space_is_built_from_language_objects(t1_plans):
    path = _reference_json("gemm_clblast")
    space = t1_plans["gemm_clblast"].specialized.space
    with open(path, encoding="utf-8") as f:
        document = json.load(f)["ConfigurationSpace"]
    assert list(space.iterators) == [p["Name"] for p in document["TuningParameters"]]
    for index, (name, var) in enumerate(space.iterators.items()):
        assert isinstance(var.obj, L.ValuesIterator) and var.obj.name == name
        assert var.origin.endswith(f"gemm_clblast.json:TuningParameters[{index}]")
    assert [v.value for v in space.variables["MWG"].obj.values] == [16, 32, 64, 128]
    filters = list(space.filters.values())
    assert len(filters) == len(document["Conditions"]) == 8
    for index, var in enumerate(filters):
        assert var.origin.endswith(f"gemm_clblast.json:Conditions[{index}]")
        assert isinstance(var.obj.expr, L.Not) and var.obj.func is None  # an expression, not code
    assert space.module_globals == {}
    # the filters are hoisted: `KWG % KWI == 0` is tested right after its two loops
    plan = t1_plans["gemm_clblast"].plan
    assert plan.level_of("condition_0") == max(plan.level_of("KWG"), plan.level_of("KWI"))


def test_t1_hotspot_values_are_python_values(t1_plans):
    space = t1_plans["hotspot"].specialized.space
    values = {n: [c.value for c in v.obj.values] for n, v in space.iterators.items()}
    assert values["block_size_x"] == [1, 2, 4, 8, 16] + list(range(32, 1024 + 1, 32))
    assert values["block_size_y"] == [2 ** i for i in range(6)]
    assert values["loop_unroll_factor_t"] == list(range(1, 11))


def test_t1_loading_never_calls_eval_or_exec(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec called while loading a T1 file")
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    for name in EXPECTED:
        assert load_t1(_reference_json(name)).iterators


# --------------------------------------------------------------------------------------------------
# The restricted evaluator
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("[1, 2, 4]", [1, 2, 4]),
    ("[2**i for i in range(0, 6)]", [1, 2, 4, 8, 16, 32]),
    ("[1, 2] + list(range(32, 97, 32))", [1, 2, 32, 64, 96]),
    ("list(range(5))[::-1]", [4, 3, 2, 1, 0]),
    ("[i * j for i in range(1, 3) for j in range(3) if j]", [1, 2, 2, 4]),
    ("[x for x in [1, 2, 3, 4] if x % 2 == 0 or x == 1]", [1, 2, 4]),
    ("(1, 2.5)", [1, 2.5]),
    ("[True, False]", [True, False]),
    ("['a', 'b' + 'c']", ["a", "bc"]),
    ("[-1, +2, 2 ** -1, 7 // 2, 7 % 3, 7 / 2]", [-1, 2, 0.5, 3, 1, 3.5]),
    ("[i for i in range(10) if 2 < i <= 4]", [3, 4]),
    ("[a + b for a, b in [(1, 2), (3, 4)]]", [3, 7]),
    ("list(range(4))[1:3]", [1, 2]),
    ("[max(1, 2), min([3, 4]), abs(-5)]", [2, 3, 5]),
    ([1, 2, 3], [1, 2, 3]),  # a JSON list is data already
])
def test_values_expressions(text, expected):
    assert evaluate_values(text, "TuningParameters[0] (x)", "f.json:TuningParameters[0]") == expected


@pytest.mark.parametrize("text, why", [
    ("__import__('os').system('x')", "calling '__import__('os').system'"),
    ("open('f')", "calling 'open'"),
    ("eval('1')", "calling 'eval'"),
    ("[].__class__", "attribute access"),
    ("(1).real", "attribute access"),
    ("(lambda: [1])()", "calling a lambda"),
    ("[lambda: 1]", "a lambda"),
    ("x", "undefined name 'x'"),
    ("{1: 2}", "a dict"),
    ("{1, 2}", "a set"),
    ("[*range(3)]", "star-unpacking"),
    ("[y := 1]", "walrus"),
    ("list(range(10**9))", "more than"),
    ("[2**10**10]", "too large"),
    ("['a' * 10**9]", "more than"),
    ("['%s' % 1]", "string formatting"),
    ("[1 / 0]", "ZeroDivisionError"),
    ("[None]", "the constant None"),
    ("1", "must be a list"),
    ("[]", "has no values"),
    ("[1, 'a']", "mix strings and numbers"),
    ("[1,", "syntax error"),
    ("[f'{1}']", "f-string"),
])
def test_values_expressions_rejected(text, why):
    with pytest.raises(SpaceError) as info:
        evaluate_values(text, "TuningParameters[2] (x)", "f.json:TuningParameters[2]")
    message = str(info.value)
    assert why in message
    assert "TuningParameters[2]" in message and info.value.where == "f.json:TuningParameters[2]"
    if why not in ("must be a list", "has no values", "mix strings and numbers"):
        assert repr(text.strip()) in message or text in message  # names the expression


@pytest.mark.parametrize("text, why", [
    ("__import__('os').system('x')", "calling '__import__('os').system'"),
    ("a.real > 1", "attribute access"),
    ("print(a)", "calling 'print'"),
    ("range(a) == 1", "calling 'range'"),
    ("list(a) == 1", "calling 'list'"),
    ("(lambda: a)() > 1", "calling a lambda"),
    ("[i for i in range(3)] == a", "a list comprehension"),
    ("a & b", "'&'"),
    ("~a", "'~'"),
    ("a is None", "'is'"),
    ("a in b", "'in' anything but a literal list or tuple"),
    ("aa > 1", "undefined name 'aa' (did you mean 'a'?)"),
    ("f'{a}' == '1'", "f-string"),
    ("a[0] == 1", "a subscript"),
    ("(c := a) > 1", "walrus"),
    ("a > ", "syntax error"),
])
def test_conditions_rejected(tmp_path, text, why):
    path = _write_t1(tmp_path, "bad", [("a", "[1, 2]"), ("b", "[3, 4]")], ["a < b", text])
    with pytest.raises(SpaceError) as info:
        load_t1(path)
    message = str(info.value)
    assert why in message
    assert "Conditions[1]" in message and info.value.where.endswith("bad.json:Conditions[1]")
    assert text.strip() in message  # names the whole expression


def test_chained_comparison_is_an_and_sharing_the_middle_operand():
    x, y = L.ValuesIterator([1, 2]), L.ValuesIterator([3, 4])
    x.name, y.name = "x", "y"
    expr = build_condition("32 <= x * y <= 1024", "Conditions[0]", "f.json:Conditions[0]",
                           {"x": x, "y": y})
    assert isinstance(expr, L.BoolOp) and expr.op == "and" and len(expr.operands) == 2
    first, second = expr.operands
    assert (first.op, second.op) == ("<=", "<=")
    assert first.right is second.left  # x * y: one node, as Python evaluates it once
    assert isinstance(first.right, L.BinOp) and first.right.left is x
    assert expr.origin == "f.json:Conditions[0]" and x.origin != "f.json:Conditions[0]"


def test_bad_t1_documents(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(SpaceError, match="not valid JSON"):
        beastgen.load(str(broken))
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    with pytest.raises(SpaceError, match="no 'ConfigurationSpace'"):
        load_t1(str(empty))
    for name, message in (("__x", "reserved"), ("math", "reserved"), ("min", "builtin"),
                          ("a-b", "not a Python identifier"), ("lambda", "keyword")):
        path = _write_t1(tmp_path, "names", [(name, "[1]")], [])
        with pytest.raises(SpaceError, match=message):
            load_t1(path)
    path = _write_t1(tmp_path, "twice", [("a", "[1]"), ("a", "[2]")], [])
    with pytest.raises(SpaceError, match="used twice"):
        load_t1(path)


# --------------------------------------------------------------------------------------------------
# T1 semantics: mixed types, true division, chains, division by zero (compiled and brute force)
# --------------------------------------------------------------------------------------------------
MIXED_PARAMS = {"a": [0, 1, 2, 3, 4], "f": [0.5, 1.0, 2.5], "s": ["x", "yy", "z"],
                "b": [True, False], "m": [1, 2.5, 4]}
MIXED_VALUES = {"a": "list(range(5))", "f": "[0.5, 1.0, 2.5]", "s": "['x', 'yy', 'z']",
                "b": "[True, False]", "m": "[1, 2.5, 4]"}
MIXED_CONDITIONS = [
    "0 < a * f <= 5",               # chain with a shared float product
    "a / f < 3 or s == 'x'",        # true division
    "4 % a == 0 or a == 3",         # a == 0: modulo by zero, invalid (a == 3 is never reached)
    "not b or s != 'yy'",
    "(a if b else 2) >= 1",
    "s in ('x', 'yy') or m > 2",
    "min(a, 3) == a or b",
    "-a < 0 and m * 2 != 5.0 or f > 1",
    "(a - 2) ** 2 / (a - 1) < 5",   # a == 1: division by zero, invalid
]


@pytest.fixture(scope="module")
def mixed_plan(tmp_path_factory, gen_dir):
    directory = tmp_path_factory.mktemp("mixed")
    path = _write_t1(directory, "mixed", list(MIXED_VALUES.items()), MIXED_CONDITIONS)
    return beastgen.load(path).specialize(generated_dir=gen_dir)


def test_mixed_types_true_division_and_division_by_zero(mixed_plan):
    expected = _brute_force(MIXED_PARAMS, MIXED_CONDITIONS)
    assert 0 < len(expected) < len(list(itertools.product(*MIXED_PARAMS.values())))
    assert mixed_plan.count() == len(expected)
    assert _rows(mixed_plan) == expected
    assert reference_count(mixed_plan.specialized.space) == len(expected)
    stats = mixed_plan.stats()  # the divisions by zero reject, they do not crash
    assert stats.count == len(expected) and stats.rejections["condition_2"] > 0


def test_mixed_values_keep_their_types(mixed_plan):
    rows = mixed_plan.enumerate()
    assert rows["f"].dtype.kind == "f" and rows["m"].dtype.kind == "f"  # ints among floats: floats
    assert rows["b"].dtype.kind == "b" and rows["a"].dtype.kind == "i"
    assert set(rows["s"].tolist()) <= {"x", "yy", "z"}


# --------------------------------------------------------------------------------------------------
# Kernel Tuner
# --------------------------------------------------------------------------------------------------
KT_PARAMS = {"block_size_x": [1, 2, 4, 8, 16, 32, 64, 128], "block_size_y": [1, 2, 4, 8, 16],
             "tile": [1, 2, 3, 4], "flag": [True, False], "s": ["a", "b"]}
LIMIT = 512  # a global constant a restriction reads

dict_lambda = lambda p: p["block_size_y"] * p["tile"] <= 32
flag_lambda = lambda p: p["flag"] or p["s"] != "b"


def monolithic(p):
    """Kernel Tuner's old style: one function of the dict of values, with a body."""
    t = p["tile"]
    if t == 3:
        return p["block_size_x"] >= 4
    block_size_x = p["block_size_x"] * t  # a local named like a parameter
    return block_size_x <= LIMIT


def by_keyword(block_size_x, tile):
    return block_size_x % tile == 0


KT_CASES = {
    "strings_and_lambdas": ([dict_lambda, flag_lambda, "tile * block_size_x <= 256"], 256),
    "monolithic_function": (monolithic, 128),
    "strings": (["32 <= block_size_x * block_size_y <= 512", "block_size_x % tile == 0 or s == 'a'",
                 "not flag or tile in (1, 2)"], 1024),
}


def _kt_valid(case, config) -> bool:
    p = dict(zip(KT_PARAMS, config))
    max_threads = KT_CASES[case][1]
    if p["block_size_x"] * p["block_size_y"] > max_threads:
        return False
    if case == "monolithic_function":
        return monolithic(p)
    checks = {"strings_and_lambdas": [dict_lambda(p), flag_lambda(p),
                                      p["tile"] * p["block_size_x"] <= 256],
              "strings": [32 <= p["block_size_x"] * p["block_size_y"] <= 512,
                          p["block_size_x"] % p["tile"] == 0 or p["s"] == "a",
                          not p["flag"] or p["tile"] in (1, 2)]}[case]
    return all(checks)


@pytest.fixture(scope="module")
def kt_plans(gen_dir):
    return {case: from_kernel_tuner(KT_PARAMS, restrictions, max_threads=max_threads,
                                    name=f"kt_{case}").specialize(generated_dir=gen_dir)
            for case, (restrictions, max_threads) in KT_CASES.items()}


@pytest.mark.parametrize("case", sorted(KT_CASES))
def test_from_kernel_tuner_matches_itertools(kt_plans, case):
    expected = {c for c in itertools.product(*KT_PARAMS.values()) if _kt_valid(case, c)}
    assert kt_plans[case].count() == len(expected) > 0
    assert _rows(kt_plans[case]) == expected


@pytest.mark.parametrize("case", sorted(KT_CASES))
def test_from_kernel_tuner_matches_kernel_tuner(kt_plans, case):
    searchspace = pytest.importorskip("kernel_tuner.searchspace")
    restrictions, max_threads = KT_CASES[case]
    reference = searchspace.Searchspace(KT_PARAMS, restrictions, max_threads)
    assert kt_plans[case].count() == reference.size
    assert _rows(kt_plans[case]) == set(map(tuple, reference.list))


def test_from_kernel_tuner_dedispersion_matches_kernel_tuner(gen_dir):
    """A T1 reference space given to both as tune_params + string restrictions + max_threads."""
    path = _reference_json("dedispersion")
    with open(path, encoding="utf-8") as f:
        document = json.load(f)["ConfigurationSpace"]
    tune_params = {p["Name"]: evaluate_values(p["Values"], "values", None)
                   for p in document["TuningParameters"]}
    restrictions = [c["Expression"] for c in document["Conditions"]]
    space = from_kernel_tuner(tune_params, restrictions, max_threads=1024, name="kt_dedispersion")
    assert space.specialize(generated_dir=gen_dir).count() == EXPECTED["dedispersion"]
    searchspace = pytest.importorskip("kernel_tuner.searchspace")
    assert searchspace.Searchspace(tune_params, restrictions, 1024).size == EXPECTED["dedispersion"]


def test_kernel_tuner_callable_forms_and_max_threads():
    """Every callable form, checked against the naive reference enumerator (nothing compiled)."""
    constraint = pytest.importorskip("constraint")
    params = {"block_size_x": [1, 2, 4, 8], "block_size_y": [1, 2, 4], "tile": [1, 2, 3]}

    def body(p):
        total = 0
        for i in range(p["tile"]):
            total += p["block_size_x"]
        return total <= 16

    forms = [
        (by_keyword, lambda x, y, t: x % t == 0),
        ((lambda a, b: a >= b, ["block_size_x", "tile"]), lambda x, y, t: x >= t),
        ((constraint.MaxProdConstraint(8), ["block_size_y", "tile"]), lambda x, y, t: y * t <= 8),
        (constraint.MinSumConstraint(6), lambda x, y, t: x + y + t >= 6),
        (body, lambda x, y, t: t * x <= 16),
        (lambda block_size_x, block_size_y, tile: block_size_y != tile, lambda x, y, t: y != t),
        ("block_size_x / (tile - 1) >= 2", lambda x, y, t: t != 1 and x / (t - 1) >= 2),
    ]
    for restriction, valid in forms:
        for max_threads in (None, 8):
            space = from_kernel_tuner(params, [restriction], max_threads=max_threads)
            expected = sum(1 for x, y, t in itertools.product(*params.values())
                           if valid(x, y, t) and (max_threads is None or x * y <= max_threads))
            assert reference_count(space) == expected, restriction
    # block_size_names: only those present count
    space = from_kernel_tuner(params, None, max_threads=4, block_size_names=["tile", "block_size_z"])
    assert reference_count(space) == sum(1 for x, y, t in itertools.product(*params.values()) if t <= 4)


def test_kernel_tuner_wrong_restrictions_are_clear_errors():
    params = {"x": [1, 2], "y": [1, 2]}
    for restriction, message in [
        (max, "cannot convert the callable"),
        (lambda p: p["z"] > 1, "no tuning parameter named 'z'"),
        (lambda p: p["x"] > UNDEFINED_LIMIT, "undefined name 'UNDEFINED_LIMIT'"),  # noqa: F821
        (lambda a, b, c: a > 1, "cannot tell which parameters"),
        ((lambda a: a > 1, ["x", "w"]), "'w' is not a tuning parameter"),
        ("x.bit_length() > 1", "calling 'x.bit_length'"),
        ("x.real > 1", "attribute access"),
        ("__import__('os').system('x')", "calling '__import__('os').system'"),
        ("min() > 1", "min() needs two or more arguments, or one literal list or tuple"),
        (42, "unsupported restriction"),
    ]:
        with pytest.raises(BeastError) as info:
            from_kernel_tuner(params, [restriction])
        assert message in str(info.value), (restriction, str(info.value))
        assert "restrictions[0]" in str(info.value)
    with pytest.raises(SpaceError) as info:  # the place is named once, not twice
        from_kernel_tuner(params, ["x +"])
    assert str(info.value) == "<kernel_tuner>:restrictions[0]: syntax error in 'x +': invalid syntax"


class _Positional:
    """A callable object (no source to convert): Kernel Tuner calls it with every value."""

    def __call__(self, x, y):
        return x > 1 or y == 2


def test_kernel_tuner_uncompilable_callables_run_in_python(gen_dir):
    """What cannot be compiled is called in Python on the compiled candidates, with a warning."""
    params = {"x": [1, 2, 3], "y": [1, 2]}
    values = [1, 2]
    limits = {"x": 2}
    expected = {(x, y) for x in params["x"] for y in params["y"] if x > 1 or y == 2}
    for restriction in [functools.partial(lambda p, k: p["x"] > k or p["y"] == 2, k=1),
                        lambda p: p.get("x") > 1 or p["y"] == 2,
                        lambda p: len(p) == 2 and (p["x"] > 1 or p["y"] == 2),
                        _Positional()]:
        with pytest.warns(UserWarning, match="evaluated in Python"):
            space = from_kernel_tuner(params, [restriction, "x < 10"], name="kt_python")
        assert [r.context for r in space.python_restrictions] == ["restrictions[0]"]
        plan = space.specialize(generated_dir=gen_dir)
        assert plan.count() == len(expected) and _rows(plan) == expected
        assert plan.stats().count == len(expected)
        assert plan.stats().rejections["restriction_0"] == 6 - len(expected)
    # constants, lists and dicts the function reads are folded: compiled, no warning
    for restriction in [lambda p: p["x"] in values or p["y"] == 2,
                        lambda p: p["x"] >= len(values) or p["y"] == 2,
                        lambda p: p["x"] >= limits["x"] or p["y"] == 2,
                        lambda *args: args[0] > 1 or args[-1] == 2]:
        space = from_kernel_tuner(params, [restriction])
        assert not hasattr(space, "python_restrictions")
        assert reference_count(space) == len(expected)
    # a restriction that raises anything but an arithmetic error is the restriction's bug
    with pytest.warns(UserWarning, match="evaluated in Python"):
        space = from_kernel_tuner(params, [lambda p: p > 1], name="kt_python_bug")
    with pytest.raises(BeastError, match="restrictions\\[0\\] raised TypeError"):
        space.specialize(generated_dir=gen_dir).count()


# --------------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------------
def test_to_kernel_tuner(mixed_plan, tmp_path):
    tune_params, configs = to_kernel_tuner(mixed_plan)
    assert list(tune_params) == list(MIXED_PARAMS)
    assert tune_params["s"] == ["x", "yy", "z"] and tune_params["m"] == [1.0, 2.5, 4.0]
    assert len(configs) == mixed_plan.count()
    assert {tuple(c.values()) for c in configs} == _brute_force(MIXED_PARAMS, MIXED_CONDITIONS)
    assert all(type(c["b"]) is bool and type(c["a"]) is int for c in configs)
    path = tmp_path / "mixed_kt.json"
    assert write_kernel_tuner(mixed_plan, str(path)) == len(configs)
    document = json.loads(path.read_text())
    assert document["tune_params"] == tune_params
    assert list(document["cache"].values()) == configs
    searchspace = pytest.importorskip("kernel_tuner.searchspace")
    loaded = searchspace.Searchspace(None, None, None, from_cache=document)
    assert loaded.size == len(configs)


def test_export_cli_kernel_tuner(t1_plans, gen_dir, tmp_path, capsys):
    output = tmp_path / "dedispersion_kt.json"
    assert cli.main(["export", _reference_json("dedispersion"), "--format", "kernel_tuner",
                     "-o", str(output), "--generated-dir", gen_dir]) == 0
    assert "11,130 valid configurations" in capsys.readouterr().out
    document = json.loads(output.read_text())
    assert len(document["cache"]) == EXPECTED["dedispersion"]
    assert document["tune_params"]["block_size_x"] == [1, 2, 4, 8, 16, 32]


@pytest.fixture(scope="module")
def round_trip_plans(tmp_path_factory, t1_plans):
    directory = tmp_path_factory.mktemp("round-trip")
    generated = str(tmp_path_factory.mktemp("round-trip-generated"))
    plans = {}
    for name in EXPECTED:
        path = str(directory / f"{name}.json")
        to_t1(load_t1(_reference_json(name)), path)
        plans[name] = load_t1(path).specialize(generated_dir=generated)
    return plans


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_t1_round_trip_counts_the_same(round_trip_plans, t1_plans, name):
    original, again = t1_plans[name].specialized.space, round_trip_plans[name].specialized.space
    assert round_trip_plans[name].count() == EXPECTED[name]
    assert list(again.iterators) == list(original.iterators)
    assert len(again.filters) == len(original.filters)


def test_export_cli_t1(tmp_path, capsys):
    output = tmp_path / "hotspot_t1.json"
    assert cli.main(["export", _reference_json("hotspot"), "--format", "t1", "-o", str(output)]) == 0
    assert "4 conditions" in capsys.readouterr().out
    conditions = json.loads(output.read_text())["ConfigurationSpace"]["Conditions"]
    assert conditions[1] == {"Expression": "temporal_tiling_factor % loop_unroll_factor_t == 0",
                             "Parameters": ["temporal_tiling_factor", "loop_unroll_factor_t"]}


def test_to_t1_of_a_space_file(write_space, tmp_path):
    """Settings and device properties become literals, derived values are inlined, a derived value
    that may raise keeps rejecting, bound terms are dropped; counts agree (reference enumerator)."""
    path = write_space("""
        import beastgen as beast
        n = beast.setting(6)
        x = beast.range(1, n + 1)
        y = beast.values(0, 1, 2, 4)
        w = beast.values('a', 'b')
        threads = x * y
        ratio = x / (y - 1)                       # raises for y == 1: rejected
        too_many = beast.filter(threads > beast.device.max_threads_per_block // 256)
        odd = beast.filter((x % 2 == 1) & (w == 'b'))
        cost = beast.bound(threads * 1e-9)
    """, name="exportable.py")
    space = beastgen.load(path)
    document = to_t1(space, str(tmp_path / "exportable.json"), device="h100", settings={"n": 5})
    parameters = document["ConfigurationSpace"]["TuningParameters"]
    assert parameters[0] == {"Name": "x", "Type": "int", "Values": "list(range(1, 6))", "Default": 1}
    assert parameters[2]["Values"] == "['a', 'b']" and parameters[2]["Type"] == "string"
    texts = [c["Expression"] for c in document["ConfigurationSpace"]["Conditions"]]
    assert "not (x * y > 4)" in texts  # h100: 1024 // 256, the derived value inlined
    again = load_t1(str(tmp_path / "exportable.json"))
    assert reference_count(again) == reference_count(space, "h100", n=5) > 0


def test_to_t1_evaluates_function_iterators_of_settings(write_space, tmp_path):
    """Function and generator iterators that read no other iterator export their values."""
    space = beastgen.load(write_space("""
        import beastgen as beast
        n = beast.setting(20)
        x = beast.range(1, 4)
        @beast.iterator
        def y():
            v = 1
            while v <= n:
                yield v
                v *= 2
        @beast.iterator
        def z():
            return range(1, n // 5)
        too_big = beast.filter(x * y > 16)
    """, name="function_iterators.py"))
    document = to_t1(space, str(tmp_path / "fi.json"), settings={"n": 40})
    parameters = document["ConfigurationSpace"]["TuningParameters"]
    assert [p["Values"] for p in parameters] == ["list(range(1, 4))", "[1, 2, 4, 8, 16, 32]",
                                                 "list(range(1, 8))"]
    again = load_t1(str(tmp_path / "fi.json"))
    assert reference_count(again) == reference_count(space, n=40) > 0


def test_to_t1_refuses_what_t1_cannot_express(write_space, tmp_path):
    cases = {
        "function iterator whose values depend on x": """
            import beastgen as beast
            x = beast.range(1, 4)
            @beast.iterator
            def y():
                v = 1
                while v <= x:
                    yield v
                    v *= 2
        """,
        "depend on x": """
            import beastgen as beast
            x = beast.range(1, 4)
            y = beast.range(x, 8)
        """,
        "written as a function": """
            import beastgen as beast
            x = beast.range(1, 4)
            @beast.filter
            def big():
                total = 0
                for i in range(x):
                    total += i
                return total > 2
        """,
        "'f' calls ceil\\(\\), which the T1 reader accepts only as min, max or abs": """
            import math
            import beastgen as beast
            x = beast.range(1, 4)
            f = beast.filter(math.ceil(x / 2) == 1)
        """,
        "'f' nests derived values too deeply": "import beastgen as beast\nx = beast.range(1, 4)\nv0 = x + 1\n"
        + "".join(f"v{i} = v{i - 1} + 1\n" for i in range(1, 102)) + "f = beast.filter(v101 > 3)\n",
    }
    for index, (message, text) in enumerate(cases.items()):
        space = beastgen.load(write_space(text, name=f"unexportable{index}.py"))
        with pytest.raises(BeastError, match=f"cannot export to T1: .*{message}"):
            to_t1(space, str(tmp_path / "out.json"))
