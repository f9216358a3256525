// Vector-wise sparse SGEMM on CUDA cores (paper 001 Sec. 3.3, VectorSparse): the SIMT tiles of the SGEMM
// (simt_gemm.cuh), with A encoded as row vectors of L = 16 reduction columns that keep KV non-zeros each.
// C (M x N) = A (M x K, vector-wise) @ B (K x N). A: vals (M x nvec*KV fp32, row-major, ldv) holds the KV
// values of each vector, offs (M x nvec, row-major, ldo) their column offsets inside the vector as 4-bit
// nibbles packed least-significant first into one integer per vector (u8, u16, u32 for KV = 2, 4, 8);
// nvec = ceil(K / 16). B and C row-major fp32 (ldb, ldc).
// A k step takes BKV compressed columns of A (BKV / KV whole vectors, as the SGEMM takes BK columns) and the
// BKV / KV * 16 rows of B those vectors span into shared memory; the offsets are decoded once, on the way
// in, into the shared-memory address of the B row each entry selects. Each thread then multiplies, for each
// compressed column and each of its TM rows, the value by the TN elements of the B row its offset selects:
// the FMAs are those of the stored values only (KV per vector instead of 16).
// Ragged M, N, K: loads outside the operands give zeros in shared memory, vectors past nvec are skipped,
// stores outside C are skipped. Launch: block (256, 1, 1), grid (ceil(N / 64), ceil(M / 64)).
#include "simt_gemm.cuh"

namespace stc {

template <int KV>
struct OffsetWord;  // one vector's KV 4-bit offsets
template <>
struct OffsetWord<2> {
    using type = unsigned char;
};
template <>
struct OffsetWord<4> {
    using type = unsigned short;
};
template <>
struct OffsetWord<8> {
    using type = unsigned int;
};

template <int BM, int BN, int BKV, int WM, int WN, int TM, int TN, int KV>
__device__ __forceinline__ void vw_simt_gemm(const float* __restrict__ vals,
                                             const typename OffsetWord<KV>::type* __restrict__ offs,
                                             const float* __restrict__ B, float* __restrict__ C, int M, int N,
                                             int K, int ldv, int ldo, int ldb, int ldc)
{
    constexpr int L = 16;
    constexpr int VECS = BKV / KV;  // whole vectors per k step
    constexpr int BK = VECS * L;    // rows of B per k step
    constexpr int SB = BN + 4;      // padded sB rows: different offsets land in different banks
    using T = SimtTile<BM, BN, BKV, WM, WN, TM, TN>;
    static_assert(BKV % KV == 0 && TM == 4 && TN == 4, "whole vectors per step; float4 fragment reads");
    __shared__ __align__(16) float sV[BKV][BM];     // values, transposed: a thread reads TM rows at once
    __shared__ __align__(16) unsigned sO[BKV][BM];  // the same entries decoded: byte offset of their B row
    __shared__ __align__(16) float sB[BK][SB];

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int tm0 = T::thread_m(tid);
    const int tn0 = T::thread_n(tid);
    const int nvec = (K + L - 1) / L;
    const char* const b_thread = reinterpret_cast<const char*>(&sB[0][tn0]);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }

    for (int v0 = 0; v0 < nvec; v0 += VECS) {
#pragma unroll
        for (int j = 0; j < BM * BKV / T::kThreads; ++j) {
            const int i = tid + j * T::kThreads;
            const int r = i / BKV;
            const int c = i % BKV;  // entry c % KV of vector v0 + c / KV
            const bool in = m0 + r < M && v0 + c / KV < nvec;
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
            const bool in = k < K && n0 + c < N;
            sB[r][c] = in ? B[k * ldb + n0 + c] : 0.0f;
        }
        __syncthreads();
        const int here = min(VECS, nvec - v0);  // block-uniform: the last step may hold fewer vectors
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

    store_thread_tile(C, acc, m0 + tm0, n0 + tn0, M, N, ldc);
}

}  // namespace stc

// L = 16, KV = 2 / 4 / 8 non-zeros per vector; 64x64 block tile with 8 compressed columns of A per k step,
// 2x4 warps of 32x16, 4x4 thread tile: 256 threads.
#define STC_VW_SIMT_KERNEL(KV)                                                                             \
    extern "C" __global__ void __launch_bounds__(256)                                                     \
        gemm_simt_vw_l16k##KV##_f32_f32_tile64x64x8_warp32x16_thread4x4(                                   \
            const float* __restrict__ vals, const stc::OffsetWord<KV>::type* __restrict__ offs,            \
            const float* __restrict__ B, float* __restrict__ C, int M, int N, int K, int ldv, int ldo,     \
            int ldb, int ldc)                                                                              \
    {                                                                                                      \
        stc::vw_simt_gemm<64, 64, 8, 32, 16, 4, 4, KV>(vals, offs, B, C, M, N, K, ldv, ldo, ldb, ldc);     \
    }

STC_VW_SIMT_KERNEL(2)
STC_VW_SIMT_KERNEL(4)
STC_VW_SIMT_KERNEL(8)
