// The grant half of the OAuth client (protocol/oauth_grant): encodings, PKCE, the
// authorization URL, token requests and responses, scope selection, and the redirect's checks.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/oauth_grant.hpp"

namespace mcpmux::oauth {
namespace {

// --- Encodings ---

TEST(OauthEncoding, Base64UrlMatchesRfc4648VectorsWithoutPadding) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("foob"), "Zm9vYg");
  EXPECT_EQ(base64url("fooba"), "Zm9vYmE");
  EXPECT_EQ(base64url("foobar"), "Zm9vYmFy");
  // The two characters that differ from standard Base64 ("+/8=").
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");
}

TEST(OauthEncoding, FormEncodeFollowsRfc6749AppendixB) {
  // Appendix B's own example.
  EXPECT_EQ(form_encode(" %&+\xC2\xA3\xE2\x82\xAC"), "+%25%26%2B%C2%A3%E2%82%AC");
  EXPECT_EQ(form_encode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(form_encode("a=b&c d"), "a%3Db%26c+d");
  EXPECT_EQ(form_encode("https://mcp.example.com/mcp?x=1"),
            "https%3A%2F%2Fmcp.example.com%2Fmcp%3Fx%3D1");
  EXPECT_EQ(form_encode("*!'()"), "%2A%21%27%28%29");
  EXPECT_EQ(form_encode(std::string("\0\n", 2)), "%00%0A");
  EXPECT_EQ(form_encode("Grüße"), "Gr%C3%BC%C3%9Fe");
}

TEST(OauthEncoding, FormBodyJoinsEncodedPairs) {
  EXPECT_EQ(form_body({}), "");
  EXPECT_EQ(form_body({{"a b", "c&d"}, {"e", ""}, {"=", "x=y"}}), "a+b=c%26d&e=&%3D=x%3Dy");
}

TEST(OauthEncoding, ParseQueryDecodes) {
  const auto q = parse_query("?code=a%2Bb+c&state=%C3%A9t%C3%A9&empty=&bare&&x=1=2");
  ASSERT_TRUE(q.has_value());
  const form_fields want{
      {"code", "a+b c"}, {"state", "\xC3\xA9t\xC3\xA9"}, {"empty", ""}, {"bare", ""}, {"x", "1=2"}};
  EXPECT_EQ(*q, want);
  EXPECT_EQ(parse_query(""), form_fields{});
  EXPECT_EQ(parse_query("?"), form_fields{});
  // Lower-case hex is accepted; names are decoded too.
  EXPECT_EQ(parse_query("a%3db=%2f"), (form_fields{{"a=b", "/"}}));
}

TEST(OauthEncoding, ParseQueryRoundTripsFormBody) {
  const form_fields fields{{"iss", "https://as.example.com/tenant"}, {"v", " %&+\xE2\x82\xAC~"}};
  EXPECT_EQ(parse_query(form_body(fields)), fields);
}

TEST(OauthEncoding, ParseQueryRefusesMalformedEscapes) {
  EXPECT_FALSE(parse_query("code=%").has_value());
  EXPECT_FALSE(parse_query("code=%4").has_value());
  EXPECT_FALSE(parse_query("code=%zz").has_value());
  EXPECT_FALSE(parse_query("code=ok&state=%G1").has_value());
  EXPECT_FALSE(parse_query("%=x").has_value());
}

// --- PKCE ---

// RFC 7636 Appendix B.
constexpr std::string_view rfc7636_verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
constexpr std::array<unsigned char, 32> rfc7636_random = {
    116, 24,  223, 180, 151, 153, 224, 37,  79, 250, 96, 125, 216, 173, 187, 186,
    22,  212, 37,  77,  105, 214, 191, 240, 91, 88,  5,  88,  83,  132, 141, 121};
// SHA-256 of the verifier's ASCII (openssl dgst -sha256 -binary).
constexpr std::array<unsigned char, 32> rfc7636_sha256 = {
    0x13, 0xd3, 0x1e, 0x96, 0x1a, 0x1a, 0xd8, 0xec, 0x2f, 0x16, 0xb1, 0x0c, 0x4c, 0x98, 0x2e, 0x08,
    0x76, 0xa8, 0x78, 0xad, 0x6d, 0xf1, 0x44, 0x56, 0x6e, 0xe1, 0x89, 0x4a, 0xcb, 0x70, 0xf9, 0xc3};

TEST(OauthPkce, Rfc7636AppendixBVerifier) {
  EXPECT_EQ(pkce_verifier(rfc7636_random), rfc7636_verifier);
}

TEST(OauthPkce, Rfc7636AppendixBChallenge) {
  EXPECT_EQ(pkce_challenge_s256(rfc7636_sha256), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

TEST(OauthPkce, VerifierLengthStaysWithin43To128UnreservedCharacters) {
  std::vector<unsigned char> random(96, 0xff);
  const auto longest = pkce_verifier(random);
  EXPECT_EQ(longest.size(), 128u);
  for (char c : longest)
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << c;
  random.resize(32);
  EXPECT_EQ(pkce_verifier(random).size(), 43u);
  random.resize(31);
  EXPECT_THROW(pkce_verifier(random), std::invalid_argument);
  random.resize(97);
  EXPECT_THROW(pkce_verifier(random), std::invalid_argument);
}

// --- The authorization request ---

authorization_request sample_request() {
  return authorization_request{.client_id = "https://mcpmux.example/client.json",
                               .redirect_uri = "http://127.0.0.1:8123/callback",
                               .state = "st4te",
                               .code_challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                               .scope = "files:read files:write",
                               .resource = "https://mcp.example.com/mcp"};
}

TEST(OauthAuthorizationUrl, CarriesEveryParameterEncoded) {
  EXPECT_EQ(authorization_url("https://as.example.com/authorize", sample_request()),
            "https://as.example.com/authorize?response_type=code"
            "&client_id=https%3A%2F%2Fmcpmux.example%2Fclient.json"
            "&redirect_uri=http%3A%2F%2F127.0.0.1%3A8123%2Fcallback"
            "&scope=files%3Aread+files%3Awrite&state=st4te"
            "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
            "&code_challenge_method=S256&resource=https%3A%2F%2Fmcp.example.com%2Fmcp");
}

TEST(OauthAuthorizationUrl, OmitsAnEmptyScope) {
  auto r = sample_request();
  r.scope.clear();
  const auto url = authorization_url("https://as.example.com/authorize", r);
  EXPECT_EQ(url.find("scope="), std::string::npos) << url;
  const auto q = parse_query(url.substr(url.find('?')));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->size(), 7u);
}

TEST(OauthAuthorizationUrl, KeepsAnExistingQuery) {
  const auto url =
      authorization_url("https://as.example.com/authorize?tenant=a%20b", sample_request());
  EXPECT_TRUE(url.starts_with("https://as.example.com/authorize?tenant=a%20b&response_type=code&"))
      << url;
  EXPECT_TRUE(authorization_url("https://as.example.com/authorize?", sample_request())
                  .starts_with("https://as.example.com/authorize?response_type=code&"));
  EXPECT_TRUE(authorization_url("https://as.example.com/authorize?x=1&", sample_request())
                  .starts_with("https://as.example.com/authorize?x=1&response_type=code&"));
}

TEST(OauthAuthorizationUrl, DropsAFragmentSoParametersStayInTheQuery) {
  const auto url = authorization_url("https://as.example.com/authorize#frag", sample_request());
  EXPECT_TRUE(url.starts_with("https://as.example.com/authorize?response_type=code&")) << url;
  EXPECT_EQ(url.find('#'), std::string::npos);
}

// --- Token requests ---

const client_identity public_client{"client-1", "", client_auth::none};

TEST(OauthTokenRequest, AuthorizationCodeGrantBody) {
  const auto req = token_request(
      authorization_code_grant{"c0de/+=", "http://127.0.0.1:8123/callback",
                               std::string(rfc7636_verifier), "https://mcp.example.com/mcp"},
      public_client);
  EXPECT_EQ(req.body,
            "grant_type=authorization_code&code=c0de%2F%2B%3D"
            "&redirect_uri=http%3A%2F%2F127.0.0.1%3A8123%2Fcallback"
            "&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
            "&resource=https%3A%2F%2Fmcp.example.com%2Fmcp&client_id=client-1");
  EXPECT_EQ(req.authorization, "");
}

TEST(OauthTokenRequest, RefreshTokenGrantBodyWithAndWithoutScope) {
  EXPECT_EQ(
      token_request(refresh_token_grant{"r t", "", "https://mcp.example.com"}, public_client).body,
      "grant_type=refresh_token&refresh_token=r+t"
      "&resource=https%3A%2F%2Fmcp.example.com&client_id=client-1");
  EXPECT_EQ(token_request(refresh_token_grant{"rt", "a b", ""}, public_client).body,
            "grant_type=refresh_token&refresh_token=rt&scope=a+b&client_id=client-1");
}

TEST(OauthTokenRequest, ClientCredentialsGrantBody) {
  const client_identity machine{"m", "s", client_auth::client_secret_post};
  EXPECT_EQ(
      token_request(client_credentials_grant{"mcp:tools", "https://mcp.example.com"}, machine).body,
      "grant_type=client_credentials&scope=mcp%3Atools&resource=https%3A%2F%2Fmcp.example.com"
      "&client_id=m&client_secret=s");
  EXPECT_EQ(token_request(client_credentials_grant{}, machine).body,
            "grant_type=client_credentials&client_id=m&client_secret=s");
}

TEST(OauthTokenRequest, ClientSecretBasicMatchesRfc6749Example) {
  // RFC 6749 §2.3.1.
  const auto req =
      token_request(refresh_token_grant{"rt", "", ""},
                    {"s6BhdRkqt3", "7Fjfp0ZBr1KtDRbnfVdmIw", client_auth::client_secret_basic});
  EXPECT_EQ(req.authorization, "Basic czZCaGRSa3F0Mzo3RmpmcDBaQnIxS3REUmJuZlZkbUl3");
  // One authentication method per request: the body names no client.
  EXPECT_EQ(req.body, "grant_type=refresh_token&refresh_token=rt");
}

TEST(OauthRevocationRequest, TokenHintAndTheClientAsAtTheTokenEndpoint) {
  // RFC 7009 §2.1: token, token_type_hint, and the client's authentication.
  EXPECT_EQ(revocation_request("rt-1", "refresh_token", {"c", "", client_auth::none}).body,
            "token=rt-1&token_type_hint=refresh_token&client_id=c");
  const auto basic = revocation_request(
      "a b", "", {"s6BhdRkqt3", "7Fjfp0ZBr1KtDRbnfVdmIw", client_auth::client_secret_basic});
  EXPECT_EQ(basic.body, "token=a+b");
  EXPECT_EQ(basic.authorization, "Basic czZCaGRSa3F0Mzo3RmpmcDBaQnIxS3REUmJuZlZkbUl3");
  EXPECT_EQ(
      revocation_request("t", "access_token", {"c", "s", client_auth::client_secret_post}).body,
      "token=t&token_type_hint=access_token&client_id=c&client_secret=s");
}

TEST(OauthTokenRequest, ClientSecretBasicFormEncodesBeforeJoining) {
  // "a:b" / "p w" → "a%3Ab:p+w", so the ':' in the id cannot move the split.
  const auto req =
      token_request(client_credentials_grant{}, {"a:b", "p w", client_auth::client_secret_basic});
  EXPECT_EQ(req.authorization, "Basic YSUzQWI6cCt3");
}

TEST(OauthTokenRequest, ClientSecretPostAndNone) {
  const authorization_code_grant g{"c", "http://localhost/cb", "v", ""};
  EXPECT_EQ(token_request(g, {"id 1", "s&c", client_auth::client_secret_post}).body,
            "grant_type=authorization_code&code=c&redirect_uri=http%3A%2F%2Flocalhost%2Fcb"
            "&code_verifier=v&client_id=id+1&client_secret=s%26c");
  // With none a configured secret is not sent.
  const auto req = token_request(g, {"id", "secret", client_auth::none});
  EXPECT_EQ(req.body.find("secret"), std::string::npos) << req.body;
  EXPECT_TRUE(req.body.ends_with("&client_id=id"));
  EXPECT_EQ(req.authorization, "");
}

TEST(OauthTokenRequest, ClientAuthNames) {
  EXPECT_EQ(client_auth_named("none"), client_auth::none);
  EXPECT_EQ(client_auth_named("client_secret_basic"), client_auth::client_secret_basic);
  EXPECT_EQ(client_auth_named("client_secret_post"), client_auth::client_secret_post);
  EXPECT_FALSE(client_auth_named("private_key_jwt").has_value());
  EXPECT_FALSE(client_auth_named("").has_value());
}

// --- Token responses ---

const oauth_error& error_of(const std::variant<token_set, oauth_error>& r) {
  static const oauth_error none{};
  EXPECT_TRUE(std::holds_alternative<oauth_error>(r));
  return std::holds_alternative<oauth_error>(r) ? std::get<oauth_error>(r) : none;
}

TEST(OauthTokenResponse, ReadsAFullTokenSet) {
  const auto r = read_token_response(200, R"({"access_token":"at-123","token_type":"bearer",
    "expires_in":3600,"refresh_token":"rt-456","scope":"mcp:basic offline_access","x":1})");
  ASSERT_TRUE(std::holds_alternative<token_set>(r));
  const auto& t = std::get<token_set>(r);
  EXPECT_EQ(t.access_token, "at-123");
  EXPECT_EQ(t.token_type, "Bearer");
  EXPECT_EQ(t.expires_in, 3600u);
  EXPECT_EQ(t.refresh_token, "rt-456");
  EXPECT_EQ(t.scope, "mcp:basic offline_access");
}

TEST(OauthTokenResponse, OptionalMembersMayBeAbsentOrNull) {
  const auto r = read_token_response(
      200, R"({"access_token":"at","token_type":"Bearer","refresh_token":null})");
  ASSERT_TRUE(std::holds_alternative<token_set>(r));
  const auto& t = std::get<token_set>(r);
  EXPECT_FALSE(t.expires_in.has_value());
  EXPECT_FALSE(t.refresh_token.has_value());
  EXPECT_FALSE(t.scope.has_value());
}

TEST(OauthTokenResponse, ExpiresInAsAStringOfDigits) {
  const auto r = read_token_response(200, R"({"access_token":"at","token_type":"BEARER",
    "expires_in":"7200"})");
  ASSERT_TRUE(std::holds_alternative<token_set>(r));
  EXPECT_EQ(std::get<token_set>(r).expires_in, 7200u);
  for (const auto* bad : {R"("-1")", "-5", "1.5", R"("1h")", "true", "{}"}) {
    const auto e = error_of(read_token_response(
        200,
        std::string(R"({"access_token":"at","token_type":"Bearer","expires_in":)") + bad + "}"));
    EXPECT_EQ(e.error, local_error::invalid_response) << bad;
    EXPECT_NE(e.error_description.find("expires_in"), std::string::npos) << bad;
  }
}

