// Tensor Core GEMMs whose fragments come straight from global memory (no shared-memory staging):
// C[M][N] = A[M][K] (row-major f16) x B[K][N] (row-major f16 for wmma; B^T[N][K] for mma.sync), f32 out.
// wmma_frag_global: one warp per 16x16 tile of C, 4 warps per CTA along N. M, N multiples of 16 (wmma: N of 64), K of 16.
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_frag_global(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c,
                                       int m, int n, int k) {
  int tm = blockIdx.y * 16, tn = (blockIdx.x * 4 + threadIdx.x / 32) * 16;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, a + (long long)tm * k + kk, k);
    wmma::load_matrix_sync(fb, b + (long long)kk * n + tn, n);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + (long long)tm * n + tn, acc, n, wmma::mem_row_major);
}

// mma_frag_global: mma.sync m16n8k16 with each lane loading its fragment registers from global memory (the
// documented register layout: group = lane / 4, pair = lane % 4). One warp per 16x8 tile, 4 warps per CTA along N.
// bt is B transposed (N x K, row-major), so that a lane's two k-adjacent halves are one 32-bit word.
extern "C" __global__ void mma_frag_global(const half* __restrict__ a, const half* __restrict__ bt, float* __restrict__ c,
                                      int m, int n, int k) {
  int lane = threadIdx.x % 32, g = lane / 4, p = lane % 4;
  int tm = blockIdx.y * 16, tn = (blockIdx.x * 4 + threadIdx.x / 32) * 8;
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
  const unsigned* a0 = reinterpret_cast<const unsigned*>(a + (long long)(tm + g) * k + 2 * p);
  const unsigned* a1 = reinterpret_cast<const unsigned*>(a + (long long)(tm + g + 8) * k + 2 * p);
  const unsigned* b0 = reinterpret_cast<const unsigned*>(bt + (long long)(tn + g) * k + 2 * p);
  for (int kk = 0; kk < k; kk += 16) {
    unsigned ra0 = a0[kk / 2], ra1 = a1[kk / 2], ra2 = a0[kk / 2 + 4], ra3 = a1[kk / 2 + 4];
    unsigned rb0 = b0[kk / 2], rb1 = b0[kk / 2 + 4];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(ra0), "r"(ra1), "r"(ra2), "r"(ra3), "r"(rb0), "r"(rb1));
  }
  float* c0 = c + (long long)(tm + g) * n + tn + 2 * p;
  float* c1 = c0 + 8LL * n;
  c0[0] = d0; c0[1] = d1; c1[0] = d2; c1[1] = d3;
}
