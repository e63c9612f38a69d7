// Loads mcpmuxd's TOML configuration: parse and validate (collecting every error), includes.
// The validator's [servers.NAME] tables are in config_servers.cpp, its value readers in
// config_values.cpp; the ${VAR} language is in expand.cpp, the paths in paths.cpp.
#include "config/config.hpp"
#include "base/text.hpp"
#include "config/config_detail.hpp"
#include "config/import.hpp"
#include "config/names.hpp"
#include "config/paths.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <toml++/toml.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace mcpmux {
namespace {

// Every key each table takes (config_keys).
constexpr std::array<std::string_view, 3> top_keys = {"daemon", "servers", "profiles"};
constexpr std::array<std::string_view, 27> daemon_keys = {"timeout_ms",
                                                          "tool_separator",
                                                          "max_tool_name",
                                                          "log_level",
                                                          "socket",
                                                          "max_message_bytes",
                                                          "max_client_queue_bytes",
                                                          "max_instructions_bytes",
                                                          "reconnect_max_ms",
                                                          "startup_wait_ms",
                                                          "page_size",
                                                          "include",
                                                          "http",
                                                          "http_allow_remote",
                                                          "http_auth",
                                                          "http_token_file",
                                                          "http_tokens",
                                                          "audit",
                                                          "audit_arguments",
                                                          "audit_retention_days",
                                                          "audit_max_rows",
                                                          "http_max_requests_per_session",
                                                          "http_max_sessions",
                                                          "http_max_connections",
                                                          "sandbox",
                                                          "confirm",
                                                          "max_result_bytes"};
constexpr std::array<std::string_view, 38> server_keys = {"type",
                                                          "command",
                                                          "args",
                                                          "env",
                                                          "cwd",
                                                          "url",
                                                          "headers",
                                                          "timeout_ms",
                                                          "enabled",
                                                          "prefix",
                                                          "roots",
                                                          "retry",
                                                          "retry_calls",
                                                          "ping_interval_ms",
                                                          "ca_file",
                                                          "token_command",
                                                          "reset_timeout_on_progress",
                                                          "max_timeout_ms",
                                                          "isolation",
                                                          "era",
                                                          "oauth",
                                                          "tools",
                                                          "prompts",
                                                          "resources",
                                                          "on_change",
                                                          "trust",
                                                          "sandbox",
                                                          "network",
                                                          "allow_read",
                                                          "allow_write",
                                                          "memory_max",
                                                          "cpu_max",
                                                          "tasks_max",
                                                          "files_max",
                                                          "redact_results",
                                                          "max_calls_per_minute",
                                                          "max_concurrent_calls",
                                                          "max_result_bytes"};
constexpr std::array<std::string_view, 6> oauth_keys = {
    "client_id", "client_secret_file", "client_metadata_url", "scope", "grant", "redirect_port"};
constexpr std::array<std::string_view, 17> profile_keys = {"servers",
                                                           "tools",
                                                           "prompts",
                                                           "resources",
                                                           "exposure",
                                                           "tool_budget_tokens",
                                                           "match",
                                                           "descriptions",
                                                           "list_found_tools",
                                                           "redact_results",
                                                           "confirm",
                                                           "max_calls_per_minute",
                                                           "max_concurrent_calls",
                                                           "max_result_bytes",
                                                           "code",
                                                           "code_timeout_ms",
                                                           "code_max_calls"};

// A key that opens a table of known keys, as the validator reads it: `path` names the opened
// table in a key path ("servers.*": one table per server), `also_value` when the key may be a
// plain value instead (`oauth = true`).
struct nested_table {
  std::string_view parent, key, table, path;
  bool also_value;
};
constexpr std::array<nested_table, 4> nested_tables = {{
    {"", "daemon", "daemon", "daemon", false},
    {"", "servers", "server", "servers.*", false},
    {"", "profiles", "profile", "profiles.*", false},
    {"server", "oauth", "oauth", "oauth", true},
}};

// The full paths of `table`'s keys and of the tables they open, under `prefix`.
void add_key_paths(std::string_view table, const std::string& prefix,
                   std::vector<std::string>& out) {
  for (std::string_view key : config_keys(table)) {
    const auto nested = std::find_if(nested_tables.begin(), nested_tables.end(),
                                     [&](auto& n) { return n.parent == table && n.key == key; });
    if (nested == nested_tables.end() || nested->also_value)
      out.push_back(prefix + std::string(key));
    if (nested != nested_tables.end())
      add_key_paths(nested->table, prefix + std::string(nested->path) + ".", out);
  }
}

}  // namespace

