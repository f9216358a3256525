#include "fragment.h"

#include <algorithm>
#include <iterator>

#include "fragment_simd.h"

namespace stc {

// ---- fragment maps: (lane, element) -> (row, col) of the operand matrix --------------------------
RC mma_a(int k, int lane, int i) {  // A: 16 x k (k = 8 or 16), f16/bf16
  const int g = lane >> 2, t = lane & 3;
  if (k == 8) return {g + 8 * (i >> 1), 2 * t + (i & 1)};
  return {g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)};
}
RC mma_b(int k, int lane, int i) {  // B: k x 8 (k = 8, 16, or 32 for mma.sp m16n8k32: elements 0..7)
  const int g = lane >> 2, t = lane & 3;
  if (k == 8) return {2 * t + i, g};
  return {2 * t + (i & 1) + 8 * (i >> 1), g};
}
RC mma_c(int lane, int i) {  // C/D: 16 x 8
  const int g = lane >> 2, t = lane & 3;
  return {g + 8 * (i >> 1), 2 * t + (i & 1)};
}
RC wmma_a(int lane, int i) { return mma_a(16, lane, i % 8); }
RC wmma_b(int lane, int i) {
  const int j = i % 8;
  const RC rc = mma_b(16, lane, j % 4);
  return {rc.r, rc.c + 8 * (j / 4)};
}
RC wmma_c(int lane, int i) {
  const RC rc = mma_c(lane, i % 4);
  return {rc.r, rc.c + 8 * (i / 4)};
}

// fp16 -> fp32 for every bit pattern (exact): the decode of fp16 fragment elements.
const std::vector<float> kHalfToFloat = [] {
  std::vector<float> v(65536);
  for (uint32_t h = 0; h < 65536; ++h) v[h] = static_cast<float>(half_to_double(static_cast<uint16_t>(h)));
  return v;
}();

void find_overwritten(FragTable& t) {
  for (int per = 1; per <= 2; ++per) {
    const int nregs = t.n / per;
    int last[32 * 16];  // the last register gather writes each element of the (up to 32 x 16) matrix from
    std::fill(std::begin(last), std::end(last), -1);
    for (int j = 0; j < nregs; ++j)
      for (int lane = 0; lane < 32; ++lane)
        for (int q = 0; q < per; ++q) last[t.at[lane][per * j + q]] = j;
    uint16_t dead = 0;
    for (int j = 0; j < nregs; ++j) {
      bool wins = false;
      for (int lane = 0; lane < 32 && !wins; ++lane)
        for (int q = 0; q < per; ++q) wins |= last[t.at[lane][per * j + q]] == j;
      if (!wins) dead = static_cast<uint16_t>(dead | 1u << j);
    }
    t.overwritten[per - 1] = dead;
  }
}

void find_forms(FragTable& t) {
  for (int per = 1; per <= 2; ++per)
    for (int j = 0; j < t.n / per; ++j) {
      const int base = t.at[0][per * j];
      const auto matches = [&](auto index) {
        for (int lane = 0; lane < 32; ++lane)
          for (int q = 0; q < per; ++q)
            if (t.at[lane][per * j + q] != base + index(lane >> 2, lane & 3, q)) return false;
        return true;
      };
      FragTable::Form f = FragTable::Other;
      if (matches([](int g, int tt, int q) { return 16 * g + 2 * tt + q; })) f = FragTable::Row;
      else if (per == 2 && matches([](int g, int tt, int q) { return 16 * (2 * tt + q) + g; })) f = FragTable::Col;
      t.form[per - 1][j] = f;
      t.base[per - 1][j] = static_cast<uint16_t>(base);
    }
  for (int j = 0; j + 1 < t.n; ++j)
    if (t.form[0][j] == FragTable::Row && t.form[0][j + 1] == FragTable::Row && t.base[0][j + 1] == t.base[0][j] + 1)
      t.row_pairs = static_cast<uint16_t>(t.row_pairs | 1u << j);
}

