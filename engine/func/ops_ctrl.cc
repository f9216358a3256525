// Control flow and synchronisation: bra (with SIMT divergence), ret/exit, trap, bar/barrier, and the
// memory-ordering and hint instructions that are no-ops functionally (membar, fence, prefetch, nanosleep).
#include <algorithm>

#include "../ptx/errors.h"
#include "cfg.h"
#include "decode.h"
#include "exec.h"
#include "forms.h"
#include "operands.h"

namespace stc {
namespace {

// The forms of the family (forms.h).
const Form kCtrlForms[] = {
    {"bra", "-", "uni"},
    {"ret", "-", "uni"},
    {"exit", "-", ""},
    {"trap", "-", ""},
    {"bar", "-", "cta !sync"},
    {"bar", "-", "!warp !sync"},
    {"barrier", "-", "cta !sync aligned"},
    {"membar", "-", "!gl|cta|sys"},
    {"fence", "-", "sc|acq_rel !cta|gpu|sys"},
    {"prefetch", "-", "global|local !L1|L2"},
    {"prefetch", "-", "global !L2::evict_last|L2::evict_normal"},
    {"nanosleep", "u32", ""},
};

int32_t sentinel(const ExecCtx& c) { return static_cast<int32_t>(c.L.kernel->code.size()); }

void ex_bra(ExecCtx& c, const Instr& in) {
  auto& st = c.w.stack;
  SimtEntry& top = st.back();
  const uint32_t active = top.mask;
  const uint32_t taken = c.mask;
  const int32_t pc = top.pc;
  if (taken == active) {
    top.pc = in.target;
  } else if (taken == 0) {
    top.pc = pc + 1;
  } else {
    const int32_t rpc = in.reconv >= 0 ? in.reconv : sentinel(c);
    top.pc = rpc;
    st.push_back({pc + 1, rpc, active & ~taken});
    st.push_back({in.target, rpc, taken});
  }
}

void ex_exit(ExecCtx& c, const Instr&) {
  const uint32_t lanes = c.mask;
  c.w.exited |= lanes;
  c.w.stack.for_each([lanes](SimtEntry& e) { e.mask &= ~lanes; });
  c.w.stack.back().pc += 1;  // lanes whose guard was false continue
}

void ex_trap(ExecCtx& c, const Instr& in) {
  if (!c.mask) { c.w.stack.back().pc += 1; return; }
  const int lane = __builtin_ctz(c.mask);
  const LaunchState& L = c.L;
  const uint32_t tid = c.w.warp_in_cta * 32 + static_cast<uint32_t>(lane);
  const uint32_t tx = tid % L.block[0], ty = (tid / L.block[0]) % L.block[1], tz = tid / (L.block[0] * L.block[1]);
  throw SimFault("trap executed in kernel '" + L.kernel->name + "' by thread (" + std::to_string(tx) + "," +
                 std::to_string(ty) + "," + std::to_string(tz) + ") of block (" + std::to_string(c.cta.ctaid[0]) +
                 "," + std::to_string(c.cta.ctaid[1]) + "," + std::to_string(c.cta.ctaid[2]) + ") at " +
                 L.kernel->file + ":" + std::to_string(in.line));
}

void ex_bar(ExecCtx& c, const Instr& in) {
  if (!c.mask) return;
  c.w.at_barrier = true;
  c.w.barrier_id = static_cast<int32_t>(src_bits(c, in.ops[0], __builtin_ctz(c.mask)));
  c.w.barrier_count = in.ops.size() > 1 ? static_cast<uint32_t>(src_bits(c, in.ops[1], __builtin_ctz(c.mask))) : 0;
}

}  // namespace

void decode_ctrl(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kCtrlForms));
  in.unit = Unit::BRANCH;
  if (in.op == Op::Bra) {
    if (!in.mods.empty()) in.flags |= F_UNI;
    need_ops(in, 1);
    if (in.ops[0].kind != OpndKind::Label) throw DecodeError("bra needs a label");
    in.fn = &ex_bra;
    return;
  }
  need_ops(in, 0);
  in.fn = in.op == Op::Trap ? &ex_trap : &ex_exit;
}

void decode_bar(Instr& in, const Kernel& k) {
  // bar{.cta}.sync a{, b} | barrier{.cta}.sync{.aligned} a{, b} | bar.warp.sync mask (a warp-level no-op here)
  check_form(in, k, form_table(kCtrlForms));
  if (in.mods[0] != "cta" && std::find(in.mods.begin(), in.mods.end(), "cta") != in.mods.end())
    throw DecodeError("'" + in.opcode + "': .cta comes before .sync");
  in.unit = Unit::SYNC;
  if (in.mods[0] == "warp") {
    need_ops(in, 1);
    check_operand(in, k, 0, DType::U32, OK_SRC);  // the member mask
    in.sub = 1;
    in.fn = [](ExecCtx&, const Instr&) {};
    return;
  }
  need_ops(in, 1, 2);
  check_operand(in, k, 0, DType::U32, OK_SRC);
  if (in.ops[0].kind == OpndKind::Imm && in.ops[0].imm > 15)
    throw DecodeError("barrier number " + std::to_string(static_cast<int64_t>(in.ops[0].imm)) + " out of range 0..15");
  if (in.ops.size() > 1) {
    check_operand(in, k, 1, DType::U32, OK_SRC);
    if (in.ops[1].kind == OpndKind::Imm && in.ops[1].imm % 32 != 0)
      throw DecodeError("a barrier's thread count must be a multiple of 32, got " +
                        std::to_string(static_cast<int64_t>(in.ops[1].imm)));
  }
  in.fn = &ex_bar;
}

// membar, fence, prefetch, nanosleep: checked, then nothing to do functionally.
void decode_sync_nop(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kCtrlForms));
  if (in.op == Op::Prefetch) {
    need_ops(in, 1);
    std::vector<DType> types;
    common_mods(in, types);
    check_address(in, k, 0, in.space);
  } else if (in.op == Op::Nanosleep) {
    need_ops(in, 1);
    check_operand(in, k, 0, DType::U32, OK_SRC);
  } else {
    need_ops(in, 0);
  }
  in.fn = [](ExecCtx&, const Instr&) {};
}

}  // namespace stc
