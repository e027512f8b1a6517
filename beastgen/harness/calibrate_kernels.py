"""The microbenchmark kernels of ``beastgen calibrate``, in OpenCL C and in CUDA.

Both languages define the same kernels with the same arguments, so one driver runs either:

- ``empty()``: nothing; its fastest run is the launch overhead as the timer sees it.
- ``fma_f32(out, b, c, iterations)`` / ``fma_f64``: ``CHAINS`` independent FMA chains per
  work-item (enough independent work to fill every pipeline: a CPU vectorizes work-items across
  SIMD lanes and needs latency x pipes chains, a GPU warp needs a few). ``fma_f32`` also records, in
  CUDA, the SM clock ticks (``clock64``) and nanoseconds (``%globaltimer``) that each block's loop
  took, so that the clock under FMA load is read, not assumed.
- ``int_ops(out, c, iterations)``: ``CHAINS`` chains of a shift and an xor (two integer
  instructions per step): the rate at which warp instructions issue.
- ``read_sum(in, out, n, passes)``: ``passes`` reads of ``n`` vectors (``n`` a multiple of 8 x the
  global size), eight accumulators per work-item. In CUDA the loads bypass L1 (``__ldcg``), so that
  repeated passes over a buffer that fits the L2 read the L2.
- ``copy(in, out, n)``: ``out[i] = in[i]`` over ``n`` vectors.
- ``local_read(out, iterations)``, compiled with ``-D STRIDE=s``: work-item ``i`` reads the local
  (shared) word ``i * STRIDE + offset``, four loads per iteration, where ``offset`` is a multiple
  of 32 words common to all work-items (the same banks every time: stride 1 is conflict-free, 2 a
  2-way conflict, 32 a 32-way one on 32 banks). STRIDE is a compile-time constant, so stride 1
  compiles to the contiguous (vector) loads that real kernels use.
"""
from __future__ import annotations

#: independent FMA (or integer) chains per work-item
CHAINS = 16
#: local words read per work-item per iteration of local_read (independent accumulators)
LOCAL_LOADS = 16
#: the most words local_read's offset reaches past i * STRIDE
LOCAL_OFFSET_SPAN = 4 * 512


def _chains(statement: str) -> str:
    return " ".join(statement.format(i=i) for i in range(CHAINS))


def _sum(prefix: str, op: str = "+") -> str:
    return f" {op} ".join(f"{prefix}{i}" for i in range(CHAINS))


def _fma_kernel(scalar: str, vector: str, name: str, qualifiers: str, fma: str,
                clock: str = "") -> str:
    init = " ".join(f"{vector} x{i} = ({vector})(({scalar})(GID) * ({scalar})1e-9 + ({scalar}){i});"
                    for i in range(CHAINS))
    start, end = clock.split("|") if clock else ("", "")
    return f"""
{qualifiers} {name}(GLOBAL {vector} *out, const {scalar} b, const {scalar} c, const int iterations
                      {", GLOBAL unsigned long long *clocks" if clock else ""}) {{
    {init}
    const {vector} bv = ({vector})(b), cv = ({vector})(c);
    {start}
    for (int i = 0; i < iterations; ++i) {{
        {_chains(f"x{{i}} = {fma}(x{{i}}, bv, cv);")}
    }}
    {end}
    out[GID] = {_sum("x")};
}}
"""


