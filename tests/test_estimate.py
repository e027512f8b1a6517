"""Size estimation brackets exact counts: Knuth's estimator (random descents, the generated
``probe``) and Chen's heuristic sampling (stratified runs, the generated ``chen``)."""
import os

import pytest
from hypothesis import given, note, settings

import beastgen
from beastgen.cli import main
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.compiler.runtime import compile_space

from conftest import REPO
from space_generators import spaces
from property_sizes import examples
from test_properties import CI, DEVICE, write_space

GEMM_H100 = 459_316

HUGE = """\
import beastgen as beast
a = beast.range(1, 33)
b = beast.range(1, 33)
c = beast.range(1, 33)
d = beast.range(1, 33)
e = beast.range(1, 33)
f = beast.range(1, 33)
g = beast.range(1, 33)
h = beast.range(1, 33)
i = beast.range(1, 33)
j = beast.range(1, 33)
k = beast.range(1, 33)
odd_pair = beast.filter((a + b) % 2 == 1)
big = beast.filter(c * d > 600)
"""
HUGE_EXACT = 32 ** 11 // 2 * sum(1 for c in range(1, 33) for d in range(1, 33) if c * d <= 600) // 1024

# strata that mix subtrees of different sizes: a (3 values) has 5 b's passing whatever its value,
# and how many c's pass depends on a and b, not on how many b's passed
MIXED = """\
import beastgen as beast
a = beast.range(1, 4)
b = beast.range(0, 10)
c = beast.range(0, 12)
odd = beast.filter(b % 2 == 1)
sparse = beast.filter((a * b + c) % (a + 2) != 0)
"""

# solved levels (an equality filter solved instead of looped): one above every loop (z), two in a
# row below a scanned level (b then c); and string values (s)
SOLVED = """\
import beastgen as beast
z = beast.range(0, 10)
a = beast.range(1, 7)
b = beast.range(0, 13)
c = beast.range(0, 20)
s = beast.values('x', 'y', 'z')
d = beast.range(0, 5)
e = beast.range(0, 8)
fixed = beast.filter(z != 4)
pair = beast.filter(a * b != 12)
chain = beast.filter(c != b + 3)
odd = beast.filter((s == 'y') & (d > a % 3))
mix = beast.filter((d + e + a) % (c % 4 + 2) == 0)
"""


@pytest.fixture(scope="module")
def spaces_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("estimate")


def _plan(directory, text, name, generated_dir):
    path = directory / f"{name}.py"
    path.write_text(text)
    return beastgen.load(str(path)).specialize(generated_dir=generated_dir)


@pytest.fixture(scope="module")
def huge(spaces_dir, generated_dir):
    return _plan(spaces_dir, HUGE, "huge", generated_dir)


@pytest.fixture(scope="module")
def mixed(spaces_dir, generated_dir):
    return _plan(spaces_dir, MIXED, "mixed", generated_dir)


def test_estimate_answers_for_a_space_of_ten_to_the_sixteen(huge, capsys):
    assert HUGE_EXACT > 10 ** 15
    estimate = huge.estimate(20_000, seed=1, method="knuth")
    assert estimate.method == "knuth"
    assert _within_three_standard_errors(estimate, HUGE_EXACT)
    assert estimate.high - estimate.low < 0.05 * HUGE_EXACT
    assert main(["estimate", huge.specialized.space.path, "--method", "knuth", "--samples", "5000",
                 "--generated-dir", os.path.dirname(huge.path)]) == 0
    assert "5,000 random descents" in capsys.readouterr().out


