// The manager: the composition root. It owns the upstreams and the services that serve them to
// clients — the catalogue service (lists, profiles, routes, trust), the session registry, the
// start scheduler, the audit buffer, the control plane — passes each upstream's news to them,
// and carries out reloads. Sessions call it; it forwards to the service that holds the job.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/log.hpp"
#include "config/config.hpp"
#include "core/audit_buffer.hpp"
#include "core/call_gate.hpp"
#include "core/catalogue_service.hpp"
#include "core/control.hpp"
#include "core/daemon_info.hpp"
#include "core/mrtr.hpp"
#include "core/redaction.hpp"
#include "core/result_pages.hpp"
#include "core/session_registry.hpp"
#include "core/start_scheduler.hpp"
#include "core/state_store.hpp"
#include "core/subscriptions.hpp"
#include "core/upstream.hpp"
#include "protocol/json_rpc.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class session;

class manager : public upstream_observer, private registry_servers, private control_actions {
 public:
  /// `open` makes every connection to a server (the daemon's transports; a test's fakes).
  manager(boost::asio::io_context& io, config cfg, daemon_info info, channel_factory open);
  ~manager() override;

  /// Lists the cached tools (builds the catalogue) and starts the startup gate's clock. The
  /// servers themselves are started by start_next(), one at a time.
  void start();
  /// Starts the next server not started yet; returns starts_pending(). The daemon calls it when
  /// its loop has nothing else to do: clients are answered from the tool cache before starting
  /// servers compete with them for the CPU.
  bool start_next() { return starts_.start_next(); }
  /// True while servers are waiting for start_next() (never after stop()).
  bool starts_pending() const { return starts_.starts_pending(); }
  /// When a catalogue snapshot listed the tools at start (core/catalogue_snapshot.hpp): reads
  /// the next server's cached tools for its upstream (~0.3 ms for a hundred tools), and after
  /// the last builds the lists from them. False when nothing was left to read. Like
  /// start_next(), the daemon calls it when its loop is idle.
  bool read_next_cached();
  /// True while read_next_cached() has entries to read.
  bool cached_reads_pending() const;
  /// True once every server has been started and none is connecting (each is ready, failed and
  /// backing off, or disabled): the start's burst of work is over.
  bool startup_over() const { return starts_.startup_over(); }
  /// Stops every upstream (children are torn down in the background).
  void stop();

