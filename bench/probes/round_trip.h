#pragma once
// How long the pool's threads take to hand each other a cache line: what every pool job pays, at
// least twice (the job to the workers, their completion back), and with it the floats each thread
// reads from what the other wrote. On a VM the round trip can switch between two values, phase by
// phase, and the slow round trips can come with the faster memory reads (as if the two vCPUs sat
// on different core complexes, each with its own L3 and path to memory), which is how it tells
// such phases apart.
#include "util/thread_pool.h"

namespace snapkv {

// Nanoseconds for a cache line to go from pool thread 0 to thread 1 and back, as the pool's own
// spin loops poll: the mean of `rounds` round trips (the default takes a few milliseconds on an
// idle machine), or of those done within max_seconds: where other processes share the cores,
// each round trip can wait for a time slice, and 10,000 of them would take minutes. Needs a pool
// of at least 2 threads.
double thread_round_trip_ns(ThreadPool& pool, int rounds = 10000, double max_seconds = 0.25);

}  // namespace snapkv
