// The timing model's instruction caches (icache.*): a sub-core's L0, the SM's L1 and the level above it,
// and a warp's instruction fetch through them.
#include <algorithm>
#include <cstdint>

#include "gpu_internal.h"

namespace stc {

void TimingModel::fill_icaches(SmT& sm) {
  const TimingConfig& cfg = cfg_;
  for (auto& sub : sm.subs) {
    sub.l0_tag.assign(cfg.icache_l0_lines, 0);
    sub.l0_ready.assign(cfg.icache_l0_lines, 0);
  }
  sm.l1_tag.assign(cfg.icache_l1_lines, 0);
  sm.l1_ready.assign(cfg.icache_l1_lines, 0);
  // the level above holds the start of the code at launch (an identical launch ran before)
  sm.l15_tag.resize(cfg.icache_l15_lines);
  for (uint32_t i = 0; i < cfg.icache_l15_lines; ++i) sm.l15_tag[i] = i + 1;
  sm.icaches_filled = true;
}

double TimingModel::fill(SubCore& sub, SmT& sm, uint32_t line, double from) {
  const TimingConfig& c = cfg_;
  const double start = std::max(from, sub.fetch_free);
  double done;
  const size_t i1 = line % c.icache_l1_lines;
  if (sm.l1_tag[i1] == line + 1) {
    done = std::max(start, sm.l1_ready[i1]) + c.icache_fill;
  } else {
    (*sm.part->stats)[TStat::IcacheL1Misses] += 1;
    const size_t i15 = line % c.icache_l15_lines;
    if (sm.l15_tag[i15] == line + 1) {
      done = start + c.icache_fill;
    } else if (code_in_l2_[line] < 0) {
      done = start + c.icache_dram_fill;
      code_in_l2_[line] = done;
    } else {
      done = std::max(start + c.icache_l2_fill, code_in_l2_[line]);
    }
    sm.l15_tag[i15] = line + 1;
    sm.l1_tag[i1] = line + 1;
    sm.l1_ready[i1] = done;
  }
  (*sm.part->stats)[TStat::IcacheL0Misses] += 1;
  sub.fetch_free = done;
  const size_t i0 = line % c.icache_l0_lines;
  sub.l0_tag[i0] = line + 1;
  sub.l0_ready[i0] = done;
  return done;
}

double TimingModel::fetch(WarpT& w, SubCore& sub, SmT& sm, uint32_t line, uint64_t t) {
  const uint32_t l0 = cfg_.icache_l0_lines;
  const double now = static_cast<double>(t);
  // A line requested for the warp goes to its instruction buffer as well: another warp's fill that evicts
  // it from the L0 meanwhile does not take it from this warp.
  if (w.want != line) {
    w.want = line;
    w.want_ready = sub.l0_tag[line % l0] == line + 1 ? sub.l0_ready[line % l0] : fill(sub, sm, line, now);
  }
  const double ready = w.want_ready;
  const uint32_t next = line + 1;
  // The warp enters the line: the next one is requested, from the moment this one arrived if the warp
  // was waiting for it (the fill that wakes the warp starts the next), else from now.
  if (ready <= now && next < code_lines_ && sub.l0_tag[next % l0] != next + 1)
    fill(sub, sm, next, now - ready < 1 ? ready : now);
  return ready;
}

bool TimingModel::fetch_stays_in_sm(const WarpT& w, const SubCore& sub, const SmT& sm, uint32_t line) const {
  const TimingConfig& c = cfg_;
  // (a level of one line: the fill of `line` could evict the next line there before its own request)
  if (c.icache_l0_lines < 2 || c.icache_l1_lines < 2 || c.icache_l15_lines < 2) return false;
  const auto held = [&](uint32_t l) {
    return sub.l0_tag[l % c.icache_l0_lines] == l + 1 || sm.l1_tag[l % c.icache_l1_lines] == l + 1 ||
           sm.l15_tag[l % c.icache_l15_lines] == l + 1;
  };
  return (w.want == line || held(line)) && (line + 1 >= code_lines_ || held(line + 1));
}

}  // namespace stc
