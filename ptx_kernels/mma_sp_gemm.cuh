// Multistage 2:4 sparse Tensor Core GEMM (sm_80): mma.sp.sync.aligned.m16n8k32 f16 x f16 + f32, ldmatrix and
// cp.async, CUTLASS sm80 style. Shared by gemm_mma_sp.cu (plain 2:4 GEMM) and spmm_tvw.cu (tile-vector-wise:
// the same main loop on one tile of condensed rows, B rows gathered and C rows scattered through index lists).
//
// One thread block computes BM rows x BN columns of C = A * B. The block's rows are described by BlockRows:
//   a:      compressed A (fp16), BM rows of `lda` halves; row r holds the 2:4-kept values of the dense row in
//           ascending column order (two per four-wide chunk), ksteps * 32 of them (zero padded).
//   e:      metadata, [m16 tile][kstep][lane] words: in k step ks (64 dense columns = two m16n8k32 k tiles),
//           lane 4g + 2s + j holds metadata word 2g + j of k tile 2ks + s (stcsim/sparsity/mma_sp.py), so
//           one register per lane serves both k tiles with sparsity selectors 0 and 1 (as CUTLASS feeds it).
//   b_rows: the B row of each dense (condensed) column, or null for the identity (rows >= K are zero).
//   c_rows: the C row of each block row, or null for m0 + r; rows >= `rows` are neither read nor written.
// B: row-major fp16, ldb % 8 == 0, 16-byte aligned; columns >= N are zero-filled, C stores are guarded.
//
// Shared memory per stage (dynamic, STAGES stages): A BM x 32 halves (64 bytes a row, 16-byte chunk c of
// row r at c ^ ((r >> 1) & 3)), B 64 x BN halves (chunk c of row k at c ^ (k & 7)), E BM / 16 x 32 words.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "sm80_async.cuh"

namespace stc::sp {

constexpr int kBK = 64;   // dense k per stage: two m16n8k32 k tiles
constexpr int kBKc = 32;  // compressed A halves per row and stage

struct BlockRows {
    const half* a;
    int lda;
    int rows;
    const uint32_t* e;
    int ksteps;
    const int* b_rows;
    int K;
    const int* c_rows;
    int m0;
};

__device__ __forceinline__ uint32_t lds_u32(uint32_t addr)
{
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
}

// D += A * B for one m16n8k32 tile: A the compressed 16 x 16 fragment, B 32 x 8, metadata e, selector SEL.
template <int SEL>
__device__ __forceinline__ void mma_sp_16832(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[4],
                                             uint32_t e)
{
    asm volatile(
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, %13;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e),
          "n"(SEL));
}

template <int BM, int BN, int WM, int WN, int STAGES>
struct SpTile {
    static constexpr int kWarpsN = BN / WN;
    static constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
    static constexpr int kFragM = WM / 16;
    static constexpr int kFragN = WN / 8;
    static constexpr int kStageA = BM * kBKc * 2;  // bytes
    static constexpr int kStageB = kBK * BN * 2;
    static constexpr int kStageE = BM / 16 * 32 * 4;
    static constexpr int kStage = kStageA + kStageB + kStageE;
    static constexpr int kSharedBytes = STAGES * kStage;
    static constexpr int kChunksA = BM * kBKc / 8 / kThreads;  // 16-byte cp.async per thread and stage
    static constexpr int kChunksB = kBK * BN / 8 / kThreads;
    static constexpr int kChunksE = kStageE / 16;               // spread over the first kChunksE threads
    static_assert(BN / 8 >= 8, "the B swizzle needs rows of at least 8 chunks");
    static_assert(kChunksA * kThreads * 8 == BM * kBKc && kChunksB * kThreads * 8 == kBK * BN, "even split");
    static_assert(kChunksE <= kThreads, "one metadata chunk per thread at most");
};

// Issues the cp.async copies of k step ks into the stage at shared address s.
template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void load_stage(uint32_t s, const BlockRows& br, const half* __restrict__ B, int n0,
                                           int N, int ldb, int ks)
{
    using T = SpTile<BM, BN, WM, WN, STAGES>;
#pragma unroll
    for (int j = 0; j < T::kChunksA; ++j) {
        const int i = threadIdx.x + j * T::kThreads;
        const int r = i / (kBKc / 8);
        const int c = i % (kBKc / 8);
        const bool in = r < br.rows;
        const half* src = in ? br.a + r * br.lda + ks * kBKc + c * 8 : br.a;
        cp_async_16(s + a_offset(r, c), src, in ? 16 : 0);
    }
    const uint32_t sb = s + T::kStageA;
    int rows[T::kChunksB];  // B row of each chunk, all index loads issued before the first copy
#pragma unroll
    for (int j = 0; j < T::kChunksB; ++j) {
        const int kd = ks * kBK + (threadIdx.x + j * T::kThreads) / (BN / 8);
        rows[j] = br.b_rows != nullptr ? __ldg(br.b_rows + kd) : kd;
    }
#pragma unroll
    for (int j = 0; j < T::kChunksB; ++j) {
        const int i = threadIdx.x + j * T::kThreads;
        const int k = i / (BN / 8);
        const int c = i % (BN / 8);
        const int kd = ks * kBK + k;
        const int row = rows[j];
        const int rest = N - (n0 + c * 8);
        const bool in = (br.b_rows != nullptr || kd < br.K) && rest > 0;
        const int bytes = in ? min(rest, 8) * 2 : 0;
        const half* src = in ? B + row * ldb + n0 + c * 8 : B;
        cp_async_16(sb + b_offset<BN>(k, c), src, bytes);
    }
    if (threadIdx.x < T::kChunksE) {
        const int tile = threadIdx.x / 8;
        const int part = threadIdx.x % 8;
        const bool in = tile * 16 < br.rows;
        const uint32_t* src = in ? br.e + (tile * br.ksteps + ks) * 32 + part * 4 : br.e;
        cp_async_16(s + T::kStageA + T::kStageB + threadIdx.x * 16, src, in ? 16 : 0);
    }
}

