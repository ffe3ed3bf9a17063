// examples/answer.cpp, the public API's example program, run for real on the default model.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>

#include "support/cli.h"

namespace snapkv::test {
namespace {

CliRun run_example(const std::string& args) { return run_program(SNAPKV_EXAMPLE_ANSWER, args, 300); }

TEST(ExampleAnswer, AnswersAboutALongDocumentFromACompressedCache) {
  const std::string essay = data_dir() + "/niah_paulgraham/PaulGrahamEssays/addiction.txt";
  const CliRun r = run_example(fmt::format("{} {} 'Who wrote this essay?' 2", default_model_path(), essay));
  ASSERT_EQ(r.status, 0) << r.err;
  std::smatch m;
  const std::regex stats(R"((\d+) prompt tokens, (\d+) generated; KV cache ([\d.]+) (\w+) instead of ([\d.]+) (\w+))");
  ASSERT_TRUE(std::regex_search(r.out, m, stats)) << r.out;
  EXPECT_GT(std::stoi(m[1]), 1024);  // longer than the capacity, so SnapKV pressed it
  EXPECT_GT(std::stoi(m[2]), 0);
  // 1024 entries per head kept of more than 1024: the held cache is the smaller one.
  const auto kib = [](double v, const std::string& unit) { return unit == "MiB" ? v * 1024 : unit == "KiB" ? v : v / 1024; };
  EXPECT_LT(kib(std::stod(m[3]), m[4]), kib(std::stod(m[5]), m[6])) << r.out;
}

TEST(ExampleAnswer, AMissingDocumentIsOneErrorLine) {
  const CliRun r = run_example(fmt::format("{} /nonexistent/doc.txt 'Why?'", default_model_path()));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "error: /nonexistent/doc.txt: cannot read it\n");
}

}  // namespace
}  // namespace snapkv::test
