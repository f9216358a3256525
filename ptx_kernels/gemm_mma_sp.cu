// 2:4 sparse Tensor Core GEMM (sm_80): C = A * B with A 2:4 sparse along K, through mma.sp.sync m16n8k32
// (mma_sp_gemm.cuh has the main loop and the operand layouts). Only the kept half of A is read and multiplied.
//   values: M x lda compressed fp16 (lda = ksteps * 32, K zero-padded to a multiple of 64).
//   meta:   ceil(M / 16) x ksteps x 32 metadata words, in the lane order the instruction reads.
//   B:      K x N row-major fp16 (ldb % 8 == 0).   C: M x N row-major fp32 (ldc).
// Launch: block (32 * (BM / WM) * (BN / WN), 1, 1), grid (ceil(N / BN), ceil(M / BM)), dynamic shared memory
// SpTile::kSharedBytes.

#include "mma_sp_gemm.cuh"

namespace {

template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void gemm_sp(const half* __restrict__ values, const uint32_t* __restrict__ meta,
                                        const half* __restrict__ B, float* __restrict__ C, int M, int N, int K,
                                        int lda, int ldb, int ldc)
{
    const int m0 = blockIdx.y * BM;
    const int ksteps = lda / stc::sp::kBKc;
    const stc::sp::BlockRows br{values + m0 * lda, lda, min(BM, M - m0), meta + (m0 / 16) * ksteps * 32,
                                ksteps, nullptr, K, nullptr, m0};
    stc::sp::sp_gemm<BM, BN, WM, WN, STAGES>(br, B, C, N, ldb, ldc);
}

}  // namespace

// 128x128x64 block tile (dense k), 2x2 warps of 64x64, 3 stages: 128 threads, 75 KiB dynamic shared memory.
extern "C" __global__ void __launch_bounds__(128) gemm_mma_sp_f16_f32_tile128x128x64_warp64x64_stage3(
    const half* __restrict__ values, const uint32_t* __restrict__ meta, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc)
{
    gemm_sp<128, 128, 64, 64, 3>(values, meta, B, C, M, N, K, lda, ldb, ldc);
}

// 64x64x64 block tile, 2x2 warps of 32x32, 2 stages (double buffering): 128 threads, 25 KiB.
extern "C" __global__ void __launch_bounds__(128) gemm_mma_sp_f16_f32_tile64x64x64_warp32x32_stage2(
    const half* __restrict__ values, const uint32_t* __restrict__ meta, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc)
{
    gemm_sp<64, 64, 32, 32, 2>(values, meta, B, C, M, N, K, lda, ldb, ldc);
}
