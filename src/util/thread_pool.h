#pragma once
// A small fixed pool of worker threads. The calling thread takes part in the work, so a pool of
// n threads starts n - 1 workers. Thread count is always an explicit option, never a global.
//
// Decode issues a few hundred small jobs per token, each shorter than waking a sleeping thread
// (tens of microseconds), so workers spin on the job counter for a short while after each job
// before they sleep on a condition variable. Past the first 50 microseconds a waiting thread
// offers its core to other runnable threads between polls: where threads outnumber cores (two
// engines on one machine, tests run side by side) pure spinning made each pool wait for a
// thread the spinners kept off the cores.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace snapkv {

// The pause between two polls of a value another thread will change.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index, n_threads) on every thread of the pool and returns when all are done.
  // Work splitting is left to fn, so kernels can partition rows in the way that suits them.
  // Not reentrant: fn must not call run() on the same pool. The workers call fn where it is (no
  // std::function, which allocates for most lambdas: once per job).
  template <class Fn>
  void run(const Fn& fn) {
    run_job({&fn, [](const void* f, int ith, int nth) { (*static_cast<const Fn*>(f))(ith, nth); }});
  }

  // Splits [0, n) into contiguous ranges, at most one per thread, and calls fn(begin, end).
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

  // Calls fn(i) once for every i in [0, n), each thread taking the next unclaimed i until none is
  // left: with items of uneven cost, or a thread the OS holds up, the others take up the slack
  // (a static split waits for the slowest share). Put the costliest items first.
  void for_each_item(int64_t n, const std::function<void(int64_t i)>& fn);

 private:
  struct Job {
    const void* fn = nullptr;
    void (*call)(const void* fn, int ith, int nth) = nullptr;
  };
  void run_job(const Job& job);
  void worker(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  // What a waiting worker reads, in one cache line: the generation it polls and the job it then
  // runs (written before the generation is bumped). The count the caller polls and the lock have
  // lines of their own, so that neither takes this line away from a worker starting a job.
  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped once per run()
  Job job_;
  alignas(64) std::atomic<int> pending_{0};  // workers still inside the current job
  alignas(64) std::mutex mu_;                // guards sleepers_ and stop_ for the condition variable
  std::condition_variable wake_cv_;
  int sleepers_ = 0;
  bool stop_ = false;
};

}  // namespace snapkv
