#include "transports/oauth_crypto.hpp"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "transports/openssl_loader.hpp"

namespace mcpmux {

result<std::array<unsigned char, 32>> sha256(std::string_view data) {
  if (auto loaded = load_openssl(); !loaded) return std::move(loaded.error());
  std::array<unsigned char, 32> out{};
  ::SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data());
  return out;
}

result<oauth::login_secrets> make_login_secrets() {
  if (auto loaded = load_openssl(); !loaded) return std::move(loaded.error());
  std::array<unsigned char, 32> state{}, verifier{};
  if (::RAND_bytes(state.data(), static_cast<int>(state.size())) != 1 ||
      ::RAND_bytes(verifier.data(), static_cast<int>(verifier.size())) != 1)
    return failure("the random number generator failed");
  oauth::login_secrets s;
  s.state =
      oauth::base64url(std::string_view(reinterpret_cast<const char*>(state.data()), state.size()));
  s.code_verifier = oauth::pkce_verifier(verifier);
  const auto digest = sha256(s.code_verifier);
  if (!digest) return digest.error();
  s.code_challenge = oauth::pkce_challenge_s256(*digest);
  return s;
}

}  // namespace mcpmux
