#include "gpu.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "../func/cfg.h"
#include "../ptx/errors.h"
#include "gpu_internal.h"

namespace stc {

namespace {
uint64_t round_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }
// Raises `a` to at least `v` (the order of the updates does not change the result).
void raise_to(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {}
}
}  // namespace

TimingModel::Sleep::Sleep(const SubCore& sub) : reason(sub.warps.empty() ? TStat::StallIdle : TStat::StallBarrier) {}

TimingModel::TimingModel(const TimingConfig& cfg, LaunchState& launch, uint32_t regs_per_thread, double sample,
                         Stats& stats, Watchdog& watchdog, uint32_t threads, bool lockstep)
    : cfg_(cfg), L_(launch), watchdog_(watchdog), exec_(launch), stats_(stats), mem_(cfg, stats_),
      regs_per_thread_(regs_per_thread), sampler_(0, 1, 0), phase_(0, 0, 0) {
  threads_ = std::max(1u, threads);
  lockstep_ = lockstep;
  warps_per_cta_ = warps_per_cta(L_);
  total_ctas_ = static_cast<uint64_t>(L_.grid[0]) * L_.grid[1] * L_.grid[2];
  L_.num_sms = cfg.num_sms;
  if (!regs_per_thread_) regs_per_thread_ = std::min<uint32_t>(cfg.max_regs_per_thread, std::max<uint32_t>(16, L_.kernel->regs_per_thread));
  stats_[TStat::RegsPerThread] = regs_per_thread_;
  resolve_classes();
  max_ctas_per_sm_ = ctas_per_sm();
  if (max_ctas_per_sm_ == 0)
    throw LaunchError("kernel '" + L_.kernel->name + "' cannot run on " + cfg.name + ": one block of " +
                      std::to_string(warps_per_cta_ * 32) + " threads, " + std::to_string(regs_per_thread_) +
                      " registers/thread and " + std::to_string(L_.shared_bytes) + " bytes of shared memory exceeds an SM");
  if (!cfg.shared_carveouts.empty()) mem_.set_l1_bytes(l1_bytes());
  sampler_ = WaveSampler(sample, static_cast<uint64_t>(max_ctas_per_sm_) * cfg.num_sms, total_ctas_);
  if (sampler_.enabled() && sampler_.too_few_waves()) {
    const uint64_t first = std::min<uint64_t>(total_ctas_, static_cast<uint64_t>(max_ctas_per_sm_) * cfg.num_sms);
    phase_ = PhaseSampler(sample, L_.kernel->code.size(), first * warps_per_cta_);
  }
  auto first = std::make_unique<Part>();
  first->L = &L_;
  first->exec = &exec_;
  first->stats = &stats_;
  first->rec = &rec_;
  parts_.push_back(std::move(first));
  for (uint32_t i = 0; i < cfg.num_sms; ++i) {
    auto sm = std::make_unique<SmT>();
    sm->id = i;
    sm->part = parts_[0].get();
    sm->subs.resize(cfg.sub_cores);
    for (auto& sub : sm->subs) sub.tensor_pipes.assign(cfg.tensor_pipes, 0);
    sms_.push_back(std::move(sm));
  }
}

TimingModel::~TimingModel() = default;


uint32_t TimingModel::ctas_per_sm() const {
  const TimingConfig& c = cfg_;
  uint64_t n = c.max_ctas;
  n = std::min<uint64_t>(n, c.max_warps / std::max(1u, warps_per_cta_));
  const uint64_t regs_per_warp = round_up(static_cast<uint64_t>(regs_per_thread_) * 32, c.reg_alloc_unit);
  if (regs_per_warp) n = std::min<uint64_t>(n, c.registers / (regs_per_warp * warps_per_cta_));
  const uint64_t smem = L_.shared_bytes ? round_up(L_.shared_bytes + c.shared_reserved_per_cta, c.shared_alloc_unit) : 0;
  if (L_.shared_bytes > c.max_shared_per_cta) return 0;
  if (smem) n = std::min<uint64_t>(n, c.shared_per_sm / smem);
  return static_cast<uint32_t>(n);
}

