// Data movement and conversion: mov (incl. pack/unpack and special registers), cvt, cvta.
#include <cmath>

#include "decode.h"
#include "exec.h"
#include "forms.h"
#include "operands.h"
#include "memory.h"

namespace stc {

uint64_t special_value(const ExecCtx& c, const Operand& o, int lane) {
  const LaunchState& L = c.L;
  const uint32_t tid = c.w.warp_in_cta * 32 + static_cast<uint32_t>(lane);
  switch (o.sreg) {
    case SReg::Tid: {
      const uint32_t x = tid % L.block[0], y = (tid / L.block[0]) % L.block[1], z = tid / (L.block[0] * L.block[1]);
      return o.comp == 0 ? x : o.comp == 1 ? y : o.comp == 2 ? z : 0;
    }
    case SReg::Ntid: return o.comp < 3 ? L.block[o.comp] : 0;  // .w of the .v4 registers reads 0
    case SReg::Ctaid: return o.comp < 3 ? c.cta.ctaid[o.comp] : 0;
    case SReg::Nctaid: return o.comp < 3 ? L.grid[o.comp] : 0;
    case SReg::Laneid: return static_cast<uint64_t>(lane);
    case SReg::Warpid: return c.w.warp_in_cta;
    case SReg::Nwarpid: return 64;
    case SReg::Smid: return c.smid;
    case SReg::Nsmid: return L.num_sms;
    case SReg::Gridid: return 0;
    case SReg::Clock: return L.clock & 0xffffffffu;
    case SReg::Clock64: case SReg::Globaltimer: return L.clock;
    case SReg::LanemaskEq: return 1u << lane;
    case SReg::LanemaskLt: return (1u << lane) - 1;
    case SReg::LanemaskLe: return lane == 31 ? 0xffffffffu : (2u << lane) - 1;
    case SReg::LanemaskGt: return lane == 31 ? 0u : ~((2u << lane) - 1);
    case SReg::LanemaskGe: return ~((1u << lane) - 1);
    case SReg::DynamicSmemSize: return L.dynamic_shared;
    case SReg::TotalSmemSize: return L.shared_bytes;
  }
  return 0;
}

namespace {

// The forms of the family (forms.h). cvt's type key is "dst.src".
const Form kMoveForms[] = {
    {"mov", "pred %b %i f32 f64", ""},
    // integer <-> integer; .sat where the value can be out of the destination's range
    {"cvt", "%i8.%i8", ""},
    {"cvt", "u8.s16 u16.s16 u32.s16 u64.s16 s8.s16 u8.s32 u16.s32 u32.s32 u64.s32 s8.s32 s16.s32 u8.s64 u16.s64 "
            "u32.s64 u64.s64 s8.s64 s16.s64 s32.s64 u8.s8 u16.s8 u32.s8 u64.s8 u8.u16 s8.u16 s16.u16 u8.u32 u16.u32 "
            "s8.u32 s16.u32 s32.u32 u8.u64 u16.u64 u32.u64 s8.u64 s16.u64 s32.u64 s64.u64 s8.u8",
     "sat"},
    // float -> float: exact widening, rounding of narrowing, integral rounding to the same type
    {"cvt", "f16.f16 f64.f16 f64.f64", "sat"},
    {"cvt", "f32.f16 f32.f32 f64.f32", "ftz sat"},
    {"cvt", "f32.bf16", "rn|rz|rm|rp", 80, 71},
    {"cvt", "f32.bf16", "rn|rz|rm|rp !ftz", 90, 78},
    {"cvt", "bf16.f16 f16.bf16 bf16.bf16 f64.bf16", "", 90, 78},
    {"cvt", "f16.bf16 f64.bf16 bf16.f64 bf16.f16", "!rn|rz|rm|rp", 90, 78},
    {"cvt", "bf16.f32", "!rn|rz|rm|rp ftz relu"},
    {"cvt", "f16.f32", "!rn|rz|rm|rp ftz sat|relu"},
    {"cvt", "f16.f64", "!rn|rz|rm|rp sat"},
    {"cvt", "f32.f64", "!rn|rz|rm|rp ftz sat"},
    {"cvt", "f16x2.f32 bf16x2.f32", "!rn|rz relu"},
    {"cvt", "f16.f16 f64.f64", "!rni|rzi|rmi|rpi sat"},
    {"cvt", "f32.f32", "!rni|rzi|rmi|rpi ftz sat"},
    {"cvt", "bf16.bf16", "!rni|rzi|rmi|rpi", 90, 78},
    // float -> integer (rounded to an integral value) and integer -> float
    {"cvt", "%i8.f16 %i8.f64", "!rni|rzi|rmi|rpi sat"},
    {"cvt", "%i8.f32", "!rni|rzi|rmi|rpi ftz sat"},
    {"cvt", "%i.bf16", "!rni|rzi|rmi|rpi", 90, 78},
    {"cvt", "f16.%i8 f64.%i8", "!rn|rz|rm|rp sat"},
    {"cvt", "f32.%i8", "!rn|rz|rm|rp ftz sat"},
    {"cvt", "bf16.%i", "!rn|rz|rm|rp", 90, 78},
    {"cvta", "u32 u64", "!global|shared|shared::cta|local|const to"},
    {"cvta", "u32 u64", "!param to", 70, 77},  // ptxas 13: sm_70+ and PTX 7.7
};

// The bit type of `bytes` bytes (None for other widths).
DType bit_type(int bytes) {
  switch (bytes) {
    case 2: return DType::B16;
    case 4: return DType::B32;
    case 8: return DType::B64;
    default: return DType::None;
  }
}

// mov d, a  |  mov.b32 {a, b}, r (unpack)  |  mov.b32 r, {a, b} (pack)
void ex_mov(ExecCtx& c, const Instr& in) {
  const Operand& d = in.ops[0];
  const Operand& a = in.ops[1];
  const int bytes = dtype_bytes(in.type);
  if (d.kind == OpndKind::Vec) {
    const int part = bytes / static_cast<int>(d.vec.size());
    for_lanes(c.mask, [&](int l) {
      const uint64_t v = src_bits(c, a, l);
      for (size_t i = 0; i < d.vec.size(); ++i) set_reg(c, d.vec[i], l, zext(v >> (8 * part * i), part));
    });
    return;
  }
  if (a.kind == OpndKind::Vec) {
    const int part = bytes / static_cast<int>(a.vec.size());
    for_lanes(c.mask, [&](int l) {
      uint64_t v = 0;
      for (size_t i = 0; i < a.vec.size(); ++i) {
        const int32_t r = a.vec[i];
        const uint64_t e = r >= 0 ? c.w.reg(r, l) : r == -2 ? a.vec_imm[i] : 0;
        v |= zext(e, part) << (8 * part * i);
      }
      set_reg(c, d.reg, l, v);
    });
    return;
  }
  LaneSrc s;
  if (const LaneDst dst = lane_dst(c, d); dst && lane_src(c, a, s)) {  // a register or an immediate
    map_lanes(c.mask, dst, [keep = zext(~uint64_t{0}, bytes)](uint64_t x) { return x & keep; }, s);
    return;
  }
  for_lanes(c.mask, [&](int l) { set_reg(c, d.reg, l, zext(src_bits(c, a, l), bytes)); });
}

// ---- cvt -----------------------------------------------------------------------------------------
struct Num {
  bool is_float;
  double f;
  int64_t i;      // signed view
  uint64_t u;     // unsigned view
  bool negative;  // for integers
};

Num read_num(DType t, uint64_t bits) {
  Num n{};
  switch (t) {
    case DType::F16: n.is_float = true; n.f = half_to_double(static_cast<uint16_t>(bits)); break;
    case DType::BF16: n.is_float = true; n.f = bf16_to_double(static_cast<uint16_t>(bits)); break;
    case DType::F32: n.is_float = true; n.f = f32_from_bits(bits); break;
    case DType::F64: n.is_float = true; n.f = f64_from_bits(bits); break;
    default: {
      const int b = dtype_bytes(t);
      n.u = zext(bits, b);
      n.i = dtype_is_signed(t) ? static_cast<int64_t>(sext(bits, b)) : static_cast<int64_t>(n.u);
      n.negative = dtype_is_signed(t) && n.i < 0;
    }
  }
  return n;
}

double round_int(double v, Rnd r) {
  switch (r) {
    case Rnd::RNI: return std::nearbyint(v);
    case Rnd::RZI: return std::trunc(v);
    case Rnd::RMI: return std::floor(v);
    case Rnd::RPI: return std::ceil(v);
    default: return v;
  }
}

RoundDir dir_of(Rnd r) {
  switch (r) {
    case Rnd::RZ: return RoundDir::Zero;
    case Rnd::RM: return RoundDir::Down;
    case Rnd::RP: return RoundDir::Up;
    default: return RoundDir::NearestEven;
  }
}

// Exponent and explicit mantissa bits of a floating-point type.
void float_format(DType t, int& ebits, int& mbits) {
  switch (t) {
    case DType::F16: ebits = 5; mbits = 10; break;
    case DType::BF16: ebits = 8; mbits = 7; break;
    case DType::F32: ebits = 8; mbits = 23; break;
    default: ebits = 11; mbits = 52; break;
  }
}

bool is_int_rounding(Rnd r) { return r == Rnd::RNI || r == Rnd::RZI || r == Rnd::RMI || r == Rnd::RPI; }

// cvt to a floating-point type: rounded once from the exact source value in the instruction's direction
// (.rn when none is given, as for the exact widening conversions); integer rounding (.rni ...) for
// float -> float rounds to an integral value; .sat clamps to [0, 1] (NaN -> 0); .ftz flushes f32 subnormals;
// .relu (f32 -> f16 / bf16) clamps negative values to +0.
uint64_t to_float(DType d, DType s, const Num& n, Rnd r, bool sat, bool ftz, bool relu) {
  int eb, mb;
  float_format(d, eb, mb);
  uint64_t out;
  if (n.is_float) {
    double v = n.f;
    if (ftz && s == DType::F32) v = f32_ftz(static_cast<float>(v));
    if (is_int_rounding(r)) v = round_int(v, r);
    if (sat) v = !(v > 0) ? 0.0 : v > 1 ? 1.0 : v;  // NaN and -0 -> +0
    if (relu) v = stc::relu(v);                         // .relu: negative and -0 -> +0 (NaN stays NaN)
    if (std::isnan(v) && d != DType::F64) {
      // From f64 the NaN keeps its sign and the top of its payload (quieted); from f16 / f32 the result
      // is the canonical NaN (as on an H100; bf16 -> f32 keeps the payload: see ex_cvt).
      if (s != DType::F64) return d == DType::F32 ? kCanonicalNaN32 : kCanonicalNaN16;
      const uint64_t b = bits_from_f64(v);
      return (b >> 63 << (eb + mb)) | (((uint64_t{1} << eb) - 1) << mb) | (uint64_t{1} << (mb - 1)) |
             ((b & ((uint64_t{1} << 52) - 1)) >> (52 - mb));
    }
    out = d == DType::F64 ? bits_from_f64(v) : round_double_to_format(v, eb, mb, dir_of(r));
  } else {
    const bool neg = n.negative;
    const uint64_t mag = neg ? uint64_t{0} - static_cast<uint64_t>(n.i) : n.u;
    out = round_to_format(neg, mag, 0, eb, mb, dir_of(r));
    if (sat && (neg || mag > 1)) out = neg ? 0 : round_to_format(false, 1, 0, eb, mb, RoundDir::Zero);
  }
  if (ftz && d == DType::F32) out = bits_from_f32(f32_ftz(f32_from_bits(out)));
  return out;
}

// cvt to an integer type. From floating point: rounded to an integral value (.rni/.rzi/.rmi/.rpi; .rzi when
// none is given), then saturated to the destination's range (NaN: see below). Between integers: truncation or
// sign / zero extension, saturated with .sat.
uint64_t to_int(DType d, DType src, const Num& n, Rnd r, bool sat) {
  const int b = dtype_bytes(d);
  const bool s = dtype_is_signed(d);
  if (n.is_float) {
    const Rnd ir = r == Rnd::RN ? Rnd::RNI : r == Rnd::RZ ? Rnd::RZI : r == Rnd::RM ? Rnd::RMI
                 : r == Rnd::RP ? Rnd::RPI : is_int_rounding(r) ? r : Rnd::RZI;
    const double v = round_int(n.f, ir);
    const int bits = 8 * b;
    // NaN: 0 from f16 / f32 to integers of up to 32 bits; the 64-bit and f64 conversions of the hardware
    // give the integer indefinite (only the sign bit set) instead.
    if (std::isnan(v)) return (src == DType::F64 || bits == 64) ? zext(uint64_t{1} << (bits - 1), b) : 0;
    if (s) {
      const double lim = std::ldexp(1.0, bits - 1);  // exactly representable bound
      if (v >= lim) return zext((uint64_t{1} << (bits - 1)) - 1, b);
      if (v < -lim) return zext(uint64_t{1} << (bits - 1), b);
      return zext(static_cast<uint64_t>(static_cast<int64_t>(v)), b);
    }
    if (!(v > 0)) return 0;
    if (v >= std::ldexp(1.0, bits)) return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return static_cast<uint64_t>(v);
  }
  if (sat) {
    if (s) {
      const int64_t lo = b == 8 ? INT64_MIN : -(int64_t{1} << (8 * b - 1));
      const int64_t hi = b == 8 ? INT64_MAX : (int64_t{1} << (8 * b - 1)) - 1;
      if (!n.negative && n.u > static_cast<uint64_t>(hi)) return zext(static_cast<uint64_t>(hi), b);
      if (n.negative && n.i < lo) return zext(static_cast<uint64_t>(lo), b);
      return zext(static_cast<uint64_t>(n.i), b);
    }
    if (n.negative) return 0;
    const uint64_t hi = b == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * b)) - 1;
    return n.u > hi ? hi : n.u;
  }
  return zext(static_cast<uint64_t>(n.i), b);
}

