// The Tensor Memory Accelerator's tiled copy (PTX ISA, "cp.async.bulk.tensor"), global -> shared:
//   cp.async.bulk.tensor.Nd.shared::{cluster,cta}.global{.tile}.mbarrier::complete_tx::bytes
//       [dst], [tensor-map, {c0, .., cN-1}], [mbar];                                  (N = 1..5)
// Each active thread copies one box: element (i0, .., iN-1) of the box (i_d counts the box's elements along
// d, element_strides apart) is global element c + i * estride; it lands at shared dst + the box's row-major
// offset, under the map's swizzle (Swizzle<s,4,3> on the absolute shared address, as wgmma reads it).
// Elements outside the tensor are filled with zero (or NaN, per the map). The box's bytes are then
// counted into the mbarrier (complete_tx). Functionally the copy happens at issue; the timing model counts
// the copy engine's latency and bandwidth into the barrier's phase (register.cc, hopper.tma_*), and the
// copy's global sectors go through the L2 slices and DRAM (a BulkCopyWork; completion_time.cc), whose
// arrival bounds the waits on the barrier from below.
// Reported as errors: a parameter that is not a tensor map of stcsim's encoding, a map whose rank differs
// from .Nd, a misaligned destination, interleaved maps (not modelled).
#include <algorithm>
#include <cstring>
#include <string>

#include "../../func/decode.h"
#include "../../func/exec.h"
#include "decoders.h"
#include "mbarrier.h"
#include "tensor_map.h"
#include "warpgroup.h"

