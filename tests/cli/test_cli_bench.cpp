// snapkv bench roofline, decode and phase through the real binary, at toy sizes: roofline runs
// every row (decode also against the bandwidth read around its runs, and token-paired with the
// other activations) and counts the weights a decode step reads as the model file holds them;
// decode measures every contender at every length and batch size and writes its tables and
// plots, and against llama-bench (a stand-in script here) alternates with it and reports both
// engines, their ratio and the bandwidth bound; phase prints the bandwidth, round trip and 8-bit matvec rate of the moment; all refuse
// bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "ops/matvec_q8.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

const std::string kToy = "--reps 1 -n 2 --chunk 8 --prefill 32 --long 64 --bandwidth-mib 64";

TEST(CliBench, RooflinePrintsEveryPhaseAgainstItsBound) {
  const std::string model = test::default_model_path();
  const test::CliRun r =
      test::run_cli(fmt::format("bench roofline -m {} --data {} -t 2 {} --decode-activations f32 --versus-activations q16", model, test::data_dir(), kToy),
                    300);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* row : {"| prefill 32 tokens |", "| decode after 16 tokens |", "| decode after 64 tokens, full cache |",
                          "| decode after 64 tokens, snapkv", "memory read bandwidth"}) {
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  }
  // Every SIMD target row reports a positive peak and matmul rate.
  const std::regex target_row(R"(\| (\w+) \| ([0-9.]+) \| ([0-9.]+) \| \d+% \|)");
  int targets = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), target_row), end; it != end; ++it, ++targets) {
    EXPECT_GT(std::stod((*it)[2]), 0) << (*it)[0];
    EXPECT_GT(std::stod((*it)[3]), 0) << (*it)[0];
  }
  EXPECT_GE(targets, 1) << r.out;
  // The weights a decode step reads: every tensor of this tied-embedding model, i.e. the file
  // less its header (metadata and vocabulary, a few MB).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\(([0-9.]+) MB weights \+ ([0-9.]+) MB KV\))"))) << r.out;
  const double file_mb = static_cast<double>(std::filesystem::file_size(model)) / 1e6;
  EXPECT_LE(std::stod(m[1]), file_mb);
  EXPECT_GT(std::stod(m[1]), 0.9 * file_mb);
  // The token-paired table: every decode row, its f32 time the one in the table above, and the
  // ratio of the two times.
  EXPECT_NE(r.out.find("| decode, token-paired | f32 ms/token | q16 ms/token | f32 / q16 |"), std::string::npos) << r.out;
  const std::regex paired_row(R"(\| (decode after [^|]+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|)");
  int paired = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), paired_row), end; it != end; ++it, ++paired) {
    const std::string& f32 = (*it)[2];
    EXPECT_NE(r.out.find(fmt::format("| {} | {} ms/token |", (*it)[1].str(), f32)), std::string::npos) << (*it)[0];
    EXPECT_GT(std::stod((*it)[3]), 0) << (*it)[0];
    EXPECT_NEAR(std::stod((*it)[4]), std::stod(f32) / std::stod((*it)[3]), 0.01 * std::stod((*it)[4])) << (*it)[0];
  }
  EXPECT_EQ(paired, 3) << r.out;
  // Each decode row again, against the bandwidth read alongside its runs: the same ms per token,
  // a positive bandwidth, with one run the ratio is that time over that bound, and the threads'
  // round trip measured alongside (as with the ceilings).
  EXPECT_NE(r.out.find("| decode, bound from the bandwidth read around each run |"), std::string::npos) << r.out;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(hand a cache line to each other and back in (\d+) ns)"))) << r.out;
  EXPECT_GT(std::stod(m[1]), 0);
  const std::regex during_row(
      R"(\| (decode after [^|]+) \| ([0-9.]+) ms/token \| ([0-9.]+) GB/s \| ([0-9.]+) ms \| ([0-9.]+) \| (\d+) ns \|)");
  int during = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), during_row), end; it != end; ++it, ++during) {
    EXPECT_NE(r.out.find(fmt::format("| {} | {} ms/token |", (*it)[1].str(), (*it)[2].str())), std::string::npos)
        << (*it)[0];
    EXPECT_GT(std::stod((*it)[3]), 0) << (*it)[0];
    EXPECT_NEAR(std::stod((*it)[5]), std::stod((*it)[2]) / std::stod((*it)[4]), 0.02 * std::stod((*it)[5])) << (*it)[0];
    EXPECT_GT(std::stod((*it)[6]), 0) << (*it)[0];
  }
  EXPECT_EQ(during, 3) << r.out;
}

