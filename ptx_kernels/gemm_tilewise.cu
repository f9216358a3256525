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
// Rows of D that TW pruned get zeros, spread over all the grid's warps (see pruned_rows): the grid is sized
// for M rows, and the blocks past the kept rows only do this. TEW adds its element-wise remainder on the CUDA
// cores in the same launch, split by the host into the non-zeros of kept rows (by condensed row: ew_kept_ptr;
// added by the block that stored the row, after a barrier) and those of pruned rows (ew_row_ptr over the M
// rows; added by the warp that zeroed the row), with the row of every non-zero (ew_row_idx, ew_col_idx,
// ew_values fp16, kept part first). Every row of D is written by one block only.
// Launch: block (128, 1, 1), grid (ceil(N / BN), ceil(M / BM)),
// dynamic shared memory Tile::kSharedBytes; G % BM == 0; cto_rows ascending.

#include "gathered_mma.cuh"

namespace stc {

struct TileOffsetIndex {
    const int* cto_rows;
    const int* k_lengths;
    const int* k_offsets;
    int max_len;
    int rows;  // n_kept

    __device__ __forceinline__ int count(int t) const { return k_lengths[t]; }
    __device__ __forceinline__ const int* list(int t) const { return k_offsets + t * max_len; }
    __device__ __forceinline__ int column(int raw, int p) const { return raw + p; }
    __device__ __forceinline__ int row(int j) const { return j < rows ? cto_rows[j] + j : -1; }
};

struct Remainder {
    const int* kept_ptr;  // n_kept + 1: kept row j's non-zeros are [kept_ptr[j], kept_ptr[j + 1])
    const int* row_ptr;   // M + 1: pruned row r's are [row_ptr[r], row_ptr[r + 1]) (empty for kept rows)
    const int* row_idx;   // the D row of every non-zero
    const int* col_idx;
    const half* values;
};

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kWarps = 4;
constexpr int kRemainderUnroll = 16;  // non-zeros whose X loads are in flight together

// One non-zero of the remainder per lane: (row, column, value); past the range (-1, 0, 0).
struct RemainderEntry {
    int row;
    int column;
    float value;
};

__device__ __forceinline__ RemainderEntry load_entry(const Remainder& ew, int nz, int end)
{
    if (nz >= end) {
        return {-1, 0, 0.0f};
    }
    return {ew.row_idx[nz], ew.col_idx[nz], __half2float(ew.values[nz])};
}

constexpr int kLaneColumns = 4;  // consecutive columns of a 128-column strip per lane: one 8-byte X load

// Adds acc to row r of D, the lane's columns c0 .. c0 + 3 (atom.add: no round trip), and clears acc.
__device__ __forceinline__ void flush_row(float (&acc)[kLaneColumns], float* __restrict__ C, int r, int c0, int N,
                                          int ldc)
{
#pragma unroll
    for (int i = 0; i < kLaneColumns; ++i) {
        if (c0 + i < N) {
            atomicAdd(C + r * ldc + c0 + i, acc[i]);
        }
        acc[i] = 0.0f;
    }
}

// TEW: one warp adds the remainder's non-zeros [first, end) (sorted by row), chunks of 32 from `first` every
// `step`, to D on the CUDA cores: each lane loads one entry (the next chunk's while this one is used), the warp
// broadcasts them with shfl, every lane multiplies its columns of X row `column`, accumulating while the row
// stays the same and adding to D when it changes. Lanes past the range hold (-1, column 0, value 0), so the
// X loads go kRemainderUnroll at a time with no bound check, all in flight before the first FMA.
template <int BN>
__device__ __forceinline__ void walk_remainder(float* __restrict__ C, const Remainder& ew,
                                               const half* __restrict__ B, int first, int end, int step, int N,
                                               int ldb, int ldc)
{
    static_assert(BN == 32 * kLaneColumns, "a lane's columns are 4 consecutive ones of the strip");
    const int c0 = blockIdx.x * BN + kLaneColumns * (threadIdx.x % 32);
    const int load_col = c0 < N ? c0 : 0;  // c0 + 3 < ldb when c0 < N (ldb = N rounded up to 8)
    float acc[kLaneColumns] = {0.0f, 0.0f, 0.0f, 0.0f};
    int current = -1;
    RemainderEntry next = load_entry(ew, first + threadIdx.x % 32, end);
    for (int base = first; base < end; base += step) {
        const RemainderEntry mine = next;
        next = load_entry(ew, base + step + threadIdx.x % 32, end);
        const int n = min(32, end - base);
        for (int e = 0; e < n; e += kRemainderUnroll) {
            uint2 x[kRemainderUnroll];
#pragma unroll
            for (int u = 0; u < kRemainderUnroll; ++u) {
                const half* row = B + __shfl_sync(kFullWarp, mine.column, e + u) * ldb;  // e + u < 32
                x[u] = *reinterpret_cast<const uint2*>(row + load_col);
            }
#pragma unroll
            for (int u = 0; u < kRemainderUnroll; ++u) {
                const int ru = __shfl_sync(kFullWarp, mine.row, e + u);
                const float vu = __shfl_sync(kFullWarp, mine.value, e + u);
                if (e + u < n) {  // warp-uniform
                    if (ru != current) {
                        if (current >= 0) {
                            flush_row(acc, C, current, c0, N, ldc);
                        }
                        current = ru;
                    }
                    const float2 lo = __half22float2(*reinterpret_cast<const half2*>(&x[u].x));
                    const float2 hi = __half22float2(*reinterpret_cast<const half2*>(&x[u].y));
                    acc[0] = fmaf(vu, lo.x, acc[0]);
                    acc[1] = fmaf(vu, lo.y, acc[1]);
                    acc[2] = fmaf(vu, hi.x, acc[2]);
                    acc[3] = fmaf(vu, hi.y, acc[3]);
                }
            }
        }
    }
    if (current >= 0) {
        flush_row(acc, C, current, c0, N, ldc);
    }
}

// The rows TW pruned, spread over every warp of the grid column: the run of pruned rows before kept row j
// (rows row(j - 1) + 1 .. row(j) - 1, with row(-1) = -1 and row(n_kept) = M) goes to warp j, j + W, ... of the
// W = gridDim.y * 4 warps. The warp stores zeros, then (TEW) adds the run's remainder: the same lane stores
// and adds the same columns, so its adds follow its zeros.
template <int BN, bool REMAINDER>
__device__ __forceinline__ void pruned_rows(float* __restrict__ C, const TileOffsetIndex& idx,
                                            const Remainder& ew, const half* __restrict__ B, int M, int N,
                                            int ldb, int ldc)
{
    const int c0 = blockIdx.x * BN + kLaneColumns * (threadIdx.x % 32);  // the lane's columns, as in walk_remainder
    const int warps = gridDim.y * kWarps;
    for (int j = blockIdx.y * kWarps + threadIdx.x / 32; j <= idx.rows; j += warps) {
        const int lo = j == 0 ? 0 : idx.row(j - 1) + 1;
        const int hi = j == idx.rows ? M : idx.row(j);
        for (int r = lo; r < hi; ++r) {
#pragma unroll
            for (int i = 0; i < kLaneColumns; ++i) {
                if (c0 + i < N) {
                    C[r * ldc + c0 + i] = 0.0f;
                }
            }
        }
        if (REMAINDER && lo < hi) {
            walk_remainder<BN>(C, ew, B, ew.row_ptr[lo], ew.row_ptr[hi], 32, N, ldb, ldc);
        }
    }
}

template <int BM, int BN, int WM, int WN, int STAGES, bool REMAINDER>
__device__ __forceinline__ void tilewise_gemm(const half* __restrict__ A, const half* __restrict__ B,
                                              float* __restrict__ C, const TileOffsetIndex& idx,
                                              const Remainder& ew, int M, int N, int G, int lda, int ldb, int ldc)
{
    static_assert(32 * (BM / WM) * (BN / WN) == 32 * kWarps, "the row passes assume 4 warps");
    const int j0 = blockIdx.y * BM;
    if (j0 < idx.rows) {  // block-uniform
        gathered::gathered_gemm<BM, BN, WM, WN, STAGES>(A, B, C, idx, N, G, lda, ldb, ldc);
        if (REMAINDER) {
            __syncthreads();  // the kept rows are stored before their remainder is added
            const int warp = threadIdx.x / 32;
            const int j1 = min(j0 + BM, idx.rows);
            walk_remainder<BN>(C, ew, B, ew.kept_ptr[j0] + 32 * warp, ew.kept_ptr[j1], 32 * kWarps, N, ldb, ldc);
        }
    }
    pruned_rows<BN, REMAINDER>(C, idx, ew, B, M, N, ldb, ldc);
}

}  // namespace stc

