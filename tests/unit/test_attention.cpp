#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ops/attention.h"
#include "ops/fp16.h"
#include "support/simd_targets.h"

namespace snapkv {
namespace {

struct Head {
  std::vector<float> k, v;
  std::vector<uint16_t> k16, v16;  // the same values as f16 or bf16 bits
  std::vector<int32_t> pos;
};

uint16_t narrow(KvType t, float x) { return t == KvType::kF16 ? f32_to_fp16(x) : f32_to_bf16(x); }

// Compares flash-style attention with the two-pass double-precision oracle on random data, with
// keys at gapped positions (as a compressed cache holds them) and queries after or among them.
// With a sliding window, keys at every position and the queries on the last n_tok of them (a
// window layer's prefill chunk).
void check(int n_head, int n_kv, int d, int n_keys, int n_tok, int n_threads, uint32_t seed,
           KvType type = KvType::kF32, int32_t window = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<Head> heads(n_kv);
  std::vector<KvHeadView> views;
  for (auto& h : heads) {
    int32_t p = 0;
    for (int j = 0; j < n_keys; ++j) {
      p += window > 0 ? 1 : 1 + static_cast<int32_t>(rng() % 3);
      h.pos.push_back(p);
      for (int i = 0; i < d; ++i) {
        h.k.push_back(2.0f * nd(rng));
        h.v.push_back(nd(rng));
      }
    }
  }
  for (auto& h : heads) {
    if (type == KvType::kF32) {
      views.push_back({n_keys, h.k.data(), h.v.data(), h.pos.data(), type, window});
      continue;
    }
    for (float x : h.k) h.k16.push_back(narrow(type, x));
    for (float x : h.v) h.v16.push_back(narrow(type, x));
    views.push_back({n_keys, h.k16.data(), h.v16.data(), h.pos.data(), type, window});
  }
  std::vector<float> q(static_cast<size_t>(n_tok) * n_head * d);
  for (float& x : q) x = nd(rng);
  // Queries see a growing part of the cache; the first sees at least one entry of every head.
  int32_t max_first = 0;
  for (auto& h : heads) max_first = std::max(max_first, h.pos[0]);
  std::vector<int32_t> qpos(n_tok);
  for (int t = 0; t < n_tok; ++t) qpos[t] = window > 0 ? n_keys - n_tok + t + 1 : max_first + t * 3;

  std::vector<float> out(q.size()), ref(q.size());
  ThreadPool pool(n_threads);
  attention(q.data(), qpos.data(), n_tok, n_head, d, views, out.data(), pool);
  attention_reference(q.data(), qpos.data(), n_tok, n_head, d, views, ref.data());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], ref[i], 2e-5f + 2e-5f * std::fabs(ref[i])) << "element " << i;
  }
}

TEST(Attention, MatchesReferenceOverShapes) {
  test::for_each_target([] {
    uint32_t seed = 1;
    for (int d : {6, 8, 64, 80}) {
      for (int n_keys : {1, 5, 63, 64, 65, 300}) {
        for (int n_tok : {1, 2, 3, 8, 16, 17}) {  // up to 16: attention_few
          check(9, 3, d, n_keys, n_tok, 1 + static_cast<int>(seed % 2), seed);
          check(4, 4, d, n_keys, n_tok, 2, seed + 1000);
          check(6, 3, d, n_keys, n_tok, 2, seed + 2000);
          check(8, 2, d, n_keys, n_tok, 2, seed + 3000);
          check(14, 2, d, n_keys, n_tok, 2, seed + 4000);
          ++seed;
        }
      }
    }
  });
}

// A sliding window (a query sees the last `window` positions) on every path: decode (1 token),
// attention_few (up to 16) and the token tiles, with windows inside a key block, on a block's
// edge and wider than the keys.
TEST(Attention, SlidingWindowMatchesReference) {
  test::for_each_target([] {
    uint32_t seed = 500;
    for (int32_t window : {1, 7, 64, 100, 1000}) {
      for (int n_keys : {40, 300}) {
        for (int n_tok : {1, 3, 16, 40}) {
          if (n_tok > n_keys) continue;
          check(8, 2, 64, n_keys, n_tok, 2, seed++, KvType::kF32, window);
          check(4, 1, 256, n_keys, n_tok, 2, seed++, KvType::kF16, window);
        }
      }
    }
  });
}

