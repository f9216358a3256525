// Sampled simulation of a large grid (launch(..., sample=tolerance)): the timing model simulates waves of
// CTAs in detail until the durations of the last two complete waves agree within the tolerance, then the
// middle of the grid runs functionally only (every output is computed) and is timed from that steady state;
// the last full wave and the partial tail wave are simulated in detail again. A wave is the CTAs the GPU
// holds at once (SMs x CTAs per SM); wave i ends when the (i x wave)-th CTA retires.
//
// Honest for irregular grids: while any two detailed CTAs executed different numbers of warp instructions,
// nothing is skipped (full detail). If the skipped CTAs turn out to differ from the detailed ones, their time
// and counters are scaled by their warp instructions rather than their number, and the stats say so.
#pragma once

#include <cstdint>
#include <vector>

#include "../stats.h"

namespace stc {

// What the `sample_mode` stat reports (docs/stats.md).
enum class SampleMode : int {
  Off = 0,            // full detail: sampling not requested
  Sampled = 1,        // the middle waves were skipped, timed from the steady state
  TooFewWaves = 2,    // full detail: the grid has too few waves to skip one
  Irregular = 3,      // full detail: detailed CTAs executed different instruction counts
  NotStable = 4,      // full detail: no two consecutive waves agreed within the tolerance
  SampledScaled = 5,  // skipped CTAs differed from the detailed ones: their time scaled by their instructions
  PhaseSampled = 6,   // a grid of few waves: steady loop iterations were fast-forwarded (phase.h)
  NoSteadyPhase = 7,  // full detail: a grid of few waves whose loop windows never agreed (or that has no loop)
  UnevenCtas = 8,     // full detail: a grid of few waves with a steady loop, its SMs holding unlike CTA counts
};

class WaveSampler {
 public:
  // `tolerance` <= 0 disables sampling. `wave_ctas`: CTAs resident at once on the GPU.
  WaveSampler(double tolerance, uint64_t wave_ctas, uint64_t total_ctas);

  bool enabled() const { return tol_ > 0; }
  // The grid has too few waves for this sampler to skip one (intra-launch phase sampling takes it, phase.h).
  bool too_few_waves() const { return total_ < 5 * wave_; }
  // A CTA retired at cycle `t` after executing `insts` warp instructions; `stats` are the launch's now.
  void on_retire(uint64_t t, uint64_t insts, const Stats& stats);
  // The number of CTAs, from CTA `next` on, to run functionally only instead of dispatching them (0: none).
  uint64_t ctas_to_skip(uint64_t next);
  // The skipped CTAs executed `insts` warp instructions in all: adds their estimated cycles and counters.
  void account_skipped(uint64_t ctas, uint64_t insts, Stats& stats);
  // The cycles skipped CTAs that executed `insts` warp instructions so far are estimated to take (what
  // account_skipped will add for them): the watchdog projects the launch's cycles during the fast-forward.
  uint64_t skipped_cycles_for(uint64_t insts) const;
  // Writes the sampling stats; returns the cycles to add to the detailed end of the launch.
  uint64_t finish(Stats& stats, uint64_t detailed_cycles) const;

 private:
  double tol_;
  uint64_t wave_, total_;
  uint64_t retired_ = 0;
  uint64_t ref_insts_ = 0;       // warp instructions of the first retired CTA
  bool irregular_ = false;       // two detailed CTAs differed
  bool skipped_ = false;         // the skip happened (at most once)
  bool scaled_ = false;          // skipped CTAs differed from the detailed ones
  bool too_few_ = false;         // the stable point came too late to skip a wave
  std::vector<uint64_t> ends_;   // cycle at which each complete wave ended
  std::vector<std::vector<double>> snaps_;  // the stats at each wave's end (the last two kept)
  std::vector<double> delta_;    // counters of the last detailed wave
  // Every complete detailed wave's duration after the first (which starts cold), and the first full wave
  // after the skip (the transition into the detailed tail): the estimate charges the skipped cycles with the
  // largest relative deviation of any of them from the wave the skip was timed at, at least the tolerance.
  std::vector<uint64_t> durations_;
  uint64_t after_skip_ = 0;      // the first wave after the skip ended at this cycle (0: not yet)
  uint64_t wave_cycles_ = 0;    // duration of the last detailed wave
  uint64_t skipped_ctas_ = 0;
  double skipped_cycles_ = 0;
};

}  // namespace stc
