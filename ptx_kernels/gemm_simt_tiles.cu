// SIMT SGEMM tile configurations with split-K (issue 44): the per-shape choice of a library (cuBLAS's
// heuristics, CUTLASS's profiler) among block tiles and K slices, for batch-1 layers with N = 1..49.
// A: M x K row-major fp32 (lda), B: K x N row-major fp32 (ldb), C: M x N row-major fp32 (ldc).
// Launch: block (threads, 1, 1), grid (ceil(N / BN), ceil(M / BM), S). Slice z of the S = gridDim.z slices
// reduces over k in [z * Ks, min(K, (z + 1) * Ks)), Ks = ceil(ceil(K / S) / BK) * BK. With S = 1 the
// thread tile is stored to C; with S > 1 it is added to C with atomic adds (red.global.add.f32), so C must
// hold zeros before the launch, and a slice that starts past K adds nothing.
// The mainloop is simt_gemm.cuh's, on a K range: global loads outside A, B or the slice write zeros to
// shared memory, stores outside C are skipped.
#include "simt_gemm.cuh"

namespace stc {

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__device__ __forceinline__ void simt_gemm_splitk(const float* __restrict__ A, const float* __restrict__ B,
                                                 float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                                 int ldc)
{
    using T = SimtTile<BM, BN, BK, WM, WN, TM, TN>;
    __shared__ __align__(16) float sA[BK][BM];  // A tile, transposed so a thread reads TM rows at once
    __shared__ __align__(16) float sB[BK][BN];

    const int slices = gridDim.z;
    const int k_slice = (((K + slices - 1) / slices + BK - 1) / BK) * BK;
    const int k_begin = blockIdx.z * k_slice;
    const int k_end = min(K, k_begin + k_slice);
    if (k_begin >= k_end) {
        return;  // block-uniform: this slice has no reduction steps (C already holds zeros)
    }

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int tm0 = T::thread_m(tid);
    const int tn0 = T::thread_n(tid);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }

    for (int k0 = k_begin; k0 < k_end; k0 += BK) {
#pragma unroll
        for (int j = 0; j < BM * BK / T::kThreads; ++j) {
            const int i = tid + j * T::kThreads;
            const int r = i / BK;
            const int c = i % BK;
            const bool in = m0 + r < M && k0 + c < k_end;
            sA[c][r] = in ? A[(m0 + r) * lda + k0 + c] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < BK * BN / T::kThreads; ++j) {
            const int i = tid + j * T::kThreads;
            const int r = i / BN;
            const int c = i % BN;
            const bool in = k0 + r < k_end && n0 + c < N;
            sB[r][c] = in ? B[(k0 + r) * ldb + n0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM];
            float b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                a[i] = sA[k][tm0 + i];
            }
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                b[j] = sB[k][tn0 + j];
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                }
            }
        }
        __syncthreads();
    }

    if (slices == 1) {
        store_thread_tile(C, acc, m0 + tm0, n0 + tn0, M, N, ldc);
        return;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + tm0 + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + tn0 + j;
            if (row < M && col < N) {
                atomicAdd(&C[row * ldc + col], acc[i][j]);
            }
        }
    }
}

}  // namespace stc

#define STC_SIMT_SPLITK(BM, BN, WM, WN, TM, TN)                                                              \
    extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))                                 \
        gemm_simt_f32_f32_tile##BM##x##BN##x8_warp##WM##x##WN##_thread##TM##x##TN##_splitk(                  \
            const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,    \
            int K, int lda, int ldb, int ldc)                                                                 \
    {                                                                                                         \
        stc::simt_gemm_splitk<BM, BN, 8, WM, WN, TM, TN>(A, B, C, M, N, K, lda, ldb, ldc);                    \
    }

// 128x128x8, 2x4 warps of 64x32, 8x8 thread tile: 256 threads (the large-layer SGEMM tile).
STC_SIMT_SPLITK(128, 128, 64, 32, 8, 8)
// 64x64x8, 2x4 warps of 32x16, 4x4 thread tile: 256 threads (gemm_simt.cu's tile, with K slices).
STC_SIMT_SPLITK(64, 64, 32, 16, 4, 4)
// 64x32x8, 2x2 warps of 32x16: 128 threads.
STC_SIMT_SPLITK(64, 32, 32, 16, 4, 4)
// 32x32x8, 1x2 warps of 32x16: 64 threads.
STC_SIMT_SPLITK(32, 32, 32, 16, 4, 4)
// 64x16x8, 2x1 warps of 32x16: 64 threads (N = 1..16 batch-1 layers).
STC_SIMT_SPLITK(64, 16, 32, 16, 4, 4)
