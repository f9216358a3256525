// Warp-level matrix fragments: the (lane, element) -> (row, col) maps of mma.sync and of our wmma layout
// (docs/isa.md), as tables, and whole-warp gather/scatter between registers and a 16 x 16 matrix. Used by
// the core's tensor instructions (ops_tensor.cc) and by ISA extensions (engine/ext/).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "exec.h"

namespace stc {

struct RC {
  int r, c;
};

// ---- fragment maps: (lane, element) -> (row, col) of the operand matrix --------------------------
RC mma_a(int k, int lane, int i);  // A: 16 x k (k = 8 or 16), f16/bf16
RC mma_b(int k, int lane, int i);  // B: k x 8 (k = 8, 16, or 32 for mma.sp m16n8k32: elements 0..7)
RC mma_c(int lane, int i);         // C/D: 16 x 8
RC wmma_a(int lane, int i);        // wmma m16n16k16 A (16 elements, 8..15 duplicate 0..7)
RC wmma_b(int lane, int i);        // wmma m16n16k16 B (16 elements, 8..15 duplicate 0..7)
RC wmma_c(int lane, int i);        // wmma m16n16k16 C/D (8 elements)

// Element e of a fragment held in registers `regs` of one lane: 16-bit elements are packed two per register.
inline uint64_t frag_get(const ExecCtx& c, const std::vector<int32_t>& regs, int lane, int e, bool half) {
  if (!half) return c.w.reg(regs[static_cast<size_t>(e)], lane);
  const uint64_t v = c.w.reg(regs[static_cast<size_t>(e / 2)], lane);
  return (v >> (16 * (e % 2))) & 0xffff;
}
inline void frag_set(ExecCtx& c, const std::vector<int32_t>& regs, int lane, int e, bool half, uint64_t bits) {
  const int32_t r = regs[static_cast<size_t>(half ? e / 2 : e)];
  if (r < 0) return;
  if (!half) return c.w.set_reg(r, lane, bits);
  const int sh = 16 * (e % 2);
  c.w.set_reg(r, lane, (c.w.reg(r, lane) & ~(uint64_t{0xffff} << sh)) | ((bits & 0xffff) << sh));
}

// fp16 -> fp32 for every bit pattern (exact): the decode of fp16 fragment elements.
extern const std::vector<float> kHalfToFloat;

// Element decode: fp16 through the table, bf16 and f32 by bit placement.
inline float elem_value(DType t, uint32_t bits) {
  switch (t) {
    case DType::F16: return kHalfToFloat[bits & 0xffffu];
    case DType::BF16: return f32_from_bits((bits & 0xffffu) << 16);
    case DType::F32: return f32_from_bits(bits);
    default: return 0.0f;
  }
}
// Element encode: fp16 rounded to nearest even; bf16 and other types: 0 (as elem_value decodes them).
inline uint64_t elem_bits(DType t, float v) {
  switch (t) {
    case DType::F16: return double_to_half(v);
    case DType::F32: return bits_from_f32(v);
    default: return 0;
  }
}
inline bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

// A vector of W floats (GCC/Clang vector extension; an alias with a dependent vector_size loses the attribute).
template <int W> struct FloatVec;
template <> struct FloatVec<4> { typedef float type __attribute__((vector_size(16))); };
template <> struct FloatVec<8> { typedef float type __attribute__((vector_size(32))); };

// D = A * B + C for the first M rows, N columns and K steps of 16-wide row arrays, each element an fp32
// multiply and add in k order (fp16/bf16 x fp16/bf16 products are exact in fp32), W columns at a time in a
// vector of W floats (GCC/Clang vector extension): the columns are independent, so the result is
// bit-identical to the scalar loop for any W. Rows go R at a time, their R x (N / W) accumulator chains
// interleaved in each k step (one row's chain of K dependent adds alone would leave the host's adders idle
// for most of their latency). ops_tensor.cc instantiates it 4-wide (any x86-64 or other host),
// fragment_simd.cc 8-wide inside its AVX2 functions (always inline: the vectors take the caller's target).
template <int W, int M, int N, int K>
[[gnu::always_inline]] inline void tile_product(const float (*A)[16], const float (*B)[16], const float (*C)[16],
                                                float (*D)[16]) {
  static_assert(N % W == 0, "the n loop goes W columns at a time");
  using FW = typename FloatVec<W>::type;
  constexpr int V = N / W;
  constexpr int R = V >= 8 ? 1 : (8 / V < M ? 8 / V : M);  // about 8 independent chains
  static_assert(M % R == 0, "the m loop goes R rows at a time");
  FW Bv[K][V];
  for (int k = 0; k < K; ++k) std::memcpy(Bv[k], B[k], sizeof(Bv[k]));
  for (int m0 = 0; m0 < M; m0 += R) {
    FW acc[R][V];
    for (int r = 0; r < R; ++r) std::memcpy(acc[r], C[m0 + r], sizeof(acc[r]));
    for (int k = 0; k < K; ++k)
      for (int r = 0; r < R; ++r) {
        const float a = A[m0 + r][k];  // broadcast by the vector extension's scalar operand
        for (int q = 0; q < V; ++q) acc[r][q] += a * Bv[k][q];
      }
    for (int r = 0; r < R; ++r) std::memcpy(D[m0 + r], acc[r], sizeof(acc[r]));
  }
}

// A fragment map as a table: (lane, element) -> (row, col), and the element's flat index row * 16 + col
// in a matrix stored as rows of 16 floats (what gather and scatter index).
struct FragTable {
  int n = 0;
  uint8_t r[32][16] = {};
  uint8_t c[32][16] = {};
  uint16_t at[32][16] = {};
  // Registers whose every element gather() would overwrite later (wmma A/B: elements 8..15 duplicate 0..7),
  // as a bit per register, for fragments of one element per register ([0]) and two 16-bit ones ([1]).
  uint16_t overwritten[2] = {0, 0};
  // Every mma/wmma fragment register covers an 8 x 8 quad of the matrix, lane 4g + t at row g (Row: element
  // q at column 2t + q) or at column g (Col: element q at row 2t + q), from the element `base`; as above,
  // for one element per register ([0]: Row only, at column 2t) and two ([1]). Other: gather/scatter index
  // `at` element by element.
  enum Form : uint8_t { Other, Row, Col };
  Form form[2][16] = {};
  uint16_t base[2][16] = {};
  // One-element registers j and j + 1 both in Row form, j + 1 one column right of j (the fp32 accumulator
  // pairs of mma and wmma: lane 4g + t holds columns 2t and 2t + 1 of row g): bit j set.
  uint16_t row_pairs = 0;
};
// Which registers of a table's fragment gather() overwrites entirely later (it writes register by register,
// lanes inner, so a later register's write to the same element wins).
void find_overwritten(FragTable& t);
// Each register's quad form (FragTable::form) where it has one.
void find_forms(FragTable& t);
template <class Map>
FragTable make_table(int n, Map map) {
  FragTable t;
  t.n = n;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < n; ++i) {
      const RC p = map(lane, i);
      t.r[lane][i] = static_cast<uint8_t>(p.r);
      t.c[lane][i] = static_cast<uint8_t>(p.c);
      t.at[lane][i] = static_cast<uint16_t>(p.r * 16 + p.c);
    }
  find_overwritten(t);
  find_forms(t);
  return t;
}
// The wmma m16n16k16 tables: A and B with their 16 elements, C/D with 8.
const FragTable& wmma_a_table();
const FragTable& wmma_b_table();
const FragTable& wmma_c_table();

// Reads the fragment elements of all 32 lanes into the operand matrix M. True when they are fp16 values
// known finite (every quad decoded by the host SIMD conversion, which leaves infinities and NaN to the table).
bool gather(const ExecCtx& c, const std::vector<int32_t>& regs, DType t, const FragTable& ft, float (*M)[16]);
// Writes M into the fragment registers of the lanes in c.mask, as type t.
void scatter(ExecCtx& c, const std::vector<int32_t>& regs, DType t, const FragTable& ft, const float (*M)[16]);

}  // namespace stc
