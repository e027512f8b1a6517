"""Lower bounds: pruning never loses a configuration it should keep, rank is exact, the threshold is
a run-time argument, and the shipped GEMM model behaves."""
import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import beastgen
from beastgen.cli import main
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.support.units import Threshold, parse_threshold

from conftest import REPLAY
from property_sizes import examples

# -- random spaces with random bound terms ------------------------------------------------------
TERMS = [
    "beast.bound(a * b / 7)",
    "beast.bound(10 / (a - 2))",             # raises at a == 2: bounds nothing there
    "beast.bound(beast.max(a, c) * 0.5)",
    "beast.bound((b % 3) * 1.5 + c)",
    "beast.bound(3.0)",                      # a constant term
]
FUNCTION_TERM = """
@beast.bound
def fbound():
    if c > 1:
        return a / c + b
    return 2.0 * b
"""


def bounded_space(a: str, b: str, c_values: list, odd: str, terms: list, function_term: str | None) -> str:
    """A space file of iterators ``a``, ``b`` (their domains) and ``c`` (``c_values``), the filter
    ``odd``, the bound ``terms`` (t0, t1...) and a bound function when ``function_term`` is given."""
    text = ["import beastgen as beast", f"a = {a}", f"b = {b}",
            f"c = beast.values({', '.join(map(str, c_values))})", f"odd = beast.filter({odd})"]
    text += [f"t{i} = {term}" for i, term in enumerate(terms)]
    if function_term:
        text.append(function_term)
    return "\n".join(text) + "\n"


@st.composite
def bounded_spaces(draw):
    n = draw(st.integers(3, 7))
    terms = draw(st.lists(st.sampled_from(TERMS), min_size=1, max_size=3, unique=True))
    c_values = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True))
    modulus = draw(st.integers(2, 5))
    return bounded_space(f"beast.range(1, {n})", "beast.range(a, 3 * a + 2, a)", c_values,
                         f"(a + b + c) % {modulus} == 0", terms, FUNCTION_TERM if draw(st.booleans()) else None)


@settings(max_examples=examples(12), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=bounded_spaces(), k=st.integers(1, 6))
def test_pruning_and_rank_agree_with_the_reference(text, k, tmp_path_factory):
    directory = tmp_path_factory.mktemp("bounded")
    path = directory / "space.py"
    path.write_text(text)
    space = beastgen.load(str(path))
    plan = space.specialize(generated_dir=str(directory))
    reference = ReferenceEnumerator(space, None, {})
    bounds = sorted(reference.bound(c)[0] for c in reference.configurations())
    exhaustive = plan.count()
    assert exhaustive == len(bounds)
    assert plan.count(math.inf) == exhaustive
    previous = exhaustive
    for threshold in sorted(set(bounds[::3] + [0.0, 2.5, 1e9]), reverse=True):
        pruned = plan.count(threshold)
        assert pruned == sum(1 for b in bounds if b <= threshold)
        assert pruned <= previous
        previous = pruned
        comparison = plan.compare(Threshold(seconds=threshold))
        assert comparison.bound_pruned_innermost == pruned == comparison.bound_pruned
        assert sum(lv.configurations_removed for lv in comparison.levels) == exhaustive - pruned
    ranked = plan.rank(k)
    assert list(ranked["bound"]) == pytest.approx(bounds[:k], rel=1e-12)
    for row in ranked:  # each reported bound is the reference's bound of that configuration
        config = {name: row[name].item() for name in plan.columns}
        bound, term = reference.bound(config)
        assert row["bound"] == pytest.approx(bound, rel=1e-12) and row["bottleneck"] == term


# -- bound values and thresholds below zero ---------------------------------------------------------
SIGNED_TERMS = [
    "beast.bound(10 / (a - 2))",             # negative for a < 2, raises (0.0) at a == 2
    "beast.bound(b - 2.5 * a)",
    "beast.bound(c - 3.0)",
    "beast.bound(-1.5)",                     # a negative constant term
    "beast.bound(0.0)",
]
SIGNED_FUNCTION_TERM = """
@beast.bound
def fsigned():
    if c > 1:
        return a - b
    return -2.0 * c
"""


