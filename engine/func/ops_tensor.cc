// Warp-level matrix instructions: wmma.load/store/mma (m16n16k16), mma.sync (m16n8k8, m16n8k16), the 2:4
// sparse mma.sp (m16n8k32) and ldmatrix. Fragment layouts: mma.sync, mma.sp and ldmatrix follow the PTX ISA
// exactly; the wmma layout (which the ISA leaves unspecified) is built from the mma.sync m16n8k16 fragments
// and documented in docs/isa.md.
#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "decode.h"
#include "operands.h"
#include "exec.h"
#include "fragment.h"
#include "fragment_simd.h"

namespace stc {
namespace {

enum WmmaSub : uint8_t { W_LOAD_A, W_LOAD_B, W_LOAD_C, W_STORE_D, W_MMA };

// D = A * B + C for an M x N x K warp tile with fp32 accumulation of exact fp16/bf16 products, summed in k order
// (tile_product: 8-wide where the host has AVX2, else 4-wide; bit-identical either way).
template <int M, int N, int K>
void warp_mma(ExecCtx& c, const Instr& in, const FragTable& ta, const FragTable& tb, const FragTable& tc) {
  float A[16][16], B[16][16], C[16][16], D[16][16];
  const bool finite_a = gather(c, in.ops[1].vec, in.types[1], ta, A);
  const bool finite_b = gather(c, in.ops[2].vec, in.types[2], tb, B);
  gather(c, in.ops[3].vec, in.types[3], tc, C);
  if (M == 16 && simd_fragments()) tile_mma_avx(N, K, A, B, C, D, finite_a && finite_b);
  else tile_product<4, M, N, K>(A, B, C, D);
  scatter(c, in.ops[0].vec, in.types[0], tc, D);
}

// Whether an mma.sync / wmma.mma of a full warp is f32 += f16 x f16 with ND, NA, NB, NC registers, every
// one a 32-bit slot (none the sink, none wide: tested on the OR of their numbers): the operands the host
// kernels that read the registers' lanes directly take (fragment_simd.h).
template <size_t ND, size_t NA, size_t NB, size_t NC>
bool direct_f16_f32(const ExecCtx& c, const Instr& in) {
  if (c.mask != ~0u || in.types[0] != DType::F32 || in.types[1] != DType::F16 || in.types[2] != DType::F16 ||
      in.types[3] != DType::F32)
    return false;
  const auto regs = [&](size_t op, auto n) {  // the OR of the operand's register numbers (-1: not n of them)
    const std::vector<int32_t>& v = in.ops[op].vec;
    if (v.size() != n()) return int32_t{-1};
    int32_t x = 0;
    for (size_t j = 0; j < n(); ++j) x |= v[j];
    return x;
  };
  const int32_t any = regs(0, std::integral_constant<size_t, ND>{}) | regs(1, std::integral_constant<size_t, NA>{}) |
                      regs(2, std::integral_constant<size_t, NB>{}) | regs(3, std::integral_constant<size_t, NC>{});
  return any >= 0 && !(any & kWideSlot);
}

// mma.sync m16n8k16 f32 += f16 x f16 through the host kernel on the registers' lanes (the same bits as
// warp_mma); false where it does not apply.
bool mma_direct(ExecCtx& c, const Instr& in) {
  if (in.shape_k != 16 || !direct_f16_f32<4, 4, 2, 4>(c, in)) return false;
  const auto col = [&](size_t op, size_t i) { return c.w.col32(in.ops[op].vec[i]); };
  const uint32_t* const a[4] = {col(1, 0), col(1, 1), col(1, 2), col(1, 3)};
  const uint32_t* const b[2] = {col(2, 0), col(2, 1)};
  const uint32_t* const cc[4] = {col(3, 0), col(3, 1), col(3, 2), col(3, 3)};
  uint32_t* const d[4] = {col(0, 0), col(0, 1), col(0, 2), col(0, 3)};
  return mma_m16n8k16_f16_f32(a, b, cc, d);
}

void ex_mma(ExecCtx& c, const Instr& in) {
  if (!c.L.mma_values || mma_direct(c, in)) return;
  static const FragTable a16 = make_table(8, [](int l, int i) { return mma_a(16, l, i); });
  static const FragTable a8 = make_table(4, [](int l, int i) { return mma_a(8, l, i); });
  static const FragTable b16 = make_table(4, [](int l, int i) { return mma_b(16, l, i); });
  static const FragTable b8 = make_table(2, [](int l, int i) { return mma_b(8, l, i); });
  static const FragTable cd = make_table(4, mma_c);
  if (in.shape_k == 16) warp_mma<16, 8, 16>(c, in, a16, b16, cd);
  else warp_mma<16, 8, 8>(c, in, a8, b8, cd);
}

// ---- mma.sp m16n8k32 (.f16 / .bf16): operands d, a, b, c, e (metadata register), f (sparsity selector) --
// A is the compressed 16 x 16 tile (two kept elements per four-wide chunk of the dense 16 x 32 row) in the
// dense m16n8k16 A layout: compressed column 2*ch + s is the s-th kept element of chunk ch. The metadata of
// group g (lanes 4g..4g+3) comes from lanes 4g + 2f + j, j = 0, 1: lane j covers chunks 4j..4j+3, and
// bits [4c+3:4c] of its word hold the two 2-bit column indices (low pair first) of chunk 4j + c of row g,
// bits [16+4c+3:16+4c] those of row g + 8 (PTX ISA "Sparse matrix storage" and the m16n8k32 .f16 metadata
// figure; the same layout as stcsim/sparsity/mma_sp.py).
struct SparseRow {
  int k[16];    // dense column of each kept element, chunk by chunk (ascending k for ordered metadata)
  float a[16];  // its value
};

// The 16 rows of the dense A, as the kept (column, value) pairs the metadata selects.
void expand_sparse_a(const ExecCtx& c, const Instr& in, SparseRow (&rows)[16]) {
  static const FragTable a16 = make_table(8, [](int l, int i) { return mma_a(16, l, i); });
  float V[16][16];
  gather(c, in.ops[1].vec, in.types[1], a16, V);
  const LaneSrc e = reg_lanes(c, in.ops[4].reg);
  const int sel = static_cast<int>(in.ops[5].imm);
  for (int m = 0; m < 16; ++m) {
    const int g = m & 7, half = m >> 3;
    for (int ch = 0; ch < 8; ++ch) {
      const uint32_t word = static_cast<uint32_t>(e[4 * g + 2 * sel + ch / 4]);
      const uint32_t nib = (word >> (16 * half + 4 * (ch % 4))) & 0xfu;
      for (int s = 0; s < 2; ++s) {
        rows[m].k[2 * ch + s] = 4 * ch + static_cast<int>((nib >> (2 * s)) & 3u);
        rows[m].a[2 * ch + s] = V[m][2 * ch + s];
      }
    }
  }
}

// D = A * B + C for m16n8k32 with A 2:4 sparse: only the kept elements are multiplied (as the hardware, which
// selects rows of B by the metadata), exactly in fp32, and accumulated in fp32 in order of the kept elements.
void ex_mma_sp(ExecCtx& c, const Instr& in) {
  if (!c.L.mma_values) return;
  static const FragTable b32 = make_table(8, [](int l, int i) { return mma_b(32, l, i); });
  static const FragTable cd = make_table(4, mma_c);
  SparseRow rows[16];
  float B[32][16], C[16][16];
  expand_sparse_a(c, in, rows);
  gather(c, in.ops[2].vec, in.types[2], b32, B);
  gather(c, in.ops[3].vec, in.types[3], cd, C);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float acc = C[m][n];
      for (int i = 0; i < 16; ++i) acc += rows[m].a[i] * B[rows[m].k[i]][n];
      C[m][n] = acc;
    }
  const DType td = in.types[0];
  const auto& rd = in.ops[0].vec;
  for_lanes(c.mask, [&](int lane) {
    for (int i = 0; i < cd.n; ++i)
      frag_set(c, rd, lane, i, is_half(td), elem_bits(td, C[cd.r[lane][i]][cd.c[lane][i]]));
  });
}

// wmma.mma m16n16k16 f32 += f16 x f16 through the host kernel on the registers' lanes (the same bits as
// warp_mma); false where it does not apply. A's and B's registers 4-7 hold the elements of 0-3 again: the
// fragment tables' gather takes the later ones (FragTable::overwritten), and so does this.
bool wmma_mma_direct(ExecCtx& c, const Instr& in) {
  if (!direct_f16_f32<8, 8, 8, 8>(c, in)) return false;
  const auto col = [&](size_t op, size_t i) { return c.w.col32(in.ops[op].vec[i]); };
  const uint32_t* const a[4] = {col(1, 4), col(1, 5), col(1, 6), col(1, 7)};
  const uint32_t* const b[4] = {col(2, 4), col(2, 5), col(2, 6), col(2, 7)};
  const uint32_t* const cc[8] = {col(3, 0), col(3, 1), col(3, 2), col(3, 3), col(3, 4), col(3, 5), col(3, 6), col(3, 7)};
  uint32_t* const d[8] = {col(0, 0), col(0, 1), col(0, 2), col(0, 3), col(0, 4), col(0, 5), col(0, 6), col(0, 7)};
  return mma_m16n16k16_f16_f32(a, b, cc, d);
}

void ex_wmma_mma(ExecCtx& c, const Instr& in) {
  if (!c.L.mma_values || wmma_mma_direct(c, in)) return;
  static const FragTable a = make_table(16, wmma_a);
  static const FragTable b = make_table(16, wmma_b);
  static const FragTable cd = make_table(8, wmma_c);
  warp_mma<16, 16, 16>(c, in, a, b, cd);
}

// Whether the first n fragment registers are distinct registers (not the sink): then a lane's loaded
// elements can be written register by register, in any order, with the same result as element by element.
bool distinct_regs(const std::vector<int32_t>& regs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (regs[i] < 0) return false;
    for (size_t j = 0; j < i; ++j)
      if (regs[j] == regs[i]) return false;
  }
  return true;
}

