// An upstream: one configured MCP server, in the MCP client role, with its lifecycle and tools.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/log.hpp"
#include "config/config.hpp"
#include "core/call.hpp"
#include "core/call_backoff.hpp"
#include "core/call_policy.hpp"
#include "core/call_queue.hpp"
#include "core/channel.hpp"
#include "core/handshake.hpp"
#include "core/latency_histogram.hpp"
#include "core/lifecycle.hpp"
#include "core/lists.hpp"
#include "core/router.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/pending_table.hpp"
#include "protocol/versions.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class rpc_peer;
struct cache_entry;
namespace mcp {
struct param_header;
struct tool_param_headers;
}  // namespace mcp

class upstream;

/// What an upstream tells the manager.
class upstream_observer {
 public:
  virtual ~upstream_observer() = default;
  /// State or tool list changed.
  virtual void on_upstream_changed(const std::string& server) = 0;
  /// The server sent a notification other than the ones the upstream handles itself.
  virtual void on_upstream_notification(const std::string& server, const message& msg) = 0;
  /// A line was added to the server's log ring (stderr or a lifecycle event).
  virtual void on_upstream_log(const std::string& server, const std::string& line) = 0;
  /// A process was started for the server (for the audit log).
  virtual void on_upstream_spawned(const std::string& server, int pid) {
    (void)server;
    (void)pid;
  }
  /// A connection became ready (first or after a reconnect): per-connection state such as
  /// resource subscriptions must be set up again on it.
  virtual void on_upstream_ready(const std::string& server, upstream& up) = 0;
};

/// Counters for status and /metrics.
struct upstream_stats {
  std::uint64_t calls = 0;
  std::uint64_t errors = 0;
  std::uint64_t restarts = 0;
  std::vector<std::uint32_t> latencies_us;  ///< ring of recent call latencies
  std::size_t latency_next = 0;
  latency_histogram latency;  ///< every call since the daemon started
  /// tools/call latency per tool name; at most max_tools names (later ones are not counted).
  std::map<std::string, latency_histogram, std::less<>> by_tool;
  static constexpr std::size_t max_tools = 1024;
  /// What was replaced in its answers and messages before clients saw them (redact_results).
  mcp::redaction_counts redacted;
  /// Calls a limit held back (waited or refused), by limit: `max_calls_per_minute`,
  /// `max_concurrent_calls` (the server's), `profile.max_calls_per_minute`,
  /// `profile.max_concurrent_calls` (a profile's), `error_backoff`.
  std::map<std::string, std::uint64_t, std::less<>> limited;
  /// `tool`: the tool of a tools/call, else empty.
  void record(std::chrono::microseconds d, bool error, std::string_view tool = {});
  std::optional<std::uint32_t> percentile(double p) const;
};

class upstream : public std::enable_shared_from_this<upstream> {
 public:
  /// `cached`: its tool cache entry (load_cache_entries), served until it lists; null: none.
  upstream(boost::asio::io_context& io, server_config cfg, const daemon_config& daemon,
           upstream_observer& observer, channel_factory open, cache_entry* cached = nullptr);
  ~upstream();

  /// Connects (or marks disabled). Idempotent.
  void start();
  /// Stops: pending calls fail, the child is torn down in the background.
  void stop();
  /// Drops the connection and connects again now; the tool list stays served meanwhile.
  void restart();
  /// Takes new daemon-wide settings (reload): timeouts now, limits at the next connection.
  void set_daemon_config(const daemon_config& d);
  /// New `tools`, `prompts`, `resources` filters and trust settings (a reload that changed only
  /// those).
  void set_filters(const server_settings& s) {
    cfg_.tools_shown = s.tools_shown;
    cfg_.prompts_shown = s.prompts_shown;
    cfg_.resources_shown = s.resources_shown;
    cfg_.on_change = s.on_change;
    cfg_.trust_ask = s.trust_ask;
  }

