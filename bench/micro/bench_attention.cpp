// Attention micro-benchmarks at the default model's shapes (9 query heads, 3 KV heads, head
// size 64), f16 KV: prefill (a causal chunk of 512 queries at the end of a context of n keys),
// decode (one query over n keys, in one layer or 30; batched: one per sequence, each over its own
// n keys) and the observed-attention column sums of a 512-query chunk. AttentionDecodeShape is
// decode at the larger models' shapes (query heads, KV heads, head size: 32/8/64 as
// Llama-3.2-1B, 24/8/128 as Llama-3.2-3B, 32/8/128 as Llama-3.1-8B, 28/4/128 as Qwen2.5-7B) over
// 16 layers' caches.
// Counters: FLOP/s = 4 * d * (query, key) pairs visited per second (QK and PV, 2 FLOP per
// multiply-add; column sums count QK twice); KV_B/s = bytes of K and V read per second.
//
//   snapkv_microbench --benchmark_filter='Attention'
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ops/attention.h"
#include "ops/fp16.h"
#include "util/aligned_vector.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

constexpr int kHeads = 9, kKvHeads = 3, kDim = 64;

struct Fixture {
  AlignedVector<uint16_t> k, v;  // per KV head [n][d]
  std::vector<int32_t> pos;
  std::vector<KvHeadView> views;
  explicit Fixture(int64_t n, int n_kv = kKvHeads, int d = kDim)
      : k(static_cast<size_t>(n_kv * n * d)), v(k.size()), pos(static_cast<size_t>(n)) {
    std::mt19937 rng(7);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (auto& x : k) x = f32_to_fp16(g(rng));
    for (auto& x : v) x = f32_to_fp16(g(rng));
    for (int64_t j = 0; j < n; ++j) pos[static_cast<size_t>(j)] = static_cast<int32_t>(j);
    for (int h = 0; h < n_kv; ++h) {
      const size_t off = static_cast<size_t>(h * n * d);
      views.push_back({n, k.data() + off, v.data() + off, pos.data(), KvType::kF16});
    }
  }
};

std::vector<float> queries(int64_t n_tok, int n_head = kHeads, int d = kDim) {
  std::vector<float> q(static_cast<size_t>(n_tok * n_head * d));
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (auto& x : q) x = g(rng);
  return q;
}

// Pairs (query, visible key) of n_tok queries at the end of n keys, causal.
double pairs(int64_t n, int64_t n_tok) {
  return static_cast<double>(n_tok) * static_cast<double>(n - n_tok) +
         static_cast<double>(n_tok) * static_cast<double>(n_tok + 1) / 2;
}

