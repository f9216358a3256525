#include "gpu.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "../func/cfg.h"
#include "../ptx/errors.h"

namespace stc {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
constexpr size_t kUnits = static_cast<size_t>(Unit::NONE) + 1;
uint64_t round_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }
// 2:4 sparse mma.sp m16n8k32 (func/ops_tensor.cc: Instr::sub of mma is 1 for mma.sp).
bool is_mma_sp(const Instr& in) { return in.op == Op::Mma && in.sub == 1; }
}  // namespace

struct TimingModel::WarpT {
  CtaSlot* cta = nullptr;
  WarpState* w = nullptr;
  uint64_t age = 0;
  uint64_t next_issue = 0;
  bool after_branch = false;
  std::vector<uint64_t> reg_ready;
  std::vector<uint64_t> groups;  // completion cycle of each committed cp.async group, oldest first
  uint64_t open_group = 0;
  uint64_t last_done = 0;
  uint64_t hint = 0;          // the warp cannot issue before this cycle (cached result of check)
  TStat hint_reason = TStat::StallScoreboard;
};

struct TimingModel::CtaSlot {
  CtaState cta;
  std::vector<WarpT> warps;
  uint32_t live = 0;
};

struct TimingModel::SubCore {
  std::vector<WarpT*> warps;  // in age order
  std::array<uint64_t, kUnits> unit_free{};
  uint64_t wake = 0;
  WarpT* last = nullptr;
  size_t rr = 0;
  uint64_t acct_t = 0;
  TStat pending = TStat::StallIdle;
};

struct TimingModel::SmT {
  uint32_t id = 0;
  std::vector<std::unique_ptr<CtaSlot>> ctas;
  std::vector<std::unique_ptr<CtaSlot>> spare;  // retired CTA slots, reused so their buffers stay allocated
  std::vector<SubCore> subs;
  uint32_t warp_slot = 0;
  uint32_t resident_warps = 0;
  uint64_t occ_t = 0;
};

TimingModel::TimingModel(const TimingConfig& cfg, LaunchState& launch, uint32_t regs_per_thread, Watchdog& watchdog)
    : cfg_(cfg), L_(launch), watchdog_(watchdog), exec_(launch), mem_(cfg, stats_), regs_per_thread_(regs_per_thread) {
  warps_per_cta_ = warps_per_cta(L_);
  total_ctas_ = static_cast<uint64_t>(L_.grid[0]) * L_.grid[1] * L_.grid[2];
  L_.num_sms = cfg.num_sms;
  if (!regs_per_thread_) regs_per_thread_ = std::min<uint32_t>(cfg.max_regs_per_thread, std::max<uint32_t>(16, L_.kernel->regs_per_thread));
  check_supported();
  max_ctas_per_sm_ = ctas_per_sm();
  if (max_ctas_per_sm_ == 0)
    throw LaunchError("kernel '" + L_.kernel->name + "' cannot run on " + cfg.name + ": one block of " +
                      std::to_string(warps_per_cta_ * 32) + " threads, " + std::to_string(regs_per_thread_) +
                      " registers/thread and " + std::to_string(L_.shared_bytes) + " bytes of shared memory exceeds an SM");
  for (uint32_t i = 0; i < cfg.num_sms; ++i) {
    auto sm = std::make_unique<SmT>();
    sm->id = i;
    sm->subs.resize(cfg.sub_cores);
    sms_.push_back(std::move(sm));
  }
}

TimingModel::~TimingModel() = default;

void TimingModel::check_supported() const {
  const TimingConfig& c = cfg_;
  for (const Instr& in : L_.kernel->code) {
    const char* missing = nullptr;
    if (in.op == Op::Mma && in.shape_k == 16 && !c.has_mma_k16) missing = "mma.sync m16n8k16 (tensor.mma_m16n8k16_f32)";
    if (in.op == Op::Mma && in.shape_k == 8 && !c.has_mma_k8) missing = "mma.sync m16n8k8 (tensor.mma_m16n8k8_f32)";
    if (is_mma_sp(in) && !c.has_mma_sp_k32) missing = "mma.sp m16n8k32 (tensor.mma_sp_m16n8k32_f32)";
    if (in.op == Op::CpAsync && !c.has_cp_async) missing = "cp.async (cp_async.mode)";
    if (missing)
      throw LaunchError("kernel '" + L_.kernel->name + "' uses " + missing + ", which config '" + c.name +
                        "' has no timing for: the GPU it models does not have the instruction (" +
                        L_.kernel->file + ":" + std::to_string(in.line) + ")");
  }
}

