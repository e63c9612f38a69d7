// OAuth discovery rules (protocol/oauth_discovery): challenges, well-known URLs in the
// spec's order, the 2025-03-26 fallbacks, and the checks metadata documents must pass.
#include "protocol/oauth_discovery.hpp"

#include <gtest/gtest.h>

#include <map>

#include <boost/json/parse.hpp>

namespace mcpmux::oauth {
namespace {

using strings = std::vector<std::string>;

TEST(oauth_discovery, urls_are_split_and_their_origin_normalized) {
  auto u = split_url("HTTPS://Auth.Example.com:443/Tenant1/?x=1#frag");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->authority, "Auth.Example.com:443");
  EXPECT_EQ(u->path, "/Tenant1/");
  EXPECT_EQ(u->query, "x=1");
  EXPECT_EQ(u->origin(), "https://auth.example.com");  // default port left out, host lowered
  EXPECT_EQ(split_url("http://[::1]:8080")->origin(), "http://[::1]:8080");
  EXPECT_EQ(split_url("http://h?q")->path, "");
  for (std::string_view bad :
       {"", "example.com/mcp", "ftp://h/x", "https://", "https://u:p@h/", "https://h h/"})
    EXPECT_FALSE(split_url(bad)) << bad;
}

TEST(oauth_discovery, only_https_or_loopback_endpoints_are_secure) {
  EXPECT_TRUE(secure_endpoint("https://auth.example.com/token"));
  EXPECT_TRUE(secure_endpoint("http://127.0.0.1:9000/token"));
  EXPECT_TRUE(secure_endpoint("http://localhost/token"));
  EXPECT_TRUE(secure_endpoint("http://[::1]:1/token"));
  EXPECT_FALSE(secure_endpoint("http://auth.example.com/token"));
  EXPECT_FALSE(secure_endpoint("http://127.0.0.1.evil.com/token"));  // a name, not the address
  EXPECT_FALSE(secure_endpoint("not a url"));
}

TEST(oauth_discovery, www_authenticate_challenges_are_read) {
  const auto all = parse_www_authenticate(
      R"(Basic realm="x", Bearer realm="mcp", resource_metadata="https://s.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope", error_description="needs \"write\"")");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].scheme, "basic");
  EXPECT_EQ(all[0].param("realm"), "x");
  const auto b = bearer_challenge(
      R"(Basic realm="x", Bearer realm="mcp", resource_metadata="https://s.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope", error_description="needs \"write\"")");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->param("resource_metadata"),
            "https://s.example/.well-known/oauth-protected-resource/mcp");
  EXPECT_EQ(b->param("scope"), "files:read files:write");
  EXPECT_EQ(b->param("ERROR"), "insufficient_scope");  // names ignore case
  EXPECT_EQ(b->param("error_description"), "needs \"write\"");
  // A scheme alone, tokens without quotes, token68, odd spacing.
  EXPECT_EQ(bearer_challenge("Bearer")->params.size(), 0u);
  EXPECT_EQ(bearer_challenge("bearer  error = invalid_token ,scope=\"a\"")->param("error"),
            "invalid_token");
  const auto mixed = parse_www_authenticate("Negotiate abc==, Bearer scope=\"s\"");
  ASSERT_EQ(mixed.size(), 2u);
  EXPECT_EQ(mixed[1].param("scope"), "s");
  // Junk never crashes and never invents a Bearer challenge.
  for (std::string_view junk : {"", ",,,", "=", "\"", "Bearer =\"x\"", "Basic \"unterminated"})
    (void)parse_www_authenticate(junk);
  EXPECT_FALSE(bearer_challenge("Basic realm=\"Bearer\""));
  EXPECT_FALSE(bearer_challenge(""));
}

TEST(oauth_discovery, protected_resource_metadata_urls_path_form_first_then_root) {
  EXPECT_EQ(protected_resource_metadata_urls("https://example.com/public/mcp"),
            (strings{"https://example.com/.well-known/oauth-protected-resource/public/mcp",
                     "https://example.com/.well-known/oauth-protected-resource"}));
  EXPECT_EQ(protected_resource_metadata_urls("http://127.0.0.1:3000/mcp/?session=1"),
            (strings{"http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp",
                     "http://127.0.0.1:3000/.well-known/oauth-protected-resource"}));
  EXPECT_EQ(protected_resource_metadata_urls("https://example.com/"),
            (strings{"https://example.com/.well-known/oauth-protected-resource"}));
  EXPECT_TRUE(protected_resource_metadata_urls("nope").empty());
}

TEST(oauth_discovery, authorization_server_metadata_urls_in_the_spec_order) {
  EXPECT_EQ(authorization_server_metadata_urls("https://auth.example.com/tenant1"),
            (strings{"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                     "https://auth.example.com/.well-known/openid-configuration/tenant1",
                     "https://auth.example.com/tenant1/.well-known/openid-configuration"}));
  EXPECT_EQ(authorization_server_metadata_urls("https://auth.example.com/"),
            (strings{"https://auth.example.com/.well-known/oauth-authorization-server",
                     "https://auth.example.com/.well-known/openid-configuration"}));
}

TEST(oauth_discovery, the_2025_03_26_fallbacks_are_at_the_server_origin) {
  const auto e = legacy_endpoints("https://mcp.example.com/v1/mcp");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->metadata, "https://mcp.example.com/.well-known/oauth-authorization-server");
  EXPECT_EQ(e->authorization, "https://mcp.example.com/authorize");
  EXPECT_EQ(e->token, "https://mcp.example.com/token");
  EXPECT_EQ(e->registration, "https://mcp.example.com/register");
}

TEST(oauth_discovery, resource_metadata_must_name_this_server) {
  const auto doc = [](std::string_view resource) {
    return boost::json::parse(R"({"resource":")" + std::string(resource) +
                              R"(","authorization_servers":["https://auth.example.com"],
                               "scopes_supported":["a","b"]})");
  };
  const std::string server = "https://Example.com:443/public/mcp";
  for (std::string_view ok : {"https://example.com/public/mcp", "https://example.com/public/mcp/",
                              "https://example.com/public", "https://example.com"}) {
    auto r = read_resource_metadata(doc(ok), server);
    ASSERT_TRUE(r.ok()) << ok << ": " << r.error().message;
    EXPECT_EQ(r.value().authorization_servers, strings{"https://auth.example.com"});
    EXPECT_EQ(r.value().scopes_supported, (strings{"a", "b"}));
  }
  for (std::string_view bad : {"https://evil.example.com/mcp", "http://example.com/public/mcp",
                               "https://example.com:8443/public/mcp", "https://example.com/pub",
                               "https://example.com/public/mcp/other", "not a url"}) {
    auto r = read_resource_metadata(doc(bad), server);
    ASSERT_TRUE(!r.ok()) << bad;
  }
  EXPECT_NE((read_resource_metadata(doc("https://evil.example.com/mcp"), server))
                .error()
                .message.find("another resource"),
            std::string::npos);
  EXPECT_TRUE(!(read_resource_metadata(
                    boost::json::parse(R"({"resource":"https://example.com/public/mcp"})"),
                    server))
                   .ok());  // no authorization server
  EXPECT_TRUE(!(read_resource_metadata(boost::json::parse("[1]"), server)).ok());
}

