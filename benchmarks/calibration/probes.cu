// Silicon probes behind the worst calibration classes (issue 11, step 2), run by
// benchmarks/calibration/silicon_probes.py; not part of the simulated suite.
//   atomics:   throughput vs distinct addresses, warp address pattern, global vs shared, 32 vs 64 bit,
//              result unused (RED) vs used (ATOM)
//   l2 reads:  streamed vs scattered requests from an L2-resident (or DRAM-sized) buffer, warps per SM swept
//   wmma:      wmma.load from global, dependent chain (latency) and independent (throughput)
//   fma:       dependent FMA chains per warp x warps per SM (cycles per FMA from clock64)
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

__device__ __forceinline__ unsigned mix32(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}
__device__ __forceinline__ unsigned lcg(unsigned x) { return x * 1664525u + 1013904223u; }

// Address pattern of iteration j (state x advanced by lcg each iteration):
// mode 0: every lane a random word; 1: the whole warp one random word; 2: the warp 32 consecutive words
// (one 128-byte line) at a random line.
__device__ __forceinline__ unsigned pick(unsigned x, unsigned mask, int mode, unsigned lane) {
  unsigned r = x >> 7;
  if (mode == 2) return ((r << 5) | lane) & mask;
  return r & mask;
}
__device__ __forceinline__ unsigned seed(int mode) {
  unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  return mix32(mode == 0 ? tid : tid >> 5);  // modes 1 and 2 share the state across the warp
}

template <typename T, bool RET>
__device__ void atom_global(T* bins, T* sink, unsigned mask, int iters, int mode) {
  unsigned x = seed(mode), lane = threadIdx.x & 31;
  T acc = 0;
  for (int j = 0; j < iters; ++j) {
    x = lcg(x);
    T* p = bins + pick(x, mask, mode, lane);
    if (RET) acc += atomicAdd(p, (T)1);
    else atomicAdd(p, (T)1);
  }
  if (RET && acc == (T)0x7fffffff) sink[0] = acc;  // keeps the returned values alive
}
extern "C" __global__ void atom_red_u32(unsigned* b, unsigned* s, unsigned m, int it, int mode) {
  atom_global<unsigned, false>(b, s, m, it, mode);
}
extern "C" __global__ void atom_ret_u32(unsigned* b, unsigned* s, unsigned m, int it, int mode) {
  atom_global<unsigned, true>(b, s, m, it, mode);
}
extern "C" __global__ void atom_red_u64(unsigned long long* b, unsigned long long* s, unsigned m, int it, int mode) {
  atom_global<unsigned long long, false>(b, s, m, it, mode);
}

// Shared-memory atomics on mask + 1 (<= 4096) words; the CTA's bins are added to out at the end. sm_90 has
// no native shared add for u64 or f32: ptxas lowers those to a load + compare-and-swap loop.
template <typename T>
__device__ void atom_shared(T* out, unsigned mask, int iters, int mode) {
  __shared__ T bins[4096];
  for (int i = threadIdx.x; i <= (int)mask; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  unsigned x = seed(mode), lane = threadIdx.x & 31;
  for (int j = 0; j < iters; ++j) {
    x = lcg(x);
    atomicAdd(&bins[pick(x, mask, mode, lane)], (T)1);
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(out, bins[0]);
}
extern "C" __global__ void atom_shared_u32(unsigned* out, unsigned mask, int iters, int mode) {
  atom_shared<unsigned>(out, mask, iters, mode);
}
extern "C" __global__ void atom_shared_u64(unsigned long long* out, unsigned mask, int iters, int mode) {
  atom_shared<unsigned long long>(out, mask, iters, mode);
}
extern "C" __global__ void atom_shared_f32(float* out, unsigned mask, int iters, int mode) {
  atom_shared<float>(out, mask, iters, mode);
}

// `iters` independent loads per thread from src[0..mask] (L2: ld.global.cg, L1 bypassed), pattern as above
// (mode 0: 32 scattered sectors per warp load; 2: one streamed line per warp load at a random line;
// 3: streamed, consecutive lines in order).
extern "C" __global__ void l2_read(const unsigned* __restrict__ src, unsigned* sink, unsigned mask, int iters, int mode) {
  unsigned x = seed(mode == 3 ? 2 : mode), lane = threadIdx.x & 31, acc = 0;
  unsigned line = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lines = (gridDim.x * blockDim.x) >> 5;
#pragma unroll 8
  for (int j = 0; j < iters; ++j) {
    x = lcg(x);
    unsigned i = mode == 3 ? (((line + (unsigned)j * lines) << 5) | lane) & mask : pick(x, mask, mode, lane);
    acc += __ldcg(src + i);
  }
  if (acc == 0x7fffffffu) sink[0] = acc;
}

// One warp per 16x16 A fragment, row-major with leading dimension lda, walking `span` halves of `a` in
// steps of `step`: DEP=1 makes each load's address depend on the previous mma (latency per wmma.load +
// mma), DEP=0 issues independent loads (throughput). cycles[warp] = clock64 cycles of the loop.
template <bool DEP>
__device__ void wmma_walk(const half* __restrict__ a, float* out, long long* cycles, int lda, unsigned span,
                          unsigned step, int iters) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::fill_fragment(fb, __float2half(0.5f));
  unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned off = (warp * 7919u * step) % span;
  long long t0 = clock64();
  for (int j = 0; j < iters; ++j) {
    wmma::load_matrix_sync(fa, a + off, lda);
    wmma::mma_sync(acc, fa, fb, acc);
    unsigned dep = DEP ? (unsigned)(acc.x[0] == 1234.5f) : 0u;  // never true; orders the next load after the mma
    off = (off + step + dep) % span;
  }
  long long t1 = clock64();
  if ((threadIdx.x & 31) == 0) cycles[warp] = t1 - t0;
  if (acc.x[0] == 1234.5f) out[0] = acc.x[1];
}
extern "C" __global__ void wmma_load_dep(const half* a, float* o, long long* c, int lda, unsigned span, unsigned step,
                                         int iters) {
  wmma_walk<true>(a, o, c, lda, span, step, iters);
}
extern "C" __global__ void wmma_load_ind(const half* a, float* o, long long* c, int lda, unsigned span, unsigned step,
                                         int iters) {
  wmma_walk<false>(a, o, c, lda, span, step, iters);
}

// C independent dependent-FMA chains per thread, `iters` FMAs each; cycles[warp] from clock64.
template <int C>
__device__ void fma_chains(float* out, long long* cycles, int iters) {
  float v[C];
#pragma unroll
  for (int c = 0; c < C; ++c) v[c] = threadIdx.x * 1e-3f + c;
  long long t0 = clock64();
  for (int j = 0; j < iters; ++j)
#pragma unroll
    for (int c = 0; c < C; ++c) v[c] = fmaf(v[c], 0.999f, 0.001f * (c + 1));
  long long t1 = clock64();
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < C; ++c) s += v[c];
  unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if ((threadIdx.x & 31) == 0) cycles[warp] = t1 - t0;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" __global__ void fma_chain1(float* o, long long* c, int it) { fma_chains<1>(o, c, it); }
extern "C" __global__ void fma_chain2(float* o, long long* c, int it) { fma_chains<2>(o, c, it); }
extern "C" __global__ void fma_chain4(float* o, long long* c, int it) { fma_chains<4>(o, c, it); }
extern "C" __global__ void fma_chain8(float* o, long long* c, int it) { fma_chains<8>(o, c, it); }
