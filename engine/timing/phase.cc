#include "phase.h"

#include "sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stc {

namespace {
constexpr int32_t kNoPc = std::numeric_limits<int32_t>::max();

// Half the L1 distance between two normalised vectors of n entries, given as functions of the index.
template <class A, class B>
double half_l1(size_t n, A a, B b) {
  double dist = 0;
  for (size_t i = 0; i < n; ++i) dist += std::fabs(a(i) - b(i));
  return dist / 2;
}
bool within(double a, double b, double tol) { return std::fabs(a - b) <= tol * std::max(std::fabs(a), std::fabs(b)); }
// |a - ref| / ref (0 for a reference <= 0).
double deviation(double a, double ref) { return ref > 0 ? std::fabs(a - ref) / ref : 0.0; }
bool same_loop(const LoopSpan& a, const LoopSpan& b) { return a.head == b.head && a.tail == b.tail; }
}  // namespace

PhaseSampler::PhaseSampler(double tolerance, size_t code_size, uint64_t warps)
    : tol_(tolerance), need_(std::max<uint64_t>(1, warps)), lo_(kNoPc) {
  if (!enabled()) return;
  bbv_.assign(code_size, 0);
}

void PhaseSampler::on_backedge(int32_t pc, uint64_t warp_key, uint64_t t, int32_t head) {
  if (pc > loop_.tail) {  // a loop that ends later: the one to follow (an outer loop, or the next phase's)
    loop_ = {head, pc};
    last_iter_.clear();
  }
  if (pc != loop_.tail) return;
  ++iters_;
  auto [it, fresh] = last_iter_.try_emplace(warp_key, t);
  if (!fresh) {
    auto& [sum, count] = cta_period_[warp_key >> 6];
    sum += static_cast<double>(t - it->second);
    ++count;
    it->second = t;
  }
}

void PhaseSampler::begin(uint64_t t, const Stats& stats, uint64_t resident_events) {
  std::fill(bbv_.begin(), bbv_.end(), 0);
  cta_period_.clear();
  insts_ = iters_ = 0;
  lo_ = kNoPc;
  hi_ = -1;
  start_t_ = t;
  start_events_ = resident_events;
  snap_ = stats.v;
}

void PhaseSampler::close_window(uint64_t t, const Stats& stats, uint64_t resident_events, uint64_t live_warps) {
  Window w;
  w.loop = loop_;
  w.pure = loop_.valid() && lo_ >= loop_.head && hi_ <= loop_.tail && resident_events == start_events_ &&
           !snap_.empty();
  w.cycles = t - start_t_;
  w.insts = insts_;
  w.iters = iters_;
  uint64_t periods = 0;
  double period = 0;
  for (const auto& [cta, p] : cta_period_) {  // integer cycles: the sum is exact in any order
    period += p.first;
    periods += p.second;
  }
  w.period = periods ? period / static_cast<double>(periods) : 0.0;
  w.bbv = bbv_;
  w.cta_period = cta_period_;
  if (!snap_.empty()) {
    const auto& defs = stat_defs();
    w.delta.assign(stats.v.size(), 0.0);
    for (size_t i = 0; i < stats.v.size() && i < defs.size(); ++i)
      if (defs[i].kind == StatKind::COUNTER) w.delta[i] = stats.v[i] - snap_[i];
  }
  if (w.pure && w.period > 0 && w.insts > 0) {  // the loop's pace measured in detail: kept for the estimate
    Seen seen{w.loop, w.period, std::vector<double>(w.bbv.size())};
    for (size_t i = 0; i < w.bbv.size(); ++i) seen.mix[i] = w.bbv[i] / static_cast<double>(w.insts);
    for (Skip& skip : skips_)
      skip.deviation = std::max(skip.deviation, skip_deviation(skip, seen.loop, seen.period, seen.mix));
    seen_.push_back(std::move(seen));
  }
  first_ = std::move(prev_);
  prev_ = std::move(last_);
  last_ = std::move(w);
  need_ = std::max<uint64_t>(1, live_warps);
  begin(t, stats, resident_events);
}

bool PhaseSampler::agree(const Window& a, const Window& b) const {
  if (!a.pure || !b.pure || a.loop.head != b.loop.head || a.loop.tail != b.loop.tail) return false;
  if (!a.cycles || !b.cycles || !a.insts || !b.insts || a.period <= 0 || b.period <= 0) return false;
  const double ipc_a = static_cast<double>(a.insts) / static_cast<double>(a.cycles);
  const double ipc_b = static_cast<double>(b.insts) / static_cast<double>(b.cycles);
  if (!within(ipc_a, ipc_b, tol_) || !within(a.period, b.period, tol_)) return false;
  // The same code mix: half the L1 distance of the normalised per-instruction execution vectors.
  const double na = static_cast<double>(a.insts), nb = static_cast<double>(b.insts);
  return half_l1(a.bbv.size(), [&](size_t i) { return a.bbv[i] / na; },
                 [&](size_t i) { return b.bbv[i] / nb; }) <= tol_;
}

double PhaseSampler::mix_distance(const std::vector<uint32_t>& counts, int32_t lo) const {
  const double windows = static_cast<double>(prev_.insts + last_.insts);
  double total = 0;
  for (uint32_t c : counts) total += c;
  if (windows <= 0 || total <= 0) return 1.0;
  const auto round = [&](size_t pc) {
    const int64_t i = static_cast<int64_t>(pc) - lo;
    return i >= 0 && static_cast<size_t>(i) < counts.size() ? counts[static_cast<size_t>(i)] / total : 0.0;
  };
  return half_l1(std::min(prev_.bbv.size(), last_.bbv.size()),
                 [&](size_t pc) { return (prev_.bbv[pc] + last_.bbv[pc]) / windows; }, round);
}

