#pragma once
// Software prefetch for the decode kernels, which stream each weight row once per token.
//
// From DRAM (any model that does not fit in the cache), on some CPUs the hardware prefetcher does
// not keep up with rows this short, and the matvec runs several times slower out of memory than
// from cache. So a thread asks for its first kPrefetchBytes before its first row, and as it
// works for the bytes kPrefetchBytes further on, up to the end of its rows, a few lines at a time:
// asked for a row or a super-block (1-5 KiB) at once, the prefetches queue up behind each other
// and the kernel streams from memory 1.1-1.3x more slowly (engineering log, 2026-12-04).
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace snapkv {

inline constexpr size_t kPrefetchBytes = 4096;

inline void prefetch_bytes(const uint8_t* base, size_t from, size_t to) {
  for (size_t b = from & ~size_t{63}; b < to; b += 64) __builtin_prefetch(base + b);
}

// The kBytes at p + kPrefetchBytes, for a kernel that calls it for each run of kBytes in turn:
// one prefetch every 64 bytes from the run's start, a fixed number (no loop), so every line
// of consecutive runs gets one (a line that two runs share, two) whatever the alignment.
template <size_t kBytes>
inline void prefetch_span_ahead(const uint8_t* p) {
  for (size_t o = 0; o < kBytes; o += 64) __builtin_prefetch(p + kPrefetchBytes + o);
}

// Before the first of a thread's rows, which span `total` bytes from `first`.
inline void prefetch_rows_start(const uint8_t* first, size_t total) {
  prefetch_bytes(first, 0, std::min(total, kPrefetchBytes));
}

// Part i of kParts of the kBytes at p, kPrefetchBytes ahead, for a kernel that works through
// runs of kBytes too long to ask for at once (a K-quant super-block of 8 rows, 1.1-1.7 KiB),
// a part before each piece of its work.
template <size_t kBytes, int kParts>
inline void prefetch_part_ahead(const uint8_t* p, int i) {
  static_assert(kBytes % kParts == 0);
  prefetch_span_ahead<kBytes / kParts>(p + i * (kBytes / kParts));
}

// A thread's prefetches through its rows (`total` bytes from `first`) for a kernel whose steps
// are not runs of a fixed size (the f32 path's granules of any type, the row-major 8-bit
// kernels' pairs of blocks): the first kPrefetchBytes when made, then each line once,
// kPrefetchBytes ahead of where the work has got to.
class PrefetchCursor {
 public:
  PrefetchCursor(const uint8_t* first, size_t total)
      : next_(first + std::min(total, kPrefetchBytes)), end_(first + total) {
    prefetch_rows_start(first, total);
  }
  void reached(const uint8_t* p) {
    const uint8_t* to = std::min(end_, p + kPrefetchBytes);
    for (; next_ < to; next_ += 64) __builtin_prefetch(next_);
  }

 private:
  const uint8_t* next_;
  const uint8_t* end_;
};

}  // namespace snapkv
