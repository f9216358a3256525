// Integer and floating-point arithmetic: add sub mul mad fma div rem abs neg min max copysign.
#include <cfenv>
#include <climits>
#include <cmath>

#include "decode.h"
#include "exec.h"

namespace stc {
namespace {

using I128 = __int128;
using U128 = unsigned __int128;

// ---- integers: computed on 64-bit patterns, signedness applied where it matters ------------------
inline int64_t as_signed(uint64_t v, int bytes) { return static_cast<int64_t>(sext(v, bytes)); }

template <int BYTES, bool SIGNED>
void ex_int(ExecCtx& c, const Instr& in) {
  const Operand& d = in.ops[0];
  const Op op = in.op;
  const uint32_t f = in.flags;
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = zext(src_bits(c, in.ops[1], l), BYTES);
    const uint64_t b = in.ops.size() > 2 ? zext(src_bits(c, in.ops[2], l), BYTES) : 0;
    const int64_t sa = as_signed(a, BYTES), sb = as_signed(b, BYTES);
    uint64_t r = 0;
    int out_bytes = BYTES;
    switch (op) {
      case Op::Add:
      case Op::Sub:
        if ((f & F_SAT) && BYTES == 4) {  // decode allows .sat on s32 only
          const int64_t v = op == Op::Add ? sa + sb : sa - sb;
          r = static_cast<uint64_t>(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
        } else {
          r = op == Op::Add ? a + b : a - b;
        }
        break;
      case Op::Mul:
      case Op::Mad: {
        if (f & F_WIDE) {
          out_bytes = 2 * BYTES;
          r = SIGNED ? static_cast<uint64_t>(sa * sb) : a * b;
        } else if (f & F_HI) {
          if (SIGNED) r = static_cast<uint64_t>((static_cast<I128>(sa) * sb) >> (8 * BYTES));
          else r = static_cast<uint64_t>((static_cast<U128>(a) * b) >> (8 * BYTES));
        } else {
          r = a * b;
        }
        if (op == Op::Mad) r += src_bits(c, in.ops[3], l);
        break;
      }
      case Op::Div:
        if (b == 0) r = ~uint64_t{0};
        else if (SIGNED) r = (sb == -1) ? static_cast<uint64_t>(0) - static_cast<uint64_t>(sa) : static_cast<uint64_t>(sa / sb);
        else r = a / b;
        break;
      case Op::Rem:
        if (b == 0) r = a;
        else if (SIGNED) r = (sb == -1) ? 0 : static_cast<uint64_t>(sa % sb);
        else r = a % b;
        break;
      case Op::Min: r = SIGNED ? static_cast<uint64_t>(sa < sb ? sa : sb) : (a < b ? a : b); break;
      case Op::Max: r = SIGNED ? static_cast<uint64_t>(sa > sb ? sa : sb) : (a > b ? a : b); break;
      case Op::Abs: r = static_cast<uint64_t>(sa < 0 ? -static_cast<uint64_t>(sa) : static_cast<uint64_t>(sa)); break;
      case Op::Neg: r = static_cast<uint64_t>(0) - a; break;
      default: break;
    }
    set_reg(c, d.reg, l, zext(r, out_bytes));
  });
}

ExecFn pick_int(DType t) {
  switch (t) {
    case DType::U16: case DType::B16: return &ex_int<2, false>;
    case DType::S16: return &ex_int<2, true>;
    case DType::U32: case DType::B32: return &ex_int<4, false>;
    case DType::S32: return &ex_int<4, true>;
    case DType::U64: case DType::B64: return &ex_int<8, false>;
    case DType::S64: return &ex_int<8, true>;
    default: return nullptr;
  }
}

// ---- floating point ---------------------------------------------------------------------------------
template <class V>
V fmin_ptx(V a, V b, bool nan_prop) {
  if (std::isnan(a) || std::isnan(b)) return nan_prop ? static_cast<V>(NAN) : (std::isnan(a) ? b : a);
  return (a < b || (a == b && std::signbit(a))) ? a : b;
}
template <class V>
V fmax_ptx(V a, V b, bool nan_prop) {
  if (std::isnan(a) || std::isnan(b)) return nan_prop ? static_cast<V>(NAN) : (std::isnan(a) ? b : a);
  return (a > b || (a == b && !std::signbit(a))) ? a : b;
}

template <class V>
V float_op(const Instr& in, V a, V b, V cc) {
  const bool nanp = in.flags & F_NAN;
  V r{};
  switch (in.op) {
    case Op::Add: r = a + b; break;
    case Op::Sub: r = a - b; break;
    case Op::Mul: r = a * b; break;
    case Op::Fma: case Op::Mad: r = std::fma(a, b, cc); break;
    case Op::Div: r = a / b; break;
    case Op::Min: r = fmin_ptx(a, b, nanp); break;
    case Op::Max: r = fmax_ptx(a, b, nanp); break;
    case Op::Abs: r = std::fabs(a); break;
    case Op::Neg: r = -a; break;
    case Op::Copysign: r = std::copysign(b, a); break;
    default: break;
  }
  if (in.flags & F_SAT) r = !(r > V(0)) ? V(0) : r > V(1) ? V(1) : r;  // NaN and -0 -> +0
  return r;
}

int fe_mode(Rnd r) {
  switch (r) {
    case Rnd::RZ: return FE_TOWARDZERO;
    case Rnd::RM: return FE_DOWNWARD;
    case Rnd::RP: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

// The NaN an f64 operation returns, as an H100 does: a NaN operand is propagated, quieted (the addend of fma
// first, then the operands in order; neg and abs leave a NaN's sign alone); NaN from numbers (inf - inf,
// 0 / 0, sqrt(-1), ...) is the default NaN 0xfff8000000000000.
uint64_t f64_nan_result(Op op, const ExecCtx& c, const Instr& in, int lane, size_t n) {
  constexpr uint64_t kQuiet = uint64_t{1} << 51, kDefault = 0xfff8000000000000ull;
  const auto nan_at = [&](size_t i) -> uint64_t {
    if (i >= n) return 0;
    const uint64_t v = src_bits(c, in.ops[i], lane);
    return std::isnan(f64_from_bits(v)) ? v | kQuiet : 0;
  };
  if (op == Op::Fma || op == Op::Mad) {
    if (const uint64_t v = nan_at(3)) return v;
  }
  for (size_t i = 1; i < std::min<size_t>(n, 3); ++i)
    if (const uint64_t v = nan_at(i)) return v;
  return kDefault;
}

// f32 / f64: the host computes with the same IEEE semantics; directed rounding via fenv.
template <DType T>
void ex_float(ExecCtx& c, const Instr& in) {
  using V = typename TT<T>::V;
  const size_t n = in.ops.size();
  const bool directed = in.rnd == Rnd::RZ || in.rnd == Rnd::RM || in.rnd == Rnd::RP;
  const int old = directed ? std::fegetround() : 0;
  if (directed) std::fesetround(fe_mode(in.rnd));
  const bool ftz = T == DType::F32 && (in.flags & F_FTZ);  // .ftz: subnormal inputs and results -> 0
  for_lanes(c.mask, [&](int l) {
    V a = get<T>(c, in.ops[1], l);
    V b = n > 2 ? get<T>(c, in.ops[2], l) : V(0);
    V cc = n > 3 ? get<T>(c, in.ops[3], l) : V(0);
    if constexpr (T == DType::F32) {
      if (ftz) { a = f32_ftz(a); b = f32_ftz(b); cc = f32_ftz(cc); }
    }
    V r = float_op<V>(in, a, b, cc);
    uint64_t bits = TT<T>::put(r);
    if constexpr (T == DType::F32) {
      if (ftz) bits = TT<T>::put(f32_ftz(r));
      if (std::isnan(r) && in.op != Op::Copysign) bits = kCanonicalNaN32;  // the hardware's f32 NaN
    } else {
      if (std::isnan(r) && in.op != Op::Copysign && in.op != Op::Min && in.op != Op::Max)
        bits = f64_nan_result(in.op, c, in, l, n);
    }
    set_reg(c, in.ops[0].reg, l, bits);
  });
  if (directed) std::fesetround(old);
}

// a * b + c for 16-bit float operands, in double and rounded to odd: a * b is exact (at most 22 significant
// bits) and the sum's rounding error (TwoSum) decides the last bit, so that the one rounding to the 16-bit
// format that follows is the correct rounding of the exact value (no double rounding).
inline double fma_to_odd(double a, double b, double c) {
  const double p = a * b;
  double s = p + c;
  if (!std::isfinite(s)) return s;
  const double bv = s - p;
  const double err = (p - (s - bv)) + (c - bv);
  if (err != 0 && (bits_from_f64(s) & 1) == 0) s = std::nextafter(s, err > 0 ? INFINITY : -INFINITY);
  return s;
}

// One f16 / bf16 operation on exact double operands (bit patterns a, b, c), rounded once to the format;
// .ftz (f16) flushes subnormal inputs and results, .relu clamps negative results to +0.
template <DType H>
uint64_t half_op(const Instr& in, uint16_t a, uint16_t b, uint16_t c) {
  const bool ftz = H == DType::F16 && (in.flags & F_FTZ);
  if (ftz) { a = half_ftz(a); b = half_ftz(b); c = half_ftz(c); }
  const double x = TT<H>::get(a), y = TT<H>::get(b), z = TT<H>::get(c);
  double r = (in.op == Op::Fma || in.op == Op::Mad) ? fma_to_odd(x, y, z) : float_op<double>(in, x, y, z);
  if ((in.op == Op::Fma || in.op == Op::Mad) && (in.flags & F_SAT)) r = !(r > 0) ? 0.0 : r > 1 ? 1.0 : r;
  if ((in.flags & F_RELU) && r < 0) r = 0.0;
  if (std::isnan(r)) return kCanonicalNaN16;  // the hardware's f16 / bf16 NaN
  uint16_t out = static_cast<uint16_t>(TT<H>::put(r));
  if (ftz) out = half_ftz(out);
  return out;
}

// neg / abs of a 16-bit float: a sign-bit operation, except that a NaN gives the canonical NaN.
template <DType H>
uint16_t half_sign_op(Op op, uint16_t a) {
  const bool nan = H == DType::F16 ? (a & 0x7fff) > 0x7c00 : (a & 0x7fff) > 0x7f80;
  if (nan) return kCanonicalNaN16;
  return static_cast<uint16_t>(op == Op::Neg ? a ^ 0x8000u : a & 0x7fffu);
}

// f16 / bf16 scalars: computed exactly in double, rounded once to the narrow type.
template <DType T>
void ex_half(ExecCtx& c, const Instr& in) {
  const size_t n = in.ops.size();
  for_lanes(c.mask, [&](int l) {
    const uint16_t a = static_cast<uint16_t>(src_bits(c, in.ops[1], l));
    const uint16_t b = n > 2 ? static_cast<uint16_t>(src_bits(c, in.ops[2], l)) : 0;
    const uint16_t cc = n > 3 ? static_cast<uint16_t>(src_bits(c, in.ops[3], l)) : 0;
    if (in.op == Op::Neg || in.op == Op::Abs) {  // sign-bit operations; a NaN becomes the canonical NaN
      set_reg(c, in.ops[0].reg, l, half_sign_op<T>(in.op, a));
      return;
    }
    set_reg(c, in.ops[0].reg, l, half_op<T>(in, a, b, cc));
  });
}

// f16x2 / bf16x2: the scalar operation on each 16-bit half.
template <DType H>
void ex_half2(ExecCtx& c, const Instr& in) {
  const size_t n = in.ops.size();
  for_lanes(c.mask, [&](int l) {
    const uint64_t A = src_bits(c, in.ops[1], l);
    const uint64_t B = n > 2 ? src_bits(c, in.ops[2], l) : 0;
    const uint64_t C = n > 3 ? src_bits(c, in.ops[3], l) : 0;
    uint64_t out = 0;
    for (int h = 0; h < 2; ++h) {
      const int sh = 16 * h;
      const uint64_t ah = (A >> sh) & 0xffff;
      uint64_t r;
      if (in.op == Op::Neg || in.op == Op::Abs) r = half_sign_op<H>(in.op, static_cast<uint16_t>(ah));
      else
        r = half_op<H>(in, static_cast<uint16_t>(ah), static_cast<uint16_t>(B >> sh), static_cast<uint16_t>(C >> sh));
      out |= (r & 0xffff) << sh;
    }
    set_reg(c, in.ops[0].reg, l, out);
  });
}

ExecFn pick_float(DType t) {
  switch (t) {
    case DType::F32: return &ex_float<DType::F32>;
    case DType::F64: return &ex_float<DType::F64>;
    case DType::F16: return &ex_half<DType::F16>;
    case DType::BF16: return &ex_half<DType::BF16>;
    case DType::F16x2: return &ex_half2<DType::F16>;
    case DType::BF16x2: return &ex_half2<DType::BF16>;
    default: return nullptr;
  }
}

size_t arity(Op op) {
  switch (op) {
    case Op::Abs: case Op::Neg: return 2;
    case Op::Mad: case Op::Fma: return 4;
    default: return 3;
  }
}

}  // namespace

void decode_arith(Instr& in, const Kernel&) {
  std::vector<DType> types;
  const auto rest = common_mods(in, types);
  if (!rest.empty()) unsupported(in, "modifier ." + rest[0]);
  if (types.size() != 1) throw DecodeError("'" + in.opcode + "' needs exactly one type");
  in.type = types[0];
  need_ops(in, arity(in.op));
  if (in.ops[0].kind != OpndKind::Reg) throw DecodeError("destination must be a register");
  const bool is_float = dtype_is_float(in.type);
  in.unit = unit_for(in.type);
  if (is_float) {
    if (in.flags & (F_WIDE | F_HI)) unsupported(in, "wide/hi on a floating-point type");
    if (in.op == Op::Rem) unsupported(in, "floating-point rem");
    in.fn = pick_float(in.type);
    imms_as(in, dtype_bytes(in.type) == 4 && in.type != DType::F32 ? DType::B32 : in.type);
  } else {
    if (in.op == Op::Fma || in.op == Op::Copysign) unsupported(in, "integer type");
    if ((in.op == Op::Mul || in.op == Op::Mad) && !(in.flags & (F_WIDE | F_HI | F_LO)))
      throw DecodeError("integer mul/mad needs .lo, .hi or .wide");
    if ((in.flags & F_WIDE) && dtype_bytes(in.type) > 4) unsupported(in, ".wide on a 64-bit type");
    if ((in.flags & F_SAT) && in.type != DType::S32) unsupported(in, ".sat on a type other than s32");
    in.fn = pick_int(in.type);
    if (in.op == Op::Div || in.op == Op::Rem) in.unit = Unit::SFU;
  }
  if (!in.fn) unsupported(in, std::string("type .") + dtype_name(in.type));
}

}  // namespace stc
