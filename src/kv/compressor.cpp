#include "kv/compressor.h"

#include <algorithm>
#include <limits>

#include "kv/press_scores.h"
#include "util/error.h"

namespace snapkv {

Compressor::Compressor(const PressConfig& cfg, const Decoder& model, KvCache& cache, ThreadPool& pool)
    : press_(make_press(cfg)), model_(model), cache_(cache),
      recorder_(cache.n_layer(), model.hparams().n_head, cache.head_dim(), press_->window(), press_->needs(),
                model.hparams().rope, pool),
      kept_(cache.n_layer()) {}

void Compressor::begin(int64_t n_tok, int32_t first_pos, bool compress, bool extend) {
  compress_ = compress;
  using Call = LayerRecorder::Call;
  recorder_.begin(n_tok, first_pos, !compress ? Call::kSlide : extend ? Call::kExtend : Call::kFresh);
}

void Compressor::restore_window(std::span<const WindowQueries> windows) {
  if (press_->needs().whole_prompt()) {
    fail(ErrorKind::kUnsupported, "press {} needs every prompt query, which a saved context does not hold; "
         "compress the document with it instead", press_->config().press);
  }
  for (size_t il = 0; il < windows.size(); ++il) recorder_.set_window(static_cast<int>(il), windows[il]);
}

void Compressor::queries(int il, int64_t n_tok, const float* q, const int32_t* pos, const float* lse, KvStore& kv) {
  // Observed attention and query statistics are only needed (and only correct) over a whole prompt.
  if (compress_ || !press_->needs().whole_prompt()) recorder_.queries(il, n_tok, q, pos, lse, kv);
}

void Compressor::layer_done(int il) {
  if (compress_) {
    kept_[il] = press_layer(*press_, cache_, il, input(il), model_);
    recorder_.release(il);
    return;
  }
  const int64_t limit = recompression_limit();
  if (limit > 0 && longest_head(cache_.layer(il)) >= limit) kept_[il] = press_layer(*press_, cache_, il, input(il), model_);
}

// Re-compression during generation, once a head grew `recompress` entries past the capacity.
bool recompresses(const Press& press) {
  const PressConfig& c = press.config();
  return c.recompress > 0 && !press.needs().whole_prompt() && c.ratio == 0;
}

int64_t Compressor::recompression_limit() const {
  return recompresses(*press_) ? press_->config().capacity + press_->config().recompress : 0;
}

int64_t Compressor::tokens_to_recompression() const {
  const int64_t limit = recompression_limit();
  if (limit == 0) return std::numeric_limits<int64_t>::max();
  int64_t room = limit;
  for (int il = 0; il < cache_.n_layer(); ++il) {
    if (cache_.window(il) == 0) room = std::min(room, limit - longest_head(cache_.layer(il)));  // press_layer()
  }
  return std::max<int64_t>(room, 1);
}

void Compressor::press_reconstructed(const ReconstructionScores& scores) {
  for (int il = 0; il < cache_.n_layer(); ++il) {
    LayerInput in = input(il);
    in.observed = scores[il];
    kept_[il] = press_layer(*press_, cache_, il, in, model_);
  }
}

LayerInput Compressor::input(int il) const {
  LayerInput in = recorder_.input(il, cache_.layer(il));
  in.run_start = spans_.run_start;
  in.sentence_start = spans_.sentence_start;
  return in;
}

void Compressor::reset() {
  recorder_.clear();
  std::fill(kept_.begin(), kept_.end(), LayerKept{});
}

}  // namespace snapkv
