// Shfl-BW SpMM (paper 000) on the Tensor Cores: D (M x N, fp32) = W (M x K, Shfl-BW) @ X (K x N, fp16).
// W comes as the Shfl-BW format: row_indices (the original row of every stored row, group-major, V per group;
// ids >= M are padding rows), col_ptr / col_indices (each group's kept columns) and the stitched values, laid
// out as A: one row of lda halves per stored row (the group's kept values, zero padded to lda). The kernel is
// the gathered-B GEMM of gathered_mma.cuh with groups of V rows: X rows of each group's columns are gathered
// into shared memory, the dense V x count blocks are multiplied by mma.sync, every output row is written back
// to its original position. Only kept blocks are multiplied.
// Launch: block (128, 1, 1), grid (ceil(N / BN), rows / BM), dynamic shared memory Tile::kSharedBytes;
// V % BM == 0, rows = stored rows (a multiple of V).

#include "gathered_mma.cuh"

namespace stc {

struct ShflBWIndex {
    const int* row_indices;
    const int* col_ptr;
    const int* col_indices;
    int M;
    int rows;

    __device__ __forceinline__ int count(int g) const { return col_ptr[g + 1] - col_ptr[g]; }
    __device__ __forceinline__ const int* list(int g) const { return col_indices + col_ptr[g]; }
    __device__ __forceinline__ int column(int raw, int) const { return raw; }
    __device__ __forceinline__ int row(int j) const
    {
        const int r = row_indices[j];
        return r < M ? r : -1;
    }
};

template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void shflbw_spmm(const half* __restrict__ A, const half* __restrict__ B,
                                            float* __restrict__ C, const int* __restrict__ row_indices,
                                            const int* __restrict__ col_ptr, const int* __restrict__ col_indices,
                                            int M, int N, int rows, int V, int lda, int ldb, int ldc)
{
    if (static_cast<int>(blockIdx.y) * BM >= rows) {
        return;  // past the stored rows (the grid is sized for round_up(M, 64))
    }
    const ShflBWIndex idx{row_indices, col_ptr, col_indices, M, rows};
    gathered::gathered_gemm<BM, BN, WM, WN, STAGES>(A, B, C, idx, N, V, lda, ldb, ldc);
}

}  // namespace stc

// V = 32 (or any multiple of 32): 32x128 block tile, 1x4 warps of 32x32, 3 stages: 128 threads, 31 KiB.
extern "C" __global__ void __launch_bounds__(128) spmm_shflbw_f16_f32_tile32x128x32_warp32x32_stage3(
    const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,
    const int* __restrict__ row_indices, const int* __restrict__ col_ptr, const int* __restrict__ col_indices,
    int M, int N, int rows, int V, int lda, int ldb, int ldc)
{
    stc::shflbw_spmm<32, 128, 32, 32, 3>(A, B, C, row_indices, col_ptr, col_indices, M, N, rows, V, lda, ldb, ldc);
}

// V = 64 (or any multiple of 64): 64x128 block tile, 2x2 warps of 32x64, 3 stages: 128 threads, 37 KiB.
extern "C" __global__ void __launch_bounds__(128) spmm_shflbw_f16_f32_tile64x128x32_warp32x64_stage3(
    const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,
    const int* __restrict__ row_indices, const int* __restrict__ col_ptr, const int* __restrict__ col_indices,
    int M, int N, int rows, int V, int lda, int ldb, int ldc)
{
    stc::shflbw_spmm<64, 128, 32, 64, 3>(A, B, C, row_indices, col_ptr, col_indices, M, N, rows, V, lda, ldb, ldc);
}
