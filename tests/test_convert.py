"""``beastgen convert``: a Kernel Tuner script or a T1 file as a readable space file that counts
exactly what Kernel Tuner (or the T1 file) counts."""
import ast
import itertools
import os
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import beastgen
from beastgen.cli import main
from beastgen.interop import from_kernel_tuner, load_t1
from beastgen.interop.space_file import space_file_source

from conftest import REFERENCE_DIR
from property_sizes import examples
from test_kernel_tuner_forms import NAMES, NONZERO, PARAMS, TEMPLATES, _load, render_restrictions

searchspace = pytest.importorskip("kernel_tuner.searchspace")

SCRIPT = '''\
"""A Kernel Tuner script, as people write them."""
from collections import OrderedDict

import numpy as np
from kernel_tuner import tune_kernel

SIZE = np.dtype("float32").itemsize


def shared(block_size_x, block_size_y, tile_size_x, use_shmem):
    need = block_size_x * tile_size_x * SIZE
    if tile_size_x > 2:
        need = need * 2
    return need <= 1024


def tune_params():
    params = OrderedDict()
    params["block_size_x"] = [32 * i for i in range(1, 17)]
    params["block_size_y"] = [1, 2, 4, 8]
    params["tile_size_x"] = [1, 2, 3, 4]
    params["use_shmem"] = [0, 1]
    return params


RESTRICTIONS = ["block_size_x * block_size_y >= 64",
                lambda p: p["use_shmem"] == 1 or p["tile_size_x"] < 3,
                shared]
# the same for Kernel Tuner's Searchspace (whose parser fails on a lambda after a string)
AS_STRINGS = [shared, RESTRICTIONS[0], "use_shmem == 1 or tile_size_x < 3"]

if __name__ == "__main__":
    a = np.zeros(4096, dtype=np.float32)
    tune_kernel("my_kernel", "my_kernel.cu", (4096, 1), [a], tune_params(),
                restrictions=RESTRICTIONS)
'''


def test_a_kernel_tuner_script_converts_to_a_space_that_counts_like_kernel_tuner(tmp_path, capsys,
                                                                              generated_dir):
    script = tmp_path / "kt_script.py"
    script.write_text(SCRIPT)
    output = tmp_path / "space.py"
    assert main(["convert", str(script), "-o", str(output)]) == 0
    assert "4 parameters, 3 restrictions as filters, Kernel Tuner's implicit rule" in capsys.readouterr().out
    text = output.read_text()
    assert "block_size_x = beast.values(32, 64, 96," in text and "SIZE = 4" in text
    assert '"""kt_script.py:restrictions[0]"""' in text and str(tmp_path) not in text
    module = _load(str(tmp_path), SCRIPT.replace("__main__", "never"), "kt_script_module")
    expected = searchspace.Searchspace(module.tune_params(), module.AS_STRINGS, 1024)
    plan = beastgen.load(str(output)).specialize(device="h100", generated_dir=generated_dir)
    rows = plan.enumerate()
    assert set(zip(*(rows[n].tolist() for n in module.tune_params()))) == set(map(tuple, expected.list))
    assert plan.count() == len(expected.list) > 0


@pytest.mark.parametrize("name", ["convolution_milo", "dedispersion", "hotspot", "gemm_clblast"])
def test_t1_reference_spaces_convert_to_spaces_that_count_the_same(name, tmp_path, generated_dir):
    source = os.path.join(REFERENCE_DIR, f"{name}.json")
    output = tmp_path / f"{name}_space.py"
    assert main(["convert", source, "-o", str(output)]) == 0
    converted = beastgen.load(str(output)).specialize(generated_dir=generated_dir)
    assert converted.count() == load_t1(source).specialize(generated_dir=generated_dir).count()
    assert list(converted.columns) == list(load_t1(source).iterators)


def test_the_description_reads_back_as_text(tmp_path, generated_dir):
    """What the converted file's docstring says of its source (a path, a kernel name) reads back
    exactly: a quote at its end, a backslash, a NUL are text, never code or a syntax error."""
    space = load_t1(os.path.join(REFERENCE_DIR, "hotspot.json"))
    described = 'from C:\\kernels\\ and "q.json" \x00 ending in a quote"'
    output = tmp_path / "converted.py"
    output.write_text(space_file_source(space, described))
    assert ast.get_docstring(ast.parse(output.read_text()), clean=False).startswith(described)
    converted = beastgen.load(str(output)).specialize(generated_dir=generated_dir)
    assert converted.count() == space.specialize(generated_dir=generated_dir).count()


