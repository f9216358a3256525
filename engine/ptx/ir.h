// The intermediate representation of a parsed PTX module: kernels, variables, typed instructions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace stc {

// Scalar data types of PTX. Packed pairs (f16x2, bf16x2) are 32-bit containers.
enum class DType : uint8_t {
  None, Pred, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64, TF32, U16x2, S16x2
};

// Size in bytes of one value of the type (Pred counts as 1). Inline: the semantic functions ask per lane.
inline int dtype_bytes(DType t) {
  switch (t) {
    case DType::Pred: case DType::B8: case DType::U8: case DType::S8: return 1;
    case DType::B16: case DType::U16: case DType::S16: case DType::F16: case DType::BF16: return 2;
    case DType::B32: case DType::U32: case DType::S32: case DType::F32: case DType::F16x2:
    case DType::BF16x2: case DType::TF32: case DType::U16x2: case DType::S16x2: return 4;
    case DType::B64: case DType::U64: case DType::S64: case DType::F64: return 8;
    case DType::B128: return 16;
    case DType::None: return 0;
  }
  return 0;
}
inline bool dtype_is_float(DType t) {
  return t == DType::F16 || t == DType::F16x2 || t == DType::BF16 || t == DType::BF16x2 || t == DType::F32 ||
         t == DType::F64 || t == DType::TF32;
}
inline bool dtype_is_signed(DType t) {
  return t == DType::S8 || t == DType::S16 || t == DType::S32 || t == DType::S64 || t == DType::S16x2;
}
const char* dtype_name(DType t);
// Parses "f32", "u64", ... (without the dot); returns DType::None when unknown.
DType dtype_from_name(const std::string& s);

enum class Space : uint8_t { Generic, Global, Shared, Local, Param, Const };
const char* space_name(Space s);

// Special registers readable by mov / cvt.
enum class SReg : uint8_t {
  Tid, Ntid, Ctaid, Nctaid, Laneid, Warpid, Nwarpid, Smid, Nsmid, Gridid, Clock, Clock64,
  LanemaskEq, LanemaskLt, LanemaskLe, LanemaskGt, LanemaskGe, Globaltimer, DynamicSmemSize,
  TotalSmemSize
};

enum class OpndKind : uint8_t { Reg, Imm, Vec, Mem, Label, Special, Symbol };

// How an immediate literal was written: its bits must be interpreted by the instruction type.
enum class ImmKind : uint8_t { Int, F32Bits, F64Bits, Real };

// A compacted register operand (Kernel::regs_compacted) names slot s of the 64-bit lanes as kWideSlot | s,
// of the 32-bit lanes as s.
constexpr int32_t kWideSlot = int32_t{1} << 30;

// One operand. Registers are dense per-kernel indices; -1 stands for the sink "_".
struct Operand {
  OpndKind kind = OpndKind::Reg;
  int32_t reg = -1;          // Reg; Mem base register (-1: none)
  bool negate = false;       // "!%p" as a source predicate
  ImmKind imm_kind = ImmKind::Int;
  uint64_t imm = 0;          // Imm bits (Real: double bits); Mem: signed byte offset
  double real = 0.0;         // Imm of kind Real
  int32_t sym = -1;          // Mem / Symbol: index into Kernel::symbols; Label: label id
  SReg sreg = SReg::Tid;     // Special
  uint8_t comp = 0;          // Special component: 0 x, 1 y, 2 z
  std::vector<int32_t> vec;  // Vec elements (registers; -1 = sink)
  std::vector<uint64_t> vec_imm;  // Vec of immediates (rare): parallel to vec when vec[i] == -2
};

// A variable declared in a state space (module or kernel scope).
struct Variable {
  std::string name;
  Space space = Space::Global;
  DType type = DType::B8;
  uint32_t align = 1;
  uint64_t size = 0;            // bytes; 0 with is_extern: dynamic shared memory
  bool is_extern = false;
  std::vector<uint8_t> init;    // initial bytes (global / const)
  uint64_t address = 0;         // assigned at load: shared/local offset or global/const address
};

struct Param {
  std::string name;
  DType type = DType::U64;
  uint32_t size = 8;
  uint32_t align = 8;
  uint32_t offset = 0;          // byte offset in the parameter buffer
};

