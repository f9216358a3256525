// Hopper's warpgroup matrix multiply (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
//   wgmma.fence.sync.aligned;  wgmma.commit_group.sync.aligned;  wgmma.wait_group.sync.aligned N;
//   wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}  d, a-desc, b-desc, scale-d, sa, sb, ta, tb;
//   wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}  d, {a0..a3}, b-desc, scale-d, sa, sb, tb;
//   wgmma.mma_async.sp.sync.aligned.m64nNk32...  d, a-desc|{a0..a3}, b-desc, sp-meta, sp-sel, scale-d, sa, sb, [ta,] tb;
// N = 8..256 in steps of 8. D (64 x N, f32) = A (64 x K) x B (K x N) + (scale-d ? D : 0), A scaled by sa and B by
// sb (+1 or -1); ta / tb = 1 read A / B M- / N-major from shared memory. The four warps of the warpgroup
// meet at the instruction (warpgroup.h); the last to arrive computes the whole 64 x N tile. Functionally the
// result is in the accumulator registers at once; wgmma.wait_group keeps the per-warp group accounting
// (docs/isa.md, "Hopper"). Reported as errors (SimFault): no wgmma.fence before a warp's first
// wgmma.mma_async, accumulators written since the last wgmma.mma_async without a wgmma.fence, malformed
// descriptors, operands that differ between the threads of the warpgroup.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "../../func/decode.h"
#include "../../func/exec.h"
#include "../../func/fragment.h"
#include "decoders.h"
#include "descriptor.h"
#include "warpgroup.h"