TEST(oauth_discovery, server_metadata_is_checked_before_use) {
  const auto doc = boost::json::parse(R"({
    "issuer": "https://auth.example.com/tenant1",
    "authorization_endpoint": "https://auth.example.com/tenant1/authorize",
    "token_endpoint": "https://auth.example.com/tenant1/token",
    "registration_endpoint": "https://auth.example.com/tenant1/register",
    "code_challenge_methods_supported": ["plain", "S256"],
    "scopes_supported": ["openid", "offline_access"],
    "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
    "authorization_response_iss_parameter_supported": true,
    "client_id_metadata_document_supported": true})");
  auto r = read_server_metadata(doc, "https://auth.example.com/tenant1");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& m = r.value();
  EXPECT_TRUE(m.pkce_s256);
  EXPECT_TRUE(m.iss_parameter_supported);
  EXPECT_TRUE(m.client_id_metadata_document_supported);
  EXPECT_EQ(m.registration_endpoint, "https://auth.example.com/tenant1/register");
  EXPECT_EQ(m.revocation_endpoint, "");
  EXPECT_EQ(refuse_authorization_code(m), "");

  // The issuer must be identical to the one the URL was built from (no normalization).
  for (std::string_view other : {"https://auth.example.com/tenant1/", "https://honest.example",
                                 "https://AUTH.example.com/tenant1"}) {
    auto w = read_server_metadata(doc, other);
    ASSERT_TRUE(!w.ok()) << other;
    EXPECT_NE(w.error().message.find("refused"), std::string::npos);
  }
  // An insecure endpoint, a missing token endpoint, no S256.
  auto insecure = doc;
  insecure.as_object()["token_endpoint"] = "http://auth.example.com/token";
  EXPECT_TRUE(!(read_server_metadata(insecure, "https://auth.example.com/tenant1")).ok());
  auto no_token = doc;
  no_token.as_object().erase("token_endpoint");
  EXPECT_TRUE(!(read_server_metadata(no_token, "https://auth.example.com/tenant1")).ok());
  auto plain_only = doc;
  plain_only.as_object()["code_challenge_methods_supported"] = boost::json::array{"plain"};
  auto p = read_server_metadata(plain_only, "https://auth.example.com/tenant1");
  ASSERT_TRUE(p.ok());
  EXPECT_NE(refuse_authorization_code(p.value()).find("S256"), std::string::npos);
  auto absent = doc;
  absent.as_object().erase("code_challenge_methods_supported");
  EXPECT_FALSE(
      (read_server_metadata(absent, "https://auth.example.com/tenant1")).value().pkce_s256);
}

