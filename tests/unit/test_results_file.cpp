// The gzip JSON Lines file of `snapkv eval` results (eval/results_file.h): members appended one
// after another read back as one text, plain files read as they are, a member cut short keeps
// its complete lines and is repaired by rewriting, and garbage is one clear error.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "eval/results_file.h"
#include "eval/suite_results.h"
#include "support/cli.h"
#include "support/temp_dir.h"
#include "util/error.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

TEST(ResultsFile, AppendedMembersReadBackAsOneTextAndGzipIsSmaller) {
  const test::TempDir tmp("results_append");
  const fs::path& dir = tmp.path;
  const fs::path p = dir / "s.jsonl.gz";
  EXPECT_TRUE(read_result_lines(p).lines.empty()) << "a missing file holds nothing";
  std::vector<std::string> first, second;
  for (int i = 0; i < 50; ++i) first.push_back(fmt::format(R"({{"case": "c{}", "answer": "the same words again"}})", i));
  second = {R"({"case": "x"})", "", R"({"case": "y"})"};
  append_result_lines(p, first);
  const std::string one_member = test::slurp(p);
  append_result_lines(p, {});  // nothing to write: the file is unchanged
  EXPECT_EQ(test::slurp(p), one_member);
  append_result_lines(p, second);
  // The gzip magic starts both members; the text compresses.
  const std::string bytes = test::slurp(p);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_EQ(static_cast<unsigned char>(bytes[one_member.size()]), 0x1f);
  size_t text_size = 0;
  for (const std::string& l : first) text_size += l.size() + 1;
  EXPECT_LT(one_member.size() * 4, text_size);

  const ResultLines r = read_result_lines(p);
  EXPECT_FALSE(r.truncated);
  std::vector<std::string> want = first;
  want.insert(want.end(), second.begin(), second.end());
  EXPECT_EQ(r.lines, want);
}

TEST(ResultsFile, PlainTextIsReadAsItIs) {
  const test::TempDir tmp("results_plain");
  const fs::path& dir = tmp.path;
  std::ofstream(dir / "s.jsonl") << "{\"a\": 1}\n\n{\"b\": 2}";  // the last line has no '\n'
  const ResultLines r = read_result_lines(dir / "s.jsonl");
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.lines, (std::vector<std::string>{"{\"a\": 1}", "", "{\"b\": 2}"}));
}

TEST(ResultsFile, MemberCutShortKeepsCompleteLinesAndRewriteRepairsIt) {
  const test::TempDir tmp("results_cut");
  const fs::path& dir = tmp.path;
  const fs::path p = dir / "s.jsonl.gz";
  append_result_lines(p, {"one", "two"});
  const size_t whole = fs::file_size(p);
  std::vector<std::string> long_lines;
  for (int i = 0; i < 2000; ++i) long_lines.push_back(fmt::format("line {} {}", i, std::string(40, 'a' + i % 26)));
  append_result_lines(p, long_lines);
  // A run stopped while writing the second member: its trailer and part of its data are gone.
  fs::resize_file(p, whole + (fs::file_size(p) - whole) / 2);
  const ResultLines r = read_result_lines(p);
  EXPECT_TRUE(r.truncated);
  ASSERT_GE(r.lines.size(), 2u);
  EXPECT_LT(r.lines.size(), 2 + long_lines.size());
  EXPECT_EQ(r.lines[0], "one");
  EXPECT_EQ(r.lines[1], "two");
  for (size_t i = 2; i < r.lines.size(); ++i) EXPECT_EQ(r.lines[i], long_lines[i - 2]) << "no partial line";

  write_result_lines(p, r.lines);
  append_result_lines(p, {"after"});
  const ResultLines repaired = read_result_lines(p);
  EXPECT_FALSE(repaired.truncated);
  ASSERT_EQ(repaired.lines.size(), r.lines.size() + 1);
  EXPECT_EQ(repaired.lines.back(), "after");
  EXPECT_FALSE(fs::exists(dir / "s.jsonl.gz.tmp"));
}

TEST(ResultsFile, CorruptDataIsOneErrorNamingTheFile) {
  const test::TempDir tmp("results_corrupt");
  const fs::path& dir = tmp.path;
  const fs::path p = dir / "s.jsonl.gz";
  append_result_lines(p, {"some result line that compresses", "another one"});
  std::string bytes = test::slurp(p);
  for (size_t i = 12; i < bytes.size() - 8; ++i) bytes[i] = static_cast<char>(0xff);  // the deflate data
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  try {
    read_result_lines(p);
    ADD_FAILURE() << "corrupt data was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFile);
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(append_result_lines(dir / "no" / "such" / "dir.gz", {"x"}), Error);
}

// A report places a row on its suite's heatmap only by int coordinates: a line edited to hold
// others (a float, a number past int) stays in the table, off the map.
TEST(ResultsFile, HeatmapCoordinatesAreIntsOrNothing) {
  const auto row = [](const char* length, const char* depth) {
    const std::string line = fmt::format(R"({{"case": "L2048_d0", "press": "snapkv", "capacity": 1024, "score": 9.5,
        "kv_bytes_kept": 1, "kv_bytes_full": 2, "decode_s": 0.5, "length": {}, "depth": {}}})", length, depth);
    return suite_row(nlohmann::json::parse(line), {"length", "depth"});
  };
  const EvalSuiteRow r = row("2048", "50");
  ASSERT_TRUE(r.heat.has_value());
  EXPECT_EQ(*r.heat, std::make_pair(2048, 50));
  EXPECT_EQ(r.capacity, 1024);
  EXPECT_DOUBLE_EQ(r.kv_kept, 0.5);
  EXPECT_FALSE(row("1e300", "50").heat.has_value());
  EXPECT_FALSE(row("2048", "-1e300").heat.has_value());
  EXPECT_FALSE(row("2048", "50.5").heat.has_value());
  EXPECT_FALSE(row("4294967296", "50").heat.has_value());
  EXPECT_FALSE(row("18446744073709551615", "50").heat.has_value());
  ASSERT_TRUE(row("-3", "50").heat.has_value());
  EXPECT_EQ(row("-3", "50").heat->first, -3);
  EXPECT_FALSE(row("\"2048\"", "50").heat.has_value());
  EXPECT_EQ(row("1e300", "50").score, 9.5) << "the row itself stays";
}

// A resume matches results by case, press and capacity: a capacity that is no int is no result of
// ours, and reading names the file and line.
TEST(ResultsFile, CapacityPastIntIsNotAResultLine) {
  const test::TempDir tmp("results_capacity");
  const fs::path& dir = tmp.path;
  const auto with = [](const char* cap) {
    return fmt::format(R"({{"case": "c", "press": "snapkv", "capacity": {}, "input_hash": "h", "placement": "end", )"
                       R"("score": 1, "kv_bytes_kept": 1, "kv_bytes_full": 2, "decode_s": 0.5}})", cap);
  };
  write_result_lines(results_path(dir.string(), "s"), {with("1024")});
  EXPECT_EQ(read_suite_results(dir.string(), "s", "end", "none").rows.size(), 1u);
  for (const char* cap : {"4294968320", "-1", "18446744073709551615", "1024.5"}) {
    write_result_lines(results_path(dir.string(), "s"), {with("1024"), with(cap)});
    try {
      read_suite_results(dir.string(), "s", "end", "none");
      ADD_FAILURE() << "capacity " << cap << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadFile);
      EXPECT_NE(std::string(e.what()).find("s.jsonl.gz:2:"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace snapkv
