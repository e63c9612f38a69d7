// The cryptography an OAuth login needs, from OpenSSL (loaded on first use): SHA-256 for the
// PKCE S256 challenge and a CSPRNG for the state and the verifier.
#pragma once

#include <array>
#include <string_view>

#include "protocol/oauth_login.hpp"
#include "protocol/result.hpp"

namespace mcpmux {

/// SHA-256 of `data`; fails when OpenSSL cannot be loaded.
result<std::array<unsigned char, 32>> sha256(std::string_view data);

/// Fresh secrets for one login: a 256-bit random state, a PKCE verifier of 256 random bits and
/// its S256 challenge. Fails when OpenSSL cannot be loaded or has no entropy.
result<oauth::login_secrets> make_login_secrets();

}  // namespace mcpmux
