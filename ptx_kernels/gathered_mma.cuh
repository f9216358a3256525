// Gathered-B Tensor Core GEMM (sm_80: mma.sync.m16n8k16 f16 x f16 + f32, ldmatrix, cp.async), the core of the
// Shfl-BW SpMM (paper 000) and of the tile-wise GEMM (paper 002): D = W @ X where the rows of W come in groups
// of H rows that keep the same reduction columns. The kept columns of each group are stitched offline into a
// dense block of A ("condensed" rows j = 0, 1, ..., each with its group's kept values, row-major, lda), so
//
//   D[row(j), :] = A[j, 0:count(g)] @ X[col(g, 0:count(g)), :]     for every condensed row j of group g = j / H.
//
// The thread block of (blockIdx.x, blockIdx.y) computes the BM x BN tile of condensed rows j0 = blockIdx.y * BM
// and columns n0 = blockIdx.x * BN (H % BM == 0, so a block never straddles two groups). Per k tile of 32 kept
// columns it copies the A tile as it is and gathers the 32 matching rows of X into shared memory (in-buffer
// stitching), then runs the dense warp-level mma; the epilogue writes condensed row j to D row row(j).
//
// Pipeline: STAGES shared buffers, STAGES - 1 k tiles in flight while one is computed (paper 000's Alg. 1 has
// its compute lag the load by PipeStage + 1 on PipeStage buffers, overwriting a buffer still being read; here
// tile kt + STAGES - 1 goes to the buffer of tile kt - 1, after the barrier that ends tile kt - 1's reads).
// Metadata prefetch: the column indices are fetched in bulk, kMetaTiles k tiles at a time (MetaPrefetchStage),
// by cp.async into a double buffer, one chunk ahead: chunk c + 1 rides in the copy group of k tile
// c * kMetaTiles and is read when tile (c + 1) * kMetaTiles is issued, kMetaTiles - STAGES + 1 >= 0 barriers
// after that group is complete.
//
// Index (the format): count(g) kept columns of group g, list(g) its raw column entries, column(raw, p) the
// column of entry p, row(j) the D row of condensed row j (-1: none), rows the condensed rows that have A data.
// X row-major fp16 (ldb % 8 == 0), A fp16 (lda % 8 == 0), D row-major fp32 (ldc); A and X 16-byte aligned.
// Ragged N, counts and row counts are zero-filled by cp.async src-size and bounds-checked stores.

#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "sm80_async.cuh"

