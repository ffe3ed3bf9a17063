// L-Eval (OpenLMLab/LEval), the tasks with automatic short-answer metrics:
//   exam (Closed-ended-tasks, every record): coursera, gsm100, quality, sci_fi,
//        topic_retrieval_longchat, tpo;
//   f1   (Open-ended-tasks, only the records whose "evaluation" is "f1"): financial_qa,
//        legal_contract_qa, multidoc_qa, natural_question, scientific_qa.
// (codeU and narrative_qa are not in the shared data; the rouge / LLM / human records are
// open-ended generation, not short answers.) One case per (document, instruction); a case is
// kept only when its rendered prompt plus its answer fits the context, since L-Eval's own cut
// (dropping words from the end of the document) would remove what the questions ask about.
//
// Prompts as L-Eval's chat-API baseline (Baselines/turbo16k-test.py): the system message is
// get_sys_prompt() of Baselines/LEval_config.py (typos kept), the user message
//   gsm100:  {document}\n\n{instruction}
//   exam:    Document is as follows. {document} Question: {instruction} \nPlease directly give
//            answer without any additional output or explanation\n Answer:
//   f1:      Document is as follows. {document} Instruction: {instruction} The suggested output
//            length is around {words of the reference} words. Output:
// Scores as Evaluation/auto_eval.py and em.py (eval/metrics.h), x100: multiple choice after
// letter extraction (coursera may have several letters; a strict subset scores 25), gsm100 on
// the number after "The answer is", topic_retrieval on the topic name, sci_fi on the
// document-based True/False (the second, knowledge-only "[fact: ...]" answer L-Eval asks for in a
// separate prompt is not asked), f1 by token F1 without lower-casing (as L-Eval's normalisation).
// L-Eval generates up to 512 tokens for every task; the answers here are short, so each task
// has its own smaller budget.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "eval/data_files.h"
#include "eval/metrics.h"
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {
namespace {

enum class Kind { kChoice, kChoices, kMath, kTopic, kJudge, kF1 };

constexpr const char* kExamSystem =
    "Now you are given a very long document. Please follow the instruction based on this document. For multi-choice "
    "questions, there is only a sinlge correct option. Please only provide the letter corresponding to the answer (like A "
    "or B) when answering. For other questions, please directly give the concise and accurate answer. ";
constexpr const char* kCourseraSystem =
    "Now you are given a very long document. Please follow the instruction based on this document. For multi-choice "
    "questions, there could be a sinlge correct option or multiple correct options. Please only provide the letter "
    "corresponding to the answer (like A or AB) when answering. ";
constexpr const char* kGsmSystem =
    "Given several question answer pairs, you need to follow a similar format to answer the last question. Make sure the "
    "response is end with The answer is _ . ";
constexpr const char* kTopicSystem =
    "Below is a record of our previous conversation on many different topics. You are the ASSISTANT, and I am the USER. "
    "At the beginning of each topic, the USER will say 'I would like to discuss the topic of <TOPIC>'. Memorize each "
    "<TOPIC>. At the end of the record, I will ask you to retrieve the first/second/third topic names. Now the record "
    "start. ";
constexpr const char* kSciFiSystem =
    "Now you are given a scientific fiction. I will ask you some questions and the answer should be \"True\" or "
    "\"False\". Notice that you should answer the question based on the evidence in the document instead of your "
    "background knowledge.";
constexpr const char* kOpenSystem =
    "Now you are given a very long document. Please follow the instruction after this document. These instructions may "
    "include summarizing a document, answering questions based on the document, or writing a required paragraph. ";

struct Task {
  const char* name;
  const char* folder;  // under <data>/leval/
  Kind kind;
  const char* system;
  int max_tokens;
};

constexpr Task kTasks[] = {
    {"coursera", "Closed-ended-tasks", Kind::kChoices, kCourseraSystem, 16},
    {"gsm100", "Closed-ended-tasks", Kind::kMath, kGsmSystem, 256},
    {"quality", "Closed-ended-tasks", Kind::kChoice, kExamSystem, 16},
    {"sci_fi", "Closed-ended-tasks", Kind::kJudge, kSciFiSystem, 16},
    {"topic_retrieval_longchat", "Closed-ended-tasks", Kind::kTopic, kTopicSystem, 32},
    {"tpo", "Closed-ended-tasks", Kind::kChoice, kExamSystem, 16},
    {"financial_qa", "Open-ended-tasks", Kind::kF1, kOpenSystem, 256},
    {"legal_contract_qa", "Open-ended-tasks", Kind::kF1, kOpenSystem, 256},
    {"multidoc_qa", "Open-ended-tasks", Kind::kF1, kOpenSystem, 96},
    {"natural_question", "Open-ended-tasks", Kind::kF1, kOpenSystem, 32},
    {"scientific_qa", "Open-ended-tasks", Kind::kF1, kOpenSystem, 128},
};

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const Task& t : kTasks) names.emplace_back(t.name);
  return names;
}

