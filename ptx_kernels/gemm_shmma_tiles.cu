// Vector-wise sparse WMMA GEMM with SHMMA (paper 001, Sec. 3.3 and 4.2; gemm_shmma.cu) tile configurations
// with split-K: the per-shape choice the dense tiled WMMA GEMM has (gemm_wmma_tiles.cu), for the Tensor Core
// Vector-wise kernel. C = A * B with A pruned vector-wise (every 16-wide row vector keeps at most NNZ = 2, 4
// or 8 weights), fp16 operands, fp32 accumulate.
// A BM x BN x 32 block tile, 4 warps (BM / WM x BN / WN) of WM x WN = (WM / 16) x (WN / 16) accumulator
// fragments; per k16 step a warp issues wmma.load.a...smma.kNNZ and wmma.load.meta...smma.kNNZ per 16-row
// slab and wmma.mma...smma.kNNZ per fragment, from shared memory (docs/isa.md, "SHMMA").
// A is laid out tile-major by the host (stcsim/kernels/descriptors/shmma.py) with BM-row blocks: for each BM-row block
// and each k tile of 32 columns (two 16-wide vectors), the BM x 2 x NNZ fp16 values [row][vector][j], and
// separately the BM x 2 offset integers [row][vector] (NNZ nibbles, lowest first, in a u8/u16/u32), blocks and
// k tiles zero-padded to whole tiles. B: K x N row-major fp16 (ldb), C: M x N row-major fp32 (ldc).
// Launch: block (128, 1, 1), grid (ceil(N / BN), ceil(M / BM), S). Slice z of the S = gridDim.z slices
// takes k tiles [z * T, min(ktiles, (z + 1) * T)), T = ceil(ktiles / S). With S = 1 the fragments are stored
// to C (straight when the block tile lies inside C and ldc % 8 == 0, else through the warp's staging tile
// with a bounds check); with S > 1 they go through the staging tile and are added to C with atomic adds, so
// C must hold zeros before the launch, and a slice that starts past the last k tile adds nothing.
// Fragments that lie wholly outside C are not computed. Any M, N, K >= 1.

#include <cuda_fp16.h>

#include <cstdint>

#include "wmma_asm.cuh"

