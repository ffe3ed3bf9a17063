#include "engine/session.h"

#include <numeric>

#include "util/error.h"

namespace snapkv {

Session::Session(const Model& model, int n_ctx, ThreadPool& pool)
    : model_(model), n_ctx_(n_ctx), pool_(pool),
      kv_(model.hparams().n_layer, model.hparams().n_head_kv, model.hparams().head_dim) {
  if (n_ctx <= 0) fail(ErrorKind::kInvalidArgument, "context size must be positive, got {}", n_ctx);
}

void Session::run(std::span<const int32_t> tokens, LogitsMode mode, const LayerCallback& after_layer) {
  if (tokens.empty()) fail(ErrorKind::kInvalidArgument, "nothing to process: the prompt is empty");
  if (tokens.size() > static_cast<size_t>(n_ctx_ - n_past())) {
    fail(ErrorKind::kOutOfRange, "{} tokens do not fit in the context: {} of {} are used (raise --ctx, up to {} for this model)",
         tokens.size(), n_past(), n_ctx_, model_.hparams().n_ctx_train);
  }
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), n_past());
  model_.forward(tokens, pos, kv_, mode, logits_, pool_, after_layer);
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
}

void Session::prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress) {
  const int n_layer = model_.hparams().n_layer;
  LayerCallback cb;
  if (progress) cb = [&](int il) { progress(il + 1, n_layer); };
  run(tokens, LogitsMode::kLast, cb);
}

void Session::decode(int32_t token) { run({&token, 1}, LogitsMode::kLast, {}); }

std::vector<float> Session::prefill_all_logits(std::span<const int32_t> tokens) {
  run(tokens, LogitsMode::kAll, {});
  std::vector<float> all = std::move(logits_);
  const int n_vocab = model_.hparams().n_vocab;
  logits_.assign(all.end() - n_vocab, all.end());
  return all;
}

void Session::reset() {
  kv_.clear();
  tokens_.clear();
  logits_.clear();
}

}  // namespace snapkv
