#include "huge_pool.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#define STC_HUGE_POOL 1
#endif

namespace stc {

namespace {
// `bytes` of zeros from calloc (std::bad_alloc when there are none).
void* zeroed(size_t bytes) {
  void* p = std::calloc(std::max<size_t>(bytes, 1), 1);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

#if STC_HUGE_POOL
namespace {

constexpr size_t kHuge = size_t{2} << 20;      // the huge page
constexpr size_t kRegion = size_t{64} << 20;   // a pool region (pages are only backed once touched)
constexpr size_t kLarge = size_t{1} << 20;     // huge_block_alloc: a mapping of its own from this size
constexpr size_t kKeep = size_t{256} << 20;    // the pool's regions kept from one launch to the next

size_t huge_pages(size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }

// A mapping of whole huge pages for `bytes`, 2 MiB-aligned (trimmed from a larger one, so that unmap_huge
// knows it), huge pages advised (advice only: ignored where unsupported).
uint8_t* map_huge(size_t bytes) {
  const size_t size = huge_pages(bytes);
  void* m = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t raw = reinterpret_cast<uintptr_t>(m);
  const uintptr_t start = (raw + kHuge - 1) / kHuge * kHuge;
  if (start > raw) munmap(m, start - raw);
  munmap(reinterpret_cast<void*>(start + size), raw + kHuge - start);
  madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);
  return reinterpret_cast<uint8_t*>(start);
}
void unmap_huge(void* p, size_t bytes) { munmap(p, huge_pages(bytes)); }

class Pool {
 public:
  void* alloc(size_t bytes) {
    const size_t n = round(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    ++live_;
    auto& list = free_[n];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      return p;
    }
    // From the current region; else the next kept region with room (a launch after the first reuses the
    // regions of those before); else a new region of at least n bytes.
    while (cur_ < regions_.size() && used_ + n > regions_[cur_].size) {
      ++cur_;
      used_ = 0;
    }
    if (cur_ == regions_.size()) {
      const size_t size = std::max(kRegion, huge_pages(n));
      regions_.push_back({map_huge(size), size});
      used_ = 0;
    }
    void* p = regions_[cur_].base + used_;
    used_ += n;
    return p;
  }

  void free(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[round(bytes)].push_back(p);
    if (--live_ == 0) reset();
  }

 private:
  struct Region {
    uint8_t* base;
    size_t size;
  };
  static size_t round(size_t bytes) { return (bytes + 63) / 64 * 64; }

  // Every block is free (a launch ended): the regions are kept, mapped and backed, for the next launch,
  // which takes its blocks from them in order, up to kKeep bytes of them (the rest go back to the OS). A run
  // of many launches holds about what its largest launch needed (the peak it reached when every region was
  // unmapped here), and the next launch skips the page faults and the OS's zeroing of tens of MiB of pages
  // (its register files are zeroed anyway: the vectors value-initialise them).
  void reset() {
    free_.clear();
    size_t kept = 0;
    for (const Region& r : regions_) kept += r.size;
    while (kept > kKeep) {
      unmap_huge(regions_.back().base, regions_.back().size);
      kept -= regions_.back().size;
      regions_.pop_back();
    }
    cur_ = 0;
    used_ = 0;
  }

  std::mutex mu_;
  std::vector<Region> regions_;
  size_t cur_ = 0;   // the region blocks come from
  size_t used_ = 0;  // bytes handed out from it
  size_t live_ = 0;
  std::unordered_map<size_t, std::vector<void*>> free_;
};

// Deliberately immortal (never destroyed): register files held by Python objects may be freed after the
// module's static objects are destroyed at exit.

Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// Freed mappings of device allocations (whole huge pages), kept up to kBlockKeep bytes for the next
// allocations: a network run's launches allocate operands again (the timed launch, its check, the next
// layer), up to 512 MiB. A request takes the smallest kept mapping that holds it, split at the request's
// last huge page when larger (the rest stays kept: munmap takes any page-aligned part of a mapping), so a
// layer's operands reuse the pages of the last layer's larger ones. A mapping handed out again costs a
// memset of pages the process already holds, where a new one costs a page fault and the OS's zeroing per
// page (on a VM, where the host backs each page at its first touch, the larger part of a layer job's
// system time).
constexpr size_t kBlockKeep = size_t{512} << 20;

class BlockCache {
 public:
  void* alloc(size_t bytes) {
    const size_t size = huge_pages(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.lower_bound(size);
      if (it != free_.end()) {
        auto* p = static_cast<uint8_t*>(it->second);
        const size_t held = it->first;
        free_.erase(it);
        if (held > size) free_.emplace(held - size, p + size);
        kept_ -= size;
        std::memset(p, 0, bytes);  // zero-filled, as a new mapping (the pages past `bytes` are not read)
        return p;
      }
    }
    return map_huge(bytes);
  }

  void free(void* p, size_t bytes) {
    const size_t size = huge_pages(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (kept_ + size <= kBlockKeep) {
        free_.emplace(size, p);
        kept_ += size;
        return;
      }
    }
    unmap_huge(p, bytes);
  }

 private:
  std::mutex mu_;
  size_t kept_ = 0;
  std::multimap<size_t, void*> free_;  // kept mappings by size
};

BlockCache& blocks() {
  static BlockCache* b = new BlockCache;  // immortal, as the pool
  return *b;
}

}  // namespace

void* huge_pool_alloc(size_t bytes) { return pool().alloc(bytes); }
void huge_pool_free(void* p, size_t bytes) { pool().free(p, bytes); }
void* huge_block_alloc(size_t bytes) { return bytes >= kLarge ? blocks().alloc(bytes) : zeroed(bytes); }
void huge_block_free(void* p, size_t bytes) {
  if (bytes >= kLarge) blocks().free(p, bytes);
  else std::free(p);
}
#else
void* huge_pool_alloc(size_t bytes) { return ::operator new(bytes); }
void huge_pool_free(void* p, size_t) { ::operator delete(p); }
void* huge_block_alloc(size_t bytes) { return zeroed(bytes); }
void huge_block_free(void* p, size_t) { std::free(p); }
#endif

}  // namespace stc
