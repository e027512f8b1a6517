"""Hotspot (Rodinia thermal simulation with temporal tiling; "hotspot_milo"): a reference tuning
space of the auto-tuning community, transcribed from its T1 JSON
(shared/reference-spaces/hotspot.json).

Source: AutoTuningAssociation benchmark_hub (https://github.com/AutoTuningAssociation/benchmark_hub),
MIT licence.

10 tuning parameters (Cartesian size 4,440,000) and 4 conditions. Expected count: 82,984 valid
configurations (on any device: the space uses no device property; the JSON's limits, 1024 threads
and 49152 bytes of shared memory, are literals in its conditions and stay literals here).

Every tuning parameter is an iterator (even those with a single value), in the JSON's order and
with the JSON's names, so configurations match Kernel Tuner cache files. The value lists are the
JSON's Python expressions, verbatim. Each T1 Condition (valid when true) becomes a filter that
REJECTS when the condition is false: ``return not (<condition>)`` with the condition copied verbatim.
"""
import beastgen as beast

# -- tuning parameters (T1 order; value lists are the JSON's expressions) ------------------------
grid_width = beast.values([4096])
grid_height = beast.values([4096])
block_size_x = beast.values([1, 2, 4, 8, 16] + list(range(32, 1024 + 1, 32)))
block_size_y = beast.values([2**i for i in range(0, 6)])
tile_size_x = beast.values([i for i in range(1, 11)])
tile_size_y = beast.values([i for i in range(1, 11)])
temporal_tiling_factor = beast.values([i for i in range(1, 11)])
max_tfactor = beast.values([10])
loop_unroll_factor_t = beast.values([i for i in range(1, 10 + 1)])
sh_power = beast.values([0, 1])

# -- conditions (each filter REJECTS when the T1 condition is false) -------------------------------
@beast.filter
def too_few_threads():
    return not (block_size_x*block_size_y >= 32)

@beast.filter
def unroll_not_dividing_tfactor():
    return not (temporal_tiling_factor % loop_unroll_factor_t == 0)

@beast.filter
def too_many_threads():
    return not (block_size_x*block_size_y <= 1024)

@beast.filter
def over_shared_memory():
    return not ((block_size_x*tile_size_x + temporal_tiling_factor * 2)
                * (block_size_y*tile_size_y + temporal_tiling_factor * 2)
                * (2 + sh_power) * 4 <= 49152)
