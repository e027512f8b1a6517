"""Issue 12: no user text runs as code; hostile input gets a clear error (see README "Security")."""
import ast
import json
import os
import shutil
import subprocess
import textwrap

import pytest

import beastgen
from beastgen.quoting import comment_text, docstring_text, shell_command
from beastgen.runtime import compile_space


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """The payloads write the marker ``pwned`` in the working directory, a temporary one."""
    monkeypatch.chdir(tmp_path)


def _payloads(marker):
    """Texts that would run ``open('pwned', 'w')`` (``marker``) if pasted unescaped into the
    generated module."""
    code = f"open({marker.name!r}, 'w')"
    return [
        f'a""";{code};"""',  # closes the header docstring
        f"a''';{code};'''",
        f"a\n{code}\n#",  # newline: out of a comment, or a new line in the docstring
        f"a\r{code}\r#",
        f'\\""";{code};"""\\',  # backslashes around the quotes
        f'x"\x00\u2028\u00e9\U0001F600 "{code}',  # NUL, a Unicode line separator, non-ASCII
        '"',
        "\\",
    ]


SETTING_SPACE = """\
import beastgen as beast
kname = beast.setting("x")
x = beast.range(1, 4)
@beast.iterator
def y():
    '''DOC'''
    v = 1
    while v <= x:
        yield v
        v += 1
small = beast.filter(x * y > 6)
"""


def _check_module(plan, marker, texts):
    """Import the generated module: nothing runs, and the header docstring holds ``texts`` exactly."""
    tree = ast.parse(plan.source)
    assert isinstance(tree.body[0], ast.Expr)  # the docstring, then only imports and definitions
    assert all(isinstance(node, (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef))
               for node in tree.body)
    assert "\x00" not in plan.source
    module = plan.module
    assert not marker.exists()
    for text in texts:
        assert text in module.__doc__
    assert plan.count() == sum(1 for x in range(1, 4) for y in range(1, x + 1) if x * y <= 6)
    assert not marker.exists()


@pytest.mark.parametrize("index", range(8))
def test_setting_value_never_runs(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index]
    path = tmp_path / "space.py"
    path.write_text(SETTING_SPACE)
    space = beastgen.load(str(path))
    plan = compile_space(space, "h100", {"kname": payload}, generated_dir=str(tmp_path / "gen"))
    _check_module(plan, marker, [f"kname={payload!r}"])


@pytest.mark.parametrize("index", range(8))
def test_iterator_docstring_never_runs(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index]
    path = tmp_path / "space.py"
    path.write_text(SETTING_SPACE.replace("'''DOC'''", repr(payload)))
    space = beastgen.load(str(path))
    plan = compile_space(space, "h100", {}, generated_dir=str(tmp_path / "gen"))
    _check_module(plan, marker, [])
    assert plan.module.y__generate.py_func.__doc__ == payload  # the function's source round-trips


@pytest.mark.parametrize("index", [0, 1, 2, 3, 4, 5])
def test_space_file_name_and_directory_never_run(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index].replace("/", "\u2215").replace("\x00", "")  # a file name
    directory = tmp_path / payload
    directory.mkdir()
    path = directory / f"{payload}.py"
    path.write_text(SETTING_SPACE)
    space = beastgen.load(str(path))
    assert space.name == payload
    plan = compile_space(space, "h100", {}, generated_dir=str(tmp_path / "gen"))
    assert os.path.dirname(plan.path) == str(tmp_path / "gen")  # the name is no path
    _check_module(plan, marker, [f"space:      {payload} (", f"space {payload!r} generated"])


