// expected_attention: the attention future queries can be expected to pay each entry, as kvpress's
// ExpectedAttentionPress (0.5.5) scores it, without looking at any particular question. The
// prompt's pre-RoPE queries (positions >= sinks) are summed up as a mean mu and covariance S per
// query head; both are rotated by R, RoPE's rotation averaged over the next `future` positions
// (mu' = R mu, S' = R S R^T). For a Gaussian query, E[exp(q.k / sqrt(d))] = exp(mu'.k / sqrt(d) +
// k^T S' k / (2d)); those exponents, softmaxed over the head's entries past the sinks and averaged
// over the query heads of a KV head, are multiplied by each entry's value norm ||v||_2. The first
// `sinks` entries are always kept.
#include <cmath>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"
#include "util/error.h"

namespace snapkv {
namespace {

// RoPE's rotation averaged over positions [from, from + n): a d x d matrix, row-major. Each
// rotated pair (a, b) of dimensions gets [[c, -s], [s, c]] with c and s the mean cosine and sine
// of its angles (times mscale, as RoPE applies them); the dimensions past n_rot stay as they are.
std::vector<double> average_rotation(const RopeParams& rope, int d, int32_t from, int n) {
  std::vector<double> r(static_cast<size_t>(d) * d, 0.0);
  for (int i = 0; i < d; ++i) r[static_cast<size_t>(i) * d + i] = 1;
  const std::vector<double> inv_freq = rope.inv_freq();
  const int half = static_cast<int>(inv_freq.size());
  const double mscale = rope.mscale();
  for (int p = 0; p < half; ++p) {
    double c = 0, s = 0;
    for (int t = 0; t < n; ++t) {
      const double theta = static_cast<double>(from + t) * inv_freq[p];
      c += std::cos(theta), s += std::sin(theta);
    }
    c *= mscale / n, s *= mscale / n;
    const int a = rope.mode == RopeMode::kNormal ? 2 * p : p;
    const int b = rope.mode == RopeMode::kNormal ? 2 * p + 1 : p + half;
    r[static_cast<size_t>(a) * d + a] = c, r[static_cast<size_t>(a) * d + b] = -s;
    r[static_cast<size_t>(b) * d + a] = s, r[static_cast<size_t>(b) * d + b] = c;
  }
  return r;
}

class ExpectedAttentionPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }
  PressNeeds needs() const override { return {.stats_from = cfg_.sinks}; }

 private:
  HeadScores score(const LayerInput& in) const override {
    const int d = in.head_dim;
    const size_t dd = static_cast<size_t>(d) * d;
    if (!in.rope || in.q_sum.size() != static_cast<size_t>(in.n_head) * d) {
      fail(ErrorKind::kInternal, "expected_attention was given no query statistics");
    }
    const std::vector<double> rot = average_rotation(*in.rope, d, in.q_next_pos, cfg_.future);
    // Per query head: the rotated mean (scaled by 1/sqrt(d)) and covariance (by 1/(2d)), in f32
    // for the per-entry products.
    const double n = static_cast<double>(std::max<int64_t>(1, in.q_count));
    std::vector<float> mean(static_cast<size_t>(in.n_head) * d), cov(in.n_head * dd);
    for (int h = 0; h < in.n_head; ++h) {
      const double* sum = in.q_sum.data() + static_cast<size_t>(h) * d;
      const double* outer = in.q_outer.data() + h * dd;
      std::vector<double> mu(d), c(dd), rc(dd);
      for (int i = 0; i < d; ++i) mu[i] = sum[i] / n;
      for (int i = 0; i < d; ++i) {
        for (int j = 0; j < d; ++j) c[i * d + j] = outer[i * d + j] / n - mu[i] * mu[j];
      }
      for (int i = 0; i < d; ++i) {  // R mu, R S
        double m = 0;
        for (int k = 0; k < d; ++k) m += rot[i * d + k] * mu[k];
        mean[static_cast<size_t>(h) * d + i] = static_cast<float>(m / std::sqrt(d));
        for (int j = 0; j < d; ++j) {
          double x = 0;
          for (int k = 0; k < d; ++k) x += rot[i * d + k] * c[k * d + j];
          rc[i * d + j] = x;
        }
      }
      for (int i = 0; i < d; ++i) {  // (R S) R^T
        for (int j = 0; j < d; ++j) {
          double x = 0;
          for (int k = 0; k < d; ++k) x += rc[i * d + k] * rot[j * d + k];
          cov[h * dd + i * d + j] = static_cast<float>(x / (2.0 * d));
        }
      }
    }
    const int n_kv = static_cast<int>(in.kv.size()), n_group = in.n_head / n_kv;
    HeadScores s(in.kv.size());
    in.pool->for_each_item(n_kv, [&](int64_t g) {
      const KvHeadView& kv = in.kv[g];
      const int64_t first = std::min<int64_t>(cfg_.sinks, kv.n);
      std::vector<float> k(d), v(d);
      std::vector<double> exponent(static_cast<size_t>(n_group * (kv.n - first))), prob(kv.n - first, 0.0);
      for (int64_t j = first; j < kv.n; ++j) {
        kv_row_to_f32(kv.type, kv.k, j, d, k.data());
        for (int q = 0; q < n_group; ++q) {
          const int h = static_cast<int>(g) * n_group + q;
          const float* m = mean.data() + static_cast<size_t>(h) * d;
          const float* c = cov.data() + h * dd;
          float lin = 0, quad = 0;
          for (int i = 0; i < d; ++i) {
            float x = 0;
            for (int jj = 0; jj < d; ++jj) x += c[static_cast<size_t>(i) * d + jj] * k[jj];
            lin += m[i] * k[i];
            quad += k[i] * x;
          }
          exponent[static_cast<size_t>(q) * (kv.n - first) + (j - first)] = static_cast<double>(lin) + quad;
        }
      }
      for (int q = 0; q < n_group; ++q) {  // softmax over the entries past the sinks, mean over the group
        const double* e = exponent.data() + static_cast<size_t>(q) * (kv.n - first);
        double top = -INFINITY, z = 0;
        for (int64_t j = 0; j < kv.n - first; ++j) top = std::max(top, e[j]);
        for (int64_t j = 0; j < kv.n - first; ++j) z += std::exp(e[j] - top);
        for (int64_t j = 0; j < kv.n - first; ++j) prob[j] += std::exp(e[j] - top) / z / n_group;
      }
      s[g].resize(static_cast<size_t>(kv.n));
      for (int64_t j = 0; j < kv.n; ++j) {
        if (j < first) {
          s[g][j] = kKeepAlways;
          continue;
        }
        kv_row_to_f32(kv.type, kv.v, j, d, v.data());
        double norm = 0;
        for (float x : v) norm += static_cast<double>(x) * x;
        s[g][j] = static_cast<float>(prob[j - first] * std::sqrt(norm));
      }
    });
    return s;
  }
};

}  // namespace

std::unique_ptr<Press> make_expected_attention_press(const PressConfig& c) {
  return std::make_unique<ExpectedAttentionPress>(c);
}

}  // namespace snapkv
