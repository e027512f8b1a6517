"""Every restriction form Kernel Tuner 1.5 accepts, through ``from_kernel_tuner``, against Kernel
Tuner's own ``Searchspace`` and brute force.

Each random restriction is written in one of the forms (a string, a lambda over the dict of values,
a function called positionally, ``*args`` / ``*args, **kwargs``, a function with a body, constants
read from numpy calls and dicts, a python-constraint object, and callables beastgen cannot compile,
run in Python). The restrictions are written into a module file, so that their source is real.
The expected set is the brute force of this file's own templates (evaluated with Python's eval:
they are this file's literals).
"""
import functools
import importlib.util
import itertools
import os
import textwrap
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beastgen.interop import from_kernel_tuner
from beastgen.interop.python_restrictions import PythonRestrictionWarning

from property_sizes import examples

searchspace = pytest.importorskip("kernel_tuner.searchspace")
constraint = pytest.importorskip("constraint")

PARAMS = {"bx": [1, 2, 4, 8, 16], "by": [1, 2, 4], "t": [1, 2, 3], "f": [0, 1]}
NAMES = list(PARAMS)
NONZERO = ["bx", "by", "t"]

#: restriction templates over {a} {b} {c} (parameters), {d} (a parameter never zero), {k} {m}
TEMPLATES = [
    "{a} * {b} <= {k}",
    "min([{a}, {b}]) <= {m}",
    "max(({a}, {b})) >= {m}",
    "sum([{a}, {b}, {c}]) <= {k}",
    "any(({a} == {m}, {b} == {m}))",
    "all([{a} >= {m}, {b} <= {k}])",
    "{a} % {d} == 0 or {b} in (1, 2)",
    "{a} / {d} > {m}",
    "{a} // {d} <= {m} and not {c} == {m}",
    "2 <= {a} * {b} <= {k}",
]
FORMS = ["string", "lambda", "positional", "star", "star_kwargs", "body", "numpy", "dict",
         "python_object", "python_partial"]


def _value(template: str, names: dict, k: int, m: int, point: dict) -> bool:
    return bool(eval(template.format(**{s: repr(point[n]) for s, n in names.items()}, k=k, m=m)))


class Positional:
    """A callable object: no source to convert, so beastgen calls it in Python."""

    def __init__(self, func):
        self.func = func

    def __call__(self, *args):
        return self.func(*args)


def _render(index: int, template: str, names: dict, k: int, m: int, form: str) -> tuple[str, str]:
    """(module source defining r<index>, how to read it as a restriction)."""
    def expr(read, constant=repr):
        return template.format(**{s: read(n) for s, n in names.items()}, k=constant(k), m=constant(m))

    def numpy_constant(c):
        return f"int(np.prod([{c}, 1])) * np.dtype('int8').itemsize"

    name = f"r{index}"
    signature = ", ".join(NAMES)
    if form == "string":
        return f"{name} = {expr(lambda n: n)!r}\n", name
    if form == "lambda":
        return f"{name} = lambda p: {expr(lambda n: f'p[{n!r}]')}\n", name
    if form == "positional":
        return f"def {name}({signature}):\n    return {expr(lambda n: n)}\n", name
    if form == "star":
        return f"def {name}(*args):\n    return {expr(lambda n: f'args[{NAMES.index(n)}]')}\n", name
    if form == "star_kwargs":
        return (f"def {name}(bx, *rest, **kwargs):\n    return "
                f"{expr(lambda n: 'bx' if n == 'bx' else f'rest[{NAMES.index(n) - 1}]')}\n"), name
    if form == "body":
        return textwrap.dedent(f"""\
            def {name}({signature}):
                valid = {expr(lambda n: n)}
                if valid:
                    return True
                return False
            """), name
    if form == "numpy":
        return (f"def {name}({signature}):\n    return "
                f"{expr(lambda n: n, numpy_constant)}\n"), name
    if form == "dict":
        return (f"{name} = lambda p: "
                f"{expr(lambda n: f'p[{n!r}]', lambda c: f'DEFINES[{str(c)!r}]')}\n"), name
    if form == "python_object":
        return f"{name} = Positional(lambda {signature}: {expr(lambda n: n)})\n", f"FunctionConstraint({name})"
    assert form == "python_partial"
    body = template.format(**names, k="k", m="m")
    return (f"def {name}_k({signature}, k, m):\n    return {body}\n"
            f"{name} = functools.partial({name}_k, k={k}, m={m})\n"), f"FunctionConstraint({name})"


