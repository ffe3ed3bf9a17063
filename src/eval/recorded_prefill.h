#pragma once
// One full-cache prefill whose press inputs (window queries, observed attention) are recorded
// for every layer, so that any number of presses can be applied to copies of the same cache: one
// prefill serves all presses. Prefill outputs never depend on compression (every prompt token
// attends with the full cache), so a copy pressed afterwards equals a cache pressed during
// prefill, layer by layer.
#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/layer_recorder.h"
#include "model/model.h"

namespace snapkv {

class RecordedPrefill {
 public:
  // window: the most queries any press will need; observed: record h2o's column sums.
  RecordedPrefill(const Model& model, std::span<const int32_t> tokens, KvType type, int64_t window,
                  bool observed, ThreadPool& pool);

  const KvCache& full() const { return full_; }
  std::span<const float> last_logits() const { return logits_; }
  // A copy of the full cache pressed layer by layer; per-layer counts in *kept when given.
  KvCache pressed(const Press& press, std::vector<LayerKept>* kept = nullptr) const;

 private:
  KvCache full_;
  LayerRecorder recorder_;
  std::vector<float> logits_;
};

}  // namespace snapkv
