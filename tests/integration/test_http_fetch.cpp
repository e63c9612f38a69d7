// Loopback tests of transports/http_fetch: the one-shot requests mcpmux makes to OAuth
// authorization servers.
#include "transports/http_fetch.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <optional>
#include <thread>

#include "tests/fixtures/http_test_server.hpp"

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using test::http_exchange;
using test::http_test_server;
using ::testing::HasSubstr;

// Runs one fetch to its end on a fresh io_context.
fetch_response fetch(fetch_request req) {
  boost::asio::io_context io;
  std::optional<fetch_response> got;
  http_fetch(io, std::move(req), [&](fetch_response r) { got = std::move(r); });
  io.run();
  EXPECT_TRUE(got.has_value()) << "done was never called";
  return got.value_or(fetch_response{});
}

TEST(HttpFetch, GetJsonWithHeaders) {
  http_test_server s([](http_exchange& ex) {
    ex.respond(200, R"({"issuer":"x"})", "application/json; charset=utf-8");
  });
  fetch_request req;
  req.url = s.url("/.well-known/oauth-authorization-server");
  req.headers = {{"MCP-Protocol-Version", "2026-07-28"}};
  const auto r = fetch(req);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"issuer":"x"})");
  const auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].target, "/.well-known/oauth-authorization-server");
  EXPECT_EQ(reqs[0].header("accept"), "application/json");
  EXPECT_EQ(reqs[0].header("mcp-protocol-version"), "2026-07-28");
  EXPECT_THAT(reqs[0].header("user-agent"), HasSubstr("mcpmux/"));
}

TEST(HttpFetch, PostFormAndErrorStatusesAreAnswersNotFailures) {
  http_test_server s([](http_exchange& ex) {
    const auto& t = ex.request().target;
    if (t == "/token") return ex.respond(400, R"({"error":"invalid_grant"})");
    if (t == "/moved")
      return ex.respond(302, "", "", {{"Location", "https://elsewhere.example/token"}});
    ex.respond(401, "", "", {{"WWW-Authenticate", R"(Bearer resource_metadata="https://m/x")"}});
  });
  fetch_request post;
  post.method = "POST";
  post.url = s.url("/token");
  post.content_type = "application/x-www-form-urlencoded";
  post.body = "grant_type=refresh_token&refresh_token=r1";
  post.headers = {{"Authorization", "Basic Y2xpZW50OnNlY3JldA=="}};
  auto r = fetch(post);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.body, R"({"error":"invalid_grant"})");
  const auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].body, "grant_type=refresh_token&refresh_token=r1");
  EXPECT_EQ(reqs[0].header("content-type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(reqs[0].header("authorization"), "Basic Y2xpZW50OnNlY3JldA==");

  fetch_request moved;
  moved.url = s.url("/moved");
  r = fetch(moved);
  EXPECT_EQ(r.status, 302u);  // not followed
  EXPECT_EQ(r.location, "https://elsewhere.example/token");
  EXPECT_EQ(s.requests().size(), 2u);

  fetch_request challenged;
  challenged.url = s.url("/mcp");
  r = fetch(challenged);
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(r.www_authenticate, R"(Bearer resource_metadata="https://m/x")");
}

TEST(HttpFetch, LimitsAndFailuresAreErrors) {
  http_test_server s([](http_exchange& ex) {
    if (ex.request().target == "/big") return ex.respond(200, std::string(4096, 'x'));
    ex.hold(3s);
    ex.respond(200, "{}");
  });
  fetch_request big;
  big.url = s.url("/big");
  big.max_body = 1024;
  auto r = fetch(big);
  EXPECT_THAT(r.error, HasSubstr("longer than 1024 bytes"));
  EXPECT_EQ(r.body, "");

  fetch_request slow;
  slow.url = s.url("/slow");
  slow.timeout = 200ms;
  const auto start = std::chrono::steady_clock::now();
  r = fetch(slow);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_THAT(r.error, HasSubstr("timed out"));
  EXPECT_EQ(r.status, 0u);

  unsigned short port = 0;
  {
    http_test_server gone([](http_exchange&) {});
    port = gone.port();
  }
  fetch_request refused;
  refused.url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  r = fetch(refused);
  EXPECT_THAT(r.error, HasSubstr("cannot connect"));

  fetch_request bad;
  bad.url = "ftp://example.com/x";
  r = fetch(bad);
  EXPECT_THAT(r.error, HasSubstr("scheme"));
}

TEST(HttpFetch, TlsVerifiedWithTheCaFileAndRefusedWithout) {
  const auto dir = test::make_test_certificate();
  ASSERT_FALSE(dir.empty()) << "openssl req failed";
  http_test_server s([](http_exchange& ex) { ex.respond(200, R"({"ok":true})"); }, dir);
  fetch_request req;
  req.url = "https://localhost:" + std::to_string(s.port()) + "/token";
  req.ca_file = dir + "/cert.pem";
  auto r = fetch(req);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.body, R"({"ok":true})");
  req.ca_file.clear();
  r = fetch(req);
  EXPECT_EQ(r.status, 0u);
  EXPECT_THAT(r.error, HasSubstr("certificate"));
}

}  // namespace
}  // namespace mcpmux
