// The sm_80 building blocks the multistage Tensor Core kernels share: as inline PTX, cp.async copies into
// shared memory (16-byte .cg, 4-byte .ca; src_bytes < size zero-fills the rest), their commit/wait groups,
// ldmatrix (plain and transposed x4) and mma.sync m16n8k16 f16 x f16 + f32; the XOR swizzle of the staged
// tiles (A rows of 32 halves, B rows of BN halves, 16-byte chunks); and one 32-deep k tile of warp math.

#pragma once

#include <cstdint>

namespace stc {

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, int src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

constexpr int kSwizzledRowA = 32;  // halves per staged A row (4 chunks of 16 bytes)

// Byte offset of 16-byte chunk c of row r in a swizzled A stage (rows of 32 halves = 4 chunks).
__device__ __forceinline__ uint32_t a_offset(int r, int c)
{
    return r * (kSwizzledRowA * 2) + ((c ^ ((r >> 1) & 3)) << 4);
}

// Byte offset of 16-byte chunk c of row k in a swizzled B stage (rows of BN halves).
template <int BN>
__device__ __forceinline__ uint32_t b_offset(int k, int c) { return k * (BN * 2) + ((c ^ (k & 7)) << 4); }

// One 32-deep k tile of a warp's WM x WN accumulators (T: kFragM m16 x kFragN n8 fragments) from swizzled
// stages at sa (A) and sb (B): 2 k16 steps, each ldmatrix A (x4) and B (x4.trans) then mma.sync.
template <class T, int BN, int WM, int WN>
__device__ __forceinline__ void compute_tile(float (&acc)[T::kFragM][T::kFragN][4], uint32_t sa, uint32_t sb,
                                             int wm, int wn, int lane)
{
#pragma unroll
    for (int kk = 0; kk < kSwizzledRowA; kk += 16) {
        uint32_t a[T::kFragM][4];
        uint32_t b[T::kFragN][2];
#pragma unroll
        for (int mi = 0; mi < T::kFragM; ++mi) {
            const int r = wm * WM + mi * 16 + (lane % 16);
            ldmatrix_x4(a[mi], sa + a_offset(r, kk / 8 + lane / 16));
        }
#pragma unroll
        for (int nj = 0; nj < T::kFragN / 2; ++nj) {
            const int k = kk + (lane % 16);
            uint32_t q[4];
            ldmatrix_x4_trans(q, sb + b_offset<BN>(k, (wn * WN + nj * 16) / 8 + lane / 16));
            b[2 * nj][0] = q[0];
            b[2 * nj][1] = q[1];
            b[2 * nj + 1][0] = q[2];
            b[2 * nj + 1][1] = q[3];
        }
#pragma unroll
        for (int mi = 0; mi < T::kFragM; ++mi) {
#pragma unroll
            for (int ni = 0; ni < T::kFragN; ++ni) {
                mma_16816(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
            }
        }
    }
}

}  // namespace stc
