#include "value_flow.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace stc {

namespace {

constexpr size_t kSpaces = static_cast<size_t>(Space::Const) + 1;

// The spaces an access in `s` may reach: a generic address any writable one.
std::vector<size_t> reach(Space s) {
  if (s == Space::Generic)
    return {static_cast<size_t>(Space::Global), static_cast<size_t>(Space::Shared), static_cast<size_t>(Space::Local)};
  return {static_cast<size_t>(s)};
}

// Where threads of a CTA or of the grid may meet: a CTA barrier (not the warp-level bar.warp.sync, whose
// threads are at the same instruction), a fence, an atomic with memory-ordering semantics (a relaxed one,
// PTX's default, orders nothing for other addresses: it takes a fence, itself a meeting point), an
// extension's instruction other than a matrix multiply (mbarriers, bulk copies).
bool synchronizes(const Instr& in) {
  const auto has = [&](const char* m) { return std::find(in.mods.begin(), in.mods.end(), m) != in.mods.end(); };
  const bool warp_level = !in.mods.empty() && in.mods[0] == "warp";
  const bool ordering = has("acquire") || has("release") || has("acq_rel") || has("sc");
  return (in.traits.barrier && !warp_level) || in.op == Op::Membar || in.op == Op::Fence ||
         (in.traits.mem == MemKind::Atomic && ordering) || (in.traits.extension && !in.traits.tensor_math);
}

// An ld.global.nc (the decoder keeps the modifier, not the flag: it selects no other path here).
bool non_coherent(const Instr& in) { return std::find(in.mods.begin(), in.mods.end(), "nc") != in.mods.end(); }

class Taint {
 public:
  explicit Taint(const Kernel& k) : k_(k), reg_(k.regs.size(), 0), n_(k.code.size()) {
    for (size_t pc = 0; pc < n_; ++pc)
      if (synchronizes(k.code[pc])) syncs_.push_back(pc);
    for (auto& r : reached_) r.assign(n_, 0);
    seeds_.fill({});
  }

