"""The bound-term library: the closed form of shared-memory wavefronts against the lane-by-lane
simulator (never above it; equal on every access pattern of the shipped CLBlast model), fused load
counts, and the terms in a space file."""
import itertools

import pytest

import beastgen
from beastgen import bound_terms as bt


def _clblast_lane_runs(warp, index_of, dim_c, wi, vw, stride_mode):
    """Lane -> runs (start byte, bytes) of Xgemm's LocalToPrivate loads of one step k for warp
    ``warp``: vector _i of thread index id is vector (_i + id*(wi/vw)) (STRM=0) or (id + _i*dim_c)
    (STRM=1), of vw floats; id = index_of(thread) (local_id(0) for A, local_id(1) for B)."""
    lanes = []
    for lane in range(32):
        index = index_of(32 * warp + lane)
        vectors = [i + index * (wi // vw) if stride_mode == 0 else index + i * dim_c
                   for i in range(wi // vw)]
        lanes.append([(4 * vw * v, 4 * vw) for v in vectors])
    return lanes


@pytest.mark.parametrize("operand", ["A", "B"])
def test_closed_form_equals_the_simulator_on_the_clblast_patterns(operand):
    """Every (tile, MDIMC, NDIMC, vector width, stride mode) of spaces/gemm_clblast.py."""
    checked = 0
    for tile, mdimc, ndimc, vw, stride_mode in itertools.product(
            (16, 32, 64, 128), (8, 16, 32), (8, 16, 32), (1, 2, 4, 8), (0, 1)):
        dim_c = mdimc if operand == "A" else ndimc
        if tile % (dim_c * vw):
            continue
        wi = tile // dim_c
        run = (wi if stride_mode == 0 else vw) * 4
        runs = 1 if stride_mode == 0 else wi // vw
        # as in spaces/gemm_clblast.py: threads are numbered x first
        lanes = min(32, mdimc) if operand == "A" else max(1, 32 // mdimc)
        closed = runs * bt.warp_wavefronts(lanes, run, run, 32, 4)
        index_of = (lambda t: t % mdimc) if operand == "A" else (lambda t: t // mdimc)
        for warp in range(4):
            if 32 * warp >= mdimc * ndimc:
                break
            lane_runs = _clblast_lane_runs(warp, index_of, dim_c, wi, vw, stride_mode)
            assert bt.simulate_wavefronts(lane_runs) == closed, (tile, mdimc, ndimc, vw, stride_mode, warp)
        checked += 1
    assert checked > 50


def test_closed_form_never_exceeds_the_simulator():
    for lanes, stride, run, bank_bytes in itertools.product((1, 3, 8, 16, 32), (4, 8, 12, 20, 32, 36, 64, 132),
                                                            (4, 8, 12, 16, 24, 32, 64), (4, 8)):
        if run % bank_bytes:
            continue
        closed = bt.warp_wavefronts(lanes, stride, run, 32, bank_bytes)
        simulated = bt.simulate_wavefronts(bt.strided_access(lanes, stride, run), 32, bank_bytes)
        assert closed <= simulated, (lanes, stride, run, bank_bytes)
        if run == stride and (run <= 16 or run % 16 == 0):  # the patterns the shipped models use
            assert closed == simulated, (lanes, stride, run, bank_bytes)


def test_simulator_counts_bank_conflicts_and_fusion():
    # 32 lanes, one float each, 32 floats apart: all in bank 0
    assert bt.simulate_wavefronts(bt.strided_access(32, 128, 4)) == 32
    # contiguous floats: one wavefront; a broadcast too
    assert bt.simulate_wavefronts(bt.strided_access(32, 4, 4)) == 1
    assert bt.simulate_wavefronts(bt.strided_access(1, 4, 4)) == 1
    # a lane's 4 contiguous floats as 4 scalar loads fuse into one 16-byte load: 4 wavefronts, not 16
    scalar_loads = [[(16 * lane + 4 * e, 4) for e in range(4)] for lane in range(32)]
    assert bt.simulate_wavefronts(scalar_loads) == 4
    assert bt.fused_loads(16) == 1 and bt.fused_loads(64) == 4 and bt.fused_loads(4, runs=3) == 3


def test_terms_build_space_expressions(write_space):
    path = write_space("""
        import beastgen as beast
        bt = beast.bound_terms
        tile = beast.values(16, 32, 64)
        lanes = beast.values(8, 32)
        fma = beast.bound(bt.fma_time(bt.busiest_sm_blocks(4096 // tile) * tile * tile * 1000))
        lsu = beast.bound(bt.lsu_time(bt.warp_wavefronts(lanes, 4 * tile, 4 * tile)), source="test")
        launch = beast.bound(bt.launch_time())
    """)
    plan = beastgen.load(path).specialize(device="titanrtx")
    ranked = plan.rank(6)
    clock = 2100e6
    for row in ranked:
        tile, lanes = int(row["tile"]), int(row["lanes"])
        fma = -(-(4096 // tile) // 72) * tile * tile * 1000 / (64 * clock)
        lsu = -(-(lanes * tile) // 32) / clock
        assert row["bound"] == pytest.approx(max(fma, lsu, 1e-6))
    # the fma term reads only `tile`: it is placed at tile's level
    assert plan.plan.level_of("fma") == plan.plan.order.index("tile")
