// func/state.h WorkSummary: an instruction's work record is of one type, read back only as that type; a
// record of another type, or none, reads as null; emplace gives a zeroed record to fill in place.
#include <cstdint>

#include "func/state.h"
#include "unit_test.h"

namespace {

struct Chunk {
  uint8_t nnz[16];
  uint8_t blocks[16][16];
};
struct Pair {
  uint32_t a, b;
};

}  // namespace

TEST(work_summary_reads_back_only_its_own_type) {
  stc::WorkSummary w;
  CHECK(w.get<Pair>() == nullptr);  // nothing reported
  w.put(Pair{7, 9});
  REQUIRE(w.get<Pair>() != nullptr);
  CHECK_EQ(w.get<Pair>()->a, 7u);
  CHECK_EQ(w.get<Pair>()->b, 9u);
  CHECK(w.get<Chunk>() == nullptr);  // another class's record
  Chunk& c = w.emplace<Chunk>();
  bool zero = true;
  for (uint8_t n : c.nnz) zero = zero && n == 0;
  for (const auto& row : c.blocks)
    for (uint8_t b : row) zero = zero && b == 0;
  CHECK(zero);  // zeroed, though the Pair's bytes were there
  c.nnz[3] = 5;
  c.blocks[3][1] = 0b11100100;
  CHECK(w.get<Pair>() == nullptr);
  REQUIRE(w.get<Chunk>() != nullptr);
  CHECK_EQ(int{w.get<Chunk>()->nnz[3]}, 5);
  CHECK_EQ(int{w.get<Chunk>()->blocks[3][1]}, 0b11100100);
  w.clear();
  CHECK(w.get<Chunk>() == nullptr);
}