_COMMON = f"""
__KERNEL__ empty(void) {{ }}

__KERNEL__ int_ops(GLOBAL uintv *out, const unsigned int c, const int iterations) {{
    {" ".join(f"uintv x{i} = (uintv)((unsigned int)(GID) + {i}u);" for i in range(CHAINS))}
    const uintv cv = (uintv)(c);
    for (int i = 0; i < iterations; ++i) {{
        {_chains("x{i} = (x{i} << 1) ^ cv;")}
    }}
    out[GID] = {_sum("x", "^")};
}}

// a work-item's k-th of eight accumulated vectors: consecutive ones on a CPU (each work-item reads
// a contiguous chunk, the next chunk on the next pass, so that repeated passes cycle through the
// whole buffer: one stream per core), one global size apart on a GPU (coalesced)
#if CHUNKED
#define BEGIN(n, p) (((GID + (p)) % GSIZE) * ((n) / GSIZE))
#define END(n, p) (BEGIN(n, p) + (n) / GSIZE)
#define STEP 8u
#define AT(k) (k)
#else
#define BEGIN(n, p) (GID)
#define END(n, p) (n)
#define STEP (8u * GSIZE)
#define AT(k) ((k) * GSIZE)
#endif

__KERNEL__ read_sum(GLOBAL const floatv *in, GLOBAL floatv *out, const unsigned int n,
                    const int passes) {{
    floatv a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    for (int p = 0; p < passes; ++p) {{
        for (unsigned int i = BEGIN(n, p); i < END(n, p); i += STEP) {{
            a0 += LOAD(in + i); a1 += LOAD(in + i + AT(1));
            a2 += LOAD(in + i + AT(2)); a3 += LOAD(in + i + AT(3));
            a4 += LOAD(in + i + AT(4)); a5 += LOAD(in + i + AT(5));
            a6 += LOAD(in + i + AT(6)); a7 += LOAD(in + i + AT(7));
        }}
    }}
    out[GID] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}}

__KERNEL__ copy(GLOBAL const floatv *in, GLOBAL floatv *out, const unsigned int n) {{
    for (unsigned int i = BEGIN(n, 0); i < END(n, 0); i += STEP) {{
        out[i] = in[i]; out[i + AT(1)] = in[i + AT(1)];
        out[i + AT(2)] = in[i + AT(2)]; out[i + AT(3)] = in[i + AT(3)];
        out[i + AT(4)] = in[i + AT(4)]; out[i + AT(5)] = in[i + AT(5)];
        out[i + AT(6)] = in[i + AT(6)]; out[i + AT(7)] = in[i + AT(7)];
    }}
}}

#ifdef STRIDE
__KERNEL__ local_read(GLOBAL float *out, const int iterations) {{
    LOCAL_DECL(float, buf, LOCAL_WORDS);
    const unsigned int lid = LID, lsize = LSIZE;
    for (unsigned int i = lid; i < LOCAL_WORDS; i += lsize)
        buf[i] = (float)i;
    LOCAL_BARRIER();
    const unsigned int base = lid * STRIDE;
    {" ".join(f"float a{i} = 0;" for i in range(LOCAL_LOADS))}
    for (int it = 0; it < iterations; ++it) {{
        const unsigned int o = base + (unsigned int)(it & 3) * 512u;
        {" ".join(f"a{i} += buf[o + {32 * i}u];" for i in range(LOCAL_LOADS))}
    }}
    out[GID] = {" + ".join(f"a{i}" for i in range(LOCAL_LOADS))};
}}
#endif
"""

#: OpenCL C; built with -D VW=... (the vector width of each work-item's values: the native float
#: width on a CPU, whose compiler does not vectorize across work-items around a loop, 1 on a GPU),
#: -D CHUNKED=0|1 (see read_sum), -D LOCAL_WORDS=... and, for local_read, -D STRIDE=...
OPENCL_SOURCE = """
#define GLOBAL __global
#define GID get_global_id(0)
#define GSIZE get_global_size(0)
#define LID get_local_id(0)
#define LSIZE get_local_size(0)
#define LOAD(p) (*(p))
#define LOCAL_DECL(type, name, size) __local type name[size]
#define LOCAL_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VW == 1
typedef float floatv;
typedef uint uintv;
#else
typedef CAT(float, VW) floatv;
typedef CAT(uint, VW) uintv;
#endif
""" + _COMMON.replace("__KERNEL__", "__kernel void") + _fma_kernel(
    "float", "floatv", "fma_f32", "__kernel void", "fma")

#: OpenCL C, fp64 (built only where the device has doubles)
OPENCL_FP64_SOURCE = """#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define GLOBAL __global
#define GID get_global_id(0)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VW == 1
typedef double doublev;
#else
typedef CAT(double, VW) doublev;
#endif
""" + _fma_kernel("double", "doublev", "fma_f64", "__kernel void", "fma")

_CUDA_CLOCK = (
    "__syncthreads(); unsigned long long t0 = globaltimer(); long long k0 = clock64();"
    "|"
    "__syncthreads(); long long k1 = clock64(); unsigned long long t1 = globaltimer();"
    " if (threadIdx.x == 0) { clocks[2 * blockIdx.x] = (unsigned long long)(k1 - k0);"
    " clocks[2 * blockIdx.x + 1] = t1 - t0; }")

#: CUDA C++ (the kernels in an extern "C" block: unmangled names); compiled by nvcc
#: (beastgen/harness/nvcc.py) with #define LOCAL_WORDS ... and, for local_read, STRIDE ... before it
CUDA_SOURCE = """
#define GLOBAL
#define GID (blockIdx.x * blockDim.x + threadIdx.x)
#define GSIZE (gridDim.x * blockDim.x)
#define LID threadIdx.x
#define LSIZE blockDim.x
#define LOAD(p) __ldcg(p)
#define LOCAL_DECL(type, name, size) __shared__ type name[size]
#define LOCAL_BARRIER() __syncthreads()
#define CHUNKED 0
typedef float floatv;
typedef double doublev;
typedef unsigned int uintv;

extern "C" {
static __device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
""" + _COMMON.replace("__KERNEL__", "__global__ void") + _fma_kernel(
    "float", "floatv", "fma_f32", "__global__ void", "fmaf", _CUDA_CLOCK) + _fma_kernel(
    "double", "doublev", "fma_f64", "__global__ void", "fma") + "}\n"
