// timing/l2_slice_map.h: the measured L2 slice maps by name ("hash": none, "h100": the silicon table), an
// address's slice constant over its 256-byte interleave unit and periodic over the measured pages, every
// slice named and paired with one buddy.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "timing/l2_slice_map.h"
#include "unit_test.h"

using stc::find_l2_slice_map;
using stc::L2SliceMap;

TEST(l2_slice_map_names) {
  CHECK(find_l2_slice_map("hash") == nullptr);
  const L2SliceMap* m = find_l2_slice_map("h100");
  REQUIRE(m != nullptr);
  CHECK(find_l2_slice_map("h100") == m);
  CHECK_THROWS(std::invalid_argument, find_l2_slice_map("a100"));
  try {
    find_l2_slice_map("H100");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("l2.slice_map") != std::string::npos);
  }
}

TEST(l2_slice_map_h100_geometry) {
  const L2SliceMap& m = *find_l2_slice_map("h100");
  CHECK_EQ(m.unit_bytes, 256u);
  CHECK_EQ(m.page_bytes, 2u << 20);
  CHECK_EQ(m.pages, 4u);
  CHECK_EQ(m.slices, 80u);
  REQUIRE(m.table != nullptr);
  const uint64_t units = uint64_t{m.pages} * (m.page_bytes / m.unit_bytes);
  std::vector<uint32_t> count(m.slices, 0);
  uint64_t out_of_range = 0;
  for (uint64_t i = 0; i < units; ++i) {
    if (m.table[i] >= m.slices) ++out_of_range;
    else ++count[m.table[i]];
  }
  CHECK_EQ(out_of_range, 0u);
  for (uint32_t s = 0; s < m.slices; ++s)
    if (count[s] == 0) CHECK_GT(count[s], 0u);  // every slice holds some of the address space
}

TEST(l2_slice_map_address_lookup) {
  const L2SliceMap& m = *find_l2_slice_map("h100");
  const uint64_t span = uint64_t{m.pages} * m.page_bytes;
  const uint64_t units = m.page_bytes / m.unit_bytes;
  int wrong = 0;
  for (uint64_t addr = 0; addr < span; addr += 4096 + 256 * 3 + 32) {
    const uint32_t s = m.slice(addr);
    const uint64_t unit = addr / m.unit_bytes;
    const bool ok = s == m.table[unit] &&                                   // its table entry
                    m.slice(addr - addr % m.unit_bytes) == s &&              // the unit's first byte
                    m.slice(addr | (m.unit_bytes - 1)) == s &&               // and last
                    m.slice(addr + span) == s && m.slice(addr + 7 * span) == s;  // the pages repeat
    if (!ok && ++wrong <= 3) CHECK(ok);
  }
  CHECK_EQ(wrong, 0);
  CHECK_EQ(m.slice(m.page_bytes), m.table[units]);  // page 1's first unit
}

TEST(l2_slice_map_h100_buddies_pair_up) {
  const L2SliceMap& m = *find_l2_slice_map("h100");
  REQUIRE(m.buddy != nullptr);
  for (uint32_t s = 0; s < m.slices; ++s) {
    const uint32_t b = m.buddy[s];
    REQUIRE(b < m.slices);
    CHECK_NE(b, s);
    CHECK_EQ(static_cast<uint32_t>(m.buddy[b]), s);
  }
}
