// The MCP protocol revisions mcpmux speaks, in one place.
#pragma once

#include <algorithm>
#include <iterator>
#include <string_view>

namespace mcpmux::mcp {

/// The revisions negotiated with `initialize` (the legacy era), oldest first.
inline constexpr std::string_view legacy_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                                       "2025-11-25"};
/// The newest legacy revision: what mcpmux asks its servers for and offers its clients.
inline constexpr std::string_view latest_legacy_version = std::end(legacy_versions)[-1];
/// The oldest revision a server may answer with.
inline constexpr std::string_view oldest_version = legacy_versions[0];

/// True for a revision of the legacy era that mcpmux supports.
constexpr bool is_legacy_version(std::string_view v) {
  return std::find(std::begin(legacy_versions), std::end(legacy_versions), v) !=
         std::end(legacy_versions);
}

}  // namespace mcpmux::mcp
