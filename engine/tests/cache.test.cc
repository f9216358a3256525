// timing/cache.h: a sectored, set-associative tag cache with LRU replacement. A sector is present after a
// fill (an access with `allocate`); a miss without `allocate` installs nothing; a set's empty ways fill
// before anything is evicted, then the least recently used line goes; writes mark sectors dirty and an
// evicted line reports its dirty sectors and address; invalidate() drops one sector.
#include <algorithm>
#include <cstdint>
#include <list>
#include <stdexcept>
#include <vector>

#include "timing/cache.h"
#include "unit_test.h"

using stc::SectorCache;

namespace {

constexpr uint32_t kLine = 128, kSector = 32;

// The documented behaviour the plain way: per set a list of lines, most recent first.
struct ReferenceCache {
  struct Line {
    uint64_t line_addr;
    uint32_t valid, dirty;
  };
  uint32_t sets, assoc, line, sector;
  bool xor_sets;
  std::vector<std::list<Line>> lru;
  uint64_t dirty = 0;
  ReferenceCache(uint32_t s, uint32_t a, uint32_t l, uint32_t sec, bool x = false)
      : sets(s), assoc(a), line(l), sector(sec), xor_sets(x), lru(s) {}
  // The set of a line: its address modulo the sets, or (xor) the XOR of its log2(sets)-bit pieces.
  uint64_t set_of(uint64_t la) const {
    if (!xor_sets) return la % sets;
    const uint32_t bits = static_cast<uint32_t>(__builtin_ctz(sets));
    uint64_t folded = 0;
    for (uint32_t shift = 0; shift < 64; shift += bits) folded ^= la >> shift;
    return folded % sets;
  }
  SectorCache::Result access(uint64_t addr, bool write, bool allocate) {
    SectorCache::Result r;
    const uint64_t la = addr / line;
    const uint32_t bit = 1u << ((addr % line) / sector);
    auto& set = lru[set_of(la)];
    auto it = std::find_if(set.begin(), set.end(), [&](const Line& l) { return l.line_addr == la; });
    if (it == set.end()) {
      if (!allocate) return r;
      if (set.size() == assoc) {
        const Line& v = set.back();
        r.writeback_sectors = static_cast<uint32_t>(__builtin_popcount(v.dirty));
        r.victim_addr = v.line_addr * line;
        dirty -= r.writeback_sectors;
        set.pop_back();
      }
      set.push_front({la, bit, write ? bit : 0u});
      dirty += write;
      return r;
    }
    set.splice(set.begin(), set, it);
    Line& l = set.front();
    r.hit = (l.valid & bit) != 0;
    if (!r.hit && allocate) l.valid |= bit;
    if (write && (r.hit || allocate) && !(l.dirty & bit)) {
      l.dirty |= bit;
      ++dirty;
    }
    return r;
  }
  void invalidate(uint64_t addr) {
    const uint64_t la = addr / line;
    for (Line& l : lru[set_of(la)])
      if (l.line_addr == la) l.valid &= ~(1u << ((addr % line) / sector));
  }
};

struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
};

// Random traffic on `lines` distinct lines (a few times the cache's capacity), reads, writes, accesses
// without allocation and invalidations, compared access by access with the reference.
void check_against_reference(uint32_t sets, uint32_t assoc, uint32_t line, uint32_t sector, uint64_t seed,
                             bool xor_sets = false) {
  SectorCache c(sets, assoc, line, sector, xor_sets);
  ReferenceCache ref(sets, assoc, line, sector, xor_sets);
  Lcg g{seed};
  const uint32_t lines = 3 * sets * assoc;
  int mismatches = 0;
  for (int i = 0; i < 30000; ++i) {
    // runs of accesses to one line (a warp's sectors), as the cache's memo of the last line expects
    const uint64_t la = g.next() % lines;
    const int run = 1 + static_cast<int>(g.next() % 4);
    for (int j = 0; j < run; ++j) {
      const uint64_t addr = la * line + g.next() % line;
      const uint32_t op = g.next() % 16;
      if (op == 0) {
        c.invalidate(addr);
        ref.invalidate(addr);
        continue;
      }
      const bool write = op < 5, allocate = op != 15;
      const SectorCache::Result a = c.access(addr, write, allocate), b = ref.access(addr, write, allocate);
      const bool same = a.hit == b.hit && a.writeback_sectors == b.writeback_sectors &&
                        (b.writeback_sectors == 0 || a.victim_addr == b.victim_addr);
      if (!same && ++mismatches <= 3) {
        CHECK_EQ(a.hit, b.hit);
        CHECK_EQ(a.writeback_sectors, b.writeback_sectors);
        CHECK_EQ(a.victim_addr, b.victim_addr);
      }
      if (c.dirty_sectors() != ref.dirty && ++mismatches <= 3) CHECK_EQ(c.dirty_sectors(), ref.dirty);
    }
  }
  CHECK_EQ(mismatches, 0);
}

}  // namespace

