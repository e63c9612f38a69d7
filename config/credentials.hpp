// Credentials written into a server's definition (a token in `env`, an `Authorization`
// header), taken out into the secret store as `${secret:NAME}` when a client's servers are
// imported or adopted, so that mcpmux's config holds no token in plain text. Pure: what moves
// and under which name; keeping the values is keep_secrets (config/secrets.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace mcpmux {

/// What importing does with credentials it finds.
enum class credentials {
  to_secret_store,  ///< moved into the secret store, the config names them `${secret:NAME}`
  keep_plaintext,   ///< copied as they are (`--keep-plaintext`)
};

/// One credential taken out of a server's definition.
struct moved_secret {
  std::string name;   ///< the secret's name: SERVER_KEY ("gh-work_GITHUB_PERSONAL_ACCESS_TOKEN")
  std::string value;  ///< what is kept (of `Authorization: Bearer X`, X); never printed
};

/// Whether an environment variable's or header's name says it holds a credential: ends in
/// TOKEN, _KEY, APIKEY or SECRET, holds PASSWORD or PASSWD (case and `-`/`_` aside), or is
/// Authorization / Proxy-Authorization.
bool names_credential(std::string_view key);

/// The secret's name for `key` of server `server`: both joined by `_`, characters outside
/// [A-Za-z0-9_.-] as `_`, at most 128 characters.
std::string credential_secret_name(std::string_view server, std::string_view key);

/// Replaces each credential in `s`'s env and headers that is written as plain text (no `$` in
/// it) by `${secret:NAME}`; of an `Authorization: SCHEME VALUE` header only VALUE moves.
/// Returns what was taken out, in the order of env, then headers.
std::vector<moved_secret> move_credentials(server_config& s);

}  // namespace mcpmux
