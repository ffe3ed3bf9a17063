// KV cache storage: layout, element types, byte accounting, compaction and replication.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kv/kv_cache.h"
#include "ops/fp16.h"

namespace snapkv {
namespace {

// Two tokens of one layer with 2 KV heads and head_dim 3, laid out [token][head][dim].
const std::vector<float> kK = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

float at(const KvHeadView& h, bool key, int64_t j, int i, int d) {
  std::vector<float> row(d);
  kv_row_to_f32(h.type, key ? h.k : h.v, j, d, row.data());
  return row[i];
}

TEST(KvCache, AppendsPerHeadAndCountsBytes) {
  KvCache kv(2, 2, 3, KvType::kF32);
  std::vector<float> v(kK);
  for (float& x : v) x = -x;
  const std::vector<int32_t> pos = {0, 1};
  kv.append(1, 2, kK.data(), v.data(), pos.data());
  const auto views = kv.layer(1);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[1].n, 2);
  EXPECT_EQ(at(views[1], true, 0, 0, 3), 4);   // token 0, head 1
  EXPECT_EQ(at(views[1], true, 1, 0, 3), 10);  // token 1, head 1
  EXPECT_EQ(at(views[0], false, 1, 1, 3), -8); // token 1, head 0, dim 1
  EXPECT_EQ(kv.layer(0)[0].n, 0);
  EXPECT_EQ(kv.bytes(), 2u * 2 * (3 * 4 * 2 + 4));
  EXPECT_GE(kv.allocated_bytes(), kv.bytes());
  const int32_t stale = 1;
  EXPECT_ANY_THROW(kv.append(1, 1, kK.data(), v.data(), &stale));
  kv.clear();
  EXPECT_EQ(kv.bytes(), 0u);
  EXPECT_EQ(kv.allocated_bytes(), 0u);
}

// A sliding-window layer beside a global one: appends of 1 to 40 tokens; the window layer holds
// every position its next queries can see, and never more than window - 1 plus the largest
// append; the global layer holds everything.
TEST(KvCache, WindowLayerKeepsItsWindowInBoundedMemory) {
  const int32_t window = 16;
  KvCache kv(2, 1, 2, KvType::kF32, 1, {0, window});
  int32_t next = 0;
  int64_t largest = 0;
  for (int step = 0; step < 60; ++step) {
    const int64_t n = step % 7 == 3 ? 40 : 1 + step % 3;
    std::vector<float> k, v;
    std::vector<int32_t> pos;
    for (int64_t t = 0; t < n; ++t, ++next) {
      pos.push_back(next);
      k.insert(k.end(), {static_cast<float>(next), 0.5f});
      v.insert(v.end(), {-static_cast<float>(next), 1.5f});
    }
    for (int il : {0, 1}) kv.append(il, n, k.data(), v.data(), pos.data());
    largest = std::max(largest, n);
    const KvHeadView w = kv.layer(1)[0];
    EXPECT_EQ(w.window, window);
    EXPECT_LE(w.n, window - 1 + largest);
    // The queries just appended see back to pos[0] - (window - 1): all of it is there, in order.
    const int32_t lo = std::max(0, pos[0] - (window - 1));
    ASSERT_LE(w.pos[0], lo);
    for (int64_t j = 1; j < w.n; ++j) ASSERT_EQ(w.pos[j], w.pos[j - 1] + 1);
    ASSERT_EQ(w.pos[w.n - 1], next - 1);
    for (int64_t j = 0; j < w.n; ++j) {
      ASSERT_EQ(at(w, true, j, 0, 2), w.pos[j]);
      ASSERT_EQ(at(w, false, j, 0, 2), -w.pos[j]);
    }
    EXPECT_EQ(kv.layer(0)[0].n, next);
    EXPECT_EQ(kv.layer(0)[0].window, 0);
  }
  EXPECT_ANY_THROW(KvCache(2, 1, 2, KvType::kF32, 1, {0}));
}

TEST(KvCache, StoresHalfAndBfloatRoundedToNearest) {
  const std::vector<float> k = {1.0f / 3, 1e-3f, 70000.0f, -2.5f, 0.1f, 3.0f};  // 1 token, 2 heads, d 3
  const int32_t pos = 7;
  for (KvType t : {KvType::kF16, KvType::kBF16}) {
    KvCache kv(1, 2, 3, t);
    kv.append(0, 1, k.data(), k.data(), &pos);
    const auto views = kv.layer(0);
    EXPECT_EQ(kv.bytes(), 2u * (3 * 2 * 2 + 4));
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 3; ++i) {
        const float x = k[h * 3 + i];
        const float want = t == KvType::kF16 ? fp16_to_f32(f32_to_fp16(x)) : bf16_to_f32(f32_to_bf16(x));
        EXPECT_EQ(at(views[h], true, 0, i, 3), want);
        EXPECT_EQ(at(views[h], false, 0, i, 3), want);
      }
    }
    EXPECT_EQ(views[0].pos[0], 7);
  }
}