uint32_t TimingModel::ctas_per_sm() const {
  const TimingConfig& c = cfg_;
  uint64_t n = c.max_ctas;
  n = std::min<uint64_t>(n, (c.max_threads / 32) / std::max(1u, warps_per_cta_));
  const uint64_t regs_per_warp = round_up(static_cast<uint64_t>(regs_per_thread_) * 32, c.reg_alloc_unit);
  if (regs_per_warp) n = std::min<uint64_t>(n, c.registers / (regs_per_warp * warps_per_cta_));
  const uint64_t smem = L_.shared_bytes ? round_up(L_.shared_bytes + c.shared_reserved_per_cta, c.shared_alloc_unit) : 0;
  if (L_.shared_bytes > c.max_shared_per_cta) return 0;
  if (smem) n = std::min<uint64_t>(n, c.shared_per_sm / smem);
  return static_cast<uint32_t>(n);
}

void TimingModel::occupancy_tick(SmT& sm, uint64_t t) {
  if (t > sm.occ_t) {
    stats_[TStat::ActiveWarpCycles] += static_cast<double>(sm.resident_warps) * static_cast<double>(t - sm.occ_t);
    if (!sm.ctas.empty()) stats_[TStat::ActiveSmCycles] += static_cast<double>(t - sm.occ_t);
  }
  sm.occ_t = std::max(sm.occ_t, t);
}

bool TimingModel::dispatch(SmT& sm, uint64_t t) {
  if (next_cta_ >= total_ctas_ || sm.ctas.size() >= max_ctas_per_sm_) return false;
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
  const size_t nregs = L_.kernel->regs.size();
  for (size_t i = 0; i < slot->warps.size(); ++i) {
    WarpT& w = slot->warps[i];
    w.cta = slot.get();
    w.w = &slot->cta.warps[i];
    w.age = age_++;
    w.next_issue = t;
    w.after_branch = false;
    w.reg_ready.assign(nregs, 0);
    w.groups.clear();
    w.open_group = 0;
    w.last_done = 0;
    w.hint = 0;
    SubCore& sub = sm.subs[sm.warp_slot++ % sm.subs.size()];
    sub.warps.push_back(&w);
    sub.wake = std::min(sub.wake, t);
  }
  for (auto& sub : sm.subs) sub.wake = std::min(sub.wake, t);
  sm.resident_warps += static_cast<uint32_t>(slot->warps.size());
  sm.ctas.push_back(std::move(slot));
  ++resident_ctas_;
  return true;
}

const TensorTiming& TimingModel::tensor_timing(const Instr& in) const {
  if (in.op == Op::Wmma) return in.types[0] == DType::F16 ? cfg_.wmma_f16 : cfg_.wmma_f32;
  if (is_mma_sp(in)) return cfg_.mma_sp_k32_f32;
  return in.shape_k == 8 ? cfg_.mma_k8_f32 : cfg_.mma_k16_f32;
}

namespace {

// SASS memory instructions a PTX memory instruction becomes: each moves at most 16 bytes per thread, so a
// thread's accesses, merged where contiguous, need ceil(bytes / 16) of them (the most of any thread).
// wmma A/B fragments from shared memory load with one ldmatrix-like instruction.
uint32_t memory_instructions(const Instr& in, const WarpRecord& rec) {
  if (rec.acc.empty()) return 1;
  if (in.op == Op::Wmma && in.sub <= 1 && rec.space == Space::Shared) return 1;
  uint32_t most = 1, count = 0;
  int lane = -1;
  uint64_t run_end = 0, run_bytes = 0;
  for (const MemAccess& a : rec.acc) {
    if (a.space != rec.space && rec.space != Space::Generic) continue;  // cp.async: count the global side
    if (a.lane != lane) {
      if (lane >= 0) most = std::max(most, count + static_cast<uint32_t>((run_bytes + 15) / 16));
      lane = a.lane;
      count = 0;
      run_bytes = 0;
    } else if (a.addr != run_end) {
      count += static_cast<uint32_t>((run_bytes + 15) / 16);
      run_bytes = 0;
    }
    run_bytes += a.size;
    run_end = a.addr + a.size;
  }
  return std::max(most, count + static_cast<uint32_t>((run_bytes + 15) / 16));
}

bool is_tensor_math(const Instr& in) { return in.op == Op::Mma || (in.op == Op::Wmma && in.sub == 4); }
bool touches_global(const Instr& in) {
  return (in.op == Op::Ld || in.op == Op::Ldu || in.op == Op::St || in.op == Op::Atom || in.op == Op::Red ||
          (in.op == Op::CpAsync && in.sub == 0) || (in.op == Op::Wmma && in.sub != 4)) &&
         in.space != Space::Shared && in.space != Space::Param && in.space != Space::Const;
}
}  // namespace

