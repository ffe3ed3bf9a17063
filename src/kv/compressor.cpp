#include "kv/compressor.h"

#include <algorithm>

namespace snapkv {

Compressor::Compressor(const PressConfig& cfg, KvCache& cache, int n_head, ThreadPool& pool)
    : press_(make_press(cfg)), cache_(cache), n_head_(n_head), pool_(pool),
      window_(std::max(1, press_->window())), win_q_(cache.n_layer()), win_pos_(cache.n_layer()),
      kept_(cache.n_layer()) {}

void Compressor::begin(int64_t n_tok, int32_t first_pos, bool compress) {
  n_tok_ = n_tok;
  first_pos_ = first_pos;
  compress_ = compress && press_->config().compresses();
  if (!compress_) return;
  for (int il = 0; il < cache_.n_layer(); ++il) {
    win_q_[il].clear();
    win_pos_[il].clear();
  }
}

void Compressor::queries(int il, int64_t n_tok, const float* q, const int32_t* pos, KvStore& kv) {
  if (!press_->config().compresses()) return;
  const int64_t row = static_cast<int64_t>(n_head_) * cache_.head_dim();
  // Keep the last window_ queries of the layer.
  std::vector<float>& wq = win_q_[il];
  std::vector<int32_t>& wp = win_pos_[il];
  const int64_t take = std::min(n_tok, window_);
  wq.insert(wq.end(), q + (n_tok - take) * row, q + n_tok * row);
  wp.insert(wp.end(), pos + (n_tok - take), pos + n_tok);
  if (static_cast<int64_t>(wp.size()) > window_) {
    const int64_t drop = static_cast<int64_t>(wp.size()) - window_;
    wq.erase(wq.begin(), wq.begin() + drop * row);
    wp.erase(wp.begin(), wp.begin() + drop);
  }
  if (!compress_ || !press_->needs_observed_attention()) return;
  const std::span<const KvHeadView> views = kv.layer(il);
  const int n_group = n_head_ / static_cast<int>(views.size());
  if (seen_ == 0 || observed_.empty()) {
    observed_.assign(n_head_, {});
    for (int h = 0; h < n_head_; ++h) {
      observed_[h].assign(static_cast<size_t>(views[h / n_group].n - n_tok + n_tok_), 0.0f);
    }
  }
  std::vector<float*> rows(n_head_);
  for (int h = 0; h < n_head_; ++h) rows[h] = observed_[h].data();
  attention_column_sums(q, pos, n_tok, n_head_, cache_.head_dim(), views, rows, pool_);
  seen_ += n_tok;
}

void Compressor::layer_done(int il) {
  seen_ = 0;
  if (compress_) {
    compress_layer(il, press_->needs_observed_attention());
    observed_.clear();
    return;
  }
  // Re-compression during generation: a head grew `recompress` entries past the capacity.
  const PressConfig& c = press_->config();
  if (c.recompress == 0 || !c.compresses() || press_->needs_observed_attention() || c.ratio > 0) return;
  int64_t longest = 0;
  for (const KvHeadView& h : cache_.layer(il)) longest = std::max(longest, h.n);
  if (longest >= c.capacity + c.recompress) compress_layer(il, false);
}

void Compressor::compress_layer(int il, bool use_observed) {
  const std::span<const KvHeadView> views = cache_.layer(il);
  LayerInput in;
  in.layer = il;
  in.n_layer = cache_.n_layer();
  in.n_head = n_head_;
  in.head_dim = cache_.head_dim();
  in.kv = views;
  in.q_window = win_q_[il].data();
  in.window_pos = win_pos_[il].data();
  in.n_window = static_cast<int64_t>(win_pos_[il].size());
  if (use_observed) in.observed = observed_;
  in.first_new_pos = first_pos_;
  in.pool = &pool_;
  LayerKept k;
  for (const KvHeadView& h : views) k.total += h.n;
  const Selection sel = press_->select(in);
  for (size_t ih = 0; ih < sel.size(); ++ih) cache_.keep(il, static_cast<int>(ih), sel[ih]);
  for (const KvHeadView& h : cache_.layer(il)) k.kept += h.n;
  kept_[il] = k;
}

void Compressor::reset() {
  for (int il = 0; il < cache_.n_layer(); ++il) {
    win_q_[il].clear();
    win_pos_[il].clear();
    kept_[il] = {};
  }
  observed_.clear();
}

}  // namespace snapkv
