// Logic, shifts and bit manipulation: and or xor not cnot shl shr lop3 prmt shf bfe bfi brev clz popc
// testp, and the special-function unit ops rcp sqrt rsqrt sin cos ex2 lg2 tanh.
#include <algorithm>
#include <cfenv>
#include <cmath>

#include "decode.h"
#include "exec.h"
#include "forms.h"
#include "operands.h"

namespace stc {
namespace {

// The forms of the families (forms.h).
const Form kLogicForms[] = {
    {"and", "pred b16 b32 b64", ""},
    {"or", "pred b16 b32 b64", ""},
    {"xor", "pred b16 b32 b64", ""},
    {"not", "pred b16 b32 b64", ""},
    {"cnot", "b16 b32 b64", ""},
    {"shl", "b16 b32 b64", ""},
    {"shr", "b16 b32 b64 u16 u32 u64 s16 s32 s64", ""},
};
const Form kBitsForms[] = {
    {"lop3", "b32", ""},
    {"prmt", "b32", "f4e|b4e|rc8|ecl|ecr|rc16"},
    {"shf", "b32", "!l|r !wrap|clamp"},
    {"bfe", "u32 u64 s32 s64", ""},
    {"bfi", "b32 b64", ""},
    {"brev", "b32 b64", ""},
    {"clz", "b32 b64", ""},
    {"popc", "b32 b64", ""},
    {"testp", "f32 f64", "!finite|infinite|number|notanumber|normal|subnormal"},
};
const Form kSfuForms[] = {
    {"rcp", "f32", "!approx|rn|rz|rm|rp ftz"},
    {"rcp", "f64", "!rn|rz|rm|rp ftz"},
    {"rcp", "f64", "!approx !ftz"},
    {"sqrt", "f32", "!approx|rn|rz|rm|rp ftz"},
    {"sqrt", "f64", "!rn|rz|rm|rp"},
    {"rsqrt", "f32 f64", "!approx ftz"},
    {"sin", "f32", "!approx ftz"},
    {"cos", "f32", "!approx ftz"},
    {"lg2", "f32", "!approx ftz"},
    {"ex2", "f32", "!approx ftz"},
    {"ex2", "f16 f16x2", "!approx"},
    {"ex2", "bf16 bf16x2", "!approx !ftz", 90, 78},
    {"tanh", "f32 f16 f16x2", "!approx"},
    {"tanh", "bf16 bf16x2", "!approx", 90, 78},
};

template <int BYTES>
void ex_logic(ExecCtx& c, const Instr& in) {
  const Op op = in.op;
  LaneSrc a, b;
  const LaneDst d = lane_dst(c, in.ops[0]);
  if (d && in.ops.size() == 3 && lane_src(c, in.ops[1], a) && lane_src(c, in.ops[2], b) &&
      (op == Op::And || op == Op::Or || op == Op::Xor)) {  // the common case, operands resolved once
    if (op == Op::And) map_lanes(c.mask, d, [](uint64_t x, uint64_t y) { return zext(x & y, BYTES); }, a, b);
    else if (op == Op::Or) map_lanes(c.mask, d, [](uint64_t x, uint64_t y) { return zext(x | y, BYTES); }, a, b);
    else map_lanes(c.mask, d, [](uint64_t x, uint64_t y) { return zext(x ^ y, BYTES); }, a, b);
    return;
  }
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = src_bits(c, in.ops[1], l);
    const uint64_t b = in.ops.size() > 2 ? src_bits(c, in.ops[2], l) : 0;
    uint64_t r = 0;
    switch (op) {
      case Op::And: r = a & b; break;
      case Op::Or: r = a | b; break;
      case Op::Xor: r = a ^ b; break;
      case Op::Not: r = ~a; break;
      case Op::Cnot: r = zext(a, BYTES) == 0; break;
      default: break;
    }
    set_reg(c, in.ops[0].reg, l, zext(r, BYTES));
  });
}