#define STC_TW_PARAMS                                                                                         \
    const half *__restrict__ A, const half *__restrict__ B, float *__restrict__ C,                           \
        const int *__restrict__ cto_rows, const int *__restrict__ cto_k_lengths,                             \
        const int *__restrict__ cto_k_offsets, int M, int N, int n_kept, int G, int max_len, int lda, int ldb, \
        int ldc

#define STC_TEW_PARAMS                                                                                  \
    STC_TW_PARAMS, const int *__restrict__ ew_kept_ptr, const int *__restrict__ ew_row_ptr,            \
        const int *__restrict__ ew_row_idx, const int *__restrict__ ew_col_idx, const half *__restrict__ ew_values

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
    const stc::Remainder ew{ew_kept_ptr, ew_row_ptr, ew_row_idx, ew_col_idx, ew_values};
    stc::tilewise_gemm<32, 128, 32, 32, 3, true>(A, B, C, idx, ew, M, N, G, lda, ldb, ldc);
}

// TEW, G a multiple of 64: 64x128 block tile, 2x2 warps of 32x64, plus the remainder on the CUDA cores.
extern "C" __global__ void __launch_bounds__(128) gemm_tew_f16_f32_tile64x128x32_warp32x64_stage3(STC_TEW_PARAMS)
{
    const stc::TileOffsetIndex idx{cto_rows, cto_k_lengths, cto_k_offsets, max_len, n_kept};
    const stc::Remainder ew{ew_kept_ptr, ew_row_ptr, ew_row_idx, ew_col_idx, ew_values};
    stc::tilewise_gemm<64, 128, 32, 64, 3, true>(A, B, C, idx, ew, M, N, G, lda, ldb, ldc);
}
