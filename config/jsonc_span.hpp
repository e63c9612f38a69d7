// Where a value sits in the text of a JSON or JSONC file (VS Code's JSON with comments and
// trailing commas), so that one value can be replaced and every other byte of the file kept:
// comments, order, indentation, unknown fields. A strict scanner, no I/O: a file it cannot
// read entirely is refused, never half-edited.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux::jsonc {

/// A value's bytes: text.substr(begin, end - begin).
struct span {
  std::size_t begin = 0, end = 0;
};

/// What a lookup found.
struct found {
  std::optional<span> value;  ///< the value at the path; nullopt when a key is missing
  std::string error;          ///< the text is not JSON(C) (with line and column); "" when read
};

/// Scans the whole text and finds the value at `path` (object keys from the top; a key that
/// holds dots, like VS Code's "mcp.servers", is one element). Comments (`//`, `/* */`) and
/// trailing commas are accepted; anything else that is not JSON is an error.
found find(std::string_view text, const std::vector<std::string>& path);

/// The indentation (spaces or tabs) of the line `pos` is on.
std::string indentation_at(std::string_view text, std::size_t pos);

}  // namespace mcpmux::jsonc
