#include "schedule.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <queue>
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

// The memory spaces the dependency tracking tells apart (Space's values; Param and Const are read-only and
// order nothing).
constexpr size_t kSpaces = 6;
bool read_only(Space s) { return s == Space::Param || s == Space::Const; }

// The dependency rules, pair by pair: instruction j (later) stays after instruction i (earlier) when one applies. A barrier (control flow, fences,
// clock reads) orders everything; a load stays after an earlier Tensor Core instruction (ptxas does not
// hoist a load above one: the H100 runs fragments loaded from global memory one load latency per k-step,
// docs/calibration.md, step 7); registers order reads and writes (RAW, WAR, WAW); two memory accesses, one
// of them ordered (store, atomic, async copy), stay in order unless they are in different explicit state
// spaces or one is in a read-only space (param, const); a volatile load or store stays in order with every
// memory access outside the read-only spaces, whatever its space (it is ordered as a generic access).
// (Until issue 46 they were tested for every pair of a block: quadratic in its length.)

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

// Per register, reused by every block: each block resets the entries it touched, so a block costs time in
// its own length (and its live-in's words), not in the kernel's register count.
struct Scratch {
  std::vector<int32_t> writer;                 // the block's last instruction writing the register (-1: none)
  std::vector<std::vector<uint32_t>> readers;  // the block's instructions reading it since that write
  std::vector<uint32_t> uses;                  // its unscheduled readers
  std::vector<char> live;
};