// CUDA's driver configures the shared capacity of each kernel "to avoid shared memory occupancy
// bottlenecks" (CUDA Programming Guide, compute capability 7.x-9.0), as GPGPU-Sim/Accel-Sim's adaptive L1
// does: the smallest carve-out holding the resident CTAs' shared memory with the system's reserve per CTA.
// H100 silicon (results/reference/h100_l1_carveout.csv): the L1 holds exactly what that carve-out leaves.
uint64_t TimingModel::shared_carveout() const {
  const TimingConfig& c = cfg_;
  if (c.shared_carveouts.empty()) return 0;
  const uint64_t per_cta = round_up(L_.shared_bytes + c.shared_reserved_per_cta, std::max<uint64_t>(1, c.shared_alloc_unit));
  const uint64_t demand = per_cta * max_ctas_per_sm_;
  for (uint64_t option : c.shared_carveouts)
    if (option >= demand) return option;
  return c.shared_carveouts.back();
}

uint64_t TimingModel::l1_bytes() const {
  const TimingConfig& c = cfg_;
  if (c.shared_carveouts.empty()) return static_cast<uint64_t>(c.l1_sets) * c.l1_assoc * c.l1_line;
  return c.unified_l1_shared - std::min(c.unified_l1_shared, shared_carveout());
}

void TimingModel::occupancy_tick(SmT& sm, uint64_t t) {
  if (t > sm.occ_t) {
    Stats& st = *sm.part->stats;
    st[TStat::ActiveWarpCycles] += static_cast<double>(sm.resident_warps) * static_cast<double>(t - sm.occ_t);
    if (!sm.ctas.empty()) st[TStat::ActiveSmCycles] += static_cast<double>(t - sm.occ_t);
  }
  sm.occ_t = std::max(sm.occ_t, t);
}


bool TimingModel::dispatch(SmT& sm, uint64_t t) {
  if (next_cta_ >= total_ctas_ || sm.ctas.size() >= max_ctas_per_sm_) return false;
  if (cfg_.icache && !sm.icaches_filled) fill_icaches(sm);  // the SM's first CTA
  if (const uint64_t skip = sampler_.ctas_to_skip(next_cta_)) {
    skip_ctas(skip, t);
    if (next_cta_ >= total_ctas_) return false;
  }
  occupancy_tick(sm, t);
  std::unique_ptr<CtaSlot> slot;
  if (sm.spare.empty()) {
    slot = std::make_unique<CtaSlot>();
  } else {
    slot = std::move(sm.spare.back());
    sm.spare.pop_back();
  }
  exec_.init_cta(slot->cta, static_cast<uint32_t>(next_cta_++));
  slot->warps.resize(slot->cta.warps.size());
  slot->live = static_cast<uint32_t>(slot->warps.size());
  slot->insts = 0;
  slot->bulk.clear();
  for (size_t i = 0; i < slot->warps.size(); ++i) {
    WarpT& w = slot->warps[i];
    w.cta = slot.get();
    w.w = &slot->cta.warps[i];
    w.next_issue = t;
    w.after_branch = false;
    w.reg_ready.assign(scoreboard_entries_, 0);
    w.ready = w.reg_ready.data();
    w.operands_ready = 0;
    w.groups.clear();
    w.open_group = 0;
    w.last_done = 0;
    w.hint = 0;
    w.mshr_blocked = false;
    w.finished = false;
    w.line = UINT32_MAX;
    w.want = UINT32_MAX;
    SubCore& sub = sm.subs[sm.warp_slot++ % sm.subs.size()];
    sub.warps.push_back(&w);
    sub.wake = std::min(sub.wake, t);
  }
  for (auto& sub : sm.subs) sub.wake = std::min(sub.wake, t);
  sm.resident_warps += static_cast<uint32_t>(slot->warps.size());
  sm.ctas.push_back(std::move(slot));
  ++resident_ctas_;
  ++resident_events_;
  return true;
}

