// The MCP clients (agents, editors) whose config files mcpmux knows, and moving one onto the
// gateway and back: the client's server list is replaced by one entry that runs `mcpmux
// connect`, every other byte of its file kept (comments too), and restored later exactly. Pure
// text in, text out; reading, writing and backups are the CLI's (daemon/cli/adopt.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "config/jsonc_span.hpp"

namespace mcpmux {

/// How a client spells its list of servers.
enum class agent_shape {
  mcp_servers,  ///< "mcpServers": {NAME: {command, args, env} | {type, url, headers}}
  vscode,       ///< "servers" (mcp.json) or "mcp": {"servers"} (settings.json); stdio entries
                ///< carry "type": "stdio"
};

/// One config file of one client, where it lives on this machine.
struct agent_file {
  std::string agent;              ///< "claude-desktop", "claude-code", "cursor", ...
  std::string label;              ///< "Claude Desktop"
  std::string path;               ///< absolute
  std::vector<std::string> keys;  ///< where its server list is, from the top
  agent_shape shape = agent_shape::mcp_servers;
  bool project = false;  ///< a project's or workspace's file (in the current directory)
};

/// Every file the known clients may keep their servers in, user files first, then the current
/// directory's project files. `home`, `config_home` ($XDG_CONFIG_HOME) and `cwd` are absolute.
std::vector<agent_file> known_agent_files(const std::string& home, const std::string& config_home,
                                          const std::string& cwd);

/// The same description for a file named on the command line: by its name and place (a
/// `.vscode/mcp.json` or a `settings.json` is VS Code's, anything else `mcpServers`).
agent_file agent_file_for_path(const std::string& path);

/// True when a client's server entry runs `mcpmux connect` (it is mcpmux itself: never
/// imported into mcpmux's own config).
bool runs_mcpmux(const boost::json::value& entry);

/// Where the server list is in `text` (the file's whole text), and whether the list is already
/// the single mcpmux entry.
struct server_list {
  std::string error;                ///< the file is not JSON(C): it is not touched
  std::optional<jsonc::span> span;  ///< nullopt: the file has no server list
  bool adopted = false;             ///< the list is one entry running `mcpmux connect`
};
server_list locate_servers(std::string_view text, const agent_file& file);

/// The one entry that replaces a client's servers: `mcpmux_path` (absolute) with
/// `connect` and, when given, `--profile PROFILE`, in the client's shape, indented to sit
/// where `indent` is (the indentation of the line the list starts on).
std::string mcpmux_entry(const agent_file& file, const std::string& mcpmux_path,
                         const std::string& profile, const std::string& indent);

/// `text` with the bytes of `span` replaced by `replacement`.
std::string replace_span(std::string_view text, jsonc::span span, std::string_view replacement);

/// A line diff of two texts for people (lines only in `before` with "-", only in `after` with
/// "+", a few unchanged lines around each change), "" when they are equal.
std::string line_diff(std::string_view before, std::string_view after);

}  // namespace mcpmux
