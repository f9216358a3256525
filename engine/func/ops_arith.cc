// Integer and floating-point arithmetic: add sub addc subc mul mad madc fma div rem abs neg min max copysign.
#include <algorithm>
#include <cfenv>
#include <climits>
#include <cmath>

#include "decode.h"
#include "exec.h"
#include "forms.h"
#include "operands.h"

namespace stc {
namespace {

using I128 = __int128;
using U128 = unsigned __int128;

// The forms of the family (forms.h): types, modifiers, and the target / PTX version they need.
const Form kArithForms[] = {
    {"add", "u16 s16", ""},
    {"add", "u32 u64 s64", "cc"},
    {"add", "s32", "sat|cc"},
    {"add", "u16x2 s16x2", "", 90, 80},
    {"add", "f32", "rn|rz|rm|rp ftz sat"},
    {"add", "f64", "rn|rz|rm|rp"},
    {"add", "f16 f16x2", "rn ftz sat"},
    {"add", "bf16 bf16x2", "rn", 90},
    {"sub", "u16 s16", ""},
    {"sub", "u32 u64 s64", "cc"},
    {"sub", "s32", "sat|cc"},
    {"sub", "f32", "rn|rz|rm|rp ftz sat"},
    {"sub", "f64", "rn|rz|rm|rp"},
    {"sub", "f16 f16x2", "rn ftz sat"},
    {"sub", "bf16 bf16x2", "rn", 90},
    {"addc", "u16 s16", ""},
    {"addc", "u32 u64 s64", "cc"},
    {"addc", "s32", "sat|cc"},
    {"subc", "u16 s16", ""},
    {"subc", "u32 u64 s64", "cc"},
    {"subc", "s32", "sat|cc"},
    {"mul", "u16 u32 s16 s32", "!lo|hi|wide"},
    {"mul", "u64 s64", "!lo|hi"},
    {"mul", "f32", "rn|rz|rm|rp ftz sat"},
    {"mul", "f64", "rn|rz|rm|rp"},
    {"mul", "f16 f16x2", "rn ftz sat"},
    {"mul", "bf16 bf16x2", "rn", 90},
    {"mad", "u16 u32 s16 s32", "!wide"},
    {"mad", "u16 s16", "!lo|hi"},
    {"mad", "u32 u64 s32 s64", "!lo|hi cc"},
    {"mad", "s32", "!hi sat"},
    {"mad", "f32", "!rn|rz|rm|rp ftz sat"},
    {"mad", "f64", "!rn|rz|rm|rp"},
    {"madc", "u16 s16", "!lo|hi"},
    {"madc", "u32 u64 s32 s64", "!lo|hi cc"},
    {"madc", "s32", "!hi sat"},
    {"fma", "f32", "!rn|rz|rm|rp ftz sat"},
    {"fma", "f64", "!rn|rz|rm|rp"},
    {"fma", "f16 f16x2", "!rn ftz sat|relu"},
    {"fma", "bf16 bf16x2", "!rn|rz|rm|rp relu"},
    {"div", "u16 u32 u64 s16 s32 s64", ""},
    {"div", "f32", "!approx|full|rn|rz|rm|rp ftz"},
    {"div", "f64", "!rn|rz|rm|rp"},
    {"rem", "u16 u32 u64 s16 s32 s64", ""},
    {"abs", "s16 s32 s64 bf16 bf16x2 f64", ""},
    {"abs", "f16 f16x2 f32", "ftz"},
    {"neg", "s16 s32 s64 bf16 bf16x2 f64", ""},
    {"neg", "f16 f16x2 f32", "ftz"},
    {"min", "u16 u32 u64 s16 s32 s64 f64", ""},
    {"min", "s32", "relu", 90, 80},
    {"min", "u16x2 s16x2", "", 90, 80},
    {"min", "s16x2", "relu", 90, 80},
    {"min", "f16 f16x2 f32", "ftz NaN"},
    {"min", "f16 f16x2 f32", "ftz NaN !xorsign !abs", 86, 72},
    {"min", "bf16 bf16x2", "NaN"},
    {"min", "bf16 bf16x2", "NaN !xorsign !abs", 86, 72},
    {"max", "u16 u32 u64 s16 s32 s64 f64", ""},
    {"max", "s32", "relu", 90, 80},
    {"max", "u16x2 s16x2", "", 90, 80},
    {"max", "s16x2", "relu", 90, 80},
    {"max", "f16 f16x2 f32", "ftz NaN"},
    {"max", "f16 f16x2 f32", "ftz NaN !xorsign !abs", 86, 72},
    {"max", "bf16 bf16x2", "NaN"},
    {"max", "bf16 bf16x2", "NaN !xorsign !abs", 86, 72},
    {"copysign", "f32 f64", ""},
};

// ---- integers: computed on 64-bit patterns, signedness applied where it matters ------------------
inline int64_t as_signed(uint64_t v, int bytes) { return static_cast<int64_t>(sext(v, bytes)); }

// The condition-code carry flag CC.CF of a lane (bit 0 of the kernel's hidden carry register).
inline uint64_t carry_flag(const ExecCtx& c, int lane) {
  return c.w.reg(c.L.kernel->carry_reg, lane) & 1;
}
inline void set_carry_flag(ExecCtx& c, int lane, uint64_t cf) {
  c.w.set_reg(c.L.kernel->carry_reg, lane, cf & 1);
}

inline int64_t clamp_s32(int64_t v) { return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v; }

// a + b + cin at BYTES width: the result bits and the carry out of the top bit (CC.CF). Subtractions are
// additions of the complement, as on the hardware: sub is a + ~b + 1 and subc is a + ~b + CF, so that CF after
// a subtraction is NOT borrow and subc computes a - b - (1 - CF); a sub.cc / subc.cc / subc chain subtracts
// wide numbers.
template <int BYTES>
inline std::pair<uint64_t, uint64_t> add_carry(uint64_t a, uint64_t b, uint64_t cin) {
  const U128 wide = static_cast<U128>(a) + b + cin;
  return {zext(static_cast<uint64_t>(wide), BYTES), static_cast<uint64_t>(wide >> (8 * BYTES)) & 1};
}

// add / sub / mul.lo / mad.lo without flags on a register and registers or immediates: the address and
// index arithmetic of every kernel, as one lane loop with the operation fixed at compile time. The low
// BYTES bytes of the result do not depend on signedness, so one instantiation serves both.
template <int BYTES, Op O>
void int_plain(ExecCtx& c, const Instr& in) {
  LaneSrc a{}, b{}, cc{};  // plain_int checked that each is a register or an immediate
  lane_src(c, in.ops[1], a);
  lane_src(c, in.ops[2], b);
  const LaneDst d = lane_dst(c, in.ops[0]);
  if constexpr (O == Op::Mad) lane_src(c, in.ops[3], cc);
  if constexpr (BYTES == 4) {
    // A full warp on 32-bit registers and immediates: the low 32 bits of each result depend only on the low
    // 32 bits of the sources, so the lanes are computed as 32-bit words (twice the lanes per vector op).
    if (c.mask == ~0u && d.n && narrow_src(a) && narrow_src(b) && (O != Op::Mad || narrow_src(cc))) {
      if constexpr (O == Op::Add) map_lanes32(d.n, [](uint32_t x, uint32_t y) { return x + y; }, a, b);
      else if constexpr (O == Op::Sub) map_lanes32(d.n, [](uint32_t x, uint32_t y) { return x - y; }, a, b);
      else if constexpr (O == Op::Mul) map_lanes32(d.n, [](uint32_t x, uint32_t y) { return x * y; }, a, b);
      else map_lanes32(d.n, [](uint32_t x, uint32_t y, uint32_t z) { return x * y + z; }, a, b, cc);
      return;
    }
  }
  if constexpr (O == Op::Mad) {
    map_lanes(c.mask, d, [](uint64_t x, uint64_t y, uint64_t z) { return zext(zext(x * y, BYTES) + z, BYTES); },
              a, b, cc);
  } else {
    map_lanes(c.mask, d, [](uint64_t x, uint64_t y) {
      if constexpr (O == Op::Add) return zext(x + y, BYTES);
      else if constexpr (O == Op::Sub) return zext(x - y, BYTES);
      else return zext(x * y, BYTES);
    }, a, b);
  }
}

// mul.wide / mad.wide (16 or 32-bit sources, a result twice as wide) on registers and immediates: the index
// arithmetic's 64-bit byte offsets. The addend of mad.wide is read at the full result width.
template <int BYTES, bool SIGNED, Op O>
void int_wide(ExecCtx& c, const Instr& in) {
  LaneSrc a{}, b{}, cc{};  // plain_int checked that each is a register or an immediate
  lane_src(c, in.ops[1], a);
  lane_src(c, in.ops[2], b);
  const LaneDst d = lane_dst(c, in.ops[0]);
  const auto product = [](uint64_t x, uint64_t y) {
    return SIGNED ? static_cast<uint64_t>(as_signed(zext(x, BYTES), BYTES) * as_signed(zext(y, BYTES), BYTES))
                  : zext(x, BYTES) * zext(y, BYTES);
  };
  if constexpr (O == Op::Mad) {
    lane_src(c, in.ops[3], cc);
    map_lanes(c.mask, d, [&](uint64_t x, uint64_t y, uint64_t z) { return zext(product(x, y) + z, 2 * BYTES); },
              a, b, cc);
  } else {
    map_lanes(c.mask, d, [&](uint64_t x, uint64_t y) { return zext(product(x, y), 2 * BYTES); }, a, b);
  }
}

// min / max without .relu on registers and immediates (tile-edge clamps).
template <int BYTES, bool SIGNED, Op O>
void int_minmax(ExecCtx& c, const Instr& in) {
  LaneSrc a{}, b{};  // plain_int checked that each is a register or an immediate
  lane_src(c, in.ops[1], a);
  lane_src(c, in.ops[2], b);
  map_lanes(c.mask, lane_dst(c, in.ops[0]), [](uint64_t x, uint64_t y) {
    if constexpr (SIGNED) {
      const int64_t sx = as_signed(x, BYTES), sy = as_signed(y, BYTES);
      return zext(static_cast<uint64_t>(O == Op::Min ? std::min(sx, sy) : std::max(sx, sy)), BYTES);
    } else {
      const uint64_t ux = zext(x, BYTES), uy = zext(y, BYTES);
      return O == Op::Min ? std::min(ux, uy) : std::max(ux, uy);
    }
  }, a, b);
}

// Whether an integer instruction may take int_plain (add, sub, mul.lo or mad.lo without other flags),
// int_wide (mul.wide, mad.wide of 16 or 32-bit sources) or int_minmax (min, max without .relu): the
// destination and the first source registers, the other sources registers or immediates (no special
// registers, no negated predicates).
bool plain_int(const Instr& in, int bytes) {
  const bool binary = in.op == Op::Add || in.op == Op::Sub || in.op == Op::Mul || in.op == Op::Min || in.op == Op::Max;
  const size_t n = in.op == Op::Mad ? 4 : binary ? 3 : 0;
  const uint32_t allowed = in.flags == F_WIDE && bytes <= 4 && (in.op == Op::Mul || in.op == Op::Mad)
                               ? static_cast<uint32_t>(F_WIDE) : static_cast<uint32_t>(F_LO);
  if (n == 0 || in.ops.size() != n || (in.flags & ~allowed) != 0) return false;
  for (size_t i = 0; i < n; ++i) {
    const Operand& o = in.ops[i];
    const bool reg = o.kind == OpndKind::Reg && o.reg >= 0 && !o.negate;
    if (!(reg || (i >= 2 && o.kind == OpndKind::Imm))) return false;
  }
  return true;
}

// The general integer instruction, lane by lane (carries, .sat, .hi, special registers, negated predicates:
// what plain_int leaves out).
template <int BYTES, bool SIGNED>
void ex_int(ExecCtx& c, const Instr& in) {
  const Operand& d = in.ops[0];
  const Op op = in.op;
  const uint32_t f = in.flags;
  const bool carry_in = op == Op::Addc || op == Op::Subc || op == Op::Madc;
  const bool sat = f & F_SAT, cc = f & F_CC;
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = zext(src_bits(c, in.ops[1], l), BYTES);
    const uint64_t b = in.ops.size() > 2 ? zext(src_bits(c, in.ops[2], l), BYTES) : 0;
    const uint64_t cin = carry_in ? carry_flag(c, l) : 0;
    const int64_t sa = as_signed(a, BYTES), sb = as_signed(b, BYTES);
    uint64_t r = 0, cout = 0;
    int out_bytes = BYTES;
    switch (op) {
      case Op::Add: case Op::Addc: case Op::Sub: case Op::Subc: {
        const bool minus = op == Op::Sub || op == Op::Subc;
        const uint64_t cadd = op == Op::Sub ? 1 : cin;  // the carry into the addition (of ~b: 1 - borrow)
        std::tie(r, cout) = add_carry<BYTES>(a, minus ? zext(~b, BYTES) : b, cadd);
        if (sat) r = zext(static_cast<uint64_t>(clamp_s32(minus ? sa - sb - (1 - static_cast<int64_t>(cadd))
                                                                : sa + sb + static_cast<int64_t>(cin))), 4);
        break;
      }
      case Op::Mul: case Op::Mad: case Op::Madc: {
        if (f & F_WIDE) {
          out_bytes = 2 * BYTES;
          r = SIGNED ? static_cast<uint64_t>(sa * sb) : a * b;
          if (op != Op::Mul) r += src_bits(c, in.ops[3], l);
          break;
        }
        int64_t hi_signed = 0;
        if (f & F_HI) {
          if (SIGNED) hi_signed = static_cast<int64_t>((static_cast<I128>(sa) * sb) >> (8 * BYTES));
          r = SIGNED ? static_cast<uint64_t>(hi_signed)
                     : static_cast<uint64_t>((static_cast<U128>(a) * b) >> (8 * BYTES));
        } else {
          r = a * b;
        }
        if (op == Op::Mul) break;
        const uint64_t addend = zext(src_bits(c, in.ops[3], l), BYTES);
        if (sat)  // mad.hi.sat.s32 / madc.hi.sat.s32: the exact sum, saturated
          r = zext(static_cast<uint64_t>(clamp_s32(hi_signed + as_signed(addend, 4) + static_cast<int64_t>(cin))), 4);
        else
          std::tie(r, cout) = add_carry<BYTES>(zext(r, BYTES), addend, cin);
        break;
      }
      case Op::Div:
        if (b == 0) r = ~uint64_t{0};
        else if (SIGNED) r = (sb == -1) ? static_cast<uint64_t>(0) - static_cast<uint64_t>(sa) : static_cast<uint64_t>(sa / sb);
        else r = a / b;
        break;
      case Op::Rem:  // by zero: all ones at every width, as the H100 gives (div too)
        if (b == 0) r = ~uint64_t{0};
        else if (SIGNED) r = (sb == -1) ? 0 : static_cast<uint64_t>(sa % sb);
        else r = a % b;
        break;
      case Op::Min: r = SIGNED ? static_cast<uint64_t>(sa < sb ? sa : sb) : (a < b ? a : b); break;
      case Op::Max: r = SIGNED ? static_cast<uint64_t>(sa > sb ? sa : sb) : (a > b ? a : b); break;
      case Op::Abs: r = static_cast<uint64_t>(sa < 0 ? -static_cast<uint64_t>(sa) : static_cast<uint64_t>(sa)); break;
      case Op::Neg: r = static_cast<uint64_t>(0) - a; break;
      default: break;
    }
    if ((f & F_RELU) && as_signed(r, BYTES) < 0) r = 0;  // min/max.relu.s32
    if (cc) set_carry_flag(c, l, cout);
    set_reg(c, d.reg, l, zext(r, out_bytes));
  });
}

