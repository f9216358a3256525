// A memo of per-instruction results that depend only on the shape of a warp's accesses: the records'
// addresses relative to a base aligned to a power of two, their sizes and spaces. A warp that repeats an
// access pattern at another aligned base (the next k-tile of a GEMM, another CTA's shared tile) gets the
// stored result after one pass over its records that compares them with the stored shape, instead of
// recomputing it. Exact: a hit means the records are those of the stored instruction moved by a multiple of
// the alignment, which the caller's result must not depend on (bank and sector arithmetic does not).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../func/state.h"

namespace stc {

template <class Value>
class ShapeMemo {
 public:
  // `align`: the base alignment (a power of two) under which the cached results are invariant.
  explicit ShapeMemo(uint64_t align) : align_(align), slots_(kSlots) {}

  // The base of `acc` (its first address rounded down to the alignment).
  uint64_t base(const std::vector<MemAccess>& acc) const { return base(acc.front().addr); }
  // The base of a pattern whose first access is at `first_addr`.
  uint64_t base(uint64_t first_addr) const { return first_addr & ~(align_ - 1); }

  // The stored value for the shape of `acc` (non-empty) at `base`, or nullptr; a miss leaves the slot
  // ready for store(). With a non-zero `named` shape (WarpRecord::shape) the lookup is by that name and the
  // first access's offset from the base, which together fix every record relative to the base.
  const Value* find(const std::vector<MemAccess>& acc, uint64_t base, const AccessShape& named = {}) {
    if (named.key) return find_named(named, acc.front().addr - base);
    // Each record as two words: its offset from the base, and its size and space (lane, write flag and
    // padding masked off). Four independent multiply chains (records i, i + 4, ... in chain i % 4), folded
    // at the end: the host overlaps them, where one chain waits on each multiply in turn.
    const size_t n = acc.size();
    constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
    uint64_t h[4] = {n, 1, 2, 3};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (size_t j = 0; j < 4; ++j) {
        const Rel r = rel_of(acc[i + j], base);
        h[j] = (h[j] ^ r.off ^ (r.kind << 40 | r.kind >> 24)) * kMul;
      }
    for (; i < n; ++i) {
      const Rel r = rel_of(acc[i], base);
      h[0] = (h[0] ^ r.off ^ (r.kind << 40 | r.kind >> 24)) * kMul;
    }
    const uint64_t hash = ((h[0] ^ (h[1] << 21 | h[1] >> 43)) * kMul ^ (h[2] << 42 | h[2] >> 22) ^ h[3]) * kMul;
    slot_ = &slots_[hash >> (64 - kSlotBits)];
    if (slot_->hash == hash && slot_->rel.size() == n && slot_->valid) {
      uint64_t diff = 0;  // every record compared, no branch per record
      const Rel* stored = slot_->rel.data();
      for (size_t k = 0; k < n; ++k) {
        const Rel r = rel_of(acc[k], base);
        diff |= (r.off ^ stored[k].off) | (r.kind ^ stored[k].kind);
      }
      if (diff == 0) return &slot_->value;
    }
    slot_->hash = hash;
    slot_->named = {};
    slot_->valid = false;
    return nullptr;
  }
  // The stored value for the named shape `named` (a non-zero key) whose first access is at `first_addr`:
  // find() without the records; a miss likewise leaves the slot ready for store().
  const Value* find(const AccessShape& named, uint64_t first_addr) {
    return find_named(named, first_addr - base(first_addr));
  }
  // Stores `value` for the shape of `acc` at `base`, in the slot the last find() missed.
  void store(const std::vector<MemAccess>& acc, uint64_t base, const Value& value) {
    slot_->rel.clear();
    for (const MemAccess& a : acc) slot_->rel.push_back(rel_of(a, base));
    slot_->value = value;
    slot_->valid = true;
  }

 private:
  const Value* find_named(const AccessShape& named, uint64_t first_off) {
    const uint64_t h = ((named.key * 0x9E3779B97F4A7C15ull ^ named.lanes) * 0xbf58476d1ce4e5b9ULL ^ first_off) *
                       0x94d049bb133111ebULL;
    slot_ = &slots_[h >> (64 - kSlotBits)];
    if (slot_->valid && slot_->named == named && slot_->first_off == first_off) return &slot_->value;
    slot_->hash = h;
    slot_->named = named;
    slot_->first_off = first_off;
    slot_->valid = false;
    return nullptr;
  }

  static constexpr uint32_t kSlotBits = 8;
  static constexpr size_t kSlots = size_t{1} << kSlotBits;
  // A record relative to the base: its offset, and its second 8 bytes (size, lane, write, space, padding)
  // masked to the size and the space.
  struct Rel {
    uint64_t off;
    uint64_t kind;
  };
  static_assert(sizeof(MemAccess) == 16 && offsetof(MemAccess, size) == 8 && offsetof(MemAccess, space) == 14 &&
                sizeof(Space) == 1);
  static constexpr uint64_t kKindMask = 0x00FF0000FFFFFFFFull;  // size: bytes 8-11, space: byte 14
  static Rel rel_of(const MemAccess& a, uint64_t base) {
    uint64_t kind;
    std::memcpy(&kind, reinterpret_cast<const unsigned char*>(&a) + 8, 8);
    return {a.addr - base, kind & kKindMask};
  }
  struct Slot {
    uint64_t hash = 0;
    bool valid = false;
    AccessShape named;       // the name it was stored under (key 0: stored by its records only)
    uint64_t first_off = 0;  // with `named`: the first access's offset from the base
    std::vector<Rel> rel;
    Value value{};
  };
  uint64_t align_;
  std::vector<Slot> slots_;
  Slot* slot_ = nullptr;
};

}  // namespace stc
