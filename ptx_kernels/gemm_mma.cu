// CUTLASS-style multistage Tensor Core GEMM (sm_80): mma.sync.m16n8k16 f16 x f16 + f32, ldmatrix, cp.async.
// C = A * B with A: M x K row-major fp16 (lda), B: K x N row-major fp16 (ldb), C: M x N row-major fp32 (ldc).
// Requires lda % 8 == 0 and ldb % 8 == 0 and 16-byte aligned A and B (cp.async copies 16-byte chunks);
// the host pads the leading dimensions. M, N, K are otherwise free: chunks that stick out of A or B are
// copied with a smaller cp.async src-size (the rest of the 16 bytes is zero-filled), and C stores are
// bounds-checked.
//
// Block tile BM x BN x 32, warps of WM x WN, STAGES shared-memory buffers fed by cp.async groups.
// Shared memory (dynamic): STAGES x (BM x 32 + 32 x BN) halves, XOR-swizzled in 16-byte chunks so that the
// eight row addresses of every ldmatrix phase fall in distinct banks:
//   A row r (64 bytes, 4 chunks):          chunk c is stored at c ^ ((r >> 1) & 3)
//   B row k (2 BN bytes, BN / 8 chunks):   chunk c is stored at c ^ (k & 7)
// Launch: block (32 * (BM / WM) * (BN / WN), 1, 1), grid (ceil(N / BN), ceil(M / BM)).

#include <cuda_fp16.h>

#include <cstdint>

#include "sm80_async.cuh"

namespace stc {

constexpr int kBK = 32;

template <int BM, int BN, int WM, int WN, int STAGES>
struct MmaTile {
    static constexpr int kWarpsN = BN / WN;
    static constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
    static constexpr int kFragM = WM / 16;   // m16 rows per warp
    static constexpr int kFragN = WN / 8;    // n8 columns per warp
    static constexpr int kStageA = BM * kBK * 2;  // bytes
    static constexpr int kStageB = kBK * BN * 2;
    static constexpr int kChunksA = BM * kBK / 8 / kThreads;  // 16-byte cp.async per thread and stage
    static constexpr int kChunksB = kBK * BN / 8 / kThreads;
    static_assert(BN / 8 >= 8 && kFragN % 2 == 0, "B swizzle and ldmatrix.x4.trans need 16-column pairs");
    static_assert(kChunksA * kThreads * 8 == BM * kBK && kChunksB * kThreads * 8 == kBK * BN, "even split");
};

// Issues the cp.async copies of k tile starting at k0 into stage buffers sa, sb (shared addresses).
template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void load_tile(uint32_t sa, uint32_t sb, const half* __restrict__ A,
                                          const half* __restrict__ B, int m0, int n0, int k0, int M, int N,
                                          int K, int lda, int ldb)
{
    using T = MmaTile<BM, BN, WM, WN, STAGES>;
#pragma unroll
    for (int j = 0; j < T::kChunksA; ++j) {
        const int i = threadIdx.x + j * T::kThreads;
        const int r = i / (kBK / 8);
        const int c = i % (kBK / 8);
        const int rest = K - (k0 + c * 8);
        const int bytes = (m0 + r < M && rest > 0) ? min(rest, 8) * 2 : 0;
        const half* src = bytes > 0 ? A + (m0 + r) * lda + k0 + c * 8 : A;
        cp_async_16(sa + a_offset(r, c), src, bytes);
    }
#pragma unroll
    for (int j = 0; j < T::kChunksB; ++j) {
        const int i = threadIdx.x + j * T::kThreads;
        const int k = i / (BN / 8);
        const int c = i % (BN / 8);
        const int rest = N - (n0 + c * 8);
        const int bytes = (k0 + k < K && rest > 0) ? min(rest, 8) * 2 : 0;
        const half* src = bytes > 0 ? B + (k0 + k) * ldb + n0 + c * 8 : B;
        cp_async_16(sb + b_offset<BN>(k, c), src, bytes);
    }
}

// One k tile of warp-level math: 2 k16 steps, each ldmatrix A (x4) and B (x4.trans) then mma.sync.
template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void mma_gemm(const half* __restrict__ A, const half* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                         int ldc)
{
    using T = MmaTile<BM, BN, WM, WN, STAGES>;
    extern __shared__ __align__(16) uint8_t smem[];
    const uint32_t sa = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t sb = sa + STAGES * T::kStageA;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int wm = warp / T::kWarpsN;
    const int wn = warp % T::kWarpsN;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int k_tiles = (K + kBK - 1) / kBK;

    float acc[T::kFragM][T::kFragN][4];
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < T::kFragN; ++ni) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                acc[mi][ni][e] = 0.0f;
            }
        }
    }

    // Prologue: fill STAGES - 1 buffers; one commit group per k tile (empty past the end keeps counts fixed).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) {
            load_tile<BM, BN, WM, WN, STAGES>(sa + s * T::kStageA, sb + s * T::kStageB, A, B, m0, n0, s * kBK,
                                              M, N, K, lda, ldb);
        }
        cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
        __syncthreads();              // everyone's have; and everyone is done with tile kt - 1's buffer
        const int next = kt + STAGES - 1;
        if (next < k_tiles) {
            const int s = next % STAGES;
            load_tile<BM, BN, WM, WN, STAGES>(sa + s * T::kStageA, sb + s * T::kStageB, A, B, m0, n0,
                                              next * kBK, M, N, K, lda, ldb);
        }
        cp_async_commit();
        const int s = kt % STAGES;
        compute_tile<T, BN, WM, WN>(acc, sa + s * T::kStageA, sb + s * T::kStageB, wm, wn, lane);
    }
    cp_async_wait<0>();

    // Epilogue: thread (g, t) = (lane / 4, lane % 4) holds rows g and g + 8, columns 2t and 2t + 1.
    const int g = lane / 4;
    const int t = lane % 4;
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < T::kFragN; ++ni) {
            const int col = n0 + wn * WN + ni * 8 + 2 * t;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * WM + mi * 16 + g + 8 * h;
                if (row < M && col < N) {
                    C[row * ldc + col] = acc[mi][ni][2 * h];
                }
                if (row < M && col + 1 < N) {
                    C[row * ldc + col + 1] = acc[mi][ni][2 * h + 1];
                }
            }
        }
    }
}

}  // namespace stc

// 128x128x32 block tile, 2x2 warps of 64x64, 3 stages: 128 threads, 48 KiB dynamic shared memory.
extern "C" __global__ void __launch_bounds__(128) gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3(
    const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, int lda, int ldb, int ldc)
{
    stc::mma_gemm<128, 128, 64, 64, 3>(A, B, C, M, N, K, lda, ldb, ldc);
}

// 64x64x32 block tile, 2x2 warps of 32x32, 2 stages (double buffering): 128 threads, 16 KiB.
extern "C" __global__ void __launch_bounds__(128) gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2(
    const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, int lda, int ldb, int ldc)
{
    stc::mma_gemm<64, 64, 32, 32, 2>(A, B, C, M, N, K, lda, ldb, ldc);
}
