#include "protocol/modern.hpp"

#include <algorithm>
#include <array>

#include "protocol/versions.hpp"

namespace mcpmux::mcp {
namespace {

constexpr std::array<std::string_view, 8> log_levels = {"debug", "info",     "notice", "warning",
                                                        "error", "critical", "alert",  "emergency"};

rpc_error bad_meta(std::string text) {
  return rpc_error{rpc_code::invalid_params, "Invalid params: " + std::move(text), nullptr};
}

// A small walker over well-formed JSON text: enough to find a member without building the value.
std::size_t skip_ws(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

std::size_t skip_string(std::string_view s, std::size_t i) {  // s[i] == '"'
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '"')
      return i + 1;
  }
  return s.size();
}

std::size_t skip_value(std::string_view s, std::size_t i) {
  if (i >= s.size()) return i;
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = skip_string(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      ++i;
    }
    return i;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' &&
         s[i] != '\n' && s[i] != '\r')
    ++i;
  return i;
}

// Calls f(key, value_pos) for each member of the object at s[i] ('{') until f returns true.
// Returns the position just inside the object.
template <class F>
void each_member(std::string_view s, std::size_t i, F&& f) {
  if (i >= s.size() || s[i] != '{') return;
  i = skip_ws(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = skip_string(s, i);
    const std::string_view key = s.substr(i + 1, key_end - i - 2);
    i = skip_ws(s, key_end);
    if (i >= s.size() || s[i] != ':') return;
    i = skip_ws(s, i + 1);
    if (f(key, i)) return;
    i = skip_ws(s, skip_value(s, i));
    if (i >= s.size() || s[i] != ',') return;
    i = skip_ws(s, i + 1);
  }
}

}  // namespace

json::object implementation() {
  return json::object{{"name", "mcpmux"}, {"version", MCPMUX_VERSION}};
}

bool capability_flag(const json::object& capabilities, std::string_view capability,
                     std::string_view flag) {
  const auto* c = capabilities.if_contains(capability);
  const auto* o = c ? c->if_object() : nullptr;
  const auto* f = o ? o->if_contains(flag) : nullptr;
  return f && f->is_bool() && f->get_bool();
}

std::optional<std::string> named_target(std::string_view m, const json::object& params) {
  const char* key = m == "tools/call" || m == "prompts/get"                          ? "name"
                    : m == "resources/read"                                          ? "uri"
                    : m == "tasks/get" || m == "tasks/update" || m == "tasks/cancel" ? "taskId"
                                                                                     : nullptr;
  if (!key) return std::nullopt;
  const auto* v = params.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

bool has_extension(const json::object& capabilities, std::string_view extension) {
  const auto* e = capabilities.if_contains("extensions");
  return e && e->is_object() && e->get_object().contains(extension);
}

std::string scoped_task_id(std::string_view server, std::string_view task_id) {
  std::string out(server);
  out += '/';
  out += task_id;
  return out;
}

std::optional<std::pair<std::string_view, std::string_view>> split_task_id(std::string_view id) {
  const auto slash = id.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == id.size()) return std::nullopt;
  return std::pair{id.substr(0, slash), id.substr(slash + 1)};
}

bool has_modern_meta(const json::object& params) {
  const auto* m = params.if_contains("_meta");
  return m && m->is_object() && m->get_object().contains(meta_key::protocol_version);
}

rpc_error unsupported_version(std::string_view requested) {
  // The versions a request may name in _meta (as server/discover's supportedVersions); the
  // legacy ones are reached with initialize instead.
  json::array supported;
  for (auto v : modern_versions) supported.emplace_back(v);
  return rpc_error{rpc_code::unsupported_version, "Unsupported protocol version", nullptr,
                   json::object{{"supported", std::move(supported)}, {"requested", requested}}};
}

result<request_meta> read_request_meta(const json::object& params) {
  const auto* m = params.if_contains("_meta");
  if (!m || !m->is_object())
    return bad_meta(
        "a 2026-07-28 request needs params._meta with \"io.modelcontextprotocol/protocolVersion\" "
        "and \"io.modelcontextprotocol/clientCapabilities\"");
  const auto& meta = m->get_object();
  request_meta out;
  const auto* v = meta.if_contains(meta_key::protocol_version);
  if (!v || !v->is_string())
    return bad_meta("_meta[\"io.modelcontextprotocol/protocolVersion\"] must be a string");
  if (!is_modern_version(v->get_string())) return unsupported_version(v->get_string());
  out.version = v->get_string();
  const auto* caps = meta.if_contains(meta_key::client_capabilities);
  if (!caps || !caps->is_object())
    return bad_meta("_meta[\"io.modelcontextprotocol/clientCapabilities\"] must be an object");
  out.capabilities = caps->get_object();
  if (const auto* info = meta.if_contains(meta_key::client_info)) {
    if (!info->is_object())
      return bad_meta("_meta[\"io.modelcontextprotocol/clientInfo\"] must be an object");
    out.client_info = info->get_object();
  }
  if (const auto* level = meta.if_contains(meta_key::log_level)) {
    if (!level->is_string() ||
        std::find(log_levels.begin(), log_levels.end(), level->get_string()) == log_levels.end())
      return bad_meta(
          "_meta[\"io.modelcontextprotocol/logLevel\"] must be one of debug, info, notice, "
          "warning, error, critical, alert, emergency");
    out.log_level = level->get_string();
  }
  return out;
}

void strip_protocol_meta(json::object& params) {
  auto* m = params.if_contains("_meta");
  if (!m || !m->is_object()) return;
  auto& meta = m->get_object();
  for (auto it = meta.begin(); it != meta.end();) {
    if (std::string_view(it->key()).substr(0, 24) == "io.modelcontextprotocol/")
      it = meta.erase(it);
    else
      ++it;
  }
  if (meta.empty()) params.erase("_meta");
}

void mark_complete(std::string& line) {
  each_member(line, skip_ws(line, 0), [&](std::string_view key, std::size_t at) {
    if (key != "result") return false;
    if (at >= line.size() || line[at] != '{') return true;
    bool has = false;
    each_member(line, at, [&](std::string_view k, std::size_t) {
      has = k == "resultType";
      return has;
    });
    if (has) return true;
    const bool empty = line[skip_ws(line, at + 1)] == '}';
    line.insert(at + 1, empty ? R"("resultType":"complete")" : R"("resultType":"complete",)");
    return true;
  });
}

void mark_complete(json::object& result) {
  if (!result.contains("resultType")) result["resultType"] = "complete";
}

}  // namespace mcpmux::mcp