// The dependency graph of a block is built in time linear in its length: instead of testing every pair
// (the rules above), each instruction gets an edge from the last instructions that constrain it - per
// register its last writer and the readers since, per memory space the last ordered access and the loads
// since, the last barrier, the Tensor Core instructions since the last load - and join nodes (no
// instruction, weight 0) stand for "every Tensor Core instruction so far". Every edge is one the rules
// imply and every pair they order is connected by a path, so the readiness of each instruction
// and each height (a longest path) are the pairwise graph's, and so is the schedule.
// `rank`: per instruction of the block, its place in ptxas's order of the loop's memory and Tensor Core
// instructions (-1: not one of them), or null. With a rank those instructions keep ptxas's order (edges
// between neighbours in it) instead of the rules that guess it (a load after an earlier Tensor Core
// instruction, the copy grouping); returns false, the block untouched, when that order contradicts its
// dependencies.
bool schedule_block(std::vector<Instr>& code, size_t b, size_t e, const Registers& regs, Scratch& sc,
                    const std::vector<int32_t>* rank) {
  const size_t n = e - b;
  if (n < 3) return true;
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<Kind> kind(n);
  for (size_t i = 0; i < n; ++i) kind[i] = kind_of(code[b + i]);
  std::vector<std::vector<uint32_t>> succ(n);  // then the join nodes, from n on
  std::vector<uint32_t> preds(n, 0);
  std::vector<uint32_t> seq;  // a topological order of all nodes
  seq.reserve(n);
  const auto edge = [&](uint32_t i, uint32_t j) {
    if (i == kNone || i == j) return;
    auto& s = succ[i];
    if (!s.empty() && s.back() == j) return;  // every edge into j is added while j is processed
    s.push_back(j);
    ++preds[j];
  };
  uint32_t barrier = kNone;
  std::vector<uint32_t> since_barrier;
  uint32_t join = kNone;
  std::vector<uint32_t> new_tensor;  // Tensor Core instructions no join node stands for yet
  uint32_t last_ordered[kSpaces];
  std::fill(last_ordered, last_ordered + kSpaces, kNone);
  std::vector<std::vector<uint32_t>> copy_stores(n);  // per global load: the shared stores of its value
  std::vector<uint32_t> loads[kSpaces];  // per space: loads that may alias it, not yet before an ordered access to it
  constexpr size_t G = static_cast<size_t>(Space::Generic);
  const auto aliased = [](size_t s, size_t t) { return !read_only(static_cast<Space>(t)) && (s == G || t == G || s == t); };
  for (size_t jj = 0; jj < n; ++jj) {
    const uint32_t j = static_cast<uint32_t>(jj);
    const Instr& in = code[b + jj];
    const Kind kj = kind[jj];
    if (kj == Kind::Barrier) {  // after everything before it
      for (uint32_t i : since_barrier) edge(i, j);
      edge(barrier, j);
      since_barrier.clear();
      barrier = j;
      new_tensor.clear();  // the later loads follow the barrier, so all of these
      join = kNone;
      for (size_t t = 0; t < kSpaces; ++t) {
        last_ordered[t] = kNone;
        loads[t].clear();
      }
    } else {
      edge(barrier, j);
      since_barrier.push_back(j);
      if (!rank && kj == Kind::Load && (!new_tensor.empty() || join != kNone)) {
        if (!new_tensor.empty()) {
          const uint32_t J = static_cast<uint32_t>(succ.size());
          succ.emplace_back();
          preds.push_back(0);
          edge(join, J);
          for (uint32_t t : new_tensor) edge(t, J);
          new_tensor.clear();
          join = J;
          seq.push_back(J);
        }
        edge(join, j);
      }
      if (in.traits.tensor_math) new_tensor.push_back(j);
      if (kj != Kind::Alu && !read_only(in.space)) {
        // A volatile access (ld/st.volatile: relaxed.sys, never reordered by the compiler) keeps its place
        // among every memory access of a writable space, whatever their spaces: ordered as a generic one.
        const size_t s = (in.flags & F_VOLATILE) ? G : static_cast<size_t>(in.space);
        for (size_t t = 0; t < kSpaces; ++t)
          if (aliased(s, t)) edge(last_ordered[t], j);
        if (kj == Kind::Ordered) {
          for (uint32_t i : loads[s]) edge(i, j);
          loads[s].clear();
          if (s == G)
            for (auto& l : loads) l.clear();  // each is before j, so before every later ordered access
          last_ordered[s] = j;
        } else {
          for (size_t t = 0; t < kSpaces; ++t)
            if (aliased(s, t)) loads[t].push_back(j);
        }
      }
    }
    for (int32_t r : in.srcs) edge(static_cast<uint32_t>(sc.writer[static_cast<size_t>(r)]), j);
    if (!rank && regs.k->sass.copy_group && in.traits.mem == MemKind::Store && in.space == Space::Shared)
      for (int32_t r : in.srcs) {  // a value a global load brought: the store is that load's copy
        const int32_t w = sc.writer[static_cast<size_t>(r)];
        if (w >= 0 && global_load(code[b + static_cast<size_t>(w)]) &&
            (copy_stores[static_cast<size_t>(w)].empty() || copy_stores[static_cast<size_t>(w)].back() != j))
          copy_stores[static_cast<size_t>(w)].push_back(j);
      }
    for (int32_t r : in.dsts) {
      edge(static_cast<uint32_t>(sc.writer[static_cast<size_t>(r)]), j);
      for (uint32_t i : sc.readers[static_cast<size_t>(r)]) edge(i, j);
    }
    for (int32_t r : in.srcs) sc.readers[static_cast<size_t>(r)].push_back(j);
    for (int32_t r : in.dsts) {
      sc.writer[static_cast<size_t>(r)] = static_cast<int32_t>(j);
      sc.readers[static_cast<size_t>(r)].clear();
    }
    seq.push_back(j);
  }
  for (size_t i = 0; i < n; ++i)
    for (const auto* rs : {&code[b + i].srcs, &code[b + i].dsts})
      for (int32_t r : *rs) {
        sc.writer[static_cast<size_t>(r)] = -1;
        sc.readers[static_cast<size_t>(r)].clear();
      }
  if (rank) {  // ptxas's order: each ranked instruction after the one before it in that order
    std::vector<std::pair<int32_t, uint32_t>> ranked;
    for (size_t i = 0; i < n; ++i)
      if ((*rank)[i] >= 0) ranked.emplace_back((*rank)[i], static_cast<uint32_t>(i));
    std::sort(ranked.begin(), ranked.end());
    for (size_t q = 1; q < ranked.size(); ++q) edge(ranked[q - 1].second, ranked[q].second);
    // Kahn's pass: a topological order of the graph with the new edges, if every node becomes ready. It
    // replaces `seq` (the heights' order): the new edges go forward in ptxas's order, not the PTX order.
    std::vector<uint32_t> left(preds), todo, order;
    for (size_t i = 0; i < succ.size(); ++i)
      if (left[i] == 0) todo.push_back(static_cast<uint32_t>(i));
    while (!todo.empty()) {
      const uint32_t x = todo.back();
      todo.pop_back();
      order.push_back(x);
      for (uint32_t t : succ[x])
        if (--left[t] == 0) todo.push_back(t);
    }
    if (order.size() != succ.size()) return false;
    seq = std::move(order);
  }
  // Priority: the height of each instruction in the dependency graph, a load counting kLoadWeight and any
  // other instruction 1 (a join node 0), so the address arithmetic that feeds a load goes before independent work.
  constexpr uint32_t kLoadWeight = 64;
  std::vector<uint32_t> height(succ.size(), 0);
  for (size_t q = seq.size(); q-- > 0;) {
    const uint32_t i = seq[q];
    uint32_t h = 0;
    for (uint32_t s : succ[i]) h = std::max(h, height[s]);
    height[i] = h + (i >= n ? 0 : kind[i] == Kind::Load ? kLoadWeight : 1);
  }
  // Register pressure: the slots of the registers holding a value, and each register's unscheduled readers.
  const uint64_t* out = regs.live_out.data();
  std::vector<uint32_t>& uses = sc.uses;
  std::vector<char>& live = sc.live;
  for (size_t i = 0; i < n; ++i)
    for (int32_t r : code[b + i].srcs) ++uses[static_cast<size_t>(r)];
  int64_t pressure = 0;
  for (size_t w = 0; w < regs.live_out.size(); ++w)
    for (uint64_t bits = regs.live_in[w]; bits; bits &= bits - 1) {
      const size_t r = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
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
  // back hoisting); when none is, the one that needs the fewest more (ties by height); ties in PTX order.
  // Only the copies of an unrolled loop body hoist under the limit (the evidence above); other blocks keep
  // the unlimited schedule the suite was calibrated with, nvcc's PTX naming a register for every value.
  const bool limited = std::any_of(code.begin() + static_cast<std::ptrdiff_t>(b),
                                   code.begin() + static_cast<std::ptrdiff_t>(e), [](const Instr& in) { return in.unrolled; });
  // ptxas's copy grouping (SassFacts::copy_group, read from its SASS): a global load a shared store copies
  // (a copy load) is hoisted only while fewer than copy_group copy loads wait for their stores. ptxas
  // issues a single-stage tile copy as groups of 1-4 LDGs, each followed by its STSs, so each group waits a
  // memory latency before the next group's loads (docs/calibration.md, step 22).
  const uint32_t group = regs.k->sass.copy_group;
  std::vector<uint32_t> stores_left(n, 0);  // per copy load: its stores not scheduled yet
  std::vector<std::vector<uint32_t>> copies_of(group ? n : 0);  // per store: the copy loads it stores
  for (size_t i = 0; i < copy_stores.size(); ++i) {
    stores_left[i] = static_cast<uint32_t>(copy_stores[i].size());
    for (uint32_t s : copy_stores[i]) copies_of[s].push_back(static_cast<uint32_t>(i));
  }
  const bool gated = group && std::any_of(stores_left.begin(), stores_left.end(), [](uint32_t c) { return c > 0; });
  uint32_t open_copies = 0;  // copy loads scheduled whose stores are not all scheduled
  // Ready instructions that always fit, greatest height first, then PTX order; under the limit the ready
  // global loads wait apart, their fit re-checked at every pick.
  const auto lower = [&](uint32_t x, uint32_t y) { return height[x] != height[y] ? height[x] < height[y] : x > y; };
  std::priority_queue<uint32_t, std::vector<uint32_t>, decltype(lower)> ready(lower);
  std::vector<uint32_t> ready_loads;
  std::vector<uint32_t> stack;
  const auto release = [&](uint32_t s) {  // s has no unscheduled predecessor left; a join node passes it on
    stack.push_back(s);
    while (!stack.empty()) {
      const uint32_t x = stack.back();
      stack.pop_back();
      if (x < n) {
        if ((limited || gated) && global_load(code[b + x])) ready_loads.push_back(x);
        else ready.push(x);
      } else {
        for (uint32_t t : succ[x])
          if (--preds[t] == 0) stack.push_back(t);
      }
    }
  };
  for (size_t i = 0; i < succ.size(); ++i)
    if (preds[i] == 0) release(static_cast<uint32_t>(i));
  std::vector<uint32_t> order;
  order.reserve(n);
  std::vector<char> done(n, 0);
  size_t first_left = 0;  // the first instruction in PTX order not scheduled yet: a load there is not hoisted
  while (order.size() < n) {
    while (done[first_left]) ++first_left;
    uint32_t pick = ready.empty() ? kNone : ready.top();
    bool pick_fits = pick != kNone, from_loads = false;
    int64_t pick_change = 0;
    size_t pick_slot = 0;
    for (size_t q = 0; q < ready_loads.size(); ++q) {
      const uint32_t i = ready_loads[q];
      const int64_t d = limited ? change(code[b + i]) : 0;
      const bool fits = i == first_left || ((!limited || pressure + d <= static_cast<int64_t>(regs.budget)) &&
                                            (!gated || stores_left[i] == 0 || open_copies < group));
      const bool tie = pick == kNone || i < pick;
      const bool better = pick == kNone || (fits && !pick_fits) ||
                          (fits == pick_fits &&
                           (fits ? height[i] > height[pick] || (height[i] == height[pick] && tie)
                                 : d < pick_change || (d == pick_change && (height[i] > height[pick] ||
                                                                            (height[i] == height[pick] && tie)))));
      if (better) {
        pick = i;
        pick_fits = fits;
        pick_change = d;
        from_loads = true;
        pick_slot = q;
      }
    }
    if (from_loads) {
      ready_loads[pick_slot] = ready_loads.back();
      ready_loads.pop_back();
    } else {
      ready.pop();
    }
    done[pick] = 1;
    order.push_back(pick);
    commit(code[b + pick]);
    if (gated) {
      if (stores_left[pick]) ++open_copies;
      for (uint32_t l : copies_of[pick])
        if (--stores_left[l] == 0 && done[l]) --open_copies;
    }
    for (uint32_t s : succ[pick])
      if (--preds[s] == 0) release(s);
  }
  for (size_t i = 0; i < n; ++i) {
    for (int32_t r : code[b + i].srcs) uses[static_cast<size_t>(r)] = 0;
    for (int32_t r : code[b + i].dsts) live[static_cast<size_t>(r)] = 0;
    for (int32_t r : code[b + i].srcs) live[static_cast<size_t>(r)] = 0;
  }
  for (size_t w = 0; w < regs.live_out.size(); ++w)
    for (uint64_t bits = regs.live_in[w]; bits; bits &= bits - 1) live[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))] = 0;
  std::vector<Instr> block;
  block.reserve(n);
  for (uint32_t i : order) block.push_back(std::move(code[b + i]));
  for (size_t i = 0; i < n; ++i) code[b + i] = std::move(block[i]);
  return true;
}

