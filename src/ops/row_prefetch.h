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

#include "util/prefetch.h"

namespace snapkv {

inline constexpr size_t kPrefetchBytes = 4096;

// Where the prefetches bring the lines. kL1 by default (the f32 path's cursor, the row-major
// kernels). kStream for the interleaved kernels with the least arithmetic per byte (Q4_0, Q4_1,
// Q8_0 with integer activations): L2 on Intel, whose own prefetcher takes the lines on to L1, and
// L1 elsewhere. Asked for in L1, a line holds one of the core's few line-fill buffers for its whole
// trip from memory: on the 480 MiB-L3 Xeon VM those kernels then decoded the 1B shape's Q8_0
// 1.2-1.3x and Q4_0 1.1x more slowly. kL2ThenL1 for the interleaved K-quant kernels, on every
// CPU: into L2 kPrefetchBytes ahead, then from L2 into L1 kPrefetchNearBytes ahead. On that Xeon
// they streamed from memory 1.4x more slowly with L1 prefetches alone than with none, level with
// L2 ones alone, and 1.07-1.15x faster with both; on a Zen 1 VM without any they decoded the 1B
// shape 1.2-2.4x more slowly, and as fast with L1 prefetches alone (engineering log, 2026-12-04
// late night, 2026-12-05 and its fifth session).
enum class PrefetchTo { kL1, kStream, kL2ThenL1 };
inline constexpr size_t kPrefetchNearBytes = 1024;

inline bool is_intel_cpu() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();  // this may run before the constructor that sets up __builtin_cpu_is
  return __builtin_cpu_is("intel");
#else
  return false;
#endif
}
inline const bool kIntelCpu = is_intel_cpu();

template <PrefetchTo kTo = PrefetchTo::kL1>
inline void prefetch_line(const uint8_t* p) {
  if (kTo == PrefetchTo::kStream && kIntelCpu) {
    prefetch_l2(p);
  } else {
    prefetch_l1(p);
  }
}

inline void prefetch_bytes(const uint8_t* base, size_t from, size_t to) {
  for (size_t b = from & ~size_t{63}; b < to; b += 64) prefetch_line(base + b);
}

// The kBytes at p + kPrefetchBytes, for a kernel that calls it for each run of kBytes in turn:
// one prefetch every 64 bytes from the run's start, a fixed number (no loop), so every line
// of consecutive runs gets one (a line that two runs share, two) whatever the alignment. With
// kL2ThenL1, into L2, and the kBytes at p + kPrefetchNearBytes on into L1.
template <size_t kBytes, PrefetchTo kTo = PrefetchTo::kL1>
inline void prefetch_span_ahead(const uint8_t* p) {
  if constexpr (kTo == PrefetchTo::kL2ThenL1) {
    for (size_t o = 0; o < kBytes; o += 64) prefetch_l2(p + kPrefetchBytes + o);
    for (size_t o = 0; o < kBytes; o += 64) prefetch_l1(p + kPrefetchNearBytes + o);
  } else {
    for (size_t o = 0; o < kBytes; o += 64) prefetch_line<kTo>(p + kPrefetchBytes + o);
  }
}

// Before the first of a thread's rows, which span `total` bytes from `first`.
inline void prefetch_rows_start(const uint8_t* first, size_t total) {
  prefetch_bytes(first, 0, std::min(total, kPrefetchBytes));
}

// Part i of kParts of the kBytes at p, kPrefetchBytes ahead, for a kernel that works through
// runs of kBytes too long to ask for at once (a K-quant super-block of 8 rows, 1.1-1.7 KiB),
// a part before each piece of its work.
template <size_t kBytes, int kParts, PrefetchTo kTo>
inline void prefetch_part_ahead(const uint8_t* p, int i) {
  static_assert(kBytes % kParts == 0);
  prefetch_span_ahead<kBytes / kParts, kTo>(p + i * (kBytes / kParts));
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
    for (; next_ < to; next_ += 64) prefetch_line(next_);
  }

 private:
  const uint8_t* next_;
  const uint8_t* end_;
};

}  // namespace snapkv
