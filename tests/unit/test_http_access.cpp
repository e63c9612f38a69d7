// Unit tests of transports/http_access: who may use the loopback HTTP endpoint (Host and Origin
// against DNS rebinding, the bearer token), header values in, a refusal out.
#include "transports/http_access.hpp"

#include "tests/unit/error_text.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace mcpmux {
namespace {

using ::testing::HasSubstr;

TEST(HttpAccess, OnlyLoopbackHostsWithTheBoundPortPass) {
  http_access a(true);
  a.allow_hosts(8931);
  EXPECT_FALSE(a.check("127.0.0.1:8931", std::nullopt, ""));
  EXPECT_FALSE(a.check("localhost:8931", std::nullopt, ""));
  EXPECT_FALSE(a.check("[::1]:8931", std::nullopt, ""));
  for (std::string_view bad : {"evil.example:8931", "127.0.0.1:80", "localhost", ""}) {
    auto r = a.check(bad, std::nullopt, "");
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 403u) << bad;
  }
  http_access remote(false);  // allow_remote: any Host, Origin still checked
  remote.allow_hosts(8931);
  EXPECT_FALSE(remote.check("mybox.lan:8931", std::nullopt, ""));
}

TEST(HttpAccess, ABrowserOriginMustBeTheEndpointsOwnPortIncluded) {
  http_access a(true);
  a.allow_hosts(8931);
  for (std::string_view own : {"http://127.0.0.1:8931", "http://localhost:8931",
                               "http://[::1]:8931", " HTTP://LocalHost:8931 "})
    EXPECT_FALSE(a.check("127.0.0.1:8931", own, "")) << own;
  // Another local port is another origin (another user's web server, say): cookies reach it,
  // the Origin check must not let it through.
  for (std::string_view other :
       {"http://localhost:3000", "http://127.0.0.1:8932", "http://127.0.0.1", "http://[::1]",
        "https://127.0.0.1:8931", "http://127.0.0.1:89310", "http://localhost.evil.example:8931",
        "https://evil.example", "null", "file://localhost"}) {
    auto r = a.check("127.0.0.1:8931", other, "");
    ASSERT_TRUE(r) << other;
    EXPECT_EQ(r->status, 403u) << other;
  }
  http_access web(true);  // port 80: the origin without its port is the same one
  web.allow_hosts(80);
  EXPECT_FALSE(web.check("127.0.0.1", "http://127.0.0.1", ""));
  EXPECT_TRUE(web.check("127.0.0.1", "http://127.0.0.1:8080", ""));
}

TEST(HttpAccess, TheTokenFileGuardsEveryRequest) {
  char path[] = "/tmp/mcpmux-token-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "  s3cret \n";
  http_access a(true);
  a.allow_hosts(8931);
  EXPECT_EQ(error_text(a.read_token_file(path)), "");
  EXPECT_TRUE(a.token_required());
  EXPECT_FALSE(a.check("127.0.0.1:8931", std::nullopt, "Bearer s3cret"));
  for (std::string_view bad : {"", "Bearer wrong", "Basic s3cret", "Bearer s3cret2"}) {
    auto r = a.check("127.0.0.1:8931", std::nullopt, bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 401u) << bad;
    EXPECT_TRUE(r->bearer_challenge) << bad;
    EXPECT_THAT(r->text, ::testing::Not(HasSubstr("s3cret"))) << bad;
  }
  EXPECT_EQ(a.token_name("Bearer s3cret"), "default");
  EXPECT_EQ(a.token_name("Bearer wrong"), "");
  std::ofstream(path) << "";
  EXPECT_THAT(error_text(http_access(true).read_token_file(path)), HasSubstr("empty"));
  std::remove(path);
  EXPECT_THAT(error_text(http_access(true).read_token_file(path)), HasSubstr("cannot read"));
}

TEST(HttpAccess, NamedTokensPassAndSayWhoCame) {
  http_access a(true);
  a.allow_hosts(8931);
  EXPECT_FALSE(a.token_required());
  a.add_token("editor", "e-0123456789abcdef0123456789abcdef");
  a.add_token("ci", "c-0123456789abcdef0123456789abcdef");  // the same length as the editor's
  EXPECT_TRUE(a.token_required());
  EXPECT_EQ(a.token_name("Bearer e-0123456789abcdef0123456789abcdef"), "editor");
  EXPECT_EQ(a.token_name("bearer   c-0123456789abcdef0123456789abcdef "), "ci");
  EXPECT_FALSE(
      a.check("127.0.0.1:8931", std::nullopt, "Bearer c-0123456789abcdef0123456789abcdef"));
  for (std::string_view bad : {"", "Bearer", "Bearer e-0123456789abcdef0123456789abcdeX",
                               "Bearer e-0123456789abcdef0123456789abcde", "Basic ci"}) {
    EXPECT_EQ(a.token_name(bad), "") << bad;
    auto r = a.check("127.0.0.1:8931", std::nullopt, bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 401u) << bad;
  }
}

}  // namespace
}  // namespace mcpmux
