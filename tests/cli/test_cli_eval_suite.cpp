// snapkv eval SUITE through the real binary, tiny: niah (one 600-token length, two depths, full
// and snapkv at C=128, 8 answer tokens) with its files and resumability (from the .jsonl.gz, an
// older plain .jsonl, and a .jsonl.gz cut short), answers that stay with their press in the
// decode batch, question placements, a changed input detected on resume, and flag errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "eval/results_file.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> lines_of(const fs::path& path) {
  const ResultLines r = read_result_lines(path);
  EXPECT_FALSE(r.truncated) << path;
  std::vector<nlohmann::json> rows;
  for (const std::string& line : r.lines) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// A folder not made yet, in this binary's temporary directory (which goes when the tests end).
fs::path fresh_dir(const std::string& name) {
  static const test::TempDir root("eval_suite");
  return root.path / name;
}

TEST(CliEvalSuite, NiahTinyGridWritesResultsAndResumes) {
  const fs::path out = fresh_dir("niah");
  const std::string args = fmt::format(
      "eval niah {} --lengths 600 --depths 0,100 --presses full,snapkv --capacity 128 --max-tokens 8 --out {}",
      test::eval_args(), out.string());
  const test::CliRun r = test::run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string first = test::slurp(out / "niah.jsonl.gz");
  std::set<std::string> cells;
  for (const nlohmann::json& j : lines_of(out / "niah.jsonl.gz")) {
    for (const char* key : {"case", "length", "depth", "input_hash", "placement", "press", "capacity", "answer",
                            "score", "needle_recall", "substring", "prefill_s", "press_s", "decode_s", "kv_bytes_kept",
                            "kv_bytes_full", "prompt_tokens"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << j.dump();
    }
    EXPECT_EQ(j["length"], 600);
    EXPECT_EQ(j["placement"], "question-last");
    EXPECT_GE(j["score"].get<double>(), 0.0);
    EXPECT_LE(j["score"].get<double>(), 10.0);
    EXPECT_EQ(j["input_hash"].get<std::string>().size(), 16u);
    EXPECT_LE(j["prompt_tokens"].get<int>(), 600);
    if (j["press"] == "full") {
      EXPECT_EQ(j["capacity"], 0);
      EXPECT_EQ(j["kv_bytes_kept"], j["kv_bytes_full"]);
    } else {
      EXPECT_EQ(j["capacity"], 128);
      EXPECT_LT(j["kv_bytes_kept"].get<double>(), j["kv_bytes_full"].get<double>());
    }
    cells.insert(fmt::format("{}|{}|{}", j["case"].get<std::string>(), j["press"].get<std::string>(),
                             j["capacity"].get<int>()));
  }
  EXPECT_EQ(cells.size(), 4u);  // 2 depths x (full once + snapkv at one capacity), no line twice
  EXPECT_TRUE(cells.count("L600_d0|full|0") && cells.count("L600_d100|snapkv|128"));
  for (const char* f : {"niah.md", "niah_full.svg", "niah_snapkv_128.svg", "niah_budget.svg"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  EXPECT_NE(test::slurp(out / "niah.md").find("| snapkv | 128 | 2 |"), std::string::npos);
  EXPECT_NE(test::slurp(out / "niah_budget.svg").find("<polyline"), std::string::npos);

  // The same run again skips every cell: the file is unchanged.
  const test::CliRun again = test::run_cli(args);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("4 already in"), std::string::npos) << again.err;
  EXPECT_EQ(test::slurp(out / "niah.jsonl.gz"), first);

  // --report runs nothing and rewrites the summary from the file.
  fs::remove(out / "niah.md");
  const test::CliRun report = test::run_cli(args + " --report");
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_NE(report.out.find("| snapkv | 128 | 2 |"), std::string::npos) << report.out;
  EXPECT_TRUE(fs::exists(out / "niah.md"));
  EXPECT_EQ(test::slurp(out / "niah.jsonl.gz"), first);

  // Another needle changes every input: resuming into the same folder is refused.
  test::expect_cli_error(args + " --needle 'The password is swordfish.'", "was run on a different input");
}

// A resume runs exactly the results missing from <out>/niah.jsonl.gz and an older run's plain
// niah.jsonl (which it leaves as it is), gives them the answers a whole run gives, and repairs a
// .jsonl.gz whose last member was cut short.
TEST(CliEvalSuite, ResumeFromGzipRunsExactlyTheMissingResults) {
  const fs::path whole = fresh_dir("resume_whole"), part = fresh_dir("resume_part");
  const auto args = [](const fs::path& out) {
    return fmt::format(
        "eval niah {} --lengths 600 --depths 0,100 --presses full,snapkv --capacity 128 --max-tokens 8 --out {}",
        test::eval_args(), out.string());
  };
  const test::CliRun r = test::run_cli(args(whole));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> all = read_result_lines(whole / "niah.jsonl.gz").lines;
  ASSERT_EQ(all.size(), 4u);

  fs::create_directories(part);
  append_result_lines(part / "niah.jsonl.gz", {all[0], all[1]});
  std::ofstream(part / "niah.jsonl") << all[2] << "\n";
  const std::string plain = test::slurp(part / "niah.jsonl");
  const test::CliRun resumed = test::run_cli(args(part));
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("4 results, 3 already in"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find("done: 1 results run, 3 skipped"), std::string::npos) << resumed.err;
  EXPECT_EQ(test::slurp(part / "niah.jsonl"), plain);
  const std::vector<std::string> lines = read_result_lines(part / "niah.jsonl.gz").lines;
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], all[0]);
  EXPECT_EQ(lines[1], all[1]);
  const nlohmann::json got = nlohmann::json::parse(lines[2]), want = nlohmann::json::parse(all[3]);
  for (const char* key : {"case", "press", "capacity", "input_hash", "answer", "score", "kv_bytes_kept"}) {
    EXPECT_EQ(got[key], want[key]) << key;
  }
  // The summary counts the results of both files.
  EXPECT_NE(resumed.out.find("| full | - | 2 |"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("| snapkv | 128 | 2 |"), std::string::npos) << resumed.out;

  // A run stopped while appending: half a member at the end. The next run keeps what is whole,
  // rewrites the file, and appends after it.
  const fs::path cut = part / "cut.gz";
  append_result_lines(cut, {all[3], all[3], all[3]});
  const std::string half = test::slurp(cut).substr(0, fs::file_size(cut) / 2);
  std::ofstream(part / "niah.jsonl.gz", std::ios::binary | std::ios::app) << half;
  fs::remove(cut);
  ASSERT_TRUE(read_result_lines(part / "niah.jsonl.gz").truncated);
  const test::CliRun again = test::run_cli(args(part));
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("4 results, 4 already in"), std::string::npos) << again.err;
  const ResultLines repaired = read_result_lines(part / "niah.jsonl.gz");
  EXPECT_FALSE(repaired.truncated);
  EXPECT_EQ(repaired.lines, lines);

  // A configuration stopped part way is compared with the full cache over the cases both have:
  // snapkv scored only at depth 0, as the full cache there, is 100 % of it (not of the full mean).
  const fs::path partial = fresh_dir("resume_partial");
  fs::create_directories(partial);
  std::vector<std::string> kept;
  for (const std::string& line : all) {
    nlohmann::json j = nlohmann::json::parse(line);
    const bool depth0 = j["case"] == "L600_d0";
    if (j["press"] == "snapkv" && !depth0) continue;
    j["score"] = depth0 ? 4.0 : 10.0;
    kept.push_back(j.dump());
  }
  append_result_lines(partial / "niah.jsonl.gz", kept);
  const test::CliRun report = test::run_cli(args(partial) + " --report");
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_NE(report.out.find("| full | - | 2 | 7.00 |"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("| snapkv | 128 | 1 | 4.00 | 4.00–4.00 | 100 % |"), std::string::npos) << report.out;
}

// The presses of a case decode in one batch, and each answer stays with its press: full's and
// h2o's (which differ at C=128) are those they give when each runs alone.
TEST(CliEvalSuite, AnswersStayWithTheirPressInTheBatch) {
  const std::vector<std::string> runs = {"full,snapkv,h2o", "full", "h2o"};
  std::map<std::string, std::string> answer[3];
  for (size_t i = 0; i < runs.size(); ++i) {
    const fs::path out = fresh_dir(fmt::format("batch{}", i));
    const test::CliRun r = test::run_cli(fmt::format(
        "eval niah {} --lengths 600 --depths 0 --presses {} --capacity 128 --max-tokens 8 --out {}", test::eval_args(),
        runs[i], out.string()));
    ASSERT_EQ(r.status, 0) << r.err;
    for (const nlohmann::json& j : lines_of(out / "niah.jsonl.gz")) {
      EXPECT_EQ(j["decode_batch"], i == 0 ? 3 : 1);
      answer[i][j["press"].get<std::string>()] = j["answer"].get<std::string>();
    }
  }
  ASSERT_EQ(answer[0].size(), 3u);
  EXPECT_EQ(answer[0]["full"], answer[1]["full"]);
  EXPECT_EQ(answer[0]["h2o"], answer[2]["h2o"]);
  EXPECT_NE(answer[0]["full"], answer[0]["h2o"]);
}

TEST(CliEvalSuite, QuestionPlacementsAreSeparateResults) {
  const fs::path out = fresh_dir("placement");
  const std::string args = fmt::format(
      "eval longeval_lines {} --tasks generated --lengths 700 --positions 50 --presses full,snapkv --capacity 128 "
      "--max-tokens 6 --out {}",
      test::eval_args(), out.string());
  std::map<std::string, std::string> hash;
  for (const char* flag : {"", " --question-first", " --question-agnostic"}) {
    const test::CliRun r = test::run_cli(args + flag);
    ASSERT_EQ(r.status, 0) << flag << r.err;
  }
  const std::vector<nlohmann::json> rows = lines_of(out / "longeval_lines.jsonl.gz");
  ASSERT_EQ(rows.size(), 6u);  // 3 placements x (full + snapkv)
  for (const nlohmann::json& j : rows) {
    EXPECT_EQ(j["case"], "generated/L700/p50");
    EXPECT_TRUE(j["score"] == 0 || j["score"] == 100);
    hash[j["placement"].get<std::string>()] = j["input_hash"].get<std::string>();
    if (j["press"] == "snapkv" && j["placement"] == "question-agnostic") {
      // The question's tokens are added after compression: more than 128 entries per head.
      EXPECT_LT(j["kv_bytes_kept"].get<double>(), j["kv_bytes_full"].get<double>() / 3);
    }
  }
  ASSERT_EQ(hash.size(), 3u);
  EXPECT_NE(hash["question-last"], hash["question-first"]);
  EXPECT_TRUE(fs::exists(out / "longeval_lines_budget.svg"));
  EXPECT_TRUE(fs::exists(out / "longeval_lines_snapkv_128.svg"));
}

TEST(CliEvalSuite, FlagErrorsAreOneLine) {
  const std::string out = fresh_dir("eval_err").string();
  const std::string base = test::eval_args() + " --out " + out;
  test::expect_cli_error("eval niah " + base + " --presses full,nope", "unknown press 'nope'");
  test::expect_cli_error("eval niah " + base + " --depths 0,101", "depth 101 is outside [0, 100]");
  test::expect_cli_error("eval niah " + base + " --depths=-5", "depth -5 is outside [0, 100]");
  test::expect_cli_error("eval niah " + base + " --lengths 1000000", "exceeds the model's context");
  test::expect_cli_error("eval niah " + base + " --lengths ''", "length 0 is too short");
  test::expect_cli_error("eval niah " + base + " --max-tokens=-1", "--max-tokens must be 0");
  test::expect_cli_error("eval niah " + base + " --limit=-2", "--limit must be 0");
  test::expect_cli_error("eval niah " + base + " --tasks x", "niah has no tasks");
  test::expect_cli_error("eval longeval_lines " + base + " --tasks nope", "unknown longeval_lines task 'nope'");
  test::expect_cli_error("eval niah " + base + " --question-first --question-agnostic", "exclude each other");
  test::expect_cli_error("eval niah " + test::eval_args(), "--out");
}

}  // namespace
}  // namespace snapkv
