#include "engine/sequence.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "kv/token_runs.h"
#include "util/error.h"

namespace snapkv {
namespace {

int replication(const Decoder& model, const PressConfig& press) {
  const ModelHparams& h = model.hparams();
  return press.compresses() && press.gqa == GqaReduce::kPerQueryHead ? h.n_head / h.n_head_kv : 1;
}

// Forwards layer events to the compressor (or the window recorder) and reports progress.
class Observer final : public LayerObserver {
 public:
  Observer(LayerObserver* c, std::function<void(int, int)> progress, int n_layer)
      : c_(c), progress_(std::move(progress)), n_layer_(n_layer) {}
  void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, const float* lse, KvStore& kv) override {
    if (c_) c_->queries(il, n_tok, q, pos, lse, kv);
  }
  void layer_done(int il) override {
    if (c_) c_->layer_done(il);
    if (progress_) progress_(il + 1, n_layer_);
  }

 private:
  LayerObserver* c_;
  std::function<void(int, int)> progress_;
  int n_layer_;
};

}  // namespace

Sequence::Sequence(const Decoder& model, int n_ctx, ThreadPool& pool, const SequenceOptions& options)
    : model_(model), n_ctx_(n_ctx), pool_(pool),
      kv_(model.hparams().n_layer, model.hparams().n_head_kv, model.hparams().head_dim, options.kv_type,
          replication(model, options.press), model.hparams().layer_window),
      inputs_(options.inputs) {
  if (n_ctx <= 0) fail(ErrorKind::kInvalidArgument, "context size must be positive, got {}", n_ctx);
  const ModelHparams& h = model.hparams();
  if (options.press.compresses()) {
    compressor_ = std::make_unique<Compressor>(options.press, model, kv_, pool);
    // The press's own options (an alias's included).
    require_press_inputs(compressor_->press(), inputs_);
    if (compressor_->press().needs().reconstruct) check_reconstructable(kv_);
  } else {
    window_ = std::make_unique<LayerRecorder>(h.n_layer, h.n_head, h.head_dim, options.press.window, PressNeeds{},
                                              h.rope, pool);
  }
}

LayerObserver* Sequence::observer() const {
  return compressor_ ? static_cast<LayerObserver*>(compressor_.get()) : window_.get();
}

void Sequence::begin_call(std::span<const int32_t> tokens, bool compress) {
  const bool extend = std::exchange(extend_next_, false);
  const auto n_tok = static_cast<int64_t>(tokens.size());
  if (compressor_) {
    const PressConfig& c = compressor_->press().config();
    if (c.reads_tokens() && (compress || c.recompress > 0)) {
      std::vector<int32_t> all = tokens_;
      all.insert(all.end(), tokens.begin(), tokens.end());
      compressor_->set_spans(token_spans(all, inputs_->run_flags, c));
    }
    compressor_->begin(n_tok, n_past(), compress, extend);
  }
  if (window_) window_->begin(n_tok, n_past(), LayerRecorder::Call::kSlide);
}

void Sequence::check_idle() const {
  if (pass_) fail(ErrorKind::kInvalidArgument, "the session is in the middle of a prefill");
}

void Sequence::start(std::span<const int32_t> tokens, LogitsMode mode, bool compress,
                    const std::function<void(int, int)>& progress) {
  check_idle();
  if (tokens.empty()) fail(ErrorKind::kInvalidArgument, "nothing to process: the prompt is empty");
  if (tokens.size() > static_cast<size_t>(n_ctx_ - n_past())) {
    fail(ErrorKind::kOutOfRange, "{} tokens do not fit in the context: {} of {} are used (raise --ctx, up to {} for this model)",
         tokens.size(), n_past(), n_ctx_, model_.hparams().n_ctx_train);
  }
  pass_tokens_.assign(tokens.begin(), tokens.end());
  pass_pos_.resize(tokens.size());
  std::iota(pass_pos_.begin(), pass_pos_.end(), n_past());
  begin_call(pass_tokens_, compress);
  observer_ = std::make_unique<Observer>(observer(), progress, model_.hparams().n_layer);
  pass_ = model_.begin_forward(pass_tokens_, pass_pos_, kv_, mode, logits_, pool_, observer_.get());
}

