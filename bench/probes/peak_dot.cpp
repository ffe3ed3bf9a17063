#include "probes/peak_dot.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "util/error.h"
#include "snapkv/timer.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SNAPKV_PEAK_DOT_X86 1
#endif

namespace snapkv {

#if SNAPKV_PEAK_DOT_X86
namespace {

// Enough independent accumulators to cover the instruction's latency on two ports.
constexpr int kChains = 12;

template <int kBits>
__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) int32_t DotChains(int64_t iters) {
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  const __m512i x = _mm512_set1_epi32(0x01020304), w = _mm512_set1_epi32(0x05060708);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) {
      acc[c] = kBits == 8 ? _mm512_dpbusd_epi32(acc[c], x, w) : _mm512_dpwssd_epi32(acc[c], x, w);
    }
  }
  __m512i s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_epi32(s, acc[c]);
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, s);
  int32_t sum = 0;
  for (const int32_t lane : lanes) sum += lane;
  return sum;
}

}  // namespace
#endif

double peak_dot_macs(ThreadPool& pool, double seconds, int bits) {
  if (!(seconds > 0) || (bits != 8 && bits != 16)) {
    fail(ErrorKind::kInvalidArgument, "peak_dot_macs: seconds must be positive and bits 8 or 16");
  }
#if SNAPKV_PEAK_DOT_X86
  if (!__builtin_cpu_supports("avx512vnni")) return 0;
  std::vector<int32_t> sink(static_cast<size_t>(pool.size()));
  const double per_iter = kChains * 16.0 * (bits == 8 ? 4 : 2);  // products per step of a thread
  auto pass = [&](int64_t iters) {
    Timer t;
    pool.run([&](int ith, int) { sink[ith] = bits == 8 ? DotChains<8>(iters) : DotChains<16>(iters); });
    return t.seconds();
  };
  int64_t iters = 1 << 14;
  double s = pass(iters);
  while (s < seconds / 8) {  // calibrate, then one pass of about `seconds`
    iters *= 2;
    s = pass(iters);
  }
  iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / s);
  s = pass(iters);
  volatile int32_t keep = sink[0];
  (void)keep;
  return per_iter * static_cast<double>(iters) * pool.size() / s;
#else
  (void)pool;
  return 0;
#endif
}

}  // namespace snapkv