std::span<const std::string_view> config_keys(std::string_view table) {
  if (table == "daemon") return daemon_keys;
  if (table == "server") return server_keys;
  if (table == "oauth") return oauth_keys;
  if (table == "profile") return profile_keys;
  return top_keys;
}

std::vector<std::string> config_key_paths() {
  std::vector<std::string> out;
  add_key_paths("", "", out);
  return out;
}

namespace config_validation {
namespace {

using names::is_name;

constexpr std::int64_t kib = 1024;
constexpr std::int64_t mib = 1024 * kib;
constexpr std::int64_t gib = 1024 * mib;

// `daemon.http`: HOST:PORT with an IP literal ([...] for IPv6) or localhost; "" when valid.
// A non-loopback host needs `http_allow_remote` (the endpoint checks this again at bind).
std::string check_http_address(std::string_view a, bool allow_remote) {
  const auto colon = a.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return fmt::format("must be HOST:PORT, e.g. \"127.0.0.1:8931\" (got \"{}\")", a);
  const auto split = split_host_port(a);
  if (!split || split->port < 1)
    return fmt::format("port must be 1..65535 (got \"{}\")", a.substr(colon + 1));
  const std::string host(a.substr(0, colon));
  bool loopback = false;
  unsigned char buf[16];
  if (host == "localhost") {
    loopback = true;
  } else if (split->bracketed) {
    if (::inet_pton(AF_INET6, split->host.c_str(), buf) != 1)
      return fmt::format("\"{}\" is not an IPv6 address", host);
    static const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    loopback = std::memcmp(buf, one, 16) == 0;
  } else if (::inet_pton(AF_INET, host.c_str(), buf) == 1) {
    loopback = buf[0] == 127;
  } else {
    return fmt::format("host must be localhost, an IPv4 address or [IPv6] (got \"{}\")", host);
  }
  if (!loopback && !allow_remote)
    return fmt::format(
        "\"{}\" is not a loopback address; the HTTP endpoint would be reachable from other "
        "machines (set http_allow_remote = true to allow that, with http_token_file)",
        host);
  return {};
}

}  // namespace

config_result validator::run(const toml::table& root) {
  config cfg;
  cfg.source = file_;
  for (auto&& [k, v] : root) {
    const std::string_view name = k.str();
    if (name == "daemon") {
      parse_daemon(v, cfg.daemon);
    } else if (name == "servers") {
      parse_servers(v, cfg.servers);
    } else if (name == "profiles") {
      parse_profiles(v, cfg.profiles);
    } else {
      fail(v, join_key("", name), unknown_message("key", name, config_keys("")));
    }
  }
  // toml++ iterates keys alphabetically; file order reads better and matches the user's editor.
  std::stable_sort(errors_.begin(), errors_.end(),
                   [](const config_error& a, const config_error& b) { return a.line < b.line; });
  config_result r;
  r.errors = std::move(errors_);
  r.warnings = std::move(warnings_);
  if (r.errors.empty()) r.value = std::move(cfg);
  return r;
}

void validator::parse_daemon(const toml::node& node, daemon_config& d) {
  const auto* t = node.as_table();
  if (!t) return type_error(node, "daemon", "a table");
  const toml::node* message_node = nullptr;
  const toml::node* queue_node = nullptr;
  const toml::node* http_node = nullptr;
  bool sizes_ok = true;
  for (auto&& [k, v] : *t) {
    const std::string_view name = k.str();
    const std::string key = join_key("daemon", name);
    if (name == "timeout_ms") {
      if (auto i = get_integer(v, key, 0, max_timeout_ms))
        d.timeout = std::chrono::milliseconds(*i);
    } else if (name == "tool_separator") {
      if (auto s = get_string(v, key)) {
        if (s->empty() || s->size() > 8 || !is_name(*s))
          fail(v, key, fmt::format("must be 1 to 8 characters of [A-Za-z0-9_-] (got \"{}\")", *s));
        else
          d.tool_separator = *s;
      }
    } else if (name == "max_tool_name") {
      if (auto i = get_integer(v, key, 16, 1024)) d.max_tool_name = static_cast<std::size_t>(*i);
    } else if (name == "sandbox") {
      if (auto m = sandbox(v, key)) d.sandbox = *m;
    } else if (name == "confirm") {
      d.confirm = confirm_list(v, key);
    } else if (name == "max_result_bytes") {
      if (auto i = get_integer(v, key, 0, max_result_bytes_limit))
        d.max_result_bytes = static_cast<std::size_t>(*i);
    } else if (name == "log_level") {
      if (auto s = get_string(v, key)) {
        const std::initializer_list<std::string_view> levels = {"trace", "debug", "info",
                                                                "warn",  "error", "off"};
        if (std::find(levels.begin(), levels.end(), *s) != levels.end()) {
          d.log_level = *s;
        } else {
          auto near = closest(*s, levels);
          fail(v, key,
               fmt::format("must be one of trace, debug, info, warn, error, off (got \"{}\"){}", *s,
                           near ? fmt::format("; did you mean \"{}\"?", *near) : ""));
        }
      }
    } else if (name == "socket") {
      if (auto s = absolute_path(v, key, false)) {
        // Longer paths do not fit sockaddr_un and bind() would fail only at start-up.
        if (s->size() >= sizeof(sockaddr_un{}.sun_path))
          fail(v, key,
               fmt::format("is {} bytes long; a Unix socket path must be shorter than {}",
                           s->size(), sizeof(sockaddr_un{}.sun_path)));
        else
          d.socket = *s;
      }
    } else if (name == "max_message_bytes") {
      message_node = &v;
      if (auto i = get_integer(v, key, 1 * kib, 1 * gib))
        d.max_message_bytes = static_cast<std::size_t>(*i);
      else
        sizes_ok = false;
    } else if (name == "max_client_queue_bytes") {
      queue_node = &v;
      if (auto i = get_integer(v, key, 1 * kib, INT64_MAX))
        d.max_client_queue_bytes = static_cast<std::size_t>(*i);
      else
        sizes_ok = false;
    } else if (name == "max_instructions_bytes") {
      if (auto i = get_integer(v, key, 0, 1 * mib))
        d.max_instructions_bytes = static_cast<std::size_t>(*i);
    } else if (name == "reconnect_max_ms") {
      if (auto i = get_integer(v, key, 500, max_timeout_ms))
        d.reconnect_max = std::chrono::milliseconds(*i);
    } else if (name == "startup_wait_ms") {
      if (auto i = get_integer(v, key, 0, 60000)) d.startup_wait = std::chrono::milliseconds(*i);
    } else if (name == "page_size") {
      if (auto i = get_integer(v, key, 1, 100000)) d.page_size = static_cast<std::size_t>(*i);
    } else if (name == "include") {
      d.include = include_paths(v, key);
    } else if (name == "http") {
      http_node = &v;
      if (auto s = get_string(v, key)) d.http = *s;
    } else if (name == "http_allow_remote") {
      if (auto b = get_bool(v, key)) d.http_allow_remote = *b;
    } else if (name == "audit") {
      if (auto b = get_bool(v, key)) d.audit = *b;
    } else if (name == "audit_arguments") {
      if (auto b = get_bool(v, key)) d.audit_arguments = *b;
    } else if (name == "audit_retention_days") {
      if (auto i = get_integer(v, key, 1, 36500)) d.audit_retention_days = *i;
    } else if (name == "audit_max_rows") {
      if (auto i = get_integer(v, key, 1000, 1000000000)) d.audit_max_rows = *i;
    } else if (name == "http_auth") {
      if (auto i = get_choice(v, key, {"token", "none"})) d.http_auth_none = *i == 1;
    } else if (name == "http_token_file") {
      if (auto s = absolute_path(v, key, false)) d.http_token_file = *s;
    } else if (name == "http_tokens") {
      d.http_tokens = string_table(v, key, table_kind::tokens);
    } else if (name == "http_max_requests_per_session") {
      if (auto i = get_integer(v, key, 1, 100000))
        d.http_max_requests_per_session = static_cast<std::size_t>(*i);
    } else if (name == "http_max_sessions") {
      if (auto i = get_integer(v, key, 1, 100000))
        d.http_max_sessions = static_cast<std::size_t>(*i);
    } else if (name == "http_max_connections") {
      if (auto i = get_integer(v, key, 1, 100000))
        d.http_max_connections = static_cast<std::size_t>(*i);
    } else {
      fail(v, key, unknown_message("key", name, config_keys("daemon")));
    }
  }
  if (http_node && !d.http.empty()) {
    if (auto err = check_http_address(d.http, d.http_allow_remote); !err.empty())
      fail(*http_node, "daemon.http", err);
  }
  // A queue smaller than one message would drop a client for sending a single legal reply.
  if (sizes_ok && d.max_client_queue_bytes < d.max_message_bytes) {
    if (queue_node)
      fail(*queue_node, "daemon.max_client_queue_bytes",
           fmt::format("must be >= max_message_bytes ({})", d.max_message_bytes));
    else if (message_node)
      fail(*message_node, "daemon.max_message_bytes",
           fmt::format("must be <= max_client_queue_bytes ({}, the default)",
                       d.max_client_queue_bytes));
  }
}

// `daemon.include`: paths with ${VAR} and ~/ expanded; relative ones stay relative here (the
// text has no directory) and load_config_file resolves them against the config file's.
std::vector<std::string> validator::include_paths(const toml::node& n, const std::string& key) {
  std::vector<std::string> out;
  each_string(n, key, [&](std::string s, const toml::node& e, const std::string& sub) {
    auto path = expand_home(std::move(s), e, sub);
    if (!path) return;
    if (path->empty()) return fail(e, sub, "must not be empty");
    out.push_back(std::move(*path));
  });
  return out;
}

}  // namespace config_validation

