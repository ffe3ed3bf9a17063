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

RopeAngles rope_angles(const std::vector<double>& inv_freq, const int32_t* positions, int64_t n_tok) {
  RopeAngles a;
  a.half = static_cast<int64_t>(inv_freq.size());
  a.cos.resize(static_cast<size_t>(n_tok * a.half));
  a.sin.resize(a.cos.size());
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t i = 0; i < a.half; ++i) {
      const double theta = positions[t] * inv_freq[i];
      a.cos[t * a.half + i] = static_cast<float>(std::cos(theta));
      a.sin[t * a.half + i] = static_cast<float>(std::sin(theta));
    }
  }
  return a;
}

void rope(float* x, const RopeAngles& a, int64_t t0, int64_t n_tok, int n_head, int head_dim, RopeMode mode) {
  const int64_t half = a.half;
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* cs = a.cos.data() + (t0 + t) * half;
    const float* sn = a.sin.data() + (t0 + t) * half;
    for (int h = 0; h < n_head; ++h) {
      float* v = x + (t * n_head + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t j = mode == RopeMode::kNormal ? 2 * i : i;
        const int64_t k = mode == RopeMode::kNormal ? 2 * i + 1 : i + half;
        const float x0 = v[j], x1 = v[k];
        v[j] = x0 * cs[i] - x1 * sn[i];
        v[k] = x0 * sn[i] + x1 * cs[i];
      }
    }
  }
}

}  // namespace snapkv
