// func/schedule.h: the ptxas-like passes. List scheduling inside basic blocks issues loads as early as their
// dependencies allow and keeps registers, memory order (stores/atomics with any access that may alias:
// same explicit space or generic), barriers, fences, clock reads, earlier Tensor Core instructions (for
// loads) and block boundaries; if-conversion guards the bodies of short forward branches; fold_constants
// marks the immediate movs into registers written once; mark_unused_results the atomics whose result
// nothing reads (not the shared-memory CAS loops); the counted loops ptxas unrolls are unrolled first.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "func/cfg.h"
#include "func/schedule.h"
#include "ptx_kernel.h"
#include "unit_test.h"

using namespace stc;
using stc_test::find_pc;
using stc_test::listing;
using stc_test::parse_kernel;
using stc_test::PtxKernel;
using stc_test::reg;

namespace {

// The pc of the instruction whose text starts with `prefix`; a failure (and -1) when there is none.
int pc_of(const Kernel& k, const std::string& prefix) {
  const int pc = find_pc(k, prefix);
  if (pc < 0) {
    CHECK(pc >= 0);
    std::printf("  no instruction '%s' in:%s\n", prefix.c_str(), listing(k).c_str());
  }
  return pc;
}

// `a` must come before `b` in the scheduled kernel.
#define CHECK_BEFORE(k, a, b)                                                                \
  do {                                                                                       \
    const int pa_ = pc_of(k, a), pb_ = pc_of(k, b);                                          \
    if (!CHECK_LT(pa_, pb_)) std::printf("  '%s' not before '%s' in:%s\n", a, b, listing(k).c_str()); \
  } while (0)

PtxKernel scheduled(const std::string& body) {
  PtxKernel pk = parse_kernel(body);
  schedule_loads_early(pk.kernel());
  return pk;
}

std::vector<std::string> sorted_texts(const Kernel& k) {
  std::vector<std::string> t;
  for (const Instr& in : k.code) t.push_back(in.text);
  std::sort(t.begin(), t.end());
  return t;
}

}  // namespace

TEST(schedule_hoists_a_load_above_independent_work) {
  PtxKernel pk = scheduled(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  mul.lo.s32 %r2, %r1, 3;
  add.s32 %r3, %r2, 7;
  ld.global.f32 %f1, [%rd1];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd1+4], %f2;
  cvt.rn.f32.s32 %f3, %r3;
  st.global.f32 [%rd1+8], %f3;
  )");
  const Kernel& k = pk.kernel();
  CHECK_BEFORE(k, "ld.param.u64 %rd1", "ld.global.f32 %f1");  // its address first
  CHECK_BEFORE(k, "ld.global.f32 %f1", "mov.u32 %r1");        // then the load, before the independent chain
  CHECK_BEFORE(k, "ld.global.f32 %f1", "mul.lo.s32");
  CHECK_BEFORE(k, "st.global.f32 [%rd1+4]", "st.global.f32 [%rd1+8]");  // stores keep their order
}

TEST(schedule_load_waits_for_its_address) {
  PtxKernel pk = scheduled(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r5, 3;
  add.s32 %r6, %r5, %r1;
  ld.global.f32 %f1, [%rd3];
  cvt.rn.f32.s32 %f2, %r6;
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd3], %f3;
  )");
  const Kernel& k = pk.kernel();
  CHECK_BEFORE(k, "mul.wide.u32 %rd2", "ld.global.f32 %f1");
  CHECK_BEFORE(k, "add.s64 %rd3", "ld.global.f32 %f1");
  CHECK_BEFORE(k, "ld.global.f32 %f1", "add.s32 %r6");  // the address arithmetic goes first, not the rest
}

