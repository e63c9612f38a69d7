// Converts one server entry of another MCP client's config into a server_config: its type,
// command or url, the keys mcpmux shares, notes on the rest, ${VAR} syntax rewritten.
#include "config/expand.hpp"
#include "config/import.hpp"
#include "config/import_detail.hpp"
#include "config/names.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

namespace mcpmux::json_import {
namespace {

using names::is_header_name;
using names::is_var_name;

constexpr std::int64_t max_timeout_ms = 2147483647;

// The text of a scalar JSON value given where a string was expected (8080 → "8080").
std::optional<std::string> scalar_text(const json::value& v) {
  if (v.is_string()) return sv(v.get_string());
  if (v.is_int64() || v.is_uint64() || v.is_double() || v.is_bool()) return json::serialize(v);
  return std::nullopt;
}

}  // namespace

std::string sv(json::string_view s) {
  return std::string(s.data(), s.size());
}

std::string_view kind_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

std::optional<server_config> server_importer::run(const std::string& name, const json::value& v,
                                                  const std::string& label) {
  label_ = label;
  const json::object* o = v.if_object();
  if (!o) {
    note(fmt::format("is {}, not an object; skipped", kind_name(v)));
    return std::nullopt;
  }
  server_config s;
  s.name = sanitize_server_name(name);
  if (s.name != name)
    note(fmt::format("renamed to \"{}\" (server names are [A-Za-z0-9_-])", s.name));

  const json::value* type_v = o->if_contains("type");
  if (!type_v) type_v = o->if_contains("transportType");  // Cline, Roo Code
  const json::value* url_v = o->if_contains("url");
  if (!url_v) url_v = o->if_contains("serverUrl");  // Windsurf
  const json::value* command_v = o->if_contains("command");

  if (type_v) {
    const json::string* t = type_v->if_string();
    const std::string_view ts = t ? std::string_view(t->data(), t->size()) : "";
    if (ts == "stdio") {
      s.type = server_type::stdio;
    } else if (ts == "http" || ts == "streamable-http" || ts == "streamableHttp" ||
               ts == "streamable_http") {
      s.type = server_type::http;
    } else if (ts == "sse") {
      s.type = server_type::sse;
    } else {
      note(t ? fmt::format("type \"{}\" is not supported; skipped", ts)
             : fmt::format("type is {}, not a string; skipped", kind_name(*type_v)));
      return std::nullopt;
    }
  } else if (command_v) {
    s.type = server_type::stdio;
  } else if (url_v && url_v->is_string()) {
    // Cursor and Windsurf pick the transport themselves; a URL ending in /sse is the legacy one.
    std::string_view u(url_v->get_string().data(), url_v->get_string().size());
    u = u.substr(0, u.find_first_of("?#"));
    while (u.ends_with('/')) u.remove_suffix(1);
    if (u.ends_with("/sse")) {
      s.type = server_type::sse;
      note("no type given; \"sse\" (legacy HTTP+SSE) assumed from the URL");
    } else {
      s.type = server_type::http;
      note(
          "no type given; \"http\" (Streamable HTTP) assumed; use type = \"sse\" for a legacy "
          "HTTP+SSE server");
    }
  } else {
    note("has neither \"command\" nor \"url\"; skipped");
    return std::nullopt;
  }
  const bool stdio = s.type == server_type::stdio;

  bool ok = true;
  for (const auto& [kv, val] : *o) {
    const std::string key = sv(kv);
    if (key == "type" || key == "transportType") {
      if (key == "transportType" && type_v != &val) note("transportType: ignored (type given)");
    } else if (key == "command") {
      if (!stdio) {
        not_for(key, "remote");
      } else if (auto c = string_value(key, val, "skipped")) {
        if (c->empty()) {
          note("command: empty; skipped");
          ok = false;
        }
        s.command = std::move(*c);
      } else {
        ok = false;
      }
    } else if (key == "args") {
      if (!stdio) {
        not_for(key, "remote");
      } else {
        s.args = args(val);
      }
    } else if (key == "env") {
      if (!stdio) {
        not_for(key, "remote");
      } else {
        s.env = table(key, val, false);
      }
    } else if (key == "cwd") {
      if (!stdio) {
        not_for(key, "remote");
      } else if (auto c = string_value(key, val)) {
        if (c->starts_with('/') || c->starts_with("~/") || c->starts_with("${"))
          s.cwd = std::move(*c);
        else if (!c->empty())
          note(fmt::format("cwd: \"{}\" is not an absolute path; not carried over", *c));
      }
    } else if (key == "url" || key == "serverUrl") {
      if (stdio) {
        not_for(key, "stdio");
      } else if (url_v != &val) {
        note(fmt::format("{}: ignored (url given)", key));
      } else if (auto u = string_value(key, val, "skipped")) {
        const bool valid = (u->starts_with("http://") && u->size() > 7) ||
                           (u->starts_with("https://") && u->size() > 8) || u->starts_with("${");
        if (!valid) {
          note(fmt::format("{}: \"{}\" is not an http:// or https:// URL; skipped", key, *u));
          ok = false;
        }
        s.url = std::move(*u);
      } else {
        ok = false;
      }
    } else if (key == "headers") {
      if (stdio) {
        not_for(key, "stdio");
      } else {
        s.headers = table(key, val, true);
      }
    } else if (key == "oauth") {
      if (stdio)
        not_for(key, "stdio");
      else
        oauth(val, s);
    } else if (key == "disabled") {
      if (const bool* b = val.if_bool())
        s.enabled = !*b;
      else
        note(fmt::format("disabled: is {}, not a boolean; not carried over", kind_name(val)));
    } else if (key == "enabled") {
      if (const bool* b = val.if_bool())
        s.enabled = *b;
      else
        note(fmt::format("enabled: is {}, not a boolean; not carried over", kind_name(val)));
    } else if (key == "timeout") {
      timeout(val, s);
    } else if (key == "autoApprove" || key == "alwaysAllow") {
      note(fmt::format("{}: not carried over (approving calls is up to the client using mcpmux)",
                       key));
    } else if (key == "disabledTools") {
      note("disabledTools: not carried over (mcpmux exposes every tool of a server)");
    } else if (key == "envFile") {
      const json::string* f = val.if_string();
      note(fmt::format(
          "envFile: {}not carried over; put these variables in env or in mcpmuxd's environment",
          f ? fmt::format("\"{}\" ", sv(*f)) : std::string()));
    } else {
      note(fmt::format("{}: unknown key, not carried over", key));
    }
  }
  if (stdio && !command_v) {
    note("has no command; skipped");
    return std::nullopt;
  }
  if (!stdio && !url_v) {
    note("has no url; skipped");
    return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return s;
}

void server_importer::note(std::string message) {
  notes_.push_back(fmt::format("{}: {}", label_, message));
}

void server_importer::not_for(const std::string& key, std::string_view kind) {
  note(fmt::format("{}: does not apply to {} servers; not carried over", key, kind));
}

std::optional<std::string> server_importer::string_value(const std::string& key,
                                                         const json::value& v,
                                                         std::string_view otherwise) {
  if (const json::string* s = v.if_string()) return convert(sv(*s), key);
  note(fmt::format("{}: is {}, not a string; {}", key, kind_name(v), otherwise));
  return std::nullopt;
}

std::vector<std::string> server_importer::args(const json::value& v) {
  std::vector<std::string> out;
  const json::array* a = v.if_array();
  if (!a) {
    note(fmt::format("args: is {}, not an array; not carried over", kind_name(v)));
    return out;
  }
  for (std::size_t i = 0; i < a->size(); ++i) {
    const json::value& e = (*a)[i];
    const std::string key = fmt::format("args[{}]", i);
    if (auto t = scalar_text(e)) {
      if (!e.is_string())
        note(fmt::format("{}: {} written as the string \"{}\"", key, kind_name(e), *t));
      out.push_back(convert(*t, key));
    } else {
      note(fmt::format("{}: is {}; dropped", key, kind_name(e)));
    }
  }
  return out;
}

std::map<std::string, std::string> server_importer::table(const std::string& key,
                                                          const json::value& v, bool headers) {
  std::map<std::string, std::string> out;
  const json::object* o = v.if_object();
  if (!o) {
    note(fmt::format("{}: is {}, not an object; not carried over", key, kind_name(v)));
    return out;
  }
  for (const auto& [kv, val] : *o) {
    const std::string name = sv(kv);
    const std::string sub = fmt::format("{}.{}", key, name);
    const bool valid_name =
        headers ? is_header_name(name)
                : !name.empty() && name.find_first_of(std::string_view("=\0", 2)) == name.npos;
    if (!valid_name) {
      note(fmt::format("{}: not a valid {} name; dropped", sub,
                       headers ? "header" : "environment variable"));
      continue;
    }
    auto t = scalar_text(val);
    if (!t) {
      note(fmt::format("{}: is {}; dropped", sub, kind_name(val)));
      continue;
    }
    if (!val.is_string())
      note(fmt::format("{}: {} written as the string \"{}\"", sub, kind_name(val), *t));
    if (headers && t->find_first_of(std::string_view("\r\n\0", 3)) != t->npos) {
      note(fmt::format("{}: value contains CR, LF or NUL; dropped", sub));
      continue;
    }
    out.emplace(name, convert(*t, sub));
  }
  return out;
}

// Some clients (Cline, Roo Code) give `timeout` in seconds.
void server_importer::timeout(const json::value& v, server_config& s) {
  double secs = 0;
  if (v.is_int64())
    secs = static_cast<double>(v.get_int64());
  else if (v.is_uint64())
    secs = static_cast<double>(v.get_uint64());
  else if (v.is_double())
    secs = v.get_double();
  else
    return note(fmt::format("timeout: is {}, not a number; not carried over", kind_name(v)));
  if (!(secs > 0))
    return note(fmt::format("timeout: {} is not positive; not carried over", json::serialize(v)));
  const double ms = std::min(std::round(secs * 1000), static_cast<double>(max_timeout_ms));
  s.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(ms));
  note(fmt::format("timeout: {} read as seconds (timeout_ms = {})", json::serialize(v),
                   s.timeout->count()));
}

// Claude Code's `oauth` of a remote server: a pre-registered client id, the redirect's fixed
// port and the scopes to ask for. Its secret lives in Claude Code's keychain, never in the file;
// metadata discovery is mcpmux's own.
void server_importer::oauth(const json::value& v, server_config& s) {
  const auto* o = v.if_object();
  if (!o) return note(fmt::format("oauth: is {}, not an object; not carried over", kind_name(v)));
  s.oauth.enabled = true;
  for (const auto& [k, val] : *o) {
    const std::string key = "oauth." + std::string(sv(k));
    if (k == "clientId") {
      if (auto id = string_value(key, val)) {
        s.oauth.client_id = std::move(*id);
        note(key +
             ": carried over; if this client has a secret, write it into a file of its "
             "own and set client_secret_file");
      }
    } else if (k == "callbackPort") {
      const auto* n = val.if_int64();
      if (n && *n > 0 && *n < 65536)
        s.oauth.redirect_port = static_cast<unsigned>(*n);
      else
        note(key + ": not a port number; not carried over");
    } else if (k == "scopes" || k == "scope") {
      if (auto sc = string_value(key, val)) s.oauth.scope = std::move(*sc);
    } else if (k == "clientSecret") {
      note(key +
           ": a secret written inline is not carried over; write it into a file of its "
           "own and set client_secret_file");
    } else {
      note(key + ": not carried over (mcpmux discovers the authorization server itself)");
    }
  }
}

// Rewrites a client's string into mcpmux's `${VAR}` template syntax (see import_result).
std::string server_importer::convert(std::string_view in, const std::string& key) {
  std::string out;
  std::size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c != '$') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '$') {
      out += "$$$$";
      i += 2;
      continue;
    }
    if (i + 1 >= in.size() || in[i + 1] != '{') {
      out += '$';  // a lone `$` stays literal in mcpmux too
      ++i;
      continue;
    }
    const std::size_t j = names::closing_brace(in, i, false);
    if (j == std::string_view::npos) {  // unterminated: literal text
      out += "$$";
      ++i;
      continue;
    }
    const std::string_view body = in.substr(i + 2, j - i - 2);
    i = j + 1;
    const std::size_t sep = body.find(":-");
    const std::string_view name = body.substr(0, sep);
    if (body.starts_with("env:") && is_var_name(body.substr(4))) {
      out += fmt::format("${{{}}}", body.substr(4));
    } else if (body == "userHome") {
      out += "${HOME}";
    } else if (is_var_name(name) && !vscode_ && !is_editor_variable(name)) {
      out += fmt::format("${{{}", name);
      if (sep != std::string_view::npos) out += ":-" + convert(body.substr(sep + 2), key);
      out += '}';
    } else {
      note(fmt::format("{}: \"${{{}}}\" cannot be resolved by mcpmux; kept as literal text", key,
                       body));
      out += fmt::format("$${{{}}}", escape_dollars(body));
    }
  }
  return out;
}

bool server_importer::is_editor_variable(std::string_view name) {
  for (std::string_view v : {"workspaceFolder", "workspaceFolderBasename", "workspaceRoot",
                             "pathSeparator", "fileWorkspaceFolder"}) {
    if (name == v) return true;
  }
  return false;
}

}  // namespace mcpmux::json_import