def _load(directory: str, source: str, module_name: str):
    path = os.path.join(directory, f"{module_name}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernel_tuner_accepts(specs) -> bool:
    """Where Kernel Tuner 1.5 itself fails: it turns lambdas into strings for python-constraint,
    which reads ``all`` as a parameter and cannot see the lambda's globals (DEFINES); it calls a
    lone restriction whose signature has one parameter (``def r(*args)`` too) with the dict of
    values. (It reads the source of every bare callable, so partials and callable objects are
    given wrapped in a FunctionConstraint.)"""
    lone_star = len(specs) == 1 and specs[0][-1] == "star"
    return not lone_star and all(form != "dict" and not (form in ("string", "lambda") and "all(" in template)
                                 for template, *_, form in specs)


def render_restrictions(specs) -> tuple[list[str], list[str], list]:
    """For drawn restriction specs: the source lines defining them, the expression of each in a
    RESTRICTIONS list, and the brute-force check of each (a function of the values dict)."""
    texts, reads, checks = [], [], []
    for index, (template, order, divisor, k, m, form) in enumerate(specs):
        names = {"a": order[0], "b": order[1], "c": order[2], "d": divisor}
        text, read = _render(index, template, names, k, m, form)
        texts.append(text)
        reads.append(read)
        checks.append(functools.partial(_value, template, names, k, m))
    return texts, reads, checks


restriction_specs = st.lists(
    st.tuples(st.sampled_from(TEMPLATES), st.permutations(NAMES), st.sampled_from(NONZERO),
              st.integers(1, 40), st.integers(0, 4), st.sampled_from(FORMS)),
    min_size=1, max_size=4, unique_by=lambda spec: spec[0])

COUNTER = itertools.count()


@settings(max_examples=int(os.environ.get("BEASTGEN_KT_EXAMPLES") or examples(10)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(specs=restriction_specs, constraint_kind=st.sampled_from([None, "MaxProdConstraint",
                                                                  "MinSumConstraint"]))
def test_random_restrictions_in_every_form(specs, constraint_kind, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("kt-forms", numbered=True))
    source = ["import functools", "import numpy as np",
              "from constraint import FunctionConstraint, MaxProdConstraint, MinSumConstraint",
              "from test_kernel_tuner_forms import Positional",
              "DEFINES = {str(i): i for i in range(0, 41)}"]
    texts, reads, checks = render_restrictions(specs)
    source += texts
    if constraint_kind:
        reads.append(f"{constraint_kind}({20 if constraint_kind == 'MinSumConstraint' else 64})")
        checks.append(lambda p: (sum(p.values()) >= 20) if constraint_kind == "MinSumConstraint"
                      else (p["bx"] * p["by"] * p["t"] * p["f"] <= 64))
    source.append(f"RESTRICTIONS = [{', '.join(reads)}]")
    module = _load(directory, "\n".join(source), f"kt_forms_{next(COUNTER)}")

    expected = set()
    for point in itertools.product(*PARAMS.values()):
        values = dict(zip(NAMES, point))
        if all(check(values) for check in checks):
            expected.add(point)

    python_forms = sum(form.startswith("python") for *_, form in specs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        space = from_kernel_tuner(PARAMS, module.RESTRICTIONS, name=f"kt_forms_{len(specs)}")
    # callables without source always run in Python; a body using what the function compiler
    # lacks (sum/all/any, lists) may too: either way the result must be exact
    in_python = sum(issubclass(w.category, PythonRestrictionWarning) for w in caught)
    assert python_forms <= in_python <= python_forms + sum(form == "body" for *_, form in specs)
    plan = space.specialize(generated_dir=directory)
    rows = plan.enumerate()
    assert plan.count() == len(expected)
    assert set(zip(*(rows[n].tolist() for n in NAMES))) == expected

    if _kernel_tuner_accepts(specs):
        reference = searchspace.Searchspace(PARAMS, module.RESTRICTIONS, 1024)
        assert set(map(tuple, reference.list)) == expected


def test_kernel_tuner_script_forms_count_like_kernel_tuner(tmp_path):
    """The forms of the issue, each next to the others, against Kernel Tuner."""
    module = _load(str(tmp_path), textwrap.dedent("""\
        import numpy as np
        SIZE = np.dtype("float32").itemsize
        TILES = [1, 2]
        defines = {"MAX_SHARED": 96}

        def restrict(*args, **kwargs):
            return args[0] * args[1] <= 32

        def shared(bx, by, t, f):
            need = bx * t * SIZE
            if f == 1:
                need = need * 2
            return need <= defines["MAX_SHARED"] and t in TILES or bx == np.prod([4, 4])

        by_dict = lambda p: sum([p["bx"], p["by"]]) <= 12
        RESTRICTIONS = [restrict, shared, "min([bx, t]) <= 4", "max((by, t)) >= 2", by_dict,
                        "any([f == 1, bx > 2])"]
        """), "kt_script_forms")
    space = from_kernel_tuner(PARAMS, module.RESTRICTIONS, name="kt_script_forms")
    assert not hasattr(space, "python_restrictions")  # everything compiled
    plan = space.specialize(generated_dir=str(tmp_path))
    reference = searchspace.Searchspace(PARAMS, module.RESTRICTIONS, 1024)
    rows = plan.enumerate()
    assert plan.count() == reference.size > 0
    assert set(zip(*(rows[n].tolist() for n in NAMES))) == set(map(tuple, reference.list))
