#pragma once
// One sequence: its tokens, their positions and its KV cache, advanced by prefill and decode.
// With a compressing press, each prompt prefill leaves every layer's cache compressed.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kv/compressor.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "snapkv/press.h"

namespace snapkv {

struct SessionOptions {
  KvType kv_type = KvType::kF16;
  PressConfig press;  // "full" by default
};

class Session {
 public:
  // n_ctx: the most tokens this sequence may hold (prompt and generated).
  Session(const Model& model, int n_ctx, ThreadPool& pool, const SessionOptions& options = {});

  // Runs tokens through the model after what the session holds; afterwards logits() is the
  // distribution for the next token. With compress, the press compresses every layer once it is
  // done (tokens held before are re-scored with the new ones). Error(kOutOfRange) if the context
  // would overflow. progress(layers_done, n_layers) is called after each layer when set.
  void prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress = {},
               bool compress = true);
  // One generated token through the model (never compressed, except by re-compression).
  void decode(int32_t token);

  // Logits of every token (for perplexity, fidelity and reference checks); not compressed.
  std::vector<float> prefill_all_logits(std::span<const int32_t> tokens);

  std::span<const float> logits() const { return logits_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int n_past() const { return static_cast<int>(tokens_.size()); }
  int n_ctx() const { return n_ctx_; }
  const KvCache& kv() const { return kv_; }
  // Bytes the uncompressed cache would hold for the same tokens.
  size_t kv_full_bytes() const;
  // Null when the press is "full".
  const Compressor* compressor() const { return compressor_.get(); }
  const Model& model() const { return model_; }
  void reset();
  // Starts this session from a cache built elsewhere (e.g. a RecordedPrefill's pressed copy):
  // the session takes the cache, the tokens it holds (at positions 0..n-1, whatever entries a
  // press dropped) and the logits for the next token, as if it had prefilled them itself.
  // Only for sessions whose press is "full" (no compressor). Error(kInvalidArgument) when the
  // cache's layers, heads, head size or type differ from this session's, when tokens is empty
  // or longer than n_ctx, or when last_logits is not one row of n_vocab.
  void adopt(KvCache cache, std::span<const int32_t> tokens, std::span<const float> last_logits);

 private:
  void run(std::span<const int32_t> tokens, LogitsMode mode, bool compress,
           const std::function<void(int, int)>& progress);

  const Model& model_;
  int n_ctx_;
  ThreadPool& pool_;
  KvCache kv_;
  std::unique_ptr<Compressor> compressor_;
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
};

}  // namespace snapkv
