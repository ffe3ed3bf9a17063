#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace snapkv {
namespace {

// How long an idle worker polls for the next job before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(500);
// How long a poll spins on pause instructions alone before it also offers the core to any other
// runnable thread between polls. Decode's jobs follow each other within microseconds, so on
// cores of its own a pool only spins; on a machine running more threads than it has cores (two
// processes, tests run side by side) the thread we wait for may be the one that needs the core.
constexpr auto kSpinAlone = std::chrono::microseconds(50);

// Waits between two polls of a value another thread will change.
class Poll {
 public:
  // Returns how long it has waited so far: measured every 64th call, zero between.
  std::chrono::steady_clock::duration wait() {
    if (++polls_ % 64 != 0) {
      cpu_relax();
      return {};
    }
    const auto waited = std::chrono::steady_clock::now() - start_;
    if (waited > kSpinAlone) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
    return waited;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int polls_ = 0;
};

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int ith) {
  uint64_t seen = 0;
  for (;;) {
    // Poll for a new generation for a while, then sleep until run() or the destructor wakes us.
    Poll poll;
    while (generation_.load(std::memory_order_acquire) == seen) {
      if (poll.wait() > kSpin) {
        std::unique_lock lock(mu_);
        ++sleepers_;
        wake_cv_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
        --sleepers_;
        if (stop_) return;
      }
    }
    seen = generation_.load(std::memory_order_acquire);
    job_.call(job_.fn, ith, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run_job(const Job& job) {
  if (n_threads_ == 1) {
    job.call(job.fn, 0, 1);
    return;
  }
  job_ = job;
  pending_.store(n_threads_ - 1, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  {
    // Taking the lock orders this wake-up after any worker's check of the predicate.
    std::lock_guard lock(mu_);
    if (sleepers_ > 0) wake_cv_.notify_all();
  }
  job.call(job.fn, 0, n_threads_);
  for (Poll poll; pending_.load(std::memory_order_acquire) != 0;) poll.wait();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int nth = static_cast<int>(std::min<int64_t>(n, n_threads_));
  run([&](int ith, int) {
    if (ith >= nth) return;
    const int64_t begin = n * ith / nth;
    const int64_t end = n * (ith + 1) / nth;
    fn(begin, end);
  });
}

void ThreadPool::for_each_item(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  std::atomic<int64_t> next{0};
  run([&](int, int) {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(i);
  });
}

}  // namespace snapkv
