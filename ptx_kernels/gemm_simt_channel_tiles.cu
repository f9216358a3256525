// Channel-pruned ("unified") SGEMM tile configurations with split-K: the per-shape choice the dense SIMT
// SGEMM has (gemm_simt_tiles.cu), for the CUDA Core Unified kernel of paper 001 (gemm_simt_channel.cu).
// A: M x kept row-major fp32 (lda) holds the kept reduction columns of W, ids their column numbers (kept
// int32, ascending): row k of the reduction reads row ids[k] of the full activations B (K x N, ldb), one
// index load per B-tile row, as gemm_simt_channel.cu does. C: M x N row-major fp32 (ldc).
// Launch: block (threads, 1, 1), grid (ceil(N / BN), ceil(M / BM), S). Slice z of the S = gridDim.z slices
// reduces over kept columns [z * Ks, min(kept, (z + 1) * Ks)), Ks = ceil(ceil(kept / S) / BK) * BK. With
// S = 1 the thread tile is stored to C; with S > 1 it is added to C with atomic adds, so C must hold zeros
// before the launch, and a slice that starts past kept adds nothing.
#include "simt_gemm.cuh"

namespace stc {

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__device__ __forceinline__ void simt_channel_splitk(const float* __restrict__ A, const int* __restrict__ ids,
                                                    const float* __restrict__ B, float* __restrict__ C, int M,
                                                    int N, int kept, int lda, int ldb, int ldc)
{
    using T = SimtTile<BM, BN, BK, WM, WN, TM, TN>;
    __shared__ __align__(16) float sA[BK][BM];  // A tile, transposed so a thread reads TM rows at once
    __shared__ __align__(16) float sB[BK][BN];

    const int slices = gridDim.z;
    const int k_slice = (((kept + slices - 1) / slices + BK - 1) / BK) * BK;
    const int k_begin = blockIdx.z * k_slice;
    const int k_end = min(kept, k_begin + k_slice);
    if (k_begin >= k_end && slices > 1) {
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
            sB[r][c] = in ? B[ids[k0 + r] * ldb + n0 + c] : 0.0f;
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
        store_thread_tile(C, acc, m0 + tm0, n0 + tn0, M, N, ldc);  // zeros when nothing is kept
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

#define STC_CHANNEL_SPLITK(BM, BN, WM, WN, TM, TN)                                                           \
    extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))                                 \
        gemm_simt_channel_f32_f32_tile##BM##x##BN##x8_warp##WM##x##WN##_thread##TM##x##TN##_splitk(          \
            const float* __restrict__ A, const int* __restrict__ ids, const float* __restrict__ B,           \
            float* __restrict__ C, int M, int N, int kept, int lda, int ldb, int ldc)                         \
    {                                                                                                         \
        stc::simt_channel_splitk<BM, BN, 8, WM, WN, TM, TN>(A, ids, B, C, M, N, kept, lda, ldb, ldc);         \
    }

// The tiles of the dense SIMT family (gemm_simt_tiles.cu).
STC_CHANNEL_SPLITK(128, 128, 64, 32, 8, 8)
STC_CHANNEL_SPLITK(64, 64, 32, 16, 4, 4)
STC_CHANNEL_SPLITK(64, 32, 32, 16, 4, 4)
STC_CHANNEL_SPLITK(32, 32, 32, 16, 4, 4)
STC_CHANNEL_SPLITK(64, 16, 32, 16, 4, 4)
