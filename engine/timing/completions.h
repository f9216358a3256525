// The completion cycles of an SM's outstanding misses (its L1 MSHRs): how many are still outstanding at a
// cycle, and the earliest that completes. Queries come at non-decreasing cycles (the run loop's), so the
// counts live in a ring of cycles ahead of the last query (a timing wheel: a request costs one increment,
// a query the cycles since the last one) and the rare completion further ahead waits in a min-heap until it
// comes within the ring. It replaced a min-heap of every request, whose push and pop were a few percent of
// a tensor-core GEMM's host instructions.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace stc {

class Completions {
 public:
  // A request that completes at cycle `ready`; one at or before the last query's cycle is done already.
  void add(uint64_t ready) {
    if (ready <= now_) return;
    ++outstanding_;
    if (ready - now_ < kRing) {
      ++ring_[ready & kMask];
      ++in_ring_;
    } else {
      far_.push_back(ready);
      std::push_heap(far_.begin(), far_.end(), std::greater<>());
    }
  }

  // Requests still outstanding at cycle t (completing after it); t at least the last query's.
  uint32_t outstanding(uint64_t t) {
    if (t > now_) advance(t);
    return outstanding_;
  }

  // The earliest completion of an outstanding request (0: none).
  uint64_t earliest() const {
    if (in_ring_)
      for (uint64_t c = now_ + 1;; ++c)
        if (ring_[c & kMask]) return c;
    return far_.empty() ? 0 : far_.front();
  }

 private:
  static constexpr uint64_t kRing = 1024;  // cycles
  static constexpr uint64_t kMask = kRing - 1;

  void advance(uint64_t t) {
    // the ring's cycles now_ + 1 .. t complete (all of them when t is a ring or more ahead)
    for (uint64_t c = now_ + 1, end = std::min(t, now_ + kRing); c <= end && in_ring_; ++c) {
      const uint32_t n = ring_[c & kMask];
      ring_[c & kMask] = 0;
      in_ring_ -= n;
      outstanding_ -= n;
    }
    now_ = t;
    while (!far_.empty() && far_.front() < now_ + kRing) {  // far requests that come within the ring
      const uint64_t ready = far_.front();
      std::pop_heap(far_.begin(), far_.end(), std::greater<>());
      far_.pop_back();
      if (ready <= now_) {
        --outstanding_;
      } else {
        ++ring_[ready & kMask];
        ++in_ring_;
      }
    }
  }

  uint64_t now_ = 0;
  uint32_t outstanding_ = 0, in_ring_ = 0;
  std::array<uint32_t, kRing> ring_{};
  std::vector<uint64_t> far_;  // min-heap of completions a ring or more after now_
};

}  // namespace stc
