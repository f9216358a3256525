// func/opcode_table.h, func/opcodes.def: every core row is found by its name with the unit, decoder and
// preset the .def file gives it; a row's preset and unit agree (memory presets on the LD/ST unit, control
// presets on the branch unit, the SYNC unit's rows fence); the presets' default traits are the ones
// opcode_table.h documents; lookup is by whole dotted tokens, the longest prefix first, then a row with a
// marker; the decoders refine the unit by type.
#include <set>
#include <string>

#include "func/decode.h"
#include "func/opcode_table.h"
#include "ptx_kernel.h"
#include "unit_test.h"

using namespace stc;
using stc_test::find_pc;
using stc_test::listing;
using stc_test::parse_kernel;
using stc_test::PtxKernel;

namespace {

struct DefRow {
  const char* name;
  Op op;
  Unit unit;
  Decoder decoder;
  Preset preset;
};

const DefRow kDefRows[] = {
#define STC_OPCODE(name, id, unit, decoder, preset) {name, Op::id, Unit::unit, &decoder, Preset::preset},
#include "func/opcodes.def"
#undef STC_OPCODE
};

bool memory_preset(Preset p) {
  return p == Preset::LOAD || p == Preset::STORE || p == Preset::ATOMIC || p == Preset::REDUCE ||
         p == Preset::PREFETCH;
}

}  // namespace

TEST(opcode_every_def_row_is_found_as_written) {
  for (const DefRow& d : kDefRows) {
    for (const std::string& opcode : {std::string(d.name), std::string(d.name) + ".x.y"}) {
      const OpcodeRow* r = find_opcode_row(opcode);
      if (!CHECK(r != nullptr)) {
        std::printf("  opcode %s\n", opcode.c_str());
        continue;
      }
      const bool same = r->prefix == d.name && r->marker.empty() && r->op == d.op && r->unit == d.unit &&
                        r->decoder == d.decoder && r->preset == d.preset;
      if (!CHECK(same)) std::printf("  opcode %s resolved to row '%s'\n", opcode.c_str(), r->prefix.c_str());
    }
  }
}

TEST(opcode_def_rows_are_distinct) {
  std::set<std::string> names;
  std::set<int> ops;
  for (const DefRow& d : kDefRows) {
    CHECK(names.insert(d.name).second);
    CHECK(ops.insert(static_cast<int>(d.op)).second);
    CHECK(std::string(d.name).find('.') == std::string::npos);  // one base opcode per row
    CHECK(d.decoder != nullptr);
  }
  CHECK_EQ(ops.size() + 1, static_cast<size_t>(Op::Count));  // a row for every Op but Ext
}

TEST(opcode_unit_and_preset_agree) {
  for (const DefRow& d : kDefRows) {
    bool ok = d.unit != Unit::NONE;
    if (memory_preset(d.preset)) ok = ok && d.unit == Unit::LDST;                     // a memory access
    if (d.preset == Preset::BRANCH || d.preset == Preset::EXIT) ok = ok && d.unit == Unit::BRANCH;
    if (d.unit == Unit::SYNC) ok = ok && d.preset == Preset::FENCE_NODST;             // barriers, fences
    if (d.unit == Unit::BRANCH) ok = ok && (d.preset == Preset::BRANCH || d.preset == Preset::EXIT ||
                                            d.preset == Preset::FENCE_NODST);
    if (d.unit == Unit::TENSOR || d.unit == Unit::SFU || d.unit == Unit::FP32) ok = ok && d.preset == Preset::ALU;
    if (!CHECK(ok)) std::printf("  row %s: unit %s, preset %d\n", d.name, unit_name(d.unit), static_cast<int>(d.preset));
  }
}

TEST(opcode_preset_traits) {
  const Traits alu = preset_traits(Preset::ALU);
  CHECK(alu.mem == MemKind::None && alu.sched == SchedKind::Free && alu.writes_dst && !alu.branch);
  const Traits ld = preset_traits(Preset::LOAD);
  CHECK(ld.mem == MemKind::Load && ld.sched == SchedKind::Load && ld.writes_dst);
  const Traits st = preset_traits(Preset::STORE);
  CHECK(st.mem == MemKind::Store && st.sched == SchedKind::Ordered && !st.writes_dst);
  const Traits atom = preset_traits(Preset::ATOMIC);
  CHECK(atom.mem == MemKind::Atomic && atom.sched == SchedKind::Ordered && atom.writes_dst);
  const Traits red = preset_traits(Preset::REDUCE);
  CHECK(red.mem == MemKind::Atomic && red.sched == SchedKind::Ordered && !red.writes_dst);
  const Traits pf = preset_traits(Preset::PREFETCH);
  CHECK(pf.mem == MemKind::None && pf.sched == SchedKind::Ordered && !pf.writes_dst);
  const Traits br = preset_traits(Preset::BRANCH);
  CHECK(br.branch && br.sched == SchedKind::Fence && !br.writes_dst);
  for (Preset p : {Preset::EXIT, Preset::FENCE_NODST}) {
    const Traits t = preset_traits(p);
    CHECK(!t.branch && t.sched == SchedKind::Fence && !t.writes_dst && t.mem == MemKind::None);
  }
}