TEST(CliBench, RooflineRefusesBadParameters) {
  test::expect_cli_error("bench roofline --reps 0", "--reps");
  test::expect_cli_error(fmt::format("bench roofline -m {} --kv-press full", test::default_model_path()),
                         "compressing press");
  test::expect_cli_error("bench roofline --bandwidth-mib 1", "--bandwidth-mib");
  test::expect_cli_error("bench roofline --versus-activations q4", "--versus-activations");
}

// bench phase: one line with a positive bandwidth, with 2 threads a positive round trip (with one
// thread there is no other thread to hand a line to: "-"), and a positive matvec rate where the
// CPU has a SIMD 8-bit kernel ("-" where not); bad parameters are refused.
TEST(CliBench, PhasePrintsBandwidthRoundTripAndMatvec) {
  const bool q8_simd = q8_best_kernel() != Q8Kernel::kScalar;
  const test::CliRun two = test::run_cli("bench phase -t 2 --bandwidth-mib 64", 60);
  ASSERT_EQ(two.status, 0) << two.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      two.out, m, std::regex(R"(^bandwidth ([0-9.]+) GB/s \| round trip (\d+) ns \| Q4_1 q8 matvec (([0-9.]+) GB/s|-)\n$)")))
      << two.out;
  EXPECT_GT(std::stod(m[1]), 0);
  EXPECT_GT(std::stod(m[2]), 0);
  ASSERT_EQ(m[4].matched, q8_simd) << two.out;  // a SIMD kernel to time, or "-"
  if (q8_simd) {
    EXPECT_GT(std::stod(m[4]), 0);
  }
  const test::CliRun one = test::run_cli("bench phase -t 1 --bandwidth-mib 64", 60);
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_TRUE(std::regex_search(one.out, std::regex(R"(^bandwidth [0-9.]+ GB/s \| round trip - \| Q4_1 q8 matvec ([0-9.]+ GB/s|-)\n$)")))
      << one.out;
  test::expect_cli_error("bench phase --bandwidth-mib 1", "--bandwidth-mib");
  test::expect_cli_error("bench phase -t 0", "-t");
}

TEST(CliBench, DecodeMeasuresEveryContenderAndWritesPlots) {
  const test::TempDir tmp("bench_decode");
  const std::filesystem::path& out = tmp.path;
  const test::CliRun r = test::run_cli(
      fmt::format("bench decode -m {} --data {} -t 2 --lengths 128,256 --batches 1,3 --capacities 64 -n 2 --reps 1 --out {}",
                  test::default_model_path(), test::data_dir(), out.string()),
      300);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| prompt | B=1 full | B=1 snapkv C=64 | B=3 full | B=3 snapkv C=64 |"), std::string::npos)
      << r.out;
  const auto j = nlohmann::json::parse(test::slurp(out / "bench_decode.json"));
  ASSERT_EQ(j["runs"].size(), 4u);  // 2 lengths x 2 contenders x 1 rep
  for (const auto& run : j["runs"]) {
    EXPECT_GT(run["prefill_s"].get<double>(), 0) << run;
    EXPECT_GT(run["step_ms"]["1"].get<double>(), 0) << run;
    EXPECT_GT(run["step_ms"]["3"].get<double>(), 0) << run;
    // C = 64 entries per KV head of a 256-token prompt: a quarter of the full cache.
    if (run["length"] == 256) {
      const double full_bytes = 256.0 / 128 * j["runs"][0]["kv_bytes"].get<double>();
      EXPECT_NEAR(run["kv_bytes"].get<double>() / full_bytes, run["contender"] == "full" ? 1.0 : 0.25, 1e-9) << run;
    }
  }
  for (const char* svg : {"decode_b1.svg", "decode_b3.svg", "prefill.svg", "memory.svg"}) {
    const std::string text = test::slurp(out / svg);
    EXPECT_NE(text.find("snapkv C=64</text>"), std::string::npos) << svg;
    EXPECT_NE(text.find("<polyline"), std::string::npos) << svg;
  }
}