TEST(schedule_load_stays_after_a_store_that_may_alias) {
  // A global load stays after a global store; it may pass a shared store (different explicit spaces
  // cannot overlap), a generic load may not.
  PtxKernel pk = scheduled(R"(
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  mov.u32 %r1, %tid.x;
  st.global.u32 [%rd2], %r1;
  st.shared.u32 [smem], %r1;
  ld.global.u32 %r4, [%rd1];
  add.s32 %r7, %r4, 1;
  st.shared.u32 [smem+4], %r7;
  )");
  const Kernel& k = pk.kernel();
  CHECK_BEFORE(k, "st.global.u32 [%rd2]", "ld.global.u32 %r4");
  CHECK_BEFORE(k, "ld.global.u32 %r4", "st.shared.u32 [smem],");
  const char* generic = R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  st.shared.u32 [smem], %r1;
  LOAD %r5, [%rd1];
  add.s32 %r6, %r5, 1;
  st.global.u32 [%rd1+8], %r6;
  )";
  for (const char* load : {"ld.u32", "ld.global.u32"}) {
    std::string body(generic);
    body.replace(body.find("LOAD"), 4, load);
    PtxKernel g = scheduled(body);
    if (std::string(load) == "ld.u32") {
      CHECK_BEFORE(g.kernel(), "st.shared.u32", "ld.u32 %r5");
    } else {
      CHECK_BEFORE(g.kernel(), "ld.global.u32 %r5", "st.shared.u32");
    }
  }
}

TEST(schedule_loads_pass_each_other_and_read_only_spaces) {
  // Loads are not ordered among themselves; param loads (read-only) pass a global store.
  PtxKernel pk = scheduled(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  st.global.u32 [%rd1], %r1;
  ld.param.u64 %rd2, [b];
  ld.shared.u32 %r2, [smem];
  ld.shared.u32 %r3, [smem+4];
  add.s32 %r4, %r2, %r3;
  mul.lo.s32 %r9, %r4, 3;
  ld.global.u32 %r5, [%rd2];
  add.s32 %r6, %r9, %r5;
  st.global.u32 [%rd2], %r6;
  )");
  const Kernel& k = pk.kernel();
  CHECK_BEFORE(k, "ld.param.u64 %rd2", "st.global.u32 [%rd1]");
  CHECK_BEFORE(k, "ld.shared.u32 %r2", "st.global.u32 [%rd1]");
  CHECK_BEFORE(k, "st.global.u32 [%rd1]", "ld.global.u32 %r5");
}

TEST(schedule_keeps_volatile_loads_in_place_among_memory_accesses) {
  // ld.volatile (relaxed.sys, which no compiler reorders) keeps its place among every memory access of a
  // writable space: it stays after a store and a load of other explicit spaces, and a later load of any
  // space stays after it. The same body with a plain load lets it move (the control case).
  const char* body = R"(
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  st.shared.u32 [smem], 7;
  ld.shared.u32 %r4, [smem+8];
  LOAD %r5, [%rd1];
  ld.shared.u32 %r6, [smem+16];
  ld.global.u32 %r7, [%rd2];
  add.s32 %r11, %r5, 1;
  add.s32 %r12, %r11, 2;
  add.s32 %r13, %r12, 3;
  add.s32 %r8, %r13, %r6;
  add.s32 %r9, %r8, %r7;
  add.s32 %r10, %r9, %r4;
  st.global.u32 [%rd2+4], %r10;
  )";
  for (const char* load : {"ld.volatile.global.u32", "ld.global.u32"}) {
    std::string text(body);
    text.replace(text.find("LOAD"), 4, load);
    PtxKernel pk = scheduled(text);
    const Kernel& k = pk.kernel();
    const std::string ld = std::string(load) + " %r5";
    if (std::string(load) == "ld.volatile.global.u32") {
      CHECK_EQ(k.code[static_cast<size_t>(pc_of(k, ld))].traits.sched, SchedKind::Ordered);
      CHECK_BEFORE(k, "st.shared.u32 [smem]", ld.c_str());  // an earlier store of another space
      CHECK_BEFORE(k, "ld.shared.u32 %r4", ld.c_str());     // an earlier load of another space
      CHECK_BEFORE(k, ld.c_str(), "ld.shared.u32 %r6");     // later loads, of any space
      CHECK_BEFORE(k, ld.c_str(), "ld.global.u32 %r7");
    } else {  // a plain global load (the longest chain hangs on it) passes the shared store and load
      CHECK_BEFORE(k, ld.c_str(), "st.shared.u32 [smem]");
      CHECK_BEFORE(k, ld.c_str(), "ld.shared.u32 %r4");
    }
  }
  // st.volatile: a later shared load stays after it, an earlier shared load stays before it.
  PtxKernel st = scheduled(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  ld.shared.u32 %r2, [smem];
  st.volatile.global.u32 [%rd1], %r1;
  ld.shared.u32 %r3, [smem+4];
  add.s32 %r4, %r2, %r3;
  st.global.u32 [%rd1+4], %r4;
  )");
  CHECK_BEFORE(st.kernel(), "ld.shared.u32 %r2", "st.volatile.global.u32");
  CHECK_BEFORE(st.kernel(), "st.volatile.global.u32", "ld.shared.u32 %r3");
}

