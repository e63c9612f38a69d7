// The manager: upstream ownership, the combined catalogue, control methods.
#include "core/manager.hpp"

#include "config/filters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <tuple>

#include "core/audit_writer.hpp"
#include "core/catalogue_snapshot.hpp"
#include "core/naming.hpp"
#include "core/protocol/modern.hpp"
#include "core/protocol/param_headers.hpp"
#include "core/protocol/redact.hpp"
#include "core/reload_plan.hpp"
#include "core/session.hpp"
#include "core/tool_cache.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

}  // namespace

// Batches the audit buffer into the state store: the first entry arms a short timer, and the
// batch is handed to the writer's thread.
struct manager::audit_flusher {
  audit_flusher(asio::io_context& io, state_store& store) : timer(io), writer(store) {}
  asio::steady_timer timer;
  audit_writer writer;
  bool armed = false;
  std::uint64_t flushes = 0;
};
constexpr auto audit_flush_interval = std::chrono::milliseconds(200);

struct manager::startup_gate {
  explicit startup_gate(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
  std::vector<std::function<void()>> waiters;
  bool open = false;  ///< startup_wait has passed, or every server settled once
};

// A server's place in the catalogue as its configuration gives it: name, prefix, filters (its
// lists and what trust holds back are the caller's).
static catalogue_source source_of(const server_config& cfg) {
  catalogue_source s{cfg.name, cfg.effective_prefix(), {}, {}};
  s.shown[static_cast<std::size_t>(collection::tools)] = &cfg.tools_shown;
  s.shown[static_cast<std::size_t>(collection::prompts)] = &cfg.prompts_shown;
  s.shown[static_cast<std::size_t>(collection::resources)] = &cfg.resources_shown;
  s.shown[static_cast<std::size_t>(collection::resource_templates)] = &cfg.resources_shown;
  return s;
}

/// How the tool cache came in at start.
struct manager::cache_start {
  explicit cache_start(asio::io_context& io) : keep_timer(io) {}
  /// While a snapshot lists the tools: the servers whose entries are still to be read
  /// (read_next_cached), the next last.
  std::vector<server_config> to_read;
  asio::steady_timer keep_timer;  ///< after a start without a snapshot, keeps one
};
constexpr auto keep_snapshot_after = std::chrono::seconds(1);

manager::manager(asio::io_context& io, config cfg, daemon_info info, channel_factory open)
    : io_(io),
      cfg_(std::move(cfg)),
      info_(std::move(info)),
      open_(std::move(open)),
      gate_(std::make_unique<startup_gate>(io)),
      cache_start_(std::make_unique<cache_start>(io)) {
  open_store();
  auto cached = read_tool_cache();
  for (std::size_t i = 0; i < cfg_.servers.size(); ++i)
    upstreams_.emplace(cfg_.servers[i].name,
                       make_upstream(cfg_.servers[i], cfg_.daemon, &cached[i]));
  profiles_.configure(cfg_.profiles);
  if (store_) flusher_ = std::make_unique<audit_flusher>(io_, *store_);
}

// The state store; in memory (nothing kept across restarts) when its file cannot be opened. The
// tool cache files of versions before it move in on first start.
void manager::open_store() {
  std::string error;
  store_ = state_store::open(state_store_path(), error);
  if (!store_) {
    log_.warn("state store: {}; the tool cache, pins and audit log last only until exit", error);
    store_ = state_store::open(":memory:", error);
    if (!store_) return log_.error("no state store: {}", error);
  }
  std::vector<std::string> warnings;
  if (auto moved = migrate_cache_files(cache_dir(), *store_, &warnings))
    log_.info("moved {} tool cache files into the state store", moved);
  for (const auto& w : warnings) log_.warn("{}", w);
}

std::vector<cache_entry> manager::read_tool_cache() {
  auto& c = *cache_start_;
  std::vector<cache_entry> out(cfg_.servers.size());
  if (!store_) return out;
  // Profiles' views are built from the tools themselves: a snapshot stands for the main list
  // only, so it serves configurations without profiles.
  std::optional<std::vector<snapshot_server>> snapshot;
  if (cfg_.profiles.empty())
    if (auto row = store_->catalogue_snapshot(catalogue_snapshot_key(cfg_)))
      snapshot = restore_catalogue(cat_, std::move(*row));
  if (!snapshot) return load_cache_entries(*store_, cfg_.servers);  // the first client waits
  for (const auto& s : *snapshot) {
    auto it = std::find_if(cfg_.servers.begin(), cfg_.servers.end(),
                           [&](const server_config& sc) { return sc.name == s.name; });
    if (it == cfg_.servers.end()) continue;  // (the key rules it out: a store edited by hand)
    auto& e = out[static_cast<std::size_t>(it - cfg_.servers.begin())];
    e.pending = true;
    e.era = s.era;
    c.to_read.push_back(*it);
  }
  std::reverse(c.to_read.begin(), c.to_read.end());  // read in name order, from the back
  log_.info("listing {} tools of {} servers from the catalogue snapshot while their cache is read",
            cat_.size(collection::tools), c.to_read.size());
  return out;
}

bool manager::cached_reads_pending() const {
  return !cache_start_->to_read.empty();
}

bool manager::read_next_cached() {
  auto& to_read = cache_start_->to_read;
  if (to_read.empty()) return false;
  const auto s = std::move(to_read.back());
  to_read.pop_back();
  if (auto it = upstreams_.find(s.name); it != upstreams_.end() && it->second->cache_pending() &&
                                         it->second->take_cached(load_cache_entry(*store_, s)))
    trust_cached(*it->second);
  if (to_read.empty()) rebuild();  // the same tools list, now built from the entries
  return true;
}

// Built from the tool cache as a start without a snapshot would build it (every enabled
// server's entry, named under the configuration, nothing held back), when the one kept is not
// of the cache as it is now.
void manager::keep_snapshot() {
  if (!store_ || !cfg_.profiles.empty()) return;
  const auto key = catalogue_snapshot_key(cfg_);
  const auto generation = store_->tool_cache_generation();
  if (store_->catalogue_snapshot_generation(key) == generation) return;
  auto entries = load_cache_entries(*store_, cfg_.servers);
  const std::vector<json::object> none;
  std::vector<catalogue_source> from;
  std::vector<snapshot_server> cached;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& s = cfg_.servers[i];
    if (!s.enabled) continue;
    auto src = source_of(s);
    src.lists.fill(&none);
    if (entries[i].tools) {
      src.lists[static_cast<std::size_t>(collection::tools)] = &*entries[i].tools;
      cached.push_back({s.name, entries[i].era});
    }
    from.push_back(std::move(src));
  }
  catalogue built;
  std::vector<std::string> warnings;  // told at start already
  built.rebuild(from, {cfg_.daemon.tool_separator, cfg_.daemon.max_tool_name}, warnings);
  if (store_->put_catalogue_snapshot({generation, key, *built.kept(collection::tools).joined,
                                      encode_catalogue_routes(built, cached)}))
    log_.debug("kept a catalogue snapshot of {} tools", built.size(collection::tools));
}

