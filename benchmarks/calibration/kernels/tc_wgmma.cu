// Issue 43's Hopper styles: wgmma with plain loads, written for the calibration suite independently of the
// project's kernels (no TMA, no mbarrier, no warp specialisation, no swizzle): a CTA of WG consumer
// warpgroups (128 threads each) computes a (64*WG) x 64 tile of C = A @ B. Per k-tile of 64, every thread
// copies 16-byte chunks of A (M x K row-major) and of Bt (B transposed, N x K row-major) from global memory
// into one shared stage in the no-swizzle K-major core-matrix layout (8 rows x 16 bytes per core matrix,
// LBO = 128 bytes between core matrices along K, SBO = 1024 between 8-row groups), then each warpgroup issues
// four wgmma.mma_async m64n64k16 (f32 += f16 x f16) on its 64 rows, commits and waits for them.
//   tcs_wgmma_1wg   one consumer warpgroup, 64 x 64 tile
//   tcs_wgmma_2wg   two consumer warpgroups, 128 x 64 tile (each warpgroup 64 rows, B shared)
// nvcc -arch=sm_90a -ptx -O3 tc_wgmma.cu -o tc_wgmma.ptx
#include <cuda_fp16.h>
#include <cstdint>

namespace {

constexpr int BK = 64;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// byte offset of element (row r, column kk < 64) of a K-major tile in the no-swizzle core-matrix layout
__device__ __forceinline__ uint32_t tile_offset(int r, int kk) {
  return (r % 8) * 16 + (kk % 8) * 2 + (kk / 8) * 128 + (r / 8) * 1024;
}

__device__ __forceinline__ uint64_t descriptor(uint32_t addr) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(1024 >> 4) << 32);
}

__device__ __forceinline__ void wgmma_m64n64k16(float* d, uint64_t da, uint64_t db) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db));
}

// rows x 64 halves of a row-major matrix (leading dimension ld) from global into the shared tile
__device__ __forceinline__ void copy_tile(half* tile, const half* g, int rows, size_t ld, int t, int threads) {
  for (int i = t; i < rows * (BK / 8); i += threads) {
    int r = i / (BK / 8), kk = (i % (BK / 8)) * 8;
    *reinterpret_cast<uint4*>(reinterpret_cast<char*>(tile) + tile_offset(r, kk)) =
        *reinterpret_cast<const uint4*>(g + (size_t)r * ld + kk);
  }
}

template <int WG>
__device__ __forceinline__ void wgmma_gemm(const half* __restrict__ a, const half* __restrict__ bt,
                                           float* __restrict__ c, int m, int n, int k, half* sa, half* sb) {
  const int t = threadIdx.x, wg = t / 128, w = (t % 128) / 32, lane = t % 32;
  const int bm = blockIdx.y * 64 * WG, bn = blockIdx.x * 64;
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += BK) {
    copy_tile(sa, a + (size_t)bm * k + k0, 64 * WG, k, t, 128 * WG);
    copy_tile(sb, bt + (size_t)bn * k + k0, 64, k, t, 128 * WG);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    const uint32_t a0 = smem_addr(sa) + wg * 8 * 1024, b0 = smem_addr(sb);
    for (int s = 0; s < BK / 16; ++s) wgmma_m64n64k16(d, descriptor(a0 + s * 256), descriptor(b0 + s * 256));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    __syncthreads();
  }
  // D of m64nNk16: warp w holds rows 16w + lane/4 and + 8; per 8 columns j: {d[4j], d[4j+1]} at the first
  // row, {d[4j+2], d[4j+3]} at the second, columns 8j + 2 (lane % 4) + {0, 1}
  const int row = bm + 64 * wg + 16 * w + lane / 4, col = bn + 2 * (lane % 4);
  for (int j = 0; j < 8; ++j) {
    *reinterpret_cast<float2*>(c + (size_t)row * n + col + 8 * j) = make_float2(d[4 * j], d[4 * j + 1]);
    *reinterpret_cast<float2*>(c + (size_t)(row + 8) * n + col + 8 * j) = make_float2(d[4 * j + 2], d[4 * j + 3]);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128) tcs_wgmma_1wg(const half* __restrict__ a,
                                                               const half* __restrict__ bt,
                                                               float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(1024) half sa[64 * BK];
  __shared__ __align__(1024) half sb[64 * BK];
  wgmma_gemm<1>(a, bt, c, m, n, k, sa, sb);
}

extern "C" __global__ void __launch_bounds__(256) tcs_wgmma_2wg(const half* __restrict__ a,
                                                               const half* __restrict__ bt,
                                                               float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(1024) half sa[128 * BK];
  __shared__ __align__(1024) half sb[64 * BK];
  wgmma_gemm<2>(a, bt, c, m, n, k, sa, sb);
}