TEST(schedule_keeps_barriers_and_clock_reads) {
  PtxKernel pk = scheduled(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 1;
  bar.sync 0;
  mul.lo.s32 %r3, %r1, 5;
  ld.shared.u32 %r4, [smem];
  mov.u32 %r5, %clock;
  ld.global.u32 %r6, [%rd1];
  add.s32 %r7, %r4, %r6;
  add.s32 %r8, %r7, %r5;
  add.s32 %r9, %r8, %r3;
  add.s32 %r10, %r9, %r2;
  st.global.u32 [%rd1], %r10;
  )");
  const Kernel& k = pk.kernel();
  CHECK_BEFORE(k, "add.s32 %r2", "bar.sync");
  CHECK_BEFORE(k, "bar.sync", "ld.shared.u32 %r4");
  CHECK_BEFORE(k, "mul.lo.s32 %r3", "mov.u32 %r5, %clock");
  CHECK_BEFORE(k, "mov.u32 %r5, %clock", "ld.global.u32 %r6");
}

TEST(schedule_load_stays_after_a_tensor_instruction) {
  PtxKernel pk = scheduled(R"(
  ld.param.u64 %rd1, [a];
  ld.shared.u32 %r1, [smem]; ld.shared.u32 %r2, [smem+4]; ld.shared.u32 %r3, [smem+8];
  ld.shared.u32 %r4, [smem+12]; ld.shared.u32 %r5, [smem+16]; ld.shared.u32 %r6, [smem+20];
  mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000; mov.f32 %f4, 0f00000000;
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f5, %f6, %f7, %f8}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};
  ld.global.f32 %f9, [%rd1];
  ld.shared.u32 %r7, [smem+64];
  add.f32 %f10, %f5, %f9;
  st.global.f32 [%rd1], %f10;
  st.global.u32 [%rd1+4], %r7;
  )");
  const Kernel& k = pk.kernel();
  CHECK_BEFORE(k, "mma.sync", "ld.global.f32 %f9");
  CHECK_BEFORE(k, "mma.sync", "ld.shared.u32 %r7");
}

TEST(schedule_does_not_move_across_blocks) {
  // The load after the label (a branch target) stays in its block; the branch over nine instructions is
  // too long to if-convert.
  PtxKernel pk = scheduled(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 5;
  @%p1 bra SKIP;
  add.s32 %r2, %r1, 1; add.s32 %r3, %r1, 2; add.s32 %r4, %r1, 3; add.s32 %r5, %r1, 4; add.s32 %r6, %r1, 5;
  add.s32 %r7, %r1, 6; add.s32 %r8, %r1, 7; add.s32 %r9, %r1, 8; st.global.u32 [%rd1], %r9;
SKIP:
  mul.lo.s32 %r10, %r1, 9;
  add.s32 %r11, %r10, 3;
  ld.global.u32 %r12, [%rd1+4];
  add.s32 %r13, %r12, %r11;
  st.global.u32 [%rd1+8], %r13;
  )");
  const Kernel& k = pk.kernel();
  const int bra = pc_of(k, "@%p1 bra"), label = k.labels.at("SKIP");
  CHECK_EQ(bra, 3);
  CHECK_EQ(label, 13);
  CHECK_EQ(k.code[static_cast<size_t>(bra)].target, label);
  CHECK_GE(pc_of(k, "ld.global.u32 %r12"), label);
  CHECK_EQ(pc_of(k, "ld.global.u32 %r12"), label);  // first in its block
  CHECK_LT(pc_of(k, "st.global.u32 [%rd1], %r9"), label);
}

