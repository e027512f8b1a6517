"""Tuning across inputs (ISAAC): the --inputs SPEC, configurations drawn exactly from each input's
own valid set, a collection on PoCL resumed after a kill, the model's fit and ranking, predict's
table, export, out-of-range and other-device checks. Real kernels run on the tiny
tests/harness_spaces/scale.py (its valid set depends on its input n)."""
import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import beastgen
from beastgen.cli import main
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.errors import BeastError
from beastgen.harness import input_model
from beastgen.harness.inputs import input_settings, parse_inputs, sample_rows
from beastgen.harness.store import SCHEMA, Store, config_key

from conftest import PATIENCE_SECONDS, REPO
from property_sizes import examples

SCALE = os.path.join(REPO, "tests", "harness_spaces", "scale.py")
SPEC = "n=4..64 mode=plain,wide"


@pytest.fixture(scope="module")
def scale_space():
    return beastgen.load(SCALE)


def test_spec_parsing(scale_space):
    spec = parse_inputs(SPEC, scale_space)
    assert [(r.name, r.low, r.high, r.choices) for r in spec.ranges] == [
        ("n", 4, 64, ()), ("mode", None, None, ("plain", "wide"))]
    assert spec.text() == SPEC
    draws = [input_settings(spec, 3, i, {"x": 1}) for i in range(400)]
    assert all(4 <= d["n"] <= 64 and d["mode"] in ("plain", "wide") and d["x"] == 1 for d in draws)
    assert 10 < np.median([d["n"] for d in draws]) < 24  # log-uniform: around sqrt(4 * 64) = 16
    assert input_settings(spec, 3, 7, {}) == input_settings(spec, 3, 7, {})  # reproducible
    for text, says in [("n=4", None), ("x=1..2", "no setting named 'x'"), ("n=64..4", "LOW <= HIGH"),
                       ("n=a..b", "two integers"), ("mode=plain,plain", "listed twice"),
                       ("mode=odd", "mode"), ("", "empty"), ("n=4..8 n=1..2", "twice"),
                       ("n", "NAME=LOW..HIGH"), ("mode=plain,", "empty choice"),
                       ("n=0..8", "LOW <= HIGH")]:
        if says is None:
            assert parse_inputs(text, scale_space).ranges[0].choices == (4,)
            continue
        with pytest.raises(BeastError) as e:
            parse_inputs(text, scale_space)
        assert says in e.value.message and "\n" not in e.value.message


@settings(max_examples=examples(12), deadline=None)
@given(n=st.sampled_from([4, 6, 8, 12, 16, 24, 64]), mode=st.sampled_from(["plain", "wide"]),
       k=st.integers(1, 14), seed=st.integers(0, 3))
def test_sampled_configurations_are_distinct_and_valid_per_the_reference(scale_space, generated_dir,
                                                                        n, mode, k, seed):
    plan = scale_space.specialize(device="h100", n=n, mode=mode,
                                  generated_dir=generated_dir)
    valid = [tuple(sorted(c.items())) for c in
             ReferenceEnumerator(scale_space, "h100", {"n": n, "mode": mode}).configurations()]
    rows = sample_rows(plan, k, seed, 0)
    drawn = [tuple(sorted((x, r[x].item()) for x in plan.columns)) for r in rows]
    assert len(drawn) == len(set(drawn)) == min(k, len(valid))
    assert set(drawn) <= set(valid)
    # a larger k keeps the smaller one's draws (a resumed collection asks for the same pairs)
    assert set(drawn) <= {tuple(sorted((x, r[x].item()) for x in plan.columns))
                          for r in sample_rows(plan, k + 3, seed, 0)}


