// SNAPKV_BENCH_TARGET=AVX2 (or SSE4, AVX3, SCALAR) times the code that Highway dispatches
// (attention, the f32 matmul path, elementwise ops) as a CPU with only that target would run it,
// on a CPU that has more: an AVX-512 machine can then time the AVX2 paths. The 8-bit kernels pick
// their own (Q{8,16}Rows8Kernel/{AVX2,VNNI}/... time each). Timings of a lower target on a newer
// CPU are a guide, not a measurement of the older CPU.
//
//   SNAPKV_BENCH_TARGET=AVX2 snapkv_microbench --benchmark_filter='AttentionDecodeShape'
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "hwy/targets.h"

namespace {

struct LimitTargets {
  LimitTargets() {
    const char* name = std::getenv("SNAPKV_BENCH_TARGET");
    if (!name) return;
    for (const int64_t t : {int64_t{HWY_AVX3}, int64_t{HWY_AVX2}, int64_t{HWY_SSE4}, int64_t{HWY_SCALAR}}) {
      if (std::string_view(name) != hwy::TargetName(t)) continue;
      if (t != HWY_SCALAR && !(hwy::SupportedTargets() & t)) break;
      hwy::SetSupportedTargetsForTest(t);
      std::fprintf(stderr, "Highway dispatch limited to %s\n", name);
      return;
    }
    std::fprintf(stderr, "SNAPKV_BENCH_TARGET=%s: not AVX3, AVX2, SSE4 or SCALAR, or not one this CPU runs\n", name);
    std::exit(2);
  }
} limit_targets;

}  // namespace
