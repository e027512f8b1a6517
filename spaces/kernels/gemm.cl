// MAGMA-style GEMM for beastgen's spaces/gemm.py: C = alpha * op(A) op(B) + beta * C, column-major,
// in real (s, d) and complex (c, z) precision.
// One source for OpenCL and CUDA: the algorithm is written once over the portability macros below
// (KERNEL, GLOBAL, SHARED, TX, BX, SYNC, ...), selected by __OPENCL_VERSION__; the OpenCL backend
// builds it as OpenCL C, the CUDA backend (pycuda's SourceModule, or `beastgen nvcc-check`) as CUDA.
//
// A work-group of DIM_M x DIM_N work-items computes a BLK_M x BLK_N tile of C, stepping through K by
// BLK_K. Each step stages op(A)'s BLK_M x BLK_K tile and op(B)'s BLK_K x BLK_N tile in local memory;
// the same work-items are reshaped to DIM_M_A x DIM_N_A (DIM_M_B x DIM_N_B) to read the tile of A (B)
// as stored, DIM_M_A along the stored (contiguous) rows in vectors of VL elements. Work-item (tx, ty)
// accumulates the THR_M x THR_N elements (tx + i*DIM_M, ty + j*DIM_N) of the tile in registers.
// Every load and store is guarded, so any M, N, K is correct (edges are zero-filled).
//
// Defines (set by the space's kernel declaration): REAL (float/double: the scalar type),
// REAL_IS_DOUBLE, COMPLEX (0: elements are REAL; 1: elements are complex, stored interleaved as
// REAL2 = float2/double2, (re, im)), VL (vector width in ELEMENTS: 1, 2, 4 for real; 1, 2 for
// complex, i.e. 16 bytes for c with VL=2 and for z with VL=1, as the space's dim_vec), DIM_M DIM_N
// BLK_M BLK_N BLK_K DIM_M_A DIM_N_A DIM_M_B DIM_N_B, TRANS_A TRANS_B (op(X) = X^T, the plain
// transpose, also for complex: no conjugation), TEX_A TEX_B. TEX_A/TEX_B (CUDA's texture path) make
// A/B `restrict`-qualified read-only pointers: in CUDA that lets the compiler load them through the
// read-only (texture) cache; in OpenCL it is a hint only. The reqd_work_group_size of OpenCL is
// CUDA's __launch_bounds__(DIM_M * DIM_N).
//
// Complex: alpha and beta are complex and passed as two REAL arguments each (alpha_r, alpha_i,
// beta_r, beta_i), which packs identically in OpenCL and in pycuda's argument buffer; the
// multiply-add is c += a*b = (ar*br - ai*bi, ar*bi + ai*br), four FMAs.
#ifndef COMPLEX
#define COMPLEX 0
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// VLS: the vector width of one load in REAL scalars (VL elements of 1 or 2 scalars each)
#if COMPLEX
#define TYPE CAT(REAL, 2)
#if VL == 1
#define VLS 2
#elif VL == 2
#define VLS 4
#else
#error "complex GEMM takes VL 1 or 2"
#endif
#else
#define TYPE REAL
#define VLS VL
#endif