// Drives a discovery against canned documents: url → (status, body); unknown URLs are 404.
struct canned {
  std::map<std::string, std::pair<unsigned, std::string>> docs;
  std::vector<std::string> asked;
  discovery::step run(discovery& d) {
    auto s = d.start();
    while (s.what == discovery::step::fetch) {
      asked.push_back(s.url);
      auto it = docs.find(s.url);
      s = it == docs.end() ? d.on_response(404, "not found")
                           : d.on_response(it->second.first, it->second.second);
    }
    return s;
  }
};

const std::string prm = R"({"resource":"https://mcp.example.com/mcp",
                            "authorization_servers":["https://auth.example.com/t1"]})";
const std::string asm_t1 = R"({"issuer":"https://auth.example.com/t1",
    "authorization_endpoint":"https://auth.example.com/t1/authorize",
    "token_endpoint":"https://auth.example.com/t1/token",
    "code_challenge_methods_supported":["S256"]})";

TEST(oauth_discovery_flow, well_known_urls_in_order_until_both_documents_are_found) {
  canned c;
  c.docs["https://mcp.example.com/.well-known/oauth-protected-resource"] = {200, prm};
  c.docs["https://auth.example.com/.well-known/openid-configuration/t1"] = {200, asm_t1};
  discovery d("https://mcp.example.com/mcp");
  auto s = c.run(d);
  ASSERT_EQ(s.what, discovery::step::done) << s.error;
  EXPECT_EQ(c.asked, (strings{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
                              "https://mcp.example.com/.well-known/oauth-protected-resource",
                              "https://auth.example.com/.well-known/oauth-authorization-server/t1",
                              "https://auth.example.com/.well-known/openid-configuration/t1"}));
  ASSERT_TRUE(d.result().resource);
  EXPECT_EQ(d.result().server.token_endpoint, "https://auth.example.com/t1/token");
  EXPECT_FALSE(d.result().defaults);
}

