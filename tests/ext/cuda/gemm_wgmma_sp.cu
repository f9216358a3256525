// nvcc-arch: sm_90a
// Compiled with `nvcc -ptx -arch=sm_90a -O3` (stcsim.kernels.build.compile_ptx honours the line above) into
// gemm_wgmma_sp.ptx, committed; tests/ext/test_hopper_gemm.py runs it on the engine and on an H100.
// Hopper (sm_90a) warp-specialised 2:4 sparse GEMM: gemm_wgmma.cu with wgmma.mma_async.sp.m64n128k32.
// C = A * B^T with A: M x K 2:4 sparse along K, given as its compressed values (M x K/2 fp16 row-major, the
// kept elements of each four-wide chunk in ascending column order) and the metadata registers of every
// consumer thread (meta[M/64][K/32][128] uint32: the mma.sp m16n8k32 metadata words of the thread's warp,
// rows 16w..16w+15 of its 64-row block, sparsity selector 0; stcsim.sparsity.mma_sp; read through a third
// tensor map, 3D u32 (128, K/32, M/64), box (128, 2, 2): a tile's words of both consumer warpgroups), Bt: N x K row-major
// fp16, C: M x N row-major fp32. M % 128 == 0, N % 128 == 0, K % 64 == 0.
//
// Block tile 128 x 128 x 64 (dense K), kStages = 5 buffers: A's compressed tile (128 rows x 32 halves = 64 bytes
// per row, 64-byte swizzle: descriptor SBO 512, one k32 step advances the start by 32 bytes) and Bt's
// (as the dense kernel; one k32 step advances 64 bytes), then the tile's metadata words [warpgroup][k32 step]
// [thread] (2 KB), all three loaded by TMA into the stage. Launch: block 384 threads, grid (N / 128, M / 128),
// dynamic shared memory kSmemBytes; parameters: the three tensor maps, C, N, K.
#include <cuda.h>

#include <cstdint>

namespace stc {

constexpr int kBM = 128, kBN = 128, kBK = 64, kStages = 5;  // the sparse tiles are consumed twice as fast
constexpr uint32_t kTileBytesA = kBM * kBK;                     // compressed: kBK / 2 halves per row
constexpr uint32_t kTileBytes = kBN * kBK * 2;                  // Bt
constexpr uint32_t kMetaBytes = 2 * 2 * 128 * 4;                // [consumer warpgroup][k32 step][thread]
constexpr uint32_t kStageBytes = kTileBytesA + kTileBytes + kMetaBytes;
constexpr uint32_t kSmemBytes = kStages * kStageBytes + 1024;   // + alignment slack
static_assert(kSmemBytes <= 227 * 1024, "dynamic shared memory of one block on sm_90");

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile(
        "{\n.reg .pred p;\nWAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity));
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar));
}

__device__ __forceinline__ void mbar_expect(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes));
}

__device__ __forceinline__ void tma_load3(uint32_t dst, const CUtensorMap* map, int x, int y, int z, uint32_t bar)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
        ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar) : "memory");
}

__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int k, int row, uint32_t bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        ::"r"(dst), "l"(map), "r"(k), "r"(row), "r"(bar) : "memory");
}

// K-major, 128-byte swizzle: start >> 4, LBO 16 bytes (unused), SBO 1024 bytes, swizzle mode 1.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr)
{
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
           (uint64_t{1} << 62);
}

// K-major, 64-byte swizzle: SBO 512 bytes (8 rows of 64 bytes), swizzle mode 2.
__device__ __forceinline__ uint64_t desc_sw64(uint32_t addr)
{
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{512 >> 4} << 32) |
           (uint64_t{2} << 62);
}

__device__ __forceinline__ void wgmma_sp_128(float (&d)[64], uint64_t da, uint64_t db, uint32_t meta, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %67, 0;\nwgmma.mma_async.sp.sync.aligned.m64n128k32.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, %66, 0, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(meta), "r"(scale_d));
}

extern "C" __global__ void __launch_bounds__(384) gemm_wgmma_sp(const __grid_constant__ CUtensorMap map_a,
                                                               const __grid_constant__ CUtensorMap map_b,
                                                               const __grid_constant__ CUtensorMap map_m,
                                                               float* __restrict__ c, int n, int k)
{
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
    const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN, tiles = k / kBK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), 2);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::);
    }
    __syncthreads();
    if (wg == 0) {  // producer: one thread issues the TMA loads of every stage
        if (tid == 0) {
            for (int t = 0; t < tiles; ++t) {
                const int s = t % kStages;
                mbar_wait(smem_addr(&empty[s]), ((t / kStages) & 1) ^ 1);
                const uint32_t a = base + s * kStageBytes, b = a + kTileBytesA, bar = smem_addr(&full[s]);
                mbar_expect(bar, kStageBytes);
                tma_load(a, &map_a, t * kBK / 2, m0, bar);
                tma_load(b, &map_b, t * kBK, n0, bar);
                tma_load3(b + kTileBytes, &map_m, 0, 2 * t, blockIdx.y * 2, bar);
            }
        }
        return;
    }
    float d[64];
    for (int i = 0; i < 64; ++i) d[i] = 0.0f;
    const uint32_t row_off = (wg - 1) * 64 * kBK;  // this warpgroup's 64 rows of compressed A
    for (int t = 0; t < tiles; ++t) {
        const int s = t % kStages;
        mbar_wait(smem_addr(&full[s]), (t / kStages) & 1);
        const uint32_t a = base + s * kStageBytes + row_off, b = base + s * kStageBytes + kTileBytesA;
        const uint32_t* meta_s = reinterpret_cast<const uint32_t*>(smem_raw + (b + kTileBytes - smem_addr(smem_raw)));
        const uint32_t m_lo = meta_s[(wg - 1) * 256 + tid], m_hi = meta_s[(wg - 1) * 256 + 128 + tid];
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        wgmma_sp_128(d, desc_sw64(a), desc_sw128(b), m_lo, 1);
        wgmma_sp_128(d, desc_sw64(a + 32), desc_sw128(b + 64), m_hi, 1);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (tid == 0) mbar_arrive(smem_addr(&empty[s]));
    }
    const int warp = tid / 32, lane = tid % 32;
    const int row = m0 + (wg - 1) * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int i = 0; i < 64; ++i) {
        const int r = row + 8 * ((i / 2) % 2), col = n0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
        c[static_cast<size_t>(r) * n + col] = d[i];
    }
}

}  // namespace stc
