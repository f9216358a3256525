// Channel-pruned ("unified", paper 001 Fig. 1(b)) SGEMM on CUDA cores: the dense SIMT GEMM of
// simt_gemm.cuh on the physically smaller reduction dimension. Pruning removed whole reduction columns of
// the weights; A holds the kept ones (M x Kept, row-major, lda), ids their column numbers (Kept int32,
// ascending), and row k of the reduction reads row ids[k] of the full activation matrix B (K x N, ldb): the
// kernel pays the gather of the kept channels in its B-tile loads, one index load per tile row.
// C: M x N row-major fp32 (ldc). Launch: block (256, 1, 1), grid (ceil(N / 64), ceil(M / 64)).
#include "simt_gemm.cuh"

// 64x64x8 block tile, 2x4 warps of 32x16, 4x4 thread tile: 256 threads.
extern "C" __global__ void __launch_bounds__(256) gemm_simt_channel_f32_f32_tile64x64x8_warp32x16_thread4x4(
    const float* __restrict__ A, const int* __restrict__ ids, const float* __restrict__ B,
    float* __restrict__ C, int M, int N, int kept, int lda, int ldb, int ldc)
{
    stc::simt_gemm<64, 64, 8, 32, 16, 4, 4>(A, B, C, M, N, kept, lda, ldb, ldc, stc::GatheredRows{ids});
}
