// Opcode-table dispatch and the helpers every family decoder uses.
#include "decode.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "forms.h"
#include "numeric.h"
#include "opcode_table.h"

namespace stc {

namespace {

std::vector<OpcodeRow>& rows() {
  static std::vector<OpcodeRow> t = {
#define STC_OPCODE(name, id, unit, decoder, preset) {name, "", Op::id, Unit::unit, &decoder, Preset::preset},
#include "opcodes.def"
#undef STC_OPCODE
  };
  return t;
}

const std::unordered_map<std::string, Rnd>& rounding_mods() {
  static const std::unordered_map<std::string, Rnd> m = {
      {"rn", Rnd::RN}, {"rz", Rnd::RZ}, {"rm", Rnd::RM}, {"rp", Rnd::RP}, {"rni", Rnd::RNI},
      {"rzi", Rnd::RZI}, {"rmi", Rnd::RMI}, {"rpi", Rnd::RPI}, {"rna", Rnd::RNA}};
  return m;
}

const std::unordered_map<std::string, Cmp>& cmp_mods() {
  static const std::unordered_map<std::string, Cmp> m = {
      {"eq", Cmp::EQ}, {"ne", Cmp::NE}, {"lt", Cmp::LT}, {"le", Cmp::LE}, {"gt", Cmp::GT}, {"ge", Cmp::GE},
      {"lo", Cmp::LO}, {"ls", Cmp::LS}, {"hi", Cmp::HI}, {"hs", Cmp::HS}, {"equ", Cmp::EQU},
      {"neu", Cmp::NEU}, {"ltu", Cmp::LTU}, {"leu", Cmp::LEU}, {"gtu", Cmp::GTU}, {"geu", Cmp::GEU},
      {"num", Cmp::NUM}, {"nan", Cmp::NAN_}};
  return m;
}

const std::unordered_map<std::string, uint32_t>& flag_mods() {
  static const std::unordered_map<std::string, uint32_t> m = {
      {"wide", F_WIDE}, {"hi", F_HI}, {"lo", F_LO}, {"sat", F_SAT}, {"ftz", F_FTZ}, {"approx", F_APPROX},
      {"uni", F_UNI}, {"nc", F_NC}, {"full", F_FULL}, {"cc", F_CC}, {"clamp", F_CLAMP},
      {"relu", F_RELU}, {"NaN", F_NAN}, {"xorsign", F_XORSIGN}, {"abs", F_ABS}, {"volatile", F_VOLATILE}};
  return m;
}

// Registers read and written, for the scoreboard: operand 0 is written when the traits say so (a memory
// operand's base register is read), every other register operand is read.
void collect_regs(Instr& in) {
  auto add = [](std::vector<int32_t>& v, int32_t r) {
    if (r >= 0 && std::find(v.begin(), v.end(), r) == v.end()) v.push_back(r);
  };
  if (in.guard >= 0) add(in.srcs, in.guard);
  for (size_t i = 0; i < in.ops.size(); ++i) {
    const Operand& o = in.ops[i];
    const bool dst = i == 0 && in.traits.writes_dst && o.kind != OpndKind::Mem;
    auto& v = dst ? in.dsts : in.srcs;
    if (o.kind == OpndKind::Reg || o.kind == OpndKind::Mem) add(o.kind == OpndKind::Mem ? in.srcs : v, o.reg);
    if (o.kind == OpndKind::Vec)
      for (int32_t r : o.vec) add(v, r);
    if (o.kind == OpndKind::Mem)  // tensor coordinates [map, {c0, ..}]
      for (int32_t r : o.vec) add(in.srcs, r);
  }
}

// Dotted tokens of an opcode.
std::vector<std::string> tokens(const std::string& opc) {
  std::vector<std::string> out;
  for (size_t p = 0;;) {
    const size_t q = opc.find('.', p);
    out.push_back(opc.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) return out;
    p = q + 1;
  }
}

}  // namespace

Traits preset_traits(Preset p) {
  Traits t;
  switch (p) {
    case Preset::ALU: break;
    case Preset::LOAD: t.mem = MemKind::Load; t.sched = SchedKind::Load; break;
    case Preset::STORE: t.mem = MemKind::Store; t.sched = SchedKind::Ordered; t.writes_dst = false; break;
    case Preset::ATOMIC: t.mem = MemKind::Atomic; t.sched = SchedKind::Ordered; break;
    case Preset::REDUCE: t.mem = MemKind::Atomic; t.sched = SchedKind::Ordered; t.writes_dst = false; break;
    case Preset::PREFETCH: t.sched = SchedKind::Ordered; t.writes_dst = false; break;
    case Preset::BRANCH: t.sched = SchedKind::Fence; t.writes_dst = false; t.branch = true; break;
    case Preset::EXIT: case Preset::FENCE_NODST: t.sched = SchedKind::Fence; t.writes_dst = false; break;
  }
  return t;
}

void add_opcode_rows(const std::vector<OpcodeRow>& more) { rows().insert(rows().end(), more.begin(), more.end()); }

const OpcodeRow* find_opcode_row(const std::string& opcode) {
  const std::vector<std::string> tok = tokens(opcode);
  const OpcodeRow* best = nullptr;
  size_t best_len = 0;
  bool best_marker = false;
  for (const OpcodeRow& r : rows()) {
    const std::vector<std::string> pre = tokens(r.prefix);
    if (pre.size() > tok.size() || !std::equal(pre.begin(), pre.end(), tok.begin())) continue;
    if (!r.marker.empty() && std::find(tok.begin() + static_cast<std::ptrdiff_t>(pre.size()), tok.end(), r.marker) == tok.end())
      continue;
    const bool marker = !r.marker.empty();
    if (!best || pre.size() > best_len || (pre.size() == best_len && marker && !best_marker)) {
      best = &r;
      best_len = pre.size();
      best_marker = marker;
    }
  }
  return best;
}

namespace {

// SASS instructions a PTX integer instruction becomes on sm_70 and later, whose integer datapath is 32 bits
// wide: a 64-bit add, subtract, negate, logic op, shift, compare or select is a pair (IADD3 + IADD3.X,
// LOP3 x 2, SHF x 2, ISETP + ISETP.EX, SEL x 2), a 64-bit multiply three IMADs (mul.wide is one IMAD.WIDE).
uint8_t integer_instructions(const Instr& in) {
  if (in.unit != Unit::INT) return 1;
  const auto is64 = [](DType t) { return t == DType::B64 || t == DType::U64 || t == DType::S64; };
  if (!is64(in.type)) return 1;
  switch (in.op) {
    case Op::Add: case Op::Sub: case Op::Neg: case Op::And: case Op::Or: case Op::Xor: case Op::Not:
    case Op::Shl: case Op::Shr: case Op::Setp: case Op::Selp:
      return 2;
    case Op::Mul: case Op::Mad:
      return (in.flags & F_WIDE) ? 1 : 3;
    default:
      return 1;
  }
}

// The traits the opcode and its decoded form fix (Traits: what timing/, the scheduler and the register
// allocator read instead of the opcode).
void finish_traits(Instr& in) {
  Traits& t = in.traits;
  t.extension = in.op == Op::Ext;
  t.reads_dst = t.extension || t.async_group;
  t.barrier = in.op == Op::Bar || in.op == Op::Barrier;
  t.accumulates = t.tensor_math && (in.op == Op::Mma || in.op == Op::Wmma);
  t.single_ldst = ((in.op == Op::Ld || in.op == Op::Ldu || in.op == Op::St) &&
                   static_cast<uint32_t>(in.vec) * dtype_bytes(in.type) <= 16) ||
                  in.op == Op::CpAsync;
  t.sass_count = integer_instructions(in);
}

}  // namespace

void decode_instruction(Instr& in, const Kernel& k) {
  const std::vector<std::string> tok = tokens(in.opcode);
  in.mods.assign(tok.begin() + 1, tok.end());
  const OpcodeRow* row = find_opcode_row(in.opcode);
  if (!row) throw DecodeError("unsupported instruction '" + tok[0] + "'");
  in.op = row->op;
  in.unit = row->unit;
  in.traits = preset_traits(row->preset);
  row->decoder(in, k);
  check_feature_gates(in, k);  // on a well-formed instruction: the .target / .version its features need
  if (!in.fn) throw DecodeError("internal: no semantics selected for '" + in.opcode + "'");
  // Loads with memory-ordering semantics keep their place among memory instructions.
  if (in.traits.sched == SchedKind::Load &&
      ((in.flags & F_VOLATILE) || std::find(in.mods.begin(), in.mods.end(), "acquire") != in.mods.end()))
    in.traits.sched = SchedKind::Ordered;
  finish_traits(in);
  collect_regs(in);
}

std::vector<std::string> common_mods(Instr& in, std::vector<DType>& types) {
  std::vector<std::string> rest;
  for (const std::string& m : in.mods) {
    const DType t = dtype_from_name(m);
    if (t != DType::None) { types.push_back(t); continue; }
    if (auto r = rounding_mods().find(m); r != rounding_mods().end()) { in.rnd = r->second; continue; }
    if (auto c = cmp_mods().find(m); c != cmp_mods().end() && in.cmp == Cmp::None &&
        (in.op == Op::Setp || in.op == Op::Set)) {
      in.cmp = c->second;
      continue;
    }
    if (auto f = flag_mods().find(m); f != flag_mods().end()) { in.flags |= f->second; continue; }
    if (m == "global") { in.space = Space::Global; continue; }
    if (m == "shared" || m == "shared::cta") { in.space = Space::Shared; continue; }
    if (m == "local") { in.space = Space::Local; continue; }
    if (m == "param") { in.space = Space::Param; continue; }
    if (m == "const") { in.space = Space::Const; continue; }
    if (m == "v2") { in.vec = 2; continue; }
    if (m == "v4") { in.vec = 4; continue; }
    if (in.op == Op::Setp || in.op == Op::Set) {
      if (m == "and") { in.bop = BoolOp::And; continue; }
      if (m == "or") { in.bop = BoolOp::Or; continue; }
      if (m == "xor") { in.bop = BoolOp::Xor; continue; }
    }
    rest.push_back(m);
  }
  return rest;
}

void unsupported(const Instr& in, const std::string& what) {
  throw DecodeError("unsupported " + what + " in '" + in.opcode + "'");
}

void need_ops(const Instr& in, size_t n) { need_ops(in, n, n); }

void need_ops(const Instr& in, size_t lo, size_t hi) {
  if (in.ops.size() < lo || in.ops.size() > hi)
    throw DecodeError("'" + in.opcode + "' takes " + std::to_string(lo) +
                      (hi != lo ? "-" + std::to_string(hi) : "") + " operands, got " +
                      std::to_string(in.ops.size()));
}

void imm_as(Operand& o, DType t) {
  if (o.kind != OpndKind::Imm) return;
  double v;
  switch (o.imm_kind) {
    case ImmKind::Int:
      if (!dtype_is_float(t)) return;
      v = static_cast<double>(static_cast<int64_t>(o.imm));
      break;
    case ImmKind::F32Bits: v = static_cast<double>(f32_from_bits(o.imm)); break;
    case ImmKind::F64Bits: v = f64_from_bits(o.imm); break;
    case ImmKind::Real: v = o.real; break;
    default: return;
  }
  if (!dtype_is_float(t)) {
    if (o.imm_kind == ImmKind::F32Bits && dtype_bytes(t) == 4) { o.imm_kind = ImmKind::Int; return; }
    if (o.imm_kind == ImmKind::F64Bits && dtype_bytes(t) == 8) { o.imm_kind = ImmKind::Int; return; }
    throw DecodeError(std::string("floating-point literal for integer type .") + dtype_name(t));
  }
  switch (t) {
    case DType::F64: o.imm = bits_from_f64(v); break;
    case DType::F32: o.imm = bits_from_f32(static_cast<float>(v)); break;
    case DType::F16: o.imm = double_to_half(v); break;
    case DType::BF16: o.imm = double_to_bf16(v); break;
    default:
      if (o.imm_kind == ImmKind::F32Bits) break;  // packed types take raw 32-bit literals
      throw DecodeError(std::string("unsupported literal for type .") + dtype_name(t));
  }
  o.imm_kind = ImmKind::Int;
}

void imms_as(Instr& in, DType t, size_t first) {
  for (size_t i = first; i < in.ops.size(); ++i) imm_as(in.ops[i], t);
}

Unit unit_for(DType t) {
  switch (t) {
    case DType::F32: return Unit::FP32;
    case DType::F64: return Unit::FP64;
    case DType::F16: case DType::F16x2: case DType::BF16: case DType::BF16x2: return Unit::FP16;
    default: return Unit::INT;
  }
}

const char* rnd_name(Rnd r) {
  static const char* n[] = {"", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna"};
  return n[static_cast<int>(r)];
}

void need_vec(const Instr& in, size_t idx, size_t n, const char* what) {
  if (in.ops[idx].kind != OpndKind::Vec || in.ops[idx].vec.size() != n || !in.ops[idx].vec_imm.empty())
    throw DecodeError(std::string(what) + " must be a {..} of " + std::to_string(n) + " registers");
}

}  // namespace stc
