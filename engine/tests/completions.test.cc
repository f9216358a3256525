// timing/completions.h: an SM's outstanding misses (its MSHRs). outstanding(t) counts the requests that
// complete after t; earliest() is the earliest completion after the last query's cycle (0: none). Queries
// come at non-decreasing cycles; a request that completes at or before the last query's cycle is done.
// earliest() keeps its answer until a completion passes or an earlier request comes (issue 48): these tests
// hold it to the rule written the plain way.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "timing/completions.h"
#include "unit_test.h"

using stc::Completions;

namespace {

// Every request kept in a list: the reference the ring, the far heap and the kept earliest must agree with.
struct ReferenceCompletions {
  uint64_t now = 0;
  std::vector<uint64_t> ready;
  void add(uint64_t r) {
    if (r > now) ready.push_back(r);
  }
  uint32_t outstanding(uint64_t t) {
    now = std::max(now, t);
    ready.erase(std::remove_if(ready.begin(), ready.end(), [&](uint64_t r) { return r <= now; }), ready.end());
    return static_cast<uint32_t>(ready.size());
  }
  uint64_t earliest() const { return ready.empty() ? 0 : *std::min_element(ready.begin(), ready.end()); }
};

}  // namespace

TEST(completions_earliest_is_kept_until_it_passes_or_an_earlier_request_comes) {
  Completions c;
  CHECK_EQ(c.earliest(), uint64_t{0});  // none outstanding
  c.add(50);
  CHECK_EQ(c.earliest(), uint64_t{50});
  c.add(70);
  CHECK_EQ(c.earliest(), uint64_t{50});  // a later request: the kept answer stands
  c.add(30);
  CHECK_EQ(c.earliest(), uint64_t{30});  // an earlier one replaces it
  CHECK_EQ(c.outstanding(29), uint32_t{3});
  CHECK_EQ(c.earliest(), uint64_t{30});
  CHECK_EQ(c.outstanding(30), uint32_t{2});  // the earliest completes: found again
  CHECK_EQ(c.earliest(), uint64_t{50});
  c.add(5000);  // beyond the ring: the far heap
  CHECK_EQ(c.outstanding(80), uint32_t{1});
  CHECK_EQ(c.earliest(), uint64_t{5000});
  CHECK_EQ(c.outstanding(5000), uint32_t{0});
  CHECK_EQ(c.earliest(), uint64_t{0});
}

TEST(completions_agree_with_the_plain_rule_on_random_traffic) {
  Completions c;
  ReferenceCompletions ref;
  uint64_t x = 0x9E3779B97F4A7C15ull, t = 0;
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int step = 0; step < 200000; ++step) {
    const uint64_t r = next();
    switch (r % 4) {
      case 0:  // a miss: mostly within the ring, sometimes far beyond it, sometimes already done
        for (uint64_t n = 1 + (r >> 8) % 32, k = 0; k < n; ++k) {
          const uint64_t v = next();
          const uint64_t ready = v % 16 == 0   ? t + 1000 + v % 4000
                                 : v % 16 == 1 ? t - std::min<uint64_t>(t, 3)
                                               : t + 1 + v % 900;
          c.add(ready);
          ref.add(ready);
        }
        break;
      case 1:  // time passes
        t += (r >> 8) % (r % 64 == 1 ? 3000 : 40);
        break;
      default:  // the scheduler's question, as check() asks it
        REQUIRE_EQ(c.outstanding(t), ref.outstanding(t));
        REQUIRE_EQ(c.earliest(), ref.earliest());
    }
  }
}
