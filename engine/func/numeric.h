// Bit-exact numeric helpers: fp16 / bf16 conversions with round-to-nearest-even and bit casts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace stc {

inline float f32_from_bits(uint64_t b) { uint32_t u = static_cast<uint32_t>(b); float f; std::memcpy(&f, &u, 4); return f; }
inline uint64_t bits_from_f32(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline double f64_from_bits(uint64_t b) { double d; std::memcpy(&d, &b, 8); return d; }
inline uint64_t bits_from_f64(double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; }

// IEEE binary16 -> double (exact), by bit manipulation.
inline double half_to_double(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t f;
  if (exp == 0x1f) {
    f = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      f = sign;
    } else {  // subnormal half: normalise into a float
      int e = -1;
      do { ++e; man <<= 1; } while (!(man & 0x400u));
      f = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else {
    f = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  return static_cast<double>(f32_from_bits(f));
}

// Rounds a double to a narrow IEEE format with `ebits` exponent and `mbits` mantissa bits, round to nearest
// even, with subnormals and overflow to infinity; returns the narrow bit pattern. Bit manipulation only.
inline uint32_t round_double_to_narrow(double x, int ebits, int mbits) {
  const uint64_t b = bits_from_f64(x);
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << (ebits + mbits);
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t exp_all = (1u << ebits) - 1;
  const int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  const uint64_t m = b & ((uint64_t{1} << 52) - 1);
  if (e == 1024) return sign | (exp_all << mbits) | (m ? (1u << (mbits - 1)) : 0u);  // inf / nan
  if (((b >> 52) & 0x7ff) == 0) return sign;  // zero or double subnormal (far below the narrow range)
  if (e > bias) return sign | (exp_all << mbits);
  const uint64_t full = (uint64_t{1} << 52) | m;
  const int emin = 1 - bias;
  int shift = 52 - mbits;
  if (e < emin) shift += emin - e;
  if (shift > 62) return sign;  // below half of the smallest subnormal
  uint64_t q = full >> shift;
  const uint64_t rem = full & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  uint64_t out;
  if (e < emin) out = q;  // subnormal (a carry into bit mbits makes it the smallest normal)
  else out = (static_cast<uint64_t>(e + bias) << mbits) + q - (uint64_t{1} << mbits);
  if (out >= (static_cast<uint64_t>(exp_all) << mbits)) return sign | (exp_all << mbits);
  return sign | static_cast<uint32_t>(out);
}

// IEEE rounding directions of the conversions: to nearest (ties to even), toward zero, down, up.
enum class RoundDir : uint8_t { NearestEven, Zero, Down, Up };

// Rounds the exact value (-1)^neg * m * 2^e to the binary format with `ebits` exponent and `mbits` explicit
// mantissa bits (f16 5/10, bf16 8/7, f32 8/23, f64 11/52) in direction `dir`, with subnormals and overflow to
// infinity or to the largest finite value as the direction demands. Returns the format's bit pattern. One
// rounding of the exact value (no double rounding), integer arithmetic only.
inline uint64_t round_to_format(bool neg, uint64_t m, int e, int ebits, int mbits, RoundDir dir) {
  const uint64_t sign = neg ? uint64_t{1} << (ebits + mbits) : 0;
  if (m == 0) return sign;
  const int bias = (1 << (ebits - 1)) - 1;
  const uint64_t exp_all = (uint64_t{1} << ebits) - 1;
  const int top = 63 - __builtin_clzll(m);           // m * 2^e lies in [2^(top+e), 2^(top+e+1))
  const int q = std::max(top + e, 1 - bias) - mbits;  // weight of the result's last mantissa bit
  const int shift = q - e;                            // low bits of m below that weight
  uint64_t keep;
  bool half = false, rest = false;
  if (shift <= 0) {
    keep = m << -shift;  // exact: top + e - q <= mbits
  } else if (shift > 64) {
    keep = 0;
    rest = true;
  } else {
    keep = shift == 64 ? 0 : m >> shift;
    half = (m >> (shift - 1)) & 1;
    rest = shift >= 2 && (m & ((uint64_t{1} << (shift - 1)) - 1)) != 0;
  }
  bool up = false;
  switch (dir) {
    case RoundDir::NearestEven: up = half && (rest || (keep & 1)); break;
    case RoundDir::Zero: break;
    case RoundDir::Down: up = neg && (half || rest); break;
    case RoundDir::Up: up = !neg && (half || rest); break;
  }
  keep += up;
  int qe = q;
  if (keep >> (mbits + 1)) { keep >>= 1; ++qe; }  // the carry reached the next binade
  const uint64_t biased = (keep >> mbits) ? static_cast<uint64_t>(qe + mbits + bias) : 0;  // 0: subnormal
  if (biased >= exp_all) {
    const bool to_inf = dir == RoundDir::NearestEven || (dir == RoundDir::Up && !neg) || (dir == RoundDir::Down && neg);
    return to_inf ? sign | (exp_all << mbits) : sign | ((exp_all << mbits) - 1);
  }
  return sign | (biased << mbits) | (keep & ((uint64_t{1} << mbits) - 1));
}

// A double rounded to a binary format in direction `dir` (decomposed exactly, rounded once). NaN gives the
// format's quiet NaN with the input's sign; infinities stay infinite.
inline uint64_t round_double_to_format(double x, int ebits, int mbits, RoundDir dir) {
  const uint64_t b = bits_from_f64(x);
  const bool neg = b >> 63;
  const uint64_t sign = neg ? uint64_t{1} << (ebits + mbits) : 0;
  const uint64_t exp_all = (uint64_t{1} << ebits) - 1;
  const int be = static_cast<int>((b >> 52) & 0x7ff);
  const uint64_t man = b & ((uint64_t{1} << 52) - 1);
  if (be == 0x7ff) return sign | (exp_all << mbits) | (man ? uint64_t{1} << (mbits - 1) : 0);
  if (be == 0) return round_to_format(neg, man, -1074, ebits, mbits, dir);  // zero or double subnormal
  return round_to_format(neg, man | (uint64_t{1} << 52), be - 1075, ebits, mbits, dir);
}

inline uint16_t double_to_half(double x) { return static_cast<uint16_t>(round_double_to_narrow(x, 5, 10)); }
inline uint16_t double_to_bf16(double x) { return static_cast<uint16_t>(round_double_to_narrow(x, 8, 7)); }
inline double bf16_to_double(uint16_t b) { return static_cast<double>(f32_from_bits(static_cast<uint32_t>(b) << 16)); }
// The NaN that NVIDIA GPUs produce for f32 and for f16 / bf16 results (arithmetic, conversions), whatever
// the input NaN. f64 results keep IEEE propagation (a NaN operand's payload, else 0xfff8000000000000).
constexpr uint64_t kCanonicalNaN32 = 0x7fffffffu;
constexpr uint16_t kCanonicalNaN16 = 0x7fff;

// .ftz: subnormal values become zero of the same sign.
inline float f32_ftz(float f) { return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f; }
inline double f64_ftz(double d) { return std::fpclassify(d) == FP_SUBNORMAL ? std::copysign(0.0, d) : d; }
inline uint16_t half_ftz(uint16_t h) { return (h & 0x7c00) == 0 ? static_cast<uint16_t>(h & 0x8000) : h; }

// .relu of a floating-point result: negative values and -0 become +0; NaN stays NaN.
inline double relu(double v) { return !std::isnan(v) && std::signbit(v) ? 0.0 : v; }

// Round-to-nearest-even double -> float is the C++ conversion under the default rounding mode.
inline float double_to_float(double x) { return static_cast<float>(x); }

}  // namespace stc
