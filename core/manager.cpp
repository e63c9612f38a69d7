// The manager: upstream ownership, the combined catalogue, control methods.
#include "core/manager.hpp"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>

#include "core/naming.hpp"
#include "core/session.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

std::int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
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

rpc_error bad_params(std::string msg) { return {rpc_code::invalid_params, std::move(msg), nullptr}; }

}  // namespace

struct manager::startup_gate {
  explicit startup_gate(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
  std::vector<std::function<void()>> waiters;
  bool open = false;  ///< startup_wait has passed, or every server settled once
};

manager::manager(asio::io_context& io, config cfg, daemon_info info)
    : io_(io), cfg_(std::move(cfg)), info_(std::move(info)), gate_(std::make_unique<startup_gate>(io)) {
  for (const auto& s : cfg_.servers)
    upstreams_.emplace(s.name, std::make_shared<upstream>(io_, s, cfg_.daemon, *this));
}

manager::~manager() {
  *alive_ = false;
  for (auto& [name, up] : upstreams_) up->stop();
}

void manager::start() {
  for (auto& [name, up] : upstreams_) up->start();
  rebuild();
  gate_->timer.expires_after(cfg_.daemon.startup_wait);
  gate_->timer.async_wait([this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code ec) {
    if (ec || alive.expired()) return;
    release_waiters();
  });
}

bool manager::settled() const {
  for (const auto& [name, up] : upstreams_)
    if (!up->settled()) return false;
  return true;
}

void manager::when_settled(std::function<void()> ready) {
  if (gate_->open || settled()) {
    gate_->open = true;
    return ready();
  }
  gate_->waiters.push_back(std::move(ready));
}

void manager::release_waiters() {
  gate_->open = true;
  gate_->timer.cancel();
  auto waiters = std::move(gate_->waiters);
  gate_->waiters.clear();
  for (auto& w : waiters) w();
}

void manager::stop() {
  for (auto& [name, up] : upstreams_) up->stop();
}

std::shared_ptr<upstream> manager::find_upstream(std::string_view server) const {
  auto it = upstreams_.find(server);
  return it == upstreams_.end() ? nullptr : it->second;
}

const catalogue_entry* manager::find_tool(std::string_view exposed) const {
  auto it = by_name_.find(exposed);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::string manager::instructions() const {
  std::string out;
  for (const auto& [name, up] : upstreams_) {
    if (up->instructions().empty()) continue;
    if (!out.empty()) out += "\n\n";
    out += "## " + name + "\n" + up->instructions();
  }
  if (out.size() > cfg_.daemon.max_instructions_bytes) {
    out.resize(cfg_.daemon.max_instructions_bytes);
    // Do not leave half a UTF-8 sequence at the cut.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    out += "\n[truncated]";
  }
  return out;
}

void manager::attach(std::shared_ptr<session> s, std::uint64_t id) { sessions_.emplace(id, std::move(s)); }

void manager::on_upstream_log(const std::string& server, const std::string& line) {
  auto it = log_followers_.find(server);
  if (it == log_followers_.end()) return;
  const auto text = make_notification("notifications/mcpmux/log", json::object{{"server", server}, {"line", line}});
  for (auto id : std::vector<std::uint64_t>(it->second.begin(), it->second.end()))
    if (auto s = sessions_.find(id); s != sessions_.end()) s->second->notify(text);
}

void manager::detach(std::uint64_t id) {
  for (auto& [server, ids] : log_followers_) ids.erase(id);
  // Destroy after the erase: the session's destructor must not see itself in the map.
  auto node = sessions_.extract(id);
}

void manager::close_sessions() {
  auto all = std::move(sessions_);
  sessions_.clear();
  for (auto& [id, s] : all) s->close();
}

void manager::on_upstream_changed(const std::string&) { schedule_rebuild(); }

void manager::on_upstream_notification(const std::string& server, const message& msg) {
  log_.debug("notification {} from {} not forwarded", msg.method(), server);
}

// Many changes in one turn of the loop (startup, reload) produce one rebuild and one notification.
void manager::schedule_rebuild() {
  if (rebuild_posted_) return;
  rebuild_posted_ = true;
  asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired()) return;
    rebuild_posted_ = false;
    rebuild();
  });
}

