// The niah and longeval_lines suites and the prompt rendering of `snapkv eval`, with the default
// model's tokenizer and chat template: sizes, placement, determinism and scoring.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>

#include "snapkv/chat.h"
#include "eval/eval_prompt.h"
#include "eval/metrics.h"
#include "eval/suite.h"
#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "support/eval_model.h"
#include "support/paths.h"
#include "util/error.h"

namespace snapkv {
namespace {

const test::EvalModel& model() { return test::eval_model(); }

std::vector<EvalCase> build(const std::string& suite, SuiteParams p,
                            QuestionPlacement placement = QuestionPlacement::kEnd) {
  p.data = test::data_dir();
  p.n_ctx = 8192;
  return make_suite(suite, p)->cases(*model().tok, [&](const EvalCase& c) { return test::placed_tokens(c, placement); });
}

int64_t tokens(const EvalCase& c) { return test::rendered_tokens(c); }

TEST(NiahScoring, Rouge1FMatchesHandComputedValues) {
  const char* needle = "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.";
  EXPECT_EQ(rouge_words("The cat, the CAT!  x2-y"), (std::vector<std::string>{"the", "cat", "the", "cat", "x2", "y"}));
  // ref 6 words, candidate 4; overlap the x2 (ref has two), cat x1: P = 3/4, R = 3/6, F = 0.6.
  EXPECT_NEAR(rouge1_f("the cat sat on the mat", "The cat, the CAT!"), 0.6, 1e-12);
  // The needle has 21 words; this answer's 8 all occur in it: P = 1, R = 8/21, F = 16/29.
  EXPECT_NEAR(rouge1_f(needle, "The best thing to do in San Francisco"), 16.0 / 29.0, 1e-12);
  EXPECT_EQ(rouge1_f(needle, ""), 0.0);
  EXPECT_EQ(rouge1_f(needle, "nothing relevant here"), 0.0);
  EXPECT_NEAR(needle_word_recall(needle, "Eat a sandwich in Dolores Park."), 4.0 / 11.0, 1e-12);
  EXPECT_EQ(needle_word_recall(needle, "the"), 0.0);

  const auto suite = make_suite("niah", SuiteParams{});
  const nlohmann::json s = suite->score(EvalCase{}, "Eat a  SANDWICH and sit in Dolores Park, they say.");
  EXPECT_EQ(s["substring"], 1);
  EXPECT_GT(s["score"].get<double>(), 0.0);
  EXPECT_EQ(suite->score(EvalCase{}, "Eat a sandwich.")["substring"], 0);
  EXPECT_NEAR(suite->score(EvalCase{}, needle)["score"].get<double>(), 10.0, 1e-12);
}

TEST(NiahSuite, CasesFillTheLengthAndHideTheNeedleAtItsDepth) {
  SuiteParams p;
  p.lengths = {1024, 2048};
  p.depths = {0, 50, 100};
  const std::vector<EvalCase> cases = build("niah", p);
  ASSERT_EQ(cases.size(), 6u);
  for (const EvalCase& c : cases) {
    const int length = c.meta["length"].get<int>(), depth = c.meta["depth"].get<int>();
    EXPECT_EQ(c.id, fmt::format("L{}_d{}", length, depth));
    const int64_t n = tokens(c) + c.max_tokens;
    EXPECT_LE(n, length + 4) << c.id;  // re-tokenizing the two seams may add a token or two
    EXPECT_GE(n, length - 16) << c.id;
    const size_t at = c.context.find("Dolores Park");
    ASSERT_NE(at, std::string::npos);
    const double where = static_cast<double>(at) / static_cast<double>(c.context.size());
    EXPECT_NEAR(where, depth / 100.0, 0.06) << c.id;
  }
  SuiteParams bad;
  bad.depths = {101};
  EXPECT_THROW(make_suite("niah", bad), Error);
  bad.depths = {};
  bad.lengths = {9000};
  bad.n_ctx = 8192;
  EXPECT_THROW(make_suite("niah", bad), Error);
  EXPECT_THROW(make_suite("nope", SuiteParams{}), Error);
}

TEST(EvalPrompt, PlacementMovesTheQuestionAndAgnosticSplitsBeforeIt) {
  EvalCase c;
  c.id = "x";
  c.context = "<document>\nThe sky is green today, said Ann.\n</document>";
  c.question = "What colour is the sky?";
  const test::EvalModel& m = model();
  const EvalPrompt end = render_eval_prompt(*m.tok, m.tmpl, c, QuestionPlacement::kEnd);
  const EvalPrompt first = render_eval_prompt(*m.tok, m.tmpl, c, QuestionPlacement::kFirst);
  const EvalPrompt agnostic = render_eval_prompt(*m.tok, m.tmpl, c, QuestionPlacement::kAgnostic);
  EXPECT_EQ(end.split, end.ids.size());
  EXPECT_EQ(first.split, first.ids.size());
  const std::string end_text = m.tok->decode(end.ids), first_text = m.tok->decode(first.ids);
  EXPECT_LT(end_text.find("</document>"), end_text.find("What colour"));
  EXPECT_GT(first_text.find("</document>"), first_text.find("What colour"));
  // Question-agnostic: the part before the split ends with the context; the rest holds the
  // question and the template's tail.
  ASSERT_LT(agnostic.split, agnostic.ids.size());
  const std::span<const int32_t> ids(agnostic.ids);
  const std::string before = m.tok->decode(ids.first(agnostic.split)), after = m.tok->decode(ids.subspan(agnostic.split));
  EXPECT_EQ(before.find("What colour"), std::string::npos);
  EXPECT_NE(before.find("</document>"), std::string::npos);
  EXPECT_EQ(after.find("What colour is the sky?"), after.find_first_not_of("\n")) << after;
  EXPECT_EQ(m.tok->decode(agnostic.ids), end_text);
  EXPECT_EQ(fnv1a_hex(end.ids).size(), 16u);
  EXPECT_NE(fnv1a_hex(end.ids), fnv1a_hex(first.ids));
}

TEST(LongEvalLines, GeneratedCasesFitTheirLengthAndAreSeeded) {
  SuiteParams p;
  p.tasks = {"generated"};
  p.lengths = {1024, 3000};
  p.depths = {0, 50, 100};
  const std::vector<EvalCase> a = build("longeval_lines", p);
  ASSERT_EQ(a.size(), 6u);
  for (const EvalCase& c : a) {
    const int length = c.meta["length"].get<int>();
    const int64_t n = tokens(c) + c.max_tokens;
    EXPECT_LE(n, length) << c.id;
    EXPECT_GE(n, length * 0.95) << c.id;
    // The asked line is in the record once, at its position, with the expected number.
    const std::string key = c.question.substr(c.question.find("in line ") + 8);
    const std::string line = fmt::format("line {}: REGISTER_CONTENT is <{}>\n", key.substr(0, key.find('?')),
                                         c.meta["expected"].get<int64_t>());
    const size_t at = c.context.find(line);
    ASSERT_NE(at, std::string::npos) << c.id;
    EXPECT_EQ(c.context.find(line, at + 1), std::string::npos);
    const int lines = c.meta["lines"].get<int>(), answer = c.meta["answer_line"].get<int>();
    EXPECT_EQ(answer, (lines - 1) * c.meta["position"].get<int>() / 100);
    EXPECT_EQ(std::count(c.context.begin(), c.context.begin() + static_cast<std::ptrdiff_t>(at), '\n'),
              answer + 2);  // the header ends with a blank line
  }
  EXPECT_EQ(build("longeval_lines", p)[4].context, a[4].context);
  p.seed = 7;
  EXPECT_NE(build("longeval_lines", p)[4].context, a[4].context);
}

TEST(LongEvalLines, ShippedCasesThatFitAndTheirScore) {
  SuiteParams p;
  p.tasks = {"shipped"};
  p.limit = 2;
  const std::vector<EvalCase> cases = build("longeval_lines", p);
  ASSERT_GE(cases.size(), 2u);
  EXPECT_EQ(cases[0].id, "shipped/200_lines/0");
  EXPECT_EQ(cases[0].meta["expected"], 2416);  // LongChat's first 200-line case: torpid-kid
  EXPECT_NE(cases[0].question.find("torpid-kid"), std::string::npos);
  for (const EvalCase& c : cases) EXPECT_LE(tokens(c) + c.max_tokens, 8192);
  const auto suite = make_suite("longeval_lines", p);
  EXPECT_EQ(suite->score(cases[0], "The number is <2416>.")["score"], 100);
  EXPECT_EQ(suite->score(cases[0], "2416, no wait, 2417")["score"], 0);  // LongEval takes the last number
  EXPECT_EQ(suite->score(cases[0], "I do not know")["parsed"], -1);
  p.tasks = {"nope"};
  EXPECT_THROW(make_suite("longeval_lines", p), Error);
}

}  // namespace
}  // namespace snapkv
