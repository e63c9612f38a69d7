// Import of other MCP clients' server lists (Claude, Cursor, Windsurf, VS Code); TOML printer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/files.hpp"
#include "config/config.hpp"
#include "config/credentials.hpp"

namespace mcpmux {

/// Servers found in one client config file.
///
/// Strings are *templates* in mcpmux's own syntax, i.e. what one would write in config.toml:
/// `${VAR}` / `${VAR:-default}` are kept (Claude Code expands them the same way), VS Code's and
/// Cursor's `${env:VAR}` become `${VAR}` and `${userHome}` becomes `${HOME}`; a `$` that must stay
/// literal (`$$`, `${input:id}`, `${workspaceFolder}`) is written as `$$`. `line` is 0.
struct import_result {
  std::vector<server_config> servers;  ///< in file order, names sanitised and unique
  std::vector<std::string> notes;      ///< what was not carried over, renamed or guessed
  std::string format;                  ///< "mcpServers" or "servers" (VS Code), for messages
};

/// Outcome of an import: a value, or an error message (with line and column for bad JSON).
struct import_outcome {
  std::optional<import_result> value;
  std::string error;
};

/// Parses the JSON text of a client config. Recognised shapes: a top-level `mcpServers` object
/// (Claude Desktop, Claude Code's .mcp.json, Cursor, Windsurf), `projects.<path>.mcpServers`
/// (~/.claude.json), a top-level `servers` object (VS Code mcp.json) and `mcp.servers` (VS Code
/// settings.json). No I/O.
import_outcome import_mcp_json(std::string_view text);

/// Reads a file (bounded, regular files only) and imports it. `*missing` (if given) is set when
/// the file does not exist, so that callers can treat that case differently.
import_outcome import_mcp_file(const std::string& path, bool* missing = nullptr);

/// A server name made of [A-Za-z0-9_-] only (other characters become `_`), 1 to 64 characters;
/// an empty name becomes "server".
std::string sanitize_server_name(std::string_view raw);

/// Adds `s` to `list` keeping names unique: a server identical to one already there (same name
/// after sanitising, same settings) is dropped; a different one with a taken name is renamed to
/// `NAME-2`, `NAME-3`, ... (shortened to stay within 64 characters). Notes explain either.
/// Returns false when `s` was dropped as a duplicate.
bool add_unique_server(std::vector<server_config>& list, server_config s,
                       std::vector<std::string>& notes);

/// Result of merging imported servers into the text of a config file.
struct merge_outcome {
  std::string text;                  ///< the new file text; empty when `errors` is not
  std::vector<std::string> added;    ///< names appended as new [servers.NAME] tables
  std::vector<std::string> skipped;  ///< names the file already defines (never overwritten)
  std::vector<config_error> errors;  ///< the existing or the merged text does not validate
  /// Credentials taken out of the added servers (credentials::to_secret_store): `text` names
  /// them as `${secret:NAME}`, so they must be kept (keep_secrets) before it is written.
  std::vector<moved_secret> secrets;
};

/// Appends a `[servers.NAME]` table for every server whose name `existing` (the current file
/// text, "" for a new file) does not define yet, preceded by `comment` (one line, "# " added).
/// Both the existing and the merged text are validated with parse_config under `path`, the
/// merged one with the credentials still in it (their secrets are not kept yet).
merge_outcome merge_into_config(std::string_view existing, const std::string& path,
                                const std::vector<server_config>& servers, std::string_view comment,
                                env_lookup lookup = process_env,
                                credentials mode = credentials::keep_plaintext);

/// How the printer treats `$` in strings.
enum class toml_strings {
  templates,  ///< written as is: `${VAR}` is expanded again by parse_config (import output)
  literal,    ///< `$` is doubled, so parse_config gives back exactly the same string
};

/// A TOML basic string ("...") with every character that needs it escaped; invalid UTF-8 bytes
/// become U+FFFD.
std::string toml_quote(std::string_view s);

/// One `[servers.NAME]` table: keys in a fixed order (type, command, args, env, cwd, url,
/// headers, ca_file, token_command, timeout_ms, enabled, prefix, roots, retry (or retry_calls),
/// reset_timeout_on_progress, max_timeout_ms, ping_interval_ms, isolation), defaults omitted.
/// Ends with a newline.
std::string to_toml(const server_config& s, toml_strings mode = toml_strings::templates);

/// Tables for several servers, separated by blank lines, in the order given.
std::string to_toml(const std::vector<server_config>& servers,
                    toml_strings mode = toml_strings::templates);

}  // namespace mcpmux
