"""Command-line usage: --version, and --set before the space path."""
import subprocess
import sys

import pytest

import beastgen
from beastgen.cli import main


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
