// The ruler suite: string_match_all on hand-computed answers; its parameters and data errors;
// generated cases (every task's references in its context, the answer counts, reproducibility
// per case) and their sizes, measured with the default model's tokenizer and chat template.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "snapkv/chat.h"
#include "eval/suite.h"
#include "eval/suites/suites.h"
#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "support/eval_model.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "util/error.h"

namespace snapkv {
namespace {

const std::vector<std::string> kAllTasks = {"niah_single_1",
                                            "niah_single_2",
                                            "niah_single_3",
                                            "niah_multikey_1",
                                            "niah_multikey_2",
                                            "niah_multikey_3",
                                            "niah_multivalue",
                                            "niah_multiquery",
                                            "vt",
                                            "cwe",
                                            "fwe"};

using test::rendered_tokens;
const test::EvalModel& real_tokenizer() { return test::eval_model(); }

int64_t approx_tokens(const EvalCase& c) {
  return static_cast<int64_t>((c.context.size() + c.question.size() + c.answer_prefix.size()) / 4 + 40);
}

SuiteParams params(std::vector<int> lengths, int limit, uint64_t seed = 7) {
  SuiteParams p;
  p.data = test::data_dir();
  p.lengths = std::move(lengths);
  p.limit = limit;
  p.seed = seed;
  return p;
}

// Every task at 1024 and 2048 tokens, 2 cases each, sized with the real tokenizer; made once.
const std::vector<EvalCase>& real_cases() {
  static const std::vector<EvalCase> cases = [] {
    const std::unique_ptr<Suite> s = make_ruler_suite(params({1024, 2048}, 2));
    return s->cases(*real_tokenizer().tok, rendered_tokens);
  }();
  return cases;
}

nlohmann::json score_of(std::vector<std::string> refs, std::string_view answer) {
  const std::unique_ptr<Suite> s = make_ruler_suite(SuiteParams{});
  EvalCase c;
  c.references = std::move(refs);
  return s->score(c, answer);
}

ErrorKind error_of(const std::function<void()>& f, std::string* message) {
  try {
    f();
  } catch (const Error& e) {
    *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error";
  return ErrorKind::kInternal;
}

TEST(RulerScore, StringMatchAllByHand) {
  nlohmann::json r = score_of({"1234567"}, " The number is 1234567.");
  EXPECT_DOUBLE_EQ(r["score"].get<double>(), 100);
  EXPECT_EQ(r["matched"], 1);
  EXPECT_EQ(r["refs"], 1);
  // Case-insensitive both ways; "ghi" is not there (only "gh"), "jkl" is.
  r = score_of({"abc", "DEF", "ghi", "jkl"}, "ABC, def, gh, JkL");
  EXPECT_DOUBLE_EQ(r["score"].get<double>(), 75);
  EXPECT_EQ(r["matched"], 3);
  EXPECT_EQ(r["refs"], 4);
  r = score_of({"Quizzical-ATM", "x"}, "quizzical-atm");
  EXPECT_DOUBLE_EQ(r["score"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(score_of({"abc"}, "").at("score").get<double>(), 0);
  EXPECT_DOUBLE_EQ(score_of({}, "anything").at("score").get<double>(), 0);
}

TEST(RulerScore, ControlCharactersBecomeNewlines) {
  // "foo\x07bar" is read as "foo\nbar": a reference with the space is not found, one with the
  // newline is; a tab is a control character too.
  EXPECT_DOUBLE_EQ(score_of({"foo bar"},
                            "foo\x07"
                            "bar")
                       .at("score")
                       .get<double>(),
                   0);
  EXPECT_DOUBLE_EQ(score_of({"foo\nbar"},
                            "foo\x07"
                            "bar")
                       .at("score")
                       .get<double>(),
                   100);
  EXPECT_DOUBLE_EQ(score_of({"foo\nbar"}, "\t foo\tbar \x1f").at("score").get<double>(), 100);
  // Stripped before and after: whitespace and control characters around the answer go away.
  EXPECT_DOUBLE_EQ(score_of({"\n"}, " \x01 \n").at("score").get<double>(), 0);
  EXPECT_DOUBLE_EQ(score_of({"a\nb"},
                            "\x02"
                            "A\x03"
                            "B\x04")
                       .at("score")
                       .get<double>(),
                   100);
}

TEST(RulerSuite, Description) {
  const std::unique_ptr<Suite> s = make_suite("ruler", SuiteParams{});
  EXPECT_EQ(s->name(), "ruler");
  EXPECT_EQ(s->score_name(), "string match all %");
  EXPECT_DOUBLE_EQ(s->score_max(), 100);
  EXPECT_EQ(s->heatmap(), (std::pair<std::string, std::string>{}));
}

TEST(RulerSuite, RejectsBadParameters) {
  std::string msg;
  SuiteParams p;
  p.tasks = {"niah_single_1", "qa_1"};
  EXPECT_EQ(error_of([&] { make_ruler_suite(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("qa_1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("niah_multiquery"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fwe"), std::string::npos) << msg;

  p = SuiteParams{};
  p.n_ctx = 8192;
  p.lengths = {4096, 16384};
  EXPECT_EQ(error_of([&] { make_ruler_suite(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("16384"), std::string::npos) << msg;
  p.n_ctx = 0;  // unknown context: any length
  EXPECT_NO_THROW(make_ruler_suite(p));
  p.lengths = {0};
  EXPECT_EQ(error_of([&] { make_ruler_suite(p); }, &msg), ErrorKind::kInvalidArgument);

  // Too short for the smallest case: an error when the cases are made.
  const std::unique_ptr<Suite> s = make_ruler_suite(params({200}, 1));
  EXPECT_EQ(error_of([&] { s->cases(*real_tokenizer().tok, approx_tokens); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("too short"), std::string::npos) << msg;
}

TEST(RulerSuite, DataErrorsNameTheFile) {
  namespace fs = std::filesystem;
  std::string msg;
  SuiteParams p;
  p.data = "/nonexistent/snapkv-data";
  const std::unique_ptr<Suite> missing = make_ruler_suite(p);  // cheap: nothing is read yet
  EXPECT_EQ(error_of([&] { missing->cases(*real_tokenizer().tok, approx_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("/nonexistent/snapkv-data/ruler/PaulGrahamEssays.json"), std::string::npos) << msg;

  const test::TempDir tmp("ruler");
  const fs::path& dir = tmp.path;
  fs::create_directories(dir / "ruler");
  std::ofstream(dir / "ruler/PaulGrahamEssays.json") << "{\"text\": 42}";
  p.data = dir.string();
  const std::unique_ptr<Suite> corrupt = make_ruler_suite(p);
  EXPECT_EQ(error_of([&] { corrupt->cases(*real_tokenizer().tok, approx_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("PaulGrahamEssays.json"), std::string::npos) << msg;

  std::ofstream(dir / "ruler/PaulGrahamEssays.json") << "{\"text\": \"Some words. More words.\"}";
  const std::unique_ptr<Suite> no_words = make_ruler_suite(p);
  EXPECT_EQ(error_of([&] { no_words->cases(*real_tokenizer().tok, approx_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("nounlist.txt"), std::string::npos) << msg;
}

TEST(RulerSuite, EveryTaskHasItsAnswersInItsContext) {
  const std::vector<EvalCase>& cases = real_cases();
  ASSERT_EQ(cases.size(), kAllTasks.size() * 2 * 2);
  const std::map<std::string, size_t> n_refs = {
      {"niah_multivalue", 4}, {"niah_multiquery", 4}, {"vt", 5}, {"cwe", 10}, {"fwe", 3}};
  const std::map<std::string, int> max_tokens = {{"vt", 30}, {"cwe", 120}, {"fwe", 50}};
  size_t k = 0;
  for (const std::string& task : kAllTasks) {
    for (const int length : {1024, 2048}) {
      for (int i = 0; i < 2; ++i, ++k) {
        const EvalCase& c = cases[k];
        SCOPED_TRACE(c.id);
        EXPECT_EQ(c.id, fmt::format("{}/L{}/i{:04d}", task, length, i));
        EXPECT_EQ(c.meta["task"], task);
        EXPECT_EQ(c.meta["length"], length);
        EXPECT_EQ(c.meta["index"], i);
        EXPECT_EQ(c.references.size(), n_refs.contains(task) ? n_refs.at(task) : 1u);
        EXPECT_EQ(c.max_tokens, max_tokens.contains(task) ? max_tokens.at(task) : 128);
        EXPECT_EQ(c.separator, "\n");
        EXPECT_TRUE(c.chat);
        EXPECT_FALSE(c.stop_at_newline);
        EXPECT_FALSE(c.question.empty());
        EXPECT_FALSE(c.answer_prefix.empty());
        for (const std::string& ref : c.references) EXPECT_NE(c.context.find(ref), std::string::npos) << ref;
        if (task.starts_with("niah")) {
          ASSERT_TRUE(c.meta.contains("depth"));
          EXPECT_GE(c.meta["depth"].get<int>(), 0);
          EXPECT_LE(c.meta["depth"].get<int>(), 100);
          EXPECT_NE(c.context.find("One of the special magic "), std::string::npos);
        }
      }
    }
  }
}

TEST(RulerSuite, TemplatesFollowRuler) {
  const std::vector<EvalCase>& cases = real_cases();
  const EvalCase& single = cases[0];  // niah_single_1: one answer, the singular template
  EXPECT_TRUE(
      single.context.starts_with("A special magic number is hidden within the following text. Make sure to "
                                 "memorize it. I will quiz you about the number afterwards.\n"))
      << single.context.substr(0, 200);
  EXPECT_TRUE(single.question.starts_with("What is the special magic number for ")) << single.question;
  EXPECT_TRUE(single.answer_prefix.starts_with(" The special magic number for ")) << single.answer_prefix;
  EXPECT_TRUE(single.answer_prefix.ends_with(" mentioned in the provided text is")) << single.answer_prefix;
  EXPECT_NE(single.context.find("The grass is green. The sky is blue."), std::string::npos);

  const EvalCase& multiquery = cases[7 * 4];
  ASSERT_EQ(multiquery.meta["task"], "niah_multiquery");
  EXPECT_TRUE(multiquery.question.starts_with("What are all the special magic numbers for ")) << multiquery.question;
  EXPECT_NE(multiquery.question.find(", and "), std::string::npos) << multiquery.question;

  const EvalCase& vt = cases[8 * 4];
  ASSERT_EQ(vt.meta["task"], "vt");
  EXPECT_NE(
      vt.context.find("\nMemorize and track the chain(s) of variable assignment hidden in the following text.\n\n"),
      std::string::npos);
  EXPECT_TRUE(vt.context.starts_with("Memorize and track")) << "the in-context example comes first";
  EXPECT_TRUE(vt.answer_prefix.ends_with(", they are: ")) << vt.answer_prefix;
  EXPECT_NE(vt.context.find("VAR " + vt.references[1] + " = VAR " + vt.references[0] + " "), std::string::npos);

  const EvalCase& cwe = cases[9 * 4];
  EXPECT_EQ(cwe.question, "Question: What are the 10 most common words in the above list?");
  EXPECT_NE(cwe.context.find("most often in the list are: 1. "), std::string::npos) << "the few-shot example";

  const EvalCase& fwe = cases[10 * 4];
  EXPECT_TRUE(fwe.context.starts_with("Read the following coded text")) << fwe.context.substr(0, 100);
  EXPECT_NE(fwe.context.find("... "), std::string::npos) << "the noise word";
}

TEST(RulerSuite, SizedCloseToTheLength) {
  for (const EvalCase& c : real_cases()) {
    const int length = c.meta["length"].get<int>();
    const int64_t total = rendered_tokens(c) + c.max_tokens;
    EXPECT_LE(total, length) << c.id;
    EXPECT_GT(total, length * 85 / 100) << c.id;
  }
}

TEST(RulerSuite, ReproducibleCaseByCase) {
  // The same seed gives the same cases whatever the tasks, lengths and limit asked for.
  const std::unique_ptr<Suite> all = make_ruler_suite(params({4096, 8192}, 2));
  const std::vector<EvalCase> a = all->cases(*real_tokenizer().tok, approx_tokens);
  ASSERT_EQ(a.size(), kAllTasks.size() * 2 * 2);
  SuiteParams p = params({8192}, 1);
  p.tasks = {"niah_multikey_1", "vt", "fwe"};
  const std::vector<EvalCase> b = make_ruler_suite(p)->cases(*real_tokenizer().tok, approx_tokens);
  ASSERT_EQ(b.size(), 3u);
  for (const EvalCase& c : b) {
    const auto it = std::find_if(a.begin(), a.end(), [&](const EvalCase& x) { return x.id == c.id; });
    ASSERT_NE(it, a.end()) << c.id;
    EXPECT_EQ(it->context, c.context) << c.id;
    EXPECT_EQ(it->question, c.question) << c.id;
    EXPECT_EQ(it->answer_prefix, c.answer_prefix) << c.id;
    EXPECT_EQ(it->references, c.references) << c.id;
  }
  // Another seed: other cases.
  const std::vector<EvalCase> other =
      make_ruler_suite(params({4096, 8192}, 2, 8))->cases(*real_tokenizer().tok, approx_tokens);
  ASSERT_EQ(other.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(other[i].id, a[i].id);
    EXPECT_NE(other[i].context, a[i].context) << a[i].id;
  }
  // Two cases of one task differ.
  EXPECT_NE(a[0].context, a[1].context);
  EXPECT_NE(a[0].references, a[1].references);
}

}  // namespace
}  // namespace snapkv
