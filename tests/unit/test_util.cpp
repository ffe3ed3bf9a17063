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

}  // namespace
}  // namespace snapkv
