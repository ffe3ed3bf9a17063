#pragma once
// The press interface: at the end of a layer's prefill, a press sees that layer's stored entries
// and the last queries, and returns which entries each stored head keeps. Presses know nothing
// about models; one file per press in kv/presses/, one line each in the registry (press.cpp).
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "ops/attention.h"
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
  // that saw each entry). Empty unless the press asks for it.
  std::span<const std::vector<float>> observed;
  int32_t first_new_pos = 0;
  ThreadPool* pool = nullptr;
  // Optional: SnapKV's scores of this input, kept by whoever presses it several times (an
  // evaluation presses one recorded layer with snapkv, pyramidkv and ada_kv at every capacity).
  // Null: scores are computed every time.
  ScoreMemo* score_memo = nullptr;
};

// Kept entry indices per stored head, ascending. An empty Selection keeps everything.
using Selection = std::vector<std::vector<int32_t>>;

class Press {
 public:
  explicit Press(const PressConfig& c) : cfg_(c) {}
  virtual ~Press() = default;
  // The selection for one layer. Leaves the layer whole (empty Selection) when it is short.
  virtual Selection select(const LayerInput& in) const = 0;
  // Queries the press scores with (the last ones of the prompt).
  virtual int window() const { return cfg_.window; }
  virtual bool needs_observed_attention() const { return false; }
  const PressConfig& config() const { return cfg_; }

 protected:
  PressConfig cfg_;
};

// The press named by c.press, or Error(kInvalidArgument) listing the names. Validates c.
std::unique_ptr<Press> make_press(const PressConfig& c);

}  // namespace snapkv