template <int BYTES, bool SIGNED>
void ex_shift(ExecCtx& c, const Instr& in) {
  const auto shl = [](uint64_t a, uint64_t sbits) {
    const uint32_t s = static_cast<uint32_t>(sbits);
    return s >= 8 * BYTES ? 0 : zext(zext(a, BYTES) << s, BYTES);
  };
  const auto shr = [](uint64_t a, uint64_t sbits) {
    const uint32_t s = static_cast<uint32_t>(sbits);
    if constexpr (SIGNED) {
      const int64_t v = static_cast<int64_t>(sext(a, BYTES));
      return zext(static_cast<uint64_t>(v >> (s >= 8 * BYTES ? 8 * BYTES - 1 : s)), BYTES);
    } else {
      return s >= 8 * BYTES ? 0 : zext(a, BYTES) >> s;
    }
  };
  const bool left = in.op == Op::Shl;
  LaneSrc av, sv;
  const LaneDst d = lane_dst(c, in.ops[0]);
  if (d && lane_src(c, in.ops[1], av) && lane_src(c, in.ops[2], sv)) {  // operands resolved once
    if (sv.mask == 0) {  // an immediate amount: one shift count for every lane (a vector shift)
      const uint64_t s = *sv.p;
      if (left) map_lanes(c.mask, d, [&](uint64_t a) { return shl(a, s); }, av);
      else map_lanes(c.mask, d, [&](uint64_t a) { return shr(a, s); }, av);
    } else if (left) map_lanes(c.mask, d, shl, av, sv);
    else map_lanes(c.mask, d, shr, av, sv);
    return;
  }
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = src_bits(c, in.ops[1], l), s = src_bits(c, in.ops[2], l);
    set_reg(c, in.ops[0].reg, l, left ? shl(a, s) : shr(a, s));
  });
}

template <int BYTES>
ExecFn pick_shift(bool is_signed) { return is_signed ? &ex_shift<BYTES, true> : &ex_shift<BYTES, false>; }

void ex_pred_logic(ExecCtx& c, const Instr& in) {
  LaneSrc a, b;
  const LaneDst d = lane_dst(c, in.ops[0]);
  if (d && in.ops.size() == 3 && lane_src(c, in.ops[1], a) && lane_src(c, in.ops[2], b) &&
      (in.op == Op::And || in.op == Op::Or || in.op == Op::Xor)) {  // the common case, operands resolved once
    // (branch-free forms of && and ||: they vectorize)
    if (c.mask == ~0u && d.n && a.n && b.n) {  // predicate registers, a full warp: on 32-bit lanes
      uint32_t x[32], y[32];
      for (int l = 0; l < 32; ++l) {
        x[l] = a.n[l] != 0;
        y[l] = b.n[l] != 0;
      }
      if (in.op == Op::And) for (int l = 0; l < 32; ++l) d.n[l] = x[l] & y[l];
      else if (in.op == Op::Or) for (int l = 0; l < 32; ++l) d.n[l] = x[l] | y[l];
      else for (int l = 0; l < 32; ++l) d.n[l] = x[l] ^ y[l];
      return;
    }
    if (in.op == Op::And) map_lanes(c.mask, d, [](uint64_t x, uint64_t y) -> uint64_t { return (x != 0) & (y != 0); }, a, b);
    else if (in.op == Op::Or) map_lanes(c.mask, d, [](uint64_t x, uint64_t y) -> uint64_t { return (x | y) != 0; }, a, b);
    else map_lanes(c.mask, d, [](uint64_t x, uint64_t y) -> uint64_t { return (x != 0) != (y != 0); }, a, b);
    return;
  }
  for_lanes(c.mask, [&](int l) {
    const bool a = src_bits(c, in.ops[1], l) != 0;
    const bool b = in.ops.size() > 2 && src_bits(c, in.ops[2], l) != 0;
    bool r = false;
    switch (in.op) {
      case Op::And: r = a && b; break;
      case Op::Or: r = a || b; break;
      case Op::Xor: r = a != b; break;
      case Op::Not: r = !a; break;
      default: break;
    }
    set_reg(c, in.ops[0].reg, l, r);
  });
}