void Sequence::finish() {
  tokens_.insert(tokens_.end(), pass_tokens_.begin(), pass_tokens_.end());
  pass_.reset();
}

void Sequence::run(std::span<const int32_t> tokens, LogitsMode mode, bool compress,
                  const std::function<void(int, int)>& progress) {
  start(tokens, mode, compress, progress);
  try {
    while (!pass_->step()) {
    }
  } catch (...) {
    pass_.reset();
    throw;
  }
  finish();
}

bool Sequence::reconstructs(bool compress) const {
  return compress && compressor_ && compressor_->press().needs().reconstruct;
}

void Sequence::prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress,
                      bool compress) {
  if (!reconstructs(compress)) return run(tokens, LogitsMode::kLast, compress, progress);
  // The whole prompt first, uncompressed; then the reconstruction passes score it, and the
  // press compresses every layer.
  run(tokens, LogitsMode::kLast, false, progress);
  const PressConfig& c = compressor_->press().config();
  if (c.reads_tokens()) compressor_->set_spans(token_spans(tokens_, inputs_->run_flags, c));
  compressor_->begin(0, n_past(), true);
  compressor_->press_reconstructed(reconstruction_scores(model_, kv_, tokens_, inputs_->reconstruction, pool_));
}

void Sequence::decode(int32_t token) { run({&token, 1}, LogitsMode::kLast, false, {}); }

void Sequence::begin_prefill(std::span<const int32_t> tokens, bool compress) {
  if (!reconstructs(compress)) return start(tokens, LogitsMode::kLast, compress, {});
  check_idle();
  prefill(tokens, {}, compress);  // the reconstruction is not interleaved
  prefilled_early_ = true;
}

bool Sequence::prefill_step() {
  if (std::exchange(prefilled_early_, false)) return true;
  if (!pass_) fail(ErrorKind::kInvalidArgument, "prefill_step: no prefill was begun");
  try {
    if (!pass_->step()) return false;
  } catch (...) {
    pass_.reset();
    throw;
  }
  finish();
  return true;
}

void Sequence::decode_batch(std::span<Sequence* const> sessions, std::span<const int32_t> tokens) {
  std::vector<std::span<const int32_t>> rows;
  for (const int32_t& t : tokens) rows.emplace_back(&t, 1);
  decode_batch(sessions, std::span<const std::span<const int32_t>>(rows));
}

std::vector<float> Sequence::decode_batch(std::span<Sequence* const> sessions,
                                          std::span<const std::span<const int32_t>> tokens) {
  if (sessions.size() != tokens.size()) {
    fail(ErrorKind::kInvalidArgument, "decode_batch: {} sessions but {} rows of tokens", sessions.size(),
         tokens.size());
  }
  if (sessions.empty()) return {};
  const Decoder& model = sessions[0]->model_;
  ThreadPool& pool = sessions[0]->pool_;
  std::vector<DecodeRow> rows;
  rows.reserve(sessions.size());
  for (size_t b = 0; b < sessions.size(); ++b) {
    Sequence& s = *sessions[b];
    s.check_idle();
    if (&s.model_ != &model || &s.pool_ != &pool) {
      fail(ErrorKind::kInvalidArgument, "decode_batch: the sessions must share one model and thread pool");
    }
    const int64_t m = static_cast<int64_t>(tokens[b].size());
    if (m < 1 || m > kMaxRowTokens) {
      fail(ErrorKind::kInvalidArgument, "decode_batch: {} tokens for a session (1 to {})", m, kMaxRowTokens);
    }
    if (s.n_past() + m > s.n_ctx_) {
      fail(ErrorKind::kOutOfRange, "decode_batch: {} more tokens overflow a session's context of {}", m, s.n_ctx_);
    }
  }
  for (size_t b = 0; b < sessions.size(); ++b) {
    Sequence& s = *sessions[b];
    s.begin_call(tokens[b], false);
    rows.push_back({tokens[b], s.n_past(), &s.kv_, s.observer()});
  }
  std::vector<float> logits;
  model.decode_batch(rows, logits, pool);
  const size_t n_vocab = static_cast<size_t>(model.hparams().n_vocab);
  size_t end = 0;
  for (size_t b = 0; b < sessions.size(); ++b) {
    Sequence& s = *sessions[b];
    end += tokens[b].size() * n_vocab;
    s.logits_.assign(logits.begin() + static_cast<ptrdiff_t>(end - n_vocab), logits.begin() + static_cast<ptrdiff_t>(end));
    s.tokens_.insert(s.tokens_.end(), tokens[b].begin(), tokens[b].end());
  }
  return logits;
}

