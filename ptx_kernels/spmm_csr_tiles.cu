// CSR SpMM (cuSPARSE csrmm style, a warp per sparse row; spmm_csr.cu) tile configurations with split-K: the
// per-shape choice the dense SIMT SGEMM has (gemm_simt_tiles.cu), for the CUDA Core Generic kernel.
// Y (M x N) = W (M x K, CSR) @ X (K x N). W: row_ptr (M + 1 int32), col_idx (nnz int32), values (nnz fp32);
// X and Y row-major fp32 (ldx, ldy). Warp w of a block owns sparse row blockIdx.y * ROWS + w and the
// 32 * TN columns from blockIdx.x * 32 * TN; lane l computes columns l, l + 32, ... of that strip. The warp
// walks its share of the row's non-zeros 32 at a time: each lane loads one (column, value) pair, the pairs
// are broadcast with shfl and every lane multiplies the value by its elements of row `column` of X.
// Split-K over the non-zeros: slice z of the S = gridDim.z slices takes the row's non-zeros
// [begin + z * P, min(end, begin + (z + 1) * P)), P = ceil((end - begin) / S), so every slice of a row gets
// the same count (the reduction dimension of a CSR row is its non-zeros). With S = 1 the strip is stored to Y
// (zeros for an empty row); with S > 1 it is added to Y with atomic adds, so Y must hold zeros before the
// launch, and a slice with no non-zeros adds nothing.
// Ragged N: lanes past N read the strip's last column (a valid address) and store nothing.
// Launch: block (32, ROWS, 1), grid (ceil(N / (32 * TN)), ceil(M / ROWS), S).

namespace stc {

constexpr unsigned kCsrFullWarp = 0xffffffffu;

template <int ROWS, int TN>
__device__ __forceinline__ void csr_spmm_splitk(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                                const float* __restrict__ values, const float* __restrict__ X,
                                                float* __restrict__ Y, int M, int N, int ldx, int ldy)
{
    const int lane = threadIdx.x;
    const int row = blockIdx.y * ROWS + threadIdx.y;
    if (row >= M) {
        return;  // the whole warp: row is warp-uniform
    }
    const int slices = gridDim.z;
    const int row_begin = row_ptr[row];
    const int row_end = row_ptr[row + 1];
    const int share = (row_end - row_begin + slices - 1) / slices;
    const int begin = row_begin + blockIdx.z * share;
    const int end = min(row_end, begin + share);
    if (slices > 1 && begin >= end) {
        return;  // warp-uniform: this slice of the row holds no non-zero (Y already holds zeros)
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
            const int kt = __shfl_sync(kCsrFullWarp, k, t);
            const float vt = __shfl_sync(kCsrFullWarp, v, t);
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
            if (slices == 1) {
                Y[row * ldy + col[j]] = acc[j];
            } else {
                atomicAdd(&Y[row * ldy + col[j]], acc[j]);
            }
        }
    }
}

}  // namespace stc

#define STC_CSR_SPLITK(ROWS, TN, STRIP)                                                                      \
    extern "C" __global__ void __launch_bounds__(32 * ROWS)                                                  \
        spmm_csr_f32_f32_tile##ROWS##x##STRIP##_warp1x##STRIP##_splitk(                                       \
            const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values, \
            const float* __restrict__ X, float* __restrict__ Y, int M, int N, int ldx, int ldy)               \
    {                                                                                                         \
        stc::csr_spmm_splitk<ROWS, TN>(row_ptr, col_idx, values, X, Y, M, N, ldx, ldy);                       \
    }

// 4 rows x 64 columns (spmm_csr.cu's tile, with K slices), 8 rows x 32 columns, 4 rows x 32 columns
// (N <= 32 batch-1 layers: no lane computes a second, empty column).
STC_CSR_SPLITK(4, 2, 64)
STC_CSR_SPLITK(8, 1, 32)
STC_CSR_SPLITK(4, 1, 32)
