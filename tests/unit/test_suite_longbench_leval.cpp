// The longbench (multi_news) and leval suites on the shared data, measured with the default
// model's tokenizer and chat template as the runner renders a case: the prompt's parts and
// sizes, LongBench's middle truncation, L-Eval's fit filter, scores of the references
// themselves, and the errors for bad parameters and missing or broken data.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
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

using test::rendered_tokens;
const test::EvalModel& real_tokenizer() { return test::eval_model(); }

SuiteParams params(int n_ctx, int limit, std::vector<std::string> tasks = {}) {
  SuiteParams p;
  p.data = test::data_dir();
  p.n_ctx = n_ctx;
  p.limit = limit;
  p.tasks = std::move(tasks);
  return p;
}

ErrorKind error_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error";
  return ErrorKind::kInternal;
}

std::vector<nlohmann::json> read_jsonl(const std::string& path, size_t n) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<nlohmann::json> out;
  std::string line;
  while (out.size() < n && std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

// ---- longbench ----

TEST(SuiteLongBench, CasesAreTheRecordsPrompts) {
  const auto suite = make_longbench_suite(params(/*n_ctx=*/0, /*limit=*/3));
  EXPECT_EQ(suite->name(), "longbench");
  EXPECT_EQ(suite->score_name(), "ROUGE-L F x100");
  const auto cases = suite->cases(*real_tokenizer().tok, rendered_tokens);
  const auto records = read_jsonl(test::data_dir() + "/longbench/data/multi_news.jsonl", 3);
  ASSERT_EQ(cases.size(), 3u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const EvalCase& c = cases[i];
    EXPECT_EQ(c.id, "multi_news/" + records[i]["_id"].get<std::string>());
    EXPECT_EQ(c.context, "You are given several news passages. Write a one-page summary of all news. \n\nNews:\n" +
                             records[i]["context"].get<std::string>());
    EXPECT_EQ(c.question, "\n\nNow, write a one-page summary of all the news.\n\nSummary:");
    EXPECT_EQ(c.separator, "");
    EXPECT_TRUE(c.chat);
    EXPECT_TRUE(c.system.empty());
    EXPECT_EQ(c.max_tokens, 512);  // dataset2maxlen.json
    EXPECT_EQ(c.references, records[i]["answers"].get<std::vector<std::string>>());
    EXPECT_EQ(c.meta["task"], "multi_news");
    EXPECT_EQ(c.meta["index"], static_cast<int>(i));
    EXPECT_EQ(c.meta["length"].get<int64_t>(), rendered_tokens(c));
  }
  // The reference scores (almost) 100 against itself, nothing scores 0.
  EXPECT_NEAR(suite->score(cases[0], cases[0].references[0])["score"].get<double>(), 100, 1e-5);
  EXPECT_EQ(suite->score(cases[0], "")["score"].get<double>(), 0);
  const double other = suite->score(cases[0], cases[1].references[0])["score"].get<double>();
  EXPECT_GT(other, 0);
  EXPECT_LT(other, 50);
}

TEST(SuiteLongBench, TruncatesTheContextInTheMiddle) {
  const int n_ctx = 2048, max_tokens = 512;
  const auto cases = make_longbench_suite(params(n_ctx, 4))->cases(*real_tokenizer().tok, rendered_tokens);
  const auto records = read_jsonl(test::data_dir() + "/longbench/data/multi_news.jsonl", 4);
  ASSERT_EQ(cases.size(), 4u);  // truncation never drops a record
  const std::string prefix = "You are given several news passages. Write a one-page summary of all news. \n\nNews:\n";
  int truncated = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const EvalCase& c = cases[i];
    const std::string full = records[i]["context"].get<std::string>();
    const int64_t length = rendered_tokens(c);
    EXPECT_EQ(c.meta["length"].get<int64_t>(), length);
    EXPECT_LE(length + max_tokens, n_ctx) << c.id;
    if (c.context == prefix + full) continue;
    ++truncated;
    EXPECT_GE(length, n_ctx - max_tokens - 16) << c.id << ": the cut should keep about all that fits";
    EXPECT_LT(c.context.size(), prefix.size() + full.size());
    EXPECT_EQ(c.context.substr(0, prefix.size() + 300), prefix + full.substr(0, 300)) << c.id << ": head kept";
    EXPECT_EQ(c.context.substr(c.context.size() - 300), full.substr(full.size() - 300)) << c.id << ": tail kept";
    EXPECT_EQ(c.question, "\n\nNow, write a one-page summary of all the news.\n\nSummary:");
  }
  EXPECT_GE(truncated, 3);  // multi_news records are ~2,800 tokens
}

