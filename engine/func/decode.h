// Instruction decoding: modifiers -> fields of Instr, operand checks, unit class and semantic function.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "../ptx/ir.h"

namespace stc {

class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Decodes `in.opcode` (and checks `in.ops`) using the opcode table. Throws DecodeError.
void decode_instruction(Instr& in, const Kernel& k);

// Family decoders named in opcodes.def.
#define STC_OPCODE(name, id, unit, decoder, preset) void decoder(Instr& in, const Kernel& k);
#include "opcodes.def"
#undef STC_OPCODE

// ---- helpers for decoders -------------------------------------------------------------------------
// Splits modifiers: types go to `types`, known common modifiers (rounding, ftz, sat, spaces, vectors,
// comparison, boolean ops) set fields; the rest are returned in order for the family to interpret.
std::vector<std::string> common_mods(Instr& in, std::vector<DType>& types);
[[noreturn]] void unsupported(const Instr& in, const std::string& what);
void need_ops(const Instr& in, size_t n);
void need_ops(const Instr& in, size_t lo, size_t hi);
// Checks that operand `idx` is a {..} of `n` registers; `what` names it in the error.
void need_vec(const Instr& in, size_t idx, size_t n, const char* what);
// Converts the immediate operand to the bit pattern of `t` (integer literals to floats for float types).
void imm_as(Operand& o, DType t);
// Converts every immediate operand from index `first` on to type `t`.
void imms_as(Instr& in, DType t, size_t first = 1);
// Unit class of an arithmetic instruction of type t.
Unit unit_for(DType t);
const char* rnd_name(Rnd r);

}  // namespace stc