// u16x2 / s16x2 (add, min, max): the operation on each 16-bit half; .relu clamps negative halves to 0.
template <bool SIGNED>
void ex_int16x2(ExecCtx& c, const Instr& in) {
  const bool relu = in.flags & F_RELU;
  for_lanes(c.mask, [&](int l) {
    const uint64_t A = src_bits(c, in.ops[1], l), B = src_bits(c, in.ops[2], l);
    uint64_t out = 0;
    for (int h = 0; h < 2; ++h) {
      const uint64_t a = (A >> (16 * h)) & 0xffff, b = (B >> (16 * h)) & 0xffff;
      const int64_t sa = SIGNED ? as_signed(a, 2) : static_cast<int64_t>(a);
      const int64_t sb = SIGNED ? as_signed(b, 2) : static_cast<int64_t>(b);
      int64_t r = in.op == Op::Add ? sa + sb : in.op == Op::Min ? std::min(sa, sb) : std::max(sa, sb);
      if (relu && r < 0) r = 0;
      out |= (static_cast<uint64_t>(r) & 0xffff) << (16 * h);
    }
    set_reg(c, in.ops[0].reg, l, out);
  });
}

// The semantic function of an integer instruction of BYTES-wide type: one with the operation fixed at compile
// time where plain_int holds (decided here, once, not at every execution), else ex_int.
template <int BYTES, bool SIGNED>
ExecFn pick_int_of(const Instr& in) {
  if (!plain_int(in, BYTES)) return &ex_int<BYTES, SIGNED>;
  if constexpr (BYTES <= 4) {
    if (in.flags & F_WIDE)
      return in.op == Op::Mul ? &int_wide<BYTES, SIGNED, Op::Mul> : &int_wide<BYTES, SIGNED, Op::Mad>;
  }
  switch (in.op) {
    case Op::Min: return &int_minmax<BYTES, SIGNED, Op::Min>;
    case Op::Max: return &int_minmax<BYTES, SIGNED, Op::Max>;
    case Op::Add: return &int_plain<BYTES, Op::Add>;
    case Op::Sub: return &int_plain<BYTES, Op::Sub>;
    case Op::Mul: return &int_plain<BYTES, Op::Mul>;
    default: return &int_plain<BYTES, Op::Mad>;
  }
}

