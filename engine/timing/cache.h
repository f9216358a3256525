// A sectored, set-associative cache with LRU replacement (tags only: data lives in DeviceMemory).
#pragma once

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
  struct Line {
    uint64_t tag = ~uint64_t{0};
    uint32_t valid = 0;
    uint32_t dirty = 0;
    uint64_t lru = 0;
  };
  uint32_t sets_, assoc_, line_, sector_;
  uint64_t tick_ = 0;
  std::vector<Line> lines_;
};

}  // namespace stc
