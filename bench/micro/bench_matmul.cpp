// Matmul micro-benchmarks for every supported weight type at the default model's shapes
// (SmolLM2-135M: hidden 576, FFN 1536, vocabulary 49152): decode (n_tok = 1, a matvec; 4, a
// batched decode step) and prefill (n_tok = 512), 1 and 2 threads.
// Counters: weight_B/s = bytes of weights streamed per second, FLOP/s = 2 * n_in * n_out * n_tok
// per second. K-quants need n_in to be a multiple of 256, so their "576" inputs use 768.
// MatmulQ8/... is the decode path with activations rounded to 8 bits (MatmulActivations::kQ8), for
// the types that have it. Matmul[Q8]FromMemory/... is a decode matvec of the default model's types
// and shapes with its weights read from memory rather than the cache, as in a decode step.
// MatmulQ8Rows8[FromMemory]/... is MatmulQ8 on the copy interleaved by 8 rows (rows8.h) that
// decode with 8-bit activations reads, MatmulQ16Rows8[FromMemory]/... the same with 16-bit
// activations (kQ16). Q{8,16}Rows8Kernel/{AVX2,VNNI}/... times each 8- and 16-bit kernel this CPU
// runs on that copy (decode picks the fastest; the others run on older CPUs), one token.
// The FromMemory cases also cover the decode matrices of larger models for the types their GGUFs
// use (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K): Llama-3.2-1B's 2048x2048 (attention), 2048x8192 (gate,
// up) and 8192x2048 (down), and Llama-3.1-8B's 4096x14336, the decode kernels at 2048x8192.
//
//   snapkv_microbench --benchmark_filter='Matmul/Q4_1/576x1536'
//   snapkv_microbench --benchmark_filter='FromMemory/Q._K/2048x8192'
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "bench_weights.h"
#include "io/ggml_type.h"
#include "ops/fp16.h"
#include "ops/matmul.h"
#include "ops/matvec_q8.h"
#include "ops/row_split.h"
#include "ops/rows8.h"
#include "util/aligned_vector.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

// Bytes that no pass over them finds in the cache: twice the last-level cache, at least 256 MiB.
// 256 MiB alone is not enough on the 480 MiB-L3 Xeon VM: there the kernels read 4-7 % faster
// "from memory" than they do in a decode step (engineering log, 2026-12-05, second session).
size_t beyond_cache_bytes() {
  long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return std::max(size_t{256} << 20, 2 * static_cast<size_t>(std::max(0L, llc)));
}

// Enough copies of a matrix's bytes (beyond_cache_bytes in all, in huge pages as the model's
// weights) that a pass over the next copy each iteration reads it from memory, or just one.
AlignedVector<uint8_t> copies_of(std::span<const uint8_t> one, bool from_memory) {
  const size_t copies = from_memory ? std::max<size_t>(2, beyond_cache_bytes() / one.size()) : 1;
  AlignedVector<uint8_t> data(one.size() * copies);
  for (size_t c = 0; c < copies; ++c) std::memcpy(data.data() + c * one.size(), one.data(), one.size());
  return data;
}