// The warp-level math of one stage: per m16 fragment one metadata word, then two k32 steps (selectors 0, 1)
// of ldmatrix A (x4, compressed 16 x 16), ldmatrix B (x4.trans, 32 x 8 per n8 fragment) and mma.sp.
template <int BM, int BN, int WM, int WN, int STAGES, int SEL>
__device__ __forceinline__ void compute_k32(
    float (&acc)[SpTile<BM, BN, WM, WN, STAGES>::kFragM][SpTile<BM, BN, WM, WN, STAGES>::kFragN][4],
    const uint32_t (&e)[SpTile<BM, BN, WM, WN, STAGES>::kFragM], uint32_t s, int wm, int wn, int lane)
{
    using T = SpTile<BM, BN, WM, WN, STAGES>;
    uint32_t a[T::kFragM][4];
    uint32_t b[T::kFragN][4];
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
        ldmatrix_x4(a[mi], s + a_offset(wm * WM + mi * 16 + lane % 16, 2 * SEL + lane / 16));
    }
#pragma unroll
    for (int ni = 0; ni < T::kFragN; ++ni) {
        ldmatrix_x4_trans(b[ni], s + T::kStageA + b_offset<BN>(32 * SEL + lane, (wn * WN + ni * 8) / 8));
    }
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < T::kFragN; ++ni) {
            mma_sp_16832<SEL>(acc[mi][ni], a[mi], b[ni], e[mi]);
        }
    }
}

template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void sp_gemm(const BlockRows& br, const half* __restrict__ B, float* __restrict__ C,
                                        int N, int ldb, int ldc)
{
    using T = SpTile<BM, BN, WM, WN, STAGES>;
    extern __shared__ __align__(16) uint8_t smem[];
    const uint32_t s0 = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int wm = warp / T::kWarpsN;
    const int wn = warp % T::kWarpsN;
    const int n0 = blockIdx.x * BN;

    float acc[T::kFragM][T::kFragN][4];
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < T::kFragN; ++ni) {
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                acc[mi][ni][v] = 0.0f;
            }
        }
    }

    // Prologue: STAGES - 1 stages in flight; one commit group per k step (empty ones keep the count fixed).
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (st < br.ksteps) {
            load_stage<BM, BN, WM, WN, STAGES>(s0 + st * T::kStage, br, B, n0, N, ldb, st);
        }
        cp_async_commit();
    }
    for (int ks = 0; ks < br.ksteps; ++ks) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int next = ks + STAGES - 1;
        if (next < br.ksteps) {
            load_stage<BM, BN, WM, WN, STAGES>(s0 + (next % STAGES) * T::kStage, br, B, n0, N, ldb, next);
        }
        cp_async_commit();
        const uint32_t s = s0 + (ks % STAGES) * T::kStage;
        uint32_t e[T::kFragM];
#pragma unroll
        for (int mi = 0; mi < T::kFragM; ++mi) {
            e[mi] = lds_u32(s + T::kStageA + T::kStageB + ((wm * WM / 16 + mi) * 32 + lane) * 4);
        }
        compute_k32<BM, BN, WM, WN, STAGES, 0>(acc, e, s, wm, wn, lane);
        compute_k32<BM, BN, WM, WN, STAGES, 1>(acc, e, s, wm, wn, lane);
    }
    cp_async_wait<0>();

    // Epilogue: thread (g, t) = (lane / 4, lane % 4) holds block rows g and g + 8, columns 2t and 2t + 1.
    const int g = lane / 4;
    const int t = lane % 4;
    int c_rows[T::kFragM][2];  // C row of each block row this thread holds, loads issued together
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = wm * WM + mi * 16 + g + 8 * h;
            c_rows[mi][h] = br.c_rows == nullptr ? br.m0 + r : r < br.rows ? __ldg(br.c_rows + r) : 0;
        }
    }
#pragma unroll
    for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = wm * WM + mi * 16 + g + 8 * h;
            if (r >= br.rows) {
                continue;
            }
            float* c_row = C + c_rows[mi][h] * ldc;
#pragma unroll
            for (int ni = 0; ni < T::kFragN; ++ni) {
                const int col = n0 + wn * WN + ni * 8 + 2 * t;
                if (col < N) {
                    c_row[col] = acc[mi][ni][2 * h];
                }
                if (col + 1 < N) {
                    c_row[col + 1] = acc[mi][ni][2 * h + 1];
                }
            }
        }
    }
}

}  // namespace stc::sp
