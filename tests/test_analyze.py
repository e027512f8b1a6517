"""`beastgen analyze`: the performance hull, the clusterings and the parameter shares of a tuning's
measurements; on the real replay files, on a PoCL tune, on a store written with a known law; the
HTML report opened in a real headless browser (Chromium through Selenium and the system's
chromedriver)."""
import glob
import gzip
import json
import math
import os
import shutil

import numpy as np
import pytest

from beastgen.analyze import analyze
from beastgen.analyze.hull import upper_hull
from beastgen.analyze.report import write_report
from beastgen.cli import main
from beastgen.errors import BeastError
from beastgen.harness.store import Store, config_key

from conftest import DATA, REPO, REFERENCE_DIR

REPLAYS = sorted(glob.glob(os.path.join(DATA, "replay", "*.json.gz")))
#: the space each replay file was measured with
SPACES = {"gemm_clblast": os.path.join(REPO, "spaces", "gemm_clblast.py"),
          "convolution_milo": os.path.join(REFERENCE_DIR, "convolution_milo.json"),
          "dedispersion_milo": os.path.join(REFERENCE_DIR, "dedispersion.json")}


def _space_of(replay: str) -> str:
    return next(path for prefix, path in SPACES.items() if os.path.basename(replay).startswith(prefix))


# -- the hull ------------------------------------------------------------------------------------
def test_the_upper_hull_is_scipy_s_over_the_top():
    x = np.array([0, 1, 2, 3, 4, 1, 2, 3, 2, 2], float)
    y = np.array([0, 3, 4, 3, 0, 1, 2, 1, 3.9, 4.0], float)  # the last two: below or at the peak
    hull = upper_hull("x", x, y)
    assert [(x[i], y[i]) for i in hull.vertices] == [(0, 0), (1, 3), (2, 4), (3, 3), (4, 0)]
    assert not hull.log_x and not hull.log_y and hull.points == 10
    collinear = upper_hull("x", np.array([1.0, 2, 3]), np.array([1.0, 2, 3]))
    assert [int(i) for i in collinear.vertices] == [0, 2]
    wide = upper_hull("x", np.array([1.0, 10, 1000, np.nan]), np.array([1.0, 5, 2, 9]))
    assert wide.log_x and wide.points == 3 and wide.vertices == [0, 1, 2]


# -- the shares against a known law --------------------------------------------------------------
#: the law: time = f(a) * g(b) * noise, and c does nothing
F = {1: 1.0, 2: 1.6, 4: 3.0, 8: 0.7}
G = {"x": 1.0, "y": 2.5, "z": 1.2}
NOISE = 0.03  # standard deviation of log(noise)
TOLERANCE = 0.02  # absolute, on every share


def _law_store(path, seed=3):
    """A results store written through beastgen's own store API: every (a, b, c) once."""
    rng = np.random.default_rng(seed)
    store = Store(str(path))
    store.open_run("law", space="law", device="h100", backend="replay", strategy="exhaustive",
                   settings={})
    for a in F:
        for b in G:
            for c in range(8):
                config = {"a": a, "b": b, "c": c}
                time = 1e-3 * F[a] * G[b] * math.exp(rng.normal(0, NOISE))
                store.record("law", config_key(config), config, "ok", time, [time], bound=None)
    store.record("law", "failed", {"a": 1, "b": "x", "c": 99}, "compile", message="did not compile")
    store.close()


def test_the_shares_recover_a_known_law(tmp_path):
    _law_store(tmp_path / "law.db")
    analysis = analyze(str(tmp_path / "law.db"))
    log_f, log_g = np.log(list(F.values())), np.log(list(G.values()))
    total = log_f.var() + log_g.var() + NOISE ** 2
    shares = analysis.shares
    assert shares.single["a"] == pytest.approx(log_f.var() / total, abs=TOLERANCE)
    assert shares.single["b"] == pytest.approx(log_g.var() / total, abs=TOLERANCE)
    assert shares.single["c"] == pytest.approx(0.0, abs=TOLERANCE)
    assert all(value == pytest.approx(0.0, abs=TOLERANCE) for value in shares.pairs.values())
    assert shares.rest == pytest.approx(0.0, abs=TOLERANCE)
    best = {entry["parameter"]: entry["best_value"] for entry in shares.best_values}
    assert best["a"] == 8 and best["b"] == "x"  # min f at a=8, min g at b="x"
    assert analysis.measurements.failed == 1 and len(analysis.measurements.configs) == 96


