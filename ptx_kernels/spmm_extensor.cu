// ExTensor chunk SpMM (paper 004): D = W * X with W unstructured-sparse, cut per 16-row slice into a planned
// sequence of 16 x L chunks (L = 16, 32, 48, 64), each multiplied by one wmma.smma.L (docs/isa.md). fp16
// operands, fp32 accumulate. The plan is data: the kernel walks a stream of chunk records, so one PTX runs
// every scheme (16 only, 32 only, 64 only, static best L per slice, dynamic greedy merge) and every matrix.
//
// Chunk record (laid out by stcsim/kernels/descriptors/extensor_records.py): a 16-byte header {start column, shape code,
// record bytes, 0}, the values fp16 [16][W], the coordinates u8 [16][W] (0xFF = padding, after the real
// entries of the row), W = the chunk's longest row rounded up to 4. Shape code = (L/16 - 1) * 16 + W/4 - 1
// selects the instruction spelling. Chunks without non-zeros have no record (no instruction).
//
// Block: 2 slices (32 rows of D) x 32 columns, as 4 warp groups of 4 warps that split the K panels (64
// columns of W each) of the slices into contiguous ranges (split[block row], balanced by the host on the
// PhaseLat model); warp (slice j, columns 16n) of a group keeps one 16x16 accumulator, and group 0 adds the
// other groups' at the end. The four warps of a sub-core (one per group) overlap one's record dispatch and
// staging with the others' Tensor Core time; two slices per block halve the reads of X. Records are grouped
// per block row and panel: offsets[row][2p + j] is where slice j's records of the chunks starting in panel p
// begin, offsets[row][2 panels] the end. Per panel a group stages those records (at most 2 x 5440 bytes) and
// its 64 x 32 tile of X in shared memory; a chunk starting in panel p ends at the latest in panel p + 1, so
// two X panels stay resident (a ring), and two stages ahead are in flight in registers.
// X: ceil(K / 64) * 64 x ldb row-major fp16, ldb a multiple of 8, zero beyond K and N. Grid (ceil(N / 32),
// ceil(M / 32)), 512 threads, about 83 KiB of dynamic shared memory. Any M, N, K >= 1.

#include <cuda_fp16.h>

#include <cstdint>

#include "smma_l_shapes.cuh"
#include "wmma_asm.cuh"

namespace stc {

constexpr int kGroups = 4;             // warp groups splitting the K panels
constexpr int kSlices = 2;             // 16-row slices per block
constexpr int kWarpsN = 2;             // warps per slice and group, one per 16 columns of D
constexpr int kWarps = kSlices * kWarpsN;  // warps per group
constexpr int kThreads = 32 * kWarps;  // threads per group
constexpr int kBlockN = 16 * kWarpsN;  // columns of D per block
constexpr int kPanel = 64;             // rows of X (columns of W) per stage
constexpr int kPanelLd = kBlockN + 8;  // halves per row of a staged X panel (skewed against bank conflicts)
constexpr int kHeaderBytes = 16;
// Chunks starting in one panel: at most 4 (one per 16 columns), widths summing to at most 48 + 64 = 112,
// so per slice at most 4 headers and 112 entries per row of 2 + 1 bytes for 16 rows.
constexpr int kMaxStageBytes = kSlices * (4 * kHeaderBytes + 112 * 16 * 3);
// 16-byte pieces of records a thread prefetches in registers: 4 KiB per stage, the records of two slices
// of a 64-column panel down to about 85 % sparsity; the rest of a larger stage is copied when it is stored.
constexpr int kAPieces = 2;
constexpr int kBPieces = kPanel * kBlockN / 8 / kThreads;

// Shared memory of one warp group.
struct GroupSmem {
    half b[2][kPanel][kPanelLd];  // X panels p and p + 1 (slot = panel & 1)
    union {
        uint4 a[kMaxStageBytes / 16];  // the records of the chunks starting in panel p
        float c[kWarps][16 * 16];      // after the last panel: the epilogue's 16x16 tile per warp
    };
};
static_assert(sizeof(GroupSmem) % 16 == 0, "group buffers must keep 16-byte alignment");

__host__ __device__ constexpr int shape_code(int l, int w)
{
    return (l / 16 - 1) * 16 + w / 4 - 1;
}

// The group's barrier (named barrier 1 + group, the group's threads).
__device__ __forceinline__ void group_sync(int group)
{
    asm volatile("bar.sync %0, %1;" ::"r"(1 + group), "r"(kThreads) : "memory");
}

// One chunk: its values and coordinates from the record at shared address rec, its L rows of X (from
// column `start` of W) from the resident panels, one wmma.smma.L into acc.
template <int L, int W>
__device__ __forceinline__ void chunk_mma(float (&acc)[8], uint32_t rec, uint32_t ring, int start)
{
    uint32_t a[W / 4];
    uint32_t x[(W + 7) / 8];
    uint32_t b[L / 16][8];
    SmmaL<L, W>::load_a(a, rec);
    SmmaL<L, W>::load_x(x, rec + 32 * W);
#pragma unroll
    for (int f = 0; f < L / 16; ++f) {
        const uint32_t row = (start + 16 * f) & (2 * kPanel - 1);  // the two slots are 128 consecutive rows
        load_b_shared(b[f], ring + row * kPanelLd * 2, kPanelLd);
    }
    SmmaL<L, W>::mma(acc, a, x, b);
}

// Runs the records in shared bytes [begin, end) of the staged records for this warp's accumulator; ring is
// the shared address of the warp's 16 columns in X panel slot 0.
__device__ __forceinline__ void run_records(float (&acc)[8], const GroupSmem& s, int begin, int end, uint32_t ring)
{
    const uint32_t base = smem_addr(s.a);
    for (int off = begin; off < end;) {
        const int4 h = *reinterpret_cast<const int4*>(reinterpret_cast<const uint8_t*>(s.a) + off);
        const uint32_t rec = base + off + kHeaderBytes;
        switch (h.y) {
#define STC_CHUNK_CASE(L, W)                       \
    case shape_code(L, W):                         \
        chunk_mma<L, W>(acc, rec, ring, h.x);      \
        break;
            STC_SMMA_L_SHAPES(STC_CHUNK_CASE)
#undef STC_CHUNK_CASE
            default:
                __trap();  // a record the host did not write
        }
        off += h.z;
    }
}

// Registers holding one prefetched stage q: the records of the chunks starting in panel q, X panel q + 1.
struct Stage {
    uint4 records[kAPieces];
    uint4 panel[kBPieces];
};

// A warp group's share of the block: the chunks starting in panels [pb, pe). Chunks of panel pe - 1 may
// reach into panel pe, whose X is staged too (last_x).
struct GroupPanels {
    const uint8_t* __restrict__ records;
    const int* offsets;  // this block row's 2 panels + 1 offsets, copied to shared memory
    const half* __restrict__ X;
    int pb, pe, last_x, n0, ldb;

