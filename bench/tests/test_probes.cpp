// The probes `snapkv bench` measures with (bench/probes/).
#include <gtest/gtest.h>

#include "probes/peak_dot.h"
#include "probes/round_trip.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

// The round trip returns (thread 1 answers every round, also with a third thread idle in the job)
// and takes more than nothing and less than 0.1 s per trip: well under a microsecond on an idle machine, but a
// test run beside others on two cores may find a thread descheduled for a time slice. Fewer than
// two threads, or no rounds, are refused.
TEST(ThreadRoundTrip, TwoThreadsHandALineBackAndForth) {
  for (int nth : {2, 3}) {
    ThreadPool pool(nth);
    for (int rounds : {1, 100}) {
      const double ns = thread_round_trip_ns(pool, rounds);
      EXPECT_GT(ns, 0) << nth << " threads, " << rounds << " rounds";
      EXPECT_LT(ns, 1e8) << nth << " threads, " << rounds << " rounds";
    }
  }
  ThreadPool one(1), two(2);
  EXPECT_THROW(thread_round_trip_ns(one, 100), Error);
  EXPECT_THROW(thread_round_trip_ns(two, 0), Error);
}

// The integer dot-product peak: positive where the CPU has AVX-512 VNNI, 0 elsewhere; bad
// arguments are refused. (No timing is asserted.)
TEST(PeakDot, MeasuresWhereTheCpuHasVnniAndRefusesBadArguments) {
  ThreadPool pool(2);
  for (int bits : {8, 16}) {
    const double macs = peak_dot_macs(pool, 0.01, bits);
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512vnni")) {
      EXPECT_GT(macs, 0) << bits;
      continue;
    }
#endif
    EXPECT_EQ(macs, 0) << bits;
  }
  EXPECT_THROW(peak_dot_macs(pool, 0, 8), Error);
  EXPECT_THROW(peak_dot_macs(pool, 0.01, 4), Error);
}

}  // namespace
}  // namespace snapkv