@st.composite
def signed_bounded_spaces(draw):
    n = draw(st.integers(3, 7))
    c_values = draw(st.lists(st.integers(-2, 4), min_size=1, max_size=3, unique=True))
    modulus = draw(st.integers(2, 4))
    terms = draw(st.lists(st.sampled_from(SIGNED_TERMS), min_size=1, max_size=3, unique=True))
    return bounded_space(f"beast.range(0, {n})", "beast.range(0, a + 3)", c_values, f"(a + b + c) % {modulus} != 1",
                         terms, SIGNED_FUNCTION_TERM if draw(st.booleans()) else None)


@settings(max_examples=examples(6), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=signed_bounded_spaces(), drawn=st.lists(st.floats(-20, 0), max_size=3))
def test_negative_and_zero_thresholds_and_bounds_agree_with_the_reference(text, drawn, tmp_path_factory):
    """Bound values below zero (a valid, if useless, lower bound on a time) and thresholds at or
    below zero: the compiled pruned count, compare (hoisted and innermost), rank, rank_all (NumPy's
    where it computes the terms) and the reference agree; a factor of a negative best bound is
    refused naming the term."""
    directory = tmp_path_factory.mktemp("signed")
    (directory / "space.py").write_text(text)
    space = beastgen.load(str(directory / "space.py"))
    plan = space.specialize(generated_dir=str(directory))
    reference = ReferenceEnumerator(space, None, {})
    bounds = sorted(reference.bound(c)[0] for c in reference.configurations())
    exhaustive = plan.count()
    assert exhaustive == len(bounds)
    if not bounds:
        return
    assert list(plan.rank_all()["bound"]) == pytest.approx(bounds, rel=1e-12)
    distinct = sorted(set(bounds))
    between = [(low + high) / 2 for low, high in zip(distinct, distinct[1:])]
    for threshold in sorted({0.0, -0.0, distinct[0] - 1.0, *distinct[::2], *between[::3], *drawn}):
        kept = sum(1 for b in bounds if b <= threshold)
        assert plan.count(threshold) == kept, threshold
        comparison = plan.compare(Threshold(seconds=threshold))
        assert comparison.bound_pruned == comparison.bound_pruned_innermost == kept, threshold
        assert sum(lv.configurations_removed for lv in comparison.levels) == exhaustive - kept
        assert list(plan.rank(exhaustive + 1, threshold)["bound"]) == pytest.approx(bounds[:kept], rel=1e-12)
    if bounds[0] < 0:
        with pytest.raises(beastgen.BeastError, match="below zero.*give the threshold as a time"):
            plan.compare(Threshold(factor=1.5))
    else:
        assert plan.compare(Threshold(factor=1.5)).bound_pruned == sum(1 for b in bounds if b <= 1.5 * bounds[0])


@pytest.mark.parametrize("terms", [TERMS, TERMS[:2] + [FUNCTION_TERM]], ids=["numpy", "python-function"])
def test_rank_all_and_bounds_of_are_ranks(terms, tmp_path):
    """Every configuration at once (NumPy over the terms, or rank where a term is a Python function),
    and the bounds of some configurations alone, exactly as rank gives them."""
    text = ["import beastgen as beast", "a = beast.range(1, 7)", "b = beast.range(a, 3 * a + 2, a)",
            "c = beast.values(0, 2, 3)", "odd = beast.filter((a + b + c) % 3 == 0)"]
    text += [term if term.startswith("\n") else f"t{i} = {term}" for i, term in enumerate(terms)]
    (tmp_path / "space.py").write_text("\n".join(text) + "\n")
    plan = beastgen.load(str(tmp_path / "space.py")).specialize(generated_dir=str(tmp_path))
    exhaustive = plan.count()
    every, ranked = plan.rank_all(), plan.rank(exhaustive + 1)
    assert list(every.dtype.names) == list(ranked.dtype.names) and len(every) == exhaustive > 10
    for name in plan.columns + ["bottleneck"]:
        assert list(every[name]) == list(ranked[name])
    assert list(every["bound"]) == pytest.approx(list(ranked["bound"]), rel=1e-12)
    some = ranked[::2]
    bounds, which = plan.bounds_of(some)
    assert list(bounds) == pytest.approx(list(some["bound"]), rel=1e-12)
    assert [plan.bound_terms[t] for t in which] == list(some["bottleneck"])


