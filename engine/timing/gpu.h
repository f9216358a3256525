// The cycle-level timing model of one kernel launch: CTA dispatcher with occupancy limits, SMs with
// sub-cores (warp scheduler GTO/LRR, register scoreboard, units with latency and initiation interval),
// the memory system, barriers, and event-driven fast-forward over cycles in which nothing can issue.
// Its member functions live in gpu.cc (construction, CTA dispatch, the scheduler's passes and issue),
// issue_facts.cc (what is known of each instruction before the launch), icache.cc (instruction fetch),
// completion_time.cc (when an issued instruction's work completes), sampled_run.cc (the samplers' skips and
// fast-forwards) and run_loops.cc (the loops over SMs and cycles); the records they share (SMs, sub-cores,
// CTAs, warps) in gpu_internal.h.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "../func/executor.h"
#include "config.h"
#include "memsys.h"
#include "phase.h"
#include "sampling.h"
#include "../stats.h"

namespace stc {

class TimingModel {
 public:
  // `regs_per_thread`: registers per thread for occupancy (0: estimate from the PTX). `sample` > 0: sampled
  // simulation with that tolerance (waves of CTAs, sampling.h; within a grid of few waves, phase.h). Stats go to `stats`; `watchdog` bounds the simulated
  // cycles and warp instructions of the run.
  // `threads` > 1: a full-detail launch runs its SMs on that many host threads (run_parallel), with the
  // same results bit for bit. `lockstep`: a full-detail launch runs the lockstep loop on one thread instead
  // (run_lockstep, as sampled launches do), with the same results bit for bit (the tests compare the loops).
  TimingModel(const TimingConfig& cfg, LaunchState& launch, uint32_t regs_per_thread, double sample,
              Stats& stats, Watchdog& watchdog, uint32_t threads = 1, bool lockstep = false);
  ~TimingModel();
  TimingModel(const TimingModel&) = delete;
  TimingModel& operator=(const TimingModel&) = delete;

  // Simulates the launch to completion (the functional results land in device memory as it goes).
  void run();

 private:
  struct WarpT;
  struct CtaSlot;
  struct SubCore;
  struct SmT;
  struct IssueFacts;
  struct Part;
  struct Check {
    bool ok;
    uint64_t when;
    TStat reason;
    bool stop = false;  // the warp's fetch could reach state other SMs share, which the pass may not touch
  };

  // How an SM's cycle (sm_cycle) ended: it stopped before a stage that may act on state other SMs share,
  // it ran to its end, or it ran to its end and its dispatch stage ran.
  enum class CycleEnd { Stopped, Done, Dispatched };