manager::~manager() {
  flush_audit();
  *alive_ = false;
  for (auto& [name, up] : upstreams_) up->stop();
}

void manager::start() {
  // The servers start later, one at a time (start_next): their cached tools are listed now.
  for (auto& [name, up] : upstreams_) to_start_.push_back(up);
  rebuild();
  if (!cached_reads_pending()) {  // (a crash before stop() would leave none)
    cache_start_->keep_timer.expires_after(keep_snapshot_after);
    cache_start_->keep_timer.async_wait(
        [this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code ec) {
          if (!ec && !alive.expired()) keep_snapshot();
        });
  }
  gate_->timer.expires_after(cfg_.daemon.startup_wait);
  gate_->timer.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code ec) {
        if (ec || alive.expired()) return;
        release_waiters();
      });
}

bool manager::start_next() {
  while (!stopped_ && next_start_ < to_start_.size())
    if (auto up = to_start_[next_start_++].lock()) {
      up->start();
      break;
    }
  return starts_pending();
}

bool manager::startup_over() const {
  if (starts_pending()) return false;
  for (const auto& [name, up] : upstreams_)
    if (up->state() == upstream_state::connecting) return false;
  return true;
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
  keep_snapshot();  // for the next start
  flush_audit();
  if (flusher_) flusher_->writer.drain();
  mrtr_.clear();
  for (auto& [key, up] : per_client_) up->stop();
  per_client_.clear();
  for (auto& [name, up] : upstreams_) up->stop();
}

