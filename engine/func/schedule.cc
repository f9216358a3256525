#include "schedule.h"

#include <algorithm>
#include <vector>

#include "cfg.h"

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

void schedule_block(std::vector<Instr>& code, size_t b, size_t e) {
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
  std::vector<uint32_t> order;
  order.reserve(n);
  std::vector<char> done(n, 0);
  while (order.size() < n) {
    size_t pick = n;
    for (size_t i = 0; i < n; ++i)
      if (!done[i] && !preds[i] && (pick == n || height[i] > height[pick])) pick = i;
    done[pick] = 1;
    order.push_back(static_cast<uint32_t>(pick));
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
  for (auto& in : k.code)
    in.traits.folded = in.op == Op::Mov && in.guard < 0 && in.dsts.size() == 1 && in.ops.size() == 2 &&
                       in.ops[1].kind == OpndKind::Imm && writes[static_cast<size_t>(in.dsts[0])] == 1;
}

void schedule_loads_early(Kernel& k) {
  if_convert(k);
  fold_constants(k);
  const size_t n = k.code.size();
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
      schedule_block(k.code, start, pc);
      start = pc;
    }
}

}  // namespace stc
