// snapkv chat through the real binary: two turns on stdin with SnapKV; the second turn is
// appended to the compressed cache (its KV bytes stay below the full cache's).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

TEST(CliChat, TwoTurnsOnACompressedCache) {
  const test::TempDir tmp("chat");
  const fs::path& dir = tmp.path;
  std::string system;
  for (int i = 0; i < 40; ++i) system += "You are a careful assistant who answers briefly. ";
  std::ofstream(dir / "in.txt") << "Name three colors.\nAnd three animals?\n";
  const test::CliRun r = test::run_cli(
      fmt::format("chat -m {} -t 2 -n 12 --kv-press snapkv --kv-capacity 96 --kv-window 8 --system '{}' <{}",
                  test::default_model_path(), system, (dir / "in.txt").string()),
      300);
  const std::string& out = r.out;
  const std::string& err = r.err;
  ASSERT_EQ(r.status, 0) << err;
  EXPECT_GE(std::count(out.begin(), out.end(), '\n'), 2) << out;
  // turn N: ... | context C tok | KV cache X (full Y)
  const std::regex turn(R"(turn (\d): \+(\d+) prompt tok.*context (\d+) tok \| KV cache ([0-9.]+ \w+) \(full ([0-9.]+ \w+)\))");
  std::vector<std::smatch> turns;
  for (std::sregex_iterator it(err.begin(), err.end(), turn), end; it != end; ++it) turns.push_back(*it);
  ASSERT_EQ(turns.size(), 2u) << err;
  EXPECT_GT(std::stoi(turns[0][2]), 96);                // the system prompt alone is over the capacity
  EXPECT_LT(std::stoi(turns[1][2]), 40);                // turn 2 only appends its own text
  EXPECT_GT(std::stoi(turns[1][3]), std::stoi(turns[0][3]));
  EXPECT_NE(turns[0][4].str(), turns[0][5].str());      // compressed below the full cache
  EXPECT_NE(turns[1][4].str(), turns[1][5].str());
}

}  // namespace
}  // namespace snapkv
