#include "gpu.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <stdexcept>
#include <thread>

#include "../func/cfg.h"
#include "../ptx/errors.h"

namespace stc {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
constexpr size_t kUnits = static_cast<size_t>(Unit::NONE) + 1;
uint64_t round_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }
// Whether the instruction may need an L1 MSHR: global (or generic) accesses, and cp.async, whose source
// is global memory whatever its destination space.
bool may_touch_global(const Instr& in) {
  if (in.traits.mem == MemKind::AsyncCopy) return true;
  return in.traits.mem != MemKind::None && in.space != Space::Shared && in.space != Space::Param &&
         in.space != Space::Const;
}
// Raises `a` to at least `v` (the order of the updates does not change the result).
void raise_to(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {}
}

// The host threads of one launch (run_parallel): run(job) calls job(0) on the caller and job(i) on each pool
// thread i that comes in time, and returns once every call returned; the first exception (by index) is
// rethrown. A job takes its work from a shared queue, so a thread that comes late need not come at all: once
// the caller's job returned, the phase is closed, and a thread that comes after that skips it (on a host
// whose cores are busy with other work, a pool thread may get no core for milliseconds). A thread waiting for
// the next phase, or the caller for the threads in a phase, spins a little, then yields, then sleeps.
class ThreadPool {
 public:
  explicit ThreadPool(uint32_t n) : errors_(n) {
    for (uint32_t i = 1; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void run(const std::function<void(uint32_t)>& job) {
    job_ = &job;
    finished_.store(0, std::memory_order_relaxed);
    gate_.store(0, std::memory_order_release);  // open: a thread that comes adds one
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    start_.notify_all();
    call(0);
    const int64_t entered = gate_.exchange(kClosed, std::memory_order_acq_rel);
    const auto all_done = [&] { return finished_.load(std::memory_order_acquire) == entered; };
    for (uint32_t k = 0; !all_done(); ++k) {
      if (pause(k)) continue;
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, all_done);
    }
    for (auto& e : errors_)
      if (e) {
        const std::exception_ptr first = e;
        for (auto& x : errors_) x = nullptr;
        std::rethrow_exception(first);
      }
  }

 private:
  static constexpr uint32_t kSpins = 256, kYields = 256;
  static constexpr int64_t kClosed = std::numeric_limits<int64_t>::min() / 2;
  // A wait's k-th round: true after a spin or a yield, false once it should sleep.
  static bool pause(uint32_t k) {
    if (k < kSpins) {
      __builtin_ia32_pause();
      return true;
    }
    if (k < kSpins + kYields) {
      std::this_thread::yield();
      return true;
    }
    return false;
  }
  void call(uint32_t i) {
    try {
      (*job_)(i);
    } catch (...) {
      errors_[i] = std::current_exception();
    }
  }
  void loop(uint32_t i) {
    uint64_t seen = 0;
    for (;;) {
      for (uint32_t k = 0;; ++k) {
        if (stop_.load(std::memory_order_acquire)) return;
        if (const uint64_t g = generation_.load(std::memory_order_acquire); g != seen) {
          seen = g;
          break;
        }
        if (pause(k)) continue;
        std::unique_lock<std::mutex> lock(mu_);
        start_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      }
      if (gate_.fetch_add(1, std::memory_order_acq_rel) < 0) continue;  // the phase is closed
      call(i);
      finished_.fetch_add(1, std::memory_order_acq_rel);
      std::lock_guard<std::mutex> lock(mu_);
      done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(uint32_t)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> gate_{kClosed};  // threads in the phase (kClosed and below: closed)
  std::atomic<int64_t> finished_{0};    // threads of the phase whose job returned
  std::atomic<bool> stop_{false};
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};
}  // namespace

// What an SM's steps write beyond the SM itself, one copy per host thread (run_parallel); an SM's steps
// write the copy of the thread that runs them (SmT::part). The first thread's is the model's own (exec_,
// L_, stats_, rec_): a launch on one thread runs as before.
struct TimingModel::Part {
  std::unique_ptr<LaunchState> own_launch;  // a copy of the launch: its clock (%clock) is this thread's
  std::unique_ptr<Executor> own_exec;       // its functional counts
  std::unique_ptr<Stats> own_stats;         // its counts, added to the launch's at the end
  std::unique_ptr<WarpRecord> own_rec;
  LaunchState* L = nullptr;
  Executor* exec = nullptr;
  Stats* stats = nullptr;
  WarpRecord* rec = nullptr;
  std::vector<MemAccess> async_global, async_shared;  // complete_time(): a cp.async's two sides
  struct NamedCount {
    AccessShape shape;
    uint32_t count = 0;
  };
  static constexpr uint32_t kNamedCountBits = 6;
  std::array<NamedCount, size_t{1} << kNamedCountBits> mem_insts{};  // memory_instructions_named()
  // run_parallel's phase: where the SMs this thread ran stopped (before a stage that may touch shared
  // state) or paused (at the horizon)
  std::vector<std::pair<uint64_t, uint32_t>> stopped, paused;
};

// The fields the scheduler reads of every warp it visits (check(), sleep_after_issue) come first, in the
// record's first host cache line (the record is line-aligned): a sub-core's warps lie apart, so a visit
// costs one line, not two. The scoreboard's address is there too: issue() asks for the scoreboard lines of
// the warp's next instruction as it starts, which waited for a second cold line of the record before.
struct alignas(64) TimingModel::WarpT {
  uint64_t hint = 0;          // the warp cannot issue before this cycle (cached result of check)
  uint64_t next_issue = 0;
  uint64_t operands_ready = 0;  // when the registers of its next instruction are ready (see issue())
  WarpState* w = nullptr;
  CtaSlot* cta = nullptr;
  uint32_t line = UINT32_MAX;  // the code line in its instruction buffer (icache.*)
  TStat hint_reason = TStat::StallScoreboard;
  bool after_branch = false;
  // The warp's next instruction, not a global store, passed every test of check() before the MSHRs' and
  // found the SM's MSHRs full. Those tests read only the warp's own state, which changes only when it
  // issues (which clears this), and the free cycle of its unit (mshr_unit; kUnits: none, folded) on the
  // sub-core: while that is still past and the MSHRs are full, check() answers as the MSHR test does. (A
  // global store's test also reads the SM's store path, which another sub-core's store may take once the
  // MSHRs free up.) In the first host line, which every visit reads.
  bool mshr_blocked = false;
  uint8_t mshr_unit = 0;
  // It finished in its issue (a warp the functional core finishes elsewhere, in a fast-forward, is told
  // by check()): check() answers it idle for good, and the scheduler reads that here, in the first line.
  bool finished = false;
  uint64_t* ready = nullptr;  // reg_ready.data()
  std::vector<uint64_t, LaunchAllocator<uint64_t>> reg_ready;  // on the launch's huge pages (huge_pool.h)
  std::vector<uint64_t> groups;  // completion cycle of each committed cp.async group, oldest first
  uint64_t open_group = 0;
  uint64_t last_done = 0;
  uint32_t want = UINT32_MAX;  // the line last requested for it, and when that arrives
  double want_ready = 0;
};

struct TimingModel::CtaSlot {
  CtaState cta;
  std::vector<WarpT, LaunchAllocator<WarpT>> warps;
  uint32_t live = 0;
  uint64_t insts = 0;  // warp instructions issued by the CTA's warps
};

struct TimingModel::SubCore {
  std::vector<WarpT*> warps;  // in age order
  std::array<uint64_t, kUnits> unit_free{};  // per unit: when its earliest pipe accepts an instruction
  std::vector<uint64_t> tensor_pipes;        // tensor.pipes_per_subcore Tensor Core pipes
  uint64_t wake = 0;
  // The cycle of the pass sleep_after_issue skipped while a warp of the sub-core was blocked (at a barrier,
  // or waiting on an extension): a release in that cycle by a sub-core visited before this one brings the
  // pass back (wake_subcores). A past cycle never matches again.
  uint64_t skipped = std::numeric_limits<uint64_t>::max();
  WarpT* last = nullptr;  // the last warp that issued, while it has not finished (GTO's first choice)
  size_t rr = 0;
  uint64_t acct_t = 0;
  TStat pending = TStat::StallIdle;
  // L0 instruction cache (icache.*), direct-mapped: line + 1 per entry (0: empty), the cycle it is filled,
  // and when the sub-core's fetch may start the next fill
  std::vector<uint32_t> l0_tag;
  std::vector<double> l0_ready;
  double fetch_free = 0;
};

TimingModel::Sleep::Sleep(const SubCore& sub) : reason(sub.warps.empty() ? TStat::StallIdle : TStat::StallBarrier) {}

struct TimingModel::SmT {
  uint32_t id = 0;
  std::vector<std::unique_ptr<CtaSlot>> ctas;
  std::vector<std::unique_ptr<CtaSlot>> spare;  // retired CTA slots, reused so their buffers stay allocated
  std::vector<SubCore> subs;
  uint32_t warp_slot = 0;
  uint32_t resident_warps = 0;
  uint64_t occ_t = 0;
  uint64_t wake = 0;  // the earliest wake of its sub-cores (only this SM's own processing changes them)
  std::vector<uint32_t> l1_tag;  // L1 instruction cache (icache.*), direct-mapped as the L0s
  std::vector<double> l1_ready;
  std::vector<uint32_t> l15_tag;  // the GPC-level instruction cache above the L1 (icache.l15_bytes), as the L1
  bool icaches_filled = false;    // fill_icaches() ran
  size_t resume = 0;              // the stage of its current cycle sm_cycle goes on from (subs.size(): dispatch)
  uint64_t idle_at = std::numeric_limits<uint64_t>::max();  // run_ahead: the cycle it passes idle, left empty
  Part* part = nullptr;           // the copies its steps write: the running thread's (run_parallel)
};

TimingModel::TimingModel(const TimingConfig& cfg, LaunchState& launch, uint32_t regs_per_thread, double sample,
                         Stats& stats, Watchdog& watchdog, uint32_t threads)
    : cfg_(cfg), L_(launch), watchdog_(watchdog), exec_(launch), stats_(stats), mem_(cfg, stats_),
      regs_per_thread_(regs_per_thread), sampler_(0, 1, 0), phase_(0, 0, 0) {
  threads_ = std::max(1u, threads);
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

void TimingModel::resolve_classes() {
  const TimingConfig& c = cfg_;
  desc_.reserve(L_.kernel->code.size());
  for (const Instr& in : L_.kernel->code) {
    const std::string& name = op_class_of(in);
    auto it = c.classes.find(name);
    if (it == c.classes.end()) {
      auto why = c.missing.find(name);
      throw LaunchError("kernel '" + L_.kernel->name + "' uses '" + in.opcode + "' (" + L_.kernel->file + ":" +
                        std::to_string(in.line) + "), which config '" + c.name + "' has no timing for: " +
                        (why != c.missing.end() ? why->second : "no timing class '" + name + "'"));
    }
    desc_.push_back(&it->second);
  }
  facts_.reserve(L_.kernel->code.size());
  std::vector<int32_t> entry_of(L_.kernel->regs.size(), -1);  // register -> scoreboard entry
  uint64_t code_bytes = 0;  // code address of each instruction: icache.instruction_bytes per SASS instruction
  for (const Instr& in : L_.kernel->code) {
    IssueFacts f;
    if (c.icache) {
      f.line = static_cast<uint32_t>(code_bytes / c.icache_line);
      if (!in.traits.folded) code_bytes += static_cast<uint64_t>(c.inst_bytes) * in.traits.sass_count;
    }
    // Scoreboard entries are numbered in order of first use in the code, not by register: the registers of
    // neighbouring instructions then share the host's cache lines.
    const auto entry = [&](int32_t r) {
      int32_t& e = entry_of[static_cast<size_t>(r)];
      if (e < 0) e = static_cast<int32_t>(scoreboard_entries_++);
      return e;
    };
    f.reg_begin = static_cast<uint32_t>(pc_regs_.size());
    for (const auto* regs : {&in.srcs, &in.dsts})
      for (int32_t r : regs == &in.dsts && in.traits.result_unused ? std::vector<int32_t>{} : *regs)
        if (const int32_t e = entry(r); std::find(pc_regs_.begin() + f.reg_begin, pc_regs_.end(), e) == pc_regs_.end())
          pc_regs_.push_back(e);
    f.reg_count = static_cast<uint16_t>(pc_regs_.size() - f.reg_begin);
    f.dst_begin = static_cast<uint32_t>(pc_dsts_.size());
    if (!in.traits.result_unused)  // a RED in SASS: nothing waits for its destination
      for (int32_t r : in.dsts) pc_dsts_.push_back(entry(r));
    f.dst_count = static_cast<uint16_t>(pc_dsts_.size() - f.dst_begin);
    f.slot_begin = static_cast<uint32_t>(pc_slots_.size());
    const auto add_slot = [&](int32_t r) {
      if (r >= 0 && std::find(pc_slots_.begin() + f.slot_begin, pc_slots_.end(), r) == pc_slots_.end()) pc_slots_.push_back(r);
    };
    for (const Operand& o : in.ops) {
      if (o.kind == OpndKind::Vec) for (int32_t r : o.vec) add_slot(r);
      else if (o.kind == OpndKind::Reg || o.kind == OpndKind::Mem) add_slot(o.reg);
    }
    if (in.guard >= 0) add_slot(in.guard);
    f.slot_count = static_cast<uint16_t>(pc_slots_.size() - f.slot_begin);
    // its scoreboard entries' host lines of reg_ready, each once (issue() prefetches them)
    f.ready_begin = static_cast<uint32_t>(pc_ready_lines_.size());
    for (uint32_t i = f.reg_begin; i < f.reg_begin + f.reg_count; ++i)
      if (const auto line = static_cast<uint32_t>(pc_regs_[i]) / 8;
          std::find(pc_ready_lines_.begin() + f.ready_begin, pc_ready_lines_.end(), line) == pc_ready_lines_.end())
        pc_ready_lines_.push_back(line);
    f.ready_count = static_cast<uint16_t>(pc_ready_lines_.size() - f.ready_begin);
    f.unit = static_cast<uint8_t>(in.unit);
    f.folded = in.traits.folded;
    f.waits_groups = in.traits.async == AsyncKind::WaitGroup || in.traits.async == AsyncKind::WaitAll;
    f.serial_async = L_.serialize_wgmma && in.traits.async_group;
    f.may_touch_global = may_touch_global(in);
    f.shared_state = f.may_touch_global || (in.traits.extension && !in.traits.sm_local);
    f.global_store = c.store_sector_cycles > 0 && in.traits.mem == MemKind::Store && f.may_touch_global;
    // each lane's one record (or its vector's contiguous elements) of at most 16 bytes: memory_instructions
    // would count 1 from the records; a cp.async moves 4, 8 or 16 bytes per lane (one LDGSTS)
    f.one_ldst = in.traits.single_ldst;
    f.sass = in.traits.sass_count;
    f.branch = in.traits.branch;
    f.cas_loop = in.traits.cas_loop;
    const OpDesc& desc = *desc_[facts_.size()];
    f.fixed = !in.traits.folded && in.unit != Unit::TENSOR && in.unit != Unit::LDST &&
              in.traits.mem == MemKind::None && in.traits.async == AsyncKind::None && !in.traits.async_group &&
              !in.traits.tensor_math && !desc.model && !desc.account;
    if (f.fixed) {
      f.interval = desc.timing.interval * f.sass;
      f.done_after = desc.timing.latency + (f.sass - 1u);
    }
    facts_.push_back(f);
  }
  if (c.icache) {
    code_lines_ = static_cast<uint32_t>((code_bytes + c.icache_line - 1) / c.icache_line);
    code_in_l2_.assign(code_lines_ + 1, -1.0);
    // what the level above the L1 holds at launch was fetched by the launch before, through L2
    std::fill_n(code_in_l2_.begin(), std::min<size_t>(code_in_l2_.size(), c.icache_l15_lines), 0.0);
  }
  int_latency_ = c.classes.at("units.int").timing.latency;
  branch_latency_ = c.classes.at("units.branch").timing.latency;
}

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

void TimingModel::occupancy_tick(SmT& sm, uint64_t t) {
  if (t > sm.occ_t) {
    Stats& st = *sm.part->stats;
    st[TStat::ActiveWarpCycles] += static_cast<double>(sm.resident_warps) * static_cast<double>(t - sm.occ_t);
    if (!sm.ctas.empty()) st[TStat::ActiveSmCycles] += static_cast<double>(t - sm.occ_t);
  }
  sm.occ_t = std::max(sm.occ_t, t);
}

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

namespace {

// SASS memory instructions a PTX memory instruction becomes: each moves at most 16 bytes per thread, so a
// thread's accesses, merged where contiguous, need ceil(bytes / 16) of them (the most of any thread).
// Matrix fragments from shared memory (wmma A/B) load with one ldmatrix-like instruction.
uint32_t memory_instructions(const Instr& in, WarpRecord& rec) {
  if (rec.no_accesses()) return 1;
  if (in.traits.fragment_load && rec.space == Space::Shared) return 1;
  rec.materialize();
  // The common case in one cheap pass: at most one record of at most 16 bytes per lane (records come in
  // lane order) is one instruction.
  bool one = true;
  int prev = -1;
  for (const MemAccess& a : rec.acc) {
    if (a.space != rec.space && rec.space != Space::Generic) continue;
    one &= a.lane > prev && a.size <= 16;
    prev = a.lane;
  }
  if (one) return 1;
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

}  // namespace

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

uint64_t TimingModel::complete_time(const Instr& in, WarpRecord& rec, const OpTiming& ot, WarpT& w,
                                    uint32_t sm, uint64_t t, Part& part) {
  if (in.traits.tensor_math) (*part.stats)[TStat::TensorInsts] += 1;
  switch (in.traits.mem) {
    case MemKind::None:
      if (in.traits.async == AsyncKind::Commit) {
        w.groups.push_back(w.open_group);
        w.open_group = 0;
      }
      if (in.traits.async_group) {
        w.open_group = std::max(w.open_group, t + ot.latency);
        w.last_done = std::max(w.last_done, t + ot.latency);
      }
      return t + ot.latency;
    case MemKind::AsyncCopy: {
      rec.materialize();
      if (rec.acc.empty()) return t + 1;
      std::vector<MemAccess>& global = part.async_global;
      std::vector<MemAccess>& shared = part.async_shared;
      global.clear();
      shared.clear();
      for (const auto& a : rec.acc) (a.space == Space::Shared ? shared : global).push_back(a);
      for (const auto& a : shared) (*part.stats)[TStat::CpAsyncBytes] += a.size;
      uint64_t done = global.empty() ? t : mem_.load(sm, t, global, !(in.flags & F_CG));
      done = std::max(done, mem_.shared(sm, done, shared));
      if (cfg_.cp_async_sync) done = t + 1;
      w.open_group = std::max(w.open_group, done);
      w.last_done = std::max(w.last_done, done);
      return t + 1;
    }
    case MemKind::Load: case MemKind::Store: case MemKind::Atomic: {
      if (rec.no_accesses()) return t + 1;
      const uint64_t done = access_time(in, rec, w, sm, t);
      if (!in.traits.fragment_load) return done;
      // a matrix-fragment load: from shared memory one SASS LDSM (smem.matrix_extra_latency beyond its
      // wavefronts); from elsewhere, for a layout HMMA reads transposed (A .col, B .row), the MOVM.16.MT88
      // transposes ptxas adds after the loads (tensor.movm_latency)
      if (rec.space == Space::Shared) return done + cfg_.smem_matrix_extra_latency;
      return done + (in.traits.fragment_transposed ? cfg_.movm_latency : 0);
    }
  }
  return t + ot.latency;
}

// When a warp's load, store or atomic with accesses completes (a store: when it may issue on; its path
// time goes to the warp's last_done).
uint64_t TimingModel::access_time(const Instr& in, WarpRecord& rec, WarpT& w, uint32_t sm, uint64_t t) {
  const Space s = rec.space;
  uint64_t known = 0;  // a shared access or global load of a named shape the memo knows: records unread
  if (s == Space::Shared && rec.shape.key && !in.traits.cas_loop &&
      mem_.shared_named(sm, t, rec.first_addr(), rec.shape, known))
    return known;
  if (s == Space::Global && in.traits.mem == MemKind::Load && rec.shape.key &&
      mem_.load_named(sm, t, rec.first_addr(), rec.shape, !(in.flags & F_CG), known))
    return known;
  rec.materialize();
  if (s == Space::Param) return t + int_latency_;
  if (s == Space::Const) return t + cfg_.const_latency;
  if (s == Space::Shared && in.traits.cas_loop)  // LDS, add, CAS, compare, branch per update
    return mem_.shared_cas_loop(sm, t, rec.acc, w.cta->cta.linear_id,
                                2 * cfg_.smem_latency + 2 * int_latency_ + branch_latency_);
  if (s == Space::Shared) return mem_.shared(sm, t, rec.acc, rec.shape);
  if (in.traits.mem == MemKind::Atomic) return mem_.atomic(sm, t, rec.acc);
  if (in.traits.mem == MemKind::Store) {
    const uint64_t done = mem_.store(sm, t, rec.acc, rec.shape);
    w.last_done = std::max(w.last_done, done);
    return t + 1;
  }
  return mem_.load(sm, t, rec.acc, !(in.flags & F_CG), rec.shape);
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

std::vector<LiveWarp> TimingModel::live_warps() const {
  std::vector<LiveWarp> live;
  for (const auto& sm : sms_)
    for (const auto& slot : sm->ctas)
      for (const auto& w : slot->cta.warps)
        if (!w.done()) live.push_back({&slot->cta, &w});
  return live;
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
  // under 0.4 %; the issue's rule: stratify or fall back to full detail where CTAs differ).
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
  const auto tick = [&] {
    watchdog_.check(L_, exec_.stats().warp_insts, t, [this] { return live_warps(); }, next_cta_ - resident_ctas_);
  };
  // Rounds of one iteration of the fastest class, until the first warp leaves the loop, or a CTA's round
  // executes a number of instructions that differs (beyond the tolerance) from its first round, or a code
  // mix unlike the measured windows' (a pipeline's last iterations, which issue no loads), or the
  // warps of a loop without a barrier differ among themselves: the phase ended. That round is undone where it can be (every CTA
  // that advanced in it can undo), so what follows runs in detail.
  uint64_t rounds = 0;
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

uint64_t TimingModel::run_lockstep() {
  uint64_t t = 0;
  // The SMs the loop visits, in id order. Once every CTA is dispatched, an SM without CTAs whose sub-cores
  // all sleep for good can never act again: it leaves the list (visiting it would change nothing).
  std::vector<SmT*> live;
  for (auto& sm : sms_) live.push_back(sm.get());
  const auto dead = [this](const SmT* sm) { return sm->ctas.empty() && sm->wake == kNever && next_cta_ >= total_ctas_; };
  while (resident_ctas_ > 0) {
    watchdog_.check(L_, exec_.stats().warp_insts, t, [this] { return live_warps(); }, next_cta_ - resident_ctas_);
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
  // The samplers observe the whole GPU at each cycle: they run in lockstep. So does a launch with the
  // environment variable STCSIM_LOCKSTEP set (to anything): the tests compare the two loops.
  const bool lockstep = sampler_.enabled() || phase_.enabled() || std::getenv("STCSIM_LOCKSTEP");
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
}

}  // namespace stc
