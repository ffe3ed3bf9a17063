// Prefill micro-benchmarks at the shapes of Llama-3.2-1B (hidden 2048, FFN 8192, 8 KV heads of
// 64) and Llama-3.1-8B (hidden 4096, FFN 14336), 512 tokens, for the types of the common GGUFs:
// the f32 path (Prefill/F32/...) against the integer GEMM with activations rounded to 16 bits
// (Prefill/Q16/..., the default decode mode's prefill) and to 8 bits (Prefill/Q8/...), through
// matmul as the model calls it. PrefillKernel/{AVX2,VNNI}/{8,16}/... times each integer kernel
// this CPU runs on its own (the AVX2 one serves CPUs without AVX-512 VNNI). Counter: FLOP/s =
// 2 * n_in * n_out * n_tok per second. On a shared machine, compare variants within one run:
//
//   snapkv_microbench --benchmark_filter='Prefill/.*/Q4_K/2048x8192' --benchmark_repetitions=3
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "bench_weights.h"
#include "ops/gemm_q8.h"
#include "ops/matmul.h"
#include "ops/row_split.h"
#include "util/aligned_vector.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

constexpr int64_t kTokens = 512;

void set_flops(benchmark::State& state, int64_t n_in, int64_t n_out) {
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n_in * n_out * kTokens),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// Activations with the spread of hidden states (the values do not affect speed).
AlignedVector<float> bench_activations(int64_t n_in) {
  AlignedVector<float> x(static_cast<size_t>(kTokens * n_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 2654435761u % 2001) - 1000) * 1e-3f;
  return x;
}

void BM_Prefill(benchmark::State& state, GgmlType type, int64_t n_in, int64_t n_out, MatmulActivations act) {
  const int threads = static_cast<int>(state.range(0));
  const std::vector<uint8_t> m = bench_weights(type, n_in, n_out);
  const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
  const AlignedVector<float> x = bench_activations(n_in);
  std::vector<float> y(static_cast<size_t>(kTokens * n_out));
  ThreadPool pool(threads);
  for (auto _ : state) {
    matmul(w, x.data(), kTokens, y.data(), pool, act);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, n_in, n_out);
  state.SetLabel(gemm_q8_bits(act, w) == 0 ? matmul_simd_target() : q8_kernel_name(q8_best_kernel()));
}

// One kernel on activations rounded beforehand, rows split among the threads as gemm_q8_many does.
void BM_PrefillKernel(benchmark::State& state, Q8Kernel k, int bits, GgmlType type, int64_t n_in, int64_t n_out) {
  const int threads = static_cast<int>(state.range(0));
  const std::vector<uint8_t> m = bench_weights(type, n_in, n_out);
  const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
  const AlignedVector<float> x = bench_activations(n_in);
  std::vector<float> y(static_cast<size_t>(kTokens * n_out));
  ThreadPool pool(threads);
  GemmQ8Activations xq;
  gemm_q8_quantize(x.data(), n_in, kTokens, bits, xq, pool, k);
  for (auto _ : state) {
    pool.for_each_item((n_out + 63) / 64, [&](int64_t i) { gemm_q8_rows(k, w, xq, y.data(), 64 * i, std::min(n_out, 64 * i + 64)); });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, n_in, n_out);
}

int register_all() {
  const GgmlType types[] = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
  const int64_t shapes[][2] = {{2048, 2048}, {2048, 512}, {2048, 8192}, {8192, 2048}, {4096, 14336}, {14336, 4096}};
  for (GgmlType type : types) {
    for (const auto& [n_in, n_out] : shapes) {
      const std::string shape = fmt::format("{}/{}x{}", ggml_type_info(type).name, n_in, n_out);
      for (auto [mode, act] : {std::pair{"F32", MatmulActivations::kF32}, {"Q16", MatmulActivations::kQ16},
                               {"Q8", MatmulActivations::kQ8}}) {
        benchmark::RegisterBenchmark(fmt::format("Prefill/{}/{}", mode, shape).c_str(), BM_Prefill, type, n_in, n_out, act)
            ->ArgNames({"threads"})
            ->Arg(2)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
      for (Q8Kernel k : q8_kernels_supported()) {
        if (k == Q8Kernel::kScalar) continue;  // the portable fallback, slower than the f32 path
        for (int bits : {8, 16}) {
          if (!gemm_q8_supports(type, bits, k)) continue;
          const std::string name =
              fmt::format("PrefillKernel/{}/{}/{}", k == Q8Kernel::kAvx2 ? "AVX2" : "VNNI", bits, shape);
          benchmark::RegisterBenchmark(name.c_str(), BM_PrefillKernel, k, bits, type, n_in, n_out)
              ->ArgNames({"threads"})
              ->Arg(2)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace snapkv
