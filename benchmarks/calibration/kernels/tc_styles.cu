// Tensor Core GEMMs in styles the project's kernel set does not use (issue 43): the calibration suite's
// held-out families. Written from the CUDA programming guide, the PTX ISA and the CUDA samples' style, not from
// the engine. C (M x N, f32, row-major) = A (M x K, f16) x B (K x N, f16); layouts per kernel below.
// Compiled by `nvcc -arch=sm_80 -O3 -ptx` into tc_styles.ptx (stcsim.experiments.tc_style_cases plans the launches).
//
//   tcs_wmma_sample     the CUDA samples' simpleTensorCoreGEMM: one warp per 16x16 tile of C, fragments
//                       straight from global memory, A and B column-major; block (32*wx, wy), any wx, wy
//   tcs_wmma_gmem_w32   a warp computes 32x32 of C (2x2 fragments) from global memory, A and B row-major;
//                       the block's warps lie along N (blockDim.x / 32 warps)
//   tcs_wmma_smem_BMxBN single-stage shared tiles (BK = 32, one __syncthreads pair per k-step), uint4 copies
//   tcs_mma_ldm_1w      mma.sync m16n8k16 + ldmatrix, one warp per CTA (32x32 tile), one shared stage, no
//                       cp.async
//   tcs_mma_ldm_cpasync 4 warps, 64x64 tile, a two-stage cp.async pipeline, ldmatrix
//   tcs_mma_splitk      as tcs_mma_ldm_cpasync with the K range split over gridDim.z; f32 atomicAdd into C
//   tcs_mma_lds         mma.sync with fragments read by plain 32-bit/16-bit ld.shared (no ldmatrix), 2 warps
//   tcs_mmasp_gmem      2:4 mma.sp m16n8k32, fragments and metadata from global; a warp computes 16x32
//   tcs_mmasp_ldm_1w    2:4 mma.sp, one warp per CTA (32x32), one shared stage, ldmatrix
//   tcs_chain_*         the latency-bound chain: per warp, fragment load -> MMA -> the next load's address
//                       from the MMA's result (masked to zero by a run-time argument)
#include <mma.h>
#include <cuda_fp16.h>
#include <cstdint>
using namespace nvcuda;

// ---------------------------------------------------------------- WMMA from global memory
extern "C" __global__ void tcs_wmma_sample(const half* __restrict__ a, const half* __restrict__ b,
                                           float* __restrict__ c, int m, int n, int k) {
  // a: M x K column-major (lda = m); b: K x N column-major (ldb = k); c: row-major.
  int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int warp_n = blockIdx.y * blockDim.y + threadIdx.y;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + warp_m * 16 + (size_t)kk * m, m);
    wmma::load_matrix_sync(fb, b + kk + (size_t)warp_n * 16 * k, k);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + (size_t)warp_m * 16 * n + warp_n * 16, acc, n, wmma::mem_row_major);
}

extern "C" __global__ void tcs_wmma_gmem_w32(const half* __restrict__ a, const half* __restrict__ b,
                                             float* __restrict__ c, int m, int n, int k) {
  int warps = blockDim.x / 32;
  int tm = blockIdx.y * 32, tn = (blockIdx.x * warps + threadIdx.x / 32) * 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb[2];
    for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], a + (size_t)(tm + 16 * i) * k + kk, k);
    for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], b + (size_t)kk * n + tn + 16 * j, n);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(c + (size_t)(tm + 16 * i) * n + tn + 16 * j, acc[i][j], n, wmma::mem_row_major);
}

