#pragma once
// One sequence: its tokens, their positions and its KV cache, advanced by prefill and decode.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kv/kv_cache.h"
#include "model/model.h"

namespace snapkv {

class Session {
 public:
  // n_ctx: the most tokens this sequence may hold (prompt and generated).
  Session(const Model& model, int n_ctx, ThreadPool& pool);

  // Runs tokens through the model after what the session holds; afterwards logits() is the
  // distribution for the next token. Error(kOutOfRange) if the context would overflow.
  // progress(layers_done, n_layers) is called after each layer when set.
  void prefill(std::span<const int32_t> tokens,
               const std::function<void(int, int)>& progress = {});
  // One generated token through the model (a prefill of one).
  void decode(int32_t token);

  // Logits of every token of the last prefill (for perplexity and reference checks).
  std::vector<float> prefill_all_logits(std::span<const int32_t> tokens);

  std::span<const float> logits() const { return logits_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int n_past() const { return static_cast<int>(tokens_.size()); }
  int n_ctx() const { return n_ctx_; }
  const KvCache& kv() const { return kv_; }
  const Model& model() const { return model_; }
  void reset();

 private:
  void run(std::span<const int32_t> tokens, LogitsMode mode, const LayerCallback& after_layer);

  const Model& model_;
  int n_ctx_;
  ThreadPool& pool_;
  KvCache kv_;
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
};

}  // namespace snapkv
