#pragma once
// One full-cache prefill whose press inputs (window queries, observed attention) are recorded
// for every layer, so that any number of presses can be applied to copies of the same cache: one
// prefill serves all presses. Prefill outputs never depend on compression (every prompt token
// attends with the full cache), so a copy pressed afterwards equals a cache pressed during
// prefill, layer by layer.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/sequence.h"

#include "kv/kv_cache.h"
#include "kv/layer_recorder.h"
#include "kv/press_inputs.h"
#include "kv/reconstruction.h"
#include "model/model.h"

namespace snapkv {

//
// A recorded prefill can be extended by more tokens of the same prompt, and copied: cases that
// share a prefix (needle depths of one haystack, questions about one document) prefill it once.
// Extending gives the same cache and press inputs as one prefill of all the tokens.
class RecordedPrefill {
 public:
  // Holds no tokens yet. window: the most queries any press will need; needs: what else the
  // presses need recorded (all of theirs, PressNeeds::operator|=).
  RecordedPrefill(const Decoder& model, KvType type, int64_t window, PressNeeds needs, ThreadPool& pool);
  RecordedPrefill(const Decoder& model, std::span<const int32_t> tokens, KvType type, int64_t window,
                  PressNeeds needs, ThreadPool& pool);

  // Prefills tokens after those held (at the next positions).
  void extend(std::span<const int32_t> tokens);
  const std::vector<int32_t>& tokens() const { return tokens_; }

  const KvCache& full() const { return full_; }
  // What a press sees of layer il over the full cache: its entries and the last recorded queries
  // (the window slides on over extensions, so after generated tokens those are theirs).
  LayerInput input(int il) const { return recorder_.input(il, full_.layer(il)); }
  std::span<const float> last_logits() const { return logits_; }
  // A copy of the full cache pressed layer by layer; per-layer counts in *kept when given. Keeps
  // the SnapKV and reconstruction scores it computes for the next press (so it is not thread-safe).
  // inputs: the model's press_inputs(), which presses keeping token runs or reconstructing the
  // context need (kvzip's passes run on the copy).
  KvCache pressed(const Press& press, std::vector<LayerKept>* kept = nullptr, const PressInputs* inputs = nullptr) const;
  // A sequence of up to n_ctx tokens holding the recorded ones, with the full cache (press null)
  // or a pressed copy, ready to go on as a session that prefilled them with the press: one
  // re-compressing during generation goes on doing so, from the recorded window.
  std::unique_ptr<Sequence> sequence(const Press* press, const PressInputs& inputs, int n_ctx) const;

 private:
  const Decoder* model_;
  ThreadPool* pool_;
  KvCache full_;
  LayerRecorder recorder_;
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
  // Per layer, the SnapKV scores computed by pressed() for the tokens held (LayerInput::score_memo).
  mutable std::vector<ScoreMemo> score_memo_;
  // The reconstruction's scores (kvzip) for the tokens held, once a press has needed them.
  mutable ReconstructionScores reconstructed_;
};

}  // namespace snapkv
