"""A CUDA test space for the pycuda STAND-IN (tests/cuda_standin): configurations with variant = 1
carry the stand-in's marker of a kernel that faults (an illegal address, a sticky CUDA error)."""
import numpy as np

import beastgen as beast

variant = beast.values(0, 1, 2)
wg = beast.values(1, 2)

launch_time = beast.bound(beast.bound_terms.launch_time(), source="profile launch_overhead")

kernel = beast.kernel(
    source="standin_cuda.cu", name="zero", defines=["variant"], block=(wg,), grid=(4 // wg,),
    arguments=lambda s: [np.zeros(4, np.float32)],
    reference=lambda args, s: [np.zeros(4, np.float32)],
    tolerance=0.0, timeout=20.0, iterations=3)
