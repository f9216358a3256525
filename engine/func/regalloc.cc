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
bool may_read_dsts(const Instr& in) { return in.traits.reads_dst; }

}  // namespace

void compact_registers(Kernel& k) {
  const size_t nr = k.regs.size();
  const int n = static_cast<int>(k.code.size());
  if (k.regs_compacted) return;
  k.regs_compacted = true;
  if (nr == 0 || n == 0) return;  // nothing to rename
  // Registers of more than 32 bits live in the file of 64-bit lanes, the others in the 32-bit one: two
  // classes, coloured apart (registers of different classes never share a slot).
  std::vector<uint8_t> wide(nr, 0);
  for (size_t r = 0; r < nr; ++r) wide[r] = dtype_bytes(k.regs[r].type) > 4;
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
  // Liveness (live_in_sets' sets, a destination of may_read_dsts read, an unguarded write of any other
  // killing) kept per basic block; each block is then walked backwards with its live set as a sparse set,
  // so the work is linear in the code and in the interference, not in instructions times registers.
  const auto reads_dsts = [](const Instr& in) { return may_read_dsts(in); };
  const auto kills = [](const Instr& in) { return in.guard < 0 && !may_read_dsts(in); };
  const size_t words = (nr + 63) / 64;
  std::vector<char> leader(static_cast<size_t>(n) + 1, 0);
  leader[0] = 1;
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = k.code[static_cast<size_t>(pc)];
    if (in.target >= 0) leader[static_cast<size_t>(in.target)] = 1;  // a branch's target
    if (is_control(in)) leader[static_cast<size_t>(pc) + 1] = 1;
  }
  std::vector<int> start;  // each block's first pc, then n
  std::vector<int32_t> block_at(static_cast<size_t>(n) + 1, -1);
  for (int pc = 0; pc < n; ++pc)
    if (leader[static_cast<size_t>(pc)]) {
      block_at[static_cast<size_t>(pc)] = static_cast<int32_t>(start.size());
      start.push_back(pc);
    }
  const size_t nb = start.size();
  start.push_back(n);
  std::vector<uint64_t> live_in(nb * words, 0);
  std::vector<int> succ;
  std::vector<uint64_t> cur(words);
  const auto live_out_of = [&](size_t blk) {  // into cur
    std::fill(cur.begin(), cur.end(), 0);
    successors(k, start[blk + 1] - 1, succ);
    for (int sp : succ)
      for (size_t w = 0; w < words; ++w) cur[w] |= live_in[static_cast<size_t>(block_at[static_cast<size_t>(sp)]) * words + w];
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t blk = nb; blk-- > 0;) {
      live_out_of(blk);
      for (int pc = start[blk + 1]; pc-- > start[blk];) {
        const Instr& in = k.code[static_cast<size_t>(pc)];
        if (kills(in))
          for (int32_t r : in.dsts) cur[static_cast<size_t>(r) / 64] &= ~(uint64_t{1} << (r % 64));
        for (int32_t r : in.srcs) cur[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
        if (reads_dsts(in))
          for (int32_t r : in.dsts) cur[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
      }
      uint64_t* dst = &live_in[blk * words];
      for (size_t w = 0; w < words; ++w)
        if (dst[w] != cur[w]) { dst[w] = cur[w]; changed = true; }
    }
  }
  // Each register's first and last pc at which it is live or written (its order in the colouring below).
  std::vector<int> first(nr, n), last(nr, -1);
  const auto touch = [&](size_t r, int pc) {
    first[r] = std::min(first[r], pc);
    last[r] = std::max(last[r], pc);
  };
  // Interference: a register written at a pc conflicts with every other register live after it (a value
  // that must survive the write), and the registers one instruction names conflict with each other (a
  // semantic function may write a destination before it has read every source), except a source and a
  // destination of an unguarded tensor-core mma: it gathers every source before it writes a destination,
  // so D may take the slots of a C (or A, B) that dies there, as ptxas allocates accumulators in place.
  std::vector<std::vector<uint32_t>> adj(nr);
  const auto conflict = [&](size_t a, size_t b) {
    if (a == b) return;
    if (adj[a].empty() || adj[a].back() != b) adj[a].push_back(static_cast<uint32_t>(b));
    if (adj[b].empty() || adj[b].back() != a) adj[b].push_back(static_cast<uint32_t>(a));
  };
  std::vector<int32_t> prefer(nr, -1);  // an in-place mma's D register -> the C register of its element
  std::vector<int> prefer_pc(nr, -1);   // the mma that set it (the last in PTX order wins)
  std::vector<int32_t> members;         // the live set, sparse: its registers and each one's place in it
  std::vector<int32_t> place(nr, -1);
  const auto add = [&](int32_t r) {
    if (place[static_cast<size_t>(r)] >= 0) return false;
    place[static_cast<size_t>(r)] = static_cast<int32_t>(members.size());
    members.push_back(r);
    return true;
  };
  const auto remove = [&](int32_t r) {
    const int32_t at = place[static_cast<size_t>(r)];
    if (at < 0) return false;
    members[static_cast<size_t>(at)] = members.back();
    place[static_cast<size_t>(members.back())] = at;
    members.pop_back();
    place[static_cast<size_t>(r)] = -1;
    return true;
  };
  for (size_t blk = 0; blk < nb; ++blk) {
    live_out_of(blk);
    for (size_t w = 0; w < words; ++w)
      for (uint64_t b = cur[w]; b; b &= b - 1) add(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(b))));
    const int lastpc = start[blk + 1] - 1;
    for (int pc = lastpc; pc >= start[blk]; --pc) {  // members: the live set after pc
      const Instr& in = k.code[static_cast<size_t>(pc)];
      for (int32_t d : in.dsts)
        for (int32_t r : members) conflict(static_cast<size_t>(d), static_cast<size_t>(r));
      // the live set before pc: a register leaving it was live before pc + 1, one entering it is live before pc
      if (kills(in))
        for (int32_t r : in.dsts)
          if (remove(r) && pc < lastpc) touch(static_cast<size_t>(r), pc + 1);
      for (int32_t r : in.srcs)
        if (add(r)) touch(static_cast<size_t>(r), pc);
      if (reads_dsts(in))
        for (int32_t r : in.dsts)
          if (add(r)) touch(static_cast<size_t>(r), pc);
      if (pc == lastpc)
        for (int32_t r : members) touch(static_cast<size_t>(r), pc);
      for (int32_t r : in.dsts) touch(static_cast<size_t>(r), pc);
      for (int32_t r : in.srcs) touch(static_cast<size_t>(r), pc);
      const bool in_place = in.guard < 0 && in.traits.accumulates;
      const auto is_dst = [&](int32_t r) { return std::find(in.dsts.begin(), in.dsts.end(), r) != in.dsts.end(); };
      const auto is_src = [&](int32_t r) { return std::find(in.srcs.begin(), in.srcs.end(), r) != in.srcs.end(); };
      std::vector<int32_t> named(in.srcs);
      named.insert(named.end(), in.dsts.begin(), in.dsts.end());
      for (size_t i = 0; i < named.size(); ++i)
        for (size_t j = i + 1; j < named.size(); ++j) {
          const int32_t a = named[i], b = named[j];
          const bool src_dst = (is_src(a) && !is_dst(a) && is_dst(b) && !is_src(b)) ||
                               (is_src(b) && !is_dst(b) && is_dst(a) && !is_src(a));
          if (!(in_place && src_dst)) conflict(static_cast<size_t>(a), static_cast<size_t>(b));
        }
      if (in_place && in.ops.size() > 3 && in.ops[0].kind == OpndKind::Vec && in.ops[3].kind == OpndKind::Vec)
        for (size_t e = 0; e < std::min(in.ops[0].vec.size(), in.ops[3].vec.size()); ++e) {
          const int32_t d = in.ops[0].vec[e], c = in.ops[3].vec[e];
          if (d >= 0 && c >= 0 && d != c && pc > prefer_pc[static_cast<size_t>(d)]) {
            prefer[static_cast<size_t>(d)] = c;
            prefer_pc[static_cast<size_t>(d)] = pc;
          }
        }
    }
    for (int32_t r : members) touch(static_cast<size_t>(r), start[blk]);
    while (!members.empty()) remove(members.back());
  }
  // Greedy colouring in order of first pc (on the hulls of the live ranges, the order that makes a linear
  // scan optimal; the conflicts here are a subset of the hulls' overlaps, so it needs no more slots): each
  // register takes its preferred slot if free, else the lowest slot none of its coloured neighbours holds.
  std::vector<size_t> order;
  for (size_t r = 0; r < nr; ++r)
    if (last[r] >= 0 && !pinned[r]) order.push_back(r);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  std::vector<int32_t> slot(nr, -1);
  int32_t slots[2] = {0, 0};  // per class: 32-bit, 64-bit lanes
  for (size_t r = 0; r < nr; ++r)
    if (pinned[r]) slot[r] = slots[wide[r]]++;
  std::vector<char> taken;
  for (size_t r : order) {
    const int cls = wide[r];
    taken.assign(static_cast<size_t>(slots[cls]) + 1, 0);
    for (uint32_t o : adj[r])
      if (slot[o] >= 0 && wide[o] == cls) taken[static_cast<size_t>(slot[o])] = 1;
    int32_t s = -1;
    if (const int32_t p = prefer[r]; p >= 0 && wide[static_cast<size_t>(p)] == cls && slot[static_cast<size_t>(p)] >= 0 &&
                                      !pinned[static_cast<size_t>(p)] && !taken[static_cast<size_t>(slot[static_cast<size_t>(p)])])
      s = slot[static_cast<size_t>(p)];
    if (s < 0) {
      s = 0;
      while (taken[static_cast<size_t>(s)]) ++s;
    }
    slot[r] = s;
    slots[cls] = std::max(slots[cls], s + 1);
  }
  for (size_t r = 0; r < nr; ++r)
    if (slot[r] < 0) slot[r] = slots[wide[r]]++;  // never touched by any instruction: a slot of its own, unused
  const auto rename = [&](int32_t& r) {
    if (r >= 0) r = slot[static_cast<size_t>(r)] | (wide[static_cast<size_t>(r)] ? kWideSlot : 0);
  };
  for (Instr& in : k.code) {
    rename(in.guard);
    for (Operand& o : in.ops) {
      if (o.kind == OpndKind::Reg || o.kind == OpndKind::Mem) rename(o.reg);
      for (int32_t& r : o.vec) rename(r);
    }
  }
  rename(k.carry_reg);
  k.reg_slots = static_cast<uint32_t>(slots[0]);
  k.wide_slots = static_cast<uint32_t>(slots[1]);
}

}  // namespace stc
