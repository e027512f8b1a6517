"""The documentation is run: every ```console block of README.md and docs/*.md.

A block's lines starting with ``$ `` are commands (a line ending in ``\\`` continues on the next);
the lines after a command are its expected output, checked in order against what it prints (stdout
and stderr): each expected line must match a later output line, where ``...`` stands for any text
(so timings and paths can vary). The commands of one page run one after the other in one folder of
their own, which holds ``spaces``, ``data`` and ``examples`` of the repository (links), with
``beastgen`` on PATH running this checkout. A block fenced ```console gpu needs a GPU and is not run
here, nor one fenced ```console cluster (it needs machines of a Dask cluster); the Quickstart's two
commands are fenced ```console ci: they are what ``.ci/run`` runs, which this test checks. Any other fence holding ``$ `` commands fails the test.
"""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import PATIENCE_SECONDS, REPO

PAGES = ["README.md"] + sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "*.md")))
FENCE = re.compile(r"^```([\w-]*)[ \t]*([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
NOT_HERE = {"gpu", "cluster", "ci"}
def _blocks(page: str):
    """(language, mark, text) of each fenced block of the page."""
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        return [m.groups() for m in FENCE.finditer(f.read())]


def _commands(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for each ``$ `` line of a console block."""
    commands, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        expected = []
        while i + 1 < len(lines) and not lines[i + 1].startswith("$ "):
            i += 1
            expected.append(lines[i])
        commands.append((command, [e for e in expected if e.strip()]))
        i += 1
    return commands


def _matches(expected: str, line: str) -> bool:
    """``line`` is ``expected``, ``...`` standing for any text and any run of spaces for one."""
    pattern = ".*".join(re.escape(" ".join(part.split())) for part in expected.split("..."))
    return re.fullmatch(pattern, " ".join(line.split())) is not None


def _check_output(command: str, expected: list[str], output: str) -> None:
    lines = output.splitlines()
    position = 0
    for want in expected:
        found = next((k for k in range(position, len(lines)) if _matches(want, lines[k])), None)
        assert found is not None, f"$ {command}\nexpected a line {want!r} (in order) in:\n{output}"
        position = found + 1


@pytest.fixture(scope="module")
def shell_bin(tmp_path_factory):
    """A folder holding ``beastgen`` (this checkout's command line, whatever is installed) and
    ``python`` (this interpreter)."""
    folder = tmp_path_factory.mktemp("docs-bin")
    script = folder / "beastgen"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m beastgen "$@"\n')
    script.chmod(0o755)
    os.symlink(sys.executable, folder / "python")
    return str(folder)


@pytest.mark.parametrize("page", [page if page == "README.md" else pytest.param(page, marks=pytest.mark.slow)
                                  for page in PAGES])  # the README's tour in the quick set
def test_every_command_of_the_page_runs(page, shell_bin, tmp_path):
    for name in ("spaces", "data", "examples"):
        os.symlink(os.path.join(REPO, name), tmp_path / name)
    env = dict(os.environ, PATH=shell_bin + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.pathsep.join([REPO] + sys.path))
    blocks = _blocks(page)
    for language, mark, text in blocks:
        commands = _commands(text)
        if not commands:
            continue
        assert language == "console", f"{page}: a block of commands must be ```console: {text}"
        if mark in NOT_HERE:
            continue
        assert not mark, f"{page}: unknown mark ```console {mark} (use gpu, cluster or ci)"
        for command, expected in commands:
            run = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=tmp_path, env=env,
                                 text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=PATIENCE_SECONDS)
            assert run.returncode == 0, f"{page}: $ {command}\nexit {run.returncode}:\n{run.stdout}"
            _check_output(command, expected, run.stdout)


def test_the_quickstart_is_what_ci_runs():
    """The README's ```console ci commands: the two Quickstart commands, both run by .ci/run."""
    ci = [command for language, mark, text in _blocks("README.md") if mark == "ci"
          for command, _ in _commands(text)]
    assert len(ci) == 2, ci
    with open(os.path.join(REPO, ".ci", "run"), encoding="utf-8") as f:
        script = f.read()
    assert ci[1] in script.splitlines()
    install, main_job = ci[0].split(" && ")
    assert install == "pip install ." and main_job.startswith("beastgen ")


def test_the_pages_link_to_each_other():
    """Every relative link of a page points at a file of the repository."""
    for page in PAGES:
        with open(os.path.join(REPO, page), encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            path = os.path.normpath(os.path.join(REPO, os.path.dirname(page), target))
            assert os.path.exists(path), f"{page} links to {target}, which is not there"
