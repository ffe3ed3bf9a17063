// snapkv bench roofline: this machine's ceilings, then each phase of the model against its bound.
// It times the engine's kernels and layers themselves (one layer's matmuls per SIMD target, the
// weights a decode step reads), so it is built on the engine's internals (snapkv_internal), not on
// the public API.
//   ceilings: f32 multiply-add peak per SIMD target, memory read bandwidth (bench/probes/peak.h),
//     the integer dot products' multiply-add peak (AVX-512 VNNI, bench/probes/peak_dot.h);
//   prefill matmuls: one layer's weight matrices over a chunk of tokens, per SIMD target, against
//     their FLOPs / that target's peak;
//   prefill: a whole prompt (attention included) against its FLOPs / peak, and its matrices'
//     multiply-adds against the integer dot peaks;
//   decode: ms per token against (weight bytes + KV bytes read per token) / bandwidth, after a
//     short prompt, and after a long one with the full cache and with a press; once against the
//     best bandwidth read at the start, once against the bandwidth read around each run; with
//     --versus-activations, also with the other decode activations, the two taking turns token by
//     token (on a machine whose speed drifts by tens of percent between runs, as some VMs do,
//     only such pairs compare the two);
//   with 2 or more threads, the time a cache line takes from one pool thread to another and back,
//     once with the ceilings and around each decode run: on a machine with such phases it tells
//     them apart (bench/probes/round_trip.h).
// Times are medians of --reps runs; the ceilings are the best of theirs.
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string_view>
#include <thread>