// A stand-in for llama.cpp's llama-bench: logs its arguments, prints results of the JSON shape
// llama-bench -o json prints for the flash attention settings asked for (`-fa 0,1`, `-fa 1` or
// `-fa 0`), faster with it on; `fail` in its path makes it fail.
std::filesystem::path fake_llama_bench(const std::filesystem::path& dir, bool fail) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path bin = dir / (fail ? "fail-llama-bench" : "llama-bench");
  const std::string off = R"({\"build_commit\": \"fake123\", \"cpu_info\": \"test cpu\", \"flash_attn\": 0, \"avg_ts\": 100.0})";
  const std::string on = R"({\"build_commit\": \"fake123\", \"cpu_info\": \"test cpu\", \"flash_attn\": 1, \"avg_ts\": 200.0})";
  std::ofstream(bin) << "#!/bin/sh\necho \"$@\" >>" << (dir / "args.txt").string() << "\n"
                     << (fail ? "echo 'error: failed to load model' >&2; exit 1\n" : "")
                     << "case \" $* \" in\n"
                     << "  *' -fa 0,1 '*) echo \"[" << off << ", " << on << "]\" ;;\n"
                     << "  *' -fa 1 '*) echo \"[" << on << "]\" ;;\n"
                     << "  *) echo \"[" << off << "]\" ;;\n"
                     << "esac\n";
  std::filesystem::permissions(bin, std::filesystem::perms::owner_all);
  return bin;
}

