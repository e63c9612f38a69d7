// The manager: upstream ownership, the combined catalogue, control methods.
#include "core/manager.hpp"

#include "config/filters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <tuple>

#include "base/redact.hpp"
#include "core/catalogue_snapshot.hpp"
#include "core/naming.hpp"
#include "core/reload_plan.hpp"
#include "core/session.hpp"
#include "core/tool_cache.hpp"
#include "protocol/modern.hpp"
#include "protocol/param_headers.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

// The state store; in memory (nothing kept across restarts) when its file cannot be opened. The
// tool cache files of versions before it move in on first start.
std::unique_ptr<state_store> open_state_store(const logger& log) {
  auto store = state_store::open(state_store_path());
  if (!store) {
    log.warn("state store: {}; the tool cache, pins and audit log last only until exit",
             store.error().message);
    store = state_store::open(":memory:");
    if (!store) {
      log.error("no state store: {}", store.error().message);
      return nullptr;
    }
  }
  std::vector<std::string> warnings;
  if (auto moved = migrate_cache_files(cache_dir(), **store, &warnings))
    log.info("moved {} tool cache files into the state store", moved);
  for (const auto& w : warnings) log.warn("{}", w);
  return std::move(*store);
}

}  // namespace

manager::manager(asio::io_context& io, config cfg, daemon_info info, channel_factory open)
    : io_(io),
      cfg_(std::move(cfg)),
      info_(std::move(info)),
      open_(std::move(open)),
      store_(open_state_store(log_)) {
  auto cached = starts_.read_tool_cache(store_.get(), cfg_, catalogue_.exposed_for_restore());
  for (std::size_t i = 0; i < cfg_.servers.size(); ++i)
    upstreams_.emplace(cfg_.servers[i].name,
                       make_upstream(cfg_.servers[i], cfg_.daemon, &cached[i]));
}

std::shared_ptr<upstream> manager::make_upstream(const server_config& s, const daemon_config& d,
                                                 cache_entry* cached) {
  auto up = std::make_shared<upstream>(io_, s, d, *this, open_, cached);
  catalogue_.trust_cached(*up);
  return up;
}

bool manager::cached_reads_pending() const {
  return starts_.cached_reads_pending();
}

bool manager::read_next_cached() {
  const auto s = starts_.next_cached_read();
  if (!s) return false;
  if (auto it = upstreams_.find(s->name); it != upstreams_.end() && it->second->cache_pending() &&
                                          it->second->take_cached(load_cache_entry(*store_, *s)))
    catalogue_.trust_cached(*it->second);
  if (!starts_.cached_reads_pending())
    rebuild();  // the same tools list, now built from the entries
  return true;
}

manager::~manager() {
  *alive_ = false;
  for (auto& [name, up] : upstreams_) up->stop();
}

void manager::start() {
  // The servers start later, one at a time (start_next): their cached tools are listed now.
  starts_.start(cfg_.daemon.startup_wait);
  rebuild();
  if (!cached_reads_pending() && store_)  // (a crash before stop() would leave none)
    starts_.keep_later([this] { keep_snapshot(*store_, cfg_, log_); });
}

void manager::stop() {
  starts_.stop();  // servers not started yet stay unstarted; private ones stop
  if (store_) keep_snapshot(*store_, cfg_, log_);  // for the next start
  audit_.drain();
  mrtr_.clear();
  for (auto& [name, up] : upstreams_) up->stop();
}

// Every spawn is audited with its command line (secrets redacted).
void manager::on_upstream_spawned(const std::string& server, int pid) {
  if (!auditing()) return;
  auto up = find_upstream(server);
  if (!up) return;
  std::string line = up->config().command;
  for (const auto& a : up->config().args) line += " " + a;
  audit_entry e;
  e.time_ms = unix_now_ms();
  e.kind = "spawn";
  e.client = "daemon";
  e.server = server;
  e.name = std::to_string(pid);
  e.outcome = "started";
  e.detail = redact(line);
  audit(std::move(e));
}

std::shared_ptr<upstream> manager::find_upstream(std::string_view server) const {
  auto it = upstreams_.find(server);
  return it == upstreams_.end() ? nullptr : it->second;
}

// A new connection knows nothing of the old one's subscriptions: subscribe again.
void manager::on_upstream_ready(const std::string& server, upstream& up) {
  if (up.config().per_client) return;
  up.resubscribe(sessions_.subscribed_uris(server));
}

void manager::on_upstream_log(const std::string& server, const std::string& line) {
  control_.on_log(server, line);
}

void manager::detach(std::uint64_t id) {
  control_.forget(id);
  starts_.drop_session(id);
  sessions_.detach(id);
}

void manager::on_upstream_changed(const std::string&) {
  schedule_rebuild();
}