void manager::audit(audit_entry e) {
  if (!auditing()) return;
  audit_buffer_.push_back(std::move(e));
  if (flusher_->armed) return;
  flusher_->armed = true;
  flusher_->timer.expires_after(audit_flush_interval);
  flusher_->timer.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code) {
        if (alive.expired()) return;
        flusher_->armed = false;
        flush_audit();
      });
}

void manager::flush_audit() {
  if (!flusher_) return;
  if (auto error = flusher_->writer.take_error(); !error.empty()) log_.warn("audit log: {}", error);
  if (audit_buffer_.empty()) return;
  flusher_->writer.write(std::exchange(audit_buffer_, flusher_->writer.take_spare()));
  // Retention now and then, not at every batch.
  if (flusher_->flushes++ % 64 == 0)
    flusher_->writer.trim({cfg_.daemon.audit_retention_days, cfg_.daemon.audit_max_rows},
                          unix_now_ms());
}

std::vector<audit_entry> manager::history(const audit_query& q) {
  if (!auditing()) return {};
  flush_audit();
  flusher_->writer.drain();
  return store_->history(q);
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
  last_attach_ = std::chrono::steady_clock::now();
}

// A new connection knows nothing of the old one's subscriptions: subscribe again.
void manager::on_upstream_ready(const std::string& server, upstream& up) {
  if (up.config().per_client) return;
  up.resubscribe(subscriptions_.uris_of(server));
}

void manager::on_upstream_log(const std::string& server, const std::string& line) {
  control_.on_log(server, line);
}

void manager::detach(std::uint64_t id) {
  control_.forget(id);
  for (auto it = per_client_.begin(); it != per_client_.end();) {
    if (it->first.second != id) {
      ++it;
      continue;
    }
    it->second->stop();
    it = per_client_.erase(it);
  }
  // A client that leaves drops its subscriptions, the tasks it watched and its logging level.
  for (const auto& [server, uri] : subscriptions_.of_session(id)) unsubscribe(id, {server, uri});
  std::vector<task_ref> watched;
  for (const auto& [key, sessions] : task_watchers_)
    if (sessions.count(id)) watched.push_back(key);
  unwatch_tasks(id, watched);
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
    const auto subscribers = subscriptions_.subscribers({server, std::string(uri->get_string())});
    if (subscribers.empty()) return;
    // Subscribers see the URI they subscribed to (an alias when the server's URI collides).
    json::object params = msg.params();
    for (const auto& [exposed, r] : cat_.routes(collection::resources))
      if (r.server == server && r.original == uri->get_string()) params["uri"] = exposed;
    const auto text = make_notification("notifications/resources/updated", params);
    for (auto id : subscribers) notify_session(id, text);
    return;
  }
  if (method == "notifications/tasks") {  // the tasks extension: to the sessions watching it
    const auto* task = msg.params().if_contains("taskId");
    auto it = task && task->is_string()
                  ? task_watchers_.find({server, std::string(task->get_string())})
                  : task_watchers_.end();
    if (it == task_watchers_.end()) return;
    json::object params = msg.params();
    params["taskId"] = mcp::scoped_task_id(server, task->get_string());
    const auto text = make_notification(method, params);
    for (auto id : it->second) notify_session(id, text);
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
  // no server's place in the catalogue changed, naming and serializing are skipped. While a
  // snapshot stands for the tool cache, the lists wait for the cache too.
  if (cached_reads_pending()) {
    if (!gate_->open && settled()) release_waiters();
    if (info_.on_change) info_.on_change();
    return;
  }
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
  judge_lists();
  const auto from = sources();
  const naming_rules rules{cfg_.daemon.tool_separator, cfg_.daemon.max_tool_name};
  std::vector<std::string> warnings;
  const auto changed = cat_.rebuild(from, rules, warnings);
  for (const auto& w : warnings) log_.warn("{}", w);
  std::map<std::string, profile_set::changes> profile_changes;
  if (!profiles_.empty()) {
    std::vector<server_note> notes;
    for (const auto& [name, up] : upstreams_) notes.push_back({name, up->instructions()});
    profile_changes = profiles_.rebuild(from, rules, notes, cat_);
    // A pattern that matches nothing is worth a warning once every server has listed.
    if (settled())
      for (const auto& [name, v] : profiles_.views())
        for (const auto& u : v->unmatched)
          if (warned_unmatched_.insert(name + "\n" + u).second)
            log_.warn("profile {}: {} matches nothing the servers list", name, u);
  }
  if (!gate_->open && settled()) release_waiters();
  if (info_.on_change) info_.on_change();
  for (std::size_t i = 0; i < collection_count; ++i)
    if (changed[i])
      log_.debug("{} list now has {} items", to_string(static_cast<collection>(i)),
                 cat_.size(static_cast<collection>(i)));
  notify_lists("", changed);
  for (const auto& [name, c] : profile_changes) notify_lists(name, c);
}