TEST(CliBench, DecodeAlternatesWithLlamaBench) {
  const test::TempDir tmp("bench_llama_bench");
  const std::filesystem::path& dir = tmp.path;
  const std::filesystem::path bin = fake_llama_bench(dir, false);
  const test::CliRun r = test::run_cli(
      fmt::format("bench decode -m {} --data {} -t 2 --llama-bench {} --lengths 128 --capacities 64,1024 -n 2 --reps 2 "
                  "--out {}",
                  test::default_model_path(), test::data_dir(), bin.string(), (dir / "out").string()),
      300);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| 128 | snapkv C=64 |"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("C=1024"), std::string::npos) << "no SnapKV contender at C >= the prompt\n" << r.out;
  // Each repetition runs llama-bench twice: the prefill, then decode at the prompt's depth.
  const std::string args = test::slurp(dir / "args.txt");
  EXPECT_EQ(std::count(args.begin(), args.end(), '\n'), 4) << args;
  EXPECT_NE(args.find("-t 2 -p 128 -n 0 -r 1 -fa 0,1 -o json"), std::string::npos) << args;
  EXPECT_NE(args.find("-t 2 -p 0 -n 2 -d 128 -r 1 -fa 0,1 -o json"), std::string::npos) << args;

  const auto j = nlohmann::json::parse(test::slurp(dir / "out" / "bench_llamacpp.json"));
  EXPECT_EQ(j["llama_build_commit"], "fake123");
  EXPECT_GT(j["decode_weight_bytes"].get<double>(), 0);
  ASSERT_EQ(j["runs"].size(), 6u);  // 3 contenders x 2 reps
  ASSERT_EQ(j["summary"].size(), 3u);
  for (const auto& s : j["summary"]) {
    EXPECT_GT(s["bound_ms"].get<double>(), 0) << s;
    if (s["contender"] == "llama.cpp") {
      // the better of flash attention off (100 tokens/s) and on (200)
      EXPECT_EQ(s["prefill_tps"]["median"].get<double>(), 200) << s;
      EXPECT_EQ(s["decode_tps"]["max"].get<double>(), 200) << s;
      EXPECT_FALSE(s.contains("decode_ratio"));
    } else {
      const double ours = s["decode_tps"]["median"].get<double>();
      EXPECT_GT(ours, 0) << s;
      EXPECT_GE(s["decode_ratio"]["max"].get<double>(), s["decode_ratio"]["min"].get<double>()) << s;
      EXPECT_GT(s["prefill_ratio"]["median"].get<double>(), 0) << s;
    }
  }
  for (const auto& run : j["runs"]) {
    if (run["contender"] == "llama.cpp") {
      EXPECT_EQ(run["decode_flash_attn"], 1) << run;
    }
  }
  EXPECT_NE(test::slurp(dir / "out" / "bench_llamacpp.md").find("Ours / llama.cpp"), std::string::npos);

  // A failing llama-bench: its own last words in the error, and its log not left behind.
  const auto started = std::filesystem::file_time_type::clock::now();
  test::expect_cli_error(fmt::format("bench decode -m {} --data {} --llama-bench {} --lengths 64 -n 1 --reps 1",
                                     test::default_model_path(), test::data_dir(), fake_llama_bench(dir, true).string()),
                         "failed to load model");
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    const bool log = e.path().filename().string().starts_with("snapkv_llama_bench_");
    EXPECT_FALSE(log && e.last_write_time() >= started) << e.path();
  }

  // One flash attention setting per measurement, and no warm-up prompt on either side.
  std::filesystem::remove(dir / "args.txt");
  const test::CliRun one = test::run_cli(
      fmt::format("bench decode -m {} --data {} -t 2 --llama-bench {} --lengths 64 --capacities 48 -n 2 --reps 1 "
                  "--llama-fa-prefill 1 --llama-fa-decode 0 --no-warmup --out {}",
                  test::default_model_path(), test::data_dir(), bin.string(), (dir / "one").string()),
      300);
  ASSERT_EQ(one.status, 0) << one.err;
  const std::string one_args = test::slurp(dir / "args.txt");
  EXPECT_NE(one_args.find("-p 64 -n 0 -r 1 -fa 1 --no-warmup -o json"), std::string::npos) << one_args;
  EXPECT_NE(one_args.find("-p 0 -n 2 -d 64 -r 1 -fa 0 --no-warmup -o json"), std::string::npos) << one_args;
  const auto jo = nlohmann::json::parse(test::slurp(dir / "one" / "bench_llamacpp.json"));
  EXPECT_EQ(jo["warmup"], false);
  for (const auto& run : jo["runs"]) {
    if (run["contender"] == "llama.cpp") {
      EXPECT_EQ(run["prefill_flash_attn"], 1) << run;
      EXPECT_EQ(run["decode_flash_attn"], 0) << run;
      EXPECT_EQ(run["decode_tps"], 100.0) << run;
    }
  }
  test::expect_cli_error(fmt::format("bench decode --llama-bench {} --llama-fa-decode 2", bin.string()),
                         "--llama-fa-decode");
  test::expect_cli_error("bench decode --no-warmup", "--llama-bench");  // does nothing without it
}

TEST(CliBench, DecodeRefusesBadParameters) {
  const std::string m = "-m " + test::default_model_path();
  test::expect_cli_error("bench decode " + m + " --lengths 9000", "context");
  test::expect_cli_error("bench decode " + m + " -n 9000", "no prompt fits");
  test::expect_cli_error("bench decode --batches 0", "--batches");
  test::expect_cli_error("bench decode --capacities 8", "--capacities");
  test::expect_cli_error("bench decode --llama-python python3 --llama-script /nonexistent.py", "--llama-script");
  test::expect_cli_error("bench decode --llama-bench /nonexistent/llama-bench", "no such executable");
  test::expect_cli_error("bench decode --llama-bench /bin/true --batches 2", "--batches");
  test::expect_cli_error("bench decode --llama-bench /bin/true --llama-python python3", "--llama-python");
}

}  // namespace
}  // namespace snapkv