// An instruction's class in ptxas's order of a loop (SassFacts::loops) and how many SASS instructions
// of that class it becomes; 0 for none ('?' : one whose SASS is not known, which leaves the loop unmatched).
std::pair<char, uint32_t> sass_class(const Instr& in) {
  if (in.traits.tensor_math) {
    if (in.traits.async_group) return {'?', 1};
    return {'H', in.op == Op::Wmma ? 2u : 1u};  // wmma.mma m16n16k16: two HMMA.16816
  }
  switch (in.traits.mem) {
    case MemKind::Load:
      if (in.space == Space::Shared) return {in.traits.fragment_load ? 'M' : 'L', 1};
      if (in.space == Space::Global) return {'G', in.traits.sass_loads};  // a wmma.load of A or B: 4 LDGs
      return {0, 0};
    case MemKind::Store: return in.space == Space::Shared ? std::pair<char, uint32_t>{'S', 1} : std::pair<char, uint32_t>{0, 0};
    case MemKind::AsyncCopy: return {'C', 1};
    default: return {0, 0};
  }
}

// The places of each instruction of the single-block loop [b, e) in ptxas's order `sass` (the k-th
// instruction of a class takes the k-th place of that class; one that becomes several SASS instructions
// the next places): its first place (its rank) and its last, -1 for an instruction of no class; empty when
// the loop's instructions are not those of `sass`.
struct SassPlaces {
  std::vector<int32_t> first, last;
};

