// The latency-bound Tensor Core chain taken apart on silicon (issue 43), one warp per CTA, clock64 around a
// loop of `iters` dependent steps; cycles[warp] = the loop's cycles. Compiled by `nvcc -arch=sm_80 -O3 -ptx`
// into tc_chain_probes.ptx (the engine runs the same PTX: benchmarks/calibration/tc_chain.py).
//
//   ldg_chain_rows<R>   a global load whose address is the previous load's value (pointer chase, L1-resident
//                       after the first pass): each lane reads 4 bytes of row (lane / (32 / R)) of R rows
//                       32 bytes apart (R = 1: one sector for the warp; 8: 8 sectors, as a wmma.load's LDG)
//   hmma_acc_chain      mma m16n8k16 whose accumulator is the previous mma's result (the tensor pipe's
//                       dependent latency)
//   hmma_operand_chain  mma whose A operand comes from the previous mma's result through one integer op
//                       (the result's latency to a non-tensor consumer)
//   wmma_ldg_chain      wmma.load of A and B from global (L1-resident) -> wmma.mma -> the next load's
//                       offset from the result (masked by `mask` = 0): the whole chain of tcs_chain_wmma_gmem
//   ldsm_chain          ldmatrix.x4 whose row addresses come from the previous ldmatrix's data (masked)
#include <mma.h>
#include <cuda_fp16.h>
#include <cstdint>
using namespace nvcuda;

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// next[] holds, at each 4-byte slot, the index (in words) of the slot to read next: the host builds a
// chase over a small buffer with every lane's slot in row (lane / (32 / R)), 8 words per row.
template <int R>
__device__ void ldg_chain(const uint32_t* __restrict__ next, long long* cycles, uint32_t* out, int iters) {
  int lane = threadIdx.x % 32;
  uint32_t i = (lane / (32 / R)) * 8 + lane % (32 / R) % 8;
  long long t0 = clock64();
  for (int j = 0; j < iters; ++j) i = __ldg(next + i);
  long long t1 = clock64();
  if (lane == 0) cycles[blockIdx.x] = t1 - t0;
  out[blockIdx.x * 32 + lane] = i;
}
extern "C" __global__ void ldg_chain_rows1(const uint32_t* n, long long* c, uint32_t* o, int it) { ldg_chain<1>(n, c, o, it); }
extern "C" __global__ void ldg_chain_rows8(const uint32_t* n, long long* c, uint32_t* o, int it) { ldg_chain<8>(n, c, o, it); }
extern "C" __global__ void ldg_chain_rows16(const uint32_t* n, long long* c, uint32_t* o, int it) { ldg_chain<16>(n, c, o, it); }

extern "C" __global__ void hmma_acc_chain(const uint32_t* __restrict__ in, long long* cycles, float* out, int iters) {
  int lane = threadIdx.x % 32;
  uint32_t a[4] = {in[lane], in[lane + 32], in[lane + 64], in[lane + 96]};
  uint32_t b0 = in[lane + 128], b1 = in[lane + 160];
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  long long t0 = clock64();
  for (int j = 0; j < iters; ++j) mma16816(d, a, b0, b1);
  long long t1 = clock64();
  if (lane == 0) cycles[blockIdx.x] = t1 - t0;
  for (int r = 0; r < 4; ++r) out[(blockIdx.x * 32 + lane) * 4 + r] = d[r];
}

extern "C" __global__ void hmma_operand_chain(const uint32_t* __restrict__ in, long long* cycles, float* out,
                                              int iters, uint32_t mask) {
  int lane = threadIdx.x % 32;
  uint32_t a[4] = {in[lane], in[lane + 32], in[lane + 64], in[lane + 96]};
  uint32_t b0 = in[lane + 128], b1 = in[lane + 160];
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  long long t0 = clock64();
  for (int j = 0; j < iters; ++j) {
    float e[4] = {0.f, 0.f, 0.f, 0.f};
    mma16816(e, a, b0, b1);
    a[0] ^= __float_as_uint(e[0]) & mask;  // mask = 0: A unchanged, but the next mma waits for e
    for (int r = 0; r < 4; ++r) d[r] += e[r];
  }
  long long t1 = clock64();
  if (lane == 0) cycles[blockIdx.x] = t1 - t0;
  for (int r = 0; r < 4; ++r) out[(blockIdx.x * 32 + lane) * 4 + r] = d[r];
}

extern "C" __global__ void wmma_ldg_chain(const half* __restrict__ a, const half* __restrict__ b, long long* cycles,
                                          float* out, int iters, int mask) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  int off = 0;
  long long t0 = clock64();
  for (int j = 0; j < iters; ++j) {
    wmma::load_matrix_sync(fa, a + off, 16);
    wmma::load_matrix_sync(fb, b + off, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    off = __float_as_int(acc.x[0]) & mask;
  }
  long long t1 = clock64();
  if (threadIdx.x % 32 == 0) cycles[blockIdx.x] = t1 - t0;
  wmma::store_matrix_sync(out + blockIdx.x * 256, acc, 16, wmma::mem_row_major);
}

extern "C" __global__ void ldsm_chain(const half* __restrict__ a, long long* cycles, uint32_t* out, int iters,
                                      uint32_t mask) {
  __shared__ __align__(128) half s[16 * 16];
  int lane = threadIdx.x % 32;
  for (int i = lane; i < 256; i += 32) s[i] = a[i];
  __syncwarp();
  uint32_t r[4] = {0, 0, 0, 0};
  uint32_t off = 0;
  long long t0 = clock64();
  for (int j = 0; j < iters; ++j) {
    uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(&s[(lane % 16) * 16 + (lane / 16) * 8])) + off;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    off = r[0] & mask;
  }
  long long t1 = clock64();
  if (lane == 0) cycles[blockIdx.x] = t1 - t0;
  for (int q = 0; q < 4; ++q) out[(blockIdx.x * 32 + lane) * 4 + q] = r[q];
}
