// func/regalloc.h: register compaction. Virtual registers go to as many slots as are live at once: a dead
// register's slot is reused; two registers share a slot only when neither is written while the other is
// live; the registers one instruction names get distinct slots, except that an unguarded mma's destinations
// may take the slots of sources that die there; registers of up to 32 bits and wider ones are coloured apart
// (kWideSlot); Instr::srcs/dsts keep the virtual registers.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "func/cfg.h"
#include "func/regalloc.h"
#include "ptx_kernel.h"
#include "unit_test.h"

using namespace stc;
using stc_test::find_pc;
using stc_test::parse_kernel;
using stc_test::PtxKernel;
using stc_test::reg;

namespace {

// Virtual register -> slot (kWideSlot | s for the 64-bit lanes), read off the operands of the kernel
// before and after compaction; -1 for a register no operand names. A register renamed to two different
// slots is a failure.
std::vector<int32_t> slot_map(const Kernel& before, const Kernel& after) {
  std::vector<int32_t> slot(before.regs.size(), -1);
  const auto map = [&](int32_t v, int32_t s) {
    if (v < 0) return;
    int32_t& m = slot[static_cast<size_t>(v)];
    if (m >= 0 && m != s) CHECK_EQ(m, s);  // one slot per register
    m = s;
  };
  REQUIRE_EQ(before.code.size(), after.code.size());
  for (size_t pc = 0; pc < before.code.size(); ++pc) {
    const Instr &a = before.code[pc], &b = after.code[pc];
    map(a.guard, b.guard);
    REQUIRE_EQ(a.ops.size(), b.ops.size());
    for (size_t i = 0; i < a.ops.size(); ++i) {
      if (a.ops[i].kind == OpndKind::Reg || a.ops[i].kind == OpndKind::Mem) map(a.ops[i].reg, b.ops[i].reg);
      for (size_t e = 0; e < a.ops[i].vec.size(); ++e) map(a.ops[i].vec[e], b.ops[i].vec[e]);
    }
  }
  return slot;
}

bool wide(const Kernel& k, int32_t r) { return dtype_bytes(k.regs[static_cast<size_t>(r)].type) > 4; }

// The documented interference, checked on the result: a register written at a pc holds a slot no other
// register live after that pc holds, and the registers one instruction names hold distinct slots (`in_place`:
// unless one is only a source and the other only a destination of an unguarded mma).
void check_interference(const Kernel& before, const std::vector<int32_t>& slot) {
  const size_t words = (before.regs.size() + 63) / 64;
  const std::vector<uint64_t> live_in = live_in_sets(
      before, [](const Instr& in, int32_t) { return in.op == Op::Ext || in.traits.async_group; },
      [](const Instr& in, int32_t) { return in.guard < 0 && in.op != Op::Ext && !in.traits.async_group; });
  std::vector<int> succ;
  int bad = 0;
  for (size_t pc = 0; pc < before.code.size(); ++pc) {
    const Instr& in = before.code[pc];
    successors(before, static_cast<int>(pc), succ);
    for (int32_t d : in.dsts)
      for (size_t r = 0; r < before.regs.size(); ++r) {
        bool live = false;
        for (int s : succ) live = live || ((live_in[static_cast<size_t>(s) * words + r / 64] >> (r % 64)) & 1);
        if (live && static_cast<int32_t>(r) != d && slot[r] >= 0 && slot[r] == slot[static_cast<size_t>(d)] &&
            ++bad <= 3) {
          CHECK_NE(slot[r], slot[static_cast<size_t>(d)]);
          std::printf("  %s written at pc %zu (%s) while %s is live\n", before.regs[static_cast<size_t>(d)].name.c_str(),
                      pc, in.text.c_str(), before.regs[r].name.c_str());
        }
      }
    const bool in_place = in.guard < 0 && in.traits.tensor_math && (in.op == Op::Mma || in.op == Op::Wmma);
    std::vector<int32_t> named(in.srcs);
    named.insert(named.end(), in.dsts.begin(), in.dsts.end());
    const auto has = [](const std::vector<int32_t>& v, int32_t r) { return std::find(v.begin(), v.end(), r) != v.end(); };
    for (size_t i = 0; i < named.size(); ++i)
      for (size_t j = i + 1; j < named.size(); ++j) {
        const int32_t a = named[i], b = named[j];
        if (a == b) continue;
        const bool src_dst = (has(in.srcs, a) && !has(in.dsts, a) && has(in.dsts, b) && !has(in.srcs, b)) ||
                             (has(in.srcs, b) && !has(in.dsts, b) && has(in.dsts, a) && !has(in.srcs, a));
        if (in_place && src_dst) continue;
        if (slot[static_cast<size_t>(a)] == slot[static_cast<size_t>(b)] && ++bad <= 3) {
          CHECK_NE(slot[static_cast<size_t>(a)], slot[static_cast<size_t>(b)]);
          std::printf("  %s and %s share a slot in %s\n", before.regs[static_cast<size_t>(a)].name.c_str(),
                      before.regs[static_cast<size_t>(b)].name.c_str(), in.text.c_str());
        }
      }
  }
  CHECK_EQ(bad, 0);
}

// Parses, compacts and returns the slot of every register (checking one slot per register, the class of
// each slot and the interference).
struct Compacted {
  PtxKernel pk;
  Kernel before;
  std::vector<int32_t> slot;
  int32_t of(const char* name) const {
    const int32_t r = reg(before, name);
    return r < 0 ? -2 : slot[static_cast<size_t>(r)];
  }
};

Compacted compact(const std::string& body) {
  Compacted c{parse_kernel(body), Kernel{}, {}};
  c.before = c.pk.kernel();
  compact_registers(c.pk.kernel());
  const Kernel& k = c.pk.kernel();
  CHECK(k.regs_compacted);
  c.slot = slot_map(c.before, k);
  for (size_t r = 0; r < c.slot.size(); ++r) {
    if (c.slot[r] < 0) continue;
    const bool w = (c.slot[r] & kWideSlot) != 0;
    CHECK_EQ(w, wide(c.before, static_cast<int32_t>(r)));  // the class of its width
    CHECK_LT(static_cast<uint32_t>(c.slot[r] & ~kWideSlot), w ? k.wide_slots : k.reg_slots);
  }
  check_interference(c.before, c.slot);
  // srcs / dsts keep the virtual registers
  for (size_t pc = 0; pc < k.code.size(); ++pc) {
    CHECK(k.code[pc].srcs == c.before.code[pc].srcs);
    CHECK(k.code[pc].dsts == c.before.code[pc].dsts);
  }
  return c;
}

}  // namespace