// Writes one lane's loaded fragment elements v[0..nmem) (and their duplicates nmem..nelem) into the
// fragment registers. With distinct registers each register is written once (two 16-bit elements packed
// into its 32 bits: the slot's high bits are cleared, which no reader of a 32-bit register can see, as every
// instruction reads a register as a type no wider than it); otherwise element by element.
void write_fragment(ExecCtx& c, const std::vector<int32_t>& regs, int lane, const uint64_t* v, int nmem, int nelem,
                    bool half, bool distinct) {
  if (!distinct) {
    for (int e = 0; e < nmem; ++e) {
      frag_set(c, regs, lane, e, half, v[e]);
      if (nmem < nelem) frag_set(c, regs, lane, e + nmem, half, v[e]);
    }
    return;
  }
  const auto put = [&](int reg_index, uint64_t bits) { c.w.set_reg(regs[static_cast<size_t>(reg_index)], lane, bits); };
  if (half) {
    const int nr = nmem / 2;
    for (int j = 0; j < nr; ++j) {
      const uint64_t bits = (v[2 * j] & 0xffff) | ((v[2 * j + 1] & 0xffff) << 16);
      put(j, bits);
      if (nmem < nelem) put(j + nr, bits);
    }
  } else {
    for (int e = 0; e < nmem; ++e) {
      put(e, v[e]);
      if (nmem < nelem) put(e + nmem, v[e]);
    }
  }
}