TEST(cache_hit_after_fill) {
  SectorCache c(4, 2, kLine, kSector);
  CHECK(!c.access(0x1000, false, true).hit);
  CHECK(c.access(0x1000, false, true).hit);
  CHECK(c.access(0x1000 + kSector - 1, false, false).hit);  // any byte of the sector
}

TEST(cache_sectors_of_a_line_fill_separately) {
  SectorCache c(4, 2, kLine, kSector);
  CHECK(!c.access(0x2000, false, true).hit);
  CHECK(!c.access(0x2000 + kSector, false, true).hit);  // the line is there, its second sector is not
  CHECK(c.access(0x2000 + kSector, false, true).hit);
  CHECK(!c.access(0x2000 + 3 * kSector, false, false).hit);
  CHECK(c.access(0x2000, false, false).hit);
}

TEST(cache_miss_without_allocate_installs_nothing) {
  SectorCache c(4, 2, kLine, kSector);
  CHECK(!c.access(0x3000, false, false).hit);
  CHECK(!c.access(0x3000, false, false).hit);
  CHECK(!c.access(0x3000, true, false).hit);  // a write-around store
  CHECK_EQ(c.dirty_sectors(), 0u);
  c.access(0x3000, false, true);
  CHECK(!c.access(0x3000 + kSector, false, false).hit);  // the line present, the sector still not installed
  CHECK(!c.access(0x3000 + kSector, false, false).hit);
}

TEST(cache_evicts_the_least_recently_used_line) {
  // One set of two ways: A, B, then A again; C evicts B (the least recently used), not A.
  SectorCache c(1, 2, kLine, kSector);
  const uint64_t A = 0, B = kLine, C = 2 * kLine;
  c.access(A, false, true);
  c.access(B, false, true);
  CHECK(c.access(A, false, true).hit);
  CHECK(!c.access(C, false, true).hit);
  CHECK(c.access(A, false, false).hit);
  CHECK(c.access(C, false, false).hit);
  CHECK(!c.access(B, false, false).hit);
}

TEST(cache_empty_ways_fill_before_any_eviction) {
  SectorCache c(1, 8, kLine, kSector);
  for (uint64_t i = 0; i < 8; ++i) CHECK(!c.access(i * kLine, false, true).hit);
  for (uint64_t i = 0; i < 8; ++i) CHECK(c.access(i * kLine, false, false).hit);
  CHECK(!c.access(8 * kLine, false, true).hit);  // the ninth evicts line 0, the oldest access
  CHECK(!c.access(0, false, false).hit);
  for (uint64_t i = 1; i <= 8; ++i) CHECK(c.access(i * kLine, false, false).hit);
}

TEST(cache_lines_map_to_sets_by_line_address) {
  // 4 sets, direct mapped: lines 0..3 go to sets 0..3 and coexist; line 4 shares set 0 with line 0.
  SectorCache c(4, 1, kLine, kSector);
  for (uint64_t i = 0; i < 4; ++i) c.access(i * kLine, false, true);
  for (uint64_t i = 0; i < 4; ++i) CHECK(c.access(i * kLine, false, false).hit);
  c.access(4 * kLine, false, true);
  CHECK(!c.access(0, false, false).hit);
  for (uint64_t i = 1; i < 4; ++i) CHECK(c.access(i * kLine, false, false).hit);
  // Not a power of two: 3 sets, line 3 shares set 0 with line 0.
  SectorCache d(3, 1, kLine, kSector);
  d.access(0, false, true);
  d.access(kLine, false, true);
  d.access(2 * kLine, false, true);
  d.access(3 * kLine, false, true);
  CHECK(!d.access(0, false, false).hit);
  CHECK(d.access(kLine, false, false).hit);
  CHECK(d.access(2 * kLine, false, false).hit);
}

