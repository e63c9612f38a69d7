// mcpmux's ${VAR} language in config strings: ${NAME}, ${NAME:-default} (nested), $$ for `$`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace mcpmux {

/// Expands `in` into `out`. Variables that are unset (and have no default) are collected in
/// `undefined` and expand to nothing; the first error (unterminated `${`, a bad name, defaults
/// nested too deeply) goes to `*error` (if given) and the offending text is kept literally.
void expand_into(std::string_view in, env_lookup lookup, std::string& out,
                 std::vector<std::string>& undefined, std::string* error, int depth_left = 8);

/// `s` with every `$` doubled, so that expansion gives `s` back.
std::string escape_dollars(std::string_view s);

}  // namespace mcpmux
