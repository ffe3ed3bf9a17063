// knorm: the entries whose keys have the smallest L2 norm (score -||k||).
#include <cmath>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class KnormPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }

 private:
  HeadScores score(const LayerInput& in) const override {
    HeadScores s(in.kv.size());
    std::vector<float> k(static_cast<size_t>(in.head_dim));
    for (size_t h = 0; h < s.size(); ++h) {
      const KvHeadView& kv = in.kv[h];
      s[h].resize(static_cast<size_t>(kv.n));
      for (int64_t j = 0; j < kv.n; ++j) {
        kv_row_to_f32(kv.type, kv.k, j, in.head_dim, k.data());
        double sq = 0;
        for (float x : k) sq += static_cast<double>(x) * x;
        s[h][j] = -static_cast<float>(std::sqrt(sq));
      }
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Press> make_knorm_press(const PressConfig& c) { return std::make_unique<KnormPress>(c); }

}  // namespace snapkv
