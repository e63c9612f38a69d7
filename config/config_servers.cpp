// Validation of the `[servers.NAME]` tables: type, command or url and every other server key.
#include "base/redact.hpp"
#include "base/text.hpp"
#include "config/config_detail.hpp"
#include "config/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace mcpmux::config_validation {

using names::is_header_name;
using names::is_name;

void validator::parse_servers(const toml::node& node, std::vector<server_config>& out) {
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

std::vector<std::string> validator::string_array(const toml::node& n, const std::string& key) {
  std::vector<std::string> out;
  each_string(n, key, [&](std::string s, const toml::node&, const std::string&) {
    out.push_back(std::move(s));
  });
  return out;
}

std::map<std::string, std::string> validator::string_table(const toml::node& n,
                                                           const std::string& key,
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
    if (kind == table_kind::env &&
        (name.empty() || name.find_first_of("=", 0) != name.npos || name.find('\0') != name.npos)) {
      fail(v, sub, "environment variable name must be non-empty and contain no '=' or NUL");
      continue;
    }
    if (kind == table_kind::headers && !is_header_name(name)) {
      fail(v, sub, "not a valid HTTP header name");
      continue;
    }
    if (kind == table_kind::tokens && !is_name(name)) {
      fail(v, sub, "a token's name must be [A-Za-z0-9_-]");
      continue;
    }
    auto s = expanded_string(v, sub);
    if (!s) continue;
    if (kind == table_kind::tokens) {
      // Long, one word, and each its own: a token guessed or shared is no identity.
      if (s->size() < 32 || s->find_first_of(std::string_view(" \t\r\n\0", 5)) != s->npos) {
        fail(v, sub, "a token must be at least 32 characters, without spaces");
        continue;
      }
      if (std::any_of(out.begin(), out.end(), [&](const auto& kv) { return kv.second == *s; })) {
        fail(v, sub, "the same token as another name");
        continue;
      }
      add_secret(*s);  // never printed, like every secret
    }
    // A CR/LF in a header value would let a config value inject extra headers.
    if (kind == table_kind::headers && s->find_first_of(std::string_view("\r\n\0", 3)) != s->npos) {
      fail(v, sub, "header value must not contain CR, LF or NUL");
      continue;
    }
    out.emplace(name, std::move(*s));
  }
  return out;
}

std::vector<std::string> validator::roots(const toml::node& n, const std::string& key) {
  std::vector<std::string> out;
  each_string(n, key, [&](std::string s, const toml::node& e, const std::string& sub) {
    if (s.starts_with("file://") && s.size() > 7) return out.push_back(std::move(s));
    auto path = expand_home(std::move(s), e, sub);
    if (!path) return;
    if (path->empty() || path->front() != '/')
      return fail(e, sub,
                  fmt::format("must be an absolute path or a file:// URI (got \"{}\")", *path));
    out.push_back(file_uri(*path));
  });
  return out;
}

// `oauth = true`, or a table of the login's settings.
oauth_settings validator::oauth(const toml::node& n, const std::string& key) {
  oauth_settings o;
  if (n.is_boolean()) {
    o.enabled = n.as_boolean()->get();
    o.opted_out = !o.enabled;
    return o;
  }
  const auto* t = n.as_table();
  if (!t) {
    type_error(n, key, "true, false or a table");
    return o;
  }
  o.enabled = true;
  for (auto&& [k, v] : *t) {
    const std::string_view kn = k.str();
    const std::string sub = join_key(key, kn);
    if (kn == "client_id") {
      if (auto c = expanded_string(v, sub)) o.client_id = std::move(*c);
    } else if (kn == "client_secret") {
      fail(v, sub,
           "a secret is never written in the config: put it in a file (mode 0600) and give "
           "client_secret_file");
    } else if (kn == "client_secret_file") {
      if (auto f = absolute_path(v, sub, true)) o.client_secret_file = std::move(*f);
    } else if (kn == "client_metadata_url") {
      if (auto u = expanded_string(v, sub)) {
        const auto path = u->starts_with("https://") ? u->find('/', 8) : std::string::npos;
        if (path == std::string::npos || path + 1 >= u->size())
          fail(v, sub, fmt::format("must be an https:// URL with a path (got \"{}\")", *u));
        o.client_metadata_url = std::move(*u);
      }
    } else if (kn == "scope") {
      if (auto c = expanded_string(v, sub)) o.scope = std::move(*c);
    } else if (kn == "grant") {
      if (auto i = get_choice(v, sub, {"authorization_code", "client_credentials"}))
        o.client_credentials = *i == 1;
    } else if (kn == "redirect_port") {
      if (auto i = get_integer(v, sub, 0, 65535)) o.redirect_port = static_cast<unsigned>(*i);
    } else {
      fail(v, sub, unknown_message("key", kn, config_keys("oauth")));
    }
  }
  if (o.client_credentials && (o.client_id.empty() || o.client_secret_file.empty()))
    fail(n, key,
         "grant = \"client_credentials\" needs client_id and client_secret_file (a machine "
         "client is registered beforehand)");
  if (!o.client_secret_file.empty() && o.client_id.empty())
    fail(n, key, "client_secret_file needs the client_id it belongs to");
  return o;
}