ExecFn pick_int(const Instr& in) {
  switch (in.type) {
    case DType::U16: case DType::B16: return pick_int_of<2, false>(in);
    case DType::S16: return pick_int_of<2, true>(in);
    case DType::U32: case DType::B32: return pick_int_of<4, false>(in);
    case DType::S32: return pick_int_of<4, true>(in);
    case DType::U64: case DType::B64: return pick_int_of<8, false>(in);
    case DType::S64: return pick_int_of<8, true>(in);
    case DType::U16x2: return &ex_int16x2<false>;
    case DType::S16x2: return &ex_int16x2<true>;
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
    case Op::Min: case Op::Max: {
      // .abs: of the magnitudes; .xorsign: the sign is the XOR of the operands' signs (not for a NaN result).
      const bool abs = in.flags & F_ABS;
      const V x = abs ? std::fabs(a) : a, y = abs ? std::fabs(b) : b;
      r = in.op == Op::Min ? fmin_ptx(x, y, nanp) : fmax_ptx(x, y, nanp);
      if ((in.flags & F_XORSIGN) && !std::isnan(r)) r = std::copysign(r, std::signbit(a) != std::signbit(b) ? V(-1) : V(1));
      break;
    }
    case Op::Abs: r = std::fabs(a); break;
    case Op::Neg: r = -a; break;
    case Op::Copysign: r = std::copysign(b, a); break;
    default: break;
  }
  if (in.flags & F_SAT) r = !(r > V(0)) ? V(0) : r > V(1) ? V(1) : r;  // NaN and -0 -> +0
  return r;
}

