// snapkv bench decode: the paper's Fig. 7 on this machine (decode time per step against prompt
// length at several batch sizes: full cache, SnapKV at each capacity, llama.cpp) and prefill time
// and peak memory against prompt length (Fig. 10/11), side by side in one run.
//
// For each prompt length L (the first L tokens of the Paul Graham essays) and repetition, every
// contender runs once, in turn (the order rotates each repetition), each in a fresh process: it
// prefills the prompt (timed; peak RSS right after), then for each batch size B decodes N greedy
// steps of B copies of the prefilled sequence, one batched forward call per step, after one
// untimed step (the first append to a copy reallocates it). B copies cost
// each step what B different prompts of length L cost (every sequence attends over its own L, or
// its compressed C, entries). Reported: medians over the repetitions of the prefill seconds, the
// peak RSS and the mean ms per decode step. llama.cpp runs bench/scripts/llama_bench.py
// (llama-cpp-python, same GGUF, same token ids, same threads, its default f16 cache) when
// --llama-python is given. With --llama-bench, the comparison is against llama.cpp's native
// llama-bench instead, at batch 1 (llama_bench_peer.h).
// On the public API only (snapkv/model.h, snapkv/session.h): B copies are Session::fork()s.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "bench_util.h"
#include "cli_error.h"
#include "llama_bench_peer.h"
#include "model_options.h"
#include "snapkv/data_dir.h"
#include "snapkv/memory.h"
#include "snapkv/session.h"
#include "snapkv/timer.h"
#include "subcommands.h"
#include "svg_chart.h"
#include "text_file.h"

namespace snapkv::cli {
namespace {

namespace fs = std::filesystem;

struct DecodeBenchOptions {
  std::string model = kDefaultModel;
  std::string data;  // resolve_data_dir
  std::vector<int> lengths;  // empty: default_lengths
  std::vector<int> batches = {1, 2, 4};
  std::vector<int> capacities = {1024, 2048};
  int n_decode = 64;
  int reps = 5;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string llama_python;  // empty: no llama.cpp contender
  std::string llama_script = "bench/scripts/llama_bench.py";
  std::string llama_bench;  // llama.cpp's llama-bench binary: the native comparison instead
  std::string llama_fa_prefill = "0,1", llama_fa_decode = "0,1";  // its -fa settings
  bool no_warmup = false;  // with llama-bench: no untimed prompt before the timed one, either engine
  std::string out;
  ModelFlags model_flags;
  bool warm_prefill = false;  // prefill the prompt once untimed first, as llama-bench does
};

struct Contender {
  std::string name;
  int capacity = 0;  // SnapKV's C; 0 = full cache
  bool llama = false;
};

struct Sample {
  double prefill_s = 0, peak_rss = 0, kv_bytes = std::nan("");
  std::vector<double> step_ms;  // per batch size, in the order of the options
};

// One measurement of snapkv, run in the calling (child) process.
Sample measure_snapkv(const DecodeBenchOptions& o, const Contender& c, const std::vector<int32_t>& ids) {
  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads));
  SessionOptions so;
  so.n_ctx = static_cast<int>(ids.size()) + o.n_decode + 2;
  if (c.capacity > 0) so.press.press = "snapkv", so.press.capacity = c.capacity;
  if (o.warm_prefill) Session(model, so).prefill(ids);
  Session prompt(model, so);
  Sample r;
  Timer t;
  prompt.prefill(ids);
  r.prefill_s = t.seconds();
  r.peak_rss = static_cast<double>(peak_rss_bytes());
  r.kv_bytes = static_cast<double>(prompt.kv_bytes());
  for (int b : o.batches) {
    std::vector<Session> seqs;
    std::vector<Session*> ptrs;
    seqs.reserve(static_cast<size_t>(b));
    for (int i = 0; i < b; ++i) seqs.push_back(prompt.fork());
    for (Session& s : seqs) ptrs.push_back(&s);
    std::vector<int32_t> next(static_cast<size_t>(b), greedy(prompt.logits()));
    double spent = 0;
    for (int step = 0; step <= o.n_decode; ++step) {  // step 0 untimed: the copies' first append grows them
      t.reset();
      Session::decode_batch(ptrs, next);
      if (step > 0) spent += t.seconds();
      for (size_t i = 0; i < ptrs.size(); ++i) next[i] = greedy(ptrs[i]->logits());
    }
    r.step_ms.push_back(spent * 1e3 / o.n_decode);
  }
  return r;
}

