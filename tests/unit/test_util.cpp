#include <gtest/gtest.h>

#include <atomic>

#include "kv/kv_cache.h"
#include "util/thread_pool.h"
#include "util/utf8.h"

namespace snapkv {
namespace {

TEST(Utf8Stream, HoldsIncompleteCharacters) {
  Utf8Stream s;
  const std::string euro = "\xE2\x82\xAC";
  EXPECT_EQ(s.push("a\xE2"), "a");
  EXPECT_EQ(s.push("\x82"), "");
  EXPECT_EQ(s.push("\xAC" "b"), euro + "b");
  EXPECT_EQ(s.push("\xF0\x9F"), "");
  EXPECT_EQ(s.flush(), "\xF0\x9F");
  EXPECT_EQ(s.push("\xFF" "c"), "\xFF" "c");  // a byte that cannot lead passes through
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int nth : {1, 2, 3}) {
    ThreadPool pool(nth);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1);
    }
  }
}

TEST(KvCache, AppendsPerHeadAndCountsBytes) {
  KvCache kv(2, 2, 3);  // 2 layers, 2 KV heads, head_dim 3
  // Two tokens of layer 1: k, v laid out [token][head][dim].
  const std::vector<float> k = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> v(k);
  for (float& x : v) x = -x;
  const std::vector<int32_t> pos = {0, 1};
  kv.append(1, 2, k.data(), v.data(), pos.data());
  const auto views = kv.layer(1);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[1].n, 2);
  EXPECT_EQ(views[1].k[0], 4);   // token 0, head 1
  EXPECT_EQ(views[1].k[3], 10);  // token 1, head 1
  EXPECT_EQ(views[0].v[4], -8);  // token 1, head 0, dim 1
  EXPECT_EQ(kv.layer(0)[0].n, 0);
  EXPECT_EQ(kv.bytes(), 2u * 2 * (3 * 4 * 2 + 4));
  const int32_t stale = 1;
  EXPECT_ANY_THROW(kv.append(1, 1, k.data(), v.data(), &stale));
  kv.clear();
  EXPECT_EQ(kv.bytes(), 0u);
}

}  // namespace
}  // namespace snapkv
