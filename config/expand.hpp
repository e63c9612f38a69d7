// mcpmux's ${VAR} language in config strings: ${NAME}, ${NAME:-default} (nested), $$ for `$`,
// and ${secret:NAME} (config/secrets.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace mcpmux {

/// The value of `${secret:NAME}`, or nothing with `error` saying why.
using secret_resolver =
    std::function<std::optional<std::string>(std::string_view name, std::string& error)>;

/// Expands `in` into `out`. Variables that are unset (and have no default) are collected in
/// `undefined` and expand to nothing; the first error (unterminated `${`, a bad name, defaults
/// nested too deeply, a secret that cannot be resolved or where `secrets` is null) goes to
/// `*error` (if given) and the offending text is kept literally. A resolved secret is
/// registered for redaction.
void expand_into(std::string_view in, env_lookup lookup, std::string& out,
                 std::vector<std::string>& undefined, std::string* error, int depth_left = 8,
                 const secret_resolver* secrets = nullptr);

/// `s` with every `$` doubled, so that expansion gives `s` back.
std::string escape_dollars(std::string_view s);

}  // namespace mcpmux
