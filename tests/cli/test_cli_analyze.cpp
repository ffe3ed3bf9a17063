// snapkv analyze through the real binary on the default model, small: each analysis' JSON and
// plots, the invariants that hold whatever the model (top p = 1 votes for everything, identical
// questions vote alike, a layer that stays whole keeps the whole answer, a press keeps exactly
// its capacity) and the errors of bad prompts and flags.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(test::slurp(p)); }

// A context of real text (the start of the first essay) in a file, and its path.
fs::path context_file(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<fs::path> essays;
  for (const auto& e : fs::directory_iterator(test::data_dir() + "/niah_paulgraham/PaulGrahamEssays")) {
    essays.push_back(e.path());
  }
  std::sort(essays.begin(), essays.end());
  const fs::path p = dir / "context.txt";
  std::ofstream(p) << test::slurp(essays.at(0)).substr(0, 2500);
  return p;
}

TEST(CliAnalyze, HitRateWritesBothPlacementsAndVotingEverythingHitsEverything) {
  const test::TempDir tmp("analyze_hit");
  const fs::path& out = tmp.path;
  const std::string base = fmt::format("analyze hit-rate {} --suite niah --lengths 1000 --depths 50 --out {}",
                                       test::eval_args(), out.string());
  const test::CliRun r = test::run_cli(base + " --gen-windows 2 --gen-window-size 16 --question-at both");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| question-last | 1-16 |"), std::string::npos) << r.out;
  const nlohmann::json j = read_json(out / "hit_rate.json");
  EXPECT_EQ(j["n_layer"], 30);
  ASSERT_EQ(j["cases"].size(), 2u);
  for (const nlohmann::json& c : j["cases"]) {
    EXPECT_GT(c["prompt_tokens"].get<int>(), 900);
    EXPECT_LE(c["generated"].get<int>(), 32);
    ASSERT_GE(c["hit_rate"].size(), 1u);
    for (const nlohmann::json& w : c["hit_rate"]) {
      ASSERT_EQ(w.size(), 30u);
      for (const nlohmann::json& h : w) {
        if (!h.is_null()) {
          EXPECT_GE(h.get<double>(), 0.0);
          EXPECT_LE(h.get<double>(), 1.0);
        }
      }
    }
  }
  // The window's vote (5 % of the prefix) covers far more of what generation attends to than 5 %.
  double sum = 0;
  int n = 0;
  for (const nlohmann::json& h : j["mean"]["question-last"]["all_windows"]) {
    if (h.is_null()) continue;
    sum += h.get<double>();
    ++n;
  }
  ASSERT_GT(n, 20);
  EXPECT_GT(sum / n, 0.5);
  for (const char* svg : {"hit_rate_question-last.svg", "hit_rate_question-first.svg", "hit_rate_question_position.svg"}) {
    EXPECT_TRUE(fs::exists(out / svg)) << svg;
  }

  // With top p = 1 every prefix position is voted for, so every significant one is a hit.
  const test::CliRun all = test::run_cli(base + " --top-p 1 --gen-windows 1 --gen-window-size 8");
  ASSERT_EQ(all.status, 0) << all.err;
  int defined = 0;
  const nlohmann::json everything = read_json(out / "hit_rate.json");
  for (const nlohmann::json& h : everything["cases"][0]["hit_rate"][0]) {
    if (h.is_null()) continue;
    EXPECT_EQ(h.get<double>(), 1.0);
    ++defined;
  }
  EXPECT_GT(defined, 20);
}

