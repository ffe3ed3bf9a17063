#pragma once
// Records what presses score a layer with while a forward call runs: the last `window` post-RoPE
// queries of every layer and, when asked (PressNeeds), the observed-attention column sums of all
// the call's queries (h2o) and the mean and covariance of its pre-RoPE queries (expected_attention). Used by the Compressor during prefill, and to press one recorded prefill in many
// ways (evaluation, reference checks).
#include <cstdint>
#include <vector>

#include "kv/context_file.h"
#include "kv/kv_cache.h"
#include "kv/press.h"
#include "model/model.h"

namespace snapkv {

// Entries of one layer over all its heads before and after its last compression.
class LayerRecorder final : public LayerObserver {
 public:
  // rope: the model's (of the layers presses compress), to undo on the queries for their statistics.
  LayerRecorder(int n_layer, int n_head, int head_dim, int64_t window, PressNeeds needs, const RopeParams& rope,
                ThreadPool& pool);

  // What a forward call continues: nothing (a new prompt: earlier queries are forgotten), a
  // compressed cache (decoding, chat turns: the window slides on, observed sums restart with the
  // call), or the same uncompressed prompt (the window slides on and the observed sums go on
  // adding up from where they began, so the input equals that of one call over all tokens).
  enum class Call { kFresh, kSlide, kExtend };
  // Before a forward call of n_tok tokens from first_pos.
  void begin(int64_t n_tok, int32_t first_pos, Call call);
  void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, const float* lse, KvStore& kv) override;

  // The press input for layer il over the given entries (the layer's current ones).
  LayerInput input(int il, std::span<const KvHeadView> kv) const;
  // Layer il's last `window` queries, to save with a context, and back (set_window replaces them).
  WindowQueries window(int il) const;
  void set_window(int il, const WindowQueries& w);
  int64_t window_size() const { return window_; }
  // Forgets the queries at position >= pos (rejected speculative drafts).
  void drop_from(int32_t pos);
  // Frees layer il's observed sums and query statistics once it is pressed.
  void release(int il);
  void clear();
  // Bytes its buffers hold.
  size_t bytes() const;

 private:
  // Adds the pre-RoPE form of the queries at positions >= needs_.stats_from to layer il's sums.
  void add_query_stats(int il, int64_t n_tok, const float* q, const int32_t* pos);

  // Per layer: sums of the pre-RoPE queries and of their outer products, per query head, their
  // count and the position after the last.
  struct QueryStats {
    std::vector<double> sum, outer;  // [n_head][d], [n_head][d][d]
    int64_t n = 0;
    int32_t next_pos = 0;
  };

  int n_head_, head_dim_;
  int64_t window_;
  PressNeeds needs_;
  RopeParams rope_;
  std::vector<double> inv_freq_;
  ThreadPool* pool_;
  std::vector<std::vector<float>> win_q_;    // per layer: [n, n_head, d], n <= 2 * window_
  std::vector<std::vector<int32_t>> win_pos_;
  std::vector<std::vector<std::vector<float>>> observed_;  // per layer, per query head
  std::vector<int64_t> seen_;                // per layer: tokens of the call seen so far
  std::vector<QueryStats> stats_;            // per layer
  int64_t n_tok_ = 0;
  int32_t first_pos_ = 0;  // of the first query in the observed sums
  bool extend_ = false;
};

// Runs the press on layer il of cache with the given input and keeps its selection; a
// sliding-window layer stays as it is. model gives the layer's output projection to a press that
// needs it.
LayerKept press_layer(const Press& press, KvCache& cache, int il, LayerInput in, const Decoder& model);

}  // namespace snapkv
