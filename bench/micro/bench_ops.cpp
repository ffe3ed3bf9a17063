// Micro-benchmarks of the small per-token kernels at the default model's shapes (hidden 576,
// 9 query heads and 3 KV heads of size 64, 49,152 logits): RMSNorm over n_tok rows, RoPE over the
// query and key heads of n_tok tokens (and its angles, once per forward call), and the argmax of
// the greedy token (against std::max_element). Counter: B/s = bytes read and written per second
// (each works in place or row by row, so each is one pass over its rows).
//
//   snapkv_microbench --benchmark_filter='RmsNorm|Rope|Argmax'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace snapkv {
namespace {

constexpr int64_t kHidden = 576;
constexpr int kHeads = 9 + 3, kDim = 64;  // queries and keys together

std::vector<float> random_floats(size_t n) {
  std::vector<float> v(n);
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& x : v) x = g(rng);
  return v;
}

void BM_RmsNorm(benchmark::State& state) {
  const int64_t n_tok = state.range(0);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tok * kHidden)), w = random_floats(kHidden);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    rms_norm(x.data(), w.data(), y.data(), n_tok, kHidden, 1e-5f);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["B/s"] = benchmark::Counter(2.0 * static_cast<double>(x.size() * sizeof(float)),
                                             benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RmsNorm)->ArgName("n_tok")->Arg(1)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_Rope(benchmark::State& state) {
  const int64_t n_tok = state.range(0);
  RopeParams p;
  p.n_rot = kDim;
  p.freq_base = 100000;  // SmolLM2
  std::vector<float> x = random_floats(static_cast<size_t>(n_tok * kHeads * kDim));
  std::vector<int32_t> pos(static_cast<size_t>(n_tok));
  std::iota(pos.begin(), pos.end(), 4000);
  const RopeAngles angles = rope_angles(p.inv_freq(), pos.data(), n_tok);
  for (auto _ : state) {
    rope(x.data(), angles, 0, n_tok, kHeads, kDim, p.mode);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  state.counters["B/s"] = benchmark::Counter(2.0 * static_cast<double>(x.size() * sizeof(float)),
                                             benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Rope)->ArgName("n_tok")->Arg(1)->Arg(512)->Unit(benchmark::kMicrosecond);

// The angles, worked out once per forward call.
void BM_RopeAngles(benchmark::State& state) {
  const int64_t n_tok = state.range(0);
  RopeParams p;
  p.n_rot = kDim;
  p.freq_base = 100000;
  std::vector<int32_t> pos(static_cast<size_t>(n_tok));
  std::iota(pos.begin(), pos.end(), 4000);
  const std::vector<double> inv_freq = p.inv_freq();
  for (auto _ : state) benchmark::DoNotOptimize(rope_angles(inv_freq, pos.data(), n_tok));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(n_tok), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RopeAngles)->ArgName("n_tok")->Arg(1)->Arg(512)->Unit(benchmark::kMicrosecond);

// The greedy token over the default model's vocabulary, against std::max_element.
void BM_Argmax(benchmark::State& state) {
  const std::vector<float> logits = random_floats(49152);
  const bool simd = state.range(0) == 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(simd ? argmax(logits.data(), static_cast<int64_t>(logits.size()))
                                  : std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  state.counters["B/s"] = benchmark::Counter(static_cast<double>(logits.size() * sizeof(float)),
                                             benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Argmax)->ArgName("simd")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace snapkv