// A server that is down keeps its last good lists; a stopped or disabled one does not.
std::vector<catalogue_source> manager::sources() const {
  std::vector<catalogue_source> out;
  for (const auto& [name, up] : upstreams_) {
    if (!up->listed()) continue;
    auto s = source_of(up->config());
    for (std::size_t i = 0; i < collection_count; ++i)
      s.lists[i] = &up->list(static_cast<collection>(i));
    if (auto t = trust_.find(name); t != trust_.end())
      for (std::size_t i = 0; i < collection_count; ++i) s.held[i] = &t->second.held[i];
    out.push_back(std::move(s));
  }
  return out;
}

// Tells the clients of `profile` which of their lists changed.
void manager::notify_lists(const std::string& profile,
                           const std::array<bool, collection_count>& changed) {
  if (std::none_of(changed.begin(), changed.end(), [](bool b) { return b; })) return;
  // Listeners may unregister while being told; iterate over a copy.
  auto ls = std::vector<catalogue_listener*>(listeners_.begin(), listeners_.end());
  for (std::size_t i = 0; i < collection_count; ++i) {
    if (!changed[i]) continue;
    for (auto* l : ls)
      if (listeners_.count(l) && l->profile() == profile)
        l->on_list_changed(static_cast<collection>(i));
  }
}

std::shared_ptr<upstream> manager::upstream_for(std::string_view server, std::uint64_t session) {
  auto shared = find_upstream(server);
  if (!shared || !shared->config().per_client) return shared;
  // The shared instance keeps the catalogue; each client gets a private process for its calls.
  auto key = std::make_pair(std::string(server), session);
  auto it = per_client_.find(key);
  if (it == per_client_.end()) {
    auto own = std::make_shared<upstream>(io_, shared->config(), cfg_.daemon, *this, open_);
    log_.info("starting a private {} for session {}", server, session);
    own->start();
    it = per_client_.emplace(std::move(key), std::move(own)).first;
  }
  return it->second;
}

const route* manager::find(collection c, std::string_view exposed, std::string_view profile) const {
  if (profile.empty()) return cat_.find(c, exposed);
  const auto* v = profiles_.find(profile);
  return v ? v->shown.find(c, exposed) : nullptr;
}

std::variant<std::string, rpc_error> manager::profile_for(const client_identity& who) const {
  if (!who.requested_profile.empty() && !profiles_.find(who.requested_profile)) {
    std::string known;
    for (const auto& [name, v] : profiles_.views()) known += (known.empty() ? "" : ", ") + name;
    return rpc_error{rpc_code::invalid_params,
                     fmt::format("unknown profile \"{}\" (configured: {})", who.requested_profile,
                                 known.empty() ? "none" : known),
                     nullptr};
  }
  return profiles_.profile_for(who);
}