def _rows(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT run, config_key, recorded FROM results").fetchall()


def _collect_command(store, generated):
    return [sys.executable, "-m", "beastgen", "tune", SCALE, "--inputs", SPEC, "--pairs", "10",
            "--per-input", "2", "--iterations", "2", "--results", store, "--generated-dir", generated,
            "--json"]


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """A collection killed (SIGKILL) after its first rows, then resumed: (store, rows before the
    kill, the resumed run's report)."""
    folder = tmp_path_factory.mktemp("inputs")
    store, generated = str(folder / "inputs.db"), str(folder / "generated")
    env = dict(os.environ, PYTHONPATH=REPO)
    child = subprocess.Popen(_collect_command(store, generated), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + PATIENCE_SECONDS
    before = []
    while time.monotonic() < deadline and child.poll() is None:
        if os.path.exists(store):
            try:
                before = _rows(store)
            except sqlite3.Error:
                before = []
            if len(before) >= 2:
                break
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    before = _rows(store)
    done = subprocess.run(_collect_command(store, generated), env=env, capture_output=True, text=True,
                          timeout=PATIENCE_SECONDS)
    assert done.returncode == 0, done.stderr
    return store, before, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.opencl
def test_a_killed_collection_resumes_without_measuring_a_stored_pair_again(collected):
    store, before, report = collected
    assert 2 <= len(before) < 10
    after = _rows(store)
    assert report["pairs"] == 10 == len(after) == len({(run, key) for run, key, _ in after})
    assert report["resumed"] == len(before) and report["ran_now"] == 10 - len(before)
    assert set(before) <= set(after)  # the rows of before the kill, untouched (same time stamps)
    with sqlite3.connect(store) as db:
        runs = db.execute("SELECT strategy, settings FROM runs").fetchall()
        statuses = {s for (s,) in db.execute("SELECT status FROM results")}
    assert statuses == {"ok"} and {s for s, _ in runs} == {"inputs"}
    assert all("n" in json.loads(text) and "mode" in json.loads(text) for _, text in runs)


def _synthetic_store(path, space):
    """Rows following a known law, time = n / (wg * per) * (1 + per / 8) * 1e-6, over inputs n."""
    store = Store(path)
    for n, mode in ((8, "plain"), (16, "plain"), (32, "wide"), (64, "plain")):
        plan = space.specialize(device="h100", n=n, mode=mode)
        run = f"inputs-n{n}-{mode}"
        store.open_run(run, space=space.name, device="h100", backend="opencl", strategy="inputs",
                       settings=dict(plan.specialized.settings))
        for row in plan.enumerate():
            config = {x: row[x].item() for x in plan.columns}
            t = n / (config["wg"] * config["per"]) * (1 + config["per"] / 8) * 1e-6
            store.record(run, config_key(config), config, "ok", t, [t])
    store.close()


def test_the_fit_ranks_an_unseen_input_by_the_law_it_was_trained_on(tmp_path, scale_space):
    path = str(tmp_path / "law.db")
    _synthetic_store(path, scale_space)
    model = input_model.fit(path, scale_space)
    assert model["training_inputs"] == 4 and model["trained_on"]["n"] == {"low": 8, "high": 64}
    assert "in:n" in model["features"] and model["cv_rms_log_error"] < 0.2
    from beastgen.devices import load_profile
    rows, predicted, typed, warnings, valid = input_model.rank_input(
        scale_space, model, load_profile("h100"), {"n": "48"})
    assert typed["n"] == 48 and not warnings and valid == len(rows) == 11  # 48 % (8 * 4) != 0
    assert input_model.rank_input(scale_space, model, load_profile("h100"), {"n": "48"},
                                  top=3)[0].tolist() == rows[:3].tolist()
    truth = [48 / (r["wg"] * r["per"]) * (1 + r["per"] / 8) * 1e-6 for r in rows]
    assert truth[0] == min(truth)  # the predicted best is the best
    assert np.corrcoef(np.log(truth), np.log(predicted))[0, 1] > 0.95
    saved = tmp_path / "model.json"
    input_model.save(model, str(saved))
    loaded = input_model.load_model(str(saved))
    assert loaded["format_version"] == input_model.FORMAT_VERSION and loaded["device"] == "h100"
    assert loaded["features"] == model["features"]


@pytest.fixture(scope="module")
def law_model(tmp_path_factory, scale_space):
    path = str(tmp_path_factory.mktemp("law") / "law.db")
    _synthetic_store(path, scale_space)
    return input_model.fit(path, scale_space)


@settings(max_examples=examples(40), deadline=None)
@given(n=st.integers(1, 400), mode=st.sampled_from(["plain", "wide"]),
       wg=st.lists(st.integers(1, 64), min_size=1, max_size=30), per=st.integers(1, 9),
       bound=st.floats(0, 1e-3))
def test_vectorised_scoring_equals_the_sum_over_the_feature_matrix(law_model, n, mode, wg, per,
                                                                   bound):
    config = {"wg": np.array(wg), "per": (np.array(wg) * per) % 11 + 1}
    bounds = np.full(len(wg), bound)
    x = input_model.feature_matrix(law_model["features"], config, {"n": n, "mode": mode}, bounds)
    expected = law_model["intercept"] + ((x - law_model["mean"]) / law_model["scale"]) @ law_model["weights"]
    got = input_model.predict_log_times(law_model, config, {"n": n, "mode": mode}, bounds)
    assert np.allclose(got, expected, rtol=1e-9, atol=1e-9)


def test_every_kind_of_feature_is_scored_as_the_feature_matrix_says():
    trained_on = {"M": {"low": 16, "high": 256}, "t": {"low": 0, "high": 1},
                  "p": {"choices": ["s", "d"]}, "fixed": {"low": 4, "high": 4}}
    names = input_model.feature_names(["a", "b", "c"], {"a": [1, 2, 8], "b": [3, 5], "c": ["u", "v"]},
                                      trained_on, True)
    kinds = {name.partition(":")[0] + ("/" if "/" in name else "") for name in names}
    assert kinds == {"log", "pair", "is", "in", "insize/", "tiles/", "waste/", "lin", "lin/",
                     "choice", "choice/", "bound"}
    assert not any("fixed" in name for name in names)  # a setting that never varied is no feature
    rng = np.random.default_rng(0)
    model = {"features": names, "mean": rng.normal(size=len(names)).tolist(),
             "scale": rng.uniform(0.5, 2, len(names)).tolist(),
             "weights": rng.normal(size=len(names)).tolist(), "intercept": -9.0}
    config = {"a": rng.integers(1, 40, 50), "b": rng.integers(0, 9, 50),
              "c": rng.choice(["u", "v", "w"], 50)}
    bound = rng.uniform(0, 1e-3, 50)
    for setting in ({"M": 100, "t": 1, "p": "d"}, {"M": 17, "t": 0, "p": "s"}):
        x = input_model.feature_matrix(names, config, setting, bound)
        expected = model["intercept"] + ((x - model["mean"]) / model["scale"]) @ model["weights"]
        assert np.allclose(input_model.predict_log_times(model, config, setting, bound), expected)


def test_bad_stores_and_models_are_one_clear_error(tmp_path, scale_space, capsys):
    empty = str(tmp_path / "empty.db")
    with sqlite3.connect(empty) as db:  # a store that holds no run
        db.executescript(SCHEMA)
    for argv, says in [
            (["--results", empty, "--set", "n=8"], "holds no collection across inputs"),
            (["--results", str(tmp_path / "none.db")], "no results store there"),
            (["--set", "n=8"], "needs --results"),
            (["--results", empty, "--table", "x.csv"], "go together")]:
        assert main(["predict", SCALE, *argv]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
    assert main(["tune", SCALE, "--inputs", "n=4..64 size=1,2", "--results", empty]) == 2
    err = capsys.readouterr().err
    assert "--inputs: no setting named 'size'" in err and err.count("\n") == 1, err
    bad = tmp_path / "model.json"
    bad.write_text('{"format": "something else"}')
    assert main(["predict", SCALE, "--model", str(bad), "--device", "h100"]) == 2
    assert "not a beastgen input model" in capsys.readouterr().err


def test_out_of_range_and_other_device(law_model, scale_space):
    model = law_model
    assert input_model.check_input(model, {"n": 100, "mode": "plain"})[0].startswith(
        "warning: n=100 is 0.64 octaves outside the trained range 8..64")
    with pytest.raises(BeastError, match="n=1000 is 3.97 octaves outside"):
        input_model.check_input(model, {"n": 1000, "mode": "plain"})
    assert input_model.check_input(model, {"n": 1000, "mode": "plain"}, allow_out_of_range=True)
    assert model["trained_on"]["mode"] == {"choices": ["plain", "wide"]}
    plain_only = dict(model, trained_on={**model["trained_on"], "mode": {"choices": ["plain"]}})
    with pytest.raises(BeastError, match="never saw mode='wide'"):
        input_model.check_input(plain_only, {"n": 16, "mode": "wide"})
    with pytest.raises(BeastError, match="trained on device 'h100', not 'a100'"):
        input_model.check_model(model, scale_space, "a100")
    input_model.check_model(model, scale_space, "a100", allow_other_device=True)


@pytest.mark.slow
@pytest.mark.opencl
def test_predict_ranks_measures_and_exports(collected, tmp_path, capsys):
    store = collected[0]
    model_path = tmp_path / "model.json"
    assert main(["predict", SCALE, "--results", store, "--set", "n=32", "mode=plain", "--top", "3",
                 "--measure", "2", "--save-model", str(model_path)]) == 0
    out = capsys.readouterr().out
    assert "12 valid configurations ranked" in out and "best of the top 2 measured: rank" in out
    table = out[re.search(r"^rank +predicted", out, re.M).start():].splitlines()  # widths vary
    assert len([line for line in table if line.strip()[:1].isdigit()]) == 3
    # a model trained on the PoCL device refuses another device, unless told
    assert main(["predict", SCALE, "--model", str(model_path), "--set", "n=32", "--device", "h100"]) == 2
    assert "trained on device 'opencl0', not 'h100'" in capsys.readouterr().err
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("n,mode\n16,plain\n40,plain\n")
    best = tmp_path / "out" / "best.json"
    assert main(["predict", SCALE, "--model", str(model_path), "--device", "h100",
                 "--allow-other-device", "--table", str(shapes), "-o", str(best)]) == 0
    document = json.loads(best.read_text())
    assert document["format"] == "beastgen-best-configurations" and document["format_version"] == 1
    assert [e["input"] for e in document["entries"]] == [{"n": "16", "mode": "plain"},
                                                        {"n": "40", "mode": "plain"}]
    space = beastgen.load(SCALE)
    for entry in document["entries"]:
        valid = list(ReferenceEnumerator(space, "h100", entry["settings"]).configurations())
        assert entry["config"] in valid and entry["predicted_ms"] > 0
    assert os.listdir(best.parent) == ["best.json"]  # written atomically: no partial file left
    measured = tmp_path / "measured.json"  # on the model's device (PoCL), the best of 2 timed
    assert main(["predict", SCALE, "--model", str(model_path), "--table", str(shapes), "-o",
                 str(measured), "--measure", "2"]) == 0
    entries = json.loads(measured.read_text())["entries"]
    assert all(e["measured_ms"] > 0 and e["config"] for e in entries)
    shapes.write_text("n,size\n16,1\n")
    assert main(["predict", SCALE, "--model", str(model_path), "--device", "h100",
                 "--allow-other-device", "--table", str(shapes), "-o", str(best)]) == 2
    err = capsys.readouterr().err
    assert f"{shapes}:1" in err and "column 'size' is not a setting" in err
    assert math.isfinite(json.loads(best.read_text())["entries"][0]["predicted_ms"])  # kept


def test_sampled_gemm_configurations_carry_their_exact_bound_at_that_input(gemm_space, generated_dir):
    settings_ = {"M": 48, "N": 200, "K": 24, "max_blk": 16, "max_blk_k": 4, "precision": "d"}
    plan = gemm_space.specialize(device="h100", generated_dir=generated_dir, **settings_)
    reference = ReferenceEnumerator(gemm_space, "h100", settings_)
    rows = sample_rows(plan, 6, 0, 0)
    assert len(rows) == 6
    for row in rows:
        config = {x: row[x].item() for x in plan.columns}
        bound, term = reference.bound(config)
        assert math.isclose(row["bound"], bound, rel_tol=1e-12) and row["bottleneck"] == term


def test_tune_inputs_refuses_what_does_not_apply(capsys):
    for extra, says in [(["--strategy", "exhaustive"], "--strategy does not apply"),
                        (["--budget", "3"], "--budget does not apply"),
                        (["--pairs", "0"], "at least 1"),
                        (["--backend", "replay"], "measures on a device")]:
        assert main(["tune", SCALE, "--inputs", SPEC, *extra]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err


# -- issue 37: tampered model files and hostile tables (F12, F16, M4, M6) ---------------------------
@pytest.fixture(scope="module")
def model_file(tmp_path_factory, law_model):
    path = tmp_path_factory.mktemp("model") / "model.json"
    input_model.save(law_model, str(path))
    return path


def _tampered(model: dict, change) -> dict:
    model = json.loads(json.dumps(model))
    change(model)
    return model


@pytest.mark.parametrize("change, says", [  # repro/make_models.py and more
    (lambda m: m["weights"].__setitem__(0, float("nan")), "'weights' holds nan, not a finite number"),
    (lambda m: m["weights"].__setitem__(0, float("inf")), "'weights' holds inf"),
    (lambda m: m.update(scale=[0.0] * len(m["scale"])), "'scale' holds a value that is not above 0"),
    (lambda m: m.update(weights=m["weights"][:3]), "'weights' is not a list of"),
    (lambda m: m.update(weights=m["weights"][:3], scale=m["scale"][:3]), "is not a list of"),
    (lambda m: m.update(weights=None), "'weights' is not a list of"),
    (lambda m: m["features"].__setitem__(0, "log:zz"), "names 'zz', not a parameter of the model"),
    (lambda m: m["features"].__setitem__(0, "in:zz"), "does not name a numeric setting"),
    (lambda m: m["features"].__setitem__(0, "pair:wg"), "is not pair:a*b"),
    (lambda m: m["features"].__setitem__(0, "is:wg"), "is not is:x=value"),
    (lambda m: m["features"].__setitem__(0, "cube:wg"), "is of no kind the model knows"),
    (lambda m: m.update(features="log:wg"), "'features' is not a list of feature names"),
    (lambda m: m.update(intercept="1.0"), "'intercept' is '1.0', not a finite number"),
    (lambda m: m.update(intercept=float("nan")), "'intercept' is nan"),
    (lambda m: m["trained_on"].__setitem__("n", {"low": "8", "high": 64}), "'trained_on' of setting 'n'"),
    (lambda m: m.update(trained_on=[]), "'trained_on' is list, not an object"),
    (lambda m: m.update(parameters="wg"), "'parameters' is not a list of distinct names"),
    (lambda m: m.update(space_hash=7), "'space_hash' is int, not a text"),
    (lambda m: m.update(training_pairs="40"), "'training_pairs' is '40', not a count"),
])
def test_a_tampered_model_file_is_one_line(model_file, tmp_path, capsys, change, says):
    """F12: each malformed field gave a traceback (KeyError, ValueError, TypeError...) or silent
    nan predictions; now one line naming the file and the field."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_tampered(json.loads(model_file.read_text()), change)))
    assert main(["predict", SCALE, "--model", str(bad), "--device", "h100", "--set", "n=48"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}: the model file is damaged: " in err and says in err, err


def test_a_model_whose_predictions_overflow_writes_no_nan(model_file, tmp_path, capsys):
    """F12: ``intercept: 1e308`` (finite, but its exp is not) ranked every configuration inf and
    wrote ``NaN``/``Infinity`` into best.json; now one line, and no output file."""
    bad = tmp_path / "big.json"
    bad.write_text(json.dumps(_tampered(json.loads(model_file.read_text()),
                                        lambda m: m.update(intercept=1e308))))
    (tmp_path / "t.csv").write_text("n\n16\n")
    for extra in [["--set", "n=48"], ["--table", str(tmp_path / "t.csv"), "-o", str(tmp_path / "o.json")]]:
        assert main(["predict", SCALE, "--model", str(bad), "--device", "h100", *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "predicts times that are not finite numbers" in err, err
        assert str(bad) in err
    assert os.listdir(tmp_path) == ["big.json", "t.csv"]  # no o.json, no .partial


@pytest.mark.parametrize("table, says", [
    ("\ufeffn\n16\n", None),  # M4: a byte order mark (as a spreadsheet writes) is no part of 'n'
    ("n,n\n16,32\n", "t.csv:1: column 'n' is given twice"),  # M4: the last value won
    ("n\n16\n0\n", "t.csv:3: setting 'n' = 0 is below its minimum 1 (declared at "),  # M4
    ("n\n16\n99999999999999999999999\n", "t.csv:3: "),  # F16: a traceback, and a .partial
    ("mode,n\nplain,16\nwide,9223372036854775810\n", "t.csv:3: "),  # F16, just past INT64
])
def test_a_table_problem_names_its_line_and_leaves_no_partial_file(model_file, tmp_path, capsys,
                                                                   table, says):
    """M6: every failing predict --table -o left an empty hidden .partial file."""
    (tmp_path / "t.csv").write_text(table, encoding="utf-8")
    status = main(["predict", SCALE, "--model", str(model_file), "--device", "h100",
                   "--allow-out-of-range", "--table", str(tmp_path / "t.csv"), "-o",
                   str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    if says is None:
        assert status == 0 and json.loads((tmp_path / "o.json").read_text())["entries"][0]["config"]
        assert sorted(os.listdir(tmp_path)) == ["o.json", "t.csv"]
        return
    assert status == 2 and err.count("\n") == 1 and says in err and "Traceback" not in err, err
    assert os.listdir(tmp_path) == ["t.csv"]
