"""``beastgen.kernel_tuner.Strategy`` inside Kernel Tuner 1.5's ``tune_kernel``: in simulation mode
on the replay files (the same evaluations as ``beastgen tune --backend replay`` on the same
definition, priors and seed), its options refused and checked as Kernel Tuner's are, the space
checked against Kernel Tuner's, and live on PoCL (OpenCL on the CPU) against brute force."""
import gzip
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from beastgen.errors import BeastError

from conftest import DATA

pytest.importorskip("kernel_tuner")

import beastgen.kernel_tuner  # noqa: E402
from kernel_tuner import tune_kernel  # noqa: E402

REPLAY = os.path.join(DATA, "replay")


def _file(name):
    return os.path.join(REPLAY, name + ".json.gz")


_DEFINITIONS = {}


def _definition(name, tmp_path):
    """(Kernel Tuner cache of the replay file, as a .json file without the repetitions' times that
    nothing here reads; its header; restrictions: the conditions of the kernel's T1 file), written
    once per test session."""
    if name not in _DEFINITIONS:
        with gzip.open(_file(name), "rt", encoding="utf-8") as f:
            data = json.load(f)
        for record in data["cache"].values():
            record.pop("times", None)
        cache = str(tmp_path / f"{name}.json")
        with open(cache, "w", encoding="utf-8") as f:
            json.dump(data, f)
        header = {k: v for k, v in data.items() if k != "cache"}
        kernel = next(k for k in ("convolution_milo", "dedispersion", "gemm_clblast") if name.startswith(k))
        with open(os.path.join(DATA, "reference-spaces", kernel + ".json"), encoding="utf-8") as f:
            restrictions = [c["Expression"] for c in json.load(f)["ConfigurationSpace"]["Conditions"]]
        _DEFINITIONS[name] = cache, header, restrictions
    return _DEFINITIONS[name]