namespace {

// A Row-form pair of fp32 registers (FragTable::row_pairs): lane 4g + t of c0 holds M[16g + 2t], of c1
// M[16g + 2t + 1]. With the host SIMD kernels where
// present (the same bits either way).
void row_pair_gather(const uint32_t* c0, const uint32_t* c1, float* m, bool simd) {
  if (simd) return pair_rows_f32(c0, c1, m);
  for (int g = 0; g < 8; ++g)
    for (int t = 0; t < 4; ++t) {
      m[16 * g + 2 * t] = f32_from_bits(c0[4 * g + t]);
      m[16 * g + 2 * t + 1] = f32_from_bits(c1[4 * g + t]);
    }
}
void row_pair_scatter(const float* m, uint32_t* c0, uint32_t* c1) {
  if (simd_fragments()) return pair_rows_f32_store(m, c0, c1);
  for (int g = 0; g < 8; ++g)
    for (int t = 0; t < 4; ++t) {
      c0[4 * g + t] = bits_from_f32(m[16 * g + 2 * t]);
      c1[4 * g + t] = bits_from_f32(m[16 * g + 2 * t + 1]);
    }
}

// The 32 lanes of fragment register r as 32-bit words: its own lanes, or for a (never seen) 64-bit
// register the low halves of its lanes copied into `tmp` (an element is never wider than 32 bits).
const uint32_t* narrow_lanes(const WarpState& w, int32_t r, uint32_t (&tmp)[32]) {
  if (!(r & kWideSlot)) return w.col32(r);
  const uint64_t* wide = w.col64(r);
  for (int l = 0; l < 32; ++l) tmp[l] = static_cast<uint32_t>(wide[l]);
  return tmp;
}

// Register-major, lanes inner; the element type is a template argument so that the decode is inlined. A
// register in quad form is read without the table: its lanes' elements go to fixed places of eight rows.
template <DType T>
bool gather_t(const ExecCtx& c, const std::vector<int32_t>& regs, const FragTable& ft, float* M) {
  constexpr bool kHalf = T == DType::F16 || T == DType::BF16;
  constexpr int kPer = kHalf ? 2 : 1;
  const int nregs = ft.n / kPer;
  const uint16_t skip = ft.overwritten[kPer - 1];
  const bool simd = simd_fragments();
  bool finite = T == DType::F16 && simd;  // every quad so far through the SIMD conversion
  for (int j = 0; j < nregs; ++j) {
    if (skip >> j & 1) continue;  // every element of it is overwritten by a later register: the same M
    uint32_t tmp[32], tmp1[32];
    const uint32_t* col = narrow_lanes(c.w, regs[static_cast<size_t>(j)], tmp);
    float* m = M + ft.base[kPer - 1][j];
    if constexpr (T == DType::F32) {
      if ((ft.row_pairs >> j & 1) && !(skip >> (j + 1) & 1)) {  // registers j and j + 1 interleaved
        row_pair_gather(col, narrow_lanes(c.w, regs[static_cast<size_t>(j + 1)], tmp1), m, simd);
        ++j;
        continue;
      }
    }
    switch (ft.form[kPer - 1][j]) {
      case FragTable::Row:
        if constexpr (T == DType::F16) {
          if (simd && quad_rows_f16(col, m)) break;
        }
        finite = false;
        for (int g = 0; g < 8; ++g, col += 4, m += 16)
          for (int t = 0; t < 4; ++t) {
            if constexpr (kHalf) {
              m[2 * t] = elem_value(T, static_cast<uint32_t>(col[t]));
              m[2 * t + 1] = elem_value(T, static_cast<uint32_t>(col[t] >> 16));
            } else {
              m[2 * t] = elem_value(T, static_cast<uint32_t>(col[t]));
            }
          }
        break;
      case FragTable::Col:  // 16-bit pairs only
        if constexpr (T == DType::F16) {
          if (simd && quad_cols_f16(col, m)) break;
        }
        finite = false;
        for (int t = 0; t < 4; ++t)
          for (int q = 0; q < kPer; ++q) {
            float* row = m + 16 * (2 * t + q);
            for (int g = 0; g < 8; ++g) row[g] = elem_value(T, static_cast<uint32_t>(col[4 * g + t] >> (16 * q)));
          }
        break;
      case FragTable::Other:
        finite = false;
        for (int lane = 0; lane < 32; ++lane) {
          const uint32_t v = col[lane];
          if constexpr (kHalf) {
            M[ft.at[lane][2 * j]] = elem_value(T, static_cast<uint32_t>(v));
            M[ft.at[lane][2 * j + 1]] = elem_value(T, static_cast<uint32_t>(v >> 16));
          } else {
            M[ft.at[lane][j]] = elem_value(T, static_cast<uint32_t>(v));
          }
        }
        break;
    }
  }
  return finite;
}

// Register by register: a 16-bit pair is written as one 32-bit store, which is what frag_set does element
// by element, in the same order (so a register named twice ends the same).
template <DType T>
void scatter_t(ExecCtx& c, const std::vector<int32_t>& regs, const FragTable& ft, const float* M) {
  constexpr bool kHalf = T == DType::F16 || T == DType::BF16;
  if (!kHalf && c.mask == ~0u) {
    // Every lane, one element per register: register by register (a register named twice ends with the
    // later element, as below), quad-form registers without the table.
    for (int i = 0; i < ft.n; ++i) {
      const int32_t r = regs[static_cast<size_t>(i)];
      if (r < 0) continue;
      if (r & kWideSlot) {  // (never seen: fragments are 32-bit registers)
        for (int lane = 0; lane < 32; ++lane) c.w.set_reg(r, lane, elem_bits(T, M[ft.at[lane][i]]));
        continue;
      }
      uint32_t* col = c.w.col32(r);
      if constexpr (T == DType::F32) {
        const int32_t r1 = (ft.row_pairs >> i & 1) ? regs[static_cast<size_t>(i + 1)] : -1;
        if (r1 >= 0 && r1 != r && !(r1 & kWideSlot)) {  // registers i and i + 1 interleaved (distinct: no order)
          row_pair_scatter(M + ft.base[0][i], col, c.w.col32(r1));
          ++i;
          continue;
        }
      }
      if (ft.form[0][i] == FragTable::Row) {
        const float* m = M + ft.base[0][i];
        for (int g = 0; g < 8; ++g, col += 4, m += 16)
          for (int t = 0; t < 4; ++t) col[t] = static_cast<uint32_t>(elem_bits(T, m[2 * t]));
      } else {
        for (int lane = 0; lane < 32; ++lane) col[lane] = static_cast<uint32_t>(elem_bits(T, M[ft.at[lane][i]]));
      }
    }
    return;
  }
  for_lanes(c.mask, [&](int lane) {
    const uint16_t* at = ft.at[lane];
    if constexpr (kHalf) {
      const int pairs = ft.n / 2;
      for (int j = 0; j < pairs; ++j) {
        const int32_t r = regs[static_cast<size_t>(j)];
        if (r < 0) continue;
        const uint64_t lo = elem_bits(T, M[at[2 * j]]) & 0xffff, hi = elem_bits(T, M[at[2 * j + 1]]) & 0xffff;
        c.w.set_reg(r, lane, lo | hi << 16);
      }
      if (ft.n % 2) frag_set(c, regs, lane, ft.n - 1, true, elem_bits(T, M[at[ft.n - 1]]));
    } else {
      for (int i = 0; i < ft.n; ++i) {
        const int32_t r = regs[static_cast<size_t>(i)];
        if (r >= 0) c.w.set_reg(r, lane, elem_bits(T, M[at[i]]));
      }
    }
  });
}
}  // namespace

