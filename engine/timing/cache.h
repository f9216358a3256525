// A sectored, set-associative cache with LRU replacement (tags only: data lives in DeviceMemory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "../func/huge_pool.h"

namespace stc {

class SectorCache {
 public:
  // `xor_sets`: the set index XORs the line address's set-index-wide pieces together (every address bit
  // moves the set; a power-of-two row pitch no longer crowds a few sets), else its low bits. Needs a
  // power-of-two number of sets.
  SectorCache(uint32_t sets, uint32_t assoc, uint32_t line_bytes, uint32_t sector_bytes, bool xor_sets = false);

  struct Result {
    bool hit = false;
    uint32_t writeback_sectors = 0;  // dirty sectors evicted to make room
    uint64_t victim_addr = 0;        // address of the evicted line (when writeback_sectors > 0)
  };

  // Looks up the sector holding `addr`. On a miss with `allocate`, installs it (evicting the LRU line).
  // `write` marks the sector dirty (write-back caches). The line of the previous access is answered here
  // (a warp's sectors of one line come one after another), the rest by access_set().
  Result access(uint64_t addr, bool write, bool allocate) {
    const uint64_t line_addr = line_of(addr);
    if (line_addr != recent_line_) return access_set(addr, line_addr, write, allocate);
    return access_line(lines_[recent_index_], sector_bit(addr), write, allocate);
  }
  // Drops the sector holding `addr` if present (write-evict policy).
  void invalidate(uint64_t addr);
  // Number of dirty sectors (for the end-of-kernel flush accounting).
  uint64_t dirty_sectors() const { return dirty_; }

 private:
  // Each set keeps its lines in recency order, so the victim needs no scan of the lines' ages, and caches
  // of many ways (the L1s: 56-64, whose scans read kilobytes per access) find a line through an index by
  // its address instead of scanning the set's tags. The replacement is the one the age scan made: a set's
  // empty ways fill in way order (an empty way's age, 0, was the smallest), then the least recently used
  // line goes (ages were distinct).
  // A way's line is written when the way fills (ways from Set::used on are never read), so the lines are
  // left uninitialised: a launch's caches (an H100's L2: 13 MB of lines) cost no zeroing or page faults
  // beyond the ways the kernel fills.
  // A line's tag lives apart from the rest of it (tags_): a set's scan reads its tags alone, 8 bytes a way
  // (an L2 slice's 24 ways: three host cache lines, not nine).
  struct Line {
    uint32_t valid;
    uint32_t dirty;
    uint32_t older, newer;  // neighbours in its set's recency list
  };
  // Leaves the elements it constructs default-initialised (a Line: uninitialised) instead of zeroed.
  template <class T>
  struct UninitAllocator : LaunchAllocator<T> {
    template <class U>
    struct rebind {
      using other = UninitAllocator<U>;
    };
    template <class U>
    void construct(U* p) noexcept {
      ::new (static_cast<void*>(p)) U;
    }
  };
  struct Set {
    uint32_t used = 0;                      // ways holding a line (ways 0..used-1)
    uint32_t oldest = kNone, newest = kNone;
  };
  static constexpr uint32_t kNone = ~0u;

  // Sizes the tag arrays, at the first access (a launch builds a cache per SM and L2 slice; a small grid
  // touches few of them).
  void allocate();
  uint64_t line_of(uint64_t addr) const { return line_shift_ >= 0 ? addr >> line_shift_ : addr / line_; }
  uint32_t set_of(uint64_t line_addr) const {
    if (set_bits_) {
      uint64_t folded = 0;
      for (uint64_t rest = line_addr; rest; rest >>= set_bits_) folded ^= rest;
      return static_cast<uint32_t>(folded & sets_mask_);
    }
    return static_cast<uint32_t>(sets_mask_ ? line_addr & sets_mask_ : line_addr % sets_);
  }
  uint32_t sector_bit(uint64_t addr) const {
    return 1u << (sector_shift_ >= 0 ? (addr & (line_ - 1)) >> sector_shift_ : (addr % line_) / sector_);
  }
  // access() on a line other than the previous access's: the set's lookup, and the install on a miss.
  Result access_set(uint64_t addr, uint64_t line_addr, bool write, bool allocate);
  // access()'s sector update of a line it found.
  Result access_line(Line& l, uint32_t bit, bool write, bool allocate) {
    Result r;
    r.hit = (l.valid & bit) != 0;
    if (!r.hit && allocate) l.valid |= bit;
    if (write && (r.hit || allocate) && !(l.dirty & bit)) {
      l.dirty |= bit;
      ++dirty_;
    }
    return r;
  }
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
  int sector_shift_ = -1;   // log2 of sector_ when it and line_ are powers of two
  uint64_t sets_mask_ = 0;  // sets_ - 1 when a power of two
  uint32_t set_bits_ = 0;   // xor_sets: log2(sets_) (0: the linear index)
  std::vector<Line, UninitAllocator<Line>> lines_;
  std::vector<uint64_t, UninitAllocator<uint64_t>> tags_;  // by line, as lines_
  uint64_t dirty_ = 0;  // dirty sectors of all lines
  std::vector<Set, LaunchAllocator<Set>> set_state_;
  struct Slot {
    uint64_t key;
    uint32_t line;  // kNone: empty
  };
  std::vector<Slot, LaunchAllocator<Slot>> index_;
  size_t index_mask_ = 0;
  uint64_t recent_line_ = ~uint64_t{0};  // the line address of the last access's line (none yet: no address's)
  uint32_t recent_index_ = kNone;        // and its index in lines_
};

}  // namespace stc
