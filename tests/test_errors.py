"""Bad input: one clear error naming the cause and the place (file:line), never a deep traceback."""
import json
import os

import pytest

import beastgen
from beastgen.cli import main
from beastgen.errors import DeviceError, SettingError, SpaceError

OK_SPACE = """\
import beastgen as beast
size = beast.setting(8, choices=[4, 8, 16])
x = beast.range(1, size + 1)
y = beast.range(1, 4)
too_big = beast.filter(x * y > 12)
"""


def _line_of(path, text):
    for number, line in enumerate(open(path).read().splitlines(), 1):
        if text in line:
            return f"{os.path.basename(path)}:{number}"
    raise AssertionError(text)


def test_syntax_error_names_file_and_line(write_space):
    path = write_space("import beastgen as beast\nx = beast.range(1, 4\ny = 3\n")
    with pytest.raises(SpaceError) as e:
        beastgen.load(path)
    assert e.value.where.endswith("space.py:2") or e.value.where.endswith("space.py:3")
    assert "syntax error" in e.value.message


def test_undefined_name_in_expression_suggests(write_space):
    path = write_space("""\
        import beastgen as beast
        block_size = beast.range(1, 9)
        too_big = beast.filter(blok_size > 4)
        """)
    with pytest.raises(SpaceError) as e:
        beastgen.load(path)
    assert "undefined name 'blok_size'" in e.value.message and "block_size" in e.value.message
    assert e.value.where.endswith("space.py:3")


def test_undefined_name_in_function_suggests(write_space):
    path = write_space("""\
        import beastgen as beast
        threads = beast.range(1, 9)

        @beast.filter
        def odd():
            return thread % 2 == 1
        """)
    with pytest.raises(SpaceError) as e:
        beastgen.load(path)
    assert "undefined name 'thread'" in e.value.message and "'threads'" in e.value.message
    assert e.value.where.endswith("space.py:6")


def test_cycle_is_named(write_space):
    path = write_space("""\
        import beastgen as beast
        x = beast.range(1, 4)

        @beast.derived
        def a():
            return b + x

        @beast.derived
        def b():
            return a * 2
        """)
    space = beastgen.load(path)
    with pytest.raises(SpaceError) as e:
        space.specialize()
    assert "dependency cycle" in e.value.message
    assert "a -> b -> a" in e.value.message or "b -> a -> b" in e.value.message


@pytest.mark.parametrize("step, message", [("0", "must not be zero"), ("0.5", "must be an integer")])
def test_range_step_must_be_a_nonzero_integer(write_space, step, message):
    path = write_space(f"import beastgen as beast\nx = beast.range(0, 10, {step})\n")
    with pytest.raises(SpaceError) as e:
        beastgen.load(path)
    assert message in e.value.message and e.value.where.endswith("space.py:2")


def test_range_step_zero_through_a_setting_rejects_everything(write_space):
    path = write_space("import beastgen as beast\ns = beast.setting(1)\nx = beast.range(0, 10, s)\n")
    plan = beastgen.load(path).specialize(s=0)
    assert plan.count() == 0
    assert "iterator 'x'" in plan.why_empty() and "space.py:3" in plan.why_empty()


def test_uncompilable_function_iterator_names_construct_and_line(write_space):
    path = write_space("""\
        import beastgen as beast
        x = beast.range(1, 4)

        @beast.iterator
        def y():
            table = {1: 2, 2: 4, 3: 8}
            return range(table[x])
        """)
    with pytest.raises(SpaceError) as e:
        beastgen.load(path).specialize()
    assert "'y'" in e.value.message and "a dict" in e.value.message
    assert e.value.where.endswith("space.py:6")


def test_function_of_settings_may_use_any_python(write_space):
    path = write_space("""\
        import beastgen as beast
        precision = beast.setting('d')

        @beast.derived
        def width():
            return {'s': 4, 'd': 8}[precision]
        x = beast.range(1, width + 1)
        """)
    assert beastgen.load(path).specialize().count() == 8


def test_unknown_device_property(write_space):
    path = write_space("""\
        import beastgen as beast
        warp = beast.device.warp_sise
        x = beast.range(1, warp)
        """)
    with pytest.raises(DeviceError) as e:
        beastgen.load(path).specialize(device="h100")
    assert "warp_sise" in e.value.message and "warp_size" in e.value.message
    assert e.value.where.endswith("space.py:2")


def test_unknown_device_lists_known(write_space):
    with pytest.raises(DeviceError) as e:
        beastgen.load(write_space(OK_SPACE)).specialize(device="h10")
    assert "h100" in e.value.message and "v100" in e.value.message


