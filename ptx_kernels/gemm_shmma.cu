// Vector-wise sparse WMMA GEMM with SHMMA (paper 001, Sec. 3.3 and 4.2): C = A * B with A pruned vector-wise
// (every 16-wide row vector keeps at most NNZ = 2, 4 or 8 weights), fp16 operands, fp32 accumulate.
// The tiling is the dense tiled WMMA GEMM's (gemm_wmma.cu, kernel (b)): a 64x64x32 block tile, 4 warps (2x2)
// of 32x32 = 2x2 accumulator fragments, A and B staged in shared memory. Only the A path differs: the
// compressed values and 4-bit offsets go to shared memory and each k16 step issues
// wmma.load.a...smma.kNNZ, wmma.load.meta...smma.kNNZ and wmma.mma...smma.kNNZ (docs/isa.md, "SHMMA").
//
// A is laid out tile-major by the host (stcsim/kernels/descriptors/shmma.py): for each 64-row block and each k tile of
// 32 columns (two 16-wide vectors), the 64 x 2 x NNZ fp16 values [row][vector][j], then separately the 64 x 2
// offset integers [row][vector] (NNZ nibbles, lowest first, in a u8/u16/u32). Blocks and k tiles are
// zero-padded to whole tiles, so the copy of a k tile is 16 * NNZ (values) plus 4 * NNZ (offsets) 16-byte
// chunks with no bounds checks, and sparser A means fewer copy instructions.
// B: K x N row-major fp16 (ldb), C: M x N row-major fp32 (ldc), staged and stored as the dense kernel does.
// Fragments that lie wholly outside C are not computed. Any M, N, K >= 1.

#include <cuda_fp16.h>

#include <cstdint>

#include "wmma_asm.cuh"

