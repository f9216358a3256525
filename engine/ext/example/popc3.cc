// The example extension: the smallest complete ISA extension, a template to copy (docs/architecture.md,
// "Adding an instruction"). `example.popc3.b32 d, a, b, c;` sets d = popc(a) + popc(b) + popc(c) on the INT
// unit, timed by its own class `example.popc3` (example.latency, example.issue_interval), enabled by
// example.enabled. It touches no core file.
#include "../../func/decode.h"
#include "../../func/exec.h"
#include "../extension.h"

namespace stc {
namespace {

void ex_popc3(ExecCtx& c, const Instr& in) {
  for_lanes(c.mask, [&](int lane) {
    uint32_t sum = 0;
    for (size_t i = 1; i < 4; ++i) sum += static_cast<uint32_t>(__builtin_popcount(static_cast<uint32_t>(src_bits(c, in.ops[i], lane))));
    set_reg(c, in.ops[0].reg, lane, sum);
  });
}

void decode(Instr& in, const Kernel&) {
  if (in.mods.size() != 2 || in.mods[1] != "b32") throw DecodeError("example.popc3 takes exactly .b32");
  need_ops(in, 4);
  for (size_t i = 0; i < 4; ++i)
    if (in.ops[i].kind != OpndKind::Reg || in.ops[i].reg < 0) throw DecodeError("example.popc3 operands are registers");
  in.unit = Unit::INT;
  in.traits.op_class = op_class_id("example.popc3");
  in.traits.sm_local = true;
  in.fn = &ex_popc3;
}

const int kRegistered = register_extension({
    "example", "example.enabled", "an overlay with example: {enabled: true}",
    {{"example.popc3", "", Op::Ext, Unit::INT, &decode, Preset::ALU}},
    {{"example.popc3", [](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
        OpDesc d;
        d.timing.latency = r.u32("example.latency");
        d.timing.interval = r.u32("example.issue_interval");
        return d;
      }}},
    {},
});

}  // namespace
}  // namespace stc