// Where a lane's fragment elements lie relative to the operand's address, for one fragment kind, layout,
// element size and stride: runs of elements adjacent in memory (each one access), in element order.
struct WmmaPlan {
  uint64_t key;  // 0: unused (a real key has bit 44 set)
  struct Run {
    uint64_t off;  // bytes from the operand's address
    uint8_t e;     // first element
    uint8_t len;   // elements
  };
  Run runs[32][8];
  uint8_t nruns[32];
  uint64_t elem[32][8];  // bytes from the operand's address to each element
  uint64_t extent;  // bytes from the address to the end of the furthest element
  // The access records of the last use (record_planned), relative to the operand's address, and the lanes
  // and space they were made for (lanes 0: none yet).
  MemAccess records[32 * 8];
  uint32_t nrecords;
  uint32_t records_lanes;
  Space records_space;
  // The 16-bit pairs of a load into distinct registers, register-major: pair j of each lane (its two
  // elements' offsets), and whether every pair is adjacent in memory (low element first).
  uint64_t pair_lo[4][32], pair_hi[4][32];
  bool pairs_adjacent;
  // Pair j's words of lanes 4g..4g+3 are 16 adjacent bytes (in lane order) for every g (a row-major A's
  // quads): eight 16-byte copies per register.
  bool pair_quads[4];
  // Pair j's low (high) elements of lanes t, 4 + t, ..., 28 + t are 16 adjacent bytes (in lane order) for
  // every t (a row-major B's columns): eight 16-byte loads per register, interleaved and transposed.
  bool pair_columns[4];
};

// The element addresses of one lane (element (r, c) at base + (row-major ? r*stride + c : c*stride + r)).
void wmma_element_addrs(const FragTable& ft, int lane, int nmem, bool col, uint64_t base, uint64_t stride,
                        uint32_t esize, uint64_t (&ea)[8]) {
  for (int e = 0; e < nmem; ++e) {
    const uint64_t r = ft.r[lane][e], cc = ft.c[lane][e];
    ea[e] = base + (col ? cc * stride + r : r * stride + cc) * esize;
  }
}

// Calls f(first element, elements) for each run of a lane's elements that are adjacent in memory, in order.
template <class F>
void for_runs(const uint64_t (&ea)[8], int nmem, uint32_t esize, F f) {
  for (int e = 0; e < nmem;) {
    int run = 1;
    while (e + run < nmem && ea[e + run] == ea[e] + run * esize) ++run;
    f(e, run);
    e += run;
  }
}

// The plan for (fragment table, layout, element size, stride), from a small per-thread cache.
WmmaPlan& wmma_plan(const FragTable& ft, int kind, int nmem, bool col, uint32_t esize, uint64_t stride) {
  constexpr size_t kSlots = 16;
  thread_local WmmaPlan cache[kSlots];  // zero-initialised: no guard on each access
  const uint64_t key = (stride & 0xffffffffu) | uint64_t{esize} << 32 | uint64_t{col} << 40 | uint64_t(kind) << 41 |
                       uint64_t{1} << 44;
  WmmaPlan& p = cache[(key * 0x9E3779B97F4A7C15ull) >> 60];
  if (p.key == key) return p;
  p.key = key;
  p.extent = 0;
  p.records_lanes = 0;
  for (int lane = 0; lane < 32; ++lane) {
    uint64_t ea[8];
    wmma_element_addrs(ft, lane, nmem, col, 0, stride, esize, ea);
    std::copy(ea, ea + nmem, p.elem[lane]);
    uint8_t n = 0;
    for_runs(ea, nmem, esize, [&](int e, int run) {
      p.runs[lane][n++] = {ea[e], static_cast<uint8_t>(e), static_cast<uint8_t>(run)};
      p.extent = std::max(p.extent, ea[e] + uint64_t{esize} * static_cast<uint32_t>(run));
    });
    p.nruns[lane] = n;
  }
  p.pairs_adjacent = true;
  for (int j = 0; j < nmem / 2 && j < 4; ++j)
    for (int lane = 0; lane < 32; ++lane) {
      p.pair_lo[j][lane] = p.elem[lane][2 * j];
      p.pair_hi[j][lane] = p.elem[lane][2 * j + 1];
      p.pairs_adjacent &= p.pair_hi[j][lane] == p.pair_lo[j][lane] + 2;
    }
  for (int j = 0; j < 4; ++j) {
    bool quads = j < nmem / 2;
    for (int lane = 0; lane < 32 && quads; ++lane)
      quads = p.pair_lo[j][lane] == p.pair_lo[j][lane & ~3] + 4 * static_cast<uint64_t>(lane & 3);
    p.pair_quads[j] = quads;
    bool columns = j < nmem / 2 && esize == 2;
    for (int lane = 0; lane < 32 && columns; ++lane) {
      const uint64_t step = 2 * static_cast<uint64_t>(lane >> 2);
      columns = p.pair_lo[j][lane] == p.pair_lo[j][lane & 3] + step && p.pair_hi[j][lane] == p.pair_hi[j][lane & 3] + step;
    }
    p.pair_columns[j] = columns;
  }
  return p;
}

// Host pointer of the whole footprint [addr, addr + extent) of a warp's wmma operand when it is simple:
// aligned to `esize`, in shared memory (also through the generic window) or inside one global allocation.
// `space` and `addr` become the resolved space and address. nullptr: leave it to the per-element path (which
// also reports any fault).
uint8_t* wmma_footprint(ExecCtx& c, Space& space, uint64_t& addr, uint64_t extent, uint32_t esize) {
  if (addr % esize != 0 || addr + extent < addr) return nullptr;
  if (space == Space::Generic && addr - kSharedWindow < kWindowSize) {
    space = Space::Shared;
    addr -= kSharedWindow;
  } else if (space == Space::Generic && addr >= kGlobalBase) {
    space = Space::Global;
  }
  if (space == Space::Shared) return addr + extent <= c.cta.shared.size() ? c.cta.shared.data() + addr : nullptr;
  if (space == Space::Global) return c.L.mem->find(addr, extent);
  return nullptr;
}

