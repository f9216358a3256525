// CSR SpMM on CUDA cores in the style of cuSPARSE's csrmm (row split, a warp per sparse row):
// Y (M x N) = W (M x K, CSR) @ X (K x N). W: row_ptr (M + 1 int32), col_idx (nnz int32), values (nnz fp32);
// X and Y row-major fp32 (ldx, ldy). Warp w of a block owns sparse row blockIdx.y * ROWS + w and the
// 32 * TN columns from blockIdx.x * 32 * TN; lane l computes columns l, l + 32, ... of that strip.
// The warp walks the row's non-zeros 32 at a time: each lane loads one (column, value) pair, coalesced, then
// the pairs are broadcast with shfl and every lane multiplies the value by its elements of row `column` of X
// (coalesced along N). Only the stored non-zeros are multiplied; an empty row stores zeros.
// Ragged N: lanes past N read the strip's last column (a valid address) and store nothing.
// Launch: block (32, ROWS, 1), grid (ceil(N / (32 * TN)), ceil(M / ROWS)).

namespace stc {

constexpr unsigned kFullWarp = 0xffffffffu;

template <int ROWS, int TN>
__device__ __forceinline__ void csr_spmm_warp_per_row(const int* __restrict__ row_ptr,
                                                      const int* __restrict__ col_idx,
                                                      const float* __restrict__ values,
                                                      const float* __restrict__ X, float* __restrict__ Y,
                                                      int M, int N, int ldx, int ldy)
{
    const int lane = threadIdx.x;
    const int row = blockIdx.y * ROWS + threadIdx.y;
    if (row >= M) {
        return;  // the whole warp: row is warp-uniform
    }
    const int strip = blockIdx.x * 32 * TN;
    int col[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        col[j] = min(strip + lane + 32 * j, N - 1);
    }

    float acc[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        acc[j] = 0.0f;
    }

    const int begin = row_ptr[row];
    const int end = row_ptr[row + 1];
    for (int base = begin; base < end; base += 32) {
        const int mine = base + lane;
        int k = 0;
        float v = 0.0f;
        if (mine < end) {
            k = col_idx[mine];
            v = values[mine];
        }
        const int count = min(32, end - base);
        for (int t = 0; t < count; ++t) {
            const int kt = __shfl_sync(kFullWarp, k, t);
            const float vt = __shfl_sync(kFullWarp, v, t);
            const float* x = X + kt * ldx;
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                acc[j] = fmaf(vt, x[col[j]], acc[j]);
            }
        }
    }

#pragma unroll
    for (int j = 0; j < TN; ++j) {
        if (strip + lane + 32 * j < N) {
            Y[row * ldy + col[j]] = acc[j];
        }
    }
}

}  // namespace stc

// 4 warps (4 sparse rows) per block, 64 columns per warp (2 per lane).
extern "C" __global__ void __launch_bounds__(128) spmm_csr_f32_f32_tile4x64_warp1x64(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values,
    const float* __restrict__ X, float* __restrict__ Y, int M, int N, int ldx, int ldy)
{
    stc::csr_spmm_warp_per_row<4, 2>(row_ptr, col_idx, values, X, Y, M, N, ldx, ldy);
}