// Opcode families; the table in func/opcodes.def maps names to these. Every instruction an extension
// (engine/ext/) adds is of family Ext: its traits and semantic function say the rest.
enum class Op : uint16_t {
#define STC_OPCODE(name, id, unit, decoder, preset) id,
#include "../func/opcodes.def"
#undef STC_OPCODE
  Ext,
  Count
};

// Unit classes the timing model schedules on.
enum class Unit : uint8_t { INT, FP32, FP16, FP64, SFU, TENSOR, LDST, BRANCH, SYNC, NONE };
const char* unit_name(Unit u);

// Timing-class names interned: one small number per name for the life of the process (the decoders name an
// instruction's class once, the timing model finds its OpDesc by number; op_class_id / op_class_name below).
using OpClassId = uint16_t;
constexpr OpClassId kUnitClass = 0;  // no class of its own (the empty name)

// What the rest of the engine knows of a decoded instruction, set once at decode (the opcode table gives the
// defaults, the family decoder refines them). Timing, scheduling and register collection read these, never
// `Instr::op` or `Instr::sub`.
enum class MemKind : uint8_t { None, Load, Store, Atomic, AsyncCopy };
// How the list scheduler (func/schedule.cc) may move the instruction: Free (registers only), Load (may pass
// other loads), Ordered (stays in order with memory instructions of the same space), Fence (moves nothing
// across it).
enum class SchedKind : uint8_t { Free, Load, Ordered, Fence };
// cp.async-style completion groups: the instruction commits the open group or waits for groups.
enum class AsyncKind : uint8_t { None, Commit, WaitGroup, WaitAll };
struct Traits {
  MemKind mem = MemKind::None;   // memory access kind (the space is Instr::space; Generic resolves per lane)
  SchedKind sched = SchedKind::Free;
  AsyncKind async = AsyncKind::None;
  bool writes_dst = true;        // operand 0 is a destination (its registers go to Instr::dsts)
  bool branch = false;           // the next instruction of the warp waits for the branch to resolve
  bool tensor_math = false;      // a warp-level matrix multiply (counted in tensor_insts)
  uint8_t fragment_operands = 0;  // a matrix multiply's operands (bit i: operand i) that hold only values of
                                  // its product (D and the A, B, C fragments), not metadata, coordinates,
                                  // descriptors or selectors (func/value_flow.h)
  bool fragment_load = false;    // a matrix-fragment load (wmma.load A/B, ldmatrix): from shared memory one
                                 // SASS LDSM (smem.matrix_extra_latency beyond an ld.shared)
  bool fragment_transposed = false;  // a wmma.load of A .col / B .row: from outside shared memory ptxas adds
                                     // MOVM.16.MT88 transposes after the loads (tensor.movm_latency)
  bool async_group = false;      // completes in the warp's open async group (wgmma.mma_async): the group's
                                 // wait (AsyncKind::WaitGroup) waits for it, no register scoreboard
  bool cas_loop = false;         // a shared-memory atomic that ptxas lowers to a load + compare-and-swap loop
                                 // (add of u64/s64/f32/f64 on sm_70 and later: ATOMS.CAST.SPIN)
  bool folded = false;           // a constant ptxas folds into its users (func/schedule.cc): it executes, but
                                 // takes no issue slot or unit and its value is ready at once
  bool result_unused = false;    // an atom whose result no instruction reads: ptxas issues it as a RED
                                 // (func/schedule.cc), so the scoreboard does not wait for its destination
  bool sm_local = false;         // an extension's instruction that reaches nothing beyond its warp, its CTA
                                 // (registers, shared memory, barriers) and the memory `mem` and the space
                                 // name: the timing model's run-ahead loop need not order it with other SMs'
                                 // steps (it orders every other extension instruction)
  bool extension = false;         // an extension's instruction (engine/ext/): may reach state beyond its SM
                                 // unless `sm_local`
  bool reads_dst = false;        // may read its destinations too (extensions; wgmma accumulates into D)
  bool barrier = false;          // a CTA barrier (bar / barrier): a loop holding one is not fast-forwarded
  bool accumulates = false;      // an mma / wmma.mma whose C may be its D: D is updated in place
  bool single_ldst = false;      // an ld / ldu / st of at most 16 bytes per lane, or a cp.async: one SASS
                                 // memory instruction whatever its addresses
  uint8_t sass_count = 1;        // SASS instructions it becomes (a 64-bit integer add is a pair, func/decode.cc)
  uint8_t sass_loads = 1;        // SASS memory instructions a load becomes outside shared memory: a wmma.load
                                 // of A or B, 8 halves a thread, is four 32-bit LDGs (func/ops_tensor.cc)
  // Timing class: the config group its latency and issue interval come from (see timing/op_class.h), as
  // an interned name (op_class_id); kUnitClass: the default class of its unit ("units.int", ...).
  OpClassId op_class = kUnitClass;
};