    __device__ __forceinline__ int begin(int q) const { return offsets[2 * q]; }
    __device__ __forceinline__ int bytes(int q) const { return offsets[2 * q + 2] - offsets[2 * q]; }

    // This thread's 16-byte pieces of X panel q (8 halves each; ldb is a multiple of 8, so a piece is either
    // inside a row or wholly past its end, read as zeros; X has whole panels of rows).
    __device__ __forceinline__ void fetch_x(uint4 (&r)[kBPieces], int q) const
    {
        const int t = threadIdx.x % kThreads;
#pragma unroll
        for (int j = 0; j < kBPieces; ++j) {
            const int i = t + j * kThreads;
            const int k = q * kPanel + i / (kBlockN / 8);
            const int c = n0 + (i % (kBlockN / 8)) * 8;
            r[j] = c < ldb ? *reinterpret_cast<const uint4*>(X + k * ldb + c) : make_uint4(0, 0, 0, 0);
        }
    }

    __device__ __forceinline__ void store_x(GroupSmem& s, const uint4 (&r)[kBPieces], int q) const
    {
        const int t = threadIdx.x % kThreads;
#pragma unroll
        for (int j = 0; j < kBPieces; ++j) {
            const int i = t + j * kThreads;
            *reinterpret_cast<uint4*>(&s.b[q & 1][i / (kBlockN / 8)][(i % (kBlockN / 8)) * 8]) = r[j];
        }
    }

    // Stage q: the records of panel q (this thread's pieces) and X panel q + 1, where the group needs them.
    __device__ __forceinline__ void fetch(Stage& f, int q) const
    {
        const int t = threadIdx.x % kThreads;
        if (q < pe) {
            const int size = bytes(q);  // read once: the stores below may alias the offsets for the compiler
            const uint8_t* src = records + begin(q);
#pragma unroll
            for (int j = 0; j < kAPieces; ++j) {
                const int i = t + j * kThreads;
                if (i * 16 < size) {
                    f.records[j] = *reinterpret_cast<const uint4*>(src + i * 16);
                }
            }
        }
        if (q + 1 <= last_x) {
            fetch_x(f.panel, q + 1);
        }
    }

