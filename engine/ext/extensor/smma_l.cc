// wmma.smma.L (paper 004, ExTensor): one warp instruction multiplies a sparse 16 x L chunk of A (L = 16,
// 32, 48, 64) by a dense L x 16 B (L/16 wmma B fragments) and adds C:
//   wmma.smma.load.a.sync.aligned.m16n16.lL.wW.f16 {a0..a(W/4-1)}, [vals]{, ldv};
//   wmma.smma.load.x.sync.aligned.m16n16.lL.wW {x0..x(ceil(W/8)-1)}, [coords]{, ldx};
//   wmma.smma.mma.sync.aligned.m16n16.lL.wW.row.{row,col}.f32.f32 {d0..d7}, {a..}, {x..}, {b0..b(L/2-1)}, {c0..c7};
// Each row holds up to W (the padded row length, a multiple of 4, <= L) non-zero values with their chunk
// columns (u8, ascending, < L); coordinate 0xFF marks padding, which must follow a row's real entries.
// Latency is data-dependent: the semantics report which 16-wide block of B each non-zero reads, row by
// row; the timing class sums PhaseLat over phases of extensor.nnz_per_phase non-zeros per row with the
// configured block-skip reading (stcsim/sparsity/extensor_latency.py is the same model). docs/isa.md,
// "wmma.smma.L", has the fragment layouts and memory format.
#include <algorithm>
#include <string>

#include "../../func/decode.h"
#include "../../func/exec.h"
#include "../../func/fragment.h"
#include "../../ptx/errors.h"
#include "../../timing/config.h"
#include "../extension.h"