// Batched decode: one query per sequence, each over its own cache of a different length (split
// into key ranges that threads handle apart), against the oracle per sequence.
TEST(Attention, DecodeOverManySequencesMatchesReference) {
  const int n_head = 9, n_kv = 3, d = 64;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::vector<int> lengths = {1, 70, 700, 3000, 257};
  std::vector<std::vector<Head>> heads(lengths.size(), std::vector<Head>(n_kv));
  std::vector<std::vector<KvHeadView>> views(lengths.size());
  std::vector<int32_t> qpos;
  for (size_t b = 0; b < lengths.size(); ++b) {
    for (auto& h : heads[b]) {
      for (int j = 0; j < lengths[b]; ++j) {
        h.pos.push_back(2 * j);
        for (int i = 0; i < d; ++i) {
          h.k16.push_back(f32_to_fp16(2.0f * nd(rng)));
          h.v16.push_back(f32_to_fp16(nd(rng)));
        }
      }
      views[b].push_back({lengths[b], h.k16.data(), h.v16.data(), h.pos.data(), KvType::kF16});
    }
    // The last sequence's query sits among its keys: the later ones are masked.
    qpos.push_back(b + 1 == lengths.size() ? 300 : 2 * lengths[b]);
  }
  std::vector<std::span<const KvHeadView>> spans(views.begin(), views.end());
  std::vector<float> q(lengths.size() * n_head * d);
  for (float& x : q) x = nd(rng);
  test::for_each_target([&] {
    for (int n_threads : {1, 2, 3}) {
      ThreadPool pool(n_threads);
      std::vector<float> out(q.size());
      attention_decode(q.data(), qpos.data(), static_cast<int>(lengths.size()), n_head, d, spans, out.data(), pool);
      for (size_t b = 0; b < lengths.size(); ++b) {
        std::vector<float> ref(static_cast<size_t>(n_head) * d);
        attention_reference(q.data() + b * n_head * d, &qpos[b], 1, n_head, d, views[b], ref.data());
        for (size_t i = 0; i < ref.size(); ++i) {
          ASSERT_NEAR(out[b * n_head * d + i], ref[i], 2e-5f + 2e-5f * std::fabs(ref[i]))
              << "sequence " << b << " element " << i << " threads " << n_threads;
        }
      }
    }
  });
}

// Every target, with 1 to 4 and 7 query heads per KV head (7: groups of 4 and 3 rows on AVX-512,
// 3, 3 and 1 on AVX2), heads of 32, 64 and 128 dimensions (one, two and four of the AVX2 decode
// kernel's chunks; none, one and two of AVX-512's), and ranges that end inside a group of four
// keys and past a block of 256.
TEST(Attention, ReadsHalfAndBfloatCaches) {
  test::for_each_target([] {
    uint32_t seed = 7;
    for (KvType t : {KvType::kF16, KvType::kBF16}) {
      for (int d : {32, 64, 128}) {
        for (int n_keys : {1, 64, 130, 517}) {
          for (int n_tok : {1, 9}) {
            check(9, 3, d, n_keys, n_tok, 2, seed++, t);
            check(6, 3, d, n_keys, n_tok, 1, seed++, t);
            check(4, 4, d, n_keys, n_tok, 2, seed++, t);
            check(8, 2, d, n_keys, n_tok, 2, seed++, t);
            check(14, 2, d, n_keys, n_tok, 2, seed++, t);
          }
        }
      }
    }
  });
}

