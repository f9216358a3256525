// Comparison and selection: setp set selp slct.
#include <cmath>
#include <type_traits>

#include "decode.h"
#include "exec.h"
#include "forms.h"
#include "operands.h"

namespace stc {
namespace {

// The forms of the family (forms.h). Comparisons by source type: .eq/.ne on bits, ordered ones on integers,
// .lo/.ls/.hi/.hs on unsigned integers, every one (incl. the unordered ones) on floating point.
#define STC_FCMP "!eq|ne|lt|le|gt|ge|equ|neu|ltu|leu|gtu|geu|num|nan"
const Form kCmpForms[] = {
    {"setp", "%b", "!eq|ne and|or|xor"},
    {"setp", "%i", "!eq|ne|lt|le|gt|ge and|or|xor"},
    {"setp", "%u", "!lo|ls|hi|hs and|or|xor"},
    {"setp", "f32 f16 f16x2", STC_FCMP " ftz and|or|xor"},
    {"setp", "f64", STC_FCMP " and|or|xor"},
    {"setp", "bf16 bf16x2", STC_FCMP " and|or|xor", 90, 78},
    {"set", "u32.%b s32.%b f32.%b f16.%b", "!eq|ne and|or|xor"},
    {"set", "u32.%i s32.%i f32.%i f16.%i", "!eq|ne|lt|le|gt|ge and|or|xor"},
    {"set", "u32.%u s32.%u f32.%u f16.%u", "!lo|ls|hi|hs and|or|xor"},
    {"set", "f16.f16 f16.f32 f16x2.f16x2 f32.f32 s16.f16 s32.f16 s32.f16x2 s32.f32 u16.f16 u32.f16 u32.f16x2 u32.f32",
     STC_FCMP " ftz and|or|xor"},
    {"set", "f16.f64 f32.f64 s32.f64 u32.f64", STC_FCMP " and|or|xor"},
    {"set", "bf16.%b", "!eq|ne and|or|xor", 90, 78},
    {"set", "bf16.%i", "!eq|ne|lt|le|gt|ge and|or|xor", 90, 78},
    {"set", "bf16.%u", "!lo|ls|hi|hs and|or|xor", 90, 78},
    {"set", "bf16.f16 bf16.bf16 bf16.f32 bf16.f64 bf16x2.bf16x2 s16.bf16 s32.bf16 s32.bf16x2 u16.bf16 u32.bf16 "
            "u32.bf16x2",
     STC_FCMP " and|or|xor", 90, 78},
    {"selp", "%b %i f32 f64", ""},
    {"slct", "%b.s32 %i.s32 f32.s32 f64.s32", ""},
    {"slct", "%b.f32 %i.f32 f32.f32 f64.f32", "ftz"},
};
#undef STC_FCMP

// Operand counts and types of setp (p or p|q), set, selp, slct.
void check_cmp_operands(const Instr& in, const Kernel& k) {
  const DType d = in.type, s = in.type2, p = DType::Pred;
  switch (in.op) {
    case Op::Selp:
      need_ops(in, 4);
      check_operand(in, k, 0, d, OK_REG, Fit::Exact, true);
      for (size_t i = 1; i < 3; ++i) check_operand(in, k, i, d, OK_SRC);
      check_operand(in, k, 3, p, OK_SRC | OK_NEG);
      return;
    case Op::Slct:
      need_ops(in, 4);
      check_operand(in, k, 0, d, OK_REG, Fit::Exact, true);
      for (size_t i = 1; i < 4; ++i) check_operand(in, k, i, i == 3 ? s : d, OK_SRC);
      return;
    default:
      need_ops(in, in.bop == BoolOp::None ? 3 : 4);
      if (in.op == Op::Setp && in.ops[0].kind == OpndKind::Vec && in.ops[0].vec.size() != 2)
        throw DecodeError("setp writes p or p|q");
      check_operand(in, k, 0, in.op == Op::Setp ? p : d, in.op == Op::Setp ? OK_REG | OK_VEC | OK_SINK : OK_REG,
                    Fit::Exact, true);
      check_operand(in, k, 1, s, OK_SRC);
      check_operand(in, k, 2, s, OK_SRC);
      if (in.ops.size() > 3) check_operand(in, k, 3, p, OK_SRC | OK_NEG);
  }
}

template <class V>
bool compare(Cmp cmp, V a, V b) {
  const bool nan = std::isnan(static_cast<double>(a)) || std::isnan(static_cast<double>(b));
  switch (cmp) {
    case Cmp::EQ: return !nan && a == b;
    case Cmp::NE: return !nan && a != b;
    case Cmp::LT: case Cmp::LO: return !nan && a < b;
    case Cmp::LE: case Cmp::LS: return !nan && a <= b;
    case Cmp::GT: case Cmp::HI: return !nan && a > b;
    case Cmp::GE: case Cmp::HS: return !nan && a >= b;
    case Cmp::EQU: return nan || a == b;
    case Cmp::NEU: return nan || a != b;
    case Cmp::LTU: return nan || a < b;
    case Cmp::LEU: return nan || a <= b;
    case Cmp::GTU: return nan || a > b;
    case Cmp::GEU: return nan || a >= b;
    case Cmp::NUM: return !nan;
    case Cmp::NAN_: return nan;
    default: return false;
  }
}

bool combine(BoolOp op, bool t, bool c) {
  switch (op) {
    case BoolOp::And: return t && c;
    case BoolOp::Or: return t || c;
    case BoolOp::Xor: return t != c;
    default: return t;
  }
}

// Comparison operand: .ftz flushes f32 (and f16) subnormal inputs to sign-preserving zero.
template <DType T>
inline typename TT<T>::V cmp_get(const ExecCtx& c, const Instr& in, size_t i, int lane) {
  if constexpr (T == DType::F32) {
    const float v = get<T>(c, in.ops[i], lane);
    return (in.flags & F_FTZ) ? f32_ftz(v) : v;
  } else if constexpr (T == DType::F16) {
    const uint16_t h = static_cast<uint16_t>(src_bits(c, in.ops[i], lane));
    return TT<T>::get((in.flags & F_FTZ) ? half_ftz(h) : h);
  } else {
    return get<T>(c, in.ops[i], lane);
  }
}

// setp of two integer operands into one predicate, without a combining predicate: the comparison chosen once
// and the operands resolved once (integers are never NaN, so each is the plain C++ comparison).
template <DType T>
bool setp_int_fast(ExecCtx& c, const Instr& in) {
  LaneSrc a, b;
  const LaneDst p = lane_dst(c, in.ops[0]);
  if (!p || in.ops.size() != 3 || !lane_src(c, in.ops[1], a) || !lane_src(c, in.ops[2], b)) return false;
  using V = typename TT<T>::V;
  const auto run = [&](auto cmp) {
    if constexpr (sizeof(V) <= 4) {
      // A full warp on 32-bit lanes (a type of up to 32 bits reads only the low 32 bits of its sources):
      // twice the lanes per vector op
      if (c.mask == ~0u && p.n && narrow_src(a) && narrow_src(b)) {
        map_lanes32(p.n, [&](uint32_t x, uint32_t y) -> uint32_t { return cmp(TT<T>::get(x), TT<T>::get(y)); }, a, b);
        return true;
      }
    }
    map_lanes(c.mask, p, [&](uint64_t x, uint64_t y) -> uint64_t { return cmp(TT<T>::get(x), TT<T>::get(y)); }, a, b);
    return true;
  };
  switch (in.cmp) {
    case Cmp::EQ: return run([](V x, V y) { return x == y; });
    case Cmp::NE: return run([](V x, V y) { return x != y; });
    case Cmp::LT: case Cmp::LO: return run([](V x, V y) { return x < y; });
    case Cmp::LE: case Cmp::LS: return run([](V x, V y) { return x <= y; });
    case Cmp::GT: case Cmp::HI: return run([](V x, V y) { return x > y; });
    case Cmp::GE: case Cmp::HS: return run([](V x, V y) { return x >= y; });
    default: return false;
  }
}

template <DType T>
void ex_setp(ExecCtx& c, const Instr& in) {
  if constexpr (std::is_integral_v<typename TT<T>::V> && T != DType::Pred) {
    if (setp_int_fast<T>(c, in)) return;
  }
  const Operand& d = in.ops[0];
  const int32_t p = d.kind == OpndKind::Vec ? d.vec[0] : d.reg;
  const int32_t q = d.kind == OpndKind::Vec ? d.vec[1] : -1;
  const bool has_c = in.ops.size() > 3;
  for_lanes(c.mask, [&](int l) {
    const bool t = compare(in.cmp, cmp_get<T>(c, in, 1, l), cmp_get<T>(c, in, 2, l));
    const bool cv = has_c && src_bits(c, in.ops[3], l) != 0;
    set_reg(c, p, l, has_c ? combine(in.bop, t, cv) : t);
    if (q >= 0) set_reg(c, q, l, has_c ? combine(in.bop, !t, cv) : !t);
  });
}

// What set writes for a true result, by destination type (false is always 0).
uint64_t set_true(DType d) {
  switch (d) {
    case DType::F32: return 0x3f800000u;
    case DType::F16: case DType::F16x2: return 0x3c00;
    case DType::BF16: case DType::BF16x2: return 0x3f80;
    case DType::U16: case DType::S16: return 0xffff;
    default: return 0xffffffffu;
  }
}

template <DType T>
void ex_set(ExecCtx& c, const Instr& in) {
  const bool has_c = in.ops.size() > 3;
  const uint64_t one = set_true(in.type);
  for_lanes(c.mask, [&](int l) {
    bool t = compare(in.cmp, cmp_get<T>(c, in, 1, l), cmp_get<T>(c, in, 2, l));
    if (has_c) t = combine(in.bop, t, src_bits(c, in.ops[3], l) != 0);
    set_reg(c, in.ops[0].reg, l, t ? one : 0);
  });
}

// set / setp on packed f16x2 / bf16x2: one comparison per 16-bit half. setp writes the low half's result
// to p and the high half's to q (`setp.lt.f16x2 p|q, a, b`); set packs one result per half (1.0 in the
// half type for .f16x2 / .bf16x2 destinations, 0xffff for .u32 / .s32).
template <DType H>
void ex_set2(ExecCtx& c, const Instr& in) {
  const Operand& d = in.ops[0];
  const bool setp = in.op == Op::Setp, has_c = in.ops.size() > 3;
  const uint64_t one = set_true(in.type) & 0xffff;
  const bool ftz = H == DType::F16 && (in.flags & F_FTZ);
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = src_bits(c, in.ops[1], l), b = src_bits(c, in.ops[2], l);
    const bool cv = has_c && src_bits(c, in.ops[3], l) != 0;
    bool t[2];
    for (int h = 0; h < 2; ++h) {
      uint16_t ha = static_cast<uint16_t>(a >> (16 * h)), hb = static_cast<uint16_t>(b >> (16 * h));
      if (ftz) { ha = half_ftz(ha); hb = half_ftz(hb); }
      t[h] = compare(in.cmp, TT<H>::get(ha), TT<H>::get(hb));
      if (has_c) t[h] = combine(in.bop, t[h], cv);
    }
    if (setp) {
      set_reg(c, d.kind == OpndKind::Vec ? d.vec[0] : d.reg, l, t[0]);
      if (d.kind == OpndKind::Vec) set_reg(c, d.vec[1], l, t[1]);
    } else {
      set_reg(c, d.reg, l, (t[0] ? one : 0) | (t[1] ? one << 16 : 0));
    }
  });
}