void ex_lop3(ExecCtx& c, const Instr& in) {
  const uint32_t lut = static_cast<uint32_t>(in.ops[4].imm);
  for_lanes(c.mask, [&](int l) {
    const uint32_t a = static_cast<uint32_t>(src_bits(c, in.ops[1], l));
    const uint32_t b = static_cast<uint32_t>(src_bits(c, in.ops[2], l));
    const uint32_t cc = static_cast<uint32_t>(src_bits(c, in.ops[3], l));
    uint32_t r = 0;
    for (int i = 0; i < 8; ++i) {
      if (!((lut >> i) & 1)) continue;
      const uint32_t ma = (i & 4) ? a : ~a, mb = (i & 2) ? b : ~b, mc = (i & 1) ? cc : ~cc;
      r |= ma & mb & mc;
    }
    set_reg(c, in.ops[0].reg, l, r);
  });
}

void ex_prmt(ExecCtx& c, const Instr& in) {
  const int mode = in.sub;  // 0 default, 1 f4e, 2 b4e, 3 rc8, 4 ecl, 5 ecr, 6 rc16
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = src_bits(c, in.ops[1], l) & 0xffffffffu, b = src_bits(c, in.ops[2], l) & 0xffffffffu;
    const uint32_t sel = static_cast<uint32_t>(src_bits(c, in.ops[3], l));
    const uint64_t x = a | (b << 32);
    auto byte = [&](int i) { return static_cast<uint32_t>((x >> (8 * i)) & 0xff); };
    uint32_t r = 0;
    if (mode == 0) {
      for (int i = 0; i < 4; ++i) {
        const uint32_t s = (sel >> (4 * i)) & 0xf;
        uint32_t v = byte(s & 7);
        if (s & 8) v = (v & 0x80) ? 0xff : 0;
        r |= v << (8 * i);
      }
    } else {
      static const uint8_t tab[6][4][4] = {
          {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},    // f4e
          {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},    // b4e
          {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},    // rc8
          {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},    // ecl
          {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},    // ecr
          {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}}};   // rc16
      const uint32_t s = sel & 3;
      for (int i = 0; i < 4; ++i) r |= byte(tab[mode - 1][s][i]) << (8 * i);
    }
    set_reg(c, in.ops[0].reg, l, r);
  });
}

void ex_shf(ExecCtx& c, const Instr& in) {
  const bool left = in.flags & F_SHIFT_L, clamp = in.flags & F_CLAMP;
  for_lanes(c.mask, [&](int l) {
    const uint64_t lo = src_bits(c, in.ops[1], l) & 0xffffffffu, hi = src_bits(c, in.ops[2], l) & 0xffffffffu;
    uint32_t n = static_cast<uint32_t>(src_bits(c, in.ops[3], l));
    n = clamp ? (n > 32 ? 32 : n) : (n & 31);
    const uint64_t x = lo | (hi << 32);
    const uint32_t r = left ? static_cast<uint32_t>((x << n) >> 32) : static_cast<uint32_t>(x >> n);
    set_reg(c, in.ops[0].reg, l, r);
  });
}

template <int BYTES, bool SIGNED>
void ex_bfe(ExecCtx& c, const Instr& in) {
  const int bits = 8 * BYTES;
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = zext(src_bits(c, in.ops[1], l), BYTES);
    const uint32_t pos = static_cast<uint32_t>(src_bits(c, in.ops[2], l)) & 0xff;
    const uint32_t len = static_cast<uint32_t>(src_bits(c, in.ops[3], l)) & 0xff;
    uint64_t r = 0;
    const bool sbit = SIGNED && (len == 0 ? false : ((a >> std::min<uint32_t>(pos + len - 1, bits - 1)) & 1));
    for (int i = 0; i < bits; ++i) {
      uint64_t bit;
      if (static_cast<uint32_t>(i) < len && pos + i <= static_cast<uint32_t>(bits - 1)) bit = (a >> (pos + i)) & 1;
      else bit = SIGNED ? sbit : 0;
      r |= bit << i;
    }
    set_reg(c, in.ops[0].reg, l, zext(r, BYTES));
  });
}