  uint32_t ctas_per_sm() const;
  // The lockstep loop: every SM's cycle t, in SM order, before any SM's cycle t + 1 (the order the samplers
  // observe the GPU in). Returns the last cycle it simulated.
  uint64_t run_lockstep();
  // The run-ahead loop (full detail): each SM runs its cycles on its own while they touch no state another
  // SM reads or writes; a stage that may touch such state (a global memory access, an extension's
  // instruction, an instruction fetch beyond the SM's caches, a CTA dispatch) waits until it is the
  // earliest pending step of any SM, so that every shared resource sees its requests in the lockstep
  // order and the results are the lockstep loop's, bit for bit. An SM's state then stays in the host's
  // caches over many cycles instead of one. Returns the last cycle it simulated.
  uint64_t run_ahead();
  // run_ahead() on host threads, each with its own copy of everything an SM's step writes beyond its SM
  // (Part). Rounds of two phases: every SM not stopped runs its cycles on whichever thread takes it, until
  // its next stage that may touch shared state (or a horizon); then the caller's thread runs the stopped
  // stages, one at a time, in run_ahead's order (a stage runs only once it is the earliest step of any SM,
  // stopped or not), each SM going on from its stage while it stays the earliest. Every SM's steps and every
  // shared resource's requests come in run_ahead's order, so the results are its results, bit for bit (the
  // counts are integers, summed per thread and added up at the end). Returns the last cycle it simulated.
  uint64_t run_parallel();
  // The watchdog's check at cycle t of the SM loops (every thread's instructions counted).
  void watch(uint64_t t);
  // SM `sm`'s cycle t from the stage it stopped at (SmT::resume): its sub-cores' passes in order, then its
  // CTA dispatch. With `shared_ok` false, it stops before a stage that may touch shared state.
  CycleEnd sm_cycle(SmT& sm, uint64_t t, bool shared_ok);
  // Whether fetch() of `line` for warp w fills only from the SM's own instruction caches (the L0, L1 or
  // the level above, which is per SM here), its next-line request included.
  bool fetch_stays_in_sm(const WarpT& w, const SubCore& sub, const SmT& sm, uint32_t line) const;
  // The earliest wake of the SM's sub-cores.
  static uint64_t earliest_wake(const SmT& sm);
  // Whether a CTA is left to dispatch and `sm` has room for one.
  bool can_dispatch(const SmT& sm) const;
  // Finds the timing class of every instruction; throws LaunchError when the config has none for one.
  void resolve_classes();
  bool dispatch(SmT& sm, uint64_t t);
  // The SM's instruction caches as a launch finds them (icache.*), built when its first CTA arrives (a
  // small grid leaves most SMs unused).
  void fill_icaches(SmT& sm);
  // With `shared_ok` false, a fetch that could go past the SM's instruction caches is not made: the Check
  // says stop.
  Check check(WarpT& w, SubCore& sub, uint32_t sm, uint64_t t, bool shared_ok);
  // Whether check() would stop at its MSHR test, known without its tests before that one (WarpT::
  // mshr_blocked), and then the cycle it answers.
  bool held_by_mshrs(const WarpT& w, const SubCore& sub, uint32_t sm, uint64_t t);
  uint64_t mshr_wait(uint32_t sm, uint64_t t) { return std::max(t + 1, mem_.mshr_next_free(sm)); }
  // check()'s scoreboard and unit tests for the warp's next instruction `f` at t: true when one holds the
  // warp, its hint and reason then cached in w (sleep_after_issue asks the same for t + 1).
  static bool held_by_registers_or_unit(WarpT& w, const SubCore& sub, const IssueFacts& f, uint64_t t);
  // Instruction fetch (icache.*): the cycle `line` is in warp w's instruction buffer, requesting it if it is
  // not in the sub-core's L0; a warp that enters the line requests the next one too (a next-line prefetch).
  double fetch(WarpT& w, SubCore& sub, SmT& sm, uint32_t line, uint64_t t);
  // Fills `line` into the sub-core's L0 (through the SM's L1), one line at a time, starting no earlier than
  // `from`; returns when it is there (fractional cycles: fills stream at a measured non-integer rate).
  double fill(SubCore& sub, SmT& sm, uint32_t line, double from);
  // Issues the warp's next instruction; returns true when the warp finished (and its CTA may be retired).
  bool issue(WarpT& w, SubCore& sub, SmT& sm, uint64_t t);
  // When the registers the warp's next instruction reads or writes are ready. Only the warp's own issue
  // changes its registers' ready times or its pc, so issue() computes this once for the next instruction
  // (fast_forward() too, having moved the pcs) and check() reads the one value: a warp is checked about
  // twice per instruction it issues, at up to a dozen scoreboard entries each, all cold in the host cache.
  // `f`: the facts of the warp's next instruction.
  uint64_t operands_ready(const WarpT& w, const IssueFacts& f) const;
  // One sub-core's pass at t. With `shared_ok` false, it stops, having issued nothing, before an issue
  // that may touch state other SMs share (or a folded constant's, after which the warp goes on, or any
  // issue with an issue width above 1) or such a fetch: returns false, and the pass runs again from the
  // start when it may (every step before the stop is one the rerun repeats: cached hints, the account).
  bool schedule(SubCore& sub, SmT& sm, uint64_t t, bool shared_ok);
  // What a sub-core's failed pass concludes: the earliest cycle a visited warp could issue, and the stall
  // reason of the first warp (in visiting order) that gave it.
  struct Sleep {
    uint64_t earliest = std::numeric_limits<uint64_t>::max();
    TStat reason;
    explicit Sleep(const SubCore& sub);
    void add(const Check& ck) {
      if (ck.when < earliest || (earliest == std::numeric_limits<uint64_t>::max() && ck.reason != TStat::StallIdle)) {
        if (ck.when < earliest) earliest = ck.when;
        reason = ck.reason;
      }
    }
  };
  // After a warp issued at t: when the sub-core's pass at t + 1 can be told now (every warp sleeps on a
  // known cycle after it: cached hints, branch delays, the scoreboard or the unit), the sub-core sleeps
  // until then with that pass's stall reason instead (the same hints, stall cycles and wake as that pass).
  void sleep_after_issue(SubCore& sub, uint64_t t);
  // A barrier's release or an extension's wake at t, in sub-core `by`'s issue: every sub-core of the SM
  // passes at t + 1; one the loop visits after `by` whose pass at t sleep_after_issue skipped passes at t.
  void wake_subcores(SmT& sm, const SubCore& by, uint64_t t);
  // The SASS memory instructions of a memory instruction (completion_time.cc: memory_instructions), kept by
  // name for records that name their shape: the count depends only on the records relative to each other
  // (and on whether the instruction loads a fragment, which the name's wmma kind fixes), and a global
  // wmma.load would walk 256 of them.
  uint64_t access_time(const Instr& in, WarpRecord& rec, WarpT& w, uint32_t sm, uint64_t t);
  uint32_t memory_instructions_named(const Instr& in, WarpRecord& rec, Part& part);
  // A bulk copy's global reads through L2 (MemorySystem::bulk_read), their arrival noted under its
  // completion object in the CTA (CtaSlot::bulk).
  void bulk_copy(uint64_t key, WarpRecord& rec, const OpDesc& desc, WarpT& w, uint32_t sm, uint64_t t, Part& part);
  uint64_t complete_time(const Instr& in, WarpRecord& rec, const OpTiming& ot, WarpT& w, uint32_t sm,
                         uint64_t t, Part& part);
  void account(SubCore& sub, Stats& stats, uint64_t t);
  void retire_cta(SmT& sm, CtaSlot& cta, uint64_t t);
  // The warp instructions executed so far, over every thread.
  uint64_t warp_insts() const;
  // Runs the next `n` CTAs functionally only (sampled simulation: their time comes from the sampler).
  void skip_ctas(uint64_t n, uint64_t t);
  void occupancy_tick(SmT& sm, uint64_t t);
  // Intra-launch time sampling (phase.h): brings the lazily summed occupancy and stall cycles up to `t`.
  void settle(uint64_t t);
  // Closes the phase sampler's window at `t`; fast-forwards the resident CTAs if the phase is steady.
  void phase_window(uint64_t t);
  // Runs every resident CTA functionally through the iterations of `loop` it would complete at its measured
  // pace, until the first warp leaves the loop; the span's cycles go to the phase sampler.
  void fast_forward(LoopSpan loop, uint64_t t);
  std::vector<LiveWarp> live_warps() const;