TimingModel::Check TimingModel::check(WarpT& w, const SubCore& sub, uint32_t sm, uint64_t t) {
  if (w.w->done()) return {false, kNever, TStat::StallIdle};
  if (w.w->at_barrier) return {false, kNever, TStat::StallBarrier};
  if (w.hint > t) return {false, w.hint, w.hint_reason};
  if (w.next_issue > t) return {false, w.next_issue, w.after_branch ? TStat::StallControl : TStat::StallScoreboard};
  const Instr& in = L_.kernel->code[static_cast<size_t>(w.w->pc())];
  uint64_t when = t;
  for (int32_t r : in.srcs) when = std::max(when, w.reg_ready[static_cast<size_t>(r)]);
  for (int32_t r : in.dsts) when = std::max(when, w.reg_ready[static_cast<size_t>(r)]);
  // Register ready times and unit occupancy only change when this warp or its sub-core issues, and only
  // later, so a failed check is a valid lower bound until then: cache it.
  if (when > t) { w.hint = when; w.hint_reason = TStat::StallScoreboard; return {false, when, TStat::StallScoreboard}; }
  const uint64_t uf = sub.unit_free[static_cast<size_t>(in.unit)];
  if (uf > t) { w.hint = uf; w.hint_reason = TStat::StallUnit; return {false, uf, TStat::StallUnit}; }
  if (in.op == Op::CpAsync && (in.sub == 2 || in.sub == 3)) {
    const size_t keep = in.sub == 2 ? static_cast<size_t>(in.ops[0].imm) : 0;
    uint64_t need = in.sub == 3 ? w.open_group : 0;
    for (size_t g = 0; g + keep < w.groups.size(); ++g) need = std::max(need, w.groups[g]);
    if (need > t) return {false, need, TStat::StallMemory};
  }
  if (touches_global(in) && mem_.mshr_in_use(sm, t) >= cfg_.l1_mshr) return {false, std::max(t + 1, mem_.mshr_next_free(sm)), TStat::StallMemory};
  return {true, t, TStat::IssueCycles};
}

uint64_t TimingModel::complete_time(const Instr& in, const WarpRecord& rec, WarpT& w, uint32_t sm, uint64_t t) {
  const TimingConfig& c = cfg_;
  const UnitTiming& u = c.unit[static_cast<size_t>(in.unit)];
  if (is_tensor_math(in)) {
    stats_[TStat::TensorInsts] += 1;
    return t + tensor_timing(in).latency + rec.extra_latency;
  }
  switch (in.op) {
    case Op::Ld: case Op::Ldu: case Op::St: case Op::Atom: case Op::Red: case Op::Wmma: case Op::Ldmatrix: {
      if (rec.acc.empty()) return t + 1;
      const Space s = rec.space;
      if (s == Space::Param) return t + c.unit[static_cast<size_t>(Unit::INT)].latency;
      if (s == Space::Const) return t + c.const_latency;
      if (s == Space::Shared) return mem_.shared(sm, t, rec.acc);
      if (in.op == Op::Atom || in.op == Op::Red) return mem_.atomic(sm, t, rec.acc);
      const bool store = in.op == Op::St || (in.op == Op::Wmma && in.sub == 3);
      if (store) {
        const uint64_t done = mem_.store(sm, t, rec.acc);
        w.last_done = std::max(w.last_done, done);
        return t + 1;
      }
      return mem_.load(sm, t, rec.acc, !(in.flags & F_CG));
    }
    case Op::CpAsync: {
      if (in.sub == 1) {  // commit_group
        w.groups.push_back(w.open_group);
        w.open_group = 0;
        return t + 1;
      }
      if (in.sub != 0) return t + 1;
      if (rec.acc.empty()) return t + 1;
      std::vector<MemAccess> global, shared;
      for (const auto& a : rec.acc) (a.space == Space::Shared ? shared : global).push_back(a);
      for (const auto& a : shared) stats_[TStat::CpAsyncBytes] += a.size;
      uint64_t done = global.empty() ? t : mem_.load(sm, t, global, !(in.flags & F_CG));
      done = std::max(done, mem_.shared(sm, done, shared));
      if (c.cp_async_sync) done = t + 1;
      w.open_group = std::max(w.open_group, done);
      w.last_done = std::max(w.last_done, done);
      return t + 1;
    }
    default:
      return t + u.latency + rec.extra_latency;
  }
}