// ---------------------------------------------------------------- WMMA, single-stage shared tiles
template <int BM, int BN, int WM, int WN>
__device__ __forceinline__ void wmma_smem(const half* __restrict__ a, const half* __restrict__ b,
                                          float* __restrict__ c, int n, int k) {
  constexpr int BK = 32, PAD = 8, WARPS_N = BN / WN, FM = WM / 16, FN = WN / 16;
  constexpr int THREADS = (BM / WM) * WARPS_N * 32;
  __shared__ __align__(128) half sa[BM][BK + PAD];
  __shared__ __align__(128) half sb[BK][BN + PAD];
  int warp = threadIdx.x / 32, wm = warp / WARPS_N, wn = warp % WARPS_N;
  int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
  for (int i = 0; i < FM; ++i)
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int kk = 0; kk < k; kk += BK) {
    for (int i = threadIdx.x; i < BM * BK / 8; i += THREADS) {
      int r = i / (BK / 8), col = (i % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(&sa[r][col]) = *reinterpret_cast<const uint4*>(a + (size_t)(bm + r) * k + kk + col);
    }
    for (int i = threadIdx.x; i < BK * BN / 8; i += THREADS) {
      int r = i / (BN / 8), col = (i % (BN / 8)) * 8;
      *reinterpret_cast<uint4*>(&sb[r][col]) = *reinterpret_cast<const uint4*>(b + (size_t)(kk + r) * n + bn + col);
    }
    __syncthreads();
    for (int ks = 0; ks < BK; ks += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb[FN];
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], &sa[wm * WM + 16 * i][ks], BK + PAD);
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], &sb[ks][wn * WN + 16 * j], BN + PAD);
      for (int i = 0; i < FM; ++i)
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < FM; ++i)
    for (int j = 0; j < FN; ++j)
      wmma::store_matrix_sync(c + (size_t)(bm + wm * WM + 16 * i) * n + bn + wn * WN + 16 * j, acc[i][j], n,
                              wmma::mem_row_major);
}

#define TCS_WMMA_SMEM(BM, BN, WM, WN)                                                                      \
  extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)                                \
      tcs_wmma_smem_##BM##x##BN(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c, \
                                int m, int n, int k) {                                                    \
    wmma_smem<BM, BN, WM, WN>(a, b, c, n, k);                                                            \
  }
TCS_WMMA_SMEM(16, 16, 16, 16)    // 1 warp
TCS_WMMA_SMEM(32, 32, 16, 16)    // 4 warps
TCS_WMMA_SMEM(32, 64, 32, 32)    // 2 warps
TCS_WMMA_SMEM(64, 64, 32, 32)    // 4 warps
TCS_WMMA_SMEM(128, 128, 64, 32)  // 8 warps
TCS_WMMA_SMEM(256, 128, 64, 64)  // 8 warps

