// snapkv eval niah through the real binary, tiny (one 600-token length, two depths, full and
// snapkv at C=128, 8 answer tokens), its resumability and flag errors, plus the scoring against
// hand-computed values.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <sstream>

#include "eval/niah.h"
#include "support/cli.h"
#include "support/paths.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

TEST(NiahScoring, Rouge1FMatchesHandComputedValues) {
  EXPECT_EQ(rouge_words("The cat, the CAT!  x2-y"), (std::vector<std::string>{"the", "cat", "the", "cat", "x2", "y"}));
  // ref 6 words, candidate 4; overlap the x2 (ref has two), cat x1: P = 3/4, R = 3/6, F = 0.6.
  EXPECT_NEAR(rouge1_f("the cat sat on the mat", "The cat, the CAT!"), 0.6, 1e-12);
  // The needle has 21 words; this answer's 8 all occur in it: P = 1, R = 8/21, F = 16/29.
  EXPECT_NEAR(rouge1_f(kNiahNeedle, "The best thing to do in San Francisco"), 16.0 / 29.0, 1e-12);
  EXPECT_NEAR(rouge1_f(kNiahNeedle, kNiahNeedle), 1.0, 1e-12);
  EXPECT_EQ(rouge1_f(kNiahNeedle, ""), 0.0);
  EXPECT_EQ(rouge1_f(kNiahNeedle, "nothing relevant here"), 0.0);
  // Content words of the needle: best thing san francisco eat sandwich sit dolores park sunny day.
  EXPECT_NEAR(needle_word_recall(kNiahNeedle, "Eat a sandwich in Dolores Park."), 4.0 / 11.0, 1e-12);
  EXPECT_NEAR(needle_word_recall(kNiahNeedle, kNiahNeedle), 1.0, 1e-12);
  EXPECT_EQ(needle_word_recall(kNiahNeedle, "the"), 0.0);
}

TEST(CliEvalNiah, TinyGridWritesJsonlAndResumes) {
  const fs::path out = fs::temp_directory_path() / fmt::format("snapkv_niah_{}", ::getpid());
  fs::remove_all(out);
  const std::string args = fmt::format(
      "eval niah {} --lengths 600 --depths 0,100 --presses full,snapkv --capacity 128 --max-tokens 8 --out {}",
      test::eval_args(), out.string());
  const test::CliRun r = test::run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string first = test::slurp(out / "niah.jsonl");
  std::istringstream lines(first);
  std::string line;
  std::set<std::string> cells;
  int n = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    for (const char* key : {"case", "length", "depth", "input_hash", "press", "capacity", "answer", "rouge1_f10",
                            "needle_recall", "prefill_s", "decode_s", "kv_bytes_kept", "kv_bytes_full"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    }
    EXPECT_EQ(j["length"], 600);
    EXPECT_GE(j["rouge1_f10"].get<double>(), 0.0);
    EXPECT_LE(j["rouge1_f10"].get<double>(), 10.0);
    EXPECT_EQ(j["input_hash"].get<std::string>().size(), 16u);
    if (j["press"] == "full") {
      EXPECT_EQ(j["capacity"], 0);
      EXPECT_EQ(j["kv_bytes_kept"], j["kv_bytes_full"]);
    } else {
      EXPECT_EQ(j["capacity"], 128);
      EXPECT_LT(j["kv_bytes_kept"].get<double>(), j["kv_bytes_full"].get<double>());
    }
    cells.insert(fmt::format("{}|{}|{}", j["case"].get<std::string>(), j["press"].get<std::string>(),
                             j["capacity"].get<int>()));
    ++n;
  }
  EXPECT_EQ(n, 4);  // 2 depths x (full once + snapkv at one capacity)
  EXPECT_EQ(cells.size(), 4u);
  EXPECT_TRUE(cells.count("L600_d0|full|0") && cells.count("L600_d100|snapkv|128"));
  for (const char* f : {"niah.md", "niah_full.svg", "niah_snapkv_128.svg"}) EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_NE(test::slurp(out / "niah.md").find("| snapkv | 128 | 2 |"), std::string::npos);
  EXPECT_NE(test::slurp(out / "niah_snapkv_128.svg").find("<svg"), std::string::npos);

  // The same run again skips every cell: the file is unchanged.
  const test::CliRun again = test::run_cli(args);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("4 already in"), std::string::npos) << again.err;
  EXPECT_EQ(test::slurp(out / "niah.jsonl"), first);
  fs::remove_all(out);
}

TEST(CliEvalNiah, FlagErrorsAreOneLine) {
  const std::string out = (fs::temp_directory_path() / fmt::format("snapkv_niah_err_{}", ::getpid())).string();
  const std::string base = test::eval_args() + " --out " + out;
  test::expect_cli_error("eval niah " + base + " --presses full,nope", "unknown press 'nope'");
  test::expect_cli_error("eval niah " + base + " --depths 0,101", "depth 101 is outside [0, 100]");
  test::expect_cli_error("eval niah " + base + " --depths=-5", "depth -5 is outside [0, 100]");
  test::expect_cli_error("eval niah " + base + " --lengths 1000000", "exceeds the model's context");
  test::expect_cli_error("eval niah " + base + " --lengths ''", "--lengths");
  test::expect_cli_error("eval niah " + base + " --max-tokens 0", "--max-tokens must be positive");
  fs::remove_all(out);
}

}  // namespace
}  // namespace snapkv
