#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <thread>

#include "kv/kv_cache.h"
#include "util/aligned_vector.h"
#include "util/error.h"
#include "util/memory.h"
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

TEST(ParseBytes, UnitsAreBinary) {
  EXPECT_EQ(parse_bytes("2GiB"), size_t{2} << 30);
  EXPECT_EQ(parse_bytes("512MiB"), size_t{512} << 20);
  EXPECT_EQ(parse_bytes("64k"), size_t{64} << 10);
  EXPECT_EQ(parse_bytes("1G"), size_t{1} << 30);
  EXPECT_EQ(parse_bytes("1000"), 1000u);
  EXPECT_EQ(parse_bytes("1000B"), 1000u);
  for (const char* bad : {"", "GiB", "2 GiB", "2XB", "2GiBs", "-1G", "99999999999T"}) {
    EXPECT_THROW(parse_bytes(bad), Error) << bad;
  }
}

// Small buffers start on cache lines; from 2 MiB on they are huge pages from a 2 MiB boundary.
// Growing across that size and back keeps the contents.
TEST(AlignedVector, LargeBuffersStartOnHugePagesAndKeepTheirContents) {
  const auto offset = [](const void* p, uintptr_t align) { return reinterpret_cast<uintptr_t>(p) % align; };
  AlignedVector<uint8_t> v(100000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 7);
  EXPECT_EQ(offset(v.data(), 64), 0u);
  v.resize(kHugePageBytes + 12345, 0xAB);
  EXPECT_EQ(offset(v.data(), kHugePageBytes), 0u);
  v.back() = 1;
  v.resize(200000);
  v.shrink_to_fit();
  EXPECT_EQ(offset(v.data(), 64), 0u);
  for (size_t i = 0; i < 100000; ++i) ASSERT_EQ(v[i], static_cast<uint8_t>(i * 7)) << i;
  for (size_t i = 100000; i < v.size(); ++i) ASSERT_EQ(v[i], 0xAB) << i;
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

TEST(ThreadPool, ForEachItemCallsEveryItemOnceAndSharesThemOut) {
  for (int nth : {1, 2, 3}) {
    ThreadPool pool(nth);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.for_each_item(n, [&](int64_t i) { hits[i]++; });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << nth << " threads, item " << i << " of " << n;
    }
  }
  // The items are claimed, not dealt: while one thread is held up in item 0, the other takes all
  // the rest (with a static split, half of them would wait for the held-up thread; item 0 gives
  // up after 10 s so that such a regression fails instead of hanging).
  ThreadPool pool(2);
  std::atomic<int> others{0};
  bool released = false;
  pool.for_each_item(100, [&](int64_t i) {
    if (i > 0) {
      ++others;
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (others.load() < 99 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    released = others.load() == 99;
  });
  EXPECT_TRUE(released);
}

}  // namespace
}  // namespace snapkv