void manager::rebuild() {
  std::vector<naming_input> inputs;
  std::vector<const json::object*> defs;
  for (const auto& [name, up] : upstreams_) {
    // A server that is down keeps its last good tools listed; a stopped or disabled one does not.
    if (up->state() == upstream_state::stopped || up->state() == upstream_state::disabled) continue;
    for (const auto& t : up->tools()) {
      inputs.push_back({name, up->config().effective_prefix(), std::string(t.at("name").get_string())});
      defs.push_back(&t);
    }
  }
  std::vector<naming_collision> collisions;
  auto named = assign_tool_names(inputs, naming_rules{cfg_.daemon.tool_separator, cfg_.daemon.max_tool_name},
                                 &collisions);
  // Each collision is reported once, not at every rebuild.
  for (const auto& c : collisions)
    if (reported_collisions_.insert(c.loser + "\n" + c.renamed).second)
      log_.warn("tool name collision: {} and {} both map to \"{}\"; {} is exposed as \"{}\"", c.winner, c.loser,
                c.exposed, c.loser, c.renamed);

  std::vector<catalogue_entry> entries;
  entries.reserve(named.size());
  std::string json = "[";
  for (const auto& n : named) {
    const auto& in = inputs[n.index];
    const auto& def = *defs[n.index];
    if (json.size() > 1) json += ',';
    json::object exposed = def;
    exposed["name"] = n.exposed;
    json += json::serialize(exposed);
    entries.push_back({n.exposed, in.server, in.original, first_line(def)});
  }
  json += ']';

  const bool changed = json != tools_json_;
  entries_ = std::move(entries);
  by_name_.clear();
  by_name_.reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) by_name_.emplace(entries_[i].exposed, i);
  tools_json_ = std::move(json);
  if (!gate_->open && settled()) release_waiters();
  if (info_.on_change) info_.on_change();
  if (!changed) return;
  log_.debug("catalogue now has {} tools", entries_.size());
  // Listeners may unregister while being told; iterate over a copy.
  auto ls = std::vector<catalogue_listener*>(listeners_.begin(), listeners_.end());
  for (auto* l : ls)
    if (listeners_.count(l)) l->on_tools_changed();
}

std::pair<std::size_t, std::size_t> manager::ready_count() const {
  std::size_t ready = 0, enabled = 0;
  for (const auto& [name, up] : upstreams_) {
    if (!up->config().enabled) continue;
    ++enabled;
    if (up->state() == upstream_state::ready) ++ready;
  }
  return {ready, enabled};
}

json::object manager::status() const {
  json::object out;
  out["version"] = MCPMUX_VERSION;
  out["pid"] = ::getpid();
  out["uptime_ms"] = ms_since(info_.started);
  out["socket"] = info_.socket_path;
  out["config"] = info_.config_path;
  out["clients"] = sessions_.size();
  out["tools"] = entries_.size();
  json::array servers;
  for (const auto& [name, up] : upstreams_) {
    json::object s;
    s["name"] = name;
    s["type"] = to_string(up->config().type);
    s["state"] = to_string(up->state());
    s["enabled"] = up->config().enabled;
    s["pid"] = up->pid() ? json::value(*up->pid()) : json::value(nullptr);
    s["uptime_ms"] = up->ready_since() ? json::value(ms_since(*up->ready_since())) : json::value(nullptr);
    s["restarts"] = up->stats().restarts;
    s["tools"] = up->tools().size();
    s["calls"] = up->stats().calls;
    s["errors"] = up->stats().errors;
    s["latency_p50_us"] = nullable(up->stats().percentile(0.50));
    s["latency_p99_us"] = nullable(up->stats().percentile(0.99));
    s["last_error"] = up->last_error().empty() ? json::value(nullptr) : json::value(up->last_error());
    s["attempt"] = up->life().attempt();
    s["next_try_ms"] = up->state() == upstream_state::backoff
                           ? json::value(std::max<std::int64_t>(0, -ms_since(up->life().next_try())))
                           : json::value(nullptr);
    s["tools_from_cache"] = up->tools_from_cache();
    json::value last_stderr = nullptr;
    for (const auto& line : up->log_lines(1000))
      if (line.rfind("stderr: ", 0) == 0) last_stderr = line.substr(8);
    s["last_stderr"] = std::move(last_stderr);
    servers.push_back(std::move(s));
  }
  out["servers"] = std::move(servers);
  return out;
}