TEST(oauth_discovery_flow, the_challenge_s_resource_metadata_is_asked_first) {
  canned c;
  c.docs["https://mcp.example.com/meta/custom"] = {200, prm};
  c.docs["https://auth.example.com/.well-known/oauth-authorization-server/t1"] = {200, asm_t1};
  discovery d(
      "https://mcp.example.com/mcp",
      bearer_challenge(R"(Bearer resource_metadata="https://mcp.example.com/meta/custom")"));
  auto s = c.run(d);
  ASSERT_EQ(s.what, discovery::step::done) << s.error;
  EXPECT_EQ(c.asked.front(), "https://mcp.example.com/meta/custom");
  EXPECT_EQ(c.asked.size(), 2u);
}

TEST(oauth_discovery_flow, a_mismatched_resource_or_issuer_stops_discovery) {
  canned c;
  c.docs["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"] = {
      200,
      R"({"resource":"https://evil.example.com/mcp","authorization_servers":["https://a.example"]})"};
  discovery d("https://mcp.example.com/mcp");
  auto s = c.run(d);
  EXPECT_EQ(s.what, discovery::step::fail);
  EXPECT_NE(s.error.find("another resource"), std::string::npos) << s.error;
  EXPECT_EQ(c.asked.size(), 1u);  // nothing asked of the authorization server

  canned i;
  i.docs["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"] = {200, prm};
  i.docs["https://auth.example.com/.well-known/oauth-authorization-server/t1"] = {
      200,
      R"({"issuer":"https://honest.example","token_endpoint":"https://honest.example/token"})"};
  discovery di("https://mcp.example.com/mcp");
  s = i.run(di);
  EXPECT_EQ(s.what, discovery::step::fail);
  EXPECT_NE(s.error.find("issuer"), std::string::npos) << s.error;
}

TEST(oauth_discovery_flow, without_resource_metadata_the_2025_03_26_fallbacks) {
  canned c;  // root metadata at the server's origin
  c.docs["https://mcp.example.com/.well-known/oauth-authorization-server"] = {
      200,
      R"({"issuer":"https://mcp.example.com","authorization_endpoint":"https://mcp.example.com/auth",
               "token_endpoint":"https://mcp.example.com/tok","code_challenge_methods_supported":["S256"]})"};
  discovery d("https://mcp.example.com/v1/mcp");
  auto s = c.run(d);
  ASSERT_EQ(s.what, discovery::step::done) << s.error;
  EXPECT_FALSE(d.result().resource);
  EXPECT_FALSE(d.result().defaults);
  EXPECT_EQ(d.result().server.token_endpoint, "https://mcp.example.com/tok");

  canned none;  // nothing at all: the default endpoints
  discovery n("https://mcp.example.com/v1/mcp");
  s = none.run(n);
  ASSERT_EQ(s.what, discovery::step::done) << s.error;
  EXPECT_TRUE(n.result().defaults);
  EXPECT_EQ(n.result().server.authorization_endpoint, "https://mcp.example.com/authorize");
  EXPECT_EQ(n.result().server.registration_endpoint, "https://mcp.example.com/register");

  canned plain;  // …but never to a plain-HTTP origin
  discovery p("http://mcp.example.com/mcp");
  EXPECT_EQ(plain.run(p).what, discovery::step::fail);
}

TEST(oauth_discovery_flow, unusable_answers_move_on_and_the_last_error_is_told) {
  canned c;
  c.docs["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"] = {200, "<html>"};
  c.docs["https://mcp.example.com/.well-known/oauth-protected-resource"] = {200, prm};
  discovery d("https://mcp.example.com/mcp");
  auto s = c.run(d);  // the authorization server has no metadata anywhere
  ASSERT_EQ(s.what, discovery::step::fail);
  EXPECT_NE(s.error.find("no usable authorization server metadata"), std::string::npos);
  EXPECT_NE(s.error.find("HTTP 404"), std::string::npos) << s.error;
  discovery bad("not a url");
  EXPECT_EQ(bad.start().what, discovery::step::fail);
}

}  // namespace
}  // namespace mcpmux::oauth
