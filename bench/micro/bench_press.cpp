// Micro-benchmarks of SnapKV's selection steps for one layer of the default model (9 query heads,
// 3 KV heads of size 64, f16 keys) over a prompt of n entries: window scoring (the last 32
// queries' attention over every entry, two flash passes), max pooling (kernel 7) of one head's
// scores, and top-k (C = 1024) of one head's scores.
// Counters: FLOP/s = 4 * d * (query, key) pairs per second for the scoring (QK twice: the
// maximum pass and the sum pass); entries/s for pooling and top-k.
//
//   snapkv_microbench --benchmark_filter='Window|Pool|TopK'
#include <benchmark/benchmark.h>

#include <numeric>
#include <random>
#include <vector>

#include "kv/press_scores.h"
#include "ops/fp16.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

constexpr int kHeads = 9, kKvHeads = 3, kDim = 64, kWindow = 32;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& x : v) x = g(rng);
  return v;
}

void BM_WindowScores(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  std::vector<uint16_t> k(static_cast<size_t>(kKvHeads * n * kDim)), v(k.size());
  const std::vector<float> kf = random_floats(k.size(), 1), vf = random_floats(k.size(), 2);
  for (size_t i = 0; i < k.size(); ++i) k[i] = f32_to_fp16(kf[i]), v[i] = f32_to_fp16(vf[i]);
  std::vector<int32_t> pos(static_cast<size_t>(n));
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<KvHeadView> views;
  for (int h = 0; h < kKvHeads; ++h) {
    const size_t off = static_cast<size_t>(h * n * kDim);
    views.push_back({n, k.data() + off, v.data() + off, pos.data(), KvType::kF16});
  }
  const std::vector<float> q = random_floats(static_cast<size_t>(kWindow * kHeads * kDim), 3);
  ThreadPool pool(threads);
  LayerInput in;
  in.n_head = kHeads, in.head_dim = kDim, in.kv = views;
  in.q_window = q.data(), in.window_pos = pos.data() + (n - kWindow), in.n_window = kWindow;
  in.pool = &pool;
  for (auto _ : state) {
    HeadScores s = window_attention(in, kWindow);
    benchmark::DoNotOptimize(s.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(4.0 * kDim * kHeads * kWindow * static_cast<double>(n),
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_WindowScores)
    ->ArgNames({"n", "threads"})
    ->ArgsProduct({{2048, 8192}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_MaxPool(benchmark::State& state) {
  const std::vector<float> s = random_floats(static_cast<size_t>(state.range(0)), 4);
  for (auto _ : state) {
    std::vector<float> p = pool1d(s, 7, PoolKind::kMax);
    benchmark::DoNotOptimize(p.data());
  }
  state.counters["entries/s"] =
      benchmark::Counter(static_cast<double>(s.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MaxPool)->ArgName("n")->Arg(2048)->Arg(8192)->Unit(benchmark::kMicrosecond);

void BM_TopK(benchmark::State& state) {
  const std::vector<float> s = random_floats(static_cast<size_t>(state.range(0)), 5);
  for (auto _ : state) {
    std::vector<int32_t> idx = top_k(s, 1024);
    benchmark::DoNotOptimize(idx.data());
  }
  state.counters["entries/s"] =
      benchmark::Counter(static_cast<double>(s.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TopK)->ArgName("n")->Arg(2048)->Arg(8192)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace snapkv
