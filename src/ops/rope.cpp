#include "ops/rope.h"

#include <cmath>

namespace snapkv {

std::vector<double> RopeParams::inv_freq() const {
  std::vector<double> f(n_rot / 2);
  for (int i = 0; i < n_rot / 2; ++i) {
    double v = std::pow(freq_base, -2.0 * i / n_rot) * freq_scale;
    if (!freq_factors.empty()) v /= freq_factors[i];
    f[i] = v;
  }
  return f;
}

void rope(float* x, const int32_t* positions, int64_t n_tok, int n_head, int head_dim,
          const RopeParams& p, const std::vector<double>& inv_freq) {
  const int half = p.n_rot / 2;
  std::vector<float> cs(half), sn(half);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int i = 0; i < half; ++i) {
      const double theta = positions[t] * inv_freq[i];
      cs[i] = static_cast<float>(std::cos(theta));
      sn[i] = static_cast<float>(std::sin(theta));
    }
    for (int h = 0; h < n_head; ++h) {
      float* v = x + (t * n_head + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const int a = p.mode == RopeMode::kNormal ? 2 * i : i;
        const int b = p.mode == RopeMode::kNormal ? 2 * i + 1 : i + half;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * cs[i] - x1 * sn[i];
        v[b] = x0 * sn[i] + x1 * cs[i];
      }
    }
  }
}

}  // namespace snapkv
