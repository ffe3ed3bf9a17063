// `snapkv compress`, `run --context` and `chat --context / --save` through the real binary: a
// question on a saved context answers what the same question with the document answers (pressed
// context: question-agnostic; whole context pressed at the question: one prefill of both);
// several questions on one context come out as JSON lines; bad context files and flag mixes end
// with one error line.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

// A ~900-token document (the first essays of the needle haystack) compressed twice: whole, and
// with SnapKV at capacity 256.
struct Files {
  test::TempDir tmp{"cli_ctx"};
  const fs::path& dir = tmp.path;
  const fs::path doc = dir / "doc.txt", whole = dir / "whole.snapkv", pressed = dir / "pressed.snapkv";

  Files() {
    std::string text;
    const fs::path essays = fs::path(test::data_dir()) / "niah_paulgraham/PaulGrahamEssays";
    for (const fs::path& e : std::set<fs::path>(fs::directory_iterator(essays), fs::directory_iterator())) {
      text += test::slurp(e);
      if (text.size() > 4000) break;
    }
    std::ofstream(doc) << text.substr(0, 3600);
    const std::string base = fmt::format("compress -m {} -t 2 --chat -f {}", test::default_model_path(), doc.string());
    const test::CliRun a = test::run_cli(base + " --kv-press full -o " + whole.string());
    EXPECT_EQ(a.status, 0) << a.err;
    EXPECT_NE(a.err.find("on disk"), std::string::npos) << a.err;
    const test::CliRun b = test::run_cli(base + " --kv-capacity 256 -o " + pressed.string());
    EXPECT_EQ(b.status, 0) << b.err;
  }
};

const Files& files() {
  static const Files f;
  return f;
}

const std::string kQuestion = "What is the essay about? Answer in one sentence.";

std::string run_args() { return fmt::format("run -m {} -t 2 -n 24", test::default_model_path()); }

std::string answer(const std::string& args) {
  const test::CliRun r = test::run_cli(run_args() + " " + args);
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  return r.out;
}

TEST(CliContext, SavedContextsAnswerAsTheDocumentDoes) {
  const Files& f = files();
  const std::string q = " --question '" + kQuestion + "'";
  const std::string with_doc = "--chat -f " + f.doc.string() + q;
  // Pressed when saved: the question comes after the press (question-agnostic).
  const std::string agnostic = answer(with_doc + " --kv-press snapkv --kv-capacity 256 --question-agnostic");
  EXPECT_FALSE(agnostic.empty());
  EXPECT_EQ(answer("--context " + f.pressed.string() + q), agnostic);
  // Saved whole, pressed at the question: the document and the question in one prefill.
  EXPECT_EQ(answer("--context " + f.whole.string() + q + " --kv-press snapkv --kv-capacity 256"),
            answer(with_doc + " --kv-press snapkv --kv-capacity 256"));
  // Saved whole, asked with the full cache.
  EXPECT_EQ(answer("--context " + f.whole.string() + q), answer(with_doc));
  EXPECT_LT(fs::file_size(f.pressed) * 2, fs::file_size(f.whole));
}

