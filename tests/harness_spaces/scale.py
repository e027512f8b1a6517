"""A tiny space whose valid set depends on its input (the setting ``n``), for tuning across
inputs: a work-group of ``wg`` items, each scaling ``per`` elements, must tile ``n`` exactly."""
import numpy as np

import beastgen as beast

n = beast.setting(64, minimum=1)
mode = beast.setting("plain", choices=["plain", "wide"])
wg = beast.values(1, 2, 4, 8)
per = beast.values(1, 2, 4)
uneven = beast.filter(n % (wg * per) != 0)
too_wide = beast.filter(beast.where(mode == "wide", per < 2, False))

kernel = beast.kernel(
    source="scale.cl", name="scale", defines=["per"], block=(wg,), grid=(n // (wg * per),),
    arguments=lambda s: [np.zeros(s["n"], np.float32), np.arange(s["n"], dtype=np.float32),
                         np.float32(2.0), np.int32(s["n"])],
    reference=lambda args, s: [2.0 * args[1], None, None, None],
    tolerance=0.0, timeout=20.0, iterations=2)