  const std::string& name() const { return cfg_.name; }
  const server_config& config() const { return cfg_; }
  /// The tasks whose status notifications its listen stream should carry (its own task ids; a
  /// modern server with the tasks extension). The stream is opened anew when they change.
  void listen_tasks(std::set<std::string> task_ids);
  /// The Mcp-Param-* headers of one of its tools (by its own name); null when none.
  std::shared_ptr<const std::vector<mcp::param_header>> tool_headers(std::string_view tool);
  /// The era the server speaks (unknown until its first handshake, or its cached verdict).
  mcp::era era() const { return era_; }
  upstream_state state() const { return lc_.state(); }
  /// The state users and callers see: a server whose start is still to come (the manager starts
  /// them one at a time) is as good as connecting.
  upstream_state visible_state() const {
    return !started_ && cfg_.enabled ? upstream_state::connecting : state();
  }
  const lifecycle& life() const { return lc_; }
  /// The last good tool list (kept while the server is down; from the cache before the first
  /// connection).
  const std::vector<json::object>& tools() const { return lists_[0]; }
  /// The last good list of a collection (empty when the server does not offer it).
  const std::vector<json::object>& list(collection c) const {
    return lists_[static_cast<std::size_t>(c)];
  }
  /// The server's capabilities from its last initialize answer.
  const json::object& capabilities() const { return capabilities_; }
  bool offers(collection c) const;
  /// The logging level to ask the server for (sent now and after every reconnect); "" = none.
  void set_log_level(std::string level);
  const std::string& instructions() const { return instructions_; }
  /// A modern server's cache hint (from server/discover); none for a legacy server.
  std::optional<std::int64_t> cache_ttl_ms() const { return cache_ttl_ms_; }
  bool cache_private() const { return cache_private_; }
  /// What the channel factory said of this server's kind of connection (defaults until the
  /// first connection is opened: core/channel.hpp).
  const channel_traits& traits() const { return traits_; }
  /// Why the last connection ended or attempt failed; kept after a recovery, for status.
  const std::string& last_error() const { return last_error_; }
  /// When last_error was set (Unix time in ms; 0: never).
  std::int64_t last_error_at_ms() const { return last_error_at_ms_; }
  /// True once the server's tools are known (ready once, or served from the cache) or it failed:
  /// an early tools/list need not wait for it any longer.
  bool settled() const;
  bool tools_from_cache() const { return tools_from_cache_; }
  /// Made with a pending cache entry, and not yet given it nor listed live.
  bool cache_pending() const { return cache_pending_ && tools_from_cache_; }
  /// The pending cache entry, read at last: listed until the server lists. False (and nothing
  /// taken) when none was pending or the server listed live first.
  bool take_cached(cache_entry entry);
  /// True once it was ready: its lists are the server's own, not (only) the cache's.
  bool ever_ready() const { return ever_ready_; }
  /// Bumped whenever one of its lists changes (the manager skips rebuilds when nothing did).
  std::uint64_t lists_version() const { return lists_version_; }
  /// Bumped whenever its tools list changes (the manager rewrites the tool cache then).
  std::uint64_t tools_version() const { return tools_version_; }
  /// True when its lists belong in the combined catalogue: running, reconnecting, or enabled and
  /// about to start (cached tools are served before the start); not stopped or disabled.
  bool listed() const {
    if (!started_) return cfg_.enabled;
    return state() != upstream_state::stopped && state() != upstream_state::disabled;
  }
  /// Recent stderr lines and lifecycle events, oldest first.
  std::vector<std::string> log_lines(std::size_t n) const;
  /// The last `n` stderr lines of the server's latest run that wrote any, oldest first.
  std::vector<std::string> stderr_tail(std::size_t n) const;
  std::optional<int> pid() const { return pid_ > 0 ? std::optional<int>(pid_) : std::nullopt; }
  std::optional<steady_clock::time_point> ready_since() const { return ready_since_; }
  const upstream_stats& stats() const { return stats_; }
  /// What was replaced in one of its messages before clients saw it.
  void count_redacted(const mcp::redaction_counts& counts) { stats_.redacted += counts; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  /// Takes a call: sends it now, queues it while the server is connecting (bounded by the
  /// timeout), or finishes it at once (stopped, disabled, waiting for a login).
  void start_call(std::shared_ptr<call> c);
  /// A request made on the server's behalf (subscriptions): `done` runs exactly once.
  void request(std::string_view method, json::value params, response_handler done);
  /// A resource subscription on this server: resources/subscribe (2025-11-25), or a URI of its
  /// listen stream's resourceSubscriptions (2026-07-28, where the stream is opened anew).
  void subscribe_resource(const std::string& uri, response_handler done);
  void unsubscribe_resource(const std::string& uri);
  /// The subscriptions a new connection must have again (every URI clients subscribed to).
  void resubscribe(const std::vector<std::string>& uris);
  /// A request made on the server's behalf whose failure harms nothing (resources/subscribe
  /// renewals): a failure is logged once and shown as a note in status, not treated as an error.
  void call_optional(std::string_view method, json::value params);
  /// What went wrong with optional parts of the server (a list it could not give, a refused
  /// logging/setLevel): one line each, cleared when the same request next succeeds.
  std::vector<std::string> notes() const;
  /// Consecutive failed attempts (exits, refused handshakes) without a stable connection in
  /// between: a server that keeps dying is crash-looping, and status says so.
  bool crash_looping() const {
    return state() == upstream_state::backoff && lc_.attempt() >= crash_loop_attempts;
  }
  static constexpr unsigned crash_loop_attempts = 3;
  /// Sends a notification to the server when connected (e.g. roots/list_changed).
  void notify(std::string_view method, const json::value& params);
  /// Gives up on a call (its caller cancelled or left): the server is sent
  /// notifications/cancelled if it has the request.
  void cancel(call& c, std::string_view reason);
  /// A call ended (call::finish): its latency and outcome go into the stats, a server's error
  /// into the calls' error back-off.
  void record(const call& c, call_end end, steady_clock::time_point now);
  /// A call to this server was held back by `limit` (a key of upstream_stats::limited).
  void count_limited(std::string_view limit);
  /// The calls' error back-off (a remote server whose calls keep failing).
  const call_backoff& calls_backoff() const { return calls_backoff_; }

 private:
  void perform(lifecycle::step s);
  std::shared_ptr<transport> open_channel();
  void connect();
  void schedule_ping();
  void step_handshake(handshake_action a);
  void finish_handshake();
  void request_page(std::shared_ptr<list_pager> pager);
  void store_list(collection c, std::vector<json::object> items);
  void take_era(std::string_view era);  ///< a cache entry's ("modern", "legacy" or "")
  /// Replaces a list; true when it changed (its version is bumped).
  bool set_list(collection c, std::vector<json::object> items);
  void list_failed(collection c, std::string why);
  void send_log_level();
  response_handler optional_call_handler(std::string method);
  bool has_note(std::string_view about, std::string_view text) const;
  void set_last_error(const std::string& why);  ///< redacted, with its time
  void set_note(std::string_view about, std::string text);
  void clear_note(std::string_view about);
  void relist(collection c);
  void become_ready();
  void fail(std::string why);
  void wait_for_login(std::string why);
  void lose_connection(std::string why, bool needs_login);
  void refuse_for_login(call& c);
  void handle_request(const message& msg);
  void handle_notification(const message& msg);
  void on_cancelled(const message& msg);
  void send_call(std::shared_ptr<call> c);
  /// A remote server in the calls' error back-off refuses `c` at once; false when it may go.
  bool paused_by_errors(call& c);
  /// Adds a modern server's request _meta to `params` (capabilities as `owner` declared them).
  void add_era_meta(json::value& params, const call_owner* owner) const;
  /// The answer (or failure) of call `c` on the wire.
  void call_answered(const std::shared_ptr<call>& c, rpc_outcome&& out);
  /// A modern server's input_required for a client that cannot take it: asks the client with
  /// real requests, then sends the call again with the answers. False when it does not apply.
  bool fulfil_input(const std::shared_ptr<call>& c, rpc_outcome& out);
  /// A modern server's listen stream for its list changes.
  void open_listen();
  void listen_ended(steady_clock::duration lived, const message& reply);
  void ensure_tool_headers();
  /// The Mcp-Param-* fields of a 2026-07-28 tools/call, for a connection that sends them.
  std::vector<std::pair<std::string, std::string>> param_header_fields(const call& c);
  void build_tool_headers();
  bool harmless_twice(const call& c) const;
  std::string not_repeated(const call& c, const call_policy::dropped_call& d,
                           const std::string& why) const;
  void flush_queue();
  void enqueue(std::shared_ptr<call> c);
  /// The calls on the wire on the current connection.
  std::vector<call*> calls_on_wire() const;
  void expire_queue();
  void note(std::string line);
  std::optional<std::chrono::milliseconds> timeout_opt() const;
  /// The rules of this server's calls (timeout, retry once, progress extension).
  call_policy policy() const {
    return {timeout_, cfg_.retry, cfg_.reset_timeout_on_progress, cfg_.max_timeout};
  }

  boost::asio::io_context& io_;
  channel_factory open_;
  channel_traits traits_;  ///< of the last connection opened
  server_config cfg_;
  daemon_config daemon_;
  upstream_observer& observer_;
  logger log_;
  std::chrono::milliseconds timeout_;
  lifecycle lc_;
  bool started_ = false;  ///< start() was called (the manager starts servers one per loop turn)
  bool ever_ready_ = false;
  bool tools_from_cache_ = false;
  bool cache_pending_ = false;  ///< see cache_pending()
  liveness live_{std::chrono::milliseconds(0), std::chrono::milliseconds(0)};
  std::shared_ptr<rpc_peer> peer_;
  std::uint64_t generation_ = 0;      ///< bumped per connection; stale callbacks compare it
  mcp::era era_ = mcp::era::unknown;  ///< the verdict of the last handshake (or the cache's)
  std::optional<std::int64_t> cache_ttl_ms_;
  bool cache_private_ = false;
  std::set<std::string> listen_uris_;      ///< a modern server: resources its listen stream covers
  std::set<std::string> listen_tasks_;     ///< … and tasks (its own ids; the tasks extension)
  std::optional<std::int64_t> listen_id_;  ///< the open subscriptions/listen request
  std::chrono::milliseconds listen_retry_{0};  ///< the pause before reopening an ended stream
  std::shared_ptr<const mcp::tool_param_headers> tool_headers_;  ///< x-mcp-header arguments
  std::uint64_t headers_version_ = 0;  ///< the lists_version_ tool_headers_ was built from
  int pid_ = -1;
  std::array<std::vector<json::object>, collection_count> lists_;
  json::object capabilities_;
  std::string log_level_;
  std::string instructions_;
  std::string last_error_;
  std::int64_t last_error_at_ms_ = 0;
  std::vector<std::pair<std::string, std::string>> notes_;  ///< (method, what went wrong)
  std::unique_ptr<handshake> handshake_;                    ///< while connecting
  std::optional<steady_clock::time_point> ready_since_;
  std::deque<std::string> log_ring_;
  upstream_stats stats_;
  call_backoff calls_backoff_;

  std::uint64_t next_token_ = 1;
  call_queue<std::shared_ptr<call>> queue_;  ///< waiting for ready
  /// The server's requests passed to a client (for their cancellation).
  request_router<std::weak_ptr<call_owner>> asked_;
  void ask_owner(const message& msg, std::string_view capability);
  void on_progress(const message& msg);
  struct timer_holder;
  std::unique_ptr<timer_holder> timers_;
  std::uint64_t lists_version_;
  std::uint64_t tools_version_ = 0;
};

}  // namespace mcpmux
