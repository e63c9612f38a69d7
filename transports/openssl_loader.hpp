// OpenSSL, loaded on first use: the daemon maps libssl/libcrypto only when TLS is needed.
#pragma once

#include "protocol/result.hpp"

namespace mcpmux {

/// Loads libssl (and with it libcrypto) if not loaded yet, or fails saying why it cannot be
/// loaded (the same words each time: it is tried once); TLS must not be used then. Call it before
/// the first TLS object is created: the OpenSSL functions the program calls are stubs that resolve
/// on first call and abort when the library is missing.
result<> load_openssl();

}  // namespace mcpmux