Sample measure(const DecodeBenchOptions& o, const Contender& c, const std::vector<int32_t>& ids,
               const std::string& tokens_file) {
  Sample r;
  if (c.llama) {
    const std::string out = run_command(fmt::format(
        "{} {} --model {} --tokens {} --threads {} --batches {} -n {}", shell_quote(o.llama_python),
        shell_quote(o.llama_script), shell_quote(o.model), shell_quote(tokens_file), o.threads,
        fmt::join(o.batches, ","), o.n_decode));
    const auto j = nlohmann::json::parse(out, nullptr, false);  // its one line
    if (j.is_discarded() || !j.contains("decode_ms")) fail(ErrorKind::kInternal, "llama_bench.py printed: {}", out);
    r.prefill_s = j["prefill_s"].get<double>();
    r.peak_rss = j["peak_rss"].get<double>();
    for (int b : o.batches) r.step_ms.push_back(j["decode_ms"][std::to_string(b)].get<double>());
    return r;
  }
  std::istringstream in(run_in_child([&] {
    const Sample s = measure_snapkv(o, c, ids);
    return fmt::format("{} {} {} {}", s.prefill_s, s.peak_rss, s.kv_bytes, fmt::join(s.step_ms, " "));
  }));
  in >> r.prefill_s >> r.peak_rss >> r.kv_bytes;
  r.step_ms.resize(o.batches.size());
  for (double& ms : r.step_ms) in >> ms;
  if (!in) fail(ErrorKind::kInternal, "bench: unreadable measurement");
  return r;
}

// Medians over repetitions, per field.
Sample median_of(const std::vector<Sample>& v) {
  const auto med = [&](auto get) {
    std::vector<double> x;
    for (const Sample& s : v) x.push_back(get(s));
    return median(x);
  };
  Sample m{med([](const Sample& s) { return s.prefill_s; }), med([](const Sample& s) { return s.peak_rss; }),
           std::isfinite(v.front().kv_bytes) ? med([](const Sample& s) { return s.kv_bytes; }) : std::nan(""), {}};  // llama.cpp: none
  for (size_t i = 0; i < v.front().step_ms.size(); ++i) m.step_ms.push_back(med([&](const Sample& s) { return s.step_ms[i]; }));
  return m;
}

// kFigureLengths where they fit, then the longest prompt (a multiple of 64) that the model's
// context holds with n_decode + 2 more tokens: the figure runs up to the context.
constexpr int kFigureLengths[] = {512, 1024, 2048, 4096, 7680};

std::vector<int> default_lengths(int n_ctx_train, int n_decode) {
  const int longest = (n_ctx_train - n_decode - 2) / 64 * 64;
  std::vector<int> lengths;
  for (int l : kFigureLengths) {
    if (l < longest) lengths.push_back(l);
  }
  if (longest > 0) lengths.push_back(longest);
  return lengths;
}

// The prompt of each length, checked against the model's context. Read in a child process: the
// measurements are forks of this one, and a model loaded here would add its memory to each
// child's peak RSS.
struct Prompts {
  std::vector<int> lengths;
  std::map<int, std::vector<int32_t>> ids;
};

Prompts read_prompts(const DecodeBenchOptions& o) {
  std::istringstream in(run_in_child([&] {
    const Model model = Model::load(o.model, o.model_flags.model_options(1));
    const int n_ctx_train = model.info().n_ctx_train;
    const std::vector<int> lengths = o.lengths.empty() ? default_lengths(n_ctx_train, o.n_decode) : o.lengths;
    if (lengths.empty()) fail(ErrorKind::kInvalidArgument, "-n {}: no prompt fits the model's context of {}", o.n_decode, n_ctx_train);
    for (int l : lengths) {
      if (l < 1 || l + o.n_decode + 2 > n_ctx_train) {
        fail(ErrorKind::kInvalidArgument, "--lengths: {} + {} decoded tokens does not fit the model's context of {}", l,
             o.n_decode, n_ctx_train);
      }
    }
    const std::string data = resolve_data_dir(o.data);
    std::string text;
    for (int l : lengths) text += fmt::format("{} {}\n", l, fmt::join(essay_tokens(data, model.tokenizer(), l), " "));
    return text;
  }));
  Prompts p;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    int length = 0;
    fields >> length;
    std::vector<int32_t>& ids = p.ids[length];
    for (int32_t id; fields >> id;) ids.push_back(id);
    if (static_cast<int>(ids.size()) != length) fail(ErrorKind::kInternal, "bench: unreadable prompt of {} tokens", length);
    p.lengths.push_back(length);
  }
  return p;
}

