// snapkv bench compress: full cache vs a press, side by side in one run on the same machine.
// For each prompt length the two configurations alternate, each measurement in a fresh child
// process (run_in_child), so peak RSS is per configuration and neither run warms caches for the
// other. Reports medians and the ratios full / press. On the public API only (snapkv/model.h,
// snapkv/session.h, generate).
#include <fmt/core.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "bench_util.h"
#include "cli_error.h"
#include "kv_options.h"
#include "model_options.h"
#include "snapkv/data_dir.h"
#include "snapkv/memory.h"
#include "snapkv/session.h"
#include "subcommands.h"

namespace snapkv::cli {
namespace {

struct BenchOptions {
  std::string model = kDefaultModel;
  std::string data;  // resolve_data_dir
  std::vector<int> lengths = {4096, 7680};
  int n_decode = 64;
  int reps = 3;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  KvOptions kv;
  ModelFlags model_flags;
};

struct Sample {
  double prefill_s = 0, decode_ms = 0;
  double kv_bytes = 0, peak_rss = 0;
};

// One measurement, run in the calling (child) process: prefill, then n_decode greedy steps.
Sample measure(const BenchOptions& o, const SessionOptions& so, int length) {
  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads));
  const std::vector<int32_t> ids = essay_tokens(resolve_data_dir(o.data), model.tokenizer(), length);
  SessionOptions sized = so;
  sized.n_ctx = length + o.n_decode + 1;
  Session s(model, sized);
  GenerateParams params;  // greedy
  params.max_tokens = o.n_decode + 1;  // n_decode forward passes: the last token needs none
  params.stop_at_eog = false;
  const GenerateStats g = generate(s, ids, params, [](int32_t, std::string_view) { return true; });
  if (g.n_decoded != o.n_decode) fail(ErrorKind::kInternal, "bench: {} decode steps, not {}", g.n_decoded, o.n_decode);
  Sample r;
  r.prefill_s = g.prefill_s;
  r.decode_ms = g.decode_s * 1e3 / g.n_decoded;
  r.kv_bytes = static_cast<double>(s.kv_bytes());
  r.peak_rss = static_cast<double>(peak_rss_bytes());
  return r;
}

Sample measure_in_child(const BenchOptions& o, const SessionOptions& so, int length) {
  std::istringstream in(run_in_child([&] {
    const Sample r = measure(o, so, length);
    return fmt::format("{} {} {} {}", r.prefill_s, r.decode_ms, r.kv_bytes, r.peak_rss);
  }));
  Sample r;
  if (!(in >> r.prefill_s >> r.decode_ms >> r.kv_bytes >> r.peak_rss)) fail(ErrorKind::kInternal, "bench: unreadable measurement");
  return r;
}

int bench_compress(const BenchOptions& o) {
  if (o.reps < 1 || o.n_decode < 1 || o.threads < 1) fail(ErrorKind::kInvalidArgument, "--reps, -n and -t must be >= 1");
  const SessionOptions press = o.kv.session_options();
  if (!press.press.compresses()) fail(ErrorKind::kInvalidArgument, "--kv-press must name a compressing press");
  SessionOptions full = press;
  full.press = PressConfig{};
  fmt::print("# bench compress: full cache vs {}, KV {}, {} threads, {} decoded tokens, median of {}\n\n",
             press.press.describe(), kv_type_name(press.kv_type), o.threads, o.n_decode, o.reps);
  fmt::print("| prompt | cache | prefill s | decode ms/tok | KV cache | peak RSS |\n|---|---|---|---|---|---|\n");
  std::vector<std::string> ratios;
  for (int length : o.lengths) {
    std::vector<Sample> f, p;
    for (int r = 0; r < o.reps; ++r) {  // alternate, so drifts of the machine hit both
      f.push_back(measure_in_child(o, full, length));
      p.push_back(measure_in_child(o, press, length));
      fmt::print(stderr, "L={} rep {}/{}: full prefill {:.2f} s decode {:.2f} ms | {} prefill {:.2f} s decode {:.2f} ms\n",
                 length, r + 1, o.reps, f.back().prefill_s, f.back().decode_ms, press.press.press, p.back().prefill_s,
                 p.back().decode_ms);
    }
    auto med = [](const std::vector<Sample>& v, double Sample::*m) {
      std::vector<double> x;
      for (const Sample& s : v) x.push_back(s.*m);
      return median(x);
    };
    const Sample mf{med(f, &Sample::prefill_s), med(f, &Sample::decode_ms), med(f, &Sample::kv_bytes), med(f, &Sample::peak_rss)};
    const Sample mp{med(p, &Sample::prefill_s), med(p, &Sample::decode_ms), med(p, &Sample::kv_bytes), med(p, &Sample::peak_rss)};
    for (const auto& [name, s] : {std::pair{std::string("full"), mf}, std::pair{press.press.press, mp}}) {
      fmt::print("| {} | {} | {:.2f} | {:.2f} | {} | {} |\n", length, name, s.prefill_s, s.decode_ms,
                 format_bytes(static_cast<size_t>(s.kv_bytes)), format_bytes(static_cast<size_t>(s.peak_rss)));
    }
    ratios.push_back(fmt::format("| {} | {:.2f}x | {:.3f} | {:.1f}x | {:.2f}x |", length, mf.decode_ms / mp.decode_ms,
                                 mp.prefill_s / mf.prefill_s, mf.kv_bytes / mp.kv_bytes, mf.peak_rss / mp.peak_rss));
  }
  fmt::print("\n| prompt | decode speed-up (full / press) | prefill time (press / full) | KV bytes (full / press) | peak RSS (full / press) |\n|---|---|---|---|---|\n");
  for (const std::string& r : ratios) fmt::print("{}\n", r);
  return 0;
}

}  // namespace

Action add_bench_compress(CLI::App& c) {
  auto o = std::make_shared<BenchOptions>();
  o->kv.press.press = "snapkv";
  c.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  c.add_option("--data", o->data, data_flag_help());
  c.add_option("--lengths", o->lengths, "prompt lengths in tokens")->delimiter(',')->capture_default_str();
  c.add_option("-n,--n-decode", o->n_decode, "tokens decoded after each prompt")->capture_default_str();
  c.add_option("--reps", o->reps, "measurements per configuration (median reported)")->capture_default_str();
  c.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  add_kv_options(c, o->kv);
  add_model_flags(c, o->model_flags);
  return [o] { return bench_compress(*o); };
}

}  // namespace snapkv::cli
