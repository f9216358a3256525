// A bandwidth-limited resource that accepts reservations in any time order: time is cut into buckets of
// fixed length, each with a capacity in service cycles; a request takes capacity from the first bucket at or
// after its arrival that has room. This lets a late-arriving early request (an L2 hit) pass a reservation
// made earlier for a later time (a DRAM miss), which a single "next free" timestamp cannot.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace stc {

class Calendar {
 public:
  // Bucket length in cycles: a power of two, so that finding a request's bucket is a shift (every resource
  // of the memory system reserves through here, several times per sector).
  static constexpr uint32_t kBucketCycles = 16;

  // Reserves `service` cycles of the resource for a request arriving at `arrive`; returns the cycle its
  // service starts. `now`: the current cycle, never after any later request's arrival (buckets before it
  // are dropped).
  double reserve(double arrive, double service, uint64_t now) {
    if (arrive < 0) arrive = 0;
    drop_before(now / bucket_);
    uint64_t b = static_cast<uint64_t>(arrive) / bucket_;
    if (b < base_) b = base_;
    while (true) {
      double& used = slot(b);
      const double bucket_start = static_cast<double>(b * bucket_);
      if (used < bucket_) {
        const double start = std::max(arrive, bucket_start + used);
        used += service;
        if (used > bucket_) {  // spill the remainder into following buckets
          double rest = used - bucket_;
          used = bucket_;
          for (uint64_t n = b + 1; rest > 0; ++n) {
            double& u = slot(n);
            const double take = std::min(rest, bucket_ - u);
            u += take;
            rest -= take;
          }
        }
        return start;
      }
      ++b;
    }
  }

 private:
  // The buckets base_ .. base_ + size_ - 1 live in a ring indexed by bucket number (its capacity a power of
  // two, at least size_).
  double& slot(uint64_t b) {
    while (b >= base_ + size_) {
      if (size_ == ring_.size()) grow();
      ring_[(base_ + size_) & (ring_.size() - 1)] = 0.0;
      ++size_;
    }
    return ring_[b & (ring_.size() - 1)];
  }
  void grow() {
    std::vector<double> next(std::max<size_t>(64, 2 * ring_.size()));
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
  std::vector<double> ring_;
};

}  // namespace stc