namespace stc {

// The three SHMMA instructions for NNZ non-zeros per 16-wide row vector (the .kNNZ spelling).
template <int NNZ>
struct ShmmaOps;

#define STC_DEFINE_SHMMA_OPS(NNZ)                                                                                  \
    template <>                                                                                                    \
    struct ShmmaOps<NNZ> {                                                                                         \
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

STC_DEFINE_SHMMA_OPS(2)
STC_DEFINE_SHMMA_OPS(4)
STC_DEFINE_SHMMA_OPS(8)
#undef STC_DEFINE_SHMMA_OPS

// Copies one 16-byte chunk from global to shared memory (both 16-byte aligned).
__device__ __forceinline__ void copy16_tiles(void* dst, const void* __restrict__ src)
{
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}

// Copies the 8 elements at (r, c) of a rows x cols matrix into dst, zero outside the matrix: one 16-byte
// load when the whole chunk is inside and rows are 16-byte aligned (vec), element by element otherwise.
__device__ __forceinline__ void copy_chunk8_tiles(half* dst, const half* __restrict__ src, int r, int c, int rows,
                                                  int cols, int ld, bool vec)
{
    if (vec && r < rows && c + 8 <= cols) {
        copy16_tiles(dst, src + r * ld + c);
        return;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const bool in = r < rows && c + e < cols;
        dst[e] = in ? src[r * ld + c + e] : half_zero();
    }
}

constexpr int kShTileK = 32;
constexpr int kShSkew = 8;  // halves of padding per row of the B tile, against bank conflicts

// Shared memory of one thread block.
template <int NNZ, int BM, int BN>
struct ShmmaTileSmem {
    half vals[BM * 2 * NNZ];          // [row][vector][j]
    uint8_t offs[BM * NNZ];           // [row][vector] integers of 4 * NNZ bits
    half b[kShTileK][BN + kShSkew];   // the 32 x BN tile of B
    float c[4][16 * 16];              // per-warp staging tile of the epilogue
};

// Adds the accumulator tile d at (row0, col0) of C (M x N, rows ldc apart) with atomic adds, through the
// warp's own 16x16 f32 staging tile with a bounds check (8 elements per lane).
__device__ __forceinline__ void add_tile16(const float (&d)[8], float* __restrict__ C, int row0, int col0, int M,
                                           int N, int ldc, float* stage, int lane)
{
    store_d_shared(smem_addr(stage), d);
    __syncwarp();
    const int r = lane / 2;
    const int c = (lane % 2) * 8;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        if (row0 + r < M && col0 + c + e < N) {
            atomicAdd(&C[(row0 + r) * ldc + col0 + c + e], stage[r * 16 + c + e]);
        }
    }
    __syncwarp();
}

// The SHMMA work of one k tile for one warp: for each of its (at most two) 16-wide vectors, the A fragments
// and offsets of the warp's FM 16-row slabs, the B fragments of its FN 16-column slabs and the FM x FN mma.
// With kAll every fragment lies inside C; otherwise only fragments with live_m[mi] && live_n[ni] are
// computed (warp-uniform branches).
template <int NNZ, int BM, int BN, int FM, int FN, bool kAll>
__device__ __forceinline__ void shmma_tile_ktile(float (&acc)[FM][FN][8], const bool (&live_m)[FM],
                                                 const bool (&live_n)[FN], ShmmaTileSmem<NNZ, BM, BN>& s, int row0,
                                                 int col0, int vectors_left)
{
    const uint32_t vals_base = smem_addr(s.vals);
    const uint32_t offs_base = smem_addr(s.offs);
#pragma unroll
    for (int v = 0; v < 2; ++v) {
        if (v < vectors_left) {  // block-uniform: the last k tile may hold one vector only
            uint32_t a[FM][4];
            uint32_t o[FM];
            uint32_t b[FN][8];
#pragma unroll
            for (int mi = 0; mi < FM; ++mi) {
                if (kAll || live_m[mi]) {
                    const int row = row0 + mi * 16;
                    ShmmaOps<NNZ>::load_a(a[mi], vals_base + (row * 2 + v) * NNZ * 2, 2 * NNZ);
                    ShmmaOps<NNZ>::load_meta(o[mi], offs_base + row * NNZ + v * NNZ / 2, 2);
                }
            }
#pragma unroll
            for (int ni = 0; ni < FN; ++ni) {
                if (kAll || live_n[ni]) {
                    load_b_shared(b[ni], smem_addr(&s.b[v * 16][col0 + ni * 16]), BN + kShSkew);
                }
            }
#pragma unroll
            for (int mi = 0; mi < FM; ++mi) {
#pragma unroll
                for (int ni = 0; ni < FN; ++ni) {
                    if (kAll || (live_m[mi] && live_n[ni])) {
                        ShmmaOps<NNZ>::mma(acc[mi][ni], a[mi], b[ni], o[mi]);
                    }
                }
            }
        }
    }
}

template <int NNZ, int BM, int BN, int WM, int WN>
__device__ __forceinline__ void gemm_shmma_splitk(const half* __restrict__ vals, const uint8_t* __restrict__ offs,
                                                  const half* __restrict__ B, float* __restrict__ C, int M, int N,
                                                  int K, int ldb, int ldc, ShmmaTileSmem<NNZ, BM, BN>& s)
{
    constexpr int kWarpsN = BN / WN;
    constexpr int FM = WM / 16;
    constexpr int FN = WN / 16;
    static_assert((BM / WM) * kWarpsN == 4, "4 warps per block");
    constexpr int kValBytes = BM * 2 * NNZ * 2;  // compressed values of one k tile
    constexpr int kOffBytes = BM * NNZ;          // offsets of one k tile
    constexpr int kValChunks = kValBytes / 16;
    constexpr int kOffChunks = kOffBytes / 16;
    constexpr int kBChunks = kShTileK * BN / 8;
    static_assert(kValChunks <= 128 && kOffChunks <= 128 && kOffBytes % 16 == 0, "one chunk per thread");

    const int vectors = (K + 15) / 16;
    const int ktiles = (vectors + 1) / 2;
    const int slices = gridDim.z;
    const int per_slice = (ktiles + slices - 1) / slices;
    const int kt_begin = blockIdx.z * per_slice;
    const int kt_end = min(ktiles, kt_begin + per_slice);
    if (slices > 1 && kt_begin >= kt_end) {
        return;  // block-uniform: this slice has no k tile (C already holds zeros)
    }

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / kWarpsN;
    const int wn = warp % kWarpsN;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const bool vec_b = ldb % 8 == 0;
    const size_t block_row = blockIdx.y;  // 64-bit: the byte offsets may pass 2^31
    const uint8_t* tile_vals =
        reinterpret_cast<const uint8_t*>(vals) + (block_row * ktiles + kt_begin) * kValBytes;
    const uint8_t* tile_offs = offs + (block_row * ktiles + kt_begin) * kOffBytes;

    bool live_m[FM];
    bool live_n[FN];
#pragma unroll
    for (int i = 0; i < FM; ++i) {
        live_m[i] = m0 + wm * WM + i * 16 < M;
    }
#pragma unroll
    for (int i = 0; i < FN; ++i) {
        live_n[i] = n0 + wn * WN + i * 16 < N;
    }
    const bool warp_live = live_m[0] && live_n[0];            // some fragment inside C
    const bool warp_full = live_m[FM - 1] && live_n[FN - 1];  // every fragment inside C
    float acc[FM][FN][8];
#pragma unroll
    for (int mi = 0; mi < FM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < FN; ++ni) {
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                acc[mi][ni][e] = 0.0f;
            }
        }
    }

    for (int kt = kt_begin; kt < kt_end; ++kt) {
        const int k0 = kt * kShTileK;
        if (tid < kValChunks) {
            copy16_tiles(reinterpret_cast<uint8_t*>(s.vals) + tid * 16, tile_vals + tid * 16);
        }
        if (tid >= 128 - kOffChunks) {
            const int i = tid - (128 - kOffChunks);
            copy16_tiles(s.offs + i * 16, tile_offs + i * 16);
        }
        tile_vals += kValBytes;
        tile_offs += kOffBytes;
#pragma unroll
        for (int j = 0; j < (kBChunks + 127) / 128; ++j) {  // the 32 x BN halves of B in chunks of 8
            const int i = tid + j * 128;
            if (i < kBChunks) {
                const int r = i / (BN / 8);
                const int c = (i % (BN / 8)) * 8;
                copy_chunk8_tiles(&s.b[r][c], B, k0 + r, n0 + c, K, N, ldb, vec_b);
            }
        }
        __syncthreads();
        if (warp_full) {
            shmma_tile_ktile<NNZ, BM, BN, FM, FN, true>(acc, live_m, live_n, s, wm * WM, wn * WN,
                                                        vectors - 2 * kt);
        } else if (warp_live) {
            shmma_tile_ktile<NNZ, BM, BN, FM, FN, false>(acc, live_m, live_n, s, wm * WM, wn * WN,
                                                         vectors - 2 * kt);
        }
        __syncthreads();
    }

    const bool direct = m0 + BM <= M && n0 + BN <= N && ldc % 8 == 0;