def test_unknown_setting_and_bad_choice(write_space):
    space = beastgen.load(write_space(OK_SPACE))
    with pytest.raises(SettingError) as e:
        space.specialize(sise=4)
    assert "no setting named 'sise'" in e.value.message and "size" in e.value.message
    with pytest.raises(SettingError) as e:
        space.specialize(size=5)
    assert "not one of its choices" in e.value.message and "[4, 8, 16]" in e.value.message


def test_setting_minimum_and_maximum(write_space):
    path = write_space("import beastgen as beast\nn = beast.setting(8, minimum=1, maximum=64)\n"
                       "x = beast.range(n)\n")
    space = beastgen.load(path)
    for value, words in ((0, "below its minimum 1"), ("-1", "below its minimum 1"),
                         (65, "above its maximum 64")):
        with pytest.raises(SettingError) as e:
            space.specialize(n=value)
        assert words in e.value.message and e.value.where.endswith("space.py:2")
    assert space.specialize(n=1).count() == 1 and space.specialize(n="64").count() == 64
    with pytest.raises(SpaceError, match="default 0 is below its minimum 1"):
        beastgen.load(write_space("import beastgen as beast\nn = beast.setting(0, minimum=1)\n"))
    with pytest.raises(SpaceError, match="minimum must be a number"):
        beastgen.load(write_space("import beastgen as beast\nn = beast.setting('a', minimum=1)\n"))


def test_cli_refuses_a_negative_problem_size(capsys):
    gemm = os.path.join(os.path.dirname(__file__), os.pardir, "spaces", "gemm.py")
    assert main(["count", gemm, "--device", "a100", "--set", "M=-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "setting 'M' = -1 is below its minimum 1" in err and "gemm.py:" in err and "\n" not in err


def test_empty_space_is_not_an_error_and_names_the_filter(write_space, generated_dir):
    path = write_space(OK_SPACE.replace("x * y > 12", "x * y > 0"))
    plan = beastgen.load(path).specialize(generated_dir=generated_dir)
    assert plan.count() == 0
    assert "too_big" in plan.why_empty()


def test_always_true_filter_is_reported(write_space):
    path = write_space(OK_SPACE + "never = beast.filter(size > 2)\n")
    plan = beastgen.load(path).specialize()
    assert plan.count() == 0 and "'never'" in plan.empty_reason and "always true" in plan.empty_reason


def test_cli_reports_errors_in_one_line(write_space, capsys):
    path = write_space("import beastgen as beast\nx = beast.range(1, 4\n")
    assert main(["count", path]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("beastgen: error: ") and "space.py:" in err and "\n" not in err
    assert main(["count", write_space(OK_SPACE), "--set", "size=5"]) == 2
    assert "not one of its choices" in capsys.readouterr().err
    assert main(["count", write_space(OK_SPACE), "--device", "nonesuch"]) == 2
    assert "unknown device" in capsys.readouterr().err
    assert main(["count", write_space(OK_SPACE), "--set", "size"]) == 2
    assert "name=value" in capsys.readouterr().err


def test_cli_empty_space_json(write_space, capsys, generated_dir):
    path = write_space(OK_SPACE.replace("x * y > 12", "x > 0"))
    assert main(["count", path, "--json", "--generated-dir", generated_dir]) == 0
    out = capsys.readouterr().out
    assert json.loads(out.strip().splitlines()[-1])["count"] == 0
    assert "too_big" in out


def test_integer_overflow_is_refused_where_interval_arithmetic_finds_it(write_space):
    """Compiled integers are 64-bit, Python's are exact: an operation that can leave int64 is an
    error naming the item, the expression and its line; one that provably stays inside compiles."""
    path = write_space("""\
        import beastgen as beast
        x = beast.range(1, 100)
        y = beast.range(1, x + 1)
        big = x ** 9 * y
        odd = beast.filter(big % 7 == 0)
        """)
    with pytest.raises(SpaceError) as e:
        beastgen.load(path).specialize()
    assert e.value.where == f"{path}:4" or e.value.where.endswith("space.py:4")
    assert "derived 'big'" in e.value.message and "x ** 9 * y" in e.value.message
    assert "64-bit" in e.value.message
    fits = write_space(open(path).read().replace("x ** 9 * y", "x ** 9"))
    assert beastgen.load(fits).specialize().count() == 4950 - 7 * sum(range(1, 15))


def test_jobs_must_be_a_number_of_threads(write_space, capsys):
    with pytest.raises(SystemExit) as e:
        main(["count", write_space(OK_SPACE), "-j", "-2"])
    assert e.value.code == 2 and "a number of threads" in capsys.readouterr().err