std::vector<float> Sequence::prefill_all_logits(std::span<const int32_t> tokens) {
  run(tokens, LogitsMode::kAll, false, {});
  std::vector<float> all = std::move(logits_);
  const int n_vocab = model_.hparams().n_vocab;
  logits_.assign(all.end() - n_vocab, all.end());
  return all;
}

void Sequence::truncate(int n, std::span<const float> next_logits) {
  check_idle();
  if (n < 0 || n > n_past()) fail(ErrorKind::kInvalidArgument, "truncate: {} of {} tokens", n, n_past());
  if (!next_logits.empty() && next_logits.size() != static_cast<size_t>(model_.hparams().n_vocab)) {
    fail(ErrorKind::kInvalidArgument, "truncate: {} logits, the vocabulary has {}", next_logits.size(),
         model_.hparams().n_vocab);
  }
  if (!kv_.can_resume_at(n)) {
    fail(ErrorKind::kInvalidArgument, "truncate: the sliding-window layers no longer hold the entries before {}", n);
  }
  kv_.drop_from(n);
  if (compressor_) compressor_->drop_from(n);
  if (window_) window_->drop_from(n);
  tokens_.resize(static_cast<size_t>(n));
  logits_.assign(next_logits.begin(), next_logits.end());
}

size_t Sequence::kv_full_bytes() const {
  const ModelHparams& h = model_.hparams();
  const size_t n = static_cast<size_t>(n_past()) + (pass_ ? pass_tokens_.size() : 0);
  // A sliding-window layer needs its window only, compressed or not.
  size_t entries = 0;
  for (const int32_t w : h.layer_window) entries += w > 0 ? std::min(n, static_cast<size_t>(w)) : n;
  return entries * h.n_head_kv * kv_.entry_bytes();
}

void Sequence::adopt(KvCache cache, std::span<const int32_t> tokens, std::span<const float> last_logits,
                     std::span<const WindowQueries> windows) {
  check_idle();
  if (cache.n_layer() != kv_.n_layer() || cache.n_head() != kv_.n_head() || cache.head_dim() != kv_.head_dim() ||
      cache.type() != kv_.type() || cache.windows() != kv_.windows()) {
    fail(ErrorKind::kInvalidArgument, "adopt: the cache's shape, type or windows differ from the session's");
  }
  if (tokens.empty() || tokens.size() > static_cast<size_t>(n_ctx_)) {
    fail(ErrorKind::kInvalidArgument, "adopt: {} tokens for a context of {}", tokens.size(), n_ctx_);
  }
  if (last_logits.size() != static_cast<size_t>(model_.hparams().n_vocab)) {
    fail(ErrorKind::kInvalidArgument, "adopt: {} logits, the vocabulary has {}", last_logits.size(),
         model_.hparams().n_vocab);
  }
  if (!windows.empty() && windows.size() != static_cast<size_t>(kv_.n_layer())) {
    fail(ErrorKind::kInvalidArgument, "adopt: {} windows for {} layers", windows.size(), kv_.n_layer());
  }
  if (compressor_ && !windows.empty()) {
    // The next prefill continues the prompt: the press sees the cache and the window as after one
    // prefill of all the tokens.
    const int64_t need = std::min<int64_t>(compressor_->press().window(), static_cast<int64_t>(tokens.size()));
    for (const WindowQueries& w : windows) {
      if (static_cast<int64_t>(w.pos.size()) < need) {
        fail(ErrorKind::kUnsupported, "the saved context holds the queries of its last {} tokens; a press window of "
             "{} needs more (save it with --kv-window {})", w.pos.size(), compressor_->press().window(),
             compressor_->press().window());
      }
    }
    compressor_->restore_window(windows);
    extend_next_ = true;
  }
  if (compressor_ && windows.empty()) compressor_->reset();
  kv_ = std::move(cache);
  tokens_.assign(tokens.begin(), tokens.end());
  logits_.assign(last_logits.begin(), last_logits.end());
  if (window_) {
    window_->clear();
    for (size_t il = 0; il < windows.size(); ++il) window_->set_window(static_cast<int>(il), windows[il]);
  }
}

