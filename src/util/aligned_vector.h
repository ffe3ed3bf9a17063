#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace snapkv {

// Allocates on 64-byte boundaries (a cache line, an AVX-512 vector), so that a kernel reading
// whole vectors from the start of the buffer never splits a load across two lines.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};

  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

// A vector for activations that SIMD kernels stream through (the matvec's inputs in decode).
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace snapkv
