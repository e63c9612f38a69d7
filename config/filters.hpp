// Which of a server's tools, prompts and resources are shown: `tools = ["*", "!delete_*"]`.
// Patterns are globs (`*` any run of characters, `?` one character, nothing else special); a
// leading `!` hides what it matches. The last pattern that matches decides; an item no pattern
// matches is hidden. An empty list shows everything (the default). In a tools list a pattern
// may also be an annotation word (`@read-only`, `!@destructive`): it matches the tools whose
// annotations say so, with the spec's defaults for a hint a tool leaves out.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {

/// What a tool's annotations say, with the spec's defaults: a tool that says nothing is not
/// read-only, may be destructive, is not idempotent and reaches an open world.
struct tool_hints {
  bool read_only = false;   ///< readOnlyHint true
  bool destructive = true;  ///< readOnlyHint not true and destructiveHint not false
  bool idempotent = false;  ///< idempotentHint true
  bool open_world = true;   ///< openWorldHint not false
};

/// The annotation words a tools filter takes, as written.
inline constexpr std::array<std::string_view, 4> annotation_words = {"@read-only", "@destructive",
                                                                     "@idempotent", "@open-world"};

/// Which hint an annotation word (without its `@`) selects; none for a word not known.
std::optional<bool tool_hints::*> annotation_filter(std::string_view word);

/// True when `text` matches the glob `pattern` as a whole.
bool glob_match(std::string_view pattern, std::string_view text);

/// Whether `rules` show `name` (see above). `hints`: a tool's, for the annotation words (null:
/// not a tool, and no annotation word matches).
bool shown_by(const std::vector<std::string>& rules, std::string_view name,
              const tool_hints* hints = nullptr);

/// The word of a `confirm` list that stands for the spec's destructive tools (readOnlyHint not
/// true and destructiveHint not false: a tool without annotations counts).
inline constexpr std::string_view confirm_destructive = "destructive";

/// What is wrong with an entry of a `confirm` list (the word `destructive`, or a glob over
/// exposed tool names: `A-Z a-z 0-9 _ -` and `* ?`); nullopt when it is good.
std::optional<std::string> confirm_entry_problem(std::string_view entry);

}  // namespace mcpmux
