// func/cfg.h: the reconvergence point of every branch (the first pc of its block's immediate post-dominator,
// -1 for the exit), computed by Cooper, Harvey and Kennedy's algorithm on the reversed graph. Checked against
// the post-dominator sets of the equations' greatest fixed point (bitsets, the engine's earlier algorithm) on
// random kernels: guarded and unguarded branches, returns, fall-throughs, and infinite loops (blocks that
// cannot reach the exit).
#include <cstdint>
#include <string>
#include <vector>

#include "func/cfg.h"
#include "ptx_kernel.h"
#include "unit_test.h"

using namespace stc;
using stc_test::listing;
using stc_test::parse_kernel;

namespace {

// The reconvergence pc of every pc's branch (-2 for a pc that is not a branch), from post-dominator sets.
std::vector<int> reference_reconvergence(const Kernel& k) {
  const int n = static_cast<int>(k.code.size());
  std::vector<char> leader(static_cast<size_t>(n) + 1, 0);
  leader[0] = 1;
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = k.code[static_cast<size_t>(pc)];
    if (in.op == Op::Bra && in.target >= 0) leader[static_cast<size_t>(in.target)] = 1;
    if (is_control(in)) leader[static_cast<size_t>(pc) + 1] = 1;
  }
  std::vector<int> block_of(static_cast<size_t>(n)), first;
  for (int pc = 0; pc < n; ++pc) {
    if (leader[static_cast<size_t>(pc)]) first.push_back(pc);
    block_of[static_cast<size_t>(pc)] = static_cast<int>(first.size()) - 1;
  }
  const int nb = static_cast<int>(first.size()), exit_node = nb;
  const auto last_of = [&](int b) { return (b + 1 < nb ? first[static_cast<size_t>(b) + 1] : n) - 1; };
  std::vector<std::vector<int>> succ(static_cast<size_t>(nb));
  for (int b = 0; b < nb; ++b) {
    const int last = last_of(b);
    const Instr& in = k.code[static_cast<size_t>(last)];
    auto& s = succ[static_cast<size_t>(b)];
    const int next = last + 1 < n ? b + 1 : exit_node;
    if (in.op == Op::Bra) {
      s.push_back(block_of[static_cast<size_t>(in.target)]);
      if (in.guard >= 0) s.push_back(next);
    } else if (is_control(in)) {
      s.push_back(exit_node);
      if (in.guard >= 0) s.push_back(next);
    } else {
      s.push_back(next);
    }
  }
  const size_t nodes = static_cast<size_t>(nb) + 1;
  std::vector<std::vector<char>> pdom(nodes, std::vector<char>(nodes, 1));
  pdom[static_cast<size_t>(exit_node)].assign(nodes, 0);
  pdom[static_cast<size_t>(exit_node)][static_cast<size_t>(exit_node)] = 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (int b = nb - 1; b >= 0; --b) {
      std::vector<char> nw(nodes, 1);
      for (int s : succ[static_cast<size_t>(b)])
        for (size_t p = 0; p < nodes; ++p) nw[p] = static_cast<char>(nw[p] && pdom[static_cast<size_t>(s)][p]);
      nw[static_cast<size_t>(b)] = 1;
      if (nw != pdom[static_cast<size_t>(b)]) { pdom[static_cast<size_t>(b)] = nw; changed = true; }
    }
  }
  const auto count = [&](int p) {
    int c = 0;
    for (char x : pdom[static_cast<size_t>(p)]) c += x;
    return c;
  };
  std::vector<int> out(static_cast<size_t>(n), -2);
  for (int b = 0; b < nb; ++b) {
    const int last = last_of(b);
    if (k.code[static_cast<size_t>(last)].op != Op::Bra) continue;
    int best = -1, best_count = -1;
    for (int p = 0; p <= nb; ++p) {
      if (p == b || !pdom[static_cast<size_t>(b)][static_cast<size_t>(p)]) continue;
      if (count(p) > best_count) { best = p; best_count = count(p); }
    }
    out[static_cast<size_t>(last)] = (best < 0 || best == exit_node) ? -1 : first[static_cast<size_t>(best)];
  }
  return out;
}

// A random body of `blocks` labelled blocks: each one or two adds, then a guarded or unguarded branch to
// a random label, a (guarded) return, or nothing (fall-through).
std::string random_body(uint64_t& state, int blocks) {
  const auto next = [&](uint32_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33) % bound;
  };
  std::string body = "  ld.param.u32 %r1, [n];\n  setp.ne.u32 %p1, %r1, 0;\n";
  for (int b = 0; b < blocks; ++b) {
    body += "L" + std::to_string(b) + ":\n  add.s32 %r2, %r2, 1;\n";
    if (next(2)) body += "  add.s32 %r3, %r3, %r2;\n";
    const uint32_t kind = next(6);
    const std::string target = "L" + std::to_string(next(static_cast<uint32_t>(blocks)));
    if (kind == 0) body += "  @%p1 bra " + target + ";\n";
    else if (kind == 1) body += "  @!%p1 bra " + target + ";\n";
    else if (kind == 2) body += "  bra " + target + ";\n";
    else if (kind == 3) body += "  @%p1 ret;\n";
    else if (kind == 4 && next(3) == 0) body += "  ret;\n";
  }
  return body + "  ret;\n";
}

}  // namespace

TEST(reconvergence_matches_the_post_dominator_sets_on_random_kernels) {
  uint64_t state = 46;
  for (int trial = 0; trial < 300; ++trial) {
    const int blocks = 2 + static_cast<int>(trial % 40);
    stc_test::PtxKernel p = parse_kernel(random_body(state, blocks));
    const Kernel& k = p.kernel();
    const std::vector<int> want = reference_reconvergence(k);
    for (size_t pc = 0; pc < k.code.size(); ++pc) {
      if (want[pc] == -2) continue;
      if (k.code[pc].reconv != want[pc]) {
        ::stc_test::fail(__FILE__, __LINE__, "trial " + std::to_string(trial) + ", pc " + std::to_string(pc) +
                                                 ": reconv " + std::to_string(k.code[pc].reconv) + ", want " +
                                                 std::to_string(want[pc]) + listing(k));
        return;
      }
    }
  }
}

TEST(reconvergence_of_a_diamond_and_of_an_infinite_loop) {
  // if / else: both arms meet at L3; the loop L4 <-> L5 never reaches the exit
  stc_test::PtxKernel p = parse_kernel(
      "  ld.param.u32 %r1, [n];\n  setp.ne.u32 %p1, %r1, 0;\n  @%p1 bra L2;\n  add.s32 %r2, %r2, 1;\n"
      "  bra L3;\nL2:\n  add.s32 %r2, %r2, 2;\nL3:\n  add.s32 %r3, %r3, 1;\n  @%p1 bra L4;\n  ret;\n"
      "L4:\n  add.s32 %r2, %r2, 3;\n  @%p1 bra L4;\nL5:\n  bra L4;\n");
  const Kernel& k = p.kernel();
  const std::vector<int> want = reference_reconvergence(k);
  for (size_t pc = 0; pc < k.code.size(); ++pc)
    if (want[pc] != -2) CHECK_EQ(k.code[pc].reconv, want[pc]);
  CHECK_EQ(k.code[2].reconv, stc_test::find_pc(k, "add.s32 %r3"));  // the diamond meets at L3
}
