#include "warpgroup.h"

#include <algorithm>
#include <climits>
#include <sstream>

#include "../../ptx/errors.h"
#include "../extension.h"

namespace stc::hopper {

namespace {
const size_t kSlot = new_cta_state_slot();
}

HopperCta& hopper_state(ExecCtx& c) {
  HopperCta& st = cta_state<HopperCta>(c.cta, kSlot);
  if (st.warps.size() != c.cta.warps.size()) {
    st.warps.assign(c.cta.warps.size(), {});
    st.groups.assign((c.cta.warps.size() + 3) / 4, {});
  }
  return st;
}

void note_tma(ExecCtx& c, uint64_t bar, uint64_t bytes) {
  TmaPhase& p = hopper_state(c).tma[bar];
  if (!p.open) p = {c.L.clock, 0, true};
  p.bytes += bytes;
}

void report_tma_wait(ExecCtx& c, uint64_t bar) {
  HopperCta& st = hopper_state(c);
  const auto it = st.tma.find(bar);
  if (it == st.tma.end()) return;
  it->second.open = false;
  const uint64_t elapsed = c.L.clock - std::min(c.L.clock, it->second.first_issue);
  c.rec.work.put(BulkWaitWork{bar, static_cast<uint32_t>(std::min<uint64_t>(elapsed, UINT32_MAX)),
                              static_cast<uint32_t>(std::min<uint64_t>(it->second.bytes, UINT32_MAX))});
}

void hopper_fault(const ExecCtx& c, const Instr& in, const std::string& what) {
  std::ostringstream s;
  s << "kernel '" << c.L.kernel->name << "', " << c.L.kernel->file << ":" << in.line << " `" << in.text
    << "`: " << what << " (block (" << c.cta.ctaid[0] << "," << c.cta.ctaid[1] << "," << c.cta.ctaid[2]
    << "), warp " << c.w.warp_in_cta << ")";
  throw SimFault(s.str());
}

Arrival arrive(ExecCtx& c, const Instr& in, HopperCta& st) {
  const uint32_t w = c.w.warp_in_cta, g = w / 4;
  WarpWgmma& me = st.warps[w];
  WarpgroupSync& wg = st.groups[g];
  if (me.arrived) {
    if (wg.gen != me.gen) {
      me.arrived = false;
      return Arrival::Released;
    }
    c.w.waiting = true;
    return Arrival::Wait;
  }
  if (4 * g + 4 > c.cta.warps.size())
    hopper_fault(c, in, "warpgroup " + std::to_string(g) + " is incomplete: the block has " +
                            std::to_string(c.cta.warps.size()) + " warps (a warpgroup is 4 consecutive warps)");
  if (c.mask != 0xffffffffu || c.w.valid != 0xffffffffu)
    hopper_fault(c, in, "a .sync.aligned warpgroup instruction needs all 32 threads of every warp active");
  for (uint32_t i = 4 * g; i < 4 * g + 4; ++i)
    if (c.cta.warps[i].done())
      hopper_fault(c, in, "warp " + std::to_string(i) + " of the warpgroup has exited");
  const int32_t pc = c.rec.pc;
  if (wg.arrived && wg.pc != pc)
    hopper_fault(c, in, "the warps of warpgroup " + std::to_string(g) + " execute different instructions "
                            "(another warp waits at instruction " + std::to_string(wg.pc) + ")");
  wg.pc = pc;
  wg.arrived |= 1u << (w % 4);
  me.arrived = true;
  me.gen = wg.gen;
  if (wg.arrived == 0xfu) return Arrival::Last;
  c.w.waiting = true;
  return Arrival::Wait;
}

void release(ExecCtx& c, HopperCta& st) {
  const uint32_t w = c.w.warp_in_cta;
  WarpgroupSync& wg = st.groups[w / 4];
  wg.arrived = 0;
  wg.pc = -1;
  ++wg.gen;
  st.warps[w].arrived = false;
  wake_waiters(c.cta);
}

}  // namespace stc::hopper
