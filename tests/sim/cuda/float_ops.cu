// Floating-point instruction families: f32 / f64 arithmetic in every rounding mode, the approximate
// special functions, conversions in all directions, packed half arithmetic, comparisons and selection.
// Each thread i reads element i of its inputs and writes a row of results out[i * K + k].
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define TID (blockIdx.x * blockDim.x + threadIdx.x)

extern "C" __global__ void f32_ops(const float* a, const float* b, const float* c, float* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const float x = a[i], y = b[i], z = c[i];
    float* o = out + i * 32;
    float r;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = __fmul_rn(x, y);
    o[3] = fmaf(x, y, z);
    o[4] = x / y;
    o[5] = fminf(x, y);
    o[6] = fmaxf(x, y);
    o[7] = fabsf(x);
    o[8] = -x;
    o[9] = sqrtf(x);
    o[10] = __frcp_rn(x);
    o[11] = copysignf(x, y);
    o[12] = __fadd_rz(x, y);
    o[13] = __fadd_rd(x, y);
    o[14] = __fadd_ru(x, y);
    o[15] = __fmul_rz(x, y);
    o[16] = __fmul_rd(x, y);
    o[17] = __fmul_ru(x, y);
    o[18] = __fmaf_rz(x, y, z);
    o[19] = __fmaf_rd(x, y, z);
    o[20] = __fmaf_ru(x, y, z);
    o[21] = __fdiv_rz(x, y);
    o[22] = __fdiv_rd(x, y);
    o[23] = __fdiv_ru(x, y);
    o[24] = __fsqrt_rz(x);
    o[25] = __fsqrt_ru(x);
    o[26] = __frcp_rd(x);
    o[27] = __frcp_ru(x);
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
    o[28] = r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
    o[29] = r;
    o[30] = __fsub_rz(x, y);
    o[31] = __saturatef(x);
}

extern "C" __global__ void f64_ops(const double* a, const double* b, const double* c, double* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const double x = a[i], y = b[i], z = c[i];
    double* o = out + i * 24;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = __dmul_rn(x, y);
    o[3] = fma(x, y, z);
    o[4] = x / y;
    o[5] = fmin(x, y);
    o[6] = fmax(x, y);
    o[7] = fabs(x);
    o[8] = -x;
    o[9] = sqrt(x);
    o[10] = __drcp_rn(x);
    o[11] = copysign(x, y);
    o[12] = __dadd_rz(x, y);
    o[13] = __dadd_rd(x, y);
    o[14] = __dadd_ru(x, y);
    o[15] = __dmul_rz(x, y);
    o[16] = __dmul_rd(x, y);
    o[17] = __dmul_ru(x, y);
    o[18] = __fma_rz(x, y, z);
    o[19] = __fma_rd(x, y, z);
    o[20] = __ddiv_rz(x, y);
    o[21] = __ddiv_ru(x, y);
    o[22] = __dsqrt_rd(x);
    o[23] = __dsqrt_ru(x);
}

// The approximate forms (compared with a tolerance).
extern "C" __global__ void f32_approx(const float* a, float* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const float x = a[i];
    float* o = out + i * 8;
    float r;
    o[0] = __sinf(x);
    o[1] = __cosf(x);
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    o[2] = r;
    o[3] = __log2f(fabsf(x));
    asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    o[4] = r;
    asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(fabsf(x)));
    o[5] = r;
    o[6] = rsqrtf(fabsf(x));
    o[7] = __fdividef(1.0f, x);
}

// f32 / f64 -> integers in every integer rounding mode, and f32 -> f32 rounding to integral values.
extern "C" __global__ void cvt_to_int(const float* a, const double* d, int* s32, unsigned* u32, long long* s64,
                                      unsigned long long* u64, float* fi, int n)
{
    const int i = TID;
    if (i >= n) return;
    const float x = a[i];
    const double y = d[i];
    int* os = s32 + i * 8;
    os[0] = __float2int_rn(x);
    os[1] = __float2int_rz(x);
    os[2] = __float2int_rd(x);
    os[3] = __float2int_ru(x);
    os[4] = __double2int_rn(y);
    os[5] = __double2int_rz(y);
    os[6] = __double2int_rd(y);
    os[7] = __double2int_ru(y);
    unsigned* ou = u32 + i * 6;
    ou[0] = __float2uint_rn(x);
    ou[1] = __float2uint_rz(x);
    ou[2] = __float2uint_rd(x);
    ou[3] = __float2uint_ru(x);
    ou[4] = __double2uint_rn(y);
    ou[5] = __double2uint_rz(y);
    long long* ol = s64 + i * 6;
    ol[0] = __float2ll_rn(x);
    ol[1] = __float2ll_rz(x);
    ol[2] = __float2ll_rd(x);
    ol[3] = __float2ll_ru(x);
    ol[4] = __double2ll_rn(y);
    ol[5] = __double2ll_rz(y);
    unsigned long long* oq = u64 + i * 6;
    oq[0] = __float2ull_rn(x);
    oq[1] = __float2ull_rz(x);
    oq[2] = __float2ull_rd(x);
    oq[3] = __float2ull_ru(x);
    oq[4] = __double2ull_rn(y);
    oq[5] = __double2ull_rz(y);
    float* of = fi + i * 4;
    of[0] = rintf(x);
    of[1] = truncf(x);
    of[2] = floorf(x);
    of[3] = ceilf(x);
}

