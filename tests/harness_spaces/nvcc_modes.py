"""A test space for `beastgen nvcc-check`: mode 1's CUDA kernel does not compile, modes 0 and 2 do
(mode 2 keeps more values live). regs is the space's (deliberately tiny) register estimate."""
import beastgen as beast

mode = beast.values(0, 1, 2)
regs = beast.where(mode == 2, 4, 200)

kernel = beast.kernel(source="nvcc_modes.cu", name="modes", defines=lambda c: {"MODE": c["mode"]},
                      block=(32,), grid=(1,))
