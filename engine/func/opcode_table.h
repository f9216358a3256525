// The opcode table: the core's rows (func/opcodes.def) plus the rows extensions add (engine/ext/<name>/).
// An opcode is looked up by its longest matching row: a row matches when its dotted `prefix` starts the
// opcode and, if it names a `marker`, that modifier appears anywhere in it. Longer prefixes win, then rows
// with a marker: `wmma.load.a....smma.k4.f16` goes to the row ("wmma", marker "smma") before ("wmma").
#pragma once

#include <string>
#include <vector>

#include "../ptx/ir.h"

namespace stc {

// Default traits of a row's instructions (the decoder refines them).
enum class Preset : uint8_t {
  ALU,          // writes operand 0, free to move
  LOAD,         // reads memory into operand 0
  STORE,        // writes memory, no destination
  ATOMIC,       // read-modify-write into operand 0
  REDUCE,       // read-modify-write, no destination
  PREFETCH,     // a memory hint: no destination, ordered with memory
  BRANCH,       // control transfer: no destination, the warp waits for it to resolve
  EXIT,         // ends threads: no destination
  FENCE_NODST,  // barriers, fences, traps: no destination, nothing moves across
};
Traits preset_traits(Preset p);

using Decoder = void (*)(Instr&, const Kernel&);

struct OpcodeRow {
  std::string prefix;  // dotted opcode prefix, e.g. "wmma" or "wmma.smma"
  std::string marker;  // a modifier that must appear in the opcode ("" = none)
  Op op = Op::Ext;
  Unit unit = Unit::NONE;
  Decoder decoder = nullptr;
  Preset preset = Preset::ALU;
};

// Adds rows to the table (called by extensions at static initialisation; see ext/extension.h).
void add_opcode_rows(const std::vector<OpcodeRow>& rows);

// The row an opcode resolves to, or nullptr.
const OpcodeRow* find_opcode_row(const std::string& opcode);

}  // namespace stc
