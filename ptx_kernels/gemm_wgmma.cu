// nvcc-arch: sm_90a
// Hopper warp-specialised GEMMs, dense (wgmma.mma_async m64nBNk16) and 2:4 sparse (wgmma.mma_async.sp
// m64nBNk32), compiled with `nvcc -ptx -arch=sm_90a -O3` into gemm_wgmma.ptx (stcsim.kernels.descriptors.gemm_wgmma
// describes, prepares and launches them). C (M x N fp32, row-major) = A * Bt^T with A the weights (M x K fp16
// row-major; for the sparse kernels its 2:4 compressed values, M x K/2) and Bt the activations transposed
// (N x K fp16 row-major): both K-major, as wgmma reads them without transposition. K is padded with zeros to a
// multiple of 64 by the host; M and N are any: TMA zero-fills the rows of a box past the tensor, and the
// epilogue stores only rows < M and columns < N.
//
// Block tile 128 x BN x 64 (BN = 8 for one to eight columns: decode steps, lm_head; 128 and 256), STAGES
// shared-memory buffers filled by TMA (128-byte swizzle for the dense A and
// Bt tiles, 64-byte swizzle for the compressed A tile) and guarded by mbarriers: full[s] (one producer
// arrival + the stage's bytes), empty[s] (one arrival per consumer warp). Warpgroup 0 is the producer (one
// thread issues the loads); warpgroups 1 and 2 each own 64 rows of the tile and keep one wgmma group in flight
// (wait_group 1) while the next stage's group issues, releasing a stage once its group has completed.
// The sparse kernels' metadata (one 32-bit word per consumer thread and k32 step, the mma.sp m16n8k32 words
// of the thread's warp with sparsity selector 0: meta[ceil(M/128) * 2][K/32][128]) rides in each stage too,
// loaded by a 3D TMA box (128, 2, 2) and read from shared memory into the instruction's register.
// Launch: block 384 threads, grid (ceil(N / BN), ceil(M / 128)), dynamic shared memory Tile::kSmem;
// parameters: the tensor maps of A and Bt (and of the metadata), C, M, N, K (padded).
#include "hopper_async.cuh"

namespace stc {

constexpr int kBM = 128, kBK = 64, kConsumerWarps = 8;

template <int BN, int STAGES, bool SPARSE>
struct Tile {
    static constexpr uint32_t kA = SPARSE ? kBM * kBK : kBM * kBK * 2;  // compressed: kBK / 2 halves per row
    static constexpr uint32_t kB = BN * kBK * 2;
    static constexpr uint32_t kMeta = SPARSE ? 2 * 2 * 128 * 4 : 0;     // [consumer wg][k32 step][thread]
    static constexpr uint32_t kStage = kA + kB + kMeta;
    static constexpr uint32_t kSmem = STAGES * kStage + 1024;          // + 1024-byte alignment slack
    static_assert(kSmem <= 227 * 1024, "dynamic shared memory of one block on sm_90");
};

template <int BN, bool SPARSE>
__device__ __forceinline__ void mma_stage(float (&d)[BN / 2], uint32_t a, uint32_t b, uint32_t lo, uint32_t hi)
{
    if constexpr (SPARSE) {
        if constexpr (BN == 8) {
            wgmma_sp_m64n8k32(d, desc_sw64(a), desc_sw128(b), lo, 1);
            wgmma_sp_m64n8k32(d, desc_sw64(a + 32), desc_sw128(b + 64), hi, 1);
        } else if constexpr (BN == 128) {
            wgmma_sp_m64n128k32(d, desc_sw64(a), desc_sw128(b), lo, 1);
            wgmma_sp_m64n128k32(d, desc_sw64(a + 32), desc_sw128(b + 64), hi, 1);
        } else {
            wgmma_sp_m64n256k32(d, desc_sw64(a), desc_sw128(b), lo, 1);
            wgmma_sp_m64n256k32(d, desc_sw64(a + 32), desc_sw128(b + 64), hi, 1);
        }
    } else {
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) {
            if constexpr (BN == 8) wgmma_m64n8k16(d, desc_sw128(a + 32 * kk), desc_sw128(b + 32 * kk), 1);
            else if constexpr (BN == 128) wgmma_m64n128k16(d, desc_sw128(a + 32 * kk), desc_sw128(b + 32 * kk), 1);
            else wgmma_m64n256k16(d, desc_sw128(a + 32 * kk), desc_sw128(b + 32 * kk), 1);
        }
    }
}

