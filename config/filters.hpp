// Which of a server's tools, prompts and resources are shown: `tools = ["*", "!delete_*"]`.
// Patterns are globs (`*` any run of characters, `?` one character, nothing else special); a
// leading `!` hides what it matches. The last pattern that matches decides; an item no pattern
// matches is hidden. An empty list shows everything (the default).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {

/// True when `text` matches the glob `pattern` as a whole.
bool glob_match(std::string_view pattern, std::string_view text);

/// Whether `rules` show `name` (see above).
bool shown_by(const std::vector<std::string>& rules, std::string_view name);

}  // namespace mcpmux