#ifdef __OPENCL_VERSION__
#if REAL_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define KERNEL __kernel __attribute__((reqd_work_group_size(DIM_M, DIM_N, 1))) void
#define GLOBAL __global
#define SHARED __local
#define RESTRICT restrict
#define TX get_local_id(0)
#define TY get_local_id(1)
#define BX get_group_id(0)
#define BY get_group_id(1)
#define SYNC() barrier(CLK_LOCAL_MEM_FENCE)
#define FMA(a, b, c) fma(a, b, c)
#define ZERO ((TYPE)(0))
// VL elements = VLS scalars from any element-aligned address, into the private TYPE array v
#define VLOAD(p) CAT(vload, VLS)(0, (const GLOBAL REAL*)(p))
#define VSTORE(t, v) CAT(vstore, VLS)(t, 0, (REAL*)(v))
#define VALIGNED(p) 1
#else  // CUDA (nvcc compiles it as C++: the kernel is declared extern "C" for an unmangled name)
#define KERNEL extern "C" __global__ void __launch_bounds__(DIM_M * DIM_N)
#define GLOBAL
#define SHARED __shared__
#define RESTRICT __restrict__
#define TX ((int)threadIdx.x)
#define TY ((int)threadIdx.y)
#define BX ((int)blockIdx.x)
#define BY ((int)blockIdx.y)
#define SYNC() __syncthreads()
#if REAL_IS_DOUBLE
#define FMA(a, b, c) fma(a, b, c)
#else
#define FMA(a, b, c) fmaf(a, b, c)
#endif
#if COMPLEX
#define ZERO CAT(make_, TYPE)((REAL)0, (REAL)0)
#else
#define ZERO ((REAL)0)
#endif
#define VLOAD(p) (*(const CAT(REAL, VLS)*)(p))    // needs VLS * sizeof(REAL) alignment: VALIGNED
#if COMPLEX && VLS == 4
#define VSTORE(t, v) (v[0] = CAT(make_, TYPE)((t).x, (t).y), v[1] = CAT(make_, TYPE)((t).z, (t).w))
#elif VLS == 2
#define VSTORE(t, v) (v[0] = (t).x, v[1] = (t).y)
#elif VLS == 4
#define VSTORE(t, v) (v[0] = (t).x, v[1] = (t).y, v[2] = (t).z, v[3] = (t).w)
#endif
#define VALIGNED(p) (((size_t)(p) & (VLS * sizeof(REAL) - 1)) == 0)
#endif

// c += a * b (real: one FMA; complex: four)
#if COMPLEX
#define MADD(c, a, b)                                                                     \
    do {                                                                                  \
        (c).x = FMA((a).x, (b).x, (c).x);                                                 \
        (c).x = FMA(-(a).y, (b).y, (c).x);                                                \
        (c).y = FMA((a).x, (b).y, (c).y);                                                 \
        (c).y = FMA((a).y, (b).x, (c).y);                                                 \
    } while (0)
#define SCALAR_ARG(name) const REAL CAT(name, _r), const REAL CAT(name, _i)
#else
#define MADD(c, a, b) ((c) = FMA(a, b, c))
#define SCALAR_ARG(name) const REAL name
#endif

#define THR_M (BLK_M / DIM_M)
#define THR_N (BLK_N / DIM_N)

#if TEX_A
#define A_PTR const GLOBAL TYPE* RESTRICT
#else
#define A_PTR const GLOBAL TYPE*
#endif
#if TEX_B
#define B_PTR const GLOBAL TYPE* RESTRICT
#else
#define B_PTR const GLOBAL TYPE*
#endif

// Stored geometry of the A tile: rows are contiguous in memory.
#if TRANS_A   // A stored K x M: op(A)(m, k) = A[k + m*lda]
#define A_ROWS BLK_K
#define A_COLS BLK_M
#define A_ROW0 k0
#define A_COL0 m0
#define A_NROWS K
#define A_NCOLS M
#define SA_AT(r, c) sA[(r) * BLK_M + (c)]
#else         // A stored M x K
#define A_ROWS BLK_M
#define A_COLS BLK_K
#define A_ROW0 m0
#define A_COL0 k0
#define A_NROWS M
#define A_NCOLS K
#define SA_AT(r, c) sA[(c) * BLK_M + (r)]
#endif
#if TRANS_B   // B stored N x K: op(B)(k, n) = B[n + k*ldb]
#define B_ROWS BLK_N
#define B_COLS BLK_K
#define B_ROW0 n0
#define B_COL0 k0
#define B_NROWS N
#define B_NCOLS K
#define SB_AT(r, c) sB[(r) * BLK_K + (c)]
#else         // B stored K x N
#define B_ROWS BLK_K
#define B_COLS BLK_N
#define B_ROW0 k0
#define B_COL0 n0
#define B_NROWS K
#define B_NCOLS N
#define SB_AT(r, c) sB[(c) * BLK_K + (r)]
#endif

// Load VL consecutive stored elements (row gr.., column gc) of X into v[0..VL-1], zero outside.
#if VL == 1
#define LOAD_VEC(X, ld, gr, gc, nrows, ncols, v) \
    v[0] = ((gr) < (nrows) && (gc) < (ncols)) ? X[(gr) + (size_t)(gc) * (ld)] : ZERO;
