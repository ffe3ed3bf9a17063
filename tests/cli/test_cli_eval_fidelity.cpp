// snapkv eval fidelity through the real binary, small (one prompt of 600 tokens, 32 scored
// tokens), plus the metric itself against hand-computed values and the flag errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "eval/fidelity.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

TEST(FidelityMetrics, KlTop1AndNllMatchHandComputedValues) {
  // P = softmax(0, ln 2) = (1/3, 2/3); Q = softmax(0, 0) = (1/2, 1/2).
  const double ln2 = std::log(2.0);
  const double kl = (1.0 / 3) * std::log((1.0 / 3) / 0.5) + (2.0 / 3) * std::log((2.0 / 3) / 0.5);
  for (const float shift : {0.0f, 1000.0f, -3000.0f}) {  // large logits must not overflow exp
    const std::vector<float> ref = {shift, shift + static_cast<float>(ln2)}, test = {-shift, -shift};
    const LogitComparison c = compare_logits(ref, test, 0);
    EXPECT_NEAR(c.kl, kl, 1e-4) << shift;  // float logits: ln 2 is rounded to 24 bits (and less at 1000)
    EXPECT_FALSE(c.same_top1);             // argmax 1 vs 0 (the first of equal maxima)
    EXPECT_NEAR(c.nll_ref, std::log(3.0), 1e-3) << shift;
    EXPECT_NEAR(c.nll_test, ln2, 1e-9) << shift;
  }
  const std::vector<float> a = {1.0f, 5.0f, -2.0f, 5.0f};
  const LogitComparison same = compare_logits(a, a, 2);
  EXPECT_EQ(same.kl, 0.0);
  EXPECT_TRUE(same.same_top1);
  EXPECT_DOUBLE_EQ(same.nll_ref, same.nll_test);
  // KL is not symmetric, and the direction is KL(full || press).
  const std::vector<float> peaked = {0.0f, 4.0f}, flat = {0.0f, 0.0f};
  const double p1 = 1 / (1 + std::exp(-4.0)), p0 = 1 - p1;
  EXPECT_NEAR(compare_logits(peaked, flat, 0).kl, p0 * std::log(2 * p0) + p1 * std::log(2 * p1), 1e-9);
}