TEST(OauthTokenResponse, MissingAccessTokenIsRefused) {
  const auto e = error_of(
      read_token_response(200, R"({"token_type":"Bearer","refresh_token":"secret-rt-1"})"));
  EXPECT_EQ(e.error, local_error::invalid_response);
  EXPECT_FALSE(e.from_server);
  EXPECT_EQ(e.http_status, 200u);
  EXPECT_NE(e.error_description.find("no access_token"), std::string::npos);
  EXPECT_EQ(e.error_description.find("secret-rt-1"), std::string::npos);
  EXPECT_EQ(
      error_of(read_token_response(200, R"({"access_token":"","token_type":"Bearer"})")).error,
      local_error::invalid_response);
  EXPECT_EQ(error_of(read_token_response(200, R"({"access_token":5,"token_type":"Bearer"})")).error,
            local_error::invalid_response);
}

TEST(OauthTokenResponse, MacTokenTypeIsRefusedWithoutLeakingTheToken) {
  const auto e = error_of(read_token_response(
      200, R"({"access_token":"secret-at-9","token_type":"mac","refresh_token":"secret-rt-9"})"));
  EXPECT_EQ(e.error, local_error::invalid_response);
  EXPECT_NE(e.error_description.find("'mac'"), std::string::npos) << e.error_description;
  EXPECT_EQ(e.error_description.find("secret-"), std::string::npos) << e.error_description;
  EXPECT_EQ(error_of(read_token_response(200, R"({"access_token":"at"})")).error,
            local_error::invalid_response);
  EXPECT_EQ(
      error_of(read_token_response(200, R"({"access_token":"at","token_type":"DPoP"})")).error,
      local_error::invalid_response);
}

