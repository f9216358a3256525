// Functional fast-forward of one CTA through iterations of a steady loop (intra-launch time sampling,
// timing/phase.h): every warp of the CTA runs exactly whole iterations, back to the pc it started at, so the
// CTA ends where it began relative to the loop and the timing model's state of it (register ready times,
// cp.async groups in flight, barrier arrivals) still fits. Instructions execute through Executor::step: the
// results are exact (cp.async copies and wmma loads are performed at issue, bar.sync through the CTA's
// barriers); only their timing is skipped. Where the loop writes nothing outside the CTA (no global store or
// atomic, no extension state), each round is taken on a copy, so that the round in which a warp leaves the
// loop can be undone: the loop's last iteration and what follows then run in detail.
#pragma once

#include <cstdint>
#include <vector>

#include "../func/executor.h"

namespace stc {

// The static extent of a loop: its back-edge at `tail` branches to `head` (head <= tail).
struct LoopSpan {
  int32_t head = -1;
  int32_t tail = -1;
  bool valid() const { return head >= 0; }
  bool contains(int32_t pc) const { return pc >= head && pc <= tail; }
};

// Whether the instruction just executed at `pc` was a taken back-edge: a branch to a pc at or before it
// that the warp (now at `next_pc`) followed.
inline bool backedge_taken(const Instr& in, int32_t pc, bool warp_done, int32_t next_pc) {
  return in.traits.branch && in.target >= 0 && in.target <= pc && !warp_done && next_pc == in.target;
}

// Whether every instruction of `loop` writes only state of its CTA (registers, shared and local memory):
// then a fast-forward round can be undone.
bool loop_writes_only_cta_state(const Kernel& kernel, LoopSpan loop);

// Whether `loop` holds a CTA barrier (bar.sync / barrier): its warps then keep one pace whatever their work.
bool loop_has_barrier(const Kernel& kernel, LoopSpan loop);

class CtaFastForward {
 public:
  // Records where each warp of `cta` stands; every live warp must be inside `loop`. `undoable`: the loop
  // writes only CTA state (loop_writes_only_cta_state), so a round that leaves the loop is undone.
  CtaFastForward(Executor& exec, CtaState& cta, LoopSpan loop, bool undoable);

  // Runs every warp one more iteration of the loop (the warps of the CTA together, through its barriers);
  // `tick` is called after each warp instruction (the watchdog). Returns false when the CTA's phase ended
  // on the way: a warp left the loop or finished, or one could not complete its iteration (it waits at a
  // barrier a warp that left will not reach); the warps then stand wherever that left them.
  template <class Tick>
  bool advance(WarpRecord& rec, Tick&& tick);
  // Whether the last round can be undone (the loop writes only CTA state and no extension state exists).
  bool can_undo() const { return saved_ && cta_.ext.empty(); }
  // Puts the CTA back where the last round began (the executor's counts are the caller's to restore).
  void undo();

  uint64_t iterations() const { return target_; }
  // Warp instructions the last round executed.
  uint64_t round_insts() const { return round_insts_; }
  // Warp instructions per pc of the loop (from its head) in the last round.
  const std::vector<uint32_t>& round_mix() const { return round_mix_; }
  // Whether the warps that ran the last round executed the same number of instructions within `tol`
  // (warps of different work, as CSR rows of different lengths, do not keep one pace).
  bool warps_alike(double tol) const;
  bool ended() const { return ended_; }

 private:
  struct Mark {
    int32_t pc;
    size_t depth;        // SIMT stack depth
    uint64_t done = 0;   // back-edges taken since the fast-forward began
    bool left = false;   // it left the loop (or finished): it runs no further here
    uint64_t insts = 0;  // warp instructions in the last round
  };
  // Whether warp i stands where it started, `target_` iterations later.
  bool arrived(size_t i) const;
  // Runs the round to `target_`; false when it ended the CTA's phase.
  template <class Tick>
  bool run_round(WarpRecord& rec, Tick&& tick);
  // Copies the CTA's state before a round.
  void save();

  Executor& exec_;
  CtaState& cta_;
  LoopSpan loop_;
  std::vector<Mark> marks_;
  uint64_t target_ = 0;
  uint64_t round_insts_ = 0;
  std::vector<uint32_t> round_mix_;
  bool ended_ = false;
  bool undoable_;
  bool saved_ = false;  // the state before the last round is saved
  CtaState::SharedBytes saved_shared_;
  decltype(CtaState::warps) saved_warps_;
  std::vector<Mark> saved_marks_;
};

template <class Tick>
bool CtaFastForward::advance(WarpRecord& rec, Tick&& tick) {
  if (ended_) return false;
  saved_ = undoable_ && cta_.ext.empty();
  if (saved_) save();
  ++target_;
  if (run_round(rec, tick)) return true;
  ended_ = true;
  return false;
}

template <class Tick>
bool CtaFastForward::run_round(WarpRecord& rec, Tick&& tick) {
  bool left = false;
  round_insts_ = 0;
  round_mix_.assign(static_cast<size_t>(loop_.tail - loop_.head + 1), 0);
  for (Mark& m : marks_) m.insts = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < cta_.warps.size(); ++i) {
      WarpState& w = cta_.warps[i];
      while (!marks_[i].left && !w.done() && !w.at_barrier && !w.waiting && !arrived(i)) {
        exec_.step(cta_, w, rec, 0);
        ++round_insts_;
        if (loop_.contains(rec.pc)) ++round_mix_[static_cast<size_t>(rec.pc - loop_.head)];
        ++marks_[i].insts;
        progress = true;
        tick();
        if (w.waiting) break;
        const bool done = w.done();
        if (rec.pc == loop_.tail && backedge_taken(*rec.in, rec.pc, done, done ? -1 : w.pc())) ++marks_[i].done;
        if (done || !loop_.contains(w.pc())) {
          marks_[i].left = left = true;
          break;
        }
      }
    }
    progress |= exec_.release_barriers(cta_);
    cta_.woken = false;
  }
  for (size_t i = 0; i < cta_.warps.size() && !left; ++i)
    if (!marks_[i].left && !cta_.warps[i].done() && !arrived(i)) left = true;
  return !left;
}

}  // namespace stc
