#pragma once
// Runs a press inside the forward pass: it watches each layer's queries (keeping the last window
// of them, and the observed-attention sums when the press needs them) and, when the layer is
// done with a prompt, replaces the layer's entries in the cache by the press's selection. The
// layer's full keys and values therefore live only until the layer is done.
#include <cstdint>
#include <memory>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/press.h"
#include "model/model.h"

namespace snapkv {

// Entries of one layer over all its heads before and after its last compression.
struct LayerKept {
  int64_t kept = 0, total = 0;
};

class Compressor final : public LayerObserver {
 public:
  Compressor(const PressConfig& cfg, KvCache& cache, int n_head, ThreadPool& pool);

  // Before each forward call of n_tok tokens starting at first_pos. compress: the press selects
  // when each layer is done (prompt prefills); otherwise only re-compression may happen.
  void begin(int64_t n_tok, int32_t first_pos, bool compress);
  void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, KvStore& kv) override;
  void layer_done(int il) override;

  const Press& press() const { return *press_; }
  // Per layer, the last compression's counts (kept == total where the layer stayed whole).
  const std::vector<LayerKept>& kept() const { return kept_; }
  void reset();

 private:
  void compress_layer(int il, bool use_observed);

  std::unique_ptr<Press> press_;
  KvCache& cache_;
  int n_head_;
  ThreadPool& pool_;
  int64_t window_;  // queries kept per layer
  // Per layer: the last window_ queries [n, n_head, d] and their positions.
  std::vector<std::vector<float>> win_q_;
  std::vector<std::vector<int32_t>> win_pos_;
  std::vector<std::vector<float>> observed_;  // current layer, per query head (h2o)
  std::vector<LayerKept> kept_;
  int64_t n_tok_ = 0, seen_ = 0;  // tokens of the call, and those the current layer has seen
  int32_t first_pos_ = 0;
  bool compress_ = false;
};

}  // namespace snapkv