def _simulate(name, tmp_path, strategy, options=None, restrictions=None, **kwargs):
    cache, header, conditions = _definition(name, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tune_kernel(header["kernel_name"], "", tuple(header["problem_size"]), [],
                           header["tune_params"], restrictions=conditions if restrictions is None
                           else restrictions, cache=cache, simulation_mode=True, quiet=True,
                           strategy=strategy, strategy_options=options, **kwargs)


def _same_as_beastgen_tune(name, seed, priors, tmp_path, generated_dir):
    """The evaluations of the strategy in Kernel Tuner's simulation mode and of ``beastgen tune
    --backend replay`` on the same definition (written as a T1 file), stopped at the optimum."""
    from beastgen.harness import tune
    from beastgen.harness.recorded import load_replay
    from beastgen.harness.store import read_run
    from beastgen.interop import from_kernel_tuner, to_t1

    optimum = load_replay(_file(name)).best()[1]
    priors = [_file(p) for p in priors]
    results, _ = _simulate(name, tmp_path, beastgen.kernel_tuner.Strategy(priors=priors or None, seed=seed),
                           {"max_fevals": 1000, "good_enough": optimum * 1e3})
    _, header, restrictions = _definition(name, tmp_path)
    keys = header["tune_params_keys"]
    t1 = str(tmp_path / "definition.json")
    to_t1(from_kernel_tuner(header["tune_params"], restrictions, name="definition"), t1)
    tune(t1, backend="replay", replay=_file(name), seed=seed, priors=priors or None,
         results=str(tmp_path / "run.db"), budget=1000, good_enough=optimum * (1 + 1e-12),
         generated_dir=generated_dir, progress=False, log=lambda message: None)
    _, rows = read_run(str(tmp_path / "run.db"))
    ours = [tuple(r[k] for k in keys) for r in results]
    assert ours == [tuple(row["config"][k] for k in keys) for row in rows]
    assert min(r["time"] for r in results if "__error__" not in r) == pytest.approx(optimum * 1e3)
    return ours


def test_importing_beastgen_imports_no_kernel_tuner():
    code = ("import sys, beastgen, beastgen.kernel_tuner; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kernel_tuner'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_simulation_with_priors_is_beastgen_tune(tmp_path, generated_dir):
    """The convolution W6600 file, priors the other two GPUs' files: the very same evaluations."""
    ours = _same_as_beastgen_tune("convolution_milo_w6600", 0,
                                  ["convolution_milo_a100", "convolution_milo_a4000"], tmp_path,
                                  generated_dir)
    assert len(ours) <= 20


@pytest.mark.slow
@pytest.mark.parametrize("name,seed,priors", [
    ("gemm_clblast_rtx_3060_laptop", 2, ["gemm_clblast_rtx_titan"]),  # 7,956 configurations uncached
    ("gemm_clblast_rtx_3060_laptop", 0, []),
    ("dedispersion_milo_a4000", 3, ["dedispersion_milo_a100", "dedispersion_milo_w6600"]),
    ("convolution_milo_a100", 1, ["convolution_milo_a4000", "convolution_milo_w6600"]),  # 161 failed
])
def test_simulation_is_beastgen_tune(tmp_path, generated_dir, name, seed, priors):
    _same_as_beastgen_tune(name, seed, priors, tmp_path, generated_dir)


def test_results_as_kernel_tuner_strategies_return_them(tmp_path):
    """``max_fevals`` is kept, the results have the fields of Kernel Tuner's own strategies', and
    ``tune_kernel``'s best is among them."""
    results, env = _simulate("convolution_milo_a100", tmp_path,
                             beastgen.kernel_tuner.Strategy(seed=4), {"max_fevals": 25})
    theirs, _ = _simulate("convolution_milo_a100", tmp_path, "random_sample", {"max_fevals": 3})
    keys = _definition("convolution_milo_a100", tmp_path)[1]["tune_params_keys"]
    assert len(results) == len({tuple(r[k] for k in keys) for r in results}) == 25
    fields = {frozenset(r) for r in results + theirs if "__error__" not in r}
    assert len(fields) == 1
    assert env["best_config"] in results
    assert env["best_config"]["time"] == min(r["time"] for r in results if "__error__" not in r)


def test_time_limit_stops_it(tmp_path):
    """Kernel Tuner's simulated time (compile, verification and benchmark time of the cache)
    counts against ``time_limit``: about 3 s per dedispersion configuration."""
    results, _ = _simulate("dedispersion_milo_w6600", tmp_path, beastgen.kernel_tuner.Strategy(),
                           {"time_limit": 30})
    assert 1 <= len(results) <= 10


def test_options_through_strategy_options(tmp_path):
    """``seed`` and ``priors`` in ``strategy_options`` are the constructor's; ``tune_kernel``'s
    ``seed`` is the search's where no other is given."""
    def first(strategy, options, **kwargs):
        results, _ = _simulate("convolution_milo_w6600", tmp_path, strategy, {"max_fevals": 4, **options},
                               **kwargs)
        return [(r["block_size_x"], r["block_size_y"], r["tile_size_x"], r["tile_size_y"]) for r in results]

    Strategy = beastgen.kernel_tuner.Strategy
    priors = [_file("convolution_milo_a100"), _file("convolution_milo_a4000")]
    seeded = first(Strategy(seed=3), {})
    assert first(Strategy(), {"seed": 3}) == seeded == first(Strategy(), {}, seed=3) != first(Strategy(), {})
    warm = first(Strategy(priors=priors), {})
    assert first(Strategy(), {"priors": priors}) == warm != first(Strategy(), {})


def test_unknown_option_is_refused_as_kernel_tuner_refuses_it(tmp_path):
    with pytest.raises(ValueError) as ours:
        _simulate("convolution_milo_w6600", tmp_path, beastgen.kernel_tuner.Strategy(),
                  {"max_fevals": 5, "popsize": 10})
    with pytest.raises(ValueError) as theirs:
        _simulate("convolution_milo_w6600", tmp_path, "random_sample", {"max_fevals": 5, "popsize": 10})
    assert str(ours.value) == ("Unrecognized option popsize in strategy_options (allowed: ['priors', "
                               "'seed', 'good_enough', 'max_fevals', 'time_limit', "
                               "'searchspace_construction_options'])")
    assert str(theirs.value).split(" (allowed")[0] == str(ours.value).split(" (allowed")[0]


@pytest.mark.parametrize("options,message", [
    ({"x0": [16, 1, 1, 1, 0, 0, 0, 0, 15, 15]}, "Unrecognized option x0"),
    ({"seed": "one"}, "seed must be an integer"),
    ({"priors": 3}, "priors must be a file name or a list of file names"),
    ({"good_enough": "fast"}, "good_enough must be a number"),
    ({"seed": 2}, "seed is 2 in strategy_options but 1 in beastgen.kernel_tuner.Strategy()"),
])
def test_bad_options(tmp_path, options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _simulate("convolution_milo_w6600", tmp_path, beastgen.kernel_tuner.Strategy(seed=1), options)


def test_bad_constructor_argument():
    with pytest.raises(ValueError, match="seed must be an integer of at least 0"):
        beastgen.kernel_tuner.Strategy(seed=-1)


def test_a_beastgen_results_store_as_prior(tmp_path, generated_dir):
    """A store that ``beastgen tune`` wrote (here 40 runs answered by the A4000's file) is a prior:
    the search begins with its fastest configuration."""
    from beastgen.harness import tune
    store = str(tmp_path / "a4000.db")
    result = tune(os.path.join(DATA, "reference-spaces", "convolution_milo.json"), backend="replay",
                  replay=_file("convolution_milo_a4000"), budget=40, results=store,
                  generated_dir=generated_dir, progress=False, log=lambda message: None)
    results, _ = _simulate("convolution_milo_w6600", tmp_path,
                           beastgen.kernel_tuner.Strategy(priors=store), {"max_fevals": 2})
    assert {k: results[0][k] for k in result.best_config} == result.best_config


def test_priors_of_another_kernel_are_one_clear_error(tmp_path):
    with pytest.raises(BeastError, match=r"the prior's parameters \[.*'tile_stride_x'.*\] are not "
                                         r"parameters of the space") as error:
        _simulate("convolution_milo_w6600", tmp_path,
                  beastgen.kernel_tuner.Strategy(priors=[_file("dedispersion_milo_a100")]),
                  {"max_fevals": 5})
    assert error.value.where == _file("dedispersion_milo_a100")


def test_a_space_unlike_kernel_tunes_is_one_clear_error(tmp_path):
    """A restriction that answers differently each time it is called (it counts its calls): Kernel
    Tuner's searchspace and beastgen's enumeration of the same definition differ, and the
    strategy says so before measuring anything."""
    calls = []

    def every_third_rejected(*values):
        calls.append(values)
        return len(calls) % 3 != 0

    _, _, conditions = _definition("convolution_milo_w6600", tmp_path)
    with pytest.raises(BeastError, match=r"beastgen's enumeration of the definition holds [\d,]+ "
                                         r"configurations, Kernel Tuner's searchspace [\d,]+; only "):
        _simulate("convolution_milo_w6600", tmp_path, beastgen.kernel_tuner.Strategy(),
                  {"max_fevals": 5}, restrictions=conditions + [every_third_rejected])


def test_objective_as_the_search_reads_it():
    time = beastgen.kernel_tuner.Objective("time", False, 2.0)
    assert time.time(1.5) == 0.0015 and time.good_enough(1.5) and not time.good_enough(2.5)
    assert time.time(sys.float_info.max) == math.inf and not time.good_enough(sys.float_info.max)
    rate = beastgen.kernel_tuner.Objective("GFLOP/s", True, 100.0)
    assert rate.time(-200.0) == 1 / 200.0 and rate.good_enough(-200.0) and not rate.good_enough(-50.0)


def test_searchspace_options_give_kernel_tuner_the_same_space(tmp_path):
    """beastgen's enumeration handed to Kernel Tuner's Searchspace (its ATF_cache framework) holds
    the configurations of Kernel Tuner's own construction: strings, a lambda, the block size rule."""
    pytest.importorskip("pandas")
    from kernel_tuner.searchspace import Searchspace
    tune_params = {"block_size_x": [32, 64, 128, 256, 512], "block_size_y": [1, 2, 4, 8],
                   "tile": [1, 2, 3, 4], "vector": [1, 2, 4], "unroll": [0, 1]}
    restrictions = ["block_size_x * tile <= 1024", lambda p: p["vector"] <= p["tile"] or p["unroll"] == 0]
    options = beastgen.kernel_tuner.searchspace_options(tune_params, restrictions,
                                                        path=str(tmp_path / "space.csv"))
    handed = Searchspace(tune_params, restrictions, 1024, **options)
    own = Searchspace(tune_params, restrictions, 1024)
    plain = {tuple(v.item() if hasattr(v, "item") else v for v in c) for c in handed.list}
    assert handed.size == own.size == len(plain) and plain == set(own.list)
    assert 0 < own.size < 5 * 4 * 4 * 3 * 2


# -- live: a real kernel through Kernel Tuner's OpenCL runner on PoCL ---------------------------------
KERNEL = """
__kernel void twice(__global float *y, __global const float *x, const int n) {
    int first = get_group_id(0) * block_size_x * work_per_thread + get_local_id(0);
    for (int w = 0; w < work_per_thread; w++) {
        int i = first + w * block_size_x;
        if (i < n) {
            float v = 0.0f;
            for (int r = 0; r < repeat; r++)  /* repeat times the work, the same answer */
                v = fma(x[i], 2.0f, v * 0.0f);
            y[i] = v;
        }
    }
}
"""
LIVE_PARAMS = {"block_size_x": [16, 32, 64], "work_per_thread": [1, 2], "repeat": [1, 8]}
LIVE_RESTRICTIONS = ["block_size_x * work_per_thread <= 32"]


def _live(strategy, options=None, cache=None, kernel=KERNEL, observers=None):
    n = np.int32(1 << 18)
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tune_kernel("twice", kernel, n, [np.zeros_like(x), x, n], LIVE_PARAMS,
                           restrictions=LIVE_RESTRICTIONS, grid_div_x=["block_size_x", "work_per_thread"],
                           answer=[2 * x, None, None], lang="OpenCL", iterations=3, quiet=True,
                           strategy=strategy, strategy_options=options, cache=cache, observers=observers)


def _live_configs(results):
    return [tuple(r[k] for k in LIVE_PARAMS) for r in results]


@pytest.mark.opencl
def test_live_on_pocl_against_brute_force(tmp_path):
    """Brute force and beastgen's strategy measure the same configurations (each verified against
    the answer); with brute force's cache as its prior (Kernel Tuner's own file, this device),
    beastgen's first measurement is brute force's best."""
    cache = str(tmp_path / "brute_force.json")
    brute, _ = _live("brute_force", cache=cache)
    ours, env = _live(beastgen.kernel_tuner.Strategy(seed=0))
    keys = list(LIVE_PARAMS)
    assert len(brute) == 6 and all("__error__" not in r for r in brute + ours)
    assert sorted(tuple(r[k] for k in keys) for r in ours) == sorted(tuple(r[k] for k in keys) for r in brute)
    assert {frozenset(r) - {"timestamp"} for r in ours} == {frozenset(r) - {"timestamp"} for r in brute}
    assert env["best_config"] in ours
    best = min(brute, key=lambda r: r["time"])
    warm, _ = _live(beastgen.kernel_tuner.Strategy(priors=[cache]), {"max_fevals": 2})
    assert len(warm) == 2
    assert tuple(warm[0][k] for k in keys) == tuple(best[k] for k in keys)


@pytest.mark.opencl
def test_live_observers_and_the_cache(tmp_path):
    """An observer's metric is in every result; a second run on the same cache file measures
    nothing (the observer sees no configuration) and answers the same results, as Kernel Tuner's
    cache does for its own strategies."""
    from kernel_tuner.observers.observer import BenchmarkObserver

    class Launches(BenchmarkObserver):
        def __init__(self):
            self.configurations, self.launches = [], 0

        def register_configuration(self, params):
            self.configurations.append(tuple(params[k] for k in LIVE_PARAMS))

        def after_finish(self):
            self.launches += 1

        def get_results(self):
            return {"launches": self.launches}

    cache = str(tmp_path / "ours.json")
    first_observer, again_observer = Launches(), Launches()
    first, _ = _live(beastgen.kernel_tuner.Strategy(seed=1), {"max_fevals": 4}, cache=cache,
                     observers=[first_observer])
    again, _ = _live(beastgen.kernel_tuner.Strategy(seed=1), {"max_fevals": 4}, cache=cache,
                     observers=[again_observer])
    # Kernel Tuner's runner registers each configuration, the first twice (its warm-up launch)
    assert len(first) == 4 and set(first_observer.configurations) == set(_live_configs(first))
    assert all(r["launches"] > 0 for r in first)
    assert again_observer.configurations == []
    assert _live_configs(again) == _live_configs(first)
    assert [r["time"] for r in again] == [r["time"] for r in first]
    with open(cache, encoding="utf-8") as f:
        assert len(json.load(f)["cache"]) == 4


_WRONG_FOR_ONE = KERNEL.replace("y[i] = v;", "y[i] = (repeat == 8 && work_per_thread == 2) ? v + 1.0f : v;")
_UNCOMPILABLE_FOR_ONE = "#if repeat == 8 && work_per_thread == 2\n#error no such configuration\n#endif\n" + KERNEL


@pytest.mark.opencl
@pytest.mark.parametrize("kernel,error", [
    (_WRONG_FOR_ONE, "Kernel result verification failed for: block_size_x=16, work_per_thread=2, repeat=8"),
    (_UNCOMPILABLE_FOR_ONE, "BUILD_PROGRAM_FAILURE")], ids=["wrong answer", "compile error"])
def test_live_a_failing_configuration_stops_it_as_kernel_tuner_stops(tmp_path, monkeypatch, kernel, error):
    """A configuration that computes a wrong answer, or does not compile, stops ``tune_kernel`` with
    Kernel Tuner's own error as brute force does; the cache file (left open, as Kernel Tuner leaves
    it) keeps every configuration measured before it (seed 3 proposes the bad one fifth), and
    serves as a prior as it is."""
    from kernel_tuner.util import read_cache
    monkeypatch.chdir(tmp_path)  # Kernel Tuner writes the failing kernel's source here
    for strategy in ("brute_force", beastgen.kernel_tuner.Strategy(seed=3)):
        cache = str(tmp_path / f"{strategy if isinstance(strategy, str) else 'beastgen'}.json")
        with pytest.raises(Exception, match=error):
            _live(strategy, cache=cache, kernel=kernel)
        kept = read_cache(cache, open_cache=False)["cache"]
        assert "16,2,8" not in kept and all("time" in r for r in kept.values())
        assert len(kept) >= 3
    # the open cache is a prior as it is a cache to Kernel Tuner: the search starts at its best
    warm, _ = _live(beastgen.kernel_tuner.Strategy(priors=cache), {"max_fevals": 1})
    best = min(kept.values(), key=lambda r: r["time"])
    assert _live_configs(warm) == [tuple(best[k] for k in LIVE_PARAMS)]
