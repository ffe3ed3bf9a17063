// pyramidkv: SnapKV's scores with budgets that shrink linearly from the first layer to the last
// (PyramidKV), averaging the SnapKV budget.
#include <algorithm>
#include <cmath>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {

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

namespace {

class PyramidKvPress final : public Press {
 public:
  using Press::Press;
  Selection select(const LayerInput& in) const override {
    if (layer_is_short(cfg_, in.kv)) return {};
    const int64_t n = longest_head(in.kv);
    const int64_t w = std::min<int64_t>(cfg_.window, in.n_window);
    const int64_t keep = pyramid_layer_budget(cfg_, layer_capacity(cfg_, in.kv), n, w, in.layer, in.n_layer);
    return select_top(cfg_, snapkv_scores(cfg_, in), keep);
  }
};

}  // namespace

std::unique_ptr<Press> make_pyramidkv_press(const PressConfig& c) { return std::make_unique<PyramidKvPress>(c); }

}  // namespace snapkv
