// WMMA GEMM tiles as strided-batched launches (cublasGemmStridedBatchedEx's form: one launch runs `batch`
// GEMMs of one shape, as frameworks run attention's per-head score and context GEMMs on the V100 and A100),
// compiled with `nvcc -ptx -arch=sm_80 -O3` into gemm_wmma_batched.ptx (stcsim.kernels.descriptors.gemm_wmma_batched
// describes, prepares and launches them). The code is gemm_wmma_tiles.cu's tiled WMMA GEMM with one K slice
// (copied, so that gemm_wmma_tiles.ptx stays byte for byte what it was) and blockIdx.z the batch index:
// C[z] = A[z] * B[z] with A[z] = A + z * strideA (M x K row-major fp16, lda), B[z] = B + z * strideB (K x N
// row-major fp16, ldb), C[z] = C + z * strideC (M x N row-major fp32, ldc); strides in elements, 64-bit. Any
// M, N, K >= 1. Launch: block (32 * (BM/WM) * (BN/WN), 1, 1), grid (ceil(N / BN), ceil(M / BM), batch);
// parameters A, B, C, M, N, K, lda, ldb, ldc, strideA, strideB, strideC.
// Every __syncthreads() below sits behind a condition that is uniform across the block.

#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "wmma_tile.cuh"

using namespace nvcuda;

namespace stc {

// Copies the 8 elements at (r, c) of a matrix into dst, zero outside rows x [c_begin, cols): one 16-byte
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

// Stores (S = 1) or adds (S > 1, atomic) a 16x16 accumulator tile at (row0, col0) of C. direct (block
// uniform, S = 1 only): straight to global memory; otherwise through the warp's 16x16 staging tile.
__device__ __forceinline__ void epilogue_tile16(const FragC& acc, float* __restrict__ C, int row0, int col0,
                                                int M, int N, int ldc, bool direct, bool add, float* stage,
                                                int lane)
{
    if (direct) {
        wmma::store_matrix_sync(C + row0 * ldc + col0, acc, ldc, wmma::mem_row_major);
        return;
    }
    wmma::store_matrix_sync(stage, acc, 16, wmma::mem_row_major);
    __syncwarp();
    const int r = lane / 2;
    const int c = (lane % 2) * 8;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        if (row0 + r < M && col0 + c + e < N) {
            float* dst = &C[(row0 + r) * ldc + col0 + c + e];
            if (add) {
                atomicAdd(dst, stage[r * 16 + c + e]);
            } else {
                *dst = stage[r * 16 + c + e];
            }
        }
    }
    __syncwarp();
}

template <int BM, int BN, int WM, int WN>
__device__ __forceinline__ void wmma_gemm_batched(const half* __restrict__ A, const half* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                                  int ldc, long long stride_a, long long stride_b,
                                                  long long stride_c)
{
    constexpr int kBK = 32;
    constexpr int kSkew = 8;
    constexpr int kWarpsN = BN / WN;
    constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
    constexpr int kFragM = WM / 16;
    constexpr int kFragN = WN / 16;
    constexpr int kChunksA = BM * kBK / 8;
    constexpr int kChunksB = kBK * BN / 8;
    __shared__ __align__(32) half sA[BM][kBK + kSkew];
    __shared__ __align__(32) half sB[kBK][BN + kSkew];
    __shared__ __align__(32) float sC[kThreads / 32][16 * 16];

    A += blockIdx.z * stride_a;  // this block's GEMM of the batch
    B += blockIdx.z * stride_b;
    C += blockIdx.z * stride_c;
    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / kWarpsN;
    const int wn = warp % kWarpsN;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const bool vec_a = lda % 8 == 0 && stride_a % 8 == 0;
    const bool vec_b = ldb % 8 == 0 && stride_b % 8 == 0;

    FragC acc[kFragM][kFragN];
#pragma unroll
    for (int mi = 0; mi < kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kFragN; ++ni) {
            wmma::fill_fragment(acc[mi][ni], 0.0f);
        }
    }

    for (int k0 = 0; k0 < K; k0 += kBK) {
#pragma unroll
        for (int j = 0; j < (kChunksA + kThreads - 1) / kThreads; ++j) {
            const int i = tid + j * kThreads;
            if (kChunksA % kThreads == 0 || i < kChunksA) {
                const int r = i / (kBK / 8);
                const int c = (i % (kBK / 8)) * 8;
                copy_chunk8(&sA[r][c], A + k0, m0 + r, c, M, K - k0, lda, vec_a);
            }
        }
#pragma unroll
        for (int j = 0; j < (kChunksB + kThreads - 1) / kThreads; ++j) {
            const int i = tid + j * kThreads;
            if (kChunksB % kThreads == 0 || i < kChunksB) {
                const int r = i / (BN / 8);
                const int c = (i % (BN / 8)) * 8;
                copy_chunk8(&sB[r][c], B + n0, k0 + r, c, K, N - n0, ldb, vec_b);
            }
        }
        __syncthreads();
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

    const bool direct = m0 + BM <= M && n0 + BN <= N && ldc % 8 == 0 && stride_c % 8 == 0;
#pragma unroll
    for (int mi = 0; mi < kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kFragN; ++ni) {
            epilogue_tile16(acc[mi][ni], C, m0 + wm * WM + mi * 16, n0 + wn * WN + ni * 16, M, N, ldc, direct,
                            false, sC[warp], lane);
        }
    }
}

}  // namespace stc

#define STC_WMMA_BATCHED(BM, BN, WM, WN)                                                                     \
    extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))                                 \
        gemm_wmma_batched_f16_f32_tile##BM##x##BN##x32_warp##WM##x##WN(                                      \
            const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int M, int N,      \
            int K, int lda, int ldb, int ldc, long long stride_a, long long stride_b, long long stride_c)     \
    {                                                                                                         \
        stc::wmma_gemm_batched<BM, BN, WM, WN>(A, B, C, M, N, K, lda, ldb, ldc, stride_a, stride_b,           \
                                                stride_c);                                                    \
    }

// gemm_wmma_tiles.cu's tiles: 128x128x32 (2x4 warps of 64x32), 64x64x32 (2x2 of 32x32), 64x32x32 (2x2 of
// 32x16), 32x32x32 (2x2 of 16x16), 64x16x32 (4x1 of 16x16).
STC_WMMA_BATCHED(128, 128, 64, 32)
STC_WMMA_BATCHED(64, 64, 32, 32)
STC_WMMA_BATCHED(64, 32, 32, 16)
STC_WMMA_BATCHED(32, 32, 16, 16)
STC_WMMA_BATCHED(64, 16, 16, 16)