std::variant<json::value, rpc_error> manager::control(std::string_view method, const json::object& params,
                                                      std::uint64_t session) {
  if (method == "mcpmux/status") return json::value(status());
  if (method == "mcpmux/tools") {
    json::array tools;
    for (const auto& e : entries_)
      tools.push_back(json::object{
          {"name", e.exposed}, {"server", e.server}, {"original", e.original}, {"description", e.description}});
    return json::value(json::object{{"tools", std::move(tools)}});
  }
  if (method == "mcpmux/logs" || method == "mcpmux/restart") {
    const auto* s = params.if_contains("server");
    if (!s || !s->is_string()) return bad_params("params.server (string) is required");
    auto up = find_upstream(s->get_string());
    if (!up) return bad_params("no server named \"" + std::string(s->get_string()) + "\"");
    if (method == "mcpmux/restart") {
      log_.info("restart of {} requested", up->name());
      up->restart();
      return json::value(json::object{});
    }
    std::size_t n = 100;
    if (const auto* l = params.if_contains("lines"); l && l->is_int64() && l->get_int64() > 0)
      n = static_cast<std::size_t>(l->get_int64());
    json::array lines;
    for (auto& line : up->log_lines(n)) lines.push_back(json::string(line));
    if (const auto* f = params.if_contains("follow"); f && f->is_bool() && f->get_bool())
      log_followers_[up->name()].insert(session);
    return json::value(json::object{{"server", up->name()}, {"lines", std::move(lines)}});
  }
  if (method == "mcpmux/reload") return reload();
  return rpc_error{rpc_code::method_not_found, "Method not found: " + std::string(method), nullptr};
}

std::variant<json::value, rpc_error> manager::reload() {
  if (!info_.reload_config) return rpc_error{rpc_code::internal_error, "reload is not available", nullptr};
  auto loaded = info_.reload_config();
  if (!loaded.value) {
    json::array errors;
    std::string first;
    for (const auto& e : loaded.errors) {
      errors.push_back(json::string(e.to_string()));
      if (first.empty()) first = e.to_string();
    }
    log_.error("reload: invalid configuration, keeping the running one: {}", first);
    if (info_.on_change) info_.on_change();  // the reload is over (systemd: READY=1)
    return rpc_error{rpc_code::invalid_params, "invalid configuration; keeping the running one: " + first,
                     nullptr, json::value(json::object{{"errors", std::move(errors)}})};
  }
  config next = std::move(*loaded.value);
  json::array added, removed, changed, unchanged, restart_required, warnings;
  for (const auto& w : loaded.warnings) {
    log_.warn("config: {}", w);
    warnings.push_back(json::string(w));
  }
  // The socket is bound once; everything else applies now.
  if (next.daemon.socket != cfg_.daemon.socket) restart_required.push_back("daemon.socket");
  if (auto level = parse_log_level(next.daemon.log_level)) set_log_level(*level);

  std::map<std::string, std::shared_ptr<upstream>, std::less<>> kept;
  for (const auto& s : next.servers) {
    auto it = upstreams_.find(s.name);
    if (it != upstreams_.end() && it->second->config() == s) {
      it->second->set_daemon_config(next.daemon);
      kept.emplace(s.name, std::move(it->second));
      upstreams_.erase(it);
      unchanged.push_back(json::string(s.name));
      continue;
    }
    (it == upstreams_.end() ? added : changed).push_back(json::string(s.name));
    if (it != upstreams_.end()) {
      it->second->stop();
      upstreams_.erase(it);
    }
    kept.emplace(s.name, std::make_shared<upstream>(io_, s, next.daemon, *this));
  }
  for (auto& [name, up] : upstreams_) {
    removed.push_back(json::string(name));
    up->stop();
  }
  upstreams_ = std::move(kept);
  const auto source = next.source;
  cfg_ = std::move(next);
  info_.config_path = source;
  for (auto& [name, up] : upstreams_) up->start();  // no-op for the ones already running
  log_.info("reloaded {}: {} added, {} removed, {} changed, {} unchanged", source, added.size(), removed.size(),
            changed.size(), unchanged.size());
  schedule_rebuild();
  return json::value(json::object{{"config", source},
                                  {"added", std::move(added)},
                                  {"removed", std::move(removed)},
                                  {"changed", std::move(changed)},
                                  {"unchanged", std::move(unchanged)},
                                  {"restart_required", std::move(restart_required)},
                                  {"warnings", std::move(warnings)}});
}

}  // namespace mcpmux