const Task* find_task(std::string_view name) {
  for (const Task& t : kTasks) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

size_t word_count(std::string_view s) {  // Python len(s.split()) for ASCII whitespace
  size_t n = 0;
  bool in_word = false;
  for (const char c : s) {
    const bool space = c == ' ' || (c >= '\t' && c <= '\r');
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

// One case's prompt parts, as turbo16k-test.py builds the user message.
void fill_prompt(EvalCase& c, const Task& t, const std::string& document, const std::string& instruction,
                 const std::string& reference) {
  c.system = t.system;
  if (t.kind == Kind::kMath) {
    c.context = document;
    c.separator = std::string("\n\n");  // (not = "...": GCC 12 -Wrestrict false positive)
    c.question = instruction;
  } else if (t.kind == Kind::kF1) {
    c.context = fmt::format("Document is as follows. {}", document);
    c.separator = std::string(" ");
    c.question = fmt::format("Instruction: {} The suggested output length is around {} words. Output: ", instruction,
                             word_count(reference));
  } else {
    c.context = fmt::format("Document is as follows. {}", document);
    c.separator = std::string(" ");
    c.question = fmt::format(
        "Question: {} \nPlease directly give answer without any additional output or explanation\n Answer: ", instruction);
  }
}

class LEvalSuite : public Suite {
 public:
  explicit LEvalSuite(SuiteParams params, std::vector<const Task*> tasks) : p_(std::move(params)), tasks_(std::move(tasks)) {}
  std::string name() const override { return "leval"; }
  std::string score_name() const override { return "exam/F1 %"; }

  std::vector<EvalCase> cases(const Tokenizer& tokenizer, const PromptTokens& prompt_tokens) const override {
    std::vector<EvalCase> out;
    for (const Task* t : tasks_) add_task(*t, tokenizer, prompt_tokens, out);
    return out;
  }

  nlohmann::json score(const EvalCase& c, std::string_view answer) const override {
    const Task* t = find_task(c.meta.value("task", ""));
    if (t == nullptr) fail(ErrorKind::kInvalidArgument, "leval: case {} names no known task", c.id);
    double best = 0;
    std::string extracted;
    for (const std::string& ref : c.references) {
      double s = 0;
      switch (t->kind) {
        case Kind::kChoice:
        case Kind::kChoices:
          extracted = leval_mc_answer(answer, t->kind == Kind::kChoices);
          s = leval_exact_match(extracted, leval_mc_reference(ref));
          break;
        case Kind::kMath:
          extracted = leval_math_answer(answer);
          s = leval_exact_match(extracted, leval_math_answer(ref));
          break;
        case Kind::kTopic:
          s = leval_exact_match(answer, ref);
          break;
        case Kind::kJudge:
          extracted = leval_judge_answer(answer);
          s = leval_exact_match(extracted, leval_judge_reference(ref));
          break;
        case Kind::kF1:
          s = qa_f1(answer, ref, /*lowercase=*/false);
          break;
      }
      best = std::max(best, s);
    }
    nlohmann::json j = {{"score", 100 * best}};
    if (t->kind != Kind::kTopic && t->kind != Kind::kF1) j["extracted"] = extracted;
    return j;
  }

 private:
  void add_task(const Task& t, const Tokenizer& tokenizer, const PromptTokens& prompt_tokens,
                std::vector<EvalCase>& out) const {
    const std::filesystem::path path = std::filesystem::path(p_.data) / "leval" / t.folder / (std::string(t.name) + ".jsonl");
    const bool f1 = t.kind == Kind::kF1;
    int kept = 0, doc = 0;
    for_each_jsonl(path, [&](const nlohmann::json& r, const std::string& where) {
      const int d = doc++;
      if (!r.is_object() || !r.contains("input") || !r["input"].is_string() || !r.contains("instructions") ||
          !r["instructions"].is_array() || !r.contains("outputs") || !r["outputs"].is_array() ||
          !r.contains("evaluation") || !r["evaluation"].is_string()) {
        fail(ErrorKind::kBadFile, "{}: not an L-Eval record (input, instructions, outputs, evaluation)", where);
      }
      if (r["evaluation"].get<std::string>() != (f1 ? "f1" : "exam")) return true;  // LLM / human / rouge records
      const std::string document = r["input"].get<std::string>();
      // Skip a document that cannot fit whatever the question (a margin for tokens merged across
      // its edges): this saves rendering every question of a long one.
      if (p_.n_ctx > 0) {
        const auto doc_tokens = static_cast<int64_t>(tokenizer.encode(document, false, false).size());
        if (doc_tokens - 16 + t.max_tokens > p_.n_ctx) return true;
      }
      const nlohmann::json& insts = r["instructions"];
      const nlohmann::json& outs = r["outputs"];
      for (size_t q = 0; q < std::min(insts.size(), outs.size()) && (p_.limit == 0 || kept < p_.limit); ++q) {
        if (!insts[q].is_string() || !outs[q].is_string()) fail(ErrorKind::kBadFile, "{}: instruction {} is not text", where, q);
        EvalCase c;
        c.id = fmt::format("{}/{}/{}", t.name, d, q);
        c.max_tokens = t.max_tokens;
        c.references = {outs[q].get<std::string>()};
        fill_prompt(c, t, document, insts[q].get<std::string>(), c.references[0]);
        const int64_t length = prompt_tokens(c);
        if (p_.n_ctx > 0 && length + t.max_tokens > p_.n_ctx) continue;
        c.meta = {{"task", t.name}, {"length", length}, {"doc", d}, {"index", static_cast<int64_t>(q)}};
        out.push_back(std::move(c));
        ++kept;
      }
      return p_.limit == 0 || kept < p_.limit;
    });
  }

  SuiteParams p_;
  std::vector<const Task*> tasks_;
};

}  // namespace

std::unique_ptr<Suite> make_leval_suite(const SuiteParams& params) {
  if (!params.lengths.empty()) {
    fail(ErrorKind::kInvalidArgument, "leval takes no prompt lengths: its documents are what they are (those that fit the context are used)");
  }
  if (params.limit < 0) fail(ErrorKind::kInvalidArgument, "leval: the limit must be >= 0 (got {})", params.limit);
  if (params.n_ctx < 0) fail(ErrorKind::kInvalidArgument, "leval: the context must be >= 0 tokens (got {})", params.n_ctx);
  std::vector<const Task*> tasks;
  for (const std::string& name : params.tasks) {
    const Task* t = find_task(name);
    if (t == nullptr) fail(ErrorKind::kInvalidArgument, "unknown leval task '{}' (known: {})", name, fmt::join(task_names(), ", "));
    if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) tasks.push_back(t);
  }
  if (tasks.empty()) {
    for (const Task& t : kTasks) tasks.push_back(&t);
  }
  return std::make_unique<LEvalSuite>(params, std::move(tasks));
}

}  // namespace snapkv
