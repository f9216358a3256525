#include "fragment_simd.h"

#include <immintrin.h>

#include <cstdlib>
#include <cstring>

#include "fragment.h"

namespace stc {
namespace {

#define STC_SIMD __attribute__((target("avx2,f16c")))

// The four lanes col[0..3] (eight fp16 elements), in lane order.
STC_SIMD inline __m128i pack_quad_row(const uint32_t* col) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(col));
}

STC_SIMD bool conversion_exact() {
  for (uint32_t h = 0; h < 65536; h += 8) {
    uint16_t in[8];
    for (uint32_t i = 0; i < 8; ++i) in[i] = static_cast<uint16_t>(h + i);
    float out[8];
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
    for (uint32_t i = 0; i < 8; ++i) {
      if (((h + i) & 0x7c00u) == 0x7c00u && ((h + i) & 0x3ffu)) continue;  // NaN: never converted here
      uint32_t a, b;
      std::memcpy(&a, &out[i], 4);
      std::memcpy(&b, &kHalfToFloat[h + i], 4);
      if (a != b) return false;
    }
  }
  return true;
}

// An 8 x 8 transpose of floats (rows r[0..7]).
STC_SIMD inline void transpose8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

}  // namespace

bool simd_fragments() {
  static const bool ok = !std::getenv("STCSIM_PORTABLE") && __builtin_cpu_supports("avx2") &&
                         __builtin_cpu_supports("f16c") && conversion_exact();
  return ok;
}

// The quad's eight rows packed; false if one holds an infinity or NaN (F16C quiets a signalling NaN,
// the table keeps it as it is: those quads take the table).
STC_SIMD inline bool pack_quad(const uint32_t* col, __m128i (&p)[8]) {
  const __m128i exp = _mm_set1_epi16(0x7c00);
  __m128i special = _mm_setzero_si128();
  for (int g = 0; g < 8; ++g) {
    p[g] = pack_quad_row(col + 4 * g);
    special = _mm_or_si128(special, _mm_cmpeq_epi16(_mm_and_si128(p[g], exp), exp));
  }
  return _mm_movemask_epi8(special) == 0;
}

STC_SIMD bool quad_rows_f16(const uint32_t* col, float* m) {
  __m128i p[8];
  if (!pack_quad(col, p)) return false;
  for (int g = 0; g < 8; ++g) _mm256_storeu_ps(m + 16 * g, _mm256_cvtph_ps(p[g]));
  return true;
}

STC_SIMD bool quad_cols_f16(const uint32_t* col, float* m) {
  __m128i p[8];
  if (!pack_quad(col, p)) return false;
  __m256 r[8];
  for (int g = 0; g < 8; ++g) r[g] = _mm256_cvtph_ps(p[g]);
  transpose8(r);
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(m + 16 * c, r[c]);
  return true;
}

STC_SIMD void pair_rows_f32(const uint32_t* c0, const uint32_t* c1, float* m) {
  for (int g = 0; g < 8; ++g) {
    const __m128 x = _mm_loadu_ps(reinterpret_cast<const float*>(c0 + 4 * g));
    const __m128 y = _mm_loadu_ps(reinterpret_cast<const float*>(c1 + 4 * g));
    _mm_storeu_ps(m + 16 * g, _mm_unpacklo_ps(x, y));
    _mm_storeu_ps(m + 16 * g + 4, _mm_unpackhi_ps(x, y));
  }
}

STC_SIMD void pair_rows_f32_store(const float* m, uint32_t* c0, uint32_t* c1) {
  for (int g = 0; g < 8; ++g) {
    const __m128 lo = _mm_loadu_ps(m + 16 * g), hi = _mm_loadu_ps(m + 16 * g + 4);
    _mm_storeu_ps(reinterpret_cast<float*>(c0 + 4 * g), _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm_storeu_ps(reinterpret_cast<float*>(c1 + 4 * g), _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
  }
}

namespace {

#define STC_FMA __attribute__((target("avx2,f16c,fma")))

bool host_fma() {
  static const bool ok = __builtin_cpu_supports("fma");
  return ok;
}

// tile_product's 8-wide loops (16 rows, about 8 independent accumulator chains, k in order) with one fused
// multiply-add per step instead of a multiply and an add.
template <int N, int K>
STC_FMA inline void tile_fma(const float (*A)[16], const float (*B)[16], const float (*C)[16], float (*D)[16]) {
  constexpr int V = N / 8, R = 8 / V;
  __m256 Bv[K][V];
  for (int k = 0; k < K; ++k)
    for (int q = 0; q < V; ++q) Bv[k][q] = _mm256_loadu_ps(B[k] + 8 * q);
  for (int m0 = 0; m0 < 16; m0 += R) {
    __m256 acc[R][V];
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < V; ++q) acc[r][q] = _mm256_loadu_ps(C[m0 + r] + 8 * q);
    for (int k = 0; k < K; ++k)
      for (int r = 0; r < R; ++r) {
        const __m256 a = _mm256_broadcast_ss(&A[m0 + r][k]);
        for (int q = 0; q < V; ++q) acc[r][q] = _mm256_fmadd_ps(a, Bv[k][q], acc[r][q]);
      }
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < V; ++q) _mm256_storeu_ps(D[m0 + r] + 8 * q, acc[r][q]);
  }
}

STC_FMA void tile_mma_fma(int n, int k, const float (*A)[16], const float (*B)[16], const float (*C)[16],
                          float (*D)[16]) {
  if (n == 8 && k == 16) tile_fma<8, 16>(A, B, C, D);
  else if (n == 8) tile_fma<8, 8>(A, B, C, D);
  else if (k == 16) tile_fma<16, 16>(A, B, C, D);
  else tile_fma<16, 8>(A, B, C, D);
}

}  // namespace

