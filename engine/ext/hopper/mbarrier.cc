// mbarrier (the sm_80 forms and the sm_90 ones) and the async-proxy fences:
//   mbarrier.init{.shared{::cta}}.b64 [addr], count;           mbarrier.inval{.shared{::cta}}.b64 [addr];
//   mbarrier.arrive{.release}{.cta}{.shared{::cta}}.b64 state, [addr]{, count};
//   mbarrier.arrive{_drop}.noComplete{.release}{.cta}{.shared{::cta}}.b64 state, [addr], count;
//   mbarrier.arrive_drop{.release}{.cta}{.shared{::cta}}.b64 state, [addr]{, count};
//   mbarrier.arrive.expect_tx{.release}{.cta}{.shared{::cta}}.b64 state, [addr], tx;
//   mbarrier.expect_tx / mbarrier.complete_tx{.relaxed}{.cta}{.shared{::cta}}.b64 [addr], tx;
//   mbarrier.test_wait{.parity}{.acquire}{.cta}{.shared{::cta}}.b64 p, [addr], state|parity;
//   mbarrier.try_wait{.parity}{.acquire}{.cta}{.shared{::cta}}.b64 p, [addr], state|parity{, hint};
//   fence.proxy.async{.shared::cta,.shared::cluster,.global};  fence.mbarrier_init.release.cluster;
// Each active thread performs its own operation, lane by lane. test_wait is non-blocking; try_wait is
// "potentially blocking" in the ISA: here the warp waits until the phase completes (waking when an arrive
// or complete_tx completes a phase), then p is true; a phase that can never complete is a deadlock error.
// arrive_drop also lowers the expected count of the later phases by its count. Reported as errors: use of an
// uninitialised barrier, an arrival count beyond the pending arrivals, a tx-count out of range, an init count
// outside 1..2^20-1, a .noComplete arrival that completes the phase (undefined in the ISA). The target and
// version each form needs are ptxas's (engine/ptx/feature_gates.def and decode_mbarrier): sm_80 has init,
// inval, arrive{_drop}{.noComplete} and test_wait; sm_90 adds try_wait, the tx-count, an arrival count
// without .noComplete, .cluster and .relaxed. The engine has one memory proxy: the fences only
// order (they are scheduling fences).
#include <string>

#include "../../func/decode.h"
#include "../../func/exec.h"
#include "decoders.h"
#include "mbarrier.h"
#include "warpgroup.h"