@settings(max_examples=int(os.environ.get("BEASTGEN_KT_EXAMPLES") or examples(10)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(specs=st.lists(st.tuples(st.sampled_from(TEMPLATES), st.permutations(NAMES),
                                st.sampled_from(NONZERO), st.integers(1, 40), st.integers(0, 4),
                                st.sampled_from(["string", "lambda", "positional"])),
                      min_size=1, max_size=3, unique_by=lambda spec: spec[0]))
def test_random_restrictions_convert_exactly(specs, tmp_path_factory):
    """Restrictions in the forms that become expressions (the C target counts them; a function
    body is in the script test), printed as a space file: the file's configurations are exactly
    those every restriction keeps (brute force of the templates)."""
    directory = tmp_path_factory.mktemp("convert", numbered=True)
    texts, reads, checks = render_restrictions(specs)
    source = ["import numpy as np", *texts]
    source.append(f"RESTRICTIONS = [{', '.join(reads)}]")
    module = _load(str(directory), "\n".join(source), f"convert_forms_{next(_COUNTER)}")
    space = from_kernel_tuner(PARAMS, module.RESTRICTIONS)
    path = directory / "converted.py"
    path.write_text(space_file_source(space, "random restrictions"))
    plan = beastgen.load(str(path)).specialize(generated_dir=str(directory))
    rows = plan.enumerate()
    expected = {p for p in itertools.product(*PARAMS.values())
                if all(check(dict(zip(NAMES, p))) for check in checks)}
    assert set(zip(*(rows[n].tolist() for n in NAMES))) == expected


_COUNTER = itertools.count()


@pytest.mark.parametrize("body, message", [
    ("x = 1\n", "the script never called kernel_tuner.tune_kernel"),
    ("import kernel_tuner\nraise RuntimeError('no GPU here')\n",
     "kt_broken.py:2: the script failed before it called tune_kernel: RuntimeError: no GPU here"),
])
def test_a_script_that_does_not_reach_tune_kernel_is_one_error(body, message, tmp_path, capsys):
    script = tmp_path / "kt_broken.py"
    script.write_text(body)
    assert main(["convert", str(script), "-o", str(tmp_path / "s.py")]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1
    assert not (tmp_path / "s.py").exists()


def test_counting_a_kernel_tuner_script_points_at_convert(tmp_path, capsys):
    script = tmp_path / "kt_script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    assert main(["count", str(script)]) == 2
    assert "has no iterator; a Kernel Tuner script? `beastgen convert" in capsys.readouterr().err


# -- issue 37: convert writes files that load and count what Kernel Tuner counts (F14, F15, C5, C6) --
def _kernel_tuner_count(tune_params, restrictions) -> int:
    """Kernel Tuner's own semantics, by brute force: a configuration is valid when every
    restriction is true (a string evaluated with the values as names, a callable given the dict)."""
    names, valid = list(tune_params), 0
    for values in itertools.product(*tune_params.values()):
        config = dict(zip(names, values))
        valid += all(eval(r, {}, dict(config)) if isinstance(r, str) else r(config)  # noqa: S307
                     for r in restrictions)
    return valid


@pytest.mark.parametrize("script, expected", [
    # F14 (repro/kt6.py): a global named like a generated filter (restriction_1) was shadowed by it
    ('restriction_1 = 4\ndef r0(p):\n    lim = 2\n    if p["x"] > restriction_1:\n        lim = 3\n'
     '    return p["y"] < lim\ntune_params = {"x": [1, 2, 4, 8], "y": [1, 2, 3, 4]}\n'
     'restrictions = [r0, "x != 2"]\n', 4),
    # C5 (repro/kt7.py): a global named beast became `beast = 3` after `import beastgen as beast`
    ('beast = 3\ndef r0(p):\n    t = p["x"]\n    if t > beast:\n        t = t - 1\n    return t < 6\n'
     'tune_params = {"x": [1, 2, 4, 8], "y": [1, 2, 3, 4]}\nrestrictions = [r0]\n', 12),
    # C5, with a global named beastgen too
    ('beast, beastgen = 3, 5\ndef r0(p):\n    t = p["x"]\n    if t > beast:\n        t = t - 1\n'
     '    return t < beastgen\ntune_params = {"x": [1, 2, 4, 8], "y": [1, 2, 3, 4]}\n'
     'restrictions = [r0]\n', 12),
    # C6 (repro/kt8.py): an IntEnum constant was written as `x < <E.BIG: 4>`
    ('import enum\nclass E(enum.IntEnum):\n    BIG = 4\nLIM = E.BIG\n'
     'tune_params = {"x": [1, 2, 4, 8], "y": [1, 2, 3, 4]}\nrestrictions = [lambda p: p["x"] < LIM]\n',
     8),
])
def test_converted_scripts_load_and_count_like_kernel_tuner(tmp_path, capsys, script, expected):
    namespace = {}
    exec(script, namespace)  # noqa: S102 - the test's own script
    assert _kernel_tuner_count(namespace["tune_params"], namespace["restrictions"]) == expected
    (tmp_path / "kt.py").write_text("from kernel_tuner import tune_kernel\n" + script
                                    + 'tune_kernel("k", "k.cu", (4096,), [], tune_params, '
                                      'restrictions=restrictions)\n')
    assert main(["convert", str(tmp_path / "kt.py"), "-o", str(tmp_path / "kt_conv.py")]) == 0
    plan = beastgen.load(str(tmp_path / "kt_conv.py")).specialize(
        device="h100", generated_dir=str(tmp_path / "gen"))
    assert plan.count() == expected
    assert main(["count", str(tmp_path / "kt_conv.py"), "--generated-dir", str(tmp_path / "gen")]) == 0
    assert f"\n{expected} valid configurations" in capsys.readouterr().out


def test_a_restriction_that_writes_to_a_free_variable_runs_in_python_or_is_refused(tmp_path, capsys):
    """F14 (repro/ktl4.py): ``counter[0] += 1`` on a global list was folded into ``(0,)[0] += 1``.
    The Python API now runs it in Python (the true count, the writes done); convert refuses it in
    one line."""
    import warnings

    counter = [0]

    def counted(p):
        counter[0] += 1
        return p["x"] + p["y"] < 7
    params = {"x": [1, 2, 3, 4, 5, 6], "y": [1, 2, 3, 4]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        space = from_kernel_tuner(params, [counted])
    assert space.specialize(device="h100", generated_dir=str(tmp_path / "gen")).count() == 14
    assert counter[0] == 24
    (tmp_path / "kt.py").write_text(
        "from kernel_tuner import tune_kernel\ntune_params = {'x': [1, 2, 3, 4, 5, 6], 'y': [1, 2, 3, 4]}\n"
        "counter = [0]\ndef r(p):\n    counter[0] += 1\n    return p['x'] + p['y'] < 7\n"
        "tune_kernel('k', 'k.cu', (4096,), [], tune_params, restrictions=[r])\n")
    assert main(["convert", str(tmp_path / "kt.py"), "-o", str(tmp_path / "out.py")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kt.py:5: restrictions[0] cannot be written as a space file " \
                                   "filter (it writes to counter[0])" in err
    assert not (tmp_path / "out.py").exists()


def test_a_script_catching_exceptions_around_tune_kernel_stops_there(tmp_path, capsys):
    """F15 (repro/ktexc.py): the stand-in's stop was an Exception, so ``except Exception`` around
    the call caught it and the rest of the script ran."""
    (tmp_path / "kt.py").write_text(
        "from kernel_tuner import tune_kernel\n"
        "tune_params = {'block_size_x': [32, 64, 128], 't': [1, 2]}\n"
        "try:\n    tune_kernel('k', 'k.cu', (4096,), [], tune_params, restrictions=['t < 2'])\n"
        "except Exception as e:\n    print('tuning failed:', e)\n"
        "    open('RAN_AFTER', 'w').write('the script went on')\n")
    assert main(["convert", str(tmp_path / "kt.py"), "-o", str(tmp_path / "out.py")]) == 0
    assert "tuning failed" not in capsys.readouterr().out
    assert not (tmp_path / "RAN_AFTER").exists()
    assert beastgen.load(str(tmp_path / "out.py")).specialize(
        device="h100", generated_dir=str(tmp_path / "gen")).count() == 3
