#pragma once
// How the kernels share out work among a pool's threads: the rows of a product, the tokens of a chunk.
#include <algorithm>
#include <cstdint>

#include "util/thread_pool.h"

namespace snapkv {

// Splitting a product among threads pays off above about 2^17 multiply-adds: the pool's workers
// spin between jobs, so a run() costs about a microsecond, small against the time one thread
// takes for a product of that size, and a larger product splits almost perfectly.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 17;

inline bool runs_inline(const ThreadPool& pool, int64_t work) { return pool.size() == 1 || work < kMinParallelWork; }

// Runs fn(ith, nth) on the pool, or inline when the product (work multiply-adds) is too small.
template <class Fn>
void run_split(ThreadPool& pool, int64_t work, const Fn& fn) {
  if (runs_inline(pool, work)) {
    fn(0, 1);
  } else {
    pool.run(fn);
  }
}

// fn(t0, t1) over token rows [0, n): split among the threads in prefill, inline for the few rows
// of a decode step (waking the threads would cost more than the work).
template <class Fn>
void over_tokens(ThreadPool& pool, int64_t n, const Fn& fn) {
  if (n < 32) {
    fn(int64_t{0}, n);
  } else {
    pool.parallel_for(n, fn);
  }
}

// Rows [*r0, *r1) of thread ith of nth: contiguous, in whole units of `unit` rows.
inline void split_rows(int64_t n_out, int64_t unit, int ith, int nth, int64_t* r0, int64_t* r1) {
  const int64_t units = (n_out + unit - 1) / unit;
  *r0 = std::min(n_out, units * ith / nth * unit);
  *r1 = std::min(n_out, units * (ith + 1) / nth * unit);
}

}  // namespace snapkv