// ---------------------------------------------------------------- mma.sync helpers (PTX ISA 9.7.13)
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ldm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mmasp16832(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[4],
                                           uint32_t e) {
  asm volatile("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
}
// Stores a warp's 16 x 8 accumulator tile (c0, c1: row g, columns 2p, 2p+1; c2, c3: row g + 8).
__device__ __forceinline__ void store_acc(float* c, int n, int row, int col, const float (&d)[4]) {
  int lane = threadIdx.x % 32, g = lane / 4, p = lane % 4;
  float* c0 = c + (size_t)(row + g) * n + col + 2 * p;
  *reinterpret_cast<float2*>(c0) = make_float2(d[0], d[1]);
  *reinterpret_cast<float2*>(c0 + 8 * (size_t)n) = make_float2(d[2], d[3]);
}
__device__ __forceinline__ void atomic_acc(float* c, int n, int row, int col, const float (&d)[4]) {
  int lane = threadIdx.x % 32, g = lane / 4, p = lane % 4;
  float* c0 = c + (size_t)(row + g) * n + col + 2 * p;
  atomicAdd(c0, d[0]);
  atomicAdd(c0 + 1, d[1]);
  atomicAdd(c0 + 8 * (size_t)n, d[2]);
  atomicAdd(c0 + 8 * (size_t)n + 1, d[3]);
}

// A warp's 32 x 32 tile of one 16-wide k-step from shared A (row-major, lda halves) and B (k-major rows,
// ldb halves): 2 ldmatrix.x4 of A, 2 ldmatrix.x4.trans of B, 8 mma.
__device__ __forceinline__ void warp_tile_k16(float (&acc)[2][4][4], const half* sa, int lda, const half* sb,
                                              int ldb) {
  int lane = threadIdx.x % 32;
  uint32_t fa[2][4], fb[2][4];
  for (int i = 0; i < 2; ++i) ldm_x4(fa[i], sa + (16 * i + lane % 16) * lda + (lane / 16) * 8);
  for (int j = 0; j < 2; ++j) ldm_x4_trans(fb[j], sb + (lane % 16) * ldb + 16 * j + (lane / 16) * 8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) mma16816(acc[i][j], fa[i], fb[j / 2][2 * (j % 2)], fb[j / 2][2 * (j % 2) + 1]);
}

// ---------------------------------------------------------------- mma.sync + ldmatrix, one warp per CTA
extern "C" __global__ void __launch_bounds__(32) tcs_mma_ldm_1w(const half* __restrict__ a,
                                                                const half* __restrict__ b,
                                                                float* __restrict__ c, int m, int n, int k) {
  constexpr int BK = 32, LDA = BK + 8, LDB = 32 + 8;
  __shared__ __align__(128) half sa[32 * LDA];
  __shared__ __align__(128) half sb[BK * LDB];
  int lane = threadIdx.x, bm = blockIdx.y * 32, bn = blockIdx.x * 32;
  float acc[2][4][4] = {};
  for (int kk = 0; kk < k; kk += BK) {
    for (int i = lane; i < 32 * BK / 8; i += 32) {
      int r = i / (BK / 8), col = (i % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(&sa[r * LDA + col]) = *reinterpret_cast<const uint4*>(a + (size_t)(bm + r) * k + kk + col);
      int rb = i / 4, cb = (i % 4) * 8;
      *reinterpret_cast<uint4*>(&sb[rb * LDB + cb]) = *reinterpret_cast<const uint4*>(b + (size_t)(kk + rb) * n + bn + cb);
    }
    __syncwarp();
    for (int ks = 0; ks < BK; ks += 16) warp_tile_k16(acc, sa + ks, LDA, sb + ks * LDB, LDB);
    __syncwarp();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) store_acc(c, n, bm + 16 * i, bn + 8 * j, acc[i][j]);
}

// ---------------------------------------------------------------- mma.sync + ldmatrix + cp.async, 4 warps
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

// 64 x 64 CTA tile, 2 x 2 warps of 32 x 32, BK = 32, two stages; the k-steps [k0, k1).
template <bool SPLIT>
__device__ __forceinline__ void mma_cpasync(const half* __restrict__ a, const half* __restrict__ b,
                                            float* __restrict__ c, int n, int k, int k0, int k1) {
  constexpr int BK = 32, LDA = BK + 8, LDB = 64 + 8;
  __shared__ __align__(128) half sa[2][64 * LDA];
  __shared__ __align__(128) half sb[2][BK * LDB];
  int t = threadIdx.x, warp = t / 32, wm = warp / 2, wn = warp % 2;
  int bm = blockIdx.y * 64, bn = blockIdx.x * 64;
  float acc[2][4][4] = {};
  auto load = [&](int stage, int kk) {
    for (int i = t; i < 64 * BK / 8; i += 128) {
      int r = i / (BK / 8), col = (i % (BK / 8)) * 8;
      cp_async16(&sa[stage][r * LDA + col], a + (size_t)(bm + r) * k + kk + col);
      int rb = i / 8, cb = (i % 8) * 8;
      cp_async16(&sb[stage][rb * LDB + cb], b + (size_t)(kk + rb) * n + bn + cb);
    }
    cp_async_commit();
  };
  load(0, k0);
  int stage = 0;
  for (int kk = k0; kk < k1; kk += BK) {
    if (kk + BK < k1) {
      load(stage ^ 1, kk + BK);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    for (int ks = 0; ks < BK; ks += 16)
      warp_tile_k16(acc, &sa[stage][wm * 32 * LDA + ks], LDA, &sb[stage][ks * LDB + wn * 32], LDB);
    __syncthreads();
    stage ^= 1;
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      if (SPLIT) atomic_acc(c, n, bm + wm * 32 + 16 * i, bn + wn * 32 + 8 * j, acc[i][j]);
      else store_acc(c, n, bm + wm * 32 + 16 * i, bn + wn * 32 + 8 * j, acc[i][j]);
    }
}

extern "C" __global__ void __launch_bounds__(128) tcs_mma_ldm_cpasync(const half* __restrict__ a,
                                                                     const half* __restrict__ b,
                                                                     float* __restrict__ c, int m, int n, int k) {
  mma_cpasync<false>(a, b, c, n, k, 0, k);
}

// C must hold zeros (or the partial sums to add to): each of gridDim.z CTAs of a tile adds its K range's sum.
extern "C" __global__ void __launch_bounds__(128) tcs_mma_splitk(const half* __restrict__ a,
                                                                const half* __restrict__ b,
                                                                float* __restrict__ c, int m, int n, int k) {
  int span = k / gridDim.z;
  mma_cpasync<true>(a, b, c, n, k, blockIdx.z * span, (blockIdx.z + 1) * span);
}

// ---------------------------------------------------------------- mma.sync from plain ld.shared, 2 warps
// 32 x 32 CTA tile, each warp 16 x 32 (4 mma per k16): the A pairs are 32-bit loads, the B pairs (two k rows
// of one column) two 16-bit loads packed.
extern "C" __global__ void __launch_bounds__(64) tcs_mma_lds(const half* __restrict__ a,
                                                            const half* __restrict__ b,
                                                            float* __restrict__ c, int m, int n, int k) {
  constexpr int BK = 32, LDA = BK + 8, LDB = 32 + 8;
  __shared__ __align__(128) half sa[32 * LDA];
  __shared__ __align__(128) half sb[BK * LDB];
  int t = threadIdx.x, warp = t / 32, lane = t % 32, g = lane / 4, p = lane % 4;
  int bm = blockIdx.y * 32, bn = blockIdx.x * 32;
  float acc[4][4] = {};
  for (int kk = 0; kk < k; kk += BK) {
    for (int i = t; i < 32 * BK / 8; i += 64) {
      int r = i / (BK / 8), col = (i % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(&sa[r * LDA + col]) = *reinterpret_cast<const uint4*>(a + (size_t)(bm + r) * k + kk + col);
      int rb = i / 4, cb = (i % 4) * 8;
      *reinterpret_cast<uint4*>(&sb[rb * LDB + cb]) = *reinterpret_cast<const uint4*>(b + (size_t)(kk + rb) * n + bn + cb);
    }
    __syncthreads();
    for (int ks = 0; ks < BK; ks += 16) {
      const half* ra = sa + (warp * 16 + g) * LDA + ks + 2 * p;
      uint32_t fa[4] = {*reinterpret_cast<const uint32_t*>(ra), *reinterpret_cast<const uint32_t*>(ra + 8 * LDA),
                        *reinterpret_cast<const uint32_t*>(ra + 8), *reinterpret_cast<const uint32_t*>(ra + 8 * LDA + 8)};
      for (int j = 0; j < 4; ++j) {
        const half* rb = sb + (ks + 2 * p) * LDB + 8 * j + g;
        __half2 b0 = __halves2half2(rb[0], rb[LDB]), b1 = __halves2half2(rb[8 * LDB], rb[9 * LDB]);
        mma16816(acc[j], fa, *reinterpret_cast<uint32_t*>(&b0), *reinterpret_cast<uint32_t*>(&b1));
      }
    }
    __syncthreads();
  }
  for (int j = 0; j < 4; ++j) store_acc(c, n, bm + warp * 16, bn + 8 * j, acc[j]);
}

// ---------------------------------------------------------------- 2:4 mma.sp
// ac: the compressed A, M x K/2 row-major (compressed column 2*chunk + s: the s-th kept element of chunk);
// meta: [M/16][K/32][32] words, the word lane l of a warp passes for its 16-row block and k32 step (lanes
// 4g, 4g+1 carry rows g and g+8 of chunks 0-3 and 4-7; the other lanes' words are ignored: selector 0).
// tcs_mmasp_gmem: bt is B transposed (N x K row-major); a warp computes 16 x 32 of C, warps along N.
extern "C" __global__ void tcs_mmasp_gmem(const half* __restrict__ ac, const half* __restrict__ bt,
                                          const uint32_t* __restrict__ meta, float* __restrict__ c, int m, int n,
                                          int k) {
  int lane = threadIdx.x % 32, g = lane / 4, p = lane % 4, warps = blockDim.x / 32;
  int tm = blockIdx.y * 16, tn = (blockIdx.x * warps + threadIdx.x / 32) * 32;
  int kc = k / 2;
  float acc[4][4] = {};
  const uint32_t* a0 = reinterpret_cast<const uint32_t*>(ac + (size_t)(tm + g) * kc + 2 * p);
  const uint32_t* a1 = reinterpret_cast<const uint32_t*>(ac + (size_t)(tm + g + 8) * kc + 2 * p);
  const uint32_t* mrow = meta + (size_t)(tm / 16) * (k / 32) * 32 + lane;
  for (int kk = 0; kk < k; kk += 32) {
    int q = kk / 4;  // the step's first compressed pair (32-bit word) of a row: kk / 2 halves
    uint32_t fa[4] = {a0[q], a1[q], a0[q + 4], a1[q + 4]};
    uint32_t e = mrow[(kk / 32) * 32];
    for (int j = 0; j < 4; ++j) {
      const uint32_t* bw = reinterpret_cast<const uint32_t*>(bt + (size_t)(tn + 8 * j + g) * k + kk + 2 * p);
      uint32_t fb[4] = {bw[0], bw[4], bw[8], bw[12]};
      mmasp16832(acc[j], fa, fb, e);
    }
  }
  for (int j = 0; j < 4; ++j) store_acc(c, n, tm, tn + 8 * j, acc[j]);
}

// tcs_mmasp_ldm_1w: b is K x N row-major; 32 x 32 CTA tile, BK = 64 (32 compressed), one shared stage.
extern "C" __global__ void __launch_bounds__(32) tcs_mmasp_ldm_1w(const half* __restrict__ ac,
                                                                  const half* __restrict__ b,
                                                                  const uint32_t* __restrict__ meta,
                                                                  float* __restrict__ c, int m, int n, int k) {
  constexpr int BK = 64, LDA = BK / 2 + 8, LDB = 32 + 8;
  __shared__ __align__(128) half sa[32 * LDA];
  __shared__ __align__(128) half sb[BK * LDB];
  int lane = threadIdx.x, bm = blockIdx.y * 32, bn = blockIdx.x * 32, kc = k / 2;
  float acc[2][4][4] = {};
  for (int kk = 0; kk < k; kk += BK) {
    for (int i = lane; i < 32 * (BK / 2) / 8; i += 32) {
      int r = i / 4, col = (i % 4) * 8;
      *reinterpret_cast<uint4*>(&sa[r * LDA + col]) = *reinterpret_cast<const uint4*>(ac + (size_t)(bm + r) * kc + kk / 2 + col);
    }
    for (int i = lane; i < BK * 32 / 8; i += 32) {
      int rb = i / 4, cb = (i % 4) * 8;
      *reinterpret_cast<uint4*>(&sb[rb * LDB + cb]) = *reinterpret_cast<const uint4*>(b + (size_t)(kk + rb) * n + bn + cb);
    }
    __syncwarp();
    for (int ks = 0; ks < BK; ks += 32) {
      uint32_t fa[2][4], fb[4][4], e[2];
      for (int i = 0; i < 2; ++i) {
        ldm_x4(fa[i], sa + (16 * i + lane % 16) * LDA + ks / 2 + (lane / 16) * 8);
        e[i] = meta[((size_t)(bm / 16 + i) * (k / 32) + (kk + ks) / 32) * 32 + lane];
      }
      for (int j = 0; j < 4; ++j) ldm_x4_trans(fb[j], sb + (ks + lane) * LDB + 8 * j);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) mmasp16832(acc[i][j], fa[i], fb[j], e[i]);
    }
    __syncwarp();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) store_acc(c, n, bm + 16 * i, bn + 8 * j, acc[i][j]);
}

// ---------------------------------------------------------------- the latency-bound chains
// Every warp repeats `iters` times: load a 16 x 16 A and B fragment, multiply-accumulate, and take the next
// load's offset from the accumulator (masked by `mask`, 0 at run time, which the compiler cannot know). a and b
// are 16 x 16 f16 tiles (row-major), c gets each warp's 16 x 16 result (row-major, warp after warp).
extern "C" __global__ void tcs_chain_wmma_gmem(const half* __restrict__ a, const half* __restrict__ b,
                                               float* __restrict__ c, int iters, int mask) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  int off = 0;
  for (int i = 0; i < iters; ++i) {
    wmma::load_matrix_sync(fa, a + off, 16);
    wmma::load_matrix_sync(fb, b + off, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    off = __float_as_int(acc.x[0]) & mask;
  }
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(c + (size_t)warp * 256, acc, 16, wmma::mem_row_major);
}

extern "C" __global__ void tcs_chain_wmma_smem(const half* __restrict__ a, const half* __restrict__ b,
                                               float* __restrict__ c, int iters, int mask) {
  __shared__ __align__(128) half s[2][512];  // A and B tiles, a spare 256 halves after each for the offsets
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    s[0][i] = a[i];
    s[1][i] = b[i];
  }
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  int off = 0;
  for (int i = 0; i < iters; ++i) {
    wmma::load_matrix_sync(fa, &s[0][off], 16);
    wmma::load_matrix_sync(fb, &s[1][off], 16);
    wmma::mma_sync(acc, fa, fb, acc);
    off = __float_as_int(acc.x[0]) & mask;
  }
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(c + (size_t)warp * 256, acc, 16, wmma::mem_row_major);
}

// ldmatrix from shared -> two m16n8k16 mma (the 16 x 16 tile) -> the next ldmatrix's offset.
extern "C" __global__ void tcs_chain_mma_ldm(const half* __restrict__ a, const half* __restrict__ b,
                                             float* __restrict__ c, int iters, int mask) {
  __shared__ __align__(128) half s[2][512];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    s[0][i] = a[i];
    s[1][i] = b[i];
  }
  __syncthreads();
  int lane = threadIdx.x % 32;
  float acc[2][4] = {};
  int off = 0;
  for (int i = 0; i < iters; ++i) {
    uint32_t fa[4], fb[4];
    ldm_x4(fa, &s[0][off + (lane % 16) * 16 + (lane / 16) * 8]);
    ldm_x4_trans(fb, &s[1][off + (lane % 16) * 16 + (lane / 16) * 8]);
    mma16816(acc[0], fa, fb[0], fb[1]);
    mma16816(acc[1], fa, fb[2], fb[3]);
    off = __float_as_int(acc[0][0]) & mask;
  }
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  for (int j = 0; j < 2; ++j) store_acc(c + (size_t)warp * 256, 16, 0, 8 * j, acc[j]);
}

// 32-bit fragment words loaded by each lane from global (A row-major, bt = B transposed) -> two mma.
extern "C" __global__ void tcs_chain_mma_gmem(const half* __restrict__ a, const half* __restrict__ bt,
                                              float* __restrict__ c, int iters, int mask) {
  int lane = threadIdx.x % 32, g = lane / 4, p = lane % 4;
  const uint32_t* aw = reinterpret_cast<const uint32_t*>(a);
  const uint32_t* bw = reinterpret_cast<const uint32_t*>(bt);
  float acc[2][4] = {};
  int off = 0;
  for (int i = 0; i < iters; ++i) {
    uint32_t fa[4] = {aw[off + g * 8 + p], aw[off + (g + 8) * 8 + p], aw[off + g * 8 + p + 4],
                      aw[off + (g + 8) * 8 + p + 4]};
    for (int j = 0; j < 2; ++j)
      mma16816(acc[j], fa, bw[off + (8 * j + g) * 8 + p], bw[off + (8 * j + g) * 8 + p + 4]);
    off = __float_as_int(acc[0][0]) & mask;
  }
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  for (int j = 0; j < 2; ++j) store_acc(c + (size_t)warp * 256, 16, 0, 8 * j, acc[j]);
}