namespace stc {

// The three SHMMA instructions for NNZ non-zeros per 16-wide row vector (the .kNNZ spelling).
template <int NNZ>
struct Shmma;

#define STC_DEFINE_SHMMA(NNZ)                                                                                      \
    template <>                                                                                                    \
    struct Shmma<NNZ> {                                                                                            \
        __device__ __forceinline__ static void load_a(uint32_t (&a)[4], uint32_t addr, int ldv)                    \
        {                                                                                                          \
            asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.smma.k" #NNZ                                      \
                         ".shared.f16 {%0, %1, %2, %3}, [%4], %5;"                                                 \
                         : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])                                          \
                         : "r"(addr), "r"(ldv));                                                                   \
        }                                                                                                          \
        __device__ __forceinline__ static void load_meta(uint32_t& o, uint32_t addr, int ldo)                      \
        {                                                                                                          \
            asm volatile("wmma.load.meta.sync.aligned.row.m16n16k16.smma.k" #NNZ ".shared {%0}, [%1], %2;"         \
                         : "=r"(o)                                                                                 \
                         : "r"(addr), "r"(ldo));                                                                   \
        }                                                                                                          \
        __device__ __forceinline__ static void mma(float (&d)[8], const uint32_t (&a)[4], const uint32_t (&b)[8],  \
                                                   uint32_t o)                                                     \
        {                                                                                                          \
            asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.smma.k" #NNZ                                     \
                         ".f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, "                         \
                         "{%12, %13, %14, %15, %16, %17, %18, %19}, {%0, %1, %2, %3, %4, %5, %6, %7}, {%20};"      \
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),     \
                           "+f"(d[7])                                                                              \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), \
                           "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]), "r"(o));                                    \
        }                                                                                                          \
    };

STC_DEFINE_SHMMA(2)
STC_DEFINE_SHMMA(4)
STC_DEFINE_SHMMA(8)
#undef STC_DEFINE_SHMMA

// Copies one 16-byte chunk from global to shared memory (both 16-byte aligned).
__device__ __forceinline__ void copy16(void* dst, const void* __restrict__ src)
{
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}

// Copies the 8 elements at (r, c) of a rows x cols matrix into dst, zero outside the matrix: one 16-byte
// load when the whole chunk is inside and rows are 16-byte aligned (vec), element by element otherwise.
__device__ __forceinline__ void copy_chunk8(half* dst, const half* __restrict__ src, int r, int c, int rows,
                                            int cols, int ld, bool vec)
{
    if (vec && r < rows && c + 8 <= cols) {
        copy16(dst, src + r * ld + c);
        return;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const bool in = r < rows && c + e < cols;
        dst[e] = in ? src[r * ld + c + e] : half_zero();
    }
}

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 32;
constexpr int kSkew = 8;  // halves of padding per row of the B tile, against bank conflicts

// Shared memory of one thread block.
template <int NNZ>
struct ShmmaSmem {
    half vals[kTileM * 2 * NNZ];     // [row][vector][j]
    uint8_t offs[kTileM * NNZ];      // [row][vector] integers of 4 * NNZ bits
    half b[kTileK][kTileN + kSkew];  // the 32 x 64 tile of B
    float c[4][16 * 16];             // per-warp staging tile of the epilogue
};

// The SHMMA work of one k tile for one warp: for each of its (at most two) 16-wide vectors, the A fragments
// and offsets of the warp's two 16-row slabs, the B fragments of its two 16-column slabs and the 2 x 2 mma.
// With kAll every fragment lies inside C; otherwise only fragments with live_m[mi] && live_n[ni] are
// computed (warp-uniform branches).
template <int NNZ, bool kAll>
__device__ __forceinline__ void shmma_ktile(float (&acc)[2][2][8], const bool (&live_m)[2], const bool (&live_n)[2],
                                            ShmmaSmem<NNZ>& s, int wm, int wn, int vectors_left)
{
    const uint32_t vals_base = smem_addr(s.vals);
    const uint32_t offs_base = smem_addr(s.offs);
#pragma unroll
    for (int v = 0; v < 2; ++v) {
        if (v < vectors_left) {  // block-uniform: the last k tile may hold one vector only
            uint32_t a[2][4];
            uint32_t o[2];
            uint32_t b[2][8];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                if (kAll || live_m[mi]) {
                    const int row = wm * 32 + mi * 16;
                    Shmma<NNZ>::load_a(a[mi], vals_base + (row * 2 + v) * NNZ * 2, 2 * NNZ);
                    Shmma<NNZ>::load_meta(o[mi], offs_base + row * NNZ + v * NNZ / 2, 2);
                }
            }
#pragma unroll
            for (int ni = 0; ni < 2; ++ni) {
                if (kAll || live_n[ni]) {
                    load_b_shared(b[ni], smem_addr(&s.b[v * 16][wn * 32 + ni * 16]), kTileN + kSkew);
                }
            }
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
                for (int ni = 0; ni < 2; ++ni) {
                    if (kAll || (live_m[mi] && live_n[ni])) {
                        Shmma<NNZ>::mma(acc[mi][ni], a[mi], b[ni], o[mi]);
                    }
                }
            }
        }
    }
}