TEST(schedule_keeps_every_register_dependency) {
  // A larger straight-line block: the result is a permutation of the input in which every pair of
  // instructions with a register dependency (read after write, write after read or write) keeps its order.
  const std::string body = R"(
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  mul.f32 %f2, %f1, 0f40000000;
  ld.global.f32 %f3, [%rd4+128];
  add.f32 %f4, %f2, %f3;
  add.s32 %r2, %r1, 32;
  mul.wide.u32 %rd6, %r2, 4;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.f32 %f5, [%rd7];
  add.f32 %f4, %f4, %f5;
  ld.shared.f32 %f6, [smem];
  mul.f32 %f7, %f6, %f4;
  add.s32 %r1, %r1, 7;
  cvt.rn.f32.u32 %f8, %r1;
  add.f32 %f9, %f7, %f8;
  st.global.f32 [%rd5], %f9;
  ld.global.f32 %f10, [%rd7+256];
  st.global.f32 [%rd5+4], %f10;
  )";
  PtxKernel orig = parse_kernel(body);
  PtxKernel pk = scheduled(body);
  const Kernel &a = orig.kernel(), &k = pk.kernel();
  CHECK(sorted_texts(a) == sorted_texts(k));
  std::map<std::string, int> where;
  for (size_t pc = 0; pc < k.code.size(); ++pc) where[k.code[pc].text] = static_cast<int>(pc);
  REQUIRE_EQ(where.size(), k.code.size());  // texts are unique here
  const auto meets = [](const std::vector<int32_t>& x, const std::vector<int32_t>& y) {
    return std::any_of(x.begin(), x.end(), [&](int32_t r) { return std::find(y.begin(), y.end(), r) != y.end(); });
  };
  int bad = 0;
  for (size_t i = 0; i < a.code.size(); ++i)
    for (size_t j = i + 1; j < a.code.size(); ++j) {
      const Instr &x = a.code[i], &y = a.code[j];
      if (!(meets(x.dsts, y.srcs) || meets(x.srcs, y.dsts) || meets(x.dsts, y.dsts))) continue;
      if (where[x.text] > where[y.text] && ++bad <= 3) {
        CHECK_LT(where[x.text], where[y.text]);
        std::printf("  '%s' moved after '%s'\n", x.text.c_str(), y.text.c_str());
      }
    }
  CHECK_EQ(bad, 0);
}

TEST(if_convert_guards_a_short_forward_branch) {
  PtxKernel pk = parse_kernel(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 5;
  @%p1 bra SKIP;
  add.s32 %r2, %r1, 1;
  st.global.u32 [%rd1], %r2;
SKIP:
  setp.gt.u32 %p2, %r1, 9;
  @!%p2 bra DONE;
  st.global.u32 [%rd1+4], %r1;
DONE:
  ret;
  )");
  Kernel& k = pk.kernel();
  if_convert(k);
  for (const Instr& in : k.code)
    if (!CHECK(in.op != Op::Bra)) std::printf("  kept: %s\n", in.text.c_str());
  const Instr& add = k.code[static_cast<size_t>(pc_of(k, "add.s32 %r2"))];
  CHECK_EQ(add.guard, reg(k, "%p1"));
  CHECK(add.guard_neg);  // runs where the branch was not taken
  CHECK(std::find(add.srcs.begin(), add.srcs.end(), reg(k, "%p1")) != add.srcs.end());  // reads its guard
  const Instr& st = k.code[static_cast<size_t>(pc_of(k, "st.global.u32 [%rd1+4]"))];
  CHECK_EQ(st.guard, reg(k, "%p2"));
  CHECK(!st.guard_neg);
  CHECK_EQ(k.labels.at("SKIP"), pc_of(k, "setp.gt.u32 %p2"));
  CHECK_EQ(k.labels.at("DONE"), pc_of(k, "ret"));
}