TimingModel::Check TimingModel::check(WarpT& w, SubCore& sub, uint32_t sm, uint64_t t, bool shared_ok) {
  // A hint is only set below, past the tests of finished and blocked warps, and a warp only finishes or
  // blocks when it issues (at or after its hint): a pending hint implies neither, and spares the host a
  // read of the warp's functional state.
  if (w.hint > t) return {false, w.hint, w.hint_reason};
  if (w.w->done()) return {false, kNever, TStat::StallIdle};
  if (w.w->at_barrier || w.w->waiting) return {false, kNever, TStat::StallBarrier};
  if (w.next_issue > t) return {false, w.next_issue, w.after_branch ? TStat::StallControl : TStat::StallScoreboard};
  const size_t pc = static_cast<size_t>(w.w->pc());
  const IssueFacts& f = facts_[pc];
  if (cfg_.icache && f.line != w.line) {  // the warp's next instruction is on another line: fetch it
    if (!shared_ok && !fetch_stays_in_sm(w, sub, *sms_[sm], f.line)) return {false, t, TStat::StallFetch, true};
    const double ready = fetch(w, sub, *sms_[sm], f.line, t);
    if (ready > static_cast<double>(t)) {
      w.hint = static_cast<uint64_t>(std::ceil(ready));
      w.hint_reason = TStat::StallFetch;
      return {false, w.hint, TStat::StallFetch};
    }
    w.line = f.line;
  }
  if (held_by_registers_or_unit(w, sub, f, t)) return {false, w.hint, w.hint_reason};
  if (f.waits_groups) {
    const Instr& in = L_.kernel->code[pc];
    const bool all = in.traits.async == AsyncKind::WaitAll;
    const size_t keep = all ? 0 : static_cast<size_t>(in.ops[0].imm);
    uint64_t need = all ? w.open_group : 0;
    for (size_t g = 0; g + keep < w.groups.size(); ++g) need = std::max(need, w.groups[g]);
    if (need > t) return {false, need, TStat::StallMemory};
  }
  if (f.serial_async) {  // ptxas's C7515: the SASS waits for the warp's wgmma in flight before this one
    uint64_t need = w.open_group;
    for (const uint64_t g : w.groups) need = std::max(need, g);
    if (need > t) return {false, need, TStat::StallMemory};
  }
  if (f.global_store && mem_.store_free(sm) > static_cast<double>(t)) {
    w.hint = static_cast<uint64_t>(std::ceil(mem_.store_free(sm)));
    w.hint_reason = TStat::StallMemory;
    return {false, w.hint, TStat::StallMemory};
  }
  if (f.may_touch_global && mem_.mshr_in_use(sm, t) >= cfg_.l1_mshr) {
    w.mshr_blocked = !f.global_store;
    w.mshr_unit = f.folded ? static_cast<uint8_t>(kUnits) : f.unit;
    return {false, mshr_wait(sm, t), TStat::StallMemory};
  }
  return {true, t, TStat::IssueCycles};
}

inline bool TimingModel::held_by_mshrs(const WarpT& w, const SubCore& sub, uint32_t sm, uint64_t t) {
  return w.mshr_blocked && (w.mshr_unit == kUnits || sub.unit_free[w.mshr_unit] <= t) &&
         mem_.mshr_in_use(sm, t) >= cfg_.l1_mshr;
}

