// One OAuth login step by step (protocol/oauth_login): against canned metadata, a canned
// token endpoint and a "browser" that follows the authorization URL back to the redirect.
#include "protocol/oauth_login.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <map>

namespace mcpmux::oauth {
namespace {

const std::string server_url = "https://mcp.example.com/mcp";
const std::string issuer = "https://auth.example.com";

struct world {
  std::map<std::string, std::pair<unsigned, std::string>> docs;  // GET url → answer
  std::pair<unsigned, std::string> registration{201, R"({"client_id":"dyn-1"})"};
  std::pair<unsigned, std::string> token{200, R"({"access_token":"at-1","token_type":"Bearer",
                                                  "expires_in":3600,"refresh_token":"rt-1"})"};
  std::vector<login::request> posts;
  std::string authorize_url;
  std::string redirect_extra;  // appended to the browser's redirect query
  bool browser_keeps_state = true;

  world(bool s256 = true, bool dcr = true, bool cimd = false) {
    docs["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"] = {
        200, R"({"resource":"https://mcp.example.com/mcp","authorization_servers":[")" + issuer +
                 R"("],"scopes_supported":["files:read"]})"};
    std::string as = R"({"issuer":")" + issuer + R"(",
      "authorization_endpoint":"https://auth.example.com/authorize",
      "token_endpoint":"https://auth.example.com/token",
      "scopes_supported":["files:read","offline_access"],
      "authorization_response_iss_parameter_supported":true)";
    if (s256) as += R"(,"code_challenge_methods_supported":["S256"])";
    if (dcr) as += R"(,"registration_endpoint":"https://auth.example.com/register")";
    if (cimd) as += R"(,"client_id_metadata_document_supported":true)";
    docs["https://auth.example.com/.well-known/oauth-authorization-server"] = {200, as + "}"};
  }

  login::step run(login& l) {
    auto s = l.start();
    for (int guard = 0; guard < 20; ++guard) {
      if (s.what == login::step::fetch) {
        if (s.http.method == "POST") {
          posts.push_back(s.http);
          const auto& a = s.http.url.ends_with("/register") ? registration : token;
          s = l.on_response(a.first, a.second);
        } else {
          auto it = docs.find(s.http.url);
          s = it == docs.end() ? l.on_response(404, "")
                               : l.on_response(it->second.first, it->second.second);
        }
      } else if (s.what == login::step::open_browser) {
        authorize_url = s.url;
        const auto q = parse_query(s.url.substr(s.url.find('?') + 1)).value();
        std::string state;
        for (const auto& [k, v] : q)
          if (k == "state") state = v;
        s = l.on_redirect("code=the-code&state=" + (browser_keeps_state ? state : "forged") +
                          "&iss=" + form_encode(issuer) + redirect_extra);
      } else {
        return s;
      }
    }
    return s;
  }
};

std::map<std::string, std::string> fields(std::string_view form) {
  std::map<std::string, std::string> out;
  const auto parsed = parse_query(form);  // (a loop over *parse_query(…) would dangle)
  for (const auto& [k, v] : parsed.value()) out[k] = v;
  return out;
}

login_config config() {
  login_config c;
  c.server_url = server_url;
  c.redirect_uri = "http://127.0.0.1:40000/callback";
  c.now_unix = 1000;
  return c;
}
const login_secrets secrets{"state-123", "verifier-abc", "challenge-xyz"};

TEST(oauth_login, dynamic_registration_then_the_code_grant_with_pkce) {
  world w;
  login l(config(), secrets);
  auto s = w.run(l);
  ASSERT_EQ(s.what, login::step::done) << s.error;
  ASSERT_EQ(w.posts.size(), 2u);
  // The registration: a native public client with our redirect.
  EXPECT_EQ(w.posts[0].url, "https://auth.example.com/register");
  const auto reg = boost::json::parse(w.posts[0].body).as_object();
  EXPECT_EQ(reg.at("redirect_uris"), boost::json::array{"http://127.0.0.1:40000/callback"});
  EXPECT_TRUE(l.registered_now());
  EXPECT_EQ(l.client().client_id, "dyn-1");
  EXPECT_EQ(l.client().issuer, issuer);  // bound to its authorization server
  // The authorization URL: PKCE S256, state, resource, the selected scope.
  const auto a = fields(w.authorize_url.substr(w.authorize_url.find('?') + 1));
  EXPECT_EQ(a.at("response_type"), "code");
  EXPECT_EQ(a.at("client_id"), "dyn-1");
  EXPECT_EQ(a.at("state"), "state-123");
  EXPECT_EQ(a.at("code_challenge"), "challenge-xyz");
  EXPECT_EQ(a.at("code_challenge_method"), "S256");
  EXPECT_EQ(a.at("resource"), server_url);
  EXPECT_EQ(a.at("scope"), "files:read offline_access");
  // The token request: the code, the verifier, the same redirect and resource.
  EXPECT_EQ(w.posts[1].url, "https://auth.example.com/token");
  EXPECT_EQ(w.posts[1].content_type, "application/x-www-form-urlencoded");
  EXPECT_EQ(w.posts[1].authorization, "");  // a public client
  const auto t = fields(w.posts[1].body);
  EXPECT_EQ(t.at("grant_type"), "authorization_code");
  EXPECT_EQ(t.at("code"), "the-code");
  EXPECT_EQ(t.at("code_verifier"), "verifier-abc");
  EXPECT_EQ(t.at("redirect_uri"), "http://127.0.0.1:40000/callback");
  EXPECT_EQ(t.at("resource"), server_url);
  EXPECT_EQ(t.at("client_id"), "dyn-1");
  EXPECT_EQ(l.tokens().access_token, "at-1");
  EXPECT_EQ(l.tokens().refresh_token, std::optional<std::string>("rt-1"));
}