TEST(if_convert_leaves_what_ptxas_does_not_predicate) {
  // Not converted: a body of nine instructions, a body with a barrier, a body another branch enters, a
  // uniform branch, an unguarded branch.
  const char* cases[] = {
      R"(@%p1 bra L; add.s32 %r2, %r1, 1; add.s32 %r3, %r1, 2; add.s32 %r4, %r1, 3; add.s32 %r5, %r1, 4;
         add.s32 %r6, %r1, 5; add.s32 %r7, %r1, 6; add.s32 %r8, %r1, 7; add.s32 %r9, %r1, 8;
         st.global.u32 [%rd1], %r9;
       L: ret;)",
      R"(@%p1 bra L; add.s32 %r2, %r1, 1; bar.sync 0; st.global.u32 [%rd1], %r2;
       L: ret;)",
      R"(@%p2 bra M; @%p1 bra L; add.s32 %r2, %r1, 1; M: st.global.u32 [%rd1], %r2;
       L: ret;)",
      R"(@%p1 bra.uni L; add.s32 %r2, %r1, 1; st.global.u32 [%rd1], %r2;
       L: ret;)",
      R"(bra.uni L; add.s32 %r2, %r1, 1; st.global.u32 [%rd1], %r2;
       L: ret;)",
  };
  for (const char* body : cases) {
    PtxKernel pk = parse_kernel(std::string(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 5;
  setp.lt.u32 %p2, %r1, 3;
  )") + body);
    Kernel& k = pk.kernel();
    const int branches = static_cast<int>(std::count_if(k.code.begin(), k.code.end(), [](const Instr& in) { return in.op == Op::Bra; }));
    if_convert(k);
    const int after = static_cast<int>(std::count_if(k.code.begin(), k.code.end(), [](const Instr& in) { return in.op == Op::Bra; }));
    if (!CHECK_EQ(after, branches)) std::printf("  converted:%s\n", listing(k).c_str());
    CHECK_EQ(k.labels.at("L"), find_pc(k, "ret"));
  }
}

TEST(fold_constants_marks_immediates_written_once) {
  PtxKernel pk = parse_kernel(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 42;
  mov.u32 %r3, 7;
  add.s32 %r3, %r3, %r1;
  setp.lt.u32 %p1, %r1, 5;
  @%p1 mov.u32 %r4, 9;
  mov.u32 %r5, %r2;
  add.s32 %r6, %r2, %r3;
  add.s32 %r6, %r6, %r4;
  add.s32 %r6, %r6, %r5;
  st.global.u32 [%rd1], %r6;
  )");
  Kernel& k = pk.kernel();
  fold_constants(k);
  const auto folded = [&](const char* t) { return k.code[static_cast<size_t>(pc_of(k, t))].traits.folded; };
  CHECK(folded("mov.u32 %r2, 42"));
  CHECK(!folded("mov.u32 %r3, 7"));      // %r3 is written again
  CHECK(!folded("@%p1 mov.u32 %r4, 9"));  // guarded
  CHECK(!folded("mov.u32 %r5, %r2"));     // not an immediate
  CHECK(!folded("mov.u32 %r1, %tid.x"));
}

TEST(mark_unused_results_finds_red_like_atomics) {
  PtxKernel pk = parse_kernel(R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, %tid.x;
  atom.global.add.u32 %r2, [%rd1], 1;
  atom.global.add.u32 %r3, [%rd1+4], 1;
  atom.shared.add.f32 %f1, [smem], 0f3F800000;
  atom.shared.add.u32 %r4, [smem+8], 1;
  st.global.u32 [%rd1+8], %r3;
  )");
  Kernel& k = pk.kernel();
  mark_unused_results(k);
  const auto unused = [&](const char* t) { return k.code[static_cast<size_t>(pc_of(k, t))].traits.result_unused; };
  CHECK(unused("atom.global.add.u32 %r2"));
  CHECK(!unused("atom.global.add.u32 %r3"));  // read by the store
  CHECK(k.code[static_cast<size_t>(pc_of(k, "atom.shared.add.f32"))].traits.cas_loop);
  CHECK(!unused("atom.shared.add.f32"));      // a CAS loop the warp runs: not a RED
  CHECK(unused("atom.shared.add.u32 %r4"));
  CHECK(!unused("mov.u32 %r1"));
}

