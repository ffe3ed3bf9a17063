// ada_kv: SnapKV's scores with the layer's budget shared adaptively among its KV heads (Ada-KV):
// heads whose attention is concentrated give entries to heads whose attention is spread. Heads
// then hold different numbers of entries, stored without padding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

// Top n of all heads' scores jointly; returns how many each head got. Ties: lower head first.
std::vector<int64_t> joint_counts(const HeadScores& s, int64_t n, std::vector<std::vector<int32_t>>* kept = nullptr) {
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

}  // namespace

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

namespace {

class AdaKvPress final : public Press {
 public:
  using Press::Press;
  Selection select(const LayerInput& in) const override {
    if (layer_is_short(cfg_, in.kv)) return {};
    const int64_t c = layer_capacity(cfg_, in.kv);
    HeadScores s = snapkv_scores(cfg_, in);
    Selection sel(s.size());
    if (cfg_.variant == PressVariant::kKvpress) {
      // kvpress: each head first secures its top int(C * alpha) entries (at least 1), then the
      // layer keeps the n_heads * C best entries over all heads.
      const int64_t n_safe = cfg_.alpha > 0 ? std::max<int64_t>(1, static_cast<int64_t>(c * cfg_.alpha)) : 0;
      for (std::vector<float>& h : s) {
        for (int32_t i : top_k(h, n_safe)) h[i] = std::numeric_limits<float>::max();
      }
      joint_counts(s, static_cast<int64_t>(s.size()) * c, &sel);
      for (std::vector<int32_t>& h : sel) std::sort(h.begin(), h.end());
      return sel;
    }
    const int64_t w = std::min<int64_t>(cfg_.window, in.n_window);
    HeadScores prefix(s.size());
    for (size_t h = 0; h < s.size(); ++h) prefix[h].assign(s[h].begin(), s[h].end() - std::min<int64_t>(w, s[h].size()));
    const std::vector<int64_t> budgets = ada_prefix_budgets(prefix, c - w, cfg_.alpha);
    for (size_t h = 0; h < s.size(); ++h) sel[h] = top_k(s[h], budgets[h] + w);
    return sel;
  }
};

}  // namespace

std::unique_ptr<Press> make_ada_kv_press(const PressConfig& c) { return std::make_unique<AdaKvPress>(c); }

}  // namespace snapkv
