// SHMMA (paper 001, Sec. 4.2-4.3): the vector-wise sparse Tensor Core. A is 16 x 16 with K non-zeros in
// every 16-wide row (K = 2, 4, 8), stored as 16 x K fp16 values plus K 4-bit column offsets per row.
//   wmma.load.a.sync.aligned.row.m16n16k16.smma.kK.f16 {a0,a1,a2,a3}, [vals]{, ldv};
//   wmma.load.meta.sync.aligned.row.m16n16k16.smma.kK {o0}, [offs]{, ldo};
//   wmma.mma.sync.aligned.row.{row,col}.m16n16k16.smma.kK.f32.f32 {d0..d7}, {a0..a3}, {b0..b7}, {c0..c7}, {o0};
// D[r, :] = C[r, :] + sum_{j<K} vals[r, j] * B[offs[r, j], :]; B, C, D are the dense wmma fragments.
// Fragment layouts, memory formats and timing: docs/isa.md, "SHMMA". Timing: stc.smma_kK (derived from
// the set pipeline in stcsim/config/derived.py); with stc.pingpong the dense f32 wmma.mma takes
// stc.dense_pingpong (the ping-pong B buffer serves it too).
#include <string>

#include "../../func/decode.h"
#include "../../func/exec.h"
#include "../../func/fragment.h"
#include "../../timing/config.h"
#include "../extension.h"

