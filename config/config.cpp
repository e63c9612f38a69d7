// Loads mcpmuxd's TOML configuration: parse and validate (collecting every error), includes.
// The ${VAR} language is in expand.cpp, the paths in paths.cpp.
#include "config/config.hpp"
#include "config/expand.hpp"
#include "config/import.hpp"
#include "config/names.hpp"
#include "config/paths.hpp"
#include "core/protocol/text.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace mcpmux {
namespace {

using names::is_header_name;
using names::is_name;
using names::is_var_name;

// Timeouts are added to steady_clock::now() by the transports; capping them keeps that sum far
// from overflow while still allowing ~24.8 days, which is "forever" for a request.
constexpr std::int64_t max_timeout_ms = 2147483647;
// The config is read synchronously at start and reload; a cap keeps a wrong path (a log file,
// /dev/zero) from stalling the loop or eating memory.
constexpr std::size_t max_config_file_bytes = 4u << 20;
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

// Dotted key path as the user would write it; keys that are not bare TOML keys are quoted so the
// path stays unambiguous (`servers.x.headers."X Y"`).
std::string join_key(std::string_view parent, std::string_view child) {
  std::string k =
      !child.empty() && is_name(child) ? std::string(child) : fmt::format("\"{}\"", child);
  return parent.empty() ? k : fmt::format("{}.{}", parent, k);
}

int line_of(const toml::node& n) {
  return static_cast<int>(n.source().begin.line);
}

std::string_view describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate a typo most likely meant: a small edit distance, or a truncation such as
// `timeout` for `timeout_ms`.
std::optional<std::string_view> closest(std::string_view word,
                                        std::initializer_list<std::string_view> candidates) {
  std::optional<std::string_view> best;
  std::size_t best_score = 3;
  for (std::string_view c : candidates) {
    std::size_t score = edit_distance(word, c);
    const bool truncated = word.size() >= 4 && c.starts_with(word);
    const bool extended = c.size() >= 4 && word.starts_with(c);  // `warning` for `warn`
    if (truncated || extended) score = std::min<std::size_t>(score, 2);
    if (score < best_score) best_score = score, best = c;
  }
  return best;
}

std::string unknown_message(std::string_view what, std::string_view word,
                            std::initializer_list<std::string_view> candidates) {
  if (auto c = closest(word, candidates))
    return fmt::format("unknown {}; did you mean \"{}\"?", what, *c);
  return fmt::format("unknown {}", what);
}

// Walks the parsed TOML tree once, filling a config and collecting every problem on the way.
class validator {
 public:
  validator(std::string_view file, env_lookup lookup) : file_(file), lookup_(lookup) {}

