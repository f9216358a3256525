// The launch watchdog: bounds on the simulated cycles and warp instructions of one launch (GPGPU-Sim's
// -gpgpu_max_cycle / -gpgpu_max_insn), and the host-side poll that lets a signal (Ctrl-C) stop a launch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "state.h"

namespace stc {

// Defaults far above any kernel of the suite (its largest launches simulate ~1e5-1e6 cycles and ~1e7 warp
// instructions, grids of ~1e4 blocks) and still reached by a spinning kernel in minutes, not hours
// (docs/errors.md has the host times measured). `kDefaultMaxCtas` bounds the launches that neither count
// bounds in time: a grid of up to 2^31 - 1 nearly empty blocks does few cycles and instructions per block
// but costs host time for every block (2^31 empty blocks simulate for ~10 minutes); a block that does
// real work reaches max_warp_insts far below 2^24 blocks anyway (1e10 / 2^24 = 596 warp instructions).
constexpr uint64_t kDefaultMaxCycles = 1'000'000'000;
constexpr uint64_t kDefaultMaxWarpInsts = 10'000'000'000;
constexpr uint64_t kDefaultMaxCtas = uint64_t{1} << 24;

// Per-launch limits; 0 means no limit. `max_cycles` applies to timing launches only (a functional launch
// has no cycles); `max_ctas` to the blocks of the grid, checked before the launch starts (like GPGPU-Sim's
// -gpgpu_max_cta, which stops after that many blocks).
struct LaunchLimits {
  uint64_t max_cycles = kDefaultMaxCycles;
  uint64_t max_warp_insts = kDefaultMaxWarpInsts;
  uint64_t max_ctas = kDefaultMaxCtas;
};

// Asked every few milliseconds of host time whether the launch must stop (a signal arrived); true: stop.
using InterruptPoll = std::function<bool()>;

// A warp that has not finished, for the watchdog's report of where the warps are.
struct LiveWarp {
  const CtaState* cta;
  const WarpState* warp;
};

class Watchdog {
 public:
  Watchdog(const LaunchLimits& limits, InterruptPoll poll);

  // Called once per warp instruction (functional) or per scheduler pass (timing): cheap until every
  // kPollEvery calls, or until a limit is passed. Throws WatchdogError when a count exceeds its limit (the
  // report lists the warps `live_warps()` returns) and Interrupted when the poll asks to stop.
  template <class LiveWarps>
  void check(const LaunchState& L, uint64_t warp_insts, uint64_t cycles, LiveWarps live_warps,
             uint64_t blocks_done) {
    if (--countdown_ != 0 && warp_insts <= max_warp_insts_ && cycles <= max_cycles_) return;
    countdown_ = kPollEvery;
    if (warp_insts > max_warp_insts_ || cycles > max_cycles_)
      trip(L, warp_insts, cycles, live_warps(), blocks_done);
    poll_if_due();
  }
  // The cycle limit in effect (no limit: the largest count).
  uint64_t max_cycles() const { return max_cycles_; }
  // Throws WatchdogError when the grid of L has more blocks than max_ctas: called before anything runs, so
  // a launch over the limit costs no host time and writes no device memory.
  void check_grid(const LaunchState& L) const;
  // Throws WatchdogError when the cycles a sampled launch estimates pass max_cycles: its functional
  // fast-forward does not advance the simulated cycles, so check() cannot see them during the launch.
  void check_estimate(const LaunchState& L, uint64_t cycles, uint64_t warp_insts) const;

 private:
  static constexpr uint32_t kPollEvery = 1024;
  static constexpr std::chrono::milliseconds kPollInterval{10};

  [[noreturn]] void trip(const LaunchState& L, uint64_t warp_insts, uint64_t cycles,
                         const std::vector<LiveWarp>& live, uint64_t blocks_done) const;
  void poll_if_due();

  LaunchLimits given_;             // as given (0: none), for the report
  uint64_t max_cycles_;            // effective (no limit: the largest count)
  uint64_t max_warp_insts_;
  InterruptPoll poll_;
  uint32_t countdown_ = kPollEvery;
  std::chrono::steady_clock::time_point last_poll_;
};

}  // namespace stc
