#include "io/blob_store.h"

#include <charconv>

#include "io/dir_store.h"
#include "io/redis_store.h"
#include "util/error.h"

namespace snapkv {

std::unique_ptr<BlobStore> BlobStore::open(const std::string& spec, size_t max_bytes) {
  constexpr std::string_view kRedis = "redis://";
  if (!spec.starts_with(kRedis)) return std::make_unique<DirStore>(spec, max_bytes);
  const std::string_view rest = std::string_view(spec).substr(kRedis.size());
  const size_t colon = rest.rfind(':');
  int port = 6379;
  std::string host(rest.substr(0, colon));
  if (colon != std::string_view::npos) {
    const std::string_view p = rest.substr(colon + 1);
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
    if (ec != std::errc() || end != p.data() + p.size() || port < 1 || port > 65535) {
      fail(ErrorKind::kInvalidArgument, "context store {}: the port must be a number from 1 to 65535", spec);
    }
  }
  if (host.empty() || host.find('/') != std::string::npos) {
    fail(ErrorKind::kInvalidArgument, "context store {}: expected redis://HOST:PORT", spec);
  }
  return std::make_unique<RedisStore>(host, port);
}

}  // namespace snapkv
