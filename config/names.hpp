// Character classes of config names, shared by the loader and the importer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace mcpmux::names {

inline bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

/// [A-Za-z0-9_-]*: the alphabet of server names, prefixes and separators (and TOML bare keys),
/// so exposed tool names built from them stay within what MCP clients accept.
inline bool is_name(std::string_view s) {
  return std::all_of(s.begin(), s.end(), is_name_char);
}

/// An environment variable name: [A-Za-z_][A-Za-z0-9_]*.
inline bool is_var_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c != '-' && is_name_char(c); });
}

/// RFC 9110 token characters, the only ones allowed in a header field name.
inline bool is_header_name(std::string_view s) {
  static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           extra.find(c) != std::string_view::npos;
  });
}

/// The index of the `}` that closes the `${` at `open`, allowing `${...}` nested in a default;
/// npos when it is never closed. With `dollar_escapes`, `$$` inside is an escaped `$`.
inline std::size_t closing_brace(std::string_view in, std::size_t open, bool dollar_escapes) {
  std::size_t j = open + 2;
  int depth = 1;
  while (j < in.size()) {
    if (in[j] == '$' && j + 1 < in.size() &&
        (in[j + 1] == '{' || (dollar_escapes && in[j + 1] == '$'))) {
      if (in[j + 1] == '{') ++depth;
      j += 2;
      continue;
    }
    if (in[j] == '}' && --depth == 0) return j;
    ++j;
  }
  return std::string_view::npos;
}

}  // namespace mcpmux::names