TEST(schedule_unrolls_counted_loops_first) {
  // A one-block counted loop (immediate step, bound in a register the loop does not write) is unrolled 4x
  // with the original kept for the remainder: five copies of its load; with `.pragma "nounroll"`, or a
  // register step, it stays one copy.
  const auto loop = [](const char* pragma, const char* step) {
    return std::string(R"(
  ld.param.u64 %rd1, [a];
  ld.param.u32 %r1, [n];
  mov.u32 %r4, 0;
  mov.u32 %r6, 1;
  mov.f32 %f1, 0f00000000;
LOOP:
  )") + pragma + R"(
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f2, [%rd3];
  add.f32 %f1, %f1, %f2;
  add.s32 %r4, %r4, )" + step + R"(;
  setp.lt.s32 %p2, %r4, %r1;
  @%p2 bra LOOP;
  st.global.f32 [%rd1], %f1;
  )";
  };
  const auto loads = [](const Kernel& k) {
    return std::count_if(k.code.begin(), k.code.end(), [](const Instr& in) { return in.text.rfind("ld.global", 0) == 0; });
  };
  const auto unrolled = [](const Kernel& k) {
    return std::count_if(k.code.begin(), k.code.end(), [](const Instr& in) { return in.unrolled; });
  };
  PtxKernel u = scheduled(loop("", "1"));
  CHECK_EQ(loads(u.kernel()), 5);
  CHECK_GT(unrolled(u.kernel()), 0);
  CHECK(std::any_of(u.kernel().code.begin(), u.kernel().code.end(), [](const Instr& in) { return in.traits.folded; }));
  PtxKernel n = scheduled(loop(".pragma \"nounroll\";", "1"));
  CHECK_EQ(loads(n.kernel()), 1);
  CHECK_EQ(unrolled(n.kernel()), 0);
  PtxKernel r = scheduled(loop("", "%r6"));
  CHECK_EQ(loads(r.kernel()), 1);
}

TEST(schedule_limits_hoisted_global_loads_to_the_register_estimate) {
  // In an unrolled body a global load is hoisted only while the values in flight fit the kernel's register
  // estimate (regs_per_thread - 2): with room, the four copies' loads all go before the first add; with
  // none, each load waits for its PTX place (after the previous copy's add).
  const std::string body = R"(
  ld.param.u64 %rd1, [a];
  ld.param.u32 %r1, [n];
  mov.u32 %r4, 0;
  mov.f32 %f1, 0f00000000;
LOOP:
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f2, [%rd3];
  add.f32 %f1, %f1, %f2;
  add.s32 %r4, %r4, 1;
  setp.lt.s32 %p2, %r4, %r1;
  @%p2 bra LOOP;
  st.global.f32 [%rd1], %f1;
  )";
  const auto loads_before_first_add = [&](uint32_t regs_per_thread) {
    PtxKernel pk = parse_kernel(body);
    pk.kernel().regs_per_thread = regs_per_thread;
    schedule_loads_early(pk.kernel());
    int loads = 0;
    for (const Instr& in : pk.kernel().code) {
      if (!in.unrolled) continue;
      if (in.op == Op::Add && in.type == DType::F32) return loads;
      loads += global_load(in);
    }
    return -1;
  };
  CHECK_EQ(loads_before_first_add(255), 4);
  CHECK_EQ(loads_before_first_add(3), 1);
}

// A loop of two copies global -> shared, not unrolled: the PTX-only schedule hoists both loads; ptxas's
// order from the SASS (SassFacts::loops) keeps each store before the next copy's load; an order the
// dependencies contradict, or one of other instructions, leaves the PTX-only schedule.
namespace {
const char* kCopyLoop = R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, smem;
  mov.u32 %r20, 0;
$L_loop:
  .pragma "nounroll";
  ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd1];
  st.shared.v4.u32 [%r1], {%r2, %r3, %r4, %r5};
  ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd1+512];
  st.shared.v4.u32 [%r1+512], {%r6, %r7, %r8, %r9};
  add.s64 %rd1, %rd1, 1024;
  add.u32 %r20, %r20, 1;
  setp.lt.u32 %p1, %r20, 8;
  @%p1 bra $L_loop;
  ret;)";