    // Stage q into shared memory: its records replace panel q - 1's (those past the prefetched pieces are
    // copied now), its X panel takes panel q - 1's slot.
    __device__ __forceinline__ void store(GroupSmem& s, const Stage& f, int q) const
    {
        const int t = threadIdx.x % kThreads;
        if (q < pe) {
            const int size = bytes(q);  // read once: the stores below may alias the offsets for the compiler
            const uint8_t* src = records + begin(q);
#pragma unroll
            for (int j = 0; j < kAPieces; ++j) {
                const int i = t + j * kThreads;
                if (i * 16 < size) {
                    s.a[i] = f.records[j];
                }
            }
            for (int i = t + kAPieces * kThreads; i * 16 < size; i += kThreads) {
                s.a[i] = *reinterpret_cast<const uint4*>(src + i * 16);
            }
        }
        if (q + 1 <= last_x) {
            store_x(s, f.panel, q + 1);
        }
    }
};

// Runs panel p for this warp (its slice's records), then, if the group has a panel p + 1, stores stage
// p + 1 from `f` and refills `f` with stage p + 3: two stages are in flight while a panel computes.
__device__ __forceinline__ void panel_step(float (&acc)[8], GroupSmem& s, const GroupPanels& g, Stage& f, int p,
                                           int group, int slice, uint32_t ring, bool live)
{
    if (live) {
        const int stage0 = g.begin(p);
        run_records(acc, s, g.offsets[2 * p + slice] - stage0, g.offsets[2 * p + slice + 1] - stage0, ring);
    }
    if (p + 1 < g.pe) {  // group-uniform
        group_sync(group);
        g.store(s, f, p + 1);
        group_sync(group);
        g.fetch(f, p + 3);
    }
}

__device__ __forceinline__ void run_panels(float (&acc)[8], GroupSmem& s, const GroupPanels& g, int group,
                                           int slice, uint32_t ring, bool live)
{
    Stage f0;
    Stage f1;
    g.fetch_x(f0.panel, g.pb);
    g.store_x(s, f0.panel, g.pb);
    g.fetch(f0, g.pb);
    g.store(s, f0, g.pb);
    g.fetch(f0, g.pb + 1);
    g.fetch(f1, g.pb + 2);
    group_sync(group);
    for (int p = g.pb; p < g.pe; p += 2) {
        panel_step(acc, s, g, f0, p, group, slice, ring, live);
        if (p + 1 < g.pe) {
            panel_step(acc, s, g, f1, p + 1, group, slice, ring, live);
        }
    }
}

// The whole block: the groups' panels, then group 0 adds the other groups' accumulators and stores D.
__device__ __forceinline__ void spmm(const uint8_t* __restrict__ records, const int* __restrict__ offsets,
                                     const int* __restrict__ split, const half* __restrict__ X, float* __restrict__ D,
                                     int M, int N, int K, int ldb, int ldc, GroupSmem* smem, int* row_offsets)
{
    const int group = threadIdx.x / kThreads;
    const int warp = threadIdx.x / 32 % kWarps;
    const int slice = warp / kWarpsN;
    const int lane = threadIdx.x % 32;
    const int row0 = (blockIdx.y * kSlices + slice) * 16;
    const int n0 = blockIdx.x * kBlockN;
    const int col0 = n0 + (warp % kWarpsN) * 16;
    const bool live = row0 < M && col0 < N;  // warp-uniform
    const int panels = (K + kPanel - 1) / kPanel;
    const int pb = split[blockIdx.y * (kGroups + 1) + group];
    const int pe = split[blockIdx.y * (kGroups + 1) + group + 1];
    for (int i = threadIdx.x; i <= 2 * panels; i += blockDim.x) {
        row_offsets[i] = offsets[blockIdx.y * (2 * panels + 1) + i];
    }
    __syncthreads();

    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        acc[e] = 0.0f;
    }
    if (pb < pe) {  // group-uniform
        const GroupPanels g{records, row_offsets, X, pb, pe, min(pe, panels - 1), n0, ldb};
        run_panels(acc, smem[group], g, group, slice, smem_addr(&smem[group].b[0][0][(warp % kWarpsN) * 16]), live);
    }
    __syncthreads();  // every group is done with its records: the unions now hold epilogue tiles
    if (group > 0 && live) {
        store_d_shared(smem_addr(smem[group].c[warp]), acc);
    }
    __syncthreads();
    if (group == 0 && live) {
#pragma unroll
        for (int other = 1; other < kGroups; ++other) {
            float part[8];
            load_c_shared(part, smem_addr(smem[other].c[warp]));
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                acc[e] += part[e];
            }
        }
        const bool direct = row0 + 16 <= M && col0 + 16 <= N && ldc % 8 == 0;
        store_tile16(acc, D, row0, col0, M, N, ldc, direct, smem[0].c[warp], lane);
    }
}

}  // namespace stc

// Parameters: chunk records (bytes), offsets (int32, block rows x (2 panels + 1)), split (int32, block rows x
// (groups + 1): the first panel of each warp group, then the panel count; the host balances the groups'
// PhaseLat), X, D, M, N, K, ldb, ldc. Dynamic shared memory: the groups' buffers, then the block row's
// offsets (so that no stage waits on two dependent loads).
extern "C" __global__ void __launch_bounds__(stc::kGroups * stc::kThreads) spmm_extensor_f16_f32_tile32x32_warp16x16(
    const uint8_t* __restrict__ records, const int* __restrict__ offsets, const int* __restrict__ split,
    const half* __restrict__ X, float* __restrict__ D, int M, int N, int K, int ldb, int ldc)
{
    extern __shared__ __align__(32) uint4 dynamic_smem[];
    stc::GroupSmem* smem = reinterpret_cast<stc::GroupSmem*>(dynamic_smem);
    stc::spmm(records, offsets, split, X, D, M, N, K, ldb, ldc, smem, reinterpret_cast<int*>(smem + stc::kGroups));
}