// The warp's access records of a planned wmma.load/store (one per run of a lane's adjacent elements, as the
// per-element path makes them), and their shape: the plan's key, the space and the lanes fix every record
// relative to the operand's address, so the plan keeps them for the next use by the same lanes (a GEMM's
// every use) and the record refers to them with the address (WarpRecord::deferred: the plan outlives the
// instruction's timing, which reads them only where its memo of the shape misses).
void record_planned(ExecCtx& c, WmmaPlan& plan, uint64_t base, Space space, bool store, uint32_t esize) {
  c.rec.shape = {plan.key | uint64_t(space) << 48, c.mask};
  if (plan.records_lanes != c.mask || plan.records_space != space) {
    MemAccess* out = plan.records;
    for_lanes(c.mask, [&](int lane) {
      for (int i = 0; i < plan.nruns[lane]; ++i) {
        const WmmaPlan::Run& run = plan.runs[lane][i];
        *out++ = {run.off, esize * run.len, static_cast<uint8_t>(lane), store, space};
      }
    });
    plan.nrecords = static_cast<uint32_t>(out - plan.records);
    plan.records_lanes = c.mask;
    plan.records_space = space;
  }
  c.rec.materialize();  // (none: the instruction's only records)
  c.rec.deferred = plan.records;
  c.rec.ndeferred = plan.nrecords;
  c.rec.deferred_base = base;
}

// The 32 lanes' words of a register pair whose elements lie in columns (WmmaPlan::pair_columns): lane 4g + t
// gets the 16-bit elements at host + lo[t] + 2g (low half) and host + hi[t] + 2g (high half).
void column_pairs(const uint8_t* host, const uint64_t* lo, const uint64_t* hi, uint32_t (&words)[32]) {
#if defined(__SSE2__)
  __m128 w[2][4];  // [g / 4][t]: the words of lanes 4g + t, g in 4 at a time
  for (int t = 0; t < 4; ++t) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(host + lo[t]));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(host + hi[t]));
    w[0][t] = _mm_castsi128_ps(_mm_unpacklo_epi16(l, h));
    w[1][t] = _mm_castsi128_ps(_mm_unpackhi_epi16(l, h));
  }
  for (int b = 0; b < 2; ++b) {
    _MM_TRANSPOSE4_PS(w[b][0], w[b][1], w[b][2], w[b][3]);  // now [g % 4]: the words of lanes 4g .. 4g + 3
    for (int q = 0; q < 4; ++q) _mm_storeu_ps(reinterpret_cast<float*>(&words[4 * (4 * b + q)]), w[b][q]);
  }
#else
  for (int lane = 0; lane < 32; ++lane) {
    uint16_t l16, h16;
    std::memcpy(&l16, host + lo[lane & 3] + 2 * (lane >> 2), 2);
    std::memcpy(&h16, host + hi[lane & 3] + 2 * (lane >> 2), 2);
    words[lane] = l16 | static_cast<uint32_t>(h16) << 16;
  }
#endif
}

// One wmma.load/store whose footprint `host` (at `base` in `space`) is resolved, element by element by `plan`.
// Not inlined: with the plan a parameter, GCC cannot re-derive its thread-local address in the lane loop.
[[gnu::noinline]] void wmma_ldst_planned(ExecCtx& c, const Instr& in, WmmaPlan& plan, uint8_t* host,
                                         Space space, uint64_t base, int nmem, int nelem, bool distinct) {
  const bool store = in.sub == W_STORE_D;
  const Operand& frag = in.ops[store ? 1 : 0];
  const bool half = is_half(in.type);
  const uint32_t esize = static_cast<uint32_t>(dtype_bytes(in.type));
  if (c.rec.space == Space::Generic) c.rec.space = space;
  if (c.L.record_accesses) record_planned(c, plan, base, space, store, esize);
  if (!store && half && distinct && nmem % 2 == 0 && nmem <= 8) {
    // 16-bit elements into distinct registers, register by register: each lane's pair read as one 32-bit word
    // when the two are adjacent in memory (low element first), written with its duplicate (elements
    // nmem..nelem): write_fragment's result, in an order that does not matter (the registers are distinct).
    const int nr = nmem / 2, nregs = nelem / 2;
    const uint32_t mask = c.mask;
    for (int j = 0; j < nr; ++j) {
      const uint64_t* lo = plan.pair_lo[j];
      const uint64_t* hi = plan.pair_hi[j];
      uint32_t words[32];
      if (plan.pairs_adjacent && plan.pair_quads[j] && mask == ~0u) {
        for (int g = 0; g < 8; ++g) std::memcpy(&words[4 * g], host + lo[4 * g], 16);
      } else if (plan.pairs_adjacent) {
        for_lanes(mask, [&](int lane) { std::memcpy(&words[lane], host + lo[lane], 4); });
      } else if (plan.pair_columns[j] && mask == ~0u) {
        column_pairs(host, lo, hi, words);
      } else {
        for_lanes(mask, [&](int lane) {
          uint16_t l16, h16;
          std::memcpy(&l16, host + lo[lane], 2);
          std::memcpy(&h16, host + hi[lane], 2);
          words[lane] = l16 | static_cast<uint32_t>(h16) << 16;
        });
      }
      for (int k = j; k < nregs; k += nr) {  // the register and its duplicate
        const LaneDst slot = reg_dst(c, frag.vec[static_cast<size_t>(k)]);
        if (mask == ~0u && slot.n) {
          std::memcpy(slot.n, words, sizeof words);
        } else {
          for_lanes(mask, [&](int lane) { slot.set(lane, words[lane]); });
        }
      }
    }
    return;
  }
  for_lanes(c.mask, [&](int lane) {
    uint64_t v[8];
    for (int i = 0; i < plan.nruns[lane]; ++i) {
      const WmmaPlan::Run& run = plan.runs[lane][i];
      uint8_t* ptr = host + run.off;
      for (int j = run.e; j < run.e + run.len; ++j, ptr += esize) {
        if (store) store_bits(ptr, frag_get(c, frag.vec, lane, j, half), esize);
        else v[j] = load_bits(ptr, esize);
      }
    }
    if (!store) write_fragment(c, frag.vec, lane, v, nmem, nelem, half, distinct);
  });
}