namespace {

using config_validation::max_timeout_ms;
using config_validation::validator;

// The config is read synchronously at start and reload; a cap keeps a wrong path (a log file,
// /dev/zero) from stalling the loop or eating memory.
constexpr std::size_t max_config_file_bytes = 4u << 20;

// Adds the servers of the `daemon.include` files to r.value: below the TOML's own servers in
// priority, each validated (and ${VAR}-expanded) like a TOML table of its own.
std::string resolve_include(const std::string& config_path, const std::string& inc) {
  if (inc.front() == '/') return inc;
  const std::size_t slash = config_path.rfind('/');
  return (slash == std::string::npos ? "./" : config_path.substr(0, slash + 1)) + inc;
}

void add_includes(config_result& r, const std::string& config_path, env_lookup lookup) {
  config& cfg = *r.value;
  std::map<std::string, std::string> included_from;  // server name → include file
  std::vector<server_config> added;
  for (std::size_t i = 0; i < cfg.daemon.include.size(); ++i) {
    const std::string& inc = cfg.daemon.include[i];
    if (inc.empty()) continue;  // rejected by the parser; only a hand-built config has one
    const std::string path = resolve_include(config_path, inc);
    const std::string key = fmt::format("daemon.include[{}]", i);
    bool missing = false;
    import_outcome im = import_mcp_file(path, &missing);
    if (!im.value) {
      if (missing)
        r.warnings.push_back(fmt::format("{}: {} does not exist; skipped", key, path));
      else
        r.errors.push_back(
            config_error{config_path, 0, key, fmt::format("cannot import {}: {}", path, im.error)});
      continue;
    }
    for (const std::string& note : im.value->notes)
      r.warnings.push_back(fmt::format("{}: {}", path, note));
    for (const server_config& s : im.value->servers) {
      const bool in_toml = std::any_of(cfg.servers.begin(), cfg.servers.end(),
                                       [&](const server_config& x) { return x.name == s.name; });
      if (in_toml) {
        r.warnings.push_back(
            fmt::format("{}: server \"{}\" ignored: [servers.{}] in {} takes precedence", path,
                        s.name, s.name, config_path));
        continue;
      }
      if (auto it = included_from.find(s.name); it != included_from.end()) {
        r.warnings.push_back(fmt::format("{}: server \"{}\" ignored: already included from {}",
                                         path, s.name, it->second));
        continue;
      }
      config_result one = parse_config(to_toml(s), path, lookup);
      for (const std::string& w : one.warnings)
        r.warnings.push_back(fmt::format("{}: {}", path, w));
      if (!one.value || one.value->servers.size() != 1) {
        for (const config_error& e : one.errors)
          r.warnings.push_back(
              fmt::format("{}: server \"{}\" skipped: {}: {}", path, s.name, e.key, e.message));
        continue;
      }
      server_config got = std::move(one.value->servers.front());
      got.line = 0;
      included_from.emplace(got.name, path);
      added.push_back(std::move(got));
    }
  }
  if (!r.errors.empty()) {
    r.value.reset();
    return;
  }
  for (server_config& s : added) cfg.servers.push_back(std::move(s));
  std::sort(cfg.servers.begin(), cfg.servers.end(),
            [](const server_config& a, const server_config& b) { return a.name < b.name; });
}

// A stdio server that does not name its sandbox gets the daemon's (`[daemon] sandbox`, or
// $MCPMUX_SANDBOX over it: "off" to find out whether the sandbox is what breaks a server), so
// that changing that default changes the servers and a reload restarts them.
void resolve_sandbox_modes(config_result& r, env_lookup lookup) {
  if (!r.value) return;
  sandbox_mode fallback = r.value->daemon.sandbox;
  if (auto env = lookup("MCPMUX_SANDBOX")) {
    constexpr std::pair<std::string_view, sandbox_mode> names[] = {
        {"default", sandbox_mode::standard},
        {"strict", sandbox_mode::strict},
        {"off", sandbox_mode::off},
        {"required", sandbox_mode::required}};
    const auto* m = std::find_if(std::begin(names), std::end(names),
                                 [&](const auto& n) { return n.first == *env; });
    if (m != std::end(names))
      fallback = m->second;
    else
      r.warnings.push_back("MCPMUX_SANDBOX=\"" + *env +
                           "\" is not one of default, strict, off, required: ignored");
  }
  for (server_config& s : r.value->servers)
    if (s.type == server_type::stdio && !s.sandbox.mode) s.sandbox.mode = fallback;
}

// Profiles that name servers the configuration lacks make it invalid.
void add_profile_errors(config_result& r) {
  auto errors = check_profiles(*r.value);
  if (errors.empty()) return;
  for (auto& e : errors) r.errors.push_back(std::move(e));
  r.value.reset();
}

}  // namespace

