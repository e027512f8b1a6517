"""export-results: a tune run's results as a Kernel Tuner cache file and as T4 results, read back by
beastgen's replay reader, Kernel Tuner's simulation mode and the T4 JSON schema."""
import json
import os

import pytest

from beastgen.cli import main
from beastgen.errors import BeastError
from beastgen.harness.recorded import load_replay
from beastgen.harness.store import read_run

from conftest import REPLAY, REPO


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, generated_dir):
    """A replay tune of 25 configurations of the CLBlast GEMM space: (results store, its rows)."""
    folder = tmp_path_factory.mktemp("export_results")
    store = str(folder / "r.db")
    assert main(["tune", os.path.join(REPO, "spaces", "gemm_clblast.py"), "--backend", "replay",
                 "--replay", REPLAY, "--device", "titanrtx", "--results", store, "--budget", "25",
                 "--generated-dir", generated_dir, "--no-progress"]) == 0
    description, rows = read_run(store)
    assert len(rows) == 25 and all(row["status"] == "ok" for row in rows)
    return store, description, rows


def test_kernel_tuner_cache_round_trips_through_the_replay_reader(tuned, tmp_path, capsys):
    store, _, rows = tuned
    output = str(tmp_path / "cache.json")
    assert main(["export-results", store, "--format", "kernel_tuner", "-o", output]) == 0
    assert "wrote 25 results" in capsys.readouterr().out
    replay = load_replay(output)
    assert len(replay.times) == 25 and not replay.failed
    for row in rows:
        key = tuple(row["config"][name] for name in replay.keys)
        # seconds -> ms -> seconds: equal up to the rounding of one multiplication and one division
        assert replay.times[key] == pytest.approx(row["time"], rel=1e-15, abs=0)
    document = json.load(open(output))
    entry = next(iter(document["cache"].values()))
    assert entry["time"] == pytest.approx(rows[0]["time"] * 1000, rel=1e-15)  # milliseconds


def test_kernel_tuner_simulation_mode_loads_the_cache(tuned, tmp_path):
    kernel_tuner = pytest.importorskip("kernel_tuner")
    store, _, rows = tuned
    output = str(tmp_path / "cache.json")
    assert main(["export-results", store, "--format", "kernel_tuner", "-o", output,
                 "--kernel-name", "gemm_fast"]) == 0
    document = json.load(open(output))
    keys = document["tune_params_keys"]
    exported = {tuple(row["config"][k] for k in keys): row["time"] for row in rows}

    def measured(p):  # simulation mode needs every configuration it visits in the cache
        return tuple(p[k] for k in keys) in exported

    with pytest.warns(UserWarning):  # no kernel arguments and no thread-block parameters: simulated
        results, _ = kernel_tuner.tune_kernel(
            "gemm_fast", "__global__ void gemm_fast() {}", document["problem_size"], [],
            document["tune_params"], restrictions=measured, cache=output, simulation_mode=True,
            strategy="brute_force", quiet=True, lang="CUDA")
    assert len(results) == len(exported)
    for result in results:
        assert result["time"] / 1000 == pytest.approx(exported[tuple(result[k] for k in keys)],
                                                      rel=1e-15, abs=0)


def test_t4_results_follow_the_schema(tuned, tmp_path):
    store, description, rows = tuned
    output = str(tmp_path / "t4.json")
    assert main(["export-results", store, "--format", "t4", "-o", output]) == 0
    document = json.load(open(output))
    jsonschema = pytest.importorskip("jsonschema")  # both in beastgen[dev]
    file_utils = pytest.importorskip("kernel_tuner.file_utils")
    version, schema = file_utils.output_file_schema("results")
    assert document["schema_version"] == version
    jsonschema.validate(document, json.loads(schema) if isinstance(schema, str) else schema)
    assert document["metadata"]["timeunit"] == "milliseconds"
    assert len(document["results"]) == 25
    for record, row in zip(document["results"], rows):
        assert record["configuration"] == row["config"] and record["invalidity"] == "correct"
        assert record["correctness"] == 1 and record["objectives"] == ["time"]
        assert record["measurements"][0]["value"] == pytest.approx(row["time"] * 1000, rel=1e-15)
        assert record["times"]["runtimes"] == [pytest.approx(t * 1000, rel=1e-15) for t in row["times"]]


def test_failed_runs_keep_their_kind(tmp_path):
    from beastgen.interop.results import kernel_tuner_cache, t4_results
    description = {"run": "r", "space": "s", "device": "d", "backend": "b", "strategy": "x",
                   "settings": {"N": 64, "precision": "s"}, "created": 0.0}
    rows = [{"config": {"a": 1}, "status": "compile", "time": None, "times": None, "recorded": 1.0},
            {"config": {"a": 2}, "status": "wrong_result", "time": None, "times": [0.5], "recorded": 2.0},
            {"config": {"a": 3}, "status": "ok", "time": 0.25, "times": [0.25, 0.5], "recorded": 3.0}]
    cache = kernel_tuner_cache(description, rows)
    assert cache["problem_size"] == [64] and cache["tune_params"] == {"a": [1, 2, 3]}
    assert [e["time"] for e in cache["cache"].values()] == ["CompilationFailedConfig",
                                                            "RuntimeFailedConfig", 250.0]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cache))
    replay = load_replay(str(path))
    assert replay.times == {(3,): 0.25} and set(replay.failed) == {(1,), (2,)}
    t4 = t4_results(description, rows)["results"]
    assert [r["invalidity"] for r in t4] == ["compile", "correctness", "correct"]
    assert [r["correctness"] for r in t4] == [1, 0, 1]
    assert t4[2]["times"]["runtimes"] == [250.0, 500.0]


