// The HTTP endpoint's bearer token when the config names no token file: a file of its own in
// the daemon's runtime directory (next to the socket), made on first use with 256 random bits,
// mode 0600, and kept across restarts while it stays private.
#pragma once

#include <string>

#include "protocol/result.hpp"

namespace mcpmux {

/// Makes sure `path` holds a usable token (a private regular file of the user's, 64 hex
/// digits), writing a new one otherwise; fails saying why it cannot.
result<> ensure_http_token(const std::string& path);

}  // namespace mcpmux