// wmma.load / wmma.store: element (r, c) of the 16x16 operand at p + (row-major ? r*stride + c : c*stride + r).
// Elements of one lane that are adjacent in memory form one access (e.g. the two halves of a register).
void ex_wmma_ldst(ExecCtx& c, const Instr& in) {
  const bool store = in.sub == W_STORE_D;
  const Operand& frag = in.ops[store ? 1 : 0];
  const Operand& addr = in.ops[store ? 0 : 1];
  const bool half = is_half(in.type);
  const uint32_t esize = static_cast<uint32_t>(dtype_bytes(in.type));
  const int nelem = in.sub == W_LOAD_A || in.sub == W_LOAD_B ? 16 : 8;
  const int nmem = in.sub == W_LOAD_A || in.sub == W_LOAD_B ? 8 : nelem;  // elements 8..15 duplicate 0..7
  const bool col = in.layout_a == 1;
  static const FragTable ta = make_table(8, wmma_a), tb = make_table(8, wmma_b), tc = make_table(8, wmma_c);
  const FragTable& ft = in.sub == W_LOAD_A ? ta : in.sub == W_LOAD_B ? tb : tc;
  const bool distinct = in.distinct_vec;
  const auto stride_of = [&](int lane) -> uint64_t {
    return in.ops.size() > 2 ? static_cast<uint32_t>(src_bits(c, in.ops[2], lane)) : 16;
  };
  if (!c.mask) return;
  // The ISA defines wmma.load/store only when every thread gives the same address and stride (as the WMMA
  // API does): then the footprint is checked once and the element offsets come from the plan for the stride.
  const int first = __builtin_ctz(c.mask);
  uint64_t base = mem_addr(c, addr, first);
  const uint64_t stride = stride_of(first);
  bool uniform = true;
  LaneSrc st{};
  if (addr.kind == OpndKind::Mem && (in.ops.size() <= 2 || lane_src(c, in.ops[2], st)) && c.mask == ~0u) {
    // a full warp's common operands: every lane's address register and stride (its low 32 bits) the first's
    uint64_t diff = 0;
    if (addr.reg >= 0) {
      const LaneSrc r = reg_lanes(c, addr.reg);
      if (r.n) {
        for (int l = 0; l < 32; ++l) diff |= r.n[l] ^ r.n[0];
      } else {
        for (int l = 0; l < 32; ++l) diff |= r.p[l] ^ r.p[0];
      }
    }
    if (in.ops.size() > 2 && st.mask) {  // a register stride (an immediate is every lane's)
      if (st.n) {
        for (int l = 0; l < 32; ++l) diff |= st.n[l] ^ st.n[0];
      } else {
        for (int l = 0; l < 32; ++l) diff |= static_cast<uint32_t>(st.p[l] ^ st.p[0]);
      }
    }
    uniform = diff == 0;
  } else if (addr.kind == OpndKind::Mem && (in.ops.size() <= 2 || lane_src(c, in.ops[2], st))) {
    // the common operands (a register address, a register or immediate stride): columns compared directly
    uint64_t a[32] = {}, sv[32] = {};  // the address register's and the stride's lanes
    if (addr.reg >= 0) copy_lanes(reg_lanes(c, addr.reg), a);
    if (in.ops.size() > 2) copy_lanes(st, sv);
    else std::fill(std::begin(sv), std::end(sv), stride);
    const uint64_t a0 = a[first];
    for_lanes(c.mask, [&](int lane) { uniform &= a[lane] == a0 && static_cast<uint32_t>(sv[lane]) == stride; });
  } else {
    for_lanes(c.mask, [&](int lane) { uniform &= mem_addr(c, addr, lane) == base && stride_of(lane) == stride; });
  }
  if (uniform) {
    WmmaPlan* plan = &wmma_plan(ft, in.sub, nmem, col, esize, stride);
    Space space = in.space;
    if (uint8_t* host = wmma_footprint(c, space, base, plan->extent, esize)) {
      wmma_ldst_planned(c, in, *plan, host, space, base, nmem, nelem, distinct);
      return;
    }
  }
  for_lanes(c.mask, [&](int lane) {
    uint64_t ea[8];
    wmma_element_addrs(ft, lane, nmem, col, mem_addr(c, addr, lane), stride_of(lane), esize, ea);
    uint64_t v[8];
    for_runs(ea, nmem, esize, [&](int e, int run) {
      uint8_t* ptr = mem_access(c, in.space, ea[e], esize * static_cast<uint32_t>(run), lane, store, esize);
      for (int j = 0; j < run; ++j, ptr += esize) {
        if (store) store_bits(ptr, frag_get(c, frag.vec, lane, e + j, half), esize);
        else v[e + j] = load_bits(ptr, esize);
      }
    });
    if (!store) write_fragment(c, frag.vec, lane, v, nmem, nelem, half, distinct);
  });
}