void ex_selp(ExecCtx& c, const Instr& in) {
  LaneSrc a, b, p;
  if (const LaneDst d = lane_dst(c, in.ops[0]);
      d && lane_src(c, in.ops[1], a) && lane_src(c, in.ops[2], b) && lane_src(c, in.ops[3], p)) {
    map_lanes(c.mask, d, [](uint64_t x, uint64_t y, uint64_t q) { return q ? x : y; }, a, b, p);
    return;
  }
  for_lanes(c.mask, [&](int l) {
    set_reg(c, in.ops[0].reg, l, src_bits(c, in.ops[3], l) ? src_bits(c, in.ops[1], l) : src_bits(c, in.ops[2], l));
  });
}

template <DType T>
void ex_slct(ExecCtx& c, const Instr& in) {
  for_lanes(c.mask, [&](int l) {
    const bool ge = cmp_get<T>(c, in, 3, l) >= 0;  // NaN selects b
    set_reg(c, in.ops[0].reg, l, ge ? src_bits(c, in.ops[1], l) : src_bits(c, in.ops[2], l));
  });
}

#define STC_PICK_CMP(FN, t)                                     \
  switch (t) {                                                  \
    case DType::B16: case DType::U16: return &FN<DType::U16>;   \
    case DType::S16: return &FN<DType::S16>;                    \
    case DType::B32: case DType::U32: return &FN<DType::U32>;   \
    case DType::S32: return &FN<DType::S32>;                    \
    case DType::B64: case DType::U64: return &FN<DType::U64>;   \
    case DType::S64: return &FN<DType::S64>;                    \
    case DType::F32: return &FN<DType::F32>;                    \
    case DType::F64: return &FN<DType::F64>;                    \
    case DType::F16: return &FN<DType::F16>;                    \
    case DType::BF16: return &FN<DType::BF16>;                  \
    default: return nullptr;                                    \
  }

