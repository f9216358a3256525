// A set of 64-bit keys for the few keys one warp instruction touches (sectors, shared-memory words):
// open addressing with generation stamps, so clearing it between instructions costs nothing.
#pragma once

#include <cstdint>
#include <vector>

namespace stc {

class DistinctSet {
 public:
  explicit DistinctSet(uint32_t capacity_log2 = 11) : mask_((1u << capacity_log2) - 1), slots_(mask_ + 1) {}

  // Forgets every key.
  void clear() {
    if (++gen_ == 0) {  // wrapped: reset the stamps once every 4 billion uses
      for (auto& s : slots_) s.gen = 0;
      gen_ = 1;
    }
    size_ = 0;
  }
  // Inserts `key`; returns true when it was not present.
  bool insert(uint64_t key) {
    if (2 * (size_ + 1) > mask_ + 1) grow();
    uint32_t h = static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & mask_;
    while (slots_[h].gen == gen_) {
      if (slots_[h].key == key) return false;
      h = (h + 1) & mask_;
    }
    slots_[h] = {key, gen_};
    ++size_;
    return true;
  }
  uint32_t size() const { return size_; }

 private:
  void grow() {  // doubles the table, keeping the current keys
    std::vector<uint64_t> keys;
    for (const auto& s : slots_)
      if (s.gen == gen_) keys.push_back(s.key);
    mask_ = 2 * mask_ + 1;
    slots_.assign(mask_ + 1, Slot{});
    gen_ = 1;
    size_ = 0;
    for (uint64_t k : keys) insert(k);
  }

  struct Slot {
    uint64_t key = 0;
    uint32_t gen = 0;
  };
  uint32_t mask_;
  std::vector<Slot> slots_;
  uint32_t gen_ = 1;
  uint32_t size_ = 0;
};

}  // namespace stc