namespace stc {
namespace {

enum ShmmaSub : uint8_t { LOAD_A, LOAD_META, MMA };

// Compressed A: lane l holds row l / 2, elements [h K/2, (h+1) K/2) of it (h = l % 2) in slots 0.. of its
// four registers (two fp16 per register, low half first); unused slots are zero.
struct ASlot {
  int row, first;  // the lane's row and its first element
};
inline ASlot a_slot(int lane, int k) { return {lane / 2, (lane % 2) * (k / 2)}; }

// Offsets of a row: K 4-bit column offsets packed least-significant nibble first in 4K bits (u8, u16,
// u32 for K = 2, 4, 8); lane l holds row l % 16's, zero-extended, in o0.
inline uint32_t meta_bytes(int k) { return static_cast<uint32_t>(k / 2); }

uint64_t stride_of(const ExecCtx& c, const Instr& in, int lane, uint64_t dflt) {
  return in.ops.size() > 2 ? static_cast<uint32_t>(src_bits(c, in.ops[2], lane)) : dflt;
}

void ex_load_a(ExecCtx& c, const Instr& in) {
  const int k = in.shape_k;
  const auto& regs = in.ops[0].vec;
  for_lanes(c.mask, [&](int lane) {
    const ASlot s = a_slot(lane, k);
    const uint64_t base = mem_addr(c, in.ops[1], lane);
    const uint64_t addr = base + (static_cast<uint64_t>(s.row) * stride_of(c, in, lane, static_cast<uint64_t>(k)) +
                                  static_cast<uint64_t>(s.first)) * 2;
    const uint32_t n = static_cast<uint32_t>(k / 2);
    const uint8_t* p = mem_access(c, in.space, addr, 2 * n, lane, false, 2);
    for (int e = 0; e < 8; ++e)
      frag_set(c, regs, lane, e, true, e < static_cast<int>(n) ? load_bits(p + 2 * e, 2) : 0);
  });
}

void ex_load_meta(ExecCtx& c, const Instr& in) {
  const uint32_t nb = meta_bytes(in.shape_k);
  for_lanes(c.mask, [&](int lane) {
    const uint64_t base = mem_addr(c, in.ops[1], lane);
    const uint64_t addr = base + static_cast<uint64_t>(lane % 16) * stride_of(c, in, lane, 1) * nb;
    const uint8_t* p = mem_access(c, in.space, addr, nb, lane, false, nb);
    set_reg(c, in.ops[0].vec[0], lane, load_bits(p, nb));
  });
}

void ex_mma(ExecCtx& c, const Instr& in) {
  if (!c.L.mma_values) return;
  const int k = in.shape_k;
  float B[16][16], C[16][16], D[16][16];
  gather(c, in.ops[2].vec, DType::F16, wmma_b_table(), B);
  gather(c, in.ops[3].vec, DType::F32, wmma_c_table(), C);
  const auto& a = in.ops[1].vec;
  const int32_t o = in.ops[4].vec[0];
  for (int r = 0; r < 16; ++r) {
    const uint32_t offs = static_cast<uint32_t>(c.w.reg(o, r));
    float acc[16];
    for (int n = 0; n < 16; ++n) acc[n] = C[r][n];
    for (int j = 0; j < k; ++j) {
      const int lane = 2 * r + j / (k / 2), slot = j % (k / 2);
      const float v = elem_value(DType::F16, static_cast<uint32_t>(frag_get(c, a, lane, slot, true)));
      const int row_b = static_cast<int>((offs >> (4 * j)) & 0xfu);
      for (int n = 0; n < 16; ++n) acc[n] += v * B[row_b][n];  // fp16 x fp16 is exact in fp32
    }
    for (int n = 0; n < 16; ++n) D[r][n] = acc[n];
  }
  scatter(c, in.ops[0].vec, DType::F32, wmma_c_table(), D);
}

// ---- decode ---------------------------------------------------------------------------------------
void decode(Instr& in, const Kernel&) {
  in.traits.sm_local = true;  // registers, and for the loads the memory their space names
  int sub = -1, k = 0;
  bool sync = false, aligned = false, shape = false;
  std::vector<std::string> layouts;
  std::vector<DType> types;
  for (size_t i = 0; i < in.mods.size(); ++i) {
    const std::string& m = in.mods[i];
    if (m == "load" && i + 1 < in.mods.size() && (in.mods[i + 1] == "a" || in.mods[i + 1] == "meta")) {
      sub = in.mods[++i] == "a" ? LOAD_A : LOAD_META;
    } else if (m == "mma") { sub = MMA;
    } else if (m == "sync") { sync = true;
    } else if (m == "aligned") { aligned = true;
    } else if (m == "row" || m == "col") { layouts.push_back(m);
    } else if (m == "m16n16k16") { shape = true;
    } else if (m == "smma") {
    } else if (m.size() >= 2 && m[0] == 'k' && m.find_first_not_of("0123456789", 1) == std::string::npos) {
      k = std::stoi(m.substr(1));
      if (k != 2 && k != 4 && k != 8)
        throw DecodeError("SHMMA takes .k2, .k4 or .k8 non-zeros per 16-wide row, got ." + m);
    } else if (m == "global") { in.space = Space::Global;
    } else if (m == "shared" || m == "shared::cta") { in.space = Space::Shared;
    } else if (dtype_from_name(m) != DType::None) { types.push_back(dtype_from_name(m));
    } else {
      unsupported(in, "modifier ." + m + " (SHMMA: wmma.{load.a,load.meta,mma}.sync.aligned...m16n16k16.smma.kK)");
    }
  }
  if (sub < 0) throw DecodeError("SHMMA needs .load.a, .load.meta or .mma (wmma.load.a...smma.kK)");
  if (!sync || !aligned || !shape || !k) throw DecodeError("SHMMA needs .sync.aligned, .m16n16k16 and .kK (K = 2, 4, 8)");
  in.shape_m = 16; in.shape_n = 16; in.shape_k = static_cast<uint8_t>(k);
  in.sub = static_cast<uint8_t>(sub);
  if (sub == MMA) {
    if (layouts.size() != 2 || layouts[0] != "row")
      throw DecodeError("SHMMA mma needs .row (compressed A) then .row or .col (B)");
    if (types.size() != 2 || types[0] != DType::F32 || types[1] != DType::F32)
      throw DecodeError("SHMMA mma takes .f32.f32 (f32 D and C; A and B are f16)");
    need_ops(in, 5);
    need_vec(in, 0, 8, "D");
    need_vec(in, 1, 4, "compressed A");
    need_vec(in, 2, 8, "B");
    need_vec(in, 3, 8, "C");
    need_vec(in, 4, 1, "the offsets");
    in.unit = Unit::TENSOR;
    in.traits.tensor_math = true;
    in.traits.fragment_operands = 0b1111;  // D, A, B, C (not the offsets)
    in.traits.op_class = op_class_id("stc.smma_k" + std::to_string(k));
    in.fn = &ex_mma;
    return;
  }
  if (layouts.size() != 1 || layouts[0] != "row") throw DecodeError("SHMMA loads are .row (row-major)");
  const bool a = sub == LOAD_A;
  if (a && (types.size() != 1 || types[0] != DType::F16)) throw DecodeError("SHMMA load.a takes .f16 values");
  if (!a && !types.empty()) throw DecodeError("SHMMA load.meta takes no type (the offsets are 4-bit)");
  need_ops(in, 2, 3);
  need_vec(in, 0, a ? 4 : 1, a ? "compressed A" : "the offsets");
  if (in.ops[1].kind != OpndKind::Mem) throw DecodeError("expected an address operand [..]");
  if (in.ops.size() == 3 && in.ops[2].kind != OpndKind::Reg && in.ops[2].kind != OpndKind::Imm)
    throw DecodeError("the stride must be a register or an integer");
  in.unit = Unit::LDST;
  in.traits.mem = MemKind::Load;
  in.traits.sched = SchedKind::Load;
  in.fn = a ? &ex_load_a : &ex_load_meta;
}

// ---- timing ---------------------------------------------------------------------------------------
int stat(const char* name) { return stat_id(name); }

OpClassDef smma_class(int k) {
  const std::string group = "stc.smma_k" + std::to_string(k);
  OpClassDef base = keyed_class(group, "no SHMMA timing");
  return {group, [base](ConfigReader& r, std::string& why) -> std::optional<OpDesc> {
            std::optional<OpDesc> d = base.read(r, why);
            if (!d) return d;
            static const int insts = stat("stc_smma_insts"), busy = stat("stc_smma_busy_cycles"),
                             lat = stat("stc_smma_latency_cycles");
            d->account = [](Stats& s, const OpTiming& t) {
              s.at(insts) += 1;
              s.at(busy) += t.interval;
              s.at(lat) += t.latency;
            };
            return d;
          }};
}

// With the ping-pong B buffer the dense f32 wmma.mma is timed by stc.dense_pingpong (paper 001 Fig. 13).
OpClassDef dense_pingpong_class() {
  return {"tensor.wmma_m16n16k16_f32", [](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
            const bool pingpong = r.flag("stc.pingpong");
            OpDesc d;
            d.timing.latency = r.u32("stc.dense_pingpong.latency");
            d.timing.interval = r.u32("stc.dense_pingpong.issue_interval");
            if (!pingpong) return std::nullopt;
            return d;
          }};
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

const int kRegistered = register_extension({
    "stc", "stc.enabled", "use an overlay such as v100+stc or v100+stc-pingpong",
    {{"wmma", "smma", Op::Ext, Unit::TENSOR, &decode, Preset::ALU}},
    {smma_class(2), smma_class(4), smma_class(8), dense_pingpong_class()},
    {{"stc_smma_insts", "stc", "instructions", "SHMMA wmma.mma...smma warp instructions issued", StatKind::COUNTER, nullptr},
     {"stc_smma_busy_cycles", "stc", "cycles", "Tensor Core occupancy of SHMMA instructions (issue intervals)", StatKind::COUNTER, nullptr},
     {"stc_smma_latency_cycles", "stc", "cycles", "sum of the SHMMA instructions' latencies", StatKind::COUNTER, nullptr},
     {"stc_smma_mean_latency", "stc", "cycles", "stc_smma_latency_cycles / stc_smma_insts", StatKind::FORMULA,
      [](const Stats& s) { return ratio(s.at(stat("stc_smma_latency_cycles")), s.at(stat("stc_smma_insts"))); }}},
});

}  // namespace
}  // namespace stc