OpClassId op_class_id(const std::string& name);  // thread-safe
const std::string& op_class_name(OpClassId id);

struct Instr;
struct ExecCtx;
using ExecFn = void (*)(ExecCtx&, const Instr&);

enum class Rnd : uint8_t { None, RN, RZ, RM, RP, RNI, RZI, RMI, RPI, RNA };
enum class Cmp : uint8_t { None, EQ, NE, LT, LE, GT, GE, LO, LS, HI, HS, EQU, NEU, LTU, LEU, GTU, GEU, NUM, NAN_ };
enum class BoolOp : uint8_t { None, And, Or, Xor };

// Instruction flag bits (modifiers without payload).
enum : uint32_t {
  F_WIDE = 1u << 0, F_HI = 1u << 1, F_LO = 1u << 2, F_SAT = 1u << 3, F_FTZ = 1u << 4,
  F_APPROX = 1u << 5, F_UNI = 1u << 6, F_NC = 1u << 7, F_TRANS = 1u << 8, F_FULL = 1u << 9,
  F_CC = 1u << 10, F_CLAMP = 1u << 11, F_SHIFT_L = 1u << 12, F_SHIFT_R = 1u << 13, F_TO = 1u << 14,
  F_RELU = 1u << 15, F_NAN = 1u << 16, F_XORSIGN = 1u << 17, F_ABS = 1u << 18, F_CG = 1u << 19,
  F_ALL = 1u << 20, F_ANY = 1u << 21, F_BALLOT = 1u << 22, F_UNIQ = 1u << 23, F_ARRIVE = 1u << 24,
  F_RED = 1u << 25, F_VOLATILE = 1u << 26
};

// One decoded instruction. Family-specific fields are documented by each decoder.
struct Instr {
  Op op = Op::Count;
  Unit unit = Unit::NONE;
  ExecFn fn = nullptr;
  std::string text;             // the instruction as written (for messages)
  std::string opcode;           // full dotted opcode, e.g. "ld.global.nc.v4.f32"
  std::vector<std::string> mods;  // modifiers after the base name, in order
  int line = 0;
  int32_t guard = -1;           // guard predicate register or -1
  bool guard_neg = false;
  std::vector<Operand> ops;
  DType type = DType::None;     // main type
  DType type2 = DType::None;    // second type (cvt source, setp compare type, ...)
  DType types[4] = {DType::None, DType::None, DType::None, DType::None};  // mma d,a,b,c
  Space space = Space::Generic;
  uint8_t vec = 1;
  uint32_t flags = 0;
  Rnd rnd = Rnd::None;
  Cmp cmp = Cmp::None;
  BoolOp bop = BoolOp::None;
  Traits traits;
  uint8_t sub = 0;              // family sub-operation (atom op, shfl mode, wmma fragment): family-private
  uint8_t shape_m = 0, shape_n = 0, shape_k = 0;
  uint8_t layout_a = 0, layout_b = 0;  // 0 row, 1 col
  uint8_t num = 0;              // ldmatrix .x1/.x2/.x4, misc counts
  int32_t target = -1;          // branch target pc
  int32_t reconv = -1;          // reconvergence pc of a divergent branch
  bool unrolled = false;        // in a loop body func/unroll.cc unrolled (its loads are register-limited)
  bool distinct_vec = false;    // wmma.load: its fragment registers are distinct (decode; renaming keeps it)
  std::vector<int32_t> dsts;    // registers written (for the scoreboard)
  std::vector<int32_t> srcs;    // registers read
};