TEST(OauthTokenResponse, MistypedRefreshTokenOrScopeIsRefused) {
  EXPECT_EQ(error_of(read_token_response(
                         200, R"({"access_token":"at","token_type":"Bearer","refresh_token":1})"))
                .error,
            local_error::invalid_response);
  EXPECT_EQ(error_of(read_token_response(
                         200, R"({"access_token":"at","token_type":"Bearer","scope":["a"]})"))
                .error,
            local_error::invalid_response);
}

TEST(OauthTokenResponse, ReadsAnRfc6749ErrorBody) {
  const auto e = error_of(read_token_response(400, R"({"error":"invalid_grant",
    "error_description":"The code\nhas expired","error_uri":"https://as.example/errors/1"})"));
  EXPECT_EQ(e.error, "invalid_grant");
  EXPECT_EQ(e.error_description, "The code has expired");  // the newline is not kept
  EXPECT_EQ(e.error_uri, "https://as.example/errors/1");
  EXPECT_EQ(e.http_status, 400u);
  EXPECT_TRUE(e.from_server);

  const auto bare = error_of(read_token_response(401, R"({"error":"invalid_client"})"));
  EXPECT_EQ(bare.error, "invalid_client");
  EXPECT_EQ(bare.error_description, "");
  EXPECT_EQ(bare.http_status, 401u);
}

