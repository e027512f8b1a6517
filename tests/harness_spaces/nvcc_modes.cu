extern "C" __global__ void modes(float* out, const float* in)
{
    const int i = threadIdx.x;
#if MODE == 1
    this is not CUDA;
#endif
    float acc[8 * (MODE + 1)];
    for (int k = 0; k < 8 * (MODE + 1); ++k)
        acc[k] = in[i + 32 * k];
    float s = 0.0f;
    for (int k = 0; k < 8 * (MODE + 1); ++k)
        s += acc[k] * acc[(k * 7) % (8 * (MODE + 1))];
    out[i] = s;
}