  // Propagates to a fixed point; "" when no tainted value reaches the timing, else where one does.
  std::string reach_note() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t pc = 0; pc < n_; ++pc) changed |= step(pc);
      if (seeded_) {
        for (size_t s = 0; s < kSpaces; ++s) flood(s);
        seeded_ = false;
        changed = true;
      }
    }
    for (const Instr& in : k_.code)
      if (const char* how = reaches_timing(in))
        return k_.file + ":" + std::to_string(in.line) + " `" + in.text + "`: a Tensor Core result reaches " + how;
    return "";
  }

 private:
  bool is(int32_t r) const { return r >= 0 && static_cast<size_t>(r) < reg_.size() && reg_[static_cast<size_t>(r)]; }
  bool mark(int32_t r) {
    if (r < 0 || static_cast<size_t>(r) >= reg_.size() || reg_[static_cast<size_t>(r)]) return false;
    reg_[static_cast<size_t>(r)] = 1;
    return true;
  }
  bool mark_dsts(const Instr& in) {
    bool changed = false;
    for (int32_t r : in.dsts) changed |= mark(r);
    return changed;
  }
  // A store of a result in space `s` at pc: what follows it in the code may load it.
  void seed(Space s, size_t pc) {
    for (size_t i : reach(s))
      if (std::find(seeds_[i].begin(), seeds_[i].end(), pc) == seeds_[i].end()) {
        seeds_[i].push_back(pc);
        seeded_ = true;
      }
  }
  bool loads_result(Space s, size_t pc) const {
    const auto r = reach(s);
    return std::any_of(r.begin(), r.end(), [&](size_t i) { return reached_[i][pc] != 0; });
  }
  // Every pc reachable from space s's seeds: the next instruction, a branch's target, and from a
  // synchronization point every other one (another thread may go on from there after this one's store).
  void flood(size_t s) {
    std::vector<char>& seen = reached_[s];
    std::vector<size_t> work;
    bool syncs_done = false;
    const auto visit = [&](size_t pc) {
      if (pc < n_ && !seen[pc]) {
        seen[pc] = 1;
        work.push_back(pc);
      }
    };
    const auto successors = [&](size_t pc) {
      const Instr& in = k_.code[pc];
      visit(pc + 1);
      if (in.traits.branch && in.target >= 0) visit(static_cast<size_t>(in.target));
      if (synchronizes(in) && !syncs_done) {
        syncs_done = true;
        for (size_t p : syncs_) visit(p);
      }
    };
    for (size_t pc : seeds_[s]) successors(pc);
    while (!work.empty()) {
      const size_t pc = work.back();
      work.pop_back();
      successors(pc);
    }
  }
  static bool is_address(const Instr& in, int32_t r) {
    return std::any_of(in.ops.begin(), in.ops.end(), [&](const Operand& o) { return o.kind == OpndKind::Mem && o.reg == r; });
  }
  bool data_tainted(const Instr& in) const {
    return std::any_of(in.srcs.begin(), in.srcs.end(), [&](int32_t r) { return is(r) && !is_address(in, r); });
  }
  bool src_tainted(const Instr& in) const {
    return std::any_of(in.srcs.begin(), in.srcs.end(), [&](int32_t r) { return is(r); });
  }

  bool step(size_t pc) {
    const Instr& in = k_.code[pc];
    if (in.traits.tensor_math) return mark_dsts(in);
    switch (in.traits.mem) {
      case MemKind::None:
        return src_tainted(in) && mark_dsts(in);
      case MemKind::Load:  // ld.global.nc: memory the kernel never writes (PTX ISA), so never a result
        return !non_coherent(in) && loads_result(in.space, pc) && mark_dsts(in);
      case MemKind::Store:
        if (data_tainted(in)) seed(in.space, pc);
        return false;
      case MemKind::Atomic:
        if (data_tainted(in)) seed(in.space, pc);
        return loads_result(in.space, pc) && mark_dsts(in);
      case MemKind::AsyncCopy:  // memory to memory: it may carry a stored result into its destination
        if (loads_result(Space::Generic, pc)) seed(Space::Generic, pc);
        return false;
    }
    return false;
  }

  // What of `in` a tainted value would decide (nullptr: nothing).
  const char* reaches_timing(const Instr& in) const {
    if (is(in.guard)) return "its guard";
    for (const Operand& o : in.ops)
      if (o.kind == OpndKind::Mem && is(o.reg)) return "its address";
    if (!src_tainted(in)) return nullptr;
    if (in.traits.tensor_math) {  // its fragments may carry results, nothing else
      for (size_t i = 0; i < in.ops.size(); ++i) {
        const Operand& o = in.ops[i];
        const std::vector<int32_t> regs = o.kind == OpndKind::Vec ? o.vec : std::vector<int32_t>{o.reg};
        const bool fragment = i < 8 && (in.traits.fragment_operands >> i & 1u);
        if (!fragment && std::any_of(regs.begin(), regs.end(), [&](int32_t r) { return is(r); }))
          return "an operand other than its fragments";
      }
      return nullptr;
    }
    if (in.traits.branch) return "a branch";
    if (in.traits.barrier) return "a barrier";
    if (in.traits.extension) return "an extension's operand";
    if (in.traits.mem == MemKind::AsyncCopy) return "an asynchronous copy";
    if (in.traits.mem == MemKind::Store || in.traits.mem == MemKind::Atomic) return nullptr;  // data only
    return in.dsts.empty() ? "an instruction that acts on it" : nullptr;  // a sleep, a fence, ...
  }

  const Kernel& k_;
  std::vector<char> reg_;
  size_t n_;
  std::vector<size_t> syncs_;
  std::array<std::vector<size_t>, kSpaces> seeds_;
  std::array<std::vector<char>, kSpaces> reached_;
  bool seeded_ = false;
};

}  // namespace

std::string mma_values_note(const Kernel& k) {
  if (std::none_of(k.code.begin(), k.code.end(), [](const Instr& in) { return in.traits.tensor_math; }))
    return "no Tensor Core instruction: nothing to skip";
  return Taint(k).reach_note();
}

}  // namespace stc
