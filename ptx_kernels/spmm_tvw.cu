// Tile-vector-wise (TVW, paper 002) SpMM on the 2:4 sparse Tensor Core (sm_80): the main loop of the 2:4 GEMM
// (mma_sp_gemm.cuh) run on one tile of G = BM condensed weight rows per block row of the grid, fused with the
// tile-wise gather and scatter of the CTO format (stcsim/kernels/descriptors/spmm_tvw.py lays the arrays out):
//   tile t (blockIdx.y): rows[row_start[t] .. +rows_t) are its output rows (C rows it writes), its compressed
//   values start at values[val_start[t]] (rows_t x lda_t, lda_t = ksteps[t] * 32 halves), its metadata at
//   meta[meta_start[t]] (ceil(rows_t / 16) x ksteps[t] x 32 words) and the B row of its condensed column k is
//   cols[col_start[t] + k] (ksteps[t] * 64 entries; padding slots point at row 0 and meet zero values).
// B: K x N row-major fp16 (ldb % 8 == 0).  C: M x N row-major fp32, zero-filled by the host (rows that no
// tile keeps are pruned whole and stay zero).
// Launch: block (32 * (BM / WM) * (BN / WN), 1, 1), grid (ceil(N / BN), tiles), SpTile::kSharedBytes.

#include "mma_sp_gemm.cuh"

namespace {

template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void spmm_tvw(const half* __restrict__ values, const uint32_t* __restrict__ meta,
                                         const int* __restrict__ tiles, const int* __restrict__ rows,
                                         const int* __restrict__ cols, const half* __restrict__ B,
                                         float* __restrict__ C, int N, int ldb, int ldc)
{
    // tiles[t] = {row_start, rows_t, ksteps, val_start, meta_start, col_start, 0, 0}: 32 bytes per tile.
    const int* tile = tiles + blockIdx.y * 8;
    const int ksteps = tile[2];
    const int lda = ksteps * stc::sp::kBKc;
    const stc::sp::BlockRows br{values + tile[3], lda, tile[1], meta + tile[4], ksteps, cols + tile[5], 0,
                                rows + tile[0], 0};
    stc::sp::sp_gemm<BM, BN, WM, WN, STAGES>(br, B, C, N, ldb, ldc);
}

}  // namespace

// G = 64: 64x64x64 block tile, 2x2 warps of 32x32, 3 stages: 128 threads, 37.5 KiB dynamic shared memory.
extern "C" __global__ void __launch_bounds__(128) spmm_tvw_g64_f16_f32_tile64x64x64_warp32x32_stage3(
    const half* __restrict__ values, const uint32_t* __restrict__ meta, const int* __restrict__ tiles,
    const int* __restrict__ rows, const int* __restrict__ cols, const half* __restrict__ B,
    float* __restrict__ C, int N, int ldb, int ldc)
{
    spmm_tvw<64, 64, 32, 32, 3>(values, meta, tiles, rows, cols, B, C, N, ldb, ldc);
}

// G = 128: 128x128x64 block tile, 2x2 warps of 64x64, 3 stages: 128 threads, 75 KiB.
extern "C" __global__ void __launch_bounds__(128) spmm_tvw_g128_f16_f32_tile128x128x64_warp64x64_stage3(
    const half* __restrict__ values, const uint32_t* __restrict__ meta, const int* __restrict__ tiles,
    const int* __restrict__ rows, const int* __restrict__ cols, const half* __restrict__ B,
    float* __restrict__ C, int N, int ldb, int ldc)
{
    spmm_tvw<128, 128, 64, 64, 3>(values, meta, tiles, rows, cols, B, C, N, ldb, ldc);
}
