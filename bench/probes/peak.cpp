// Peak f32 multiply-add throughput and memory read bandwidth, compiled once per SIMD target like
// the matmul kernels (Highway foreach_target), so that the roofline can be drawn per target.
#include "probes/peak.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "util/error.h"
#include "snapkv/timer.h"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "probes/peak.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace snapkv {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Independent multiply-add chains: enough of them to keep every FMA unit busy through its
// latency (2 units x 4-5 cycles on current x86 cores).
inline constexpr int kChains = 12;

// Runs `iters` steps of kChains chains; returns a value that depends on all of them, and the
// FLOPs done in *flops.
HWY_NOINLINE float FmaChainsT(int64_t iters, double* flops) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const V m = hn::Set(d, 0.999999f);
  const V b = hn::Set(d, 1e-7f);
  V a[kChains];
  for (int c = 0; c < kChains; ++c) a[c] = hn::Set(d, 1.0f + static_cast<float>(c));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) a[c] = hn::MulAdd(a[c], m, b);
  }
  V s = a[0];
  for (int c = 1; c < kChains; ++c) s = hn::Add(s, a[c]);
  *flops = 2.0 * kChains * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iters);
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// Sum of p[0..n): four accumulators, unaligned loads.
HWY_NOINLINE float SumT(const float* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    s0 = hn::Add(s0, hn::LoadU(d, p + i));
    s1 = hn::Add(s1, hn::LoadU(d, p + i + N));
    s2 = hn::Add(s2, hn::LoadU(d, p + i + 2 * N));
    s3 = hn::Add(s3, hn::LoadU(d, p + i + 3 * N));
  }
  float tail = 0;
  for (; i < n; ++i) tail += p[i];
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)))) + tail;
}

}  // namespace

double PeakFmaT(ThreadPool& pool, double seconds) {
  std::vector<float> sink(static_cast<size_t>(pool.size()));
  std::vector<double> flops(static_cast<size_t>(pool.size()));
  auto pass = [&](int64_t iters) {
    Timer t;
    pool.run([&](int ith, int) { sink[ith] = FmaChainsT(iters, &flops[ith]); });
    const double s = t.seconds();
    double total = 0;
    for (double f : flops) total += f;
    return std::pair{s, total};
  };
  int64_t iters = 1 << 14;
  auto [s, total] = pass(iters);
  while (s < seconds / 8) {  // calibrate, then one pass of about `seconds`
    iters *= 2;
    std::tie(s, total) = pass(iters);
  }
  std::tie(s, total) = pass(static_cast<int64_t>(static_cast<double>(iters) * seconds / s));
  volatile float keep = sink[0];
  (void)keep;
  return total / s;
}

double ReadBandwidthT(ThreadPool& pool, const float* data, size_t n, int reps) {
  std::vector<float> sink(static_cast<size_t>(pool.size()));
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    Timer t;
    pool.run([&](int ith, int nth) {
      const size_t b = n * static_cast<size_t>(ith) / static_cast<size_t>(nth);
      const size_t e = n * static_cast<size_t>(ith + 1) / static_cast<size_t>(nth);
      sink[ith] = SumT(data + b, e - b);
    });
    best = std::max(best, static_cast<double>(n * sizeof(float)) / t.seconds());
  }
  volatile float keep = sink[0];
  (void)keep;
  return best;
}

int64_t PeakTargetT() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace snapkv
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace snapkv {

HWY_EXPORT(PeakFmaT);
HWY_EXPORT(ReadBandwidthT);
HWY_EXPORT(PeakTargetT);

double peak_fma_flops(ThreadPool& pool, double seconds) {
  if (!(seconds > 0)) fail(ErrorKind::kInvalidArgument, "peak_fma_flops: seconds must be positive");
  return HWY_DYNAMIC_DISPATCH(PeakFmaT)(pool, seconds);
}

double read_bandwidth(ThreadPool& pool, std::span<const float> buffer, int reps) {
  if (reps < 1) fail(ErrorKind::kInvalidArgument, "read_bandwidth: reps must be >= 1");
  return HWY_DYNAMIC_DISPATCH(ReadBandwidthT)(pool, buffer.data(), buffer.size(), reps);
}

const char* peak_simd_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(PeakTargetT)()); }

}  // namespace snapkv
#endif  // HWY_ONCE