std::shared_ptr<const std::vector<mcp::param_header>> manager::tool_param_headers(
    std::string_view exposed) const {
  const auto* r = cat_.find(collection::tools, exposed);
  auto up = r ? find_upstream(r->server) : nullptr;
  return up ? up->tool_headers(r->original) : nullptr;
}

std::optional<route> manager::route_resource(std::string_view uri, std::string_view profile) const {
  const auto* v = profile.empty() ? nullptr : profiles_.find(profile);
  if (!profile.empty() && !v) return std::nullopt;
  // A profile reaches only its own servers' resources, and only those its rules show.
  const auto reachable = [&](std::string_view server, std::string_view exposed) {
    return !v ||
           (shown_by(v->settings.servers, server) && shown_by(v->settings.resources, exposed));
  };
  auto r = cat_.route_resource(uri, [&](std::string_view s) { return upstreams_.count(s) > 0; });
  if (r && !reachable(r->server, uri)) return std::nullopt;
  if (!r) {
    // One server with resources at all: it is the only place the URI can be.
    for (const auto& [name, up] : upstreams_)
      if (up->offers(collection::resources) && reachable(name, uri)) {
        if (r) return std::nullopt;
        r = route{name, std::string(uri)};
      }
  }
  // A URI its server's `resources` rules hide is not reachable by any route.
  if (r)
    if (auto up = find_upstream(r->server);
        up && !shown_by(up->config().resources_shown, r->original))
      return std::nullopt;
  return r;
}

std::optional<route> manager::route_completion(const json::object& ref,
                                               std::string_view profile) const {
  const auto* type = ref.if_contains("type");
  if (!type || !type->is_string()) return std::nullopt;
  if (type->get_string() == "ref/prompt") {
    const auto* name = ref.if_contains("name");
    if (!name || !name->is_string()) return std::nullopt;
    if (const auto* r = find(collection::prompts, name->get_string(), profile)) return *r;
    return std::nullopt;
  }
  if (type->get_string() == "ref/resource") {
    const auto* uri = ref.if_contains("uri");
    if (!uri || !uri->is_string()) return std::nullopt;
    if (const auto* r = find(collection::resource_templates, uri->get_string(), profile)) return *r;
    return route_resource(uri->get_string(), profile);
  }
  return std::nullopt;
}

std::variant<list_page, rpc_error> manager::page(collection c, std::string_view cursor,
                                                 std::string_view profile) const {
  if (profile.empty()) return cat_.page(c, cursor, cfg_.daemon.page_size);
  const auto* v = profiles_.find(profile);
  if (!v) return rpc_error{rpc_code::internal_error, "the profile is gone", nullptr};
  const auto& listing = c == collection::tools && v->searching ? v->search_listing : v->shown;
  return listing.page(c, cursor, cfg_.daemon.page_size);
}

json::object manager::downstream_capabilities() const {
  bool resources = false, subscribe = false, prompts = false, completions = false, logging = false;
  for (const auto& [name, up] : upstreams_) {
    const auto& caps = up->capabilities();
    resources = resources || caps.contains("resources");
    subscribe = subscribe || mcp::capability_flag(caps, "resources", "subscribe");
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

void manager::watch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks) {
  std::set<std::string> changed;
  for (const auto& t : tasks)
    if (task_watchers_[t].insert(session).second) changed.insert(t.first);
  for (const auto& server : changed) update_task_listen(server);
}

void manager::unwatch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks) {
  std::set<std::string> changed;
  for (const auto& t : tasks) {
    auto it = task_watchers_.find(t);
    if (it == task_watchers_.end() || !it->second.erase(session)) continue;
    if (it->second.empty()) task_watchers_.erase(it);
    changed.insert(t.first);
  }
  for (const auto& server : changed) update_task_listen(server);
}

void manager::update_task_listen(const std::string& server) {
  auto up = find_upstream(server);
  if (!up) return;
  std::set<std::string> ids;
  for (auto it = task_watchers_.lower_bound({server, std::string()});
       it != task_watchers_.end() && it->first.first == server; ++it)
    ids.insert(it->first.second);
  up->listen_tasks(std::move(ids));
}

