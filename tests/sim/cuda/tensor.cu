// Tensor Core instructions: wmma (m16n16k16, every layout, f32 and f16 accumulators, loads from global and
// shared), mma.sync (m16n8k16 / m16n8k8, f16 and bf16) with fragments placed by hand per the PTX ISA,
// ldmatrix (x1/x2/x4, .trans) and cp.async with zero fill.
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// ---- wmma ----------------------------------------------------------------------------------------------
// D = A * B + C for a 16 x 16 tile with K = 32 (two mma_sync steps). A is 16 x 32, B is 32 x 16, each stored
// row- or column-major per LA / LB with leading dimensions lda / ldb; C and D are 16 x 16 with ldc, C loaded
// row-major, D stored row- or column-major by `store_col`. One warp per block, one tile per block.
template <class LA, class LB, typename Acc>
__device__ void wmma_tile(const half* A, const half* B, const Acc* C, Acc* D, int lda, int ldb, int ldc,
                          int store_col)
{
    const int tile = blockIdx.x;
    A += tile * 16 * 32;
    B += tile * 32 * 16;
    C += tile * 16 * 16;
    D += tile * 16 * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, LA> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, LB> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> c;
    wmma::load_matrix_sync(c, C, ldc, wmma::mem_row_major);
    for (int k = 0; k < 32; k += 16) {
        const bool a_row = std::is_same<LA, wmma::row_major>::value;
        const bool b_row = std::is_same<LB, wmma::row_major>::value;
        wmma::load_matrix_sync(a, A + (a_row ? k : k * lda), lda);
        wmma::load_matrix_sync(b, B + (b_row ? k * ldb : k), ldb);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(D, c, ldc, store_col ? wmma::mem_col_major : wmma::mem_row_major);
}

#define WMMA_KERNEL(NAME, LA, LB, ACC)                                                                     \
    extern "C" __global__ void NAME(const half* A, const half* B, const ACC* C, ACC* D, int lda, int ldb,  \
                                    int ldc, int store_col)                                                \
    {                                                                                                      \
        wmma_tile<wmma::LA, wmma::LB, ACC>(A, B, C, D, lda, ldb, ldc, store_col);                          \
    }

WMMA_KERNEL(wmma_f32_row_row, row_major, row_major, float)
WMMA_KERNEL(wmma_f32_row_col, row_major, col_major, float)
WMMA_KERNEL(wmma_f32_col_row, col_major, row_major, float)
WMMA_KERNEL(wmma_f32_col_col, col_major, col_major, float)
WMMA_KERNEL(wmma_f16_row_col, row_major, col_major, half)
WMMA_KERNEL(wmma_f16_col_row, col_major, row_major, half)

// The operands go through shared memory (padded rows) before wmma.load; C is read column-major.
extern "C" __global__ void wmma_shared(const half* A, const half* B, const float* C, float* D)
{
    __shared__ __align__(32) half sa[16 * 24];
    __shared__ __align__(32) half sb[16 * 24];
    __shared__ __align__(32) float sc[16 * 20];
    const int lane = threadIdx.x;
    for (int e = lane; e < 256; e += 32) {
        sa[(e / 16) * 24 + e % 16] = A[e];  // A row-major 16 x 16, row stride 24
        sb[(e / 16) * 24 + e % 16] = B[e];  // B column-major: column e / 16 at stride 24
        sc[(e / 16) * 20 + e % 16] = C[e];  // C column-major: column e / 16 at stride 20
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(a, sa, 24);
    wmma::load_matrix_sync(b, sb, 24);
    wmma::load_matrix_sync(c, sc, 20, wmma::mem_col_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

// ---- mma.sync ------------------------------------------------------------------------------------------
// A (16 x K), B (K x 8) and C, D (16 x 8) are row-major arrays of raw 16-bit elements (A, B) or of the
// accumulator type. Each lane collects its fragment elements at the positions the PTX ISA gives for its
// group g = lane / 4 and thread-in-group t = lane % 4, and writes D back the same way.
__device__ inline int a_row(int g, int e) { return g + 8 * ((e >> 1) & 1); }
__device__ inline int a_col(int t, int e) { return 2 * t + (e & 1) + 8 * (e >> 2); }
__device__ inline int b_row(int t, int e) { return 2 * t + (e & 1) + 8 * (e >> 1); }
__device__ inline int c_row(int g, int e) { return g + 8 * (e >> 1); }
__device__ inline int c_col(int t, int e) { return 2 * t + (e & 1); }

template <int K>
__device__ void load_ab(const unsigned short* A, const unsigned short* B, unsigned* a, unsigned* b)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int e = 0; e < K / 2; e += 2)
        a[e / 2] = A[a_row(g, e) * K + a_col(t, e)] | ((unsigned)A[a_row(g, e + 1) * K + a_col(t, e + 1)] << 16);
    for (int e = 0; e < K / 4; e += 2)
        b[e / 2] = B[b_row(t, e) * 8 + g] | ((unsigned)B[b_row(t, e + 1) * 8 + g] << 16);
}

__device__ void load_c32(const float* C, float* c)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int e = 0; e < 4; ++e) c[e] = C[c_row(g, e) * 8 + c_col(t, e)];
}
__device__ void store_d32(float* D, const float* d)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int e = 0; e < 4; ++e) D[c_row(g, e) * 8 + c_col(t, e)] = d[e];
}
__device__ void load_c16(const unsigned short* C, unsigned* c)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int e = 0; e < 4; e += 2)
        c[e / 2] = C[c_row(g, e) * 8 + c_col(t, e)] | ((unsigned)C[c_row(g, e + 1) * 8 + c_col(t, e + 1)] << 16);
}
__device__ void store_d16(unsigned short* D, const unsigned* d)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int e = 0; e < 4; ++e) D[c_row(g, e) * 8 + c_col(t, e)] = (unsigned short)(d[e / 2] >> (16 * (e & 1)));
}

