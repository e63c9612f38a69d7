// Codex CLI's config.toml for config/agents: where its `[mcp_servers.NAME]` tables are, what
// they hold (in the importer's JSON shape), and such tables written for it.
#pragma once

#include <boost/json/fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/jsonc_span.hpp"

namespace mcpmux::codex {

/// The run of lines holding every `[mcp_servers.*]` table.
struct region {
  std::string error;                ///< not TOML, or tables in a form this does not rewrite
  std::optional<jsonc::span> span;  ///< nullopt: no server tables
};
region find_servers(std::string_view text);

/// One server's tables within `run` (a find_servers span).
std::optional<jsonc::span> find_server(std::string_view text, jsonc::span run,
                                       std::string_view name);

/// The servers of `run_text` as `mcpServers` entries (command, args, env, cwd; url with
/// http_headers and bearer_token_env_var as an Authorization header); Codex's own settings
/// are noted as not carried over.
boost::json::object entries(std::string_view run_text, std::vector<std::string>& notes);

/// `entry` (in that JSON shape) as `[mcp_servers.NAME]` and its sub-tables, no final newline.
std::string table(std::string_view name, const boost::json::object& entry);

}  // namespace mcpmux::codex
