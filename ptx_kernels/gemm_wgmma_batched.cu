// nvcc-arch: sm_90a
// Hopper's dense warp-specialised GEMM as a strided-batched launch (cublasGemmStridedBatchedEx's form: one
// launch runs `batch` GEMMs of one shape, as frameworks run attention's per-head score and context GEMMs),
// compiled with `nvcc -ptx -arch=sm_90a -O3` into gemm_wgmma_batched.ptx (stcsim.kernels.descriptors.gemm_wgmma
// describes, prepares and launches it). The code is gemm_wgmma.cu's dense GEMM (same tile, pipeline, warp
// roles and epilogue; kept in its own file so that gemm_wgmma.ptx stays byte for byte what it was) with
// blockIdx.z the batch index: C[z] (M x N fp32, row-major, at c + z * stride_c elements) = A[z] * Bt[z]^T,
// A (batch x M x K fp16) and Bt (batch x N x K fp16) both K-major, read through 3D tensor maps (K, rows,
// batch; the strides of A and Bt are the maps' third-dimension strides) at z = blockIdx.z. K is padded with
// zeros to a multiple of 64 by the host; M and N are any (TMA zero-fills, the epilogue stores inside C[z]).
// Launch: block 384 threads, grid (ceil(N / BN), ceil(M / 128), batch), dynamic shared memory
// STAGES * (128 + BN) * 64 * 2 + 1024 bytes; parameters: the tensor maps of A and Bt, C, M, N, K (padded),
// stride_c (elements from one C matrix to the next, 64-bit).
#include "hopper_async.cuh"

namespace stc {

constexpr int kBM = 128, kBK = 64, kConsumerWarps = 8;

template <int BN, int STAGES>
struct BatchedTile {
    static constexpr uint32_t kA = kBM * kBK * 2;
    static constexpr uint32_t kB = BN * kBK * 2;
    static constexpr uint32_t kStage = kA + kB;
    static constexpr uint32_t kSmem = STAGES * kStage + 1024;  // + 1024-byte alignment slack
    static_assert(kSmem <= 227 * 1024, "dynamic shared memory of one block on sm_90");
};

template <int BN, int STAGES>
__device__ __forceinline__ void gemm_batched(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                             float* __restrict__ c, int m, int n, int k, long long stride_c)
{
    using T = BatchedTile<BN, STAGES>;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t raw = smem_addr(smem_raw), base = (raw + 1023) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * BN, z = blockIdx.z, tiles = k / kBK;
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
                tma_load3(a, map_a, t * kBK, m0, z, bar);
                tma_load3(b, map_b, t * kBK, n0, z, bar);
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
        const uint32_t a = base + s * T::kStage + row_off, b = base + s * T::kStage + T::kA;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) {
            if constexpr (BN == 128) wgmma_m64n128k16(d, desc_sw128(a + 32 * kk), desc_sw128(b + 32 * kk), 1);
            else wgmma_m64n256k16(d, desc_sw128(a + 32 * kk), desc_sw128(b + 32 * kk), 1);
        }
        wgmma_commit();
        wgmma_wait<1>();  // the previous stage's group has completed: release its buffers
        if (t > 0 && tid % 32 == 0) mbar_arrive(smem_addr(&empty[(t - 1) % STAGES]));
    }
    wgmma_wait<0>();
    float* cz = c + z * stride_c;
    const int warp = tid / 32, lane = tid % 32;
    const int row = m0 + (wg - 1) * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        const int r = row + 8 * ((i / 2) % 2), col = n0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
        if (r < m && col < n) cz[static_cast<size_t>(r) * n + col] = d[i];
    }
}

}  // namespace stc

#define STC_BATCHED(BN, STAGES)                                                                               \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                      \
        gemm_wgmma_batched_f16_f32_tile128x##BN##x64_stage##STAGES(                                          \
            const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, float* c,   \
            int m, int n, int k, long long stride_c)                                                          \
    {                                                                                                         \
        stc::gemm_batched<BN, STAGES>(&map_a, &map_b, c, m, n, k, stride_c);                                  \
    }

STC_BATCHED(128, 4)
STC_BATCHED(256, 4)