namespace stc::hopper {
namespace {

enum WgmmaSub : uint8_t { FENCE, COMMIT, WAIT, MMA };

// Operand positions of wgmma.mma_async{.sp}: A is operand 1; the rest follow B (operand 2).
struct MmaOps {
  bool a_regs, sparse;
  size_t meta, sel, scale_d, scale_a, scale_b, trans_a, trans_b;  // trans_a == 0: none (A from registers)
};
MmaOps mma_ops(const Instr& in) {
  MmaOps o{};
  o.a_regs = in.ops[1].kind == OpndKind::Vec;
  o.sparse = in.shape_k == 32;
  size_t i = 3;
  if (o.sparse) { o.meta = i++; o.sel = i++; }
  o.scale_d = i++;
  o.scale_a = i++;
  o.scale_b = i++;
  o.trans_a = o.a_regs ? 0 : i++;
  o.trans_b = i++;
  return o;
}

uint64_t reg_of(const WarpState& w, int32_t reg, int lane) { return w.reg(reg, lane); }

// The value every thread of the warpgroup holds in operand `o` (an error where they differ).
uint64_t uniform(const ExecCtx& c, const Instr& in, const Operand& o, uint32_t first, const char* what) {
  if (o.kind == OpndKind::Imm) return o.imm;
  const uint64_t v = reg_of(c.cta.warps[first], o.reg, 0);
  for (uint32_t w = first; w < first + 4; ++w)
    for (int lane = 0; lane < 32; ++lane)
      if (reg_of(c.cta.warps[w], o.reg, lane) != v)
        hopper_fault(c, in, std::string(what) + " differs between the threads of the warpgroup (warp " +
                                std::to_string(w) + ", lane " + std::to_string(lane) + ")");
  return v;
}

const uint8_t* smem(const ExecCtx& c, const Instr& in, uint32_t addr, uint32_t bytes, const char* what) {
  if (static_cast<uint64_t>(addr) + bytes > c.cta.shared.size())
    hopper_fault(c, in, std::string(what) + " reads shared address 0x" + [&] {
      char b[24]; snprintf(b, sizeof b, "%x", addr); return std::string(b); }() + " past the block's " +
                            std::to_string(c.cta.shared.size()) + " bytes of shared memory");
  return c.cta.shared.data() + addr;
}

MatrixDesc desc_of(const ExecCtx& c, const Instr& in, uint64_t bits, const char* what) {
  MatrixDesc d;
  const std::string why = decode_desc(bits, d);
  if (!why.empty()) hopper_fault(c, in, std::string("malformed matrix descriptor for ") + what + ": " + why);
  return d;
}

// The f16/bf16 element at shared address `addr`, as a float.
float smem_elem(const ExecCtx& c, const Instr& in, DType t, uint32_t addr, const char* what) {
  const uint8_t* p = smem(c, in, addr, 2, what);
  return elem_value(t, static_cast<uint32_t>(p[0] | (p[1] << 8)));
}

// The mn x k tile of an operand in shared memory as floats times `scale`: element (mn, k) to
// out[mn * mn_stride + k * k_stride]. Every layout keeps 8 f16/bf16 elements of a 16-byte line contiguous
// along its leading index (k for K-major, mn for MN-major; descriptor.h), and the swizzle moves whole 16-byte
// lines: a line is read with one address. Where a line is not whole in the shared memory (or the tile is no
// whole number of lines), every element is read on its own in the order `mn_outer` says (A: m then k; B: k
// then n), so a fault names the same first element out of range as before.
void read_tile(const ExecCtx& c, const Instr& in, DType t, const MatrixDesc& d, bool mn_major, uint32_t mns,
               uint32_t ks, float scale, float* out, size_t mn_stride, size_t k_stride, bool mn_outer,
               const char* what) {
  const uint8_t* base = c.cta.shared.data();
  const uint64_t size = c.cta.shared.size();
  const uint32_t outer = mn_major ? ks : mns, inner = mn_major ? mns : ks;
  bool lines = inner % 8 == 0;
  std::vector<uint32_t> addr;
  addr.reserve(static_cast<size_t>(outer) * (inner / 8));
  for (uint32_t o = 0; o < outer && lines; ++o)
    for (uint32_t i = 0; i < inner && lines; i += 8) {
      const uint32_t a = element_address(d, mn_major, 2, mn_major ? i : o, mn_major ? o : i);
      lines = a % 16 == 0 && static_cast<uint64_t>(a) + 16 <= size;
      addr.push_back(a);
    }
  if (!lines) {
    for (uint32_t x = 0; x < (mn_outer ? mns : ks); ++x)
      for (uint32_t y = 0; y < (mn_outer ? ks : mns); ++y) {
        const uint32_t mn = mn_outer ? x : y, k = mn_outer ? y : x;
        out[mn * mn_stride + k * k_stride] = scale * smem_elem(c, in, t, element_address(d, mn_major, 2, mn, k), what);
      }
    return;
  }
  // A line's 8 elements go to out[first + j * step]; the element type is decided once, not per element.
  const size_t step = mn_major ? mn_stride : k_stride;
  const auto lines_as = [&](auto decode) {
    size_t line = 0;
    for (uint32_t o = 0; o < outer; ++o)
      for (uint32_t i = 0; i < inner; i += 8) {
        const uint8_t* p = base + addr[line++];
        float* to = out + (mn_major ? i * mn_stride + o * k_stride : o * mn_stride + i * k_stride);
        for (uint32_t j = 0; j < 8; ++j)
          to[j * step] = scale * decode(static_cast<uint32_t>(p[2 * j] | (p[2 * j + 1] << 8)));
      }
  };
  if (t == DType::F16) lines_as([](uint32_t bits) { return elem_value(DType::F16, bits); });
  else if (t == DType::BF16) lines_as([](uint32_t bits) { return elem_value(DType::BF16, bits); });
  else lines_as([t](uint32_t bits) { return elem_value(t, bits); });
}

void ex_mma_async(ExecCtx& c, const Instr& in) {
  HopperCta& st = hopper_state(c);
  WarpWgmma& me = st.warps[c.w.warp_in_cta];
  const auto& d_regs = in.ops[0].vec;
  if (!me.arrived) {
    if (!me.ever_fenced) hopper_fault(c, in, "no wgmma.fence before the warp's first wgmma.mma_async");
    if (c.L.mma_values && !me.fenced && me.d_regs == d_regs)
      for (size_t r = 0; r < d_regs.size(); ++r)
        for (int lane = 0; lane < 32; ++lane)
          if (reg_of(c.w, d_regs[r], lane) != me.d_vals[r * 32 + static_cast<size_t>(lane)])
            hopper_fault(c, in, "accumulator registers written since the last wgmma.mma_async without a "
                                "wgmma.fence in between (undefined in the PTX ISA)");
  }
  const Arrival a = arrive(c, in, st);
  if (a == Arrival::Wait) return;
  ++me.open;
  me.fenced = false;
  c.rec.work.put(WgmmaWork{static_cast<uint8_t>(d_regs.size() / 4), in.shape_k == 32,
                           !(in.ops.size() > 1 && in.ops[1].kind == OpndKind::Vec)});
  if (a == Arrival::Released) return;
  if (!c.L.mma_values) {  // a cycles-only launch: the rendezvous and the work summary, no arithmetic
    release(c, st);
    return;
  }

  const MmaOps o = mma_ops(in);
  const uint32_t first = c.w.warp_in_cta / 4 * 4;
  const DType ta = in.types[1], tb = in.types[2];
  const int n_cols = static_cast<int>(d_regs.size()) * 2, kd = in.shape_k;
  const bool scale_d = uniform(c, in, in.ops[o.scale_d], first, "scale-d") != 0;
  const float sa = static_cast<int64_t>(in.ops[o.scale_a].imm) < 0 ? -1.0f : 1.0f;
  const float sb = static_cast<int64_t>(in.ops[o.scale_b].imm) < 0 ? -1.0f : 1.0f;
  const bool mn_a = o.trans_a && in.ops[o.trans_a].imm, mn_b = in.ops[o.trans_b].imm != 0;

  // A: 64 x 16 (the kept elements when sparse), from the four warps' fragments or from shared memory.
  std::vector<float> A(64 * 16);
  if (o.a_regs) {
    for (uint32_t w = 0; w < 4; ++w) {
      ExecCtx wc{c.L, c.cta, c.cta.warps[first + w], c.rec, 0xffffffffu, c.smid};
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 8; ++i) {
          const RC p = mma_a(16, lane, i);
          A[static_cast<size_t>(16 * w + static_cast<uint32_t>(p.r)) * 16 + static_cast<size_t>(p.c)] =
              sa * elem_value(ta, static_cast<uint32_t>(frag_get(wc, in.ops[1].vec, lane, i, true)));
        }
    }
  } else {
    const MatrixDesc da = desc_of(c, in, uniform(c, in, in.ops[1], first, "the A descriptor"), "A");
    read_tile(c, in, ta, da, mn_a, 64, 16, sa, A.data(), 16, 1, true, "matrix A");
  }
  // B: kd x N from shared memory.
  const MatrixDesc db = desc_of(c, in, uniform(c, in, in.ops[2], first, "the B descriptor"), "B");
  std::vector<float> B(static_cast<size_t>(kd) * static_cast<size_t>(n_cols));
  read_tile(c, in, tb, db, mn_b, static_cast<uint32_t>(n_cols), static_cast<uint32_t>(kd), sb, B.data(), 1,
            static_cast<size_t>(n_cols), false, "matrix B");
  // The dense column of each kept element of A: the metadata of rows 16w + g (+8) comes from lanes
  // 4g + 2 sel + j of warp w (j = 0, 1: chunks 4j..4j+3), as in mma.sp m16n8k32.
  std::vector<int> col(64 * 16);
  for (int m = 0; m < 64; ++m)
    for (int i = 0; i < 16; ++i) col[static_cast<size_t>(m * 16 + i)] = i;
  if (o.sparse) {
    const int sel = static_cast<int>(in.ops[o.sel].imm);
    for (int m = 0; m < 64; ++m) {
      const WarpState& w = c.cta.warps[first + static_cast<uint32_t>(m / 16)];
      const int g = m % 8, half = (m % 16) / 8;
      for (int ch = 0; ch < 8; ++ch) {
        const uint32_t word = static_cast<uint32_t>(reg_of(w, in.ops[o.meta].reg, 4 * g + 2 * sel + ch / 4));
        const uint32_t nib = (word >> (16 * half + 4 * (ch % 4))) & 0xfu;
        for (int s = 0; s < 2; ++s)
          col[static_cast<size_t>(m * 16 + 2 * ch + s)] = 4 * ch + static_cast<int>((nib >> (2 * s)) & 3u);
      }
    }
  }
  // D = A B + (scale-d ? D : 0), in fp32 in order of k (f16 x f16 products are exact in fp32): each element
  // starts from its accumulator (or 0) and adds A[m][k] x B[col][n] for k = 0..15 in turn, a product rounded
  // and then added (no fused multiply-add). Every accumulator is read before any is written (a register may
  // appear twice in D), into acc[w][i][lane]: register i of lane 4r + q of warp w holds D element (row
  // 16w + r (+8 for (i / 2) odd), column 8 (i / 4) + 2q + i % 2), so registers 4j + 2h and 4j + 2h + 1 of
  // lanes 4r .. 4r + 3 hold columns 8j .. 8j + 7 of one row, interleaved: the eight are one vector (the same
  // operations in the same order per element as one element at a time).
  using V8 = float __attribute__((vector_size(32)));
  const size_t cols = static_cast<size_t>(n_cols), nregs = d_regs.size();
  std::vector<float> acc(4 * nregs * 32);
  for (uint32_t w = 0; w < 4; ++w) {
    const WarpState& ws = c.cta.warps[first + w];
    for (size_t i = 0; i < nregs; ++i)
      for (int lane = 0; lane < 32; ++lane)
        acc[(w * nregs + i) * 32 + static_cast<size_t>(lane)] = scale_d ? f32_from_bits(ws.reg(d_regs[i], lane)) : 0.0f;
  }
  for (uint32_t w = 0; w < 4; ++w)
    for (size_t h = 0; h < 2; ++h)
      for (size_t r = 0; r < 8; ++r) {
        const size_t m = 16 * w + 8 * h + r;
        const float* brow[16];
        for (size_t k = 0; k < 16; ++k) brow[k] = B.data() + static_cast<size_t>(col[m * 16 + k]) * cols;
        const float* arow = A.data() + m * 16;
        for (size_t j = 0; j < cols / 8; ++j) {
          float* even = acc.data() + (w * nregs + 4 * j + 2 * h) * 32 + 4 * r;  // columns 8j + 2q
          float* odd = even + 32;                                                // columns 8j + 2q + 1
          V8 sum = {even[0], odd[0], even[1], odd[1], even[2], odd[2], even[3], odd[3]};
          for (size_t k = 0; k < 16; ++k) {
            V8 b;
            std::memcpy(&b, brow[k] + 8 * j, sizeof b);
            sum = sum + arow[k] * b;
          }
          for (int q = 0; q < 4; ++q) {
            even[q] = sum[2 * q];
            odd[q] = sum[2 * q + 1];
          }
        }
      }
  for (uint32_t w = 0; w < 4; ++w) {
    WarpState& ws = c.cta.warps[first + w];
    WarpWgmma& wm = st.warps[first + w];
    wm.d_regs = d_regs;
    wm.d_vals.resize(nregs * 32);  // every entry written below: what each register holds now
    for (size_t i = 0; i < nregs; ++i) {
      uint64_t* vals = wm.d_vals.data() + i * 32;
      const float* from = acc.data() + (w * nregs + i) * 32;
      for (int lane = 0; lane < 32; ++lane) {
        const uint64_t bits = bits_from_f32(from[lane]);
        ws.set_reg(d_regs[i], lane, bits);
        vals[lane] = bits;  // as ws.reg reads it back: a register keeps (at least) the low 32 bits
      }
    }
  }
  release(c, st);
}

void ex_fence(ExecCtx& c, const Instr&) {
  WarpWgmma& me = hopper_state(c).warps[c.w.warp_in_cta];
  me.ever_fenced = me.fenced = true;
}

void ex_commit(ExecCtx& c, const Instr&) {
  WarpWgmma& me = hopper_state(c).warps[c.w.warp_in_cta];
  ++me.groups;
  me.open = 0;
}

void ex_wait(ExecCtx& c, const Instr& in) {
  WarpWgmma& me = hopper_state(c).warps[c.w.warp_in_cta];
  me.groups = std::min<uint32_t>(me.groups, static_cast<uint32_t>(in.ops[0].imm));
}

// ---- decode ---------------------------------------------------------------------------------------
bool parse_shape(const std::string& m, int& n, int& k) {
  if (m.size() < 7 || m.compare(0, 4, "m64n") != 0) return false;
  const size_t kpos = m.find('k', 4);
  if (kpos == std::string::npos) return false;
  const std::string ns = m.substr(4, kpos - 4), ks = m.substr(kpos + 1);
  if (ns.empty() || ks.empty() || ns.find_first_not_of("0123456789") != std::string::npos ||
      ks.find_first_not_of("0123456789") != std::string::npos || ns.size() > 3 || ks.size() > 3)
    return false;
  n = std::stoi(ns);
  k = std::stoi(ks);
  return true;
}

void need_imm(const Instr& in, size_t i, const char* what, std::initializer_list<int64_t> allowed) {
  const Operand& o = in.ops[i];
  if (o.kind != OpndKind::Imm) throw DecodeError(std::string("wgmma.mma_async: ") + what + " must be an integer constant");
  for (int64_t v : allowed)
    if (static_cast<int64_t>(o.imm) == v) return;
  throw DecodeError(std::string("wgmma.mma_async: ") + what + " must be one of its allowed constants, got " +
                    std::to_string(static_cast<int64_t>(o.imm)));
}

void need_reg(const Instr& in, size_t i, const char* what) {
  if (in.ops[i].kind != OpndKind::Reg || in.ops[i].reg < 0)
    throw DecodeError(std::string("wgmma.mma_async: ") + what + " must be a register");
}

void decode_mma(Instr& in) {
  bool sync = false, aligned = false, sparse = false;
  int n = 0, k = 0;
  std::vector<DType> types;
  for (size_t i = 1; i < in.mods.size(); ++i) {
    const std::string& m = in.mods[i];
    if (m == "sync") sync = true;
    else if (m == "aligned") aligned = true;
    else if (m == "sp") sparse = true;
    else if (parse_shape(m, n, k)) {}
    else if (dtype_from_name(m) != DType::None) types.push_back(dtype_from_name(m));
    else unsupported(in, "modifier ." + m + " (wgmma.mma_async{.sp}.sync.aligned.m64nNkK.f32.{f16,bf16}.{f16,bf16})");
  }
  if (!sync || !aligned) throw DecodeError("wgmma.mma_async needs .sync.aligned");
  if (!n) throw DecodeError("wgmma.mma_async needs a shape .m64nNk16 (.m64nNk32 with .sp)");
  if (n < 8 || n > 256 || n % 8) throw DecodeError("wgmma.mma_async: N must be 8..256 in steps of 8, got " + std::to_string(n));
  if (k != (sparse ? 32 : 16))
    unsupported(in, std::string("wgmma shape .m64n") + std::to_string(n) + "k" + std::to_string(k) +
                        " (f16/bf16 take k16, k32 with .sp)");
  if (types.size() != 3 || types[0] != DType::F32 || (types[1] != DType::F16 && types[1] != DType::BF16) ||
      types[2] != types[1])
    unsupported(in, "wgmma types (.f32.f16.f16 and .f32.bf16.bf16 are supported)");
  const bool a_regs = in.ops.size() > 1 && in.ops[1].kind == OpndKind::Vec;
  const size_t nops = 3 + (sparse ? 2 : 0) + 3 + (a_regs ? 1 : 2);
  need_ops(in, nops);
  need_vec(in, 0, static_cast<size_t>(n / 2), "D (N/2 f32 registers)");
  if (a_regs) need_vec(in, 1, 4, "A (four .b32 registers of f16x2)");
  else need_reg(in, 1, "the A descriptor");
  need_reg(in, 2, "the B descriptor");
  in.shape_m = 64;
  in.shape_k = static_cast<uint8_t>(k);
  in.types[0] = types[0];
  in.types[1] = types[1];
  in.types[2] = types[2];
  const MmaOps o = mma_ops(in);
  if (sparse) {
    need_reg(in, o.meta, "the sparsity metadata");
    need_imm(in, o.sel, "the sparsity selector", {0, 1});
  }
  const Operand& sd = in.ops[o.scale_d];
  if (!(sd.kind == OpndKind::Reg && sd.reg >= 0) && !(sd.kind == OpndKind::Imm && sd.imm <= 1))
    throw DecodeError("wgmma.mma_async: scale-d must be a predicate or 0/1");
  need_imm(in, o.scale_a, "imm-scale-a", {1, -1});
  need_imm(in, o.scale_b, "imm-scale-b", {1, -1});
  if (o.trans_a) need_imm(in, o.trans_a, "imm-trans-a", {0, 1});
  need_imm(in, o.trans_b, "imm-trans-b", {0, 1});
  in.sub = MMA;
  in.unit = Unit::TENSOR;
  in.traits.tensor_math = true;
  in.traits.fragment_operands = in.ops[1].kind == OpndKind::Vec ? 0b11 : 0b1;  // D (and A from registers)
  in.traits.op_class = op_class_id(sparse ? "hopper.wgmma_sp" : "hopper.wgmma");
  in.fn = &ex_mma_async;
}

}  // namespace