TEST(opcode_lookup_is_by_whole_tokens) {
  const auto prefix = [](const char* opcode) {
    const OpcodeRow* r = find_opcode_row(opcode);
    return r ? r->prefix : std::string("<none>");
  };
  CHECK_EQ(prefix("add.s32"), "add");
  CHECK_EQ(prefix("addc.cc.u32"), "addc");  // not "add": tokens, not characters
  CHECK_EQ(prefix("cvta.to.global.u64"), "cvta");
  CHECK_EQ(prefix("cvt.rn.f32.s32"), "cvt");
  CHECK_EQ(prefix("ldu.global.f32"), "ldu");
  CHECK_EQ(prefix("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), "ldmatrix");
  CHECK_EQ(prefix("bar.sync"), "bar");
  CHECK_EQ(prefix("barrier.sync"), "barrier");
  CHECK_EQ(prefix("cp.async.ca.shared.global"), "cp");
  CHECK_EQ(prefix("adds32"), "<none>");
  CHECK_EQ(prefix("frobnicate.u32"), "<none>");
  CHECK_EQ(prefix(""), "<none>");
}

TEST(opcode_longest_prefix_then_marker) {
  // Rows as an extension adds them (prefixes of their own: the core's rows stay as they are).
  add_opcode_rows({{"zzunit", "", Op::Ext, Unit::INT, nullptr, Preset::ALU},
                   {"zzunit.deep", "", Op::Ext, Unit::FP32, nullptr, Preset::ALU},
                   {"zzunit", "mark", Op::Ext, Unit::SFU, nullptr, Preset::ALU}});
  const auto unit = [](const char* opcode) {
    const OpcodeRow* r = find_opcode_row(opcode);
    return r ? r->unit : Unit::NONE;
  };
  CHECK_EQ(unit("zzunit.f32"), Unit::INT);
  CHECK_EQ(unit("zzunit.deep.f32"), Unit::FP32);    // the longer prefix
  CHECK_EQ(unit("zzunit.f32.mark"), Unit::SFU);     // same length: the row with a marker (anywhere after it)
  CHECK_EQ(unit("zzunit.mark.f32"), Unit::SFU);
  CHECK_EQ(unit("zzunit.deep.mark"), Unit::FP32);   // the longer prefix before the marker
  CHECK_EQ(unit("zzunit.marked"), Unit::INT);       // a marker is a whole token
  CHECK_EQ(unit("zzunitdeep"), Unit::NONE);
}

TEST(opcode_decoders_refine_the_unit_by_type) {
  PtxKernel pk = parse_kernel(R"(
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 1;
  add.f32 %f1, %f2, %f3;
  add.f64 %fd1, %fd2, %fd3;
  add.rn.f16 %h1, %h2, %h3;
  fma.rn.f32 %f4, %f1, %f2, %f3;
  rcp.approx.f32 %f5, %f4;
  ld.param.u64 %rd1, [a];
  ld.global.f32 %f6, [%rd1];
  st.global.f32 [%rd1], %f6;
  bar.sync 0;
  )");
  const Kernel& k = pk.kernel();
  const auto at = [&](const char* text) -> const Instr& {
    const int pc = find_pc(k, text);
    if (pc < 0) throw std::runtime_error(std::string("no instruction ") + text + listing(k));
    return k.code[static_cast<size_t>(pc)];
  };
  CHECK_EQ(at("add.s32").unit, Unit::INT);
  CHECK_EQ(at("add.f32").unit, Unit::FP32);
  CHECK_EQ(at("add.f64").unit, Unit::FP64);
  CHECK_EQ(at("add.rn.f16").unit, Unit::FP16);
  CHECK_EQ(at("fma.rn.f32").unit, Unit::FP32);
  CHECK_EQ(at("rcp.approx.f32").unit, Unit::SFU);
  const Instr& ld = at("ld.global");
  CHECK(ld.unit == Unit::LDST && ld.traits.mem == MemKind::Load && ld.traits.sched == SchedKind::Load);
  CHECK(ld.space == Space::Global && ld.dsts.size() == 1 && ld.srcs.size() == 1);
  const Instr& st = at("st.global");
  CHECK(st.traits.mem == MemKind::Store && st.dsts.empty() && st.srcs.size() == 2);
  CHECK_EQ(at("bar.sync").traits.sched, SchedKind::Fence);
  CHECK_EQ(Unit::INT, unit_for(DType::S32));
  CHECK_EQ(Unit::FP16, unit_for(DType::BF16x2));
}

TEST(opcode_ordered_loads_keep_memory_order) {
  // decode_instruction: "Loads with memory-ordering semantics keep their place among memory instructions"
  // (.volatile or .acquire: SchedKind::Ordered); a plain or .relaxed load may move (SchedKind::Load).
  PtxKernel pk = parse_kernel(R"(
  ld.param.u64 %rd1, [a];
  ld.global.f32 %f1, [%rd1];
  ld.volatile.global.f32 %f2, [%rd1];
  ld.acquire.gpu.global.f32 %f3, [%rd1];
  ld.relaxed.gpu.global.f32 %f4, [%rd1];
  )");
  const Kernel& k = pk.kernel();
  const auto sched = [&](const char* text) {
    const int pc = find_pc(k, text);
    return pc < 0 ? SchedKind::Fence : k.code[static_cast<size_t>(pc)].traits.sched;
  };
  CHECK_EQ(sched("ld.global.f32"), SchedKind::Load);
  CHECK_EQ(sched("ld.relaxed"), SchedKind::Load);
  CHECK_EQ(sched("ld.acquire"), SchedKind::Ordered);
  CHECK_EQ(sched("ld.volatile"), SchedKind::Ordered);
}