std::string mib(double bytes) { return std::isfinite(bytes) ? fmt::format("{:.1f}", bytes / (1 << 20)) : "-"; }

// snapkv against llama-bench: our contenders at batch 1 on the essays' first tokens (llama-bench
// prefills random tokens; the speed of either does not depend on which tokens they are). Each of
// our processes prefills the prompt once untimed before the timed prefill, as llama-bench runs a
// warm-up prompt before its timed one (neither with --no-warmup).
int bench_decode_versus_llama_bench(DecodeBenchOptions o) {
  check_llama_bench(o.llama_bench);
  o.batches = {1};
  o.warm_prefill = !o.no_warmup;
  if (o.lengths.empty()) o.lengths = {512};
  const Prompts prompts = read_prompts(o);
  PeerBenchOptions p;
  p.llama_bench = o.llama_bench, p.model = o.model, p.lengths = prompts.lengths, p.capacities = o.capacities;
  p.n_decode = o.n_decode, p.reps = o.reps, p.threads = o.threads;
  p.fa_prefill = o.llama_fa_prefill, p.fa_decode = o.llama_fa_decode, p.warmup = !o.no_warmup;
  p.decode_activations = o.model_flags.decode_activations, p.out = o.out;
  for (int c : o.capacities) {
    PressConfig press;
    press.press = "snapkv", press.capacity = c;
    if (const std::string e = press.validate(); !e.empty()) fail(ErrorKind::kInvalidArgument, "--capacities: {}", e);
  }
  return bench_versus_llama_bench(p, [&](int length, int capacity) {
    const Contender c{"", capacity, false};
    const Sample s = measure(o, c, prompts.ids.at(length), "");
    return OurRun{s.prefill_s, s.step_ms.front(), s.kv_bytes};
  });
}

