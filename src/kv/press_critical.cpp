// CriticalKV's re-weighting of any press's scores by what each entry's value adds to the layer's
// output (critical_scores in press_scores.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kv/press_scores.h"
#include "ops/matmul.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr float kEpsilon = 1e-4f;  // added to every score before weighting, as kvpress
constexpr int64_t kBlock = 512;    // entries projected at a time

// ||W_o,h v_j||_1 for every entry j of every stored head: per query head h, through its own
// columns of the output projection, then averaged over the head's query group.
HeadScores value_out_norms(const LayerInput& in) {
  const int n_stored = static_cast<int>(in.kv.size()), d = in.head_dim;
  const int64_t n_cols = static_cast<int64_t>(in.n_head) * d;
  const int64_t n_embd = static_cast<int64_t>(in.out_proj.size()) / n_cols;
  HeadScores per_query(in.n_head);
  std::vector<float> wh(static_cast<size_t>(n_embd * d)), x, y;
  for (int h = 0; h < in.n_head; ++h) {
    const KvHeadView& kv = in.kv[static_cast<size_t>(h * n_stored / in.n_head)];
    for (int64_t r = 0; r < n_embd; ++r) {
      std::copy_n(in.out_proj.data() + r * n_cols + static_cast<int64_t>(h) * d, d, wh.data() + r * d);
    }
    const WeightMatrix w = make_weight_matrix(GgmlType::F32, wh.data(), d, n_embd);
    per_query[h].resize(static_cast<size_t>(kv.n));
    for (int64_t j0 = 0; j0 < kv.n; j0 += kBlock) {
      const int64_t n = std::min(kBlock, kv.n - j0);
      x.resize(static_cast<size_t>(n * d));
      y.resize(static_cast<size_t>(n * n_embd));
      for (int64_t j = 0; j < n; ++j) kv_row_to_f32(kv.type, kv.v, j0 + j, d, x.data() + j * d);
      matmul(w, x.data(), n, y.data(), *in.pool);
      for (int64_t j = 0; j < n; ++j) {
        double l1 = 0;
        for (int64_t r = 0; r < n_embd; ++r) l1 += std::fabs(y[j * n_embd + r]);
        per_query[h][j0 + j] = static_cast<float>(l1);
      }
    }
  }
  return reduce_gqa(per_query, n_stored, GqaReduce::kMean);
}

}  // namespace

HeadScores critical_scores(const PressConfig& cfg, const LayerInput& in, HeadScores s) {
  if (in.out_proj.empty() || !in.pool) {
    fail(ErrorKind::kInvalidArgument, "critical needs the layer's output projection and a thread pool");
  }
  const int64_t n = longest_head(in.kv);
  const double kept = cfg.ratio > 0 ? (1 - cfg.ratio) * static_cast<double>(n) : static_cast<double>(cfg.capacity);
  const int64_t first = std::max<int64_t>(1, static_cast<int64_t>(kept * cfg.critical));
  const HeadScores norms = value_out_norms(in);
  for (size_t h = 0; h < s.size(); ++h) {
    const std::vector<int32_t> stage1 = top_k(s[h], first);
    for (size_t j = 0; j < s[h].size(); ++j) {
      if (s[h][j] != kKeepAlways) s[h][j] = (s[h][j] + kEpsilon) * norms[h][j];
    }
    for (const int32_t j : stage1) {
      if (s[h][j] != kKeepAlways) s[h][j] = std::numeric_limits<float>::max();
    }
  }
  return s;
}

}  // namespace snapkv
