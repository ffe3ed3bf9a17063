// keydiff: the entries whose keys point away from the head's mean key direction (KeyDiff, score
// -cos(k, a) with a the mean of the unit keys), as kvpress's KeyDiffPress scores them. It reads
// the keys alone, so what it keeps does not depend on a question (good for contexts saved once
// and asked many questions).
#include <cmath>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class KeyDiffPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }

 private:
  HeadScores score(const LayerInput& in) const override {
    const size_t d = static_cast<size_t>(in.head_dim);
    HeadScores s(in.kv.size());
    std::vector<float> k(d);
    std::vector<double> keys, norms, anchor(d);
    for (size_t h = 0; h < s.size(); ++h) {
      const KvHeadView& kv = in.kv[h];
      const size_t n = static_cast<size_t>(kv.n);
      keys.assign(n * d, 0);
      norms.assign(n, 0);
      std::fill(anchor.begin(), anchor.end(), 0.0);
      for (size_t j = 0; j < n; ++j) {
        kv_row_to_f32(kv.type, kv.k, static_cast<int64_t>(j), in.head_dim, k.data());
        double sq = 0;
        for (size_t i = 0; i < d; ++i) {
          keys[j * d + i] = k[i];
          sq += static_cast<double>(k[i]) * k[i];
        }
        norms[j] = std::sqrt(sq);
        const double unit = 1 / std::max(norms[j], 1e-12);  // F.normalize's eps
        for (size_t i = 0; i < d; ++i) anchor[i] += keys[j * d + i] * unit;
      }
      double anchor_norm = 0;
      for (double& a : anchor) {
        a /= static_cast<double>(n);
        anchor_norm += a * a;
      }
      anchor_norm = std::sqrt(anchor_norm);
      s[h].resize(n);
      for (size_t j = 0; j < n; ++j) {
        double dot = 0;
        for (size_t i = 0; i < d; ++i) dot += keys[j * d + i] * anchor[i];
        s[h][j] = -static_cast<float>(dot / std::max(norms[j] * anchor_norm, 1e-8));  // cosine_similarity's eps
      }
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Press> make_keydiff_press(const PressConfig& c) { return std::make_unique<KeyDiffPress>(c); }

}  // namespace snapkv
