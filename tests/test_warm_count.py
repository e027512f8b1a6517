"""The warm count's short way (beastgen/loading/warm_count.py): a warm ``beastgen count SPACE.json`` answered
from the plan record and its library prints what the full command prints, and goes the full way
wherever anything it reads does not hold (the plan cache's trust rules)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import PATIENCE_SECONDS, REFERENCE_DIR, REPO

from beastgen.cli import main
from beastgen.compiler import native
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.loading import warm_count

pytestmark = pytest.mark.skipif(native.c_compiler() is None, reason="needs a C compiler")


def _times_out(text: str) -> str:
    return re.sub(r"\d+\.\d+ s", "T s", re.sub(r'"(total_)?seconds": [0-9.e-]+', '"seconds": T', text))


@pytest.fixture
def t1_space(tmp_path, monkeypatch):
    """A copy of dedispersion.json in a fresh working directory, counted once (the record written)."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(os.path.join(REFERENCE_DIR, "dedispersion.json"), tmp_path / "space.json")
    assert main(["count", "space.json", "--generated-dir", "gen"]) == 0
    return tmp_path


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_the_short_way_prints_what_the_full_command_prints(t1_space, capsys, monkeypatch, extra):
    capsys.readouterr()
    command = ["count", "space.json", *extra, "--generated-dir", "gen"]
    assert warm_count.run(command) == 0
    short = capsys.readouterr().out
    monkeypatch.setattr(warm_count, "run", lambda argv: None)
    assert main(command) == 0
    assert _times_out(short) == _times_out(capsys.readouterr().out)
    reference = ReferenceEnumerator(__import__("beastgen").load("space.json"), "h100").count()
    assert f"{reference:,} valid configurations" in short


def test_a_cold_run_and_other_command_lines_go_the_full_way(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(os.path.join(REFERENCE_DIR, "dedispersion.json"), tmp_path / "space.json")
    assert warm_count.run(["count", "space.json", "--generated-dir", "gen"]) is None  # no record yet
    assert main(["count", "space.json", "--generated-dir", "gen"]) == 0
    assert warm_count.run(["count", "space.json", "--generated-dir=gen", "--json"]) == 0
    for argv in (["count", "space.json", "--device", "h100", "--generated-dir", "gen"],
                 ["count", "space.json", "--stats", "--generated-dir", "gen"],
                 ["enumerate", "space.json", "--generated-dir", "gen"],
                 ["count", "space.json", "other.json"]):
        assert warm_count.run(argv) is None
    monkeypatch.setenv("BEASTGEN_NATIVE", "0")
    assert warm_count.run(["count", "space.json", "--generated-dir", "gen"]) is None


def _only(directory, suffix):
    (found,) = [directory / n for n in os.listdir(directory) if n.endswith(suffix)]
    return found


def test_what_does_not_hold_is_not_read(t1_space):
    """Each file others may write, a changed library, a changed space file, a record of another
    key, a nest too big for the calling thread: the full way, never a crash."""
    gen, command = t1_space / "gen", ["count", "space.json", "--generated-dir", "gen"]
    index, record = _only(gen, warm_count.INDEX_SUFFIX), _only(gen, ".plan.json")
    library = gen / json.loads(record.read_text())["native"]["library"]
    for path in (index, record, library):
        os.chmod(path, 0o666)
        assert warm_count.run(command) is None
        os.chmod(path, 0o644)
    assert warm_count.run(command) == 0
    saved = library.read_bytes()
    library.unlink()  # a new file (this process still maps the old one), cut short
    library.write_bytes(saved[:len(saved) // 2])
    assert warm_count.run(command) is None
    library.unlink()
    library.write_bytes(saved)
    for change in ({"key": "0" * 64}, {"iteration_bound": 2 ** 40}, {"counted_tail": "x"},
                   {"native": {"library": "../" + library.name}}, {"target": {"space": "s"}}):
        text = record.read_text()
        record.write_text(json.dumps(json.loads(text) | change))
        assert warm_count.run(command) is None, change
        record.write_text(text)
    assert warm_count.run(command) == 0
    space = json.loads((t1_space / "space.json").read_text())
    (t1_space / "space.json").write_text(json.dumps(space, indent=2))  # same space, new content
    assert warm_count.run(command) is None


def test_a_shared_generated_directory_is_refused_by_the_full_way(t1_space, capsys):
    os.chmod(t1_space / "gen", 0o777)
    assert warm_count.run(["count", "space.json", "--generated-dir", "gen"]) is None
    assert main(["count", "space.json", "--generated-dir", "gen"]) == 2
    assert "writable by everyone" in capsys.readouterr().err


def test_the_command_line_takes_the_short_way(tmp_path):
    """A warm ``beastgen count`` process imports neither argparse nor the compiled plan."""
    env = dict(os.environ, PYTHONPATH=REPO, BEASTGEN_GENERATED_DIR=str(tmp_path / "gen"))
    space = os.path.join(REFERENCE_DIR, "convolution_milo.json")
    probe = ("import runpy, sys; sys.argv = ['beastgen', 'count', sys.argv[1]]\n"
             "try:\n    runpy.run_module('beastgen', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('argparse', 'beastgen.devices', 'beastgen.compiler.runtime')"
             " if m in sys.modules))")
    runs = [subprocess.run([sys.executable, "-c", probe, space], capture_output=True, text=True,
                           env=env, timeout=PATIENCE_SECONDS) for _ in range(2)]
    assert all("4,362 valid configurations" in run.stdout for run in runs), runs
    assert runs[0].stdout.rstrip().endswith("['argparse', 'beastgen.compiler.runtime', 'beastgen.devices']")
    assert runs[1].stdout.rstrip().endswith("[]"), runs[1]