namespace {

// D = A * B + C, 16 x N x 16 (N = 8 or 16) with fp16 A and B and fp32 C and D in the mma.sync m16n8k16
// register layout, n8 half h of B, C and D in registers b[2h..2h+1], c[4h..4h+3], d[4h..4h+3].
template <int N>
STC_FMA bool direct_mma_f16_f32(const uint32_t* const* a, const uint32_t* const* b, const uint32_t* const* c,
                                uint32_t* const* d) {
  constexpr int V = N / 8, R = 8 / V;
  if (!simd_fragments() || !host_fma()) return false;
  __m128i pa[4][8], pb[2 * V][8];
  for (int j = 0; j < 4; ++j)
    if (!pack_quad(a[j], pa[j])) return false;
  for (int j = 0; j < 2 * V; ++j)
    if (!pack_quad(b[j], pb[j])) return false;
  // A as rows (a0: rows 0-7 columns 0-7, a1: rows 8-15, a2 and a3: columns 8-15), as quad_rows_f16 decodes
  // them; B as its rows k, as quad_cols_f16 decodes each half's first register (k 0-7) and second (k 8-15)
  alignas(32) float A[16][16];
  for (int g = 0; g < 8; ++g) {
    _mm256_store_ps(A[g], _mm256_cvtph_ps(pa[0][g]));
    _mm256_store_ps(A[g + 8], _mm256_cvtph_ps(pa[1][g]));
    _mm256_store_ps(A[g] + 8, _mm256_cvtph_ps(pa[2][g]));
    _mm256_store_ps(A[g + 8] + 8, _mm256_cvtph_ps(pa[3][g]));
  }
  __m256 Bv[16][V];
  for (int q = 0; q < V; ++q)
    for (int h = 0; h < 2; ++h) {
      __m256 r[8];
      for (int g = 0; g < 8; ++g) r[g] = _mm256_cvtph_ps(pb[2 * q + h][g]);
      transpose8(r);
      for (int k = 0; k < 8; ++k) Bv[8 * h + k][q] = r[k];
    }
  // tile_fma<N, 16>'s steps (each element's k chain in order, one fused multiply-add per step) from C's rows
  // as pair_rows_f32 interleaves them (row 8h + g of columns 8q.. from lane quad g of c[4q + 2h] and
  // c[4q + 2h + 1]), R rows at a time; every C register is read before any D register is written (they may
  // be the same)
  __m256 out[2][8][V];
  for (int h = 0; h < 2; ++h)
    for (int g0 = 0; g0 < 8; g0 += R) {
      __m256 acc[R][V];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int q = 0; q < V; ++q) {
          const int g = g0 + r;
          const __m128 x = _mm_loadu_ps(reinterpret_cast<const float*>(c[4 * q + 2 * h] + 4 * g));
          const __m128 y = _mm_loadu_ps(reinterpret_cast<const float*>(c[4 * q + 2 * h + 1] + 4 * g));
          acc[r][q] = _mm256_set_m128(_mm_unpackhi_ps(x, y), _mm_unpacklo_ps(x, y));
        }
#pragma GCC unroll 16
      for (int k = 0; k < 16; ++k)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256 av = _mm256_broadcast_ss(&A[8 * h + g0 + r][k]);
#pragma GCC unroll 2
          for (int q = 0; q < V; ++q) acc[r][q] = _mm256_fmadd_ps(av, Bv[k][q], acc[r][q]);
        }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int q = 0; q < V; ++q) out[h][g0 + r][q] = acc[r][q];
    }
  // D as pair_rows_f32_store writes it, in the scatter's register order (d0 d1, d2 d3, ...): a register
  // named twice ends with the later one's elements
  for (int q = 0; q < V; ++q)
    for (int h = 0; h < 2; ++h) {
      uint32_t* d0 = d[4 * q + 2 * h];
      uint32_t* d1 = d[4 * q + 2 * h + 1];
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        const __m128 lo = _mm256_castps256_ps128(out[h][g][q]), hi = _mm256_extractf128_ps(out[h][g][q], 1);
        _mm_storeu_ps(reinterpret_cast<float*>(d0 + 4 * g), _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm_storeu_ps(reinterpret_cast<float*>(d1 + 4 * g), _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
      }
    }
  return true;
}

}  // namespace

bool mma_m16n8k16_f16_f32(const uint32_t* const (&a)[4], const uint32_t* const (&b)[2],
                          const uint32_t* const (&c)[4], uint32_t* const (&d)[4]) {
  return direct_mma_f16_f32<8>(a, b, c, d);
}

bool mma_m16n16k16_f16_f32(const uint32_t* const (&a)[4], const uint32_t* const (&b)[4],
                           const uint32_t* const (&c)[8], uint32_t* const (&d)[8]) {
  return direct_mma_f16_f32<16>(a, b, c, d);
}

STC_SIMD void tile_mma_avx(int n, int k, const float (*A)[16], const float (*B)[16], const float (*C)[16],
                           float (*D)[16], bool exact_products) {
  if (exact_products && host_fma()) return tile_mma_fma(n, k, A, B, C, D);
  if (n == 8 && k == 16) tile_product<8, 16, 8, 16>(A, B, C, D);
  else if (n == 8) tile_product<8, 16, 8, 8>(A, B, C, D);
  else if (k == 16) tile_product<8, 16, 16, 16>(A, B, C, D);
  else tile_product<8, 16, 16, 8>(A, B, C, D);
}

}  // namespace stc
