#include "cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace stc {

SectorCache::SectorCache(uint32_t sets, uint32_t assoc, uint32_t line_bytes, uint32_t sector_bytes, bool xor_sets)
    : sets_(std::max(1u, sets)), assoc_(std::max(1u, assoc)), line_(line_bytes), sector_(sector_bytes) {
  const auto pow2 = [](uint64_t v) { return v && !(v & (v - 1)); };
  if (pow2(line_)) line_shift_ = __builtin_ctz(line_);
  if (pow2(line_) && pow2(sector_)) sector_shift_ = __builtin_ctz(sector_);
  if (pow2(sets_)) sets_mask_ = sets_ - 1;
  if (xor_sets && sets_ > 1) {
    if (!pow2(sets_)) throw std::invalid_argument("an xor set index needs a power-of-two number of sets, got " + std::to_string(sets_));
    set_bits_ = static_cast<uint32_t>(__builtin_ctz(sets_));
  }
}

void SectorCache::allocate() {
  lines_.resize(static_cast<size_t>(sets_) * assoc_);
  tags_.resize(lines_.size());
  set_state_.resize(sets_);
  if (assoc_ <= kIndexedWays) return;
  size_t cap = 16;
  while (cap < 2 * lines_.size()) cap *= 2;
  index_.assign(cap, Slot{0, kNone});
  index_mask_ = cap - 1;
}

uint32_t SectorCache::find(uint64_t line_addr, uint32_t set) const {
  if (index_.empty()) {
    const uint32_t first = set * assoc_, end = first + set_state_[set].used;
    for (uint32_t i = first; i < end; ++i)
      if (tags_[i] == line_addr) return i;
    return kNone;
  }
  for (size_t h = slot_of(line_addr);; h = (h + 1) & index_mask_) {
    const Slot& s = index_[h];
    if (s.line == kNone || s.key == line_addr) return s.line;
  }
}

void SectorCache::index_insert(uint64_t line_addr, uint32_t line) {
  if (index_.empty()) return;
  size_t h = slot_of(line_addr);
  while (index_[h].line != kNone) h = (h + 1) & index_mask_;
  index_[h] = {line_addr, line};
}

void SectorCache::index_erase(uint64_t line_addr) {
  if (index_.empty()) return;
  size_t h = slot_of(line_addr);
  while (index_[h].key != line_addr || index_[h].line == kNone) h = (h + 1) & index_mask_;
  // Backward-shift deletion: move later entries of the probe run into the hole where their probe starts allow.
  for (size_t next = (h + 1) & index_mask_;; next = (next + 1) & index_mask_) {
    if (index_[next].line == kNone) break;
    const size_t home = slot_of(index_[next].key);
    if (((next - home) & index_mask_) >= ((next - h) & index_mask_)) {
      index_[h] = index_[next];
      h = next;
    }
  }
  index_[h].line = kNone;
}

void SectorCache::touch(Set& s, uint32_t i, bool listed) {
  Line& l = lines_[i];
  if (listed) {
    if (s.newest == i) return;
    (l.older == kNone ? s.oldest : lines_[l.older].newer) = l.newer;
    lines_[l.newer].older = l.older;  // not the newest: it has a newer neighbour
  }
  l.older = s.newest;
  l.newer = kNone;
  (s.newest == kNone ? s.oldest : lines_[s.newest].newer) = i;
  s.newest = i;
}

SectorCache::Result SectorCache::access_set(uint64_t addr, uint64_t line_addr, bool write, bool allocate) {
  if (set_state_.empty()) this->allocate();
  const uint32_t bit = sector_bit(addr);
  // The line this access finds or installs becomes the most recent of its set and access()'s memo (an
  // access moves its own line there; nothing else moves or evicts lines): until another line is accessed,
  // the set's lookup and the recency update are no-ops for it.
  const uint32_t set = set_of(line_addr);
  Set& s = set_state_[set];
  uint32_t i = find(line_addr, set);
  if (i == kNone) {
    Result r;
    if (!allocate) return r;
    const bool fill = s.used < assoc_;  // an empty way left: the next one in way order
    i = fill ? set * assoc_ + s.used++ : s.oldest;
    Line& victim = lines_[i];
    if (!fill) {
      r.writeback_sectors = static_cast<uint32_t>(__builtin_popcount(victim.dirty));
      dirty_ -= r.writeback_sectors;
      r.victim_addr = tags_[i] * line_;
      index_erase(tags_[i]);
    }
    tags_[i] = line_addr;
    victim.valid = bit;
    victim.dirty = write ? bit : 0;
    dirty_ += write;
    index_insert(line_addr, i);
    touch(s, i, !fill);
    recent_line_ = line_addr;
    recent_index_ = i;
    return r;
  }
  touch(s, i, true);
  recent_line_ = line_addr;
  recent_index_ = i;
  return access_line(lines_[i], bit, write, allocate);
}

void SectorCache::invalidate(uint64_t addr) {
  if (set_state_.empty()) return;  // nothing cached yet
  const uint64_t line_addr = line_of(addr);
  if (const uint32_t i = find(line_addr, set_of(line_addr)); i != kNone) lines_[i].valid &= ~sector_bit(addr);
}

}  // namespace stc