LoopSpan PhaseSampler::steady_loop() const {
  // Three windows, each pair agreeing: a slow drift is not taken for a steady state.
  if (!enabled() || !agree(first_, prev_) || !agree(prev_, last_) || !agree(first_, last_)) return {};
  // Nor three periods that still move one way (a pipeline's first iterations settling, within the tolerance
  // but not yet at the pace the rest of the loop runs at: measured, h100 mma.sync 64x3136x576 +1.2 % against
  // an estimate of 0.9 %): the phase is steady once the periods fluctuate.
  if ((first_.period > prev_.period && prev_.period > last_.period) ||
      (first_.period < prev_.period && prev_.period < last_.period))
    return {};
  return last_.loop;
}

void PhaseSampler::account(double cycles, uint64_t warp_insts, uint64_t iterations, Stats& stats, uint64_t t,
                           uint64_t resident_events) {
  const double measured = static_cast<double>(prev_.cycles + last_.cycles);
  Skip skip{last_.loop, (prev_.period + last_.period) / 2, cycles, 0.0, std::vector<double>(last_.bbv.size())};
  const double insts = static_cast<double>(prev_.insts + last_.insts);
  for (size_t i = 0; i < skip.mix.size() && i < prev_.bbv.size(); ++i)
    skip.mix[i] = (prev_.bbv[i] + last_.bbv[i]) / insts;
  for (const Seen& seen : seen_)  // every earlier pure window of the loop and phase (those that set the pace too)
    skip.deviation = std::max(skip.deviation, skip_deviation(skip, seen.loop, seen.period, seen.mix));
  if (skips_.empty()) first_skip_t_ = t;
  skips_.push_back(std::move(skip));
  for (size_t i = 0; i < stats.v.size() && i < last_.delta.size() && i < prev_.delta.size(); ++i)
    stats.v[i] += (prev_.delta[i] + last_.delta[i]) * cycles / measured;
  ++count_;
  warp_insts_ += warp_insts;
  iterations_ += iterations;
  cycles_ += cycles;
  first_ = Window();
  prev_ = Window();
  last_ = Window();
  last_iter_.clear();
  begin(t, stats, resident_events);
}

uint64_t PhaseSampler::finish(Stats& stats, uint64_t detailed_cycles) const {
  const uint64_t extra = static_cast<uint64_t>(std::llround(cycles_));
  const double total = static_cast<double>(detailed_cycles + extra);
  stats[TStat::SampleMode] = static_cast<double>(count_    ? SampleMode::PhaseSampled
                                                 : uneven_ ? SampleMode::UnevenCtas
                                                           : SampleMode::NoSteadyPhase);
  stats[TStat::SampleSkippedCycles] = static_cast<double>(extra);
  // Each fast-forward's cycles are charged with the largest relative deviation from its period that the loop
  // showed where it was measured in detail (its windows, later pure windows of the loop, the periods of its
  // other fast-forwards), at least the tolerance (docs/performance.md).
  double charged = 0;
  for (const Skip& skip : skips_) {
    double worst = std::max(tol_, skip.deviation);
    for (const Skip& other : skips_)
      if (same_loop(other.loop, skip.loop)) worst = std::max(worst, deviation(other.period, skip.period));
    charged += worst * skip.cycles;
  }
  // The detailed cycles after the first fast-forward ran from the state it left (the clock did not move
  // during it: a pace that drifts with time restarts from the earlier state; the caches hold the lines of the
  // last detailed window): charged at the tolerance too (measured: TVW h100 layer4.0.conv2, whose iterations
  // after the fast-forwards ran ~1 % faster than full detail's at that point, -0.94 % against 0.58 % without).
  if (!skips_.empty() && detailed_cycles > first_skip_t_)
    charged += tol_ * static_cast<double>(detailed_cycles - first_skip_t_);
  stats[TStat::SampleErrorEstimate] = total > 0 ? charged / total : 0.0;
  stats[TStat::SampleFfwdCount] = static_cast<double>(count_);
  stats[TStat::SampleFfwdCycles] = static_cast<double>(extra);
  stats[TStat::SampleFfwdWarpInsts] = static_cast<double>(warp_insts_);
  stats[TStat::SampleFfwdIterations] = static_cast<double>(iterations_);
  return extra;
}

double PhaseSampler::skip_deviation(const Skip& skip, const LoopSpan& loop, double period,
                                    const std::vector<double>& mix) const {
  if (!same_loop(skip.loop, loop) || mix.size() != skip.mix.size()) return -1;
  if (half_l1(mix.size(), [&](size_t i) { return mix[i]; }, [&](size_t i) { return skip.mix[i]; }) > tol_) return -1;
  return deviation(period, skip.period);
}

std::pair<double, uint64_t> PhaseSampler::cta_period(uint64_t cta) const {
  std::pair<double, uint64_t> total{0.0, 0};
  for (const Window* w : {&prev_, &last_}) {
    auto it = w->cta_period.find(cta);
    if (it == w->cta_period.end()) continue;
    total.first += it->second.first;
    total.second += it->second.second;
  }
  return total;
}

}  // namespace stc