template <int NNZ>
__device__ __forceinline__ void gemm_shmma(const half* __restrict__ vals, const uint8_t* __restrict__ offs,
                                           const half* __restrict__ B, float* __restrict__ C, int M, int N, int K,
                                           int ldb, int ldc, ShmmaSmem<NNZ>& s)
{
    constexpr int kValBytes = kTileM * 2 * NNZ * 2;  // compressed values of one k tile
    constexpr int kOffBytes = kTileM * NNZ;          // offsets of one k tile
    constexpr int kValChunks = kValBytes / 16;
    constexpr int kOffChunks = kOffBytes / 16;

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / 2;
    const int wn = warp % 2;
    const int m0 = blockIdx.y * kTileM;
    const int n0 = blockIdx.x * kTileN;
    const int vectors = (K + 15) / 16;
    const int ktiles = (vectors + 1) / 2;
    const bool vec_b = ldb % 8 == 0;
    const size_t block_row = blockIdx.y;  // 64-bit: the byte offsets may pass 2^31
    const uint8_t* tile_vals = reinterpret_cast<const uint8_t*>(vals) + block_row * ktiles * kValBytes;
    const uint8_t* tile_offs = offs + block_row * ktiles * kOffBytes;

    bool live_m[2];
    bool live_n[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        live_m[i] = m0 + wm * 32 + i * 16 < M;
        live_n[i] = n0 + wn * 32 + i * 16 < N;
    }
    const bool warp_live = live_m[0] && live_n[0];  // some fragment inside C
    const bool warp_full = live_m[1] && live_n[1];  // every fragment inside C
    float acc[2][2][8];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 2; ++ni) {
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                acc[mi][ni][e] = 0.0f;
            }
        }
    }

    for (int kt = 0; kt < ktiles; ++kt) {
        const int k0 = kt * kTileK;
        if (tid < kValChunks) {
            copy16(reinterpret_cast<uint8_t*>(s.vals) + tid * 16, tile_vals + tid * 16);
        }
        if (tid >= 128 - kOffChunks) {
            const int i = tid - (128 - kOffChunks);
            copy16(s.offs + i * 16, tile_offs + i * 16);
        }
        tile_vals += kValBytes;
        tile_offs += kOffBytes;
#pragma unroll
        for (int j = 0; j < 2; ++j) {  // 32x64 halves of B = 256 chunks of 8
            const int i = tid + j * 128;
            const int r = i / 8;
            const int c = (i % 8) * 8;
            copy_chunk8(&s.b[r][c], B, k0 + r, n0 + c, K, N, ldb, vec_b);
        }
        __syncthreads();
        if (warp_full) {
            shmma_ktile<NNZ, true>(acc, live_m, live_n, s, wm, wn, vectors - 2 * kt);
        } else if (warp_live) {
            shmma_ktile<NNZ, false>(acc, live_m, live_n, s, wm, wn, vectors - 2 * kt);
        }
        __syncthreads();
    }

    const bool direct = m0 + kTileM <= M && n0 + kTileN <= N && ldc % 8 == 0;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 2; ++ni) {
            if (live_m[mi] && live_n[ni]) {
                store_tile16(acc[mi][ni], C, m0 + wm * 32 + mi * 16, n0 + wn * 32 + ni * 16, M, N, ldc, direct,
                             s.c[warp], lane);
            }
        }
    }
}

}  // namespace stc

// One entry per NNZ. Parameters: compressed values, offsets (both tile-major, see above), B, C, M, N, K, ldb,
// ldc. Block 128 threads, grid (ceil(N / 64), ceil(M / 64)).
extern "C" __global__ void __launch_bounds__(128) gemm_shmma_k2_f16_f32_tile64x64x32_warp32x32(
    const half* __restrict__ vals, const uint8_t* __restrict__ offs, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K, int ldb, int ldc)
{
    __shared__ __align__(32) stc::ShmmaSmem<2> smem;
    stc::gemm_shmma<2>(vals, offs, B, C, M, N, K, ldb, ldc, smem);
}

extern "C" __global__ void __launch_bounds__(128) gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32(
    const half* __restrict__ vals, const uint8_t* __restrict__ offs, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K, int ldb, int ldc)
{
    __shared__ __align__(32) stc::ShmmaSmem<4> smem;
    stc::gemm_shmma<4>(vals, offs, B, C, M, N, K, ldb, ldc, smem);
}

extern "C" __global__ void __launch_bounds__(128) gemm_shmma_k8_f16_f32_tile64x64x32_warp32x32(
    const half* __restrict__ vals, const uint8_t* __restrict__ offs, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K, int ldb, int ldc)
{
    __shared__ __align__(32) stc::ShmmaSmem<8> smem;
    stc::gemm_shmma<8>(vals, offs, B, C, M, N, K, ldb, ldc, smem);
}
