// Configuration model of mcpmuxd: plain structs with defaults, TOML loading, validation, ${VAR}
// expansion.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result_redaction.hpp"

namespace mcpmux {

/// How mcpmuxd reaches an upstream server.
enum class server_type {
  stdio,  ///< a child process speaking NDJSON on stdin/stdout
  http,   ///< Streamable HTTP endpoint
  sse,    ///< legacy 2024-11-05 HTTP+SSE endpoint
};

std::string_view to_string(server_type t);

/// Everything a `[servers.NAME]` table sets. All strings are already `${VAR}`-expanded.
/// When a call whose connection dropped is sent once more on the next connection: `safe` only
/// when it cannot have run (it never reached the server) or cannot do harm twice (not a
/// tools/call, or a tool annotated readOnlyHint or idempotentHint); `always`; `never`.
enum class retry_mode { safe, always, never };
std::string_view to_string(retry_mode m);

/// The protocol era a server is spoken to in: detected (a short server/discover probe, the
/// verdict kept with the tool cache), or fixed.
enum class era_setting { auto_detect, legacy, modern };
std::string_view to_string(era_setting e);

/// What becomes of a tool, prompt or resource template whose definition differs from the one
/// pinned when it was first trusted (core/trust.hpp): held back from clients until approved
/// (`quarantine`), exposed with a warning and pinned anew (`warn`), or pinned anew quietly.
enum class change_policy { quarantine, warn, accept };
std::string_view to_string(change_policy p);

/// `oauth` of an http/sse server: log in with OAuth 2.1 (the MCP authorization spec). The
/// secret is never written inline: it is read from `client_secret_file` when needed. Unset, the
/// server's first 401 tells whether it wants a login (daemon/oauth_accounts.hpp).
struct oauth_settings {
  bool enabled = false;             ///< `oauth = true`, or an `oauth` table
  bool opted_out = false;           ///< `oauth = false`: a 401 is an error, never a login
  std::string client_id;            ///< a pre-registered client ("" = register dynamically)
  std::string client_secret_file;   ///< its secret, in a file of its own (absolute path)
  std::string client_metadata_url;  ///< a Client ID Metadata Document (https, with a path)
  std::string scope;                ///< "" = the spec's selection
  bool client_credentials = false;  ///< `grant = "client_credentials"`: a machine, no person
  unsigned redirect_port = 0;       ///< the loopback redirect's port; 0 = any free one
  bool operator==(const oauth_settings&) const = default;
};

/// `sandbox` (docs/security.md): `default` hides the home directory but what the server is
/// given, network as the host's; `strict` adds no network and no writes but a private /tmp;
/// `required` is `default` that refuses to start unsandboxed; `off` runs the server as the user.
enum class sandbox_mode { standard, strict, off, required };
std::string_view to_string(sandbox_mode m);

/// `network` of a sandboxed server: the host's network, none, or only these hosts (through the
/// daemon's filtering proxy).
struct network_setting {
  enum class kind { all, none, hosts };
  kind mode = kind::all;
  std::vector<std::string> hosts;  ///< `hosts`: "api.example.com", "*.example.org", "host:8443"
  bool operator==(const network_setting&) const = default;
};

/// The sandbox keys of a stdio server. Unset values take the mode's defaults (sandbox/policy.hpp).
struct sandbox_settings {
  std::optional<sandbox_mode> mode;        ///< `sandbox`; unset = [daemon] sandbox
  std::optional<network_setting> network;  ///< `network`; unset = the mode's
  std::vector<std::string> allow_read;     ///< `allow_read`: absolute paths, `~` expanded
  std::vector<std::string> allow_write;    ///< `allow_write`
  /// `memory_max` (bytes), `cpu_max` (CPUs), `tasks_max`, `files_max`; unset = the default
  /// limit; 0 = no limit.
  std::optional<std::uint64_t> memory_max, tasks_max, files_max;
  std::optional<double> cpu_max;
  bool operator==(const sandbox_settings&) const = default;
};

struct server_settings {
  std::string name;                            ///< the table key; unique
  server_type type = server_type::stdio;       ///< `type`, default "stdio"
  std::string command;                         ///< stdio: program (looked up in PATH)
  std::vector<std::string> args;               ///< stdio: arguments
  std::map<std::string, std::string> env;      ///< stdio: merged over the daemon's environment
  std::string cwd;                             ///< stdio: working directory; empty = daemon's
  std::string url;                             ///< http/sse: endpoint URL
  std::map<std::string, std::string> headers;  ///< http/sse: extra request headers
  std::string ca_file;                         ///< http/sse: extra CA bundle (private CAs)
  std::string token_command;  ///< http/sse: prints a bearer token (run via /bin/sh -c)
  std::optional<std::chrono::milliseconds> timeout;  ///< `timeout_ms`; unset = daemon's; 0 = none
  /// `max_result_bytes`: text of a result beyond it is paged; unset = daemon's; 0 = no cap.
  std::optional<std::size_t> max_result_bytes;
  bool enabled = true;                ///< `enabled`; false = configured but not started
  std::optional<std::string> prefix;  ///< `prefix`; unset = the server name; "" = no prefix
  std::vector<std::string> roots;  ///< `roots` answered to roots/list; empty = cwd as file:// URI
  /// `retry`: whether a call whose connection dropped is sent again on the next connection.
  retry_mode retry = retry_mode::safe;
  std::chrono::milliseconds ping_interval{0};  ///< liveness pings; 0 = off; two misses → reconnect
  bool reset_timeout_on_progress = true;  ///< progress from the server restarts a call's timeout
  std::chrono::milliseconds max_timeout{600000};  ///< cap on a call extended by progress; 0 = none
  bool per_client = false;  ///< `isolation = "per-client"`: one upstream per client session
  era_setting era = era_setting::auto_detect;  ///< `era`: "auto" (default), "legacy", "modern"
  oauth_settings oauth;                        ///< http/sse: `oauth`
  /// `tools`, `prompts`, `resources`: which are shown (config/filters.hpp); empty = all. The
  /// resources rules apply to resource URIs and resource template URI templates.
  std::vector<std::string> tools_shown, prompts_shown, resources_shown;
  /// `on_change`: what a changed, renamed or added definition meets (default quarantine).
  change_policy on_change = change_policy::quarantine;
  /// `trust = "ask"`: a server seen for the first time is held back whole until `mcpmux trust`
  /// approves it; "auto" (default): its first definitions are trusted and pinned.
  bool trust_ask = false;
  sandbox_settings sandbox;  ///< stdio: the sandbox keys
  /// `redact_results`: what is replaced in the server's results and notifications before a
  /// client sees them (protocol/result_redaction.hpp): "patterns" (default), "known" or "off".
  mcp::redaction_mode redact_results = mcp::redaction_mode::patterns;
  /// `max_calls_per_minute`: calls to this server started in any 60 s (all clients); 0 = no limit.
  std::uint32_t max_calls_per_minute = 0;
  /// `max_concurrent_calls`: calls to this server in flight at once (all clients); 0 = no limit.
  std::uint32_t max_concurrent_calls = 0;