// ldmatrix.m8n8.xN{.trans}.b16: lanes 8i..8i+7 give the row addresses of matrix i; each lane receives in
// register i the elements (lane/4, 2*(lane%4) + {0,1}) of matrix i (transposed with .trans).
// The transpose of an 8 x 8 matrix of 16-bit elements (rows of 8 in memory order): out[8c + r] = in[8r + c].
void transpose8x8_u16(const uint16_t* in, uint16_t* out) {
#if defined(__SSE2__)
  __m128i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 8 * i));
  // pairs of rows interleaved by 16, 32 and 64 bits: three rounds of unpacks
  const __m128i a0 = _mm_unpacklo_epi16(r[0], r[1]), a1 = _mm_unpackhi_epi16(r[0], r[1]);
  const __m128i a2 = _mm_unpacklo_epi16(r[2], r[3]), a3 = _mm_unpackhi_epi16(r[2], r[3]);
  const __m128i a4 = _mm_unpacklo_epi16(r[4], r[5]), a5 = _mm_unpackhi_epi16(r[4], r[5]);
  const __m128i a6 = _mm_unpacklo_epi16(r[6], r[7]), a7 = _mm_unpackhi_epi16(r[6], r[7]);
  const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
  const __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
  const __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
  const __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
  const __m128i t[8] = {_mm_unpacklo_epi64(b0, b4), _mm_unpackhi_epi64(b0, b4), _mm_unpacklo_epi64(b1, b5),
                        _mm_unpackhi_epi64(b1, b5), _mm_unpacklo_epi64(b2, b6), _mm_unpackhi_epi64(b2, b6),
                        _mm_unpacklo_epi64(b3, b7), _mm_unpackhi_epi64(b3, b7)};
  for (int i = 0; i < 8; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 8 * i), t[i]);
#else
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 8; ++col) out[8 * col + r] = in[8 * r + col];
#endif
}

void ex_ldmatrix(ExecCtx& c, const Instr& in) {
  const int n = in.num;
  const bool trans = in.flags & F_TRANS;
  const Operand& d = in.ops[0];
  // the n 8x8 matrices, row by row (every row of the n matrices is read below, none left unset)
  std::array<std::array<uint16_t, 64>, 4> m;
  uint64_t addr[32];
  uint8_t* p[32];
  Space space = in.space;
  mem_addrs(c, in.ops[1], addr, 8 * n);
  // Lane l gives the address of row l % 8 of matrix l / 8: every row address at once where it can (the same
  // records), else lane by lane.
  const bool whole = warp_resolve(c, space, addr, 16, 16, p, false, 8 * n);
  if (whole) record_warp(c, space, addr, 16, false, 8 * n);
  for (int l = 0; l < 8 * n; ++l) {
    const uint8_t* row = whole ? p[l] : mem_access(c, in.space, addr[l], 16, l, false, 16);
    std::memcpy(&m[static_cast<size_t>(l / 8)][static_cast<size_t>(l % 8) * 8], row, 16);
  }
  // Lane 4r+q receives row r, columns 2q and 2q+1 of each matrix (of its transpose with .trans): the
  // matrix's (its transpose's) 32-bit word `lane`, as the rows lie in memory order.
  for (int i = 0; i < n; ++i) {
    const int32_t reg = d.kind == OpndKind::Vec ? d.vec[static_cast<size_t>(i)] : d.reg;
    if (reg < 0) continue;
    const LaneDst dst = reg_dst(c, reg);
    const auto& mat = m[static_cast<size_t>(i)];
    uint32_t word[32];  // what each lane receives
    if (trans) {  // the transpose's rows lie in memory order as well
      std::array<uint16_t, 64> t;
      transpose8x8_u16(mat.data(), t.data());
      std::memcpy(word, t.data(), sizeof word);
    } else {
      std::memcpy(word, mat.data(), sizeof word);
    }
    if (c.mask == ~0u && dst.n) {
      std::memcpy(dst.n, word, sizeof word);
    } else {
      for_lanes(c.mask, [&](int lane) { dst.set(lane, word[lane]); });
    }
  }
}

