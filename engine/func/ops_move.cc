// Data movement and conversion: mov (incl. pack/unpack and special registers), cvt, cvta.
#include <cfenv>
#include <cmath>

#include "decode.h"
#include "exec.h"
#include "memory.h"

namespace stc {

uint64_t special_value(const ExecCtx& c, const Operand& o, int lane) {
  const LaunchState& L = c.L;
  const uint32_t tid = c.w.warp_in_cta * 32 + static_cast<uint32_t>(lane);
  switch (o.sreg) {
    case SReg::Tid: {
      const uint32_t x = tid % L.block[0], y = (tid / L.block[0]) % L.block[1], z = tid / (L.block[0] * L.block[1]);
      return o.comp == 0 ? x : o.comp == 1 ? y : z;
    }
    case SReg::Ntid: return L.block[o.comp];
    case SReg::Ctaid: return c.cta.ctaid[o.comp];
    case SReg::Nctaid: return L.grid[o.comp];
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
        const uint64_t e = r >= 0 ? c.w.regs[static_cast<size_t>(r) * 32 + l] : r == -2 ? a.vec_imm[i] : 0;
        v |= zext(e, part) << (8 * part * i);
      }
      set_reg(c, d.reg, l, v);
    });
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

uint64_t to_float(DType d, double v, Rnd r, bool sat) {
  if (sat) v = std::isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
  switch (d) {
    case DType::F64: return bits_from_f64(v);
    case DType::F32: {
      if (r == Rnd::RZ || r == Rnd::RM || r == Rnd::RP) {
        const int old = std::fegetround();
        std::fesetround(r == Rnd::RZ ? FE_TOWARDZERO : r == Rnd::RM ? FE_DOWNWARD : FE_UPWARD);
        volatile double vv = v;
        const float f = static_cast<float>(vv);
        std::fesetround(old);
        return bits_from_f32(f);
      }
      return bits_from_f32(static_cast<float>(v));
    }
    case DType::F16: return double_to_half(v);
    case DType::BF16: return double_to_bf16(v);
    default: return 0;
  }
}

uint64_t to_int(DType d, const Num& n, Rnd r, bool sat) {
  const int b = dtype_bytes(d);
  const bool s = dtype_is_signed(d);
  if (n.is_float) {
    double v = round_int(n.f, r == Rnd::None ? Rnd::RZI : r);
    if (std::isnan(v)) return 0;
    const double lo = s ? -std::ldexp(1.0, 8 * b - 1) : 0.0;
    const double hi = s ? std::ldexp(1.0, 8 * b - 1) - 1 : std::ldexp(1.0, 8 * b) - 1;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    if (s) return zext(static_cast<uint64_t>(static_cast<int64_t>(v)), b);
    return b == 8 && v >= 9.2e18 ? static_cast<uint64_t>(v) : zext(static_cast<uint64_t>(static_cast<int64_t>(v)), b);
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
  const bool sat = in.flags & F_SAT;
  const bool dfloat = dtype_is_float(d);
  for_lanes(c.mask, [&](int l) {
    const Num n = read_num(s, src_bits(c, in.ops[1], l));
    uint64_t r;
    if (dfloat) {
      double v = n.is_float ? n.f : (dtype_is_signed(s) ? static_cast<double>(n.i) : static_cast<double>(n.u));
      if (n.is_float && (in.rnd == Rnd::RNI || in.rnd == Rnd::RZI || in.rnd == Rnd::RMI || in.rnd == Rnd::RPI))
        v = round_int(v, in.rnd);
      r = to_float(d, v, in.rnd, sat);
    } else {
      r = to_int(d, n, in.rnd, sat);
    }
    set_reg(c, in.ops[0].reg, l, r);
  });
}

// cvt.rn{.relu}.f16x2.f32 / .bf16x2.f32 d, a, b: d = {a -> upper half, b -> lower half}.
void ex_cvt_pack(ExecCtx& c, const Instr& in) {
  const bool bf = in.type == DType::BF16x2;
  const bool relu = in.flags & F_RELU;
  for_lanes(c.mask, [&](int l) {
    double hi = f32_from_bits(src_bits(c, in.ops[1], l)), lo = f32_from_bits(src_bits(c, in.ops[2], l));
    if (relu) { hi = hi < 0 ? 0 : hi; lo = lo < 0 ? 0 : lo; }
    const uint64_t h = bf ? double_to_bf16(hi) : double_to_half(hi);
    const uint64_t w = bf ? double_to_bf16(lo) : double_to_half(lo);
    set_reg(c, in.ops[0].reg, l, (h << 16) | w);
  });
}

// cvta: between generic addresses and state-space addresses (windows defined in memory.h).
void ex_cvta(ExecCtx& c, const Instr& in) {
  const bool to = in.flags & F_TO;
  const uint64_t base = in.space == Space::Shared ? kSharedWindow : in.space == Space::Local ? kLocalWindow : 0;
  const int bytes = dtype_bytes(in.type);
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = src_bits(c, in.ops[1], l);
    set_reg(c, in.ops[0].reg, l, zext(to ? a - base : a + base, bytes));
  });
}

}  // namespace

