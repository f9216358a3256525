// Dense WMMA m16n16k16 fragments through inline PTX, for the sparse Tensor Core kernels (gemm_shmma.cu,
// spmm_extensor.cu): their research instructions (SHMMA, wmma.smma.L) take the B and C fragments as plain
// registers, so B loads and D stores are written in PTX too instead of going through nvcuda::wmma.
// Fragment registers follow docs/isa.md ("Fragment layouts"): B = 8 x .b32 (f16 pairs), C/D = 8 x .f32.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace stc {

// The 32-bit shared-window address of a pointer into shared memory (what the .shared forms take).
__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// fp16 zero built from its bit pattern (no inline-asm conversion in the PTX).
__device__ __forceinline__ half half_zero()
{
    __half_raw raw;
    raw.x = 0;
    return half(raw);
}

// B fragment of the 16x16 row-major fp16 tile at shared address `addr`, rows `ld` elements apart.
__device__ __forceinline__ void load_b_shared(uint32_t (&b)[8], uint32_t addr, int ld)
{
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]), "=r"(b[4]), "=r"(b[5]), "=r"(b[6]), "=r"(b[7])
                 : "r"(addr), "r"(ld));
}

// B fragment of the 16x16 row-major fp16 tile at global address `p`, rows `ld` elements apart.
__device__ __forceinline__ void load_b_global(uint32_t (&b)[8], const half* p, int ld)
{
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.global.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]), "=r"(b[4]), "=r"(b[5]), "=r"(b[6]), "=r"(b[7])
                 : "l"(p), "r"(ld));
}

// Loads the f32 accumulator fragment of the 16x16 row-major tile (ld 16) at shared address addr.
__device__ __forceinline__ void load_c_shared(float (&c)[8], uint32_t addr)
{
    asm volatile("wmma.load.c.sync.aligned.row.m16n16k16.shared.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], 16;"
                 : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3]), "=f"(c[4]), "=f"(c[5]), "=f"(c[6]), "=f"(c[7])
                 : "r"(addr));
}

// Stores the f32 accumulator fragment d as a 16x16 row-major tile at global address p (rows ld apart).
__device__ __forceinline__ void store_d_global(float* p, const float (&d)[8], int ld)
{
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                 :: "l"(p), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]), "f"(d[4]), "f"(d[5]), "f"(d[6]), "f"(d[7]),
                    "r"(ld)
                 : "memory");
}

// Stores the f32 accumulator fragment d as a 16x16 row-major tile (ld 16) at shared address addr.
__device__ __forceinline__ void store_d_shared(uint32_t addr, const float (&d)[8])
{
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, 16;"
                 :: "r"(addr), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]), "f"(d[4]), "f"(d[5]), "f"(d[6]), "f"(d[7])
                 : "memory");
}

// Stores the accumulator tile d at (row0, col0) of C (M x N, rows ldc apart). With `direct` (warp-uniform:
// the tile lies inside C and rows are 32-byte aligned) straight to global memory; otherwise through the
// warp's own 16x16 f32 staging tile with a bounds-checked copy (8 elements per lane).
__device__ __forceinline__ void store_tile16(const float (&d)[8], float* __restrict__ C, int row0, int col0, int M,
                                             int N, int ldc, bool direct, float* stage, int lane)
{
    if (direct) {
        store_d_global(C + row0 * ldc + col0, d, ldc);
        return;
    }
    store_d_shared(smem_addr(stage), d);
    __syncwarp();
    const int r = lane / 2;
    const int c = (lane % 2) * 8;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        if (row0 + r < M && col0 + c + e < N) {
            C[(row0 + r) * ldc + col0 + c + e] = stage[r * 16 + c + e];
        }
    }
    __syncwarp();
}

}  // namespace stc
