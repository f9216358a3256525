// Host memory for the warps' register files, from regions the OS is asked to back with 2 MiB pages.
// Host-side only. The registers of every resident warp of a launch are tens of MiB (a 1024^3 WMMA GEMM on the
// V100 config: 46 MiB), read in the scheduler's order, which no host cache follows; with 4 KiB pages nearly
// every operand read also misses the TLB (measured: the WMMA GEMM's launch ~10 % faster with huge pages).
#pragma once

#include <cstddef>

namespace stc {

// Blocks of at least `bytes`, 64-byte aligned. A block of 1 MiB or more (the simulated device memory's
// allocations) gets a 2 MiB-aligned mapping of its own, unmapped when freed; smaller ones (register files)
// come from shared regions, reused by size, and from the regions' start again once every block is free
// (between launches). Where the OS has no madvise (MADV_HUGEPAGE), plain operator new.
void* huge_pool_alloc(size_t bytes);
void huge_pool_free(void* p, size_t bytes);

// The allocator of WarpState::regs and DeviceMemory's allocations.
template <class T>
struct HugePoolAllocator {
  using value_type = T;
  HugePoolAllocator() = default;
  template <class U>
  HugePoolAllocator(const HugePoolAllocator<U>&) {}  // NOLINT: allocators convert implicitly
  T* allocate(size_t n) { return static_cast<T*>(huge_pool_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { huge_pool_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePoolAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const HugePoolAllocator<U>&) const { return false; }
};

}  // namespace stc