@pytest.mark.parametrize("index", [0, 2, 5])
def test_t1_file_name_never_runs(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index].replace("/", "\u2215").replace("\x00", "")
    path = tmp_path / f"{payload}.json"
    path.write_text(json.dumps({"ConfigurationSpace": {
        "TuningParameters": [{"Name": "x", "Values": "[1, 2, 3]"}, {"Name": "y", "Values": "[1, 2, 3]"}],
        "Conditions": [{"Expression": "y <= x and x * y <= 6"}]}}))
    plan = compile_space(beastgen.load(str(path)), "h100", {}, generated_dir=str(tmp_path / "gen"))
    _check_module(plan, marker, [f"space:      {payload} ("])


@pytest.mark.parametrize("index", range(7))
def test_device_name_and_file_never_run(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index]
    file_name = payload.replace("/", "\u2215").replace("\x00", "")
    path = tmp_path / f"{file_name}.toml"
    path.write_text(f'base = "h100"\nname = {json.dumps(payload, ensure_ascii=False)}\n')
    space_path = tmp_path / "space.py"
    space_path.write_text(SETTING_SPACE)
    plan = compile_space(beastgen.load(str(space_path)), str(path), {},
                         generated_dir=str(tmp_path / "gen"))
    assert plan.specialized.device.name == payload
    assert os.path.dirname(plan.path) == str(tmp_path / "gen")
    _check_module(plan, marker, [f"device:     {file_name} ({payload}; profile"])


def test_regenerate_line_is_one_quoted_shell_command(tmp_path):
    """README's regeneration loop evals the `regenerate:` line: it runs exactly `beastgen generate`
    with the right arguments, or is no command at all."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    marker = tmp_path / "pwned"
    directory = tmp_path / "a b;$(touch pwned)`touch pwned`&"
    directory.mkdir()
    path = directory / "space.py"
    path.write_text(SETTING_SPACE)
    space = beastgen.load(str(path))
    for value, quotable in [("$(touch pwned); touch pwned", True), ("it's", False), ('a"b', False),
                            ("a\nb", False)]:
        plan = compile_space(space, "h100", {"kname": value}, generated_dir=str(tmp_path / "gen"))
        plan.write()
        script = ('beastgen() { printf "%s\\n" "$@" > args; }\n'
                  f'eval "$(sed -n \'s/^regenerate: //p\' {shell_command([plan.path])})"')
        result = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
        assert not marker.exists()
        args = (tmp_path / "args").read_text().splitlines() if (tmp_path / "args").exists() else []
        if quotable:
            assert args == ["generate", space.path, "--device", "h100", "--set", f"kname={value}"]
        else:
            assert args == [] and "regenerate: (not as one shell command" in plan.source
        assert result.returncode in (0, 127)  # 127: the line is prose, no command named "(not"
        (tmp_path / "args").unlink(missing_ok=True)


def test_quoting_round_trips():
    texts = ['"""', "'''", "\\", "\\\\\"", "a\nb\r\x00\x7f\u2028\U0001F600é", "\udcff", ""]
    for text in texts:
        assert ast.literal_eval(f'"""{docstring_text(text)}"""') == text
        assert ast.literal_eval(f'"""x{docstring_text(text)}"""') == "x" + text
        assert "\n" not in comment_text(text) and "\r" not in comment_text(text)
    assert shell_command(["a b", "c"]) == "'a b' c"
    assert shell_command(["it's"]) is None


def test_name_subclass_with_custom_repr_is_not_a_constant(tmp_path):
    """A module constant is printed with repr(): only exact int/float/str/bool qualify."""
    path = tmp_path / "space.py"
    path.write_text(textwrap.dedent("""\
        import beastgen as beast
        class Sneaky(int):
            def __repr__(self):
                return "__import__('os').system('touch pwned')"
        LIMIT = Sneaky(3)
        x = beast.range(1, 4)
        @beast.filter
        def big():
            return x > LIMIT
        """))
    with pytest.raises(beastgen.errors.SpaceError) as e:
        compile_space(beastgen.load(str(path)), "h100", {}, generated_dir=str(tmp_path / "gen")).count()
    assert "LIMIT" in str(e.value)