#pragma unroll
    for (int mi = 0; mi < FM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < FN; ++ni) {
            if (live_m[mi] && live_n[ni]) {
                const int row = m0 + wm * WM + mi * 16;
                const int col = n0 + wn * WN + ni * 16;
                if (slices == 1) {
                    store_tile16(acc[mi][ni], C, row, col, M, N, ldc, direct, s.c[warp], lane);
                } else {
                    add_tile16(acc[mi][ni], C, row, col, M, N, ldc, s.c[warp], lane);
                }
            }
        }
    }
}

}  // namespace stc

// One entry per (NNZ, tile). Parameters: compressed values, offsets (both tile-major with BM-row blocks), B,
// C, M, N, K, ldb, ldc. Block 128 threads, grid (ceil(N / BN), ceil(M / BM), S).
#define STC_SHMMA_SPLITK(NNZ, BM, BN, WM, WN)                                                                   \
    extern "C" __global__ void __launch_bounds__(128)                                                          \
        gemm_shmma_k##NNZ##_f16_f32_tile##BM##x##BN##x32_warp##WM##x##WN##_splitk(                               \
            const half* __restrict__ vals, const uint8_t* __restrict__ offs, const half* __restrict__ B,        \
            float* __restrict__ C, int M, int N, int K, int ldb, int ldc)                                        \
    {                                                                                                          \
        __shared__ __align__(32) stc::ShmmaTileSmem<NNZ, BM, BN> smem;                                         \
        stc::gemm_shmma_splitk<NNZ, BM, BN, WM, WN>(vals, offs, B, C, M, N, K, ldb, ldc, smem);                \
    }

// 64x64 (2x2 warps of 32x32: gemm_shmma.cu's tile, with K slices), 64x32 (2x2 warps of 32x16), 32x32 (2x2
// warps of 16x16), 64x16 (4x1 warps of 16x16); for NNZ = 2, 4, 8.
#define STC_SHMMA_TILES(NNZ)                                                                                    \
    STC_SHMMA_SPLITK(NNZ, 64, 64, 32, 32)                                                                       \
    STC_SHMMA_SPLITK(NNZ, 64, 32, 32, 16)                                                                       \
    STC_SHMMA_SPLITK(NNZ, 32, 32, 16, 16)                                                                       \
    STC_SHMMA_SPLITK(NNZ, 64, 16, 16, 16)

STC_SHMMA_TILES(2)
STC_SHMMA_TILES(4)
STC_SHMMA_TILES(8)