void BM_AttentionPrefill(benchmark::State& state) {
  const int64_t n = state.range(0), n_tok = 512;
  const int threads = static_cast<int>(state.range(1));
  const Fixture f(n);
  const std::vector<float> q = queries(n_tok);
  const std::vector<int32_t> q_pos(f.pos.end() - n_tok, f.pos.end());
  std::vector<float> out(q.size());
  ThreadPool pool(threads);
  for (auto _ : state) {
    attention(q.data(), q_pos.data(), n_tok, kHeads, kDim, f.views, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(4.0 * kDim * kHeads * pairs(n, n_tok) * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

// One query over n keys, in each of `layers` layers' caches in turn: with 1 layer the keys stay
// in the CPU's caches; with 30 (177 MB at n = 7680) they come from memory, as in a real decode
// step.
void BM_AttentionDecode(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const int layers = static_cast<int>(state.range(2));
  std::vector<Fixture> fs;
  fs.reserve(static_cast<size_t>(layers));
  for (int il = 0; il < layers; ++il) fs.emplace_back(n);
  const std::vector<float> q = queries(1);
  const int32_t q_pos = static_cast<int32_t>(n - 1);
  std::vector<float> out(q.size());
  ThreadPool pool(threads);
  for (auto _ : state) {
    for (const Fixture& f : fs) attention(q.data(), &q_pos, 1, kHeads, kDim, f.views, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["KV_B/s"] = benchmark::Counter(2.0 * kKvHeads * n * kDim * 2 * layers * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

// One query over n keys in each of 16 layers' caches in turn, 2 threads, at a larger model's
// shape: n_head query heads, n_kv KV heads of d dimensions.
void BM_AttentionDecodeShape(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int n_head = static_cast<int>(state.range(1)), n_kv = static_cast<int>(state.range(2));
  const int d = static_cast<int>(state.range(3));
  constexpr int kLayers = 16;
  std::vector<Fixture> fs;
  fs.reserve(kLayers);
  for (int il = 0; il < kLayers; ++il) fs.emplace_back(n, n_kv, d);
  const std::vector<float> q = queries(1, n_head, d);
  const int32_t q_pos = static_cast<int32_t>(n - 1);
  std::vector<float> out(q.size());
  ThreadPool pool(2);
  for (auto _ : state) {
    for (const Fixture& f : fs) attention(q.data(), &q_pos, 1, n_head, d, f.views, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["KV_B/s"] = benchmark::Counter(2.0 * n_kv * n * d * 2 * kLayers * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

// Speculative verification: n_tok queries at the end of n keys (causal among themselves), in
// each of 30 layers' caches in turn, as a verification pass of n_tok - 1 drafted tokens reads them.
void BM_AttentionVerify(benchmark::State& state) {
  const int64_t n = state.range(0), n_tok = state.range(1);
  constexpr int kLayers = 30;
  std::vector<Fixture> fs;
  fs.reserve(kLayers);
  for (int il = 0; il < kLayers; ++il) fs.emplace_back(n);
  const std::vector<float> q = queries(n_tok);
  const std::vector<int32_t> q_pos(fs[0].pos.end() - n_tok, fs[0].pos.end());
  std::vector<float> out(q.size());
  ThreadPool pool(2);
  for (auto _ : state) {
    for (const Fixture& f : fs) attention(q.data(), q_pos.data(), n_tok, kHeads, kDim, f.views, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(4.0 * kDim * kHeads * pairs(n, n_tok) * kLayers * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

// Batched decode: one query per sequence, each sequence over its own cache of n keys.
void BM_AttentionDecodeBatch(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int n_seq = static_cast<int>(state.range(1));
  std::vector<Fixture> fs;
  fs.reserve(static_cast<size_t>(n_seq));
  for (int b = 0; b < n_seq; ++b) fs.emplace_back(n);
  std::vector<std::span<const KvHeadView>> views;
  for (const Fixture& f : fs) views.emplace_back(f.views);
  const std::vector<float> q = queries(n_seq);
  const std::vector<int32_t> q_pos(static_cast<size_t>(n_seq), static_cast<int32_t>(n - 1));
  std::vector<float> out(q.size());
  ThreadPool pool(2);
  for (auto _ : state) {
    attention_decode(q.data(), q_pos.data(), n_seq, kHeads, kDim, views, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["KV_B/s"] = benchmark::Counter(2.0 * kKvHeads * n * kDim * 2 * n_seq * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

void BM_AttentionColumnSums(benchmark::State& state) {
  const int64_t n = state.range(0), n_tok = 512;
  const int threads = static_cast<int>(state.range(1));
  const Fixture f(n);
  const std::vector<float> q = queries(n_tok);
  const std::vector<int32_t> q_pos(f.pos.end() - n_tok, f.pos.end());
  std::vector<std::vector<float>> cols(kHeads, std::vector<float>(static_cast<size_t>(n)));
  std::vector<float*> ptrs;
  for (auto& c : cols) ptrs.push_back(c.data());
  ThreadPool pool(threads);
  for (auto _ : state) {
    attention_column_sums(q.data(), q_pos.data(), n_tok, kHeads, kDim, f.views, ptrs, pool);
    benchmark::DoNotOptimize(ptrs.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(4.0 * kDim * kHeads * pairs(n, n_tok) * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

BENCHMARK(BM_AttentionPrefill)->ArgsProduct({{1024, 4096, 8192}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{1024, 8192}, {1, 2}, {1}})
    ->ArgsProduct({{7680}, {1, 2}, {30}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionDecodeShape)
    ->ArgNames({"n", "heads", "kv_heads", "d"})
    ->ArgsProduct({{4096, 16384}, {32}, {8}, {64, 128}})
    ->Args({16384, 24, 8, 128})
    ->Args({16384, 28, 4, 128})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionVerify)->ArgsProduct({{1024, 8192}, {1, 2, 5, 8}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionDecodeBatch)->ArgsProduct({{1024, 8192}, {1, 4}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionColumnSums)->ArgsProduct({{1024, 8192}, {1, 2}})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace snapkv
