// The per-user secrets file behind `${secret:NAME}`: a JSON object of name → value in
// $XDG_CONFIG_HOME/mcpmux/secrets.json, mode 0600 (a file others can read is refused), written
// by `mcpmux secret set|rm`. Resolved values are registered for redaction
// (base/redact.hpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.hpp"

namespace mcpmux {

struct moved_secret;  // config/credentials.hpp

/// $MCPMUX_SECRETS_FILE, else $XDG_CONFIG_HOME/mcpmux/secrets.json (~/.config/...).
std::string secrets_path();

/// A secret's name: 1 to 128 characters of [A-Za-z0-9_.-].
bool is_secret_name(std::string_view name);

struct secrets_file {
  std::map<std::string, std::string> values;
  std::string error;  ///< why the file cannot be used ("" when it can; a missing file is empty)
};

/// Reads the secrets at `path`. A file that is not 0600-or-stricter or not the user's own is
/// refused (its contents are not read).
secrets_file read_secrets(const std::string& path);

/// Writes `values` to `path` (atomically, mode 0600), or fails saying why.
result<> write_secrets(const std::string& path, const std::map<std::string, std::string>& values);

/// Where keep_secrets kept the values, or why it could not.
struct kept_secrets {
  std::string where;        ///< "the Secret Service", or the secrets file's path
  std::string unavailable;  ///< why no Secret Service answered ("" when it did or is not wanted)
  std::string error;        ///< "" when every value is kept
};

/// Keeps each name → value where `${secret:NAME}` finds it: the Secret Service when one answers
/// (config/secret_service.hpp), else the secrets file, beside what it holds (a name kept before
/// is replaced).
kept_secrets keep_secrets(const std::map<std::string, std::string>& values);

/// keep_secrets of the credentials move_credentials took out of servers.
kept_secrets keep_moved_secrets(const std::vector<moved_secret>& moved);

}  // namespace mcpmux
