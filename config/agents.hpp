// The MCP clients (agents, editors) whose config files mcpmux knows, and moving one onto the
// gateway and back: the client's server list is replaced by one entry that runs `mcpmux
// connect`, every other byte of its file kept (comments too), and restored later exactly. Pure
// text in, text out; reading, writing and backups are the CLI's (daemon/cli/adopt.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "config/config.hpp"
#include "config/credentials.hpp"
#include "config/jsonc_span.hpp"

namespace mcpmux {

/// How a client spells its list of servers.
enum class agent_shape {
  mcp_servers,  ///< "mcpServers": {NAME: {command, args, env} | {type, url, headers}}
  vscode,       ///< "servers" (mcp.json) or "mcp": {"servers"} (settings.json); stdio entries
                ///< carry "type": "stdio"
  zed,          ///< "context_servers": {NAME: {"source": "custom", command, args, env} | {url}}
  codex,        ///< Codex's config.toml: [mcp_servers.NAME] tables (spans are lines of TOML)
};

/// One config file of one client, where it lives on this machine.
struct agent_file {
  std::string agent;              ///< "claude-desktop", "claude-code", "cursor", ...
  std::string label;              ///< "Claude Desktop"
  std::string path;               ///< absolute
  std::vector<std::string> keys;  ///< where its server list is, from the top
  agent_shape shape = agent_shape::mcp_servers;
  bool project = false;  ///< a project's or workspace's file (in the current directory)
  /// The file also keeps a list per project (~/.claude.json's `projects.PATH.mcpServers`,
  /// Claude Code's default "local" scope).
  bool local_scopes = false;
  std::string local_project{};  ///< one project's list of such a file: the project's path
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

/// Every server list of `text`: `file` itself (when its list is there), then for a file with
/// local scopes one description per project that has a list (its `keys` lead to it, its
/// `local_project` names it). `error` when the file is not JSON(C) or TOML.
struct server_lists {
  std::string error;
  std::vector<agent_file> lists;
};
server_lists find_server_lists(std::string_view text, const agent_file& file);

/// The profile a project's adopted list is shown through: "claude-" and the project
/// directory's name (clipped, [A-Za-z0-9_-]), then 8 hex digits of a hash of its whole path,
/// so that it is valid, the same at every adopt, and two projects of one name differ.
std::string project_profile_name(std::string_view project_path);

/// The entries of the list at `span` in the `mcpServers` JSON shape (Codex's tables read into
/// it; what they hold that has no such form is noted).
boost::json::object list_entries(std::string_view text, jsonc::span span, const agent_file& file,
                                 std::vector<std::string>& notes);

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

/// One list adopted: which mcpmux servers its servers became, and the profile its entry names.
struct adopted_list {
  std::string project;               ///< "" for the file's own list; else the project's path
  std::vector<std::string> servers;  ///< mcpmux's names of its servers
  std::string profile;  ///< a project's: the [profiles.NAME] its servers (and the user's) form
};

/// What adopting a client's file does, worked out before anything is written.
struct adoption {
  std::string error;        ///< cannot adopt (the file is not JSON, mcpmux's config does not load)
  std::string nothing;      ///< nothing to do, and why ("already uses mcpmux", "no server list")
  std::string client_text;  ///< the client's file after
  std::string config_text;  ///< mcpmux's config after (== before when nothing is added)
  std::vector<std::string> added;     ///< new [servers.NAME] tables
  std::vector<std::string> servers;   ///< every mcpmux server the client's servers became
  std::vector<std::string> left;      ///< the client's entries that stay in its file
  std::vector<std::string> notes;     ///< renames, merges, what was not carried over
  std::vector<adopted_list> lists;    ///< each list adopted, the file's own first
  std::vector<std::string> profiles;  ///< [profiles.NAME] tables written (projects' lists)
  std::vector<moved_secret> secrets;  ///< credentials to keep in the secret store first
  /// The file was adopted before: only its mcpmux entries' arguments change (`--socket`), with
  /// no new backup or record (unadopt still restores from the first adoption's backup).
  bool entries_updated = false;
};

/// Plans adopting `client_text` (the file `file`) into mcpmux's config `config_text` (at
/// `config_path`): each of the client's servers is imported (the importer's rules); one that
/// mcpmux runs already (the same definition: command, arguments, environment, cwd, URL,
/// headers, token command) is not added again; a name mcpmux uses for another server gets a
/// -2 suffix; one that cannot be carried over stays in the client's list beside the new entry
/// that runs `mcpmux_path connect --spawn`. Each project's list of a file with local scopes
/// gets an entry with `--profile` (project_profile_name) whose profile shows that project's
/// servers and the user's it does not shadow. Credentials in the added servers are moved to
/// `${secret:NAME}` (`secrets` says what to keep) unless `mode` keeps them. `socket`, when not
/// empty, is written as `--socket SOCKET` into each entry: the daemon's socket where an agent's
/// bare environment would not find it. A file adopted before keeps its lists; only entries whose
/// `--socket` differs from `socket` are rewritten (`entries_updated`).
adoption plan_adoption(std::string_view client_text, const agent_file& file,
                       std::string_view config_text, const std::string& config_path,
                       const std::string& mcpmux_path, env_lookup lookup = process_env,
                       credentials mode = credentials::to_secret_store,
                       const std::string& socket = {});

/// An env_lookup that leaves each `${VAR}` as written: the servers a client's list is rebuilt
/// from are read with it, so that no variable's value ends up in the client's file.
env_lookup keep_variables();

/// Which mcpmux servers each project's list became (by project path), for plan_restoration.
using project_servers = std::map<std::string, std::vector<std::string>>;

/// The client's lists back in `client_text` (an adopted file): each adopted list as it is in
/// `backup_text` when given (the file as it was before adopting), else rebuilt from mcpmux's
/// `servers` named in `names` (a project's: in `local_names`; read with keep_variables()). ""
/// with `*error` set when neither is possible.
std::string plan_restoration(std::string_view client_text, const agent_file& file,
                             const std::optional<std::string>& backup_text,
                             const std::vector<server_config>& servers,
                             const std::vector<std::string>& names, std::string* error,
                             const project_servers& local_names = {});

/// `text` (mcpmux's config) without the tables named in `tables` ("servers.NAME",
/// "profiles.NAME"; their sub-tables too) and the comment line right above each, which adopt
/// wrote; the rest unchanged.
std::string remove_tables(std::string_view text, const std::vector<std::string>& tables);

/// remove_tables for the `[servers.NAME]` tables of `names`.
std::string remove_server_tables(std::string_view text, const std::vector<std::string>& names);

/// `text` with the bytes of `span` replaced by `replacement`.
std::string replace_span(std::string_view text, jsonc::span span, std::string_view replacement);

/// A line diff of two texts for people (lines only in `before` with "-", only in `after` with
/// "+", a few unchanged lines around each change), "" when they are equal.
std::string line_diff(std::string_view before, std::string_view after);

}  // namespace mcpmux
