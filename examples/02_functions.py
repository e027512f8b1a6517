"""Example 2: space functions, on a 1-D stencil (finite differences of radius `radius`).

This file is both a space file and a script: `python examples/02_functions.py` counts its space.

The kernel computes out[i] = sum over |j| <= radius of w[j] * in[i + j] for n points. A block of
`block` threads produces block * items consecutive outputs (`items` per thread), and needs the
2 * radius neighbours around them (the halo). `staging` says where the inputs are kept:
  'shared'    - the block's points and halo are loaded once into shared memory,
  'registers' - each thread loads its own points plus its own halo into registers,
  'readonly'  - every point is read straight from global memory through the read-only cache.
`vec` is the width of the vector loads, `unroll` the unrolling of each thread's loop over its items.

When an expression gets awkward, write a plain Python function instead. What it shows:
  * function iterators returning a range (`block`, and `unroll`, whose bound reads another
    iterator) or a sequence (`vec`),
  * a generator ("closure") iterator that yields its values (`items`: Fibonacci numbers),
  * string-valued iterators (`staging`),
  * @beast.derived functions, @beast.filter functions, and beast.where in expressions.

A space function takes no parameters: it reads the other space names directly, as globals. It may
use if/else, loops, local variables, min/max/abs/range and math; it is folded for the device and
settings, then compiled by Numba. A filter REJECTS a configuration when it is true.
"""
import os

import beastgen as beast

# -- settings ------------------------------------------------------------------------------------
n = beast.setting(1 << 24)                            # points
radius = beast.setting(4)                             # stencil radius
precision = beast.setting('s', choices=['s', 'd'])
max_tile = beast.setting(4096)                        # most outputs per block
max_items = beast.setting(64)                         # most outputs per thread

@beast.derived
def elem_bytes():
    # Depends on a setting only: run once, in Python, at specialization time (a dict is fine here).
    return {'s': 4, 'd': 8}[precision]

# -- device properties ---------------------------------------------------------------------------
warp_size = beast.device.warp_size
max_threads_per_block = beast.device.max_threads_per_block
max_shared_mem_per_block = beast.device.max_shared_mem_per_block
max_regs_per_thread = beast.device.max_regs_per_thread
sm_count = beast.device.sm_count

# -- iterators -----------------------------------------------------------------------------------
@beast.iterator
def block():
    """Threads per block: whole warps, from 2 warps up to the block limit (returns a range)."""
    return range(2 * warp_size, max_threads_per_block + 1, warp_size)

@beast.iterator
def items():
    """Outputs per thread: the Fibonacci numbers 1, 2, 3, 5, 8, 13... up to max_items.
    A generator ("closure") iterator: it yields its values."""
    a, b = 1, 2
    while a <= max_items:
        yield a
        a, b = b, a + b

@beast.iterator
def unroll():
    """Unrolling of the loop over a thread's items: 1..items, reading another iterator, so it
    runs inside the generated loop nest (see the filter `uneven_unroll`)."""
    return range(1, items + 1)

@beast.iterator
def vec():
    """Vector load width in elements (returns a sequence): up to 16 bytes per load."""
    if precision == 'd':
        return (1, 2)
    return (1, 2, 4)

staging = beast.values('shared', 'registers', 'readonly')   # a string-valued iterator

# -- derived values ------------------------------------------------------------------------------
tile = block * items                                       # outputs per block

@beast.derived
def smem_bytes():
    """Shared memory per block: the tile and its halo, only when staging in shared memory."""
    if staging == 'shared':
        return (tile + 2 * radius) * elem_bytes
    return 0

# beast.where(test, a, b) is `a if test else b` inside an expression:
# the registers variant keeps its points and its halo in registers, the others only its outputs
regs = 24 + beast.where(staging == 'registers', (items + 2 * radius) * elem_bytes // 4,
                        items * elem_bytes // 4)

# -- filters -------------------------------------------------------------------------------------
over_shared_memory = beast.filter(smem_bytes > max_shared_mem_per_block)
over_registers = beast.filter(regs > max_regs_per_thread)
# a vector load of a thread's points needs a multiple of the width
misaligned_vectors = beast.filter(items % vec != 0)
uneven_unroll = beast.filter(items % unroll != 0)
too_large_tile = beast.filter(tile > max_tile)

@beast.filter
def halo_overhead():
    """Reject when more than a quarter of the loaded points are halo (loaded only to be
    neighbours). Each thread loads its own halo when staging in registers, the block loads one
    halo when staging in shared memory, the read-only cache absorbs the overlap otherwise."""
    if staging == 'registers':
        useful = items
    elif staging == 'shared':
        useful = tile
    else:
        return False
    return 4 * 2 * radius > useful

# at least two blocks per SM: otherwise some SMs idle while the last blocks run
too_few_blocks = beast.filter(n // tile < 2 * sm_count)


if __name__ == "__main__":
    space = beast.load(__file__)
    # generated enumerators go to the user's cache, never into the repository's generated/
    generated = os.environ.get("BEASTGEN_GENERATED_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "beastgen", "examples")
    for device, settings in [("h100", {}), ("v100", {"radius": 8, "precision": "d"})]:
        plan = space.specialize(device=device, generated_dir=generated, **settings)
        print(f"{device} {settings or 'default settings'}: {plan.count():,} valid configurations")
    # string iterators come back as strings
    configs = plan.enumerate()
    print("staging values:", sorted(set(configs["staging"].tolist())))
    print("items values:", sorted(set(configs["items"].tolist())))