RoundDir round_dir(Rnd r) {
  switch (r) {
    case Rnd::RZ: return RoundDir::Zero;
    case Rnd::RM: return RoundDir::Down;
    case Rnd::RP: return RoundDir::Up;
    default: return RoundDir::NearestEven;
  }
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

// fma.f32 over the lanes of `mask`: d = a * b + c rounded once, NaNs canonical. A libm fmaf call per lane
// cost more than the rest of the lane's work; where the host has the FMA instruction (x86-64 CPUs since
// 2013) the copy compiled for it is used (chosen once at run time, as fragment_simd.cc does), and both
// round the exact result the same way (IEEE fused multiply-add).
[[gnu::always_inline]] inline void fma_f32_lanes_body(uint32_t* d, const uint32_t* a, const uint32_t* b,
                                                      const uint32_t* cc, uint32_t mask) {
  const auto lane = [&](int l) {
    const float r = __builtin_fmaf(f32_from_bits(a[l]), f32_from_bits(b[l]), f32_from_bits(cc[l]));
    d[l] = std::isnan(r) ? kCanonicalNaN32 : bits_from_f32(r);
  };
  if (mask == ~0u) {  // every lane: a plain loop, which the compiler vectorises
    for (int l = 0; l < 32; ++l) lane(l);
  } else {
    for_lanes(mask, lane);
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("fma"))) void fma_f32_lanes_fma(uint32_t* d, const uint32_t* a, const uint32_t* b,
                                                       const uint32_t* cc, uint32_t mask) {
  fma_f32_lanes_body(d, a, b, cc, mask);
}
#endif

void fma_f32_lanes(uint32_t* d, const uint32_t* a, const uint32_t* b, const uint32_t* cc, uint32_t mask) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const bool host_fma = __builtin_cpu_supports("fma");
  if (host_fma) return fma_f32_lanes_fma(d, a, b, cc, mask);
#endif
  fma_f32_lanes_body(d, a, b, cc, mask);
}

