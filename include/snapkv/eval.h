#pragma once
// Evaluations of KV-cache compression, as `snapkv eval` runs them:
//   - fidelity (evaluate_fidelity): how far each press moves the next-token distributions from
//     the full cache's on real text, independent of any task;
//   - task suites (evaluate_suite): niah, longeval_lines, ruler, longbench, leval. Every case is
//     prefilled once with the full cache, then answered greedily with every press at every
//     capacity on pressed copies of that cache; one result line per case x press x capacity goes
//     to <out>/<suite>.jsonl.gz, and a run skips the lines already there (resumable).
// Both report progress through callbacks and return what a caller prints or plots.
//
//   snapkv::Model model = snapkv::Model::load(path, {.threads = 2});
//   snapkv::EvalSuiteOptions o;
//   o.suite = "niah";
//   o.out = "results/niah";
//   snapkv::EvalSuiteResult r = snapkv::evaluate_suite(model, o);
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snapkv/generate.h"
#include "snapkv/model.h"
#include "snapkv/press.h"
#include "snapkv/types.h"

namespace snapkv {

// ---- Fidelity ----------------------------------------------------------------------------------
// A prompt of L tokens is prefilled once, pressed by every press at every capacity, and the next
// n_eval tokens of the same text are run on each pressed cache and on the full one. Per cell
// (L, press, capacity): mean KL(P_full || P_press), top-1 agreement, and the increase of the
// negative log-likelihood of the text's actual next tokens.

struct FidelityParams {
  std::vector<int> lengths = {2048, 4096, 7168};  // prompt lengths L
  std::vector<int> capacities = {128, 256, 512, 1024};
  std::vector<std::string> presses = press_names();  // every registered press; each may be a spec
                                                     // with options of its own (apply_press_spec)
  int n_eval = 256;  // continuation tokens scored after each prompt
  KvType kv_type = KvType::kF16;
  PressConfig base;  // window, kernel, pool, ...; press and capacity are set per cell

  // A readable error (empty when valid): empty or non-positive lists, unknown presses, press
  // options PressConfig::validate rejects at some capacity, per_query_head (needs a replicated
  // cache), or L + n_eval over n_ctx (the model's context; 0 = unchecked).
  std::string validate(int n_ctx = 0) const;
  // The press configuration of one cell: base with this press and capacity (ratio and
  // re-compression off: every cell is a fixed capacity, and nothing is decoded).
  PressConfig cell_config(const std::string& press, int capacity) const;
  // Tokens of text needed: the longest prompt, its continuation and the last target.
  int64_t tokens_needed() const;
};

struct FidelityCell {
  int length = 0;
  std::string press;
  int capacity = 0;
  int n_scored = 0;     // positions scored (n_eval)
  double kl_mean = 0;   // mean over positions of KL(P_full || P_press), nats
  double kl_max = 0;    // the largest per-position KL
  double top1 = 0;      // share of positions whose argmax agrees, in [0, 1]
  double nll_full = 0;  // mean -log P_full(actual next token), nats
  double nll_press = 0; // the same under the pressed cache
  double nll_delta() const { return nll_press - nll_full; }
  size_t kept_bytes = 0, full_bytes = 0;       // KV bytes of the prompt after / before pressing
  int64_t kept_entries = 0, full_entries = 0;  // over all layers and KV heads
  double seconds = 0;  // pressing, continuation forward and scoring of this cell
};

// What the fidelity evaluation reports while it works: a prefill starts (cell null) or a cell is
// done.
struct FidelityProgress {
  int length = 0;
  std::string press;  // empty: the prefill of `length` is starting
  int capacity = 0;
  int cells_done = 0, cells_total = 0;
  double elapsed_s = 0;
  const FidelityCell* cell = nullptr;  // the cell just done
};

// The Paul Graham essays of the evaluation data (<data_dir>/niah_paulgraham/PaulGrahamEssays/*.txt),
// sorted by file name and concatenated without separators: the fidelity text, and the
// needle-in-a-haystack haystack. data_dir "" follows resolve_data_dir (snapkv/data_dir.h).
// Error(kBadFile) naming the folder when it is missing or holds no essay. *n_files: essays read.
std::string read_paul_graham_essays(const std::string& data_dir, size_t* n_files = nullptr);

// Runs every cell on the first params.tokens_needed() tokens of text, in the order L, then press,
// then capacity (one prefill per L). out: when not empty, a folder that receives fidelity.jsonl
// (replaced), one JSON line per cell as soon as it is done. Error(kInvalidArgument) when params
// are invalid for the model, Error(kOutOfRange) when the text is too short, Error(kBadFile) when
// out cannot be written.
std::vector<FidelityCell> evaluate_fidelity(const Model& model, std::string_view text, const FidelityParams& params,
                                            const std::string& out = {},
                                            const std::function<void(const FidelityProgress&)>& progress = {});

// ---- Task suites -------------------------------------------------------------------------------

// niah, longeval_lines, ruler, longbench, leval.
std::vector<std::string> eval_suite_names();

// Where the question goes: after the context (default, inside the observation window), before it
// (the SnapKV paper's Fig. 5), or after the context has been compressed (question-agnostic).
enum class QuestionPlacement { kEnd, kFirst, kAgnostic };
// "question-last", "question-first", "question-agnostic": the result lines' "placement".
const char* placement_name(QuestionPlacement placement);

// The capacities a press is run at: "full" keeps everything, so it runs once, recorded as C = 0.
std::vector<int> eval_capacities(const std::string& press, const std::vector<int>& capacities);

struct EvalSuiteOptions {
  std::string suite;  // one of eval_suite_names()
  std::string data;   // the evaluation data folder; "": resolve_data_dir's rule
  std::vector<int> lengths;        // prompt lengths in tokens, answer included; empty: the suite's
  std::vector<std::string> tasks;  // the suite's tasks; empty: all
  int limit = 0;                   // cases per task and length at most; 0: all
  int max_tokens = 0;              // answer tokens at most (greedy); 0: each case's own
  uint64_t seed = 42;              // generated cases draw everything from it
  std::vector<int> depths;         // niah: needle depths; longeval_lines: answer positions (percent)
  std::string needle, question, needle_answer;  // niah only; empty: the suite's
  QuestionPlacement placement = QuestionPlacement::kEnd;
  // Press specs (apply_press_spec: a name, or snapkv+budget=ada+chunk=20), which also label the results.
  std::vector<std::string> presses = {"full", "snapkv", "pyramidkv", "ada_kv", "streaming_llm", "h2o"};
  std::vector<int> capacities = {128, 256, 512, 1024};
  KvType kv_type = KvType::kF16;
  PressConfig base;            // window, kernel, pool, ...; press and capacity are set per result
  std::string chat_template;   // "": the model's own (Model::pick_chat_template)
  std::string out;             // the folder of <suite>.jsonl.gz (created when missing)
  bool report_only = false;    // run nothing: return the results already in out
  // Answers decoded with speculation (prompt lookup only), one sequence at a time: the same
  // greedy answers; its results are kept apart from those decoded without ("spec" in each line).
  SpeculationParams speculation;

