// The timing model's run loops side by side: lockstep, run-ahead and run-ahead on host threads, and run(),
// which picks one and totals the launch's stats.
#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../ptx/errors.h"
#include "gpu_internal.h"
#include "thread_pool.h"

namespace stc {

std::vector<LiveWarp> TimingModel::live_warps() const {
  std::vector<LiveWarp> live;
  for (const auto& sm : sms_)
    for (const auto& slot : sm->ctas)
      for (const auto& w : slot->cta.warps)
        if (!w.done()) live.push_back({&slot->cta, &w});
  return live;
}

uint64_t TimingModel::run_lockstep() {
  uint64_t t = 0;
  // The SMs the loop visits, in id order. Once every CTA is dispatched, an SM without CTAs whose sub-cores
  // all sleep for good can never act again: it leaves the list (visiting it would change nothing).
  std::vector<SmT*> live;
  for (auto& sm : sms_) live.push_back(sm.get());
  const auto dead = [this](const SmT* sm) { return sm->ctas.empty() && sm->wake == kNever && next_cta_ >= total_ctas_; };
  while (resident_ctas_ > 0) {
    // (past the fast-forwards' cycles: the cycle the launch's estimate has reached)
    watchdog_.check(L_, exec_.stats().warp_insts, t + phase_.skipped_cycles(), [this] { return live_warps(); },
                    next_cta_ - resident_ctas_);
    if (phase_.enabled() && phase_.window_full()) phase_window(t);
    uint64_t next = kNever;
    bool any_dead = false;
    for (SmT* smp : live) {
      SmT& sm = *smp;
      if (sm.wake > t && !can_dispatch(sm)) {
        next = std::min(next, sm.wake);  // every sub-core asleep, and no CTA to dispatch
        continue;
      }
      if (sm_cycle(sm, t, true) == CycleEnd::Dispatched) next = std::min(next, t + 1);
      next = std::min(next, sm.wake);
      any_dead |= dead(&sm);
    }
    if (any_dead) live.erase(std::remove_if(live.begin(), live.end(), dead), live.end());
    if (resident_ctas_ == 0) break;
    if (next == kNever)
      throw SimFault("deadlock in kernel '" + L_.kernel->name + "': every resident warp waits at a barrier that can never complete");
    t = std::max(next, t + 1);
  }
  return t;
}

uint64_t TimingModel::run_ahead() {
  // The lockstep loop's order of SMs' steps: by cycle, then by SM id.
  using Step = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Step, std::vector<Step>, std::greater<Step>> pending;
  for (auto& sm : sms_) {
    sm->wake = earliest_wake(*sm);
    if (sm->wake != kNever) pending.push({sm->wake, sm->id});
  }
  const uint64_t max_cycles = watchdog_.max_cycles();
  while (!pending.empty()) {
    auto [t, id] = pending.top();
    pending.pop();
    SmT& sm = *sms_[id];
    // The SM's cycles from t on; the first is the earliest step of any SM.
    for (bool first = true;; first = false) {
      const bool earliest = first || pending.empty() || Step{t, id} < pending.top();
      // Past the cycle limit, an SM waits for the others: the watchdog then stops the launch where the
      // lockstep loop would (every SM's cycles before t done, none after).
      if (!earliest && t > max_cycles) {
        pending.push({t, id});
        break;
      }
      // An SM left without CTAs for good passes idle once more at its wake, if the launch still runs then
      // (the lockstep loop visits a cycle only while a CTA is resident): known at the end.
      if (sm.resume == 0 && sm.ctas.empty() && next_cta_ >= total_ctas_) {
        sm.idle_at = t;
        break;
      }
      watchdog_.check(L_, exec_.stats().warp_insts, t, [this] { return live_warps(); }, next_cta_ - resident_ctas_);
      if (sm_cycle(sm, t, earliest) == CycleEnd::Stopped) {
        pending.push({t, id});
        break;
      }
      if (sm.wake == kNever) break;  // (an SM with CTAs: the deadlock below, unless another SM's work ends the launch)
      t = sm.wake;
    }
  }
  if (resident_ctas_ > 0)
    throw SimFault("deadlock in kernel '" + L_.kernel->name + "': every resident warp waits at a barrier that can never complete");
  for (auto& sm : sms_)
    if (sm->idle_at <= last_retire_) sm_cycle(*sm, sm->idle_at, true);
  return last_retire_;
}

uint64_t TimingModel::warp_insts() const {
  uint64_t n = 0;
  for (const auto& p : parts_) n += p->exec->stats().warp_insts;
  return n;
}

void TimingModel::watch(uint64_t t) {
  watchdog_.check(L_, warp_insts(), t, [this] { return live_warps(); }, next_cta_ - resident_ctas_);
}

uint64_t TimingModel::run_parallel() {
  using Step = std::pair<uint64_t, uint32_t>;  // (cycle, SM id): run_ahead's order
  const uint64_t max_cycles = watchdog_.max_cycles();
  // A parallel phase runs no SM past a horizon, this many cycles past the earliest SM it starts: the
  // watchdog (which only the caller's thread asks) then sees the launch every so often.
  constexpr uint64_t kHorizon = uint64_t{1} << 16;
  std::priority_queue<Step, std::vector<Step>, std::greater<Step>> stopped;  // before a shared stage
  std::set<Step> ready;  // SMs to run on their own from that step (a lower bound of their next stage)
  for (auto& sm : sms_) {
    sm->wake = earliest_wake(*sm);
    if (sm->wake != kNever) ready.insert({sm->wake, sm->id});
  }
  ThreadPool pool(static_cast<uint32_t>(parts_.size()));
  // An SM's cycles from t on, on its own: until a stage that may touch shared state (stopped), the horizon
  // or the cycle limit (past it, an SM waits for the others, as in run_ahead), or for good.
  const auto run_own = [&](SmT& sm, uint64_t t, uint64_t horizon, uint32_t thread) {
    Part& part = *parts_[thread];
    sm.part = &part;  // its steps write this thread's copies
    mem_.assign(sm.id, thread);
    for (;;) {
      // (next_cta_ is only written by dispatches, which run on the caller's thread between the phases)
      if (sm.resume == 0 && sm.ctas.empty() && next_cta_ >= total_ctas_) {
        sm.idle_at = t;
        return;
      }
      if (t > max_cycles) {
        part.stopped.push_back({t, sm.id});
        return;
      }
      if (t >= horizon) {
        part.paused.push_back({t, sm.id});
        return;
      }
      if (sm_cycle(sm, t, false) == CycleEnd::Stopped) {
        part.stopped.push_back({t, sm.id});
        return;
      }
      if (sm.wake == kNever) return;
      t = sm.wake;
    }
  };
  std::vector<Step> work;
  while (!stopped.empty() || !ready.empty()) {
    if (!ready.empty()) {
      // The parallel phase: every ready SM, the threads taking the next one as they are free (earliest first).
      const uint64_t from = ready.begin()->first;
      const uint64_t horizon = from > kNever - kHorizon ? kNever : from + kHorizon;
      for (auto& p : parts_) {
        p->stopped.clear();
        p->paused.clear();
      }
      work.assign(ready.begin(), ready.end());
      ready.clear();
      std::atomic<size_t> next{0};
      pool.run([&](uint32_t thread) {
        for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < work.size();)
          run_own(*sms_[work[i].second], work[i].first, horizon, thread);
      });
      for (auto& p : parts_) {
        for (const Step& s : p->stopped) stopped.push(s);
        for (const Step& s : p->paused) ready.insert(s);
      }
    }
    // The serial phase: the stopped stages in run_ahead's order, while one is earlier than every ready SM.
    while (!stopped.empty() && (ready.empty() || stopped.top() < *ready.begin())) {
      auto [t, id] = stopped.top();
      stopped.pop();
      SmT& sm = *sms_[id];
      sm.part = parts_[0].get();  // (the caller's thread)
      mem_.assign(id, 0);
      for (bool first = true;; first = false) {
        const Step here{t, id};
        const bool earliest = first || ((stopped.empty() || here < stopped.top()) && (ready.empty() || here < *ready.begin()));
        if (!earliest) {
          ready.insert(here);  // it goes on on its own in the next parallel phase
          break;
        }
        if (sm.resume == 0 && sm.ctas.empty() && next_cta_ >= total_ctas_) {
          sm.idle_at = t;
          break;
        }
        watch(t);
        sm_cycle(sm, t, true);
        if (sm.wake == kNever) break;
        t = sm.wake;
      }
    }
  }
  if (resident_ctas_ > 0)
    throw SimFault("deadlock in kernel '" + L_.kernel->name + "': every resident warp waits at a barrier that can never complete");
  for (auto& sm : sms_)
    if (sm->idle_at <= last_retire_) sm_cycle(*sm, sm->idle_at, true);
  return last_retire_;
}

