"""A test space whose lower bound is tight enough to prune: each work-item runs a dependent chain of
`work` FMAs, and no chain of dependent FMAs runs faster than one per clock."""
import numpy as np

import beastgen as beast

work = beast.values(1, 2000000, 4000000)
wg = beast.values(1, 2, 4)
clock_hz = beast.device.max_clock_mhz * 1e6

chain_time = beast.bound(work / clock_hz)  # `work` dependent FMAs, each at least one clock

kernel = beast.kernel(
    source="chain.cl", name="chain", defines=["work"], block=(wg,), grid=(4 // wg,),
    arguments=lambda s: [np.zeros(4, np.float32), np.float32(1.0), np.float32(1.0)],
    reference=lambda args, s: [np.ones(4, np.float32), None, None],
    tolerance=0.0, timeout=20.0, iterations=3)
