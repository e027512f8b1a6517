"""The default search proposes what it proposed when ``tests/search_proposals.json`` was recorded
(``benchmarks/search/same_proposals.py``: every replay file, with and without priors, three seeds,
through the whole ``beastgen tune``): a change that was meant to keep the search's behaviour (a
refactoring) must pass this; one that changes it re-records the file and says so."""
import importlib.util
import json
import os
import sys

import pytest

from conftest import REPO

SCRIPT = os.path.join(REPO, "benchmarks", "search", "same_proposals.py")


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    spec = importlib.util.spec_from_file_location("same_proposals", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.path.remove(os.path.dirname(SCRIPT))


@pytest.fixture(scope="module")
def recorded(tool):
    with open(tool.RECORD) as f:
        return json.load(f)["runs"]


#: the default run's share of the record: every file, with and without priors, seed 0, the first 40
#: evaluations (a run stopped by its budget is the start of a longer one); the whole record (three
#: seeds, 120 evaluations: about ten minutes on 2 cores) is the test marked ``full``
FIRST = 40


def _name(path, priors, seed):
    return f"{os.path.basename(path)} {'with' if priors else 'without'} priors seed {seed}"


def _replay_files():
    return sorted(f for f in os.listdir(os.path.join(REPO, "data", "replay")) if f.endswith(".json.gz"))


@pytest.mark.parametrize("priors", [False, True], ids=["without-priors", "with-priors"])
@pytest.mark.parametrize("replay", _replay_files())
def test_the_first_evaluations_are_as_recorded(tool, recorded, tmp_path, generated_dir, replay, priors):
    path = os.path.join(tool.REPLAY, replay)
    got = tool.run(path, priors, 0, FIRST, str(tmp_path), generated_dir)  # the plans compiled once
    want = recorded[_name(path, priors, 0)]
    assert got["evaluated"] == want["evaluated"][:FIRST]


@pytest.mark.slow
@pytest.mark.full
def test_every_recorded_run_is_proposed_again(tool, recorded):
    runs = tool.record_all(tool.files(), tool.SEEDS, tool.EVALUATIONS)
    assert not tool.differences(recorded, runs)