namespace stc::gathered {

constexpr int kBK = 32;
constexpr int kMetaTiles = 4;
constexpr int kMetaChunk = kBK * kMetaTiles;

template <int BM, int BN, int WM, int WN, int STAGES>
struct Tile {
    static constexpr int kWarpsN = BN / WN;
    static constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
    static constexpr int kFragM = WM / 16;
    static constexpr int kFragN = WN / 8;
    static constexpr int kStageA = BM * kBK * 2;  // bytes
    static constexpr int kStageB = kBK * BN * 2;
    static constexpr int kChunksA = BM * kBK / 8 / kThreads;
    static constexpr int kChunksB = kBK * BN / 8 / kThreads;
    static constexpr int kMetaPerThread = kMetaChunk / kThreads;
    static constexpr int kSharedBytes = STAGES * (kStageA + kStageB) + 2 * kMetaChunk * 4;
    static_assert(BN / 8 >= 8 && kFragN % 2 == 0, "B swizzle and ldmatrix.x4.trans need 16-column pairs");
    static_assert(kChunksA * kThreads * 8 == BM * kBK && kChunksB * kThreads * 8 == kBK * BN, "even split");
    static_assert(kMetaPerThread * kThreads == kMetaChunk, "metadata chunk splits evenly over the threads");
    static_assert(kMetaTiles >= STAGES - 1, "a metadata chunk must land before its first k tile is issued");
};

// Everything one thread block needs to issue the copies of a k tile.
struct BlockTile {
    int j0;           // first condensed row
    int n0;           // first column of D
    int count;        // kept columns of the block's group
    const int* list;  // the group's raw column entries
};

// Copies chunk c of the group's column entries (kMetaChunk of them, zero past count) into meta slot c & 1.
template <class T>
__device__ __forceinline__ void fetch_meta(uint32_t smeta, const BlockTile& bt, int chunk)
{
#pragma unroll
    for (int e = 0; e < T::kMetaPerThread; ++e) {
        const int slot = threadIdx.x + e * T::kThreads;
        const int p = chunk * kMetaChunk + slot;
        const int bytes = p < bt.count ? 4 : 0;
        cp_async_4(smeta + ((chunk & 1) * kMetaChunk + slot) * 4, bytes > 0 ? bt.list + p : bt.list, bytes);
    }
}

// Issues the cp.async copies of k tile t: A as stored, X gathered through the column entries in meta (and,
// at the start of a metadata chunk, the next chunk of entries).
template <class T, int BN, class Index>
__device__ __forceinline__ void load_tile(uint32_t sa, uint32_t sb, uint32_t smeta, const int* meta,
                                          const BlockTile& bt, const Index& idx, int t,
                                          const half* __restrict__ A, const half* __restrict__ B, int N,
                                          int lda, int ldb)
{
    const int meta_chunks = (bt.count + kMetaChunk - 1) / kMetaChunk;
    if (t % kMetaTiles == 0 && t / kMetaTiles + 1 < meta_chunks) {
        fetch_meta<T>(smeta, bt, t / kMetaTiles + 1);
    }
#pragma unroll
    for (int j = 0; j < T::kChunksA; ++j) {
        const int i = threadIdx.x + j * T::kThreads;
        const int r = i / (kBK / 8);
        const int c = i % (kBK / 8);
        const int p = t * kBK + c * 8;
        const int rest = bt.count - p;
        const int row = bt.j0 + r;
        const int bytes = (row < idx.rows && rest > 0) ? min(rest, 8) * 2 : 0;
        const half* src = bytes > 0 ? A + row * lda + p : A;
        cp_async_16(sa + a_offset(r, c), src, bytes);
    }
    const int* entries = meta + ((t / kMetaTiles) & 1) * kMetaChunk + (t % kMetaTiles) * kBK;
#pragma unroll
    for (int j = 0; j < T::kChunksB; ++j) {
        const int i = threadIdx.x + j * T::kThreads;
        const int k = i / (BN / 8);
        const int c = i % (BN / 8);
        const int p = t * kBK + k;
        const int rest = N - (bt.n0 + c * 8);
        const int bytes = (p < bt.count && rest > 0) ? min(rest, 8) * 2 : 0;
        const half* src = bytes > 0 ? B + idx.column(entries[k], p) * ldb + bt.n0 + c * 8 : B;
        cp_async_16(sb + b_offset<BN>(k, c), src, bytes);
    }
}

// The thread block's tile (see the top of this file), H rows per group.
template <int BM, int BN, int WM, int WN, int STAGES, class Index>
__device__ __forceinline__ void gathered_gemm(const half* __restrict__ A, const half* __restrict__ B,
                                              float* __restrict__ C, const Index& idx, int N, int H, int lda,
                                              int ldb, int ldc)
{
    using T = Tile<BM, BN, WM, WN, STAGES>;
    extern __shared__ __align__(16) uint8_t smem[];
    const uint32_t sa = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t sb = sa + STAGES * T::kStageA;
    const uint32_t smeta = sb + STAGES * T::kStageB;
    const int* meta = reinterpret_cast<const int*>(smem + STAGES * (T::kStageA + T::kStageB));

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int wm = warp / T::kWarpsN;
    const int wn = warp % T::kWarpsN;
    const int group = blockIdx.y * BM / H;
    const BlockTile bt{static_cast<int>(blockIdx.y) * BM, static_cast<int>(blockIdx.x) * BN, idx.count(group),
                       idx.list(group)};
    const int k_tiles = (bt.count + kBK - 1) / kBK;

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

    // Prologue: the first metadata chunk (waited for), then STAGES - 1 k tiles, one commit group each.
    if (k_tiles > 0) {
        fetch_meta<T>(smeta, bt, 0);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) {
            load_tile<T, BN>(sa + s * T::kStageA, sb + s * T::kStageB, smeta, meta, bt, idx, s, A, B, N, lda,
                             ldb);
        }
        cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
        __syncthreads();              // everyone's have; and everyone is done with tile kt - 1's buffers
        const int next = kt + STAGES - 1;
        if (next < k_tiles) {
            const int s = next % STAGES;
            load_tile<T, BN>(sa + s * T::kStageA, sb + s * T::kStageB, smeta, meta, bt, idx, next, A, B, N, lda,
                             ldb);
        }
        cp_async_commit();
        const int s = kt % STAGES;
        compute_tile<T, BN, WM, WN>(acc, sa + s * T::kStageA, sb + s * T::kStageB, wm, wn, lane);
    }
    cp_async_wait<0>();

    // Epilogue: thread (g, t) = (lane / 4, lane % 4) holds condensed rows g and g + 8, columns 2t and 2t + 1;
    // each row goes back to its original position row(j).
    const int g = lane / 4;
    const int t = lane % 4;
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = idx.row(bt.j0 + wm * WM + mi * 16 + g + 8 * h);
            if (row < 0) {
                continue;
            }
#pragma unroll
            for (int ni = 0; ni < T::kFragN; ++ni) {
                const int col = bt.n0 + wn * WN + ni * 8 + 2 * t;
                if (col < N) {
                    C[row * ldc + col] = acc[mi][ni][2 * h];
                }
                if (col + 1 < N) {
                    C[row * ldc + col + 1] = acc[mi][ni][2 * h + 1];
                }
            }
        }
    }
}

}  // namespace stc::gathered