bool TimingModel::held_by_registers_or_unit(WarpT& w, const SubCore& sub, const IssueFacts& f, uint64_t t) {
  // Register ready times and unit occupancy only change when this warp or its sub-core issues, and only
  // later, so a failed test is a valid lower bound until then: cache it.
  if (w.operands_ready > t) {
    w.hint = w.operands_ready;
    w.hint_reason = TStat::StallScoreboard;
    return true;
  }
  if (const uint64_t uf = f.folded ? t : sub.unit_free[f.unit]; uf > t) {
    w.hint = uf;
    w.hint_reason = TStat::StallUnit;
    return true;
  }
  return false;
}

uint32_t TimingModel::memory_instructions_named(const Instr& in, WarpRecord& rec, Part& part) {
  if (!rec.shape.key) return memory_instructions(in, rec);
  Part::NamedCount& e =
      part.mem_insts[(rec.shape.key * 0x9E3779B97F4A7C15ull ^ rec.shape.lanes) >> (64 - Part::kNamedCountBits)];
  if (!(e.shape == rec.shape)) e = {rec.shape, memory_instructions(in, rec)};
  return e.count;
}

void TimingModel::wake_subcores(SmT& sm, const SubCore& by, uint64_t t) {
  for (auto& s : sm.subs) {
    s.wake = std::min(s.wake, t + 1);
    if (&s > &by && s.skipped == t) s.wake = std::min(s.wake, t);  // the loop visits it later in this cycle
  }
}

bool TimingModel::issue(WarpT& w, SubCore& sub, SmT& sm, uint64_t t) {
  w.mshr_blocked = false;
  Part& part = *sm.part;
  Stats& st = *part.stats;
  WarpRecord& rec = *part.rec;
  part.L->clock = t;
  mem_.set_now(sm.id, t);
  // Host cache only: operands_ready() below reads the ready times of the next instruction's registers (the
  // one after this, the usual successor), cold since every other warp issued; asking for them now overlaps
  // the misses with the step's work.
  if (const size_t next = static_cast<size_t>(w.w->pc()) + 1; next < facts_.size()) {
    const uint64_t* ready = w.ready;
    for (uint32_t i = facts_[next].ready_begin, e = i + facts_[next].ready_count; i < e; ++i)
      __builtin_prefetch(ready + 8 * pc_ready_lines_[i]);
  }
  part.exec->step(w.cta->cta, *w.w, rec, sm.id);
  if (w.cta->cta.woken) {  // an extension's instruction let waiting warps re-execute theirs
    w.cta->cta.woken = false;
    wake_subcores(sm, sub, t);
  }
  if (w.w->waiting) return false;  // it re-executes once woken
  ++w.cta->insts;
  const Instr& in = *rec.in;
  if (phase_.enabled()) {
    const bool done = w.w->done();
    phase_.on_issue(rec.pc, static_cast<uint64_t>(w.cta->cta.linear_id) << 6 | w.w->warp_in_cta, t,
                    backedge_taken(in, rec.pc, done, done ? -1 : w.w->pc()), in.target);
  }
  const IssueFacts& f = facts_[static_cast<size_t>(rec.pc)];
  const size_t ui = f.unit;
  uint64_t done;
  uint32_t busy = 0;  // cycles its unit is busy with it
  if (f.fixed) {  // the usual ALU or branch instruction: its unit's figures, known before the launch
    sub.unit_free[ui] = t + f.interval;
    busy = f.interval;
    done = t + f.done_after;
  } else {
    const OpDesc& desc = *desc_[static_cast<size_t>(rec.pc)];
    const OpTiming ot = desc.of(rec.work);
    if (desc.account) desc.account(st, ot);
    uint32_t interval = ot.interval;
    if (in.unit == Unit::LDST) interval *= f.one_ldst ? 1 : memory_instructions_named(in, rec, part);
    else interval *= f.sass;
    if (f.folded) {  // no SASS instruction: no slot, no unit, ready at once
      st[TStat::FoldedInsts] += 1;
      done = t;
    } else {
      if (in.unit == Unit::TENSOR) {  // the earliest free pipe takes it
        auto pipe = std::min_element(sub.tensor_pipes.begin(), sub.tensor_pipes.end());
        *pipe = std::max(*pipe, t) + interval;
        sub.unit_free[ui] = *std::min_element(sub.tensor_pipes.begin(), sub.tensor_pipes.end());
      } else {
        sub.unit_free[ui] = t + interval;
      }
      busy = interval;
      done = complete_time(in, rec, ot, w, sm.id, t, part) + (f.sass - 1u);  // pair: 2nd half
    }
  }
  st.v[static_cast<size_t>(TStat::BusyINT) + std::min<size_t>(ui, 8)] += busy;
  for (uint32_t i = f.dst_begin, e = i + f.dst_count; i < e; ++i) w.ready[static_cast<size_t>(pc_dsts_[i])] = done;
  if (!w.w->done()) {
    // Host cache only: the register columns the warp's next instruction names (32 lanes, 128 or 256
    // bytes each), cold by the time it issues again after other warps' work; asking now overlaps the misses
    // (with the scoreboard reads below too). Into the host's L2, not L1 (locality 2: prefetcht1): the warp
    // issues again only after other warps' work, by which time L1 would have dropped them, and filling L1
    // with them now evicts what the next issues read.
    const IssueFacts& nf = facts_[static_cast<size_t>(w.w->pc())];
    for (uint32_t i = nf.slot_begin, e = i + nf.slot_count; i < e; ++i) {
      const int32_t r = pc_slots_[i];
      if (r & kWideSlot) {
        const uint64_t* col = w.w->col64(r);
        for (int line = 0; line < 4; ++line) __builtin_prefetch(col + 8 * line, 0, 2);
      } else {
        const uint32_t* col = w.w->col32(r);
        __builtin_prefetch(col, 0, 2);
        __builtin_prefetch(col + 16, 0, 2);
      }
    }
    w.operands_ready = operands_ready(w, nf);
  }
  w.last_done = std::max(w.last_done, done);
  w.after_branch = f.branch;
  w.next_issue = f.folded ? t : f.branch ? t + branch_latency_ : t + f.sass;
  if (f.cas_loop) w.next_issue = std::max(w.next_issue, done);  // the warp itself runs the loop
  if (w.w->at_barrier && part.exec->release_barriers(w.cta->cta)) wake_subcores(sm, sub, t);
  if (!w.w->done()) return false;
  w.finished = true;
  if (--w.cta->live == 0) retire_cta(sm, *w.cta, t);
  else if (part.exec->release_barriers(w.cta->cta)) wake_subcores(sm, sub, t);  // an exited warp may complete a barrier
  return true;
}