template <int BYTES>
void ex_bfi(ExecCtx& c, const Instr& in) {
  const int bits = 8 * BYTES;
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = src_bits(c, in.ops[1], l), b = zext(src_bits(c, in.ops[2], l), BYTES);
    const uint32_t pos = static_cast<uint32_t>(src_bits(c, in.ops[3], l)) & 0xff;
    const uint32_t len = static_cast<uint32_t>(src_bits(c, in.ops[4], l)) & 0xff;
    uint64_t r = b;
    for (uint32_t i = 0; i < len && pos + i < static_cast<uint32_t>(bits); ++i) {
      r = (r & ~(uint64_t{1} << (pos + i))) | (((a >> i) & 1) << (pos + i));
    }
    set_reg(c, in.ops[0].reg, l, zext(r, BYTES));
  });
}

template <int BYTES>
void ex_bitcount(ExecCtx& c, const Instr& in) {
  const int bits = 8 * BYTES;
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = zext(src_bits(c, in.ops[1], l), BYTES);
    uint64_t r = 0;
    if (in.op == Op::Popc) r = static_cast<uint64_t>(__builtin_popcountll(a));
    else if (in.op == Op::Clz) r = a == 0 ? bits : static_cast<uint64_t>(__builtin_clzll(a) - (64 - bits));
    else {  // brev
      for (int i = 0; i < bits; ++i) r |= ((a >> i) & 1) << (bits - 1 - i);
    }
    set_reg(c, in.ops[0].reg, l, in.op == Op::Brev ? r : (r & 0xffffffffu));
  });
}

template <DType T>
void ex_testp(ExecCtx& c, const Instr& in) {
  for_lanes(c.mask, [&](int l) {
    const auto v = get<T>(c, in.ops[1], l);
    bool r = false;
    switch (in.sub) {
      case 0: r = std::isfinite(v); break;
      case 1: r = std::isinf(v); break;
      case 2: r = std::isnan(v); break;
      case 3: r = !std::isnan(v); break;
      case 4: r = std::isnormal(v) || v == 0; break;  // the H100 counts zero as normal (not subnormal)
      case 5: r = std::fpclassify(v) == FP_SUBNORMAL; break;
    }
    set_reg(c, in.ops[0].reg, l, r);
  });
}

template <class V>
V sfu_value(Op op, V a) {
  switch (op) {
    case Op::Rcp: return V(1) / a;
    case Op::Sqrt: return std::sqrt(a);
    case Op::Rsqrt: return V(1) / std::sqrt(a);
    case Op::Sin: return std::sin(a);
    case Op::Cos: return std::cos(a);
    case Op::Ex2: return std::exp2(a);
    case Op::Lg2: return std::log2(a);
    case Op::Tanh: return std::tanh(a);
    default: return a;
  }
}