bool TimingModel::issue(WarpT& w, SubCore& sub, SmT& sm, uint64_t t) {
  L_.clock = t;
  exec_.step(w.cta->cta, *w.w, rec_, sm.id);
  const Instr& in = *rec_.in;
  const size_t ui = static_cast<size_t>(in.unit);
  uint32_t interval = is_tensor_math(in) ? tensor_timing(in).interval : cfg_.unit[ui].interval;
  if (in.unit == Unit::LDST) interval *= memory_instructions(in, rec_);
  sub.unit_free[ui] = t + interval;
  stats_.v[static_cast<size_t>(TStat::BusyINT) + std::min<size_t>(ui, 8)] += interval;
  const uint64_t done = complete_time(in, rec_, w, sm.id, t);
  for (int32_t r : in.dsts) w.reg_ready[static_cast<size_t>(r)] = done;
  w.last_done = std::max(w.last_done, done);
  w.after_branch = in.op == Op::Bra;
  w.next_issue = w.after_branch ? t + cfg_.unit[static_cast<size_t>(Unit::BRANCH)].latency : t + 1;
  if (w.w->at_barrier && exec_.release_barriers(w.cta->cta)) {
    for (auto& s : sm.subs) s.wake = std::min(s.wake, t + 1);
  }
  if (!w.w->done()) return false;
  if (--w.cta->live == 0) retire_cta(sm, *w.cta, t);
  else if (exec_.release_barriers(w.cta->cta)) {  // an exited warp may complete a barrier
    for (auto& s : sm.subs) s.wake = std::min(s.wake, t + 1);
  }
  return true;
}

void TimingModel::retire_cta(SmT& sm, CtaSlot& cta, uint64_t t) {
  occupancy_tick(sm, t + 1);
  uint64_t done = t + 1;
  for (const auto& w : cta.warps) done = std::max(done, w.last_done);
  end_cycle_ = std::max(end_cycle_, done);
  for (auto& sub : sm.subs)
    sub.warps.erase(std::remove_if(sub.warps.begin(), sub.warps.end(), [&](WarpT* p) { return p->cta == &cta; }), sub.warps.end());
  for (auto& sub : sm.subs) if (sub.last && sub.last->cta == &cta) sub.last = nullptr;
  sm.resident_warps -= static_cast<uint32_t>(cta.warps.size());
  auto it = std::find_if(sm.ctas.begin(), sm.ctas.end(), [&](const auto& p) { return p.get() == &cta; });
  sm.spare.push_back(std::move(*it));
  sm.ctas.erase(it);
  --resident_ctas_;
  for (auto& sub : sm.subs) sub.wake = std::min(sub.wake, t + 1);
}

void TimingModel::account(SubCore& sub, uint64_t t) {
  if (t > sub.acct_t) stats_[sub.pending] += static_cast<double>(t - sub.acct_t);
  sub.acct_t = std::max(sub.acct_t, t);
}

std::vector<LiveWarp> TimingModel::live_warps() const {
  std::vector<LiveWarp> live;
  for (const auto& sm : sms_)
    for (const auto& slot : sm->ctas)
      for (const auto& w : slot->cta.warps)
        if (!w.done()) live.push_back({&slot->cta, &w});
  return live;
}

