// SHMMA from CUDA C++ through inline asm (paper 001): one warp computes D = C + A_sparse x B for a
// 16x16x16 tile, A stored compressed (16 x 4 fp16 values, row-major) with one u16 of 4-bit offsets per
// row. Compiled with `nvcc -ptx -arch=sm_80 -O3` into shmma_tile.ptx (committed; ptxas itself does not
// know the research instructions, so only the simulator runs it).
#include <cuda_fp16.h>

extern "C" __global__ void shmma_tile_k4(const __half* vals, const unsigned short* offs, const __half* b,
                                         const float* c, float* d) {
  unsigned a0, a1, a2, a3, o0, b0, b1, b2, b3, b4, b5, b6, b7;
  float c0, c1, c2, c3, c4, c5, c6, c7, d0, d1, d2, d3, d4, d5, d6, d7;
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.smma.k4.global.f16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "l"(vals));
  asm volatile("wmma.load.meta.sync.aligned.row.m16n16k16.smma.k4.global {%0}, [%1];" : "=r"(o0) : "l"(offs));
  asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.global.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], 16;"
               : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3), "=r"(b4), "=r"(b5), "=r"(b6), "=r"(b7) : "l"(b));
  asm volatile("wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], 16;"
               : "=f"(c0), "=f"(c1), "=f"(c2), "=f"(c3), "=f"(c4), "=f"(c5), "=f"(c6), "=f"(c7) : "l"(c));
  asm volatile(
      "wmma.mma.sync.aligned.row.row.m16n16k16.smma.k4.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19}, {%20, %21, %22, %23, %24, %25, %26, %27}, "
      "{%28};"
      : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3), "=f"(d4), "=f"(d5), "=f"(d6), "=f"(d7)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(b4), "r"(b5), "r"(b6),
        "r"(b7), "f"(c0), "f"(c1), "f"(c2), "f"(c3), "f"(c4), "f"(c5), "f"(c6), "f"(c7), "r"(o0));
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, 16;"
               :: "l"(d), "f"(d0), "f"(d1), "f"(d2), "f"(d3), "f"(d4), "f"(d5), "f"(d6), "f"(d7) : "memory");
}