TEST(CliAnalyze, MapKeepsTheCapacityPerHeadWithTheWindowAndMarksTheAnswer) {
  const test::TempDir tmp("analyze_map");
  const fs::path& out = tmp.path;
  const test::CliRun r = test::run_cli(fmt::format(
      "analyze map {} --suite niah --lengths 1000 --depths 50 --kv-capacity 128 --out {}", test::eval_args(),
      out.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = read_json(out / "map.json");
  const int n = j["prompt_tokens"];
  ASSERT_EQ(j["kept"].size(), 30u);
  for (const nlohmann::json& layer : j["kept"]) {
    ASSERT_EQ(layer.size(), 3u);
    for (const nlohmann::json& head : layer) {
      const std::vector<int> pos = head.get<std::vector<int>>();
      ASSERT_EQ(pos.size(), 128u);
      EXPECT_TRUE(std::is_sorted(pos.begin(), pos.end()));
      EXPECT_GE(pos.front(), 0);
      EXPECT_EQ(pos.back(), n - 1);
      EXPECT_EQ(pos[128 - 32], n - 32);  // the window is always kept
    }
  }
  // The needle sits in the middle of the context; the question is at the end.
  const int a0 = j["answer"][0], a1 = j["answer"][1], q0 = j["question"][0];
  EXPECT_GT(a0, n / 4);
  EXPECT_LT(a1, 3 * n / 4);
  EXPECT_GT(q0, 3 * n / 4);
  EXPECT_EQ(test::slurp(out / "map.png").substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_NE(test::slurp(out / "map.svg").find("data:image/png;base64,iVBORw0KGgo"), std::string::npos);
  EXPECT_NE(r.out.find("answer tokens kept:"), std::string::npos) << r.out;
}

TEST(CliAnalyze, OverlapOfIdenticalQuestionsIsOneAndOfDifferentOnesLess) {
  const test::TempDir tmp("analyze_overlap");
  const fs::path& out = tmp.path;
  const fs::path ctx = context_file(out);
  std::ofstream(out / "same.txt") << "What is this text about?\nWhat is this text about?\n";
  std::ofstream(out / "different.txt") << "What is this text about?\nWho wrote the first program mentioned?\n";
  const std::string base =
      fmt::format("analyze overlap {} -f {} --answer-tokens 4 --out {}", test::eval_args(), ctx.string(), out.string());
  const test::CliRun same = test::run_cli(base + " --questions-file " + (out / "same.txt").string());
  ASSERT_EQ(same.status, 0) << same.err;
  nlohmann::json j = read_json(out / "overlap.json");
  ASSERT_EQ(j["documents"].size(), 1u);
  EXPECT_EQ(j["documents"][0]["questions"].size(), 2u);
  EXPECT_EQ(j["chance"], 0.05);
  for (const nlohmann::json& v : j["mean"]) EXPECT_EQ(v.get<double>(), 1.0);

  const test::CliRun diff = test::run_cli(base + " --questions-file " + (out / "different.txt").string());
  ASSERT_EQ(diff.status, 0) << diff.err;
  j = read_json(out / "overlap.json");
  double sum = 0;
  for (const nlohmann::json& v : j["mean"]) {
    EXPECT_GE(v.get<double>(), 0.0);
    EXPECT_LE(v.get<double>(), 1.0);
    sum += v.get<double>();
  }
  EXPECT_LT(sum / 30, 1.0);
  EXPECT_TRUE(fs::exists(out / "overlap.svg"));
}

TEST(CliAnalyze, PoolingScoresEveryKernelAndAWholeLayerKeepsTheWholeAnswer) {
  const test::TempDir tmp("analyze_pooling");
  const fs::path& out = tmp.path;
  const test::CliRun r = test::run_cli(fmt::format(
      "analyze pooling {} --suite longeval_lines --tasks generated --lengths 700 --depths 50 --kernels 1,7 "
      "--capacity 128,1024 --max-tokens 6 --out {}",
      test::eval_args(), out.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = read_json(out / "pooling.json");
  ASSERT_EQ(j["cells"].size(), 4u);
  for (const nlohmann::json& c : j["cells"]) {
    EXPECT_EQ(c["case"], "generated/L700/p50");
    EXPECT_TRUE(c["score"] == 0 || c["score"] == 100);
    EXPECT_GT(c["answer_tokens"].get<int>(), 0);
    if (c["capacity"] == 1024) {  // more than the prompt: nothing is dropped
      EXPECT_EQ(c["answer_kept"], 1.0);
      EXPECT_EQ(c["answer_whole"], 1.0);
    } else {
      EXPECT_GE(c["answer_kept"].get<double>(), 0.0);
      EXPECT_LE(c["answer_whole"].get<double>(), c["answer_kept"].get<double>());
    }
  }
  EXPECT_TRUE(fs::exists(out / "pooling.svg"));
  EXPECT_TRUE(fs::exists(out / "pooling_answer_kept.svg"));
}

TEST(CliAnalyze, BadPromptsAndFlagsGetOneReadableError) {
  const test::TempDir tmp("analyze_errors");
  const fs::path& dir = tmp.path;
  const std::string out = " --out " + (dir / "out").string();
  std::ofstream(dir / "bad.jsonl") << "{\"context\": \"a\", \"question\": \"b\"}\nnot json\n";
  test::expect_cli_error("analyze map " + test::eval_args() + " --prompts-file " + (dir / "bad.jsonl").string() + out,
                         "bad.jsonl:2: not a JSON object");
  std::ofstream(dir / "noctx.jsonl") << "{\"question\": \"b\"}\n";
  test::expect_cli_error(
      "analyze map " + test::eval_args() + " --prompts-file " + (dir / "noctx.jsonl").string() + out,
      "noctx.jsonl:1: no \"context\"");
  test::expect_cli_error("analyze hit-rate " + test::eval_args() + " --question hi" + out,
                         "--question and --questions-file go with -f");
  test::expect_cli_error("analyze hit-rate " + test::eval_args() + " --suite nope" + out,
                         "unknown evaluation suite 'nope'");
  test::expect_cli_error("analyze hit-rate " + test::eval_args() + " --top-p 0" + out, "top p must be in (0, 1]");
  test::expect_cli_error("analyze map " + test::eval_args() + " --suite niah --lengths 1000 --case nope" + out,
                         "no case is named 'nope'");
  test::expect_cli_error("analyze pooling " + test::eval_args() + " --kernels 0" + out, "kernel");
  const fs::path ctx = context_file(dir);
  test::expect_cli_error(
      "analyze overlap " + test::eval_args() + " -f " + ctx.string() + " --question 'What is it about?'" + out,
      "no document has two questions");
  EXPECT_FALSE(fs::exists(dir / "out" / "overlap.json"));
}

}  // namespace
}  // namespace snapkv