template <int BN, int STAGES, bool SPARSE>
__device__ __forceinline__ void gemm(const CUtensorMap* map_a, const CUtensorMap* map_b, const CUtensorMap* map_m,
                                     float* __restrict__ c, int m, int n, int k)
{
    using T = Tile<BN, STAGES, SPARSE>;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t raw = smem_addr(smem_raw), base = (raw + 1023) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * BN, tiles = k / kBK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), kConsumerWarps);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::);
    }
    __syncthreads();
    if (wg == 0) {  // producer: one thread issues the TMA loads of every stage
        if (tid == 0) {
            for (int t = 0; t < tiles; ++t) {
                const int s = t % STAGES;
                mbar_wait(smem_addr(&empty[s]), ((t / STAGES) & 1) ^ 1);
                const uint32_t a = base + s * T::kStage, b = a + T::kA, bar = smem_addr(&full[s]);
                mbar_expect(bar, T::kStage);
                tma_load(a, map_a, SPARSE ? t * kBK / 2 : t * kBK, m0, bar);
                tma_load(b, map_b, t * kBK, n0, bar);
                if constexpr (SPARSE) tma_load3(b + T::kB, map_m, 0, 2 * t, blockIdx.y * 2, bar);
            }
        }
        return;
    }
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
    const uint32_t row_off = (wg - 1) * 64 * (T::kA / kBM);  // this warpgroup's 64 rows of A
    for (int t = 0; t < tiles; ++t) {
        const int s = t % STAGES;
        mbar_wait(smem_addr(&full[s]), (t / STAGES) & 1);
        const uint32_t a = base + s * T::kStage, b = a + T::kA;
        uint32_t lo = 0, hi = 0;  // the sparse kernels' metadata words of this thread (k32 steps 0 and 1)
        if constexpr (SPARSE) {
            const uint32_t* meta = reinterpret_cast<const uint32_t*>(smem_raw + (b + T::kB - raw)) + (wg - 1) * 256;
            lo = meta[tid];
            hi = meta[128 + tid];
        }
        wgmma_fence();
        mma_stage<BN, SPARSE>(d, a + row_off, b, lo, hi);
        wgmma_commit();
        wgmma_wait<1>();  // the previous stage's group has completed: release its buffers
        if (t > 0 && tid % 32 == 0) mbar_arrive(smem_addr(&empty[(t - 1) % STAGES]));
    }
    wgmma_wait<0>();
    const int warp = tid / 32, lane = tid % 32;
    const int row = m0 + (wg - 1) * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        const int r = row + 8 * ((i / 2) % 2), col = n0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
        if (r < m && col < n) c[static_cast<size_t>(r) * n + col] = d[i];
    }
}

}  // namespace stc

#define STC_DENSE(BN, STAGES)                                                                                \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_wgmma_f16_f32_tile128x##BN##x64_stage##STAGES( \
        const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, float* c, int m, \
        int n, int k)                                                                                        \
    {                                                                                                        \
        stc::gemm<BN, STAGES, false>(&map_a, &map_b, nullptr, c, m, n, k);                                   \
    }
#define STC_SPARSE(BN, STAGES)                                                                                  \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_wgmma_sp_f16_f32_tile128x##BN##x64_stage##STAGES( \
        const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,                   \
        const __grid_constant__ CUtensorMap map_m, float* c, int m, int n, int k)                               \
    {                                                                                                           \
        stc::gemm<BN, STAGES, true>(&map_a, &map_b, &map_m, c, m, n, k);                                        \
    }

STC_DENSE(8, 6)
STC_DENSE(128, 4)
STC_DENSE(256, 4)
STC_SPARSE(8, 6)
STC_SPARSE(128, 5)
STC_SPARSE(256, 4)
