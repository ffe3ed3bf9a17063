#pragma once
// The SnapKV paper's observations (Sec. 3, Figs. 2-4 and 8), measured on any model and prompts,
// as `snapkv analyze` runs them:
//   - analyze_hit_rate: do the positions the observation window votes for stay the ones that
//     generation attends to (Fig. 2), wherever the question is (Fig. 3)?
//   - analyze_overlap: do different questions on one document vote for different positions (Fig. 4)?
//   - analyze_pooling: retrieval with pooling kernels 1..k at fixed budgets (Fig. 8), and how much
//     of the answer's tokens each selection keeps;
//   - analyze_map: which positions a press keeps, per layer and KV head, for one prompt.
// Attention is computed for the window's and the generated tokens' queries against the keys, as
// the presses score, never as a prompt x prompt matrix.
//
//   snapkv::Model model = snapkv::Model::load(path);
//   snapkv::HitRateOptions o;
//   o.input.suite = "longbench";
//   o.input.limit = 2;
//   snapkv::HitRateResult r = snapkv::analyze_hit_rate(model, o);
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snapkv/eval.h"
#include "snapkv/model.h"
#include "snapkv/press.h"
#include "snapkv/types.h"

namespace snapkv {

// A long context and a question about it; answers say where the answer is in the context
// (pooling, map) and score the pooling analysis' answers when no suite does.
struct AnalyzeCase {
  std::string id;
  std::string context, question;
  std::vector<std::string> answers;
};

// Cases from JSON Lines, one a line: {"context": ..., "question": ..., "answers": [...], "id": ...}
// (question, answers and id optional; id defaults to "line<N>"); blank lines are skipped.
// Error(kBadFile) "<name>:<line>: why" for a line that is not such an object, or for no case.
std::vector<AnalyzeCase> parse_analyze_cases(std::string_view jsonl, const std::string& name);

// The prompts an analysis runs on: the cases of one `snapkv eval` suite (built for the model as
// evaluate_suite builds them) or the given cases, rendered in the model's chat template.
struct AnalyzeInput {
  std::string suite;  // one of eval_suite_names(); "": use `cases`
  std::string data;   // the evaluation data folder; "": resolve_data_dir's rule
  std::vector<int> lengths;        // the suite's prompt lengths; empty: the suite's
  std::vector<std::string> tasks;  // the suite's tasks; empty: all
  int limit = 0;                   // cases per task and length at most; 0: all
  uint64_t seed = 42;
  std::vector<int> depths;  // niah: needle depths; longeval_lines: answer positions (percent)
  std::vector<AnalyzeCase> cases;
  std::string chat_template;  // "": the model's own
  KvType kv_type = KvType::kF16;
  // A readable error (empty when valid).
  std::string validate() const;
};

// Told as each step starts; what is empty when all are done.
struct AnalyzeProgress {
  std::string what;
  int done = 0, total = 0;
  double elapsed_s = 0;
};
using AnalyzeProgressFn = std::function<void(const AnalyzeProgress&)>;

// ---- Hit rate (Figs. 2 and 3) ------------------------------------------------------------------
// Per case and layer: each query head votes for the top p of the prefix positions (all but the
// last `window` prompt tokens) by the attention of the window's queries, summed (paper Sec. 3,
// "Voting", no pooling). The prompt is then continued greedily with the full cache, and for each
// generated query and head the prefix positions it attends to above theta are "significant". The
// hit rate of a generation window is hits / significant, summed over its queries and the layer's
// heads (NaN when nothing is significant).
struct HitRateOptions {
  AnalyzeInput input;
  int window = 32;
  double top_p = 0.05;
  double theta = 0.05;
  int gen_windows = 4;        // generation windows measured...
  int gen_window_size = 128;  // ...of this many generated tokens each
  // Question placements measured: kEnd (after the context) and/or kFirst (before it).
  std::vector<QuestionPlacement> placements = {QuestionPlacement::kEnd};
  std::string validate() const;
};
struct HitRateCase {
  std::string id, placement;
  int prompt_tokens = 0, generated = 0;  // generation stops early at an end-of-generation token
  std::vector<std::vector<double>> hit_rate;        // [generation window][layer]
  std::vector<std::vector<int64_t>> significant;    // [generation window][layer]: its denominator
};
struct HitRateResult {
  std::string model;
  int n_layer = 0;
  std::vector<HitRateCase> cases;
  // Mean over the cases (that reached the window and had significant positions) per layer.
  std::vector<double> mean(const std::string& placement, int gen_window) const;
  // Mean over the cases and every generation window they reached, per layer.
  std::vector<double> mean(const std::string& placement) const;
};
HitRateResult analyze_hit_rate(const Model& model, const HitRateOptions& options,
                               const AnalyzeProgressFn& progress = {});

// ---- Overlap between questions (Fig. 4) --------------------------------------------------------
// Cases with the same context form a document. Per question, the document is prefilled, the
// question follows, and `answer_tokens` are generated greedily; each query head then votes for the
// top p of the document's positions by the attention of the question's and the answer's tokens
// (the paper's window of "instructions and their responses"). For each ordered pair of questions
// A != B of a document: H(A, B) = |vote_A & vote_B| / |vote_A| per layer over its heads.
struct OverlapOptions {
  AnalyzeInput input;
  double top_p = 0.05;
  int answer_tokens = 64;
  std::string validate() const;
};
struct OverlapDocument {
  std::string id;  // its first case's
  int context_tokens = 0;
  std::vector<std::string> questions;  // case ids
  std::vector<double> overlap;         // [layer], mean over the ordered pairs
};
struct OverlapResult {
  std::string model;
  int n_layer = 0;
  double chance = 0;  // expected overlap of random votes of the same size: top_p
  std::vector<OverlapDocument> documents;  // those with at least two questions
  std::vector<double> mean() const;        // [layer], over the documents
};
OverlapResult analyze_overlap(const Model& model, const OverlapOptions& options,
                              const AnalyzeProgressFn& progress = {});

// ---- Pooling (Fig. 8) --------------------------------------------------------------------------
// Every case is prefilled once, pressed with `press` at every kernel and capacity, and answered
// greedily on each pressed cache; the answer is scored by the suite (or, for given cases, 100 when
// it contains one of the answers). The answer's tokens in the context (its first occurrence) tell
// what the selection kept of them.
struct PoolingOptions {
  AnalyzeInput input;
  PressConfig press;  // press, window, pool, gqa...; kernel and capacity are set per cell
  std::vector<int> kernels = {1, 3, 5, 7, 9, 13};
  std::vector<int> capacities = {128, 256, 512, 1024};
  int max_tokens = 0;  // answer tokens at most; 0: the case's
  PoolingOptions() { press.press = "snapkv"; }
  std::string validate() const;
};
struct PoolingCell {
  std::string case_id;
  int kernel = 0, capacity = 0;
  std::string answer;
  double score = 0;  // in [0, score_max]
  int answer_tokens = 0;      // the answer's tokens in the context; 0 when not found there
  double answer_kept = 0;     // share of them kept, mean over layers and KV heads
  double answer_whole = 0;    // share of layers x KV heads that keep all of them
};
struct PoolingResult {
  std::string model, score_name;
  double score_max = 100;
  std::vector<PoolingCell> cells;
  // Means over the cases of one kernel and capacity (NaN when none; answer_* over the cases whose
  // answer was found).
  PoolingCell mean(int kernel, int capacity) const;
};
PoolingResult analyze_pooling(const Model& model, const PoolingOptions& options,
                              const AnalyzeProgressFn& progress = {});

// ---- Map of kept positions ---------------------------------------------------------------------
// One case (the first of the input), pressed once: the positions each layer's KV heads keep.
struct MapOptions {
  AnalyzeInput input;
  std::string case_id;  // "": the first case
  PressConfig press;
  MapOptions() {
    press.press = "snapkv";
    press.capacity = 256;
  }
  std::string validate() const;
};
struct KeptMap {
  std::string model, case_id, press;
  int prompt_tokens = 0, n_layer = 0, n_head_kv = 0;
  std::vector<std::vector<std::vector<int32_t>>> kept;  // [layer][KV head]: positions, ascending
  std::pair<int, int> question{-1, -1};  // token range [first, last) of the question; -1: not found
  std::pair<int, int> answer{-1, -1};    // of the answer's first occurrence in the context
};
KeptMap analyze_map(const Model& model, const MapOptions& options);

}  // namespace snapkv