void ex_cvt(ExecCtx& c, const Instr& in) {
  const DType d = in.type, s = in.type2;
  const bool sat = in.flags & F_SAT, ftz = in.flags & F_FTZ, relu = in.flags & F_RELU;
  const bool dfloat = dtype_is_float(d);
  for_lanes(c.mask, [&](int l) {
    Num n = read_num(s, src_bits(c, in.ops[1], l));
    if (ftz && s == DType::F32 && !dfloat) n.f = f32_ftz(static_cast<float>(n.f));
    uint64_t r = dfloat ? to_float(d, s, n, in.rnd, sat, ftz, relu) : to_int(d, s, n, in.rnd, sat);
    // bf16 -> f32 moves the bits up on the H100, so a NaN keeps its payload (not with .ftz: canonical NaN).
    if (s == DType::BF16 && d == DType::F32 && !sat && !relu && !ftz && std::isnan(n.f))
      r = (src_bits(c, in.ops[1], l) & 0xffffu) << 16;
    // A register wider than the destination type receives the value sign-extended for a signed type
    // (`cvt.s8.s32 %rs1, %r1` fills the 16-bit %rs1), zero-extended otherwise.
    if (!dfloat && dtype_is_signed(d)) r = sext(r, dtype_bytes(d));
    set_reg(c, in.ops[0].reg, l, r);
  });
}

