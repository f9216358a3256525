// ISA extensions: one folder per extension (engine/ext/<name>/), registered at static initialisation.
// An extension declares its opcodes (rows of the opcode table, with their decoders and semantic functions),
// its timing classes (each read from its own config group; a latency model may turn the work the semantics
// report into latency and interval), and its stats. It is enabled by one config key: on a config where
// that key is absent or false, its timing classes are missing and a kernel using its instructions is
// refused at launch with a LaunchError naming the key (functional-only launches run it regardless).
// Adding an extension touches no core file: see docs/architecture.md, "Adding an instruction".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../func/state.h"

#include "../func/opcode_table.h"
#include "../timing/config.h"
#include "../stats.h"
#include "../timing/op_class.h"

namespace stc {

struct Extension {
  std::string name;         // the folder name, e.g. "stc"
  std::string enable_key;   // config key that enables it, e.g. "stc.enabled"
  std::string hint;         // how to enable it, e.g. "use an overlay such as v100+stc"
  std::vector<OpcodeRow> opcodes;
  // Timing classes; a class named like a core class replaces it where the extension is enabled and the
  // class's reader returns a timing (e.g. the ping-pong buffer's dense wmma timing).
  std::vector<OpClassDef> op_classes;
  std::vector<StatDef> stats;
};

// Adds the extension's rows to the opcode table, class registry and stats registry; returns a token for
// a static initialiser: `const int kRegistered = register_extension(...)`.
int register_extension(const Extension& ext);

// A slot for an extension's per-CTA state (call once, at static initialisation).
size_t new_cta_state_slot();

// The extension's state of `cta` in `slot`, created empty on first use (CtaState::ext is cleared with
// every new CTA).
template <class S>
S& cta_state(CtaState& cta, size_t slot) {
  if (cta.ext.size() <= slot) cta.ext.resize(slot + 1);
  if (!cta.ext[slot]) cta.ext[slot] = std::make_unique<S>();
  return static_cast<S&>(*cta.ext[slot]);
}

}  // namespace stc
