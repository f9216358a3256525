// Timing classes (as gem5's OpClass/OpDesc, Accel-Sim's specialised units): an instruction's traits name
// the config group its latency and issue interval come from ("units.fp32", "tensor.mma_m16n8k16_f32",
// "stc.smma_k4", ...). Each class is declared once with the function that reads it from a config; the
// core declares its own classes (timing/op_class.cc), extensions add theirs from their folder.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../ptx/ir.h"

namespace stc {

class ConfigReader;
struct WorkSummary;

struct OpTiming {
  uint32_t latency = 1;   // cycles from issue until a dependent instruction may issue
  uint32_t interval = 1;  // cycles the sub-core's pipe is busy before it accepts the next instruction
};

// A data-dependent latency model: turns the work an instruction reports (its semantics fill a
// WorkSummary) into its timing.
using LatencyModel = std::function<OpTiming(const WorkSummary& work)>;

struct Stats;
// Adds an instruction's class-specific stats (an extension's counters) when it issues.
using Accounting = std::function<void(Stats& stats, const OpTiming& timing)>;

struct OpDesc {
  OpTiming timing;
  // The pipe the instruction occupies when it is not its unit's (shfl on the MIO / LD/ST pipe); empty: its
  // unit's.
  std::optional<Unit> pipe;
  LatencyModel model;  // empty: the fixed timing above
  Accounting account;  // empty: no class-specific stats
  // A class of bulk copies (instructions that report a BulkCopyWork): the rate its copy engine requests the
  // copy's global sectors at (MemorySystem::bulk_read); 0: the copies' reads are not timed through L2.
  double bulk_bytes_per_cycle = 0;
  OpTiming of(const WorkSummary& work) const { return model ? model(work) : timing; }
};

struct OpClassDef {
  std::string name;
  // Reads the class from a config; returns nullopt and sets `why_not` (e.g. "the GPU it models does not
  // have the instruction", "enable it with stc.enabled: true") when this config has no such timing.
  std::function<std::optional<OpDesc>(ConfigReader&, std::string& why_not)> read;
};

// Adds classes (called by extensions at static initialisation; see ext/extension.h).
void add_op_classes(const std::vector<OpClassDef>& defs);
const std::vector<OpClassDef>& op_classes();

// The class of an instruction (interned, ptx/ir.h): its traits' op_class, or its unit's default class.
OpClassId op_class_of(const Instr& in);

// A class read from `<group>.latency` and `<group>.issue_interval` where the config has them: for an
// extension's own groups, behind its `<name>.enabled` gate (the core's classes test a features.* key instead).
OpClassDef keyed_class(const std::string& group, const std::string& why_absent);

}  // namespace stc
