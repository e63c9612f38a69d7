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

/// The stateless revisions (no initialize; version and capabilities in every request's _meta).
inline constexpr std::string_view modern_versions[] = {"2026-07-28"};
/// The newest revision: what mcpmux offers modern clients and asks modern servers for.
inline constexpr std::string_view latest_version = std::end(modern_versions)[-1];

/// True for a revision of the legacy era that mcpmux supports.
constexpr bool is_legacy_version(std::string_view v) {
  return std::find(std::begin(legacy_versions), std::end(legacy_versions), v) !=
         std::end(legacy_versions);
}

/// True for a stateless revision that mcpmux supports.
constexpr bool is_modern_version(std::string_view v) {
  return std::find(std::begin(modern_versions), std::end(modern_versions), v) !=
         std::end(modern_versions);
}

/// The two protocol eras. A client's first message decides its era; a server's is configured
/// or detected.
enum class era { unknown, legacy, modern };

}  // namespace mcpmux::mcp
