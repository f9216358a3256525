// Control flow and synchronisation: bra (with SIMT divergence), ret/exit, trap, bar/barrier, and the
// memory-ordering and hint instructions that are no-ops functionally (membar, fence, prefetch, nanosleep).
#include <algorithm>
#include <string>
#include <vector>

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

// "lanes 0-15, 20" for a lane mask.
std::string lane_list(uint32_t mask) {
  std::string s;
  for (int l = 0; l < 32;) {
    if (!(mask >> l & 1)) { ++l; continue; }
    int e = l;
    while (e + 1 < 32 && (mask >> (e + 1) & 1)) ++e;
    s += (s.empty() ? "" : ", ") + std::to_string(l) + (e > l ? "-" + std::to_string(e) : "");
    l = e + 1;
  }
  return (__builtin_popcount(mask) == 1 ? "lane " : "lanes ") + s;
}

// "bar.sync 0 (f.ptx:12, pc 7)"
std::string where(const Kernel& k, int32_t pc) {
  const Instr& in = k.code[static_cast<size_t>(pc)];
  return "`" + in.text + "` (" + k.file + ":" + std::to_string(in.line) + ", pc " + std::to_string(pc) + ")";
}

// The pc of a barrier that code starting at `pc` can reach before it returns or exits (-1: none), the
// nearest in straight-line order first: a depth-first walk of the control flow, each pc visited once.
int32_t reachable_barrier(const Kernel& k, int32_t pc) {
  const int32_t n = static_cast<int32_t>(k.code.size());
  std::vector<bool> seen(static_cast<size_t>(n), false);
  std::vector<int32_t> todo{pc};
  while (!todo.empty()) {
    int32_t q = todo.back();
    todo.pop_back();
    while (q >= 0 && q < n && !seen[static_cast<size_t>(q)]) {
      seen[static_cast<size_t>(q)] = true;
      const Instr& in = k.code[static_cast<size_t>(q)];
      if (in.op == Op::Bar || in.op == Op::Barrier) {
        if (in.sub != 1) return q;  // (not bar.warp.sync)
      } else if (in.op == Op::Bra) {
        if (in.guard < 0) { q = in.target; continue; }
        todo.push_back(in.target);
      } else if (in.op == Op::Ret || in.op == Op::Exit || in.op == Op::Trap) {
        if (in.guard < 0) break;
      }
      ++q;
    }
  }
  return -1;
}

// A warp whose threads do not execute one aligned barrier together: the PTX ISA leaves it undefined
// (bar/barrier: "all threads in a warp" must execute the same .aligned barrier instruction), and the
// hardware hangs or releases the barrier early; the engine stops with a SimFault naming both places.
[[noreturn]] void bar_fault(ExecCtx& c, const Instr& in, const std::string& what) {
  const LaunchState& L = c.L;
  throw SimFault("barrier deadlock in kernel '" + L.kernel->name + "': warp " + std::to_string(c.w.warp_in_cta) +
                 " of block (" + std::to_string(c.cta.ctaid[0]) + "," + std::to_string(c.cta.ctaid[1]) + "," +
                 std::to_string(c.cta.ctaid[2]) + ") " + what + "; '" + in.opcode +
                 "' is aligned: every thread of a warp must execute the same barrier instruction (PTX ISA, "
                 "bar/barrier), and the hardware would hang (undefined behaviour)");
}

void ex_bar(ExecCtx& c, const Instr& in) {
  if (!c.mask) return;
  const int first = __builtin_ctz(c.mask);
  const uint32_t id = static_cast<uint32_t>(src_bits(c, in.ops[0], first));
  const int32_t pc = c.w.stack.back().pc;
  const Kernel& k = *c.L.kernel;
  if (in.sub == 0) {  // aligned (bar.sync, barrier.sync.aligned): the warp's threads execute it together
    if (in.ops[0].kind != OpndKind::Imm)
      for (uint32_t m = c.mask & (c.mask - 1); m; m &= m - 1) {
        const int l = __builtin_ctz(m);
        const uint32_t other = static_cast<uint32_t>(src_bits(c, in.ops[0], l));
        if (other != id)
          bar_fault(c, in, "executes " + where(k, pc) + " with barrier " + std::to_string(id) + " in lane " +
                               std::to_string(first) + " but barrier " + std::to_string(other) + " in lane " +
                               std::to_string(l));
      }
    const uint32_t live = c.w.valid & ~c.w.exited;
    if (c.mask != live) {
      std::string what = "reaches barrier " + std::to_string(id) + " at " + where(k, pc) + " with " +
                         lane_list(c.mask) + " only";
      const uint32_t rest = live & ~c.mask;
      if (const uint32_t skip = rest & c.w.stack.back().mask) {  // its guard is false for them
        what += ", while " + lane_list(skip) + " skip it (its guard is false for them)";
        bar_fault(c, in, what);
      }
      // The other lanes wait further down the SIMT stack. Lanes whose every path leads to ret/exit without a
      // barrier are leaving (an early return before __syncthreads: the hardware counts exited threads as
      // arrived); lanes that can still reach a barrier would execute it apart from these: undefined.
      std::vector<SimtEntry> st;
      c.w.stack.for_each([&st](SimtEntry& e) { st.push_back(e); });
      for (size_t i = st.size(); i-- > 0;) {
        const uint32_t lanes = st[i].mask & rest;
        if (!lanes || st[i].pc >= static_cast<int32_t>(k.code.size())) continue;
        const int32_t bar_pc = reachable_barrier(k, st[i].pc);
        if (bar_pc < 0) continue;
        what += ", while " + lane_list(lanes) + " are at " + where(k, st[i].pc);
        const Instr& next = k.code[static_cast<size_t>(bar_pc)];
        const std::string nid = next.ops[0].kind == OpndKind::Imm
                                    ? std::to_string(static_cast<int64_t>(next.ops[0].imm)) : "from a register";
        what += bar_pc == st[i].pc ? ", barrier " + nid : " and can reach barrier " + nid + " at " + where(k, bar_pc);
        bar_fault(c, in, what);
      }
    }
  }
  c.w.at_barrier = true;
  c.w.barrier_id = static_cast<int32_t>(id);
  c.w.barrier_count = in.ops.size() > 1 ? static_cast<uint32_t>(src_bits(c, in.ops[1], first)) : 0;
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
  // bar{.cta}.sync is barrier{.cta}.sync.aligned; barrier.sync without .aligned may be reached by a diverged
  // warp (its threads arrive one by one on sm_70+), which the engine's per-warp arrival does not model.
  in.sub = in.op == Op::Barrier && std::find(in.mods.begin(), in.mods.end(), "aligned") == in.mods.end() ? 2 : 0;
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