SassPlaces sass_places(const std::vector<Instr>& code, size_t b, size_t e, const std::string& sass) {
  SassPlaces out{std::vector<int32_t>(e - b, -1), std::vector<int32_t>(e - b, -1)};
  std::map<char, std::vector<int32_t>> places;
  for (size_t q = 0; q < sass.size(); ++q) places[sass[q]].push_back(static_cast<int32_t>(q));
  std::map<char, size_t> used;
  for (size_t i = b; i < e; ++i) {
    const auto [c, count] = sass_class(code[i]);
    if (!c) continue;
    auto& at = used[c];
    const auto p = places.find(c);
    if (c == '?' || p == places.end() || at + count > p->second.size()) return {};
    out.first[i - b] = p->second[at];
    out.last[i - b] = p->second[at + count - 1];
    at += count;
  }
  for (const auto& [c, at] : places)
    if (used[c] != at.size()) return {};
  return out;
}

// ptxas may place part of a load's SASS after the first HMMA of the Tensor Core instruction that reads it
// (tcs_wmma_sample: `GGGGGG H GG H`, two of the B fragment's four LDGs after the first HMMA.16816 of the
// wmma.mma): those loads issue only once that HMMA has issued, so once the instruction's other operands
// are ready, and the MMA waits for a second memory latency. In the ranked loop [b, e) (`at`: its places)
// such a load also waits for those operands (a scoreboard wait, no value is read): the operands the
// Tensor Core instruction reads that the load does not write and no instruction between them writes.
void wait_like_split_loads(std::vector<Instr>& code, size_t b, size_t e, const SassPlaces& at) {
  const auto has = [](const std::vector<int32_t>& v, int32_t r) { return std::find(v.begin(), v.end(), r) != v.end(); };
  for (size_t x = b; x < e; ++x) {
    Instr& load = code[x];
    if (load.traits.mem != MemKind::Load || at.last[x - b] <= at.first[x - b]) continue;
    for (size_t y = x + 1; y < e; ++y) {
      const Instr& mma = code[y];
      if (!mma.traits.tensor_math || at.first[y - b] < 0 || at.first[y - b] > at.last[x - b]) continue;
      if (std::none_of(load.dsts.begin(), load.dsts.end(), [&](int32_t r) { return has(mma.srcs, r); })) continue;
      for (int32_t r : mma.srcs) {
        bool written_between = false;
        for (size_t q = x + 1; q < y && !written_between; ++q) written_between = has(code[q].dsts, r);
        if (!written_between && !has(load.dsts, r) && !has(load.srcs, r)) load.srcs.push_back(r);
      }
      break;
    }
  }
}

