// The manager: upstream ownership, the combined catalogue, control methods.
#include "core/manager.hpp"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <tuple>

#include "core/naming.hpp"
#include "core/session.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

std::int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t)
      .count();
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

rpc_error bad_params(std::string msg) {
  return {rpc_code::invalid_params, std::move(msg), nullptr};
}

}  // namespace

struct manager::startup_gate {
  explicit startup_gate(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
  std::vector<std::function<void()>> waiters;
  bool open = false;  ///< startup_wait has passed, or every server settled once
};

manager::manager(asio::io_context& io, config cfg, daemon_info info)
    : io_(io),
      cfg_(std::move(cfg)),
      info_(std::move(info)),
      gate_(std::make_unique<startup_gate>(io)) {
  for (const auto& s : cfg_.servers)
    upstreams_.emplace(s.name, std::make_shared<upstream>(io_, s, cfg_.daemon, *this));
}

manager::~manager() {
  *alive_ = false;
  for (auto& [name, up] : upstreams_) up->stop();
}

void manager::start() {
  // Spawning forks the daemon; doing it one server per turn of the loop lets clients be
  // served (from the tool cache) while a hundred servers start.
  std::vector<std::weak_ptr<upstream>> order;
  for (auto& [name, up] : upstreams_) order.push_back(up);
  auto next = std::make_shared<std::function<void(std::size_t)>>();
  *next = [this, order = std::move(order), next_w = std::weak_ptr(next),
           alive = std::weak_ptr<bool>(alive_)](std::size_t i) {
    if (alive.expired() || stopped_ || i >= order.size()) return;
    if (auto up = order[i].lock()) up->start();
    if (auto n = next_w.lock()) asio::post(io_, [n, i] { (*n)(i + 1); });
  };
  asio::post(io_, [next] { (*next)(0); });
  rebuild();
  gate_->timer.expires_after(cfg_.daemon.startup_wait);
  gate_->timer.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code ec) {
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
  stopped_ = true;  // servers not started yet stay unstarted
  for (auto& [key, up] : per_client_) up->stop();
  per_client_.clear();
  for (auto& [name, up] : upstreams_) up->stop();
}

std::shared_ptr<upstream> manager::find_upstream(std::string_view server) const {
  auto it = upstreams_.find(server);
  return it == upstreams_.end() ? nullptr : it->second;
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

void manager::attach(std::shared_ptr<session> s, std::uint64_t id) {
  sessions_.emplace(id, std::move(s));
}

// A new connection knows nothing of the old one's subscriptions: subscribe again.
void manager::on_upstream_ready(const std::string& server, upstream& up) {
  if (up.config().per_client) return;
  for (const auto& [key, ids] : subscriptions_)
    if (key.first == server && !ids.empty())
      up.call("resources/subscribe", json::object{{"uri", key.second}}, [](rpc_outcome) {});
}

void manager::on_upstream_log(const std::string& server, const std::string& line) {
  auto it = log_followers_.find(server);
  if (it == log_followers_.end()) return;
  const auto text = make_notification("notifications/mcpmux/log",
                                      json::object{{"server", server}, {"line", line}});
  for (auto id : std::vector<std::uint64_t>(it->second.begin(), it->second.end()))
    if (auto s = sessions_.find(id); s != sessions_.end()) s->second->notify(text);
}

void manager::detach(std::uint64_t id) {
  for (auto& [server, ids] : log_followers_) ids.erase(id);
  for (auto it = per_client_.begin(); it != per_client_.end();) {
    if (it->first.second != id) {
      ++it;
      continue;
    }
    it->second->stop();
    it = per_client_.erase(it);
  }
  // A client that leaves drops its subscriptions and its logging level.
  std::vector<route> subs;
  for (const auto& [key, ids] : subscriptions_)
    if (ids.count(id)) subs.push_back({key.first, key.second});
  for (const auto& r : subs) unsubscribe(id, r);
  if (session_log_levels_.erase(id)) push_log_level();
  // Destroy after the erase: the session's destructor must not see itself in the map.
  auto node = sessions_.extract(id);
}

void manager::close_sessions() {
  auto all = std::move(sessions_);
  sessions_.clear();
  for (auto& [id, s] : all) s->close();
}

void manager::on_upstream_changed(const std::string&) {
  schedule_rebuild();
}

void manager::on_upstream_notification(const std::string& server, const message& msg) {
  const auto method = msg.method();
  if (method == "notifications/message") return forward_log_message(server, msg);
  if (method == "notifications/resources/updated") {
    const auto* uri = msg.params().if_contains("uri");
    if (!uri || !uri->is_string()) return;
    auto it = subscriptions_.find({server, std::string(uri->get_string())});
    if (it == subscriptions_.end()) return;
    // Subscribers see the URI they subscribed to (an alias when the server's URI collides).
    json::object params = msg.params();
    for (const auto& [exposed, r] : cat_[static_cast<std::size_t>(collection::resources)].by_key)
      if (r.server == server && r.original == uri->get_string()) params["uri"] = exposed;
    const auto text = make_notification("notifications/resources/updated", params);
    for (auto id : std::vector<std::uint64_t>(it->second.begin(), it->second.end()))
      if (auto s = sessions_.find(id); s != sessions_.end()) s->second->notify(text);
    return;
  }
  log_.debug("notification {} from {} not forwarded", method, server);
}

// A server's log message goes to each client whose level admits it, named after the server.
void manager::forward_log_message(const std::string& server, const message& msg) {
  const auto* level = msg.params().if_contains("level");
  const int severity = level && level->is_string() ? log_severity(level->get_string()) : -1;
  json::object params = msg.params();
  if (!params.contains("logger")) params["logger"] = server;
  std::string text;
  for (const auto& [id, wanted] : session_log_levels_) {
    if (severity < log_severity(wanted)) continue;
    if (text.empty()) text = make_notification("notifications/message", params);
    if (auto s = sessions_.find(id); s != sessions_.end()) s->second->notify(text);
  }
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
  // Most changes are of state only (a server connecting, ready, backing off): when no list and
  // no server's place in the catalogue changed, naming and serializing are skipped.
  std::vector<std::tuple<std::string, bool, std::uint64_t>> signature;
  signature.reserve(upstreams_.size());
  for (const auto& [name, up] : upstreams_)
    signature.emplace_back(name, up->listed(), up->lists_version());
  signature.emplace_back(cfg_.daemon.tool_separator, false, cfg_.daemon.max_tool_name);
  if (signature == catalogue_signature_) {
    if (!gate_->open && settled()) release_waiters();
    if (info_.on_change) info_.on_change();
    return;
  }
  catalogue_signature_ = std::move(signature);
  std::array<bool, collection_count> changed{};
  changed[static_cast<std::size_t>(collection::tools)] = rebuild_named(collection::tools);
  changed[static_cast<std::size_t>(collection::prompts)] = rebuild_named(collection::prompts);
  changed[static_cast<std::size_t>(collection::resources)] =
      rebuild_uris(collection::resources, "uri");
  changed[static_cast<std::size_t>(collection::resource_templates)] =
      rebuild_uris(collection::resource_templates, "uriTemplate");
  if (!gate_->open && settled()) release_waiters();
  if (info_.on_change) info_.on_change();
  for (std::size_t i = 0; i < collection_count; ++i) {
    if (!changed[i]) continue;
    log_.debug("{} list now has {} items", to_string(static_cast<collection>(i)),
               cat_[i].items.size());
    // Listeners may unregister while being told; iterate over a copy.
    auto ls = std::vector<catalogue_listener*>(listeners_.begin(), listeners_.end());
    for (auto* l : ls)
      if (listeners_.count(l)) l->on_list_changed(static_cast<collection>(i));
  }
}

// Tools and prompts: names under the naming contract (prefix, separator, sanitised, capped).
bool manager::rebuild_named(collection c) {
  std::vector<naming_input> inputs;
  std::vector<const json::object*> defs;
  for (const auto& [name, up] : upstreams_) {
    // A server that is down keeps its last good lists; a stopped or disabled one does not.
    if (!up->listed()) continue;
    for (const auto& t : up->list(c)) {
      inputs.push_back(
          {name, up->config().effective_prefix(), std::string(t.at("name").get_string())});
      defs.push_back(&t);
    }
  }
  std::vector<naming_collision> collisions;
  auto named = assign_tool_names(
      inputs, naming_rules{cfg_.daemon.tool_separator, cfg_.daemon.max_tool_name}, &collisions);
  // Each collision is reported once, not at every rebuild.
  for (const auto& col : collisions)
    if (reported_collisions_
            .insert(std::string(to_string(c)) + "\n" + col.loser + "\n" + col.renamed)
            .second)
      log_.warn("{} name collision: {} and {} both map to \"{}\"; {} is exposed as \"{}\"",
                to_string(c), col.winner, col.loser, col.exposed, col.loser, col.renamed);

  std::vector<std::string> items;
  std::unordered_map<std::string, route> by_key;
  std::vector<catalogue_entry> entries;
  items.reserve(named.size());
  by_key.reserve(named.size());
  for (const auto& n : named) {
    const auto& in = inputs[n.index];
    json::object exposed = *defs[n.index];
    exposed["name"] = n.exposed;
    items.push_back(json::serialize(exposed));
    by_key.emplace(n.exposed, route{in.server, in.original});
    if (c == collection::tools)
      entries.push_back({n.exposed, in.server, in.original, first_line(*defs[n.index])});
  }
  if (c == collection::tools) entries_ = std::move(entries);
  return install(c, std::move(items), std::move(by_key));
}

// Resources and templates: URIs unchanged; a URI two servers share is exposed for the later
// server (in name order) as mcpmux://<server>/<uri>.
bool manager::rebuild_uris(collection c, std::string_view key) {
  std::vector<std::string> items;
  std::unordered_map<std::string, route> by_key;
  for (const auto& [name, up] : upstreams_) {
    if (!up->listed()) continue;
    for (const auto& r : up->list(c)) {
      std::string original(r.at(key).get_string());
      std::string exposed = original;
      if (by_key.count(exposed)) {
        exposed = "mcpmux://" + name + "/" + original;
        if (reported_collisions_.insert(std::string(to_string(c)) + "\n" + exposed).second)
          log_.warn("{} \"{}\" is offered by {} and another server; {}'s is exposed as \"{}\"", key,
                    original, name, name, exposed);
      }
      json::object item = r;
      item[key] = exposed;
      items.push_back(json::serialize(item));
      by_key.emplace(std::move(exposed), route{name, std::move(original)});
    }
  }
  return install(c, std::move(items), std::move(by_key));
}

bool manager::install(collection c, std::vector<std::string> items,
                      std::unordered_map<std::string, route> by_key) {
  auto& cat = cat_[static_cast<std::size_t>(c)];
  if (items == cat.items) {
    cat.by_key = std::move(by_key);  // same list; routes may still have moved between servers
    return false;
  }
  std::string joined = "[";
  for (const auto& i : items) {
    if (joined.size() > 1) joined += ',';
    joined += i;
  }
  joined += ']';
  cat.items = std::move(items);
  cat.joined = std::move(joined);
  cat.by_key = std::move(by_key);
  ++cat.generation;
  return true;
}

std::shared_ptr<upstream> manager::upstream_for(std::string_view server, std::uint64_t session) {
  auto shared = find_upstream(server);
  if (!shared || !shared->config().per_client) return shared;
  // The shared instance keeps the catalogue; each client gets a private process for its calls.
  auto key = std::make_pair(std::string(server), session);
  auto it = per_client_.find(key);
  if (it == per_client_.end()) {
    auto own = std::make_shared<upstream>(io_, shared->config(), cfg_.daemon, *this);
    log_.info("starting a private {} for session {}", server, session);
    own->start();
    it = per_client_.emplace(std::move(key), std::move(own)).first;
  }
  return it->second;
}

const route* manager::find(collection c, std::string_view exposed) const {
  const auto& m = cat_[static_cast<std::size_t>(c)].by_key;
  auto it = m.find(std::string(exposed));
  return it == m.end() ? nullptr : &it->second;
}

std::optional<route> manager::route_resource(std::string_view uri) const {
  if (const auto* r = find(collection::resources, uri)) return *r;
  if (uri.substr(0, 9) == "mcpmux://") {
    auto rest = uri.substr(9);
    auto slash = rest.find('/');
    if (slash != std::string_view::npos) {
      std::string server(rest.substr(0, slash));
      if (upstreams_.count(server)) return route{server, std::string(rest.substr(slash + 1))};
    }
  }
  // A URI made from a template: the template whose literal head matches most of it.
  const route* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [tmpl, r] :
       cat_[static_cast<std::size_t>(collection::resource_templates)].by_key) {
    const auto head = std::string_view(r.original).substr(0, r.original.find('{'));
    if (head.size() >= best_len && uri.substr(0, head.size()) == head) {
      best = &r;
      best_len = head.size();
    }
  }
  if (best) return route{best->server, std::string(uri)};
  // One server with resources at all: it is the only place the URI can be.
  std::optional<route> only;
  for (const auto& [name, up] : upstreams_)
    if (up->offers(collection::resources)) {
      if (only) return std::nullopt;
      only = route{name, std::string(uri)};
    }
  return only;
}

std::optional<route> manager::route_completion(const json::object& ref) const {
  const auto* type = ref.if_contains("type");
  if (!type || !type->is_string()) return std::nullopt;
  if (type->get_string() == "ref/prompt") {
    const auto* name = ref.if_contains("name");
    if (!name || !name->is_string()) return std::nullopt;
    if (const auto* r = find(collection::prompts, name->get_string())) return *r;
    return std::nullopt;
  }
  if (type->get_string() == "ref/resource") {
    const auto* uri = ref.if_contains("uri");
    if (!uri || !uri->is_string()) return std::nullopt;
    if (const auto* r = find(collection::resource_templates, uri->get_string())) return *r;
    return route_resource(uri->get_string());
  }
  return std::nullopt;
}

std::variant<list_page, rpc_error> manager::page(collection c, std::string_view cursor) const {
  const auto& cat = cat_[static_cast<std::size_t>(c)];
  const auto size = cfg_.daemon.page_size;
  std::size_t offset = 0;
  if (!cursor.empty()) {
    // "<generation>.<offset>": opaque to clients, bound to the list it paged.
    unsigned long long gen = 0, off = 0;
    if (std::sscanf(std::string(cursor).c_str(), "%llu.%llu", &gen, &off) != 2)
      return rpc_error{rpc_code::invalid_params, "Invalid params: unknown cursor", nullptr};
    if (gen != cat.generation)
      return rpc_error{
          rpc_code::invalid_params,
          "Invalid params: stale cursor; the list changed since, list again from the start",
          nullptr};
    offset = static_cast<std::size_t>(off);
    if (offset > cat.items.size())
      return rpc_error{rpc_code::invalid_params, "Invalid params: unknown cursor", nullptr};
  }
  if (offset == 0 && cat.items.size() <= size) return list_page{cat.joined, std::nullopt};
  const auto end = std::min(cat.items.size(), offset + size);
  std::string out = "[";
  for (auto i = offset; i < end; ++i) {
    if (i > offset) out += ',';
    out += cat.items[i];
  }
  out += ']';
  std::optional<std::string> next;
  if (end < cat.items.size()) next = std::to_string(cat.generation) + "." + std::to_string(end);
  return list_page{std::move(out), std::move(next)};
}

json::object manager::downstream_capabilities() const {
  bool resources = false, subscribe = false, prompts = false, completions = false, logging = false;
  for (const auto& [name, up] : upstreams_) {
    const auto& caps = up->capabilities();
    if (const auto* r = caps.if_contains("resources")) {
      resources = true;
      if (const auto* ro = r->if_object(); ro && ro->contains("subscribe") &&
                                           ro->at("subscribe").is_bool() &&
                                           ro->at("subscribe").get_bool())
        subscribe = true;
    }
    prompts = prompts || caps.contains("prompts");
    completions = completions || caps.contains("completions");
    logging = logging || caps.contains("logging");
  }
  json::object out;
  out["tools"] = json::object{{"listChanged", true}};
  if (resources) {
    json::object r{{"listChanged", true}};
    if (subscribe) r["subscribe"] = true;
    out["resources"] = std::move(r);
  }
  if (prompts) out["prompts"] = json::object{{"listChanged", true}};
  if (completions) out["completions"] = json::object{};
  if (logging) out["logging"] = json::object{};
  return out;
}

void manager::subscribe(std::uint64_t session, const route& r) {
  auto& subs = subscriptions_[{r.server, r.original}];
  const bool first = subs.empty();
  subs.insert(session);
  if (!first) return;
  if (auto up = find_upstream(r.server))
    up->call("resources/subscribe", json::object{{"uri", r.original}}, [](rpc_outcome) {});
}

void manager::unsubscribe(std::uint64_t session, const route& r) {
  auto it = subscriptions_.find({r.server, r.original});
  if (it == subscriptions_.end() || !it->second.erase(session) || !it->second.empty()) return;
  subscriptions_.erase(it);
  if (auto up = find_upstream(r.server))
    up->call("resources/unsubscribe", json::object{{"uri", r.original}}, [](rpc_outcome) {});
}

int log_severity(std::string_view level) {
  static constexpr std::string_view levels[] = {"debug", "info",     "notice", "warning",
                                                "error", "critical", "alert",  "emergency"};
  for (int i = 0; i < 8; ++i)
    if (levels[i] == level) return i;
  return -1;
}

void manager::set_session_log_level(std::uint64_t session, std::string level) {
  if (level.empty())
    session_log_levels_.erase(session);
  else
    session_log_levels_[session] = std::move(level);
  push_log_level();
}

// Every server is asked for the most verbose level any client wants.
void manager::push_log_level() {
  std::string most;
  for (const auto& [id, level] : session_log_levels_)
    if (most.empty() || log_severity(level) < log_severity(most)) most = level;
  for (auto& [name, up] : upstreams_) up->set_log_level(most);
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
    s["uptime_ms"] =
        up->ready_since() ? json::value(ms_since(*up->ready_since())) : json::value(nullptr);
    s["restarts"] = up->stats().restarts;
    s["tools"] = up->tools().size();
    s["calls"] = up->stats().calls;
    s["errors"] = up->stats().errors;
    s["latency_p50_us"] = nullable(up->stats().percentile(0.50));
    s["latency_p99_us"] = nullable(up->stats().percentile(0.99));
    s["last_error"] =
        up->last_error().empty() ? json::value(nullptr) : json::value(up->last_error());
    s["attempt"] = up->life().attempt();
    s["next_try_ms"] =
        up->state() == upstream_state::backoff
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

std::variant<json::value, rpc_error> manager::control(std::string_view method,
                                                      const json::object& params,
                                                      std::uint64_t session) {
  if (method == "mcpmux/status") return json::value(status());
  if (method == "mcpmux/tools") {
    json::array tools;
    for (const auto& e : entries_)
      tools.push_back(json::object{{"name", e.exposed},
                                   {"server", e.server},
                                   {"original", e.original},
                                   {"description", e.description}});
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
  if (!info_.reload_config)
    return rpc_error{rpc_code::internal_error, "reload is not available", nullptr};
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
    return rpc_error{rpc_code::invalid_params,
                     "invalid configuration; keeping the running one: " + first, nullptr,
                     json::value(json::object{{"errors", std::move(errors)}})};
  }
  config next = std::move(*loaded.value);
  json::array added, removed, changed, unchanged, restart_required, warnings;
  for (const auto& w : loaded.warnings) {
    log_.warn("config: {}", w);
    warnings.push_back(json::string(w));
  }
  // The socket is bound once; everything else applies now.
  if (info_.socket_for && info_.socket_for(next.daemon) != info_.socket_path)
    restart_required.push_back("daemon.socket");
  // The HTTP endpoint is bound once too.
  if (next.daemon.http != cfg_.daemon.http) restart_required.push_back("daemon.http");
  if (next.daemon.http_allow_remote != cfg_.daemon.http_allow_remote)
    restart_required.push_back("daemon.http_allow_remote");
  if (next.daemon.http_token_file != cfg_.daemon.http_token_file)
    restart_required.push_back("daemon.http_token_file");
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
  log_.info("reloaded {}: {} added, {} removed, {} changed, {} unchanged", source, added.size(),
            removed.size(), changed.size(), unchanged.size());
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
