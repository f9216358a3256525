// Functional execution of a kernel launch: CTA set-up, one warp instruction at a time (the unit the timing
// model drives), barriers, and the functional-only grid loop.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "../stats.h"
#include "state.h"
#include "watchdog.h"

namespace stc {

// Dynamic instruction counts of a launch.
struct FuncStats {
  uint64_t warp_insts = 0;
  uint64_t thread_insts = 0;
  std::array<uint64_t, static_cast<size_t>(Unit::NONE) + 1> by_unit{};
  // Writes the counts into the launch's stats (gpu_sim_insn, warp_insts, warp_insts_<unit>).
  void export_to(Stats& out) const;
  // Adds the counts of `o` (another host thread's share of the launch).
  void add(const FuncStats& o) {
    warp_insts += o.warp_insts;
    thread_insts += o.thread_insts;
    for (size_t u = 0; u < by_unit.size(); ++u) by_unit[u] += o.by_unit[u];
  }
};

class Executor {
 public:
  explicit Executor(LaunchState& launch) : L_(launch) {}

  // Prepares CTA `linear_id` (registers, SIMT stacks, shared and local memory).
  void init_cta(CtaState& cta, uint32_t linear_id) const;

  // Executes the next instruction of warp `w` and describes it in `rec`. The warp must be runnable
  // (not done, not waiting at a barrier).
  void step(CtaState& cta, WarpState& w, WarpRecord& rec, uint32_t smid);

  // Releases the warps of `cta` waiting at a barrier once every live warp (or the named count) arrived.
  // Returns true when warps were released.
  bool release_barriers(CtaState& cta) const;

  // Runs the whole grid functionally (no timing), CTA after CTA, under the watchdog's instruction limit.
  void run_functional(Watchdog& watchdog);
  // Runs CTA `linear_id` to completion functionally in `cta` (warp after warp, barrier by barrier). `cycle`:
  // the timing model's current cycle (it reads %clock and the cycle limit there); 0 in functional runs.
  void run_cta(CtaState& cta, WarpRecord& rec, uint32_t linear_id, Watchdog& watchdog, uint64_t cycle);

  const FuncStats& stats() const { return stats_; }
  // Puts back counts saved earlier (sampled simulation: a fast-forward round that is undone, timing/fast_forward.h).
  void restore_stats(const FuncStats& saved) { stats_ = saved; }

 private:
  LaunchState& L_;
  FuncStats stats_;
};

uint32_t warps_per_cta(const LaunchState& L);

}  // namespace stc