// cvt between integer types without .sat (the address arithmetic's cvt.u64.u32 / cvt.s64.s32): what ex_cvt
// computes through to_int (truncation, sign or zero extension), with the widths resolved once per
// instruction. Special registers (read per lane) take ex_cvt.
void ex_cvt_int(ExecCtx& c, const Instr& in) {
  const LaneDst d = lane_dst(c, in.ops[0]);
  LaneSrc a;
  if (!d || !lane_src(c, in.ops[1], a)) return ex_cvt(c, in);
  const int sb = dtype_bytes(in.type2), db = dtype_bytes(in.type);
  const bool ss = dtype_is_signed(in.type2), ds = dtype_is_signed(in.type);
  if (c.mask == ~0u && d.w && a.n && sb == 4 && db == 8) {  // a 32-bit index widened to 64 bits (an offset)
    if (ss) for (int l = 0; l < 32; ++l) d.w[l] = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(a.n[l])));
    else for (int l = 0; l < 32; ++l) d.w[l] = a.n[l];
    return;
  }
  map_lanes(c.mask, d, [=](uint64_t x) {
    const uint64_t r = zext(ss ? sext(x, sb) : zext(x, sb), db);
    return ds ? sext(r, db) : r;
  }, a);
}

// cvt.rn{.relu}.f16x2.f32 / .bf16x2.f32 d, a, b: d = {a -> upper half, b -> lower half}.
void ex_cvt_pack(ExecCtx& c, const Instr& in) {
  const bool bf = in.type == DType::BF16x2;
  const bool relu = in.flags & F_RELU;
  for_lanes(c.mask, [&](int l) {
    double hi = f32_from_bits(src_bits(c, in.ops[1], l)), lo = f32_from_bits(src_bits(c, in.ops[2], l));
    if (relu) { hi = stc::relu(hi); lo = stc::relu(lo); }
    const RoundDir dir = dir_of(in.rnd);
    const uint64_t h = std::isnan(hi) ? kCanonicalNaN16 : round_double_to_format(hi, bf ? 8 : 5, bf ? 7 : 10, dir);
    const uint64_t w = std::isnan(lo) ? kCanonicalNaN16 : round_double_to_format(lo, bf ? 8 : 5, bf ? 7 : 10, dir);
    set_reg(c, in.ops[0].reg, l, (h << 16) | w);
  });
}

