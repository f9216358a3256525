// Integer instruction families: arithmetic per type, shifts, logic and bit manipulation.
// Each thread i reads element i of its inputs and writes a row of results out[i * K + k].

#define TID (blockIdx.x * blockDim.x + threadIdx.x)

// add sub mul.lo mul.hi mul.wide mad div rem min max abs neg shr shl on s32.
extern "C" __global__ void int32_ops(const int* a, const int* b, const int* c, int* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const int x = a[i], y = b[i], z = c[i];
    int* o = out + i * 18;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = __mulhi(x, y);
    const long long w = (long long)x * y;
    o[4] = (int)w;
    o[5] = (int)(w >> 32);
    o[6] = x * y + z;
    o[7] = x / y;
    o[8] = x % y;
    o[9] = min(x, y);
    o[10] = max(x, y);
    o[11] = abs(x);
    o[12] = -x;
    o[13] = x >> (z & 31);
    o[14] = x << (z & 31);
    o[15] = __mulhi(x, y) + z;
    o[16] = (x & y) | (~x ^ z);
    o[17] = (x ^ z) + (y | z);
}

extern "C" __global__ void uint32_ops(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out,
                                      int n)
{
    const int i = TID;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i], z = c[i];
    unsigned* o = out + i * 16;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = __umulhi(x, y);
    const unsigned long long w = (unsigned long long)x * y;
    o[4] = (unsigned)w;
    o[5] = (unsigned)(w >> 32);
    o[6] = x * y + z;
    o[7] = x / y;
    o[8] = x % y;
    o[9] = min(x, y);
    o[10] = max(x, y);
    o[11] = x >> (z & 31);
    o[12] = x << (z & 31);
    o[13] = x & y;
    o[14] = x | y;
    o[15] = ~(x ^ z);
}

extern "C" __global__ void int64_ops(const long long* a, const long long* b, const long long* c, long long* out,
                                     int n)
{
    const int i = TID;
    if (i >= n) return;
    const long long x = a[i], y = b[i], z = c[i];
    long long* o = out + i * 14;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = __mul64hi(x, y);
    o[4] = x * y + z;
    o[5] = x / y;
    o[6] = x % y;
    o[7] = min(x, y);
    o[8] = max(x, y);
    o[9] = llabs(x);
    o[10] = -x;
    o[11] = x >> (z & 63);
    o[12] = x << (z & 63);
    o[13] = (x ^ y) & ~z;
}

extern "C" __global__ void uint64_ops(const unsigned long long* a, const unsigned long long* b,
                                      const unsigned long long* c, unsigned long long* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const unsigned long long x = a[i], y = b[i], z = c[i];
    unsigned long long* o = out + i * 12;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = __umul64hi(x, y);
    o[4] = x * y + z;
    o[5] = x / y;
    o[6] = x % y;
    o[7] = min(x, y);
    o[8] = max(x, y);
    o[9] = x >> (z & 63);
    o[10] = x << (z & 63);
    o[11] = ~x | (y & z);
}

