#pragma once
// The ceilings of this machine for a roofline (snapkv bench roofline), measured with our own
// kernels: f32 multiply-add throughput and memory read bandwidth. Both run on every thread of the
// pool, with the SIMD target the dispatching kernels use at the time (hwy::SetSupportedTargetsForTest
// picks another one, which is how the benchmark measures each instruction set).
#include <span>

#include "util/thread_pool.h"

namespace snapkv {

// f32 FLOP/s (a multiply-add counts 2) of independent fused multiply-add chains held in registers,
// on all threads for about `seconds`.
double peak_fma_flops(ThreadPool& pool, double seconds);

// Bytes per second that all threads together read from `buffer` (make it far larger than the
// last-level cache), each summing its own contiguous share; the best of `reps` passes.
double read_bandwidth(ThreadPool& pool, std::span<const float> buffer, int reps);

// Name of the SIMD target the kernels above dispatch to now (e.g. "AVX2").
const char* peak_simd_target();

}  // namespace snapkv
