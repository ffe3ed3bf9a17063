#pragma once
// Runs a press inside the forward pass: a LayerRecorder watches each layer's queries and, when
// the layer is done with a prompt, the press replaces the layer's entries in the cache by its
// selection. A layer's full keys and values therefore live only until the layer is done.
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/layer_recorder.h"
#include "kv/press.h"
#include "kv/reconstruction.h"
#include "kv/token_runs.h"

namespace snapkv {

// Whether press re-compresses during generation (its recompress option; not for a press needing
// every prompt query, nor with a ratio).
bool recompresses(const Press& press);

class Compressor final : public LayerObserver {
 public:
  Compressor(const PressConfig& cfg, const Decoder& model, KvCache& cache, ThreadPool& pool);

  // Before each forward call of n_tok tokens starting at first_pos. compress: the press selects
  // when each layer is done (prompt prefills); otherwise only re-compression may happen.
  // extend: the call continues a whole prompt whose window restore_window() gave (a context file
  // saved unpressed), so the press sees the same window as after one prefill of all the tokens.
  void begin(int64_t n_tok, int32_t first_pos, bool compress, bool extend = false);
  // The window queries of a whole cache this compressor will press (one per layer).
  // Error(kUnsupported) for a press that needs the attention of every prompt query (h2o).
  void restore_window(std::span<const WindowQueries> windows);
  void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, const float* lse, KvStore& kv) override;
  void layer_done(int il) override;
  // Presses every layer of the cache with a reconstruction's scores (a press that needs().reconstruct,
  // after the prompt was prefilled whole: kv/reconstruction.h).
  void press_reconstructed(const ReconstructionScores& scores);

  // Per position, where its token run and sentence start (token_spans), for a press that reads
  // the tokens; set before the forward call that presses.
  void set_spans(TokenSpans spans) { spans_ = std::move(spans); }
  // How many tokens a decode call may add before one of them re-compresses a layer (that one
  // included): at least 1 when the press re-compresses during generation, else INT64_MAX.
  int64_t tokens_to_recompression() const;
  // Forgets the window queries at position >= pos (the cache dropped those entries).
  void drop_from(int32_t pos) { recorder_.drop_from(pos); }
  const Press& press() const { return *press_; }
  // Per layer, the last compression's counts (kept == total where the layer stayed whole).
  const std::vector<LayerKept>& kept() const { return kept_; }
  void reset();
  // Bytes it holds beside the cache (the window queries, observed sums).
  size_t bytes() const { return recorder_.bytes(); }

 private:
  LayerInput input(int il) const;
  // The entries a layer's longest head may hold before generation re-compresses it; 0: never.
  int64_t recompression_limit() const;

  std::unique_ptr<Press> press_;
  const Decoder& model_;
  KvCache& cache_;
  LayerRecorder recorder_;
  std::vector<LayerKept> kept_;
  TokenSpans spans_;
  bool compress_ = false;
};

}  // namespace snapkv
