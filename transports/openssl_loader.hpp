// OpenSSL, loaded on first use: the daemon maps libssl/libcrypto only when TLS is needed.
#pragma once

#include <string>

namespace mcpmux {

/// Loads libssl (and with it libcrypto) if not loaded yet. False and `error` when it cannot be
/// loaded; TLS must not be used then. Call it before the first TLS object is created: the
/// OpenSSL functions the program calls are stubs that resolve on first call and abort when the
/// library is missing.
bool load_openssl(std::string* error);

}  // namespace mcpmux