// f32 / f64. rcp / sqrt are IEEE-rounded in the instruction's mode (.rn, .rz, .rm, .rp); the host's
// operations round in the current mode, set here for the directed ones. .ftz flushes subnormal inputs and
// results (f32, and the f64 rcp / rsqrt forms that take it).
template <DType T>
void ex_sfu(ExecCtx& c, const Instr& in) {
  using V = typename TT<T>::V;
  const bool directed = in.rnd == Rnd::RZ || in.rnd == Rnd::RM || in.rnd == Rnd::RP;
  const int old = directed ? std::fegetround() : 0;
  if (directed) std::fesetround(in.rnd == Rnd::RZ ? FE_TOWARDZERO : in.rnd == Rnd::RM ? FE_DOWNWARD : FE_UPWARD);
  // The H100 keeps f64 subnormals in the IEEE-rounded rcp.rn.ftz.f64 (only rcp.approx.ftz.f64 flushes).
  const bool ftz = (in.flags & F_FTZ) && (T == DType::F32 || in.op != Op::Rcp || (in.flags & F_APPROX));
  const auto flush = [ftz](V v) {
    if constexpr (T == DType::F32) return ftz ? f32_ftz(v) : v;
    else return ftz ? f64_ftz(v) : v;
  };
  for_lanes(c.mask, [&](int l) {
    const V r = flush(sfu_value<V>(in.op, flush(get<T>(c, in.ops[1], l))));
    uint64_t bits = TT<T>::put(r);
    if (std::isnan(r) && T == DType::F32) bits = kCanonicalNaN32;  // the hardware's f32 NaN
    set_reg(c, in.ops[0].reg, l, bits);
  });
  if (directed) std::fesetround(old);
}

// f16 / bf16, one or two (f16x2 / bf16x2) per register: computed in double, rounded once to the type;
// NaN gives the canonical NaN, .ftz (ex2.approx.ftz.bf16) flushes subnormal inputs and results.
template <DType H>
void ex_sfu_half(ExecCtx& c, const Instr& in) {
  const int halves = dtype_bytes(in.type) / 2;
  const bool ftz = in.flags & F_FTZ;
  const auto flush = [&](uint16_t h) {
    const bool sub = H == DType::F16 ? (h & 0x7c00) == 0 : (h & 0x7f80) == 0;
    return ftz && sub ? static_cast<uint16_t>(h & 0x8000) : h;
  };
  for_lanes(c.mask, [&](int l) {
    const uint64_t a = src_bits(c, in.ops[1], l);
    uint64_t out = 0;
    for (int h = 0; h < halves; ++h) {
      const double r = sfu_value<double>(in.op, TT<H>::get(flush(static_cast<uint16_t>(a >> (16 * h)))));
      const uint16_t bits = std::isnan(r) ? kCanonicalNaN16 : flush(static_cast<uint16_t>(TT<H>::put(r)));
      out |= static_cast<uint64_t>(bits) << (16 * h);
    }
    set_reg(c, in.ops[0].reg, l, out);
  });
}

int bytes_of(const Instr& in) { return dtype_bytes(in.type); }

// The operands of lop3 prmt shf bfe bfi brev clz popc testp: counts first, then each operand's type.
void check_bits_operands(Instr& in, const Kernel& k) {
  const DType t = in.type, u = DType::U32;
  std::vector<DType> types;
  switch (in.op) {
    case Op::Lop3: types = {t, t, t, t}; break;
    case Op::Prmt: types = {t, t, t, t}; break;
    case Op::Shf: types = {t, t, t, u}; break;
    case Op::Bfe: types = {t, t, u, u}; break;
    case Op::Bfi: types = {t, t, t, u, u}; break;
    case Op::Clz: case Op::Popc: types = {u, t}; break;
    case Op::Testp: types = {DType::Pred, t}; break;
    default: types = {t, t}; break;
  }
  need_ops(in, types.size() + (in.op == Op::Lop3 ? 1 : 0));
  check_operand(in, k, 0, types[0], OK_REG, Fit::Exact, true);
  for (size_t i = 1; i < types.size(); ++i) check_operand(in, k, i, types[i], OK_SRC);
  if (in.op == Op::Lop3) check_operand(in, k, 4, DType::B32, OK_IMM);
  if (in.op == Op::Bfe || in.op == Op::Bfi)  // literal positions and lengths: 0..255, as ptxas has them
    for (size_t i = types.size() - 2; i < types.size(); ++i)
      if (in.ops[i].kind == OpndKind::Imm && in.ops[i].imm > 255)
        throw DecodeError("operand " + std::to_string(i + 1) + " of '" + in.opcode + "' out of range 0..255");
}

}  // namespace

