#include "cfg.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace stc {

namespace {

using Bits = std::vector<uint64_t>;

bool ends_block(const Instr& in) { return is_control(in); }

}  // namespace

void compute_reconvergence(Kernel& k) {
  const int n = static_cast<int>(k.code.size());
  if (n == 0) return;
  // Block leaders: pc 0, branch targets, and the instruction after a control instruction.
  std::vector<char> leader(static_cast<size_t>(n) + 1, 0);
  leader[0] = 1;
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = k.code[static_cast<size_t>(pc)];
    if (in.op == Op::Bra && in.target >= 0) leader[static_cast<size_t>(in.target)] = 1;
    if (ends_block(in)) leader[static_cast<size_t>(pc) + 1] = 1;
  }
  std::vector<int> block_of(static_cast<size_t>(n));
  std::vector<int> first;
  for (int pc = 0; pc < n; ++pc) {
    if (leader[static_cast<size_t>(pc)]) first.push_back(pc);
    block_of[static_cast<size_t>(pc)] = static_cast<int>(first.size()) - 1;
  }
  const int nb = static_cast<int>(first.size());
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
  // Post-dominator sets by iterative data flow over bitsets.
  const size_t words = (static_cast<size_t>(nb) + 1 + 63) / 64;
  std::vector<Bits> pdom(static_cast<size_t>(nb) + 1, Bits(words, ~uint64_t{0}));
  auto set = [](Bits& b, int i) { b[static_cast<size_t>(i) / 64] |= uint64_t{1} << (i % 64); };
  auto test = [](const Bits& b, int i) { return (b[static_cast<size_t>(i) / 64] >> (i % 64)) & 1; };
  pdom[static_cast<size_t>(exit_node)].assign(words, 0);
  set(pdom[static_cast<size_t>(exit_node)], exit_node);
  bool changed = true;
  while (changed) {
    changed = false;
    for (int b = nb - 1; b >= 0; --b) {
      Bits nw(words, ~uint64_t{0});
      for (int s : succ[static_cast<size_t>(b)])
        for (size_t w = 0; w < words; ++w) nw[w] &= pdom[static_cast<size_t>(s)][w];
      set(nw, b);
      if (nw != pdom[static_cast<size_t>(b)]) { pdom[static_cast<size_t>(b)] = nw; changed = true; }
    }
  }
  auto count = [&](const Bits& b) {
    int c = 0;
    for (uint64_t w : b) c += __builtin_popcountll(w);
    return c;
  };
  // The immediate post-dominator is the strict post-dominator with the most post-dominators itself.
  for (int b = 0; b < nb; ++b) {
    const int last = (b + 1 < nb ? first[static_cast<size_t>(b) + 1] : n) - 1;
    Instr& in = k.code[static_cast<size_t>(last)];
    if (in.op != Op::Bra) continue;
    int best = -1, best_count = -1;
    for (int p = 0; p <= nb; ++p) {
      if (p == b || !test(pdom[static_cast<size_t>(b)], p)) continue;
      const int cnt = count(pdom[static_cast<size_t>(p)]);
      if (cnt > best_count) { best = p; best_count = cnt; }
    }
    in.reconv = (best < 0 || best == exit_node) ? -1 : first[static_cast<size_t>(best)];
  }
}

}  // namespace stc