TEST(SuiteLongBench, BadParameters) {
  std::string msg;
  SuiteParams p = params(0, 1);
  p.lengths = {1024};
  EXPECT_EQ(error_of([&] { make_longbench_suite(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("lengths"), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] { make_longbench_suite(params(0, 1, {"gov_report"})); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("multi_news"), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] { make_longbench_suite(params(0, -1)); }), ErrorKind::kInvalidArgument);
  // A context too small for the 512 answer tokens.
  const auto small = make_longbench_suite(params(400, 1));
  EXPECT_EQ(error_of([&] { small->cases(*real_tokenizer().tok, rendered_tokens); }), ErrorKind::kInvalidArgument);
  EXPECT_NO_THROW(make_longbench_suite(params(0, 1, {"multi_news"})));
}

TEST(SuiteLongBench, MissingOrBrokenDataIsBadFile) {
  const test::TempDir tmp("longbench");
  const auto& dir = tmp.path;
  SuiteParams p = params(0, 1);
  p.data = dir.string();
  std::string msg;
  const auto suite = make_longbench_suite(p);
  EXPECT_EQ(error_of([&] { suite->cases(*real_tokenizer().tok, rendered_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("dataset2prompt.json"), std::string::npos) << msg;
  // The configs, but no data file; then a data file that is not JSON.
  std::filesystem::create_directories(dir / "longbench" / "data");
  std::filesystem::copy(test::data_dir() + "/longbench/config", dir / "longbench" / "config");
  EXPECT_EQ(error_of([&] { suite->cases(*real_tokenizer().tok, rendered_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("multi_news.jsonl"), std::string::npos) << msg;
  std::ofstream(dir / "longbench" / "data" / "multi_news.jsonl") << "{\"context\": \"x\"\n";
  EXPECT_EQ(error_of([&] { suite->cases(*real_tokenizer().tok, rendered_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("multi_news.jsonl:1"), std::string::npos) << msg;
  std::ofstream(dir / "longbench" / "data" / "multi_news.jsonl") << "{\"context\": \"x\", \"answers\": [\"y\"]}\n";
  EXPECT_EQ(error_of([&] { suite->cases(*real_tokenizer().tok, rendered_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("_id"), std::string::npos) << msg;
}

// ---- leval ----

TEST(SuiteLEval, KeepsOnlyCasesThatFit) {
  // tpo documents are ~3,000 words: some of their questions fit 4096 tokens, none fit 1024.
  const auto& tok = *real_tokenizer().tok;
  const auto fit = make_leval_suite(params(4096, 6, {"tpo"}))->cases(tok, rendered_tokens);
  ASSERT_EQ(fit.size(), 6u);
  const auto records = read_jsonl(test::data_dir() + "/leval/Closed-ended-tasks/tpo.jsonl", 15);
  for (const EvalCase& c : fit) {
    const int doc = c.meta["doc"], index = c.meta["index"];
    EXPECT_EQ(c.id, fmt::format("tpo/{}/{}", doc, index));
    EXPECT_EQ(c.meta["task"], "tpo");
    EXPECT_EQ(c.meta["length"].get<int64_t>(), rendered_tokens(c));
    EXPECT_LE(c.meta["length"].get<int64_t>() + c.max_tokens, 4096);
    const auto& r = records.at(static_cast<size_t>(doc));
    EXPECT_EQ(c.context, "Document is as follows. " + r["input"].get<std::string>());
    EXPECT_EQ(c.question, "Question: " + r["instructions"][index].get<std::string>() +
                              " \nPlease directly give answer without any additional output or explanation\n Answer: ");
    EXPECT_EQ(c.references, std::vector<std::string>{r["outputs"][index].get<std::string>()});
    EXPECT_EQ(c.system.rfind("Now you are given a very long document.", 0), 0u);
  }
  // Documents that do not fit are skipped, in file order: every document before the first kept
  // one is too long with its first question.
  const int first_doc = fit[0].meta["doc"];
  for (int d = 0; d < first_doc; ++d) {
    EvalCase c = fit[0];
    c.context = "Document is as follows. " + records[static_cast<size_t>(d)]["input"].get<std::string>();
    EXPECT_GT(rendered_tokens(c) + c.max_tokens, 4096) << "doc " << d;
  }
  EXPECT_TRUE(make_leval_suite(params(1024, 0, {"tpo"}))->cases(tok, rendered_tokens).empty());
}

TEST(SuiteLEval, PromptsAndScoresPerTask) {
  const auto suite = make_leval_suite(params(/*n_ctx=*/0, /*limit=*/1, {"gsm100", "coursera", "quality", "sci_fi",
                                                                         "topic_retrieval_longchat", "natural_question"}));
  EXPECT_EQ(suite->score_name(), "exam/F1 %");
  const auto cases = suite->cases(*real_tokenizer().tok, rendered_tokens);
  ASSERT_EQ(cases.size(), 6u);
  std::map<std::string, const EvalCase*> by_task;
  for (const EvalCase& c : cases) by_task[c.meta["task"].get<std::string>()] = &c;
  ASSERT_EQ(by_task.size(), 6u);

  const EvalCase& gsm = *by_task["gsm100"];
  EXPECT_EQ(gsm.separator, "\n\n");
  EXPECT_EQ(gsm.system.rfind("Given several question answer pairs", 0), 0u);
  EXPECT_EQ(gsm.references[0], "18");
  EXPECT_EQ(suite->score(gsm, "She sells 9 eggs for $2 each. The answer is 18.")["score"], 100.0);
  EXPECT_EQ(suite->score(gsm, "She sells 9 eggs for $2 each. The answer is 19.")["score"], 0.0);

  const EvalCase& coursera = *by_task["coursera"];
  EXPECT_EQ(coursera.references[0], "C");
  EXPECT_EQ(suite->score(coursera, " C")["score"], 100.0);
  EXPECT_EQ(suite->score(coursera, "B")["score"], 0.0);

  const EvalCase& quality = *by_task["quality"];
  EXPECT_EQ(quality.references[0].substr(0, 4), "(B) ");
  EXPECT_EQ(suite->score(quality, "B")["score"], 100.0);
  EXPECT_EQ(suite->score(quality, "The answer is (C)")["score"], 0.0);

  const EvalCase& sci_fi = *by_task["sci_fi"];
  EXPECT_EQ(sci_fi.references[0], "True [fact: False]");
  EXPECT_EQ(suite->score(sci_fi, "True")["score"], 100.0);
  EXPECT_EQ(suite->score(sci_fi, "False, it is not")["score"], 0.0);
  EXPECT_EQ(sci_fi.system.rfind("Now you are given a scientific fiction.", 0), 0u);

  const EvalCase& topic = *by_task["topic_retrieval_longchat"];
  EXPECT_EQ(suite->score(topic, topic.references[0] + ".")["score"], 100.0);
  EXPECT_EQ(suite->score(topic, "Something else")["score"], 0.0);

  const EvalCase& nq = *by_task["natural_question"];
  EXPECT_EQ(nq.references[0], "April 25 , 2018");
  EXPECT_EQ(nq.question,
            "Instruction: when did season 2 of handmaid's tale start The suggested output length is around 4 words. Output: ");
  EXPECT_DOUBLE_EQ(suite->score(nq, "April 25, 2018")["score"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(suite->score(nq, "It started in April 2018")["score"].get<double>(), 100 * 2 * (2.0 / 5) * (2.0 / 3) / (2.0 / 5 + 2.0 / 3));
  EXPECT_EQ(nq.system.rfind("Now you are given a very long document. Please follow the instruction after", 0), 0u);
}

TEST(SuiteLEval, BadParametersAndData) {
  std::string msg;
  EXPECT_EQ(error_of([&] { make_leval_suite(params(0, 1, {"tpo", "narrative_qa"})); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("narrative_qa"), std::string::npos) << msg;
  EXPECT_NE(msg.find("coursera"), std::string::npos) << msg;  // lists the known tasks
  SuiteParams p = params(0, 1);
  p.lengths = {4096};
  EXPECT_EQ(error_of([&] { make_leval_suite(p); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(error_of([&] { make_leval_suite(params(-5, 1)); }), ErrorKind::kInvalidArgument);

  const test::TempDir tmp("leval");
  const auto& dir = tmp.path;
  p = params(0, 1, {"tpo"});
  p.data = dir.string();
  const auto suite = make_leval_suite(p);
  EXPECT_EQ(error_of([&] { suite->cases(*real_tokenizer().tok, rendered_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("tpo.jsonl"), std::string::npos) << msg;
  std::filesystem::create_directories(dir / "leval" / "Closed-ended-tasks");
  std::ofstream(dir / "leval" / "Closed-ended-tasks" / "tpo.jsonl") << "{\"input\": \"doc\", \"instructions\": [\"q\"]}\n";
  EXPECT_EQ(error_of([&] { suite->cases(*real_tokenizer().tok, rendered_tokens); }, &msg), ErrorKind::kBadFile);
  EXPECT_NE(msg.find("tpo.jsonl:1"), std::string::npos) << msg;
}

}  // namespace
}  // namespace snapkv
