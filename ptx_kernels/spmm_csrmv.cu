// CSR SpMM as a sparse library's column-major csrmm runs it: one csrmv per column of X (issue 44 item 3,
// the "as the paper ran it" baseline of paper 001's CUDA Core Generic bar, which was cuSPARSE's csrmm).
// Y (M x N) = W (M x K, CSR) @ X (K x N). W: row_ptr (M + 1 int32), col_idx (nnz int32), values (nnz fp32);
// X and Y column-major fp32 (the BLAS layout of the legacy csrmm): column j of X is X + j * ldx (ldx >= K),
// column j of Y is Y + j * ldy (ldy >= M).
// Warp w of a block owns sparse row blockIdx.y * ROWS + w and the CPW columns from blockIdx.x * CPW. For
// each column the warp is a CSR-vector SpMV (Bell and Garland): lane l multiplies the row's non-zeros
// l, l + 32, ... by the gathered elements of that column of X, then a shuffle tree sums the 32 partial
// sums and lane 0 stores the element of Y. The row's (column, value) pairs are read again for every column.
// Launch: block (32, ROWS, 1), grid (ceil(N / CPW), ceil(M / ROWS)).

namespace stc {

constexpr unsigned kAllLanes = 0xffffffffu;

template <int ROWS, int CPW>
__device__ __forceinline__ void csrmv_per_column(const int* __restrict__ row_ptr,
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
    const int begin = row_ptr[row];
    const int end = row_ptr[row + 1];
    const int first = blockIdx.x * CPW;
    const int last = min(first + CPW, N);
    for (int j = first; j < last; ++j) {  // warp-uniform
        const float* x = X + j * ldx;
        float acc = 0.0f;
        for (int i = begin + lane; i < end; i += 32) {
            acc = fmaf(values[i], x[col_idx[i]], acc);
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            acc += __shfl_down_sync(kAllLanes, acc, offset);
        }
        if (lane == 0) {
            Y[j * ldy + row] = acc;
        }
    }
}

}  // namespace stc

// 4 warps (4 sparse rows) per block, one column of X per warp.
extern "C" __global__ void __launch_bounds__(128) spmm_csrmv_f32_f32_tile4x1_warp1x1(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values,
    const float* __restrict__ X, float* __restrict__ Y, int M, int N, int ldx, int ldy)
{
    stc::csrmv_per_column<4, 1>(row_ptr, col_idx, values, X, Y, M, N, ldx, ldy);
}

// 4 warps (4 sparse rows) per block, 8 columns of X per warp (one after another).
extern "C" __global__ void __launch_bounds__(128) spmm_csrmv_f32_f32_tile4x8_warp1x8(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values,
    const float* __restrict__ X, float* __restrict__ Y, int M, int N, int ldx, int ldy)
{
    stc::csrmv_per_column<4, 8>(row_ptr, col_idx, values, X, Y, M, N, ldx, ldy);
}