struct RegInfo {
  std::string name;
  DType type = DType::B32;
};

// A name an operand refers to: a parameter or a variable in some state space. Its address is
// assigned when the module is linked into an engine.
struct SymbolRef {
  std::string name;
  Space space = Space::Global;
  int32_t index = -1;           // into Kernel::params, Kernel::locals or Module::globals
  bool module_scope = false;
  uint64_t address = 0;
};

// What ptxas's SASS says of a kernel's schedule (stcsim.sim.sass_facts, read where ptxas exists; empty: the
// PTX-only view), which the load schedule follows (func/schedule.cc).
struct SassFacts {
  // ptxas's copy grouping: a global load whose value a shared store writes is hoisted only while fewer than
  // this many such loads wait for their stores (0: unknown).
  uint32_t copy_group = 0;
  // ptxas's order of the memory and Tensor Core instructions of each innermost loop, in code order
  // (sass_facts.loop_orders: G LDG, S STS, L LDS, M LDSM, H HMMA, C LDGSTS). A single-block loop of the PTX
  // with the same instructions is scheduled in that order.
  std::vector<std::string> loops;
  // ptxas's order of the loads and stores of each straight-line copy block outside the innermost loops (a
  // loop's peeled iterations), in code order (sass_facts.block_orders). A PTX block that is no loop, with
  // the same copies, is scheduled in that order.
  std::vector<std::string> copy_blocks;
  // Per entry of `loops` (or empty): the earlier LDGs of the iteration each LDG issues after, from the
  // scoreboard (sass_facts.loop_load_waits: per LDG ';'-separated, '.'-separated indices among the loop's
  // LDGs). A matched loop's global load waits for those loads' values.
  std::vector<std::string> loop_waits;
};

struct Kernel {
  std::string name;
  std::string file;
  bool is_entry = true;
  std::vector<Param> params;
  uint32_t param_bytes = 0;
  std::vector<RegInfo> regs;
  std::map<std::string, int32_t> reg_index;
  // The functional register file once compacted (func/regalloc.h; the operands then name slots): 32-bit
  // lanes for registers of up to 32 bits, 64-bit lanes for the wider ones (slot numbers with kWideSlot).
  bool regs_compacted = false;
  uint32_t reg_slots = 0;             // slots of 32-bit lanes
  uint32_t wide_slots = 0;            // slots of 64-bit lanes
  std::vector<Variable> locals;       // .shared / .local declared in the body
  uint64_t static_shared_bytes = 0;   // kernel-visible static shared (module + body)
  uint64_t local_bytes = 0;           // per-thread .local bytes
  std::vector<Instr> code;
  std::map<std::string, int32_t> labels;
  std::vector<int32_t> nounroll;      // pcs where a `.pragma "nounroll"` stood in the body (func/unroll.h)
  std::vector<SymbolRef> symbols;
  uint32_t maxntid[3] = {0, 0, 0};
  uint32_t reqntid[3] = {0, 0, 0};
  uint32_t regs_per_thread = 0;       // estimate from declarations (for occupancy)
  // What ptxas's SASS says of the kernel's schedule (stcsim.sim.sass_facts; empty: the PTX-only view).
  SassFacts sass;
  int32_t carry_reg = -1;             // hidden register of the carry flag CC.CF (-1: no carry instruction)
  uint16_t sm = 0;                    // the module's .target sm_XX (0: unknown)
  bool arch_specific = false;         // the target is architecture-specific (sm_90a: wgmma needs it)
  uint16_t ptx = 0;                   // the module's .version times ten (0: unknown)
  // Where a value derived from a Tensor Core result reaches the timing ("": nowhere, func/value_flow.h): a
  // launch that asks for cycles only may then skip that arithmetic (LaunchRequest::skip_mma_values).
  std::string mma_values_note = "no analysis";
};

struct Module {
  std::string file;
  std::string version, target;
  uint16_t ptx = 0;                   // .version times ten
  uint16_t sm = 0;                    // .target sm_XX
  bool arch_specific = false;         // .target sm_XXa
  uint32_t address_size = 64;
  std::vector<Variable> globals;      // .global / .const / .shared at module scope
  std::vector<std::unique_ptr<Kernel>> kernels;
};

}  // namespace stc
