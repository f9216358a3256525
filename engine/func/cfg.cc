#include "cfg.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace stc {

namespace {

using Bits = std::vector<uint64_t>;

bool ends_block(const Instr& in) { return is_control(in); }

// The kernel's basic blocks: leaders are pc 0, branch targets and the instruction after a control
// instruction; `first[b]` is block b's first pc, `block_of[pc]` the block of a pc.
struct Blocks {
  std::vector<int> first, block_of;

  explicit Blocks(const Kernel& k) {
    const int n = static_cast<int>(k.code.size());
    std::vector<char> leader(static_cast<size_t>(n) + 1, 0);
    leader[0] = 1;
    for (int pc = 0; pc < n; ++pc) {
      const Instr& in = k.code[static_cast<size_t>(pc)];
      if (in.op == Op::Bra && in.target >= 0) leader[static_cast<size_t>(in.target)] = 1;
      if (ends_block(in)) leader[static_cast<size_t>(pc) + 1] = 1;
    }
    block_of.resize(static_cast<size_t>(n));
    for (int pc = 0; pc < n; ++pc) {
      if (leader[static_cast<size_t>(pc)]) first.push_back(pc);
      block_of[static_cast<size_t>(pc)] = static_cast<int>(first.size()) - 1;
    }
  }
  int count() const { return static_cast<int>(first.size()); }
};

}  // namespace

void successors(const Kernel& k, int pc, std::vector<int>& out) {
  out.clear();
  const int n = static_cast<int>(k.code.size());
  const Instr& in = k.code[static_cast<size_t>(pc)];
  const bool guarded = in.guard >= 0;
  if (in.op == Op::Bra) {
    out.push_back(in.target);
    if (guarded && pc + 1 < n) out.push_back(pc + 1);
  } else if (is_control(in)) {
    if (guarded && pc + 1 < n) out.push_back(pc + 1);
  } else if (pc + 1 < n) {
    out.push_back(pc + 1);
  }
}

std::vector<uint64_t> live_in_sets(const Kernel& k, const std::function<bool(const Instr&, int32_t)>& reads,
                                   const std::function<bool(const Instr&, int32_t)>& kills) {
  const int n = static_cast<int>(k.code.size());
  const size_t words = (k.regs.size() + 63) / 64;
  std::vector<uint64_t> live_in(static_cast<size_t>(n) * words, 0);
  std::vector<int> succ;
  std::vector<uint64_t> cur(words);
  bool changed = true;
  while (changed) {
    changed = false;
    for (int pc = n - 1; pc >= 0; --pc) {
      std::fill(cur.begin(), cur.end(), 0);
      successors(k, pc, succ);
      for (int s : succ)
        for (size_t w = 0; w < words; ++w) cur[w] |= live_in[static_cast<size_t>(s) * words + w];
      const Instr& in = k.code[static_cast<size_t>(pc)];
      for (int32_t r : in.dsts)
        if (kills(in, r)) cur[static_cast<size_t>(r) / 64] &= ~(uint64_t{1} << (r % 64));
      for (const auto* regs : {&in.srcs, &in.dsts})
        for (int32_t r : *regs)
          if (regs == &in.srcs || reads(in, r)) cur[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
      uint64_t* dst = &live_in[static_cast<size_t>(pc) * words];
      for (size_t w = 0; w < words; ++w)
        if (dst[w] != cur[w]) { dst[w] = cur[w]; changed = true; }
    }
  }
  return live_in;
}

std::vector<char> warp_uniform_registers(const Kernel& k) {
  std::vector<char> uniform(k.regs.size(), 1);
  const auto uniform_operand = [&](const Operand& o) {
    if (o.kind != OpndKind::Special) return true;
    switch (o.sreg) {
      case SReg::Ntid: case SReg::Ctaid: case SReg::Nctaid: case SReg::Nsmid: case SReg::Gridid:
      case SReg::DynamicSmemSize: case SReg::TotalSmemSize:
        return true;
      default:
        return false;
    }
  };
  const auto uniform_writer = [&](const Instr& in) {
    if (in.guard >= 0 && !uniform[static_cast<size_t>(in.guard)]) return false;
    const bool reads_memory = in.traits.mem != MemKind::None;
    if (reads_memory && !(in.traits.mem == MemKind::Load && (in.space == Space::Param || in.space == Space::Const)))
      return false;
    if (in.op == Op::Ext || in.traits.tensor_math) return false;
    for (int32_t r : in.srcs)
      if (!uniform[static_cast<size_t>(r)]) return false;
    return std::all_of(in.ops.begin(), in.ops.end(), uniform_operand);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& in : k.code) {
      if (in.dsts.empty() || uniform_writer(in)) continue;
      for (int32_t r : in.dsts)
        if (uniform[static_cast<size_t>(r)]) {
          uniform[static_cast<size_t>(r)] = 0;
          changed = true;
        }
    }
  }
  if (k.carry_reg >= 0) uniform[static_cast<size_t>(k.carry_reg)] = 0;
  return uniform;
}

