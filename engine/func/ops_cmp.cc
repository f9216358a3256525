// Comparison and selection: setp set selp slct.
#include <cmath>

#include "decode.h"
#include "exec.h"

namespace stc {
namespace {

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

template <DType T>
void ex_setp(ExecCtx& c, const Instr& in) {
  const Operand& d = in.ops[0];
  const int32_t p = d.kind == OpndKind::Vec ? d.vec[0] : d.reg;
  const int32_t q = d.kind == OpndKind::Vec ? d.vec[1] : -1;
  const bool has_c = in.ops.size() > 3;
  for_lanes(c.mask, [&](int l) {
    const bool t = compare(in.cmp, get<T>(c, in.ops[1], l), get<T>(c, in.ops[2], l));
    const bool cv = has_c && src_bits(c, in.ops[3], l) != 0;
    set_reg(c, p, l, has_c ? combine(in.bop, t, cv) : t);
    if (q >= 0) set_reg(c, q, l, has_c ? combine(in.bop, !t, cv) : !t);
  });
}

template <DType T>
void ex_set(ExecCtx& c, const Instr& in) {
  const bool has_c = in.ops.size() > 3;
  const bool float_dst = in.type == DType::F32;
  for_lanes(c.mask, [&](int l) {
    bool t = compare(in.cmp, get<T>(c, in.ops[1], l), get<T>(c, in.ops[2], l));
    if (has_c) t = combine(in.bop, t, src_bits(c, in.ops[3], l) != 0);
    set_reg(c, in.ops[0].reg, l, float_dst ? (t ? 0x3f800000u : 0u) : (t ? 0xffffffffu : 0u));
  });
}

void ex_selp(ExecCtx& c, const Instr& in) {
  for_lanes(c.mask, [&](int l) {
    set_reg(c, in.ops[0].reg, l, src_bits(c, in.ops[3], l) ? src_bits(c, in.ops[1], l) : src_bits(c, in.ops[2], l));
  });
}

template <DType T>
void ex_slct(ExecCtx& c, const Instr& in) {
  for_lanes(c.mask, [&](int l) {
    const bool ge = get<T>(c, in.ops[3], l) >= 0;
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

void decode_cmp(Instr& in, const Kernel&) {
  std::vector<DType> types;
  const auto rest = common_mods(in, types);
  if (!rest.empty()) unsupported(in, "modifier ." + rest[0]);
  if (in.op == Op::Selp) {
    if (types.size() != 1) throw DecodeError("selp needs one type");
    in.type = types[0];
    need_ops(in, 4);
    imms_as(in, in.type);
    in.fn = &ex_selp;
    in.unit = Unit::INT;
    return;
  }
  if (in.op == Op::Slct) {
    if (types.size() != 2 || (types[1] != DType::S32 && types[1] != DType::F32))
      throw DecodeError("slct needs .dtype.s32 or .dtype.f32");
    in.type = types[0];
    in.type2 = types[1];
    need_ops(in, 4);
    imms_as(in, in.type, 1);
    imm_as(in.ops[3], in.type2);
    in.fn = in.type2 == DType::F32 ? &ex_slct<DType::F32> : &ex_slct<DType::S32>;
    return;
  }
  if (in.cmp == Cmp::None) throw DecodeError("'" + in.opcode + "' needs a comparison (.eq, .lt, ...)");
  if (in.op == Op::Setp) {
    if (types.size() != 1) throw DecodeError("setp needs one type");
    in.type2 = types[0];
    need_ops(in, in.bop == BoolOp::None ? 3 : 4);
    imms_as(in, in.type2, 1);
    if (in.ops.size() > 3) imm_as(in.ops[3], DType::Pred);
    in.fn = pick_setp(in.type2);
  } else {
    if (types.size() != 2 || (types[0] != DType::U32 && types[0] != DType::S32 && types[0] != DType::F32))
      throw DecodeError("set needs .dtype.stype with dtype u32, s32 or f32");
    in.type = types[0];
    in.type2 = types[1];
    need_ops(in, in.bop == BoolOp::None ? 3 : 4);
    imms_as(in, in.type2, 1);
    in.fn = pick_set(in.type2);
  }
  if (!in.fn) unsupported(in, std::string("type .") + dtype_name(in.type2));
  in.unit = unit_for(in.type2) == Unit::FP16 ? Unit::FP16 : unit_for(in.type2) == Unit::FP64 ? Unit::FP64 : Unit::INT;
}

}  // namespace stc
