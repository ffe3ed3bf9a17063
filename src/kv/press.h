#pragma once
// The press interface: at the end of a layer's prefill, a press sees that layer's stored entries
// and the last queries, scores every entry of every stored head, and the budget stage shared by
// all presses (kv/press_budget.h: uniform, pyramid or ada budgets, chunks) chooses which entries
// each head keeps. Presses know nothing about models; one file per press in kv/presses/, one line
// each in the registry (press.cpp).
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "ops/attention.h"
#include "ops/rope.h"
#include "snapkv/press.h"
#include "util/thread_pool.h"

namespace snapkv {

// SnapKV's scores per stored head, by window, kernel, pooling and GQA reduction.
using ScoreMemo = std::map<std::tuple<int, int, PoolKind, GqaReduce>, std::vector<std::vector<float>>>;

struct LayerInput {
  int layer = 0, n_layer = 0;
  int n_head = 0;          // query heads
  int head_dim = 0;
  std::span<const KvHeadView> kv;  // the layer's stored heads; the new tokens' entries are last
  // Post-RoPE queries of the last n_window tokens (at most the press's window): [n_window, n_head, d].
  const float* q_window = nullptr;
  const int32_t* window_pos = nullptr;
  int64_t n_window = 0;
  // Observed attention (h2o): per query head, the column sums of every new query's attention
  // probabilities over the head's entries, and the first new position (to count the queries
  // that saw each entry). Reconstruction (kvzip): per query head, the largest probability any
  // reconstructing query gave each entry (kv/reconstruction.h). Empty unless the press asks for it.
  std::span<const std::vector<float>> observed;
  int32_t first_new_pos = 0;
  // The layer's attention output projection, f32 [n_embd rows][n_head * head_dim], when the press
  // weighs entries by what their values add to the output (CriticalKV); empty otherwise.
  std::span<const float> out_proj;
  // Per position, the position its token run starts at (kv/token_runs.h), when the press keeps
  // whole runs (cfg.runs); empty otherwise. The same for sentences (cfg.sentences).
  std::span<const int32_t> run_start, sentence_start;
  // Query statistics (expected_attention): per query head, the sums of the pre-RoPE queries
  // [n_head][d] and of their outer products [n_head][d][d] over the prompt's q_count tokens at
  // positions >= PressNeeds::stats_from, and the position after the last (where future queries
  // begin); the layer's RoPE, to rotate them there. Empty unless the press asks for them.
  std::span<const double> q_sum, q_outer;
  int64_t q_count = 0;
  int32_t q_next_pos = 0;
  const RopeParams* rope = nullptr;
  ThreadPool* pool = nullptr;
  // Optional: SnapKV's scores of this input, kept by whoever presses it several times (an
  // evaluation presses one recorded layer with snapkv, pyramidkv and ada_kv at every capacity).
  // Null: scores are computed every time.
  ScoreMemo* score_memo = nullptr;
};

// What a press needs recorded while a prompt is prefilled, beside the last `window` queries.
struct PressNeeds {
  bool observed = false;    // h2o: every query's attention, summed per entry (LayerInput::observed)
  int32_t stats_from = -1;  // >= 0: the mean and covariance of the pre-RoPE queries at positions >= this
                            // (expected_attention; LayerInput::q_mean)
  // kvzip: the prompt's context is reconstructed after its prefill (kv/reconstruction.h) and
  // LayerInput::observed holds the reconstruction's attention maxima.
  bool reconstruct = false;
  // Needs every query of the prompt, not just the last ones: a saved window cannot stand in for
  // them, and generated tokens do not continue them.
  bool whole_prompt() const { return observed || stats_from >= 0 || reconstruct; }
  // What either needs. Error(kInvalidArgument) when both need query statistics from different
  // positions (one recording cannot serve both).
  PressNeeds& operator|=(const PressNeeds& o);
};

// Kept entry indices per stored head, ascending. An empty Selection keeps everything.
using Selection = std::vector<std::vector<int32_t>>;
// Scores per stored head and entry: higher is kept, kKeepAlways (press_scores.h) always.
using HeadScores = std::vector<std::vector<float>>;

class Press {
 public:
  explicit Press(const PressConfig& c) : cfg_(c) {}
  virtual ~Press() = default;
  // The selection for one layer: score(), then the configured budget. Leaves the layer whole
  // (empty Selection) when it is short or the press is `full`.
  Selection select(const LayerInput& in) const;
  // Queries the press scores with (the last ones of the prompt).
  virtual int window() const { return cfg_.window; }
  virtual PressNeeds needs() const { return {}; }
  // Whether its input must carry the layer's output projection (LayerInput::out_proj).
  bool needs_out_proj() const { return cfg_.critical > 0; }
  const PressConfig& config() const { return cfg_; }

 protected:
  // Every entry's score in every stored head of the layer.
  virtual HeadScores score(const LayerInput& in) const = 0;
  PressConfig cfg_;
};

// The press named by c.press, or Error(kInvalidArgument) listing the names. Validates c.
std::unique_ptr<Press> make_press(const PressConfig& c);

}  // namespace snapkv
