#include "core/start_scheduler.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>

#include "core/catalogue_snapshot.hpp"
#include "core/timer.hpp"
#include "core/upstream.hpp"

namespace mcpmux {

constexpr auto keep_snapshot_after = std::chrono::seconds(1);

struct start_scheduler::timers {
  explicit timers(boost::asio::io_context& io) : gate(io), keep(io) {}
  steady_timer gate;
  std::vector<std::function<void()>> waiters;
  bool open = false;  ///< startup_wait has passed, or every server settled once
  steady_timer keep;  ///< after a start without a snapshot, keeps one
};

start_scheduler::start_scheduler(boost::asio::io_context& io, const upstream_map& upstreams)
    : upstreams_(upstreams), timers_(std::make_shared<timers>(io)) {}

start_scheduler::~start_scheduler() = default;

void start_scheduler::start(std::chrono::milliseconds startup_wait) {
  for (const auto& [name, up] : upstreams_) to_start_.push_back(up);
  timers_->gate.expires_after(startup_wait);
  // (A wait that ended just before the scheduler was destroyed finds its timers gone.)
  timers_->gate.async_wait(
      [this, alive = std::weak_ptr<timers>(timers_)](boost::system::error_code ec) {
        if (ec || alive.expired()) return;
        timers_->open = true;
        check_settled();
      });
}

bool start_scheduler::start_next() {
  while (!stopped_ && next_start_ < to_start_.size())
    if (auto up = to_start_[next_start_++].lock()) {
      up->start();
      break;
    }
  return starts_pending();
}

bool start_scheduler::starts_pending() const {
  return !stopped_ && next_start_ < to_start_.size();
}

bool start_scheduler::startup_over() const {
  if (starts_pending()) return false;
  return std::none_of(upstreams_.begin(), upstreams_.end(), [](const auto& u) {
    return u.second->state() == upstream_state::connecting;
  });
}

void start_scheduler::stop() {
  stopped_ = true;  // servers not started yet stay unstarted
  for (auto& [key, up] : private_) up->stop();
  private_.clear();
}

bool start_scheduler::settled() const {
  return std::all_of(upstreams_.begin(), upstreams_.end(),
                     [](const auto& u) { return u.second->settled(); });
}

bool start_scheduler::gate_open() const {
  return timers_->open;
}

void start_scheduler::when_settled(std::function<void()> ready) {
  if (timers_->open || settled()) {
    timers_->open = true;
    return ready();
  }
  timers_->waiters.push_back(std::move(ready));
}

void start_scheduler::check_settled() {
  auto& t = *timers_;
  if (!t.open && !settled()) return;
  t.open = true;
  t.gate.cancel();
  auto waiters = std::move(t.waiters);
  t.waiters.clear();
  for (auto& w : waiters) w();
}

std::shared_ptr<upstream> start_scheduler::private_upstream(
    const upstream& shared, std::uint64_t session,
    const std::function<std::shared_ptr<upstream>()>& make) {
  // The shared instance keeps the catalogue; each client gets a private process for its calls.
  auto key = std::make_pair(shared.name(), session);
  auto it = private_.find(key);
  if (it == private_.end()) {
    auto own = make();
    log_.info("starting a private {} for session {}", shared.name(), session);
    own->start();
    it = private_.emplace(std::move(key), std::move(own)).first;
  }
  return it->second;
}

void start_scheduler::drop_session(std::uint64_t session) {
  for (auto it = private_.begin(); it != private_.end();) {
    if (it->first.second != session) {
      ++it;
      continue;
    }
    it->second->stop();
    it = private_.erase(it);
  }
}

std::vector<cache_entry> start_scheduler::read_tool_cache(state_store* store, const config& cfg,
                                                          catalogue& cat) {
  std::vector<cache_entry> out(cfg.servers.size());
  if (!store) return out;
  // Profiles' views are built from the tools themselves: a snapshot stands for the main list
  // only, so it serves configurations without profiles.
  std::optional<std::vector<snapshot_server>> snapshot;
  if (cfg.profiles.empty())
    if (auto row = store->catalogue_snapshot(catalogue_snapshot_key(cfg)))
      snapshot = restore_catalogue(cat, std::move(*row));
  if (!snapshot) return load_cache_entries(*store, cfg.servers);  // the first client waits
  for (const auto& s : *snapshot) {
    auto it = std::find_if(cfg.servers.begin(), cfg.servers.end(),
                           [&](const server_config& sc) { return sc.name == s.name; });
    if (it == cfg.servers.end()) continue;  // (the key rules it out: a store edited by hand)
    auto& e = out[static_cast<std::size_t>(it - cfg.servers.begin())];
    e.pending = true;
    e.era = s.era;
    to_read_.push_back(*it);
  }
  std::reverse(to_read_.begin(), to_read_.end());  // read in name order, from the back
  log_.info("listing {} tools of {} servers from the catalogue snapshot while their cache is read",
            cat.size(collection::tools), to_read_.size());
  return out;
}

std::optional<server_config> start_scheduler::next_cached_read() {
  if (to_read_.empty()) return std::nullopt;
  auto s = std::move(to_read_.back());
  to_read_.pop_back();
  return s;
}

void start_scheduler::keep_later(std::function<void()> keep) {
  timers_->keep.expires_after(keep_snapshot_after);
  timers_->keep.async_wait([keep = std::move(keep),
                            alive = std::weak_ptr<timers>(timers_)](boost::system::error_code ec) {
    if (!ec && !alive.expired()) keep();
  });
}

// Built from the tool cache as a start without a snapshot would build it (every enabled
// server's entry, named under the configuration, nothing held back), when the one kept is not
// of the cache as it is now.
void keep_snapshot(state_store& store, const config& cfg, const logger& log) {
  if (!cfg.profiles.empty()) return;
  const auto key = catalogue_snapshot_key(cfg);
  const auto generation = store.tool_cache_generation();
  if (store.catalogue_snapshot_generation(key) == generation) return;
  auto entries = load_cache_entries(store, cfg.servers);
  const std::vector<json::object> none;
  std::vector<catalogue_source> from;
  std::vector<snapshot_server> cached;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& s = cfg.servers[i];
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
  built.rebuild(from, {cfg.daemon.tool_separator, cfg.daemon.max_tool_name}, warnings);
  if (store.put_catalogue_snapshot({generation, key, *built.kept(collection::tools).joined,
                                    encode_catalogue_routes(built, cached)}))
    log.debug("kept a catalogue snapshot of {} tools", built.size(collection::tools));
}

}  // namespace mcpmux