TEST(FidelityCli, SmallRunWritesOneLinePerCellAndSnapKvBehaves) {
  const test::TempDir tmp("fidelity");
  const fs::path& out = tmp.path;
  const test::CliRun r = test::run_cli(fmt::format("eval fidelity {} --lengths 600 --n-eval 32 --capacity 128,1024 "
                                    "--presses full,snapkv,random --out {}",
                                    test::eval_args(), out.string()));
  ASSERT_EQ(r.status, 0) << r.err;

  std::map<std::pair<std::string, int>, nlohmann::json> cell;
  std::istringstream lines(test::slurp(out / "fidelity.jsonl"));
  int n_lines = 0;
  for (std::string line; std::getline(lines, line); ++n_lines) {
    const nlohmann::json j = nlohmann::json::parse(line);
    for (const char* key : {"length", "press", "capacity", "n_eval", "top1", "kl_mean", "kl_max", "nll_full",
                            "nll_press", "nll_delta", "kept_bytes", "full_bytes", "kept_entries", "full_entries",
                            "seconds"}) {
      ASSERT_TRUE(j.contains(key)) << key << " missing in " << line;
    }
    EXPECT_EQ(j["length"], 600);
    EXPECT_EQ(j["n_eval"], 32);
    EXPECT_GE(j["kl_mean"].get<double>(), 0.0) << line;
    EXPECT_GE(j["kl_max"].get<double>(), j["kl_mean"].get<double>()) << line;
    EXPECT_GE(j["top1"].get<double>(), 0.0);
    EXPECT_LE(j["top1"].get<double>(), 1.0);
    EXPECT_NEAR(j["nll_delta"].get<double>(), j["nll_press"].get<double>() - j["nll_full"].get<double>(), 1e-12);
    EXPECT_GT(j["nll_full"].get<double>(), 0.5) << "real text is not that predictable";
    EXPECT_LE(j["kept_bytes"].get<size_t>(), j["full_bytes"].get<size_t>());
    const auto key = std::make_pair(j["press"].get<std::string>(), j["capacity"].get<int>());
    EXPECT_EQ(cell.count(key), 0u) << "duplicate cell " << line;
    cell[key] = j;
  }
  EXPECT_EQ(n_lines, 6);
  ASSERT_EQ(cell.size(), 6u);
  const auto at = [&](const char* press, int capacity) -> const nlohmann::json& { return cell[{press, capacity}]; };

  // The uncompressed cache reproduces the reference forward exactly.
  for (int c : {128, 1024}) {
    EXPECT_EQ(at("full", c)["kl_max"].get<double>(), 0.0);
    EXPECT_EQ(at("full", c)["top1"].get<double>(), 1.0);
  }
  // C = 1024 >= L = 600: the official rule keeps the prompt whole, so nothing may change.
  const nlohmann::json& whole = at("snapkv", 1024);
  EXPECT_EQ(whole["kept_bytes"], whole["full_bytes"]);
  EXPECT_EQ(whole["kl_max"].get<double>(), 0.0);
  EXPECT_EQ(whole["top1"].get<double>(), 1.0);
  EXPECT_EQ(whole["nll_delta"].get<double>(), 0.0);
  // C = 128: every KV head of every layer keeps exactly 128 of its 600 entries.
  for (const char* p : {"snapkv", "random"}) {
    const nlohmann::json& j = at(p, 128);
    EXPECT_EQ(j["kept_entries"].get<int64_t>() * 600, j["full_entries"].get<int64_t>() * 128) << p;
    EXPECT_NEAR(j["kept_bytes"].get<double>() / j["full_bytes"].get<double>(), 128.0 / 600, 1e-9) << p;
    EXPECT_GT(j["kl_mean"].get<double>(), 0.0) << p << ": dropping 79 % of the cache must change something";
  }
  // Attention-guided selection beats chance by a wide margin on real text.
  const nlohmann::json &snap = at("snapkv", 128), &rnd = at("random", 128);
  EXPECT_LT(snap["kl_mean"].get<double>(), rnd["kl_mean"].get<double>());
  EXPECT_GT(snap["top1"].get<double>(), rnd["top1"].get<double>());
  EXPECT_LT(snap["nll_delta"].get<double>(), rnd["nll_delta"].get<double>());

  // The table on stdout is the one written to fidelity.md, one row per L x press.
  EXPECT_EQ(r.out, test::slurp(out / "fidelity.md"));
  EXPECT_NE(r.out.find("| 600 | snapkv |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("C=1024"), std::string::npos) << r.out;
}

// Each case ends with exactly one "error:" line and a non-zero exit, before any long work.
void expect_error(const std::string& args, const std::string& needle) {
  const test::CliRun r = test::expect_cli_error(args, needle);
  EXPECT_TRUE(r.out.empty()) << "no table on failure: " << r.out;
}

TEST(FidelityCli, BadFlagsGiveOneErrorLine) {
  const std::string a = "eval fidelity " + test::eval_args();
  expect_error(a + " --presses full,bogus", "unknown press 'bogus'");
  expect_error(a + " --lengths 8100", "context of 8192");
  expect_error(a + " --lengths 2048 --n-eval 0", "positive");
  expect_error(a + " --capacity 16 --presses snapkv", "observation window");
  expect_error(a + " --capacity 128,128", "twice");
  expect_error(a + " --kv-gqa per_query_head", "per_query_head");
  expect_error(a + " --kv-press snapkv", "--kv-press");  // the press is what the evaluation varies
  expect_error("eval fidelity -t 2 --data /nonexistent/data -m /nonexistent/model.gguf", "/nonexistent/data");
  expect_error("eval fidelity -t 2 --data " + test::data_dir() + " -m /nonexistent/model.gguf", "/nonexistent/model.gguf");
  expect_error("eval", "subcommand");
}

}  // namespace
}  // namespace snapkv
