// Intra-launch time sampling (launch(..., sample=tolerance) on a grid too small for wave sampling,
// docs/performance.md): the timing model runs in detail and cuts its time into windows of about one
// iteration per warp of the outermost loop running. Once the last three windows ran only that loop's code
// and agree pairwise within the tolerance (the same per-instruction execution vector, IPC and iteration
// period), every resident CTA is fast-forwarded functionally (fast_forward.h) by whole iterations, as many
// as it would complete in the same span of time at its measured pace, until the first warp leaves the loop.
// The clock does not move: the span's cycles and the counters of the measured windows scaled to it are added
// to the launch, and detailed simulation resumes (loop tails, epilogues, and further phases in detail).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../stats.h"
#include "fast_forward.h"

namespace stc {

class PhaseSampler {
 public:
  // `tolerance` <= 0 disables it. `code_size`: instructions of the kernel; `warps`: warps resident at the
  // start (a window's first length).
  PhaseSampler(double tolerance, size_t code_size, uint64_t warps);

  bool enabled() const { return tol_ > 0; }
  // Rounds one fast-forward may run before detail resumes and the pace is measured again: a loop longer than
  // that is sampled at several points, so that the pace's variation over the loop (an oscillation slower
  // than three windows, the transitions where detail resumes) is measured and enters the error estimate.
  static constexpr uint64_t kMaxRounds = 16;

  // A warp instruction at `pc` issued at cycle `t` by warp `warp_key` (its CTA's linear id << 6 | its warp
  // in the CTA); `backedge`: a taken back-edge to `head`.
  void on_issue(int32_t pc, uint64_t warp_key, uint64_t t, bool backedge, int32_t head) {
    ++bbv_[static_cast<size_t>(pc)];
    ++insts_;
    if (pc < lo_) lo_ = pc;
    if (pc > hi_) hi_ = pc;
    if (backedge) on_backedge(pc, warp_key, t, head);
  }
  // The current window has its length (iterations of the loop, about one per live warp).
  bool window_full() const { return iters_ >= need_; }
  // Closes the window at cycle `t`: `stats` as they are now, `resident_events` the CTA dispatches and
  // retirements so far, `live_warps` the unfinished warps of resident CTAs.
  void close_window(uint64_t t, const Stats& stats, uint64_t resident_events, uint64_t live_warps);
  // The loop of a steady phase (the last three windows ran only its code, with the same resident CTAs, and
  // agree pairwise within the tolerance), or an invalid span.
  LoopSpan steady_loop() const;
  // Cycles between two iterations of one warp of CTA `cta` (linear id), summed over the last two windows,
  // and their count.
  std::pair<double, uint64_t> cta_period(uint64_t cta) const;
  double tolerance() const { return tol_; }
  // Half the L1 distance between the normalised execution vector `counts` (warp instructions per pc from
  // `lo`) and that of the last two windows: 0 for the same code mix, 1 for disjoint code.
  double mix_distance(const std::vector<uint32_t>& counts, int32_t lo) const;
  // A fast-forward of `cycles` ran `warp_insts` warp instructions, `iterations` warp-iterations, functionally:
  // adds the counters of the last two windows scaled to `cycles`; windows then start anew at `t`
  // (`resident_events` as for close_window).
  void account(double cycles, uint64_t warp_insts, uint64_t iterations, Stats& stats, uint64_t t,
               uint64_t resident_events);
  // Writes the fast-forward stats and the sampling group's mode, skipped cycles and error estimate (this
  // sampler runs only where wave sampling cannot skip); returns the cycles to add to `detailed_cycles`.
  // The estimate charges each fast-forward's cycles with the largest relative deviation from the period it
  // was timed at that the loop showed anywhere it was measured in detail (the windows that set the pace,
  // every pure window of the loop after it, the other fast-forwards' periods), at least the tolerance.
  uint64_t finish(Stats& stats, uint64_t detailed_cycles) const;
  bool skipped() const { return count_ > 0; }
  // Cycles the fast-forwards so far stand for (the launch's clock runs behind its estimate by them).
  uint64_t skipped_cycles() const { return static_cast<uint64_t>(cycles_); }
  // A steady loop was left in full detail because the SMs held different numbers of CTAs (sampled_run.cc):
  // the mode says so when no fast-forward happened.
  void refuse_uneven() { uneven_ = true; }

 private:
  struct Window {
    bool pure = false;           // only the loop's code ran, and the resident CTAs did not change
    LoopSpan loop;
    uint64_t cycles = 0, insts = 0, iters = 0;
    double period = 0;           // mean cycles per iteration of one warp (0: none measured)
    std::vector<uint32_t> bbv;   // warp instructions per pc
    std::vector<double> delta;   // counters over the window
    // cycles between two iterations of a warp, summed per CTA (linear id), and their number
    std::unordered_map<uint64_t, std::pair<double, uint64_t>> cta_period;
  };
  void on_backedge(int32_t pc, uint64_t warp_key, uint64_t t, int32_t head);
  void begin(uint64_t t, const Stats& stats, uint64_t resident_events);
  bool agree(const Window& a, const Window& b) const;

  double tol_;
  uint64_t need_;
  // The current window.
  std::vector<uint32_t> bbv_;
  uint64_t insts_ = 0, iters_ = 0, start_t_ = 0, start_events_ = 0;
  int32_t lo_, hi_ = -1;
  std::vector<double> snap_;     // the stats at the window's start
  // The loop tracked: the back-edge with the highest pc seen; per warp the cycle of its last iteration.
  LoopSpan loop_;
  std::unordered_map<uint64_t, uint64_t> last_iter_;
  std::unordered_map<uint64_t, std::pair<double, uint64_t>> cta_period_;  // the current window's, as in Window
  Window first_, prev_, last_;  // the last three windows
  // Fast-forwards so far.
  uint64_t count_ = 0, warp_insts_ = 0, iterations_ = 0;
  bool uneven_ = false;
  double cycles_ = 0;
  // Each fast-forward: its loop, the mean iteration period of the windows that set its pace, its cycles, and
  // the largest relative deviation from that period seen in a detailed window of the loop so far.
  struct Skip {
    LoopSpan loop;
    double period = 0, cycles = 0, deviation = 0;
    std::vector<double> mix;  // the normalised execution vector of the windows that set the pace
  };
  std::vector<Skip> skips_;
  // The detailed cycle at which the first fast-forward happened: everything simulated after it starts from a
  // state the fast-forward carried over approximately (caches, queues, state that moves with time).
  uint64_t first_skip_t_ = 0;
  // Every pure window closed so far with a measured period: its loop, period and normalised execution vector
  // (a skip is charged with the deviation of those of its loop and code mix, before and after it).
  struct Seen {
    LoopSpan loop;
    double period = 0;
    std::vector<double> mix;
  };
  std::vector<Seen> seen_;
  // The deviation of a pure window (loop, period, mix) from `skip`'s period; -1 when it is another loop or
  // its code mix differs from the skip's by more than the tolerance (another phase of the loop: a pipeline's
  // last iterations, which run in detail).
  double skip_deviation(const Skip& skip, const LoopSpan& loop, double period, const std::vector<double>& mix) const;
};

}  // namespace stc