TEST(regalloc_reuses_the_slots_of_dead_registers) {
  // A chain: each value dies where the next is made, so two 32-bit slots hold all five (an instruction's
  // source and destination never share one).
  const Compacted c = compact(R"(
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 1;
  add.s32 %r3, %r2, 1;
  add.s32 %r4, %r3, 1;
  add.s32 %r5, %r4, 1;
  ld.param.u64 %rd1, [a];
  st.global.u32 [%rd1], %r5;
  )");
  CHECK_EQ(c.pk.module->kernels[0]->reg_slots, 2u);
  CHECK_EQ(c.pk.module->kernels[0]->wide_slots, 1u);
  CHECK_EQ(c.of("%r3"), c.of("%r1"));
  CHECK_EQ(c.of("%r5"), c.of("%r1"));
  CHECK_EQ(c.of("%r4"), c.of("%r2"));
  CHECK_NE(c.of("%r1"), c.of("%r2"));
  CHECK_EQ(c.of("%rd1"), kWideSlot | 0);
}

TEST(regalloc_live_registers_keep_their_own_slots) {
  // Four values live at once, then summed: none shares a slot while live, and %r5 (made from %r1 and %r2
  // while %r3 and %r4 live) takes a fifth: a destination never shares a slot with its own sources.
  const Compacted c = compact(R"(
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 2;
  add.s32 %r3, %r1, 3;
  add.s32 %r4, %r1, 4;
  add.s32 %r5, %r1, %r2;
  add.s32 %r6, %r3, %r4;
  add.s32 %r7, %r5, %r6;
  ld.param.u64 %rd1, [a];
  st.global.u32 [%rd1], %r7;
  )");
  const std::vector<int32_t> at_once = {c.of("%r1"), c.of("%r2"), c.of("%r3"), c.of("%r4")};
  for (size_t i = 0; i < at_once.size(); ++i)
    for (size_t j = i + 1; j < at_once.size(); ++j) CHECK_NE(at_once[i], at_once[j]);
  CHECK_EQ(c.pk.module->kernels[0]->reg_slots, 5u);
  CHECK_EQ(c.of("%r6"), c.of("%r1"));  // the dead ones' slots come back
  CHECK_EQ(c.of("%r7"), c.of("%r2"));
}

