// Host memory for a launch's state (the warps' register files, CTA shared memory, the warps' records and
// the timing model's caches, maps and calendars) and the simulated device memory, on 2 MiB pages where the
// OS gives them (madvise MADV_HUGEPAGE). Host-side only. The registers of every resident warp of a launch
// are tens of MiB (a 1024^3 WMMA GEMM on the V100 config: 22 MiB of registers, 3.5 MiB of shared memory),
// read in the scheduler's order, which no host cache follows; with 4 KiB pages nearly every operand read
// also misses the TLB (measured: the WMMA GEMM's launch ~10 % faster with huge pages; the rest of the
// launch's state on them too: ~3 % more, docs/performance.md i12r).
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace stc {

// A launch's blocks: at least `bytes`, 64-byte aligned, from shared regions (64 MiB, advised), reused by
// size; once every block is free (each lives as long as its launch) up to 256 MiB of the
// regions are kept for the next launch, already backed (no page faults), the rest unmapped.
// Where the OS has no madvise (MADV_HUGEPAGE), plain operator new.
void* huge_pool_alloc(size_t bytes);
void huge_pool_free(void* p, size_t bytes);
// Blocks of any lifetime (the simulated device memory's allocations), zero-filled: from 1 MiB a 2 MiB-aligned
// mapping of their own (the OS's zero pages, touched only when used), advised; when freed kept (up to 512 MiB
// of them, the rest unmapped) for the next blocks, each taking the smallest kept mapping that holds it (split
// when larger) and handed out zeroed by memset; smaller ones from calloc.
void* huge_block_alloc(size_t bytes);
void huge_block_free(void* p, size_t bytes);

// The allocator of a launch's state (Pooled: huge_pool_*) and of DeviceMemory's allocations (huge_block_*).
template <class T, bool Pooled>
struct HugePageAllocator {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = HugePageAllocator<U, Pooled>;
  };
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U, Pooled>&) {}  // NOLINT: allocators convert implicitly
  T* allocate(size_t n) {
    return static_cast<T*>(Pooled ? huge_pool_alloc(n * sizeof(T)) : huge_block_alloc(n * sizeof(T)));
  }
  // Default-initialising construction (no zeros written) on DeviceAllocator, whose blocks come zeroed: a
  // device allocation's pages are then touched first by what writes them, not by a zero fill as well.
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (!Pooled && sizeof...(Args) == 0) ::new (static_cast<void*>(p)) U;
    else ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  void deallocate(T* p, size_t n) {
    if (Pooled) huge_pool_free(p, n * sizeof(T));
    else huge_block_free(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const HugePageAllocator<U, Pooled>&) const { return true; }
  template <class U>
  bool operator!=(const HugePageAllocator<U, Pooled>&) const { return false; }
};
// The state a launch allocates and frees: the warps' register files, CTA shared memory, the warps' records,
// the timing model's caches, maps and calendars (all read in the scheduler's scattered order).
template <class T>
using LaunchAllocator = HugePageAllocator<T, true>;
template <class T>
using DeviceAllocator = HugePageAllocator<T, false>;

}  // namespace stc