#define MMA_F32_K16(NAME, AB)                                                                              \
    extern "C" __global__ void NAME(const unsigned short* A, const unsigned short* B, const float* C, float* D) \
    {                                                                                                      \
        unsigned a[4], b[2];                                                                               \
        float c[4], d[4];                                                                                  \
        load_ab<16>(A, B, a, b);                                                                           \
        load_c32(C, c);                                                                                    \
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." AB "." AB ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
                     "{%8,%9}, {%10,%11,%12,%13};"                                                         \
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                      \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),        \
                       "f"(c[1]), "f"(c[2]), "f"(c[3]));                                                   \
        store_d32(D, d);                                                                                   \
    }

#define MMA_F32_K8(NAME, AB)                                                                               \
    extern "C" __global__ void NAME(const unsigned short* A, const unsigned short* B, const float* C, float* D) \
    {                                                                                                      \
        unsigned a[2], b[1];                                                                               \
        float c[4], d[4];                                                                                  \
        load_ab<8>(A, B, a, b);                                                                            \
        load_c32(C, c);                                                                                    \
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32." AB "." AB ".f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, " \
                     "{%7,%8,%9,%10};"                                                                     \
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                      \
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));        \
        store_d32(D, d);                                                                                   \
    }

MMA_F32_K16(mma_m16n8k16_f16_f32, "f16")
MMA_F32_K16(mma_m16n8k16_bf16_f32, "bf16")
MMA_F32_K8(mma_m16n8k8_f16_f32, "f16")
MMA_F32_K8(mma_m16n8k8_bf16_f32, "bf16")

extern "C" __global__ void mma_m16n8k16_f16_f16(const unsigned short* A, const unsigned short* B,
                                                const unsigned short* C, unsigned short* D)
{
    unsigned a[4], b[2], c[2], d[2];
    load_ab<16>(A, B, a, b);
    load_c16(C, c);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
    store_d16(D, d);
}

extern "C" __global__ void mma_m16n8k8_f16_f16(const unsigned short* A, const unsigned short* B,
                                               const unsigned short* C, unsigned short* D)
{
    unsigned a[2], b[1], c[2], d[2];
    load_ab<8>(A, B, a, b);
    load_c16(C, c);
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%5,%6};"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(c[0]), "r"(c[1]));
    store_d16(D, d);
}

// ---- ldmatrix ------------------------------------------------------------------------------------------
// Four 8 x 8 matrices of 16-bit elements are copied to shared memory; lane l supplies the address of row
// (3 * (l % 8)) % 8 of matrix l / 8, so the rows each lane names are permuted. Every lane writes the
// registers it receives: out[lane][0..3] x4, [4..5] x2, [6] x1, [7..10] x4.trans, [11..12] x2.trans,
// [13] x1.trans.
extern "C" __global__ void ldmatrix_all(const unsigned short* M, unsigned* out)
{
    __shared__ __align__(16) unsigned short sm[4 * 64];
    const int lane = threadIdx.x;
    for (int e = lane; e < 256; e += 32) sm[e] = M[e];
    __syncwarp();
    const unsigned addr = (unsigned)__cvta_generic_to_shared(&sm[((lane / 8) * 8 + (3 * (lane % 8)) % 8) * 8]);
    unsigned r[4];
    unsigned* o = out + lane * 14;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
    o[0] = r[0], o[1] = r[1], o[2] = r[2], o[3] = r[3];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
    o[4] = r[0], o[5] = r[1];
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(addr));
    o[6] = r[0];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
    o[7] = r[0], o[8] = r[1], o[9] = r[2], o[10] = r[3];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
    o[11] = r[0], o[12] = r[1];
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(addr));
    o[13] = r[0];
}

// ---- cp.async ------------------------------------------------------------------------------------------
// Thread t copies 16 bytes with .cg (src-size from `sizes`: the rest is zero-filled), 8 bytes with .ca and
// 4 bytes with .ca and a src-size of 0 or 4, into a shared buffer pre-filled with -1; after commit / wait the
// block writes the buffer out.
extern "C" __global__ void cp_async(const int* g, const int* sizes, int* out)
{
    __shared__ __align__(16) int sm[64 * 8];
    const int t = threadIdx.x, nt = blockDim.x;
    for (int e = t; e < nt * 8; e += nt) sm[e] = -1;
    __syncthreads();
    const unsigned dst = (unsigned)__cvta_generic_to_shared(&sm[t * 8]);
    const size_t src = __cvta_generic_to_global(&g[t * 8]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(sizes[t]) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst + 16), "l"(src + 16) : "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst + 24), "l"(src + 24),
                 "r"(sizes[t] & 4) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    for (int e = t; e < nt * 8; e += nt) out[e] = sm[e];
}
