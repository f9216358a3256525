#include "regalloc.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cfg.h"

namespace stc {

namespace {

// Every register an instruction names in its operands, guard included.
template <class F>
void for_named_registers(const Instr& in, F f) {
  if (in.guard >= 0) f(in.guard);
  for (const Operand& o : in.ops) {
    if ((o.kind == OpndKind::Reg || o.kind == OpndKind::Mem) && o.reg >= 0) f(o.reg);
    for (int32_t r : o.vec)
      if (r >= 0) f(r);
  }
}

// Instructions whose destinations may also be read (extensions: wgmma accumulates into D in place).
bool may_read_dsts(const Instr& in) { return in.op == Op::Ext || in.traits.async_group; }

}  // namespace

void compact_registers(Kernel& k) {
  const size_t nr = k.regs.size();
  const int n = static_cast<int>(k.code.size());
  if (nr == 0 || n == 0 || k.reg_slots) return;  // nothing to do, or compacted already
  // Registers that keep a slot of their own: the carry flag (read and written implicitly) and any register
  // an operand names that the scoreboard lists do not (its reads are not known).
  std::vector<char> pinned(nr, 0);
  if (k.carry_reg >= 0) pinned[static_cast<size_t>(k.carry_reg)] = 1;
  for (const Instr& in : k.code)
    for_named_registers(in, [&](int32_t r) {
      const bool listed = std::find(in.srcs.begin(), in.srcs.end(), r) != in.srcs.end() ||
                          std::find(in.dsts.begin(), in.dsts.end(), r) != in.dsts.end();
      if (!listed) pinned[static_cast<size_t>(r)] = 1;
    });
  const std::vector<uint64_t> live_in = live_in_sets(
      k, [](const Instr& in, int32_t) { return may_read_dsts(in); },
      [](const Instr& in, int32_t) { return in.guard < 0 && !may_read_dsts(in); });
  // Each register's interval: the first to the last pc at which it is live or written (the hull of its
  // live range; two disjoint hulls are never live together).
  const size_t words = (nr + 63) / 64;
  std::vector<int> first(nr, n), last(nr, -1);
  const auto touch = [&](size_t r, int pc) {
    first[r] = std::min(first[r], pc);
    last[r] = std::max(last[r], pc);
  };
  for (int pc = 0; pc < n; ++pc) {
    const uint64_t* li = &live_in[static_cast<size_t>(pc) * words];
    for (size_t w = 0; w < words; ++w)
      for (uint64_t b = li[w]; b; b &= b - 1) touch(w * 64 + static_cast<size_t>(__builtin_ctzll(b)), pc);
    const Instr& in = k.code[static_cast<size_t>(pc)];
    for (int32_t r : in.dsts) touch(static_cast<size_t>(r), pc);
    for (int32_t r : in.srcs) touch(static_cast<size_t>(r), pc);
  }
  // Linear scan in order of first pc: a slot is free again once its register's last pc is behind the next
  // register's first (strictly: an instruction never reads and writes one slot for two registers).
  std::vector<size_t> order;
  for (size_t r = 0; r < nr; ++r)
    if (last[r] >= 0 && !pinned[r]) order.push_back(r);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  std::vector<int32_t> slot(nr, -1);
  int32_t slots = 0;
  for (size_t r = 0; r < nr; ++r)
    if (pinned[r]) slot[r] = slots++;
  std::vector<std::pair<int, int32_t>> active;  // (last pc, slot), a min-heap on last pc
  std::vector<int32_t> free_slots;              // released slots, reused lowest first
  const auto later = [](const std::pair<int, int32_t>& a, const std::pair<int, int32_t>& b) { return a.first > b.first; };
  for (size_t r : order) {
    while (!active.empty() && active.front().first < first[r]) {
      free_slots.push_back(active.front().second);
      std::pop_heap(active.begin(), active.end(), later);
      active.pop_back();
    }
    int32_t s;
    if (free_slots.empty()) {
      s = slots++;
    } else {
      auto it = std::min_element(free_slots.begin(), free_slots.end());
      s = *it;
      free_slots.erase(it);
    }
    slot[r] = s;
    active.emplace_back(last[r], s);
    std::push_heap(active.begin(), active.end(), later);
  }
  for (size_t r = 0; r < nr; ++r)
    if (slot[r] < 0) slot[r] = slots++;  // never touched by any instruction: a slot of its own, unused
  const auto rename = [&](int32_t& r) {
    if (r >= 0) r = slot[static_cast<size_t>(r)];
  };
  for (Instr& in : k.code) {
    rename(in.guard);
    for (Operand& o : in.ops) {
      if (o.kind == OpndKind::Reg || o.kind == OpndKind::Mem) rename(o.reg);
      for (int32_t& r : o.vec) rename(r);
    }
  }
  rename(k.carry_reg);
  k.reg_slots = static_cast<uint32_t>(slots);
}

}  // namespace stc