TEST(OauthTokenResponse, AnErrorBodyWith200IsStillAnError) {
  const auto e = error_of(
      read_token_response(200, R"({"error":"authorization_pending","error_description":"wait"})"));
  EXPECT_EQ(e.error, "authorization_pending");
  EXPECT_TRUE(e.from_server);
}

TEST(OauthTokenResponse, NonJsonBodyIsInvalidResponse) {
  const auto e = error_of(read_token_response(200, "access_token=secret-at&token_type=bearer"));
  EXPECT_EQ(e.error, local_error::invalid_response);
  EXPECT_NE(e.error_description.find("not JSON"), std::string::npos) << e.error_description;
  EXPECT_EQ(e.error_description.find("secret-at"), std::string::npos) << e.error_description;

  EXPECT_NE(error_of(read_token_response(200, "")).error_description.find("empty"),
            std::string::npos);
  EXPECT_NE(error_of(read_token_response(200, R"(["access_token"])"))
                .error_description.find("not an object"),
            std::string::npos);
}

TEST(OauthTokenResponse, Http500WithHtml) {
  const auto e = error_of(
      read_token_response(500, "<html><body><h1>Internal Server Error</h1></body></html>"));
  EXPECT_EQ(e.error, local_error::invalid_response);
  EXPECT_EQ(e.http_status, 500u);
  EXPECT_FALSE(e.from_server);
  EXPECT_NE(e.error_description.find("HTTP 500"), std::string::npos) << e.error_description;
  EXPECT_NE(e.error_description.find("HTML"), std::string::npos) << e.error_description;
  EXPECT_EQ(e.error_description.find("Internal"), std::string::npos) << e.error_description;
}