  const TimingConfig& cfg_;
  LaunchState& L_;
  Watchdog& watchdog_;
  Executor exec_;
  Stats& stats_;
  MemorySystem mem_;
  std::vector<std::unique_ptr<SmT>> sms_;
  uint32_t regs_per_thread_;
  uint32_t warps_per_cta_;
  uint32_t max_ctas_per_sm_ = 0;
  // The shared carve-out the driver picks for the launch (bytes; 0 where the config lists none): the
  // smallest of cfg.shared_carveouts that holds max_ctas_per_sm_ CTAs' shared memory and reserve.
  uint64_t shared_carveout() const;
  // The launch's L1 capacity: the unified SRAM less shared_carveout() (l1d's own size where the config lists
  // no carve-outs).
  uint64_t l1_bytes() const;
  uint64_t next_cta_ = 0, total_ctas_ = 0;
  // CTAs resident; a CTA retires on its SM's thread (run_parallel), so the counts and maxima every SM's
  // retirements update are atomic (their values do not depend on the order)
  std::atomic<uint64_t> resident_ctas_{0};
  std::atomic<uint64_t> end_cycle_{0};
  std::atomic<uint64_t> last_retire_{0};  // the cycle the last CTA retired so far
  WarpRecord rec_;
  WaveSampler sampler_;
  PhaseSampler phase_;
  std::atomic<uint64_t> resident_events_{0};  // CTA dispatches and retirements so far (the phase sampler's windows)
  CtaState skipped_cta_;  // where skipped CTAs run
  // What SMs' steps write beyond their SM, one copy per host thread (one unless run_parallel runs).
  std::vector<std::unique_ptr<Part>> parts_;
  uint32_t threads_ = 1;
  bool lockstep_ = false;  // run_lockstep whatever the launch (the constructor's `lockstep`)
  std::vector<const OpDesc*> desc_;  // timing class of each instruction, by pc
  // What check() needs of each instruction, by pc, in one small record (the Instr itself, with its
  // vectors on the heap, is cold memory for a warp that only waits): the scoreboard entries of the
  // registers it reads or writes (pc_regs_[reg_begin, reg_begin + reg_count)) and of those its result
  // makes wait (pc_dsts_[dst_begin, + dst_count)), its unit and the kinds of wait it may need.
  struct IssueFacts {
    uint32_t reg_begin = 0;
    uint16_t reg_count = 0;
    uint16_t dst_count = 0;
    uint32_t dst_begin = 0;
    uint8_t unit = 0;
    bool folded = false;
    bool waits_groups = false;   // cp.async.wait_group / wait_all
    bool serial_async = false;   // a wgmma.mma_async ptxas serialized (LaunchState::serialize_wgmma): it waits
                                 // for every earlier wgmma group of its warp to complete
    bool may_touch_global = false;
    bool shared_state = false;  // may touch state other SMs share (run_ahead): global memory, an extension
    bool global_store = false;  // waits for the SM's store path (l1d.store_sector_cycles)
    bool one_ldst = false;      // ld/st of at most 16 bytes per lane, cp.async: always one SASS memory instruction
    bool branch = false;        // a branch: the warp's next instruction waits the branch latency
    bool cas_loop = false;      // a shared atomic the warp runs as a CAS loop
    // Timing fixed by its class alone, known before the launch (no memory, no tensor pipe, no latency model
    // or class stats, not folded: the usual ALU and branch instruction): its unit's busy cycles (interval
    // times the SASS instructions) and when its result is ready after issue.
    bool fixed = false;
    uint8_t sass = 1;           // SASS instructions (integer_instructions: a 64-bit add is a pair)
    uint32_t interval = 0;
    uint32_t done_after = 0;
    uint32_t line = 0;  // the instruction cache line of its code (icache.*)
    uint32_t slot_begin = 0;  // the functional register slots its operands name: pc_slots_[slot_begin, +slot_count)
    uint16_t slot_count = 0;
    uint32_t ready_begin = 0;  // its scoreboard entries' lines of reg_ready: pc_ready_lines_[ready_begin, +ready_count)
    uint16_t ready_count = 0;
  };
  std::vector<IssueFacts> facts_;
  std::vector<int32_t> pc_regs_;
  std::vector<int32_t> pc_dsts_;
  uint32_t scoreboard_entries_ = 0;  // a warp's register ready times (WarpT::reg_ready)
  std::vector<int32_t> pc_slots_;
  std::vector<uint32_t> pc_ready_lines_;
  uint32_t int_latency_ = 1, branch_latency_ = 1;
  uint32_t code_lines_ = 0;               // lines of the kernel's code (icache.*)
  std::vector<double> code_in_l2_;        // per code line: the cycle it is in L2 (< 0: not fetched yet)
};

}  // namespace stc