  const config& current_config() const { return cfg_; }
  std::shared_ptr<upstream> find_upstream(std::string_view server) const;
  /// The upstream that serves `session`'s requests to `server`: the shared one, or for an
  /// `isolation = "per-client"` server the session's own (started on first use).
  std::shared_ptr<upstream> upstream_for(std::string_view server, std::uint64_t session);
  /// The route of an exposed tool or prompt name, resource URI or template, as `profile` shows
  /// them ("" = everything).
  const route* find(collection c, std::string_view exposed, std::string_view profile = {}) const {
    return catalogue_.find(c, exposed, profile);
  }
  /// The Mcp-Param-* headers a 2026-07-28 HTTP tools/call of an exposed tool must carry (the
  /// tool's x-mcp-header annotations); null when it has none or is unknown.
  std::shared_ptr<const std::vector<mcp::param_header>> tool_param_headers(
      std::string_view exposed) const {
    return catalogue_.tool_param_headers(exposed);
  }
  /// The server for a URI: an exposed resource, an `mcpmux://server/uri` alias, or the server
  /// whose template's literal prefix matches best.
  std::optional<route> route_resource(std::string_view uri, std::string_view profile = {}) const {
    return catalogue_.route_resource(uri, profile);
  }
  /// The server for a completion reference (`ref/prompt` name or `ref/resource` template URI).
  std::optional<route> route_completion(const json::object& ref,
                                        std::string_view profile = {}) const {
    return catalogue_.route_completion(ref, profile);
  }
  /// A page of a combined list as `profile` lists it; `cursor` empty for the first page. A
  /// cursor of an older generation of the list is an error.
  result<list_page> page(collection c, std::string_view cursor,
                         std::string_view profile = {}) const {
    return catalogue_.page(c, cursor, profile);
  }
  /// A configured profile (null: none of that name).
  const profile_set::view* profile(std::string_view name) const {
    return catalogue_.profiles().find(name);
  }
  /// The profile a new client gets (its own choice, a `match` rule, or `default`); an error when
  /// it named a profile that does not exist.
  result<std::string> profile_for(const client_identity& who) const {
    return catalogue_.profile_for(who);
  }
  const profile_set& profiles() const { return catalogue_.profiles(); }
  /// What a call of `profile`'s client to `up` is redacted with (`redact_results`: the
  /// profile's when it sets one, else the server's); null when off.
  std::shared_ptr<const mcp::secret_detector> result_detector(const upstream& up,
                                                              std::string_view profile);
  /// What clients are offered at initialize: the union of what the upstreams offer.
  json::object downstream_capabilities() const { return catalogue_.downstream_capabilities(); }
  /// A session's listen stream wants the status notifications of servers' tasks ((server, its
  /// own task id) pairs) / no longer does. Each server's listen stream follows the union of
  /// what sessions want, opened anew once per change.
  using task_ref = session_registry::task_ref;
  void watch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks) {
    sessions_.watch_tasks(session, tasks);
  }
  void unwatch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks) {
    sessions_.unwatch_tasks(session, tasks);
  }
  /// True when a modern server declares the extension (capabilities.extensions) in discover.
  bool offers_extension(std::string_view extension) const {
    return catalogue_.offers_extension(extension);
  }
  /// How long a modern client may keep the combined lists, and whether they may be shared
  /// across authorization contexts ("public") or not ("private").
  struct cache_hint {
    std::int64_t ttl_ms;
    std::string_view scope;
  };
  cache_hint list_cache_hint() const;
  /// Modern clients' calls waiting for their retry with the input a server asked for.
  mrtr_registry& mrtr() { return mrtr_; }
  /// The loop, for the timers of what a session waits for itself (a confirmation's deadline).
  boost::asio::io_context& io() { return io_; }
  /// Starts a client's call on `up` once its profile's and its server's limits let it
  /// (`max_calls_per_minute`, `max_concurrent_calls`: core/call_gate.hpp).
  void start_call(std::shared_ptr<call> c, const std::shared_ptr<upstream>& up,
                  const std::string& profile);
  /// Where code mode's runners come from (the daemon's); without one, code mode says so.
  void set_code_runners(code_runner_factory f) { runners_ = std::move(f); }
  /// A fresh runner for one program, or why there is none.
  result<std::shared_ptr<transport>> code_runner() const {
    if (!runners_) return failure("code mode has no runner in this daemon");
    return runners_();
  }
  /// The rest of results cut at max_result_bytes, read back with mcpmux__read_result.
  result_store& results() { return results_; }
  const result_store& results() const { return results_; }

  /// Reference-counted resource subscriptions: one upstream subscription per (server, URI).
  /// Subscribes `session` to a resource. The first subscriber's subscribe goes to the server
  /// (later ones, while it is in flight, wait for the same answer); `done` hears how it went:
  /// code 0, or the JSON-RPC error code and message to answer the client with.
  using subscribe_done = subscription_table::done_fn;
  void subscribe(std::uint64_t session, const route& r, subscribe_done done) {
    sessions_.subscribe(session, {r.server, r.original}, std::move(done));
  }
  void unsubscribe(std::uint64_t session, const route& r) {
    sessions_.unsubscribe(session, {r.server, r.original});
  }
  /// A session's logging level changed ("" = none); the servers are asked for the most verbose.
  void set_session_log_level(std::uint64_t session, std::string level) {
    sessions_.set_log_level(session, std::move(level));
  }
  /// Upstream instructions joined, each under its server name, capped.
  std::string instructions() const { return catalogue_.instructions(); }
  /// Runs `ready` once every enabled server has settled (ready, failed, or served from cache),
  /// or once startup_wait has passed since start — whichever is first. At once when settled.
  void when_settled(std::function<void()> ready) { starts_.when_settled(std::move(ready)); }

  void add_listener(catalogue_listener* l) { sessions_.add_listener(l); }
  void remove_listener(catalogue_listener* l) { sessions_.remove_listener(l); }
  /// Sessions are owned by the registry from connect to disconnect.
  void attach(std::shared_ptr<session> s, std::uint64_t id) { sessions_.attach(std::move(s), id); }
  void detach(std::uint64_t id);
  /// Ends every session (shutdown).
  void close_sessions() { sessions_.close_all(); }
  std::size_t clients() const { return sessions_.clients(); }
  session_registry& sessions() { return sessions_; }
  const session_registry& sessions() const { return sessions_; }
  /// When the latest client connected (the epoch when none has).
  steady_clock::time_point last_attach() const { return sessions_.last_attach(); }
  /// (servers ready, servers enabled), for status lines.
  std::pair<std::size_t, std::size_t> ready_count() const;

  /// Loads the configuration again and applies the difference: removed servers stop, added ones
  /// start, changed ones restart, unchanged ones are not touched (same process, calls in flight
  /// unaffected). An invalid file changes nothing. The result lists what happened.
  result<json::value> reload() override;
  /// Answers a control method (`mcpmux/...`): a result or an error.
  /// `session` is the asking session's id (mcpmux/logs with follow streams to it).
  result<json::value> control(std::string_view method, const json::object& params,
                              std::uint64_t session);

  /// Records an audited event (core/audit_buffer.hpp). Nothing when the audit log is off.
  void audit(audit_entry&& e) { audit_.audit(std::move(e)); }
  void audit(const audit_fields& f) { audit_.audit(f); }
  bool auditing() const { return audit_.auditing(); }

  /// Approves `server`'s quarantined items named in `names` (the server's own names), or all of
  /// them with `all` (the server is trusted from then on): what it offers now is pinned and
  /// shown. An item whose offered definition is not `expected[name]` (when given: what the
  /// approver saw) changed again and is skipped. Returns {approved, skipped, not_held,
  /// still_held}, once the approved items are shown.
  result<json::value> approve(const std::string& server, const std::vector<std::string>& names,
                              bool all,
                              const std::map<std::string, std::string>& expected) override;

  const daemon_info& info() const { return info_; }
  /// Control methods and status fields kept outside core (see control_extension).
  void add_control_extension(control_extension* e) { control_.add_extension(e); }

  // upstream_observer
  void on_upstream_spawned(const std::string& server, int pid) override;
  void on_upstream_changed(const std::string& server) override;
  void on_upstream_notification(const std::string& server, const message& msg) override;
  void on_upstream_log(const std::string& server, const std::string& line) override;
  void on_upstream_ready(const std::string& server, upstream& up) override;

 private:
  std::shared_ptr<const mcp::secret_detector> message_detector(const upstream& up);
  /// A server's notification to the sessions it concerns.
  void deliver(const std::string& server, const message& msg);
  void schedule_rebuild();
  void rebuild();
  /// A new upstream for `s`, serving its cached tools (from the state store) until it lists.
  std::shared_ptr<upstream> make_upstream(const server_config& s, const daemon_config& d,
                                          cache_entry* cached);
  // registry_servers: what the sessions ask of the upstreams.
  void set_log_level(const std::string& level) override;
  void listen_tasks(const std::string& server, std::set<std::string> ids) override;
  void subscribe_resource(const std::string& server, const std::string& uri,
                          subscription_table::done_fn done) override;
  void unsubscribe_resource(const std::string& server, const std::string& uri) override;

  boost::asio::io_context& io_;
  config cfg_;
  daemon_info info_;
  channel_factory open_;
  code_runner_factory runners_;
  logger log_{"manager"};
  /// The tool cache, pins and the audit log (in memory when the file cannot be opened).
  std::unique_ptr<state_store> store_;
  upstream_map upstreams_;
  catalogue_service catalogue_{cfg_, upstreams_, store_.get()};
  start_scheduler starts_{io_, upstreams_};
  session_registry sessions_{*this};
  mrtr_registry mrtr_;
  redaction_detectors detectors_;
  call_gate gate_{io_};
  result_store results_;
  audit_buffer audit_{io_, store_.get(), cfg_.daemon};
  control_plane control_{{info_, upstreams_, catalogue_, sessions_, audit_, *this}};
  bool rebuild_posted_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace mcpmux
