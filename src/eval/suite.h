#pragma once
// An evaluation suite: cases (a long context, a question, references) and the score of an
// answer. evaluate_suite (snapkv/eval.h, eval/suite_runner.cpp) renders every case through the
// model's chat template, prefills it once with the full cache, and answers it greedily with
// every press at every capacity on copies of that one cache.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snapkv/data_dir.h"
#include "snapkv/eval.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

struct EvalCase {
  std::string id;  // unique within the suite, stable across runs (the resume key)
  nlohmann::json meta = nlohmann::json::object();  // copied into every result line: task, length, depth, ...
  std::string system;                              // system message, "" for none
  std::string context;                             // the long part of the user message
  std::string question;                            // what is asked about it
  std::string separator = "\n\n";                  // between context and question (either order)
  std::string answer_prefix;                       // start of the assistant's answer (RULER), "" for none
  bool chat = true;                                // wrap in the model's chat template
  std::vector<std::string> references;             // what the answer is scored against
  int max_tokens = 32;                             // answer tokens at most (greedy)
  bool stop_at_newline = false;                    // stop at a newline once the answer has text
};

struct SuiteParams {
  std::string data = kDefaultDataDir;   // the evaluation data folder (snapkv/data_dir.h)
  std::vector<int> lengths;             // prompt lengths in tokens (answer included); empty: the suite's
  std::vector<std::string> tasks;       // the suite's tasks to run; empty: its defaults
  int limit = 0;                        // cases per (task, length) at most; 0: all
  uint64_t seed = 42;                   // generated suites draw everything from it
  int n_ctx = 0;                        // the model's context: prompt plus answer must fit
  // niah: needle depths; longeval_lines: answer positions (percent); empty: the suite's
  std::vector<int> depths;
  // niah only; empty: the suite's defaults
  std::string needle, question, needle_answer;
};

// The number of tokens of a case's prompt as the runner renders it, answer tokens excluded.
using PromptTokens = std::function<int64_t(const EvalCase&)>;

class Suite {
 public:
  virtual ~Suite() = default;
  virtual std::string name() const = 0;
  // What score() puts under "score", e.g. "ROUGE-1 F x10", and its best value (10, 100).
  virtual std::string score_name() const = 0;
  virtual double score_max() const { return 100; }
  // Meta keys of a heatmap's columns and rows, e.g. {"length", "depth"}; empty when none.
  virtual std::pair<std::string, std::string> heatmap() const { return {}; }
  // Every case, in a fixed order; throws snapkv::Error (kInvalidArgument, kBadFile) on bad
  // parameters or data. Cases that cannot fit n_ctx are left out (generated ones are sized).
  virtual std::vector<EvalCase> cases(const Tokenizer& tokenizer, const PromptTokens& prompt_tokens) const = 0;
  // {"score": value in [0, score_max()], ...other metrics}.
  virtual nlohmann::json score(const EvalCase& c, std::string_view answer) const = 0;
};

// One of eval_suite_names() (snapkv/eval.h); throws snapkv::Error(kInvalidArgument) naming the
// known suites for an unknown name.
std::unique_ptr<Suite> make_suite(const std::string& name, const SuiteParams& params);

}  // namespace snapkv
