// Shfl-BW SpMM (paper 000) on the sm_70 / sm_75 Tensor Cores: D (M x N, fp32) = W (M x K, Shfl-BW) @ X (K x N,
// fp16), with nvcuda::wmma m16n16k16 (fp16 inputs, fp32 accumulate) and ordinary synchronous global -> shared
// copies: no cp.async, ldmatrix or mma.sync (sm_80+), so the V100 and the T4 run it. spmm_shflbw.cu is the
// sm_80 kernel of the same format (gathered_mma.cuh: cp.async pipeline, ldmatrix, mma.sync m16n8k16).
//
// Format (as spmm_shflbw.cu reads it): row_indices (the original row of every stored row, group-major, V per
// group; ids >= M are padding rows), col_ptr / col_indices (each group's kept columns, count(g) =
// col_ptr[g + 1] - col_ptr[g]) and the stitched values laid out as A: one row of lda halves per stored row,
// the group's kept values left-aligned, zero padded to lda (lda % 8 == 0). So, for stored row j of group
// g = j / V,
//
//   D[row_indices[j], :] = A[j, 0:count(g)] @ X[col_indices[col_ptr[g] + 0:count(g)], :].
//
// Structure: gemm_wmma_tiles.cu's wmma_gemm_splitk with a gathered B operand (no split-K: gridDim.z = 1). The
// block of (blockIdx.x, blockIdx.y) computes the BM x BN tile of stored rows j0 = blockIdx.y * BM and columns
// n0 = blockIdx.x * BN (V % BM == 0: a block never straddles two groups). Per k tile t of 32 kept columns it
// copies A[j0:j0 + BM, 32t:32t + 32] as stored and gathers the X rows col_indices[col_ptr[g] + 32t + k],
// k < 32 (zero past count), into shared memory (rows skewed by 8 halves against bank conflicts, 16-byte
// copy_chunk8 loads), then runs two k16 steps of (WM/16) x (WN/16) accumulator fragments per warp. Only kept
// columns are multiplied: the k loop runs over ceil(count / 32) tiles, never over K. The column indices of
// tile t + 1 are loaded into registers while tile t is computed (the kernel's only prefetch: the gather's
// extra indirection then costs no exposed latency per tile). Epilogue: each 16x16 fragment goes through the
// warp's 16x16 staging tile; stored row j goes to D row row_indices[j] (skipped when >= M), columns
// bounds-checked against N.
//
// Layout: A stored rows x lda fp16, X (B) K x N row-major fp16 (ldb % 8 == 0), D (C) M x N row-major fp32
// (ldc); A and X 16-byte aligned. Ragged N and counts are zero-filled in shared memory.
// Launch: block (32 * (BM / WM) * (BN / WN), 1, 1), grid (ceil(N / BN), round_up(M, 64) / BM, 1), static
// shared memory only; rows = stored rows (a multiple of V). Blocks past the stored rows exit at once.
// Every __syncthreads() below sits behind a condition that is uniform across the block.

#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "wmma_tile.cuh"

using namespace nvcuda;

namespace stc {

// Copies the 8 halves at column c of one row (src: the row's first element) into dst, zero at and past column
// cols (cols <= 0: a row of zeros, src is not read): one 16-byte load when the whole chunk is inside (vec:
// 16-byte aligned rows), a 16-byte store of zeros when none of it is, element by element otherwise.
__device__ __forceinline__ void copy_chunk8(half* dst, const half* __restrict__ src, int c, int cols, bool vec)
{
    if (c >= cols) {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
        return;
    }
    if (vec && c + 8 <= cols) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src + c);
        return;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        dst[e] = c + e < cols ? src[c + e] : half_zero();
    }
}

// Writes a 16x16 accumulator tile of stored rows j0.. and columns col0.. of the block to D through the warp's
// 16x16 staging tile: lane (r, h) = (lane / 2, lane % 2) writes columns 8h..8h + 7 of stored row j0 + r to D
// row row_indices[j0 + r] (nothing for a padding row; two 16-byte stores when ldc % 4 == 0 and the 8 columns
// are inside D, bounds-checked scalar stores otherwise).
__device__ __forceinline__ void epilogue_tile16(const FragC& acc, float* __restrict__ C,
                                                const int* __restrict__ row_indices, int j0, int col0, int M,
                                                int N, int ldc, bool vec_c, float* stage, int lane)
{
    wmma::store_matrix_sync(stage, acc, 16, wmma::mem_row_major);
    __syncwarp();
    const int r = lane / 2;
    const int c = (lane % 2) * 8;
    const int row = row_indices[j0 + r];
    const int col = col0 + c;
    if (row < M) {
        const float* src = stage + r * 16 + c;
        float* dst = C + row * ldc + col;
        if (vec_c && col + 8 <= N) {
            reinterpret_cast<uint4*>(dst)[0] = reinterpret_cast<const uint4*>(src)[0];
            reinterpret_cast<uint4*>(dst)[1] = reinterpret_cast<const uint4*>(src)[1];
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                if (col + e < N) {
                    dst[e] = src[e];
                }
            }
        }
    }
    __syncwarp();
}

