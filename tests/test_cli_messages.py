"""What the commands say: empty spaces, warm runs, show's settings, type names, missing extras."""
import json
import sys
import time

import pytest

from beastgen.cli import main
from beastgen.compiler.runtime import CompiledPlan
from beastgen.errors import BeastError, SettingError

EMPTY = """
import beastgen as beast
n = beast.setting(10)
x = beast.range(n)
too_small = beast.filter(x < 100)
"""


def test_an_empty_space_says_why_once_and_its_total_covers_the_reason(write_space, capsys, tmp_path,
                                                                      monkeypatch):
    path = write_space(EMPTY)
    explain = CompiledPlan.why_empty

    def slow_explanation(plan):  # the reason runs a count with statistics: part of the command
        time.sleep(0.5)
        return explain(plan)
    monkeypatch.setattr(CompiledPlan, "why_empty", slow_explanation)
    assert main(["count", path, "--json", "--generated-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == (f"empty: the last filter to cut it was 'too_small' ({path}:5), which "
                         "rejected 10 of the remaining candidates")
    assert json.loads(lines[-1])["total_seconds"] >= 0.5


@pytest.mark.parametrize("c_target", ["1", "0"])
def test_compiling_is_announced_on_the_cold_run_only(c_target, write_space, capsys, tmp_path,
                                                     monkeypatch):
    """Numba's compilation (seconds) is announced; the C target's (a fraction of one) is not."""
    monkeypatch.setenv("BEASTGEN_NATIVE", c_target)
    monkeypatch.setenv("BEASTGEN_VECTORISED", "0")  # Numba, not NumPy, where there is no C
    path = write_space("import beastgen as beast\nx = beast.range(7)\nodd = beast.filter(x % 2 == 1)\n")
    for run in ("cold", "warm"):
        assert main(["count", path, "--generated-dir", str(tmp_path)]) == 0
        said = "compiling the enumerator" in capsys.readouterr().err
        assert said == (run == "cold" and c_target == "0"), run


def test_show_prints_the_settings_once(write_space, capsys, tmp_path):
    path = write_space("import beastgen as beast\nn = beast.setting(4)\nx = beast.range(n)\n")
    assert main(["show", path, "--generated-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("settings:") == 1 and "settings: n=4" in out


def test_a_setting_of_the_wrong_type_names_it_with_its_article(write_space, tmp_path):
    path = write_space("import beastgen as beast\nn = beast.setting(4)\nx = beast.range(n)\n")
    with pytest.raises(SettingError, match="expects an int"):
        import beastgen
        beastgen.load(path).specialize(generated_dir=str(tmp_path), n="four")


def test_dataframe_without_pandas_names_the_extra(write_space, tmp_path, monkeypatch):
    import beastgen
    plan = beastgen.load(write_space("import beastgen as beast\nx = beast.range(3)\n")).specialize(
        generated_dir=str(tmp_path))
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(BeastError, match=r"needs pandas: pip install 'beastgen\[data\]'"):
        plan.dataframe()