bool manager::offers_extension(std::string_view extension) const {
  return std::any_of(upstreams_.begin(), upstreams_.end(), [&](const auto& u) {
    return u.second->era() == mcp::era::modern &&
           mcp::has_extension(u.second->capabilities(), extension);
  });
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

void manager::subscribe(std::uint64_t session, const route& r, subscribe_done done) {
  const subscription_table::key key{r.server, r.original};
  if (subscriptions_.subscribe(key, session, std::move(done)) !=
      subscription_table::next::ask_server)
    return;
  auto alive_session = [this](std::uint64_t id) { return sessions_.count(id) > 0; };
  auto up = find_upstream(r.server);
  if (!up)
    return subscriptions_.answered(key, rpc_code::invalid_params, "Unknown resource: " + r.original,
                                   alive_session);
  up->subscribe_resource(
      r.original, [this, key, alive_session, alive = std::weak_ptr<bool>(alive_)](rpc_outcome out) {
        if (alive.expired()) return;
        if (out.ec)
          return subscriptions_.answered(key, rpc_code::connection_closed, out.ec.message(),
                                         alive_session);
        if (out.reply->kind != message_kind::error_response)
          return subscriptions_.answered(key, 0, {}, alive_session);
        // The server's refusal, as it gave it.
        const auto& err = out.reply->body["error"].as_object();
        const auto* code = err.at("code").if_int64();
        subscriptions_.answered(key, code ? static_cast<int>(*code) : rpc_code::internal_error,
                                std::string(err.at("message").as_string()), alive_session);
      });
}

void manager::unsubscribe(std::uint64_t session, const route& r) {
  if (!subscriptions_.unsubscribe({r.server, r.original}, session)) return;
  if (auto up = find_upstream(r.server)) up->unsubscribe_resource(r.original);
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

std::variant<json::value, rpc_error> manager::control(std::string_view method,
                                                      const json::object& params,
                                                      std::uint64_t session) {
  return control_.handle(method, params, session);
}

void manager::notify_session(std::uint64_t id, const std::string& text) {
  if (auto s = sessions_.find(id); s != sessions_.end()) s->second->notify(text);
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
  json::array warnings;
  for (const auto& w : loaded.warnings) {
    log_.warn("config: {}", w);
    warnings.push_back(json::string(w));
  }
  const bool socket_moves = info_.socket_for && info_.socket_for(next.daemon) != info_.socket_path;
  const auto plan = plan_reload(cfg_, next, socket_moves);
  if (auto level = parse_log_level(next.daemon.log_level)) set_log_level(*level);

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
    for (const auto& name : *names) trust_.erase(name);
  for (const auto& name : plan.refiltered)
    if (auto* up = keep(name))
      for (const auto& s : next.servers)
        if (s.name == name) up->set_filters(s);
  if (!plan.refiltered.empty()) catalogue_signature_.clear();  // the same lists, shown anew
  const auto profiles_touched = profiles_.configure(next.profiles);
  if (!profiles_touched.empty()) catalogue_signature_.clear();
  for (auto& [name, up] : upstreams_) up->stop();  // removed, or changed (started anew below)
  for (const auto& s : next.servers) {
    if (kept.count(s.name)) continue;
    auto cached = store_ ? load_cache_entries(*store_, {s}) : std::vector<cache_entry>(1);
    kept.emplace(s.name, make_upstream(s, next.daemon, &cached[0]));
  }
  upstreams_ = std::move(kept);
  const auto source = next.source;
  cfg_ = std::move(next);
  info_.config_path = source;
  for (auto& [name, up] : upstreams_) up->start();  // no-op for the ones already running
  // Clients of a profile that is gone see everything now. The views of added and changed
  // profiles are built at once (below), and their clients told what changed.
  for (auto* l : std::vector<catalogue_listener*>(listeners_.begin(), listeners_.end())) {
    if (l->profile().empty() || profiles_.find(l->profile())) continue;
    l->profile_removed();
    for (std::size_t i = 0; i < collection_count; ++i)
      l->on_list_changed(static_cast<collection>(i));
  }
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

}  // namespace mcpmux
