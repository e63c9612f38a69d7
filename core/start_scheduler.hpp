// The start scheduler: when each upstream starts and what clients wait for meanwhile. Servers
// start one at a time when the daemon's loop is idle (start_next), after their cached tools are
// listed (from a catalogue snapshot, whose entries are then read one a turn: next_cached_read);
// the startup gate holds a new client's first lists until every server has settled or
// startup_wait has passed; an `isolation = "per-client"` server gets a private upstream per
// session.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "config/config.hpp"
#include "core/tool_cache.hpp"
#include "core/upstream_map.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class catalogue;
class state_store;
class upstream;

class start_scheduler {
 public:
  /// `upstreams` is the manager's map of shared upstreams (it outlives the scheduler).
  start_scheduler(boost::asio::io_context& io, const upstream_map& upstreams);
  ~start_scheduler();
  start_scheduler(const start_scheduler&) = delete;
  start_scheduler& operator=(const start_scheduler&) = delete;

  /// Queues every upstream for start_next(), in name order, and starts the gate's clock: it
  /// opens after `startup_wait` at the latest.
  void start(std::chrono::milliseconds startup_wait);
  /// Starts the next upstream not started yet; returns starts_pending().
  bool start_next();
  /// True while upstreams are waiting for start_next() (never after stop()).
  bool starts_pending() const;
  /// True once every upstream has been started and none is connecting.
  bool startup_over() const;
  /// No more starts (shutdown); every private upstream stops.
  void stop();

  /// True when every upstream has settled (ready, failed, or served from cache).
  bool settled() const;
  /// Runs `ready` once the gate opens (at once when it is open or everything has settled).
  void when_settled(std::function<void()> ready);
  /// After a change of state: opens the gate when everything has settled.
  void check_settled();
  bool gate_open() const;

  /// `session`'s private upstream of `shared`'s server, made by `make` and started on first use.
  std::shared_ptr<upstream> private_upstream(
      const upstream& shared, std::uint64_t session,
      const std::function<std::shared_ptr<upstream>()>& make);
  /// A session left: its private upstreams stop.
  void drop_session(std::uint64_t session);

  /// The tool cache at start: every enabled server's entry, or, when a catalogue snapshot of
  /// the same configuration and cache stands for them (put back into `cat`), pending entries
  /// read later (next_cached_read).
  std::vector<cache_entry> read_tool_cache(state_store* store, const config& cfg, catalogue& cat);
  bool cached_reads_pending() const { return !to_read_.empty(); }
  /// The next server whose cached entry is to be read; nullopt when none is left.
  std::optional<server_config> next_cached_read();
  /// Runs `keep` a second from now (after a start without a snapshot: keep_snapshot).
  void keep_later(std::function<void()> keep);

 private:
  const upstream_map& upstreams_;
  logger log_{"manager"};
  std::vector<std::weak_ptr<upstream>> to_start_;  ///< in name order
  std::size_t next_start_ = 0;
  bool stopped_ = false;
  /// Per-client upstreams by (server, session).
  std::map<std::pair<std::string, std::uint64_t>, std::shared_ptr<upstream>> private_;
  /// While a snapshot lists the tools: the servers whose entries are still to be read, the
  /// next last.
  std::vector<server_config> to_read_;
  struct timers;  ///< the gate's and the snapshot's (Asio stays out of this header)
  std::shared_ptr<timers> timers_;
};

/// Keeps a catalogue snapshot of the tool cache for the next start, unless the one kept is of
/// the cache as it is (built as a start without a snapshot would build it).
void keep_snapshot(state_store& store, const config& cfg, const logger& log);

}  // namespace mcpmux
