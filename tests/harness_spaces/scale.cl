// y = a x over n elements, `per` consecutive elements per work-item.
__kernel void scale(__global float* y, __global const float* x, const float a, const int n)
{
    int first = get_global_id(0) * per;
    for (int j = 0; j < per; ++j)
        if (first + j < n)
            y[first + j] = a * x[first + j];
}