// from_memory: each iteration multiplies the next of copies_of the matrix, so that its weights
// come from memory, not from the cache.
// rows8: the copies are of the matrix interleaved by 8 rows, which the 8-bit kernels read.
void BM_Matmul(benchmark::State& state, GgmlType type, int64_t n_in, int64_t n_out, MatmulActivations act,
               bool from_memory, bool rows8) {
  const int64_t n_tok = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const std::vector<uint8_t> file = bench_weights(type, n_in, n_out);
  std::vector<uint8_t> one = file;
  if (rows8) {
    const AlignedVector<uint8_t> r = interleave_rows8(make_weight_matrix(type, file.data(), n_in, n_out));
    one.assign(r.begin(), r.end());
  }
  const AlignedVector<uint8_t> data = copies_of(one, from_memory);
  const size_t copies = data.size() / one.size();
  const AlignedVector<float> x(static_cast<size_t>(n_tok * n_in), 0.5f);  // as the engine's activations
  std::vector<float> y(static_cast<size_t>(n_tok * n_out));
  ThreadPool pool(threads);
  size_t c = 0;
  for (auto _ : state) {
    WeightMatrix w = make_weight_matrix(type, rows8 ? file.data() : data.data() + c * one.size(), n_in, n_out);
    if (rows8) w.rows8 = data.data() + c * one.size();
    matmul(w, x.data(), n_tok, y.data(), pool, act);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    c = (c + 1) % copies;
  }
  state.counters["weight_B/s"] = benchmark::Counter(static_cast<double>(one.size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n_in * n_out * n_tok),
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(act == MatmulActivations::kF32 ? matmul_simd_target() : q8_kernel_name(q8_best_kernel()));
}

// One token times the interleaved copy with kernel k and activations of `bits` bits (as
// matvec_q8_many, without its choice of kernel), from the cache or from memory as BM_Matmul.
void BM_Q8Rows8Kernel(benchmark::State& state, Q8Kernel k, int bits, GgmlType type, int64_t n_in, int64_t n_out,
                      bool from_memory) {
  const int threads = static_cast<int>(state.range(0));
  const std::vector<uint8_t> file = bench_weights(type, n_in, n_out);
  const WeightMatrix gguf = make_weight_matrix(type, file.data(), n_in, n_out);
  const AlignedVector<uint8_t> one = interleave_rows8(gguf);
  const AlignedVector<uint8_t> data = copies_of(one, from_memory);
  const size_t copies = data.size() / one.size();
  const std::vector<float> x(static_cast<size_t>(n_in), 0.5f);
  Q8Activations xq;
  quantize_q8(x.data(), n_in, 1, xq, k, bits);
  std::vector<float> y(static_cast<size_t>(n_out));
  ThreadPool pool(threads);
  size_t c = 0;
  for (auto _ : state) {
    WeightMatrix w = gguf;
    w.rows8 = data.data() + c * one.size();
    pool.run([&](int ith, int nth) {
      int64_t r0, r1;
      split_rows(n_out, 8, ith, nth, &r0, &r1);
      q8_matvec_rows(k, w, xq, y.data(), r0, r1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    c = (c + 1) % copies;
  }
  state.counters["weight_B/s"] = benchmark::Counter(static_cast<double>(one.size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

int register_all() {
  const GgmlType types[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                            GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                            GgmlType::F16,  GgmlType::BF16, GgmlType::F32};
  const int64_t shapes[][2] = {{576, 1536}, {1536, 576}, {576, 49152}};
  for (GgmlType type : types) {
    for (const auto& shape : shapes) {
      int64_t n_in = shape[0];
      if (ggml_type_info(type).block_elems == 256 && n_in % 256 != 0) n_in = 768;
      const int64_t n_out = shape[1];
      const std::string name = "Matmul/" + std::string(ggml_type_info(type).name) + "/" +
                               std::to_string(n_in) + "x" + std::to_string(n_out);
      benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, type, n_in, n_out, MatmulActivations::kF32, false, false)
          ->ArgNames({"n_tok", "threads"})
          ->ArgsProduct({{1, 4, 512}, {1, 2}})
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      if (q8_supports(type)) {
        for (auto [prefix, act, rows8] : {std::tuple{"MatmulQ8", MatmulActivations::kQ8, false},
                                          {"MatmulQ8Rows8", MatmulActivations::kQ8, true},
                                          {"MatmulQ16Rows8", MatmulActivations::kQ16, true}}) {
          benchmark::RegisterBenchmark((prefix + name.substr(6)).c_str(), BM_Matmul, type, n_in, n_out, act, false,
                                       rows8)
              ->ArgNames({"n_tok", "threads"})
              ->ArgsProduct({{1, 4}, {1, 2}})
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  // From memory, one token: the default model's types and shapes, and larger models' decode
  // matrices (only the types with integer-activation kernels, which a model interleaves).
  struct FromMemory {
    GgmlType type;
    int64_t n_in, n_out;
  };
  std::vector<FromMemory> from_memory;
  for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q8_0}) {
    for (const auto& shape : shapes) from_memory.push_back({type, shape[0], shape[1]});
  }
  const int64_t large[][2] = {{2048, 2048}, {2048, 8192}, {8192, 2048}, {4096, 14336}};
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (const auto& shape : large) from_memory.push_back({type, shape[0], shape[1]});
  }
  for (const FromMemory& m : from_memory) {
    struct Kind {
      const char* name;
      MatmulActivations act;
      bool rows8;
    };
    for (const Kind& k : {Kind{"Matmul", MatmulActivations::kF32, false}, Kind{"MatmulQ8", MatmulActivations::kQ8, false},
                          Kind{"MatmulQ8Rows8", MatmulActivations::kQ8, true},
                          Kind{"MatmulQ16Rows8", MatmulActivations::kQ16, true}}) {
      if (k.act == MatmulActivations::kQ8 && !k.rows8 && ggml_type_info(m.type).block_elems == 256) continue;  // as f32
      const std::string name = std::string(k.name) + "FromMemory/" + std::string(ggml_type_info(m.type).name) + "/" +
                               std::to_string(m.n_in) + "x" + std::to_string(m.n_out);
      // 2, 5 and 8 tokens: speculative decoding's verification passes of 1, 4 and 7 drafts.
      benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, m.type, m.n_in, m.n_out, k.act, true, k.rows8)
          ->ArgNames({"n_tok", "threads"})
          ->ArgsProduct({{1, 2, 5, 8}, {1, 2}})
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    // The kernels one by one: at the default model's shapes, and of the larger ones at 2048x8192.
    if (m.n_in >= 2048 && !(m.n_in == 2048 && m.n_out == 8192)) continue;
    for (Q8Kernel k : q8_kernels_supported()) {
      if (k == Q8Kernel::kScalar) continue;  // the portable reference, not a decode kernel
      for (int bits : {8, 16}) {
        for (bool from : {false, true}) {
          const std::string name = fmt::format("Q{}Rows8Kernel/{}{}{}/{}x{}", bits, k == Q8Kernel::kAvx2 ? "AVX2" : "VNNI",
                                               from ? "/FromMemory/" : "/", ggml_type_info(m.type).name, m.n_in,
                                               m.n_out);
          benchmark::RegisterBenchmark(name.c_str(), BM_Q8Rows8Kernel, k, bits, m.type, m.n_in, m.n_out, from)
              ->ArgNames({"threads"})
              ->Arg(1)
              ->Arg(2)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  return 0;
}

[[maybe_unused]] const int registered = register_all();

}  // namespace
}  // namespace snapkv