ExecFn pick_setp(DType t) { STC_PICK_CMP(ex_setp, t) }
ExecFn pick_set(DType t) { STC_PICK_CMP(ex_set, t) }
#undef STC_PICK_CMP

}  // namespace

void decode_cmp(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kCmpForms));
  std::vector<DType> types;
  common_mods(in, types);
  in.type = types[0];
  in.type2 = types.back();
  const bool pair = in.type2 == DType::F16x2 || in.type2 == DType::BF16x2;
  check_cmp_operands(in, k);
  switch (in.op) {
    case Op::Selp:
      imms_as(in, in.type);
      in.fn = &ex_selp;
      in.unit = Unit::INT;
      return;
    case Op::Slct:
      imms_as(in, in.type, 1);
      imm_as(in.ops[3], in.type2);
      in.fn = in.type2 == DType::F32 ? &ex_slct<DType::F32> : &ex_slct<DType::S32>;
      return;
    case Op::Setp:
      if (pair && in.ops.size() > 0 && in.ops[0].kind != OpndKind::Vec) throw DecodeError("setp on a packed pair needs p|q");
      in.fn = pick_setp(in.type2);
      break;
    default:
      in.fn = pick_set(in.type2);
  }
  imm_as(in.ops[1], in.type2);
  imm_as(in.ops[2], in.type2);
  if (pair) in.fn = in.type2 == DType::F16x2 ? &ex_set2<DType::F16> : &ex_set2<DType::BF16>;
  in.unit = unit_for(in.type2) == Unit::FP16 ? Unit::FP16 : unit_for(in.type2) == Unit::FP64 ? Unit::FP64 : Unit::INT;
}

}  // namespace stc