void TimingModel::run() {
  uint64_t t = 0;
  for (bool more = true; more;) {  // initial fill, round-robin over SMs
    more = false;
    for (auto& sm : sms_) more |= dispatch(*sm, 0);
  }
  std::vector<WarpT*> order;
  while (resident_ctas_ > 0) {
    watchdog_.check(L_, exec_.stats().warp_insts, t, [this] { return live_warps(); }, next_cta_ - resident_ctas_);
    uint64_t next = kNever;
    for (auto& smp : sms_) {
      SmT& sm = *smp;
      for (auto& sub : sm.subs) {
        if (sub.wake > t) { next = std::min(next, sub.wake); continue; }
        account(sub, t);
        uint32_t issued = 0;
        uint64_t earliest = kNever;
        TStat reason = sub.warps.empty() ? TStat::StallIdle : TStat::StallBarrier;
        order.clear();
        if (cfg_.gto && sub.last && !sub.last->w->done()) order.push_back(sub.last);
        const size_t n = sub.warps.size();
        for (size_t i = 0; i < n; ++i) {
          WarpT* w = sub.warps[cfg_.gto ? i : (sub.rr + i) % n];
          if (w != sub.last || !cfg_.gto) order.push_back(w);
        }
        for (WarpT* w : order) {
          if (issued >= cfg_.issue_width) break;
          const Check ck = check(*w, sub, sm.id, t);
          if (ck.ok) {
            if (!cfg_.gto) sub.rr = (static_cast<size_t>(std::find(sub.warps.begin(), sub.warps.end(), w) - sub.warps.begin()) + 1) % std::max<size_t>(1, sub.warps.size());
            sub.last = w;
            ++issued;
            if (issue(*w, sub, sm, t)) break;  // the warp finished (its CTA may be gone): `order` is stale
          } else if (ck.when < earliest || (earliest == kNever && ck.reason != TStat::StallIdle)) {
            if (ck.when < earliest) earliest = ck.when;
            reason = ck.reason;
          }
        }
        if (issued) {
          stats_[TStat::IssueCycles] += 1;
          sub.acct_t = t + 1;
          sub.wake = t + 1;
        } else {
          sub.pending = reason;
          sub.wake = std::max(earliest, t + 1);
        }
        next = std::min(next, sub.wake);
      }
      if (next_cta_ < total_ctas_ && sm.ctas.size() < max_ctas_per_sm_) {
        while (dispatch(sm, t + 1)) {}
        next = std::min(next, t + 1);
      }
    }
    if (resident_ctas_ == 0) break;
    if (next == kNever)
      throw SimFault("deadlock in kernel '" + L_.kernel->name + "': every resident warp waits at a barrier that can never complete");
    t = std::max(next, t + 1);
  }
  const uint64_t end = std::max(end_cycle_, t);
  for (auto& sm : sms_) {
    occupancy_tick(*sm, end);
    for (auto& sub : sm->subs) {
      account(sub, end);
    }
  }
  mem_.flush_stats();
  const FuncStats& f = exec_.stats();
  const double cycles = static_cast<double>(end + cfg_.launch_overhead);
  stats_[TStat::Cycles] = cycles;
  stats_[TStat::KernelCycles] = static_cast<double>(end);
  stats_[TStat::ThreadInsts] = static_cast<double>(f.thread_insts);
  stats_[TStat::WarpInsts] = static_cast<double>(f.warp_insts);
  stats_[TStat::Ipc] = cycles > 0 ? static_cast<double>(f.thread_insts) / cycles : 0.0;
  stats_[TStat::WarpIpc] = cycles > 0 ? static_cast<double>(f.warp_insts) / cycles : 0.0;
  const double max_warps = static_cast<double>(cfg_.max_threads / 32);
  stats_[TStat::AchievedOccupancy] =
      stats_[TStat::ActiveSmCycles] > 0 ? stats_[TStat::ActiveWarpCycles] / stats_[TStat::ActiveSmCycles] / max_warps : 0.0;
  stats_[TStat::TheoreticalOccupancy] = static_cast<double>(max_ctas_per_sm_ * warps_per_cta_) / max_warps;
  stats_[TStat::CtasPerSm] = max_ctas_per_sm_;
}

}  // namespace stc
