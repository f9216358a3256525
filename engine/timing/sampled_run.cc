// The timing model's side of sampled simulation: CTAs skipped by the wave sampler (sampling.h) and, for the
// phase sampler (phase.h), its windows and the fast-forward of a steady loop's iterations (fast_forward.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../ptx/errors.h"
#include "fast_forward.h"
#include "gpu_internal.h"

namespace stc {

void TimingModel::skip_ctas(uint64_t n, uint64_t t) {
  const bool record = L_.record_accesses;
  L_.record_accesses = false;  // nothing times them
  L_.clock = t;
  const uint64_t before = exec_.stats().warp_insts;
  const uint64_t max_cycles = watchdog_.max_cycles();
  for (uint64_t i = 0; i < n; ++i) {
    // The cycle at which the CTAs skipped so far would have finished (the sampler's estimate): a max_cycles
    // limit trips during the fast-forward, not only at the end of the launch. %clock still reads `t`.
    const uint64_t insts = exec_.stats().warp_insts - before;
    const uint64_t projected = t + sampler_.skipped_cycles_for(insts);
    if (projected > max_cycles) {
      const uint64_t blocks = static_cast<uint64_t>(L_.grid[0]) * L_.grid[1] * L_.grid[2];
      throw WatchdogError("watchdog: kernel '" + L_.kernel->name + "' exceeded max_cycles = " +
                          std::to_string(max_cycles) + ": sampled simulation estimates " + std::to_string(projected) +
                          " cycles by block " + std::to_string(next_cta_) + " of " + std::to_string(blocks) +
                          " (its fast-forward stopped there after " + std::to_string(exec_.stats().warp_insts) +
                          " warp instructions; the blocks after it did not run)\nRaise the limit with "
                          "Engine(max_cycles=...) or launch(..., max_cycles=...); 0 means no limit.");
    }
    exec_.run_cta(skipped_cta_, rec_, static_cast<uint32_t>(next_cta_++), watchdog_, projected);
  }
  L_.record_accesses = record;
  sampler_.account_skipped(n, exec_.stats().warp_insts - before, stats_);
}

void TimingModel::settle(uint64_t t) {
  for (auto& sm : sms_) {
    occupancy_tick(*sm, t);
    for (auto& sub : sm->subs) account(sub, *sm->part->stats, t);
  }
}

void TimingModel::phase_window(uint64_t t) {
  settle(t);
  uint64_t live = 0;
  for (const auto& sm : sms_)
    for (const auto& slot : sm->ctas)
      for (const auto& w : slot->cta.warps) live += !w.done();
  phase_.close_window(t, stats_, resident_events_, live);
  const LoopSpan loop = phase_.steady_loop();
  if (loop.valid()) fast_forward(loop, t);
}

void TimingModel::fast_forward(LoopSpan loop, uint64_t t) {
  for (const auto& sm : sms_)  // every live warp in the loop, none waiting on an extension's event
    for (const auto& slot : sm->ctas)
      for (const auto& w : slot->cta.warps)
        if (!w.done() && (w.waiting || !loop.contains(w.pc()))) return;
  // SMs holding different numbers of CTAs side by side (a grid that is no whole number of CTAs per busy SM)
  // stay in full detail: their classes contend in the memory system in a way a pace per class does not carry
  // (measured: SIMT 64x64 on v100, 104 CTAs on 80 SMs, -2.5 % and a ResNet-50 layer -5.3 % against estimates
  // under 0.4 %; the rule: stratify or fall back to full detail where CTAs differ).
  size_t per_sm = 0;
  for (const auto& sm : sms_) {
    if (sm->ctas.empty()) continue;
    if (per_sm && sm->ctas.size() != per_sm) {
      phase_.refuse_uneven();
      return;
    }
    per_sm = sm->ctas.size();
  }
  // CTAs of the same age rank on SMs holding the same number of CTAs run at one pace: each such class's mean
  // iteration period (the scheduler favours older warps, so the older CTA of an SM runs ahead of the younger).
  std::map<std::pair<size_t, size_t>, std::pair<double, uint64_t>> classes;
  const auto class_of = [](const SmT& sm, size_t rank) { return std::make_pair(sm.ctas.size(), rank); };
  for (const auto& sm : sms_)
    for (size_t rank = 0; rank < sm->ctas.size(); ++rank) {
      auto& c = classes[class_of(*sm, rank)];
      const auto [sum, count] = phase_.cta_period(sm->ctas[rank]->cta.linear_id);
      c.first += sum;
      c.second += count;
    }
  double fastest = std::numeric_limits<double>::infinity();
  for (const auto& [key, c] : classes) {
    if (c.second == 0) return;  // a class without a measured iteration
    fastest = std::min(fastest, c.first / static_cast<double>(c.second));
  }
  struct Item {
    CtaFastForward ff;
    double pace;       // iterations per round (the fastest class: 1)
    uint64_t warps;    // live warps
    double per_round;  // warp instructions of its first round
  };
  std::vector<Item> items;
  const bool undoable = loop_writes_only_cta_state(*L_.kernel, loop);
  const bool one_pace = loop_has_barrier(*L_.kernel, loop);  // else its warps must do alike work
  for (const auto& sm : sms_)
    for (size_t rank = 0; rank < sm->ctas.size(); ++rank) {
      const auto& c = classes[class_of(*sm, rank)];
      const auto& slot = sm->ctas[rank];
      uint64_t warps = 0;
      for (const auto& w : slot->cta.warps) warps += !w.done();
      items.push_back({CtaFastForward(exec_, slot->cta, loop, undoable), fastest * static_cast<double>(c.second) / c.first, warps, 0.0});
    }
  const bool record = L_.record_accesses;
  L_.record_accesses = false;  // nothing times them
  L_.clock = t;
  const uint64_t before = exec_.stats().warp_insts;
  uint64_t rounds = 0;
  // The watchdog sees the cycle the launch's estimate has reached (the earlier fast-forwards' cycles and this
  // one's rounds so far at the fastest class's period past t): a launch past max_cycles stops there.
  const auto tick = [&] {
    const auto reached = t + phase_.skipped_cycles() + static_cast<uint64_t>(static_cast<double>(rounds) * fastest);
    watchdog_.check(L_, exec_.stats().warp_insts, reached, [this] { return live_warps(); }, next_cta_ - resident_ctas_);
  };
  // Rounds of one iteration of the fastest class, until the first warp leaves the loop, or a CTA's round
  // executes a number of instructions that differs (beyond the tolerance) from its first round, or a code
  // mix unlike the measured windows' (a pipeline's last iterations, which issue no loads), or the
  // warps of a loop without a barrier differ among themselves: the phase ended. That round is undone where it can be (every CTA
  // that advanced in it can undo), so what follows runs in detail.
  std::vector<Item*> advanced;
  for (bool end = false; !end;) {
    ++rounds;
    advanced.clear();
    const FuncStats counts = exec_.stats();
    for (Item& it : items) {
      const auto target = static_cast<uint64_t>(std::llround(static_cast<double>(rounds) * it.pace));
      if (it.ff.ended() || it.ff.iterations() >= target) continue;
      advanced.push_back(&it);
      end |= !it.ff.advance(rec_, tick);
      const auto insts = static_cast<double>(it.ff.round_insts());
      if (it.ff.iterations() == 1) it.per_round = insts;
      end |= std::fabs(insts - it.per_round) > phase_.tolerance() * it.per_round ||
             phase_.mix_distance(it.ff.round_mix(), loop.head) > phase_.tolerance() ||
             (!one_pace && !it.ff.warps_alike(phase_.tolerance()));
    }
    if (end && std::all_of(advanced.begin(), advanced.end(), [](const Item* it) { return it->ff.can_undo(); })) {
      for (Item* it : advanced) it->ff.undo();
      exec_.restore_stats(counts);
      --rounds;
    } else if (rounds >= PhaseSampler::kMaxRounds) {
      end = true;  // a whole round, kept: detail resumes and measures the pace again (phase.h)
    }
  }
  L_.record_accesses = record;
  if (rounds == 0) return;  // the first round ended the phase and was undone: nothing changed
  uint64_t iterations = 0;
  for (const Item& it : items) iterations += it.ff.iterations() * it.warps;
  // The warps stand at new pcs: cached issue hints are void, barriers may complete, warps may have finished.
  std::vector<std::pair<SmT*, CtaSlot*>> finished;
  for (auto& sm : sms_) {
    for (auto& slot : sm->ctas) {
      for (auto& w : slot->warps) {
        w.hint = 0;
        w.mshr_blocked = false;
        if (!w.w->done()) w.operands_ready = operands_ready(w, facts_[static_cast<size_t>(w.w->pc())]);
      }
      exec_.release_barriers(slot->cta);
      slot->cta.woken = false;
      slot->live = 0;
      for (const auto& w : slot->cta.warps) slot->live += !w.done();
      if (slot->live == 0) finished.emplace_back(sm.get(), slot.get());
    }
    for (auto& sub : sm->subs) sub.wake = std::min(sub.wake, t);
    sm->wake = std::min(sm->wake, t);
  }
  for (auto& [sm, slot] : finished) retire_cta(*sm, *slot, t);
  for (auto& sm : sms_)  // warps that finished in the fast-forward are no sub-core's last issuer any more
    for (auto& sub : sm->subs)
      if (sub.last && sub.last->w->done()) sub.last = nullptr;
  phase_.account(static_cast<double>(rounds) * fastest, exec_.stats().warp_insts - before, iterations, stats_, t,
                 resident_events_);
}

}  // namespace stc
