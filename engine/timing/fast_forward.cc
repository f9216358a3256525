#include "fast_forward.h"

#include <algorithm>
#include <cstdint>

namespace stc {

bool loop_writes_only_cta_state(const Kernel& kernel, LoopSpan loop) {
  for (int32_t pc = loop.head; pc <= loop.tail; ++pc) {
    const Instr& in = kernel.code[static_cast<size_t>(pc)];
    const bool writes = in.traits.mem == MemKind::Store || in.traits.mem == MemKind::Atomic;
    if (writes && in.space != Space::Shared && in.space != Space::Local) return false;
  }
  return true;
}

bool loop_has_barrier(const Kernel& kernel, LoopSpan loop) {
  for (int32_t pc = loop.head; pc <= loop.tail; ++pc) {
    if (kernel.code[static_cast<size_t>(pc)].traits.barrier) return true;
  }
  return false;
}

CtaFastForward::CtaFastForward(Executor& exec, CtaState& cta, LoopSpan loop, bool undoable)
    : exec_(exec), cta_(cta), loop_(loop), undoable_(undoable) {
  marks_.reserve(cta.warps.size());
  for (const WarpState& w : cta.warps) marks_.push_back({w.done() ? -1 : w.pc(), w.stack.size()});
}

bool CtaFastForward::arrived(size_t i) const {
  const WarpState& w = cta_.warps[i];
  const Mark& m = marks_[i];
  return m.done == target_ && w.pc() == m.pc && w.stack.size() == m.depth;
}

bool CtaFastForward::warps_alike(double tol) const {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Mark& m : marks_) {
    if (!m.insts) continue;
    lo = std::min(lo, m.insts);
    hi = std::max(hi, m.insts);
  }
  return hi == 0 || static_cast<double>(hi - lo) <= tol * static_cast<double>(hi);
}

void CtaFastForward::save() {
  saved_shared_ = cta_.shared;
  saved_warps_ = cta_.warps;
  saved_marks_ = marks_;
}

void CtaFastForward::undo() {
  // Assignment, not swap: the timing model holds pointers to the CTA's warps.
  cta_.shared = saved_shared_;
  cta_.warps = saved_warps_;
  marks_ = saved_marks_;
  saved_ = false;
  --target_;
}

}  // namespace stc
