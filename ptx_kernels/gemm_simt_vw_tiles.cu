// Vector-wise sparse SGEMM (paper 001 Sec. 3.3, VectorSparse on CUDA cores) tile configurations with
// split-K: the per-shape choice the dense SIMT SGEMM has (gemm_simt_tiles.cu), for gemm_simt_vw.cu's kernel.
// Operands as gemm_simt_vw.cu: vals (M x nvec*KV fp32, ldv), offs (M x nvec, ldo; KV 4-bit offsets per
// vector, lowest nibble first, in a u8 / u16 / u32 for KV = 2 / 4 / 8), nvec = ceil(K / 16); B (K x N, ldb)
// and C (M x N, ldc) row-major fp32. A k step takes BKV = 8 compressed columns (8 / KV whole vectors) and the
// 16 * 8 / KV rows of B they span; offsets are decoded on the way into shared memory into the address of the
// B row each entry selects; only the stored values are multiplied.
// Launch: block (threads, 1, 1), grid (ceil(N / BN), ceil(M / BM), S). Slice z of the S = gridDim.z slices
// reduces over vectors [z * Vs, min(nvec, (z + 1) * Vs)), Vs = ceil(ceil(nvec / S) / (8 / KV)) * (8 / KV).
// With S = 1 the thread tile is stored to C; with S > 1 it is added to C with atomic adds, so C must hold
// zeros before the launch, and a slice that starts past nvec adds nothing.
#include "simt_gemm.cuh"

namespace stc {

template <int KV>
struct VwOffsetWord;  // one vector's KV 4-bit offsets
template <>
struct VwOffsetWord<2> {
    using type = unsigned char;
};
template <>
struct VwOffsetWord<4> {
    using type = unsigned short;
};
template <>
struct VwOffsetWord<8> {
    using type = unsigned int;
};

template <int BM, int BN, int BKV, int WM, int WN, int TM, int TN, int KV>
__device__ __forceinline__ void vw_simt_splitk(const float* __restrict__ vals,
                                               const typename VwOffsetWord<KV>::type* __restrict__ offs,
                                               const float* __restrict__ B, float* __restrict__ C, int M, int N,
                                               int K, int ldv, int ldo, int ldb, int ldc)
{
    constexpr int L = 16;
    constexpr int VECS = BKV / KV;  // whole vectors per k step
    constexpr int BK = VECS * L;    // rows of B per k step
    constexpr int SB = BN + 4;      // padded sB rows: different offsets land in different banks
    using T = SimtTile<BM, BN, BKV, WM, WN, TM, TN>;
    static_assert(BKV % KV == 0 && TM == 4 && TN == 4, "whole vectors per step; float4 fragment reads");
    static_assert((BK * BN) % T::kThreads == 0, "B-tile loads must split evenly");
    __shared__ __align__(16) float sV[BKV][BM];     // values, transposed: a thread reads TM rows at once
    __shared__ __align__(16) unsigned sO[BKV][BM];  // the same entries decoded: byte offset of their B row
    __shared__ __align__(16) float sB[BK][SB];

    const int nvec = (K + L - 1) / L;
    const int slices = gridDim.z;
    const int v_slice = (((nvec + slices - 1) / slices + VECS - 1) / VECS) * VECS;
    const int v_begin = blockIdx.z * v_slice;
    const int v_end = min(nvec, v_begin + v_slice);
    if (v_begin >= v_end) {
        return;  // block-uniform: only a slice of S > 1 starts past nvec (C already holds zeros)
    }

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int tm0 = T::thread_m(tid);
    const int tn0 = T::thread_n(tid);
    const char* const b_thread = reinterpret_cast<const char*>(&sB[0][tn0]);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }

    for (int v0 = v_begin; v0 < v_end; v0 += VECS) {
#pragma unroll
        for (int j = 0; j < BM * BKV / T::kThreads; ++j) {
            const int i = tid + j * T::kThreads;
            const int r = i / BKV;
            const int c = i % BKV;  // entry c % KV of vector v0 + c / KV
            const bool in = m0 + r < M && v0 + c / KV < v_end;
            float value = 0.0f;
            unsigned offset = 0;
            if (in) {
                value = vals[(m0 + r) * ldv + v0 * KV + c];
                offset = (offs[(m0 + r) * ldo + v0 + c / KV] >> (4 * (c % KV))) & (L - 1);
            }
            sV[c][r] = value;
            sO[c][r] = ((c / KV) * L + offset) * SB * sizeof(float);
        }
#pragma unroll
        for (int j = 0; j < BK * BN / T::kThreads; ++j) {
            const int i = tid + j * T::kThreads;
            const int r = i / BN;
            const int c = i % BN;
            const int k = v0 * L + r;
            const bool in = k < K && v0 + r / L < v_end && n0 + c < N;
            sB[r][c] = in ? B[k * ldb + n0 + c] : 0.0f;
        }
        __syncthreads();
        const int here = min(VECS, v_end - v0);  // block-uniform: the last step may hold fewer vectors
#pragma unroll
        for (int c = 0; c < BKV; ++c) {
            if (c / KV < here) {
                const float4 av = *reinterpret_cast<const float4*>(&sV[c][tm0]);
                const uint4 ov = *reinterpret_cast<const uint4*>(&sO[c][tm0]);
                const float a[TM] = {av.x, av.y, av.z, av.w};
                const unsigned row[TM] = {ov.x, ov.y, ov.z, ov.w};
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    const float4 bv = *reinterpret_cast<const float4*>(b_thread + row[i]);
                    const float b[TN] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
                    for (int j = 0; j < TN; ++j) {
                        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                    }
                }
            }
        }
        __syncthreads();
    }

    if (slices == 1) {
        store_thread_tile(C, acc, m0 + tm0, n0 + tn0, M, N, ldc);
        return;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + tm0 + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + tn0 + j;
            if (row < M && col < N) {
                atomicAdd(&C[row * ldc + col], acc[i][j]);
            }
        }
    }
}

}  // namespace stc

#define STC_VW_SPLITK(KV, BM, BN, WM, WN)                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))                                \
        gemm_simt_vw_l16k##KV##_f32_f32_tile##BM##x##BN##x8_warp##WM##x##WN##_thread4x4_splitk(             \
            const float* __restrict__ vals, const stc::VwOffsetWord<KV>::type* __restrict__ offs,           \
            const float* __restrict__ B, float* __restrict__ C, int M, int N, int K, int ldv, int ldo,      \
            int ldb, int ldc)                                                                               \
    {                                                                                                       \
        stc::vw_simt_splitk<BM, BN, 8, WM, WN, 4, 4, KV>(vals, offs, B, C, M, N, K, ldv, ldo, ldb, ldc);    \
    }

// The 4x4-thread-tile tiles of the dense SIMT family (gemm_simt_tiles.cu): 64x64 (2x4 warps of 32x16, 256
// threads), 64x32 (2x2, 128), 32x32 (1x2, 64), 64x16 (2x1, 64); for KV = 2, 4, 8.
#define STC_VW_TILES(KV)                                                                                    \
    STC_VW_SPLITK(KV, 64, 64, 32, 16)                                                                       \
    STC_VW_SPLITK(KV, 64, 32, 32, 16)                                                                       \
    STC_VW_SPLITK(KV, 32, 32, 32, 16)                                                                       \
    STC_VW_SPLITK(KV, 64, 16, 32, 16)

STC_VW_TILES(2)
STC_VW_TILES(4)
STC_VW_TILES(8)