  // A readable error (empty when valid): unknown suite or press, empty lists, bad press options.
  std::string validate() const;
};

// Told once, when the cases are built and the results already in out are counted.
struct EvalSuitePlan {
  int n_cases = 0;
  double build_s = 0;        // seconds building the cases
  int results_total = 0;     // case x press x capacity
  int results_done = 0;      // of those, already in the results file
  std::string results_path;  // <out>/<suite>.jsonl.gz
};

// Told as each step starts: a case's prefill, a press applied, the answers of a case decoded.
struct EvalSuiteProgress {
  std::string what;      // the step, e.g. "L600_d0 snapkv C=128"; empty when all are done
  int results_run = 0;   // results written by this run so far
  int results_todo = 0;  // results this run writes in all
  double elapsed_s = 0;  // since the first case started
};

struct EvalSuiteCallbacks {
  std::function<void(const EvalSuitePlan&)> plan;
  std::function<void(const EvalSuiteProgress&)> progress;
};

// One result, as a report needs it (the results file has every field).
struct EvalSuiteRow {
  std::string case_id, press;
  std::string task;  // "" when the suite has no tasks
  int capacity = 0;  // 0 for full
  double score = 0;  // in [0, score_max]
  double kv_kept = 0;   // bytes of the compressed cache over the full one, when decoding starts
  double decode_s = 0;  // seconds per answer (the answers of a case decode in one batch)
  std::optional<std::pair<int, int>> heat;  // (column, row) values of the suite's heatmap keys
};

struct EvalSuiteResult {
  std::string suite, model, placement;
  std::string score_name;  // what "score" measures, e.g. "ROUGE-1 F x10"
  double score_max = 100;
  std::pair<std::string, std::string> heatmap;  // keys of the heatmap's columns and rows; empty: none
  std::vector<EvalSuiteRow> rows;  // every result of this run's cases: those found and those run
  int results_run = 0, results_skipped = 0;
  std::string results_path;
};

// Runs the suite: builds its cases, reads <out>/<suite>.jsonl.gz (and <suite>.jsonl of older
// runs, never modified) to skip the results already there, and appends the others, the lines of
// each case as they are done. Error(kInvalidArgument) for invalid options, no case that fits the
// model, or a case whose input (tokens) differs from the one its results were run on (other data,
// model, seed or options: use another out); Error(kBadFile) for unreadable data or results.
EvalSuiteResult evaluate_suite(const Model& model, const EvalSuiteOptions& options,
                               const EvalSuiteCallbacks& callbacks = {});

// A confidence interval of the mean of values (one score per case): the percentile bootstrap.
// The values are resampled with replacement n_resamples times (seeded: the same interval on
// every machine and standard library), and the interval holds the middle `level` of the
// resampled means. Empty values: {0, 0}; error(kInvalidArgument) for level outside (0, 1) or
// n_resamples < 1.
struct MeanInterval {
  double lo = 0, hi = 0;
};
MeanInterval bootstrap_mean_interval(std::span<const double> values, double level = 0.95, int n_resamples = 2000,
                                     uint64_t seed = 1);

}  // namespace snapkv
