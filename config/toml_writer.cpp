// Prints server_config as TOML: mcpmux's own config syntax, for `mcpmux import` and includes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/text.hpp"
#include "config/expand.hpp"
#include "config/import.hpp"
#include "config/names.hpp"

namespace mcpmux {
namespace {

using names::is_name;

std::string toml_key(std::string_view k) {
  return (!k.empty() && is_name(k)) ? std::string(k) : toml_quote(k);
}

std::string toml_string(std::string_view s, toml_strings mode) {
  return toml_quote(mode == toml_strings::literal ? escape_dollars(s) : std::string(s));
}

std::string toml_array(const std::vector<std::string>& v, toml_strings mode) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += toml_string(v[i], mode);
  }
  return out + "]";
}

std::string toml_inline_table(const std::map<std::string, std::string>& m, toml_strings mode) {
  if (m.empty()) return "{}";
  std::string out = "{ ";
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ", ";
    first = false;
    out += fmt::format("{} = {}", toml_key(k), toml_string(v, mode));
  }
  return out + " }";
}

}  // namespace

std::string toml_quote(std::string_view s) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {  // one UTF-8 sequence, or \uFFFD for an invalid byte
      const auto len = utf8_sequence(s, i);
      // An invisible character (U+202E, a tag character) as visible_text shows it, which is
      // TOML's own \uXXXX or \UXXXXXXXX: the same string, but a person reading the file sees it.
      out += len ? visible_text(s.substr(i, len)) : std::string("\\uFFFD");
      i += len ? len : 1;
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || c == 0x7F)
          out += fmt::format("\\u{:04X}", static_cast<unsigned>(c));
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string to_toml(const server_config& s, toml_strings mode) {
  const server_config defaults;
  const bool stdio = s.type == server_type::stdio;
  std::string out = fmt::format("[servers.{}]\n", toml_key(s.name));
  auto line = [&](std::string_view key, const std::string& value) {
    out += fmt::format("{} = {}\n", key, value);
  };
  if (!stdio) line("type", toml_quote(to_string(s.type)));
  if (stdio || !s.command.empty()) line("command", toml_string(s.command, mode));
  if (!s.args.empty()) line("args", toml_array(s.args, mode));
  if (!s.env.empty()) line("env", toml_inline_table(s.env, mode));
  if (!s.cwd.empty()) line("cwd", toml_string(s.cwd, mode));
  if (!stdio || !s.url.empty()) line("url", toml_string(s.url, mode));
  if (!s.headers.empty()) line("headers", toml_inline_table(s.headers, mode));
  if (!s.ca_file.empty()) line("ca_file", toml_string(s.ca_file, mode));
  if (!s.token_command.empty()) line("token_command", toml_string(s.token_command, mode));
  if (s.timeout) line("timeout_ms", std::to_string(s.timeout->count()));
  if (!s.enabled) line("enabled", "false");
  if (s.prefix) line("prefix", toml_quote(*s.prefix));
  if (!s.roots.empty()) line("roots", toml_array(s.roots, mode));
  if (s.retry != defaults.retry) line("retry", toml_quote(to_string(s.retry)));
  if (s.reset_timeout_on_progress != defaults.reset_timeout_on_progress)
    line("reset_timeout_on_progress", s.reset_timeout_on_progress ? "true" : "false");
  if (s.max_timeout != defaults.max_timeout)
    line("max_timeout_ms", std::to_string(s.max_timeout.count()));
  if (s.ping_interval != defaults.ping_interval)
    line("ping_interval_ms", std::to_string(s.ping_interval.count()));
  if (s.per_client) line("isolation", toml_quote("per-client"));
  if (s.era != defaults.era) line("era", toml_quote(to_string(s.era)));
  if (!s.tools_shown.empty()) line("tools", toml_array(s.tools_shown, mode));
  if (!s.prompts_shown.empty()) line("prompts", toml_array(s.prompts_shown, mode));
  if (!s.resources_shown.empty()) line("resources", toml_array(s.resources_shown, mode));
  if (s.oauth.enabled) {
    const auto& o = s.oauth;
    std::vector<std::string> fields;
    auto field = [&](std::string_view key, const std::string& value) {
      if (!value.empty()) fields.push_back(fmt::format("{} = {}", key, toml_string(value, mode)));
    };
    field("client_id", o.client_id);
    field("client_secret_file", o.client_secret_file);
    field("client_metadata_url", o.client_metadata_url);
    field("scope", o.scope);
    if (o.client_credentials) fields.push_back("grant = \"client_credentials\"");
    if (o.redirect_port) fields.push_back(fmt::format("redirect_port = {}", o.redirect_port));
    line("oauth", fields.empty() ? "true" : fmt::format("{{ {} }}", fmt::join(fields, ", ")));
  } else if (s.oauth.opted_out) {
    line("oauth", "false");
  }
  return out;
}

std::string to_toml(const std::vector<server_config>& servers, toml_strings mode) {
  std::string out;
  for (const server_config& s : servers) {
    if (!out.empty()) out += '\n';
    out += to_toml(s, mode);
  }
  return out;
}

}  // namespace mcpmux