TEST(CliContext, QuestionsFileGivesOneJsonLineEach) {
  const Files& f = files();
  const fs::path qs = f.dir / "qs.txt";
  std::ofstream(qs) << kQuestion << "\n\nWho wrote it?\r\nName one idea from it.\n";
  const test::CliRun r =
      test::run_cli(run_args() + " --context " + f.pressed.string() + " --questions-file " + qs.string() + " --jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[0]["question"], kQuestion);
  EXPECT_EQ(rows[1]["question"], "Who wrote it?");
  for (const auto& j : rows) {
    EXPECT_GT(j["generated_tokens"].get<int>(), 0);
    EXPECT_GT(j["context_tokens"].get<int>(), 500);
  }
  // Decoded in one batch, each answer is the one it gets alone.
  EXPECT_EQ(rows[0]["answer"].get<std::string>() + "\n",
            answer("--context " + f.pressed.string() + " --question '" + kQuestion + "'"));
  // With speculation the drafts go into the batch's steps, and the answers stay.
  const test::CliRun spec = test::run_cli(run_args() + " --context " + f.pressed.string() + " --questions-file " +
                                          qs.string() + " --jsonl --spec prompt-lookup --spec-ngram-min 1");
  ASSERT_EQ(spec.status, 0) << spec.err;
  std::istringstream spec_lines(spec.out);
  size_t i = 0;
  for (std::string line; std::getline(spec_lines, line); ++i) {
    ASSERT_LT(i, rows.size()) << spec.out;
    EXPECT_EQ(nlohmann::json::parse(line)["answer"], rows[i]["answer"]) << i;
  }
  EXPECT_EQ(i, rows.size());
  EXPECT_NE(spec.err.find("spec prompt-lookup"), std::string::npos) << spec.err;
}

TEST(CliContext, ChatContinuesAContextAndSavesTheConversation) {
  const Files& f = files();
  const fs::path conv = f.dir / "conv.snapkv", input = f.dir / "chat.txt";
  std::ofstream(input) << "Who wrote it?\nWhy?\n";
  const test::CliRun r = test::run_cli(fmt::format("chat -m {} -t 2 -n 12 --context {} --save {} < {}",
                                                   test::default_model_path(), f.pressed.string(), conv.string(),
                                                   input.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("turn 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("saved " + conv.string()), std::string::npos) << r.err;
  EXPECT_FALSE(answer("--context " + conv.string() + " --question 'And then?'").empty());
}

TEST(CliContext, InspectSaysWhatAFileHolds) {
  const Files& f = files();
  const test::CliRun r = test::run_cli("inspect " + f.pressed.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("checksums verified"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pressed: snapkv (capacity 256"), std::string::npos) << r.out;
  const test::CliRun w = test::run_cli("inspect " + f.whole.string());
  EXPECT_NE(w.out.find("whole"), std::string::npos) << w.out;
}

TEST(CliContext, BadContextFilesEndWithOneErrorLine) {
  const Files& f = files();
  const std::string run = run_args() + " --question hi --context ";
  const auto bytes = [&] {
    std::ifstream in(f.pressed, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const auto write = [&](const std::string& name, const std::string& b) {
    std::ofstream(f.dir / name, std::ios::binary) << b;
    return (f.dir / name).string();
  };
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  test::expect_cli_error(run + write("flip.snapkv", flipped), "checksum");
  test::expect_cli_error("inspect " + (f.dir / "flip.snapkv").string(), "checksum");
  test::expect_cli_error(run + write("cut.snapkv", bytes.substr(0, bytes.size() - 100)), "truncated");
  test::expect_cli_error(run + write("empty.snapkv", ""), "empty");
  test::expect_cli_error(run + f.doc.string(), "not a snapkv context file");
  test::expect_cli_error(run + (f.dir / "missing.snapkv").string(), "missing.snapkv");
  test::expect_cli_error(run + f.pressed.string() + " --kv-press snapkv", "already pressed");
  test::expect_cli_error(run + f.whole.string() + " --kv-press h2o", "h2o");
  test::expect_cli_error(run + f.pressed.string() + " -p text", "--context");
  test::expect_cli_error(run_args() + " --context " + f.pressed.string(), "--question");
  test::expect_cli_error(run_args() + " -p hi --jsonl", "--context");
  const std::string compress = fmt::format("compress -m {} -t 2 -p hi", test::default_model_path());
  test::expect_cli_error(compress, "-o");
  test::expect_cli_error(compress + " -o " + (f.dir / "no/such/dir/x.snapkv").string(), "x.snapkv");
  EXPECT_FALSE(fs::exists(f.dir / "no"));
}

}  // namespace
}  // namespace snapkv
