// Writes zeros. With variant == 1 it carries STANDIN_FAULT, the marker on which the pycuda stand-in
// (tests/cuda_standin) makes the launch an illegal memory access.
#if variant == 1
__device__ int STANDIN_FAULT;
#endif
extern "C" __global__ void zero(float *out)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f;
}
