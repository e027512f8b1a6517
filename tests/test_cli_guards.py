"""What a command checks before its work: --plot's matplotlib and folder (a tune can take hours),
and whether an enumeration's rows fit in memory (refused with the numbers, no file written); and
the messages a newcomer meets: a threshold below the best bound, a device that must be calibrated."""
import os
import sys

import pytest

from beastgen.cli import main
from beastgen.loading.plancache import compile_cached

from conftest import PATIENCE_SECONDS, REPLAY, REPO

GEMM_CLBLAST = os.path.join(REPO, "spaces", "gemm_clblast.py")


@pytest.fixture
def no_matplotlib(monkeypatch):
    """matplotlib cannot be imported (None in sys.modules blocks the import, as if not installed)."""
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


@pytest.mark.parametrize("command", [
    ["tune", GEMM_CLBLAST, "--backend", "replay", "--replay", REPLAY],
    ["compare", os.path.join(REPO, "spaces", "gemm.py"), "-t", "2x"],
    ["check-bounds", GEMM_CLBLAST, "--replay", REPLAY],
])
def test_plot_without_matplotlib_fails_before_the_work(command, no_matplotlib, tmp_path, capsys):
    results = tmp_path / "r.db"
    extra = ["--results", str(results)] if command[0] == "tune" else []
    assert main(command + extra + ["--plot", str(tmp_path / "p.png")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no report: nothing ran
    assert captured.err.strip() == ("beastgen: error: --plot needs matplotlib: pip install "
                                    "'beastgen[plot]' (or leave out --plot)")
    assert not results.exists()


def test_plot_into_a_missing_folder_fails_before_the_work(tmp_path, capsys):
    missing = tmp_path / "no" / "such"
    assert main(["compare", os.path.join(REPO, "spaces", "gemm.py"), "-t", "2x",
                 "--plot", str(missing / "p.png")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{missing}: --plot: the picture's folder does not exist" in captured.err


HUGE = """\
import beastgen as beast
a = beast.range(0, 1000000)
b = beast.range(0, 10000000)
third = beast.filter((a + b) % 3 == 0)
"""


def test_enumerate_refuses_what_cannot_fit_in_memory(write_space, generated_dir, tmp_path, capsys):
    """6.7e12 rows (107 TB): refused with the estimate and the memory available, no file written."""
    output = tmp_path / "all.npy"
    assert main(["enumerate", write_space(HUGE, "huge_rows.py"), "-o", str(output),
                 "--generated-dir", generated_dir]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("beastgen: error: the space has about 6,666,66")
    assert "TB in memory at 16 bytes a row, more than the" in error and "available" in error
    assert len(error.splitlines()) == 1 and not output.exists()


def test_a_threshold_below_the_best_bound_says_what_the_best_is(generated_dir, capsys):
    assert main(["count", os.path.join(REPO, "spaces", "gemm.py"), "--threshold", "1.5ms",
                 "--generated-dir", generated_dir]) == 0
    out = capsys.readouterr().out
    assert ("0 valid configurations with a lower bound of at most 1.5 ms (the best bound is "
            "2.346 ms;") in out
    assert "empty: no configuration's lower bound is at most 1.5 ms; the best is 2.346 ms" in out
    assert out.count("1.5 ms") == 2  # the threshold once per line, not twice


def test_a_device_to_measure_points_at_calibrate(capsys):
    assert main(["count", os.path.join(REPO, "spaces", "gemm.py"), "--device", "opencl:0"]) == 2
    error = capsys.readouterr().err
    assert "'opencl:0' is a device to measure, not a profile: `beastgen calibrate --device " \
           "opencl:0 -o my.toml`" in error


def test_generate_says_unchanged_for_a_file_it_did_not_write(tmp_path, capsys):
    command = ["generate", os.path.join(REPO, "spaces", "reduction.py"), "--generated-dir",
               str(tmp_path / "gen")]
    assert main(command) == 0
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'gen'}")
    assert main(command) == 0
    assert capsys.readouterr().out.startswith(f"unchanged: {tmp_path / 'gen'}")


@pytest.mark.slow
def test_ctrl_c_on_tune_says_what_was_kept_and_how_to_resume(tmp_path):
    """SIGINT once results are recorded: exit 130, and stderr says how many results the store keeps
    and that the same command resumes."""
    import signal
    import subprocess
    import time

    from beastgen.harness.store import latest_run_size

    results = tmp_path / "r.db"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-m", "beastgen", "tune", GEMM_CLBLAST, "--backend",
                              "replay", "--replay", REPLAY, "--results", str(results)],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not (latest_run_size(str(results)) or (0, 0))[1]:
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=PATIENCE_SECONDS)
    assert child.returncode == 130, err
    kept = [line for line in err.splitlines() if "are kept in" in line]
    assert kept and kept[0].endswith(f"are kept in {results}; the same command resumes from them "
                                     "(nothing measured is run again)")
    assert err.rstrip().endswith("beastgen: interrupted (Ctrl-C)") and "Traceback" not in err


def test_rank_lists_equal_bounds_in_the_same_order_whatever_k(gemm_h100):
    """Ties (gemm's best bound is shared by several configurations) in loop-nest order: the top 2
    are the first two of the top 5."""
    two, five = gemm_h100.rank(2), gemm_h100.rank(5)
    assert two["bound"][0] == five["bound"][4]  # five configurations share the best bound
    assert two.tolist() == five[:2].tolist()


def test_every_subcommand_shows_an_example_that_names_it(capsys):
    from beastgen.cli import COMMANDS, EXAMPLES

    assert set(EXAMPLES) == set(COMMANDS)
    for name in COMMANDS:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        out = capsys.readouterr().out
        assert f"example:\n  beastgen {name}" in out
        assert "%%" not in out


def test_show_keeps_lines_readable(gemm_h100, generated_dir, capsys):
    """The bound-term library unfolds into expressions of thousands of characters: show prints
    them with the device's values and without what folding left (``a_run >= a_run``), cuts what is
    still long (the generated module has it whole) and wraps the lists of names; what is counted
    does not change."""
    from beastgen.compiler.language.printer import expr_source

    gemm = os.path.join(REPO, "spaces", "gemm.py")
    count = gemm_h100.count()
    specialized = {name: expr_source(item.expr, root=True)
                   for name, item in gemm_h100.specialized.items.items() if item.expr is not None}
    assert main(["show", gemm, "--device", "h100", "--generated-dir", generated_dir]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(map(len, lines)) < 300
    assert any("characters; the whole expression is in the generated enumerator)" in line
               for line in lines)
    for tautology in ("a_run >= a_run", "b_run >= b_run", "beast.device.", "and True", "4 // 4"):
        assert tautology not in out
    assert "derived blocks_on_busiest_sm = (blocks + 132 - 1) // 132" in out  # the H100's 132 SMs
    assert main(["count", gemm, "--device", "h100", "--generated-dir", generated_dir]) == 0
    assert f"{count:,}" in capsys.readouterr().out
    show_plan = compile_cached(gemm, device="h100", generated_dir=generated_dir)
    assert {name: expr_source(item.expr, root=True) for name, item in
            show_plan.specialized.items.items() if item.expr is not None} == specialized