bool global_load(const Instr& in) {
  return in.traits.mem == MemKind::Load && (in.space == Space::Global || in.space == Space::Generic);
}

uint32_t register_slots(const Kernel& k, int32_t r) {
  const DType t = k.regs[static_cast<size_t>(r)].type;
  return t == DType::Pred ? 0u : dtype_bytes(t) > 4 ? 2u : 1u;
}

uint32_t estimate_registers(const Kernel& k) {
  // The most register slots live across any one instruction (its live-in plus the destinations it writes
  // while its sources are read), plus two reserved. Liveness is solved per basic block and then walked
  // backwards through each block with a running slot count: linear in the code, the same figure as per-pc
  // sets (an unguarded write kills, every source reads; the least fixed point either way).
  const int n = static_cast<int>(k.code.size());
  const size_t nr = k.regs.size();
  if (n == 0 || nr == 0) return 2;
  const size_t words = (nr + 63) / 64;
  const Blocks blocks(k);
  const std::vector<int>& starts = blocks.first;
  const std::vector<int>& block_of = blocks.block_of;
  const int nb = blocks.count();
  const auto block_end = [&](int b) { return b + 1 < nb ? starts[static_cast<size_t>(b) + 1] : n; };
  const auto has = [](const Bits& v, int32_t r) { return (v[static_cast<size_t>(r) / 64] >> (r % 64)) & 1u; };
  const auto width = [&](int32_t r) { return register_slots(k, r); };
  Bits live_in(static_cast<size_t>(nb) * words, 0), cur(words);
  std::vector<int> succ;
  const auto live_out = [&](int b) {
    std::fill(cur.begin(), cur.end(), 0);
    successors(k, block_end(b) - 1, succ);
    for (int s : succ)
      for (size_t w = 0; w < words; ++w) cur[w] |= live_in[static_cast<size_t>(block_of[static_cast<size_t>(s)]) * words + w];
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int b = nb - 1; b >= 0; --b) {
      live_out(b);
      for (int pc = block_end(b) - 1; pc >= starts[static_cast<size_t>(b)]; --pc) {
        const Instr& in = k.code[static_cast<size_t>(pc)];
        if (in.guard < 0)
          for (int32_t r : in.dsts) cur[static_cast<size_t>(r) / 64] &= ~(uint64_t{1} << (r % 64));
        for (int32_t r : in.srcs) cur[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
      }
      uint64_t* dst = &live_in[static_cast<size_t>(b) * words];
      for (size_t w = 0; w < words; ++w)
        if (dst[w] != cur[w]) { dst[w] = cur[w]; changed = true; }
    }
  }
  uint32_t peak = 0;
  for (int b = 0; b < nb; ++b) {
    live_out(b);
    uint32_t sum = 0;  // slots of the registers in cur
    for (size_t w = 0; w < words; ++w)
      for (uint64_t bits = cur[w]; bits; bits &= bits - 1)
        sum += width(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
    for (int pc = block_end(b) - 1; pc >= starts[static_cast<size_t>(b)]; --pc) {
      const Instr& in = k.code[static_cast<size_t>(pc)];
      if (in.guard < 0)
        for (int32_t r : in.dsts)
          if (has(cur, r)) { cur[static_cast<size_t>(r) / 64] &= ~(uint64_t{1} << (r % 64)); sum -= width(r); }
      for (int32_t r : in.srcs)
        if (!has(cur, r)) { cur[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64); sum += width(r); }
      uint32_t across = sum;  // cur is this instruction's live-in; its destinations are written meanwhile
      for (int32_t r : in.dsts)
        if (!has(cur, r)) across += width(r);
      peak = std::max(peak, across);
    }
  }
  return peak + 2;
}

void compute_reconvergence(Kernel& k) {
  const int n = static_cast<int>(k.code.size());
  if (n == 0) return;
  const Blocks blocks(k);
  const std::vector<int>& first = blocks.first;
  const std::vector<int>& block_of = blocks.block_of;
  const int nb = blocks.count();
  const int exit_node = nb;  // virtual exit
  std::vector<std::vector<int>> succ(static_cast<size_t>(nb));
  for (int b = 0; b < nb; ++b) {
    const int last = (b + 1 < nb ? first[static_cast<size_t>(b) + 1] : n) - 1;
    const Instr& in = k.code[static_cast<size_t>(last)];
    auto& s = succ[static_cast<size_t>(b)];
    const bool guarded = in.guard >= 0;
    if (in.op == Op::Bra) {
      s.push_back(block_of[static_cast<size_t>(in.target)]);
      if (guarded) s.push_back(last + 1 < n ? b + 1 : exit_node);
    } else if (is_control(in)) {
      s.push_back(exit_node);
      if (guarded) s.push_back(last + 1 < n ? b + 1 : exit_node);
    } else {
      s.push_back(last + 1 < n ? b + 1 : exit_node);
    }
  }
  // Immediate post-dominators by Cooper, Harvey and Kennedy's iterative algorithm ("A Simple, Fast Dominance
  // Algorithm") on the reversed graph, rooted at the exit: near-linear time and linear memory. Blocks from
  // which the exit cannot be reached (only infinite loops) are not in that tree; the greatest fixed point of
  // the post-dominator equations gives each of them every node as a post-dominator, and the reconvergence
  // point below is chosen for them as it would be from those sets.
  std::vector<std::vector<int>> pred(static_cast<size_t>(nb) + 1);
  for (int b = 0; b < nb; ++b)
    for (int s : succ[static_cast<size_t>(b)]) pred[static_cast<size_t>(s)].push_back(b);
  // Postorder of the reversed graph from the exit (iterative depth-first search over the predecessors).
  constexpr int kNone = -1;
  std::vector<int> po(static_cast<size_t>(nb) + 1, kNone), order;  // order: nodes by postorder number
  order.reserve(static_cast<size_t>(nb) + 1);
  {
    std::vector<char> seen(static_cast<size_t>(nb) + 1, 0);
    std::vector<std::pair<int, size_t>> stack{{exit_node, 0}};
    seen[static_cast<size_t>(exit_node)] = 1;
    while (!stack.empty()) {
      auto& [x, i] = stack.back();
      const auto& ps = pred[static_cast<size_t>(x)];
      if (i < ps.size()) {
        const int y = ps[i++];
        if (!seen[static_cast<size_t>(y)]) {
          seen[static_cast<size_t>(y)] = 1;
          stack.push_back({y, 0});
        }
        continue;
      }
      po[static_cast<size_t>(x)] = static_cast<int>(order.size());
      order.push_back(x);
      stack.pop_back();
    }
  }
  std::vector<int> ipdom(static_cast<size_t>(nb) + 1, kNone);
  ipdom[static_cast<size_t>(exit_node)] = exit_node;
  const auto intersect = [&](int a, int b) {
    while (a != b) {
      while (po[static_cast<size_t>(a)] < po[static_cast<size_t>(b)]) a = ipdom[static_cast<size_t>(a)];
      while (po[static_cast<size_t>(b)] < po[static_cast<size_t>(a)]) b = ipdom[static_cast<size_t>(b)];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {  // reverse postorder, the exit first
      const int b = *it;
      if (b == exit_node) continue;
      int nw = kNone;
      for (int s : succ[static_cast<size_t>(b)]) {
        if (po[static_cast<size_t>(s)] == kNone || ipdom[static_cast<size_t>(s)] == kNone) continue;
        nw = nw == kNone ? s : intersect(s, nw);
      }
      if (nw != ipdom[static_cast<size_t>(b)]) { ipdom[static_cast<size_t>(b)] = nw; changed = true; }
    }
  }
  // Post-dominators of each node in the tree (itself, ..., the exit); every node for the others.
  std::vector<int> depth(static_cast<size_t>(nb) + 1, nb + 1);
  depth[static_cast<size_t>(exit_node)] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (*it != exit_node) depth[static_cast<size_t>(*it)] = depth[static_cast<size_t>(ipdom[static_cast<size_t>(*it)])] + 1;
  // Of a block outside the tree, every node post-dominates it; its reconvergence point is the other node with
  // the most post-dominators, the first in block order on ties: the first other such block, else the first
  // block of the tree with the deepest chain.
  std::vector<int> loops;  // blocks outside the tree, in block order
  int deepest = kNone;
  for (int b = 0; b <= nb; ++b) {
    if (po[static_cast<size_t>(b)] == kNone) loops.push_back(b);
    else if (deepest == kNone || depth[static_cast<size_t>(b)] > depth[static_cast<size_t>(deepest)]) deepest = b;
  }
  const auto outside_choice = [&](int b) {
    for (int c : loops)
      if (c != b) return c;
    return deepest;
  };
  for (int b = 0; b < nb; ++b) {
    const int last = (b + 1 < nb ? first[static_cast<size_t>(b) + 1] : n) - 1;
    Instr& in = k.code[static_cast<size_t>(last)];
    if (in.op != Op::Bra) continue;
    const int best = po[static_cast<size_t>(b)] == kNone ? outside_choice(b) : ipdom[static_cast<size_t>(b)];
    in.reconv = (best < 0 || best == exit_node) ? -1 : first[static_cast<size_t>(best)];
  }
}

}  // namespace stc