server_config validator::parse_server(const std::string& name, const std::string& base,
                                      const toml::table& t) {
  server_config s;
  s.name = name;
  s.line = line_of(t);
  // `type` decides which other keys apply, so it is read first.
  bool type_known = true;
  if (const toml::node* tn = t.get("type")) {
    const std::string key = base + ".type";
    constexpr server_type types[] = {server_type::stdio, server_type::http, server_type::sse};
    if (auto i = get_choice(*tn, key, {"stdio", "http", "sse"}))
      s.type = types[*i];
    else
      type_known = false;
  }
  const bool stdio = s.type == server_type::stdio;
  for (auto&& [k, v] : t) {
    const std::string_view kn = k.str();
    const std::string key = join_key(base, kn);
    const bool stdio_only =
        kn == "command" || kn == "args" || kn == "env" || kn == "cwd" || is_sandbox_key(kn);
    const bool remote_only =
        kn == "url" || kn == "headers" || kn == "ca_file" || kn == "token_command" || kn == "oauth";
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
        if (!ok) fail(v, key, fmt::format("must start with http:// or https:// (got \"{}\")", *u));
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
    } else if (kn == "oauth") {
      s.oauth = oauth(v, key);
    } else if (kn == "timeout_ms") {
      if (auto i = get_integer(v, key, 0, max_timeout_ms))
        s.timeout = std::chrono::milliseconds(*i);
    } else if (kn == "max_result_bytes") {
      if (auto i = get_integer(v, key, 0, max_result_bytes_limit))
        s.max_result_bytes = static_cast<std::size_t>(*i);
    } else if (kn == "enabled") {
      if (auto b = get_bool(v, key)) s.enabled = *b;
    } else if (kn == "retry") {
      if (t.contains("retry_calls")) {
        fail(v, key, "give either retry or the older retry_calls, not both");
      } else if (auto i = get_choice(v, key, {"safe", "always", "never"})) {
        constexpr retry_mode modes[] = {retry_mode::safe, retry_mode::always, retry_mode::never};
        s.retry = modes[*i];
      }
    } else if (kn == "retry_calls") {  // before 0.2: a boolean, kept working
      if (auto b = get_bool(v, key)) s.retry = *b ? retry_mode::always : retry_mode::never;
    } else if (kn == "era") {
      constexpr era_setting eras[] = {era_setting::auto_detect, era_setting::legacy,
                                      era_setting::modern};
      if (auto i = get_choice(v, key, {"auto", "legacy", "modern"})) s.era = eras[*i];
    } else if (kn == "isolation") {
      if (auto i = get_choice(v, key, {"shared", "per-client"})) s.per_client = *i == 1;
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
    } else if (kn == "on_change") {
      constexpr change_policy policies[] = {change_policy::quarantine, change_policy::warn,
                                            change_policy::accept};
      if (auto i = get_choice(v, key, {"quarantine", "warn", "accept"})) s.on_change = policies[*i];
    } else if (kn == "redact_results") {
      if (auto m = get_redaction_mode(v, key)) s.redact_results = *m;
    } else if (kn == "max_calls_per_minute") {
      if (auto i = call_limit(v, key)) s.max_calls_per_minute = *i;
    } else if (kn == "max_concurrent_calls") {
      if (auto i = call_limit(v, key)) s.max_concurrent_calls = *i;
    } else if (kn == "trust") {
      if (auto i = get_choice(v, key, {"auto", "ask"})) s.trust_ask = *i == 1;
    } else if (sandbox_key(kn, v, key, s.sandbox)) {
      // read by config_sandbox.cpp
    } else if (kn == "tools" || kn == "prompts" || kn == "resources") {
      auto rules = patterns(v, key, kn == "tools" ? filter_of::tools : filter_of::names);
      (kn == "tools"     ? s.tools_shown
       : kn == "prompts" ? s.prompts_shown
                         : s.resources_shown) = std::move(rules);
    } else {
      fail(v, key, unknown_message("key", kn, config_keys("server")));
    }
  }
  if (type_known && s.type == server_type::sse && s.era == era_setting::modern)
    fail(s.line, base + ".era",
         "\"modern\" needs type \"stdio\" or \"http\" (the legacy HTTP+SSE transport is of the "
         "2024-11-05 era)");
  // One source of the Authorization header at a time.
  if (s.oauth.enabled && !s.token_command.empty())
    fail(s.line, base + ".oauth", "give either oauth or token_command, not both");
  else if (s.oauth.enabled && s.sends_own_authorization())
    fail(s.line, base + ".oauth",
         "an Authorization header in headers would replace the OAuth token: remove one");
  if (type_known && stdio && !t.contains("command"))
    fail(s.line, base + ".command", "is required for stdio servers");
  if (type_known && !stdio && !t.contains("url"))
    fail(s.line, base + ".url", fmt::format("is required for {} servers", to_string(s.type)));
  return s;
}

}  // namespace mcpmux::config_validation

namespace mcpmux {

bool server_settings::sends_own_authorization() const {
  return !token_command.empty() || std::ranges::any_of(headers, [](const auto& h) {
    return lower(h.first) == "authorization";
  });
}

}  // namespace mcpmux