int bench_decode(const DecodeBenchOptions& o) {
  if (o.reps < 1 || o.n_decode < 1 || o.threads < 1) fail(ErrorKind::kInvalidArgument, "--reps, -n and -t must be >= 1");
  if (!o.llama_bench.empty()) return bench_decode_versus_llama_bench(o);
  if (o.batches.empty()) fail(ErrorKind::kInvalidArgument, "--batches must not be empty");
  for (int b : o.batches) {
    if (b < 1) fail(ErrorKind::kInvalidArgument, "--batches: {} is not a batch size", b);
  }
  std::vector<Contender> contenders = {{"full", 0, false}};
  for (int c : o.capacities) {
    PressConfig p;
    p.press = "snapkv", p.capacity = c;
    if (const std::string e = p.validate(); !e.empty()) fail(ErrorKind::kInvalidArgument, "--capacities: {}", e);
    contenders.push_back({fmt::format("snapkv C={}", c), c, false});
  }
  if (!o.llama_python.empty()) {
    if (!fs::exists(o.llama_script)) fail(ErrorKind::kInvalidArgument, "{}: no such file (--llama-script)", o.llama_script);
    contenders.push_back({"llama.cpp", 0, true});
  }
  const Prompts prompts = read_prompts(o);
  const std::vector<int>& lengths = prompts.lengths;
  if (!o.out.empty()) fs::create_directories(o.out);
  double load[1] = {0};
  getloadavg(load, 1);
  std::string head = fmt::format(
      "# bench decode: {}, prompts of {} tokens, {} threads, {} decoded steps per batch size, medians of {}, our decode "
      "activations {} (load average at start {:.2f})\n\n",
      o.model, fmt::join(lengths, ", "), o.threads, o.n_decode, o.reps, o.model_flags.decode_activations, load[0]);
  fmt::print("{}", head);

  const fs::path tokens_file = fs::temp_directory_path() / fmt::format("snapkv_bench_tokens_{}.txt", getpid());
  std::map<std::pair<int, size_t>, Sample> med;  // (length, contender) -> medians
  nlohmann::json raw = nlohmann::json::array();
  for (int length : lengths) {
    const std::vector<int32_t>& ids = prompts.ids.at(length);
    write_text_file(tokens_file, fmt::format("{}\n", fmt::join(ids, " ")));
    std::vector<std::vector<Sample>> samples(contenders.size());
    for (int rep = 0; rep < o.reps; ++rep) {
      for (size_t k = 0; k < contenders.size(); ++k) {
        const size_t ci = (k + static_cast<size_t>(rep)) % contenders.size();  // rotate the order
        const Sample s = measure(o, contenders[ci], ids, tokens_file);
        samples[ci].push_back(s);
        fmt::print(stderr, "L={} rep {}/{} {}: prefill {:.2f} s, ms/step {:.2f}\n", length, rep + 1, o.reps,
                   contenders[ci].name, s.prefill_s, fmt::join(s.step_ms, " "));
        nlohmann::json m = {{"length", length},       {"contender", contenders[ci].name}, {"rep", rep},
                            {"prefill_s", s.prefill_s}, {"peak_rss", s.peak_rss}};
        if (std::isfinite(s.kv_bytes)) m["kv_bytes"] = s.kv_bytes;
        for (size_t i = 0; i < o.batches.size(); ++i) m["step_ms"][std::to_string(o.batches[i])] = s.step_ms[i];
        raw.push_back(m);
      }
    }
    for (size_t ci = 0; ci < contenders.size(); ++ci) med[{length, ci}] = median_of(samples[ci]);
  }
  fs::remove(tokens_file);

  std::string md = "### Decode: ms per step (one token for each of the B sequences)\n\n| prompt |";
  std::string rule = "|---:|";
  for (int b : o.batches) {
    for (const Contender& c : contenders) md += fmt::format(" B={} {} |", b, c.name), rule += "---:|";
  }
  md += "\n" + rule + "\n";
  for (int length : lengths) {
    md += fmt::format("| {} |", length);
    for (size_t bi = 0; bi < o.batches.size(); ++bi) {
      for (size_t ci = 0; ci < contenders.size(); ++ci) md += fmt::format(" {:.2f} |", med[{length, ci}].step_ms[bi]);
    }
    md += "\n";
  }
  md += "\n### Prefill (s) and peak RSS after it (MiB); KV cache (MiB) when decoding starts\n\n| prompt | contender | "
        "prefill s | prefill tok/s | peak RSS | KV cache |\n|---:|---|---:|---:|---:|---:|\n";
  for (int length : lengths) {
    for (size_t ci = 0; ci < contenders.size(); ++ci) {
      const Sample& s = med[{length, ci}];
      md += fmt::format("| {} | {} | {:.2f} | {:.0f} | {} | {} |\n", length, contenders[ci].name, s.prefill_s,
                        length / s.prefill_s, mib(s.peak_rss), mib(s.kv_bytes));
    }
  }
  if (contenders.back().llama) {
    const size_t li = contenders.size() - 1;
    md += "\n### Speed-up over llama.cpp (its time / ours; llama.cpp always with its full cache)\n\n| prompt | contender | prefill |";
    std::string ratio_rule = "|---:|---|---:|";
    for (int b : o.batches) md += fmt::format(" decode B={} |", b), ratio_rule += "---:|";
    md += "\n" + ratio_rule + "\n";
    for (int length : lengths) {
      const Sample& l = med[{length, li}];
      for (size_t ci = 0; ci < li; ++ci) {
        const Sample& s = med[{length, ci}];
        md += fmt::format("| {} | {} | {:.2f}x |", length, contenders[ci].name, l.prefill_s / s.prefill_s);
        for (size_t bi = 0; bi < o.batches.size(); ++bi) md += fmt::format(" {:.2f}x |", l.step_ms[bi] / s.step_ms[bi]);
        md += "\n";
      }
    }
  }
  fmt::print("{}", md);
  if (o.out.empty()) return 0;

  std::vector<std::string> x;
  for (int length : lengths) x.push_back(std::to_string(length));
  const auto chart = [&](const std::string& name, const std::string& title, const std::string& y_label, auto value) {
    std::vector<ChartSeries> series;
    for (size_t ci = 0; ci < contenders.size(); ++ci) {
      ChartSeries s{contenders[ci].name, {}, contenders[ci].llama};
      for (int length : lengths) s.y.push_back(value(med[{length, ci}]));
      series.push_back(std::move(s));
    }
    write_text_file(fs::path(o.out) / name, line_chart_svg(title, "prompt length (tokens)", y_label, x, series));
  };
  const std::string model = fs::path(o.model).filename().string();
  for (size_t bi = 0; bi < o.batches.size(); ++bi) {
    chart(fmt::format("decode_b{}.svg", o.batches[bi]),
          fmt::format("Decode, batch {}: ms per step ({}, {} threads)", o.batches[bi], model, o.threads), "ms per step",
          [&](const Sample& s) { return s.step_ms[bi]; });
  }
  chart("prefill.svg", fmt::format("Prefill time ({}, {} threads)", model, o.threads), "seconds",
        [](const Sample& s) { return s.prefill_s; });
  chart("memory.svg", fmt::format("Peak RSS after prefill ({})", model), "MiB",
        [](const Sample& s) { return s.peak_rss / (1 << 20); });
  write_text_file(fs::path(o.out) / "bench_decode.md", head + md);
  write_text_file(fs::path(o.out) / "bench_decode.json",
                  nlohmann::json{{"model", o.model}, {"threads", o.threads}, {"decode_activations", o.model_flags.decode_activations}, {"n_decode", o.n_decode},
                                 {"batches", o.batches}, {"load_average", load[0]}, {"runs", raw}}
                          .dump(1) +
                      "\n");
  fmt::print(stderr, "wrote {}/bench_decode.md, .json, decode_b*.svg, prefill.svg, memory.svg\n", o.out);
  return 0;
}

}  // namespace

