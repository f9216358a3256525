// The simulated device address space: global allocations, plus the generic-address windows for
// shared and local memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "huge_pool.h"

namespace stc {

// Generic addresses at or above these bases (and below base + 4 GiB) refer to shared / local / constant memory.
constexpr uint64_t kSharedWindow = 0x0000100000000000ull;
constexpr uint64_t kLocalWindow = 0x0000200000000000ull;
constexpr uint64_t kConstWindow = 0x0000300000000000ull;  // the constant bank (read-only), cvta.const
constexpr uint64_t kParamWindow = 0x0000400000000000ull;  // the kernel parameters (read-only), cvta.param
constexpr uint64_t kWindowSize = 0x100000000ull;
constexpr uint64_t kGlobalBase = 0x0000700000000000ull;

constexpr uint64_t kMemcheckMinRedZone = uint64_t{1} << 20;  // 1 MiB

// Device memory: a map of allocations, each followed by an unmapped gap. Every access must lie inside one
// live allocation (else the caller faults). By default the gap is 256 bytes, so that running off the end
// faults while a larger overrun may land in the next allocation, as on a GPU. With `memcheck` (like
// compute-sanitizer's memcheck) every allocation also has a red zone before and after it, as large as the
// allocation and at least kMemcheckMinRedZone: an overrun or underrun by up to that much lands in no
// allocation and faults. Red zones are address space only (no host memory), so memcheck costs nothing per
// access; it moves allocations apart, which can change cache-set conflicts of a timing launch.
class DeviceMemory {
 public:
  explicit DeviceMemory(bool memcheck = false) : memcheck_(memcheck) {}
  bool memcheck() const { return memcheck_; }

  // Allocates `bytes` (zero-filled, 256-byte aligned) and returns the device address. Throws LaunchError
  // when the host cannot hold it (more than its physical memory, or out of memory).
  uint64_t malloc(uint64_t bytes);
  // Frees an allocation by its base address; returns false when none starts there.
  bool free(uint64_t addr);
  // Host pointer for [addr, addr+size) if it lies inside one allocation, else nullptr.
  uint8_t* find(uint64_t addr, uint64_t size) {
    uint8_t* p = find_cached(addr, size);
    return p ? p : find_slow(addr, size);
  }
  // find within the allocation found last only (nullptr: not there, which does not mean not allocated).
  uint8_t* find_cached(uint64_t addr, uint64_t size) const {
    if (last_ && addr >= last_->first && addr + size <= last_->first + last_->second.size() && addr + size >= addr)
      return last_->second.data() + (addr - last_->first);
    return nullptr;
  }
  // Where [addr, addr+size) lies relative to the allocation nearest to it (for fault messages).
  std::string describe(uint64_t addr, uint64_t size) const;
  uint64_t bytes_allocated() const { return total_; }

 private:
  uint8_t* find_slow(uint64_t addr, uint64_t size);
  using Bytes = std::vector<uint8_t, DeviceAllocator<uint8_t>>;  // huge_pool.h: why
  std::map<uint64_t, Bytes> allocs_;
  std::pair<const uint64_t, Bytes>* last_ = nullptr;
  bool memcheck_ = false;
  uint64_t next_ = kGlobalBase;
  uint64_t total_ = 0;
};

}  // namespace stc
