// A bandwidth-limited resource that accepts reservations in any time order: time is cut into buckets of
// fixed length, each with a capacity in service cycles; a request takes capacity from the first bucket at or
// after its arrival that has room. This lets a late-arriving early request (an L2 hit) pass a reservation
// made earlier for a later time (a DRAM miss), which a single "next free" timestamp cannot.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../func/huge_pool.h"

namespace stc {

class Calendar {
 public:
  // Bucket length in cycles: a power of two, so that finding a request's bucket is a shift (every resource
  // of the memory system reserves through here, several times per sector).
  static constexpr uint32_t kBucketCycles = 16;

  // Reserves `service` cycles of the resource for a request arriving at `arrive`; returns the cycle its
  // service starts. `now`: the current cycle, never after any later request's arrival (buckets before it
  // are dropped).
  // The usual request (its bucket held, not full, and left with room; or a bucket after the held ones that
  // the ring has room for, which it fills with empty buckets up to it) is served inline; the rest by
  // reserve_slow(), which does the same for it.
  double reserve(double arrive, double service, uint64_t now) {
    if (arrive < 0) arrive = 0;
    drop_before(now / bucket_);
    uint64_t b = static_cast<uint64_t>(arrive) / bucket_;
    if (b < base_) b = base_;
    if (b < base_ + size_) {
      Bucket& k = ring_[b & (ring_.size() - 1)];
      if (!k.skip && k.used + service < bucket_) {
        const double start = std::max(arrive, static_cast<double>(b * bucket_) + k.used);
        k.used += service;
        return start;
      }
    } else if (b - base_ < ring_.size() && service < bucket_) {  // past the held buckets, inside the ring
      while (base_ + size_ <= b) ring_[(base_ + size_++) & (ring_.size() - 1)] = Bucket{0.0, 0};
      ring_[b & (ring_.size() - 1)].used = service;
      return std::max(arrive, static_cast<double>(b * bucket_));
    }
    return reserve_slow(arrive, service, b);
  }

 private:
  // reserve() past its inline case: b is the arrival's bucket (at least base_).
  [[gnu::noinline]] double reserve_slow(double arrive, double service, uint64_t b) {
    b = first_with_room(b);
    double& used = slot(b).used;
    const double start = std::max(arrive, static_cast<double>(b * bucket_) + used);
    used += service;
    if (used >= bucket_) {  // full: spill the remainder into following buckets
      double rest = used - bucket_;
      used = bucket_;
      slot(b).skip = 1;
      for (uint64_t n = b + 1; rest > 0; ++n) {
        Bucket& u = slot(n);
        const double take = std::min(rest, bucket_ - u.used);
        u.used += take;
        rest -= take;
        if (u.used >= bucket_) u.skip = 1;
      }
    }
    return start;
  }

  // A bucket's reserved service cycles, and where it is full, how many buckets from it on are known full
  // (at least 1): buckets only fill up until they are dropped, so a request skips a saturated stretch in a
  // few jumps instead of testing each bucket (a saturated L2 slice queued ten buckets deep).
  struct Bucket {
    double used;
    uint32_t skip;
  };
  // The first bucket at or after b with room (b at least base_), shortening the jumps it took to it.
  uint64_t first_with_room(uint64_t b) {
    uint64_t c = b;
    while (c < base_ + size_ && ring_[c & (ring_.size() - 1)].skip) c += ring_[c & (ring_.size() - 1)].skip;
    for (uint64_t n = b; n < c;) {  // path compression: every full bucket passed points at c
      uint32_t& skip = ring_[n & (ring_.size() - 1)].skip;
      const uint64_t next = n + skip;
      skip = static_cast<uint32_t>(c - n);
      n = next;
    }
    return c;
  }
  // The buckets base_ .. base_ + size_ - 1 live in a ring indexed by bucket number (its capacity a power of
  // two, at least size_).
  Bucket& slot(uint64_t b) {
    while (b >= base_ + size_) {
      if (size_ == ring_.size()) grow();
      ring_[(base_ + size_) & (ring_.size() - 1)] = Bucket{0.0, 0};
      ++size_;
    }
    return ring_[b & (ring_.size() - 1)];
  }
  void grow() {
    std::vector<Bucket, LaunchAllocator<Bucket>> next(std::max<size_t>(64, 2 * ring_.size()));
    for (uint64_t b = base_; b < base_ + size_; ++b) next[b & (next.size() - 1)] = ring_[b & (ring_.size() - 1)];
    ring_.swap(next);
  }
  // Drops the buckets before bucket nb: no request arrives before the current cycle, so the ring holds only
  // the reservations ahead of it (a new bucket is zeroed when slot() adds it).
  void drop_before(uint64_t nb) {
    if (nb <= base_) return;
    size_ = nb < base_ + size_ ? size_ - static_cast<size_t>(nb - base_) : 0;
    base_ = nb;
  }
  static constexpr uint32_t bucket_ = kBucketCycles;
  uint64_t base_ = 0;
  size_t size_ = 0;
  std::vector<Bucket, LaunchAllocator<Bucket>> ring_;
};

}  // namespace stc
