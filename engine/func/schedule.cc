#include "schedule.h"

#include <algorithm>
#include <vector>

#include "cfg.h"
#include "unroll.h"

namespace stc {

namespace {

enum class Kind { Alu, Load, Ordered, Barrier };

bool reads_clock(const Instr& in) {
  for (const auto& o : in.ops)
    if (o.kind == OpndKind::Special &&
        (o.sreg == SReg::Clock || o.sreg == SReg::Clock64 || o.sreg == SReg::Globaltimer))
      return true;
  return false;
}

Kind kind_of(const Instr& in) {
  if (is_control(in) || reads_clock(in)) return Kind::Barrier;
  switch (in.traits.sched) {
    case SchedKind::Free: return Kind::Alu;
    case SchedKind::Load: return Kind::Load;
    case SchedKind::Ordered: return Kind::Ordered;
    case SchedKind::Fence: return Kind::Barrier;
  }
  return Kind::Barrier;
}

bool intersects(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  for (int32_t x : a)
    if (std::find(b.begin(), b.end(), x) != b.end()) return true;
  return false;
}

// Whether two memory instructions may touch the same bytes: only accesses to different explicit state spaces
// (e.g. a global load and a shared store) cannot.
bool may_alias(const Instr& a, const Instr& b) {
  if (a.space == Space::Param || a.space == Space::Const || b.space == Space::Param || b.space == Space::Const)
    return false;  // read-only spaces
  return a.space == Space::Generic || b.space == Space::Generic || a.space == b.space;
}

// True when instruction j (later) must stay after instruction i (earlier).
bool depends(const Instr& i, Kind ki, const Instr& j, Kind kj) {
  if (ki == Kind::Barrier || kj == Kind::Barrier) return true;
  // ptxas does not hoist a load above an earlier Tensor Core instruction: the H100 runs fragments loaded
  // from global memory one load latency per k-step (docs/calibration.md, step 7)
  if (i.traits.tensor_math && kj == Kind::Load) return true;
  if (intersects(i.dsts, j.srcs) || intersects(i.dsts, j.dsts) || intersects(i.srcs, j.dsts)) return true;
  const bool mi = ki != Kind::Alu, mj = kj != Kind::Alu;
  return mi && mj && (ki == Kind::Ordered || kj == Kind::Ordered) && may_alias(i, j);
}

// Whether an instruction may move under a guard: not control, barriers or clock reads, and not activemask
// (it reports the SIMT mask, which predication would widen).
bool convertible(const Instr& in) {
  return in.guard < 0 && kind_of(in) != Kind::Barrier && in.op != Op::Activemask;
}

// The registers the list scheduler works within: the kernel's register estimate for the PTX order (the peak
// ptxas allocates for, estimate_registers, without its two reserved slots), and the registers holding a value
// at the block's start and still needed after its end. ptxas hoists a load only while a register is free for
// its value: the naive GEMM's SASS issues 14 of the 32 loads of its 16-deep loop before the first FFMA, then
// one load per FFMA that frees registers (benchmarks/calibration/unroll_probe.py). The limit holds back global
// (and generic) loads only: shared-memory and fragment loads keep the unlimited hoisting the Tensor Core GEMMs
// were calibrated with (this accounting is a few registers off ptxas's - 225 estimated vs 232 allocated for
// the 128x128 mma.sync GEMM, whose main loop has 16 slots to spare - and limiting them too put that GEMM
// 9-10 % further from silicon; docs/calibration.md, step 13).
struct Registers {
  const Kernel* k = nullptr;
  std::vector<uint32_t> slots;  // per register: 32-bit slots of the per-thread file (0: warp-uniform values)
  uint32_t budget = 0;
  const uint64_t* live_in = nullptr;  // bits, at the block's first pc
  std::vector<uint64_t> live_out;     // bits, after its last instruction
};

bool has_bit(const uint64_t* bits, int32_t r) { return (bits[static_cast<size_t>(r) / 64] >> (r % 64)) & 1; }

void schedule_block(std::vector<Instr>& code, size_t b, size_t e, const Registers& regs) {
  const size_t n = e - b;
  if (n < 3) return;
  std::vector<Kind> kind(n);
  for (size_t i = 0; i < n; ++i) kind[i] = kind_of(code[b + i]);
  std::vector<std::vector<uint32_t>> succ(n);
  std::vector<uint32_t> preds(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (depends(code[b + i], kind[i], code[b + j], kind[j])) {
        succ[i].push_back(static_cast<uint32_t>(j));
        ++preds[j];
      }
  // Priority: the height of each instruction in the dependency graph, a load counting kLoadWeight and any
  // other instruction 1, so the address arithmetic that feeds a load goes before independent work.
  constexpr uint32_t kLoadWeight = 64;
  std::vector<uint32_t> height(n, 0);
  for (size_t i = n; i-- > 0;) {
    uint32_t h = 0;
    for (uint32_t s : succ[i]) h = std::max(h, height[s]);
    height[i] = h + (kind[i] == Kind::Load ? kLoadWeight : 1);
  }
  // Register pressure: the slots of the registers holding a value, and each register's unscheduled readers.
  const Kernel& k = *regs.k;
  const uint64_t* out = regs.live_out.data();
  std::vector<uint32_t> uses(k.regs.size(), 0);
  for (size_t i = 0; i < n; ++i)
    for (int32_t r : code[b + i].srcs) ++uses[static_cast<size_t>(r)];
  std::vector<char> live(k.regs.size(), 0);
  int64_t pressure = 0;
  for (size_t r = 0; r < k.regs.size(); ++r)
    if (has_bit(regs.live_in, static_cast<int32_t>(r))) {
      live[r] = 1;
      pressure += regs.slots[r];
    }
  const auto needed = [&](int32_t r) { return uses[static_cast<size_t>(r)] > 0 || has_bit(out, r); };
  const auto change = [&](const Instr& in) {  // slots the instruction would add (its last reads free theirs)
    int64_t d = 0;
    for (int32_t r : in.dsts)
      if (!live[static_cast<size_t>(r)] && needed(r)) d += regs.slots[static_cast<size_t>(r)];
    for (int32_t r : in.srcs)
      if (live[static_cast<size_t>(r)] && uses[static_cast<size_t>(r)] == 1 && !has_bit(out, r) &&
          std::find(in.dsts.begin(), in.dsts.end(), r) == in.dsts.end())
        d -= regs.slots[static_cast<size_t>(r)];
    return d;
  };
  const auto commit = [&](const Instr& in) {
    for (int32_t r : in.srcs)
      if (--uses[static_cast<size_t>(r)] == 0 && !has_bit(out, r) && live[static_cast<size_t>(r)]) {
        live[static_cast<size_t>(r)] = 0;
        pressure -= regs.slots[static_cast<size_t>(r)];
      }
    for (int32_t r : in.dsts)
      if (!live[static_cast<size_t>(r)] && needed(r)) {
        live[static_cast<size_t>(r)] = 1;
        pressure += regs.slots[static_cast<size_t>(r)];
      }
  };
  // The ready instruction of greatest height that is no global load, or a global load whose value fits the
  // registers or that stands in its PTX place (every instruction before it scheduled: the limit only holds
  // back hoisting); when none is, the one that needs the fewest more (ties by height).
  std::vector<uint32_t> order;
  order.reserve(n);
  std::vector<char> done(n, 0);
  // Only the copies of an unrolled loop body hoist under the limit (the evidence above); other blocks keep
  // the unlimited schedule the suite was calibrated with, nvcc's PTX naming a register for every value.
  const bool limited = std::any_of(code.begin() + static_cast<std::ptrdiff_t>(b),
                                   code.begin() + static_cast<std::ptrdiff_t>(e), [](const Instr& in) { return in.unrolled; });
  size_t first_left = 0;  // the first instruction in PTX order not scheduled yet: a load there is not hoisted
  while (order.size() < n) {
    while (done[first_left]) ++first_left;
    size_t pick = n;
    bool pick_fits = false;
    int64_t pick_change = 0;
    for (size_t i = 0; i < n; ++i) {
      if (done[i] || preds[i]) continue;
      const int64_t d = change(code[b + i]);
      const bool fits = !limited || !global_load(code[b + i]) || i == first_left ||
                        pressure + d <= static_cast<int64_t>(regs.budget);
      const bool better = pick == n || (fits && !pick_fits) ||
                          (fits == pick_fits && (fits ? height[i] > height[pick]
                                                      : d < pick_change || (d == pick_change && height[i] > height[pick])));
      if (better) {
        pick = i;
        pick_fits = fits;
        pick_change = d;
      }
    }
    done[pick] = 1;
    order.push_back(static_cast<uint32_t>(pick));
    commit(code[b + pick]);
    for (uint32_t s : succ[pick]) --preds[s];
  }
  std::vector<Instr> block;
  block.reserve(n);
  for (uint32_t i : order) block.push_back(std::move(code[b + i]));
  for (size_t i = 0; i < n; ++i) code[b + i] = std::move(block[i]);
}

}  // namespace

void if_convert(Kernel& k) {
  constexpr int32_t kMaxBody = 8;  // instructions a skipped block may hold (ptxas predicates short ones)
  const int32_t n = static_cast<int32_t>(k.code.size());
  std::vector<int32_t> entries(static_cast<size_t>(n) + 1, 0);  // branches targeting each pc
  for (const auto& in : k.code)
    if (in.op == Op::Bra) ++entries[static_cast<size_t>(in.target)];
  std::vector<char> drop(static_cast<size_t>(n), 0);
  for (int32_t pc = 0; pc < n; ++pc) {
    Instr& br = k.code[static_cast<size_t>(pc)];
    const int32_t t = br.target;
    if (br.op != Op::Bra || br.guard < 0 || (br.flags & F_UNI) || t <= pc + 1 || t - pc - 1 > kMaxBody) continue;
    bool ok = true;
    for (int32_t q = pc + 1; q < t && ok; ++q)
      ok = convertible(k.code[static_cast<size_t>(q)]) && entries[static_cast<size_t>(q)] == 0 && !drop[static_cast<size_t>(q)];
    if (!ok) continue;
    for (int32_t q = pc + 1; q < t; ++q) {  // the body runs where the branch is not taken
      Instr& in = k.code[static_cast<size_t>(q)];
      in.guard = br.guard;
      in.guard_neg = !br.guard_neg;
      in.srcs.push_back(br.guard);
    }
    drop[static_cast<size_t>(pc)] = 1;
    --entries[static_cast<size_t>(t)];
  }
  std::vector<int32_t> remap(static_cast<size_t>(n) + 1, 0);
  std::vector<Instr> code;
  code.reserve(static_cast<size_t>(n));
  for (int32_t pc = 0; pc < n; ++pc) {
    remap[static_cast<size_t>(pc)] = static_cast<int32_t>(code.size());
    if (!drop[static_cast<size_t>(pc)]) code.push_back(std::move(k.code[static_cast<size_t>(pc)]));
  }
  remap[static_cast<size_t>(n)] = static_cast<int32_t>(code.size());
  for (auto& in : code)
    if (in.op == Op::Bra) in.target = remap[static_cast<size_t>(in.target)];
  for (auto& [name, pc] : k.labels) pc = remap[static_cast<size_t>(pc)];
  k.code = std::move(code);
  compute_reconvergence(k);
}

void fold_constants(Kernel& k) {
  std::vector<uint32_t> writes(k.regs.size(), 0);
  for (const auto& in : k.code)
    for (int32_t r : in.dsts) ++writes[static_cast<size_t>(r)];
  for (auto& in : k.code)  // the unrolling's trip checks are folded already
    in.traits.folded = in.traits.folded ||
                       (in.op == Op::Mov && in.guard < 0 && in.dsts.size() == 1 && in.ops.size() == 2 &&
                        in.ops[1].kind == OpndKind::Imm && writes[static_cast<size_t>(in.dsts[0])] == 1);
}

void mark_unused_results(Kernel& k) {
  std::vector<char> read(k.regs.size(), 0);
  for (const auto& in : k.code)
    for (int32_t r : in.srcs) read[static_cast<size_t>(r)] = 1;
  for (auto& in : k.code)
    in.traits.result_unused = in.traits.mem == MemKind::Atomic && !in.traits.cas_loop && !in.dsts.empty() &&
                              std::none_of(in.dsts.begin(), in.dsts.end(),
                                           [&](int32_t r) { return read[static_cast<size_t>(r)]; });
}

void schedule_loads_early(Kernel& k) {
  unroll_loops(k);
  if_convert(k);
  fold_constants(k);
  mark_unused_results(k);
  const size_t n = k.code.size();
  const size_t words = (k.regs.size() + 63) / 64;
  const std::vector<uint64_t> live_in = live_in_sets(
      k, [](const Instr&, int32_t) { return false; }, [](const Instr& in, int32_t) { return in.guard < 0; });
  Registers regs;
  regs.k = &k;
  const std::vector<char> uniform = warp_uniform_registers(k);
  for (size_t r = 0; r < k.regs.size(); ++r)
    regs.slots.push_back(uniform[r] ? 0 : register_slots(k, static_cast<int32_t>(r)));
  regs.budget = k.regs_per_thread > 2 ? k.regs_per_thread - 2 : 0;
  std::vector<int> next;
  const auto block = [&](size_t start, size_t end) {  // [start, end): its live-in and live-out, then schedule
    regs.live_in = live_in.data() + start * words;
    regs.live_out.assign(words, 0);
    successors(k, static_cast<int>(end) - 1, next);
    for (int s : next)
      for (size_t w = 0; w < words; ++w) regs.live_out[w] |= live_in[static_cast<size_t>(s) * words + w];
    schedule_block(k.code, start, end, regs);
  };
  std::vector<char> leader(n + 1, 0);
  leader[0] = 1;
  for (size_t pc = 0; pc < n; ++pc) {
    const Instr& in = k.code[pc];
    if (in.op == Op::Bra) leader[static_cast<size_t>(in.target)] = 1;
    if (is_control(in)) leader[pc + 1] = 1;
  }
  size_t start = 0;
  for (size_t pc = 1; pc <= n; ++pc)
    if (leader[pc]) {
      block(start, pc);
      start = pc;
    }
}

}  // namespace stc
