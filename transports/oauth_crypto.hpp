// The cryptography an OAuth login needs, from OpenSSL (loaded on first use): SHA-256 for the
// PKCE S256 challenge and a CSPRNG for the state and the verifier.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/oauth_login.hpp"

namespace mcpmux {

/// SHA-256 of `data`; nullopt and `*error` when OpenSSL cannot be loaded.
std::optional<std::array<unsigned char, 32>> sha256(std::string_view data, std::string* error);

/// Fresh secrets for one login: a 256-bit random state, a PKCE verifier of 256 random bits and
/// its S256 challenge. Nullopt and `*error` when OpenSSL cannot be loaded or has no entropy.
std::optional<oauth::login_secrets> make_login_secrets(std::string* error);

}  // namespace mcpmux
