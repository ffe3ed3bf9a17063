#include "kv/press_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "kv/press_scores.h"
#include "kv/token_runs.h"

namespace snapkv {
namespace {

// Top n of all heads' scores jointly; returns how many each head got. Ties: lower head first.
std::vector<int64_t> joint_counts(const HeadScores& s, int64_t n, Selection* kept = nullptr) {
  std::vector<float> all;
  std::vector<int32_t> head;
  for (size_t h = 0; h < s.size(); ++h) {
    all.insert(all.end(), s[h].begin(), s[h].end());
    head.insert(head.end(), s[h].size(), static_cast<int32_t>(h));
  }
  std::vector<int64_t> counts(s.size(), 0);
  if (kept) kept->assign(s.size(), {});
  std::vector<size_t> offset(s.size() + 1, 0);
  for (size_t h = 0; h < s.size(); ++h) offset[h + 1] = offset[h] + s[h].size();
  for (int32_t i : top_k(all, n)) {
    ++counts[head[i]];
    if (kept) (*kept)[head[i]].push_back(static_cast<int32_t>(i - offset[head[i]]));
  }
  return counts;
}

int64_t n_protected(const std::vector<float>& s) {
  return std::count(s.begin(), s.end(), kKeepAlways);
}

// Where head h's chunks end when they must not cut sentences (cfg.sentences) or token runs
// (cfg.runs); empty otherwise (every cfg.chunk entries).
std::vector<int64_t> chunk_ends(const PressConfig& cfg, const LayerInput& in, size_t h) {
  if (!cfg.reads_tokens() || cfg.chunk == 0 || in.kv.empty()) return {};
  if (cfg.sentences) return chunk_ends_on_sentences(in.kv[h].pos, in.kv[h].n, in.run_start, in.sentence_start, cfg.chunk);
  return chunk_ends_on_runs(in.kv[h].pos, in.kv[h].n, in.run_start, cfg.chunk);
}

// Per head: keep n[h] entries, by score, by whole token runs (cfg.runs > 0), or by whole chunks
// of the head's own (cfg.chunk > 0) that fit in n[h]; a head whose budget is under one chunk
// keeps single entries, so that the layer never holds more than its budget.
Selection keep_per_head(const PressConfig& cfg, const LayerInput& in, const HeadScores& s,
                        const std::vector<int64_t>& n) {
  PressConfig own = cfg;
  own.ratio = 0;  // each head's chunks fit its own budget
  Selection sel(s.size());
  for (size_t h = 0; h < s.size(); ++h) {
    if (cfg.chunk > 0 && n[h] >= cfg.chunk) {
      sel[h] = select_top(own, {s[h]}, n[h], chunk_ends(cfg, in, h))[0];
    } else {
      sel[h] = cfg.runs > 0 ? top_runs(s[h], in.kv[h].pos, in.run_start, n[h]) : top_k(s[h], n[h]);
    }
  }
  return sel;
}

// The n best entries of every head: by select_top() (the same chunks in every head), or by whole
// token runs (cfg.runs without chunks).
Selection keep_uniform(const PressConfig& cfg, const LayerInput& in, const HeadScores& s, int64_t n) {
  if (cfg.runs > 0 && cfg.chunk == 0) return keep_per_head(cfg, in, s, std::vector<int64_t>(s.size(), n));
  return select_top(cfg, s, n, chunk_ends(cfg, in, 0));
}

// Ada-KV: the layer's budget shared among its heads by their scores.
Selection select_ada(const PressConfig& cfg, const LayerInput& in, const HeadScores& s, int64_t c) {
  std::vector<int64_t> keep(s.size());
  if (cfg.variant == PressVariant::kKvpress) {
    // kvpress: each head first secures its top int(C * alpha) entries (at least 1), then the
    // layer keeps the n_heads * C best entries over all heads.
    HeadScores safe = s;
    const int64_t n_safe = cfg.alpha > 0 ? std::max<int64_t>(1, static_cast<int64_t>(c * cfg.alpha)) : 0;
    for (std::vector<float>& h : safe) {
      for (int32_t i : top_k(h, n_safe)) h[i] = std::numeric_limits<float>::max();
    }
    Selection sel;
    keep = joint_counts(safe, static_cast<int64_t>(s.size()) * c, &sel);
    if (cfg.chunk == 0 && cfg.runs == 0) {
      for (std::vector<int32_t>& h : sel) std::sort(h.begin(), h.end());
      return sel;
    }
    return keep_per_head(cfg, in, safe, keep);
  }
  // Paper: the protected entries stay outside the shared budget B = C - w.
  int64_t w = 0;
  HeadScores prefix(s.size());
  for (size_t h = 0; h < s.size(); ++h) {
    w = std::max(w, n_protected(s[h]));
    std::copy_if(s[h].begin(), s[h].end(), std::back_inserter(prefix[h]), [](float x) { return x != kKeepAlways; });
  }
  const std::vector<int64_t> budgets = ada_prefix_budgets(prefix, c - w, cfg.alpha);
  for (size_t h = 0; h < s.size(); ++h) keep[h] = budgets[h] + n_protected(s[h]);
  return keep_per_head(cfg, in, s, keep);
}

}  // namespace

int64_t pyramid_layer_budget(const PressConfig& c, int64_t capacity, int64_t n, int64_t w, int il, int n_layer) {
  const bool paper = c.variant == PressVariant::kPaper;
  const double b = static_cast<double>(paper ? capacity - w : capacity);
  double mn = b / c.beta, mx = 2 * b - mn;
  if (mx >= static_cast<double>(n - w)) {
    mx = static_cast<double>(n - w);
    mn = 2 * b - mx;
  }
  if (!paper && !(static_cast<double>(n) >= mx && mx >= mn && mn >= static_cast<double>(w))) return capacity;
  mn = std::max(mn, 0.0);
  const double steps = n_layer > 1 ? (mx - mn) / (n_layer - 1) : 0.0;
  const int64_t budget = static_cast<int64_t>(std::nearbyint(mx - il * steps));
  return paper ? budget + w : budget;
}

std::vector<int64_t> ada_prefix_budgets(const HeadScores& prefix_scores, int64_t b, double alpha) {
  const size_t n_heads = prefix_scores.size();
  const std::vector<int64_t> counts = joint_counts(prefix_scores, static_cast<int64_t>(n_heads) * b);
  // The blended budgets sum to n_heads * B; round them by largest remainders so that their sum
  // stays exactly that (every press then holds the same memory), capped by what a head holds.
  std::vector<int64_t> budgets(n_heads);
  std::vector<double> frac(n_heads);
  int64_t total = 0, target = 0;
  for (size_t h = 0; h < n_heads; ++h) {
    const int64_t size = static_cast<int64_t>(prefix_scores[h].size());
    const double blended = static_cast<double>(counts[h]) * (1 - alpha) + static_cast<double>(b) * alpha;
    budgets[h] = std::min(static_cast<int64_t>(std::floor(blended)), size);
    frac[h] = blended - std::floor(blended);
    total += budgets[h];
    target += size;
  }
  target = std::min(target, static_cast<int64_t>(n_heads) * b);
  std::vector<size_t> order(n_heads);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return frac[x] > frac[y]; });
  for (bool gave = true; total < target && gave;) {
    gave = false;
    for (size_t i = 0; i < n_heads && total < target; ++i) {
      const size_t h = order[i];
      if (budgets[h] < static_cast<int64_t>(prefix_scores[h].size())) ++budgets[h], ++total, gave = true;
    }
  }
  return budgets;
}

Selection select_budgeted(const PressConfig& cfg, const LayerInput& in, HeadScores scores) {
  if (cfg.critical > 0) scores = critical_scores(cfg, in, std::move(scores));
  const int64_t c = layer_capacity(cfg, in.kv);
  switch (cfg.budget) {
    case BudgetKind::kUniform:
      return keep_uniform(cfg, in, scores, c);
    case BudgetKind::kPyramid: {
      const size_t longest = std::max_element(scores.begin(), scores.end(), [](const auto& a, const auto& b) {
                               return a.size() < b.size();
                             }) - scores.begin();
      const int64_t w = scores.empty() ? 0 : n_protected(scores[longest]);
      return keep_uniform(cfg, in, scores, pyramid_layer_budget(cfg, c, longest_head(in.kv), w, in.layer, in.n_layer));
    }
    case BudgetKind::kAda:
      return select_ada(cfg, in, scores, c);
  }
  return {};
}

}  // namespace snapkv
