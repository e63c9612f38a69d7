#include "core/control.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/audit_buffer.hpp"
#include "core/catalogue_service.hpp"
#include "core/daemon_info.hpp"
#include "core/session.hpp"
#include "core/session_registry.hpp"
#include "core/upstream.hpp"

namespace mcpmux {
namespace {

const logger& log() {
  static const logger l("control");
  return l;
}

std::int64_t ms_since(steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - t).count();
}

std::string first_line(const json::object& tool) {
  const auto* d = tool.if_contains("description");
  if (!d || !d->is_string()) return {};
  std::string_view s = d->get_string();
  return std::string(s.substr(0, s.find('\n')));
}

json::value nullable(const std::optional<std::uint32_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

// {"le_us": [bounds…], "counts": [per bucket, the last one +Inf], "sum_us": S, "count": N}
json::object histogram_json(const latency_histogram& h) {
  json::array le, counts;
  for (auto b : latency_histogram::bounds_us) le.push_back(b);
  for (std::size_t i = 0; i <= latency_histogram::bounds_us.size(); ++i)
    counts.push_back(h.bucket(i));
  return {{"le_us", std::move(le)},
          {"counts", std::move(counts)},
          {"sum_us", h.sum_us()},
          {"count", h.count()}};
}

// {"total": N, "by_kind": {"github-token": 1, …}}: what was replaced, never the values.
json::object redaction_json(const mcp::redaction_counts& counts) {
  json::object by_kind;
  for (std::size_t k = 0; k < mcp::secret_kind_count; ++k)
    if (counts.by_kind[k])
      by_kind[mcp::kind_name(static_cast<mcp::secret_kind>(k))] = counts.by_kind[k];
  return {{"total", counts.total()}, {"by_kind", std::move(by_kind)}};
}

rpc_error bad_params(std::string msg) {
  return {rpc_code::invalid_params, std::move(msg), nullptr};
}

}  // namespace

std::shared_ptr<upstream> control_plane::find_upstream(std::string_view server) const {
  auto it = s_.upstreams.find(server);
  return it == s_.upstreams.end() ? nullptr : it->second;
}

json::object control_plane::status(bool histograms) const {
  json::object out;
  out["version"] = MCPMUX_VERSION;
  out["pid"] = ::getpid();
  out["uptime_ms"] = ms_since(s_.info.started);
  out["socket"] = s_.info.socket_path;
  out["config"] = s_.info.config_path;
  out["clients"] = s_.sessions.clients();
  if (const auto& info = s_.info; !info.http_url.empty())
    out["http"] = json::object{
        {"url", info.http_url},
        {"auth", info.http_token_file.empty() ? "none" : "token"},
        {"token_file",
         info.http_token_file.empty() ? json::value(nullptr) : json::value(info.http_token_file)}};
  out["tools"] = s_.catalogue.exposed().routes(collection::tools).size();
  json::array servers;
  for (const auto& [name, up] : s_.upstreams) {
    json::object s;
    s["name"] = name;
    s["type"] = to_string(up->config().type);
    s["state"] = to_string(up->visible_state());
    s["era"] = up->era() == mcp::era::modern   ? json::value("modern")
               : up->era() == mcp::era::legacy ? json::value("legacy")
                                               : json::value(nullptr);
    s["era_setting"] = to_string(up->config().era);
    s["enabled"] = up->config().enabled;
    s["pid"] = up->pid() ? json::value(*up->pid()) : json::value(nullptr);
    s["uptime_ms"] =
        up->ready_since() ? json::value(ms_since(*up->ready_since())) : json::value(nullptr);
    s["restarts"] = up->stats().restarts;
    s["tools"] = up->tools().size();
    s["calls"] = up->stats().calls;
    s["errors"] = up->stats().errors;
    // Calls its limits held back (waited, or refused by the error back-off), by limit.
    json::object limited;
    for (const auto& [limit, n] : up->stats().limited) limited[limit] = n;
    s["limited"] = std::move(limited);
    s["latency_p50_us"] = nullable(up->stats().percentile(0.50));
    s["latency_p99_us"] = nullable(up->stats().percentile(0.99));
    s["last_error"] =
        up->last_error().empty() ? json::value(nullptr) : json::value(up->last_error());
    s["last_error_at_ms"] =
        up->last_error_at_ms() ? json::value(up->last_error_at_ms()) : json::value(nullptr);
    s["attempt"] = up->life().attempt();
    s["next_try_ms"] =
        up->state() == upstream_state::backoff
            ? json::value(std::max<std::int64_t>(0, -ms_since(up->life().next_try())))
            : json::value(nullptr);
    s["tools_from_cache"] = up->tools_from_cache();
    s["quarantined"] = s_.catalogue.quarantined(name).size();
    s["redact_results"] = mcp::to_string(up->config().redact_results);
    s["redacted"] = redaction_json(up->stats().redacted);
    s["on_change"] = to_string(up->config().on_change);
    s["trust"] = up->config().trust_ask ? "ask" : "auto";
    auto tail = up->stderr_tail(5);
    s["last_stderr"] = tail.empty() ? json::value(nullptr) : json::value(tail.back());
    s["crash_looping"] = up->crash_looping();
    json::array stderr_lines, notes;
    for (auto& line : tail) stderr_lines.push_back(json::string(line));
    s["stderr_tail"] = std::move(stderr_lines);
    for (auto& n : up->notes()) notes.push_back(json::string(n));
    s["notes"] = std::move(notes);
    for (auto* e : extensions_) e->describe(name, s);
    if (histograms) {
      s["latency_histogram"] = histogram_json(up->stats().latency);
      json::object by_tool;
      for (const auto& [tool, h] : up->stats().by_tool) by_tool[tool] = histogram_json(h);
      s["tool_latency_histograms"] = std::move(by_tool);
    }
    servers.push_back(std::move(s));
  }
  out["servers"] = std::move(servers);
  json::array profiles;
  for (const auto& [name, view] : s_.catalogue.profiles().views())
    profiles.push_back(profile_status(*view));
  out["profiles"] = std::move(profiles);
  // Each client: who it is (never its command line: that may hold secrets) and what it sees.
  std::vector<const session*> by_id;
  for (const auto& [id, s] : s_.sessions.sessions()) by_id.push_back(s.get());
  std::sort(by_id.begin(), by_id.end(),
            [](const session* a, const session* b) { return a->id() < b->id(); });
  json::array sessions;
  for (const session* s : by_id) {
    const auto id = s->id();
    const auto& who = s->identity();
    json::object c{
        {"id", id},
        {"transport", who.transport},
        {"profile", s->profile().empty() ? json::value(nullptr) : json::value(s->profile())},
        {"era", s->era() == mcp::era::modern   ? "modern"
                : s->era() == mcp::era::legacy ? "legacy"
                                               : "unknown"}};
    if (!s->client_name().empty()) c["client"] = s->client_name();
    if (who.pid) c["pid"] = who.pid;
    if (!who.token.empty()) c["token"] = who.token;
    if (!who.program.empty()) c["program"] = who.program;
    if (who.agent_pid && who.agent_pid != who.pid) c["agent_pid"] = who.agent_pid;
    if (!who.agent_program.empty() && who.agent_pid != who.pid)
      c["agent_program"] = who.agent_program;
    sessions.push_back(std::move(c));
  }
  out["sessions"] = std::move(sessions);
  return out;
}

json::object control_plane::profile_status(const profile_set::view& v) const {
  json::object p{{"name", v.settings.name},
                 {"exposure", to_string(v.settings.exposure)},
                 {"searching", v.searching},
                 {"tools", v.shown.size(collection::tools)},
                 {"estimated_tokens", v.estimated_tokens},
                 {"tool_budget_tokens", v.settings.tool_budget_tokens}};
  if (v.searching) p["listing"] = v.search_listing.size(collection::tools);
  json::array unmatched;
  for (const auto& u : v.unmatched) unmatched.push_back(json::string(u));
  p["unmatched"] = std::move(unmatched);
  std::size_t clients = 0;
  // (Control-only connections, such as `mcpmux status` itself, are not its clients.)
  for (const auto& [id, s] : s_.sessions.sessions())
    clients += s->era() != mcp::era::unknown && s->profile() == v.settings.name;
  p["clients"] = clients;
  return p;
}

// Every exposed tool in list order with its server, original name and first description line.
// Built on demand: only `mcpmux tools` asks, and keeping it current cost every rebuild.
json::array control_plane::tool_table(std::string_view profile) const {
  const auto* view = profile.empty() ? nullptr : s_.catalogue.profiles().find(profile);
  const auto& routes =
      (view ? view->shown : s_.catalogue.exposed()).routes(collection::tools);  // name order
  // Descriptions by (server, original), one server's list indexed at a time.
  std::map<std::string_view, std::unordered_map<std::string_view, const json::object*>> defs;
  auto definition = [&](const route& r) -> const json::object* {
    auto [it, fresh] = defs.try_emplace(r.server);
    if (fresh)
      if (auto up = find_upstream(r.server))
        for (const auto& t : up->tools()) it->second.emplace(t.at("name").get_string(), &t);
    auto d = it->second.find(r.original);
    return d == it->second.end() ? nullptr : d->second;
  };
  json::array tools;
  tools.reserve(routes.size());
  for (const auto& [name, r] : routes) {
    const auto* def = definition(r);
    std::string description = def ? first_line(*def) : std::string();
    if (view)
      if (auto d = view->settings.descriptions.find(name); d != view->settings.descriptions.end())
        description = d->second.substr(0, d->second.find('\n'));
    tools.push_back(json::object{{"name", name},
                                 {"server", r.server},
                                 {"original", r.original},
                                 {"description", std::move(description)}});
  }
  return tools;
}

// Every tool `server` offers, in its own order, and what became of it: `shown` under its exposed
// name, `hidden` by the server's `tools` filter, or `quarantined` by trust (with why); `changed`
// when its definition changed since it was trusted and it is shown all the same.
json::array control_plane::server_tools(const upstream& up) const {
  std::unordered_map<std::string_view, std::string_view> exposed;  // original → exposed name
  for (const auto& [name, r] : s_.catalogue.exposed().routes(collection::tools))
    if (r.server == up.name()) exposed.emplace(r.original, name);
  std::unordered_map<std::string_view, const trust_item*> held;
  for (const auto& q : s_.catalogue.quarantined(up.name()))
    if (q.c == collection::tools) held.emplace(q.name, &q);
  json::array tools;
  tools.reserve(up.tools().size());
  for (const auto& t : up.tools()) {
    const std::string original(t.at("name").get_string());
    json::object row{{"name", nullptr},
                     {"server", up.name()},
                     {"original", original},
                     {"description", first_line(t)}};
    if (auto h = held.find(original); h != held.end()) {
      row["state"] = "quarantined";
      row["why"] = to_string(h->second->why);
      if (!h->second->was.empty()) row["was"] = h->second->was;
    } else if (auto e = exposed.find(original); e != exposed.end()) {
      row["name"] = e->second;
      row["state"] = "shown";
    } else {
      row["state"] = "hidden";
    }
    if (const auto* c = s_.catalogue.changed_since_trust(up.name(), collection::tools, original))
      row["changed"] = json::object{
          {"why", to_string(c->why)}, {"time_ms", c->time_ms}, {"shown_by", c->shown_by}};
    tools.push_back(std::move(row));
  }
  return tools;
}

result<json::value> control_plane::handle(std::string_view method, const json::object& params,
                                          std::uint64_t session) {
  if (method == "mcpmux/status") {
    const auto* h = params.if_contains("histograms");
    return json::value(status(h && h->is_bool() && h->get_bool()));
  }
  if (method == "mcpmux/tools") {
    const auto* p = params.if_contains("profile");
    const bool everything = !p || (p->is_string() && p->get_string().empty());
    if (const auto* s = params.if_contains("server"); s && everything) {  // one server's
      if (!s->is_string()) return bad_params("params.server must be a string");
      auto up = find_upstream(s->get_string());
      if (!up) return bad_params("no server named \"" + std::string(s->get_string()) + "\"");
      auto tools = server_tools(*up);
      const auto* h = params.if_contains("hidden");
      if (!(h && h->is_bool() && h->get_bool())) {  // what clients see, in name order
        tools.erase(std::remove_if(tools.begin(), tools.end(),
                                   [](const json::value& t) { return t.at("state") != "shown"; }),
                    tools.end());
        std::sort(tools.begin(), tools.end(), [](const json::value& a, const json::value& b) {
          return a.at("name").get_string() < b.at("name").get_string();
        });
      }
      return json::value(json::object{{"server", up->name()}, {"tools", std::move(tools)}});
    }
    if (everything) return json::value(json::object{{"tools", tool_table()}});
    if (!p->is_string()) return bad_params("params.profile must be a string");
    const auto* view = s_.catalogue.profiles().find(p->get_string());
    if (!view) {
      auto who = client_identity{};
      who.requested_profile = p->get_string();
      return s_.catalogue.profile_for(who).error();
    }
    json::object out{{"tools", tool_table(p->get_string())}, {"profile", profile_status(*view)}};
    return json::value(std::move(out));
  }
  if (method == "mcpmux/logs" || method == "mcpmux/restart") {
    const auto* s = params.if_contains("server");
    if (!s || !s->is_string()) return bad_params("params.server (string) is required");
    auto up = find_upstream(s->get_string());
    if (!up) return bad_params("no server named \"" + std::string(s->get_string()) + "\"");
    if (method == "mcpmux/restart") {
      log().info("restart of {} requested", up->name());
      up->restart();
      return json::value(json::object{});
    }
    std::size_t n = 100;
    if (const auto* l = params.if_contains("lines"); l && l->is_int64() && l->get_int64() > 0)
      n = static_cast<std::size_t>(l->get_int64());
    json::array lines;
    for (auto& line : up->log_lines(n)) lines.push_back(json::string(line));
    if (const auto* f = params.if_contains("follow"); f && f->is_bool() && f->get_bool())
      followers_[up->name()].insert(session);
    return json::value(json::object{{"server", up->name()}, {"lines", std::move(lines)}});
  }
  if (method == "mcpmux/reload") return s_.actions.reload();
  if (method == "mcpmux/history") return history(params);
  if (method == "mcpmux/quarantine") return quarantine(params);
  if (method == "mcpmux/trust") return trust(params);
  for (auto* e : extensions_)
    if (auto out = e->handle(method, params)) return std::move(*out);
  return rpc_error{rpc_code::method_not_found, "Method not found: " + std::string(method), nullptr};
}

// mcpmux/history {server?, tool?, run?, since_ms?, limit?} → {"enabled", "entries": [oldest
// first]}.
result<json::value> control_plane::history(const json::object& params) {
  audit_query q;
  const auto text = [&](std::string_view key, std::string& out) {
    const auto* v = params.if_contains(key);
    if (!v) return true;
    if (!v->is_string()) return false;
    out = v->get_string();
    return true;
  };
  if (!text("server", q.server) || !text("tool", q.name) || !text("run", q.run))
    return bad_params("params.server, params.tool and params.run must be strings");
  if (const auto* s = params.if_contains("since_ms")) {
    if (!s->is_int64() || s->get_int64() < 0)
      return bad_params("params.since_ms must be a non-negative integer");
    q.since_ms = s->get_int64();
  }
  if (const auto* l = params.if_contains("limit")) {
    if (!l->is_int64() || l->get_int64() < 1 || l->get_int64() > 100000)
      return bad_params("params.limit must be an integer from 1 to 100000");
    q.limit = static_cast<std::size_t>(l->get_int64());
  }
  json::array entries;
  for (auto& e : s_.audit.history(q))
    entries.push_back(json::object{{"time_ms", e.time_ms},
                                   {"kind", e.kind},
                                   {"client", e.client},
                                   {"profile", e.profile},
                                   {"server", e.server},
                                   {"name", e.name},
                                   {"duration_us", e.duration_us},
                                   {"outcome", e.outcome},
                                   {"request_bytes", e.request_bytes},
                                   {"response_bytes", e.response_bytes},
                                   {"detail", e.detail},
                                   {"redacted", e.redacted},
                                   {"run", e.run}});
  return json::value(
      json::object{{"enabled", s_.audit.auditing()}, {"entries", std::move(entries)}});
}

// mcpmux/quarantine {server?, diff?} → {"servers": [{server, trusted, trust, on_change,
// items: [{kind, name, why, was?, pinned, offered, diff?}]}]}: what trust holds back.
result<json::value> control_plane::quarantine(const json::object& params) const {
  const auto* only = params.if_contains("server");
  if (only && !only->is_string()) return bad_params("params.server must be a string");
  if (only && !find_upstream(only->get_string()))
    return bad_params("no server named \"" + std::string(only->get_string()) + "\"");
  const auto* d = params.if_contains("diff");
  const bool with_diff = d && d->is_bool() && d->get_bool();
  json::array servers;
  for (const auto& [name, up] : s_.upstreams) {
    if (only && only->get_string() != name) continue;
    json::array items;
    for (const auto& q : s_.catalogue.quarantined(name)) {
      json::object item{{"kind", to_string(q.c)},
                        {"name", q.name},
                        {"why", to_string(q.why)},
                        {"pinned", q.pinned},
                        {"offered", q.offered}};
      if (!q.was.empty()) item["was"] = q.was;
      if (with_diff) {
        json::array fields;
        for (const auto& f : diff_definitions(q.pinned.empty() ? "{}" : q.pinned, q.offered)) {
          json::array runs;
          for (const auto& r : f.runs)
            runs.push_back(json::object{{"op", std::string(1, r.op)}, {"text", r.text}});
          fields.push_back(json::object{{"field", f.field}, {"runs", std::move(runs)}});
        }
        item["diff"] = std::move(fields);
      }
      items.push_back(std::move(item));
    }
    servers.push_back(json::object{{"server", name},
                                   {"trusted", s_.catalogue.trusted(name)},
                                   {"trust", up->config().trust_ask ? "ask" : "auto"},
                                   {"on_change", to_string(up->config().on_change)},
                                   {"items", std::move(items)}});
  }
  return json::value(json::object{{"servers", std::move(servers)}});
}

// mcpmux/trust {server, names?: [..], all?: bool, expected?: {name: definition}} → approves.
result<json::value> control_plane::trust(const json::object& params) {
  const auto* server = params.if_contains("server");
  if (!server || !server->is_string()) return bad_params("params.server (string) is required");
  std::vector<std::string> names;
  if (const auto* n = params.if_contains("names")) {
    if (!n->is_array()) return bad_params("params.names must be an array of strings");
    for (const auto& v : n->get_array()) {
      if (!v.is_string()) return bad_params("params.names must be an array of strings");
      names.emplace_back(v.get_string());
    }
  }
  const auto* a = params.if_contains("all");
  if (a && !a->is_bool()) return bad_params("params.all must be a boolean");
  const bool all = a && a->get_bool();
  if (all == !names.empty())
    return bad_params("give either params.names (non-empty) or params.all = true");
  std::map<std::string, std::string> expected;
  if (const auto* e = params.if_contains("expected")) {
    if (!e->is_object()) return bad_params("params.expected must be an object of strings");
    for (const auto& kv : e->get_object()) {
      if (!kv.value().is_string())
        return bad_params("params.expected must be an object of strings");
      expected.emplace(kv.key(), kv.value().get_string());
    }
  }
  return s_.actions.approve(std::string(server->get_string()), names, all, expected);
}

void control_plane::on_log(const std::string& server, const std::string& line) {
  for (auto* e : extensions_) e->on_log(server, line);
  auto it = followers_.find(server);
  if (it == followers_.end()) return;
  const auto text = make_notification("notifications/mcpmux/log",
                                      json::object{{"server", server}, {"line", line}});
  for (auto id : std::vector<std::uint64_t>(it->second.begin(), it->second.end()))
    s_.sessions.notify(id, text);
}

void control_plane::forget(std::uint64_t session) {
  for (auto& [server, ids] : followers_) ids.erase(session);
}

}  // namespace mcpmux