TEST(OauthTokenResponse, ErrorStatusWithJsonButNoErrorCode) {
  const auto e = error_of(read_token_response(503, R"({"message":"down"})"));
  EXPECT_EQ(e.error, local_error::invalid_response);
  EXPECT_NE(e.error_description.find("HTTP 503"), std::string::npos);
  // Tokens in a non-2xx answer are not taken.
  EXPECT_EQ(
      error_of(read_token_response(302, R"({"access_token":"at","token_type":"Bearer"})")).error,
      local_error::invalid_response);
}

TEST(OauthTokenResponse, OversizedBodyIsRefused) {
  const std::string huge =
      R"({"access_token":")" + std::string(1 << 20, 'a') + R"(","token_type":"Bearer"})";
  const auto e = error_of(read_token_response(200, huge));
  EXPECT_EQ(e.error, local_error::invalid_response);
  EXPECT_NE(e.error_description.find("1 MiB"), std::string::npos);
}

// --- Scope selection ---

TEST(OauthScope, ChallengeScopeWins) {
  // auth/scope-from-www-authenticate.
  EXPECT_EQ(select_scope({.challenge = "mcp:basic",
                          .resource_scopes_supported = {"mcp:basic", "mcp:read", "mcp:write"}}),
            "mcp:basic");
  // No set relationship is assumed: a scope outside scopes_supported is still asked for.
  EXPECT_EQ(select_scope(
                {.challenge = "  files:read  other ", .resource_scopes_supported = {"mcp:basic"}}),
            "files:read other");
}

