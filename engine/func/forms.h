// The forms each opcode accepts, as data: its instruction types and modifiers, and the target and PTX
// version they need. Every family decoder checks an instruction against its table before reading the
// modifiers' meaning, so that anything outside the table (an unknown or misplaced modifier, two rounding
// modes, a missing .rn, a type the opcode does not take) is refused at load time, as ptxas refuses it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../ptx/ir.h"

namespace stc {

// One accepted form of an opcode.
//   types: instruction type keys, space-separated. An opcode with two types (cvt, set, slct) writes them as
//          "dst.src". A class name stands for several types: "%b" (b16 b32 b64), "%u" (u16 u32 u64), "%s",
//          "%i" (%u and %s), "%i8" (%i and u8 s8), "%f" (f16 bf16 f32 f64); "-" is the form without a type.
//   mods:  modifier groups, space-separated: "ftz" (optional), "rn|rz|rm|rp" (at most one of them),
//          "!rn|rz" (exactly one of them). Types are not modifiers here.
//   sm, ptx: the minimum .target sm_XX and .version (times ten, 72 = 7.2) of the form; 0: any.
struct Form {
  const char* opcode;
  const char* types;
  const char* mods;
  uint16_t sm = 0;
  uint16_t ptx = 0;
};

// A table of forms; several opcodes may share one (a family's decoder passes its table).
struct FormTable {
  const Form* forms;
  size_t size;
};

template <size_t N>
constexpr FormTable form_table(const Form (&f)[N]) { return {f, N}; }

// The modifiers of `in.mods` split into instruction types (in order) and the other modifiers.
struct SplitMods {
  std::vector<DType> types;
  std::vector<std::string> mods;
};
SplitMods split_mods(const Instr& in);

// Checks `in` (its opcode base name, types and modifiers) against the forms of `table` for its opcode and
// against the kernel's .target / .version. Throws DecodeError naming what is wrong.
void check_form(const Instr& in, const Kernel& k, const FormTable& table);

// Checks `in` against the feature gates of ptx/feature_gates.def (the .target and .version each feature
// needs, one table for every opcode, extensions' included) and refuses a repeated sparsity qualifier.
// decode_instruction runs it after the family decoder accepted the instruction's form. Throws DecodeError naming the feature.
void check_feature_gates(const Instr& in, const Kernel& k);

}  // namespace stc