def test_chen_answers_for_a_space_of_ten_to_the_sixteen(huge, capsys):
    """Every stratum of this space holds subtrees of one size, so each run is exact. Chen is the
    default method."""
    estimate = huge.estimate(200, seed=1, method="chen")
    assert estimate.method == "chen" and estimate.samples == 200
    assert estimate.low <= HUGE_EXACT <= estimate.high
    assert estimate.count == pytest.approx(HUGE_EXACT, rel=1e-12)
    assert estimate.seconds < 2
    assert main(["estimate", huge.specialized.space.path, "--samples", "50", "--json",
                 "--generated-dir", os.path.dirname(huge.path)]) == 0
    out = capsys.readouterr().out
    assert "50 runs of Chen's heuristic sampling" in out and '"method": "chen"' in out


@pytest.mark.parametrize("space", ["reduction", "conv2d"])
@pytest.mark.parametrize("method, samples", [("knuth", 50_000), ("chen", 3_000)])
def test_estimate_brackets_the_exact_count(space, method, samples, generated_dir):
    plan = beastgen.load(os.path.join(REPO, "spaces", f"{space}.py")).specialize(generated_dir=generated_dir)
    exact = plan.count()
    estimate = plan.estimate(samples, seed=3, method=method)
    assert _within_three_standard_errors(estimate, exact)


def test_chen_brackets_the_gemm_count(gemm_h100):
    """Most runs die before a leaf on gemm (the one-step lookahead cannot see the shape filters
    deep in the nest), so the runs' distribution is skewed: three standard errors, not 1.96."""
    estimate = gemm_h100.estimate(10_000, seed=0)
    assert estimate.method == "chen"
    assert _within_three_standard_errors(estimate, GEMM_H100)
    assert estimate.high - estimate.low < 0.6 * GEMM_H100


def test_chen_is_unbiased_where_strata_mix_subtree_sizes(mixed):
    exact = mixed.count()
    few = mixed.estimate(20, seed=5, method="chen")
    assert few.high - few.low > 0.01 * exact  # the runs do vary: strata mix subtree sizes
    estimate = mixed.estimate(20_000, seed=5, method="chen")
    assert abs(estimate.count - exact) < 0.01 * exact
    assert _within_three_standard_errors(estimate, exact)


def test_chen_through_solved_levels_and_strings(spaces_dir, generated_dir):
    plan = _plan(spaces_dir, SOLVED, "solved", generated_dir)
    assert [(level.iterator.name, bool(level.solved)) for level in plan.plan.levels][:4] == [
        ("z", True), ("a", False), ("b", True), ("c", True)]
    exact = ReferenceEnumerator(plan.specialized.space).count()
    assert plan.count() == exact == 347
    estimate = plan.estimate(20_000, seed=2, method="chen")
    assert estimate.high - estimate.low > 0
    assert _within_three_standard_errors(estimate, exact)
    # Knuth's descents and the split census look through consecutive solved levels too
    assert _within_three_standard_errors(plan.estimate(20_000, seed=2, method="knuth"), exact)
    census = plan.split_census(samples_per_node=200)
    assert sum(plan.count(chunk=(i, i + 1)) for i in range(len(census))) == exact
    assert abs(census.configurations.sum() - exact) < 0.25 * exact


def test_chen_defaults_and_errors(mixed):
    assert mixed.estimate(method="chen").samples == mixed.ESTIMATE_SAMPLES["chen"]
    with pytest.raises(beastgen.BeastError, match="unknown estimation method"):
        mixed.estimate(10, method="bogus")


@settings(CI, max_examples=examples(12))
@given(case=spaces(max_iterators=3))
def test_chen_within_its_interval_of_the_reference_count(spaces_dir, case):
    """On random small spaces, Chen's mean over many runs is within three standard errors of the
    reference enumerator's count (exactly 0 for an empty space: only valid leaves add weight)."""
    source, overrides, _ = case
    note(f"{source}\nsettings: {overrides}")
    directory = spaces_dir / f"p{len(list(spaces_dir.iterdir()))}"
    directory.mkdir()
    space = beastgen.load(str(write_space(directory, source)))
    exact = ReferenceEnumerator(space, DEVICE, dict(overrides)).count()
    plan = compile_space(space, DEVICE, dict(overrides), str(directory))
    estimate = plan.estimate(2_000, seed=7, method="chen")
    if exact == 0 or estimate.high == estimate.low:
        assert estimate.count == pytest.approx(exact, abs=1e-9)
    else:
        assert _within_three_standard_errors(estimate, exact)


