"""The repository's generated/ must be exactly what the generator produces today."""
import glob
import os
import shlex
import subprocess

import pytest

from beastgen.cli import build_parser
from beastgen.commands.common import parse_settings
from beastgen.compiler.model import load
from beastgen.compiler.runtime import compile_space, write_if_changed

from conftest import REPO



def _committed_files() -> list[str]:
    """The generated modules the repository holds: in a git checkout, those git tracks (a run of
    beastgen from the repository root adds untracked, ignored ones); otherwise every one there."""
    try:
        listed = subprocess.run(["git", "ls-files", "--", "generated/*.py"], cwd=REPO, text=True,
                                capture_output=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # no git, or not a git checkout
        return sorted(glob.glob(os.path.join(REPO, "generated", "*.py")))
    return sorted(os.path.join(REPO, name) for name in listed)


FILES = _committed_files()


def _regenerate_command(path):
    for line in open(path, encoding="utf-8"):
        if line.startswith("regenerate: "):
            return shlex.split(line[len("regenerate: "):])
    raise AssertionError(f"{path} has no 'regenerate:' line")


def test_generated_directory_is_not_empty():
    names = {os.path.basename(f).split("__")[0] for f in FILES}
    assert "gemm" in names and len(names) >= 3


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_generated_file_is_current(path, monkeypatch):
    monkeypatch.chdir(REPO)
    command = _regenerate_command(path)
    assert command[:2] == ["beastgen", "generate"]
    args = build_parser().parse_args(command[1:])
    plan = compile_space(load(args.space), device=args.device, settings=parse_settings(args.settings),
                         generated_dir=os.path.join(REPO, "generated"))
    assert plan.path == path, "file name no longer matches its settings"
    with open(path, encoding="utf-8") as f:
        assert f.read() == plan.source, (
            f"{os.path.relpath(path, REPO)} is stale: run `{' '.join(command)}` and review the diff")


def test_regenerated_only_when_inputs_change(write_space, tmp_path):
    text = "import beastgen as beast\nn = beast.setting(3)\nx = beast.range(n)\n"
    space_path = write_space(text)
    out = str(tmp_path / "gen")
    plan = compile_space(load(space_path), generated_dir=out)
    assert write_if_changed(plan.path, plan.source) is True
    assert write_if_changed(plan.path, compile_space(load(space_path), generated_dir=out).source) is False
    write_space(text + "y = beast.values(1, 2)\n")  # the space file changed
    changed = compile_space(load(space_path), generated_dir=out)
    assert changed.path == plan.path and write_if_changed(changed.path, changed.source) is True
    other_device = compile_space(load(space_path), device="a100", generated_dir=out)
    assert other_device.path != plan.path
    other_settings = compile_space(load(space_path), settings={"n": 4}, generated_dir=out)
    assert other_settings.path != plan.path