// The order of `body`'s global loads (G) and shared stores (S) once scheduled with ptxas's facts `sass`.
std::string scheduled_copies(const char* body, const SassFacts& sass) {
  PtxKernel pk = parse_kernel(body, "sm_90");
  pk.kernel().sass = sass;
  schedule_loads_early(pk.kernel());
  std::string order;
  for (const Instr& in : pk.kernel().code)
    order += in.text.rfind("ld.global", 0) == 0 ? "G" : in.text.rfind("st.shared", 0) == 0 ? "S" : "";
  return order;
}

std::string copy_order(const std::vector<std::string>& sass_loops, uint32_t copy_group = 0) {
  SassFacts sass;
  sass.loops = sass_loops;
  sass.copy_group = copy_group;
  return scheduled_copies(kCopyLoop, sass);
}
}  // namespace

TEST(schedule_keeps_a_loop_in_ptxas_order_from_the_sass) {
  CHECK_EQ(copy_order({}), std::string("GGSS"));
  CHECK_EQ(copy_order({"GSGS"}), std::string("GSGS"));
  CHECK_EQ(copy_order({"GGSS"}), std::string("GGSS"));
  CHECK_EQ(copy_order({"SGSG"}), std::string("GGSS"));    // a store before its load: not ptxas's
  CHECK_EQ(copy_order({"GGGSSS"}), std::string("GGSS"));  // another loop's instructions
  CHECK_EQ(copy_order({"H", "GSGS"}), std::string("GSGS"));  // matched to the next loop with its instructions
}

// The same copies as straight-line code (a loop's peeled iterations): the SASS's copy blocks outside its
// loops (SassFacts::copy_blocks) give their order; a loop order never applies to a block of no loop.
namespace {
const char* kCopyBlock = R"(
  ld.param.u64 %rd1, [a];
  mov.u32 %r1, smem;
  ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd1];
  st.shared.v4.u32 [%r1], {%r2, %r3, %r4, %r5};
  ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd1+512];
  st.shared.v4.u32 [%r1+512], {%r6, %r7, %r8, %r9};
  ret;)";

std::string copy_block_order(const std::vector<std::string>& copy_blocks, const std::vector<std::string>& loops = {}) {
  SassFacts sass;
  sass.copy_blocks = copy_blocks;
  sass.loops = loops;
  return scheduled_copies(kCopyBlock, sass);
}
}  // namespace

TEST(schedule_keeps_a_straight_line_copy_block_in_ptxas_order) {
  CHECK_EQ(copy_block_order({}), std::string("GGSS"));
  CHECK_EQ(copy_block_order({"GSGS"}), std::string("GSGS"));
  CHECK_EQ(copy_block_order({"GS", "GSGS"}), std::string("GSGS"));  // the next block with its copies
  CHECK_EQ(copy_block_order({"SGSG"}), std::string("GGSS"));         // a store before its load: not ptxas's
  CHECK_EQ(copy_block_order({}, {"GSGS"}), std::string("GGSS"));     // a loop's order: not for this block
}

TEST(schedule_groups_copies_by_the_copy_group) {
  CHECK_EQ(copy_order({}, 1), std::string("GSGS"));
  CHECK_EQ(copy_order({}, 2), std::string("GGSS"));
  CHECK_EQ(copy_order({"GGSS"}, 1), std::string("GGSS"));  // a matched loop takes ptxas's order instead
}

// ptxas's scoreboard in a matched loop (SassFacts::loop_waits): the third load issues after an FFMA that
// waited for the first two (`;;0.1;`: each LDG lists the loads first waited for since the LDG before it), so
// it waits for their registers (the fourth issues after the third, in order); without the waits, or with an
// unmatched loop order, no load reads another's register.
namespace {
const char* kGatherLoop = R"(
  ld.param.u64 %rd1, [a];
  mov.f32 %f1, 0f00000000;
  mov.f32 %f2, 0f00000000;
  mov.u32 %r20, 0;
$L_loop:
  .pragma "nounroll";
  ld.global.f32 %f3, [%rd1];
  ld.global.f32 %f4, [%rd1+4096];
  add.f32 %f1, %f1, %f3;
  add.f32 %f2, %f2, %f4;
  ld.global.f32 %f5, [%rd1+8192];
  ld.global.f32 %f6, [%rd1+12288];
  add.f32 %f1, %f1, %f5;
  add.f32 %f2, %f2, %f6;
  add.s64 %rd1, %rd1, 16384;
  add.u32 %r20, %r20, 1;
  setp.lt.u32 %p1, %r20, 8;
  @%p1 bra $L_loop;
  ret;)";

