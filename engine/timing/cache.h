// A sectored, set-associative cache with LRU replacement (tags only: data lives in DeviceMemory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stc {

class SectorCache {
 public:
  SectorCache(uint32_t sets, uint32_t assoc, uint32_t line_bytes, uint32_t sector_bytes);

  struct Result {
    bool hit = false;
    uint32_t writeback_sectors = 0;  // dirty sectors evicted to make room
    uint64_t victim_addr = 0;        // address of the evicted line (when writeback_sectors > 0)
  };

  // Looks up the sector holding `addr`. On a miss with `allocate`, installs it (evicting the LRU line).
  // `write` marks the sector dirty (write-back caches).
  Result access(uint64_t addr, bool write, bool allocate);
  // Drops the sector holding `addr` if present (write-evict policy).
  void invalidate(uint64_t addr);
  // Number of dirty sectors (for the end-of-kernel flush accounting).
  uint64_t dirty_sectors() const;

 private:
  // Each set keeps its lines in recency order, so the victim needs no scan of the lines' ages, and caches
  // of many ways (the L1s: 56-64, whose scans read kilobytes per access) find a line through an index by
  // its address instead of scanning the set's tags. The replacement is the one the age scan made: a set's
  // empty ways fill in way order (an empty way's age, 0, was the smallest), then the least recently used
  // line goes (ages were distinct).
  struct Line {
    uint64_t tag = ~uint64_t{0};
    uint32_t valid = 0;
    uint32_t dirty = 0;
    uint32_t older = kNone, newer = kNone;  // neighbours in its set's recency list
  };
  struct Set {
    uint32_t used = 0;                      // ways holding a line (ways 0..used-1)
    uint32_t oldest = kNone, newest = kNone;
  };
  static constexpr uint32_t kNone = ~0u;

  uint64_t line_of(uint64_t addr) const { return line_shift_ >= 0 ? addr >> line_shift_ : addr / line_; }
  uint32_t set_of(uint64_t line_addr) const {
    return static_cast<uint32_t>(sets_mask_ ? line_addr & sets_mask_ : line_addr % sets_);
  }
  uint32_t sector_bit(uint64_t addr) const { return 1u << ((addr % line_) / sector_); }
  // Moves line i of set s to the most recent end of its list (appending it if not in the list).
  void touch(Set& s, uint32_t i, bool listed);
  // The index of the line holding `line_addr` in `set`, or kNone.
  uint32_t find(uint64_t line_addr, uint32_t set) const;
  // Open addressing (linear probing) from line address to line index; erase shifts later entries back.
  // Kept for caches of more than kIndexedWays ways only (fewer are scanned faster than hashed).
  static constexpr uint32_t kIndexedWays = 32;
  void index_insert(uint64_t line_addr, uint32_t line);
  void index_erase(uint64_t line_addr);
  size_t slot_of(uint64_t line_addr) const { return static_cast<size_t>((line_addr * 0x9E3779B97F4A7C15ull) >> 32) & index_mask_; }

  uint32_t sets_, assoc_, line_, sector_;
  int line_shift_ = -1;     // log2 of line_ when a power of two
  uint64_t sets_mask_ = 0;  // sets_ - 1 when a power of two
  std::vector<Line> lines_;
  std::vector<Set> set_state_;
  struct Slot {
    uint64_t key;
    uint32_t line;  // kNone: empty
  };
  std::vector<Slot> index_;
  size_t index_mask_ = 0;
};

}  // namespace stc