void decode_wgmma(Instr& in, const Kernel& k) {
  // ptxas: "Instruction 'wgmma.fence' not supported on .target 'sm_90'" (and on every target but sm_90a)
  if (k.sm && !(k.sm == 90 && k.arch_specific)) throw DecodeError("'" + in.opcode + "' requires .target sm_90a");
  if (in.mods.empty()) throw DecodeError("wgmma needs .fence, .commit_group, .wait_group or .mma_async");
  in.traits.sched = SchedKind::Fence;
  in.traits.writes_dst = false;
  in.traits.sm_local = true;  // registers and its CTA's shared memory (descriptors)
  const std::string& what = in.mods[0];
  if (what == "mma_async") {  // asynchronous: its accumulators are complete at the wait for its group
    in.traits.async_group = true;
    decode_mma(in);
    return;
  }
  if (in.mods.size() != 3 || in.mods[1] != "sync" || in.mods[2] != "aligned")
    throw DecodeError("wgmma." + what + " takes exactly .sync.aligned");
  in.unit = Unit::SYNC;
  in.traits.op_class = op_class_id("hopper.wgmma_sync");
  if (what == "fence" || what == "commit_group") {
    need_ops(in, 0);
    in.sub = what == "fence" ? FENCE : COMMIT;
    in.fn = what == "fence" ? &ex_fence : &ex_commit;
    if (what == "commit_group") in.traits.async = AsyncKind::Commit;
  } else if (what == "wait_group") {
    need_ops(in, 1);
    if (in.ops[0].kind != OpndKind::Imm || in.ops[0].imm > 1000)
      throw DecodeError("wgmma.wait_group takes an integer constant N");
    in.traits.async = AsyncKind::WaitGroup;
    in.sub = WAIT;
    in.fn = &ex_wait;
  } else {
    unsupported(in, "wgmma." + what + " (fence, commit_group, wait_group and mma_async are supported)");
  }
}

}  // namespace stc::hopper
