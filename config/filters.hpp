// Which of a server's tools, prompts and resources are shown: `tools = ["*", "!delete_*"]`.
// Patterns are globs (`*` any run of characters, `?` one character, nothing else special); a
// leading `!` hides what it matches. The last pattern that matches decides; an item no pattern
// matches is hidden. An empty list shows everything (the default).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {

/// True when `text` matches the glob `pattern` as a whole.
bool glob_match(std::string_view pattern, std::string_view text);

/// Whether `rules` show `name` (see above).
bool shown_by(const std::vector<std::string>& rules, std::string_view name);

/// The word of a `confirm` list that stands for the spec's destructive tools (readOnlyHint not
/// true and destructiveHint not false: a tool without annotations counts).
inline constexpr std::string_view confirm_destructive = "destructive";

/// What is wrong with an entry of a `confirm` list (the word `destructive`, or a glob over
/// exposed tool names: `A-Z a-z 0-9 _ -` and `* ?`); nullopt when it is good.
std::optional<std::string> confirm_entry_problem(std::string_view entry);

}  // namespace mcpmux
