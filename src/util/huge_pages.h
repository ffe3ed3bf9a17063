#pragma once
#include <cstddef>

namespace snapkv {

// Memory for large buffers that decode streams from RAM (model weights, KV cache): anonymous
// pages from a 2 MiB boundary, advised as transparent huge pages (MADV_HUGEPAGE), which is what
// the kernel's default THP mode ("madvise") needs to back them with 2 MiB pages: streamed over
// 4 KiB pages, memory reads markedly slower, since every 4 KiB page is a TLB miss and stops the
// hardware prefetchers. Where THP is off the memory is ordinary pages. Sizes are rounded up to
// 4 KiB pages; throws std::bad_alloc when out of memory.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

void* allocate_huge_pages(size_t bytes);
void free_huge_pages(void* p, size_t bytes) noexcept;

}  // namespace snapkv
