#include "engine/session.h"

#include <numeric>

#include "util/error.h"

namespace snapkv {
namespace {

int replication(const Model& model, const PressConfig& press) {
  const ModelHparams& h = model.hparams();
  return press.compresses() && press.gqa == GqaReduce::kPerQueryHead ? h.n_head / h.n_head_kv : 1;
}

// Forwards layer events to the compressor and reports progress.
class Observer final : public LayerObserver {
 public:
  Observer(Compressor* c, const std::function<void(int, int)>& progress, int n_layer)
      : c_(c), progress_(progress), n_layer_(n_layer) {}
  void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, KvStore& kv) override {
    if (c_) c_->queries(il, n_tok, q, pos, kv);
  }
  void layer_done(int il) override {
    if (c_) c_->layer_done(il);
    if (progress_) progress_(il + 1, n_layer_);
  }

 private:
  Compressor* c_;
  const std::function<void(int, int)>& progress_;
  int n_layer_;
};

}  // namespace

Session::Session(const Model& model, int n_ctx, ThreadPool& pool, const SessionOptions& options)
    : model_(model), n_ctx_(n_ctx), pool_(pool),
      kv_(model.hparams().n_layer, model.hparams().n_head_kv, model.hparams().head_dim, options.kv_type,
          replication(model, options.press)) {
  if (n_ctx <= 0) fail(ErrorKind::kInvalidArgument, "context size must be positive, got {}", n_ctx);
  if (options.press.compresses()) {
    compressor_ = std::make_unique<Compressor>(options.press, kv_, model.hparams().n_head, pool);
  }
}

void Session::run(std::span<const int32_t> tokens, LogitsMode mode, bool compress,
                  const std::function<void(int, int)>& progress) {
  if (tokens.empty()) fail(ErrorKind::kInvalidArgument, "nothing to process: the prompt is empty");
  if (tokens.size() > static_cast<size_t>(n_ctx_ - n_past())) {
    fail(ErrorKind::kOutOfRange, "{} tokens do not fit in the context: {} of {} are used (raise --ctx, up to {} for this model)",
         tokens.size(), n_past(), n_ctx_, model_.hparams().n_ctx_train);
  }
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), n_past());
  if (compressor_) compressor_->begin(static_cast<int64_t>(tokens.size()), pos[0], compress);
  Observer observer(compressor_.get(), progress, model_.hparams().n_layer);
  model_.forward(tokens, pos, kv_, mode, logits_, pool_, &observer);
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
}

void Session::prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress,
                      bool compress) {
  run(tokens, LogitsMode::kLast, compress, progress);
}

void Session::decode(int32_t token) { run({&token, 1}, LogitsMode::kLast, false, {}); }

std::vector<float> Session::prefill_all_logits(std::span<const int32_t> tokens) {
  run(tokens, LogitsMode::kAll, false, {});
  std::vector<float> all = std::move(logits_);
  const int n_vocab = model_.hparams().n_vocab;
  logits_.assign(all.end() - n_vocab, all.end());
  return all;
}

size_t Session::kv_full_bytes() const {
  const ModelHparams& h = model_.hparams();
  return static_cast<size_t>(n_past()) * h.n_layer * h.n_head_kv * kv_.entry_bytes();
}

void Session::adopt(KvCache cache, std::span<const int32_t> tokens, std::span<const float> last_logits) {
  if (compressor_) fail(ErrorKind::kInvalidArgument, "adopt: the session's press must be full");
  if (cache.n_layer() != kv_.n_layer() || cache.n_head() != kv_.n_head() || cache.head_dim() != kv_.head_dim() ||
      cache.type() != kv_.type()) {
    fail(ErrorKind::kInvalidArgument, "adopt: the cache's shape or type differs from the session's");
  }
  if (tokens.empty() || tokens.size() > static_cast<size_t>(n_ctx_)) {
    fail(ErrorKind::kInvalidArgument, "adopt: {} tokens for a context of {}", tokens.size(), n_ctx_);
  }
  if (last_logits.size() != static_cast<size_t>(model_.hparams().n_vocab)) {
    fail(ErrorKind::kInvalidArgument, "adopt: {} logits, the vocabulary has {}", last_logits.size(),
         model_.hparams().n_vocab);
  }
  kv_ = std::move(cache);
  tokens_.assign(tokens.begin(), tokens.end());
  logits_.assign(last_logits.begin(), last_logits.end());
}

void Session::reset() {
  kv_.clear();
  if (compressor_) compressor_->reset();
  tokens_.clear();
  logits_.clear();
}

}  // namespace snapkv