uint64_t TimingModel::operands_ready(const WarpT& w, const IssueFacts& f) const {
  const uint64_t* ready = w.ready;
  uint64_t when = 0;
  for (const int32_t* r = pc_regs_.data() + f.reg_begin, *end = r + f.reg_count; r != end; ++r)
    when = std::max(when, ready[static_cast<size_t>(*r)]);
  return when;
}

void TimingModel::retire_cta(SmT& sm, CtaSlot& cta, uint64_t t) {
  occupancy_tick(sm, t + 1);
  uint64_t done = t + 1;
  for (const auto& w : cta.warps) done = std::max(done, w.last_done);
  raise_to(end_cycle_, done);
  sampler_.on_retire(t + 1, cta.insts, stats_);
  for (auto& sub : sm.subs)
    sub.warps.erase(std::remove_if(sub.warps.begin(), sub.warps.end(), [&](WarpT* p) { return p->cta == &cta; }), sub.warps.end());
  for (auto& sub : sm.subs) if (sub.last && sub.last->cta == &cta) sub.last = nullptr;
  sm.resident_warps -= static_cast<uint32_t>(cta.warps.size());
  auto it = std::find_if(sm.ctas.begin(), sm.ctas.end(), [&](const auto& p) { return p.get() == &cta; });
  sm.spare.push_back(std::move(*it));
  sm.ctas.erase(it);
  --resident_ctas_;
  ++resident_events_;
  raise_to(last_retire_, t);
  // (not wake_subcores: a sub-core holding a warp of this CTA had a finished warp, and sleep_after_issue
  // never skips a pass past a finished warp, so no skipped pass waits on this retirement)
  for (auto& sub : sm.subs) sub.wake = std::min(sub.wake, t + 1);
}

