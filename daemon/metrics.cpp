// GET /metrics of the HTTP endpoint: the Prometheus view of `mcpmux/status`.
#include "daemon/metrics.hpp"

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <cmath>
#include <cstdint>
#include <optional>

#include "core/protocol/json_rpc.hpp"

namespace mcpmux {
namespace {

std::optional<double> number(const json::value* v) {
  if (!v) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  if (v->is_double()) return v->get_double();
  if (v->is_bool()) return v->get_bool() ? 1.0 : 0.0;
  return std::nullopt;
}

std::string label(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"')
      out += '\\', out += ch;
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

}  // namespace

std::string metrics_from_status(std::string_view status_json) {
  boost::system::error_code ec;
  auto v = json::parse(status_json, ec);
  const json::object* o = !ec ? v.if_object() : nullptr;
  std::string out;
  const auto family = [&](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  const auto sample = [&](std::string_view name, std::optional<double> value,
                          std::string_view labels = {}) {
    if (!value) return;
    out += name;
    if (!labels.empty()) out.append("{").append(labels).append("}");
    // Integral values print as integers; others with 9 significant digits (no 0.1+0.2 noise).
    if (*value == std::floor(*value) && std::fabs(*value) < 1e15)
      out += fmt::format(" {}\n", static_cast<std::int64_t>(*value));
    else
      out += fmt::format(" {:.9g}\n", *value);
  };
  family("mcpmux_up", "gauge", "1 while mcpmuxd answers.");
  sample("mcpmux_up", 1.0);
  if (!o) return out;
  if (const auto* ver = o->if_contains("version"); ver && ver->is_string()) {
    family("mcpmux_build_info", "gauge", "Version of mcpmuxd (always 1).");
    sample("mcpmux_build_info", 1.0, fmt::format("version=\"{}\"", label(ver->get_string())));
  }
  family("mcpmux_clients", "gauge", "Connected clients (socket connections and HTTP sessions).");
  sample("mcpmux_clients", number(o->if_contains("clients")));
  family("mcpmux_uptime_seconds", "gauge", "Seconds since mcpmuxd started.");
  if (auto ms = number(o->if_contains("uptime_ms"))) sample("mcpmux_uptime_seconds", *ms / 1000.0);
  family("mcpmux_tools", "gauge", "Tools exposed to clients.");
  sample("mcpmux_tools", number(o->if_contains("tools")));

  const json::array* servers = nullptr;
  if (const auto* s = o->if_contains("servers")) servers = s->if_array();
  if (!servers) return out;
  struct metric {
    std::string_view name, type, help, key;
    double scale;
  };
  static constexpr metric per_server[] = {
      {"mcpmux_server_calls_total", "counter", "Requests sent to the server.", "calls", 1},
      {"mcpmux_server_errors_total", "counter", "Requests that failed (error or timeout).",
       "errors", 1},
      {"mcpmux_server_restarts_total", "counter", "Reconnects and restarts of the server.",
       "restarts", 1},
      {"mcpmux_server_tools", "gauge", "Tools the server lists.", "tools", 1},
      {"mcpmux_server_latency_p50_seconds", "gauge",
       "Median request latency over recent requests (a gauge, not a histogram).", "latency_p50_us",
       1e-6},
      {"mcpmux_server_latency_p99_seconds", "gauge",
       "99th percentile request latency over recent requests (a gauge, not a histogram).",
       "latency_p99_us", 1e-6},
  };
  const auto name_of = [](const json::value& s) -> std::string {
    const auto* n = s.is_object() ? s.get_object().if_contains("name") : nullptr;
    return n && n->is_string() ? label(n->get_string()) : std::string();
  };
  family("mcpmux_server_up", "gauge", "1 when the server is ready, else 0.");
  for (const auto& s : *servers) {
    const auto name = name_of(s);
    if (name.empty()) continue;
    const auto* st = s.get_object().if_contains("state");
    const bool up = st && st->is_string() && st->get_string() == "ready";
    sample("mcpmux_server_up", up ? 1.0 : 0.0, fmt::format("server=\"{}\"", name));
  }
  for (const auto& m : per_server) {
    family(m.name, m.type, m.help);
    for (const auto& s : *servers) {
      const auto name = name_of(s);
      if (name.empty()) continue;
      auto value = number(s.get_object().if_contains(m.key));
      if (value) *value *= m.scale;
      sample(m.name, value, fmt::format("server=\"{}\"", name));
    }
  }
  return out;
}

}  // namespace mcpmux