def test_bounds_of_measured_configurations_are_ranks(gemm_h100):
    """check-bounds computes the bounds of the measured configurations alone (NumPy over the GEMM
    model's expressions): the same as rank's, term for term."""
    top = gemm_h100.rank(3000)
    bounds, terms = gemm_h100.bounds_of(top[::-1])
    assert list(bounds) == pytest.approx(list(top["bound"][::-1]), rel=1e-12)
    assert [gemm_h100.bound_terms[t] for t in terms] == list(top["bottleneck"][::-1])


def test_threshold_is_a_runtime_argument(gemm_h100):
    gemm_h100.count(1.0)
    module = gemm_h100.module
    signatures = len(module.count_pruned.signatures)
    source = gemm_h100.source
    assert gemm_h100.count(0.0021) < gemm_h100.count(1.0) == 459_316
    assert len(module.count_pruned.signatures) == signatures and gemm_h100.source == source


def test_parse_threshold():
    assert parse_threshold("1.5ms").seconds == pytest.approx(1.5e-3)
    assert parse_threshold("250us").seconds == pytest.approx(250e-6)
    assert parse_threshold("0.002").seconds == pytest.approx(0.002)
    assert parse_threshold("2x").factor == 2.0 and parse_threshold("2x").resolve(1.5) == 3.0
    assert parse_threshold("inf").seconds == math.inf
    with pytest.raises(beastgen.BeastError):
        parse_threshold("fast")
    with pytest.raises(beastgen.BeastError):
        parse_threshold("0.5x")
    with pytest.raises(beastgen.BeastError, match="'-1ms' is negative"):
        parse_threshold("-1ms")


def test_gemm_model_terms_and_rank(gemm_h100):
    spec = gemm_h100.specialized
    assert set(spec.bound_terms) == {"compute_time", "fma_time", "issue_time", "lsu_time", "wave_time",
                                     "dram_time", "launch_time"}
    assert spec.constants["compute_time"] == pytest.approx(2 * 4096 ** 3 / 66.90816e12)
    top = gemm_h100.rank(3)
    assert len(top) == 3 and np.all(np.diff(top["bound"]) >= 0)
    assert top["bound"][0] >= spec.constants["compute_time"]
    # the terms are hoisted to the loops that bind their last dependency
    levels = {item.name: gemm_h100.plan.level_of(item.name) for item in gemm_h100.plan.bounds}
    assert levels["fma_time"] == gemm_h100.plan.order.index("blk_n")
    assert levels["issue_time"] == levels["lsu_time"] == levels["wave_time"] == gemm_h100.plan.order.index("blk_k")


def test_flagship_bound_prunes_at_1_5x(gemm_h100):
    comparison = gemm_h100.compare(parse_threshold("1.5x"))
    assert comparison.exhaustive == 459_316
    assert comparison.bound_pruned == comparison.bound_pruned_innermost < 0.5 * comparison.exhaustive