TEST(OauthScope, ResourceScopesSupportedWhenTheChallengeHasNone) {
  // auth/scope-from-scopes-supported.
  EXPECT_EQ(select_scope({.resource_scopes_supported = {"mcp:basic", "mcp:read", "mcp:write"}}),
            "mcp:basic mcp:read mcp:write");
  EXPECT_EQ(select_scope({.challenge = " ", .resource_scopes_supported = {"a", "b", "a"}}), "a b");
}

TEST(OauthScope, NothingWhenNeitherSays) {
  // auth/scope-omitted-when-undefined.
  EXPECT_EQ(select_scope({}), "");
  EXPECT_EQ(select_scope({.server_scopes_supported = {"mcp:basic", "mcp:admin"}}), "");
}

TEST(OauthScope, OfflineAccessAddedWhenTheServerListsIt) {
  // auth/offline-access-scope: PRM {mcp:basic}, AS {mcp:basic, offline_access}.
  const scope_sources s{.resource_scopes_supported = {"mcp:basic"},
                        .server_scopes_supported = {"mcp:basic", "offline_access"}};
  EXPECT_EQ(select_scope(s), "mcp:basic offline_access");
  EXPECT_EQ(select_scope(s, offline_access::skip), "mcp:basic");
  // Added even when no other scope is requested.
  EXPECT_EQ(select_scope({.server_scopes_supported = {"offline_access"}}), "offline_access");
  // Not repeated when the challenge already names it.
  EXPECT_EQ(select_scope({.challenge = "offline_access mcp:basic",
                          .server_scopes_supported = {"offline_access"}}),
            "offline_access mcp:basic");
}

TEST(OauthScope, OfflineAccessNeverRequestedWhenTheServerDoesNotListIt) {
  // auth/offline-access-not-supported: AS {mcp:basic, mcp:read}.
  EXPECT_EQ(select_scope({.resource_scopes_supported = {"mcp:basic", "mcp:read"},
                          .server_scopes_supported = {"mcp:basic", "mcp:read"}}),
            "mcp:basic mcp:read");
  // Even when a resource (which should not) lists it.
  EXPECT_EQ(select_scope({.challenge = "mcp:basic offline_access",
                          .server_scopes_supported = {"mcp:basic"}}),
            "mcp:basic");
  EXPECT_EQ(select_scope({.resource_scopes_supported = {"offline_access"}}), "");
}

TEST(OauthScope, CoversWhenNothingNewIsWanted) {
  EXPECT_TRUE(scope_covers("mcp:basic mcp:write", "mcp:write"));
  EXPECT_TRUE(scope_covers("a  b", " b a "));
  EXPECT_TRUE(scope_covers("a", ""));
  EXPECT_FALSE(scope_covers("mcp:basic", "mcp:basic mcp:admin"));
  EXPECT_FALSE(scope_covers("", "a"));
}

TEST(OauthScope, StepUpIsTheUnion) {
  // auth/scope-step-up: first mcp:basic, then a 403 challenging mcp:write.
  EXPECT_EQ(step_up_scope("mcp:basic", "mcp:write"), "mcp:basic mcp:write");
  EXPECT_EQ(step_up_scope("a b offline_access", "b c"), "a b offline_access c");
  EXPECT_EQ(step_up_scope("", "x"), "x");
  EXPECT_EQ(step_up_scope("x  x", ""), "x");
}

// --- The redirect ---

constexpr std::string_view issuer = "http://localhost:3001";
constexpr std::string_view state = "st4te-Zz";

