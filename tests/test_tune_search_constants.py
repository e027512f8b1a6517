"""`benchmarks/search/tune_search_constants.py`: the leave-one-GPU-out report and the envelope of every
logged setting read the log as written (no search is run here)."""
import importlib.util
import json
import os

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "search",
                      "tune_search_constants.py")


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("tune_search_constants", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(constants, runs, seeds=3, prior=False, code=None):
    entry = {"prior": prior, "constants": constants, "seeds": seeds, "budget": 1000, "runs": runs}
    if code:
        entry["code"] = code
    return entry


LOG = [
    record({}, {"a.json.gz": [10, 20, 30], "b.json.gz": [100, 200, 300]}),
    record({"x": 1}, {"a.json.gz": [5, 6, 7], "b.json.gz": [400, 500, 600]}),
    record({"y": 2}, {"a.json.gz": [1, 1, 1]}, code="an earlier search, one file only"),
    record({"x": 1}, {"a.json.gz": [1, 1, 1], "b.json.gz": [1, 1, 1]}, prior=True),
    record({"x": 2}, {"a.json.gz": [1], "b.json.gz": [2]}, seeds=1),
]


def test_the_envelope_takes_each_file_s_smallest_median_earlier_code_included(tool, tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in LOG))
    tool.main(["--envelope", "--seeds", "3", "--log", str(log)])
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if ".json.gz" in line}
    assert "3 settings logged without priors" in out  # not the one with priors, not the 1-seed one
    assert lines["a.json.gz"].split()[1] == "1" and "earlier code: an earlier search" in lines["a.json.gz"]
    assert lines["b.json.gz"].split()[1] == "200" and "{}" in lines["b.json.gz"]


def test_leave_one_gpu_out_chooses_on_the_other_files(tool, capsys):
    tool.report(LOG[:2], priors=False)
    out = capsys.readouterr().out
    # held out a: b's medians choose {} (200 < 500), whose median on a is 20; held out b: {"x": 1}
    assert "a.json.gz" in out and "chosen {}: held out 20" in out
    assert "chosen {'x': 1}: held out 500" in out


def test_an_envelope_of_nothing_says_so(tool, tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(LOG[0]) + "\n")
    tool.main(["--envelope", "--seeds", "20", "--log", str(log)])
    assert capsys.readouterr().out.strip() == "no setting logged with these options"