TEST(oauth_login, a_kept_registration_is_reused_and_a_challenge_scope_wins) {
  world w;
  auto c = config();
  c.registered = client_credentials{issuer, "kept-1", "", 0, "none"};
  c.bearer = bearer_challenge(R"(Bearer scope="files:write")");
  login l(c, secrets);
  ASSERT_EQ(w.run(l).what, login::step::done);
  ASSERT_EQ(w.posts.size(), 1u);  // no registration: only the token request
  EXPECT_FALSE(l.registered_now());
  EXPECT_EQ(l.client().client_id, "kept-1");
  EXPECT_EQ(l.scope(), "files:write offline_access");

  world other;  // a registration of another authorization server is not offered here
  auto c2 = config();
  c2.registered = client_credentials{"https://other.example.com", "kept-1", "", 0, "none"};
  login l2(c2, secrets);
  ASSERT_EQ(other.run(l2).what, login::step::done);
  EXPECT_TRUE(l2.registered_now());
  EXPECT_EQ(l2.client().client_id, "dyn-1");
}

TEST(oauth_login, pre_registered_with_a_secret_and_metadata_documents) {
  world w;
  auto c = config();
  c.client_id = "pre-1";
  c.client_secret = "pre-secret";
  login l(c, secrets);
  ASSERT_EQ(w.run(l).what, login::step::done);
  ASSERT_EQ(w.posts.size(), 1u);
  EXPECT_EQ(w.posts[0].authorization.rfind("Basic ", 0), 0u);  // client_secret_basic
  EXPECT_EQ(fields(w.posts[0].body).count("client_secret"), 0u);

  world cimd(true, true, true);
  auto cc = config();
  cc.client_metadata_url = "https://mcpmux.example/client.json";
  login lc(cc, secrets);
  ASSERT_EQ(cimd.run(lc).what, login::step::done);
  EXPECT_EQ(lc.client().client_id, "https://mcpmux.example/client.json");
  ASSERT_EQ(cimd.posts.size(), 1u);  // no registration
}

TEST(oauth_login, the_machine_client_uses_client_credentials) {
  world w;
  auto c = config();
  c.machine = true;
  c.client_id = "svc";
  c.client_secret = "svc-secret";
  login l(c, secrets);
  ASSERT_EQ(w.run(l).what, login::step::done);
  EXPECT_EQ(w.authorize_url, "");  // no browser
  ASSERT_EQ(w.posts.size(), 1u);
  EXPECT_EQ(fields(w.posts[0].body).at("grant_type"), "client_credentials");

  world nosecret;
  auto c2 = config();
  c2.machine = true;
  c2.client_id = "svc";
  login l2(c2, secrets);
  EXPECT_EQ(nosecret.run(l2).what, login::step::fail);
}

TEST(oauth_login, refusals_end_the_login_with_a_reason_and_no_secret) {
  world no_s256(false);
  login a(config(), secrets);
  auto s = no_s256.run(a);
  EXPECT_EQ(s.what, login::step::fail);
  EXPECT_NE(s.error.find("S256"), std::string::npos);

  world no_way(true, false, false);
  login b(config(), secrets);
  s = no_way.run(b);
  EXPECT_EQ(s.what, login::step::fail);
  EXPECT_NE(s.error.find("client_id"), std::string::npos);

  world forged;
  forged.browser_keeps_state = false;
  login c(config(), secrets);
  s = forged.run(c);
  EXPECT_EQ(s.what, login::step::fail);
  EXPECT_EQ(s.error.find("state-123"), std::string::npos);  // the expected state is not told
  EXPECT_EQ(forged.posts.size(), 1u);                       // registration only: no token request

  world denied;
  denied.token = {400, R"({"error":"invalid_grant","error_description":"code expired"})"};
  login d(config(), secrets);
  s = denied.run(d);
  EXPECT_EQ(s.what, login::step::fail);
  EXPECT_NE(s.error.find("invalid_grant"), std::string::npos);
  EXPECT_EQ(s.error.find("verifier-abc"), std::string::npos);

  world refused_registration;
  refused_registration.registration = {400, R"({"error":"invalid_redirect_uri"})"};
  login e(config(), secrets);
  s = refused_registration.run(e);
  EXPECT_EQ(s.what, login::step::fail);
  EXPECT_NE(s.error.find("invalid_redirect_uri"), std::string::npos);

  // Steps out of order are refused, not acted on.
  login f(config(), secrets);
  EXPECT_EQ(f.on_redirect("code=x&state=state-123").what, login::step::fail);
}

}  // namespace
}  // namespace mcpmux::oauth