void decode_wmma(Instr& in) {
  bool have_shape = false;
  std::vector<DType> types;
  std::vector<uint8_t> layouts;  // operand layouts as written (0 row, 1 col)
  int kind = -1;
  for (size_t i = 0; i < in.mods.size(); ++i) {
    const std::string& m = in.mods[i];
    if (m == "load" || m == "store" || m == "mma") {
      if (m == "mma") kind = W_MMA;
      else {
        if (i + 1 >= in.mods.size()) throw DecodeError("wmma.load/store needs a fragment (.a, .b, .c, .d)");
        const std::string& f = in.mods[++i];
        if (m == "load") kind = f == "a" ? W_LOAD_A : f == "b" ? W_LOAD_B : f == "c" ? W_LOAD_C : -2;
        else kind = f == "d" ? W_STORE_D : -2;
        if (kind == -2) throw DecodeError("bad wmma fragment ." + f);
      }
    } else if (m == "sync" || m == "aligned") {
    } else if (m == "row" || m == "col") {
      layouts.push_back(m == "col");
    } else if (m == "m16n16k16") {
      have_shape = true;
    } else if (m == "m32n8k16" || m == "m8n32k16" || m == "m16n16k8" || m == "m8n8k4" || m == "m8n8k32" || m == "m8n8k128") {
      unsupported(in, "wmma shape ." + m + " (only m16n16k16)");
    } else if (m == "global") { in.space = Space::Global;
    } else if (m == "shared" || m == "shared::cta") { in.space = Space::Shared;
    } else if (dtype_from_name(m) != DType::None) { types.push_back(dtype_from_name(m));
    } else if (m == "satfinite") {
    } else {
      unsupported(in, "modifier ." + m);
    }
  }
  if (!have_shape || kind < 0) throw DecodeError("wmma needs an operation and the .m16n16k16 shape");
  if (layouts.size() != (kind == W_MMA ? 2u : 1u)) throw DecodeError("wmma needs its layout(s) (.row / .col)");
  in.layout_a = layouts[0];
  in.layout_b = layouts.back();
  in.sub = static_cast<uint8_t>(kind);
  in.shape_m = 16; in.shape_n = 16; in.shape_k = 16;
  if (kind == W_MMA) {
    // wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype (f16 inputs) or .dtype.atype.btype.ctype
    if (types.size() == 2) types = {types[0], DType::F16, DType::F16, types[1]};
    if (types.size() != 4) throw DecodeError("wmma.mma needs .dtype.ctype or .dtype.atype.btype.ctype");
    for (int i = 0; i < 4; ++i) in.types[i] = types[static_cast<size_t>(i)];
    if ((in.types[1] != DType::F16 && in.types[1] != DType::BF16) || in.types[1] != in.types[2])
      unsupported(in, "wmma input type (f16 or bf16)");
    if ((in.types[0] != DType::F32 && in.types[0] != DType::F16) || (in.types[3] != DType::F32 && in.types[3] != DType::F16))
      unsupported(in, "wmma accumulator type (f16 or f32)");
    if (in.types[1] == DType::BF16 && (in.types[0] != DType::F32 || in.types[3] != DType::F32))
      unsupported(in, "bf16 wmma with an f16 accumulator");
    need_ops(in, 4);
    need_vec(in, 0, in.types[0] == DType::F32 ? 8 : 4, "D");
    need_vec(in, 1, 8, "A");
    need_vec(in, 2, 8, "B");
    need_vec(in, 3, in.types[3] == DType::F32 ? 8 : 4, "C");
    in.traits.tensor_math = true;
    in.traits.fragment_operands = 0b1111;  // D, A, B, C
    in.traits.op_class =
        op_class_id(in.types[0] == DType::F16 ? "tensor.wmma_m16n16k16_f16" : "tensor.wmma_m16n16k16_f32");
    in.fn = &ex_wmma_mma;
    return;
  }
  if (types.size() != 1) throw DecodeError("wmma.load/store needs one element type");
  in.type = types[0];
  const bool ab = kind == W_LOAD_A || kind == W_LOAD_B;
  if (ab && in.type != DType::F16 && in.type != DType::BF16) unsupported(in, "A/B element type");
  if (!ab && in.type != DType::F16 && in.type != DType::F32) unsupported(in, "C/D element type");
  need_ops(in, 2, 3);
  const size_t fi = kind == W_STORE_D ? 1 : 0;
  need_vec(in, fi, ab ? 8 : in.type == DType::F32 ? 8 : 4, "fragment");
  if (in.ops[kind == W_STORE_D ? 0 : 1].kind != OpndKind::Mem) throw DecodeError("expected an address operand [..]");
  in.unit = Unit::LDST;
  in.traits.mem = kind == W_STORE_D ? MemKind::Store : MemKind::Load;
  in.traits.sched = kind == W_STORE_D ? SchedKind::Ordered : SchedKind::Load;
  in.traits.writes_dst = kind != W_STORE_D;
  in.traits.fragment_load = ab;  // from shared memory: one ldmatrix-like SASS instruction
  // from global (or generic) memory one LDG.32 per pair of halves: the SASS of tcs_wmma_sample and
  // tcs_wmma_gmem_w32 (results/reference/h100_tc_styles_sass_counts.csv: 4 LDGs per fragment)
  if (ab) in.traits.sass_loads = 4;
  in.traits.fragment_transposed = (kind == W_LOAD_A && in.layout_a == 1) || (kind == W_LOAD_B && in.layout_b == 0);
  // (register compaction gives the registers one instruction names distinct slots, and equal ones one slot)
  in.distinct_vec = kind != W_STORE_D && distinct_regs(in.ops[0].vec, ab ? 8 : is_half(in.type) ? 4 : 8);
  in.fn = &ex_wmma_ldst;
}

// The operands of mma.sp m16n8k32 beyond those of mma.sync: e (a register) and f (0 or 1).
void check_sparse_operands(const Instr& in) {
  need_ops(in, 6);
  if (in.ops[4].kind != OpndKind::Reg || in.ops[4].reg < 0)
    throw DecodeError("mma.sp metadata operand e must be a 32-bit register");
  if (in.ops[5].kind != OpndKind::Imm || in.ops[5].imm_kind != ImmKind::Int)
    throw DecodeError("mma.sp sparsity selector f must be an integer constant");
  if (in.ops[5].imm > 1)  // PTX ISA: a thread pair of each group of four holds the metadata; others undefined
    throw DecodeError("mma.sp .m16n8k32 with .f16/.bf16 takes sparsity selector 0 or 1 (threads T0,T1 or T2,T3 "
                      "of each group of four), got " + std::to_string(static_cast<int64_t>(in.ops[5].imm)));
}

