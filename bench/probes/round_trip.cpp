#include "probes/round_trip.h"

#include <atomic>
#include <cstdint>

#include "util/error.h"
#include "snapkv/timer.h"

namespace snapkv {

double thread_round_trip_ns(ThreadPool& pool, int rounds, double max_seconds) {
  if (pool.size() < 2) fail(ErrorKind::kInvalidArgument, "thread_round_trip_ns: needs at least 2 threads, not {}", pool.size());
  if (rounds < 1) fail(ErrorKind::kInvalidArgument, "thread_round_trip_ns: rounds must be >= 1");
  // Thread 0 writes the odd values, thread 1 answers each with the next even one, until thread 0
  // writes kStop. Round 0 only waits for thread 1 to arrive (it may have been asleep) and is not
  // timed.
  constexpr int64_t kStop = -1;
  struct alignas(64) Line {
    std::atomic<int64_t> ball{0};
  } line;
  const auto serve = [&](int64_t i) {
    line.ball.store(2 * i + 1, std::memory_order_release);
    while (line.ball.load(std::memory_order_acquire) != 2 * i + 2) cpu_relax();
  };
  double seconds = 0;
  int64_t done = 0;
  pool.run([&](int ith, int) {
    if (ith == 1) {
      for (int64_t i = 0;; ++i) {
        int64_t b;
        while ((b = line.ball.load(std::memory_order_acquire)) != 2 * i + 1 && b != kStop) cpu_relax();
        if (b == kStop) break;
        line.ball.store(2 * i + 2, std::memory_order_release);
      }
    } else if (ith == 0) {
      serve(0);
      Timer t;
      for (int64_t i = 1; i <= rounds; ++i) {
        serve(i);
        done = i;
        if (i % 64 == 0 && t.seconds() > max_seconds) break;
      }
      seconds = t.seconds();
      line.ball.store(kStop, std::memory_order_release);
    }
  });
  return seconds * 1e9 / static_cast<double>(done);
}

}  // namespace snapkv