namespace stc {
namespace {

enum SmmaSub : uint8_t { LOAD_A, LOAD_X, MMA };
constexpr uint8_t kPad = 0xff;
constexpr int kMaxL = 64;

// What an executed wmma.smma.L reports for its latency model: per row of the chunk its non-zeros, and the
// 16-column operand block (0..3) of each, four 2-bit block numbers per byte in order.
struct ChunkWork {
  uint8_t nnz[16];
  uint8_t blocks[16][16];
};

// Values and coordinates: lane l holds row l / 2, entries [h W/2, (h+1) W/2) of it (h = l % 2); values two
// per register (low half first), coordinates four per register (lowest byte first).
inline int first_entry(int lane, int w) { return (lane % 2) * (w / 2); }

uint64_t stride_of(const ExecCtx& c, const Instr& in, int lane, uint64_t dflt) {
  return in.ops.size() > 2 ? static_cast<uint32_t>(src_bits(c, in.ops[2], lane)) : dflt;
}

// Loads the lane's W/2 entries of `esize` bytes into registers holding 4 / esize entries each.
void ex_load(ExecCtx& c, const Instr& in) {
  const int w = in.num;
  const uint32_t esize = in.sub == LOAD_A ? 2 : 1;
  const auto& regs = in.ops[0].vec;
  for_lanes(c.mask, [&](int lane) {
    const uint64_t base = mem_addr(c, in.ops[1], lane);
    const uint64_t row = static_cast<uint64_t>(lane / 2) * stride_of(c, in, lane, static_cast<uint64_t>(w));
    const uint64_t addr = base + (row + static_cast<uint64_t>(first_entry(lane, w))) * esize;
    const uint32_t n = static_cast<uint32_t>(w / 2);
    const uint8_t* p = mem_access(c, in.space, addr, n * esize, lane, false, esize);
    const uint32_t per_reg = 4 / esize;
    for (size_t r = 0; r < regs.size(); ++r) {
      uint64_t word = 0;
      for (uint32_t e = 0; e < per_reg; ++e) {
        const uint32_t idx = static_cast<uint32_t>(r) * per_reg + e;
        if (idx < n) word |= load_bits(p + idx * esize, esize) << (8 * esize * e);
      }
      set_reg(c, regs[r], lane, word);
    }
  });
}

[[noreturn]] void bad_chunk(const ExecCtx& c, const Instr& in, int row, const std::string& what) {
  throw SimFault("wmma.smma chunk error in kernel '" + c.L.kernel->name + "' (" + c.L.kernel->file + ":" +
                 std::to_string(in.line) + ", block (" + std::to_string(c.cta.ctaid[0]) + "," +
                 std::to_string(c.cta.ctaid[1]) + "," + std::to_string(c.cta.ctaid[2]) + ")), row " +
                 std::to_string(row) + ": " + what);
}

void ex_mma(ExecCtx& c, const Instr& in) {
  const int l = in.shape_k, w = in.num;
  const bool values = c.L.mma_values;  // false: the chunk's work and checks only (a cycles-only launch)
  float B[kMaxL][16], C[16][16], D[16][16];
  const auto& bv = in.ops[3].vec;
  for (int blk = 0; values && blk < l / 16; ++blk) {
    const std::vector<int32_t> regs(bv.begin() + 8 * blk, bv.begin() + 8 * blk + 8);
    gather(c, regs, DType::F16, wmma_b_table(), &B[16 * blk]);
  }
  if (values) gather(c, in.ops[4].vec, DType::F32, wmma_c_table(), C);
  ChunkWork& work = c.rec.work.emplace<ChunkWork>();
  const auto& av = in.ops[1].vec;
  const auto& xv = in.ops[2].vec;
  for (int r = 0; r < 16; ++r) {
    float acc[16];
    for (int n = 0; values && n < 16; ++n) acc[n] = C[r][n];
    int real = 0, last = -1;
    for (int j = 0; j < w; ++j) {
      const int lane = 2 * r + j / (w / 2), slot = j % (w / 2);
      const uint64_t xreg = c.w.reg(xv[static_cast<size_t>(slot / 4)], lane);
      const int col = static_cast<int>((xreg >> (8 * (slot % 4))) & 0xffu);
      if (col == kPad) continue;
      if (real != j) bad_chunk(c, in, r, "a coordinate follows padding (0xFF) at entry " + std::to_string(j));
      if (col >= l) bad_chunk(c, in, r, "coordinate " + std::to_string(col) + " is outside the chunk (L = " + std::to_string(l) + ")");
      if (col <= last) bad_chunk(c, in, r, "coordinates must ascend (" + std::to_string(last) + " then " + std::to_string(col) + ")");
      last = col;
      if (values) {
        const float v = elem_value(DType::F16, static_cast<uint32_t>(frag_get(c, av, lane, slot, true)));
        for (int n = 0; n < 16; ++n) acc[n] += v * B[col][n];  // fp16 x fp16 is exact in fp32
      }
      work.blocks[r][real / 4] |= static_cast<uint8_t>((col / 16) << (2 * (real % 4)));
      ++real;
    }
    work.nnz[r] = static_cast<uint8_t>(real);
    for (int n = 0; values && n < 16; ++n) D[r][n] = acc[n];
  }
  if (values) scatter(c, in.ops[0].vec, DType::F32, wmma_c_table(), D);
}

// ---- decode ---------------------------------------------------------------------------------------
int number_after(const std::string& m, char prefix) {
  if (m.size() < 2 || m[0] != prefix || m.find_first_not_of("0123456789", 1) != std::string::npos) return -1;
  return m.size() > 4 ? 100000 : std::stoi(m.substr(1));
}

void decode(Instr& in, const Kernel&) {
  in.traits.sm_local = true;  // registers, and for the loads the memory their space names
  int sub = -1, l = 0, w = 0;
  bool sync = false, aligned = false, shape = false;
  std::vector<std::string> layouts;
  std::vector<DType> types;
  for (size_t i = 1; i < in.mods.size(); ++i) {  // mods[0] is "smma"
    const std::string& m = in.mods[i];
    if (m == "load" && i + 1 < in.mods.size() && (in.mods[i + 1] == "a" || in.mods[i + 1] == "x")) {
      sub = in.mods[++i] == "a" ? LOAD_A : LOAD_X;
    } else if (m == "mma") { sub = MMA;
    } else if (m == "sync") { sync = true;
    } else if (m == "aligned") { aligned = true;
    } else if (m == "m16n16") { shape = true;
    } else if (m == "row" || m == "col") { layouts.push_back(m);
    } else if (number_after(m, 'l') >= 0) {
      l = number_after(m, 'l');
      if (l % 16 || l < 16 || l > kMaxL) throw DecodeError("wmma.smma chunk width ." + m + ": L must be 16, 32, 48 or 64");
    } else if (number_after(m, 'w') >= 0) {
      w = number_after(m, 'w');
      if (w % 4 || w < 4) throw DecodeError("wmma.smma row length ." + m + ": W must be a positive multiple of 4");
    } else if (m == "global") { in.space = Space::Global;
    } else if (m == "shared" || m == "shared::cta") { in.space = Space::Shared;
    } else if (dtype_from_name(m) != DType::None) { types.push_back(dtype_from_name(m));
    } else {
      unsupported(in, "modifier ." + m + " (wmma.smma.{load.a,load.x,mma}.sync.aligned.m16n16.lL.wW...)");
    }
  }
  if (sub < 0) throw DecodeError("wmma.smma needs .load.a, .load.x or .mma");
  if (!sync || !aligned || !shape || !l || !w) throw DecodeError("wmma.smma needs .sync.aligned.m16n16.lL.wW");
  if (w > l) throw DecodeError("wmma.smma row length W = " + std::to_string(w) + " exceeds the chunk width L = " + std::to_string(l));
  in.shape_m = 16; in.shape_n = 16; in.shape_k = static_cast<uint8_t>(l);
  in.num = static_cast<uint8_t>(w);
  in.sub = static_cast<uint8_t>(sub);
  const size_t areg = static_cast<size_t>(w / 4), xreg = static_cast<size_t>((w + 7) / 8);
  if (sub == MMA) {
    if (layouts.size() != 2 || layouts[0] != "row") throw DecodeError("wmma.smma.mma needs .row (A) then .row or .col (B)");
    if (types.size() != 2 || types[0] != DType::F32 || types[1] != DType::F32)
      throw DecodeError("wmma.smma.mma takes .f32.f32 (f32 D and C; A and B are f16)");
    need_ops(in, 5);
    need_vec(in, 0, 8, "D");
    need_vec(in, 1, areg, "the values");
    need_vec(in, 2, xreg, "the coordinates");
    need_vec(in, 3, static_cast<size_t>(l / 2), "B (L/16 wmma B fragments)");
    need_vec(in, 4, 8, "C");
    in.unit = Unit::TENSOR;
    in.traits.tensor_math = true;
    in.traits.fragment_operands = 0b11011;  // D, the values, B, C (not the coordinates)
    in.traits.op_class = op_class_id("extensor.smma_l" + std::to_string(l));
    in.fn = &ex_mma;
    return;
  }
  if (!layouts.empty()) throw DecodeError("wmma.smma loads take no layout (values and coordinates are row-major)");
  const bool a = sub == LOAD_A;
  if (a && (types.size() != 1 || types[0] != DType::F16)) throw DecodeError("wmma.smma.load.a takes .f16 values");
  if (!a && !types.empty()) throw DecodeError("wmma.smma.load.x takes no type (coordinates are u8)");
  need_ops(in, 2, 3);
  need_vec(in, 0, a ? areg : xreg, a ? "the values" : "the coordinates");
  if (in.ops[1].kind != OpndKind::Mem) throw DecodeError("expected an address operand [..]");
  in.unit = Unit::LDST;
  in.traits.mem = MemKind::Load;
  in.traits.sched = SchedKind::Load;
  in.fn = &ex_load;
}

// ---- timing ---------------------------------------------------------------------------------------
enum class Skip { Literal, RowSkip, PhaseSkip };

struct PhaseLat {
  Skip skip;
  uint32_t nnz_per_phase, min_block, overhead, interval, blocks;
  // Sum over phases of sum_rows sum_blocks cost(Hist) + overhead (paper 004 Sec. III-B).
  uint32_t latency(const ChunkWork& work) const {
    int kmax = 0;
    for (int r = 0; r < 16; ++r) kmax = std::max<int>(kmax, work.nnz[r]);
    const int npp = static_cast<int>(nnz_per_phase);
    uint32_t total = 0;
    for (int p = 0; p * npp < kmax; ++p) {
      uint32_t hist[16][4] = {};
      bool used[4] = {};
      for (int r = 0; r < 16; ++r)
        for (int j = p * npp; j < std::min<int>((p + 1) * npp, work.nnz[r]); ++j) {
          const int blk = (work.blocks[r][j / 4] >> (2 * (j % 4))) & 3;
          ++hist[r][blk];
          used[blk] = true;
        }
      for (int r = 0; r < 16; ++r)
        for (uint32_t b = 0; b < blocks; ++b) {
          const bool charged = skip == Skip::Literal || (skip == Skip::RowSkip ? hist[r][b] > 0 : used[b]);
          if (charged) total += std::max(hist[r][b], min_block);
        }
      total += overhead;
    }
    return total;
  }
};

int stat(const char* name) { return stat_id(name); }

const uint32_t kHistEdges[] = {32, 64, 128, 256, 512, 1024};

OpClassDef smma_class(int l) {
  const std::string name = "extensor.smma_l" + std::to_string(l);
  return {name, [l](ConfigReader& r, std::string& why) -> std::optional<OpDesc> {
            const uint32_t max_l = r.u32("extensor.max_l");
            const std::string skip = r.str("extensor.block_skip");
            PhaseLat m{skip == "literal" ? Skip::Literal : skip == "row_skip" ? Skip::RowSkip : Skip::PhaseSkip,
                       r.u32("extensor.nnz_per_phase"), r.u32("extensor.min_block_cycles"),
                       r.u32("extensor.phase_overhead_cycles"), r.u32("extensor.initiation_interval"),
                       static_cast<uint32_t>(l / 16)};
            if (skip != "literal" && skip != "row_skip" && skip != "phase_skip")
              throw std::invalid_argument("GPU config key 'extensor.block_skip' must be literal, row_skip or phase_skip");
            if (static_cast<uint32_t>(l) > max_l) {
              why = "L = " + std::to_string(l) + " exceeds extensor.max_l = " + std::to_string(max_l);
              return std::nullopt;
            }
            OpDesc d;
            d.model = [m](const WorkSummary& work) {
              const ChunkWork* chunk = work.get<ChunkWork>();  // (every executed smma.L reports one)
              const uint32_t lat = std::max<uint32_t>(1, chunk ? m.latency(*chunk) : 0);  // an issued instruction takes a cycle
              return OpTiming{lat, m.interval ? m.interval : lat};
            };
            static const int insts = stat("extensor_smma_insts"), sum = stat("extensor_smma_latency_cycles"),
                             busy = stat("extensor_smma_busy_cycles"), hist0 = stat("extensor_smma_latency_lt32");
            d.account = [](Stats& s, const OpTiming& t) {
              s.at(insts) += 1;
              s.at(sum) += t.latency;
              s.at(busy) += t.interval;
              int bucket = 0;
              while (bucket < 6 && t.latency >= kHistEdges[bucket]) ++bucket;
              s.at(hist0 + bucket) += 1;
            };
            return d;
          }};
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

std::vector<StatDef> stats() {
  std::vector<StatDef> s = {
      {"extensor_smma_insts", "extensor", "instructions", "wmma.smma.mma warp instructions issued", StatKind::COUNTER, nullptr},
      {"extensor_smma_latency_cycles", "extensor", "cycles", "sum of their data-dependent latencies (PhaseLat sums)", StatKind::COUNTER, nullptr},
      {"extensor_smma_busy_cycles", "extensor", "cycles", "Tensor Core occupancy of wmma.smma (issue intervals)", StatKind::COUNTER, nullptr},
      {"extensor_smma_mean_latency", "extensor", "cycles", "extensor_smma_latency_cycles / extensor_smma_insts", StatKind::FORMULA,
       [](const Stats& st) { return ratio(st.at(stat("extensor_smma_latency_cycles")), st.at(stat("extensor_smma_insts"))); }},
  };
  const char* names[] = {"lt32", "32_63", "64_127", "128_255", "256_511", "512_1023", "ge1024"};
  for (const char* n : names)
    s.push_back({std::string("extensor_smma_latency_") + n, "extensor", "instructions",
                 std::string("histogram of wmma.smma latencies: instructions with latency in ") + n + " cycles",
                 StatKind::COUNTER, nullptr});
  return s;
}

const int kRegistered = register_extension({
    "extensor", "extensor.enabled", "use an overlay such as titanv+extensor",
    {{"wmma.smma", "", Op::Ext, Unit::TENSOR, &decode, Preset::ALU}},
    {smma_class(16), smma_class(32), smma_class(48), smma_class(64)},
    stats(),
});

}  // namespace
}  // namespace stc