def test_the_command_writes_the_figures_the_report_and_the_json(tmp_path, capsys):
    _law_store(tmp_path / "law.db")
    out = tmp_path / "out"
    assert main(["analyze", str(tmp_path / "law.db"), "-o", str(out), "--json"]) == 0
    text = capsys.readouterr().out
    record = json.loads(text.strip().splitlines()[-1])
    assert "share of the variance of log(time)" in text and "best value of each parameter" in text
    assert set(record["files"]) >= {"hull_parameters", "metric_clusters", "parameter_shares", "report"}
    for path in record["files"].values():
        assert os.path.getsize(path) > 1000
    assert record["measured"] == 96 and record["parameter_shares"]["parameters"]["a"] > 0.5
    assert record["best"]["config"]["a"] == 8
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(record["files"]) - 1 and "http" not in html


# -- bad input: one clear line -------------------------------------------------------------------
def test_bad_input_is_one_clear_line(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    empty = tmp_path / "empty.db"
    store = Store(str(empty))
    store.open_run("r1", space="s", device="h100", backend="replay", strategy="exhaustive", settings={})
    store.record("r1", "k", {"a": 1}, "compile", message="no")
    store.close()
    failing = tmp_path / "failing.json"
    failing.write_text(json.dumps({"tune_params_keys": ["a"], "tune_params": {"a": [1]},
                                   "cache": {"1": {"a": 1, "time": "CompilationFailedConfig"}}}))
    cases = [([str(text)], "not a beastgen results store (SQLite) nor a Kernel Tuner cache file"),
             ([str(tmp_path / "missing.db")], "no such file"),
             ([str(empty)], "holds no successful measurement (1 failed)"),
             ([str(empty), "--run", "nope"], "no run 'nope' in the results store; it holds r1"),
             ([str(failing)], "the cache file holds no successful measurement (1 failed)"),
             ([str(failing), "--run", "x"], "--run chooses a run of a results store")]
    for argv, message in cases:
        assert main(["analyze", *argv, "-o", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


# -- real measurements ---------------------------------------------------------------------------
def _check(analysis, files, space_given: bool):
    found = analysis.measurements
    assert len(found.configs) > 1000
    for name, hull in analysis.hulls.items():
        assert hull.vertices, name
        top = max(hull.vertices, key=lambda i: analysis.performance[i])
        assert analysis.performance[top] == pytest.approx(analysis.performance.max()) or \
            not np.isfinite([a for a in analysis.axes if a.name == name][0].values[analysis.best])
    assert {"hull_parameters", "metric_clusters", "parameter_shares", "parameter_values"} <= set(files)
    assert analysis.metric_clusters is not None and analysis.families is not None
    assert max(analysis.shares.single.values()) > 0.05
    if space_given:
        assert any(axis.kind in ("bound term", "derived", "launch", "resource") for axis in analysis.axes)


def test_a_replay_file_with_its_space_in_a_real_browser(tmp_path):
    replay = os.path.join(DATA, "replay", "gemm_clblast_rtx_titan.json.gz")
    analysis = analyze(replay, space=SPACES["gemm_clblast"], generated_dir=str(tmp_path / "gen"))
    files, report = write_report(analysis, str(tmp_path / "out"))
    _check(analysis, files, space_given=True)
    kinds = {axis.name: axis.kind for axis in analysis.axes}
    assert kinds["issue_time"] == "bound term" and kinds["occupancy"] == "resource"
    assert kinds["shared memory per block"] == "resource" and kinds["threads per block"] == "launch"
    occupancy = [a for a in analysis.axes if a.name == "occupancy"][0].values
    assert np.nanmin(occupancy) > 0 and np.nanmax(occupancy) <= 1
    assert "hull_metrics" in files and "hull_derived" in files
    _open_in_browser(report, len(files))


def _open_in_browser(report: str, figures: int) -> None:
    """Open the report in headless Chromium: every figure loads, no console error."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver_path = shutil.which("chromedriver")
    if not (chromium and driver_path):
        pytest.skip("no Chromium and chromedriver here (apt-get install chromium chromium-driver; "
                    ".ci/run installs them as root)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the [dev] extra")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage",
                 f"--user-data-dir={os.path.join(os.path.dirname(report), 'chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    from selenium.webdriver.chrome.service import Service
    browser = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        browser.get("file://" + os.path.abspath(report))
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt]);")
        errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        title = browser.title
    finally:
        browser.quit()
    assert len(images) == figures and all(done and width > 0 for done, width, _ in images), images
    assert errors == [] and "beastgen analyze" in title


#: the default run's replay files: each kernel on one GPU, and the GPU with no built-in profile; the
#: others are the test's full size (marked ``full``: ``python -m pytest -m full``)
FIRST_REPLAYS = {"convolution_milo_a100.json.gz", "dedispersion_milo_a100.json.gz",
                 "gemm_clblast_rtx_titan.json.gz", "gemm_clblast_rtx_3060_laptop.json.gz"}


@pytest.mark.slow
@pytest.mark.parametrize("replay", [
    path if os.path.basename(path) in FIRST_REPLAYS else pytest.param(path, marks=pytest.mark.full)
    for path in REPLAYS], ids=os.path.basename)
def test_every_replay_file(tmp_path, replay):
    """Each replay file on its own, then with its space (bound terms where the space has them)."""
    alone = analyze(replay)
    files, _ = write_report(alone, str(tmp_path / "alone"))
    _check(alone, files, space_given=False)
    assert any("need the space" in note for note in alone.notes)
    space = _space_of(replay)
    if "rtx_3060_laptop" in replay:  # no built-in profile, and the space's bound terms read one
        with pytest.raises(BeastError, match="no built-in profile matches the replay's device"):
            analyze(replay, space=space, generated_dir=str(tmp_path / "gen"))
        return
    with_space = analyze(replay, space=space, generated_dir=str(tmp_path / "gen"))
    files, _ = write_report(with_space, str(tmp_path / "space"))
    _check(with_space, files, space_given=space.endswith(".py"))
    if space.endswith(".json"):  # a T1 space: only which configurations are valid
        assert any("declares none" in note for note in with_space.notes)


def _opencl_available():
    try:
        from beastgen.devices.opencl import list_devices
        return bool(list_devices())
    except Exception:  # noqa: BLE001 - no pyopencl or no platform
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _opencl_available(), reason="no OpenCL device (apt-get install pocl-opencl-icd)")
def test_a_pocl_tune(tmp_path, capsys):
    """A real tune on PoCL (tests/harness_spaces/chain.py: a bound term, a kernel's work-group),
    then its analysis with the space: the device profile read from the OpenCL device again."""
    from beastgen.harness import tune
    space = os.path.join(REPO, "tests", "harness_spaces", "chain.py")
    store = str(tmp_path / "run.db")
    result = tune(space, device="opencl:0", strategy="exhaustive", results=store,
                  generated_dir=str(tmp_path / "gen"), progress=False, log=lambda message: None)
    assert result.ran_now == 9
    assert main(["analyze", store, "--space", space, "--generated-dir", str(tmp_path / "gen"),
                 "-o", str(tmp_path / "out"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["measured"] == 9 and record["metrics"]["chain_time"]["kind"] == "bound term"
    assert record["metrics"]["threads per block"]["kind"] == "launch"
    assert record["parameter_shares"]["parameters"]["work"] > 0.5  # the chain's length is the time
    assert record["best"]["config"]["work"] == 1
    _open_in_browser(record["files"]["report"], len(record["files"]) - 1)


def test_a_cache_file_s_recorded_metrics_and_gflops(tmp_path):
    """Kernel Tuner's own metrics in a cache file (GFLOP/s, registers) are metrics, GFLOP/s the
    performance."""
    with gzip.open(os.path.join(DATA, "replay", "convolution_milo_a100.json.gz"), "rt") as f:
        data = json.load(f)
    for key, record in list(data["cache"].items())[:600]:
        if isinstance(record["time"], float):
            record["GFLOP/s"] = 4096 * 4096 * 15 * 15 * 2 / (record["time"] / 1e3) / 1e9
            record["registers"] = 32 + record["tile_size_x"] * record["tile_size_y"]
    small = {**data, "cache": dict(list(data["cache"].items())[:600])}
    path = tmp_path / "small.json"
    path.write_text(json.dumps(small))
    analysis = analyze(str(path))
    assert analysis.performance_axis == "GFLOP/s"
    fastest = analysis.best
    assert analysis.performance[fastest] == pytest.approx(np.nanmax(analysis.performance))
    assert {axis.name: axis.unit for axis in analysis.axes}["registers"] == "registers per thread"
