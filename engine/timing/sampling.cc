#include "sampling.h"

#include <algorithm>
#include <cmath>

namespace stc {

WaveSampler::WaveSampler(double tolerance, uint64_t wave_ctas, uint64_t total_ctas)
    : tol_(tolerance), wave_(wave_ctas ? wave_ctas : 1), total_(total_ctas) {}

void WaveSampler::on_retire(uint64_t t, uint64_t insts, const Stats& stats) {
  if (!enabled()) return;
  if (retired_ == 0) ref_insts_ = insts;
  else if (insts != ref_insts_) irregular_ = true;
  if (++retired_ % wave_ != 0) return;
  if (skipped_) {  // the first wave after the skip: how the detailed tail joined the skipped span
    if (!after_skip_) {
      after_skip_ = t;
      durations_.push_back(t - ends_.back());
    }
    return;
  }
  if (!ends_.empty()) durations_.push_back(t - ends_.back());  // the second wave on
  ends_.push_back(t);
  snaps_.push_back(stats.v);
  if (snaps_.size() > 2) snaps_.erase(snaps_.begin());
}

uint64_t WaveSampler::ctas_to_skip(uint64_t next) {
  if (!enabled() || skipped_ || irregular_ || ends_.size() < 3) return 0;
  const size_t n = ends_.size();
  const uint64_t last = ends_[n - 1] - ends_[n - 2], prev = ends_[n - 2] - ends_[n - 3];
  if (static_cast<double>(last > prev ? last - prev : prev - last) > tol_ * static_cast<double>(last)) return 0;
  // Keep the last full wave and the partial tail in detail: the grid drains as it would.
  const uint64_t left = total_ > next ? total_ - next : 0;
  const uint64_t waves = left / wave_;
  if (waves < 2) {
    too_few_ = true;
    return 0;
  }
  skipped_ = true;
  wave_cycles_ = last;
  const std::vector<double>& a = snaps_[0];
  const std::vector<double>& b = snaps_[1];
  delta_.assign(b.size(), 0.0);
  const auto& defs = stat_defs();
  for (size_t i = 0; i < b.size() && i < defs.size(); ++i)
    if (defs[i].kind == StatKind::COUNTER) delta_[i] = b[i] - a[i];
  return (waves - 1) * wave_;
}

void WaveSampler::account_skipped(uint64_t ctas, uint64_t insts, Stats& stats) {
  // The skipped CTAs cost what a detailed wave cost per warp instruction (for regular CTAs: per CTA).
  const double per_wave = static_cast<double>(ref_insts_) * static_cast<double>(wave_);
  const double waves = per_wave > 0 ? static_cast<double>(insts) / per_wave : 0.0;
  scaled_ = insts != ref_insts_ * ctas;
  skipped_ctas_ = ctas;
  skipped_cycles_ = waves * static_cast<double>(wave_cycles_);
  for (size_t i = 0; i < delta_.size(); ++i) stats.v[i] += waves * delta_[i];
}

uint64_t WaveSampler::skipped_cycles_for(uint64_t insts) const {
  const double per_wave = static_cast<double>(ref_insts_) * static_cast<double>(wave_);
  if (per_wave <= 0) return 0;
  return static_cast<uint64_t>(std::llround(static_cast<double>(insts) / per_wave * static_cast<double>(wave_cycles_)));
}

uint64_t WaveSampler::finish(Stats& stats, uint64_t detailed_cycles) const {
  SampleMode mode = SampleMode::Off;
  if (enabled()) {
    if (skipped_) mode = scaled_ ? SampleMode::SampledScaled : SampleMode::Sampled;
    else if (irregular_) mode = SampleMode::Irregular;
    else if (too_few_ || too_few_waves()) mode = SampleMode::TooFewWaves;
    else mode = SampleMode::NotStable;
  }
  const uint64_t extra = static_cast<uint64_t>(std::llround(skipped_cycles_));
  const double total = static_cast<double>(detailed_cycles + extra);
  stats[TStat::SampleMode] = static_cast<double>(mode);
  stats[TStat::SampleSkippedCtas] = static_cast<double>(skipped_ctas_);
  stats[TStat::SampleSkippedCycles] = static_cast<double>(extra);
  // The skip needs the last two detailed waves within the tolerance; the estimate assumes every skipped wave
  // is within it of the steady state too (tolerance x the skipped share). Transitions at the edges of the
  // skipped span are not in it: it is an estimate, not a guarantee (docs/performance.md).
  // Since issue 48: the tolerance, or the largest relative deviation from the wave the skip was timed at of
  // any complete detailed wave after the first, and of the first full wave after the skip, if larger.
  double worst = tol_;
  if (wave_cycles_ > 0)
    for (uint64_t d : durations_)
      worst = std::max(worst, std::fabs(static_cast<double>(d) - static_cast<double>(wave_cycles_)) /
                                  static_cast<double>(wave_cycles_));
  stats[TStat::SampleErrorEstimate] = total > 0 ? worst * static_cast<double>(extra) / total : 0.0;
  stats[TStat::SampleWaveCtas] = static_cast<double>(wave_);
  return extra;
}

}  // namespace stc
