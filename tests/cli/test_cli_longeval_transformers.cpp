// snapkv eval longeval_lines, full cache, against HF transformers (tests/fixtures/
// longeval_transformers.json, made by tools/reference/make_longeval_fixture.py): on LongChat's
// shipped cases the engine must build the same prompt (token count and hash of the ids), give
// the same greedy answer and parse the same number from it. Only cases whose smallest top-2
// logit margin leaves room for rounding are compared (f32 KV cache here, fp32 in transformers).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "eval/results_file.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

constexpr double kMinMargin = 0.05;
constexpr size_t kCases = 2;  // each is a 4.4K-token prefill

TEST(LongEvalTransformers, ShippedCasesGetTransformersPromptAndAnswer) {
  const nlohmann::json fx = nlohmann::json::parse(test::slurp(test::fixture_path("longeval_transformers.json")));
  std::vector<std::string> records;
  {
    std::ifstream in(fs::path(test::data_dir()) / "longeval_lines" / "testcases" / "200_lines.jsonl");
    for (std::string line; std::getline(in, line);) records.push_back(line);
  }
  // The chosen records, copied in the fixture's order into a data folder of their own: the k-th
  // copied record is case shipped/200_lines/k.
  const test::TempDir tmp("longeval_tf");
  const fs::path& data = tmp.path;
  fs::create_directories(data / "longeval_lines" / "testcases");
  std::vector<nlohmann::json> want;
  {
    std::ofstream copy(data / "longeval_lines" / "testcases" / "200_lines.jsonl");
    for (const nlohmann::json& c : fx["cases"]) {
      const std::vector<double> m = c["margins"].get<std::vector<double>>();
      if (want.size() == kCases || *std::min_element(m.begin(), m.end()) < kMinMargin) continue;
      ASSERT_LT(c["index"].get<size_t>(), records.size());
      copy << records[c["index"].get<size_t>()] << '\n';
      want.push_back(c);
    }
  }
  ASSERT_EQ(want.size(), kCases);

  const fs::path out = data / "out";
  const test::CliRun r = test::run_cli(
      fmt::format("eval longeval_lines -m {} --data {} -t 2 --tasks shipped --presses full --kv-type f32 --out {}",
                  test::default_model_path(), data.string(), out.string()),
      600);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> lines = read_result_lines(out / "longeval_lines.jsonl.gz").lines;
  for (const std::string& line : lines) {
    const nlohmann::json got = nlohmann::json::parse(line);
    const std::string id = got["case"].get<std::string>();
    ASSERT_EQ(id.rfind("shipped/200_lines/", 0), 0u) << id;
    const size_t k = std::stoul(id.substr(id.rfind('/') + 1));
    ASSERT_LT(k, want.size()) << id;
    const nlohmann::json& w = want[k];
    SCOPED_TRACE(fmt::format("record {} of 200_lines.jsonl", w["index"].get<int>()));
    EXPECT_EQ(got["prompt_tokens"], w["prompt_tokens"]);
    EXPECT_EQ(got["input_hash"], w["input_hash"]);
    EXPECT_EQ(got["answer"], w["answer"]);
    EXPECT_EQ(got["parsed"], w["parsed"]);
    EXPECT_EQ(got["score"], w["right"].get<bool>() ? 100 : 0);
  }
  EXPECT_EQ(lines.size(), kCases);
}

}  // namespace
}  // namespace snapkv
