"""Progress on stderr: shown on a terminal once work passes the delay, never when not a terminal,
never under --json or --no-progress."""
import io
import json
import time

import pytest

from beastgen import progress
from beastgen.cli import main
from beastgen.progress import Elapsed, ShareBar


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def terminal(monkeypatch):
    """``terminal()`` inside a test (pytest sets sys.stderr again between setup and the test):
    stderr becomes a terminal whose text the test reads; progress shows after 0.05 s."""
    monkeypatch.setattr(progress, "DELAY_SECONDS", 0.05)
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.05)

    def redirect():
        stream = Terminal()
        monkeypatch.setattr("sys.stderr", stream)
        return stream
    return redirect


def test_elapsed_shows_long_work_on_a_terminal(terminal):
    terminal = terminal()
    with Elapsed("estimating"):
        time.sleep(0.4)
    assert "estimating: 00:00" in terminal.getvalue()


def test_elapsed_is_silent_for_short_work_and_when_disabled(terminal):
    terminal = terminal()
    with Elapsed("quick"):
        pass
    with Elapsed("disabled", enabled=False):
        time.sleep(0.2)
    assert terminal.getvalue() == ""


def test_share_bar_shows_the_share_done(terminal):
    terminal = terminal()
    with ShareBar("counting") as bar:
        for step in range(1, 5):
            time.sleep(0.05)
            bar(step / 4, step * 0.05)
    assert "counting: 100%" in terminal.getvalue()


def test_nothing_when_stderr_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_SECONDS", 0.0)
    with ShareBar("counting") as bar, Elapsed("estimating"):
        bar(0.5, 0.1)
        time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_json_output_has_no_progress(terminal, capsys, generated_dir, gemm_space):
    terminal = terminal()
    assert main(["estimate", gemm_space.path, "--samples", "200", "--json",
                 "--generated-dir", generated_dir]) == 0
    assert "estimating" not in terminal.getvalue()
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["samples"] == 200
