// Operand checks shared by the family decoders (operands.h).
#include "operands.h"

#include <string>

#include "decode.h"

namespace stc {
namespace {

enum class Cls : uint8_t { Pred, Bit, Int, Float };

Cls class_of(DType t) {
  switch (t) {
    case DType::Pred: return Cls::Pred;
    case DType::B8: case DType::B16: case DType::B32: case DType::B64: case DType::B128: return Cls::Bit;
    case DType::F16: case DType::BF16: case DType::F16x2: case DType::BF16x2: case DType::F32: case DType::F64:
    case DType::TF32:
      return Cls::Float;
    default: return Cls::Int;
  }
}

std::string where(const Instr& in, size_t i) { return "operand " + std::to_string(i + 1) + " of '" + in.opcode + "'"; }

[[noreturn]] void bad(const Instr& in, size_t i, const std::string& what) { throw DecodeError(where(in, i) + " " + what); }

// Whether a literal of kind `kind` may stand for a value of `type` (ptxas: integer literals for bit and
// integer types, float literals for f32 / f64, 0fXXXXXXXX also for .b32 and 0dXXXXXXXXXXXXXXXX for .b64;
// no literal for f16 / bf16 and packed types).
bool literal_fits(ImmKind kind, DType type) {
  const Cls c = class_of(type);
  if (type == DType::F16 || type == DType::BF16 || type == DType::F16x2 || type == DType::BF16x2 || type == DType::TF32)
    return false;
  switch (kind) {
    case ImmKind::Int: return c != Cls::Float;
    case ImmKind::Real: return type == DType::F32 || type == DType::F64;
    case ImmKind::F32Bits: return type == DType::F32 || type == DType::F64 || type == DType::B32;
    case ImmKind::F64Bits: return type == DType::F32 || type == DType::F64 || type == DType::B64;
  }
  return false;
}

// Width in bytes of a special register (the vector ones, %tid ..., also read as 16 bits: their old form).
int sreg_bytes(SReg s) {
  switch (s) {
    case SReg::Gridid: case SReg::Clock64: case SReg::Globaltimer: return 8;
    default: return 4;
  }
}
bool sreg_is_vector(SReg s) { return s == SReg::Tid || s == SReg::Ntid || s == SReg::Ctaid || s == SReg::Nctaid; }

}  // namespace

bool register_fits(DType reg, DType type, Fit fit) {
  const Cls rc = class_of(reg), tc = class_of(type);
  if (rc == Cls::Pred || tc == Cls::Pred) return rc == tc;
  if (tc == Cls::Float && rc == Cls::Float) return reg == type;  // a float register holds its own type only
  if (tc == Cls::Float && rc == Cls::Int) return false;
  if (tc == Cls::Int && rc == Cls::Float && reg != DType::F16x2) return false;  // ptxas reads .f16x2 as bits
  const int rb = dtype_bytes(reg), tb = dtype_bytes(type);
  return fit == Fit::Exact ? rb == tb : rb >= tb;
}

void check_register(const Instr& in, const Kernel& k, int32_t reg, DType type, Fit fit, bool dst) {
  if (reg < 0) {
    if (!dst) throw DecodeError("the sink _ is not a source in '" + in.opcode + "'");
    return;
  }
  const RegInfo& r = k.regs[static_cast<size_t>(reg)];
  if (!register_fits(r.type, type, fit))
    throw DecodeError("register " + r.name + " (." + dtype_name(r.type) + ") does not fit ." + dtype_name(type) +
                      " in '" + in.opcode + "'");
}

void check_operand(const Instr& in, const Kernel& k, size_t i, DType type, uint32_t kinds, Fit fit, bool dst) {
  const Operand& o = in.ops[i];
  switch (o.kind) {
    case OpndKind::Reg:
      if (o.negate) {
        if (!(kinds & OK_NEG) || type != DType::Pred) bad(in, i, "cannot be a negated predicate");
      } else if (!(kinds & OK_REG)) {
        bad(in, i, "cannot be a register");
      }
      if (o.reg < 0 && dst && !(kinds & OK_SINK)) bad(in, i, "cannot be the sink _ (the result must be kept)");
      check_register(in, k, o.reg, type, fit, dst);
      return;
    case OpndKind::Imm:
      if (!(kinds & OK_IMM)) bad(in, i, dst ? "must be a register (the result)" : "cannot be a literal");
      if (!literal_fits(o.imm_kind, type)) bad(in, i, std::string("is a literal that does not fit .") + dtype_name(type));
      return;
    case OpndKind::Vec: {
      if (!(kinds & OK_VEC)) bad(in, i, "cannot be a vector {..}");
      int width = 0;
      for (size_t e = 0; e < o.vec.size(); ++e) {
        const int32_t r = o.vec[e];
        if (r == -2) {  // a literal element
          if (dst) bad(in, i, "holds a literal in a destination");
          continue;
        }
        if (r < 0 && !dst)  // ptxas accepts it in mov's pack (the element's value is undefined); the engine not
          bad(in, i, "has the sink _ as a source element: not supported (an element of undefined value)");
        check_register(in, k, r, type, fit, dst);
        if (r < 0) continue;
        const int w = dtype_bytes(k.regs[static_cast<size_t>(r)].type);
        if (width && w != width) bad(in, i, "mixes registers of different widths");
        width = w;
      }
      return;
    }
    case OpndKind::Special:
      if (!(kinds & OK_SREG)) bad(in, i, "cannot be a special register");
      if (class_of(type) == Cls::Float || class_of(type) == Cls::Pred)
        bad(in, i, std::string("a special register cannot be read as .") + dtype_name(type));
      if (dtype_bytes(type) != sreg_bytes(o.sreg) && !(sreg_is_vector(o.sreg) && dtype_bytes(type) == 2) &&
          !(o.sreg == SReg::Gridid && dtype_bytes(type) == 4))
        bad(in, i, std::string("is a special register of another width than .") + dtype_name(type));
      return;
    case OpndKind::Symbol: {
      if (!(kinds & OK_SYM)) bad(in, i, "cannot be the name of a variable");
      const SymbolRef& s = k.symbols[static_cast<size_t>(o.sym)];
      const int b = dtype_bytes(type);
      if (class_of(type) == Cls::Float || class_of(type) == Cls::Pred || b < 4 ||
          (b == 4 && (s.space == Space::Global || s.space == Space::Const)))
        bad(in, i, "is the address of '" + s.name + "', which does not fit ." + dtype_name(type));
      return;
    }
    case OpndKind::Mem: bad(in, i, "cannot be an address [..]");
    case OpndKind::Label: bad(in, i, "cannot be a label");
  }
}

void check_address(const Instr& in, const Kernel& k, size_t i, Space space) {
  const Operand& o = in.ops[i];
  if (o.kind != OpndKind::Mem) bad(in, i, "must be an address [..]");
  if (o.reg >= 0) {
    const DType t = k.regs[static_cast<size_t>(o.reg)].type;
    const Cls c = class_of(t);
    if (c == Cls::Pred || c == Cls::Float || dtype_bytes(t) < 2)
      bad(in, i, std::string("has a base register of type .") + dtype_name(t) + " (integer or bit types only)");
    if ((space == Space::Generic || space == Space::Global) && dtype_bytes(t) == 4) {
      if (in.op == Op::CpAsync)  // ptxas accepts this one (ld/st/atom it refuses); its meaning is not documented
        bad(in, i, "uses a 32-bit global address: not supported (ptxas accepts it in cp.async; use a 64-bit register)");
      bad(in, i, "uses a 32-bit address (.address_size 64 needs 64-bit global and generic addresses)");
    }
    return;
  }
  if (o.sym >= 0) {
    const SymbolRef& s = k.symbols[static_cast<size_t>(o.sym)];
    const bool generic_ok = space == Space::Generic &&
                            (s.space == Space::Global || s.space == Space::Shared || s.space == Space::Local);
    if (s.space != space && !generic_ok)
      bad(in, i, std::string("names '") + s.name + "' of ." + space_name(s.space) + ", not of ." +
                     (space == Space::Generic ? "global, .shared or .local" : space_name(space)));
    return;
  }
  if (space != Space::Local) bad(in, i, "is a literal address (allowed for .local only)");
}

}  // namespace stc