// f32 add / sub / mul / fma on plain register operands, without a directed rounding mode, .ftz or .sat:
// the bulk of SIMT GEMM work, as one lane loop with the operation fixed at compile time (the same IEEE
// operation and NaN canonicalisation as the general path below).
template <Op O>
void f32_on_regs(ExecCtx& c, const Instr& in) {
  const uint32_t* a = c.w.col32(in.ops[1].reg);
  const uint32_t* b = c.w.col32(in.ops[2].reg);
  const uint32_t* cc = O == Op::Fma ? c.w.col32(in.ops[3].reg) : nullptr;
  uint32_t* d = c.w.col32(in.ops[0].reg);
  if constexpr (O == Op::Fma) {
    fma_f32_lanes(d, a, b, cc, c.mask);
  } else {
    const auto lane = [&](int l) {
      const float x = f32_from_bits(a[l]), y = f32_from_bits(b[l]);
      float r;
      if constexpr (O == Op::Add) r = x + y;
      else if constexpr (O == Op::Sub) r = x - y;
      else r = x * y;
      d[l] = std::isnan(r) ? kCanonicalNaN32 : bits_from_f32(r);
    };
    if (c.mask == ~0u) {  // every lane: a plain loop, which the compiler vectorises
      for (int l = 0; l < 32; ++l) lane(l);
    } else {
      for_lanes(c.mask, lane);
    }
  }
}

