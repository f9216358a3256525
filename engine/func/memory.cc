#include "memory.h"

#include <algorithm>
#include <new>
#include <sstream>

#include <unistd.h>

#include "../ptx/errors.h"

namespace stc {

namespace {
constexpr uint64_t kGap = 256;  // unmapped bytes after every allocation (so running off the end faults)
constexpr uint64_t kAddressLimit = uint64_t{1} << 62;
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Physical memory of the host: device memory lives in host memory, and an allocation larger than it would
// only end in the out-of-memory killer (zero-filling touches every page).
uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : kAddressLimit;
}

}  // namespace

uint64_t DeviceMemory::malloc(uint64_t bytes) {
  const std::string what = "cannot allocate " + std::to_string(bytes) + " bytes of device memory: ";
  if (bytes > host_memory_bytes())
    throw LaunchError(what + "more than the host's memory (" + std::to_string(host_memory_bytes()) + " bytes)");
  const uint64_t rounded = round_up(bytes, 256);
  const uint64_t red = memcheck_ ? std::max(rounded, kMemcheckMinRedZone) : 0;
  if (next_ > kAddressLimit - (2 * red + rounded + kGap))
    throw LaunchError(what + "the device address space is used up");
  const uint64_t addr = next_ + red;
  Bytes data;
  try {
    data.resize(bytes);  // zeros: DeviceAllocator's blocks come zero-filled (huge_pool.h)
  } catch (const std::bad_alloc&) {
    throw LaunchError(what + "the host is out of memory");
  }
  allocs_[addr] = std::move(data);
  next_ = addr + rounded + kGap + red;
  total_ += bytes;
  last_ = nullptr;
  return addr;
}

bool DeviceMemory::free(uint64_t addr) {
  auto it = allocs_.find(addr);
  if (it == allocs_.end()) return false;
  total_ -= it->second.size();
  allocs_.erase(it);
  last_ = nullptr;
  return true;
}

uint8_t* DeviceMemory::find_slow(uint64_t addr, uint64_t size) {
  auto it = allocs_.upper_bound(addr);
  if (it == allocs_.begin()) return nullptr;
  --it;
  if (addr + size < addr || addr + size > it->first + it->second.size()) return nullptr;
  last_ = &*it;
  return it->second.data() + (addr - it->first);
}

std::string DeviceMemory::describe(uint64_t addr, uint64_t size) const {
  if (allocs_.empty()) return "no allocation is live";
  auto next = allocs_.upper_bound(addr);
  const auto prev = next == allocs_.begin() ? allocs_.end() : std::prev(next);
  const auto end_of = [](const auto& it) { return it->first + it->second.size(); };
  // The nearest allocation: the one the access starts in, else the closer of the two around it.
  auto near = prev;
  if (prev == allocs_.end() || (addr >= end_of(prev) && next != allocs_.end() && next->first - addr < addr - end_of(prev)))
    near = next;
  std::ostringstream s;
  s << "nearest allocation [0x" << std::hex << near->first << ", 0x" << end_of(near) << std::dec << ") of "
    << near->second.size() << " bytes: ";
  if (addr < near->first) s << "starts " << near->first - addr << " bytes before it";
  else if (addr >= end_of(near)) s << "starts " << addr - end_of(near) << " bytes past its end";
  else s << "runs " << addr + size - end_of(near) << " bytes past its end";
  return s.str();
}

}  // namespace stc
