// The CUDA-core (SIMT) GEMM mainloop shared by the dense SGEMM and the channel-pruned ("unified") GEMM,
// CUTLASS style: block tile BM x BN x BK, warp tile WM x WN, thread tile TM x TN (an outer product of TM
// elements of A and TN elements of B per k step).
// A: M x K row-major fp32 (lda), B: row-major fp32 (ldb), C: M x N row-major fp32 (ldc). Row k of the
// reduction reads row rows(k) of B: the identity for the dense GEMM, a gather through the kept-channel ids
// for the channel-pruned one. Ragged M, N, K: global loads outside A or B are replaced by zeros in shared
// memory, and stores outside C are skipped. Launch: block (threads, 1, 1), grid (ceil(N / BN), ceil(M / BM)).
#pragma once

namespace stc {

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
struct SimtTile {
    static constexpr int kWarpsM = BM / WM;
    static constexpr int kWarpsN = BN / WN;
    static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
    static constexpr int kLanesN = WN / TN;
    static constexpr int kLanesM = WM / TM;
    static_assert(kLanesM * kLanesN == 32, "a warp tile must hold exactly 32 thread tiles");
    static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0, "tile loads must split evenly");

    // First row (of the block tile) of this thread's TM x TN tile of C.
    static __device__ __forceinline__ int thread_m(int tid)
    {
        return (tid / 32 / kWarpsN) * WM + (tid % 32 / kLanesN) * TM;
    }

    // First column (of the block tile) of this thread's TM x TN tile of C.
    static __device__ __forceinline__ int thread_n(int tid)
    {
        return (tid / 32 % kWarpsN) * WN + (tid % 32 % kLanesN) * TN;
    }
};

// The thread's TM x TN accumulators into C at (row0, col0), skipping elements outside M x N.
template <int TM, int TN>
__device__ __forceinline__ void store_thread_tile(float* __restrict__ C, const float (&acc)[TM][TN], int row0,
                                                  int col0, int M, int N, int ldc)
{
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + j;
            if (row < M && col < N) {
                C[row * ldc + col] = acc[i][j];
            }
        }
    }
}

// Row k of the reduction is row k of B (the dense GEMM).
struct DenseRows {
    __device__ __forceinline__ int operator()(int k) const { return k; }
};

// Row k of the reduction is row ids[k] of B (the kept channels of a channel-pruned GEMM).
struct GatheredRows {
    const int* __restrict__ ids;
    __device__ __forceinline__ int operator()(int k) const { return ids[k]; }
};

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, class Rows>
__device__ __forceinline__ void simt_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                          int ldc, Rows rows)
{
    using T = SimtTile<BM, BN, BK, WM, WN, TM, TN>;
    __shared__ __align__(16) float sA[BK][BM];  // A tile, transposed so a thread reads TM rows at once
    __shared__ __align__(16) float sB[BK][BN];

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

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int j = 0; j < BM * BK / T::kThreads; ++j) {
            const int i = tid + j * T::kThreads;
            const int r = i / BK;
            const int c = i % BK;
            const bool in = m0 + r < M && k0 + c < K;
            sA[c][r] = in ? A[(m0 + r) * lda + k0 + c] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < BK * BN / T::kThreads; ++j) {
            const int i = tid + j * T::kThreads;
            const int r = i / BN;
            const int c = i % BN;
            const bool in = k0 + r < K && n0 + c < N;
            sB[r][c] = in ? B[rows(k0 + r) * ldb + n0 + c] : 0.0f;
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

    store_thread_tile(C, acc, m0 + tm0, n0 + tn0, M, N, ldc);
}

}  // namespace stc