  config_result run(const toml::table& root) {
    config cfg;
    cfg.source = file_;
    for (auto&& [k, v] : root) {
      const std::string_view name = k.str();
      if (name == "daemon") {
        parse_daemon(v, cfg.daemon);
      } else if (name == "servers") {
        parse_servers(v, cfg.servers);
      } else {
        fail(v, join_key("", name), unknown_message("key", name, {"daemon", "servers"}));
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

 private:
  void fail(int line, std::string key, std::string message) {
    errors_.push_back(config_error{file_, line, std::move(key), std::move(message)});
  }
  void fail(const toml::node& n, std::string key, std::string message) {
    fail(line_of(n), std::move(key), std::move(message));
  }
  void type_error(const toml::node& n, std::string key, std::string_view expected) {
    fail(n, std::move(key), fmt::format("expected {}, got {}", expected, describe(n)));
  }

  std::optional<std::string> get_string(const toml::node& n, const std::string& key) {
    if (const auto* s = n.as_string()) return s->get();
    type_error(n, key, "a string");
    return std::nullopt;
  }

  std::optional<std::int64_t> get_integer(const toml::node& n, const std::string& key,
                                          std::int64_t lo, std::int64_t hi) {
    const auto* i = n.as_integer();
    if (!i) {
      type_error(n, key, "an integer");
      return std::nullopt;
    }
    const std::int64_t v = i->get();
    if (v < lo || v > hi) {
      // Keys whose upper bound is only an overflow guard read better as a plain minimum.
      const bool open_ended = hi >= max_timeout_ms;
      fail(n, key,
           v < lo && open_ended ? fmt::format("must be >= {} (got {})", lo, v)
                                : fmt::format("must be between {} and {} (got {})", lo, hi, v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> get_bool(const toml::node& n, const std::string& key) {
    if (const auto* b = n.as_boolean()) return b->get();
    type_error(n, key, "a boolean");
    return std::nullopt;
  }

  // ${VAR} expansion of one value, turning syntax problems into errors and unset variables into
  // warnings that name the key.
  std::optional<std::string> expand(std::string_view raw, const toml::node& n,
                                    const std::string& key) {
    std::string out, error;
    std::vector<std::string> undefined;
    expand_into(raw, lookup_, out, undefined, &error);
    if (!error.empty()) {
      fail(n, key, std::move(error));
      return std::nullopt;
    }
    for (const auto& var : undefined)
      warnings_.push_back(fmt::format("{}: ${{{}}} is not set; using \"\"", key, var));
    return out;
  }

  std::optional<std::string> expanded_string(const toml::node& n, const std::string& key) {
    auto s = get_string(n, key);
    if (!s) return std::nullopt;
    return expand(*s, n, key);
  }

  // `~` / `~/...` → $HOME (through the lookup so tests control it).
  std::optional<std::string> expand_home(std::string s, const toml::node& n,
                                         const std::string& key) {
    if (s != "~" && !s.starts_with("~/")) return s;
    auto home = lookup_("HOME");
    if (!home || home->empty()) {
      fail(n, key, "starts with ~ but HOME is not set");
      return std::nullopt;
    }
    return *home + s.substr(1);
  }

  std::optional<std::string> absolute_path(const toml::node& n, const std::string& key,
                                           bool expand_vars) {
    auto s = expand_vars ? expanded_string(n, key) : get_string(n, key);
    if (!s) return std::nullopt;
    s = expand_home(std::move(*s), n, key);
    if (!s) return std::nullopt;
    if (s->empty() || s->front() != '/') {
      fail(n, key, fmt::format("must be an absolute path or start with ~/ (got \"{}\")", *s));
      return std::nullopt;
    }
    return s;
  }

  void parse_daemon(const toml::node& node, daemon_config& d) {
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
            fail(v, key,
                 fmt::format("must be 1 to 8 characters of [A-Za-z0-9_-] (got \"{}\")", *s));
          else
            d.tool_separator = *s;
        }
      } else if (name == "max_tool_name") {
        if (auto i = get_integer(v, key, 16, 1024)) d.max_tool_name = static_cast<std::size_t>(*i);
      } else if (name == "log_level") {
        if (auto s = get_string(v, key)) {
          const std::initializer_list<std::string_view> levels = {"trace", "debug", "info",
                                                                  "warn",  "error", "off"};
          if (std::find(levels.begin(), levels.end(), *s) != levels.end()) {
            d.log_level = *s;
          } else {
            auto near = closest(*s, levels);
            fail(v, key,
                 fmt::format("must be one of trace, debug, info, warn, error, off (got \"{}\"){}",
                             *s, near ? fmt::format("; did you mean \"{}\"?", *near) : ""));
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
      } else if (name == "http_token_file") {
        if (auto s = absolute_path(v, key, false)) d.http_token_file = *s;
      } else {
        fail(v, key,
             unknown_message(
                 "key", name,
                 {"timeout_ms", "tool_separator", "max_tool_name", "log_level", "socket",
                  "max_message_bytes", "max_client_queue_bytes", "max_instructions_bytes",
                  "reconnect_max_ms", "startup_wait_ms", "page_size", "include", "http",
                  "http_allow_remote", "http_token_file"}));
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
  std::vector<std::string> include_paths(const toml::node& n, const std::string& key) {
    std::vector<std::string> out;
    const auto* a = n.as_array();
    if (!a) {
      type_error(n, key, "an array of strings");
      return out;
    }
    for (std::size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      const std::string sub = fmt::format("{}[{}]", key, i);
      auto s = expanded_string(e, sub);
      if (!s) continue;
      s = expand_home(std::move(*s), e, sub);
      if (!s) continue;
      if (s->empty()) {
        fail(e, sub, "must not be empty");
        continue;
      }
      out.push_back(std::move(*s));
    }
    return out;
  }

  void parse_servers(const toml::node& node, std::vector<server_config>& out) {
    const auto* t = node.as_table();
    if (!t) return type_error(node, "servers", "a table of server tables");
    for (auto&& [k, v] : *t) {
      const std::string name(k.str());
      const std::string key = join_key("servers", name);
      if (name.empty() || name.size() > 64 || !is_name(name))
        fail(v, key, "server name must be 1 to 64 characters of [A-Za-z0-9_-]");
      if (const auto* st = v.as_table())
        out.push_back(parse_server(name, key, *st));
      else
        type_error(v, key, "a table");
    }
    std::sort(out.begin(), out.end(),
              [](const server_config& a, const server_config& b) { return a.name < b.name; });
  }

  std::vector<std::string> string_array(const toml::node& n, const std::string& key) {
    std::vector<std::string> out;
    const auto* a = n.as_array();
    if (!a) {
      type_error(n, key, "an array of strings");
      return out;
    }
    for (std::size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      if (auto s = expanded_string(e, fmt::format("{}[{}]", key, i))) out.push_back(std::move(*s));
    }
    return out;
  }

  enum class table_kind { env, headers };

  std::map<std::string, std::string> string_table(const toml::node& n, const std::string& key,
                                                  table_kind kind) {
    std::map<std::string, std::string> out;
    const auto* t = n.as_table();
    if (!t) {
      type_error(n, key, "a table of strings");
      return out;
    }
    for (auto&& [k, v] : *t) {
      const std::string name(k.str());
      const std::string sub = join_key(key, name);
      if (kind == table_kind::env && (name.empty() || name.find_first_of("=", 0) != name.npos ||
                                      name.find('\0') != name.npos)) {
        fail(v, sub, "environment variable name must be non-empty and contain no '=' or NUL");
        continue;
      }
      if (kind == table_kind::headers && !is_header_name(name)) {
        fail(v, sub, "not a valid HTTP header name");
        continue;
      }
      auto s = expanded_string(v, sub);
      if (!s) continue;
      // A CR/LF in a header value would let a config value inject extra headers.
      if (kind == table_kind::headers &&
          s->find_first_of(std::string_view("\r\n\0", 3)) != s->npos) {
        fail(v, sub, "header value must not contain CR, LF or NUL");
        continue;
      }
      out.emplace(name, std::move(*s));
    }
    return out;
  }

  std::vector<std::string> roots(const toml::node& n, const std::string& key) {
    std::vector<std::string> out;
    const auto* a = n.as_array();
    if (!a) {
      type_error(n, key, "an array of strings");
      return out;
    }
    for (std::size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      const std::string sub = fmt::format("{}[{}]", key, i);
      auto s = expanded_string(e, sub);
      if (!s) continue;
      if (s->starts_with("file://") && s->size() > 7) {
        out.push_back(std::move(*s));
        continue;
      }
      s = expand_home(std::move(*s), e, sub);
      if (!s) continue;
      if (s->empty() || s->front() != '/') {
        fail(e, sub, fmt::format("must be an absolute path or a file:// URI (got \"{}\")", *s));
        continue;
      }
      out.push_back(file_uri(*s));
    }
    return out;
  }

  server_config parse_server(const std::string& name, const std::string& base,
                             const toml::table& t) {
    server_config s;
    s.name = name;
    s.line = line_of(t);
    // `type` decides which other keys apply, so it is read first.
    bool type_known = true;
    if (const toml::node* tn = t.get("type")) {
      const std::string key = base + ".type";
      if (auto v = get_string(*tn, key)) {
        if (*v == "stdio") {
          s.type = server_type::stdio;
        } else if (*v == "http") {
          s.type = server_type::http;
        } else if (*v == "sse") {
          s.type = server_type::sse;
        } else {
          type_known = false;
          auto near = closest(*v, {"stdio", "http", "sse"});
          fail(*tn, key,
               fmt::format("must be \"stdio\", \"http\" or \"sse\" (got \"{}\"){}", *v,
                           near ? fmt::format("; did you mean \"{}\"?", *near) : ""));
        }
      } else {
        type_known = false;
      }
    }
    const bool stdio = s.type == server_type::stdio;
    for (auto&& [k, v] : t) {
      const std::string_view kn = k.str();
      const std::string key = join_key(base, kn);
      const bool stdio_only = kn == "command" || kn == "args" || kn == "env" || kn == "cwd";
      const bool remote_only =
          kn == "url" || kn == "headers" || kn == "ca_file" || kn == "token_command";
      if (type_known && stdio_only && !stdio) {
        fail(v, key,
             fmt::format("only applies to stdio servers (this server has type = \"{}\")",
                         to_string(s.type)));
        continue;
      }
      if (type_known && remote_only && stdio) {
        fail(v, key, "only applies to http and sse servers (this server has type = \"stdio\")");
        continue;
      }
      if (kn == "type") {
        // handled above
      } else if (kn == "command") {
        if (auto c = expanded_string(v, key)) {
          if (c->empty()) fail(v, key, "must not be empty");
          s.command = std::move(*c);
        }
      } else if (kn == "args") {
        s.args = string_array(v, key);
      } else if (kn == "env") {
        s.env = string_table(v, key, table_kind::env);
      } else if (kn == "cwd") {
        if (auto c = absolute_path(v, key, true)) s.cwd = std::move(*c);
      } else if (kn == "url") {
        if (auto u = expanded_string(v, key)) {
          const bool ok = (u->starts_with("http://") && u->size() > 7) ||
                          (u->starts_with("https://") && u->size() > 8);
          if (!ok)
            fail(v, key, fmt::format("must start with http:// or https:// (got \"{}\")", *u));
          s.url = std::move(*u);
        }
      } else if (kn == "headers") {
        s.headers = string_table(v, key, table_kind::headers);
      } else if (kn == "ca_file") {
        if (auto c = absolute_path(v, key, true)) s.ca_file = std::move(*c);
      } else if (kn == "token_command") {
        if (auto c = expanded_string(v, key)) {
          if (c->empty()) fail(v, key, "must not be empty");
          s.token_command = std::move(*c);
        }
      } else if (kn == "timeout_ms") {
        if (auto i = get_integer(v, key, 0, max_timeout_ms))
          s.timeout = std::chrono::milliseconds(*i);
      } else if (kn == "enabled") {
        if (auto b = get_bool(v, key)) s.enabled = *b;
      } else if (kn == "retry_calls") {
        if (auto b = get_bool(v, key)) s.retry_calls = *b;
      } else if (kn == "isolation") {
        if (auto i = get_string(v, key)) {
          if (*i == "shared" || *i == "per-client")
            s.per_client = *i == "per-client";
          else
            fail(v, key, fmt::format("must be \"shared\" or \"per-client\" (got \"{}\")", *i));
        }
      } else if (kn == "reset_timeout_on_progress") {
        if (auto b = get_bool(v, key)) s.reset_timeout_on_progress = *b;
      } else if (kn == "max_timeout_ms") {
        if (auto i = get_integer(v, key, 0, max_timeout_ms))
          s.max_timeout = std::chrono::milliseconds(*i);
      } else if (kn == "ping_interval_ms") {
        if (auto i = get_integer(v, key, 0, max_timeout_ms))
          s.ping_interval = std::chrono::milliseconds(*i);
      } else if (kn == "prefix") {
        if (auto p = get_string(v, key)) {
          if (!is_name(*p))
            fail(v, key, fmt::format("must contain only [A-Za-z0-9_-] (got \"{}\")", *p));
          else
            s.prefix = std::move(*p);
        }
      } else if (kn == "roots") {
        s.roots = roots(v, key);
      } else {
        fail(v, key,
             unknown_message(
                 "key", kn,
                 {"type", "command", "args", "env", "cwd", "url", "headers", "timeout_ms",
                  "enabled", "prefix", "roots", "retry_calls", "ping_interval_ms", "ca_file",
                  "token_command", "reset_timeout_on_progress", "max_timeout_ms", "isolation"}));
      }
    }
    if (type_known && stdio && !t.contains("command"))
      fail(s.line, base + ".command", "is required for stdio servers");
    if (type_known && !stdio && !t.contains("url"))
      fail(s.line, base + ".url", fmt::format("is required for {} servers", to_string(s.type)));
    return s;
  }

  std::string file_;
  env_lookup lookup_;
  std::vector<config_error> errors_;
  std::vector<std::string> warnings_;
};

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
  return validator(source_name, lookup ? lookup : process_env).run(root);
}

config_result load_config_file(const std::string& path, env_lookup lookup) {
  config_result r;
  auto fail = [&](std::string message) {
    r.errors.push_back(config_error{path, 0, "", std::move(message)});
    return r;
  };
  std::string error;
  auto text = read_text_file(path, max_config_file_bytes, error);
  if (!text) return fail(std::move(error));
  r = parse_config(*text, path, lookup);
  if (r.value) {
    r.value->source = path;
    add_includes(r, path, lookup ? lookup : process_env);
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
