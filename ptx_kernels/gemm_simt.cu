// Tiled shared-memory SGEMM on CUDA cores (the mainloop is in simt_gemm.cuh).
// A: M x K row-major fp32 (lda), B: K x N row-major fp32 (ldb), C: M x N row-major fp32 (ldc).
// Launch: block (256, 1, 1), grid (ceil(N / 64), ceil(M / 64)).
#include "simt_gemm.cuh"

// 64x64x8 block tile, 2x4 warps of 32x16, 4x4 thread tile: 256 threads.
extern "C" __global__ void __launch_bounds__(256) gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, int lda, int ldb, int ldc)
{
    stc::simt_gemm<64, 64, 8, 32, 16, 4, 4>(A, B, C, M, N, K, lda, ldb, ldc, stc::DenseRows{});
}
