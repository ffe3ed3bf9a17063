#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace snapkv {
namespace {

constexpr int kKeyBlock = 64;   // keys per block: K and V blocks stay in L1
constexpr int kTokenTile = 8;   // query tokens that share each key block

float dot(const float* a, const float* b, int n) {
  // Eight independent partial sums let the compiler vectorize without reassociating one sum.
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  }
  float r = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
}

// One KV head against a tile of query rows (tokens x heads of its group).
void attend_tile(const float* q, const int32_t* q_pos, int64_t t0, int64_t t1, int h0, int n_group,
                 int n_head, int d, const KvHeadView& kv, float* out) {
  const int n_rows = static_cast<int>(t1 - t0) * n_group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> acc(static_cast<size_t>(n_rows) * d, 0.0f);
  std::vector<float> m(n_rows, -std::numeric_limits<float>::infinity());
  std::vector<float> l(n_rows, 0.0f);
  float s[kKeyBlock];

  // Entries are sorted by position, so keys past the tile's last query are never visible.
  const int32_t max_pos = *std::max_element(q_pos + t0, q_pos + t1);
  const int64_t n_keys = std::upper_bound(kv.pos, kv.pos + kv.n, max_pos) - kv.pos;

  for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
    const int nb = static_cast<int>(std::min<int64_t>(kKeyBlock, n_keys - j0));
    for (int r = 0; r < n_rows; ++r) {
      const int64_t t = t0 + r / n_group;
      const int h = h0 + r % n_group;
      const float* qr = q + (t * n_head + h) * d;
      const int32_t qp = q_pos[t];
      float block_max = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < nb; ++j) {
        if (kv.pos[j0 + j] > qp) {
          s[j] = -std::numeric_limits<float>::infinity();
        } else {
          s[j] = dot(qr, kv.k + (j0 + j) * d, d) * scale;
          block_max = std::max(block_max, s[j]);
        }
      }
      if (block_max == -std::numeric_limits<float>::infinity()) continue;
      const float m_new = std::max(m[r], block_max);
      const float correction = std::exp(m[r] - m_new);
      float* a = acc.data() + static_cast<size_t>(r) * d;
      if (correction != 1.0f) {
        for (int i = 0; i < d; ++i) a[i] *= correction;
      }
      float sum = 0;
      for (int j = 0; j < nb; ++j) {
        if (s[j] == -std::numeric_limits<float>::infinity()) continue;
        const float p = std::exp(s[j] - m_new);
        sum += p;
        const float* vj = kv.v + (j0 + j) * d;
        for (int i = 0; i < d; ++i) a[i] += p * vj[i];
      }
      l[r] = l[r] * correction + sum;
      m[r] = m_new;
    }
  }
  for (int r = 0; r < n_rows; ++r) {
    const int64_t t = t0 + r / n_group;
    const int h = h0 + r % n_group;
    float* o = out + (t * n_head + h) * d;
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    for (int i = 0; i < d; ++i) o[i] = acc[static_cast<size_t>(r) * d + i] * inv;
  }
}

}  // namespace

void attention(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head, int head_dim,
               std::span<const KvHeadView> kv, float* out, ThreadPool& pool) {
  const int n_kv = static_cast<int>(kv.size());
  const int n_group = n_head / n_kv;
  const int64_t n_tiles = (n_tok + kTokenTile - 1) / kTokenTile;
  // Work items: (kv head, token tile); later tiles see more keys, so interleave them.
  pool.parallel_for(n_tiles * n_kv, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      const int hk = static_cast<int>(w % n_kv);
      const int64_t tile = w / n_kv;
      const int64_t t0 = tile * kTokenTile;
      const int64_t t1 = std::min(n_tok, t0 + kTokenTile);
      attend_tile(q, q_pos, t0, t1, hk * n_group, n_group, n_head, head_dim, kv[hk], out);
    }
  });
}

void attention_reference(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                         int head_dim, std::span<const KvHeadView> kv, float* out) {
  const int n_group = n_head / static_cast<int>(kv.size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int h = 0; h < n_head; ++h) {
      const KvHeadView& v = kv[h / n_group];
      const float* qr = q + (t * n_head + h) * head_dim;
      std::vector<double> s;
      std::vector<int64_t> idx;
      for (int64_t j = 0; j < v.n; ++j) {
        if (v.pos[j] > q_pos[t]) continue;
        double d = 0;
        for (int i = 0; i < head_dim; ++i) d += static_cast<double>(qr[i]) * v.k[j * head_dim + i];
        s.push_back(d * scale);
        idx.push_back(j);
      }
      const double mx = s.empty() ? 0 : *std::max_element(s.begin(), s.end());
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - mx));
      float* o = out + (t * n_head + h) * head_dim;
      for (int i = 0; i < head_dim; ++i) {
        double a = 0;
        for (size_t j = 0; j < s.size(); ++j) a += s[j] * v.v[idx[j] * head_dim + i];
        o[i] = static_cast<float>(z > 0 ? a / z : 0);
      }
    }
  }
}

}  // namespace snapkv