// mma.sync.aligned.m16n8k{8,16}.row.col.dtype.atype.btype.ctype d, a, b, c;
// mma.sp{::ordered_metadata}.sync.aligned.m16n8k32.row.col.dtype.atype.btype.ctype d, a, b, c, e, f;
void decode_mma(Instr& in) {
  std::vector<DType> types;
  bool row = false, col = false, sync = false, sparse = false;
  for (const auto& m : in.mods) {
    if (m == "sync") sync = true;
    else if (m == "aligned") {}
    else if (m == "row") row = true;
    else if (m == "col") col = true;
    else if (m == "m16n8k16") { in.shape_m = 16; in.shape_n = 8; in.shape_k = 16; }
    else if (m == "m16n8k8") { in.shape_m = 16; in.shape_n = 8; in.shape_k = 8; }
    else if (m == "m16n8k32") { in.shape_m = 16; in.shape_n = 8; in.shape_k = 32; }
    else if (m == "sp" || m == "sp::ordered_metadata") sparse = true;
    else if (m[0] == 'm' && m.find('n') != std::string::npos && m.find('k') != std::string::npos)
      unsupported(in, "mma shape ." + m + " (m16n8k8 and m16n8k16, and m16n8k32 with .sp, are supported)");
    else if (dtype_from_name(m) != DType::None) types.push_back(dtype_from_name(m));
    else unsupported(in, "modifier ." + m);
  }
  if (!sync || !in.shape_k) throw DecodeError("mma needs .sync.aligned and a shape");
  if (sparse && in.shape_k != 32) unsupported(in, "mma.sp shape (only .m16n8k32 with .f16/.bf16)");
  if (!sparse && in.shape_k == 32) unsupported(in, "mma shape .m16n8k32 without .sp (dense m16n8k32 is integer/fp8)");
  if (!row || !col) throw DecodeError("mma with f16/bf16 inputs needs .row.col");
  if (types.size() != 4) throw DecodeError("mma needs .dtype.atype.btype.ctype");
  for (int i = 0; i < 4; ++i) in.types[i] = types[static_cast<size_t>(i)];
  if ((in.types[1] != DType::F16 && in.types[1] != DType::BF16) || in.types[1] != in.types[2])
    unsupported(in, "mma input type (f16 or bf16)");
  if ((in.types[0] != DType::F32 && in.types[0] != DType::F16) || (in.types[3] != DType::F32 && in.types[3] != DType::F16))
    unsupported(in, "mma accumulator type");
  if (in.types[1] == DType::BF16 && (in.types[0] != DType::F32 || in.types[3] != DType::F32))
    unsupported(in, "bf16 mma needs f32 accumulators");
  if (in.types[0] != in.types[3])  // as ptxas: no mixed accumulators for m16n8k8 / m16n8k16 / sparse m16n8k32
    throw DecodeError(std::string(sparse ? "mma.sp" : "mma") + " .m16n8k" + std::to_string(in.shape_k) +
                      " needs the same .dtype and .ctype (got ." + dtype_name(in.types[0]) + " and ." +
                      dtype_name(in.types[3]) + ")");
  if (sparse) check_sparse_operands(in);
  else need_ops(in, 4);
  need_vec(in, 0, in.types[0] == DType::F32 ? 4 : 2, "D");
  need_vec(in, 1, in.shape_k == 8 ? 2 : 4, "A");  // 16 x k; sparse: the compressed 16 x 16
  need_vec(in, 2, in.shape_k / 8u, "B");          // k x 8
  need_vec(in, 3, in.types[3] == DType::F32 ? 4 : 2, "C");
  in.traits.tensor_math = true;
  in.traits.fragment_operands = 0b1111;  // D, A, B, C (not mma.sp's metadata and selector)
  in.traits.op_class = op_class_id(sparse             ? "tensor.mma_sp_m16n8k32_f32"
                                   : in.shape_k == 8 ? "tensor.mma_m16n8k8_f32"
                                                     : "tensor.mma_m16n8k16_f32");
  in.fn = sparse ? &ex_mma_sp : &ex_mma;
}

void decode_ldmatrix(Instr& in) {
  bool shape = false, sync = false;
  for (const auto& m : in.mods) {
    if (m == "sync") sync = true;
    else if (m == "aligned") {}
    else if (m == "m8n8") shape = true;
    else if (m == "x1") in.num = 1;
    else if (m == "x2") in.num = 2;
    else if (m == "x4") in.num = 4;
    else if (m == "trans") in.flags |= F_TRANS;
    else if (m == "shared" || m == "shared::cta") in.space = Space::Shared;
    else if (m == "b16") in.type = DType::B16;
    else unsupported(in, "modifier ." + m);
  }
  if (!sync || !shape || !in.num || in.type != DType::B16)
    throw DecodeError("ldmatrix needs .sync.aligned.m8n8.x{1,2,4}[.trans][.shared].b16");
  need_ops(in, 2);
  const Operand& d = in.ops[0];
  if (!(d.kind == OpndKind::Vec && d.vec.size() == in.num && d.vec_imm.empty()) && !(in.num == 1 && d.kind == OpndKind::Reg))
    throw DecodeError("ldmatrix destination must hold " + std::to_string(in.num) + " registers");
  if (in.ops[1].kind != OpndKind::Mem) throw DecodeError("expected an address operand [..]");
  in.unit = Unit::LDST;
  in.traits.fragment_load = true;  // one SASS LDSM
  in.fn = &ex_ldmatrix;
}

// Register classes and widths of the operands (operands.h), as ptxas checks them: fragments of .b32 registers
// (.f32 accumulators: f32 or b32 registers), the mma.sp metadata a .b32 register, a wmma stride a .b32
// register or literal, addresses of the instruction's space.
void check_tensor_operands(const Instr& in, const Kernel& k) {
  const bool mma = in.op == Op::Mma || in.sub == W_MMA;
  const size_t fragment = in.op == Op::Wmma && in.sub == W_STORE_D ? 1 : 0;  // of wmma.load/store
  for (size_t i = 0; i < in.ops.size(); ++i) {
    const Operand& o = in.ops[i];
    const bool f32 = mma ? (i == 0 && in.types[0] == DType::F32) || (i == 3 && in.types[3] == DType::F32)
                         : in.op == Op::Wmma && i == fragment && in.type == DType::F32;
    const DType t = f32 ? DType::F32 : DType::B32;
    if (o.kind == OpndKind::Mem) check_address(in, k, i, in.space);
    else if (mma ? i < 4 : i == fragment) check_operand(in, k, i, t, OK_VEC | OK_REG, Fit::Exact, i == 0 && in.traits.writes_dst);
    else if (o.kind != OpndKind::Imm || in.op == Op::Wmma) check_operand(in, k, i, t, OK_SRC);
  }
}

}  // namespace

void decode_tensor(Instr& in, const Kernel& k) {
  in.unit = Unit::TENSOR;
  if (in.op == Op::Wmma) decode_wmma(in);
  else if (in.op == Op::Mma) decode_mma(in);
  else decode_ldmatrix(in);
  check_tensor_operands(in, k);
}

}  // namespace stc
