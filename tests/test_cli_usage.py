"""Command-line usage: --version, --set before the space path, the garbage collector at exit."""
import subprocess
import sys

import pytest

import beastgen
from beastgen.cli import main

from conftest import PATIENCE_SECONDS


def test_version_is_printed():
    out = subprocess.run([sys.executable, "-m", "beastgen", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"beastgen {beastgen.__version__}"


@pytest.mark.parametrize("order", ["set_first", "space_first"])
def test_set_before_the_space_path_does_not_swallow_it(write_space, capsys, order):
    path = write_space("import beastgen as beast\nn = beast.setting(3)\nx = beast.range(n)\n")
    args = ["--set", "n=5"]
    argv = ["count", *args, path, "--json"] if order == "set_first" else ["count", path, *args, "--json"]
    assert main(argv) == 0
    assert '"count": 5' in capsys.readouterr().out


def test_only_the_process_own_count_freezes_the_garbage_collector(write_space, capsys):
    """``main()`` counting on this process's own command line freezes what the count built out of
    the garbage collector's reach (the interpreter's exit then skips walking it); ``main(argv)``,
    as a program embedding beastgen calls it, and any other command leave the collector alone."""
    import gc
    import os
    path = write_space("import beastgen as beast\nx = beast.range(1, 9)\n")
    before = gc.get_freeze_count()
    assert main(["count", path, "--no-progress"]) == 0 and gc.get_freeze_count() == before
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(beastgen.__file__)))
    for command, frozen in (("count", True), ("show", False)):
        probe = ("import gc, sys\nfrom beastgen.cli import main\n"
                 f"sys.argv = ['beastgen', {command!r}, {path!r}]\n"
                 "status = main()\nprint('frozen', status, gc.get_freeze_count() > 0)\n")
        run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             timeout=PATIENCE_SECONDS, env=env)
        assert f"frozen 0 {frozen}" in run.stdout, run
