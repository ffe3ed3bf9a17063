// Speculative decoding through the real binary: `run` with prompt lookup and with a draft model
// prints the answer it prints without speculation, and reports its acceptance; `eval` with
// speculation scores what it scores without, kept apart in the results file; bad flags are one
// error line.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "eval/results_file.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

// An essay's opening, then its first sentences again: the model goes on quoting.
std::string quoting_prompt_file() {
  const std::string essay = test::slurp(fs::path(test::data_dir()) / "niah_paulgraham" / "PaulGrahamEssays" / "addiction.txt");
  static const test::TempDir dir("spec");
  const fs::path p = dir.path / "prompt.txt";
  std::ofstream(p) << essay.substr(0, 2400) << "\n\n" << essay.substr(0, 160);
  return p.string();
}

TEST(CliSpec, RunPrintsTheSameAnswerWithPromptLookupAndADraftModel) {
  const std::string prompt = quoting_prompt_file();
  const std::string base = fmt::format("run -m {} -t 2 -n 40 -f {} --kv-press snapkv --kv-capacity 256", test::default_model_path(), prompt);
  const test::CliRun plain = test::run_cli(base);
  ASSERT_EQ(plain.status, 0) << plain.err;
  for (const std::string& spec : {std::string("--spec prompt-lookup --spec-k 3"),
                                  fmt::format("--draft-model {} --spec-k 2", test::default_model_path())}) {
    const test::CliRun r = test::run_cli(base + " " + spec);
    ASSERT_EQ(r.status, 0) << spec << "\n" << r.err;
    EXPECT_EQ(r.out, plain.out) << spec;
    const std::regex stats(R"(spec (prompt-lookup|draft) k=\d: ([0-9.]+) tok/pass, (\d+) % of (\d+) drafts accepted)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, stats)) << r.err;
    EXPECT_GT(std::stod(m[2]), 1.2) << spec << ": the quote is drafted";
    EXPECT_GT(std::stoi(m[4]), 0);
  }
}

TEST(CliSpec, EvalScoresEqualDecodingWithoutAndAreKeptApart) {
  const test::TempDir tmp("spec_eval");
  const fs::path& out = tmp.path;
  const std::string args = fmt::format(
      "eval longeval_lines {} --tasks generated --lengths 1200 --positions 0,100 --presses full,snapkv --capacity 128 "
      "--max-tokens 24 --out {}",
      test::eval_args(), out.string());
  const test::CliRun plain = test::run_cli(args, 600);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const test::CliRun spec = test::run_cli(args + " --spec prompt-lookup --spec-k 2", 600);
  ASSERT_EQ(spec.status, 0) << spec.err;
  EXPECT_NE(spec.err.find("4 results, 0 already in"), std::string::npos) << "the plain results are not reused: " << spec.err;
  std::map<std::string, nlohmann::json> by_spec[2];
  int drafted = 0;
  for (const std::string& line : read_result_lines(out / "longeval_lines.jsonl.gz").lines) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const bool s = j.value("spec", std::string("none")) != "none";
    by_spec[s][fmt::format("{}|{}|{}", j["case"].get<std::string>(), j["press"].get<std::string>(), j["capacity"].get<int>())] = j;
    if (s) drafted += j["spec_drafted"].get<int>();
  }
  ASSERT_EQ(by_spec[0].size(), 4u);
  ASSERT_EQ(by_spec[1].size(), 4u);
  for (const auto& [key, j] : by_spec[0]) {
    ASSERT_TRUE(by_spec[1].count(key)) << key;
    EXPECT_EQ(by_spec[1][key]["answer"], j["answer"]) << key;
    EXPECT_EQ(by_spec[1][key]["score"], j["score"]) << key;
  }
  EXPECT_GT(drafted, 0);
}

TEST(CliSpec, BadFlagsAreOneErrorLine) {
  const std::string run = fmt::format("run -m {} -t 2 -n 4 -p hello", test::default_model_path());
  test::expect_cli_error(run + " --spec guess", "unknown speculation 'guess'");
  test::expect_cli_error(run + " --spec prompt-lookup --spec-k 0", "--spec-k");
  test::expect_cli_error(run + " --spec prompt-lookup --spec-ngram-min 4", "--spec-ngram-min");
  test::expect_cli_error(run + " --spec draft", "--spec draft needs --draft-model");
  test::expect_cli_error(run + " --spec prompt-lookup --draft-model x.gguf", "--draft-model goes with --spec draft");
  test::expect_cli_error(run + " --draft-model /nonexistent/draft.gguf", "draft.gguf");
  // bench spec speculates by prompt lookup unless told; a draft model alone switches it to draft.
  test::expect_cli_error(fmt::format("bench spec -m {} --draft-model /nonexistent/draft.gguf", test::default_model_path()),
                         "draft.gguf");
  test::expect_cli_error(fmt::format("eval niah {} --lengths 600 --out /tmp/x --draft-model {}", test::eval_args(),
                                     test::default_model_path()),
                         "prompt lookup, not a draft model");
  const std::string serve = fmt::format("serve -m {} -t 2 --port 0", test::default_model_path());
  test::expect_cli_error(serve + " --spec draft", "--spec draft needs --draft-model");
  test::expect_cli_error(serve + " --draft-model /nonexistent/draft.gguf", "draft.gguf");
}

}  // namespace
}  // namespace snapkv
