"""Progress on stderr: shown on a terminal once work passes the delay, never when not a terminal,
never under --json or --no-progress."""
import io
import json
import re
import time

import pytest

from beastgen.cli import main
from beastgen.support import progress
from beastgen.support.progress import Elapsed, ShareBar


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


SMALL_SPACE = """\
import beastgen as beast
x = beast.range(1, 40)
y = beast.range(1, x + 1)
z = beast.values(1, 2, 4)
odd = beast.filter((x * y + z) % 3 == 0)
"""


def test_enumerate_hears_its_progress_natively_and_through_numba(write_space, generated_dir):
    import beastgen

    plan = beastgen.load(write_space(SMALL_SPACE)).specialize(generated_dir=generated_dir)
    whole = plan.enumerate().tolist()
    assert len(whole) == plan.count() > 0
    try:
        for use_numba in (False, True):  # the C library where there is one, then Numba
            if use_numba:
                plan.executable.use_numba()
            for jobs in (1, 2):
                shares = []
                rows = plan.enumerate(jobs=jobs, progress=lambda done, seconds: shares.append(done))
                assert rows.tolist() == whole
                assert shares == sorted(shares) and shares[-1] == 1.0 and shares[0] >= 0
    finally:
        plan.executable.forget_native()


def test_enumerate_and_export_show_the_total(terminal, monkeypatch, tmp_path, capsys):
    from conftest import REPO

    monkeypatch.setattr(progress, "DELAY_SECONDS", 0.0)  # a bar shows at once
    hotspot = f"{REPO}/data/reference-spaces/hotspot.json"
    stream = terminal()
    shown = {}
    for name, command in (("h.csv", ["enumerate", hotspot, "-o", str(tmp_path / "h.csv")]),
                          ("h.json", ["export", hotspot, "--format", "kernel_tuner", "-o",
                                      str(tmp_path / "h.json")])):
        before = len(stream.getvalue())
        assert main(command) == 0
        shown[name] = stream.getvalue()[before:]
    for name, text in shown.items():
        # the size is learnt first: counted, or estimated in half a second (a few samples where the
        # cores are busy: the estimate only has to say the size); tqdm redraws a bar as often as
        # time allows, and draws at most 10 times a second: not always 100%
        sizes = re.findall(r"enumerating (82,984|about ([\d,]+)) configurations: ", text)
        assert sizes and all(about == "" or 82_984 / 2 < int(about.replace(",", "")) < 82_984 * 2
                             for _, about in sizes), text
        assert re.search(rf"writing 82,984 configurations to {re.escape(str(tmp_path / name))}: "
                         r"+\d+%\|", text)
    assert "wrote 82,984 configurations" in capsys.readouterr().out


def test_an_estimated_size_says_about():
    from beastgen.commands.common import size_text
    from beastgen.compiler.runtime import Estimate

    assert size_text(Estimate(82984.0, 82984.0, 82984.0, 1, 0.1, "exact")) == "82,984 configurations"
    assert size_text(Estimate(4.65e11, 4e11, 5e11, 40, 0.5, "knuth")) == "about 4.6e+11 configurations"
    assert size_text(Estimate(83412.7, 8e4, 9e4, 40, 0.5, "knuth")) == "about 83,000 configurations"
