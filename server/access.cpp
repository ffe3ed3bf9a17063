#include "server/access.h"

#include <fmt/format.h>

#include <algorithm>

namespace snapkv::server {

namespace {

// The host part of a Host header or an address: "[::1]:8080" -> "::1", "localhost:80" ->
// "localhost", "::1" (a bare IPv6 address, as --host takes it) -> "::1".
std::string host_name(const std::string& host) {
  if (!host.empty() && host[0] == '[') {
    const size_t end = host.find(']');
    return end == std::string::npos ? host : host.substr(1, end - 1);
  }
  if (std::count(host.begin(), host.end(), ':') > 1) return host;
  return host.substr(0, host.find(':'));
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Compares in time independent of where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i % std::max<size_t>(b.size(), 1)]);
  return diff == 0;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  const std::string name = lower(host_name(host));
  if (name == "localhost" || name == "::1" || (name.size() > 10 && name.ends_with(".localhost"))) return true;
  // 127.0.0.0/8 as a dotted quad
  unsigned a = 0, b = 0, c = 0, d = 0;
  char rest = 0;
  return std::sscanf(name.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &rest) == 4 && a == 127 && b < 256 && c < 256 && d < 256;
}

std::optional<AccessDenial> Access::check_origin(const std::string& host, const std::string& origin) const {
  if (opt_.loopback_only_hosts && !host.empty() && !is_loopback_host(host)) {
    return AccessDenial{403, "host_not_allowed",
                        fmt::format("the Host '{}' is not a loopback name; a server listening on loopback answers only "
                                    "localhost, 127.0.0.1 or [::1] (listen on another address with --host)", host)};
  }
  if (origin.empty() || !allow_origin(origin).empty()) return std::nullopt;
  return AccessDenial{403, "origin_not_allowed",
                      fmt::format("requests from the web origin '{}' are not allowed (allow it with --cors-origins)", origin)};
}

std::optional<AccessDenial> Access::check_key(const std::string& authorization) const {
  if (opt_.api_key.empty()) return std::nullopt;
  if (authorization.empty()) {
    return AccessDenial{401, "invalid_api_key",
                        "you didn't provide an API key: send it in an Authorization header as 'Bearer YOUR_KEY'"};
  }
  const std::string prefix = "bearer ";
  if (lower(authorization.substr(0, prefix.size())) != prefix || !same_secret(authorization.substr(prefix.size()), opt_.api_key)) {
    return AccessDenial{401, "invalid_api_key", "incorrect API key provided"};
  }
  return std::nullopt;
}

std::string Access::allow_origin(const std::string& origin) const {
  if (origin.empty()) return "";
  for (const std::string& o : opt_.cors_origins) {
    if (o == "*" || lower(o) == lower(origin)) return origin;
  }
  return "";
}

}  // namespace snapkv::server
