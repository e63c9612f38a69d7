// OAuth logins on disk: one file per server under $XDG_STATE_HOME/mcpmux/oauth/ (directory
// 0700, files 0600), holding the client registration and the tokens, bound to the issuer that
// issued them. A file that others could read is refused, not used: its secrets may have leaked
// and the person should know. Nothing here logs a secret; errors name files, never contents.
#pragma once

#include "protocol/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "protocol/oauth_client.hpp"
#include "protocol/oauth_grant.hpp"

namespace mcpmux {

/// One server's login as kept between runs.
struct oauth_record {
  std::string server;    ///< the [servers.NAME] it belongs to
  std::string resource;  ///< the server URL the tokens are for (RFC 8707 resource)
  std::string issuer;    ///< the authorization server that issued client and tokens
  std::optional<oauth::client_credentials> client;  ///< a dynamic registration, reused
  std::string grant;                ///< "authorization_code" or "client_credentials"
  std::string client_id;            ///< the client the tokens were issued to
  std::string auth_method;          ///< its token_endpoint_auth_method
  std::string token_endpoint;       ///< where refreshes go
  std::string revocation_endpoint;  ///< RFC 7009; "" when not offered
  std::string scope;                ///< the scope asked for ("" = none named)
  std::optional<oauth::token_set> tokens;
  std::int64_t expires_at = 0;    ///< the access token's expiry (Unix seconds; 0 = not said)
  std::int64_t refreshed_at = 0;  ///< the last refresh (Unix seconds; 0 = never)
};

/// $XDG_STATE_HOME/mcpmux/oauth
std::string oauth_dir();

/// Reads `server`'s record in `dir`: nothing when there is none; an error (for status and the
/// log) when the file is readable or writable by others, not owned by this user, or unreadable.
result<std::optional<oauth_record>> load_oauth_record(const std::string& dir,
                                                      const std::string& server);

/// Writes it atomically with mode 0600 (the directory made 0700).
result<> store_oauth_record(const std::string& dir, const oauth_record& record);

/// Deletes `server`'s record (logout); a success when it is gone (or was not there).
result<> remove_oauth_record(const std::string& dir, const std::string& server);

}  // namespace mcpmux
