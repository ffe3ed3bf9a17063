#include "kv/press_scores.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace snapkv {
int64_t longest_head(std::span<const KvHeadView> kv) {
  int64_t n = 0;
  for (const KvHeadView& h : kv) n = std::max(n, h.n);
  return n;
}

int64_t layer_capacity(const PressConfig& cfg, std::span<const KvHeadView> kv) {
  if (cfg.ratio <= 0) return cfg.capacity;
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(longest_head(kv)) * (1.0 - cfg.ratio)));
}

bool layer_is_short(const PressConfig& cfg, std::span<const KvHeadView> kv) {
  return !cfg.compress_short && longest_head(kv) <= cfg.capacity;
}

HeadScores attention_sums(const LayerInput& in, int64_t first, int64_t n) {
  const int n_group = in.n_head / static_cast<int>(in.kv.size());
  HeadScores s(in.n_head);
  std::vector<float*> rows(in.n_head);
  for (int h = 0; h < in.n_head; ++h) {
    s[h].assign(static_cast<size_t>(in.kv[h / n_group].n), 0.0f);
    rows[h] = s[h].data();
  }
  attention_column_sums(in.q_window + first * in.n_head * in.head_dim, in.window_pos + first, n, in.n_head,
                        in.head_dim, in.kv, rows, *in.pool);
  return s;
}

HeadScores window_attention(const LayerInput& in, int64_t w) {
  w = std::min(w, in.n_window);
  return attention_sums(in, in.n_window - w, w);
}

std::vector<float> pool1d(std::span<const float> s, int kernel, PoolKind kind) {
  const int64_t n = static_cast<int64_t>(s.size()), r = kernel / 2;
  std::vector<float> out(s.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lo = std::max<int64_t>(0, i - r), hi = std::min<int64_t>(n - 1, i + r);
    if (kind == PoolKind::kMax) {
      out[i] = *std::max_element(s.begin() + lo, s.begin() + hi + 1);
    } else {
      double sum = 0;
      for (int64_t j = lo; j <= hi; ++j) sum += s[j];
      out[i] = static_cast<float>(sum / kernel);
    }
  }
  return out;
}

HeadScores reduce_gqa(const HeadScores& per_query_head, int n_stored, GqaReduce how) {
  const int n_head = static_cast<int>(per_query_head.size());
  const int g = n_head / n_stored;
  if (g == 1) return per_query_head;
  if (how == GqaReduce::kPerQueryHead) {
    fail(ErrorKind::kInternal, "per_query_head scores need one stored head per query head");
  }
  HeadScores out(n_stored);
  for (int hs = 0; hs < n_stored; ++hs) {
    std::vector<float>& o = out[hs];
    o = per_query_head[hs * g];
    for (int j = 1; j < g; ++j) {
      const std::vector<float>& s = per_query_head[hs * g + j];
      for (size_t i = 0; i < o.size(); ++i) o[i] = how == GqaReduce::kMax ? std::max(o[i], s[i]) : o[i] + s[i];
    }
    if (how == GqaReduce::kMean) {
      for (float& x : o) x /= static_cast<float>(g);
    }
  }
  return out;
}

namespace {

HeadScores compute_snapkv_scores(const PressConfig& cfg, const LayerInput& in) {
  const int64_t w = std::min<int64_t>(cfg.window, in.n_window);
  HeadScores s = window_attention(in, w);
  const int n_group = in.n_head / static_cast<int>(in.kv.size());
  for (int h = 0; h < in.n_head; ++h) {
    // The mean over the window's rows, as kvpress (the order is the sum's; CriticalKV's epsilon
    // is added to scores of this size).
    for (float& x : s[h]) x /= static_cast<float>(w);
    const int64_t prefix = std::max<int64_t>(0, in.kv[h / n_group].n - w);
    s[h] = pool1d(std::span<const float>(s[h]).first(static_cast<size_t>(prefix)), cfg.kernel, cfg.pool);
  }
  HeadScores out = reduce_gqa(s, static_cast<int>(in.kv.size()), cfg.gqa);
  for (size_t hs = 0; hs < out.size(); ++hs) {
    out[hs].resize(static_cast<size_t>(in.kv[hs].n), kKeepAlways);
  }
  return out;
}

}  // namespace