// Per global load of the loop, in code order: how many registers it reads that another load writes.
std::vector<int> waits_read(const std::vector<std::string>& loops, const std::vector<std::string>& waits) {
  PtxKernel pk = parse_kernel(kGatherLoop, "sm_90");
  pk.kernel().sass.loops = loops;
  pk.kernel().sass.loop_waits = waits;
  schedule_loads_early(pk.kernel());
  std::vector<int32_t> loaded;
  for (const Instr& in : pk.kernel().code)
    if (in.text.rfind("ld.global", 0) == 0) loaded.insert(loaded.end(), in.dsts.begin(), in.dsts.end());
  std::vector<int> out;
  for (const Instr& in : pk.kernel().code)
    if (in.text.rfind("ld.global", 0) == 0)
      out.push_back(static_cast<int>(std::count_if(in.srcs.begin(), in.srcs.end(), [&](int32_t r) {
        return std::find(loaded.begin(), loaded.end(), r) != loaded.end();
      })));
  return out;
}
}  // namespace

TEST(schedule_makes_loads_wait_as_the_sass_scoreboard_says) {
  CHECK(waits_read({"GGGG"}, {";;0.1;"}) == std::vector<int>({0, 0, 2, 0}));
  CHECK(waits_read({"GGGG"}, {";;;1"}) == std::vector<int>({0, 0, 0, 1}));
  CHECK(waits_read({"GGGG"}, {}) == std::vector<int>({0, 0, 0, 0}));          // no waits known
  CHECK(waits_read({"GGGGG"}, {";;0.1;;"}) == std::vector<int>({0, 0, 0, 0}));  // another loop's order
}

// Loads ptxas splits around an HMMA (wait_like_split_loads): in `GGGGGG H GG H` two of the B fragment's four
// LDGs follow the wmma.mma's first HMMA, so the B load waits for the mma's other operands (the A fragment's
// eight registers and the accumulators); all eight LDGs first (`GGGGGGGGHH`): it waits for nothing more.
namespace {
const char* kWmmaLoop = R"(
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  mov.u32 %r17, 16;
  mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000; mov.f32 %f4, 0f00000000;
  mov.f32 %f5, 0f00000000; mov.f32 %f6, 0f00000000; mov.f32 %f7, 0f00000000; mov.f32 %f8, 0f00000000;
  mov.u32 %r20, 0;
$L_loop:
  .pragma "nounroll";
  wmma.load.a.sync.aligned.col.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1], %r17;
  wmma.load.b.sync.aligned.col.m16n16k16.global.f16 {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}, [%rd2], %r17;
  wmma.mma.sync.aligned.col.col.m16n16k16.f32.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8},
      {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16},
      {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};
  add.s64 %rd1, %rd1, 512;
  add.s64 %rd2, %rd2, 32;
  add.u32 %r20, %r20, 1;
  setp.lt.u32 %p1, %r20, 8;
  @%p1 bra $L_loop;
  ret;)";

// The sources of the loop's wmma.load.b beyond its address and stride.
size_t split_load_extra_srcs(const std::vector<std::string>& loops) {
  PtxKernel pk = parse_kernel(kWmmaLoop, "sm_90");
  pk.kernel().sass.loops = loops;
  schedule_loads_early(pk.kernel());
  for (const Instr& in : pk.kernel().code)
    if (in.text.rfind("wmma.load.b", 0) == 0) return in.srcs.size() - 2;
  return 99;
}
}  // namespace

TEST(schedule_makes_a_load_split_around_an_hmma_wait_for_its_other_operands) {
  CHECK_EQ(split_load_extra_srcs({"GGGGGGGGHH"}), size_t{0});
  CHECK_EQ(split_load_extra_srcs({"GGGGGGHGGH"}), size_t{16});  // A's 8 registers, the 8 accumulators
  CHECK_EQ(split_load_extra_srcs({}), size_t{0});
}
