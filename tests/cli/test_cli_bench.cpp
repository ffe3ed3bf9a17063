// snapkv bench roofline through the real binary, at toy sizes: it runs every row, counts the
// weights a decode step reads as the model file holds them, and refuses bad parameters.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "support/cli.h"
#include "support/paths.h"

namespace snapkv {
namespace {

const std::string kToy = "--reps 1 -n 2 --chunk 8 --prefill 32 --long 64 --bandwidth-mib 64";

TEST(CliBench, RooflinePrintsEveryPhaseAgainstItsBound) {
  const std::string model = test::default_model_path();
  const test::CliRun r =
      test::run_cli(fmt::format("bench roofline -m {} --data {} -t 2 {}", model, test::data_dir(), kToy), 300);
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
}

TEST(CliBench, RooflineRefusesBadParameters) {
  test::expect_cli_error("bench roofline --reps 0", "--reps");
  test::expect_cli_error(fmt::format("bench roofline -m {} --kv-press full", test::default_model_path()),
                         "compressing press");
  test::expect_cli_error("bench roofline --bandwidth-mib 1", "--bandwidth-mib");
}

}  // namespace
}  // namespace snapkv
