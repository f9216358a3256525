#include "cache.h"

#include <algorithm>

namespace stc {

SectorCache::SectorCache(uint32_t sets, uint32_t assoc, uint32_t line_bytes, uint32_t sector_bytes)
    : sets_(std::max(1u, sets)), assoc_(std::max(1u, assoc)), line_(line_bytes), sector_(sector_bytes) {
  lines_.resize(static_cast<size_t>(sets_) * assoc_);
}

SectorCache::Result SectorCache::access(uint64_t addr, bool write, bool allocate) {
  const uint64_t line_addr = addr / line_;
  const uint32_t set = static_cast<uint32_t>(line_addr % sets_);
  const uint32_t bit = 1u << ((addr % line_) / sector_);
  Line* base = &lines_[static_cast<size_t>(set) * assoc_];
  Result r;
  ++tick_;
  Line* victim = base;
  for (uint32_t w = 0; w < assoc_; ++w) {
    Line& l = base[w];
    if (l.tag == line_addr) {
      l.lru = tick_;
      r.hit = (l.valid & bit) != 0;
      if (!r.hit && allocate) l.valid |= bit;
      if (write && (r.hit || allocate)) l.dirty |= bit;
      return r;
    }
    if (l.lru < victim->lru) victim = &l;
  }
  if (!allocate) return r;
  r.writeback_sectors = static_cast<uint32_t>(__builtin_popcount(victim->dirty));
  r.victim_addr = victim->tag * line_;
  victim->tag = line_addr;
  victim->valid = bit;
  victim->dirty = write ? bit : 0;
  victim->lru = tick_;
  return r;
}

void SectorCache::invalidate(uint64_t addr) {
  const uint64_t line_addr = addr / line_;
  const uint32_t set = static_cast<uint32_t>(line_addr % sets_);
  const uint32_t bit = 1u << ((addr % line_) / sector_);
  Line* base = &lines_[static_cast<size_t>(set) * assoc_];
  for (uint32_t w = 0; w < assoc_; ++w)
    if (base[w].tag == line_addr) base[w].valid &= ~bit;
}

uint64_t SectorCache::dirty_sectors() const {
  uint64_t n = 0;
  for (const auto& l : lines_) n += static_cast<uint64_t>(__builtin_popcount(l.dirty));
  return n;
}

}  // namespace stc
