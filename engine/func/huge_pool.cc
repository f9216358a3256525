#include "huge_pool.h"

#include <cstdint>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#define STC_HUGE_POOL 1
#endif

namespace stc {

#if STC_HUGE_POOL
namespace {

constexpr size_t kHuge = size_t{2} << 20;      // the huge page
constexpr size_t kRegion = size_t{64} << 20;   // reserved at a time (pages are only backed once touched)

struct Region {
  uint8_t* base;
  size_t size;
};

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
    if (regions_.empty() || used_ + n > regions_[current_].size) next_region(n);
    void* p = regions_[current_].base + used_;
    used_ += n;
    return p;
  }

  void free(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[round(bytes)].push_back(p);
    if (--live_ == 0) reset();
  }

 private:
  static size_t round(size_t bytes) { return (bytes + 63) / 64 * 64; }

  // Moves to the next region with room for n bytes, mapping one if none is left.
  void next_region(size_t n) {
    for (size_t i = regions_.empty() ? 0 : current_ + 1; i < regions_.size(); ++i)
      if (regions_[i].size >= n) {
        current_ = i;
        used_ = 0;
        return;
      }
    const size_t size = n > kRegion ? (n + kHuge - 1) / kHuge * kHuge : kRegion;
    // Map one huge page more than needed and start at the first 2 MiB boundary inside.
    void* m = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = (reinterpret_cast<uintptr_t>(m) + kHuge - 1) / kHuge * kHuge;
    madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);  // advice only: ignored where unsupported
    regions_.push_back({reinterpret_cast<uint8_t*>(start), size});
    mappings_.push_back({static_cast<uint8_t*>(m), size + kHuge});
    current_ = regions_.size() - 1;
    used_ = 0;
  }

  // Every block is free (a launch ended): the regions go back to the OS, so that a run of many launches
  // holds no more host memory than its largest launch needs (the next launch maps and touches anew).
  void reset() {
    free_.clear();
    for (const Region& m : mappings_) munmap(m.base, m.size);
    regions_.clear();
    mappings_.clear();
    current_ = 0;
    used_ = 0;
  }

  std::mutex mu_;
  std::vector<Region> regions_, mappings_;
  size_t current_ = 0, used_ = 0;
  size_t live_ = 0;
  std::unordered_map<size_t, std::vector<void*>> free_;
};

// Deliberately immortal (never destroyed): register files held by Python objects may be freed after the
// module's static objects are destroyed at exit.
constexpr size_t kLarge = size_t{1} << 20;  // huge_block_alloc: a mapping of its own from this size

// A mapping of its own for a large block (the simulated device memory): 2 MiB-aligned, huge pages advised,
// unmapped when freed.
void* map_large(size_t bytes) {
  const size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
  void* m = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t raw = reinterpret_cast<uintptr_t>(m);
  const uintptr_t start = (raw + kHuge - 1) / kHuge * kHuge;
  if (start > raw) munmap(m, start - raw);  // trim to the aligned span, so that free knows the mapping
  if (raw + size + kHuge > start + size) munmap(reinterpret_cast<void*>(start + size), raw + size + kHuge - start - size);
  madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}
void unmap_large(void* p, size_t bytes) { munmap(p, (bytes + kHuge - 1) / kHuge * kHuge); }

Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void* huge_pool_alloc(size_t bytes) { return pool().alloc(bytes); }
void huge_pool_free(void* p, size_t bytes) { pool().free(p, bytes); }
void* huge_block_alloc(size_t bytes) { return bytes >= kLarge ? map_large(bytes) : ::operator new(bytes); }
void huge_block_free(void* p, size_t bytes) {
  if (bytes >= kLarge) unmap_large(p, bytes);
  else ::operator delete(p);
}
#else
void* huge_pool_alloc(size_t bytes) { return ::operator new(bytes); }
void huge_pool_free(void* p, size_t) { ::operator delete(p); }
void* huge_block_alloc(size_t bytes) { return ::operator new(bytes); }
void huge_block_free(void* p, size_t) { ::operator delete(p); }
#endif

}  // namespace stc
