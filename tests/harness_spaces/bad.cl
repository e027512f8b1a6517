__kernel void bad(__global float* out, const float a)
{
    const int i = get_global_id(0);
#if MODE == 1
    this is not OpenCL;
#endif
#if MODE == 3
    volatile int spin = 1;
    while (spin)
        out[i] = a;
#endif
    out[i] = (MODE == 2) ? a + 1.0f : a;
}
