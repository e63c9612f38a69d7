// Character classes of config names, shared by the loader and the importer.
#pragma once

#include <algorithm>
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

}  // namespace mcpmux::names