std::string_view to_string(server_type t) {
  switch (t) {
    case server_type::stdio:
      return "stdio";
    case server_type::http:
      return "http";
    case server_type::sse:
      return "sse";
  }
  return "unknown";
}

std::string_view to_string(sandbox_mode m) {
  switch (m) {
    case sandbox_mode::standard:
      return "default";
    case sandbox_mode::strict:
      return "strict";
    case sandbox_mode::off:
      return "off";
    case sandbox_mode::required:
      return "required";
  }
  return "unknown";
}

std::string_view to_string(era_setting e) {
  switch (e) {
    case era_setting::auto_detect:
      return "auto";
    case era_setting::legacy:
      return "legacy";
    case era_setting::modern:
      return "modern";
  }
  return "unknown";
}

std::string_view to_string(change_policy p) {
  switch (p) {
    case change_policy::quarantine:
      return "quarantine";
    case change_policy::warn:
      return "warn";
    case change_policy::accept:
      return "accept";
  }
  return "unknown";
}

std::string_view to_string(retry_mode m) {
  switch (m) {
    case retry_mode::safe:
      return "safe";
    case retry_mode::always:
      return "always";
    case retry_mode::never:
      return "never";
  }
  return "unknown";
}

std::string config_error::to_string() const {
  std::string out = file;
  if (line > 0) out += fmt::format(":{}", line);
  if (!out.empty()) out += ": ";
  if (!key.empty()) out += key + ": ";
  return out + message;
}