// ptxas's scoreboard in a matched loop [b, e) (`at`: its places in `order`): an instruction waiting on an
// LDG's write barrier (its first consumer, often an FFMA) holds the warp's in-order issue, so a later LDG
// of the iteration issues only once that load's data is back, where the PTX-only schedule would have
// hoisted every load above every consumer (spmm_csr: one memory latency per nonzero, not per four).
// `waits` (SassFacts::loop_waits): per LDG of the loop, the earlier LDGs it issues after; the global load
// holding that LDG waits for those loads' destination registers (a scoreboard wait, no value is read).
void wait_like_sass_scoreboard(std::vector<Instr>& code, size_t b, size_t e, const SassPlaces& at,
                               const std::string& order, const std::string& waits) {
  std::vector<int32_t> ldg_of_place(order.size(), -1);  // place -> its index among the loop's LDGs
  std::vector<int32_t> place_of_ldg;
  for (size_t q = 0; q < order.size(); ++q)
    if (order[q] == 'G') {
      ldg_of_place[q] = static_cast<int32_t>(place_of_ldg.size());
      place_of_ldg.push_back(static_cast<int32_t>(q));
    }
  std::vector<int32_t> load_of_ldg(place_of_ldg.size(), -1);  // LDG -> the PTX load (index from b) it is part of
  for (size_t x = b; x < e; ++x)
    if (at.first[x - b] >= 0 && order[static_cast<size_t>(at.first[x - b])] == 'G')
      for (int32_t q = at.first[x - b]; q <= at.last[x - b]; ++q)
        if (ldg_of_place[static_cast<size_t>(q)] >= 0) load_of_ldg[static_cast<size_t>(ldg_of_place[static_cast<size_t>(q)])] = static_cast<int32_t>(x - b);
  size_t ldg = 0, pos = 0;
  while (pos <= waits.size() && ldg < load_of_ldg.size()) {
    const size_t end = std::min(waits.find(';', pos), waits.size());
    const int32_t load = load_of_ldg[ldg];
    for (size_t item = pos; item < end;) {
      const size_t stop = std::min(waits.find('.', item), end);
      const size_t earlier = static_cast<size_t>(std::stoul(waits.substr(item, stop - item)));
      if (load >= 0 && earlier < load_of_ldg.size() && load_of_ldg[earlier] >= 0 && load_of_ldg[earlier] != load) {
        Instr& in = code[b + static_cast<size_t>(load)];
        for (int32_t r : code[b + static_cast<size_t>(load_of_ldg[earlier])].dsts)
          if (std::find(in.srcs.begin(), in.srcs.end(), r) == in.srcs.end() &&
              std::find(in.dsts.begin(), in.dsts.end(), r) == in.dsts.end())
            in.srcs.push_back(r);
      }
      item = stop + 1;
    }
    pos = end + 1;
    ++ldg;
  }
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
  const size_t nr = k.regs.size();
  const size_t words = (nr + 63) / 64;
  std::vector<char> leader(n + 1, 0);
  leader[0] = 1;
  for (size_t pc = 0; pc < n; ++pc) {
    const Instr& in = k.code[pc];
    if (in.op == Op::Bra) leader[static_cast<size_t>(in.target)] = 1;
    if (is_control(in)) leader[pc + 1] = 1;
  }
  std::vector<size_t> first;  // each block's first pc, then n
  std::vector<int32_t> block_at(n + 1, -1);
  for (size_t pc = 0; pc < n; ++pc)
    if (leader[pc]) {
      block_at[pc] = static_cast<int32_t>(first.size());
      first.push_back(pc);
    }
  const size_t nb = first.size();
  first.push_back(n);
  // Liveness at the blocks' first pcs (live_in_sets' at those pcs: the same least fixed point, an unguarded
  // write killing, every source read), kept per block rather than per instruction.
  std::vector<uint64_t> live_in(nb * words, 0);
  std::vector<int> next;
  std::vector<uint64_t> cur(words);
  const auto live_out_of = [&](size_t blk, std::vector<uint64_t>& bits) {
    std::fill(bits.begin(), bits.end(), 0);
    successors(k, static_cast<int>(first[blk + 1]) - 1, next);
    for (int s : next)
      for (size_t w = 0; w < words; ++w) bits[w] |= live_in[static_cast<size_t>(block_at[static_cast<size_t>(s)]) * words + w];
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t blk = nb; blk-- > 0;) {
      live_out_of(blk, cur);
      for (size_t pc = first[blk + 1]; pc-- > first[blk];) {
        const Instr& in = k.code[pc];
        if (in.guard < 0)
          for (int32_t r : in.dsts) cur[static_cast<size_t>(r) / 64] &= ~(uint64_t{1} << (r % 64));
        for (int32_t r : in.srcs) cur[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
      }
      uint64_t* dst = &live_in[blk * words];
      for (size_t w = 0; w < words; ++w)
        if (dst[w] != cur[w]) { dst[w] = cur[w]; changed = true; }
    }
  }
  Registers regs;
  regs.k = &k;
  const std::vector<char> uniform = warp_uniform_registers(k);
  for (size_t r = 0; r < nr; ++r)
    regs.slots.push_back(uniform[r] ? 0 : register_slots(k, static_cast<int32_t>(r)));
  regs.budget = k.regs_per_thread > 2 ? k.regs_per_thread - 2 : 0;
  Scratch sc;
  sc.writer.assign(nr, -1);
  sc.readers.resize(nr);
  sc.uses.assign(nr, 0);
  sc.live.assign(nr, 0);
  regs.live_out.resize(words);
  // ptxas's order for the single-block loops (a block whose last instruction branches back to its first),
  // matched in code order to the SASS's innermost loops with the same memory and Tensor Core instructions.
  std::vector<std::vector<int32_t>> ranks(nb);
  std::vector<const std::string*> order_of(nb, nullptr);  // the SASS order a block was matched to
  std::vector<const std::string*> waits_of(nb, nullptr);  // and its loads' scoreboard waits (loops only)
  size_t next_loop = 0;
  for (size_t blk = 0; blk < nb && next_loop < k.sass.loops.size(); ++blk) {
    const Instr& last = k.code[first[blk + 1] - 1];
    if (last.op != Op::Bra || static_cast<size_t>(last.target) != first[blk]) continue;
    for (size_t q = next_loop; q < k.sass.loops.size(); ++q) {
      ranks[blk] = sass_places(k.code, first[blk], first[blk + 1], k.sass.loops[q]).first;
      if (!ranks[blk].empty()) {
        order_of[blk] = &k.sass.loops[q];
        if (q < k.sass.loop_waits.size()) waits_of[blk] = &k.sass.loop_waits[q];
        next_loop = q + 1;
        break;
      }
    }
  }
  // ptxas's order for the straight-line copy blocks (a block of no loop whose classed instructions are
  // global loads and shared stores, at least one of each: a loop's peeled iterations), matched in code
  // order to the SASS's copy blocks outside its innermost loops with the same copies.
  size_t next_copy = 0;
  for (size_t blk = 0; blk < nb && next_copy < k.sass.copy_blocks.size(); ++blk) {
    const Instr& last = k.code[first[blk + 1] - 1];
    if (!ranks[blk].empty() || (last.op == Op::Bra && static_cast<size_t>(last.target) == first[blk])) continue;
    bool load = false, store = false, other = false;
    for (size_t pc = first[blk]; pc < first[blk + 1]; ++pc) {
      const char c = sass_class(k.code[pc]).first;
      load |= c == 'G';
      store |= c == 'S';
      other |= c && c != 'G' && c != 'S';
    }
    if (!load || !store || other) continue;
    for (size_t q = next_copy; q < k.sass.copy_blocks.size(); ++q) {
      ranks[blk] = sass_places(k.code, first[blk], first[blk + 1], k.sass.copy_blocks[q]).first;
      if (!ranks[blk].empty()) {
        order_of[blk] = &k.sass.copy_blocks[q];
        next_copy = q + 1;
        break;
      }
    }
  }
  for (size_t blk = 0; blk < nb; ++blk) {
    regs.live_in = live_in.data() + blk * words;
    live_out_of(blk, regs.live_out);
    if (!ranks[blk].empty() && schedule_block(k.code, first[blk], first[blk + 1], regs, sc, &ranks[blk])) {
      const SassPlaces at = sass_places(k.code, first[blk], first[blk + 1], *order_of[blk]);
      wait_like_split_loads(k.code, first[blk], first[blk + 1], at);
      if (waits_of[blk] && !waits_of[blk]->empty())
        wait_like_sass_scoreboard(k.code, first[blk], first[blk + 1], at, *order_of[blk], *waits_of[blk]);
    } else
      schedule_block(k.code, first[blk], first[blk + 1], regs, sc, nullptr);
  }
}

}  // namespace stc