Action add_bench_decode(CLI::App& app) {
  auto o = std::make_shared<DecodeBenchOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  app.add_option("--data", o->data, data_flag_help());
  app.add_option("--lengths", o->lengths,
                 fmt::format("prompt lengths in tokens (default: {} where they fit, and the longest the model's "
                             "context holds with the decoded steps, a multiple of 64)",
                             fmt::join(kFigureLengths, ", ")))
      ->delimiter(',');
  CLI::Option* batches = app.add_option("--batches", o->batches, "batch sizes")->delimiter(',')->capture_default_str();
  app.add_option("--capacities", o->capacities, "SnapKV capacities C (one contender each)")->delimiter(',')->capture_default_str();
  app.add_option("-n,--n-decode", o->n_decode, "decode steps per batch size")->capture_default_str();
  app.add_option("--reps", o->reps, "measurements per contender and length (median reported)")->capture_default_str();
  app.add_option("-t,--threads", o->threads, "threads, for every contender")->capture_default_str();
  CLI::Option* llama_python = app.add_option("--llama-python", o->llama_python,
                 "Python with llama-cpp-python (e.g. tools/reference/.venv/bin/python): adds llama.cpp as a contender");
  app.add_option("--llama-script", o->llama_script, "the llama.cpp measurement script")->capture_default_str();
  CLI::Option* llama_bench = app.add_option("--llama-bench", o->llama_bench,
                 "llama.cpp's llama-bench binary (scripts/build_llamacpp.sh): compare with it instead, at batch 1, "
                 "prefill of each prompt length (default 512) and decode after it; SnapKV contenders only for "
                 "capacities below the prompt; writes bench_llamacpp.md/.json")
      ->excludes(llama_python)
      ->excludes(batches);
  const CLI::Validator fa_values(
      [](const std::string& v) { return v == "0" || v == "1" || v == "0,1" ? std::string() : "must be 0, 1 or 0,1"; },
      "0|1|0,1");
  app.add_option("--llama-fa-prefill", o->llama_fa_prefill,
                 "with --llama-bench: its flash attention setting(s) for the prefill (0, 1, or 0,1: the better)")
      ->check(fa_values)
      ->needs(llama_bench)
      ->capture_default_str();
  app.add_option("--llama-fa-decode", o->llama_fa_decode, "with --llama-bench: the same for the decode")
      ->check(fa_values)
      ->needs(llama_bench)
      ->capture_default_str();
  app.add_flag("--no-warmup", o->no_warmup,
               "with --llama-bench: neither engine prefills the prompt untimed before the timed prefill (long prompts)")
      ->needs(llama_bench);
  app.add_option("--out", o->out, "directory for bench_decode.md/.json and SVG plots");
  add_model_flags(app, o->model_flags);
  return [o] { return bench_decode(*o); };
}

}  // namespace snapkv::cli