config_result parse_config(std::string_view text, std::string_view source_name, env_lookup lookup) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    config_result r;
    r.errors.push_back(config_error{std::string(source_name),
                                    static_cast<int>(e.source().begin.line), "",
                                    std::string(e.description())});
    return r;
  }
  config_result r = validator(source_name, lookup ? lookup : process_env).run(root);
  resolve_sandbox_modes(r, lookup ? lookup : process_env);
  // With includes the server list is only whole in load_config_file.
  if (r.value && r.value->daemon.include.empty()) add_profile_errors(r);
  return r;
}

config_result load_config_file(const std::string& path, env_lookup lookup) {
  config_result r;
  auto fail = [&](std::string message) {
    r.errors.push_back(config_error{path, 0, "", std::move(message)});
    return r;
  };
  auto text = read_text_file(path, max_config_file_bytes);
  if (!text) return fail(std::move(text.error().message));
  r = parse_config(*text, path, lookup);
  if (r.value) {
    r.value->source = path;
    add_includes(r, path, lookup ? lookup : process_env);
    resolve_sandbox_modes(r, lookup ? lookup : process_env);
    if (r.value && !r.value->daemon.include.empty()) add_profile_errors(r);
  }
  return r;
}

config_result load_config(const std::string& explicit_path, env_lookup lookup) {
  // Only the default location may be absent: a path the user named and mistyped must fail loudly
  // rather than silently start the daemon with the embedded servers.
  const bool named = !explicit_path.empty() || getenv_nonempty("MCPMUX_CONFIG");
  const std::string path = resolve_config_path(explicit_path);
  struct stat st {};
  if (!named && ::stat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
    config_result r = parse_config(default_config_text(), "<default>", lookup);
    if (r.value) r.value->source = "<default>";
    return r;
  }
  return load_config_file(path, lookup);
}

