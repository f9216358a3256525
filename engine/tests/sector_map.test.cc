// timing/sector_map.h: the flat map from a sector address to the cycle its outstanding fill completes.
// find() answers what set()/set_at() stored; a line's four 32-byte sectors sit side by side in one 64-byte
// host line of slots; when the table is half full, entries whose cycle is <= the insert's `dead` cycle are
// dropped, and the table grows only if it is still over a quarter full without them.
#include <cstdint>
#include <map>

#include "timing/sector_map.h"
#include "unit_test.h"

using stc::SectorMap;

TEST(sector_map_empty_finds_nothing) {
  SectorMap m;
  CHECK(m.find(0x1000) == nullptr);
  CHECK(m.probe(0x1000) == nullptr);  // an empty map is never probed
  CHECK_EQ(m.size(), 0u);
}

TEST(sector_map_set_then_find_and_overwrite) {
  SectorMap m;
  m.set(0x1020, 77, 0);
  REQUIRE(m.find(0x1020) != nullptr);
  CHECK_EQ(*m.find(0x1020), 77u);
  CHECK(m.find(0x1000) == nullptr);  // the same line's other sector
  m.set(0x1020, 90, 0);
  CHECK_EQ(*m.find(0x1020), 90u);
  CHECK_EQ(m.size(), 1u);
  m.set(0, 5, 0);  // address 0 is a sector address like any other
  REQUIRE(m.find(0) != nullptr);
  CHECK_EQ(*m.find(0), 5u);
}

TEST(sector_map_set_at_uses_the_probed_slot) {
  SectorMap m;
  m.set_at(m.probe(0x4000), 0x4000, 11, 0);  // empty map: probe is null, set_at falls back to set
  CHECK_EQ(*m.find(0x4000), 11u);
  SectorMap::Slot* s = m.probe(0x4020);
  REQUIRE(s != nullptr);
  CHECK_EQ(s->key, SectorMap::kEmpty);  // where it would go
  m.set_at(s, 0x4020, 12, 0);
  CHECK(m.probe(0x4020) == s);
  CHECK_EQ(*m.find(0x4020), 12u);
  m.set_at(m.probe(0x4000), 0x4000, 13, 0);  // overwrite in place
  CHECK_EQ(*m.find(0x4000), 13u);
  CHECK_EQ(m.size(), 2u);
}

TEST(sector_map_a_lines_sectors_share_a_host_cache_line) {
  // Sector k of a 128-byte line takes slot (line hash) * 4 + k: the four are adjacent and, the slots being
  // 16 bytes in a 64-byte aligned array, in one 64-byte host line (one line per map: no other entry in the
  // way).
  CHECK_EQ(sizeof(SectorMap::Slot), 16u);
  for (uint64_t line = 0x10000; line < 0x10000 + 64 * 128; line += 128) {
    SectorMap m;
    for (uint64_t k = 0; k < 4; ++k) m.set(line + 32 * k, k + 1, 0);
    const SectorMap::Slot* s0 = m.probe(line);
    CHECK_EQ(reinterpret_cast<uintptr_t>(s0) % 64, 0u);
    for (uint64_t k = 1; k < 4; ++k) {
      const SectorMap::Slot* s = m.probe(line + 32 * k);
      CHECK_EQ(s - s0, static_cast<std::ptrdiff_t>(k));
      CHECK_EQ(s->value, k + 1);
    }
  }
}

TEST(sector_map_dead_entries_are_dropped_when_half_full) {
  // 1024 slots: the 513th insert finds the table half full and rebuilds it without the entries whose
  // cycle is <= dead.
  SectorMap m;
  for (uint64_t i = 0; i < 512; ++i) m.set(i * 32, 5, 0);
  CHECK_EQ(m.size(), 512u);
  m.set(0x100000, 100, 10);
  CHECK_EQ(m.size(), 1u);
  CHECK(m.find(0) == nullptr);
  CHECK(m.find(511 * 32) == nullptr);
  CHECK_EQ(*m.find(0x100000), 100u);
}

TEST(sector_map_live_entries_survive_the_rebuild) {
  // Entries after `dead` stay; a cycle equal to `dead` is dead.
  SectorMap m;
  for (uint64_t i = 0; i < 512; ++i) m.set(i * 32, i % 2 ? 20 : 10, 0);
  m.set(0x100000, 100, 10);
  CHECK_EQ(m.size(), 257u);
  for (uint64_t i = 0; i < 512; ++i) {
    const uint64_t* v = m.find(i * 32);
    if (i % 2) {
      CHECK(v != nullptr && *v == 20);
    } else {
      CHECK(v == nullptr);
    }
  }
}

TEST(sector_map_grows_and_keeps_every_entry) {
  // Nothing dead: the table doubles as needed, every entry still found with its value.
  SectorMap m;
  std::map<uint64_t, uint64_t> want;
  uint64_t s = 12345;
  for (int i = 0; i < 20000; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t key = (s >> 20) & ~uint64_t{31};
    m.set(key, static_cast<uint64_t>(i) + 1, 0);
    want[key] = static_cast<uint64_t>(i) + 1;
  }
  CHECK_EQ(m.size(), want.size());
  int wrong = 0;
  for (const auto& [k, v] : want) {
    const uint64_t* got = m.find(k);
    if (!(got && *got == v) && ++wrong <= 3) CHECK(got != nullptr && *got == v);
  }
  CHECK_EQ(wrong, 0);
}
