// Client identity at an authorization server (protocol/oauth_client): the spec's order,
// the registration request and answer, the token endpoint authentication method, and the
// binding of credentials to their issuer.
#include "protocol/oauth_client.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace mcpmux::oauth {
namespace {

server_metadata server(bool cimd, std::string registration) {
  server_metadata m;
  m.issuer = "https://auth.example.com";
  m.token_endpoint = "https://auth.example.com/token";
  m.client_id_metadata_document_supported = cimd;
  m.registration_endpoint = std::move(registration);
  return m;
}

TEST(oauth_client, identity_in_the_spec_order) {
  const auto both = server(true, "https://auth.example.com/register");
  const std::string doc = "https://mcpmux.example/client.json";
  EXPECT_EQ(choose_identity(true, doc, both), identity::preregistered);
  EXPECT_EQ(choose_identity(false, doc, both), identity::metadata_document);
  EXPECT_EQ(choose_identity(false, "", both), identity::dynamic);  // no URL configured
  EXPECT_EQ(choose_identity(false, doc, server(false, "https://auth.example.com/register")),
            identity::dynamic);  // the server does not take metadata documents
  EXPECT_EQ(choose_identity(false, doc, server(false, "")), identity::none);
  EXPECT_EQ(to_string(identity::none), "none");
  // A metadata document URL must be https with a path.
  EXPECT_TRUE(valid_metadata_document_url(doc));
  EXPECT_FALSE(valid_metadata_document_url("http://mcpmux.example/client.json"));
  EXPECT_FALSE(valid_metadata_document_url("https://mcpmux.example/"));
  EXPECT_EQ(choose_identity(false, "https://mcpmux.example", both), identity::dynamic);
}

TEST(oauth_client, the_registration_request_is_a_native_public_client) {
  registration_params p;
  p.redirect_uris = {"http://127.0.0.1:49152/callback"};
  p.scope = "files:read";
  const auto body = boost::json::parse(registration_request(p)).as_object();
  EXPECT_EQ(body.at("client_name"), "mcpmux");
  EXPECT_EQ(body.at("redirect_uris"), boost::json::array{"http://127.0.0.1:49152/callback"});
  EXPECT_EQ(body.at("grant_types"), (boost::json::array{"authorization_code", "refresh_token"}));
  EXPECT_EQ(body.at("response_types"), boost::json::array{"code"});
  EXPECT_EQ(body.at("token_endpoint_auth_method"), "none");
  EXPECT_EQ(body.at("application_type"), "native");
  EXPECT_EQ(body.at("scope"), "files:read");

  registration_params machine;
  machine.client_credentials_grant = true;
  const auto m = boost::json::parse(registration_request(machine)).as_object();
  EXPECT_EQ(m.at("grant_types"), boost::json::array{"client_credentials"});
  EXPECT_FALSE(m.contains("redirect_uris"));
  EXPECT_FALSE(m.contains("scope"));
}

TEST(oauth_client, the_registration_answer_is_read_and_bound_to_its_issuer) {
  auto r = read_registration_response(
      201,
      R"({"client_id":"abc","client_secret":"s3cret","client_secret_expires_at":1900000000,
          "token_endpoint_auth_method":"client_secret_post"})",
      "https://auth.example.com");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& c = r.value();
  EXPECT_EQ(c.client_id, "abc");
  EXPECT_EQ(c.client_secret, "s3cret");
  EXPECT_EQ(c.secret_expires, 1900000000);
  EXPECT_EQ(c.issuer, "https://auth.example.com");
  EXPECT_EQ(c.auth_method, "client_secret_post");

  const auto refused = read_registration_response(
      400, R"({"error":"invalid_redirect_uri","error_description":"loopback only"})",
      "https://auth.example.com");
  ASSERT_TRUE(!refused.ok());
  EXPECT_NE(refused.error().message.find("invalid_redirect_uri"), std::string::npos);
  EXPECT_NE(refused.error().message.find("loopback only"), std::string::npos);
  EXPECT_TRUE(!(read_registration_response(201, R"({"client_secret":"x"})", "https://a")).ok());
  EXPECT_TRUE(!(read_registration_response(201, "<html>", "https://a")).ok());
  EXPECT_TRUE(!(read_registration_response(500, "<html>", "https://a")).ok());
}

TEST(oauth_client, the_token_endpoint_authentication_method) {
  auto s = server(false, "");
  client_credentials pub{"https://auth.example.com", "abc", "", 0, ""};
  EXPECT_EQ(auth_method(pub, s), "none");
  client_credentials secret{"https://auth.example.com", "abc", "s", 0, ""};
  EXPECT_EQ(auth_method(secret, s), "client_secret_basic");  // RFC 8414's default
  s.token_endpoint_auth_methods_supported = {"private_key_jwt", "client_secret_post"};
  EXPECT_EQ(auth_method(secret, s), "client_secret_post");
  s.token_endpoint_auth_methods_supported = {"private_key_jwt", "none"};
  EXPECT_EQ(auth_method(secret, s), "none");  // a secret handed out unasked is not needed
  s.token_endpoint_auth_methods_supported = {"private_key_jwt"};
  EXPECT_EQ(auth_method(secret, s), "");
  secret.auth_method = "client_secret_basic";  // what the registration agreed to wins
  EXPECT_EQ(auth_method(secret, s), "client_secret_basic");
}

TEST(oauth_client, credentials_belong_to_one_issuer_and_expire) {
  const auto s = server(false, "");
  client_credentials c{"https://auth.example.com", "abc", "s", 2000, "client_secret_basic"};
  EXPECT_TRUE(usable_with(c, s, 1000));
  EXPECT_FALSE(usable_with(c, s, 2000));  // the secret expired: register again
  c.secret_expires = 0;
  EXPECT_TRUE(usable_with(c, s, 1u << 30));
  c.issuer = "https://other.example.com";  // another authorization server's client
  EXPECT_FALSE(usable_with(c, s, 1000));
  client_credentials empty;
  EXPECT_FALSE(usable_with(empty, s, 1000));
}

}  // namespace
}  // namespace mcpmux::oauth
