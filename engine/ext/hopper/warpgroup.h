// Hopper's per-CTA state: warpgroup rendezvous for the .sync.aligned wgmma instructions (a warpgroup is
// four consecutive warps, warps 4g..4g+3 of the CTA) and each warp's wgmma bookkeeping; plus the error
// helper of the extension's instructions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../../func/state.h"

namespace stc::hopper {

struct WarpWgmma {
  bool arrived = false;         // waits at a warpgroup rendezvous of generation `gen`
  uint32_t gen = 0;
  bool ever_fenced = false;     // executed a wgmma.fence
  bool fenced = false;          // a wgmma.fence since its last wgmma.mma_async
  uint32_t open = 0;            // wgmma.mma_async not yet committed
  uint32_t groups = 0;          // committed groups not yet waited for
  std::vector<int32_t> d_regs;  // accumulator registers of its last wgmma.mma_async and the values
  std::vector<uint64_t> d_vals; // it wrote there ([reg index * 32 + lane])
};

struct WarpgroupSync {
  uint32_t arrived = 0;  // bit per warp of the warpgroup
  uint32_t gen = 0;
  int32_t pc = -1;       // the instruction the arrived warps wait at
};

// The TMA copies counted into one mbarrier's phase, for the timing model: when the first was issued (the
// launch clock) and their bytes. A copy issued after a wait saw the phase complete starts a new record.
struct TmaPhase {
  uint64_t first_issue = 0;
  uint64_t bytes = 0;
  bool open = false;
};

struct HopperCta : ExtCtaState {
  std::vector<WarpWgmma> warps;
  std::vector<WarpgroupSync> groups;
  std::map<uint64_t, TmaPhase> tma;  // by mbarrier shared address
};

// This CTA's Hopper state, sized for its warps.
HopperCta& hopper_state(ExecCtx& c);

// Records a TMA copy of `bytes` into the mbarrier at shared address `bar` (issued now).
void note_tma(ExecCtx& c, uint64_t bar, uint64_t bytes);
// What a wgmma.mma_async reports for its latency model (register.cc): N / 8, whether it is sparse, whether
// A comes from shared memory (a descriptor).
struct WgmmaWork {
  uint8_t n8;
  bool sparse;
  bool a_in_smem;
};

// Fills c.rec.work for a wait that saw the phase of the mbarrier at `bar` complete (a BulkWaitWork: the
// barrier, cycles since the phase's copies were issued, their bytes; register.cc turns it into the wait's
// latency, the timing core bounds that by the copies' reads through L2); closes the record.
void report_tma_wait(ExecCtx& c, uint64_t bar);

// Throws SimFault: `what` for the instruction `in` of warp c.w, naming kernel, line, text, block and warp.
[[noreturn]] void hopper_fault(const ExecCtx& c, const Instr& in, const std::string& what);

enum class Arrival {
  Wait,      // the warpgroup is not complete: the warp waits (c.w.waiting is set)
  Last,      // this warp completes the warpgroup: it performs the instruction, then calls release()
  Released,  // another warp performed the instruction for the warpgroup: nothing left to do
};

// The warp's arrival at the warpgroup-wide instruction `in` (all 32 lanes must be active, all four warps
// must exist and reach the same instruction).
Arrival arrive(ExecCtx& c, const Instr& in, HopperCta& st);
// Ends the rendezvous the last warp completed and wakes the waiting warps.
void release(ExecCtx& c, HopperCta& st);

}  // namespace stc::hopper
