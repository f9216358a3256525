// WMMA GEMM kernels (nvcuda::wmma m16n16k16, fp16 inputs, fp32 accumulate): C = A * B.
// A: M x K row-major fp16 (lda), B: K x N row-major fp16 (ldb), C: M x N row-major fp32 (ldc).
// Any M, N, K >= 1. Tiles that stick out of A, B or C are staged through shared memory with zero fill;
// fully interior tiles with 16-byte aligned rows go straight to or from global memory.
// Every __syncthreads() below sits behind a condition that is uniform across the block.

#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "wmma_tile.cuh"

using namespace nvcuda;

namespace stc {

// Copies the 16x16 tile at (r0, c0) of a rows x cols matrix into dst (ld 16), zero outside the matrix.
// Each lane of the warp copies 8 consecutive elements of one row.
__device__ __forceinline__ void stage_tile16(half* dst, const half* __restrict__ src, int r0, int c0,
                                             int rows, int cols, int ld, int lane)
{
    const int r = lane / 2;
    const int c = (lane % 2) * 8;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const bool in = r0 + r < rows && c0 + c + e < cols;
        dst[r * 16 + c + e] = in ? src[(r0 + r) * ld + c0 + c + e] : half_zero();
    }
}

// Copies the 8 elements at (r, c) of a rows x cols matrix into dst, zero outside the matrix: one 16-byte
// load when the whole chunk is inside and rows are 16-byte aligned (vec), element by element otherwise.
__device__ __forceinline__ void copy_chunk8(half* dst, const half* __restrict__ src, int r, int c, int rows,
                                            int cols, int ld, bool vec)
{
    if (vec && r < rows && c + 8 <= cols) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src + r * ld + c);
        return;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const bool in = r < rows && c + e < cols;
        dst[e] = in ? src[r * ld + c + e] : half_zero();
    }
}

// Stores a 16x16 accumulator tile at (row0, col0) of C. With direct (block-uniform) the fragment goes
// straight to global memory; otherwise through the warp's 16x16 staging tile with a bounds check.
__device__ __forceinline__ void store_tile16(const FragC& acc, float* __restrict__ C, int row0, int col0,
                                             int M, int N, int ldc, bool direct, float* stage, int lane)
{
    if (direct) {
        wmma::store_matrix_sync(C + row0 * ldc + col0, acc, ldc, wmma::mem_row_major);
        return;
    }
    wmma::store_matrix_sync(stage, acc, 16, wmma::mem_row_major);
    __syncthreads();
    const int r = lane / 2;
    const int c = (lane % 2) * 8;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        if (row0 + r < M && col0 + c + e < N) {
            C[(row0 + r) * ldc + col0 + c + e] = stage[r * 16 + c + e];
        }
    }
    __syncthreads();
}

}  // namespace stc

// (a) One warp per 16x16 tile of C, A and B fragments loaded straight from global memory.
// Block: 4 warps (2x2) covering a 32x32 tile of C; grid (ceil(N / 32), ceil(M / 32)).
extern "C" __global__ void __launch_bounds__(128) gemm_wmma_global_f16_f32_tile32x32x16_warp16x16(
    const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, int lda, int ldb, int ldc)
{
    __shared__ __align__(32) half sA[4][16 * 16];
    __shared__ __align__(32) half sB[4][16 * 16];
    __shared__ __align__(32) float sC[4][16 * 16];

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int bm0 = blockIdx.y * 32;
    const int bn0 = blockIdx.x * 32;
    const int row0 = bm0 + (warp / 2) * 16;
    const int col0 = bn0 + (warp % 2) * 16;
    const bool inside = bm0 + 32 <= M && bn0 + 32 <= N;
    const bool direct_ab = inside && lda % 8 == 0 && ldb % 8 == 0;

    stc::FragC acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        stc::FragA a;
        stc::FragB b;
        if (direct_ab && k0 + 16 <= K) {
            wmma::load_matrix_sync(a, A + row0 * lda + k0, lda);
            wmma::load_matrix_sync(b, B + k0 * ldb + col0, ldb);
        } else {
            stc::stage_tile16(sA[warp], A, row0, k0, M, K, lda, lane);
            stc::stage_tile16(sB[warp], B, k0, col0, K, N, ldb, lane);
            __syncthreads();
            wmma::load_matrix_sync(a, sA[warp], 16);
            wmma::load_matrix_sync(b, sB[warp], 16);
            __syncthreads();
        }
        wmma::mma_sync(acc, a, b, acc);
    }
    stc::store_tile16(acc, C, row0, col0, M, N, ldc, inside && ldc % 8 == 0, sC[warp], lane);
}

// (b) Tiled: a 64x64x32 block tile of A and B staged in shared memory (rows skewed by 8 halves against
// bank conflicts), 4 warps (2x2) of 32x32 = 2x2 fragments each. Grid (ceil(N / 64), ceil(M / 64)).
extern "C" __global__ void __launch_bounds__(128) gemm_wmma_f16_f32_tile64x64x32_warp32x32(
    const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, int lda, int ldb, int ldc)
{
    constexpr int kSkew = 8;
    __shared__ __align__(32) half sA[64][32 + kSkew];
    __shared__ __align__(32) half sB[32][64 + kSkew];
    __shared__ __align__(32) float sC[4][16 * 16];

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / 2;
    const int wn = warp % 2;
    const int m0 = blockIdx.y * 64;
    const int n0 = blockIdx.x * 64;
    const bool vec_a = lda % 8 == 0;
    const bool vec_b = ldb % 8 == 0;

    stc::FragC acc[2][2];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 2; ++ni) {
            wmma::fill_fragment(acc[mi][ni], 0.0f);
        }
    }

    for (int k0 = 0; k0 < K; k0 += 32) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {  // 64x32 halves of A = 256 chunks of 8
            const int i = tid + j * 128;
            const int r = i / 4;
            const int c = (i % 4) * 8;
            stc::copy_chunk8(&sA[r][c], A, m0 + r, k0 + c, M, K, lda, vec_a);
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {  // 32x64 halves of B = 256 chunks of 8
            const int i = tid + j * 128;
            const int r = i / 8;
            const int c = (i % 8) * 8;
            stc::copy_chunk8(&sB[r][c], B, k0 + r, n0 + c, K, N, ldb, vec_b);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 32; kk += 16) {
            stc::FragA a[2];
            stc::FragB b[2];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                wmma::load_matrix_sync(a[mi], &sA[wm * 32 + mi * 16][kk], 32 + kSkew);
            }
#pragma unroll
            for (int ni = 0; ni < 2; ++ni) {
                wmma::load_matrix_sync(b[ni], &sB[kk][wn * 32 + ni * 16], 64 + kSkew);
            }
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
                for (int ni = 0; ni < 2; ++ni) {
                    wmma::mma_sync(acc[mi][ni], a[mi], b[ni], acc[mi][ni]);
                }
            }
        }
        __syncthreads();
    }

    const bool direct = m0 + 64 <= M && n0 + 64 <= N && ldc % 8 == 0;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 2; ++ni) {
            stc::store_tile16(acc[mi][ni], C, m0 + wm * 32 + mi * 16, n0 + wn * 32 + ni * 16, M, N, ldc, direct,
                         sC[warp], lane);
        }
    }
}