std::shared_ptr<const mcp::secret_detector> manager::result_detector(const upstream& up,
                                                                     std::string_view profile) {
  std::optional<mcp::redaction_mode> chosen;
  if (const auto* v = profile.empty() ? nullptr : catalogue_.profiles().find(profile))
    chosen = v->settings.redact_results;
  return detectors_.get(effective_redaction(up.config().redact_results, chosen));
}

// A server's log messages go to every client that asked for them, whatever its profile: they are
// redacted with the strictest of the server's mode and the modes profiles set.
std::shared_ptr<const mcp::secret_detector> manager::message_detector(const upstream& up) {
  auto mode = up.config().redact_results;
  for (const auto& [name, v] : catalogue_.profiles().views())
    if (v->settings.redact_results) mode = std::max(mode, *v->settings.redact_results);
  return detectors_.get(mode);
}

void manager::on_upstream_notification(const std::string& server, const message& msg) {
  if (msg.method() == "notifications/message")
    if (auto up = find_upstream(server))
      if (auto d = message_detector(*up)) {
        auto copy = msg;
        if (auto* params = copy.body.if_contains("params")) {
          const auto counts = mcp::redact_notification(copy.method(), *params, *d);
          if (!counts.empty()) {
            up->count_redacted(counts);
            return deliver(server, copy);
          }
        }
      }
  deliver(server, msg);
}