void TimingModel::run() {
  for (bool more = true; more;) {  // initial fill, round-robin over SMs
    more = false;
    for (auto& sm : sms_) more |= dispatch(*sm, 0);
  }
  // The samplers observe the whole GPU at each cycle: they run in lockstep. So does a launch that asks for
  // it (Engine(..., lockstep=True)): the tests compare the loops.
  const bool lockstep = lockstep_ || sampler_.enabled() || phase_.enabled();
  // More than one thread: each with its own copies of what an SM's steps write beyond the SM (Part; the
  // memory system's too).
  const uint32_t threads = lockstep ? 1 : std::min<uint32_t>(threads_, cfg_.num_sms);
  if (threads > 1) {
    for (uint32_t p = 1; p < threads; ++p) {
      auto part = std::make_unique<Part>();
      part->own_launch = std::make_unique<LaunchState>(L_);
      part->own_exec = std::make_unique<Executor>(*part->own_launch);
      part->own_stats = std::make_unique<Stats>();
      part->own_rec = std::make_unique<WarpRecord>();
      part->L = part->own_launch.get();
      part->exec = part->own_exec.get();
      part->stats = part->own_stats.get();
      part->rec = part->own_rec.get();
      parts_.push_back(std::move(part));
    }
    std::vector<Stats*> stats;
    for (const auto& p : parts_) stats.push_back(p->stats);
    mem_.set_threads(stats);
  }
  const uint64_t last = lockstep ? run_lockstep() : threads > 1 ? run_parallel() : run_ahead();
  const uint64_t detailed_end = std::max(end_cycle_.load(), last);
  for (auto& sm : sms_) {
    occupancy_tick(*sm, detailed_end);
    for (auto& sub : sm->subs) {
      account(sub, *sm->part->stats, detailed_end);
    }
  }
  // The other threads' counts (integers: their sum is the same in any order).
  FuncStats func = exec_.stats();
  for (size_t p = 1; p < parts_.size(); ++p) {
    for (size_t i = 0; i < stats_.v.size(); ++i) stats_.v[i] += parts_[p]->stats->v[i];
    func.add(parts_[p]->exec->stats());
  }
  exec_.restore_stats(func);
  mem_.flush_stats();
  exec_.stats().export_to(stats_);
  uint64_t end = detailed_end + sampler_.finish(stats_, detailed_end);
  if (phase_.enabled()) end += phase_.finish(stats_, detailed_end);
  stats_[TStat::Cycles] = static_cast<double>(end + cfg_.launch_overhead);
  stats_[TStat::KernelCycles] = static_cast<double>(end);
  stats_[TStat::MaxWarpsPerSm] = cfg_.max_warps;
  stats_[TStat::CtasPerSm] = max_ctas_per_sm_;
  stats_[TStat::SharedCarveout] = static_cast<double>(shared_carveout());
  stats_[TStat::L1Bytes] = static_cast<double>(l1_bytes());
}

}  // namespace stc