// Integers -> f32 / f64 in every rounding mode.
extern "C" __global__ void cvt_from_int(const int* a, const unsigned* b, const long long* c,
                                        const unsigned long long* d, float* of, double* od, int n)
{
    const int i = TID;
    if (i >= n) return;
    const int x = a[i];
    const unsigned u = b[i];
    const long long l = c[i];
    const unsigned long long q = d[i];
    float* f = of + i * 16;
    f[0] = __int2float_rn(x);
    f[1] = __int2float_rz(x);
    f[2] = __int2float_rd(x);
    f[3] = __int2float_ru(x);
    f[4] = __uint2float_rn(u);
    f[5] = __uint2float_rz(u);
    f[6] = __uint2float_rd(u);
    f[7] = __uint2float_ru(u);
    f[8] = __ll2float_rn(l);
    f[9] = __ll2float_rz(l);
    f[10] = __ll2float_rd(l);
    f[11] = __ll2float_ru(l);
    f[12] = __ull2float_rn(q);
    f[13] = __ull2float_rz(q);
    f[14] = __ull2float_rd(q);
    f[15] = __ull2float_ru(q);
    double* g = od + i * 8;
    g[0] = __int2double_rn(x);
    g[1] = __uint2double_rn(u);
    g[2] = __ll2double_rn(l);
    g[3] = __ll2double_rz(l);
    g[4] = __ll2double_rd(l);
    g[5] = __ull2double_rn(q);
    g[6] = __ull2double_ru(q);
    g[7] = __ull2double_rz(q);
}

// f32 / f64 <-> f16 / bf16, packing with __floats2half2_rn, and f32 <-> f64.
extern "C" __global__ void cvt_half(const float* a, const float* b, const double* d, const unsigned short* h,
                                    unsigned short* o16, unsigned* o32, float* of, double* od, int n)
{
    const int i = TID;
    if (i >= n) return;
    const float x = a[i], y = b[i];
    const double z = d[i];
    unsigned short* s = o16 + i * 8;
    s[0] = __half_as_ushort(__float2half_rn(x));
    s[1] = __half_as_ushort(__float2half_rz(x));
    s[2] = __half_as_ushort(__float2half_rd(x));
    s[3] = __half_as_ushort(__float2half_ru(x));
    s[4] = __half_as_ushort(__double2half(z));
    s[5] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
    s[6] = __bfloat16_as_ushort(__double2bfloat16(z));
    s[7] = __bfloat16_as_ushort(__float2bfloat16_rz(x));
    unsigned* w = o32 + i * 2;
    const __half2 h2 = __floats2half2_rn(x, y);
    w[0] = *reinterpret_cast<const unsigned*>(&h2);
    const __nv_bfloat162 b2 = __floats2bfloat162_rn(x, y);
    w[1] = *reinterpret_cast<const unsigned*>(&b2);
    float* f = of + i * 4;
    f[0] = __half2float(__ushort_as_half(h[i]));
    f[1] = __bfloat162float(__ushort_as_bfloat16(h[i]));
    f[2] = (float)z;
    f[3] = __double2float_rz(z);
    double* g = od + i * 2;
    g[0] = (double)x;
    g[1] = (double)__ushort_as_half(h[i]);
}

// Packed and scalar half arithmetic on raw 16-bit patterns (two per 32-bit word).
extern "C" __global__ void half_ops(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const unsigned ua = a[i], ub = b[i], uc = c[i];
    const __half2 x = *reinterpret_cast<const __half2*>(&ua), y = *reinterpret_cast<const __half2*>(&ub),
                  z = *reinterpret_cast<const __half2*>(&uc);
    const __nv_bfloat162 bx = *reinterpret_cast<const __nv_bfloat162*>(&ua),
                         by = *reinterpret_cast<const __nv_bfloat162*>(&ub),
                         bz = *reinterpret_cast<const __nv_bfloat162*>(&uc);
    unsigned* o = out + i * 15;
    __half2 r;
    __nv_bfloat162 br;
    r = __hadd2(x, y);
    o[0] = *reinterpret_cast<unsigned*>(&r);
    r = __hsub2(x, y);
    o[1] = *reinterpret_cast<unsigned*>(&r);
    r = __hmul2(x, y);
    o[2] = *reinterpret_cast<unsigned*>(&r);
    r = __hfma2(x, y, z);
    o[3] = *reinterpret_cast<unsigned*>(&r);
    r = __hneg2(x);
    o[4] = *reinterpret_cast<unsigned*>(&r);
    r = __habs2(x);
    o[5] = *reinterpret_cast<unsigned*>(&r);
    r = __hmin2(x, y);
    o[6] = *reinterpret_cast<unsigned*>(&r);
    r = __hmax2(x, y);
    o[7] = *reinterpret_cast<unsigned*>(&r);
    br = __hfma2(bx, by, bz);
    o[8] = *reinterpret_cast<unsigned*>(&br);
    br = __hmul2(bx, by);
    o[9] = *reinterpret_cast<unsigned*>(&br);
    br = __hadd2(bx, by);
    o[10] = *reinterpret_cast<unsigned*>(&br);
    const __half s = __hfma(__low2half(x), __low2half(y), __high2half(z));
    o[11] = __half_as_ushort(s);
    o[12] = __half_as_ushort(__hadd(__high2half(x), __low2half(y)));
    o[13] = __half_as_ushort(__hmul(__high2half(x), __high2half(y)));
    o[14] = __half_as_ushort(hexp(__low2half(x)));  // cuda_fp16.hpp asm: `.reg.b32 f, C;` and an ex2.approx
}