void TimingModel::account(SubCore& sub, Stats& stats, uint64_t t) {
  if (t > sub.acct_t) stats[sub.pending] += static_cast<double>(t - sub.acct_t);
  sub.acct_t = std::max(sub.acct_t, t);
}

// One sub-core's issue slot at cycle t: the warps in scheduling order (GTO: the last issuer first, then by
// age; otherwise round-robin from rr), up to issue_width of them issue; else the sub-core sleeps until
// the earliest cycle a warp could issue, with that warp's stall reason.
bool TimingModel::schedule(SubCore& sub, SmT& sm, uint64_t t, bool shared_ok) {
  if (!shared_ok && cfg_.issue_width > 1) return false;  // (a stop after an issue could not be rerun)
  uint32_t issued = 0;
  bool stopped = false;
  Sleep sleep(sub);
  const size_t n = sub.warps.size(), rr = sub.rr;
  WarpT* const last = sub.last;  // never a finished warp (cleared when it finishes): no read of its state
  WarpT* const first = cfg_.gto ? last : nullptr;
  // Visits warp w; true when the pass must end (the issue width is used, or the warp finished: its CTA
  // may be gone, and sub.warps with it).
  const auto visit = [&](WarpT* w) __attribute__((always_inline)) {
    while (issued < cfg_.issue_width) {
      // check()'s cached answers, inline: most visited warps sleep on a cached hint (or on full MSHRs)
      const Check ck = w->hint > t ? Check{false, w->hint, w->hint_reason}
                       : w->finished ? Check{false, kNever, TStat::StallIdle}
                       : held_by_mshrs(*w, sub, sm.id, t) ? Check{false, mshr_wait(sm.id, t), TStat::StallMemory}
                       : check(*w, sub, sm.id, t, shared_ok);
      if (ck.ok) {
        const IssueFacts& f = facts_[static_cast<size_t>(w->w->pc())];
        if (!shared_ok && (f.shared_state || f.folded)) {
          stopped = true;
          return true;
        }
        if (!cfg_.gto) sub.rr = (static_cast<size_t>(std::find(sub.warps.begin(), sub.warps.end(), w) - sub.warps.begin()) + 1) % std::max<size_t>(1, sub.warps.size());
        sub.last = w;
        const bool folded = f.folded;
        if (!folded) ++issued;
        if (issue(*w, sub, sm, t)) {  // it finished (a finished warp is skipped when visited, as before)
          if (sub.last == w) sub.last = nullptr;
          return true;
        }
        if (!folded) return issued == cfg_.issue_width;  // (a full pass visits no one else)
        continue;  // a folded constant takes no slot: the warp's next instruction may issue in this cycle
      }
      if (ck.stop) {
        stopped = true;
        return true;
      }
      sleep.add(ck);
      return false;
    }
    return true;
  };
  bool stop = first && visit(first);
  for (size_t i = 0; i < n && !stop; ++i) {
    WarpT* w = sub.warps[cfg_.gto ? i : (rr + i) % n];
    if (cfg_.gto && w == last) continue;
    stop = visit(w);
  }
  if (stopped) return false;
  if (issued) {
    (*sm.part->stats)[TStat::IssueCycles] += 1;
    sub.acct_t = t + 1;
    sub.wake = t + 1;
    sleep_after_issue(sub, t);
  } else {
    sub.pending = sleep.reason;
    sub.wake = std::max(sleep.earliest, t + 1);
  }
  return true;
}

