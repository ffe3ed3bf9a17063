#pragma once
// A BlobStore on a Redis server (hiredis, one connection under a lock). A server that is down or
// stops answering is a miss: one log line when it goes away, one when it is back; it is asked
// again at most once a second meanwhile, so requests do not wait on it.
#include <chrono>
#include <mutex>

#include "io/blob_store.h"

struct redisContext;

namespace snapkv {

class RedisStore final : public BlobStore {
 public:
  RedisStore(std::string host, int port);
  ~RedisStore() override;
  std::optional<std::vector<uint8_t>> get(const std::string& key) override;
  std::vector<std::optional<std::string>> get_many(std::span<const std::string> keys) override;
  void put(const std::string& key, std::span<const uint8_t> value) override;
  std::string describe() const override;

 private:
  // The connection, (re)connecting when it is time; null while the server is away. mu_ held.
  redisContext* connection();
  // Drops the connection after an error and logs it once. mu_ held.
  void lost(const std::string& why);

  std::string host_;
  int port_;
  std::mutex mu_;
  redisContext* c_ = nullptr;
  bool away_ = false;
  bool refusing_ = false;  // the last SET was refused
  std::chrono::steady_clock::time_point retry_at_{};
};

}  // namespace snapkv
