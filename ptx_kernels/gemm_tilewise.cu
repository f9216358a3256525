// Tile-wise (TW) and tile-element-wise (TEW) GEMM of paper 002 on the Tensor Cores, one fused launch each:
// D (M x N, fp32) = W (M x K) @ X (K x N, fp16). In our orientation (W = the paper's B transposed) TW keeps
// whole rows of W (TW-C), cuts the kept rows into tiles of G consecutive kept rows, and each tile keeps its own
// reduction columns (TW-R). The kernel reads the CTO (compressed tile offsets) as the format stores them:
//   cto_rows[j] = row(j) - j for the n_kept condensed rows (CTO_n: where each output row is scattered to),
//     closed by cto_rows[n_kept] = M - n_kept (row(n_kept) = M, the end of D),
//   cto_k_lengths[t] and cto_k_offsets[t * max_len + p] = col(t, p) - p (CTO_k: which X rows tile t gathers),
// and the condensed values as A: one row of lda halves per condensed row (its tile's kept values, zero padded).
// The product is the gathered-B GEMM of gathered_mma.cuh with groups of G rows (gather X rows per tile,
// condensed W, scatter D rows); only kept rows and columns are computed.
//
// Rows of D that TW pruned are written by the thread block that owns them: condensed row j owns the original
// rows (row(j - 1), row(j)] (from 0 for j = 0; the last kept row also owns everything up to the closing
// row(n_kept) = M, and with no kept row the first block owns all of D); TW writes zeros to the pruned ones. TEW adds its element-wise remainder
// (CSR over the M rows of W: ew_row_ptr, ew_col_idx, ew_values fp16) on the CUDA cores to every row it owns,
// in the same launch after the Tensor Core epilogue: a warp per row, (column, value) pairs broadcast by shfl,
// lane l adding to columns n0 + l, n0 + l + 32, ... of its block's strip.
// Launch: block (128, 1, 1), grid (ceil(N / BN), max(1, ceil(M / BM))) (blocks past the kept rows exit),
// dynamic shared memory Tile::kSharedBytes; G % BM == 0; cto_rows ascending.

#include "gathered_mma.cuh"

namespace stc {

struct TileOffsetIndex {
    const int* cto_rows;
    const int* k_lengths;
    const int* k_offsets;
    int max_len;
    int rows;  // n_kept

    __device__ __forceinline__ int count(int t) const { return rows > 0 ? k_lengths[t] : 0; }
    __device__ __forceinline__ const int* list(int t) const { return k_offsets + t * max_len; }
    __device__ __forceinline__ int column(int raw, int p) const { return raw + p; }
    __device__ __forceinline__ int row(int j) const { return j < rows ? cto_rows[j] + j : -1; }
};

struct Remainder {
    const int* row_ptr;
    const int* col_idx;
    const half* values;
};

constexpr unsigned kFullWarp = 0xffffffffu;

constexpr int kRemainderUnroll = 8;  // non-zeros whose X loads are in flight together

// TEW: adds row r of the element-wise remainder times X to the lane's columns (n0 + lane + 32 i) in acc.
// Lanes past the row's end hold (column 0, value 0): broadcasting them adds 0 * X[0, col], so the non-zeros
// go kRemainderUnroll at a time with no bound check, their loads issued before the first FMA.
template <int PER_LANE>
__device__ __forceinline__ void add_remainder_row(float (&acc)[PER_LANE], const Remainder& ew, int r,
                                                  const half* __restrict__ B, int ldb, const int (&col)[PER_LANE],
                                                  int lane)
{
    const int begin = ew.row_ptr[r];
    const int end = ew.row_ptr[r + 1];
    for (int base = begin; base < end; base += 32) {
        const int mine = base + lane;
        int k = 0;
        float v = 0.0f;
        if (mine < end) {
            k = ew.col_idx[mine];
            v = __half2float(ew.values[mine]);
        }
        const int n = min(32, end - base);
        for (int e = 0; e < n; e += kRemainderUnroll) {
            float ve[kRemainderUnroll];
            half xe[kRemainderUnroll][PER_LANE];
#pragma unroll
            for (int u = 0; u < kRemainderUnroll; ++u) {
                const half* x = B + __shfl_sync(kFullWarp, k, e + u) * ldb;  // e + u < 32: n <= 32, e % 8 == 0
                ve[u] = __shfl_sync(kFullWarp, v, e + u);
#pragma unroll
                for (int i = 0; i < PER_LANE; ++i) {
                    xe[u][i] = x[col[i]];
                }
            }
#pragma unroll
            for (int u = 0; u < kRemainderUnroll; ++u) {
#pragma unroll
                for (int i = 0; i < PER_LANE; ++i) {
                    acc[i] = fmaf(ve[u], __half2float(xe[u][i]), acc[i]);
                }
            }
        }
    }
}

// The rows this block owns beyond the Tensor Core epilogue (see the top of this file): TW zeros the pruned
// ones; with REMAINDER (TEW) every owned row gets its element-wise part added. Warp w takes slots w, w + 4, ...
template <int BM, int BN, bool REMAINDER>
__device__ __forceinline__ void owned_rows(float* __restrict__ C, const TileOffsetIndex& idx, const Remainder& ew,
                                           const half* __restrict__ B, int M, int N, int ldb, int ldc)
{
    constexpr int kPerLane = BN / 32;
    constexpr int kWarps = 4;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int j0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    int col[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
        col[i] = min(n0 + lane + 32 * i, N - 1);  // lanes past N read a valid column and store nothing
    }
    // Lane i fetches the rows of the warp's slot i (and of the condensed row before it) up front, so the
    // slots do not wait for their row ids one after the other.
    static_assert(BM / kWarps <= 32, "one lane per slot of the warp");
    const int mine = j0 + warp + kWarps * lane;
    const int mine_kept = lane < BM / kWarps ? idx.row(mine) : -1;
    const int mine_prev = lane < BM / kWarps && mine > 0 ? idx.row(mine - 1) : -1;
    for (int s = warp; s < BM; s += kWarps) {
        const int j = j0 + s;
        if (j >= idx.rows && !(idx.rows == 0 && j == 0)) {
            break;
        }
        const int kept = __shfl_sync(kFullWarp, mine_kept, s / kWarps);
        const int lo = __shfl_sync(kFullWarp, mine_prev, s / kWarps) + 1;
        const int hi = j >= idx.rows - 1 ? M : kept + 1;
        for (int r = lo; r < hi; ++r) {
            if (!REMAINDER && r == kept) {
                continue;  // the Tensor Core epilogue wrote it
            }
            float acc[kPerLane];
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                acc[i] = (r == kept && n0 + lane + 32 * i < N) ? C[r * ldc + col[i]] : 0.0f;
            }
            if (REMAINDER) {
                add_remainder_row<kPerLane>(acc, ew, r, B, ldb, col, lane);
            }
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                if (n0 + lane + 32 * i < N) {
                    C[r * ldc + col[i]] = acc[i];
                }
            }
        }
    }
}