TEST(regalloc_classes_are_coloured_apart) {
  // 64-bit registers (b64, f64) on the 64-bit lanes, 32-bit, 16-bit and predicate registers on the 32-bit
  // ones; slot numbers of the two classes count from 0 each.
  const Compacted c = compact(R"(
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u32 %r1, [n];
  cvt.rn.f64.u32 %fd1, %r1;
  cvt.u16.u32 %h1, %r1;
  setp.eq.u32 %p1, %r1, 0;
  st.global.f64 [%rd1], %fd1;
  st.global.u16 [%rd2], %h1;
  selp.u32 %r2, 1, 2, %p1;
  st.global.u32 [%rd2+4], %r2;
  )");
  for (const char* w : {"%rd1", "%rd2", "%fd1"}) CHECK((c.of(w) & kWideSlot) != 0);
  for (const char* n : {"%r1", "%h1", "%p1", "%r2"}) CHECK(c.of(n) >= 0 && (c.of(n) & kWideSlot) == 0);
  CHECK_EQ(c.pk.module->kernels[0]->wide_slots, 3u);  // rd1, rd2 and fd1 are live together
}

TEST(regalloc_guarded_write_does_not_end_a_life) {
  // %r3 is written only under a guard: its other lanes keep the value from the start (zero), so it is live
  // from the kernel's start and shares no slot with the temporaries before its write.
  const Compacted c = compact(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 5;
  st.global.u32 [%rd1], %r2;
  setp.lt.u32 %p1, %r1, 8;
  @%p1 mov.u32 %r3, 77;
  st.global.u32 [%rd1+4], %r3;
  )");
  for (const char* other : {"%r1", "%r2", "%p1"}) CHECK_NE(c.of("%r3"), c.of(other));
}

TEST(regalloc_loop_carried_registers_survive_the_loop) {
  // The accumulator and the counter live around the back-edge: the loop body's temporaries may share
  // slots with each other but not with them.
  const Compacted c = compact(R"(
  ld.param.u64 %rd1, [a];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, 0;
  mov.u32 %r10, 0;
LOOP:
  add.u32 %r4, %r2, %r10;
  mul.lo.u32 %r5, %r4, 3;
  xor.b32 %r6, %r5, %r10;
  add.u32 %r3, %r3, %r6;
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p1, %r10, %r1;
  @%p1 bra LOOP;
  st.global.u32 [%rd1], %r3;
  )");
  for (const char* t : {"%r4", "%r5", "%r6"})
    for (const char* l : {"%r1", "%r2", "%r3", "%r10"}) CHECK_NE(c.of(t), c.of(l));
  CHECK_EQ(c.of("%r6"), c.of("%r4"));  // %r4 dies where %r5 is made, %r5 where %r6 is
}

TEST(regalloc_mma_accumulates_in_place) {
  // An unguarded mma's D takes the slots of the C that dies there (ptxas's accumulators in place); under a
  // guard it may not (lanes that skip it keep D's old value).
  const char* body = R"(
  mov.b32 %r1, 0; mov.b32 %r2, 0; mov.b32 %r3, 0; mov.b32 %r4, 0; mov.b32 %r5, 0; mov.b32 %r6, 0;
  mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000; mov.f32 %f4, 0f00000000;
  setp.eq.u32 %p1, %r1, 0;
  GUARD mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f5, %f6, %f7, %f8}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};
  ld.param.u64 %rd1, [a];
  st.global.v4.f32 [%rd1], {%f5, %f6, %f7, %f8};
  )";
  std::string plain(body), guarded(body);
  plain.replace(plain.find("GUARD"), 5, "");
  guarded.replace(guarded.find("GUARD"), 5, "@%p1");
  const Compacted c = compact(plain);
  for (int e = 0; e < 4; ++e) {
    const std::string d = "%f" + std::to_string(5 + e), s = "%f" + std::to_string(1 + e);
    CHECK_EQ(c.of(d.c_str()), c.of(s.c_str()));
  }
  const Compacted g = compact(guarded);
  for (int e = 0; e < 4; ++e)
    for (int f = 0; f < 4; ++f) {
      const std::string d = "%f" + std::to_string(5 + e), s = "%f" + std::to_string(1 + f);
      CHECK_NE(g.of(d.c_str()), g.of(s.c_str()));
    }
}

TEST(regalloc_runs_once) {
  PtxKernel pk = parse_kernel(R"(
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 1;
  ld.param.u64 %rd1, [a];
  st.global.u32 [%rd1], %r2;
  )");
  Kernel& k = pk.kernel();
  compact_registers(k);
  const Kernel once = k;
  compact_registers(k);  // already compacted: the operands name slots now, nothing is renamed again
  for (size_t pc = 0; pc < k.code.size(); ++pc)
    for (size_t i = 0; i < k.code[pc].ops.size(); ++i) CHECK_EQ(k.code[pc].ops[i].reg, once.code[pc].ops[i].reg);
  CHECK_EQ(k.reg_slots, once.reg_slots);
}
