"""Dedispersion (radio astronomy; "dedispersion_milo"): a reference tuning space of the auto-tuning
community, transcribed from its T1 JSON (shared/reference-spaces/dedispersion.json).

Source: AutoTuningAssociation benchmark_hub (https://github.com/AutoTuningAssociation/benchmark_hub),
MIT licence.

8 tuning parameters (Cartesian size 22,272) and 3 conditions. Expected count: 11,130 valid
configurations (on any device: the space uses no device property).

Every tuning parameter is an iterator (even those with a single value), in the JSON's order and
with the JSON's names, so configurations match Kernel Tuner cache files. Each T1 Condition (valid
when true) becomes a filter that REJECTS when the condition is false: ``return not (<condition>)``
with the condition copied verbatim (Python semantics: chained comparisons, short-circuit or).
"""
import beastgen as beast

# -- tuning parameters (T1 order) ----------------------------------------------------------------
block_size_x = beast.values(1, 2, 4, 8, 16, 32)
block_size_y = beast.values([32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152,
                             160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256])
block_size_z = beast.values(1)
tile_size_x = beast.values(1, 2, 3, 4)
tile_size_y = beast.values(1, 2, 3, 4, 5, 6, 7, 8)
tile_stride_x = beast.values(0, 1)
tile_stride_y = beast.values(0, 1)
loop_unroll_factor_channel = beast.values(0)

# -- conditions (each filter REJECTS when the T1 condition is false) -------------------------------
@beast.filter
def threads_out_of_range():
    return not (32 <= block_size_x * block_size_y <= 1024)

@beast.filter
def stride_x_without_tile():
    return not (tile_size_x > 1 or tile_stride_x == 0)

@beast.filter
def stride_y_without_tile():
    return not (tile_size_y > 1 or tile_stride_y == 0)
