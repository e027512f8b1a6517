"""A test space of kernels that go wrong: mode 1 does not compile, mode 2 returns wrong numbers,
mode 3 hangs (its timeout kills it); mode 0 is right."""
import numpy as np

import beastgen as beast

mode = beast.values(0, 1, 2, 3)
order = beast.bound(beast.where(mode == 0, 1e-12, 2e-12))  # run mode 0 first; prunes nothing

kernel = beast.kernel(
    source="bad.cl", name="bad", defines=lambda c: {"MODE": c["mode"]}, block=(1,), grid=(4,),
    arguments=lambda s: [np.zeros(4, np.float32), np.float32(2.0)],
    reference=lambda args, s: {0: np.full(4, 2.0, np.float32)},
    tolerance=1e-6, timeout=3.0, iterations=2)
