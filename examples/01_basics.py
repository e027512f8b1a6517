"""Example 1: the basics of a beastgen space, on a tiled matrix transpose.

This file is both a space file (`beastgen.load("examples/01_basics.py")`, or the `beastgen` command
line) and a script: `python examples/01_basics.py` loads itself and counts its space.

The kernel transposes an M x N matrix through shared memory: each thread block copies one
`tile` x `tile` square into shared memory (optionally padded by one column to avoid shared-memory
bank conflicts) and writes it back transposed. The block has `block_x` x `block_y` threads, so each
thread moves (tile * tile) / (block_x * block_y) elements.

What it shows:
  * settings (problem inputs with defaults, overridable per run),
  * device properties (`beast.device.<name>`, the limits of the target GPU),
  * expression iterators (`beast.values`, `beast.range` with bounds that depend on other
    iterators),
  * derived expressions (plain arithmetic on space names, `beast.where`, `beast.min`),
  * expression filters, combined with `&` (and), `|` (or) and `~` (not).

A filter REJECTS a configuration when it is true.
"""
import os

import beastgen as beast

# -- settings: the problem. Override them with space.specialize(..., M=1000) ---------------------
M = beast.setting(8192)                               # rows of the matrix
N = beast.setting(8192)                               # columns of the matrix
precision = beast.setting('s', choices=['s', 'd'])    # float or double

# A derived expression of settings only is folded into a constant before any code is generated.
elem_bytes = beast.where(precision == 'd', 8, 4)

# -- device properties: the limits of the GPU chosen at specialization time ----------------------
max_threads_per_block = beast.device.max_threads_per_block
warp_size = beast.device.warp_size
max_shared_mem_per_block = beast.device.max_shared_mem_per_block

# -- iterators: the tuning parameters --------------------------------------------------------------
tile = beast.values(16, 32, 64)         # edge of the square tile staged in shared memory
block_x = beast.range(1, tile + 1)      # threads along x: 1..tile (the bound reads another iterator)
block_y = beast.range(1, tile + 1)      # threads along y
pad = beast.values(0, 1)                # pad each shared-memory row by one element

# -- derived values: named expressions, computed once per configuration ----------------------------
threads = block_x * block_y
elems_per_thread = tile * tile // threads
smem_bytes = tile * (tile + pad) * elem_bytes

# -- filters: each one REJECTS the configurations for which it is true -----------------------------
over_max_threads = beast.filter(threads > max_threads_per_block)
partial_warp = beast.filter(threads % warp_size != 0)
# the threads must cover the tile exactly
uneven_tile = beast.filter((tile % block_x != 0) | (tile % block_y != 0))
over_shared_memory = beast.filter(smem_bytes > max_shared_mem_per_block)
# between 2 and 32 elements per thread: less wastes threads, more serializes the copy
bad_work_per_thread = beast.filter((elems_per_thread < 2) | (elems_per_thread > 32))
# this kernel has no edge handling: the matrix must be made of whole tiles (note `~`, not `not`)
partial_tiles = beast.filter(~((M % tile == 0) & (N % tile == 0)))
# without padding, a warp reading a column of a 4-byte tile hits one bank 32 times; 8-byte
# elements are spread over two banks, so unpadded double tiles are worth timing too
bank_conflicts = beast.filter((pad == 0) & (elem_bytes == 4) & (block_x < warp_size))


if __name__ == "__main__":
    # The Python API: load this very file as a space, specialize it, count and enumerate.
    space = beast.load(__file__)
    print(space)
    # generated enumerators go to the user's cache, never into the repository's generated/
    generated = os.environ.get("BEASTGEN_GENERATED_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "beastgen", "examples")

    plan = space.specialize(device="h100", generated_dir=generated)  # default settings
    print(f"h100, default settings: {plan.count():,} valid configurations")

    configs = plan.enumerate()                       # a numpy structured array, one field per iterator
    print("columns:", plan.columns)
    for row in configs[:5]:
        print("  ", dict(zip(plan.columns, row.tolist())))

    # Another device and other settings: 4000 is a multiple of 16 and 32, not of 64.
    other = space.specialize(device="c2050", generated_dir=generated, M=4000, N=4000, precision="d")
    print(f"c2050, 4000 x 4000 doubles: {other.count():,} valid configurations")

    # No tile divides 1000: the space is empty, and beastgen says which filter emptied it.
    empty = space.specialize(device="c2050", generated_dir=generated, M=1000, N=1000)
    print(f"c2050, 1000 x 1000 floats: {empty.count():,} valid configurations")
    print("  why:", empty.why_empty())
