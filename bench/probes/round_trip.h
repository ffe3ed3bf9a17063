#pragma once
// How long the pool's threads take to hand each other a cache line: what every pool job pays, at
// least twice (the job to the workers, their completion back), and with it the floats each thread
// reads from what the other wrote. On the 2-vCPU Zen 4 VM it is ~56 ns or ~330 ns, phase by
// phase, and the ~330 ns phases are the ones in which the VM reads memory twice as fast (as if
// its two vCPUs sat on different core complexes, each with its own L3 and path to memory).
#include "util/thread_pool.h"

namespace snapkv {

// Nanoseconds for a cache line to go from pool thread 0 to thread 1 and back, as the pool's own
// spin loops poll: the mean of `rounds` round trips (the default takes 0.5-3.5 ms on the Zen 4
// VM). Needs a pool of at least 2 threads.
double thread_round_trip_ns(ThreadPool& pool, int rounds = 10000);

}  // namespace snapkv