TEST(cache_writeback_of_dirty_sectors_on_eviction) {
  SectorCache c(1, 1, kLine, kSector);
  c.access(0, true, true);
  c.access(kSector, true, true);
  c.access(kSector + 4, true, true);  // the same sector again: counted once
  c.access(2 * kSector, false, true);
  CHECK_EQ(c.dirty_sectors(), 2u);
  const SectorCache::Result r = c.access(5 * kLine, false, true);
  CHECK(!r.hit);
  CHECK_EQ(r.writeback_sectors, 2u);
  CHECK_EQ(r.victim_addr, 0u);
  CHECK_EQ(c.dirty_sectors(), 0u);
  // A clean victim writes nothing back.
  const SectorCache::Result s = c.access(6 * kLine, true, true);
  CHECK_EQ(s.writeback_sectors, 0u);
  CHECK_EQ(c.dirty_sectors(), 1u);
  const SectorCache::Result t = c.access(7 * kLine, false, true);
  CHECK_EQ(t.writeback_sectors, 1u);
  CHECK_EQ(t.victim_addr, 6u * kLine);
}

TEST(cache_invalidate_drops_one_sector) {
  SectorCache c(2, 2, kLine, kSector);
  c.invalidate(0x40);  // nothing cached yet: no effect
  c.access(0x100, false, true);
  c.access(0x100 + kSector, false, true);
  c.invalidate(0x100 + kSector + 8);
  CHECK(c.access(0x100, false, false).hit);
  CHECK(!c.access(0x100 + kSector, false, false).hit);
  c.invalidate(0x5000);  // not cached: no effect
  CHECK(c.access(0x100, false, false).hit);
}

TEST(cache_many_ways_keep_exact_lru) {
  // More ways than kIndexedWays (32): lines are found through the address index, the order stays LRU.
  SectorCache c(1, 64, kLine, kSector);
  for (uint64_t i = 0; i < 64; ++i) c.access(i * kLine, false, true);
  CHECK(c.access(0, false, true).hit);  // line 0 becomes the most recent
  CHECK(!c.access(64 * kLine, false, true).hit);  // evicts line 1
  CHECK(c.access(0, false, false).hit);
  CHECK(!c.access(kLine, false, false).hit);
  for (uint64_t i = 2; i <= 64; ++i) CHECK(c.access(i * kLine, false, false).hit);
}

TEST(cache_matches_reference_lru_few_ways) {
  check_against_reference(8, 4, kLine, kSector, 1);
  check_against_reference(1, 24, kLine, kSector, 2);  // an L2 slice's 24 ways, scanned
}

TEST(cache_matches_reference_lru_indexed_ways) {
  check_against_reference(4, 48, kLine, kSector, 3);
  check_against_reference(1, 64, kLine, kSector, 4);
}

TEST(cache_matches_reference_lru_odd_geometry) {
  check_against_reference(6, 3, kLine, kSector, 5);    // sets not a power of two
  check_against_reference(5, 40, kLine, kSector, 6);   // and indexed
  check_against_reference(4, 2, 96, kSector, 7);       // a line not a power of two (three sectors)
}

TEST(cache_xor_index_matches_the_reference) {
  check_against_reference(256, 20, kLine, kSector, 11, true);  // an H100 L2 slice's geometry
  check_against_reference(8, 4, kLine, kSector, 12, true);
}

TEST(cache_xor_index_spreads_a_power_of_two_pitch) {
  // Lines 16 KiB apart (a K = 8192 f16 operand's rows): the linear index of 256 sets puts them into 2
  // sets (40 lines of 20 ways survive a pass), the xor index into all of them (a pass of 512 stays).
  constexpr uint64_t kPitch = 16384;
  for (const bool x : {false, true}) {
    SectorCache c(256, 20, kLine, kSector, x);
    for (int pass = 0; pass < 2; ++pass)
      for (uint64_t r = 0; r < 512; ++r) c.access(r * kPitch, false, true);
    int hits = 0;
    for (uint64_t r = 0; r < 512; ++r) hits += c.access(r * kPitch, false, false).hit;
    CHECK_EQ(hits, x ? 512 : 40);
  }
}

TEST(cache_xor_index_needs_a_power_of_two) {
  bool refused = false;
  try {
    SectorCache c(3, 2, kLine, kSector, true);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
}
