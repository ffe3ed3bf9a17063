// Answer metrics of the LongBench and L-Eval suites: LongBench's ROUGE-L against pltrdy rouge
// 1.0.1 itself (tests/fixtures/metrics_rouge_l.json, tools/reference/make_metrics_fixture.py);
// SQuAD normalisation and token F1, and L-Eval's answer extraction and exact match, on cases
// whose values were computed by hand and checked with LongBench's and L-Eval's Python.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "eval/metrics.h"
#include "support/paths.h"

namespace snapkv {
namespace {

TEST(MetricsLongBenchRouge, MatchesPltrdyRouge) {
  std::ifstream in(test::fixture_path("metrics_rouge_l.json"));
  ASSERT_TRUE(in.good()) << "missing tests/fixtures/metrics_rouge_l.json";
  const auto fx = nlohmann::json::parse(in);
  int n = 0, errors = 0;
  for (const auto& c : fx["cases"]) {
    const std::string pred = c["prediction"], ref = c["reference"];
    EXPECT_NEAR(longbench_rouge_l(pred, ref), c["f"].get<double>(), 1e-6) << c["name"];
    errors += c.contains("error") ? 1 : 0;
    ++n;
  }
  EXPECT_GE(n, 30);
  EXPECT_GE(errors, 5);  // ValueError (empty sides) and RecursionError cases are covered
}

TEST(MetricsLongBenchRouge, EdgeCases) {
  EXPECT_EQ(longbench_rouge_l("", "a b"), 0);
  EXPECT_EQ(longbench_rouge_l("a b", "..."), 0);
  EXPECT_NEAR(longbench_rouge_l("a b c", "a b c"), 2.0 * (1.0 / (2.0 + 1e-8)), 1e-15);
  // Words are sets: repeating a word changes nothing.
  EXPECT_DOUBLE_EQ(longbench_rouge_l("a a b", "a b"), longbench_rouge_l("a b", "a b"));
  // One sentence of kLongBenchRougeMaxFrames - 1 words backtracks that many frames and still scores.
  std::string ok, too_long;
  for (int i = 0; i < kLongBenchRougeMaxFrames; ++i) {
    (i + 1 < kLongBenchRougeMaxFrames ? ok : too_long) += fmt::format("w{} ", i);
  }
  too_long = ok + too_long;
  EXPECT_GT(longbench_rouge_l(ok, ok), 0.99);
  EXPECT_EQ(longbench_rouge_l(too_long, too_long), 0);  // RecursionError in Python
}

TEST(MetricsQaF1, NormalizeAnswer) {
  EXPECT_EQ(normalize_answer("The Quick, brown fox!"), "quick brown fox");
  EXPECT_EQ(normalize_answer("an apple a day"), "apple day");
  EXPECT_EQ(normalize_answer("A.B. the_end"), "ab theend");
  EXPECT_EQ(normalize_answer("Th\u00e9o and the  r\u00e9sum\u00e9"), "th\u00e9o and r\u00e9sum\u00e9");
  EXPECT_EQ(normalize_answer("\u2018the\u2019 end"), "\u2018 \u2019 end");
  EXPECT_EQ(normalize_answer("the\u00a0end\tof  a\nline"), "end of line");
  EXPECT_EQ(normalize_answer("\u00c0B the \u03a9mega"), "\u00e0b \u03c9mega");
  EXPECT_EQ(normalize_answer(""), "");
  // L-Eval does not lower-case.
  EXPECT_EQ(normalize_answer("The Quick, brown fox!", false), "The Quick brown fox");
  EXPECT_EQ(normalize_answer("A.B. the_end", false), "AB theend");
}

TEST(MetricsQaF1, TokenF1) {
  // "cat sat on mat" vs "cat on mat": 3 in common, P = 3/4, R = 1.
  EXPECT_DOUBLE_EQ(qa_f1("the cat sat on the mat", "a cat on a mat"), 2 * 0.75 / 1.75);
  // Multiset intersection: {x, y} of "x x y" and "x y y".
  EXPECT_DOUBLE_EQ(qa_f1("x x y", "x y y"), 2.0 / 3.0);
  EXPECT_EQ(qa_f1("Paris", "paris"), 1);
  EXPECT_EQ(qa_f1("Paris", "paris", /*lowercase=*/false), 0);
  EXPECT_EQ(qa_f1("\u00dcn\u00efcode Word", "\u00fcn\u00efcode word"), 1);
  EXPECT_EQ(qa_f1("", "x"), 0);
  EXPECT_EQ(qa_f1("the", "a"), 0);  // nothing left after normalisation
}

TEST(MetricsLEval, MultipleChoiceExtraction) {
  EXPECT_EQ(leval_mc_answer("", false), "None");
  EXPECT_EQ(leval_mc_answer("  ", false), "None");
  EXPECT_EQ(leval_mc_answer("B", false), "B");
  EXPECT_EQ(leval_mc_answer(" The answer is C.", false), "C");
  EXPECT_EQ(leval_mc_answer("Answer: C", false), "A");  // L-Eval takes the first of A-D, even in "Answer"
  // coursera (several correct options)
  EXPECT_EQ(leval_mc_answer("AB", true), "AB");
  EXPECT_EQ(leval_mc_answer("BD", true), "BD");
  EXPECT_EQ(leval_mc_answer("DB and more", true), "BD");
  EXPECT_EQ(leval_mc_answer("A, C and D", true), "AC");
  EXPECT_EQ(leval_mc_answer("The correct options are B) and D).", true), "BD");
  EXPECT_EQ(leval_mc_answer("Question 2: C", true), "A");
  EXPECT_EQ(leval_mc_answer("xx BCD yy", true), "D");
  EXPECT_EQ(leval_mc_answer(" C", true), "C");
  EXPECT_EQ(leval_mc_answer("C\nQuestion 3: A. foo", true), "C");
  EXPECT_EQ(leval_mc_answer("B. and then C", true), "B");
  EXPECT_EQ(leval_mc_answer("none", true), "A");
  EXPECT_EQ(leval_mc_reference("(B) Their subconscious knew"), "B");
  EXPECT_EQ(leval_mc_reference("AC"), "AC");
  EXPECT_EQ(leval_mc_reference(""), "A");
}

TEST(MetricsLEval, MathAndJudgeExtraction) {
  EXPECT_EQ(leval_math_answer("so 3+4=7. The answer is 7."), "7");
  EXPECT_EQ(leval_math_answer("The answer is $1,250.50 dollars"), "1250");
  EXPECT_EQ(leval_math_answer("no answer here"), "");
  EXPECT_EQ(leval_math_answer("We get 12 apples and 5 pears\n\nThe total 99"), "5");
  EXPECT_EQ(leval_math_answer("The answer is  18"), "18");
  EXPECT_EQ(leval_math_answer("18"), "18");
  EXPECT_EQ(leval_math_answer("The answer is 4, and The answer is 5"), "4");
  EXPECT_EQ(leval_judge_answer("True. Because"), "true");
  EXPECT_EQ(leval_judge_answer("It is false"), "false");
  EXPECT_EQ(leval_judge_answer("Not sure"), "<error>");
  EXPECT_EQ(leval_judge_answer("untrue"), "true");
  EXPECT_EQ(leval_judge_answer("FALSE [fact: true]"), "false");
  EXPECT_EQ(leval_judge_reference("True [fact: False]"), "true");
  EXPECT_EQ(leval_judge_reference(" False [fact: True]"), "false");
}

TEST(MetricsLEval, ExactMatch) {
  EXPECT_EQ(leval_exact_match("C", "C"), 1);
  EXPECT_EQ(leval_exact_match("AC", "ACD"), 0.25);
  EXPECT_EQ(leval_exact_match("AB", "ACD"), 0);
  EXPECT_EQ(leval_exact_match("None", "A"), 0);
  EXPECT_EQ(leval_exact_match("18", "18"), 1);
  EXPECT_EQ(leval_exact_match("018", "18.0"), 1);
  EXPECT_EQ(leval_exact_match("1_000", "1000"), 1);
  EXPECT_EQ(leval_exact_match(" 7 ", "7"), 1);
  EXPECT_EQ(leval_exact_match("", "18"), 0);
  EXPECT_EQ(leval_exact_match("The role of art in society is the topic.", "The role of art in society"), 1);
  EXPECT_EQ(leval_exact_match("\nX\nThe role of art in society", "The role of art in society"), 1);
  EXPECT_EQ(leval_exact_match("Sports", "The role of art"), 0);
  EXPECT_EQ(leval_exact_match("true", "true"), 1);
  EXPECT_EQ(leval_exact_match("<error>", "false"), 0);
  EXPECT_EQ(leval_exact_match("A", ""), 0);
  EXPECT_EQ(leval_exact_match("", ""), 1);
}

}  // namespace
}  // namespace snapkv
