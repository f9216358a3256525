// Host SIMD kernels of the fragment code (fragment.cc, ops_tensor.cc), used where the host has AVX2 and
// F16C: an fp16 quad of a fragment register decoded with one conversion instruction per row, and the
// 16 x N x K tile product on 8-wide vectors. Host-side only: each computes exactly what the portable code
// does (the conversion is checked against the fp16 table for all 65536 patterns before it is used; the
// product does the same fp32 multiplies and adds in the same order), so results are bit-identical.
#pragma once

#include <cstdint>

namespace stc {

// Whether the host runs the kernels below (AVX2 and F16C present and the conversion exact; the environment
// variable STCSIM_PORTABLE, set to anything, turns them off: the tests compare both paths).
bool simd_fragments();

// The 64 fp16 elements of one fragment register's 32 lanes (lane 4g + t holds elements 2t, 2t + 1 of row g
// of an 8 x 8 quad, low half first), decoded into the rows of M (16 floats apart) starting at m: as rows
// (m[16g + 2t + q]) or transposed (m[16(2t + q) + g]). False, with m untouched, for a quad holding an
// infinity or NaN (the caller decodes it with the table).
bool quad_rows_f16(const uint32_t* col, float* m);
bool quad_cols_f16(const uint32_t* col, float* m);

// An fp32 register pair of the Row form (FragTable::row_pairs): lane 4g + t of c0 holds m[16g + 2t], of c1
// m[16g + 2t + 1]. Bit copies: exact for every value.
void pair_rows_f32(const uint32_t* c0, const uint32_t* c1, float* m);
void pair_rows_f32_store(const float* m, uint32_t* c0, uint32_t* c1);

// D = A * B + C for the first 16 rows, N columns and K steps of 16-wide row arrays, each element summed in
// k order (fp32 multiply, then add): N = 8 or 16, K = 8 or 16. `exact_products`: every product of A and B
// is exact in fp32 (finite fp16 operands: 11-bit significands, exponents far inside fp32's range); then,
// where the host has FMA, each step is one fused multiply-add, which rounds the exact product plus the sum
// once, as the add after an exact multiply does: the same bits, half the host's vector operations.
void tile_mma_avx(int n, int k, const float (*A)[16], const float (*B)[16], const float (*C)[16], float (*D)[16],
                  bool exact_products);

// mma.sync m16n8k16 with fp16 A and B and fp32 C and D, straight from the 32 lanes of its registers (a: 4,
// b: 2, c: 4, d: 4 columns, C read whole before D is written): the bits the fragment tables, tile_mma_avx
// with exact products and the scatter give. False, nothing written, where the host lacks AVX2, F16C or FMA
// or an A or B element is an infinity or NaN (the caller takes the general path).
bool mma_m16n8k16_f16_f32(const uint32_t* const (&a)[4], const uint32_t* const (&b)[2],
                          const uint32_t* const (&c)[4], uint32_t* const (&d)[4]);
// Two such products side by side: 16 x 16 x 16, B's and C's and D's columns 8-15 in the second half of b
// (b2, b3), c and d (c4-c7, d4-d7), as the wmma m16n16k16 fragments place them.
bool mma_m16n16k16_f16_f32(const uint32_t* const (&a)[4], const uint32_t* const (&b)[4],
                           const uint32_t* const (&c)[8], uint32_t* const (&d)[8]);

}  // namespace stc
