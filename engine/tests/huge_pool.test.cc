// func/huge_pool.h: device-memory blocks from 1 MiB are zero-filled whole-huge-page mappings, 2 MiB
// aligned; a freed one is handed out again to the next block it holds, zero-filled again (no page faults
// for a launch that allocates what the one before it freed), split when larger; a block larger than every
// kept mapping gets a mapping of its own; small blocks come from calloc, zeroed.
#include <cstdint>
#include <cstring>

#include "func/huge_pool.h"
#include "unit_test.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

TEST(huge_blocks_are_reused_best_fit_split_and_zeroed_again) {
  const size_t bytes = 3 * kMiB + 100;
  auto* a = static_cast<uint8_t*>(stc::huge_block_alloc(bytes));
  REQUIRE(a != nullptr);
  CHECK(all_zero(a, bytes));
  CHECK_EQ(reinterpret_cast<uintptr_t>(a) % (2 * kMiB), uintptr_t{0});
  std::memset(a, 0xAB, bytes);
  stc::huge_block_free(a, bytes);
  auto* b = static_cast<uint8_t*>(stc::huge_block_alloc(bytes - 5000));  // the same huge pages: reused
  CHECK(b == a);
  CHECK(all_zero(b, bytes - 5000));
  auto* c = static_cast<uint8_t*>(stc::huge_block_alloc(9 * kMiB));  // larger than any kept: its own mapping
  CHECK(c != a);
  CHECK(all_zero(c, 9 * kMiB));
  std::memset(c, 0xCD, 9 * kMiB);
  stc::huge_block_free(b, bytes - 5000);
  stc::huge_block_free(c, 9 * kMiB);
  // 2 MiB fits the 4 MiB mapping of a (the smallest that holds it), 5 MiB the first 6 MiB of c's 10 MiB,
  // whose last 4 MiB are then kept on their own for the next block
  auto* d = static_cast<uint8_t*>(stc::huge_block_alloc(2 * kMiB));
  CHECK(d == a);
  auto* e = static_cast<uint8_t*>(stc::huge_block_alloc(5 * kMiB));
  CHECK(e == c);
  CHECK(all_zero(e, 5 * kMiB));
  auto* f = static_cast<uint8_t*>(stc::huge_block_alloc(3 * kMiB));
  CHECK(f == c + 6 * kMiB);
  CHECK(all_zero(f, 3 * kMiB));
  stc::huge_block_free(d, 2 * kMiB);
  stc::huge_block_free(e, 5 * kMiB);
  stc::huge_block_free(f, 3 * kMiB);
  auto* small = static_cast<uint8_t*>(stc::huge_block_alloc(1000));
  CHECK(all_zero(small, 1000));
  stc::huge_block_free(small, 1000);
}
