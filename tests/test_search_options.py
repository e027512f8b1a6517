"""The strategies' option tables (``strategies/options.py``, the guided search's two recipes in
``guided/recipes.py``): every constant settable, unknown names and bad values refused with the
table's names, the documentation generated from the tables."""
import math
import os
import re

import numpy as np
import pytest

from beastgen.errors import BeastError
from beastgen.harness.strategies import STRATEGIES
from beastgen.harness.strategies.guided import GuidedSearch, recipes
from beastgen.harness.strategies.options import Option, parse_assignments, resolve

from conftest import REPO


def test_the_documented_tables_are_the_code_s():
    with open(os.path.join(REPO, "docs", "search.md"), encoding="utf-8") as f:
        page = f.read()
    block = re.search(r"<!-- generated: recipes.documentation\(\) -->\n(.*?)\n<!-- end generated -->",
                      page, re.S)
    assert block and block.group(1) == recipes.documentation(), \
        "docs/search.md's option tables differ from the code's: paste recipes.documentation()"


def test_every_default_is_within_its_limits_and_of_its_kind():
    for table in (recipes.WITHOUT_PRIORS, recipes.WITH_PRIORS):
        for name, option in table.items():
            assert option.low <= option.default <= option.high, name
            assert vars(resolve(table, {name: str(option.default)}, "t"))[name] == option.default


def test_options_replace_defaults_and_text_is_typed_by_the_default():
    chosen = recipes.options(False, {"initial": "12", "gp_kappa": "1.5", "forest_share": 0})
    assert chosen.initial == 12 and isinstance(chosen.initial, int)
    assert chosen.gp_kappa == 1.5 and chosen.forest_share == 0.0 and chosen.local_top == 3
    assert recipes.options(True, {}).local_top == 6  # each recipe its own defaults


@pytest.mark.parametrize("given, message", [
    ({"initail": 3}, "'initail' is not an option of the guided search without priors; its options: "
                     "initial (8), "),
    ({"transfer_share": 0.2}, "(it is one of the guided search with priors)"),
    ({"initial": "many"}, "option initial of the guided search without priors takes an integer, not "
                          "'many' (default 8)"),
    ({"initial": 2.5}, "takes an integer"),
    ({"initial": True}, "takes an integer"),
    ({"initial": 0}, "option initial of the guided search without priors must be at least 1, not 0"),
    ({"gp_share": 1.5}, "must be between 0 and 1, not 1.5"),
    ({"ridge": 0}, "must be at least 1e-09"),
])
def test_bad_options_are_refused_naming_the_table(given, message):
    with pytest.raises(BeastError) as error:
        recipes.options(False, given)
    assert message in str(error.value)


def test_strategies_without_options_say_so():
    for name in ("exhaustive", "random_search", "genetic", "bound_order"):
        with pytest.raises(BeastError, match=f"not an option of strategy {name}; it takes none"):
            STRATEGIES[name].resolve_options({"initial": 3}, False)
    assert vars(resolve({}, {}, "x")) == {}


@pytest.mark.parametrize("texts, expected", [
    (["initial=3", " gp_kappa = 1.5 "], {"initial": "3", "gp_kappa": "1.5"}),
    ([], {}),
])
def test_assignments_are_parsed(texts, expected):
    assert parse_assignments(texts) == expected


@pytest.mark.parametrize("text", ["initial", "=3", "initial=", "initial 3"])
def test_a_malformed_assignment_is_refused(text):
    with pytest.raises(BeastError, match="--strategy-option takes NAME=VALUE"):
        parse_assignments([text])


def test_an_option_changes_the_search():
    """``local_share=1``: after the initial ones, every proposal is a neighbour (one parameter
    changed) of one of the best measured configurations while one is open."""
    rng = np.random.default_rng(4)
    codes = np.stack([rng.integers(0, 4, 300) for _ in range(3)], axis=1)
    times = np.exp(rng.standard_normal(300))
    order = GuidedSearch(codes, np.full(300, np.nan), np.zeros(300, np.int64), seed=2,
                         options={"local_share": 1.0, "initial": 5})
    measured = []
    for _ in range(40):
        i = order.next(math.inf)
        if len(measured) >= 5:
            best = sorted(measured, key=lambda j: times[j])[:3]
            assert any((codes[i] != codes[j]).sum() == 1 for j in best)
        order.observe(i, times[i])
        measured.append(i)


def test_tune_refuses_an_unknown_option_before_any_work(tmp_path):
    from beastgen.harness import tune
    store = tmp_path / "r.db"
    with pytest.raises(BeastError, match="'nope' is not an option of the guided search with priors"):
        tune(os.path.join(REPO, "data", "reference-spaces", "convolution_milo.json"), backend="replay",
             replay=os.path.join(REPO, "data", "replay", "convolution_milo_a100.json.gz"),
             priors=[os.path.join(REPO, "data", "replay", "convolution_milo_a4000.json.gz")],
             results=str(store), strategy_options={"nope": 1}, progress=False, log=lambda m: None)
    assert not store.exists()


def test_an_option_is_an_option_object_of_description_and_default():
    option = recipes.WITHOUT_PRIORS["initial"]
    assert isinstance(option, Option) and option[:2] == (option.description, 8)
