// The context store's backends: a directory keeps values across instances, drops the least
// recently used files beyond its size, leaves no partial file; addresses are checked; a Redis
// server that is not there is a quick miss, never an error (the real Redis server is exercised by
// tests/server/context_store_test.py).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/blob_store.h"
#include "support/temp_dir.h"
#include "util/error.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> bytes(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

TEST(DirStore, KeepsValuesAcrossInstancesAndDropsTheLeastRecentlyUsedBeyondItsSize) {
  const test::TempDir dir("blobs");
  {
    auto store = BlobStore::open((dir.path / "sub").string(), 10000);
    store->put("snapkv:1:state:a", bytes(4000, 1));
    store->put("b", bytes(4000, 2));
    EXPECT_EQ(store->get("snapkv:1:state:a"), bytes(4000, 1));
    EXPECT_FALSE(store->get("missing"));
  }
  auto store = BlobStore::open((dir.path / "sub").string(), 10000);
  EXPECT_EQ(store->get("b"), bytes(4000, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(store->get("snapkv:1:state:a"), bytes(4000, 1));  // now the most recently used
  store->put("c", bytes(4000, 3));                            // 12000 bytes: b goes
  EXPECT_FALSE(store->get("b"));
  EXPECT_TRUE(store->get("snapkv:1:state:a"));
  EXPECT_TRUE(store->get("c"));
  const std::vector<std::string> keys = {"c", "b"};
  const std::vector<std::optional<std::string>> many = store->get_many(keys);
  ASSERT_EQ(many.size(), 2u);
  EXPECT_EQ(many[0], std::string(4000, '\3'));
  EXPECT_FALSE(many[1]);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path / "sub")) ++files;
  EXPECT_EQ(files, 2) << "no temporary files left";
}

TEST(DirStore, ATemporaryFileOfAWriterThatDiedGoesAfterAnHour) {
  const test::TempDir dir("blobs");
  const fs::path stale = dir.path / "k.tmp-123-456", fresh = dir.path / "k.tmp-789-1";
  { std::ofstream(stale) << "half a state"; }
  { std::ofstream(fresh) << "being written"; }
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::minutes(61));
  BlobStore::open(dir.path.string(), 1000);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh)) << "a writer may still be writing it";
}

TEST(DirStore, ADirectoryThatCannotBeMadeIsAClearError) {
  const test::TempDir dir("blobs");
  { std::ofstream(dir.path / "file") << "x"; }
  try {
    BlobStore::open((dir.path / "file").string(), 1000);
    FAIL() << "a file is not a directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
}

TEST(RedisStore, AddressesAreCheckedAndAnAbsentServerIsAMiss) {
  for (const char* bad : {"redis://", "redis://:6379", "redis://host:0", "redis://host:port", "redis://h/x:1"}) {
    EXPECT_THROW(BlobStore::open(bad, 1), Error) << bad;
  }
  // Port 1 on loopback: nothing listens there (connection refused at once).
  auto store = BlobStore::open("redis://127.0.0.1:1", 1);
  EXPECT_EQ(store->describe(), "redis://127.0.0.1:1");
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(store->get("k"));
    store->put("k", bytes(10, 1));
    EXPECT_FALSE(store->get_many(std::vector<std::string>{"k", "l"})[0]);
  }
}

}  // namespace
}  // namespace snapkv
