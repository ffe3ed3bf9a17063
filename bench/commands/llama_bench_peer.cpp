#include "llama_bench_peer.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "cli_error.h"
#include "io/gguf.h"
#include "probes/peak.h"
#include "text_file.h"
#include "util/aligned_vector.h"
#include "util/thread_pool.h"

namespace snapkv::cli {
namespace {

namespace fs = std::filesystem;

// What llama-bench measured in one repetition: tokens/s of the prefill and of the decode, the
// better of flash attention off and on, and which one that was.
struct PeerRun {
  double prefill_tps = 0, decode_tps = 0;
  int prefill_fa = -1, decode_fa = -1;
};

struct Stats {
  double med = 0, lo = 0, hi = 0;
};

Stats stats(const std::vector<double>& v) {
  return {median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// "median (min–max)", the median followed by unit.
std::string fmt_stats(const Stats& s, int digits, const char* unit = "") {
  return fmt::format("{:.{}f}{} ({:.{}f}–{:.{}f})", s.med, digits, unit, s.lo, digits, s.hi, digits);
}

// The last lines of a log file on one line, for an error message.
std::string log_tail(const fs::path& log, size_t lines) {
  std::ifstream in(log);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) all.push_back(line);
  }
  const size_t from = all.size() > lines ? all.size() - lines : 0;
  std::string out;
  for (size_t i = from; i < all.size(); ++i) out += (i > from ? " / " : "") + all[i];
  return out.empty() ? "(nothing)" : out;
}

// One llama-bench invocation with flash attention settings `fa` ("0", "1" or "0,1"); returns
// (best tokens/s, its flash_attn) and llama-bench's build commit. Its log (stderr) goes to `log`, shown on failure.
struct PeerResult {
  double tps = 0;
  int fa = -1;
  std::string build_commit, cpu_info;
};

PeerResult run_llama_bench(const PeerBenchOptions& o, const std::string& test_args, const std::string& fa,
                           const fs::path& log) {
  const std::string cmd =
      fmt::format("{} -m {} -t {} {} -r 1 -fa {}{} -o json 2>{}", shell_quote(o.llama_bench), shell_quote(o.model),
                  o.threads, test_args, fa, o.warmup ? "" : " --no-warmup", shell_quote(log.string()));
  // An error shows the log's tail and leaves no log behind.
  const auto failed = [&](const std::string& what) {
    const std::string tail = log_tail(log, 3);
    fs::remove(log);
    fail(ErrorKind::kInternal, "llama-bench {} ({}); its last output: {}", what, cmd, tail);
  };
  std::string out;
  try {
    out = run_command(cmd);
  } catch (const std::exception&) {
    failed("failed");
  }
  const auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty()) failed("printed no JSON results");
  PeerResult r;
  for (const auto& t : j) {
    const double tps = t.value("avg_ts", 0.0);
    if (tps > r.tps) r.tps = tps, r.fa = t.value("flash_attn", -1);
    r.build_commit = t.value("build_commit", "");
    r.cpu_info = t.value("cpu_info", "");
  }
  if (!(r.tps > 0)) failed("reported no speed: " + out);
  return r;
}

// decode_weight_bytes of the model file, read in a child process (the measurements fork from this
// one, which therefore maps no model).
double model_decode_weight_bytes(const std::string& model) {
  return std::stod(run_in_child([&] {
    return fmt::format("{}", decode_weight_bytes(*GgufFile::open(model, GgufFile::Memory::kMapped)));
  }));
}

// The memory read bandwidth now (bytes/s): a 1 GiB buffer read by all threads, best of 3, in a
// child process so that this one starts no threads before the measurements fork.
double bandwidth_now(int threads) {
  return std::stod(run_in_child([&] {
    ThreadPool pool(threads);
    const AlignedVector<float> buffer(static_cast<size_t>(1) << 28);
    return fmt::format("{}", read_bandwidth(pool, buffer, 3));
  }));
}

struct Contender {
  std::string name;
  int capacity = 0;  // ours: SnapKV C, 0 = full cache
  bool peer = false;
};

}  // namespace

