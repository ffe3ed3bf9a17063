#include "util/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

namespace snapkv {
namespace {

size_t page_rounded(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* allocate_huge_pages(size_t bytes) {
  const size_t len = page_rounded(bytes);
  // Map 2 MiB more than needed and unmap what lies before the first 2 MiB boundary and after the
  // buffer; the kernel then backs every whole 2 MiB extent with one huge page, the tail with
  // small pages (nothing is rounded up to 2 MiB).
  void* raw = mmap(nullptr, len + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + len + kHugePageBytes;
  if (end > aligned + len) munmap(reinterpret_cast<void*>(aligned + len), end - (aligned + len));
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, len, MADV_HUGEPAGE);  // advice only: fails harmlessly where THP is not built in
  return p;
}

void free_huge_pages(void* p, size_t bytes) noexcept {
  if (p) munmap(p, page_rounded(bytes));
}

}  // namespace snapkv