// Column sums and column maxima of attention probabilities, and rows' log-sum-exp, against a
// direct double-precision computation.
TEST(Attention, ColumnSumsMatchExplicitProbabilities) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (KvType t : {KvType::kF32, KvType::kF16}) {
    for (int n_tok : {1, 5, 40, 41}) {
      const int n_head = 6, n_kv = 2, d = 16, n_keys = 150;
      std::vector<Head> heads(n_kv);
      std::vector<KvHeadView> views;
      for (auto& h : heads) {
        for (int j = 0; j < n_keys; ++j) {
          h.pos.push_back(2 * j);
          for (int i = 0; i < d; ++i) h.k.push_back(nd(rng)), h.v.push_back(0);
        }
        // What the kernel reads is what the oracle must use: round the keys through the type.
        if (t == KvType::kF16) {
          for (float& x : h.k) h.k16.push_back(f32_to_fp16(x)), x = fp16_to_f32(h.k16.back());
          h.v16.assign(h.k16.size(), 0);
          views.push_back({n_keys, h.k16.data(), h.v16.data(), h.pos.data(), t});
        } else {
          views.push_back({n_keys, h.k.data(), h.v.data(), h.pos.data()});
        }
      }
      std::vector<float> q(static_cast<size_t>(n_tok) * n_head * d);
      for (float& x : q) x = nd(rng);
      std::vector<int32_t> qpos(n_tok);
      for (int tk = 0; tk < n_tok; ++tk) qpos[tk] = 2 * n_keys - 2 * n_tok + 2 * tk - 1;  // odd: between keys, last key unseen
      // Two passes, and one pass with the rows' log-sum-exp from attention() (sums) or from
      // attention_row_lse() (maxima).
      const bool with_lse = n_tok != 5;
      std::vector<std::vector<float>> col(n_head, std::vector<float>(n_keys, 0.0f)), colmax = col;
      std::vector<float*> rows, maxrows;
      for (auto& c : col) rows.push_back(c.data());
      for (auto& c : colmax) maxrows.push_back(c.data());
      ThreadPool pool(2);
      std::vector<float> out(q.size()), lse(static_cast<size_t>(n_tok) * n_head), row_lse(lse.size());
      if (with_lse) attention(q.data(), qpos.data(), n_tok, n_head, d, views, out.data(), pool, lse.data());
      attention_column_sums(q.data(), qpos.data(), n_tok, n_head, d, views, rows, pool,
                            with_lse ? lse.data() : nullptr);
      attention_row_lse(q.data(), qpos.data(), n_tok, n_head, d, views, row_lse.data(), pool);
      attention_column_sums(q.data(), qpos.data(), n_tok, n_head, d, views, maxrows, pool,
                            with_lse ? row_lse.data() : nullptr, ColumnReduce::kMax);
      for (int h = 0; h < n_head; ++h) {
        const Head& kh = heads[h / 3];
        std::vector<double> want(n_keys, 0.0), want_max(n_keys, 0.0);
        for (int tk = 0; tk < n_tok; ++tk) {
          std::vector<double> s;
          for (int j = 0; j < n_keys && kh.pos[j] <= qpos[tk]; ++j) {
            double dot = 0;
            for (int i = 0; i < d; ++i) dot += double(q[(tk * n_head + h) * d + i]) * kh.k[j * d + i];
            s.push_back(dot / std::sqrt(double(d)));
          }
          const double mx = *std::max_element(s.begin(), s.end());
          double z = 0;
          for (double x : s) z += std::exp(x - mx);
          ASSERT_NEAR(row_lse[tk * n_head + h], mx + std::log(z), 1e-4) << "head " << h << " row " << tk;
          for (size_t j = 0; j < s.size(); ++j) {
            want[j] += std::exp(s[j] - mx) / z;
            want_max[j] = std::max(want_max[j], std::exp(s[j] - mx) / z);
          }
        }
        for (int j = 0; j < n_keys; ++j) {
          ASSERT_NEAR(col[h][j], want[j], 1e-5) << "head " << h << " key " << j << " lse " << with_lse;
          ASSERT_NEAR(colmax[h][j], want_max[j], 1e-5) << "max, head " << h << " key " << j << " lse " << with_lse;
        }
        // Keys after the last query get nothing.
        EXPECT_EQ(col[h][n_keys - 1], 0.0f);
        EXPECT_EQ(colmax[h][n_keys - 1], 0.0f);
      }
    }
  }
}

// A row that sees no entry has log-sum-exp -inf.
TEST(Attention, RowLseOfAnEmptyViewIsMinusInfinity) {
  const int n_head = 2, d = 8;
  std::vector<float> q(static_cast<size_t>(n_head) * d, 1.0f), lse(n_head, 0.0f);
  const int32_t qpos = 5;
  const std::vector<KvHeadView> views = {KvHeadView{0, nullptr, nullptr, nullptr}};
  ThreadPool pool(1);
  attention_row_lse(q.data(), &qpos, 1, n_head, d, views, lse.data(), pool);
  for (float x : lse) EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
}

TEST(Attention, CausalMaskHidesLaterKeys) {
  // One head, keys at positions 0 and 5; a query at position 3 must only see key 0.
  const int d = 4;
  std::vector<float> k = {1, 0, 0, 0, 0, 1, 0, 0};
  std::vector<float> v = {1, 2, 3, 4, 100, 200, 300, 400};
  std::vector<int32_t> pos = {0, 5};
  KvHeadView view{2, k.data(), v.data(), pos.data()};
  std::vector<float> q = {0.5f, 9.0f, 0, 0};
  int32_t qp = 3;
  std::vector<float> out(4);
  ThreadPool pool(1);
  attention(q.data(), &qp, 1, 1, d, {&view, 1}, out.data(), pool);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4}));
}

TEST(Attention, SlidingWindowHidesOlderKeys) {
  // One head, keys at positions 0, 1 and 2, a window of 2: a query at position 2 sees keys 1 and
  // 2 only, and with equal scores averages their values; every path agrees.
  const int d = 4;
  std::vector<float> k(3 * d, 0.0f);
  std::vector<float> v = {100, 100, 100, 100, 1, 2, 3, 4, 3, 4, 5, 6};
  std::vector<int32_t> pos = {0, 1, 2};
  const KvHeadView view{3, k.data(), v.data(), pos.data(), KvType::kF32, 2};
  std::vector<float> q = {1, 1, 1, 1};
  int32_t qp = 2;
  std::vector<float> out(4), ref(4);
  ThreadPool pool(1);
  attention(q.data(), &qp, 1, 1, d, {&view, 1}, out.data(), pool);
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4, 5}));
  attention_reference(q.data(), &qp, 1, 1, d, {&view, 1}, ref.data());
  EXPECT_EQ(ref, out);
}

}  // namespace
}  // namespace snapkv
