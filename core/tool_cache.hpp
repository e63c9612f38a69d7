// The tool cache: each server's last trusted tools/list, kept in the state store and keyed by a
// hash of its configuration.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "config/config.hpp"
#include "core/state_store.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {

/// A stable hash of everything in a server's config that can change the tools it lists.
std::string server_config_hash(const server_config& s);

/// One server's entry as read: its tools (none: no usable entry), the warning about an unusable
/// one, and the era it recorded ("" when none).
struct cache_entry {
  std::optional<std::vector<json::object>> tools;
  std::string warning;
  std::string era;
  /// Still to be read (a catalogue snapshot lists its tools meanwhile): `tools` is empty and
  /// comes later (upstream::take_cached).
  bool pending = false;
};

/// The entries of `servers` in `store` (disabled servers and entries listed under another
/// configuration have none), parsed side by side on the machine's cores (up to 4): a daemon with
/// a hundred servers serves their cached tools sooner. In the order of `servers`.
std::vector<cache_entry> load_cache_entries(const state_store& store,
                                            const std::vector<server_config>& servers);

/// The entry of one server, `s` (see load_cache_entries).
cache_entry load_cache_entry(const state_store& store, const server_config& s);

/// Replaces the entry of `s` with `tools` (but those named in `skip`) and its `era` when
/// known.
result<> store_cached_tools(state_store& store, const server_config& s,
                            const std::vector<json::object>& tools, std::string_view era = {},
                            const std::unordered_set<std::string>* skip = nullptr);

/// Moves the tool cache files of versions before the state store (`dir`/tools-NAME.json) into
/// `store`, and removes them. Returns how many moved; an unreadable file is removed with a
/// warning (the cache is rebuilt when its server lists again).
std::size_t migrate_cache_files(const std::string& dir, state_store& store,
                                std::vector<std::string>* warnings);

}  // namespace mcpmux