def test_missing_store_and_unknown_run_are_clear_errors(tuned, tmp_path):
    store, description, _ = tuned
    with pytest.raises(BeastError, match="no results store there"):
        read_run(str(tmp_path / "none.db"))
    with pytest.raises(BeastError, match=f"no run 'nope'.*{description['run']}"):
        read_run(store, "nope")


CONVOLUTION = os.path.join(REPO, "data", "reference-spaces", "convolution_milo.json")
CONVOLUTION_A100 = os.path.join(REPO, "data", "replay", "convolution_milo_a100.json.gz")


def test_a_measured_replay_run_round_trips_through_kernel_tuner(tmp_path, monkeypatch, capsys):
    """The migration target: a fully measured replay run of the convolution T1 space, exported
    --format kernel_tuner, is read back by Kernel Tuner's brute force in simulation mode with the T1
    file's own tune_params (in its order) and restrictions, and finds the same best. The tune honours
    $BEASTGEN_GENERATED_DIR (one default for every command)."""
    import ast
    kernel_tuner = pytest.importorskip("kernel_tuner")
    monkeypatch.setenv("BEASTGEN_GENERATED_DIR", str(tmp_path / "from-env"))
    store, output = str(tmp_path / "r.db"), str(tmp_path / "cache.json")
    assert main(["tune", CONVOLUTION, "--backend", "replay", "--replay", CONVOLUTION_A100,
                 "--results", store, "--strategy", "exhaustive", "--no-progress", "--json"]) == 0
    best = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert best["evaluated"] == 4362
    assert any(name.startswith("convolution_milo__") for name in os.listdir(tmp_path / "from-env"))
    assert main(["export-results", store, "--format", "kernel_tuner", "-o", output]) == 0
    replay = json.load(__import__("gzip").open(CONVOLUTION_A100))
    document = json.load(open(output))
    for key in ("kernel_name", "problem_size", "device_name", "tune_params_keys"):
        assert document[key] == replay[key], key

    t1 = json.load(open(CONVOLUTION))["ConfigurationSpace"]
    tune_params = {p["Name"]: ast.literal_eval(p["Values"]) for p in t1["TuningParameters"]}
    restrictions = [c["Expression"] for c in t1["Conditions"]]
    with pytest.warns(UserWarning):  # no kernel arguments: simulated
        results, _ = kernel_tuner.tune_kernel(
            replay["kernel_name"], "__global__ void convolution_kernel() {}", replay["problem_size"],
            [], tune_params, restrictions=restrictions, cache=output, simulation_mode=True,
            strategy="brute_force", quiet=True, lang="CUDA")
    timed = [r for r in results if isinstance(r["time"], float)]
    assert len(results) == 4362 and len(timed) == 4201
    fastest = min(timed, key=lambda r: r["time"])
    assert {k: fastest[k] for k in tune_params} == best["best_config"]
    assert fastest["time"] == pytest.approx(best["best_time_ms"], rel=1e-12)


def test_values_holding_commas_are_never_dropped_from_an_export(tmp_path, monkeypatch, capsys):
    """Issue 37, F9: Kernel Tuner keys a cache entry by its values joined by commas, so "1,2"/"3"
    and "1"/"2,3" both became "1,2,3": one result (the best) was dropped while the message said
    every result was written. Such an export is refused in one line (no file); T4 keeps them all."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BEASTGEN_GENERATED_DIR", str(tmp_path / "gen"))
    (tmp_path / "comma.json").write_text(json.dumps({
        "General": {"BenchmarkName": "comma", "OutputFormat": "JSON"},
        "ConfigurationSpace": {"TuningParameters": [
            {"Name": "s", "Type": "string", "Values": '["1,2", "1"]', "Default": "1"},
            {"Name": "t", "Type": "string", "Values": '["3", "2,3"]', "Default": "3"}],
            "Conditions": []}}))
    times = {("1,2", "3"): 1.0, ("1,2", "2,3"): 3.0, ("1", "3"): 4.0, ("1", "2,3"): 2.0}
    (tmp_path / "replay.json").write_text(json.dumps({
        "device_name": "dev", "kernel_name": "comma", "problem_size": [1],
        "tune_params_keys": ["s", "t"],
        "cache": {f"{s}|{t}": {"s": s, "t": t, "time": ms, "times": [ms]} for (s, t), ms in times.items()}}))
    assert main(["tune", "comma.json", "--backend", "replay", "--replay", "replay.json", "--strategy",
                 "exhaustive", "--results", "comma.db", "--no-progress"]) == 0
    capsys.readouterr()
    for argv in (["export-results", "comma.db", "--format", "kernel_tuner", "-o", "out.json"],
                 ["export", "comma.json", "--format", "kernel_tuner", "-o", "out.json"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "have the same Kernel Tuner cache key '1,2,3'" in err, err
        assert err.startswith(f"beastgen: error: {argv[1]}: configurations")
        assert not [n for n in os.listdir(tmp_path) if n.startswith((".out", "out"))]
    assert main(["export-results", "comma.db", "--format", "t4", "-o", "t4.json"]) == 0
    results = json.loads((tmp_path / "t4.json").read_text())["results"]
    assert sorted((r["configuration"]["s"], r["configuration"]["t"]) for r in results) == sorted(times)