template <int BM, int BN, int WM, int WN>
__device__ __forceinline__ void shflbw_wmma_spmm(const half* __restrict__ A, const half* __restrict__ B,
                                                 float* __restrict__ C, const int* __restrict__ row_indices,
                                                 const int* __restrict__ col_ptr,
                                                 const int* __restrict__ col_indices, int M, int N, int rows,
                                                 int V, int lda, int ldb, int ldc)
{
    constexpr int kBK = 32;
    constexpr int kSkew = 8;
    constexpr int kWarpsN = BN / WN;
    constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
    constexpr int kFragM = WM / 16;
    constexpr int kFragN = WN / 16;
    constexpr int kChunksA = BM * kBK / 8 / kThreads;
    constexpr int kChunksB = kBK * BN / 8 / kThreads;
    static_assert(kChunksA * kThreads * 8 == BM * kBK && kChunksB * kThreads * 8 == kBK * BN, "even split");
    __shared__ __align__(32) half sA[BM][kBK + kSkew];
    __shared__ __align__(32) half sB[kBK][BN + kSkew];
    __shared__ __align__(32) float sC[kThreads / 32][16 * 16];

    const int j0 = blockIdx.y * BM;
    if (j0 >= rows) {
        return;  // block-uniform: past the stored rows (the grid is sized for round_up(M, 64))
    }
    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / kWarpsN;
    const int wn = warp % kWarpsN;
    const int n0 = blockIdx.x * BN;
    const int group = j0 / V;
    const int begin = col_ptr[group];
    const int count = col_ptr[group + 1] - begin;
    const int* __restrict__ list = col_indices + begin;
    const int k_tiles = (count + kBK - 1) / kBK;
    const int a_cols = (count + 7) / 8 * 8;  // A is zero past count up to lda (a multiple of 8)
    const bool vec_a = lda % 8 == 0;
    const bool vec_b = ldb % 8 == 0;

    // The X row each of this thread's B chunks gathers in the next k tile (-1: past count, zero-filled).
    int gather[kChunksB];
#pragma unroll
    for (int j = 0; j < kChunksB; ++j) {
        const int k = (tid + j * kThreads) / (BN / 8);
        gather[j] = k < count ? list[k] : -1;
    }

    FragC acc[kFragM][kFragN];
#pragma unroll
    for (int mi = 0; mi < kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kFragN; ++ni) {
            wmma::fill_fragment(acc[mi][ni], 0.0f);
        }
    }

    for (int t = 0; t < k_tiles; ++t) {
        const int k0 = t * kBK;
#pragma unroll
        for (int j = 0; j < kChunksA; ++j) {
            const int i = tid + j * kThreads;
            const int r = i / (kBK / 8);
            const int c = (i % (kBK / 8)) * 8;
            copy_chunk8(&sA[r][c], A + (j0 + r) * lda + k0, c, j0 + r < rows ? a_cols - k0 : 0, vec_a);
        }
#pragma unroll
        for (int j = 0; j < kChunksB; ++j) {
            const int i = tid + j * kThreads;
            const int k = i / (BN / 8);
            const int c = (i % (BN / 8)) * 8;
            const bool kept = gather[j] >= 0;
            copy_chunk8(&sB[k][c], B + (kept ? gather[j] : 0) * ldb + n0, c, kept ? N - n0 : 0, vec_b);
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kChunksB; ++j) {  // tile t + 1's column indices, in flight during the mma
            const int k = k0 + kBK + (tid + j * kThreads) / (BN / 8);
            gather[j] = k < count ? list[k] : -1;
        }
#pragma unroll
        for (int kk = 0; kk < kBK; kk += 16) {
            FragA a[kFragM];
            FragB b[kFragN];
#pragma unroll
            for (int mi = 0; mi < kFragM; ++mi) {
                wmma::load_matrix_sync(a[mi], &sA[wm * WM + mi * 16][kk], kBK + kSkew);
            }
#pragma unroll
            for (int ni = 0; ni < kFragN; ++ni) {
                wmma::load_matrix_sync(b[ni], &sB[kk][wn * WN + ni * 16], BN + kSkew);
            }
#pragma unroll
            for (int mi = 0; mi < kFragM; ++mi) {
#pragma unroll
                for (int ni = 0; ni < kFragN; ++ni) {
                    wmma::mma_sync(acc[mi][ni], a[mi], b[ni], acc[mi][ni]);
                }
            }
        }
        __syncthreads();
    }

    const bool vec_c = ldc % 4 == 0;
#pragma unroll
    for (int mi = 0; mi < kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kFragN; ++ni) {
            epilogue_tile16(acc[mi][ni], C, row_indices, j0 + wm * WM + mi * 16, n0 + wn * WN + ni * 16, M, N,
                            ldc, vec_c, sC[warp], lane);
        }
    }
}

}  // namespace stc

#define STC_SHFLBW_WMMA(BM, BN, WM, WN)                                                                      \
    extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))                                 \
        spmm_shflbw_wmma_f16_f32_tile##BM##x##BN##x32_warp##WM##x##WN(                                       \
            const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,                    \
            const int* __restrict__ row_indices, const int* __restrict__ col_ptr,                             \
            const int* __restrict__ col_indices, int M, int N, int rows, int V, int lda, int ldb, int ldc)    \
    {                                                                                                         \
        stc::shflbw_wmma_spmm<BM, BN, WM, WN>(A, B, C, row_indices, col_ptr, col_indices, M, N, rows, V, lda, \
                                              ldb, ldc);                                                      \
    }

// V = 32 (or any multiple of 32): 32x64x32, 2x2 warps of 16x32 (1x2 fragments): 128 threads, 11 KiB.
STC_SHFLBW_WMMA(32, 64, 16, 32)
// V = 64 (or any multiple of 64): 64x64x32, 2x2 warps of 32x32 (2x2 fragments): 128 threads, 13.5 KiB.
STC_SHFLBW_WMMA(64, 64, 32, 32)
// V = 32 or 64, twice the blocks of the 32x64 tile (latency-bound layers with few blocks): 32x32x32, 2x2
// warps of 16x16 (one fragment): 128 threads, 9 KiB.
STC_SHFLBW_WMMA(32, 32, 16, 16)
