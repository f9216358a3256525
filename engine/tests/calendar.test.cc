// timing/calendar.h: a bandwidth resource cut into buckets of kBucketCycles cycles, each with that many
// service cycles of capacity; a request takes capacity from the first bucket at or after its arrival that
// has room (starting at max(arrival, bucket start + capacity used before it)); a request that overfills its
// bucket spills the rest into the following buckets; buckets before `now` are dropped.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "timing/calendar.h"
#include "unit_test.h"

using stc::Calendar;

namespace {

constexpr double kB = Calendar::kBucketCycles;

// The documented rule written the plain way (every bucket kept, a linear search for room): the reference the
// calendar's ring, inline path, skip links and path compression must agree with.
struct ReferenceCalendar {
  std::vector<double> used;
  double& at(uint64_t b) {
    if (b >= used.size()) used.resize(b + 1, 0.0);
    return used[b];
  }
  double reserve(double arrive, double service, uint64_t now) {
    uint64_t b = std::max(static_cast<uint64_t>(arrive) / Calendar::kBucketCycles, now / Calendar::kBucketCycles);
    while (at(b) >= kB) ++b;  // a full bucket has no room
    double& u = at(b);
    const double start = std::max(arrive, static_cast<double>(b) * kB + u);
    u += service;
    if (u >= kB) {
      double rest = u - kB;
      u = kB;
      for (uint64_t n = b + 1; rest > 0; ++n) {
        const double take = std::min(rest, kB - at(n));
        at(n) += take;
        rest -= take;
      }
    }
    return start;
  }
};

// A small deterministic generator (the same sequence on every host).
struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
};

}  // namespace

TEST(calendar_first_request_starts_at_its_arrival) {
  Calendar c;
  CHECK_EQ(c.reserve(5, 2, 0), 5.0);
  Calendar d;
  CHECK_EQ(d.reserve(1000.5, 3, 0), 1000.5);  // a bucket far past the (empty) ring
}

TEST(calendar_requests_of_one_bucket_queue_behind_each_other) {
  Calendar c;
  CHECK_EQ(c.reserve(0, 4, 0), 0.0);
  CHECK_EQ(c.reserve(0, 4, 0), 4.0);
  CHECK_EQ(c.reserve(0, 4, 0), 8.0);
  CHECK_EQ(c.reserve(13, 1, 0), 13.0);  // arriving after the capacity used: starts at its arrival
}

TEST(calendar_full_bucket_spills_and_later_requests_skip_it) {
  Calendar c;
  CHECK_EQ(c.reserve(0, 10, 0), 0.0);
  CHECK_EQ(c.reserve(0, 10, 0), 10.0);  // 20 cycles in a 16-cycle bucket: 4 spill into bucket 1
  CHECK_EQ(c.reserve(0, 1, 0), kB + 4);  // bucket 0 full: the next request goes behind the spill
  CHECK_EQ(c.reserve(3, 1, 0), kB + 5);
}

TEST(calendar_never_books_more_than_a_bucket_holds) {
  // Sixteen one-cycle requests fill bucket 0 exactly; the seventeenth goes to bucket 1.
  Calendar c;
  for (int i = 0; i < 16; ++i) CHECK_EQ(c.reserve(0, 1, 0), static_cast<double>(i));
  CHECK_EQ(c.reserve(0, 1, 0), kB);
  CHECK_EQ(c.reserve(2, 1, 0), kB + 1);
}

TEST(calendar_early_request_passes_a_later_reservation) {
  // A DRAM miss reserved for cycle 100 does not delay an L2 hit arriving at cycle 10 (a single "next free"
  // timestamp would start it at 108).
  Calendar c;
  CHECK_EQ(c.reserve(100, 8, 0), 100.0);
  CHECK_EQ(c.reserve(10, 8, 0), 10.0);
  // A second request at 100 queues behind the bucket's used capacity, counted from the bucket's start
  // (cycle 96): it starts at 96 + 8 = 104, not 108 (the calendar books capacity per bucket, not intervals).
  CHECK_EQ(c.reserve(100, 8, 0), 104.0);
  CHECK_EQ(c.reserve(100, 8, 0), 112.0);  // 24 of 16 cycles: the bucket is full, 8 spill into the next
  CHECK_EQ(c.reserve(100, 1, 0), 120.0);  // behind the spill
}

TEST(calendar_saturated_stretch_is_skipped_as_a_whole) {
  // 200 buckets booked full one after another (the ring grows past its first 64 buckets), then requests
  // arriving anywhere inside the stretch all start after it.
  Calendar c;
  for (int b = 0; b < 200; ++b) CHECK_EQ(c.reserve(b * kB, kB, 0), b * kB);
  CHECK_EQ(c.reserve(0, 1, 0), 200 * kB);
  CHECK_EQ(c.reserve(37 * kB + 3, 1, 0), 200 * kB + 1);
  CHECK_EQ(c.reserve(199 * kB, 1, 0), 200 * kB + 2);
}

TEST(calendar_one_long_request_fills_the_buckets_it_spans) {
  Calendar c;
  CHECK_EQ(c.reserve(0, 10 * kB + 4, 0), 0.0);  // buckets 0..9 full, 4 cycles of bucket 10
  CHECK_EQ(c.reserve(5 * kB, 2, 0), 10 * kB + 4);
  CHECK_EQ(c.reserve(11 * kB, 2, 0), 11 * kB);  // past the spill: free
}

TEST(calendar_buckets_before_now_are_dropped) {
  // Reservations of buckets the current cycle has passed no longer hold anything: a bucket before `now`
  // reused by the ring is empty.
  Calendar c;
  for (int b = 0; b < 4; ++b) c.reserve(b * kB, kB, 0);
  CHECK_EQ(c.reserve(4 * kB, 1, 4 * kB), 4 * kB);
  // A ring's worth of buckets later (the ring holds 64 buckets), the same slots of the ring are free.
  for (int i = 0; i < 8; ++i) CHECK_EQ(c.reserve((64 + i) * kB, 2, 64 * kB), (64 + i) * kB);
}

TEST(calendar_matches_the_documented_rule_on_random_requests) {
  // Requests in a sliding window ahead of an advancing current cycle, services of up to five buckets (in
  // quarters of a cycle: the arithmetic is exact), checked against the plain reference start by start.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Calendar c;
    ReferenceCalendar ref;
    Lcg g{seed};
    uint64_t now = 0;
    int mismatches = 0;
    for (int i = 0; i < 20000; ++i) {
      if (g.next() % 8 == 0) now += g.next() % 40;
      const double arrive = static_cast<double>(now) + (g.next() % (seed == 4 ? 4000 : 400)) / 4.0;
      const uint32_t kind = g.next() % 16;
      const double service = kind == 0 ? (g.next() % 320) / 4.0 : (1 + g.next() % 32) / 4.0;
      const double got = c.reserve(arrive, service, now), want = ref.reserve(arrive, service, now);
      if (got != want && ++mismatches <= 5) CHECK_EQ(got, want);
      CHECK_GE(got, arrive);
    }
    CHECK_EQ(mismatches, 0);
  }
}
