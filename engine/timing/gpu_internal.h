// The timing model's inside, shared by its source files (gpu.cc: construction, dispatch, the scheduler and
// issue; issue_facts.cc; icache.cc; completion_time.cc; sampled_run.cc; run_loops.cc): the records of an
// SM, its sub-cores, CTAs and warps, and the per-thread copies of what an SM's steps write. Only the timing
// model's own files include it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "gpu.h"

namespace stc {

// A cycle that never comes: a warp or sub-core that sleeps for good.
inline constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
// The issue units of a sub-core, Unit::NONE included (SubCore::unit_free; WarpT::mshr_unit: a folded one).
inline constexpr size_t kUnits = static_cast<size_t>(Unit::NONE) + 1;

// The SASS memory instructions a PTX memory instruction becomes (completion_time.cc); issue() asks through
// TimingModel::memory_instructions_named, which stays in gpu.cc beside it so that the compiler inlines it.
uint32_t memory_instructions(const Instr& in, WarpRecord& rec);

// What an SM's steps write beyond the SM itself, one copy per host thread (run_parallel); an SM's steps
// write the copy of the thread that runs them (SmT::part). The first thread's is the model's own (exec_,
// L_, stats_, rec_): a launch on one thread runs as before.
struct TimingModel::Part {
  std::unique_ptr<LaunchState> own_launch;  // a copy of the launch: its clock (%clock) is this thread's
  std::unique_ptr<Executor> own_exec;       // its functional counts
  std::unique_ptr<Stats> own_stats;         // its counts, added to the launch's at the end
  std::unique_ptr<WarpRecord> own_rec;
  LaunchState* L = nullptr;
  Executor* exec = nullptr;
  Stats* stats = nullptr;
  WarpRecord* rec = nullptr;
  std::vector<MemAccess> async_global, async_shared;  // complete_time(): a cp.async's two sides
  struct NamedCount {
    AccessShape shape;
    uint32_t count = 0;
  };
  static constexpr uint32_t kNamedCountBits = 6;
  std::array<NamedCount, size_t{1} << kNamedCountBits> mem_insts{};  // memory_instructions_named()
  // run_parallel's phase: where the SMs this thread ran stopped (before a stage that may touch shared
  // state) or paused (at the horizon)
  std::vector<std::pair<uint64_t, uint32_t>> stopped, paused;
};

// The fields the scheduler reads of every warp it visits (check(), sleep_after_issue) come first, in the
// record's first host cache line (the record is line-aligned): a sub-core's warps lie apart, so a visit
// costs one line, not two. The scoreboard's address is there too: issue() asks for the scoreboard lines of
// the warp's next instruction as it starts, which waited for a second cold line of the record before.
struct alignas(64) TimingModel::WarpT {
  uint64_t hint = 0;          // the warp cannot issue before this cycle (cached result of check)
  uint64_t next_issue = 0;
  uint64_t operands_ready = 0;  // when the registers of its next instruction are ready (see issue())
  WarpState* w = nullptr;
  CtaSlot* cta = nullptr;
  uint32_t line = UINT32_MAX;  // the code line in its instruction buffer (icache.*)
  TStat hint_reason = TStat::StallScoreboard;
  bool after_branch = false;
  // The warp's next instruction, not a global store, passed every test of check() before the MSHRs' and
  // found the SM's MSHRs full. Those tests read only the warp's own state, which changes only when it
  // issues (which clears this), and the free cycle of its unit (mshr_unit; kUnits: none, folded) on the
  // sub-core: while that is still past and the MSHRs are full, check() answers as the MSHR test does. (A
  // global store's test also reads the SM's store path, which another sub-core's store may take once the
  // MSHRs free up.) In the first host line, which every visit reads.
  bool mshr_blocked = false;
  uint8_t mshr_unit = 0;
  // It finished in its issue (a warp the functional core finishes elsewhere, in a fast-forward, is told
  // by check()): check() answers it idle for good, and the scheduler reads that here, in the first line.
  bool finished = false;
  uint64_t* ready = nullptr;  // reg_ready.data()
  std::vector<uint64_t, LaunchAllocator<uint64_t>> reg_ready;  // on the launch's huge pages (huge_pool.h)
  std::vector<uint64_t> groups;  // completion cycle of each committed cp.async group, oldest first
  uint64_t open_group = 0;
  uint64_t last_done = 0;
  uint32_t want = UINT32_MAX;  // the line last requested for it, and when that arrives
  double want_ready = 0;
};

struct TimingModel::CtaSlot {
  CtaState cta;
  std::vector<WarpT, LaunchAllocator<WarpT>> warps;
  uint32_t live = 0;
  uint64_t insts = 0;  // warp instructions issued by the CTA's warps
  // Per completion object of bulk copies (BulkCopyWork::key): when the current phase's copies are back from
  // L2; `open` until a wait that saw the phase complete reads it (the next copy then starts a new phase).
  struct BulkPhase {
    uint64_t key = 0, done = 0;
    bool open = false;
  };
  std::vector<BulkPhase> bulk;
  BulkPhase& bulk_phase(uint64_t key) {
    for (BulkPhase& p : bulk)
      if (p.key == key) return p;
    return bulk.emplace_back(BulkPhase{key, 0, false});
  }
};

struct TimingModel::SubCore {
  std::vector<WarpT*> warps;  // in age order
  std::array<uint64_t, kUnits> unit_free{};  // per unit: when its earliest pipe accepts an instruction
  std::vector<uint64_t> tensor_pipes;        // tensor.pipes_per_subcore Tensor Core pipes
  uint64_t wake = 0;
  // The cycle of the pass sleep_after_issue skipped while a warp of the sub-core was blocked (at a barrier,
  // or waiting on an extension): a release in that cycle by a sub-core visited before this one brings the
  // pass back (wake_subcores). A past cycle never matches again.
  uint64_t skipped = std::numeric_limits<uint64_t>::max();
  WarpT* last = nullptr;  // the last warp that issued, while it has not finished (GTO's first choice)
  size_t rr = 0;
  uint64_t acct_t = 0;
  TStat pending = TStat::StallIdle;
  // L0 instruction cache (icache.*), direct-mapped: line + 1 per entry (0: empty), the cycle it is filled,
  // and when the sub-core's fetch may start the next fill
  std::vector<uint32_t> l0_tag;
  std::vector<double> l0_ready;
  double fetch_free = 0;
};

struct TimingModel::SmT {
  uint32_t id = 0;
  std::vector<std::unique_ptr<CtaSlot>> ctas;
  std::vector<std::unique_ptr<CtaSlot>> spare;  // retired CTA slots, reused so their buffers stay allocated
  std::vector<SubCore> subs;
  uint32_t warp_slot = 0;
  uint32_t resident_warps = 0;
  uint64_t occ_t = 0;
  uint64_t wake = 0;  // the earliest wake of its sub-cores (only this SM's own processing changes them)
  std::vector<uint32_t> l1_tag;  // L1 instruction cache (icache.*), direct-mapped as the L0s
  std::vector<double> l1_ready;
  std::vector<uint32_t> l15_tag;  // the GPC-level instruction cache above the L1 (icache.l15_bytes), as the L1
  bool icaches_filled = false;    // fill_icaches() ran
  size_t resume = 0;              // the stage of its current cycle sm_cycle goes on from (subs.size(): dispatch)
  uint64_t idle_at = std::numeric_limits<uint64_t>::max();  // run_ahead: the cycle it passes idle, left empty
  Part* part = nullptr;           // the copies its steps write: the running thread's (run_parallel)
};

}  // namespace stc
