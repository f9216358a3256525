// The core's timing classes: one per execution unit (units.<name>), one per Tensor Core instruction shape,
// and cp.async. Extensions add theirs (ext/extension.h).
#include "op_class.h"

#include "config.h"

namespace stc {

namespace {

const char* kNotOnGpu = "the GPU it models does not have the instruction";

// The unit classes: latency and issue interval of units.<name>; ldst has no latency of its own (the memory
// system gives it); sync (bar, fences) and none issue in one cycle by definition.
OpClassDef unit_class(const std::string& name, bool has_latency) {
  return {"units." + name, [name, has_latency](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
            OpDesc d;
            d.timing.latency = has_latency ? r.u32("units." + name + ".latency") : 1;
            d.timing.interval = r.u32("units." + name + ".issue_interval");
            return d;
          }};
}

// shfl.sync: where the config measures it (units.shfl.latency > 0) its own latency and issue interval on the
// MIO (LD/ST) pipe, whose issue slots it shares with loads and stores on silicon; else the INT unit's (the
// model before the measurement, for GPUs not measured).
std::function<std::optional<OpDesc>(ConfigReader&, std::string&)> shfl_class() {
  return [](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
    OpDesc d;
    const uint32_t latency = r.u32("units.shfl.latency"), interval = r.u32("units.shfl.issue_interval");
    if (latency > 0) {
      d.timing = {latency, interval};
      d.pipe = Unit::LDST;
    } else {
      d.timing = {r.u32("units.int.latency"), r.u32("units.int.issue_interval")};
    }
    return d;
  };
}

// 32-bit integer div / rem (units.int_div): ptxas's sequence through the MUFU, on the SFU pipe, with the
// latency measured for a dependent chain where the config has one (> 0), else the SFU's (the model before the
// measurement, for GPUs not measured).
OpClassDef int_div_class(const std::string& name, const std::string& key) {
  return {name, [key](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
            OpDesc d;
            const uint32_t latency = r.u32(key);
            d.timing = {latency > 0 ? latency : r.u32("units.sfu.latency"), r.u32("units.sfu.issue_interval")};
            return d;
          }};
}

// A Tensor Core shape: its latency and issue interval under `group`, where the feature key says the GPU has it.
OpClassDef feature_class(const std::string& group, const std::string& feature) {
  return {group, [group, feature](ConfigReader& r, std::string& why) -> std::optional<OpDesc> {
            if (!r.flag(feature)) {
              why = std::string(kNotOnGpu) + " (" + feature + " is false: no " + group + " timing)";
              return std::nullopt;
            }
            OpDesc d;
            d.timing.latency = r.u32(group + ".latency");
            d.timing.interval = r.u32(group + ".issue_interval");
            return d;
          }};
}

OpClassDef fixed_class(const std::string& name) {
  return {name, [](ConfigReader&, std::string&) -> std::optional<OpDesc> { return OpDesc{}; }};
}

std::vector<OpClassDef>& registry() {
  static std::vector<OpClassDef> defs = {
      unit_class("int", true), unit_class("fp32", true), unit_class("fp16", true), unit_class("fp64", true),
      unit_class("sfu", true), unit_class("branch", true), unit_class("ldst", false),
      fixed_class("units.sync"), fixed_class("units.none"), {"units.shfl", shfl_class()},
      int_div_class("units.int_div", "units.int_div.div_latency"),
      int_div_class("units.int_rem", "units.int_div.rem_latency"),
      // wmma.mma: latency derived by stcsim.config (sets x (fetch + compute)), issue interval declared.
      // The Tensor Core shapes and cp.async exist where the config's feature key says so (features.*, derived
      // from gpu.sm_version by stcsim.config).
      feature_class("tensor.wmma_m16n16k16_f32", "features.wmma"),
      feature_class("tensor.wmma_m16n16k16_f16", "features.wmma"),
      feature_class("tensor.mma_m16n8k8_f32", "features.mma_m16n8k8"),
      feature_class("tensor.mma_m16n8k16_f32", "features.mma_m16n8k16"),
      feature_class("tensor.mma_sp_m16n8k32_f32", "features.mma_sp"),
      // cp.async: issues on the LD/ST pipe (sm_80+).
      {"cp_async", [](ConfigReader& r, std::string& why) -> std::optional<OpDesc> {
         if (!r.flag("features.cp_async")) { why = std::string(kNotOnGpu) + " (features.cp_async is false)"; return std::nullopt; }
         OpDesc d;
         d.timing.interval = r.u32("units.ldst.issue_interval");
         return d;
       }},
  };
  return defs;
}

const char* unit_key(Unit u) {
  static const char* k[] = {"units.int", "units.fp32", "units.fp16", "units.fp64", "units.sfu",
                            "units.tensor", "units.ldst", "units.branch", "units.sync", "units.none"};
  return k[static_cast<size_t>(u)];
}

}  // namespace

OpClassDef keyed_class(const std::string& group, const std::string& why_absent) {
  return {group, [group, why_absent](ConfigReader& r, std::string& why) -> std::optional<OpDesc> {
            if (!r.has(group + ".latency")) { why = why_absent + " (" + group + ")"; return std::nullopt; }
            OpDesc d;
            d.timing.latency = r.u32(group + ".latency");
            d.timing.interval = r.u32(group + ".issue_interval");
            return d;
          }};
}

void add_op_classes(const std::vector<OpClassDef>& defs) { registry().insert(registry().end(), defs.begin(), defs.end()); }

const std::vector<OpClassDef>& op_classes() { return registry(); }

OpClassId op_class_of(const Instr& in) {
  static const std::vector<OpClassId> by_unit = [] {
    std::vector<OpClassId> v;
    for (size_t u = 0; u <= static_cast<size_t>(Unit::NONE); ++u) v.push_back(op_class_id(unit_key(static_cast<Unit>(u))));
    return v;
  }();
  return in.traits.op_class == kUnitClass ? by_unit[static_cast<size_t>(in.unit)] : in.traits.op_class;
}

}  // namespace stc