#define SETP(T, CNST, OP, k)                                                                        \
    asm("{\n\t.reg .pred p;\n\tsetp." #OP "." #T " p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"         \
        : "=r"(r)                                                                                     \
        : CNST(x), CNST(y));                                                                          \
    o[k] = r;

// setp with every comparison (ordered, unordered, num / nan) on f32, some on f64, f16 and integers;
// setp with a boolean combination and two destinations; set; selp; slct.
extern "C" __global__ void compare(const float* a, const float* b, const double* c, const double* d, const int* e,
                                   const int* f, unsigned* out, float* fout, int n)
{
    const int i = TID;
    if (i >= n) return;
    unsigned r;
    unsigned* o = out + i * 32;
    {
        const float x = a[i], y = b[i];
        SETP(f32, "f", eq, 0)
        SETP(f32, "f", ne, 1)
        SETP(f32, "f", lt, 2)
        SETP(f32, "f", le, 3)
        SETP(f32, "f", gt, 4)
        SETP(f32, "f", ge, 5)
        SETP(f32, "f", equ, 6)
        SETP(f32, "f", neu, 7)
        SETP(f32, "f", ltu, 8)
        SETP(f32, "f", leu, 9)
        SETP(f32, "f", gtu, 10)
        SETP(f32, "f", geu, 11)
        SETP(f32, "f", num, 12)
        SETP(f32, "f", nan, 13)
        asm("{\n\t.reg .pred p, q;\n\tsetp.gt.f32 p, %1, 0f00000000;\n\tsetp.lt.and.f32 q, %1, %2, p;\n\t"
            "selp.u32 %0, 1, 0, q;\n\t}"
            : "=r"(r)
            : "f"(x), "f"(y));
        o[14] = r;
        asm("{\n\t.reg .pred p, q;\n\tsetp.gt.f32 p, %1, 0f00000000;\n\tsetp.ltu.xor.f32 q, %1, %2, !p;\n\t"
            "selp.u32 %0, 1, 0, q;\n\t}"
            : "=r"(r)
            : "f"(x), "f"(y));
        o[15] = r;
        asm("{\n\t.reg .pred p, q;\n\tsetp.le.f32 p|q, %1, %2;\n\tselp.u32 %0, 2, 0, p;\n\t"
            "@q add.u32 %0, %0, 1;\n\t}"
            : "=r"(r)
            : "f"(x), "f"(y));
        o[16] = r;
        asm("set.gtu.u32.f32 %0, %1, %2;" : "=r"(r) : "f"(x), "f"(y));
        o[17] = r;
        float g;
        asm("set.eq.or.f32.f32 %0, %1, %2, 0;" : "=f"(g) : "f"(x), "f"(y));
        fout[i * 4 + 0] = g;
        fout[i * 4 + 1] = x < y ? x : y * 2.0f;
        asm("slct.f32.f32 %0, %1, %2, %3;" : "=f"(g) : "f"(x), "f"(y), "f"(x - y));
        fout[i * 4 + 2] = g;
        const __half hx = __float2half_rn(x), hy = __float2half_rn(y);
        o[18] = __hlt(hx, hy);
        o[19] = __hgeu(hx, hy);
        o[20] = __hisnan(hx);
        fout[i * 4 + 3] = x != x ? 1.0f : 0.0f;
    }
    {
        const double x = c[i], y = d[i];
        SETP(f64, "d", lt, 21)
        SETP(f64, "d", equ, 22)
        SETP(f64, "d", nan, 23)
        SETP(f64, "d", ge, 24)
    }
    {
        const int x = e[i], y = f[i];
        SETP(s32, "r", lt, 25)
        SETP(s32, "r", ge, 26)
        SETP(u32, "r", lo, 27)
        SETP(u32, "r", hs, 28)
        SETP(u32, "r", hi, 29)
        SETP(b32, "r", ne, 30)
        asm("slct.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(x ^ y));
        o[31] = r;
    }
}