namespace stc::hopper {

std::string decode_tensor_map(const uint8_t* p, TensorMap& m) {
  uint32_t magic = 0;
  std::memcpy(&magic, p, 4);
  if (magic != 0x504d5453u || p[4] != 1)
    return "it is not a tensor map of stcsim's encoding (build it with stcsim.sim.tensor_map.TensorMap)";
  m.elem_bytes = p[5];
  m.rank = p[6];
  m.swizzle = p[7];
  m.oob_nan = p[9];
  m.is_float = p[10] != 0;
  if (p[8] != 0) return "interleaved tensor maps are not modelled";
  if (m.rank < 1 || m.rank > 5 || m.swizzle > 3 || (m.elem_bytes != 1 && m.elem_bytes != 2 && m.elem_bytes != 4 &&
                                                     m.elem_bytes != 8))
    return "its rank, swizzle or element size is out of range";
  std::memcpy(&m.address, p + 16, 8);
  for (uint32_t d = 0; d < 5; ++d) {
    uint32_t dim = 0;
    uint16_t box = 0;
    std::memcpy(&dim, p + 24 + 4 * d, 4);
    std::memcpy(&box, p + 80 + 2 * d, 2);
    m.dims[d] = d < m.rank ? dim : 1;
    m.box[d] = d < m.rank ? box : 1;
    m.estride[d] = d < m.rank ? p[90 + d] : 1;
    if (d > 0) std::memcpy(&m.strides[d], p + 48 + 8 * (d - 1), 8);
    if (d < m.rank && (!m.dims[d] || !m.box[d] || !m.estride[d])) return "a dimension, box or element stride is zero";
  }
  m.strides[0] = m.elem_bytes;
  return "";
}

namespace {

uint32_t swizzle_shared(uint32_t swizzle, uint32_t addr) {
  const uint32_t mask = (1u << swizzle) - 1;  // 32B: 1 bit, 64B: 2, 128B: 3
  return addr ^ (((addr >> 7) & mask) << 4);
}

void ex_tensor_copy(ExecCtx& c, const Instr& in) {
  const Operand& src = in.ops[1];
  bool first = true;
  uint64_t key = 0;  // the mbarrier the warp's copies count into (0: lanes named different ones)
  for_lanes(c.mask, [&](int lane) {
    const uint64_t map_addr = mem_addr(c, src, lane);
    TensorMap m;
    const std::string why = decode_tensor_map(mem_access(c, Space::Generic, map_addr, 128, lane, false, 64), m);
    if (!why.empty()) hopper_fault(c, in, "the tensor-map operand is malformed: " + why);
    if (m.rank != in.shape_k)
      hopper_fault(c, in, "the tensor map has rank " + std::to_string(m.rank) + ", the instruction is ." +
                              std::to_string(in.shape_k) + "d");
    int64_t coord[5] = {0, 0, 0, 0, 0};
    for (uint32_t d = 0; d < m.rank; ++d) {
      const int32_t r = src.vec[d];
      coord[d] = static_cast<int32_t>(r == -2 ? src.vec_imm[d] : c.w.reg(r, lane));
    }
    const uint64_t dst = mem_addr(c, in.ops[0], lane);
    if (dst % 128) hopper_fault(c, in, "the shared destination must be 128-byte aligned");
    if (m.swizzle && (coord[0] * m.elem_bytes) % 16)  // measured: cudaErrorIllegalInstruction on the H100
      hopper_fault(c, in, "with a swizzled tensor map the box must start on a 16-byte boundary of its row (byte " +
                              std::to_string(coord[0] * m.elem_bytes) + "): the H100 raises an illegal instruction");
    uint32_t count[5];
    uint64_t total = 1;
    for (uint32_t d = 0; d < 5; ++d) {
      count[d] = (m.box[d] + m.estride[d] - 1) / m.estride[d];
      total *= count[d];
    }
    const uint32_t eb = m.elem_bytes;
    // Box element e = i0 + count0 (i1 + count1 (...)): rows of count[0] elements along dimension 0; a row's
    // offset and whether it lies inside the tensor along dimensions 1..4 are found once per row.
    const uint64_t rows = total / count[0];
    // The box lands in whole 128-byte lines of the shared memory (the swizzle moves 16-byte pieces within
    // their line), so no piece of it can fault.
    const bool box_in_shared = (total * eb) % 128 == 0 && dst + total * eb <= c.cta.shared.size();
    uint64_t e = 0;
    for (uint64_t row = 0; row < rows; ++row) {
      uint64_t rest = row, row_off = 0;
      bool row_inside = true;
      for (uint32_t d = 1; d < 5; ++d) {
        const int64_t i = static_cast<int64_t>(rest % count[d]);
        rest /= count[d];
        const int64_t g = coord[d] + i * m.estride[d];
        if (g < 0 || g >= static_cast<int64_t>(m.dims[d])) row_inside = false;
        else row_off += static_cast<uint64_t>(g) * m.strides[d];
      }
      const int64_t row_end = coord[0] + static_cast<int64_t>(count[0]);
      if (box_in_shared && row_inside && m.estride[0] == 1 && coord[0] >= 0 &&
          row_end <= static_cast<int64_t>(m.dims[0]) &&
          c.L.mem->find(m.address + row_off + static_cast<uint64_t>(coord[0]) * eb, uint64_t{count[0]} * eb)) {
        // A whole row inside the tensor and its allocation: copied in pieces that end where a 16-byte line
        // of the (unswizzled) destination ends, one access on each side per piece; the bytes, and the runs
        // of addresses the accesses record, are those of the element-by-element copy below.
        for (uint32_t i0 = 0; i0 < count[0];) {
          const uint64_t at = dst + e * eb;
          const uint32_t n = std::min(count[0] - i0, static_cast<uint32_t>((16 - at % 16) / eb));
          const uint32_t bytes = n * eb;
          uint8_t* to = mem_access(c, Space::Shared, swizzle_shared(m.swizzle, static_cast<uint32_t>(at)), bytes,
                                   lane, true, 1);
          const uint64_t off = row_off + static_cast<uint64_t>(coord[0] + i0) * m.strides[0];
          std::memcpy(to, mem_access(c, Space::Global, m.address + off, bytes, lane, false, 1), bytes);
          i0 += n;
          e += n;
        }
        continue;
      }
      for (uint32_t i0 = 0; i0 < count[0]; ++i0, ++e) {
        const int64_t g = coord[0] + static_cast<int64_t>(i0) * m.estride[0];
        const bool inside = row_inside && g >= 0 && g < static_cast<int64_t>(m.dims[0]);
        const uint32_t s = swizzle_shared(m.swizzle, static_cast<uint32_t>(dst + e * eb));
        uint8_t* to = mem_access(c, Space::Shared, s, eb, lane, true, 1);
        if (inside) {
          const uint64_t off = row_off + static_cast<uint64_t>(g) * m.strides[0];
          std::memcpy(to, mem_access(c, Space::Global, m.address + off, eb, lane, false, 1), eb);
        } else if (m.oob_nan && m.is_float) {
          const uint64_t nan = eb == 2 ? 0x7fffu : eb == 4 ? 0x7fffffffu : 0x7fffffffffffffffull;
          store_bits(to, nan, eb);
        } else {
          std::memset(to, 0, eb);
        }
      }
    }
    const uint64_t bar_addr = mem_addr(c, in.ops[2], lane);
    uint8_t* bar = mem_access(c, Space::Shared, bar_addr, 8, lane, true, 8);
    if (!mbarrier_load(bar).init) hopper_fault(c, in, "the mbarrier operand is not initialised (mbarrier.init)");
    note_tma(c, bar_addr, total * eb);
    key = first || key == bar_addr ? bar_addr : 0;
    first = false;
    if (!mbarrier_tx(c.cta, bar, -static_cast<int64_t>(total * eb)))
      hopper_fault(c, in, "mbarrier tx-count leaves its range -(2^20-1)..2^20-1");
  });
  if (!first) c.rec.work.put(BulkCopyWork{key});
}

}  // namespace

void decode_tma(Instr& in, const Kernel& k) {
  if (k.sm && k.sm < 90) throw DecodeError("'" + in.opcode + "' requires .target sm_90");
  // mods: async bulk tensor Nd dst src [tile] mbarrier::complete_tx::bytes
  const std::vector<std::string>& m = in.mods;
  if (m.size() < 6 || m[0] != "async" || m[1] != "bulk" || m[2] != "tensor")
    unsupported(in, "cp.async.bulk form (cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes)");
  const std::string& nd = m[3];
  if (nd.size() != 2 || nd[1] != 'd' || nd[0] < '1' || nd[0] > '5') throw DecodeError("cp.async.bulk.tensor needs .1d .. .5d");
  bool dst = false, srcg = false, bar = false;
  for (size_t i = 4; i < m.size(); ++i) {
    if (m[i] == "shared::cluster" || m[i] == "shared::cta") dst = true;
    else if (m[i] == "global") srcg = true;
    else if (m[i] == "tile") {}
    else if (m[i] == "mbarrier::complete_tx::bytes") bar = true;
    else unsupported(in, "modifier ." + m[i] + " of cp.async.bulk.tensor (global -> shared tile copies with an "
                         "mbarrier; no multicast, cache hints, im2col or stores)");
  }
  if (!dst || !srcg || !bar)
    throw DecodeError("cp.async.bulk.tensor: only .shared::cluster.global(.tile).mbarrier::complete_tx::bytes is supported");
  need_ops(in, 3);
  for (size_t i = 0; i < 3; ++i)
    if (in.ops[i].kind != OpndKind::Mem) throw DecodeError("cp.async.bulk.tensor operands are addresses [..]");
  if (in.ops[1].vec.size() != static_cast<size_t>(nd[0] - '0'))
    throw DecodeError("cp.async.bulk.tensor ." + nd + " needs " + std::string(1, nd[0]) + " coordinates {..}");
  in.shape_k = static_cast<uint8_t>(nd[0] - '0');
  in.unit = Unit::LDST;
  in.space = Space::Shared;
  in.traits.writes_dst = false;
  in.traits.sched = SchedKind::Fence;
  in.traits.op_class = op_class_id("hopper.tma");
  in.fn = &ex_tensor_copy;
}

}  // namespace stc::hopper