// cvta: between generic addresses and state-space addresses (windows defined in memory.h).
void ex_cvta(ExecCtx& c, const Instr& in) {
  const bool to = in.flags & F_TO;
  const uint64_t base = in.space == Space::Shared ? kSharedWindow : in.space == Space::Local ? kLocalWindow
                      : in.space == Space::Const ? kConstWindow : in.space == Space::Param ? kParamWindow : 0;
  const int bytes = dtype_bytes(in.type);
  const uint64_t delta = to ? 0 - base : base;  // added modulo 2^64: a - base or a + base
  LaneSrc a;
  if (const LaneDst d = lane_dst(c, in.ops[0]); d && lane_src(c, in.ops[1], a)) {  // operands resolved once
    map_lanes(c.mask, d, [=](uint64_t x) { return zext(x + delta, bytes); }, a);
    return;
  }
  for_lanes(c.mask, [&](int l) { set_reg(c, in.ops[0].reg, l, zext(src_bits(c, in.ops[1], l) + delta, bytes)); });
}

}  // namespace

void decode_mov(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kMoveForms));
  std::vector<DType> types;
  common_mods(in, types);
  in.type = types[0];
  need_ops(in, 2);
  if (in.ops[0].kind == OpndKind::Vec || in.ops[1].kind == OpndKind::Vec) {  // unpack d -> {a, b} / pack {a, b} -> d
    const bool unpack = in.ops[0].kind == OpndKind::Vec;
    const Operand& v = in.ops[unpack ? 0 : 1];
    const DType part = bit_type(dtype_bytes(in.type) / static_cast<int>(v.vec.size()));
    if (part == DType::None || dtype_bytes(part) * static_cast<int>(v.vec.size()) != dtype_bytes(in.type))
      throw DecodeError("'" + in.opcode + "' packs or unpacks " + std::to_string(v.vec.size()) + " parts that do not make up ." +
                        dtype_name(in.type));
    check_operand(in, k, 0, unpack ? part : in.type, unpack ? OK_VEC : OK_REG, Fit::Exact, true);
    check_operand(in, k, 1, unpack ? in.type : part, unpack ? OK_REG : OK_VEC | OK_IMM);
  } else {
    check_operand(in, k, 0, in.type, OK_REG, Fit::Exact, true);
    check_operand(in, k, 1, in.type, OK_SRC | OK_SREG | OK_SYM | OK_NEG);
  }
  imm_as(in.ops[1], in.type);
  in.unit = Unit::INT;
  in.fn = &ex_mov;
}

