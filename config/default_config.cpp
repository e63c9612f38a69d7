// The embedded default configuration: used when no config file exists, and a commented reference.
#include "config/config.hpp"

namespace mcpmux {

std::string_view default_config_text() {
  // Kept as one literal so `mcpmuxd --print-default-config > ~/.config/mcpmux/config.toml` gives
  // the user a working file that documents every key.
  static constexpr std::string_view text = R"toml(# mcpmux configuration (TOML).
#
# Location: --config PATH, else $MCPMUX_CONFIG, else
# $XDG_CONFIG_HOME/mcpmux/config.toml (~/.config/mcpmux/config.toml).
# Without a file mcpmuxd uses this embedded default. Reload with SIGHUP or `mcpmux reload`.
#
# Strings in command, args, env, cwd, url, headers and roots may use
#   ${VAR}            the environment variable VAR ("" and a warning when unset)
#   ${VAR:-default}   VAR, or `default` when VAR is unset or empty
#   ${secret:NAME}    a secret kept with `mcpmux secret set NAME` (the desktop's Secret Service,
#                     else a 0600 file); never written to logs or status
#   $$                a literal $
# cwd, roots and daemon.socket may start with ~/ for your home directory.

[daemon]
# Per-request timeout in milliseconds; 0 = no timeout.
# The environment variable MCPMUX_TIMEOUT_MS overrides this and every server's timeout_ms.
timeout_ms = 30000

# Placed between a server's prefix and a tool name: "fs" + "__" + "read_file".
# 1 to 8 characters of [A-Za-z0-9_-].
tool_separator = "__"

# Longest exposed tool name (16..1024); longer names are shortened with a short hash.
max_tool_name = 64

# trace, debug, info, warn, error or off.
log_level = "info"

# Unix socket clients connect to. Default: $XDG_RUNTIME_DIR/mcpmux/mcpmux.sock (unset: your
# own /run/user/UID, else /tmp/mcpmux-UID). --socket and $MCPMUX_SOCKET take precedence.
# socket = "/run/user/1000/mcpmux/mcpmux.sock"

# Longest accepted JSON-RPC message in bytes, from clients and servers alike (1 KiB..1 GiB).
max_message_bytes = 16777216

# Unsent bytes queued for one client before it is disconnected (>= max_message_bytes).
max_client_queue_bytes = 67108864

# Cap on the combined `instructions` text sent to clients (0..1 MiB).
max_instructions_bytes = 16384

# A server that drops is reconnected with backoff 500 ms, 1 s, 2 s, ... capped here (>= 500).
# It never gives up; its tools stay listed meanwhile.
reconnect_max_ms = 30000

# A tools/list arriving while servers are still starting waits at most this long (0..60000)
# for them (servers with cached tools count as started).
startup_wait_ms = 250

# Items per page of every list served to clients (tools, resources, templates, prompts).
page_size = 1000

# MCP client configs whose servers are added to the ones below, read at every (re)load:
# Claude Desktop/Code (mcpServers, also projects.*.mcpServers of ~/.claude.json), Cursor,
# Windsurf (serverUrl) and VS Code (servers). ~/ and ${VAR} are expanded; relative paths are
# relative to this file. A [servers.NAME] here wins over an included server of the same name
# (with a warning); a missing file is a warning, an unparsable one an error. What such a file
# says that mcpmux cannot use (envFile, inputs, autoApprove, ...) is logged as a warning.
# `mcpmux import FILE --write` copies the servers into this file instead.
# include = ["~/.cursor/mcp.json", "~/.codeium/windsurf/mcp_config.json"]

# Serve MCP over Streamable HTTP at http://HOST:PORT/mcp (also GET /status, /metrics and the
# dashboard at /). Loopback only ("127.0.0.1:PORT", "[::1]:PORT", "localhost:PORT") unless
# http_allow_remote. Requests must carry a loopback Host and, when present, a loopback Origin.
# Without it, `mcpmux dashboard` starts the dashboard alone on a free loopback port.
# http = "127.0.0.1:8931"
# http_allow_remote = false
# "token" (default): every request sends "Authorization: Bearer <token>"; "none" lets every
# local user in (with a warning at each start).
# http_auth = "token"
# The token's file (its trimmed content); default: http-token made next to the socket (0600).
# http_token_file = "~/.config/mcpmux/http.token"
# More tokens, each a client's own (at least 32 characters; the audit log names the client).
# http_tokens = { editor = "${secret:editor_token}" }
# Limits: requests of one session awaiting their answer (beyond: 429), live sessions and open
# connections (beyond: 503).
# http_max_requests_per_session = 64
# http_max_sessions = 128
# http_max_connections = 256

# The audit log (in $XDG_STATE_HOME/mcpmux/state.db; `mcpmux history`): every tools/call,
# prompts/get and resources/read with its client, profile, server, outcome, time and sizes.
# audit = true
# Also the arguments (secrets redacted, first 4 KiB).
# audit_arguments = false
# Entries older than this many days are dropped, and beyond audit_max_rows the oldest.
# audit_retention_days = 30
# audit_max_rows = 1000000
# The sandbox of every stdio server that names none: "default", "strict", "off", "required"
# (see sandbox below; $MCPMUX_SANDBOX overrides it).
# sandbox = "default"
# Tools a person confirms before they run (an elicitation asked of the calling client), for
# clients whose profile sets none: "destructive" (readOnlyHint not true and destructiveHint not
# false) and globs over exposed tool names.
# confirm = ["destructive"]

# A result's text beyond this many bytes is cut and the rest read with mcpmux__read_result
# (handles expire 10 minutes after their last read); 0 = no cap. Servers and profiles may set
# their own.
# max_result_bytes = 100000

# One table per upstream server: [servers.NAME], NAME of [A-Za-z0-9_-], at most 64 characters.
#
# Keys for every server:
#   type        "stdio" (default), "http" (Streamable HTTP) or "sse" (legacy HTTP+SSE)
#   timeout_ms  per-request timeout for this server; 0 = none; default daemon.timeout_ms
#   enabled     false keeps the server configured but not started (default true)
#   prefix      exposed tool names are <prefix><tool_separator><tool>; default the server
#               name; "" exposes the tool names unchanged
#   roots       answered to roots/list: absolute paths or file:// URIs;
#               default the server's cwd
#   retry       a call whose connection dropped (the server died mid-call) is sent once more
#               after the reconnect: "safe" (default) only when it cannot have run or cannot
#               harm twice (not a tools/call, or a tool annotated readOnlyHint/idempotentHint);
#               "always"; "never". (retry_calls = true/false still means always/never.)
#   ping_interval_ms  send ping this often; two misses in a row restart the server
#               (default 0 = off)
#   isolation   "shared" (default: one upstream for every client) or "per-client": each client
#               session gets its own process/connection, started on first use and closed when
#               the session ends (for stateful servers such as a browser)
#   reset_timeout_on_progress  progress notifications restart a call's timeout (default true)
#   max_timeout_ms  a call extended by progress never runs longer than this (default 600000;
#               0 = no cap)
#   era         protocol era: "auto" (default: detected, and remembered), "legacy"
#               (2025-11-25 and older) or "modern" (2026-07-28); stdio and http servers
#   tools       which tools clients see: globs of the server's tool names, "!" hides, the
#               last match decides, e.g. ["*", "!delete_*"]; default all
#   prompts     the same for prompts
#   resources   the same for resource URIs and URI templates
#   on_change   a tool, prompt or resource template whose definition changed, was renamed or
#               added since the server was trusted: "quarantine" (default: held back until
#               `mcpmux trust NAME` approves it), "warn" (shown, with a warning) or "accept"
#   trust       "auto" (default): a server's first definitions are trusted and pinned;
#               "ask": a new server is held back whole until `mcpmux trust NAME --all`
#   redact_results  what is replaced by "[redacted: KIND]" in results before clients see
#               them: "patterns" (default: the secrets mcpmux holds and credential shapes),
#               "known" (those secrets only) or "off"
#   max_calls_per_minute  calls to it started in any minute, all clients (0 = no limit)
#   max_concurrent_calls  calls to it in flight at once (0 = no limit); a call over a limit
#               waits its turn up to its timeout, then fails with a tool error
#   tools = ["@read-only", "!@destructive"] also selects tools by their annotations
#               (@read-only, @destructive, @idempotent, @open-world)
#   max_result_bytes  a result's text beyond it is paged (default: daemon.max_result_bytes)
# stdio servers only:
#   command     program to run (looked up in PATH); required
#   args        array of arguments
#   env         table of environment variables added to mcpmuxd's environment
#   cwd         working directory (absolute path); default mcpmuxd's
#   sandbox     "default": the system read-only, the home directory hidden but what the
#               server is given (cwd, paths in args, roots, allow_read, allow_write), mcpmux's
#               own files never, the host's network; "strict": no network, nothing writable
#               but a private /tmp; "required": like default, never started unsandboxed;
#               "off": as your user. `mcpmux sandbox NAME` shows the effect.
#   network     "all", "none", or only these hosts, through mcpmux's proxy:
#               ["api.example.com", "*.example.org", "host:8443"]
#   allow_read, allow_write  more paths the server sees (read-only, read-write)
#   memory_max  "4G" (default), cpu_max 0 (CPUs; 0 = no limit), tasks_max 1024, files_max 8192
# http and sse servers only:
#   url         endpoint, http:// or https://; required
#   headers     table of extra request headers
#   ca_file     extra CA bundle (PEM) for a private CA; the system store is always used
#   token_command  shell command printing a bearer token (Authorization: Bearer ...);
#               fetched again once on HTTP 401/403
#   oauth       true: log in with OAuth 2.1 (`mcpmux auth login NAME` once; tokens are
#               refreshed). Or a table:
#                 client_id            a client registered beforehand (default: registered
#                                      dynamically)
#                 client_secret_file   its secret, in a file of its own
#                 client_metadata_url  an https Client ID Metadata Document instead
#                 scope                the scope to ask for (default: the server's)
#                 grant                "authorization_code" (default: a person logs in) or
#                                      "client_credentials" (a machine; needs client_id and
#                                      client_secret_file)
#                 redirect_port        the loopback redirect's port (default 0: any free one)
#
# Examples:
#
# [servers.files]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "~/src"]
# env = { API_KEY = "${API_KEY}" }
# cwd = "~/src"
# timeout_ms = 60000
# prefix = "fs"
# roots = ["~/src"]
#
# [servers.remote]
# type = "http"
# url = "https://example.com/mcp"
# headers = { Authorization = "Bearer ${TOKEN}" }
#
# [servers.legacy]
# type = "sse"
# url = "http://127.0.0.1:8080/sse"
# enabled = false
#
# [servers.github]
# type = "http"
# url = "https://api.example.com/mcp"
# oauth = true
# tools = ["*", "!delete_*"]

# Profiles: what one kind of client sees. [profiles.NAME], NAME of [A-Za-z0-9_-]. A client
# picks one with `mcpmux connect --profile NAME` or /mcp/NAME; one whose program matches
# `match` gets it; the others get [profiles.default] if there is one, else everything.
#   servers             server names (globs); default all
#   tools               exposed tool names (globs, "!" hides, the last match decides); also
#   prompts, resources  (resources by exposed URI)
#   exposure            "all" (default: every tool listed), "search" (a search tool and a call
#                       tool instead), "auto" (all while the list stays within
#                       tool_budget_tokens, search above it) or "code" (a search tool and
#                       mcpmux__run_code instead; sets code = true)
#   tool_budget_tokens  for "auto" (default 8000)
#   match               globs of the client's program name, path or command line
#   descriptions        a tool's description replaced, by exposed name
#   list_found_tools    search: the tools a client's searches found join its tools list
#   redact_results      as a server's, for this profile's clients (default: each server's)
#   confirm             as [daemon] confirm, for this profile's clients ([] asks nothing)
#   max_calls_per_minute, max_concurrent_calls  as a server's, for all this profile's
#               clients together (default: no limit)
#   max_result_bytes    as a server's, for this profile's clients (wins over the servers')
#   code                true: mcpmux__run_code runs the model's JavaScript program, whose tool
#                       calls are this profile's calls, in a sandbox (docs/code-mode.md)
#   code_timeout_ms, code_max_calls  a program's wall time (default 30000) and tool calls
#               (default 100)
#
# [profiles.claude]
# servers = ["github", "files"]
# exposure = "auto"
# match = ["claude", "*claude-code*"]
# descriptions = { "github__search_issues" = "Search issues of our repos" }

# The reference server exercising every MCP feature (tools, resources, prompts, progress).
[servers.everything]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]

# A knowledge-graph memory server.
[servers.memory]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory"]
)toml";
  return text;
}

}  // namespace mcpmux
