// GET /metrics of the HTTP endpoint: the Prometheus view of `mcpmux/status`.
#include "daemon/metrics.hpp"

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <cmath>
#include <cstdint>
#include <optional>

#include "protocol/json_rpc.hpp"

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
  family("mcpmux_redacted_total", "counter",
         "Secrets replaced in a server's results and messages before clients saw them, by kind.");
  for (const auto& s : *servers) {
    const auto name = name_of(s);
    const auto* r = s.get_object().if_contains("redacted");
    const auto* by_kind = r && r->is_object() ? r->get_object().if_contains("by_kind") : nullptr;
    if (name.empty() || !by_kind || !by_kind->is_object()) continue;
    for (const auto& [kind, n] : by_kind->get_object())
      sample("mcpmux_redacted_total", number(&n),
             fmt::format("server=\"{}\",kind=\"{}\"", name, label(kind)));
  }
  family("mcpmux_limited_calls_total", "counter",
         "Calls a limit held back (waited for a turn, or refused by the error back-off).");
  for (const auto& s : *servers) {
    const auto name = name_of(s);
    const auto* l = name.empty() ? nullptr : s.get_object().if_contains("limited");
    if (!l || !l->is_object()) continue;
    for (const auto& [limit, n] : l->get_object())
      sample("mcpmux_limited_calls_total", number(&n),
             fmt::format("server=\"{}\",limit=\"{}\"", name, label(limit)));
  }
  // A status histogram {"le_us", "counts" (per bucket, +Inf last), "sum_us", "count"} as
  // cumulative Prometheus buckets, _sum and _count.
  const auto histogram = [&](std::string_view name, const json::value* h, std::string labels) {
    const json::object* o = h ? h->if_object() : nullptr;
    const json::array* le = o && o->if_contains("le_us") ? o->at("le_us").if_array() : nullptr;
    const json::array* counts =
        o && o->if_contains("counts") ? o->at("counts").if_array() : nullptr;
    if (!le || !counts || counts->size() != le->size() + 1) return;
    double cumulative = 0;
    for (std::size_t i = 0; i < counts->size(); ++i) {
      cumulative += number(&(*counts)[i]).value_or(0);
      const std::string bound =
          i < le->size() ? fmt::format("{:g}", number(&(*le)[i]).value_or(0) * 1e-6) : "+Inf";
      sample(fmt::format("{}_bucket", name), cumulative,
             fmt::format("{},le=\"{}\"", labels, bound));
    }
    if (auto sum = number(o->if_contains("sum_us")))
      sample(fmt::format("{}_sum", name), *sum * 1e-6, labels);
    sample(fmt::format("{}_count", name), cumulative, labels);
  };
  family("mcpmux_server_request_duration_seconds", "histogram",
         "Latency of the requests sent to the server, since mcpmuxd started.");
  for (const auto& s : *servers)
    if (const auto name = name_of(s); !name.empty())
      histogram("mcpmux_server_request_duration_seconds",
                s.get_object().if_contains("latency_histogram"),
                fmt::format("server=\"{}\"", name));
  family("mcpmux_tool_call_duration_seconds", "histogram",
         "Latency of tools/call per tool, since mcpmuxd started.");
  for (const auto& s : *servers) {
    const auto name = name_of(s);
    const auto* tools =
        s.is_object() ? s.get_object().if_contains("tool_latency_histograms") : nullptr;
    if (name.empty() || !tools || !tools->is_object()) continue;
    for (const auto& [tool, h] : tools->get_object())
      histogram("mcpmux_tool_call_duration_seconds", &h,
                fmt::format("server=\"{}\",tool=\"{}\"", name, label(tool)));
  }
  return out;
}

}  // namespace mcpmux
