// OAuth's cryptography from OpenSSL (transports/oauth_crypto): SHA-256, and the secrets of a
// login (state, PKCE verifier and its S256 challenge).
#include "transports/oauth_crypto.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace mcpmux {
namespace {

TEST(OauthCrypto, Sha256GivesTheRfc7636Challenge) {
  // RFC 7636 Appendix B: this verifier's S256 challenge.
  const auto d = sha256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(oauth::pkce_challenge_s256(*d), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

TEST(OauthCrypto, LoginSecretsAreFreshAndConsistent) {
  const auto a = make_login_secrets();
  const auto b = make_login_secrets();
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(a->state.size(), 43u);  // 256 bits, base64url
  EXPECT_EQ(a->code_verifier.size(), 43u);
  EXPECT_NE(a->state, b->state);
  EXPECT_NE(a->code_verifier, b->code_verifier);
  EXPECT_NE(a->state, a->code_verifier);
  const auto unreserved = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '~';
  };
  EXPECT_TRUE(std::all_of(a->code_verifier.begin(), a->code_verifier.end(), unreserved));
  const auto d = sha256(a->code_verifier);
  ASSERT_TRUE(d);
  EXPECT_EQ(a->code_challenge, oauth::pkce_challenge_s256(*d));
}

}  // namespace
}  // namespace mcpmux
