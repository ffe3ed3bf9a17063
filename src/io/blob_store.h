#pragma once
// A key-value store of byte strings that outlives the process and may be shared between
// processes: a directory (one file per key) or a Redis server. The server keeps its compressed
// contexts in it (engine/state_store.h). A store that cannot be reached is a miss, never an
// error: get() returns nothing and put() drops the value, with one log line when it goes away and
// one when it is back.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace snapkv {

class BlobStore {
 public:
  virtual ~BlobStore() = default;
  virtual std::optional<std::vector<uint8_t>> get(const std::string& key) = 0;
  // Values of several small keys at once (one round trip); nullopt for each missing one.
  virtual std::vector<std::optional<std::string>> get_many(std::span<const std::string> keys) = 0;
  virtual void put(const std::string& key, std::span<const uint8_t> value) = 0;
  virtual std::string describe() const = 0;

  // "redis://HOST:PORT" or a directory (created if missing), holding at most max_bytes (a
  // directory drops its least recently used files beyond it; a Redis server evicts by its own
  // maxmemory policy). Error(kInvalidArgument) for a malformed address or a directory that
  // cannot be created.
  static std::unique_ptr<BlobStore> open(const std::string& spec, size_t max_bytes);
};

}  // namespace snapkv