#include "bench_util.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "hwy/targets.h"
#include "io/gguf.h"
#include "kv_options.h"
#include "model/model.h"
#include "model_options.h"
#include "ops/matmul.h"
#include "ops/matvec_q8.h"
#include "ops/rows8.h"
#include "probes/peak.h"
#include "probes/peak_dot.h"
#include "probes/round_trip.h"
#include "snapkv/data_dir.h"
#include "snapkv/timer.h"
#include "snapkv/tokenizer.h"
#include "subcommands.h"
#include "util/aligned_vector.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace snapkv::cli {
namespace {

// The engine's objects for the model flags, as snapkv::Model::load builds them: the file mapped
// where the decoder copies its matrices, else read into huge pages.
DecoderOptions decoder_options(const ModelFlags& f) { return DecoderOptions{f.model_options().decode_activations}; }
GgufFile::Memory file_memory(const ModelFlags& f) {
  return rows8_wanted(f.model_options().decode_activations) ? GgufFile::Memory::kMapped : GgufFile::Memory::kHugePages;
}

struct RooflineOptions {
  std::string model = kDefaultModel;
  std::string data;  // resolve_data_dir
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int reps = 5;
  int n_decode = 32;
  int chunk = 256;       // tokens per prefill matmul (the engine's prefill chunk)
  int prefill = 512;     // prompt of the whole-prefill row
  int long_prompt = 7680;
  double bandwidth_mib = 1024;
  KvOptions kv;
  ModelFlags model_flags;
  std::string versus_activations;  // empty: decode with model_flags' activations only
};

// The weights as the engine reads them.
struct WeightsView {
  size_t decode_bytes = 0;             // read once per decode step (every tensor; the embedding
                                       // table only when it doubles as the output head)
  double block_params = 0;             // multiply-adds per token in all layers' matrices
  // One layer's matrices, for the matmul rows, grouped as the forward pass multiplies them: Q, K
  // and V in one matmul_many, gate and up in another, the output and down projections alone.
  std::vector<std::vector<WeightMatrix>> layer0;
};

// The group of blk.0's matrix `name` (the GGUF tensor name without "blk.0."): matrices of one
// group read the same input.
std::string input_group(std::string_view name) {
  for (std::string_view p : {"attn_q.", "attn_k.", "attn_v."}) {
    if (name.starts_with(p)) return "attn_qkv";
  }
  for (std::string_view p : {"ffn_gate.", "ffn_up."}) {
    if (name.starts_with(p)) return "ffn_gate_up";
  }
  return std::string(name);
}

WeightsView weights_view(const GgufFile& file) {
  WeightsView w;
  w.decode_bytes = decode_weight_bytes(file);
  std::map<std::string, std::vector<WeightMatrix>> groups;
  for (const GgufTensor& t : file.tensors()) {
    if (t.n_dims != 2 || !t.name.starts_with("blk.")) continue;
    w.block_params += static_cast<double>(t.n_elements());
    if (t.name.starts_with("blk.0.")) groups[input_group(std::string_view(t.name).substr(6))].push_back(
        make_weight_matrix(t.type, t.data, t.ne[0], t.ne[1]));
  }
  for (auto& [name, group] : groups) w.layer0.push_back(std::move(group));
  if (w.layer0.empty()) fail(ErrorKind::kUnsupported, "{}: no blk.0.* weight matrices", file.path());
  return w;
}

// Seconds for one pass of x (chunk tokens) through every matrix of the layer, a matmul_many per
// group; median of reps.
double layer_matmul_seconds(const WeightsView& w, int chunk, int reps, ThreadPool& pool) {
  int64_t widest = 0;
  for (const auto& group : w.layer0) {
    for (const WeightMatrix& m : group) widest = std::max(widest, m.n_in);
  }
  std::vector<float> x(static_cast<size_t>(chunk * widest));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  std::vector<std::vector<float>> ys;
  std::vector<std::vector<MatmulJob>> jobs;
  for (const auto& group : w.layer0) {
    jobs.emplace_back();
    for (const WeightMatrix& m : group) {
      ys.emplace_back(static_cast<size_t>(chunk * m.n_out));
      jobs.back().push_back({&m, ys.back().data()});
    }
  }
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {  // the first pass warms up and is not counted
    Timer t;
    for (const auto& group : jobs) matmul_many(group, x.data(), chunk, pool);
    if (r > 0) times.push_back(t.seconds());
  }
  return median(times);
}

double layer_matmul_flops(const WeightsView& w, int chunk) {
  double params = 0;
  for (const auto& group : w.layer0) {
    for (const WeightMatrix& m : group) params += static_cast<double>(m.n_in * m.n_out);
  }
  return 2 * params * chunk;
}

struct Decoded {
  double ms_per_token = 0;     // median of the runs
  std::vector<double> run_ms;  // per run, ms per token
  double kv_bytes = 0;         // held after the prompt (what each decode step reads)
};

// Some machines (VMs especially) read memory at rates that switch between phases, seconds to
// minutes long, so that a ceiling measured once says little about the
// bandwidth a decode run had. The bandwidth buffer is therefore read once before and once after
// each run (the default 32 tokens take well under a second): run_bandwidth[r] is what those two
// reads got together (bytes read / seconds), which gives run r its own bound. The threads' round
// trip is taken with each read as well (run_round_trip_ns[r], the mean of the two; 0 with one
// thread).
struct DecodeRuns {
  std::vector<Decoded> models;
  std::vector<double> run_bandwidth;
  std::vector<double> run_round_trip_ns;
};

double round_trip_or_zero(ThreadPool& pool) { return pool.size() < 2 ? 0.0 : thread_round_trip_ns(pool); }

// Prefills the prompt once per model, each in its own session, then decodes reps runs of n tokens
// (greedy), the models taking turns token by token, so that a drift of the machine's speed reaches
// each alike: each model's median ms per token. The read of the bandwidth buffer before a run
// evicts the caches and the TLB a decode loop keeps warm from token to token, so each model first
// decodes one untimed token.
DecodeRuns decode_after(const std::vector<const Decoder*>& models, const std::vector<int32_t>& prompt,
                        const SequenceOptions& so, const RooflineOptions& o, std::span<const float> bandwidth_buffer,
                        ThreadPool& pool) {
  std::vector<std::unique_ptr<Sequence>> sessions;
  DecodeRuns d{std::vector<Decoded>(models.size()), {}, {}};
  for (size_t m = 0; m < models.size(); ++m) {
    const int capacity = static_cast<int>(prompt.size()) + (o.n_decode + 1) * o.reps + 1;
    sessions.push_back(std::make_unique<Sequence>(*models[m], capacity, pool, so));
    sessions[m]->prefill(prompt);
    d.models[m].kv_bytes = static_cast<double>(sessions[m]->kv().bytes());
  }
  const auto decode_one = [&](size_t m) { sessions[m]->decode(greedy_token(sessions[m]->logits())); };
  const double buffer_bytes = static_cast<double>(bandwidth_buffer.size_bytes());
  double read_before = buffer_bytes / read_bandwidth(pool, bandwidth_buffer, 1);
  double trip_before = round_trip_or_zero(pool);
  for (int r = 0; r < o.reps; ++r) {
    for (size_t m = 0; m < models.size(); ++m) decode_one(m);
    std::vector<double> seconds(models.size(), 0.0);
    for (int i = 0; i < o.n_decode; ++i) {
      for (size_t m = 0; m < models.size(); ++m) {
        Timer t;
        decode_one(m);
        seconds[m] += t.seconds();
      }
    }
    const double read_after = buffer_bytes / read_bandwidth(pool, bandwidth_buffer, 1);
    const double trip_after = round_trip_or_zero(pool);
    d.run_bandwidth.push_back(2 * buffer_bytes / (read_before + read_after));
    d.run_round_trip_ns.push_back((trip_before + trip_after) / 2);
    read_before = read_after;
    trip_before = trip_after;
    for (size_t m = 0; m < models.size(); ++m) d.models[m].run_ms.push_back(seconds[m] * 1e3 / o.n_decode);
  }
  for (Decoded& m : d.models) m.ms_per_token = median(m.run_ms);
  return d;
}

std::string gflops(double f) { return fmt::format("{:.1f}", f / 1e9); }

int bench_roofline(const RooflineOptions& o) {
  if (o.reps < 1 || o.n_decode < 1 || o.threads < 1 || o.chunk < 1 || o.prefill < 1 || o.long_prompt < 1) {
    fail(ErrorKind::kInvalidArgument, "--reps, -n, -t, --chunk, --prefill and --long must be >= 1");
  }
  if (!(o.bandwidth_mib >= 64)) fail(ErrorKind::kInvalidArgument, "--bandwidth-mib must be at least 64");
  const SessionOptions session = o.kv.session_options();
  const SequenceOptions pressed{session.kv_type, session.press};
  if (!pressed.press.compresses()) fail(ErrorKind::kInvalidArgument, "--kv-press must name a compressing press");
  SequenceOptions full = pressed;
  full.press = PressConfig{};
  // Two models from one file read the file's rows alike only when it is in memory.
  const auto file = GgufFile::open(o.model, o.versus_activations.empty() ? file_memory(o.model_flags)
                                                                          : GgufFile::Memory::kHugePages);
  const auto model = load_decoder(*file, decoder_options(o.model_flags));
  std::vector<const Decoder*> models{model.get()};
  std::unique_ptr<Decoder> versus;
  if (!o.versus_activations.empty()) {
    versus = load_decoder(*file, decoder_options(ModelFlags{o.versus_activations}));
    models.push_back(versus.get());
  }
  const auto tok = Tokenizer::from_gguf(*file);
  const ModelHparams& hp = model->hparams();
  if (o.long_prompt + o.n_decode * o.reps >= hp.n_ctx_train) {
    fail(ErrorKind::kInvalidArgument, "--long {} plus {} decoded tokens does not fit the context of {}", o.long_prompt,
         o.n_decode * o.reps, hp.n_ctx_train);
  }
  const WeightsView w = weights_view(*file);
  ThreadPool pool(o.threads);
  fmt::print("# bench roofline: {}, {} threads, medians of {}\n\n", o.model, o.threads, o.reps);

  // Ceilings and matmuls per SIMD target.
  fmt::print("| SIMD target | f32 FMA peak GFLOP/s | prefill matmuls GFLOP/s ({} tokens, layer 0) | of peak |\n"
             "|---|--:|--:|--:|\n", o.chunk);
  const int64_t supported = hwy::SupportedTargets();
  double best_peak = 0;  // of the target the kernels dispatch to
  for (int64_t target : {int64_t{HWY_AVX3}, int64_t{HWY_AVX2}, int64_t{HWY_SSE4}, int64_t{HWY_SCALAR}}) {
    if (target != HWY_SCALAR && !(supported & target)) continue;
    hwy::SetSupportedTargetsForTest(target);
    double peak = 0;
    for (int r = 0; r < o.reps; ++r) peak = std::max(peak, peak_fma_flops(pool, 0.2));
    const double mm = layer_matmul_flops(w, o.chunk) / layer_matmul_seconds(w, o.chunk, o.reps, pool);
    fmt::print("| {} | {} | {} | {:.0f}% |\n", peak_simd_target(), gflops(peak), gflops(mm), 100 * mm / peak);
    std::fflush(stdout);
    if (best_peak == 0) best_peak = peak;  // the first supported target is the one dispatched to
  }
  hwy::SetSupportedTargetsForTest(0);
  // In huge pages, as the weights and KV caches that decode reads (over 4 KiB pages the same read
  // is about a quarter slower); zeroed, so every page is in place before the first timed pass.
  const AlignedVector<float> bandwidth_buffer(static_cast<size_t>(o.bandwidth_mib * (1 << 20)) / sizeof(float));
  const double bandwidth = read_bandwidth(pool, bandwidth_buffer, o.reps);
  fmt::print("\nKernels dispatch to {}: peak {} GFLOP/s; memory read bandwidth {:.1f} GB/s ({:.0f} MiB buffer, best "
             "of {}).\n", matmul_simd_target(), gflops(best_peak), bandwidth / 1e9, o.bandwidth_mib, o.reps);
  // The integer prefill GEMM's own ceiling: its dot-product instructions' multiply-adds per second.
  double dot8 = 0, dot16 = 0;
  for (int r = 0; r < o.reps; ++r) {
    dot8 = std::max(dot8, peak_dot_macs(pool, 0.2, 8));
    dot16 = std::max(dot16, peak_dot_macs(pool, 0.2, 16));
  }
  if (dot8 > 0) {
    fmt::print("Integer dot products (AVX-512 VNNI, the prefill GEMM's): {:.1f} G multiply-adds/s with 8-bit "
               "activations (vpdpbusd), {:.1f} G with 16-bit (vpdpwssd).\n", dot8 / 1e9, dot16 / 1e9);
  }
  if (o.threads >= 2) {
    std::vector<double> trips;
    for (int r = 0; r < o.reps; ++r) trips.push_back(thread_round_trip_ns(pool));
    fmt::print("Threads 0 and 1 hand a cache line to each other and back in {:.0f} ns (median of {}).\n", median(trips),
               o.reps);
  }
  const auto describe = [](const std::string& act) {
    return act == "f32" ? act : fmt::format("{} ({} kernel)", act, q8_kernel_name(q8_best_kernel()));
  };
  fmt::print("Decode activations: {}{}.\n\n", describe(o.model_flags.decode_activations),
             versus ? fmt::format("; the second table, token-paired with {}", describe(o.versus_activations)) : "");

  // Prefill of a whole prompt: matmuls plus attention (QK^T and PV over the causal half).
  const std::vector<int32_t> long_ids = essay_tokens(resolve_data_dir(o.data), *tok, o.long_prompt);
  const std::vector<int32_t> prefill_ids(long_ids.begin(), long_ids.begin() + std::min(o.prefill, o.long_prompt));
  std::vector<double> prefill_s;
  for (int r = 0; r < o.reps; ++r) {
    Sequence s(*model, static_cast<int>(prefill_ids.size()) + 1, pool, full);
    Timer t;
    s.prefill(prefill_ids);
    prefill_s.push_back(t.seconds());
  }
  const double n = static_cast<double>(prefill_ids.size());
  const double prefill_flops = 2 * w.block_params * n +
                               4.0 * hp.n_layer * hp.n_head * hp.head_dim * n * (n + 1) / 2 +
                               2.0 * hp.n_embd * hp.n_vocab;
  const double ps = median(prefill_s);
  fmt::print("| phase | measured | bound | measured / bound | achieved |\n|---|--:|--:|--:|--:|\n");
  fmt::print("| prefill {} tokens | {:.1f} ms | {:.1f} ms (FLOPs / peak) | {:.2f} | {} GFLOP/s, {:.0f}% of peak |\n",
             prefill_ids.size(), ps * 1e3, prefill_flops / best_peak * 1e3, ps * best_peak / prefill_flops,
             gflops(prefill_flops / ps), 100 * prefill_flops / ps / best_peak);
  if (dot8 > 0) {  // the matrices' multiply-adds alone, against the integer peaks
    const double macs = w.block_params * n / ps;
    fmt::print("| prefill {} tokens, matmuls | | | | {:.1f} G multiply-adds/s: {:.0f}% of the 16-bit dot peak, {:.0f}% of "
               "the 8-bit |\n", prefill_ids.size(), macs / 1e9, 100 * macs / dot16, 100 * macs / dot8);
  }

  // Decode: every step reads all weights once and the whole cache of every layer.
  const std::vector<int32_t> short_ids(long_ids.begin(), long_ids.begin() + 16);
  struct Row {
    std::string name;
    const std::vector<int32_t>* prompt;
    SequenceOptions so;
  };
  const Row rows[] = {Row{"decode after 16 tokens", &short_ids, full},
                      Row{fmt::format("decode after {} tokens, full cache", o.long_prompt), &long_ids, full},
                      Row{fmt::format("decode after {} tokens, {}", o.long_prompt, pressed.press.describe()),
                          &long_ids, pressed}};
  std::vector<DecodeRuns> decoded;
  const auto bound_ms = [&](const Decoded& d, double bw) {
    return (static_cast<double>(w.decode_bytes) + d.kv_bytes) / bw * 1e3;
  };
  for (const Row& row : rows) {
    decoded.push_back(decode_after(models, *row.prompt, row.so, o, bandwidth_buffer, pool));
    const Decoded& d = decoded.back().models[0];
    const double bytes = static_cast<double>(w.decode_bytes) + d.kv_bytes;
    fmt::print("| {} | {:.2f} ms/token | {:.2f} ms ({:.1f} MB weights + {:.1f} MB KV) / bandwidth | {:.2f} | {:.1f} GB/s |\n",
               row.name, d.ms_per_token, bound_ms(d, bandwidth), static_cast<double>(w.decode_bytes) / 1e6,
               d.kv_bytes / 1e6, d.ms_per_token / bound_ms(d, bandwidth), bytes / d.ms_per_token / 1e6);
    std::fflush(stdout);
  }
  // Each run against the bandwidth read alongside it (DecodeRuns), then the median of the runs.
  fmt::print("\n| decode, bound from the bandwidth read around each run | measured | bandwidth | bound | "
             "measured / bound | threads' round trip |\n|---|--:|--:|--:|--:|--:|\n");
  for (size_t i = 0; i < decoded.size(); ++i) {
    const Decoded& d = decoded[i].models[0];
    std::vector<double> bounds, ratios;
    for (int r = 0; r < o.reps; ++r) {
      bounds.push_back(bound_ms(d, decoded[i].run_bandwidth[r]));
      ratios.push_back(d.run_ms[r] / bounds.back());
    }
    const double trip = median(decoded[i].run_round_trip_ns);
    fmt::print("| {} | {:.2f} ms/token | {:.1f} GB/s | {:.2f} ms | {:.2f} | {} |\n", rows[i].name, d.ms_per_token,
               median(decoded[i].run_bandwidth) / 1e9, median(bounds), median(ratios),
               trip > 0 ? fmt::format("{:.0f} ns", trip) : "-");
  }
  if (versus) {
    const std::string& a = o.model_flags.decode_activations;
    const std::string& b = o.versus_activations;
    fmt::print("\n| decode, token-paired | {} ms/token | {} ms/token | {} / {} |\n|---|--:|--:|--:|\n", a, b, a, b);
    for (size_t i = 0; i < decoded.size(); ++i) {
      const std::vector<Decoded>& m = decoded[i].models;
      fmt::print("| {} | {:.2f} | {:.2f} | {:.3f} |\n", rows[i].name, m[0].ms_per_token, m[1].ms_per_token,
                 m[0].ms_per_token / m[1].ms_per_token);
    }
  }
  return 0;
}

}  // namespace

Action add_bench_roofline(CLI::App& app) {
  auto o = std::make_shared<RooflineOptions>();
  o->kv.press.press = "snapkv";
  o->kv.press.capacity = 1024;
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  app.add_option("--data", o->data, data_flag_help());
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--reps", o->reps, "runs per figure (medians; ceilings: best)")->capture_default_str();
  app.add_option("-n,--n-decode", o->n_decode, "tokens per decode run")->capture_default_str();
  app.add_option("--chunk", o->chunk, "tokens per prefill matmul")->capture_default_str();
  app.add_option("--prefill", o->prefill, "prompt tokens of the prefill row")->capture_default_str();
  app.add_option("--long", o->long_prompt, "prompt tokens of the long decode rows")->capture_default_str();
  app.add_option("--bandwidth-mib", o->bandwidth_mib, "buffer read for the bandwidth")->capture_default_str();
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  app.add_option("--versus-activations", o->versus_activations,
                 "also decode with these activations (f32 | q16 | q8), taking turns with --decode-activations token "
                 "by token, and report both and their ratio")
      ->check(CLI::IsMember({"f32", "q16", "q8"}));
  return [o] { return bench_roofline(*o); };
}

}  // namespace snapkv::cli