void check_llama_bench(const std::string& path) {
  if (fs::is_directory(path) || access(path.c_str(), X_OK) != 0) {
    fail(ErrorKind::kInvalidArgument, "--llama-bench {}: no such executable (scripts/build_llamacpp.sh builds it)", path);
  }
}

int bench_versus_llama_bench(const PeerBenchOptions& o, const MeasureOurs& measure_ours) {
  check_llama_bench(o.llama_bench);
  const double weight_bytes = model_decode_weight_bytes(o.model);
  if (!o.out.empty()) fs::create_directories(o.out);
  const fs::path log = fs::temp_directory_path() / fmt::format("snapkv_llama_bench_{}.log", getpid());
  double load[1] = {0};
  getloadavg(load, 1);
  std::string head = fmt::format(
      "# snapkv against llama-bench: {}, prompts of {} tokens, {} decode steps after them, {} threads, {} "
      "alternating repetitions, our decode activations {}, {} (load average at start {:.2f})\n\n",
      o.model, fmt::join(o.lengths, ", "), o.n_decode, o.threads, o.reps, o.decode_activations,
      o.warmup ? "each engine's timed prompt after an untimed one" : "no warm-up prompt", load[0]);
  fmt::print("{}", head);

  nlohmann::json runs = nlohmann::json::array();
  std::string build_commit, cpu_info;
  std::string md_speed =
      "| prompt | engine | prefill tok/s | decode tok/s | decode ms/token | bound ms/token | decode / bound |\n"
      "|---:|---|---:|---:|---:|---:|---:|\n";
  std::string md_ratio =
      "| prompt | ours | prefill, ours / llama.cpp | decode, ours / llama.cpp |\n|---:|---|---:|---:|\n";
  nlohmann::json summary = nlohmann::json::array();
  for (int length : o.lengths) {
    std::vector<Contender> contenders = {{"snapkv full", 0, false}};
    for (int c : o.capacities) {
      if (c < length) contenders.push_back({fmt::format("snapkv C={}", c), c, false});
    }
    contenders.push_back({"llama.cpp", 0, true});
    const size_t n = contenders.size();
    // per contender, per repetition
    std::vector<std::vector<double>> prefill(n), decode(n), bound_ms(n);
    for (int rep = 0; rep < o.reps; ++rep) {
      const double bw = bandwidth_now(o.threads);
      double full_kv = 0;  // llama.cpp's f16 cache holds what our full one holds
      std::vector<double> kv(n, 0);
      for (size_t k = 0; k < n; ++k) {
        const size_t ci = (k + static_cast<size_t>(rep)) % n;  // rotate the order
        const Contender& c = contenders[ci];
        nlohmann::json m = {{"length", length}, {"contender", c.name}, {"rep", rep}, {"bandwidth", bw}};
        if (c.peer) {
          const PeerResult p = run_llama_bench(o, fmt::format("-p {} -n 0", length), o.fa_prefill, log);
          const PeerResult d = run_llama_bench(o, fmt::format("-p 0 -n {} -d {}", o.n_decode, length), o.fa_decode, log);
          build_commit = p.build_commit, cpu_info = p.cpu_info;
          prefill[ci].push_back(p.tps);
          decode[ci].push_back(d.tps);
          m.update({{"prefill_tps", p.tps}, {"prefill_flash_attn", p.fa}, {"decode_tps", d.tps}, {"decode_flash_attn", d.fa}});
        } else {
          const OurRun r = measure_ours(length, c.capacity);
          prefill[ci].push_back(length / r.prefill_s);
          decode[ci].push_back(1e3 / r.decode_ms);
          kv[ci] = r.kv_bytes;
          if (c.capacity == 0) full_kv = r.kv_bytes;
          m.update({{"prefill_tps", length / r.prefill_s}, {"decode_tps", 1e3 / r.decode_ms}, {"kv_bytes", r.kv_bytes}});
        }
        fmt::print(stderr, "P={} rep {}/{} {}: prefill {:.1f} tok/s, decode {:.2f} tok/s\n", length, rep + 1, o.reps,
                   c.name, prefill[ci].back(), decode[ci].back());
        runs.push_back(m);
      }
      for (size_t ci = 0; ci < n; ++ci) {
        const double kv_read = contenders[ci].peer ? full_kv : kv[ci];
        bound_ms[ci].push_back((weight_bytes + kv_read) / bw * 1e3);
      }
    }
    const size_t li = n - 1;
    for (size_t ci = 0; ci < n; ++ci) {
      std::vector<double> ms, rel;
      for (size_t r = 0; r < decode[ci].size(); ++r) {
        ms.push_back(1e3 / decode[ci][r]);
        rel.push_back(ms.back() / bound_ms[ci][r]);
      }
      md_speed += fmt::format("| {} | {} | {} | {} | {:.2f} | {:.2f} | {:.2f} |\n", length, contenders[ci].name,
                              fmt_stats(stats(prefill[ci]), 1), fmt_stats(stats(decode[ci]), 2), median(ms),
                              median(bound_ms[ci]), median(rel));
      nlohmann::json s = {{"length", length},
                          {"contender", contenders[ci].name},
                          {"prefill_tps", {{"median", median(prefill[ci])}, {"min", stats(prefill[ci]).lo}, {"max", stats(prefill[ci]).hi}}},
                          {"decode_tps", {{"median", median(decode[ci])}, {"min", stats(decode[ci]).lo}, {"max", stats(decode[ci]).hi}}},
                          {"decode_ms", median(ms)},
                          {"bound_ms", median(bound_ms[ci])},
                          {"decode_over_bound", median(rel)}};
      if (ci != li) {
        // each repetition's pair: our run and llama.cpp's of the same repetition
        std::vector<double> rp, rd;
        for (size_t r = 0; r < prefill[ci].size(); ++r) {
          rp.push_back(prefill[ci][r] / prefill[li][r]);
          rd.push_back(decode[ci][r] / decode[li][r]);
        }
        md_ratio += fmt::format("| {} | {} | {} | {} |\n", length, contenders[ci].name, fmt_stats(stats(rp), 2, "×"),
                                fmt_stats(stats(rd), 2, "×"));
        s["prefill_ratio"] = {{"median", median(rp)}, {"min", stats(rp).lo}, {"max", stats(rp).hi}};
        s["decode_ratio"] = {{"median", median(rd)}, {"min", stats(rd).lo}, {"max", stats(rd).hi}};
      }
      summary.push_back(s);
    }
  }
  fs::remove(log);

  const std::string md = fmt::format(
      "llama.cpp: llama-bench {} (build {}), flash attention (`-fa`) {} for prefill and {} for decode, the better "
      "where both; CPU: {}.\n"
      "Medians (min–max) over the repetitions. Bound: (weight bytes read per decode step, {:.1f} MB, + KV bytes) "
      "/ the read bandwidth measured before each repetition.\n\n### Speed\n\n{}\n### Ours / llama.cpp (speed "
      "ratios of the runs of one repetition; above 1: snapkv faster)\n\n{}",
      o.llama_bench, build_commit, o.fa_prefill, o.fa_decode, cpu_info, weight_bytes / 1e6, md_speed, md_ratio);
  fmt::print("{}", md);
  if (o.out.empty()) return 0;
  write_text_file(fs::path(o.out) / "bench_llamacpp.md", head + md);
  write_text_file(fs::path(o.out) / "bench_llamacpp.json",
                  nlohmann::json{{"model", o.model},
                                 {"threads", o.threads},
                                 {"n_decode", o.n_decode},
                                 {"reps", o.reps},
                                 {"llama_fa_prefill", o.fa_prefill},
                                 {"llama_fa_decode", o.fa_decode},
                                 {"warmup", o.warmup},
                                 {"decode_activations", o.decode_activations},
                                 {"llama_bench", o.llama_bench},
                                 {"llama_build_commit", build_commit},
                                 {"cpu_info", cpu_info},
                                 {"decode_weight_bytes", weight_bytes},
                                 {"load_average", load[0]},
                                 {"summary", summary},
                                 {"runs", runs}}
                          .dump(1) +
                      "\n");
  fmt::print(stderr, "wrote {}/bench_llamacpp.md, .json\n", o.out);
  return 0;
}

}  // namespace snapkv::cli