void decode_mov(Instr& in, const Kernel&) {
  std::vector<DType> types;
  const auto rest = common_mods(in, types);
  if (!rest.empty()) unsupported(in, "modifier ." + rest[0]);
  if (types.size() != 1) throw DecodeError("mov needs one type");
  in.type = types[0];
  need_ops(in, 2);
  if (in.ops[1].kind == OpndKind::Mem || in.ops[1].kind == OpndKind::Label) throw DecodeError("bad mov source");
  if (in.ops[0].kind != OpndKind::Reg && in.ops[0].kind != OpndKind::Vec) throw DecodeError("bad mov destination");
  if (in.ops[0].kind == OpndKind::Vec && !in.ops[0].vec_imm.empty()) throw DecodeError("immediate in a destination");
  imm_as(in.ops[1], in.type);
  in.unit = Unit::INT;
  in.fn = &ex_mov;
}

void decode_cvt(Instr& in, const Kernel&) {
  std::vector<DType> types;
  const auto rest = common_mods(in, types);
  if (!rest.empty()) unsupported(in, "modifier ." + rest[0]);
  if (types.size() != 2) throw DecodeError("cvt needs .dtype.atype");
  in.type = types[0];
  in.type2 = types[1];
  in.unit = (dtype_is_float(in.type) && dtype_is_float(in.type2) && in.type != DType::F64 && in.type2 != DType::F64)
                ? Unit::FP32
                : (in.type == DType::F64 || in.type2 == DType::F64) ? Unit::FP64 : Unit::INT;
  if (in.type == DType::F16x2 || in.type == DType::BF16x2) {
    if (in.type2 != DType::F32) unsupported(in, "packed conversion source");
    need_ops(in, 3);
    in.fn = &ex_cvt_pack;
    return;
  }
  if (in.type == DType::F16x2 || in.type2 == DType::F16x2 || in.type2 == DType::BF16x2 || in.type == DType::TF32 ||
      in.type2 == DType::TF32 || in.type == DType::Pred || in.type2 == DType::Pred)
    unsupported(in, "conversion type");
  need_ops(in, 2);
  imm_as(in.ops[1], in.type2);
  in.fn = &ex_cvt;
}

void decode_cvta(Instr& in, const Kernel&) {
  std::vector<DType> types;
  for (const auto& m : common_mods(in, types)) {
    if (m == "to") in.flags |= F_TO;
    else unsupported(in, "modifier ." + m);
  }
  if (types.size() != 1 || (types[0] != DType::U32 && types[0] != DType::U64)) throw DecodeError("cvta needs .u32 or .u64");
  if (in.space != Space::Global && in.space != Space::Shared && in.space != Space::Local && in.space != Space::Const &&
      in.space != Space::Param)
    throw DecodeError("cvta needs a state space");
  if (in.space == Space::Const || in.space == Space::Param) unsupported(in, "generic addressing of this space");
  in.type = types[0];
  need_ops(in, 2);
  in.unit = Unit::INT;
  in.fn = &ex_cvta;
}

}  // namespace stc