HeadScores snapkv_scores(const PressConfig& cfg, const LayerInput& in) {
  if (!in.score_memo) return compute_snapkv_scores(cfg, in);
  const auto key = std::make_tuple(cfg.window, cfg.kernel, cfg.pool, cfg.gqa);
  auto it = in.score_memo->find(key);
  if (it == in.score_memo->end()) it = in.score_memo->emplace(key, compute_snapkv_scores(cfg, in)).first;
  return it->second;
}

std::vector<int32_t> top_k(std::span<const float> scores, int64_t n) {
  std::vector<int32_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  if (n < static_cast<int64_t>(idx.size())) {
    const auto higher = [&](int32_t a, int32_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); };
    std::nth_element(idx.begin(), idx.begin() + std::max<int64_t>(n, 0), idx.end(), higher);
    idx.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
    std::sort(idx.begin(), idx.end());
  }
  return idx;
}

namespace {

// ChunkKV (kvpress's ChunkKVPress): the entries split into chunks of cfg.chunk (the last one
// shorter), each scored by the mean over its entries of the scores summed over the heads; a chunk
// holding an entry the press always keeps (kKeepAlways: SnapKV's window) is always kept, as
// kvpress keeps it by giving the window the layer's highest score + 1. The best chunks are kept
// whole, the same in every head: max(1, int(n_chunks * (1 - ratio))) of them in ratio mode
// (kvpress's count, which can pass n by up to a chunk), else the best that fit in n (at least one).
// ends: where each chunk ends, when not every cfg.chunk entries.
Selection top_chunks(const PressConfig& cfg, const HeadScores& scores, int64_t n, std::vector<int64_t> ends) {
  const int64_t len = static_cast<int64_t>(scores[0].size()), chunk = cfg.chunk;
  if (ends.empty()) {
    for (int64_t e = chunk; e < len + chunk; e += chunk) ends.push_back(std::min(e, len));
  }
  const auto n_chunks = static_cast<int64_t>(ends.size());
  const auto first = [&](int64_t c) { return c == 0 ? 0 : ends[c - 1]; };
  std::vector<float> chunk_score(static_cast<size_t>(n_chunks));
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t e0 = first(c), e1 = ends[c];
    double sum = 0;
    for (const auto& h : scores) {
      for (int64_t e = e0; e < e1; ++e) sum += h[e];  // +inf when one is kKeepAlways
    }
    chunk_score[c] = static_cast<float>(sum / static_cast<double>(e1 - e0));
  }
  const int64_t want = cfg.ratio > 0 ? std::max<int64_t>(1, static_cast<int64_t>(n_chunks * (1 - cfg.ratio)))
                                     : n_chunks;
  const int64_t room = cfg.ratio > 0 ? len : std::max(n, chunk);
  // Best chunk first; ties: the earlier chunk.
  std::vector<int32_t> order(static_cast<size_t>(n_chunks));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return chunk_score[a] > chunk_score[b]; });
  std::vector<int32_t> kept;
  int64_t taken = 0;
  for (const int32_t c : order) {
    if (taken == want) break;
    const int64_t e0 = first(c), e1 = ends[c];
    if (static_cast<int64_t>(kept.size()) + (e1 - e0) > room) continue;
    for (int64_t e = e0; e < e1; ++e) kept.push_back(static_cast<int32_t>(e));
    ++taken;
  }
  std::sort(kept.begin(), kept.end());
  return Selection(scores.size(), kept);
}

}  // namespace

Selection select_top(const PressConfig& cfg, const HeadScores& scores, int64_t n, std::vector<int64_t> chunk_ends) {
  const bool aligned = !scores.empty() && std::all_of(scores.begin(), scores.end(), [&](const auto& h) {
    return h.size() == scores[0].size();
  });
  if (cfg.chunk > 0 && aligned && static_cast<int64_t>(scores[0].size()) >= cfg.chunk) return top_chunks(cfg, scores, n, std::move(chunk_ends));
  Selection sel(scores.size());
  for (size_t h = 0; h < scores.size(); ++h) sel[h] = top_k(scores[h], n);
  return sel;
}

}  // namespace snapkv