#else
#define LOAD_VEC(X, ld, gr, gc, nrows, ncols, v)                                          \
    if ((gc) < (ncols) && (gr) + VL <= (nrows) && VALIGNED(X + (gr) + (size_t)(gc) * (ld))) { \
        CAT(REAL, VLS) t = VLOAD(X + (gr) + (size_t)(gc) * (ld));                         \
        VSTORE(t, v);                                                                     \
    } else {                                                                              \
        for (int e = 0; e < VL; ++e)                                                      \
            v[e] = ((gr) + e < (nrows) && (gc) < (ncols)) ? X[(gr) + e + (size_t)(gc) * (ld)] \
                                                          : ZERO;                         \
    }
#endif

KERNEL gemm(const int M, const int N, const int K, SCALAR_ARG(alpha), A_PTR A, const int lda,
          B_PTR B, const int ldb, SCALAR_ARG(beta), GLOBAL TYPE* C, const int ldc)
{
    const int tx = TX, ty = TY;
    const int id = tx + ty * DIM_M;
    const int m0 = BX * BLK_M, n0 = BY * BLK_N;
    const int txa = id % DIM_M_A, tya = id / DIM_M_A;
    const int txb = id % DIM_M_B, tyb = id / DIM_M_B;

    SHARED TYPE sA[BLK_K * BLK_M];   // op(A)(m, k) at sA[k*BLK_M + m]
    SHARED TYPE sB[BLK_N * BLK_K];   // op(B)(k, n) at sB[n*BLK_K + k]
    TYPE rC[THR_M][THR_N];
    TYPE rA[THR_M], rB[THR_N], v[VL];
    for (int i = 0; i < THR_M; ++i)
        for (int j = 0; j < THR_N; ++j)
            rC[i][j] = ZERO;

    for (int k0 = 0; k0 < K; k0 += BLK_K) {
        for (int c = tya; c < A_COLS; c += DIM_N_A)
            for (int r = txa * VL; r < A_ROWS; r += DIM_M_A * VL) {
                LOAD_VEC(A, lda, A_ROW0 + r, A_COL0 + c, A_NROWS, A_NCOLS, v)
                for (int e = 0; e < VL; ++e)
                    SA_AT(r + e, c) = v[e];
            }
        for (int c = tyb; c < B_COLS; c += DIM_N_B)
            for (int r = txb * VL; r < B_ROWS; r += DIM_M_B * VL) {
                LOAD_VEC(B, ldb, B_ROW0 + r, B_COL0 + c, B_NROWS, B_NCOLS, v)
                for (int e = 0; e < VL; ++e)
                    SB_AT(r + e, c) = v[e];
            }
        SYNC();
        for (int kk = 0; kk < BLK_K; ++kk) {
            for (int i = 0; i < THR_M; ++i)
                rA[i] = sA[kk * BLK_M + tx + i * DIM_M];
            for (int j = 0; j < THR_N; ++j)
                rB[j] = sB[(ty + j * DIM_N) * BLK_K + kk];
            for (int i = 0; i < THR_M; ++i)
                for (int j = 0; j < THR_N; ++j)
                    MADD(rC[i][j], rA[i], rB[j]);
        }
        SYNC();
    }

#if COMPLEX
    const int read_c = beta_r != (REAL)0 || beta_i != (REAL)0;
#else
    const int read_c = beta != (REAL)0;
#endif
    for (int j = 0; j < THR_N; ++j) {
        const int n = n0 + ty + j * DIM_N;
        for (int i = 0; i < THR_M; ++i) {
            const int m = m0 + tx + i * DIM_M;
            if (m < M && n < N) {
                const size_t at = m + (size_t)n * ldc;
#if COMPLEX     // alpha * acc + beta * C, complex products written out
                const TYPE acc = rC[i][j];
                TYPE out;
                out.x = alpha_r * acc.x - alpha_i * acc.y;
                out.y = alpha_r * acc.y + alpha_i * acc.x;
                if (read_c) {
                    const TYPE old = C[at];
                    out.x += beta_r * old.x - beta_i * old.y;
                    out.y += beta_r * old.y + beta_i * old.x;
                }
                C[at] = out;
#else
                C[at] = alpha * rC[i][j] + (read_c ? beta * C[at] : (REAL)0);
#endif
            }
        }
    }
}