// Whether ex_float<F32> may take f32_on_regs: the rounding is the host's, no .ftz / .sat / other flag
// that changes the result, and every operand is a 32-bit register.
bool plain_f32_on_regs(const Instr& in) {
  if (in.rnd == Rnd::RZ || in.rnd == Rnd::RM || in.rnd == Rnd::RP || (in.flags & (F_FTZ | F_SAT))) return false;
  const size_t n = in.op == Op::Fma || in.op == Op::Mad ? 4 : in.op == Op::Add || in.op == Op::Sub || in.op == Op::Mul ? 3 : 0;
  if (n == 0 || in.ops.size() != n) return false;
  for (const Operand& o : in.ops)
    if (o.kind != OpndKind::Reg || o.negate || o.reg < 0 || (o.reg & kWideSlot)) return false;
  return true;
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
  // div.approx.f32: a times the reciprocal of b, which flushes a subnormal result (|b| > 2^126) to zero.
  // div.full.f32 (full range, within 2 ulp) is computed as the IEEE quotient.
  const bool approx = T == DType::F32 && in.op == Op::Div && (in.flags & F_APPROX);
  if constexpr (T == DType::F32) {
    if (plain_f32_on_regs(in)) {
      switch (in.op) {
        case Op::Add: f32_on_regs<Op::Add>(c, in); return;
        case Op::Sub: f32_on_regs<Op::Sub>(c, in); return;
        case Op::Mul: f32_on_regs<Op::Mul>(c, in); return;
        default: f32_on_regs<Op::Fma>(c, in); return;  // fma, mad
      }
    }
  }
  for_lanes(c.mask, [&](int l) {
    V a = get<T>(c, in.ops[1], l);
    V b = n > 2 ? get<T>(c, in.ops[2], l) : V(0);
    V cc = n > 3 ? get<T>(c, in.ops[3], l) : V(0);
    if constexpr (T == DType::F32) {
      if (ftz) { a = f32_ftz(a); b = f32_ftz(b); cc = f32_ftz(cc); }
    }
    V r;
    if constexpr (T == DType::F32) r = approx ? a * f32_ftz(1.0f / b) : float_op<V>(in, a, b, cc);
    else r = float_op<V>(in, a, b, cc);
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
// .ftz (f16) flushes subnormal inputs and results, .relu clamps negative results (and -0) to +0.
template <DType H>
uint64_t half_op(const Instr& in, uint16_t a, uint16_t b, uint16_t c) {
  const bool ftz = H == DType::F16 && (in.flags & F_FTZ);
  if (ftz) { a = half_ftz(a); b = half_ftz(b); c = half_ftz(c); }
  const double x = TT<H>::get(a), y = TT<H>::get(b), z = TT<H>::get(c);
  double r = (in.op == Op::Fma || in.op == Op::Mad) ? fma_to_odd(x, y, z) : float_op<double>(in, x, y, z);
  if ((in.op == Op::Fma || in.op == Op::Mad) && (in.flags & F_SAT)) r = !(r > 0) ? 0.0 : r > 1 ? 1.0 : r;
  if (in.flags & F_RELU) r = relu(r);
  if (std::isnan(r)) return kCanonicalNaN16;  // the hardware's f16 / bf16 NaN
  const bool directed = in.rnd == Rnd::RZ || in.rnd == Rnd::RM || in.rnd == Rnd::RP;  // bf16 fma only
  uint16_t out = static_cast<uint16_t>(directed ? round_double_to_format(r, 8, 7, round_dir(in.rnd)) : TT<H>::put(r));
  if (ftz) out = half_ftz(out);
  return out;
}

// neg / abs of a 16-bit float: a sign-bit operation, except that a NaN gives the canonical NaN; .ftz (f16)
// flushes a subnormal operand to zero first.
template <DType H>
uint16_t half_sign_op(const Instr& in, uint16_t a) {
  const Op op = in.op;
  if (H == DType::F16 && (in.flags & F_FTZ)) a = half_ftz(a);
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
      set_reg(c, in.ops[0].reg, l, half_sign_op<T>(in, a));
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
      if (in.op == Op::Neg || in.op == Op::Abs) r = half_sign_op<H>(in, static_cast<uint16_t>(ah));
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

// The type of the double-width result of .wide.
DType wider(DType t) {
  switch (t) {
    case DType::U16: return DType::U32;
    case DType::S16: return DType::S32;
    case DType::U32: return DType::U64;
    default: return DType::S64;
  }
}

size_t arity(Op op) {
  switch (op) {
    case Op::Abs: case Op::Neg: return 2;
    case Op::Mad: case Op::Madc: case Op::Fma: return 4;
    default: return 3;
  }
}

}  // namespace

void decode_arith(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kArithForms));
  std::vector<DType> types;
  common_mods(in, types);
  in.type = types[0];
  need_ops(in, arity(in.op));
  const DType wide = (in.flags & F_WIDE) ? wider(in.type) : in.type;
  check_operand(in, k, 0, wide, OK_REG, Fit::Exact, true);
  for (size_t i = 1; i < in.ops.size(); ++i) check_operand(in, k, i, i == 3 ? wide : in.type, OK_SRC);
  in.unit = unit_for(in.type);
  if (dtype_is_float(in.type)) {
    in.fn = pick_float(in.type);
    imms_as(in, dtype_bytes(in.type) == 4 && in.type != DType::F32 ? DType::B32 : in.type);
  } else {
    in.fn = pick_int(in);
    if (in.op == Op::Div || in.op == Op::Rem) {
      in.unit = Unit::SFU;
      // 32-bit: ptxas's MUFU sequence, timed by units.int_div (64-bit ones keep the SFU unit's timing)
      if (dtype_bytes(in.type) <= 4) in.traits.op_class = op_class_id(in.op == Op::Div ? "units.int_div" : "units.int_rem");
    }
  }
  // The carry flag lives in the kernel's hidden carry register: written by .cc, read by addc / subc / madc.
  const bool carry_in = in.op == Op::Addc || in.op == Op::Subc || in.op == Op::Madc;
  if (carry_in || (in.flags & F_CC)) {
    if (k.carry_reg < 0) throw DecodeError("internal: no carry register for '" + in.opcode + "'");
    if (carry_in) in.srcs.push_back(k.carry_reg);
    if (in.flags & F_CC) in.dsts.push_back(k.carry_reg);
  }
  if (!in.fn) unsupported(in, std::string("type .") + dtype_name(in.type));
}

}  // namespace stc
