// 2:4 sparse mma.sp m16n8k32 (f16 and bf16 inputs, f32 and f16 accumulators) with fragments placed by hand
// per the PTX ISA. One 16 x 32 tile per block (one warp):
//   A: the compressed 16 x 16 tile (two kept elements per four-wide chunk), row-major raw 16-bit elements,
//      in the dense m16n8k16 A layout; B: 32 x 8 row-major; C, D: 16 x 8 row-major;
//   E: the metadata register of each of the 32 lanes (the host builds it, stcsim.sparsity.mma_sp layout);
//   sel: the sparsity selector (0 or 1), a literal of the instruction.
__device__ inline int a_row(int g, int e) { return g + 8 * ((e >> 1) & 1); }
__device__ inline int a_col(int t, int e) { return 2 * t + (e & 1) + 8 * (e >> 2); }
__device__ inline int b_row(int t, int e) { return 2 * t + (e & 1) + 8 * (e >> 1); }
__device__ inline int c_row(int g, int e) { return g + 8 * (e >> 1); }
__device__ inline int c_col(int t, int e) { return 2 * t + (e & 1); }

// The lane's A (4 regs, compressed 16 x 16), B (4 regs, 32 x 8) and metadata registers of tile blockIdx.x.
__device__ void load_sparse_ab(const unsigned short* A, const unsigned short* B, const unsigned* E, unsigned* a,
                               unsigned* b, unsigned* e)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    A += blockIdx.x * 16 * 16;
    B += blockIdx.x * 32 * 8;
    for (int i = 0; i < 8; i += 2)
        a[i / 2] = A[a_row(g, i) * 16 + a_col(t, i)] | ((unsigned)A[a_row(g, i + 1) * 16 + a_col(t, i + 1)] << 16);
    for (int i = 0; i < 8; i += 2)
        b[i / 2] = B[b_row(t, i) * 8 + g] | ((unsigned)B[b_row(t, i + 1) * 8 + g] << 16);
    *e = E[blockIdx.x * 32 + lane];
}

__device__ void load_c32(const float* C, float* c)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    C += blockIdx.x * 16 * 8;
    for (int i = 0; i < 4; ++i) c[i] = C[c_row(g, i) * 8 + c_col(t, i)];
}
__device__ void store_d32(float* D, const float* d)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    D += blockIdx.x * 16 * 8;
    for (int i = 0; i < 4; ++i) D[c_row(g, i) * 8 + c_col(t, i)] = d[i];
}
__device__ void load_c16(const unsigned short* C, unsigned* c)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    C += blockIdx.x * 16 * 8;
    for (int i = 0; i < 4; i += 2)
        c[i / 2] = C[c_row(g, i) * 8 + c_col(t, i)] | ((unsigned)C[c_row(g, i + 1) * 8 + c_col(t, i + 1)] << 16);
}
__device__ void store_d16(unsigned short* D, const unsigned* d)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    D += blockIdx.x * 16 * 8;
    for (int i = 0; i < 4; ++i) D[c_row(g, i) * 8 + c_col(t, i)] = (unsigned short)(d[i / 2] >> (16 * (i & 1)));
}

#define MMA_SP_F32(SP, AB, SEL)                                                                            \
    asm volatile("mma." SP ".sync.aligned.m16n8k32.row.col.f32." AB "." AB ".f32 {%0,%1,%2,%3}, "         \
                 "{%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, " #SEL ";"                      \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                          \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), \
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]), "r"(e))

#define MMA_SP_KERNEL_F32(NAME, SP, AB)                                                                    \
    extern "C" __global__ void NAME(const unsigned short* A, const unsigned short* B, const float* C,      \
                                    const unsigned* E, float* D, int sel)                                  \
    {                                                                                                      \
        unsigned a[4], b[4], e;                                                                            \
        float c[4], d[4];                                                                                  \
        load_sparse_ab(A, B, E, a, b, &e);                                                                 \
        load_c32(C, c);                                                                                    \
        if (sel == 0) {                                                                                    \
            MMA_SP_F32(SP, AB, 0);                                                                         \
        } else {                                                                                           \
            MMA_SP_F32(SP, AB, 1);                                                                         \
        }                                                                                                  \
        store_d32(D, d);                                                                                   \
    }

MMA_SP_KERNEL_F32(mma_sp_f16_f32, "sp", "f16")
MMA_SP_KERNEL_F32(mma_sp_bf16_f32, "sp", "bf16")

#define MMA_SP_F16(SEL)                                                                                    \
    asm volatile("mma.sp.sync.aligned.m16n8k32.row.col.f16.f16.f16.f16 {%0,%1}, "       \
                 "{%2,%3,%4,%5}, {%6,%7,%8,%9}, {%10,%11}, %12, " #SEL ";"                                 \
                 : "=r"(d[0]), "=r"(d[1])                                                                  \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), \
                   "r"(c[0]), "r"(c[1]), "r"(e))

extern "C" __global__ void mma_sp_f16_f16(const unsigned short* A, const unsigned short* B,
                                          const unsigned short* C, const unsigned* E, unsigned short* D, int sel)
{
    unsigned a[4], b[4], e, c[2], d[2];
    load_sparse_ab(A, B, E, a, b, &e);
    load_c16(C, c);
    if (sel == 0) {
        MMA_SP_F16(0);
    } else {
        MMA_SP_F16(1);
    }
    store_d16(D, d);
}
