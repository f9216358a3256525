// Sector address -> cycle map of the outstanding fills (L1 MSHR merging, L2 fills in flight): open
// addressing with linear probing in one flat array, so a lookup is a hash and a short scan instead of a
// node-based bucket walk. Entries whose cycle has passed are dropped in bulk when the table fills (an insert
// names the cycle up to which entries are dead), and it grows only if they were not most of it.
#pragma once

#include <cstdint>
#include <vector>

#include "../func/huge_pool.h"

namespace stc {

class SectorMap {
 public:
  SectorMap() : slots_(kMinCapacity) {}

  // An empty slot's key: no sector address (those are multiples of the sector size). Slots are 16 bytes,
  // four to a host cache line (with a separate used flag they were 24 and a probe often read two lines).
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    uint64_t value = 0;
  };

  // The cycle stored for `key` (a sector address: never kEmpty), or nullptr.
  const uint64_t* find(uint64_t key) const {
    const Slot* s = probe(key);
    return s && s->key == key ? &s->value : nullptr;
  }
  // The slot holding `key`, or the empty one where set() would put it now; nullptr for an empty map (an SM
  // whose loads all bypass L1 never fills its map: no probe). Valid until the map next changes.
  Slot* probe(uint64_t key) {
    return const_cast<Slot*>(static_cast<const SectorMap*>(this)->probe(key));
  }
  const Slot* probe(uint64_t key) const {
    if (size_ == 0) return nullptr;
    for (size_t h = index(key);; h = (h + 1) & mask()) {
      const Slot& s = slots_[h];
      if (s.key == key || s.key == kEmpty) return &s;
    }
  }
  // set(key, value, dead) where `slot` is probe(key)'s answer, the map unchanged since: no second probe.
  void set_at(Slot* slot, uint64_t key, uint64_t value, uint64_t dead) {
    if (slot && slot->key == key) {
      slot->value = value;
    } else if (slot && 2 * (size_ + 1) <= slots_.size()) {
      *slot = {key, value};
      ++size_;
    } else {
      set(key, value, dead);  // an empty map, or a full one
    }
  }
  // Stores `value` for `key` (inserting or overwriting). Entries whose cycle is <= `dead` may be dropped: a
  // table half full is rebuilt without them, at twice the size if it is still over a quarter full.
  void set(uint64_t key, uint64_t value, uint64_t dead) {
    if (2 * (size_ + 1) > slots_.size()) {
      rehash(slots_.size(), dead + 1);
      if (4 * (size_ + 1) > slots_.size()) rehash(2 * slots_.size(), 0);
    }
    for (size_t h = index(key);; h = (h + 1) & mask()) {
      Slot& s = slots_[h];
      if (s.key == kEmpty) {
        s = {key, value};
        ++size_;
        return;
      }
      if (s.key == key) {
        s.value = value;
        return;
      }
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kMinCapacity = 1024;
  size_t mask() const { return slots_.size() - 1; }
  // The 128-byte line of a 32-byte sector is hashed and the sector's place in the line kept: a line's four
  // sectors (a warp's load asks for them one after another) share one host cache line of slots, so a load
  // pays one cold miss per line instead of one per sector. (Other sector sizes only hash less evenly.)
  static constexpr int kLineShift = 7, kSectorShift = 5;
  size_t index(uint64_t key) const {
    const uint64_t line_hash = ((key >> kLineShift) * 0x9E3779B97F4A7C15ull) >> 32;
    const uint64_t sector = (key >> kSectorShift) & ((1u << (kLineShift - kSectorShift)) - 1);
    return static_cast<size_t>((line_hash << (kLineShift - kSectorShift) | sector) & mask());
  }
  // Rebuilds the table with `capacity` slots, keeping the entries whose cycle is >= `keep_from`.
  void rehash(size_t capacity, uint64_t keep_from) {
    std::vector<Slot, LaunchAllocator<Slot>> old(capacity);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != kEmpty && s.value >= keep_from) place(s.key, s.value);
  }
  // Puts an entry whose key the table lacks into the first empty slot of its probe (the table has room).
  void place(uint64_t key, uint64_t value) {
    size_t h = index(key);
    while (slots_[h].key != kEmpty) h = (h + 1) & mask();
    slots_[h] = {key, value};
    ++size_;
  }

  std::vector<Slot, LaunchAllocator<Slot>> slots_;
  size_t size_ = 0;
};

}  // namespace stc
