#include "ops/rope.h"

#include <algorithm>
#include <cmath>

namespace snapkv {

namespace {
// The pair (fractional) at which `rotations` full turns fit n_ctx_orig positions.
double yarn_pair(int n_rot, int n_ctx_orig, double rotations, double base) {
  return n_rot * std::log(n_ctx_orig / (rotations * 2 * M_PI)) / (2 * std::log(base));
}
}  // namespace

std::vector<double> RopeParams::inv_freq() const {
  std::vector<double> f(n_rot / 2);
  double low = 0, high = 0;
  if (yarn) {
    low = std::max(0.0, std::floor(yarn_pair(n_rot, n_ctx_orig, beta_fast, freq_base)));
    high = std::min(n_rot - 1.0, std::ceil(yarn_pair(n_rot, n_ctx_orig, beta_slow, freq_base)));
  }
  for (int i = 0; i < n_rot / 2; ++i) {
    double unscaled = std::pow(freq_base, -2.0 * i / n_rot);
    if (!freq_factors.empty()) unscaled /= freq_factors[i];
    double v = unscaled * freq_scale;
    if (yarn) {
      const double keep = 1 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
      v = v * (1 - keep) + unscaled * keep;
    }
    f[i] = v;
  }
  return f;
}

double RopeParams::mscale() const {
  return (yarn && freq_scale < 1 ? 1 + 0.1 * std::log(1 / freq_scale) : 1.0) * attn_factor;
}

RopeAngles rope_angles(const std::vector<double>& inv_freq, const int32_t* positions, int64_t n_tok, double mscale) {
  RopeAngles a;
  a.half = static_cast<int64_t>(inv_freq.size());
  a.cos.resize(static_cast<size_t>(n_tok * a.half));
  a.sin.resize(a.cos.size());
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t i = 0; i < a.half; ++i) {
      const double theta = positions[t] * inv_freq[i];
      a.cos[t * a.half + i] = static_cast<float>(std::cos(theta) * mscale);
      a.sin[t * a.half + i] = static_cast<float>(std::sin(theta) * mscale);
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
