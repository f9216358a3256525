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
    if (earliest_ != kUnknown && ready < earliest_) earliest_ = ready;  // (kNone: the first outstanding)
    ++outstanding_;
    if (ready - now_ < kRing) {
      put(ready);
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

  // The earliest completion of an outstanding request (0: none). The scheduler asks it of every warp its
  // full MSHRs hold, many times between two changes: the answer is kept until a completion passes or an
  // earlier request comes.
  uint64_t earliest() {
    if (earliest_ == kUnknown) earliest_ = find_earliest();
    return earliest_ == kNone ? 0 : earliest_;
  }

 private:
  static constexpr uint64_t kRing = 1024;  // cycles
  static constexpr uint64_t kMask = kRing - 1;
  // earliest_'s states beside a cycle: not known (find it), and no request outstanding (every cycle a
  // request may complete at is below both)
  static constexpr uint64_t kUnknown = ~uint64_t{0}, kNone = kUnknown - 1;

  uint64_t find_earliest() const {
    if (in_ring_)  // the first occupied cycle after now_ (the ring wraps: at most a ring's cycles on)
      for (uint64_t c = now_ + 1;;) {
        const uint64_t i = c & kMask, rest = occupied_[i >> 6] >> (i & 63);
        if (rest) return c + static_cast<uint64_t>(__builtin_ctzll(rest));
        c += 64 - (i & 63);
      }
    return far_.empty() ? kNone : far_.front();
  }

  // Counts a completion at cycle `ready`, within the ring.
  void put(uint64_t ready) {
    const uint64_t i = ready & kMask;
    ++ring_[i];
    ++in_ring_;
    occupied_[i >> 6] |= uint64_t{1} << (i & 63);
  }

  void advance(uint64_t t) {
    if (earliest_ != kNone && t >= earliest_) earliest_ = kUnknown;  // (a known earliest_ <= t completes)
    // the ring's cycles now_ + 1 .. t complete (all of them when t is a ring or more ahead): only its
    // occupied cycles are read, a word of the bitmap at a time
    for (uint64_t c = now_ + 1, left = std::min(t - now_, kRing); left && in_ring_;) {
      const uint64_t i = c & kMask, bit = i & 63, n = std::min<uint64_t>(left, 64 - bit);
      const uint64_t span = (n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1) << bit;
      uint64_t& word = occupied_[i >> 6];
      for (uint64_t hit = word & span; hit; hit &= hit - 1) {
        uint32_t& count = ring_[(i & ~uint64_t{63}) + static_cast<uint64_t>(__builtin_ctzll(hit))];
        in_ring_ -= count;
        outstanding_ -= count;
        count = 0;
      }
      word &= ~span;
      c += n;
      left -= n;
    }
    now_ = t;
    while (!far_.empty() && far_.front() < now_ + kRing) {  // far requests that come within the ring
      const uint64_t ready = far_.front();
      std::pop_heap(far_.begin(), far_.end(), std::greater<>());
      far_.pop_back();
      if (ready <= now_) --outstanding_;
      else put(ready);
    }
  }

  uint64_t now_ = 0;
  uint32_t outstanding_ = 0, in_ring_ = 0;
  std::array<uint32_t, kRing> ring_{};
  std::array<uint64_t, kRing / 64> occupied_{};  // a bit per ring cycle with a count
  std::vector<uint64_t> far_;  // min-heap of completions a ring or more after now_
  uint64_t earliest_ = kNone;  // earliest()'s answer, kUnknown, or kNone
};

}  // namespace stc
