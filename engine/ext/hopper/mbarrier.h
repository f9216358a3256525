// The mbarrier object (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier"): an
// opaque 8-byte object in shared memory. Its encoding here (the ISA leaves it to the implementation):
//   bits  0-19  pending arrivals of the current phase
//   bits 20-39  expected arrivals (the init count)
//   bits 40-60  tx-count, two's complement in 21 bits (range -(2^20 - 1) .. 2^20 - 1)
//   bit  62     initialised (mbarrier.init sets it, mbarrier.inval clears the object)
//   bit  63     parity of the current phase
// The current phase completes when no arrival is pending and the tx-count is zero: the parity flips, the
// pending count is reset to the expected count, and warps waiting on the barrier are woken.
#pragma once

#include <cstdint>

#include "../../func/state.h"

namespace stc::hopper {

struct Mbarrier {
  uint32_t pending = 0, expected = 0;
  int32_t tx = 0;
  bool init = false;
  bool phase = false;
};

Mbarrier mbarrier_load(const uint8_t* p);
void mbarrier_store(uint8_t* p, const Mbarrier& b);

// Adds `bytes` to the tx-count of the barrier at `p` (negative: complete_tx) and completes its phase when
// nothing is pending; returns false when the tx-count leaves its range. Wakes waiters of `cta` on completion.
bool mbarrier_tx(CtaState& cta, uint8_t* p, int64_t bytes);

}  // namespace stc::hopper