  /// The prefix tools are exposed under.
  std::string effective_prefix() const { return prefix ? *prefix : name; }
  /// True when the config gives the Authorization header itself (`headers` or `token_command`):
  /// a 401 then means that token is wrong, never that a login is wanted.
  bool sends_own_authorization() const;
  bool operator==(const server_settings&) const = default;
};

/// One `[servers.NAME]` table and where it stands in the file.
struct server_config : server_settings {
  int line = 0;  ///< line of the table header in the config file (for messages)

  /// Equality of the settings only: a table that merely moved in the file is the same server
  /// (reload leaves it running).
  bool operator==(const server_config& o) const {
    return static_cast<const server_settings&>(*this) == static_cast<const server_settings&>(o);
  }
};

/// The `[daemon]` table.
struct daemon_config {
  std::chrono::milliseconds timeout{30000};  ///< `timeout_ms` per request; 0 = no timeout
  std::string tool_separator = "__";         ///< between prefix and tool name
  std::size_t max_tool_name = 64;            ///< longer exposed names are shortened with a hash
  std::string log_level = "info";            ///< trace, debug, info, warn, error, off
  std::string socket;  ///< `socket`; empty = $XDG_RUNTIME_DIR/mcpmux/mcpmux.sock
  std::size_t max_message_bytes = 16u << 20;       ///< longest accepted JSON-RPC line, both sides
  std::size_t max_client_queue_bytes = 64u << 20;  ///< unsent bytes per client before it is dropped
  std::size_t max_instructions_bytes = 16u << 10;  ///< cap on the joined `instructions` string
  std::chrono::milliseconds reconnect_max{30000};  ///< cap of the reconnect backoff
  std::chrono::milliseconds startup_wait{250};  ///< how long an early tools/list waits for servers
  std::size_t page_size = 1000;                 ///< items per page of every list served
  /// `include`: MCP client configs (Claude, Cursor, Windsurf, VS Code JSON) whose servers are
  /// added at load; `~/` and `${VAR}` already expanded; relative paths are relative to the config
  /// file's directory (resolved by load_config_file).
  std::vector<std::string> include;
  /// `http`: "127.0.0.1:PORT", "[::1]:PORT" or "localhost:PORT" serves MCP over Streamable HTTP
  /// (plus /status and /metrics); empty = off.
  std::string http;
  bool http_allow_remote = false;  ///< `http_allow_remote`: permit a non-loopback `http` address
  bool audit = true;               ///< `audit`: keep the audit log in the state store
  bool audit_arguments = false;    ///< `audit_arguments`: with each call's arguments (redacted)
  std::int64_t audit_retention_days = 30;  ///< `audit_retention_days`
  std::int64_t audit_max_rows = 1000000;   ///< `audit_max_rows`
  /// `http_auth`: "token" (default) — every request needs the bearer token of
  /// `http_token_file`, else of a token file mcpmuxd makes in its runtime directory; "none" —
  /// anyone on the machine may use the endpoint (warned of at every start).
  bool http_auth_none = false;
  std::string http_token_file;  ///< `http_token_file`: the token, read from this file
  /// `http_tokens`: more bearer tokens by name (each client its own; the audit log and status
  /// name the one a session came with). Values are expanded (`${secret:NAME}`) and redacted.
  std::map<std::string, std::string> http_tokens;
  /// `http_max_requests_per_session`: requests of one session awaiting their answer; beyond: 429.
  std::size_t http_max_requests_per_session = 64;
  std::size_t http_max_sessions = 128;     ///< `http_max_sessions`: live MCP sessions; beyond: 503
  std::size_t http_max_connections = 256;  ///< `http_max_connections`: open TCP connections
  sandbox_mode sandbox = sandbox_mode::standard;  ///< `sandbox`: every stdio server's default
  /// `confirm`: the tools a person confirms before they run (config/filters.hpp,
  /// `confirm_entry_problem`), for sessions whose profile sets none.
  std::vector<std::string> confirm;
  /// `max_result_bytes`: a result's text beyond it is cut and paged (mcpmux__read_result), for
  /// servers and profiles that set none; 0 = no cap.
  std::size_t max_result_bytes = 100000;
};

/// How a profile offers its tools: every tool listed (`all`), a search tool and a call tool in
/// their place (`search`), or `auto`: all while the list's estimated size stays within
/// `tool_budget_tokens`, search above it.
enum class exposure_mode { all, search, auto_select, code };
std::string_view to_string(exposure_mode m);

/// A `[profiles.NAME]` table: what one kind of client sees. Every list is of globs with the
/// filter rules of config/filters.hpp (empty = all).
struct profile_config {
  std::string name;                  ///< the table key: [A-Za-z0-9_-]
  std::vector<std::string> servers;  ///< `servers`: which servers' items it sees (server names)
  /// `tools`, `prompts`, `resources`: by exposed name (resources: by exposed URI).
  std::vector<std::string> tools, prompts, resources;
  exposure_mode exposure = exposure_mode::all;  ///< `exposure`
  std::size_t tool_budget_tokens = 8000;        ///< `tool_budget_tokens` (exposure = "auto")
  /// `match`: a socket client whose agent's program name, executable path or command line
  /// matches one of these globs gets this profile unless it asked for one.
  std::vector<std::string> match;
  std::map<std::string, std::string> descriptions;  ///< `descriptions`: by exposed tool name
  /// `list_found_tools`: in search mode, the tools a client's searches found join its tools
  /// list (with list_changed), for clients that call only listed tools.
  bool list_found_tools = false;
  /// `redact_results`: the same choice as a server's, for this profile's clients; unset = each
  /// server's own.
  std::optional<mcp::redaction_mode> redact_results;
  /// `confirm`: the tools a person confirms before they run, for this profile's clients; unset
  /// = `[daemon] confirm`.
  std::optional<std::vector<std::string>> confirm;
  /// `max_calls_per_minute`, `max_concurrent_calls`: as a server's, counting the calls of every
  /// session in this profile together; 0 = no limit.
  std::uint32_t max_calls_per_minute = 0, max_concurrent_calls = 0;
  /// `max_result_bytes`: overrides the servers' own for this profile's clients; unset = theirs.
  std::optional<std::size_t> max_result_bytes;
  /// `code`: offers mcpmux__run_code (code mode, docs/code-mode.md); `exposure = "code"` sets it.
  bool code = false;
  /// `code_timeout_ms`: a program's wall time (its CPU time is at most 10 s of it).
  std::chrono::milliseconds code_timeout{30000};
  std::uint32_t code_max_calls = 100;  ///< `code_max_calls`: tool calls per program
  int line = 0;                        ///< of the table header (for messages)
  bool operator==(const profile_config& o) const {
    return name == o.name && servers == o.servers && tools == o.tools && prompts == o.prompts &&
           resources == o.resources && exposure == o.exposure &&
           tool_budget_tokens == o.tool_budget_tokens && match == o.match &&
           descriptions == o.descriptions && list_found_tools == o.list_found_tools &&
           redact_results == o.redact_results && confirm == o.confirm &&
           max_calls_per_minute == o.max_calls_per_minute &&
           max_concurrent_calls == o.max_concurrent_calls &&
           max_result_bytes == o.max_result_bytes && code == o.code &&
           code_timeout == o.code_timeout && code_max_calls == o.code_max_calls;
  }
};

/// A whole configuration. `servers` and `profiles` are sorted by name.
struct config {
  daemon_config daemon;
  std::vector<server_config> servers;
  std::vector<profile_config> profiles;
  std::string source;  ///< file path it came from, or "<default>" for the embedded one
};

/// One problem found while loading; printed as `file:line: key: message`.
struct config_error {
  std::string file;
  int line = 0;     ///< 0 when unknown
  std::string key;  ///< dotted path, e.g. `servers.files.timeout_ms`
  std::string message;
  std::string to_string() const;
};

/// The keys a table takes, as the loader knows them: "" (the top level), "daemon", "server" (a
/// [servers.NAME] table), "oauth" (a server's oauth table) or "profile". Any other key is an
/// error with a "did you mean" hint from these.
std::span<const std::string_view> config_keys(std::string_view table);

/// Every key the loader takes, as a full dotted path (`daemon.timeout_ms`,
/// `servers.*.oauth.scope`; `*` is a server's or a profile's name). A key that opens a table of
/// known keys is a path of its own only when it may also be a value (`servers.*.oauth = true`).
/// What docs/configuration.md must list, one row each.
std::vector<std::string> config_key_paths();

/// Outcome of loading: a config when `errors` is empty.
struct config_result {
  std::optional<config> value;
  std::vector<config_error> errors;   ///< fatal problems; value is empty when any
  std::vector<std::string> warnings;  ///< e.g. an undefined ${VAR}, expanded to ""
};

/// Environment lookup used by expansion; the default reads the process environment.
using env_lookup = std::optional<std::string> (*)(std::string_view name);
std::optional<std::string> process_env(std::string_view name);

/// Expands `${VAR}` and `${VAR:-default}`; `$$` is a literal `$`. Undefined variables without a
/// default expand to "" and their names are appended to `undefined`.
std::string expand_vars(std::string_view in, env_lookup lookup,
                        std::vector<std::string>* undefined);

/// The problems of `cfg`'s profiles that need its whole server list: a profile whose `servers`
/// pattern names no configured server. load_config_file checks them once includes are added;
/// parse_config when the text includes nothing.
std::vector<config_error> check_profiles(const config& cfg);

/// Parses TOML text (name used in messages) and validates it. No I/O beyond the text given.
config_result parse_config(std::string_view text, std::string_view source_name,
                           env_lookup lookup = process_env);

/// Reads and parses a file. A missing file is an error here; `resolve_config_path` decides
/// whether the embedded default applies. Servers of the files listed in `daemon.include` are
/// added (a server of the TOML wins a name clash; a missing include file is a warning).
config_result load_config_file(const std::string& path, env_lookup lookup = process_env);

/// The files `daemon.include` names, resolved against the directory of `config_path`.
std::vector<std::string> include_files(const daemon_config& daemon, const std::string& config_path);

/// The embedded default configuration (TOML text), shown by `mcpmuxd --print-default-config`.
std::string_view default_config_text();

/// The config path per the contract: --config, else $MCPMUX_CONFIG, else
/// $XDG_CONFIG_HOME/mcpmux/config.toml (~/.config/...). `explicit_path` may be empty.
std::string resolve_config_path(const std::string& explicit_path);

/// Loads the config at `resolve_config_path(explicit_path)`, or the embedded default when that
/// file does not exist and no path was given explicitly (flag or env).
config_result load_config(const std::string& explicit_path, env_lookup lookup = process_env);

/// Where a socket path came from, in the order of precedence.
enum class socket_origin {
  flag,         ///< --socket
  environment,  ///< $MCPMUX_SOCKET
  config,       ///< `daemon.socket`
  runtime_dir,  ///< $XDG_RUNTIME_DIR/mcpmux/mcpmux.sock, or /run/user/UID/mcpmux/mcpmux.sock
  tmp,          ///< /tmp/mcpmux-UID/mcpmux.sock: no runtime directory at all
};
struct socket_location {
  std::string path;
  socket_origin origin;
  /// A path nobody chose by name (daemon.socket or the default): the one a daemon records in
  /// daemon_record_path() for clients whose environment lacks what found it.
  bool is_default() const {
    return origin != socket_origin::flag && origin != socket_origin::environment;
  }
};

/// The socket path per the contract, the one rule every daemon and client follows: --socket,
/// else $MCPMUX_SOCKET, else `daemon.socket`, else <runtime dir>/mcpmux/mcpmux.sock (see
/// runtime_dir()), else /tmp/mcpmux-UID/mcpmux.sock. `lookup` reads the environment.
socket_location locate_socket(const std::string& explicit_path, const daemon_config* daemon,
                              env_lookup lookup = process_env);
/// locate_socket(...).path.
std::string resolve_socket_path(const std::string& explicit_path, const daemon_config* daemon,
                                env_lookup lookup = process_env);

/// The user's runtime directory: $XDG_RUNTIME_DIR when set and absolute; else /run/user/UID when
/// it is the user's own private directory (private_dir_problem finds nothing; the systemd
/// convention, for the agents that pass a bare environment); else nothing.
std::optional<std::string> runtime_dir(env_lookup lookup = process_env);

/// The environment an agent built on the official TypeScript SDK gives a stdio server by default
/// (`getDefaultEnvironment()`): HOME, LOGNAME, PATH, SHELL, TERM and USER of this process, nothing
/// else. For asking where `mcpmux connect` started by such an agent would look.
std::optional<std::string> agent_default_env(std::string_view name);

/// The effective request timeout of a server: MCPMUX_TIMEOUT_MS env, else server, else daemon.
std::chrono::milliseconds effective_timeout(const server_config& s, const daemon_config& d,
                                            env_lookup lookup = process_env);

/// $XDG_CACHE_HOME/mcpmux (~/.cache/mcpmux).
std::string cache_dir();

/// $XDG_STATE_HOME/mcpmux (~/.local/state/mcpmux): what mcpmux keeps between runs that is not
/// a cache (OAuth logins).
std::string state_dir();

/// A `file://` URI for an absolute path, percent-encoded (RFC 3986 path characters stay).
std::string file_uri(std::string_view path);

}  // namespace mcpmux
