// The manager: owns every upstream, builds the combined tool catalogue, tells sessions of changes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "config/config.hpp"
#include "core/json_rpc.hpp"
#include "core/log.hpp"
#include "core/upstream.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class session;

/// Facts about the running daemon, for status.
struct daemon_info {
  std::string socket_path;
  std::string config_path;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  /// Loads the configuration again (for mcpmux/reload); empty = reload unsupported.
  std::function<config_result()> reload_config;
  /// Called after every catalogue rebuild (server states changed): for the systemd STATUS line.
  std::function<void()> on_change;
};

/// One exposed tool.
struct catalogue_entry {
  std::string exposed;
  std::string server;
  std::string original;
  std::string description;  ///< first line, for `mcpmux tools`
};

/// Someone to tell when the combined tool list changed (a session).
class catalogue_listener {
 public:
  virtual ~catalogue_listener() = default;
  virtual void on_tools_changed() = 0;
};

class manager : public upstream_observer {
 public:
  manager(boost::asio::io_context& io, config cfg, daemon_info info);
  ~manager() override;

  /// Starts every enabled upstream.
  void start();
  /// Stops every upstream (children are torn down in the background).
  void stop();

  const config& current_config() const { return cfg_; }
  std::shared_ptr<upstream> find_upstream(std::string_view server) const;
  const catalogue_entry* find_tool(std::string_view exposed) const;
  /// The combined tool list as a serialized JSON array, sorted by name.
  const std::string& tools_json() const { return tools_json_; }
  std::size_t tool_count() const { return entries_.size(); }
  /// Upstream instructions joined, each under its server name, capped.
  std::string instructions() const;
  /// Runs `ready` once every enabled server has settled (ready, failed, or served from cache),
  /// or once startup_wait has passed since start — whichever is first. At once when settled.
  void when_settled(std::function<void()> ready);

  void add_listener(catalogue_listener* l) { listeners_.insert(l); }
  void remove_listener(catalogue_listener* l) { listeners_.erase(l); }
  /// Sessions are owned here from connect to disconnect.
  void attach(std::shared_ptr<session> s, std::uint64_t id);
  void detach(std::uint64_t id);
  /// Ends every session (shutdown).
  void close_sessions();
  std::size_t clients() const { return sessions_.size(); }
  /// (servers ready, servers enabled), for status lines.
  std::pair<std::size_t, std::size_t> ready_count() const;

  /// Loads the configuration again and applies the difference: removed servers stop, added ones
  /// start, changed ones restart, unchanged ones are not touched (same process, calls in flight
  /// unaffected). An invalid file changes nothing. The result lists what happened.
  std::variant<json::value, rpc_error> reload();
  /// Answers a control method (`mcpmux/...`): a result or an error.
  /// `session` is the asking session's id (mcpmux/logs with follow streams to it).
  std::variant<json::value, rpc_error> control(std::string_view method, const json::object& params,
                                               std::uint64_t session);

  // upstream_observer
  void on_upstream_changed(const std::string& server) override;
  void on_upstream_notification(const std::string& server, const message& msg) override;
  void on_upstream_log(const std::string& server, const std::string& line) override;

 private:
  void schedule_rebuild();
  void rebuild();
  bool settled() const;
  void release_waiters();
  json::object status() const;

  boost::asio::io_context& io_;
  config cfg_;
  daemon_info info_;
  logger log_{"manager"};
  std::map<std::string, std::shared_ptr<upstream>, std::less<>> upstreams_;
  std::vector<catalogue_entry> entries_;
  std::unordered_map<std::string_view, std::size_t> by_name_;
  std::string tools_json_ = "[]";
  bool rebuild_posted_ = false;
  std::unordered_set<std::string> reported_collisions_;
  std::unordered_set<catalogue_listener*> listeners_;
  std::unordered_map<std::uint64_t, std::shared_ptr<session>> sessions_;
  /// Sessions following a server's log (`mcpmux logs -f`), by server name.
  std::map<std::string, std::unordered_set<std::uint64_t>, std::less<>> log_followers_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  struct startup_gate;
  std::unique_ptr<startup_gate> gate_;
};

}  // namespace mcpmux