const oauth_error& refused(const std::variant<authorization_code, oauth_error>& r) {
  static const oauth_error none{};
  EXPECT_TRUE(std::holds_alternative<oauth_error>(r));
  return std::holds_alternative<oauth_error>(r) ? std::get<oauth_error>(r) : none;
}

std::string code_of(const std::variant<authorization_code, oauth_error>& r) {
  if (const auto* e = std::get_if<oauth_error>(&r)) {
    ADD_FAILURE() << e->error << ": " << e->error_description;
    return "";
  }
  return std::get<authorization_code>(r).code;
}

// The query as the conformance suite's authorization server builds it (URLSearchParams).
std::string redirect(std::string_view iss) {
  form_fields f{{"code", "test-auth-code"}, {"state", std::string(state)}};
  if (!iss.empty()) f.emplace_back("iss", std::string(iss));
  return form_body(f);
}

TEST(OauthRedirect, IssSupportedAndCorrect) {
  // auth/iss-supported.
  EXPECT_EQ(code_of(read_redirect(redirect(issuer), state, issuer, iss_support::advertised)),
            "test-auth-code");
  // The '?' of a whole query is accepted; the iss is compared after decoding.
  EXPECT_EQ(code_of(read_redirect("?code=c&state=st4te-Zz&iss=http%3A%2F%2Flocalhost%3A3001", state,
                                  issuer, iss_support::advertised)),
            "c");
}

TEST(OauthRedirect, IssNotAdvertisedAndAbsentProceeds) {
  // auth/iss-not-advertised.
  EXPECT_EQ(code_of(read_redirect(redirect(""), state, issuer, iss_support::not_advertised)),
            "test-auth-code");
}

TEST(OauthRedirect, IssAdvertisedButMissingIsRefused) {
  // auth/iss-supported-missing.
  const auto e = refused(read_redirect(redirect(""), state, issuer, iss_support::advertised));
  EXPECT_EQ(e.error, local_error::issuer_mismatch);
  EXPECT_FALSE(e.from_server);
  EXPECT_NE(e.error_description.find("no iss"), std::string::npos);
}

TEST(OauthRedirect, WrongIssuerIsRefused) {
  // auth/iss-wrong-issuer.
  const auto e = refused(
      read_redirect(redirect("https://evil.example.com"), state, issuer, iss_support::advertised));
  EXPECT_EQ(e.error, local_error::issuer_mismatch);
  EXPECT_NE(e.error_description.find("https://evil.example.com"), std::string::npos);
  EXPECT_EQ(e.error_description.find("test-auth-code"), std::string::npos);
}

TEST(OauthRedirect, UnadvertisedIssIsStillCompared) {
  // auth/iss-unexpected.
  EXPECT_EQ(refused(read_redirect(redirect("https://evil.example.com"), state, issuer,
                                  iss_support::not_advertised))
                .error,
            local_error::issuer_mismatch);
  EXPECT_EQ(code_of(read_redirect(redirect(issuer), state, issuer, iss_support::not_advertised)),
            "test-auth-code");
}

TEST(OauthRedirect, IssIsComparedWithoutNormalization) {
  // auth/iss-normalized sends the issuer with a trailing slash.
  const auto with_slash = std::string(issuer) + "/";
  EXPECT_EQ(
      refused(read_redirect(redirect(with_slash), state, issuer, iss_support::advertised)).error,
      local_error::issuer_mismatch);
  // Nor case folding, default-port elision or percent-encoding normalization (RFC 3986 §6.2.2f).
  const std::pair<std::string_view, std::string_view> same_after_normalizing[] = {
      {"HTTP://LOCALHOST:3001", "http://localhost:3001"},
      {"https://as.example.com:443", "https://as.example.com"},
      {"https://as.example.com/%7Euser", "https://as.example.com/~user"},
  };
  for (const auto& [sent, recorded] : same_after_normalizing)
    EXPECT_EQ(
        refused(read_redirect(redirect(sent), state, recorded, iss_support::advertised)).error,
        local_error::issuer_mismatch)
        << sent;
  // Decoding the form encoding itself is not normalization: %2F in the query is '/'.
  EXPECT_EQ(code_of(read_redirect("code=c&state=st4te-Zz&iss=https%3A%2F%2Fas.example.com%2Ft",
                                  state, "https://as.example.com/t", iss_support::advertised)),
            "c");
}

