// Operand checks shared by the family decoders: the kind of each operand (register, literal, address, ...)
// and whether a register's class and width, or a literal's kind, fit the type the instruction reads or
// writes there, by the type-checking rules of the PTX ISA (as ptxas applies them).
#pragma once

#include <cstdint>

#include "../ptx/ir.h"

namespace stc {

// The kinds of operand a position accepts (bit set).
enum OperandKinds : uint32_t {
  OK_REG = 1u << 0,   // a register
  OK_IMM = 1u << 1,   // a literal
  OK_VEC = 1u << 2,   // {a, b, ...}: registers (and, in sources, literals) of one width
  OK_SREG = 1u << 3,  // a special register (%tid.x, %laneid, ...): mov and cvt sources
  OK_SYM = 1u << 4,   // the name of a variable or parameter (its address): mov and cvta sources
  OK_NEG = 1u << 5,   // !%p: a negated predicate source
  OK_SINK = 1u << 6,  // the sink _ as the whole destination (atom, setp); elements of {..} may always be _
  OK_SRC = OK_REG | OK_IMM,
};

// How a register must fit the type. Exact: the same width (class rules of the ISA: .bN takes any register
// of N bits, .uN/.sN integer and bit registers, .fN float and bit registers). Relaxed (the data operands
// of ld, st and cvt): integer and bit registers may be wider than the type.
enum class Fit : uint8_t { Exact, Relaxed };

// Checks operand i of `in` (a destination when i == 0 and `dst`): an accepted kind whose registers and
// literals fit `type`. Throws DecodeError naming the operand and what it should be.
void check_operand(const Instr& in, const Kernel& k, size_t i, DType type, uint32_t kinds, Fit fit = Fit::Exact,
                   bool dst = false);

// Checks a register (index into k.regs; -1 is the sink) against `type`.
void check_register(const Instr& in, const Kernel& k, int32_t reg, DType type, Fit fit, bool dst);

// Checks the address operand i of a memory instruction of state space `space`: a base register of an
// integer or bit type (64 bits for global and generic addresses), or a variable of that space (generic:
// global, shared or local variables), or a literal address (local only).
void check_address(const Instr& in, const Kernel& k, size_t i, Space space);

// Whether the register type `reg` may hold an operand of instruction type `type`.
bool register_fits(DType reg, DType type, Fit fit);

}  // namespace stc
