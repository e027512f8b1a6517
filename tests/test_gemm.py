"""The flagship space: the expected counts of shared/spaces/gemm.md."""
import dataclasses

import numpy as np
import pytest

from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.compiler.runtime import enumerator
from beastgen.devices import load_profile


def test_h100_single_nn_count(gemm_h100):
    assert gemm_h100.count() == 459_316


@pytest.mark.parametrize("device, settings, expected", [
    ("v100", dict(precision="d", trans_a=0, trans_b=1), 83_032),
    ("c2050", dict(precision="z", trans_a=0, trans_b=0), 0),
])
def test_expected_counts(gemm_space, generated_dir, device, settings, expected):
    plan = gemm_space.specialize(device=device, generated_dir=generated_dir, **settings)
    assert plan.count() == expected


def test_c2050_empty_names_the_register_filter(gemm_space, generated_dir):
    plan = gemm_space.specialize(device="c2050", precision="z", generated_dir=generated_dir)
    assert "over_max_regs" in plan.why_empty()


def test_stats(gemm_h100):
    stats = gemm_h100.stats()
    assert stats.count == 459_316
    levels = dict(stats.levels)
    # over_max_threads ends dim_n's loop at the first dim_n past 1024 threads (loop-ending filters)
    assert levels["dim_m"] == 1024 and levels["dim_n"] == sum(min(1024, 1024 // m + 1) for m in range(1, 1025))
    assert levels[gemm_h100.plan.order[-1]] == 459_316  # the innermost level only sees survivors
    # the thread filter rejects every (dim_m, dim_n) pair past 1024 threads, those it left counted
    assert stats.rejections["over_max_threads"] == sum(
        1 for m in range(1, 1025) for n in range(1, 1025) if m * n > 1024)
    # a_shape solved: blk_m_a visits only divisors of threads whose blk_n_a lies in its range and
    # that pass a_incongruent's divisibility, the others counted as those filters' rejections
    assert stats.rejections["a_shape"] == 24_207_307 and levels["blk_m_a"] == 130_360
    assert stats.rejections["a_incongruent"] == 1_752_842 and stats.rejections["b_incongruent"] == 458_948
    assert stats.rejections["b_shape"] == 2_741_382  # a walk of every value: the same
    assert sum(levels.values()) == 2_362_208
    assert not stats.errors


def test_enumerate_matches_count_and_filters(gemm_h100):
    configs = gemm_h100.enumerate()
    assert len(configs) == 459_316
    assert list(configs.dtype.names) == gemm_h100.columns
    threads = configs["dim_m"] * configs["dim_n"]
    assert np.all(threads <= 1024) and np.all(threads % 32 == 0)
    assert np.all(configs["blk_m_a"] * configs["blk_n_a"] == threads)
    assert len(np.unique(configs)) == len(configs)


def test_threads_enumerate_the_same_rows_in_order(gemm_h100, monkeypatch):
    """jobs=2: split nodes shared by two threads give the same array as one thread."""
    whole = gemm_h100.enumerate()
    assert np.array_equal(gemm_h100.enumerate(jobs=2), whole)
    if gemm_h100.native is not None:  # buffers too small: they grow, the node in progress redone
        monkeypatch.setattr(enumerator, "_FIRST_BUFFER_BYTES", 4096)
        gemm_h100.enumerator.rows_hint = 0
        assert np.array_equal(gemm_h100.enumerate(jobs=2), whole)
    assert gemm_h100.count(jobs=3) == len(whole)
    # chunks of split nodes partition the space, in walk order
    nodes = len(gemm_h100.split_census(samples_per_node=2))
    parts = [gemm_h100.enumerate(chunk=c) for c in [(0, 7), (7, nodes // 2), (nodes // 2, nodes)]]
    assert np.array_equal(np.concatenate(parts), whole)


def test_small_gemm_equals_reference(gemm_space, generated_dir):
    # a toy GPU (warps of 2 threads) keeps the naive reference, which tests everything innermost, fast
    settings = dict(precision="d", trans_a=1, trans_b=0, max_blk=6, max_blk_k=2)
    device = load_profile("k40")
    device = dataclasses.replace(device, key="toy", properties={
        **device.properties, "max_threads_dim_x": 8, "max_threads_dim_y": 8, "warp_size": 2,
        "max_threads_per_sm": 64, "max_threads_per_block": 16, "regs_per_sm": 2048})
    plan = gemm_space.specialize(device=device, generated_dir=generated_dir, **settings)
    got = {tuple(row) for row in plan.enumerate().tolist()}
    assert len(got) == plan.count() > 0
    reference = ReferenceEnumerator(gemm_space, device, settings)
    expected = {tuple(c[k] for k in plan.columns) for c in reference.configurations()}
    assert got == expected