template <int BM, int BN, int WM, int WN, int STAGES, bool REMAINDER>
__device__ __forceinline__ void tilewise_gemm(const half* __restrict__ A, const half* __restrict__ B,
                                              float* __restrict__ C, const TileOffsetIndex& idx,
                                              const Remainder& ew, int M, int N, int G, int lda, int ldb, int ldc)
{
    static_assert(32 * (BM / WM) * (BN / WN) == 128, "owned_rows assumes 4 warps");
    if (blockIdx.y > 0 && static_cast<int>(blockIdx.y) * BM >= idx.rows) {
        return;  // past the kept rows (the grid is sized for M)
    }
    gathered::gathered_gemm<BM, BN, WM, WN, STAGES>(A, B, C, idx, N, G, lda, ldb, ldc);
    if (REMAINDER) {
        __syncthreads();  // the epilogue's stores are visible to the block before owned_rows reads them back
    }
    owned_rows<BM, BN, REMAINDER>(C, idx, ew, B, M, N, ldb, ldc);
}

}  // namespace stc

#define STC_TW_PARAMS                                                                                         \
    const half *__restrict__ A, const half *__restrict__ B, float *__restrict__ C,                           \
        const int *__restrict__ cto_rows, const int *__restrict__ cto_k_lengths,                             \
        const int *__restrict__ cto_k_offsets, int M, int N, int n_kept, int G, int max_len, int lda, int ldb, \
        int ldc

#define STC_TEW_PARAMS                                                                                  \
    STC_TW_PARAMS, const int *__restrict__ ew_row_ptr, const int *__restrict__ ew_col_idx,             \
        const half *__restrict__ ew_values

// TW, G a multiple of 32: 32x128 block tile, 1x4 warps of 32x32, 3 stages: 128 threads, 31 KiB.
extern "C" __global__ void __launch_bounds__(128) gemm_tilewise_f16_f32_tile32x128x32_warp32x32_stage3(
    STC_TW_PARAMS)
{
    const stc::TileOffsetIndex idx{cto_rows, cto_k_lengths, cto_k_offsets, max_len, n_kept};
    stc::tilewise_gemm<32, 128, 32, 32, 3, false>(A, B, C, idx, {}, M, N, G, lda, ldb, ldc);
}

// TW, G a multiple of 64: 64x128 block tile, 2x2 warps of 32x64, 3 stages: 128 threads, 37 KiB.
extern "C" __global__ void __launch_bounds__(128) gemm_tilewise_f16_f32_tile64x128x32_warp32x64_stage3(
    STC_TW_PARAMS)
{
    const stc::TileOffsetIndex idx{cto_rows, cto_k_lengths, cto_k_offsets, max_len, n_kept};
    stc::tilewise_gemm<64, 128, 32, 64, 3, false>(A, B, C, idx, {}, M, N, G, lda, ldb, ldc);
}

// TEW, G a multiple of 32: the TW kernel above plus the element-wise remainder on the CUDA cores.
extern "C" __global__ void __launch_bounds__(128) gemm_tew_f16_f32_tile32x128x32_warp32x32_stage3(STC_TEW_PARAMS)
{
    const stc::TileOffsetIndex idx{cto_rows, cto_k_lengths, cto_k_offsets, max_len, n_kept};
    const stc::Remainder ew{ew_row_ptr, ew_col_idx, ew_values};
    stc::tilewise_gemm<32, 128, 32, 32, 3, true>(A, B, C, idx, ew, M, N, G, lda, ldb, ldc);
}

// TEW, G a multiple of 64: 64x128 block tile, 2x2 warps of 32x64, plus the remainder on the CUDA cores.
extern "C" __global__ void __launch_bounds__(128) gemm_tew_f16_f32_tile64x128x32_warp32x64_stage3(STC_TEW_PARAMS)
{
    const stc::TileOffsetIndex idx{cto_rows, cto_k_lengths, cto_k_offsets, max_len, n_kept};
    const stc::Remainder ew{ew_row_ptr, ew_col_idx, ew_values};
    stc::tilewise_gemm<64, 128, 32, 64, 3, true>(A, B, C, idx, ew, M, N, G, lda, ldb, ldc);
}
