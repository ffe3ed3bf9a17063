#pragma once
// Who may use the server: an API key (Authorization: Bearer), the browser origins allowed to call
// it (CORS) and, while it listens on a loopback address, the host names requests must name (a web
// page whose host name a DNS rebinding points at 127.0.0.1 still sends its own name in Host).
#include <optional>
#include <string>
#include <vector>

namespace snapkv::server {

struct AccessOptions {
  std::string api_key;                    // empty: no key needed
  std::vector<std::string> cors_origins;  // "https://app.example.com", or "*" for any
  bool loopback_only_hosts = true;        // a Host header must name localhost, 127.0.0.0/8 or [::1]
};

struct AccessDenial {
  int status;  // 401 or 403
  std::string code, message;
};

class Access {
 public:
  explicit Access(AccessOptions options) : opt_(std::move(options)) {}

  // Host and Origin of any request (preflights included); nullopt when allowed.
  std::optional<AccessDenial> check_origin(const std::string& host, const std::string& origin) const;
  // The API key of a request to a protected route.
  std::optional<AccessDenial> check_key(const std::string& authorization) const;
  bool key_required() const { return !opt_.api_key.empty(); }
  // The Access-Control-Allow-Origin value for an allowed origin ("" when there is no Origin).
  std::string allow_origin(const std::string& origin) const;

 private:
  AccessOptions opt_;
};

// Whether `host` (a Host header: name or address, optionally with a port) is a loopback name.
bool is_loopback_host(const std::string& host);

}  // namespace snapkv::server
