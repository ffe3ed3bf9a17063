#include "kv/layer_recorder.h"

#include <algorithm>

namespace snapkv {

LayerRecorder::LayerRecorder(int n_layer, int n_head, int head_dim, int64_t window, PressNeeds needs,
                             const RopeParams& rope, ThreadPool& pool)
    : n_head_(n_head), head_dim_(head_dim), window_(std::max<int64_t>(1, window)), needs_(needs), rope_(rope),
      inv_freq_(rope.inv_freq()), pool_(&pool), win_q_(n_layer), win_pos_(n_layer), observed_(n_layer),
      seen_(n_layer, 0), stats_(n_layer) {}

void LayerRecorder::begin(int64_t n_tok, int32_t first_pos, Call call) {
  n_tok_ = n_tok;
  extend_ = call == Call::kExtend;
  if (!extend_) first_pos_ = first_pos;
  std::fill(seen_.begin(), seen_.end(), 0);
  if (call == Call::kFresh) clear();
}

void LayerRecorder::queries(int il, int64_t n_tok, const float* q, const int32_t* pos, const float* lse, KvStore& kv) {
  const int64_t row = static_cast<int64_t>(n_head_) * head_dim_;
  std::vector<float>& wq = win_q_[il];
  std::vector<int32_t>& wp = win_pos_[il];
  const int64_t take = std::min(n_tok, window_);
  wq.insert(wq.end(), q + (n_tok - take) * row, q + n_tok * row);
  wp.insert(wp.end(), pos + (n_tok - take), pos + n_tok);
  // Trimmed only once twice the window is held, so that decode steps (one query each) move one
  // row per step on average rather than the whole window. The call's queries past the first stay
  // beside the window, so that dropping rejected drafts (drop_from) leaves a whole window.
  if (static_cast<int64_t>(wp.size()) > 2 * window_) {
    const int64_t drop = static_cast<int64_t>(wp.size()) - (window_ + take - 1);
    wq.erase(wq.begin(), wq.begin() + drop * row);
    wp.erase(wp.begin(), wp.begin() + drop);
  }
  if (needs_.stats_from >= 0) add_query_stats(il, n_tok, q, pos);
  if (!needs_.observed) return;
  const std::span<const KvHeadView> views = kv.layer(il);
  const int n_group = n_head_ / static_cast<int>(views.size());
  std::vector<std::vector<float>>& obs = observed_[il];
  if (seen_[il] == 0) {
    // Sized for every entry the layer will hold at the end of the call; extending keeps the sums.
    if (!extend_ || obs.empty()) obs.assign(n_head_, {});
    for (int h = 0; h < n_head_; ++h) obs[h].resize(static_cast<size_t>(views[h / n_group].n - n_tok + n_tok_), 0.0f);
  }
  std::vector<float*> rows(n_head_);
  for (int h = 0; h < n_head_; ++h) rows[h] = obs[h].data();
  attention_column_sums(q, pos, n_tok, n_head_, head_dim_, views, rows, *pool_, lse);
  seen_[il] += n_tok;
}

void LayerRecorder::add_query_stats(int il, int64_t n_tok, const float* q, const int32_t* pos) {
  const int64_t d = head_dim_, row = n_head_ * d;
  QueryStats& st = stats_[il];
  if (st.sum.empty()) st.sum.assign(row, 0.0), st.outer.assign(row * d, 0.0);
  // The rows at positions >= stats_from, rotated back by their own angles: RoPE multiplies by
  // mscale and rotates, so its inverse divides and rotates the other way.
  std::vector<int32_t> p;
  std::vector<float> x;
  for (int64_t t = 0; t < n_tok; ++t) {
    if (pos[t] < needs_.stats_from) continue;
    p.push_back(pos[t]);
    x.insert(x.end(), q + t * row, q + (t + 1) * row);
  }
  if (p.empty()) return;
  const int64_t n = static_cast<int64_t>(p.size());
  RopeAngles a = rope_angles(inv_freq_, p.data(), n, 1 / rope_.mscale());
  for (float& v : a.sin) v = -v;
  rope(x.data(), a, 0, n, n_head_, head_dim_, rope_.mode);
  pool_->for_each_item(n_head_, [&](int64_t h) {
    // In f32 over this call's rows (at most a prefill chunk), then added to the f64 sums.
    std::vector<float> outer(static_cast<size_t>(d * d), 0.0f);
    for (int64_t t = 0; t < n; ++t) {
      const float* v = x.data() + t * row + h * d;
      for (int64_t i = 0; i < d; ++i) {
        st.sum[h * d + i] += v[i];
        float* o = outer.data() + i * d;
        for (int64_t j = 0; j < d; ++j) o[j] += v[i] * v[j];
      }
    }
    for (int64_t k = 0; k < d * d; ++k) st.outer[h * d * d + k] += outer[k];
  });
  st.n += n;
  st.next_pos = std::max(st.next_pos, p.back() + 1);
}

LayerInput LayerRecorder::input(int il, std::span<const KvHeadView> kv) const {
  LayerInput in;
  in.layer = il;
  in.n_layer = static_cast<int>(win_q_.size());
  in.n_head = n_head_;
  in.head_dim = head_dim_;
  in.kv = kv;
  const int64_t held = static_cast<int64_t>(win_pos_[il].size());
  const int64_t skip = std::max<int64_t>(0, held - window_);
  in.q_window = win_q_[il].data() + skip * n_head_ * head_dim_;
  in.window_pos = win_pos_[il].data() + skip;
  in.n_window = held - skip;
  in.observed = observed_[il];
  in.first_new_pos = first_pos_;
  in.q_sum = stats_[il].sum;
  in.q_outer = stats_[il].outer;
  in.q_count = stats_[il].n;
  in.q_next_pos = stats_[il].next_pos;
  in.rope = &rope_;
  in.pool = pool_;
  return in;
}

WindowQueries LayerRecorder::window(int il) const {
  const LayerInput in = input(il, {});
  const size_t row = static_cast<size_t>(n_head_) * head_dim_;
  return {std::vector<float>(in.q_window, in.q_window + in.n_window * row),
          std::vector<int32_t>(in.window_pos, in.window_pos + in.n_window)};
}

void LayerRecorder::set_window(int il, const WindowQueries& w) {
  win_q_[il] = w.q;
  win_pos_[il] = w.pos;
}

void LayerRecorder::drop_from(int32_t pos) {
  const size_t row = static_cast<size_t>(n_head_) * head_dim_;
  for (size_t il = 0; il < win_pos_.size(); ++il) {
    std::vector<int32_t>& p = win_pos_[il];
    p.erase(std::lower_bound(p.begin(), p.end(), pos), p.end());
    win_q_[il].resize(p.size() * row);
  }
}

void LayerRecorder::release(int il) {
  observed_[il] = {};
  stats_[il] = {};
}

void LayerRecorder::clear() {
  for (size_t il = 0; il < win_q_.size(); ++il) {
    win_q_[il].clear();
    win_pos_[il].clear();
    observed_[il] = {};
    stats_[il] = {};
  }
}

size_t LayerRecorder::bytes() const {
  size_t n = 0;
  for (size_t il = 0; il < win_q_.size(); ++il) {
    n += win_q_[il].capacity() * sizeof(float) + win_pos_[il].capacity() * sizeof(int32_t);
    for (const auto& v : observed_[il]) n += v.capacity() * sizeof(float);
    n += (stats_[il].sum.capacity() + stats_[il].outer.capacity()) * sizeof(double);
  }
  return n;
}

LayerKept press_layer(const Press& press, KvCache& cache, int il, LayerInput in, const Decoder& model) {
  LayerKept k;
  for (const KvHeadView& h : in.kv) k.total += h.n;
  // A sliding-window layer keeps its window (the cache drops what falls out of it); presses
  // compress the layers that see the whole context.
  if (cache.window(il) > 0) return LayerKept{k.total, k.total};
  std::vector<float> out_proj;
  if (press.needs_out_proj()) {
    out_proj = model.out_proj(il);
    in.out_proj = out_proj;
  }
  const Selection sel = press.select(in);
  for (size_t ih = 0; ih < sel.size(); ++ih) cache.keep(il, static_cast<int>(ih), sel[ih]);
  for (const KvHeadView& h : cache.layer(il)) k.kept += h.n;
  return k;
}

}  // namespace snapkv