def _within_three_standard_errors(estimate, exact):
    """The 95% interval is +-1.96 standard errors; a fixed seed misses it one time in twenty, but
    three standard errors only once in 370."""
    return abs(estimate.count - exact) <= 3 / 1.96 * (estimate.high - estimate.count) + 1e-9 * exact


def test_a_time_budget_counts_exactly_when_the_count_is_cheap(gemm_h100):
    """The default `beastgen estimate` (a time budget): gemm counts in well under it, so the answer
    is the exact count, an interval of one point."""
    estimate = gemm_h100.estimate(seconds=60.0)
    assert estimate.method == "exact" and estimate.samples == 0
    assert estimate.low == estimate.count == estimate.high == GEMM_H100


def test_a_spent_time_budget_samples(mixed):
    """No time to count: at least two runs, an interval around their mean."""
    estimate = mixed.estimate(seconds=0.0, seed=4)
    assert estimate.method == "chen" and estimate.samples >= 2
    assert estimate.low <= estimate.count <= estimate.high


WIDE = """\
import beastgen as beast
a = beast.range(1, 2001)
b = beast.range(1, 2001)
c = beast.range(1, 2001)
d = beast.range(1, 65)
rare = beast.filter((a * b + c) % 7 == d % 7)
"""

NEEDLE = """\
import beastgen as beast
a = beast.range(0, 100000)
b = beast.range(0, 100000)
needle = beast.filter((a != 777) | (b != 999))
"""


def test_a_cold_estimate_counts_exactly(tmp_path):
    """Compiling (the census, the estimator) happens before the time budget starts: a fresh generated
    directory counts a small space exactly, as a warm one does (it used to answer 0 to 0)."""
    plan = _plan(tmp_path, MIXED, "cold", str(tmp_path / "fresh"))
    estimate = plan.estimate(seconds=1.5)
    assert estimate.method == "exact"
    assert estimate.count == plan.count()


def test_a_wide_space_skips_the_census_and_samples(spaces_dir, generated_dir):
    """4,000,000 split nodes: their census would take minutes, so the budgeted estimate samples
    (at least ESTIMATE_MIN_SAMPLES runs) instead of trying to count."""
    wide = _plan(spaces_dir, WIDE, "wide", generated_dir)
    assert wide.split_node_count() == 4_000_000
    estimate = wide.estimate(seconds=0.2, seed=1)
    assert estimate.method == "chen" and estimate.samples >= wide.ESTIMATE_MIN_SAMPLES
    assert _within_three_standard_errors(estimate, _wide_exact())


def _wide_exact() -> int:
    """WIDE's count in closed form: (a, b, c, d) is rejected when c = d - ab (mod 7)."""
    by_residue = [sum(1 for v in range(1, 2001) if v % 7 == r) for r in range(7)]
    pairs = [sum(by_residue[i] * by_residue[j] for i in range(7) for j in range(7) if i * j % 7 == r)
             for r in range(7)]
    return sum(pairs[r] * sum(2000 - by_residue[(d - r) % 7] for d in range(1, 65)) for r in range(7))


def test_an_estimate_that_reaches_nothing_says_so(spaces_dir, generated_dir, capsys):
    """Descents that all die give no interval of zero width: the report says no valid configuration
    was reached and points at count and --samples."""
    path = spaces_dir / "needle.py"
    path.write_text(NEEDLE)
    assert main(["estimate", str(path), "--method", "knuth", "--samples", "10",
                 "--generated-dir", generated_dir]) == 0
    out = capsys.readouterr().out
    assert "no valid configuration reached by 10 random descents" in out
    assert "interval" not in out
