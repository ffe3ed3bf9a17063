#pragma once
#include <cstddef>
#include <new>
#include <vector>

#include "util/huge_pages.h"

namespace snapkv {

// Allocates on 64-byte boundaries (a cache line, an AVX-512 vector), so that a kernel reading
// whole vectors from the start of the buffer never splits a load across two lines. Buffers of
// 2 MiB and more (the bandwidth test's; a KV head's from about 16K tokens on with the default
// model) are huge pages, whose first touch commits 2 MiB at a time.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};

  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    return static_cast<T*>(bytes >= kHugePageBytes ? allocate_huge_pages(bytes) : ::operator new(bytes, kAlign));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) >= kHugePageBytes) {
      free_huge_pages(p, n * sizeof(T));
    } else {
      ::operator delete(p, kAlign);
    }
  }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

// A vector for activations that SIMD kernels stream through (the matvec's inputs in decode).
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace snapkv