void decode_logic(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kLogicForms));
  std::vector<DType> types;
  common_mods(in, types);
  in.type = types[0];
  const bool unary = in.op == Op::Not || in.op == Op::Cnot;
  need_ops(in, unary ? 2 : 3);
  const bool shift = in.op == Op::Shl || in.op == Op::Shr;
  check_operand(in, k, 0, in.type, OK_REG, Fit::Exact, true);
  for (size_t i = 1; i < in.ops.size(); ++i)
    check_operand(in, k, i, shift && i == 2 ? DType::U32 : in.type, OK_SRC | OK_NEG);
  in.unit = Unit::INT;
  const int bytes = bytes_of(in);
  if (in.op == Op::Shl || in.op == Op::Shr) {
    const bool s = dtype_is_signed(in.type) && in.op == Op::Shr;
    in.fn = bytes == 2 ? pick_shift<2>(s) : bytes == 4 ? pick_shift<4>(s) : pick_shift<8>(s);
  } else if (in.type == DType::Pred) {
    in.fn = &ex_pred_logic;
  } else {
    in.fn = bytes == 2 ? &ex_logic<2> : bytes == 4 ? &ex_logic<4> : &ex_logic<8>;
  }
}

void decode_bits(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kBitsForms));
  std::vector<DType> types;
  const auto rest = common_mods(in, types);
  in.unit = Unit::INT;
  in.type = types[0];
  const auto index_of = [&](std::initializer_list<const char*> names) {
    int i = 0;
    for (const char* n : names) {
      if (std::find(rest.begin(), rest.end(), n) != rest.end()) return i;
      ++i;
    }
    return -1;
  };
  const int b = bytes_of(in);
  const bool s = dtype_is_signed(in.type);
  check_bits_operands(in, k);
  switch (in.op) {
    case Op::Testp: {
      static const uint8_t sub[] = {0, 1, 3, 2, 4, 5};
      in.sub = sub[index_of({"finite", "infinite", "number", "notanumber", "normal", "subnormal"})];
      in.unit = unit_for(in.type);
      in.fn = in.type == DType::F64 ? &ex_testp<DType::F64> : &ex_testp<DType::F32>;
      return;
    }
    case Op::Prmt:
      in.sub = static_cast<uint8_t>(index_of({"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}) + 1);
      in.fn = &ex_prmt;
      return;
    case Op::Shf:
      in.flags |= index_of({"l"}) == 0 ? F_SHIFT_L : F_SHIFT_R;
      in.fn = &ex_shf;
      return;
    case Op::Lop3:
      in.fn = &ex_lop3;
      return;
    case Op::Bfe:
      in.fn = b == 4 ? (s ? &ex_bfe<4, true> : &ex_bfe<4, false>) : (s ? &ex_bfe<8, true> : &ex_bfe<8, false>);
      return;
    case Op::Bfi:
      in.fn = b == 4 ? &ex_bfi<4> : &ex_bfi<8>;
      return;
    default:  // brev clz popc
      in.fn = b == 4 ? &ex_bitcount<4> : &ex_bitcount<8>;
  }
}

void decode_sfu(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kSfuForms));
  std::vector<DType> types;
  common_mods(in, types);
  in.type = types[0];
  need_ops(in, 2);
  check_operand(in, k, 0, in.type, OK_REG, Fit::Exact, true);
  check_operand(in, k, 1, in.type, OK_SRC);
  imms_as(in, in.type);
  in.unit = in.type == DType::F64 ? Unit::FP64 : Unit::SFU;
  switch (in.type) {
    case DType::F32: in.fn = &ex_sfu<DType::F32>; break;
    case DType::F64: in.fn = &ex_sfu<DType::F64>; break;
    case DType::F16: case DType::F16x2: in.fn = &ex_sfu_half<DType::F16>; break;
    default: in.fn = &ex_sfu_half<DType::BF16>; break;
  }
}

}  // namespace stc