void manager::deliver(const std::string& server, const message& msg) {
  if (!sessions_.deliver(server, msg, catalogue_.exposed()))
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

// While a snapshot stands for the tool cache, the lists wait for the cache too.
void manager::rebuild() {
  std::optional<catalogue_service::changes> changed;
  if (!cached_reads_pending()) changed = catalogue_.rebuild(starts_.settled());
  starts_.check_settled();
  if (info_.on_change) info_.on_change();
  if (!changed) return;
  sessions_.notify_lists("", changed->lists);
  for (const auto& [name, c] : changed->profiles) sessions_.notify_lists(name, c);
}

std::shared_ptr<upstream> manager::upstream_for(std::string_view server, std::uint64_t session) {
  auto shared = find_upstream(server);
  if (!shared || !shared->config().per_client) return shared;
  return starts_.private_upstream(*shared, session, [&] {
    return std::make_shared<upstream>(io_, shared->config(), cfg_.daemon, *this, open_);
  });
}

// The fast path first: most configs set no limit, and then a call goes straight to its server.
void manager::start_call(std::shared_ptr<call> c, const std::shared_ptr<upstream>& up,
                         const std::string& profile) {
  call_gate::route r;
  const auto& s = up->config();
  r.server_limits = {s.max_calls_per_minute, s.max_concurrent_calls};
  if (!profile.empty())
    for (const auto& p : cfg_.profiles)
      if (p.name == profile) r.profile_limits = {p.max_calls_per_minute, p.max_concurrent_calls};
  if (!r.server_limits.any() && !r.profile_limits.any()) return up->start_call(std::move(c));
  r.server = s.name;
  r.profile = profile;
  r.timeout = up->timeout();
  // The upstream is held weakly while the call waits: a reload may replace it meanwhile.
  std::weak_ptr<upstream> weak = up;
  gate_.admit(
      std::move(c), r,
      [weak, name = s.name](std::shared_ptr<call> c) {
        if (auto u = weak.lock()) return u->start_call(std::move(c));
        c->finish(refusal(c->method(), "MCP server \"" + name + "\" was removed"));
      },
      [weak](std::string_view limit) {
        if (auto u = weak.lock()) u->count_limited(limit);
      });
}

// Each server's listen stream follows the tasks its sessions watch.
void manager::listen_tasks(const std::string& server, std::set<std::string> ids) {
  if (auto up = find_upstream(server)) up->listen_tasks(std::move(ids));
}

// The combined lists change only when a server's do, and modern clients that listen hear of it:
// they may keep a list a minute. A server that does not say when its lists change (no
// listChanged) makes them stale at once; one reached over HTTP may answer per user: private. A
// modern server's own hint (from server/discover) lowers the TTL and may make it private.
manager::cache_hint manager::list_cache_hint() const {
  constexpr std::int64_t default_ttl_ms = 60000;
  cache_hint hint{default_ttl_ms, "public"};
  for (const auto& [name, up] : upstreams_) {
    if (!up->config().enabled) continue;
    if (!up->traits().lists_shared || up->cache_private()) hint.scope = "private";
    if (auto ttl = up->cache_ttl_ms()) hint.ttl_ms = std::min(hint.ttl_ms, *ttl);
    if (!up->capabilities().empty() &&
        !mcp::capability_flag(up->capabilities(), "tools", "listChanged"))
      hint.ttl_ms = 0;
  }
  return hint;
}

void manager::subscribe_resource(const std::string& server, const std::string& uri,
                                 subscription_table::done_fn done) {
  auto up = find_upstream(server);
  if (!up) return done(rpc_code::invalid_params, "Unknown resource: " + uri);
  up->subscribe_resource(
      uri, [done = std::move(done), alive = std::weak_ptr<bool>(alive_)](rpc_outcome out) {
        if (alive.expired()) return;
        if (out.ec) return done(rpc_code::connection_closed, out.ec.message());
        if (out.reply->kind != message_kind::error_response) return done(0, {});
        // The server's refusal, as it gave it.
        const auto& err = out.reply->body["error"].as_object();
        const auto* code = err.at("code").if_int64();
        done(code ? static_cast<int>(*code) : rpc_code::internal_error,
             std::string(err.at("message").as_string()));
      });
}

void manager::unsubscribe_resource(const std::string& server, const std::string& uri) {
  if (auto up = find_upstream(server)) up->unsubscribe_resource(uri);
}

// Every server is asked for the most verbose level any client wants.
void manager::set_log_level(const std::string& level) {
  for (auto& [name, up] : upstreams_) up->set_log_level(level);
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

result<json::value> manager::control(std::string_view method, const json::object& params,
                                     std::uint64_t session) {
  return control_.handle(method, params, session);
}

result<json::value> manager::reload() {
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
  json::array warnings;
  for (const auto& w : loaded.warnings) {
    log_.warn("config: {}", w);
    warnings.push_back(json::string(w));
  }
  const bool socket_moves = info_.socket_for && info_.socket_for(next.daemon) != info_.socket_path;
  const auto plan = plan_reload(cfg_, next, socket_moves);
  if (auto level = parse_log_level(next.daemon.log_level)) mcpmux::set_log_level(*level);

  std::map<std::string, std::shared_ptr<upstream>, std::less<>> kept;
  auto keep = [&](const std::string& name) -> upstream* {
    auto it = upstreams_.find(name);
    if (it == upstreams_.end()) return nullptr;  // (cannot be: cfg_ lists what runs)
    it->second->set_daemon_config(next.daemon);
    auto* up = kept.emplace(name, std::move(it->second)).first->second.get();
    upstreams_.erase(it);
    return up;
  };
  for (const auto& name : plan.unchanged) keep(name);
  // Trust judges again what a refiltered (maybe on_change), changed or removed server offers.
  for (const auto* names : {&plan.refiltered, &plan.changed, &plan.removed})
    for (const auto& name : *names) catalogue_.forget_trust(name);
  for (const auto& name : plan.refiltered)
    if (auto* up = keep(name))
      for (const auto& s : next.servers)
        if (s.name == name) up->set_filters(s);
  if (!plan.refiltered.empty()) catalogue_.invalidate();  // the same lists, shown anew
  const auto profiles_touched = catalogue_.configure_profiles(next.profiles);
  for (auto& [name, up] : upstreams_) up->stop();  // removed, or changed (started anew below)
  for (const auto& s : next.servers) {
    if (kept.count(s.name)) continue;
    auto cached = store_ ? load_cache_entries(*store_, {s}) : std::vector<cache_entry>(1);
    kept.emplace(s.name, make_upstream(s, next.daemon, &cached[0]));
  }
  upstreams_ = std::move(kept);
  const auto source = next.source;
  cfg_ = std::move(next);
  audit_.configure(cfg_.daemon);
  info_.config_path = source;
  for (auto& [name, up] : upstreams_) up->start();  // no-op for the ones already running
  // Clients of a profile that is gone see everything now. The views of added and changed
  // profiles are built at once (below), and their clients told what changed.
  sessions_.drop_profiles(
      [&](const std::string& p) { return catalogue_.profiles().find(p) != nullptr; });
  log_.info(
      "reloaded {}: {} added, {} removed, {} changed, {} refiltered, {} unchanged; {} profiles "
      "changed",
      source, plan.added.size(), plan.removed.size(), plan.changed.size(), plan.refiltered.size(),
      plan.unchanged.size(), profiles_touched.size());
  if (profiles_touched.empty())
    schedule_rebuild();
  else
    rebuild();
  auto names = [](const std::vector<std::string>& v) {
    json::array a;
    for (const auto& n : v) a.push_back(json::string(n));
    return a;
  };
  return json::value(json::object{{"config", source},
                                  {"added", names(plan.added)},
                                  {"removed", names(plan.removed)},
                                  {"changed", names(plan.changed)},
                                  {"unchanged", names(plan.unchanged)},
                                  {"refiltered", names(plan.refiltered)},
                                  {"profiles", names(profiles_touched)},
                                  {"restart_required", names(plan.restart_required)},
                                  {"warnings", std::move(warnings)}});
}

result<json::value> manager::approve(const std::string& server,
                                     const std::vector<std::string>& names, bool all,
                                     const std::map<std::string, std::string>& expected) {
  auto out = catalogue_.approve(server, names, all, expected);
  if (auto* v = out.if_value()) {
    rebuild();  // the approved items are shown, and clients told
    v->as_object()["still_held"] = catalogue_.quarantined(server).size();
  }
  return out;
}

}  // namespace mcpmux
