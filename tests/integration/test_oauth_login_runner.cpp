// A whole OAuth login through transports/oauth_login_runner against a loopback authorization
// server and MCP server (one fake): discovery, dynamic registration, the authorization request
// followed by a "browser", the redirect on the loopback listener, the code exchange with PKCE
// checked by the server.
#include "transports/oauth_login_runner.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <map>
#include <mutex>
#include <optional>

#include "protocol/oauth_grant.hpp"
#include "tests/fixtures/http_test_server.hpp"
#include "transports/http_fetch.hpp"
#include "transports/oauth_crypto.hpp"

namespace mcpmux {
namespace {

using test::http_exchange;
using test::http_test_server;
using ::testing::HasSubstr;

std::map<std::string, std::string> form(std::string_view text) {
  std::map<std::string, std::string> out;
  if (auto q = oauth::parse_query(text))
    for (const auto& [k, v] : *q) out[k] = v;
  return out;
}

// An MCP server that is its own authorization server.
struct fake_provider {
  std::mutex mu;
  std::string base;
  std::string challenge;  // from the authorization request
  std::map<std::string, std::string> authorize, token;
  std::string deny;  // an error to redirect with instead of a code
  http_test_server server{[this](http_exchange& ex) { handle(ex); }};

  fake_provider() { base = server.url(""); }

  void handle(http_exchange& ex) {
    const auto& t = ex.request().target;
    const auto path = t.substr(0, t.find('?'));
    std::lock_guard lock(mu);
    if (path == "/.well-known/oauth-protected-resource/mcp")
      return ex.respond(200, R"({"resource":")" + base + R"(/mcp","authorization_servers":[")" +
                                 base + R"("],"scopes_supported":["tools"]})");
    if (path == "/.well-known/oauth-authorization-server")
      return ex.respond(200, R"({"issuer":")" + base + R"(","authorization_endpoint":")" + base +
                                 R"(/authorize","token_endpoint":")" + base +
                                 R"(/token","registration_endpoint":")" + base +
                                 R"(/register","code_challenge_methods_supported":["S256"],
                                 "authorization_response_iss_parameter_supported":true})");
    if (path == "/register") return ex.respond(201, R"({"client_id":"dyn-1"})");
    if (path == "/authorize") {
      authorize = form(t.substr(t.find('?') + 1));
      challenge = authorize["code_challenge"];
      const auto back =
          authorize["redirect_uri"] + "?" + (deny.empty() ? "code=the-code" : "error=" + deny) +
          "&state=" + oauth::form_encode(authorize["state"]) + "&iss=" + oauth::form_encode(base);
      return ex.respond(302, "", "", {{"Location", back}});
    }
    if (path == "/token") {
      token = form(ex.request().body);
      const auto d = sha256(token["code_verifier"]);
      const bool pkce = d && oauth::pkce_challenge_s256(*d) == challenge;
      if (token["code"] != "the-code" || !pkce)
        return ex.respond(400, R"({"error":"invalid_grant"})");
      return ex.respond(200, R"({"access_token":"at-1","token_type":"Bearer","expires_in":60,
                                 "refresh_token":"rt-1"})");
    }
    ex.respond(404, "");
  }
};

// Runs a login; the "browser" follows the authorization URL and its redirect.
login_outcome login_with_browser(fake_provider& p, std::string* page) {
  boost::asio::io_context io;
  std::optional<login_outcome> out;
  oauth::login_config cfg;
  cfg.server_url = p.base + "/mcp";
  run_login(
      io, cfg, {},
      [&](const std::string& url) {
        fetch_request to_server;
        to_server.url = url;
        http_fetch(io, to_server, [&](fetch_response r) {
          ASSERT_EQ(r.status, 302u) << r.error;
          fetch_request back;
          back.url = r.location;
          back.accept = "text/html";
          http_fetch(io, back, [&](fetch_response b) { *page = b.body; });
        });
      },
      [&](login_outcome o) { out = std::move(o); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((!out || page->empty()) && std::chrono::steady_clock::now() < deadline)
    io.run_one_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(out.has_value()) << "the login never ended";
  if (out) return std::move(*out);
  login_outcome never;
  never.error = "never ended";
  return never;
}

TEST(OauthLoginRunner, ALoginEndToEndWithPkceCheckedByTheServer) {
  fake_provider p;
  std::string page;
  const auto o = login_with_browser(p, &page);
  ASSERT_EQ(o.error, "");
  EXPECT_EQ(o.tokens.access_token, "at-1");
  EXPECT_EQ(o.tokens.refresh_token, std::optional<std::string>("rt-1"));
  EXPECT_TRUE(o.registered_now);
  EXPECT_EQ(o.client.client_id, "dyn-1");
  EXPECT_EQ(o.client.issuer, p.base);
  EXPECT_EQ(o.resource, p.base + "/mcp");
  EXPECT_THAT(page, HasSubstr("You can close this window"));
  std::lock_guard lock(p.mu);
  EXPECT_THAT(p.authorize["redirect_uri"], ::testing::StartsWith("http://127.0.0.1:"));
  EXPECT_EQ(p.authorize["resource"], p.base + "/mcp");
  EXPECT_EQ(p.authorize["scope"], "tools");
  EXPECT_EQ(p.token["redirect_uri"], p.authorize["redirect_uri"]);
  EXPECT_EQ(p.token["client_id"], "dyn-1");
}

TEST(OauthLoginRunner, ADeniedAuthorizationEndsTheLoginAndSaysSo) {
  fake_provider p;
  p.deny = "access_denied";
  std::string page;
  const auto o = login_with_browser(p, &page);
  EXPECT_THAT(o.error, HasSubstr("access_denied"));
  EXPECT_TRUE(o.tokens.access_token.empty());
  EXPECT_THAT(page, HasSubstr("The login failed"));
  std::lock_guard lock(p.mu);
  EXPECT_TRUE(p.token.empty());  // no code exchange was tried
}

}  // namespace
}  // namespace mcpmux