// Shifts with the raw shift amount (PTX clamps amounts >= the width), in 16, 32 and 64 bits.
extern "C" __global__ void shifts(const unsigned* a, const unsigned long long* b, const unsigned* s,
                                  unsigned* o32, unsigned long long* o64, int n)
{
    const int i = TID;
    if (i >= n) return;
    const unsigned x = a[i], sh = s[i];
    const unsigned long long y = b[i];
    unsigned r;
    unsigned long long q;
    unsigned short h = (unsigned short)x, hr;
    asm("shl.b32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(sh));
    o32[i * 6 + 0] = r;
    asm("shr.u32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(sh));
    o32[i * 6 + 1] = r;
    asm("shr.s32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(sh));
    o32[i * 6 + 2] = r;
    asm("shl.b16 %0, %1, %2;" : "=h"(hr) : "h"(h), "r"(sh));
    o32[i * 6 + 3] = hr;
    asm("shr.u16 %0, %1, %2;" : "=h"(hr) : "h"(h), "r"(sh));
    o32[i * 6 + 4] = hr;
    asm("shr.s16 %0, %1, %2;" : "=h"(hr) : "h"(h), "r"(sh));
    o32[i * 6 + 5] = hr;
    asm("shl.b64 %0, %1, %2;" : "=l"(q) : "l"(y), "r"(sh));
    o64[i * 3 + 0] = q;
    asm("shr.u64 %0, %1, %2;" : "=l"(q) : "l"(y), "r"(sh));
    o64[i * 3 + 1] = q;
    asm("shr.s64 %0, %1, %2;" : "=l"(q) : "l"(y), "r"(sh));
    o64[i * 3 + 2] = q;
}

#define LOP3(LUT, k)                                                                              \
    asm("lop3.b32 %0, %1, %2, %3, " #LUT ";" : "=r"(r) : "r"(x), "r"(y), "r"(z));                 \
    o[k] = r;
#define PRMT(MODE, k)                                                                             \
    asm("prmt.b32." #MODE " %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));                 \
    o[k] = r;

// lop3 with several lookup tables, prmt (default and every mode), funnel shifts, brev, clz, popc.
extern "C" __global__ void bit_ops(const unsigned* a, const unsigned* b, const unsigned* c,
                                   const unsigned long long* w, unsigned* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i], z = c[i];
    const unsigned long long v = w[i];
    unsigned* o = out + i * 28;
    unsigned r;
    LOP3(0x96, 0)
    LOP3(0xE8, 1)
    LOP3(0xCA, 2)
    LOP3(0x1E, 3)
    LOP3(0x80, 4)
    LOP3(0xFE, 5)
    LOP3(0x00, 6)
    LOP3(0x6C, 7)
    o[8] = __byte_perm(x, y, z);
    PRMT(f4e, 9)
    PRMT(b4e, 10)
    PRMT(rc8, 11)
    PRMT(ecl, 12)
    PRMT(ecr, 13)
    PRMT(rc16, 14)
    o[15] = __funnelshift_l(x, y, z);
    o[16] = __funnelshift_r(x, y, z);
    o[17] = __funnelshift_lc(x, y, z & 63);
    o[18] = __funnelshift_rc(x, y, z & 63);
    o[19] = __brev(x);
    o[20] = __clz(x >> (z & 31));
    o[21] = __popc(x);
    const unsigned long long bv = __brevll(v);
    o[22] = (unsigned)bv;
    o[23] = (unsigned)(bv >> 32);
    o[24] = __clzll(v >> (z & 63));
    o[25] = __popcll(v);
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));  // sign-replicating selectors
    o[26] = r;
    o[27] = (x & y) | (x & z) | (y & z);
}

// bfe / bfi (u32, s32, u64, s64, b32, b64) with arbitrary position and length operands.
extern "C" __global__ void bfe_bfi(const unsigned* a, const unsigned* b, const unsigned long long* wa,
                                   const unsigned long long* wb, const unsigned* pos, const unsigned* len,
                                   unsigned* o32, unsigned long long* o64, int n)
{
    const int i = TID;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i], p = pos[i], l = len[i];
    const unsigned long long u = wa[i], v = wb[i];
    unsigned r;
    unsigned long long q;
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(p), "r"(l));
    o32[i * 3 + 0] = r;
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(p), "r"(l));
    o32[i * 3 + 1] = r;
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r) : "r"(x), "r"(y), "r"(p), "r"(l));
    o32[i * 3 + 2] = r;
    // The ISA takes bits 7:0 of the position, but an H100 gives 0 from bfe.u64 / bfe.s64 for a position of
    // 256 or more: those get positions below 256 here.
    asm("bfe.u64 %0, %1, %2, %3;" : "=l"(q) : "l"(u), "r"(p & 0xffu), "r"(l));
    o64[i * 3 + 0] = q;
    asm("bfe.s64 %0, %1, %2, %3;" : "=l"(q) : "l"(u), "r"(p & 0xffu), "r"(l));
    o64[i * 3 + 1] = q;
    asm("bfi.b64 %0, %1, %2, %3, %4;" : "=l"(q) : "l"(u), "l"(v), "r"(p), "r"(l));
    o64[i * 3 + 2] = q;
}

// 16-bit arithmetic, saturating add / sub, mad.wide / mad.hi, and cvt between integer widths (with
// saturation, and a narrow signed result sign-extended into its wider register).
extern "C" __global__ void narrow_ops(const int* a, const int* b, const int* c, unsigned long long* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const int x = a[i], y = b[i], z = c[i];
    unsigned long long* q = out + i * 16;
    int r;
    long long w;
    short h;
    unsigned short u;
    asm("add.sat.s32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
    q[0] = (unsigned)r;
    asm("sub.sat.s32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
    q[1] = (unsigned)r;
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(w) : "r"(x), "r"(y), "l"((long long)z * 7));
    q[2] = w;
    asm("mad.hi.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    q[3] = (unsigned)r;
    asm("mul.wide.s16 %0, %1, %2;" : "=r"(r) : "h"((short)x), "h"((short)y));
    q[4] = (unsigned)r;
    asm("mul.lo.u16 %0, %1, %2;" : "=h"(u) : "h"((unsigned short)x), "h"((unsigned short)y));
    q[5] = u;
    asm("{\n\t.reg .b16 t;\n\tcvt.sat.s8.s32 t, %1;\n\tmov.b16 %0, t;\n\t}" : "=h"(u) : "r"(x));
    q[6] = u;  // all 16 bits of the register: the s8 result sign-extended
    asm("cvt.sat.u16.s32 %0, %1;" : "=h"(u) : "r"(x));
    q[7] = u;
    asm("cvt.s16.s8 %0, %1;" : "=h"(h) : "h"((short)x));
    q[8] = (unsigned short)h;
    asm("min.s16 %0, %1, %2;" : "=h"(h) : "h"((short)x), "h"((short)y));
    q[9] = (unsigned short)h;
    asm("abs.s16 %0, %1;" : "=h"(h) : "h"((short)x));
    q[10] = (unsigned short)h;
    asm("div.s16 %0, %1, %2;" : "=h"(h) : "h"((short)x), "h"((short)(y | 1)));
    q[11] = (unsigned short)h;
    asm("rem.u16 %0, %1, %2;" : "=h"(u) : "h"((unsigned short)x), "h"((unsigned short)(y | 1)));
    q[12] = u;
    asm("cvt.u32.u8 %0, %1;" : "=r"(r) : "h"((short)x));
    q[13] = (unsigned)r;
    asm("mad.lo.s16 %0, %1, %2, %3;" : "=h"(h) : "h"((short)x), "h"((short)y), "h"((short)z));
    q[14] = (unsigned short)h;
    asm("cvt.s64.s16 %0, %1;" : "=l"(w) : "h"((short)x));
    q[15] = w;
}
