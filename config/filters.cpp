#include "config/filters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace mcpmux {

bool glob_match(std::string_view p, std::string_view t) {
  // Iterative, with one backtrack point: linear for the patterns people write.
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

std::optional<bool tool_hints::*> annotation_filter(std::string_view word) {
  if (word == "read-only") return &tool_hints::read_only;
  if (word == "destructive") return &tool_hints::destructive;
  if (word == "idempotent") return &tool_hints::idempotent;
  if (word == "open-world") return &tool_hints::open_world;
  return std::nullopt;
}

namespace {

// One rule (without its `!`) against a name or, for `@word`, a tool's hints.
bool rule_matches(std::string_view rule, std::string_view name, const tool_hints* hints) {
  if (rule.empty() || rule.front() != '@') return glob_match(rule, name);
  const auto hint = annotation_filter(rule.substr(1));
  return hints && hint && hints->**hint;
}

}  // namespace

bool shown_by(const std::vector<std::string>& rules, std::string_view name,
              const tool_hints* hints) {
  if (rules.empty()) return true;
  bool shown = false;
  for (const auto& r : rules) {
    const bool hide = !r.empty() && r.front() == '!';
    if (rule_matches(hide ? std::string_view(r).substr(1) : std::string_view(r), name, hints))
      shown = !hide;
  }
  return shown;
}

std::optional<std::string> confirm_entry_problem(std::string_view entry) {
  if (entry == confirm_destructive) return std::nullopt;
  const auto bad = std::find_if(entry.begin(), entry.end(), [](char c) {
    return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '*' ||
             c == '?');
  });
  if (entry.empty()) return "an entry must not be empty";
  if (entry.front() == '@' || entry.front() == '!')
    return fmt::format(
        "\"{}\" is not an entry of confirm: it takes \"{}\" or globs over exposed "
        "tool names (negations and @selectors are not taken here)",
        entry, confirm_destructive);
  if (bad != entry.end())
    return fmt::format(
        "\"{}\" is not a glob over exposed tool names: '{}' cannot be in a name "
        "(names are A-Z a-z 0-9 _ -; * and ? match)",
        entry, *bad);
  // A word that is nearly "destructive" is a typo, not a tool's name.
  std::string lower;
  for (char c : entry) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.size() >= 7 && lower.size() <= confirm_destructive.size() + 2 &&
      confirm_destructive.substr(0, 7) == std::string_view(lower).substr(0, 7))
    return fmt::format("\"{}\" is not an entry of confirm; did you mean \"{}\"?", entry,
                       confirm_destructive);
  return std::nullopt;
}

}  // namespace mcpmux
