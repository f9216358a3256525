// A bandwidth-limited resource that accepts reservations in any time order: time is cut into buckets of
// fixed length, each with a capacity in service cycles; a request takes capacity from the first bucket at or
// after its arrival that has room. This lets a late-arriving early request (an L2 hit) pass a reservation
// made earlier for a later time (a DRAM miss), which a single "next free" timestamp cannot.
#pragma once

#include <cstdint>
#include <deque>

namespace stc {

class Calendar {
 public:
  explicit Calendar(uint32_t bucket_cycles = 16) : bucket_(bucket_cycles) {}

  // Reserves `service` cycles of the resource for a request arriving at `arrive`; returns the cycle its
  // service starts.
  double reserve(double arrive, double service) {
    if (arrive < 0) arrive = 0;
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
        trim(b);
        return start;
      }
      ++b;
    }
  }

 private:
  double& slot(uint64_t b) {
    while (b >= base_ + used_.size()) used_.push_back(0.0);
    return used_[static_cast<size_t>(b - base_)];
  }
  // Drops buckets far behind the newest request (requests arrive roughly in time order).
  void trim(uint64_t b) {
    while (base_ + 4096 < b && !used_.empty()) {
      used_.pop_front();
      ++base_;
    }
  }
  uint32_t bucket_;
  uint64_t base_ = 0;
  std::deque<double> used_;
};

}  // namespace stc
