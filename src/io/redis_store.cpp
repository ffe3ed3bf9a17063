#include "io/redis_store.h"

#include <fmt/core.h>
#include <hiredis/hiredis.h>

namespace snapkv {
namespace {

constexpr auto kConnectTimeout = std::chrono::milliseconds(300);
constexpr auto kCommandTimeout = std::chrono::seconds(5);
constexpr auto kRetryAfter = std::chrono::seconds(1);

timeval to_timeval(std::chrono::milliseconds d) {
  return {static_cast<time_t>(d.count() / 1000), static_cast<suseconds_t>(d.count() % 1000 * 1000)};
}

struct Reply {
  redisReply* r;
  explicit Reply(void* p) : r(static_cast<redisReply*>(p)) {}
  ~Reply() {
    if (r) freeReplyObject(r);
  }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
};

}  // namespace

RedisStore::RedisStore(std::string host, int port) : host_(std::move(host)), port_(port) {
  std::lock_guard lk(mu_);
  connection();  // says at start whether the server is there
}

RedisStore::~RedisStore() {
  if (c_) redisFree(c_);
}

std::string RedisStore::describe() const { return fmt::format("redis://{}:{}", host_, port_); }

redisContext* RedisStore::connection() {
  if (c_) return c_;
  const auto now = std::chrono::steady_clock::now();
  if (now < retry_at_) return nullptr;
  retry_at_ = now + kRetryAfter;
  redisContext* c = redisConnectWithTimeout(host_.c_str(), port_, to_timeval(kConnectTimeout));
  if (!c || c->err) {
    lost(c ? c->errstr : "cannot allocate a connection");
    if (c) redisFree(c);
    return nullptr;
  }
  redisSetTimeout(c, to_timeval(std::chrono::duration_cast<std::chrono::milliseconds>(kCommandTimeout)));
  if (away_) fmt::print(stderr, "context store {}: reachable again\n", describe());
  away_ = false;
  c_ = c;
  return c_;
}

void RedisStore::lost(const std::string& why) {
  if (!away_) fmt::print(stderr, "context store {}: unreachable ({}); going on without it\n", describe(), why);
  away_ = true;
  if (c_) {
    redisFree(c_);
    c_ = nullptr;
  }
}

std::optional<std::vector<uint8_t>> RedisStore::get(const std::string& key) {
  std::lock_guard lk(mu_);
  redisContext* c = connection();
  if (!c) return std::nullopt;
  Reply r(redisCommand(c, "GET %b", key.data(), key.size()));
  if (!r.r) {
    lost(c->errstr);
    return std::nullopt;
  }
  if (r.r->type != REDIS_REPLY_STRING) return std::nullopt;
  const auto* p = reinterpret_cast<const uint8_t*>(r.r->str);
  return std::vector<uint8_t>(p, p + r.r->len);
}

std::vector<std::optional<std::string>> RedisStore::get_many(std::span<const std::string> keys) {
  std::vector<std::optional<std::string>> out(keys.size());
  if (keys.empty()) return out;
  std::lock_guard lk(mu_);
  redisContext* c = connection();
  if (!c) return out;
  std::vector<const char*> argv{"MGET"};
  std::vector<size_t> lens{4};
  for (const std::string& k : keys) {
    argv.push_back(k.data());
    lens.push_back(k.size());
  }
  Reply r(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (!r.r) {
    lost(c->errstr);
    return out;
  }
  if (r.r->type != REDIS_REPLY_ARRAY || r.r->elements != keys.size()) return out;
  for (size_t i = 0; i < keys.size(); ++i) {
    const redisReply* e = r.r->element[i];
    if (e->type == REDIS_REPLY_STRING) out[i] = std::string(e->str, e->len);
  }
  return out;
}

void RedisStore::put(const std::string& key, std::span<const uint8_t> value) {
  std::lock_guard lk(mu_);
  redisContext* c = connection();
  if (!c) return;
  Reply r(redisCommand(c, "SET %b %b", key.data(), key.size(), value.data(), value.size()));
  if (!r.r) {
    lost(c->errstr);
    return;
  }
  const bool refused = r.r->type == REDIS_REPLY_ERROR;  // e.g. maxmemory with noeviction: said once
  if (refused && !refusing_) {
    fmt::print(stderr, "context store {}: SET refused ({}); states are not saved meanwhile\n", describe(),
               std::string(r.r->str, r.r->len));
  }
  if (!refused && refusing_) fmt::print(stderr, "context store {}: SET accepted again\n", describe());
  refusing_ = refused;
}

}  // namespace snapkv
