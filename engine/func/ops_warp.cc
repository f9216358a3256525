// Warp-level data exchange: shfl.sync, vote.sync, activemask.
#include "decode.h"
#include "exec.h"
#include "forms.h"
#include "operands.h"

namespace stc {
namespace {

// The forms of the family (forms.h).
const Form kWarpForms[] = {
    {"shfl", "b32", "!sync !up|down|bfly|idx"},
    {"vote", "pred", "!sync !all|any|uni"},
    {"vote", "b32", "!sync !ballot"},
    {"activemask", "b32", ""},
};

enum ShflMode : uint8_t { S_UP, S_DOWN, S_BFLY, S_IDX };

void ex_shfl(ExecCtx& c, const Instr& in) {
  const Operand& d = in.ops[0];
  const int32_t dreg = d.kind == OpndKind::Vec ? d.vec[0] : d.reg;
  const int32_t preg = d.kind == OpndKind::Vec ? d.vec[1] : -1;
  uint32_t src[32];
  for (int l = 0; l < 32; ++l) src[l] = static_cast<uint32_t>(src_bits(c, in.ops[1], l));
  uint32_t out[32], pv[32];
  for_lanes(c.mask, [&](int lane) {
    const uint32_t b = static_cast<uint32_t>(src_bits(c, in.ops[2], lane)) & 0x1f;
    const uint32_t cc = static_cast<uint32_t>(src_bits(c, in.ops[3], lane));
    const uint32_t cval = cc & 0x1f, seg = (cc >> 8) & 0x1f;
    const int32_t max_lane = static_cast<int32_t>((static_cast<uint32_t>(lane) & seg) | (cval & ~seg));
    const int32_t min_lane = static_cast<int32_t>(static_cast<uint32_t>(lane) & seg);
    int32_t j = lane;
    bool p = false;
    switch (in.sub) {
      case S_UP: j = lane - static_cast<int32_t>(b); p = j >= max_lane; break;
      case S_DOWN: j = lane + static_cast<int32_t>(b); p = j <= max_lane; break;
      case S_BFLY: j = lane ^ static_cast<int32_t>(b); p = j <= max_lane; break;
      case S_IDX: j = min_lane | static_cast<int32_t>(b & ~seg); p = j <= max_lane; break;
    }
    if (!p || j < 0 || j > 31) j = lane;
    out[lane] = src[j];
    pv[lane] = p;
  });
  for_lanes(c.mask, [&](int lane) {
    set_reg(c, dreg, lane, out[lane]);
    if (preg >= 0) set_reg(c, preg, lane, pv[lane]);
  });
}

enum VoteMode : uint8_t { V_ALL, V_ANY, V_UNI, V_BALLOT };

void ex_vote(ExecCtx& c, const Instr& in) {
  uint32_t ballot = 0;
  const uint32_t members = static_cast<uint32_t>(src_bits(c, in.ops[2], __builtin_ctz(c.mask | 1u << 31)));
  const uint32_t lanes = c.mask & members;
  for_lanes(lanes, [&](int l) { if (src_bits(c, in.ops[1], l)) ballot |= 1u << l; });
  uint64_t r = 0;
  switch (in.sub) {
    case V_ALL: r = ballot == lanes; break;
    case V_ANY: r = ballot != 0; break;
    case V_UNI: r = ballot == 0 || ballot == lanes; break;
    case V_BALLOT: r = ballot; break;
  }
  for_lanes(c.mask, [&](int l) { set_reg(c, in.ops[0].reg, l, r); });
}

void ex_activemask(ExecCtx& c, const Instr& in) {
  const uint32_t m = c.w.stack.back().mask;
  for_lanes(c.mask, [&](int l) { set_reg(c, in.ops[0].reg, l, m); });
}

}  // namespace

void decode_warp(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kWarpForms));
  in.unit = Unit::INT;
  if (in.op == Op::Activemask) {
    need_ops(in, 1);
    check_operand(in, k, 0, DType::B32, OK_REG, Fit::Exact, true);
    in.fn = &ex_activemask;
    return;
  }
  static const char* shfl_modes[] = {"up", "down", "bfly", "idx"};
  static const char* vote_modes[] = {"all", "any", "uni", "ballot"};
  const char* const* modes = in.op == Op::Shfl ? shfl_modes : vote_modes;
  for (const auto& m : in.mods) {
    for (int i = 0; i < 4; ++i)
      if (m == modes[i]) in.sub = static_cast<uint8_t>(i);
    if (dtype_from_name(m) != DType::None) in.type = dtype_from_name(m);
  }
  need_ops(in, in.op == Op::Shfl ? 5 : 3);
  if (in.op == Op::Shfl) {
    const Operand& d = in.ops[0];
    if (d.kind == OpndKind::Vec) {  // d|p
      if (d.vec.size() != 2 || d.vec[0] < 0) throw DecodeError("shfl writes d or d|p (d cannot be the sink _)");
      check_register(in, k, d.vec[0], DType::B32, Fit::Exact, true);
      check_register(in, k, d.vec[1], DType::Pred, Fit::Exact, true);
    } else {
      check_operand(in, k, 0, DType::B32, OK_REG, Fit::Exact, true);
    }
    for (size_t i = 1; i < 5; ++i) check_operand(in, k, i, i == 4 ? DType::U32 : DType::B32, OK_SRC);  // mask: u32
  } else {
    check_operand(in, k, 0, in.type, OK_REG, Fit::Exact, true);
    check_operand(in, k, 1, DType::Pred, OK_SRC | OK_NEG);
    check_operand(in, k, 2, DType::U32, OK_SRC);  // the member mask
  }
  // its own timing where measured (timing/op_class.cc)
  if (in.op == Op::Shfl) in.traits.op_class = op_class_id("units.shfl");
  in.fn = in.op == Op::Shfl ? &ex_shfl : &ex_vote;
}

}  // namespace stc
