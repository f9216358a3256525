// Bit-exact numeric helpers: fp16 / bf16 conversions with round-to-nearest-even and bit casts.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace stc {

inline float f32_from_bits(uint64_t b) { uint32_t u = static_cast<uint32_t>(b); float f; std::memcpy(&f, &u, 4); return f; }
inline uint64_t bits_from_f32(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline double f64_from_bits(uint64_t b) { double d; std::memcpy(&d, &b, 8); return d; }
inline uint64_t bits_from_f64(double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; }

// IEEE binary16 -> double (exact).
inline double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(static_cast<double>(man), -24);
  else if (exp == 31) v = man ? std::nan("") : INFINITY;
  else v = std::ldexp(static_cast<double>(man | 0x400), exp - 25);
  return sign ? -v : v;
}

// Rounds a double to the nearest representable value with `mbits` explicit mantissa bits, exponent range
// [emin, emax] (unbiased, of the normal numbers), round-to-nearest-even, with subnormals and overflow to inf.
// Returns the IEEE bit pattern of the narrow format (1 sign, ebits exponent, mbits mantissa).
inline uint32_t round_double_to_narrow(double x, int ebits, int mbits) {
  const uint32_t sign = std::signbit(x) ? 1u : 0u;
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t exp_all = (1u << ebits) - 1;
  if (std::isnan(x)) return (sign << (ebits + mbits)) | (exp_all << mbits) | (1u << (mbits - 1));
  double a = std::fabs(x);
  if (std::isinf(a)) return (sign << (ebits + mbits)) | (exp_all << mbits);
  if (a == 0.0) return sign << (ebits + mbits);
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int unbiased = e - 1;
  const int emin = 1 - bias;
  if (unbiased < emin) unbiased = emin;  // subnormal: fixed quantum
  const double quantum = std::ldexp(1.0, unbiased - mbits);
  double q = a / quantum;               // exact (power-of-two scaling)
  double r = std::nearbyint(q);         // default rounding mode: nearest-even
  uint64_t m = static_cast<uint64_t>(r);
  // m may have overflowed into the next binade.
  uint32_t biased;
  if (m >= (uint64_t{1} << (mbits + 1))) { m >>= 1; ++unbiased; }
  if (m < (uint64_t{1} << mbits)) biased = 0;  // subnormal
  else biased = static_cast<uint32_t>(unbiased + bias);
  if (biased >= exp_all) return (sign << (ebits + mbits)) | (exp_all << mbits);
  return (sign << (ebits + mbits)) | (biased << mbits) | static_cast<uint32_t>(m & ((uint64_t{1} << mbits) - 1));
}

inline uint16_t double_to_half(double x) { return static_cast<uint16_t>(round_double_to_narrow(x, 5, 10)); }
inline uint16_t double_to_bf16(double x) { return static_cast<uint16_t>(round_double_to_narrow(x, 8, 7)); }
inline double bf16_to_double(uint16_t b) { return static_cast<double>(f32_from_bits(static_cast<uint32_t>(b) << 16)); }
// .ftz: subnormal values become zero of the same sign.
inline float f32_ftz(float f) { return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f; }
inline uint16_t half_ftz(uint16_t h) { return (h & 0x7c00) == 0 ? static_cast<uint16_t>(h & 0x8000) : h; }

// Round-to-nearest-even double -> float is the C++ conversion under the default rounding mode.
inline float double_to_float(double x) { return static_cast<float>(x); }

}  // namespace stc