void TimingModel::sleep_after_issue(SubCore& sub, uint64_t t) {
  // The phase sampler closes its windows at the cycles the run loop visits: keep every visit there.
  if (phase_.enabled() || sub.warps.empty()) return;
  const uint64_t t1 = t + 1;
  WarpT* const issuer = sub.last;  // null if it finished
  // What check() at t1 returns for w, where that is known now without acting: a cached hint; a blocked
  // warp (a release at t1 by a sub-core visited before this one would unblock it before this one's pass:
  // wake_subcores then brings the pass back, `skipped`); or the branch delay, the scoreboard or the unit,
  // when the warp is not finished and its next instruction is on the line in its buffer (else check() would
  // fetch). Only the warp's own issue changes those. Any warp, not only the one that issued: a warp held by
  // the unit the issuer took (an INT pair on V100) no longer costs a pass of its own.
  bool blocked = false;
  const auto asleep = [&](WarpT* w, Check& ck) {
    if (w->hint > t1) {
      ck = {false, w->hint, w->hint_reason};
      return true;
    }
    if (w->w->done()) return false;
    if (w->w->at_barrier || w->w->waiting) {
      ck = {false, kNever, TStat::StallBarrier};
      blocked = true;
      return true;
    }
    if (w->next_issue > t1) {
      ck = {false, w->next_issue, w->after_branch ? TStat::StallControl : TStat::StallScoreboard};
      return true;
    }
    const IssueFacts& f = facts_[static_cast<size_t>(w->w->pc())];
    if (cfg_.icache && f.line != w->line) return false;
    if (!held_by_registers_or_unit(*w, sub, f, t1)) return false;  // it may issue at t1
    ck = {false, w->hint, w->hint_reason};
    return true;
  };
  // The pass at t1, in its visiting order.
  Sleep sleep(sub);
  Check ck{};
  WarpT* const first = cfg_.gto ? issuer : nullptr;
  if (first) {
    if (!asleep(first, ck)) return;
    sleep.add(ck);
  }
  const size_t n = sub.warps.size();
  for (size_t i = 0; i < n; ++i) {
    WarpT* w = sub.warps[cfg_.gto ? i : (sub.rr + i) % n];
    if (w == first) continue;
    if (!asleep(w, ck)) return;
    sleep.add(ck);
  }
  sub.pending = sleep.reason;
  sub.wake = sleep.earliest;
  if (blocked) sub.skipped = t1;
}

uint64_t TimingModel::earliest_wake(const SmT& sm) {
  uint64_t wake = kNever;
  for (const auto& sub : sm.subs) wake = std::min(wake, sub.wake);
  return wake;
}

bool TimingModel::can_dispatch(const SmT& sm) const {
  return next_cta_ < total_ctas_ && sm.ctas.size() < max_ctas_per_sm_;
}

TimingModel::CycleEnd TimingModel::sm_cycle(SmT& sm, uint64_t t, bool shared_ok) {
  for (size_t k = sm.resume; k < sm.subs.size(); ++k) {
    SubCore& sub = sm.subs[k];
    if (sub.wake > t) continue;
    account(sub, *sm.part->stats, t);
    if (!schedule(sub, sm, t, shared_ok)) {
      sm.resume = k;
      return CycleEnd::Stopped;
    }
  }
  CycleEnd end = CycleEnd::Done;
  if (can_dispatch(sm)) {
    if (!shared_ok) {
      sm.resume = sm.subs.size();
      return CycleEnd::Stopped;
    }
    while (dispatch(sm, t + 1)) {}
    end = CycleEnd::Dispatched;
  }
  sm.resume = 0;
  // the sub-cores' wakes once all have run: one may wake another it passed already (a barrier's release, a
  // retired CTA), at t + 1
  sm.wake = earliest_wake(sm);
  return end;
}

}  // namespace stc
