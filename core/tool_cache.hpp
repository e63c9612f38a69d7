// The tool cache: each server's last tools/list on disk, keyed by a hash of its configuration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/protocol/json_rpc.hpp"

namespace mcpmux {

/// A stable hash of everything in a server's config that can change the tools it lists.
std::string server_config_hash(const server_config& s);

/// Cached tools of `s` in `dir`, when the entry exists and matches the config hash. A corrupt or
/// unreadable entry yields nullopt and a `warning`. `era` (optional) gets the protocol era the
/// server was found to speak ("legacy", "modern"; unchanged when the entry has none).
std::optional<std::vector<json::object>> load_cached_tools(const std::string& dir,
                                                           const server_config& s,
                                                           std::string* warning,
                                                           std::string* era = nullptr);

/// One server's entry as read: its tools (none: no usable entry), the warning about an unusable
/// one, and the era it recorded ("" when none).
struct cache_entry {
  std::optional<std::vector<json::object>> tools;
  std::string warning;
  std::string era;
};
/// The entries of many servers, read side by side on the machine's cores (up to 4): a daemon
/// with a hundred servers serves their cached tools sooner. In the order of `servers`.
std::vector<cache_entry> load_cache_entries(const std::string& dir,
                                            const std::vector<server_config>& servers);

/// Writes the entry atomically (temp file + rename), with the server's `era` when known; false
/// and `error` on failure.
bool store_cached_tools(const std::string& dir, const server_config& s,
                        const std::vector<json::object>& tools, std::string* error,
                        std::string_view era = {});

}  // namespace mcpmux
