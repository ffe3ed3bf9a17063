// Who may use the server (server/access.h): loopback Host names, listed origins, the API key.
#include <gtest/gtest.h>

#include "server/access.h"

namespace snapkv::server {
namespace {

TEST(ServerAccess, LoopbackHostNames) {
  for (const char* host : {"localhost", "LOCALHOST:8080", "127.0.0.1", "127.1.2.3:80", "[::1]:8080", "[::1]", "::1", "app.localhost"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "128.0.0.1", "localhost.evil",
                           "[::2]", "127.0.0.256", "0.0.0.0", ""}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

TEST(ServerAccess, OriginsAndHosts) {
  const Access access(AccessOptions{"", {"http://ok.example"}, true});
  EXPECT_FALSE(access.check_origin("127.0.0.1:8080", ""));
  EXPECT_FALSE(access.check_origin("", ""));  // HTTP/1.0 without Host
  EXPECT_FALSE(access.check_origin("localhost", "http://OK.example"));
  EXPECT_EQ(access.check_origin("localhost", "http://evil.example")->status, 403);
  EXPECT_EQ(access.check_origin("evil.example", "")->code, "host_not_allowed");
  EXPECT_EQ(access.allow_origin("http://ok.example"), "http://ok.example");
  EXPECT_EQ(access.allow_origin("http://evil.example"), "");
  const Access open(AccessOptions{"", {"*"}, false});
  EXPECT_FALSE(open.check_origin("my.server.example", "http://anything.example"));
}

TEST(ServerAccess, ApiKey) {
  const Access none(AccessOptions{});
  EXPECT_FALSE(none.check_key(""));
  const Access keyed(AccessOptions{"s3cret", {}, true});
  EXPECT_FALSE(keyed.check_key("Bearer s3cret"));
  EXPECT_FALSE(keyed.check_key("bearer s3cret"));
  for (const char* auth : {"", "Bearer", "Bearer ", "Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret"}) {
    const auto d = keyed.check_key(auth);
    ASSERT_TRUE(d) << auth;
    EXPECT_EQ(d->status, 401);
    EXPECT_EQ(d->code, "invalid_api_key");
  }
}

}  // namespace
}  // namespace snapkv::server
