// x = x*a + b, `work` times, a dependent chain the compiler cannot fold (a, b are arguments).
__kernel void chain(__global float* out, const float a, const float b)
{
    float x = 0.0f;
    for (int i = 0; i < work; ++i)
        x = fma(x, a, b);
    out[get_global_id(0)] = x - (float)work + 1.0f;   // 1 when a = b = 1
}