namespace stc::hopper {

Mbarrier mbarrier_load(const uint8_t* p) {
  const uint64_t v = load_bits(p, 8);
  Mbarrier b;
  b.pending = static_cast<uint32_t>(v & 0xfffff);
  b.expected = static_cast<uint32_t>((v >> 20) & 0xfffff);
  const uint32_t tx = static_cast<uint32_t>((v >> 40) & 0x1fffff);
  b.tx = static_cast<int32_t>(tx << 11) >> 11;
  b.init = (v >> 62) & 1;
  b.phase = (v >> 63) & 1;
  return b;
}

void mbarrier_store(uint8_t* p, const Mbarrier& b) {
  const uint64_t v = static_cast<uint64_t>(b.pending & 0xfffff) | (static_cast<uint64_t>(b.expected & 0xfffff) << 20) |
                     (static_cast<uint64_t>(static_cast<uint32_t>(b.tx) & 0x1fffff) << 40) |
                     (static_cast<uint64_t>(b.init) << 62) | (static_cast<uint64_t>(b.phase) << 63);
  store_bits(p, v, 8);
}

namespace {
constexpr int32_t kTxLimit = (1 << 20) - 1;

// Completes the phase when nothing is pending.
void maybe_complete(CtaState& cta, Mbarrier& b) {
  if (b.pending || b.tx) return;
  b.phase = !b.phase;
  b.pending = b.expected;
  wake_waiters(cta);
}
}  // namespace

bool mbarrier_tx(CtaState& cta, uint8_t* p, int64_t bytes) {
  Mbarrier b = mbarrier_load(p);
  const int64_t tx = b.tx + bytes;
  if (tx > kTxLimit || tx < -kTxLimit) return false;
  b.tx = static_cast<int32_t>(tx);
  maybe_complete(cta, b);
  mbarrier_store(p, b);
  return true;
}

namespace {

enum MbarSub : uint8_t { INIT, INVAL, ARRIVE, ARRIVE_TX, EXPECT_TX, COMPLETE_TX, TEST_WAIT, TRY_WAIT };
// Bits of Instr::sub above the operation, on an arrive (ARRIVE only): arrive_drop, .noComplete.
constexpr uint8_t kDrop = 16, kNoComplete = 32;

// The barrier operand's index: 1 for the forms with a destination, 0 otherwise.
size_t addr_op(const Instr& in) { return in.traits.writes_dst ? 1 : 0; }

uint8_t* barrier_at(ExecCtx& c, const Instr& in, int lane, bool need_init) {
  uint8_t* p = mem_access(c, in.space, mem_addr(c, in.ops[addr_op(in)], lane), 8, lane, true, 8);
  if (need_init && !mbarrier_load(p).init)
    hopper_fault(c, in, "thread " + std::to_string(c.w.warp_in_cta * 32 + static_cast<uint32_t>(lane)) +
                            " uses an mbarrier that is not initialised (mbarrier.init)");
  return p;
}

uint32_t u32_src(const ExecCtx& c, const Operand& o, int lane) { return static_cast<uint32_t>(src_bits(c, o, lane)); }

void ex_init(ExecCtx& c, const Instr& in) {
  for_lanes(c.mask, [&](int lane) {
    const uint32_t count = u32_src(c, in.ops[1], lane);
    if (count == 0 || count > static_cast<uint32_t>(kTxLimit))
      hopper_fault(c, in, "mbarrier.init count " + std::to_string(count) + " is outside 1..2^20-1");
    Mbarrier b;
    b.pending = b.expected = count;
    b.init = true;
    mbarrier_store(barrier_at(c, in, lane, false), b);
  });
}

void ex_inval(ExecCtx& c, const Instr& in) {
  for_lanes(c.mask, [&](int lane) { mbarrier_store(barrier_at(c, in, lane, true), Mbarrier{}); });
}

void ex_arrive(ExecCtx& c, const Instr& in) {
  const bool expect = in.sub == ARRIVE_TX;
  for_lanes(c.mask, [&](int lane) {
    uint8_t* p = barrier_at(c, in, lane, true);
    Mbarrier b = mbarrier_load(p);
    const uint64_t state = b.phase;  // the opaque state: the parity of the phase arrived at
    if (expect) {
      const int64_t tx = b.tx + static_cast<int64_t>(u32_src(c, in.ops[2], lane));
      if (tx > kTxLimit) hopper_fault(c, in, "mbarrier tx-count exceeds 2^20-1");
      b.tx = static_cast<int32_t>(tx);
    }
    const uint32_t count = !expect && in.ops.size() > 2 ? u32_src(c, in.ops[2], lane) : 1;
    if (count == 0 || count > b.pending)
      hopper_fault(c, in, "arrival count " + std::to_string(count) + " exceeds the " + std::to_string(b.pending) +
                              " arrivals pending in the current phase");
    if ((in.sub & kNoComplete) && count == b.pending && !b.tx)
      hopper_fault(c, in, "mbarrier.arrive.noComplete completes the current phase (undefined behaviour)");
    if (in.sub & kDrop) {
      if (count > b.expected)
        hopper_fault(c, in, "arrive_drop count " + std::to_string(count) + " exceeds the expected count " +
                                std::to_string(b.expected));
      b.expected -= count;
    }
    b.pending -= count;
    maybe_complete(c.cta, b);
    mbarrier_store(p, b);
    set_reg(c, in.ops[0].reg, lane, state);
  });
}

void ex_tx(ExecCtx& c, const Instr& in) {
  const int64_t sign = in.sub == EXPECT_TX ? 1 : -1;
  for_lanes(c.mask, [&](int lane) {
    uint8_t* p = barrier_at(c, in, lane, true);
    if (!mbarrier_tx(c.cta, p, sign * static_cast<int64_t>(u32_src(c, in.ops[1], lane))))
      hopper_fault(c, in, "mbarrier tx-count leaves its range -(2^20-1)..2^20-1");
  });
}

void ex_wait(ExecCtx& c, const Instr& in) {
  bool all = true;
  uint32_t done = 0;
  for_lanes(c.mask, [&](int lane) {
    const Mbarrier b = mbarrier_load(barrier_at(c, in, lane, true));
    // The phase of that parity has completed once the current phase's parity differs from it.
    if (b.phase != ((src_bits(c, in.ops[2], lane) & 1) != 0)) done |= 1u << lane;
    else all = false;
  });
  if (!all && in.sub == TRY_WAIT) {
    c.w.waiting = true;
    return;
  }
  if (done) report_tma_wait(c, mem_addr(c, in.ops[1], __builtin_ctz(done)));
  for_lanes(c.mask, [&](int lane) { set_reg(c, in.ops[0].reg, lane, (done >> lane) & 1); });
}

// ---- decode ---------------------------------------------------------------------------------------
}  // namespace

void decode_mbarrier(Instr& in, const Kernel& k) {
  // The forms as ptxas 13 has them; the .target / .version of each feature are feature_gates.def rows
  // (checked after this), except those of an operand: an arrival count without .noComplete (sm_90, PTX 7.8)
  // and a discarded state `_` (PTX 7.1).
  if (in.mods.empty()) throw DecodeError("mbarrier needs an operation (.init, .arrive, .try_wait, ...)");
  const std::string& op = in.mods[0];
  int sub = -1;
  uint8_t arrive_mods = 0;
  if (op == "init") sub = INIT;
  else if (op == "inval") sub = INVAL;
  else if (op == "arrive") sub = ARRIVE;
  else if (op == "arrive_drop") { sub = ARRIVE; arrive_mods = kDrop; }
  else if (op == "expect_tx") sub = EXPECT_TX;
  else if (op == "complete_tx") sub = COMPLETE_TX;
  else if (op == "test_wait") sub = TEST_WAIT;
  else if (op == "try_wait") sub = TRY_WAIT;
  else unsupported(in, "mbarrier." + op + " (not supported: init, inval, arrive{_drop}{.noComplete}{.expect_tx}, "
                       "expect_tx, complete_tx, test_wait and try_wait are)");
  bool b64 = false, parity = false, spaced = false;
  std::string order, scope;
  in.space = Space::Generic;
  for (size_t i = 1; i < in.mods.size(); ++i) {
    const std::string& m = in.mods[i];
    if (m == "b64" && !b64) b64 = true;
    else if (m == "expect_tx" && sub == ARRIVE && !arrive_mods && i == 1) sub = ARRIVE_TX;
    else if (m == "noComplete" && sub == ARRIVE && !(arrive_mods & kNoComplete) && i == 1) arrive_mods |= kNoComplete;
    else if (m == "parity" && (sub == TEST_WAIT || sub == TRY_WAIT) && i == 1) parity = true;
    else if ((m == "shared" || m == "shared::cta" || m == "shared::cluster") && !spaced) {
      if (m == "shared::cluster" && (sub == INIT || sub == INVAL || sub == TEST_WAIT || sub == TRY_WAIT))
        unsupported(in, "modifier ." + m + " of mbarrier." + op);
      in.space = Space::Shared;
      spaced = true;
    } else if (m == "release" || m == "acquire" || m == "relaxed") {
      const bool ok = m == "relaxed" ? sub != INIT && sub != INVAL
                      : m == "release"  ? sub == ARRIVE || sub == ARRIVE_TX
                                        : sub == TEST_WAIT || sub == TRY_WAIT;
      if (!ok) unsupported(in, "modifier ." + m + " of mbarrier." + op);
      if (!order.empty()) throw DecodeError("'" + in.opcode + "' has more than one memory order");
      order = m;
    } else if (m == "cta" || m == "cluster") {
      if (sub == INIT || sub == INVAL) unsupported(in, "modifier ." + m + " of mbarrier." + op);
      if (!scope.empty()) throw DecodeError("'" + in.opcode + "' has more than one scope");
      scope = m;
    } else {
      unsupported(in, "modifier ." + m + " of mbarrier." + op);
    }
  }
  if (!b64) throw DecodeError("mbarrier operations take .b64");
  if (order.empty() != scope.empty())
    throw DecodeError("'" + in.opcode + "': " + (order.empty() ? "a scope (." + scope + ") needs a memory order"
                                                               : "a memory order (." + order + ") needs a scope"));
  if ((arrive_mods & kNoComplete) && sub != ARRIVE) unsupported(in, "modifier .noComplete of mbarrier." + op);
  in.sub = static_cast<uint8_t>(sub | arrive_mods);
  const bool dst = sub == ARRIVE || sub == ARRIVE_TX || sub == TEST_WAIT || sub == TRY_WAIT;
  in.traits.writes_dst = dst;
  const size_t a = dst ? 1 : 0;
  switch (sub) {
    case INIT: need_ops(in, 2); break;
    case INVAL: need_ops(in, 1); break;
    case ARRIVE: (arrive_mods & kNoComplete) ? need_ops(in, 3) : need_ops(in, 2, 3); break;
    case ARRIVE_TX: case TEST_WAIT: need_ops(in, 3); break;
    case TRY_WAIT: need_ops(in, 3, 4); break;
    default: need_ops(in, 2);
  }
  if (in.ops[a].kind != OpndKind::Mem) throw DecodeError("mbarrier: expected the barrier's address [..]");
  if (dst && in.ops[0].kind != OpndKind::Reg) throw DecodeError("mbarrier: the destination must be a register or _");
  if (dst && in.ops[0].reg < 0) {
    if (sub == TEST_WAIT || sub == TRY_WAIT) throw DecodeError("'" + in.opcode + "' cannot discard its result (_)");
    if (k.ptx && k.ptx < 71) throw DecodeError("'" + in.opcode + "' (a discarded state _) requires PTX ISA .version 7.1 or later");
  }
  if (sub == ARRIVE && in.ops.size() == 3 && !(arrive_mods & kNoComplete)) {  // an arrival count
    if (k.sm && k.sm < 90)
      throw DecodeError("'" + in.opcode + "' (an arrival count without .noComplete) requires .target sm_90 or higher");
    if (k.ptx && k.ptx < 78)
      throw DecodeError("'" + in.opcode + "' (an arrival count without .noComplete) requires PTX ISA .version 7.8 or later");
  }
  for (size_t i = a + 1; i < in.ops.size(); ++i)
    if (in.ops[i].kind != OpndKind::Reg && in.ops[i].kind != OpndKind::Imm)
      throw DecodeError("mbarrier: operand " + std::to_string(i + 1) + " must be a register or an integer");
  (void)parity;  // state and parity operands are both read by their low bit (the phase parity)
  in.unit = Unit::LDST;
  const bool wait = sub == TEST_WAIT || sub == TRY_WAIT;  // timed by the phase's TMA copies (register.cc)
  in.traits.op_class = op_class_id(wait ? "hopper.mbarrier_wait" : "hopper.mbarrier");
  in.traits.mem = wait ? MemKind::None : MemKind::Atomic;
  in.traits.sched = SchedKind::Fence;
  in.traits.sm_local = in.space == Space::Shared;  // (a generic address could name any memory)
  switch (sub) {
    case INIT: in.fn = &ex_init; break;
    case INVAL: in.fn = &ex_inval; break;
    case ARRIVE: case ARRIVE_TX: in.fn = &ex_arrive; break;
    case EXPECT_TX: case COMPLETE_TX: in.fn = &ex_tx; break;
    default: in.fn = &ex_wait;
  }
}

void decode_fence(Instr& in, const Kernel& k) {
  if (k.sm && k.sm < 90) throw DecodeError("'" + in.opcode + "' requires .target sm_90");
  const std::vector<std::string>& m = in.mods;
  const bool proxy = m.size() >= 2 && m[0] == "proxy" && m[1] == "async" &&
                     (m.size() == 2 || (m.size() == 3 && (m[2] == "shared::cta" || m[2] == "shared::cluster" ||
                                                          m[2] == "global")));
  const bool init = m.size() == 3 && m[0] == "mbarrier_init" && m[1] == "release" && m[2] == "cluster";
  if (!proxy && !init)
    unsupported(in, "fence form (fence.proxy.async{.shared::cta,.shared::cluster,.global} and "
                    "fence.mbarrier_init.release.cluster are supported)");
  need_ops(in, 0);
  in.unit = Unit::SYNC;
  in.traits.op_class = op_class_id("hopper.fence");
  in.traits.writes_dst = false;
  in.traits.sm_local = true;
  in.traits.sched = SchedKind::Fence;
  in.fn = [](ExecCtx&, const Instr&) {};
}

}  // namespace stc::hopper