std::vector<std::string> include_files(const daemon_config& daemon,
                                       const std::string& config_path) {
  std::vector<std::string> out;
  for (const auto& inc : daemon.include)
    if (!inc.empty()) out.push_back(resolve_include(config_path, inc));
  return out;
}

std::chrono::milliseconds effective_timeout(const server_config& s, const daemon_config& d,
                                            env_lookup lookup) {
  if (auto env = (lookup ? lookup : process_env)("MCPMUX_TIMEOUT_MS"); env && !env->empty()) {
    std::uint64_t v = 0;
    const char* end = env->data() + env->size();
    auto [ptr, ec] = std::from_chars(env->data(), end, v);
    const bool digits_only =
        std::all_of(env->begin(), env->end(), [](char c) { return c >= '0' && c <= '9'; });
    // A value too large to represent still clearly means "very long": clamp it instead of ignoring.
    if (digits_only && ptr == end && (ec == std::errc{} || ec == std::errc::result_out_of_range)) {
      if (ec == std::errc::result_out_of_range || v > static_cast<std::uint64_t>(max_timeout_ms))
        v = static_cast<std::uint64_t>(max_timeout_ms);
      return std::chrono::milliseconds(static_cast<std::int64_t>(v));
    }
  }
  if (s.timeout) return *s.timeout;
  return d.timeout;
}

}  // namespace mcpmux
