// Tiled shared-memory SGEMM on CUDA cores, CUTLASS style: block tile BM x BN x BK, warp tile WM x WN,
// thread tile TM x TN (an outer product of TM elements of A and TN elements of B per k step).
// A: M x K row-major fp32 (lda), B: K x N row-major fp32 (ldb), C: M x N row-major fp32 (ldc).
// Ragged M, N, K: global loads outside A or B are replaced by zeros in shared memory, and stores
// outside C are skipped. Launch: block (threads, 1, 1), grid (ceil(N / BN), ceil(M / BM)).

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
};

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__device__ __forceinline__ void simt_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                          int ldc)
{
    using T = SimtTile<BM, BN, BK, WM, WN, TM, TN>;
    __shared__ __align__(16) float sA[BK][BM];  // A tile, transposed so a thread reads TM rows at once
    __shared__ __align__(16) float sB[BK][BN];

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int tm0 = (warp / T::kWarpsN) * WM + (lane / T::kLanesN) * TM;
    const int tn0 = (warp % T::kWarpsN) * WN + (lane % T::kLanesN) * TN;

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

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + tm0 + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + tn0 + j;
            if (row < M && col < N) {
                C[row * ldc + col] = acc[i][j];
            }
        }
    }
}

}  // namespace stc

// 64x64x8 block tile, 2x4 warps of 32x16, 4x4 thread tile: 256 threads.
extern "C" __global__ void __launch_bounds__(256) gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, int lda, int ldb, int ldc)
{
    stc::simt_gemm<64, 64, 8, 32, 16, 4, 4>(A, B, C, M, N, K, lda, ldb, ldc);
}