size_t Sequence::held_bytes() const {
  return kv_.allocated_bytes() + (window_ ? window_->bytes() : 0) + (compressor_ ? compressor_->bytes() : 0) +
         logits_.capacity() * sizeof(float) + tokens_.capacity() * sizeof(int32_t);
}

std::unique_ptr<Sequence> Sequence::prefix_copy(int n) const {
  check_idle();
  if (compressor_) fail(ErrorKind::kInvalidArgument, "prefix_copy: the session has a press");
  if (n < 1 || n > n_past()) fail(ErrorKind::kInvalidArgument, "prefix_copy: {} of {} tokens", n, n_past());
  if (!kv_.can_resume_at(n)) {
    fail(ErrorKind::kInvalidArgument, "prefix_copy: the sliding-window layers no longer hold the entries before {}", n);
  }
  auto s = std::make_unique<Sequence>(model_, n_ctx_, pool_, SequenceOptions{kv_.type(), PressConfig{}});
  s->kv_ = kv_;
  for (int il = 0; il < kv_.n_layer(); ++il) {
    // The entries at positions below n (all of a global layer's first n; a window layer's last ones).
    for (int ih = 0; ih < kv_.n_head(); ++ih) {
      const KvHeadView h = kv_.layer(il)[ih];
      const auto end = std::lower_bound(h.pos, h.pos + h.n, n) - h.pos;
      std::vector<int32_t> idx(static_cast<size_t>(end));
      std::iota(idx.begin(), idx.end(), 0);
      s->kv_.keep(il, ih, idx);
    }
    WindowQueries w = window_->window(il);
    const size_t row = w.pos.empty() ? 0 : w.q.size() / w.pos.size();
    size_t kept = 0;
    while (kept < w.pos.size() && w.pos[kept] < n) ++kept;  // positions ascend
    w.pos.resize(kept);
    w.q.resize(kept * row);
    s->window_->set_window(il, w);
  }
  s->tokens_.assign(tokens_.begin(), tokens_.begin() + n);
  if (n == n_past()) s->logits_ = logits_;
  return s;
}

std::unique_ptr<Sequence> Sequence::hand_to(const PressConfig& press) {
  check_idle();
  if (compressor_) fail(ErrorKind::kInvalidArgument, "hand_to: the session has a press");
  auto s = std::make_unique<Sequence>(model_, n_ctx_, pool_, SequenceOptions{kv_.type(), press, inputs_});
  const std::vector<WindowQueries> w = windows();
  try {
    s->adopt(std::move(kv_), tokens_, logits_, w);
  } catch (...) {
    reset();
    throw;
  }
  reset();
  return s;
}

std::vector<WindowQueries> Sequence::windows() const {
  std::vector<WindowQueries> out;
  if (!window_ || tokens_.empty()) return out;
  for (int il = 0; il < kv_.n_layer(); ++il) out.push_back(window_->window(il));
  return out;
}

void Sequence::reset() {
  pass_.reset();
  kv_.clear();
  if (compressor_) compressor_->reset();
  if (window_) window_->clear();
  extend_next_ = false;
  tokens_.clear();
  logits_.clear();
}

}  // namespace snapkv