def test_compare_cli_prints_table_json_and_plot(gemm_space, generated_dir, tmp_path, capsys):
    plot = tmp_path / "cuts.png"
    assert main(["compare", gemm_space.path, "--device", "h100", "--threshold", "1.05x",
                 "--generated-dir", generated_dir, "--json", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    import json
    record = json.loads(out.strip().splitlines()[-1])
    assert record["exhaustive"] == 459_316
    assert record["bound_pruned"] == record["bound_pruned_without_hoisting"] < 459_316
    assert record["threshold_seconds"] == pytest.approx(1.05 * record["best_bound_seconds"])
    assert len(record["levels"]) == 12 and "subtrees cut" in out
    assert plot.stat().st_size > 10_000


def test_space_without_bounds_says_so(write_space):
    plan = beastgen.load(write_space("import beastgen as beast\nx = beast.range(3)\n")).specialize()
    with pytest.raises(beastgen.BeastError, match="declares no bound terms"):
        plan.rank(3)


@pytest.mark.slow
def test_clblast_model_never_exceeds_the_titan_rtx_measurements(generated_dir, tmp_path, capsys):
    from beastgen.harness.recorded import check_bounds, load_replay

    replay = load_replay(REPLAY)
    assert len(replay.times) == 17_956 and min(replay.times.values()) == pytest.approx(11.466e-3, rel=1e-4)
    space = beastgen.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                       "spaces", "gemm_clblast.py"))
    plan = space.specialize(device="titanrtx", generated_dir=generated_dir)
    check = check_bounds(plan, replay)
    assert check.violations == []  # against the mean time of each configuration
    assert check.fastest_violations == []  # and against its fastest repetition
    assert all(replay.fastest[key] <= replay.times[key] for key in replay.times)
    assert sum(check.dominates.values()) == check.matched
    assert set(check.dominates) == {"fma_time", "issue_time", "lsu_time", "wave_time", "dram_time",
                                    "launch_time"}
    assert 1 < check.ratio_quantiles["min"] <= check.ratio_quantiles["p5"] <= check.ratio_quantiles["median"]
    assert check.below_best < check.matched  # the bound proves some configurations not worth running
    assert check.matched == check.space_rows == 17_956 - check.not_in_space
    assert check.not_in_space == 484  # the T1 space excludes MWG=NWG=128 with 8x8 threads; the replay has them
    assert check.best_time == pytest.approx(11.466e-3, rel=1e-4)
    assert 0 < check.evaluated <= check.matched
    plot = tmp_path / "terms.png"
    assert main(["check-bounds", space.path, "--device", "titanrtx", "--replay", REPLAY,
                 "--generated-dir", generated_dir, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "no bound exceeds its measured time" in out and "no bound exceeds its fastest repetition" in out
    assert "lsu_time: dominates" in out and "real/bound: min" in out
    assert plot.stat().st_size > 10_000


def test_a_violation_names_its_term_and_the_hardware_facts_it_read(generated_dir, tmp_path, capsys):
    """A Titan RTX profile whose DRAM is 100x too slow makes dram_time exceed real times: check-bounds
    names the term, its source and the profile values it read (dram_bandwidth among them)."""
    profile = tmp_path / "slow_dram.toml"
    profile.write_text('base = "titanrtx"\ndram_bandwidth = 6.72e9\n')
    space = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spaces",
                         "gemm_clblast.py")
    assert main(["check-bounds", space, "--device", str(profile), "--replay", REPLAY,
                 "--generated-dir", generated_dir, "--json"]) == 1
    out = capsys.readouterr().out
    record = json.loads(out.strip().splitlines()[-1])
    assert record["violations"] and {v["bottleneck"] for v in record["violations"]} == {"dram_time"}
    assert record["facts"]["dram_time"] == {"dram_bandwidth": 6.72e9, "l2_size": 6291456}
    assert record["facts"]["launch_time"] == {"launch_overhead": 1e-6}
    assert ("violated term dram_time [compulsory traffic] reads dram_bandwidth = 6.72e+09, "
            "l2_size = 6291456") in out


def test_replay_file_errors(tmp_path):
    from beastgen.harness.recorded import load_replay

    with pytest.raises(beastgen.BeastError, match="cannot read replay file"):
        load_replay(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(beastgen.BeastError, match="not a Kernel Tuner cache file"):
        load_replay(str(bad))