void decode_cvt(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kMoveForms));
  std::vector<DType> types;
  common_mods(in, types);
  in.type = types[0];
  in.type2 = types[1];
  in.unit = (dtype_is_float(in.type) && dtype_is_float(in.type2) && in.type != DType::F64 && in.type2 != DType::F64)
                ? Unit::FP32
                : (in.type == DType::F64 || in.type2 == DType::F64) ? Unit::FP64 : Unit::INT;
  if (in.type == DType::F16x2 || in.type == DType::BF16x2) {
    need_ops(in, 3);
    check_operand(in, k, 0, in.type, OK_REG, Fit::Exact, true);
    check_operand(in, k, 1, in.type2, OK_SRC);
    check_operand(in, k, 2, in.type2, OK_SRC);
    in.fn = &ex_cvt_pack;
    return;
  }
  need_ops(in, 2);
  check_operand(in, k, 0, in.type, OK_REG, Fit::Relaxed, true);
  const bool ints = !dtype_is_float(in.type) && !dtype_is_float(in.type2);  // special registers: int -> int only
  check_operand(in, k, 1, in.type2, OK_SRC | (ints ? uint32_t{OK_SREG} : 0u), Fit::Relaxed);
  imm_as(in.ops[1], in.type2);
  in.fn = ints && !(in.flags & F_SAT) ? &ex_cvt_int : &ex_cvt;
}

void decode_cvta(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kMoveForms));
  std::vector<DType> types;
  for (const auto& m : common_mods(in, types))
    if (m == "to") in.flags |= F_TO;
  if ((in.flags & F_TO) && in.mods[0] != "to") throw DecodeError("'" + in.opcode + "': .to comes first (cvta.to.space)");
  in.type = types[0];
  if (in.type == DType::U32) throw DecodeError("'" + in.opcode + "': 32-bit generic addresses are not supported");
  need_ops(in, 2);
  check_operand(in, k, 0, in.type, OK_REG, Fit::Exact, true);
  check_operand(in, k, 1, in.type, (in.flags & F_TO) ? OK_SRC : OK_SRC | OK_SYM);
  in.unit = Unit::INT;
  in.fn = &ex_cvta;
}

}  // namespace stc
