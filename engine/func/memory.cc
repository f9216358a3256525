#include "memory.h"

#include <sstream>

namespace stc {

uint64_t DeviceMemory::malloc(uint64_t bytes) {
  const uint64_t addr = next_;
  auto& v = allocs_[addr];
  v.assign(bytes, 0);
  next_ += (bytes + 255) / 256 * 256 + 256;  // a gap so that running off the end faults
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

std::string DeviceMemory::describe(uint64_t addr) const {
  std::ostringstream s;
  auto it = allocs_.upper_bound(addr);
  if (it == allocs_.begin()) {
    s << "below every allocation";
  } else {
    --it;
    s << "nearest allocation [0x" << std::hex << it->first << ", 0x" << it->first + it->second.size() << ")";
  }
  return s.str();
}

}  // namespace stc
