// Silicon microbenchmarks that explain the calibration misses (run by benchmarks/calibration/silicon_memory.py,
// not part of the simulated suite).
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

// Reads n4 float4s `reps` times (grid-stride): a working set that fits L2 measures L2 bandwidth.
extern "C" __global__ void read_loop(const float4* __restrict__ in, float* __restrict__ out, long long n4, int reps) {
  float s = 0.0f;
  for (int r = 0; r < reps; ++r)
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
      float4 v = __ldcg(in + i);
      s += (v.x + v.y) + (v.z + v.w);
    }
  if (s == 12345.678f) out[0] = s;  // never true for the inputs used; keeps the loads alive
}

// Each CTA reads its own slice of n4 float4s (L1-resident) `reps` times: L1 throughput per SM.
extern "C" __global__ void l1_read(const float4* __restrict__ in, float* __restrict__ out, int n4, int reps) {
  const float4* mine = in + (long long)blockIdx.x * n4;
  float s = 0.0f;
  for (int r = 0; r < reps; ++r)
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
      float4 v = __ldca(mine + i);
      s += (v.x + v.y) + (v.z + v.w);
    }
  if (s == 12345.678f) out[0] = s;
}

// Memory-level parallelism: every thread follows U independent pointer chains through `next` (a random cycle
// over 128-byte-spaced nodes of a buffer far larger than L2) for `steps` steps: U loads in flight per thread.
template <int U>
__device__ void chase(const unsigned* __restrict__ next, unsigned* __restrict__ out, unsigned nodes, int steps) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x, p[U];
#pragma unroll
  for (int u = 0; u < U; ++u) p[u] = (t * U + u) * 2654435761u % nodes;
  for (int s = 0; s < steps; ++s)
#pragma unroll
    for (int u = 0; u < U; ++u) p[u] = next[(unsigned long long)p[u] * 32];
  unsigned x = 0;
#pragma unroll
  for (int u = 0; u < U; ++u) x ^= p[u];
  out[t] = x;
}
extern "C" __global__ void mlp_chase1(const unsigned* n, unsigned* o, unsigned nodes, int s) { chase<1>(n, o, nodes, s); }
extern "C" __global__ void mlp_chase2(const unsigned* n, unsigned* o, unsigned nodes, int s) { chase<2>(n, o, nodes, s); }
extern "C" __global__ void mlp_chase4(const unsigned* n, unsigned* o, unsigned nodes, int s) { chase<4>(n, o, nodes, s); }
extern "C" __global__ void mlp_chase8(const unsigned* n, unsigned* o, unsigned nodes, int s) { chase<8>(n, o, nodes, s); }

// One wmma.load of each operand from global memory, one mma and one store: cuobjdump -sass of this kernel
// counts the SASS loads a PTX wmma.load from global becomes.
extern "C" __global__ void wmma_load_probe(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c,
                                           int lda) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(fa, a, lda);
  wmma::load_matrix_sync(fb, b, lda);
  wmma::fill_fragment(acc, 0.0f);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}