TEST(OauthRedirect, StateMustMatchExactly) {
  const auto missing = refused(read_redirect("code=c&iss=http%3A%2F%2Flocalhost%3A3001", state,
                                             issuer, iss_support::advertised));
  EXPECT_EQ(missing.error, local_error::state_mismatch);
  const auto other = refused(read_redirect(form_body({{"code", "c"}, {"state", "ST4TE-ZZ"}}), state,
                                           issuer, iss_support::not_advertised));
  EXPECT_EQ(other.error, local_error::state_mismatch);
  EXPECT_EQ(other.error_description.find("ST4TE"), std::string::npos);
  // An empty expected state matches nothing, not even an empty one.
  EXPECT_EQ(refused(read_redirect("code=c&state=", "", issuer, iss_support::not_advertised)).error,
            local_error::state_mismatch);
}

TEST(OauthRedirect, ErrorResponseBecomesAnOauthError) {
  const auto e = refused(read_redirect(form_body({{"error", "access_denied"},
                                                  {"error_description", "The user said no"},
                                                  {"error_uri", "https://as.example/e"},
                                                  {"state", std::string(state)},
                                                  {"iss", std::string(issuer)}}),
                                       state, issuer, iss_support::advertised));
  EXPECT_EQ(e.error, "access_denied");
  EXPECT_EQ(e.error_description, "The user said no");
  EXPECT_EQ(e.error_uri, "https://as.example/e");
  EXPECT_EQ(e.http_status, 0u);
  EXPECT_TRUE(e.from_server);
}

TEST(OauthRedirect, ErrorFromTheWrongIssuerOrStateIsNotShown) {
  const auto wrong_iss =
      refused(read_redirect(form_body({{"error", "access_denied"},
                                       {"error_description", "go to evil.example"},
                                       {"state", std::string(state)},
                                       {"iss", "https://evil.example.com"}}),
                            state, issuer, iss_support::not_advertised));
  EXPECT_EQ(wrong_iss.error, local_error::issuer_mismatch);
  EXPECT_EQ(wrong_iss.error_description.find("go to"), std::string::npos);

  const auto no_iss =
      refused(read_redirect(form_body({{"error", "access_denied"}, {"state", std::string(state)}}),
                            state, issuer, iss_support::advertised));
  EXPECT_EQ(no_iss.error, local_error::issuer_mismatch);

  const auto wrong_state =
      refused(read_redirect(form_body({{"error", "access_denied"}, {"state", "x"}}), state, issuer,
                            iss_support::not_advertised));
  EXPECT_EQ(wrong_state.error, local_error::state_mismatch);
  EXPECT_FALSE(wrong_state.from_server);
}

TEST(OauthRedirect, MalformedOrAmbiguousRedirectsAreRefused) {
  EXPECT_EQ(
      refused(read_redirect("code=c&state=%zz", state, issuer, iss_support::not_advertised)).error,
      local_error::invalid_redirect);
  // A repeated parameter: which one would a check have read?
  EXPECT_EQ(refused(read_redirect("code=a&code=b&state=st4te-Zz", state, issuer,
                                  iss_support::not_advertised))
                .error,
            local_error::invalid_redirect);
  EXPECT_EQ(refused(read_redirect("code=a&state=st4te-Zz&iss=http%3A%2F%2Flocalhost%3A3001"
                                  "&iss=https%3A%2F%2Fevil.example.com",
                                  state, issuer, iss_support::advertised))
                .error,
            local_error::invalid_redirect);
  EXPECT_EQ(
      refused(read_redirect("state=st4te-Zz", state, issuer, iss_support::not_advertised)).error,
      local_error::invalid_redirect);
  EXPECT_EQ(
      refused(read_redirect("code=&state=st4te-Zz", state, issuer, iss_support::not_advertised))
          .error,
      local_error::invalid_redirect);
  // Unknown parameters are ignored.
  EXPECT_EQ(code_of(read_redirect("code=c&state=st4te-Zz&session_state=x&session_state=y", state,
                                  issuer, iss_support::not_advertised)),
            "c");
}

}  // namespace
}  // namespace mcpmux::oauth