bool gather(const ExecCtx& c, const std::vector<int32_t>& regs, DType t, const FragTable& ft, float (*M)[16]) {
  switch (t) {
    case DType::F16: return gather_t<DType::F16>(c, regs, ft, &M[0][0]);
    case DType::BF16: return gather_t<DType::BF16>(c, regs, ft, &M[0][0]);
    case DType::F32: return gather_t<DType::F32>(c, regs, ft, &M[0][0]);
    default: return gather_t<DType::U32>(c, regs, ft, &M[0][0]);  // no float decode: zeros, as elem_value
  }
}

void scatter(ExecCtx& c, const std::vector<int32_t>& regs, DType t, const FragTable& ft, const float (*M)[16]) {
  switch (t) {
    case DType::F16: scatter_t<DType::F16>(c, regs, ft, &M[0][0]); break;
    case DType::BF16: scatter_t<DType::BF16>(c, regs, ft, &M[0][0]); break;
    case DType::F32: scatter_t<DType::F32>(c, regs, ft, &M[0][0]); break;
    default: scatter_t<DType::U32>(c, regs, ft, &M[0][0]); break;  // no float encode: zeros, as elem_bits
  }
}

const FragTable& wmma_a_table() {
  static const FragTable t = make_table(16, wmma_a);
  return t;
}
const FragTable& wmma_b_table() {
  static const FragTable t = make_table(16, wmma_b);
  return t;
}
const FragTable& wmma_c_table() {
  static const FragTable t = make_table(8, wmma_c);
  return t;
}

}  // namespace stc
