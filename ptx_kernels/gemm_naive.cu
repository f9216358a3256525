// Naive SGEMM: one thread computes one element of C = A * B.
// A: M x K row-major fp32 (leading dimension lda), B: K x N row-major fp32 (ldb), C: M x N row-major fp32 (ldc).
// Launch: block (16, 16), grid (ceil(N / 16), ceil(M / 16)). Any M, N, K >= 1: threads outside C return early.

extern "C" __global__ void __launch_bounds__(256) gemm_naive_f32_f32_tile16x16x1(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, int lda, int ldb, int ldc)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) {
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc = fmaf(A[row * lda + k], B[k * ldb + col], acc);
    }
    C[row * ldc + col] = acc;
}