TEST(KvCache, KeepCompactsHeadsToDifferentLengths) {
  KvCache kv(1, 2, 3, KvType::kF16);
  std::vector<float> k(5 * 2 * 3);
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i);
  const std::vector<int32_t> pos = {10, 11, 12, 13, 14};
  kv.append(0, 5, k.data(), k.data(), pos.data());
  const std::vector<int32_t> keep0 = {1, 3, 4}, keep1 = {0};
  kv.keep(0, 0, keep0);
  kv.keep(0, 1, keep1);
  auto views = kv.layer(0);
  ASSERT_EQ(views[0].n, 3);
  ASSERT_EQ(views[1].n, 1);
  EXPECT_EQ(views[0].pos[0], 11);
  EXPECT_EQ(views[0].pos[2], 14);
  EXPECT_EQ(at(views[0], true, 1, 2, 3), k[(3 * 2 + 0) * 3 + 2]);  // token 3, head 0, dim 2
  EXPECT_EQ(at(views[1], false, 0, 0, 3), k[(0 * 2 + 1) * 3]);     // token 0, head 1
  EXPECT_EQ(kv.entries(), 4);
  EXPECT_EQ(kv.bytes(), 4 * kv.entry_bytes());
  EXPECT_EQ(kv.allocated_bytes(), kv.bytes());  // compaction releases the rest
  // Decoding appends after the kept entries, at the true next position.
  const int32_t next = 15;
  kv.append(0, 1, k.data(), k.data(), &next);
  views = kv.layer(0);
  EXPECT_EQ(views[0].n, 4);
  EXPECT_EQ(views[1].pos[1], 15);
  // Indices must ascend and stay in range.
  const std::vector<int32_t> bad = {2, 1};
  EXPECT_ANY_THROW(kv.keep(0, 0, bad));
  const std::vector<int32_t> out = {9};
  EXPECT_ANY_THROW(kv.keep(0, 0, out));
}

TEST(KvCache, AppendIsAmortizedAndBoundsSlack) {
  KvCache kv(1, 1, 4, KvType::kF16);
  const std::vector<float> row(4, 1.0f);
  for (int32_t p = 0; p < 5000; ++p) kv.append(0, 1, row.data(), row.data(), &p);
  EXPECT_EQ(kv.entries(), 5000);
  // Growth by 1.25 plus 64 entries: never more than 25 % and 64 entries of slack.
  EXPECT_LE(kv.allocated_bytes(), kv.bytes() + kv.bytes() / 4 + 64 * kv.entry_bytes());
}

// A layer's heads share one buffer, which growth and compaction move: each head's entries must
// come through, and a copy must own its entries (the evaluation presses copies of one prefill).
TEST(KvCache, HeadsKeepTheirEntriesThroughGrowthCompactionAndCopies) {
  KvCache kv(2, 2, 3, KvType::kF32);
  std::vector<float> k(200 * 2 * 3);
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i);
  const auto key = [&](int64_t t, int h, int i) { return k[(t * 2 + h) * 3 + i]; };
  std::vector<int32_t> pos(200);
  for (int32_t t = 0; t < 200; ++t) pos[t] = t;
  for (int32_t t = 0; t < 200; t += 50) kv.append(1, 50, k.data() + t * 6, k.data() + t * 6, pos.data() + t);
  const std::vector<int32_t> keep = {0, 99, 150, 199};
  kv.keep(1, 1, keep);
  const KvCache copy = kv;
  const int32_t next = 200;
  kv.append(1, 1, k.data(), k.data(), &next);
  kv.keep(1, 0, keep);
  for (const KvCache* c : {static_cast<const KvCache*>(&kv), &copy}) {
    const auto views = c->layer(1);
    ASSERT_EQ(views[1].n, c == &kv ? 5 : 4);
    for (size_t j = 0; j < keep.size(); ++j) {
      EXPECT_EQ(views[1].pos[j], keep[j]);
      EXPECT_EQ(at(views[1], true, static_cast<int64_t>(j), 2, 3), key(keep[j], 1, 2));
      EXPECT_EQ(at(views[1], false, static_cast<int64_t>(j), 0, 3), key(keep[j], 1, 0));
    }
    EXPECT_EQ(c->layer(0)[0].n, 0);
  }
  // The copy's head 0 still holds all 200 entries; the cache's only the 4 kept.
  const auto head0 = copy.layer(1)[0];
  ASSERT_EQ(head0.n, 200);
  for (int64_t t = 0; t < 200; ++t) EXPECT_EQ(at(head0, false, t, 1, 3), key(t, 0, 1));
  ASSERT_EQ(kv.layer(1)[0].n, 4);
  EXPECT_EQ(at(kv.layer(1)[0], true, 3, 1, 3), key(199, 0, 1));
  EXPECT_EQ(copy.entries(), 204);
  EXPECT_EQ(kv.entries(), 9);
}

TEST(KvCache, ReplicatesKvHeadsPerQueryHead) {
  KvCache kv(1, 2, 3, KvType::kF32, /*replicate=*/3);
  const int32_t pos = 0;
  kv.append(0, 1, kK.data(), kK.data(), &pos);
  const auto views = kv.layer(0);
  ASSERT_EQ(views.size(), 6u);
  EXPECT_EQ(at(views[2], true, 0, 0, 3), 1);  // copies of KV head 0
  EXPECT_EQ(at(views[3], true, 0, 0, 3), 4);  // copies of KV head 1
  EXPECT_EQ(at(views[5], true, 0, 2, 3), 6);
}

}  // namespace
}  // namespace snapkv
