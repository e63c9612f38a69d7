// The session registry: the sessions from connect to disconnect, and what they ask of the
// servers together — logging levels (the most verbose goes to every server), resource
// subscriptions (one per server and URI, however many clients), watched tasks (each server's
// listen stream follows the union) — and the notifications that come back to them.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "core/catalogue.hpp"
#include "core/subscriptions.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {

class session;

/// Someone to tell when a combined list changed (a session).
class catalogue_listener {
 public:
  virtual ~catalogue_listener() = default;
  virtual void on_list_changed(collection c) = 0;
  /// The profile whose lists it sees ("" = everything).
  virtual const std::string& profile() const = 0;
  /// Its profile is gone (a reload removed it): it sees everything from now on.
  virtual void profile_removed() = 0;
};

/// A client's log messages level (`logging/setLevel`), for routing `notifications/message`.
int log_severity(std::string_view level);  ///< debug = 0 … emergency = 7; -1 when unknown

/// What the registry asks of the servers (the manager's upstreams; a test's fake).
class registry_servers {
 public:
  virtual ~registry_servers() = default;
  /// Every server is to send log messages of `level` and above ("" = none).
  virtual void set_log_level(const std::string& level) = 0;
  /// `server`'s listen stream is to follow the status of these tasks (the server's own ids).
  virtual void listen_tasks(const std::string& server, std::set<std::string> ids) = 0;
  /// resources/subscribe to `server`; `done` hears code 0, or the error code and message to
  /// answer the client with (at once when there is no such server).
  virtual void subscribe_resource(const std::string& server, const std::string& uri,
                                  subscription_table::done_fn done) = 0;
  virtual void unsubscribe_resource(const std::string& server, const std::string& uri) = 0;
};

class session_registry {
 public:
  explicit session_registry(registry_servers& servers) : servers_(servers) {}
  session_registry(const session_registry&) = delete;
  session_registry& operator=(const session_registry&) = delete;

  /// Sessions are owned here from connect to disconnect.
  void attach(std::shared_ptr<session> s, std::uint64_t id);
  /// A session left: its subscriptions, watched tasks and logging level are dropped.
  void detach(std::uint64_t id);
  /// Ends every session (shutdown).
  void close_all();
  std::size_t clients() const { return sessions_.size(); }
  const std::unordered_map<std::uint64_t, std::shared_ptr<session>>& sessions() const {
    return sessions_;
  }
  /// When the latest client connected (the epoch when none has).
  steady_clock::time_point last_attach() const { return last_attach_; }
  /// Sends a notification line to a session (dropped when it is gone).
  void notify(std::uint64_t id, const std::string& text) const;

  void add_listener(catalogue_listener* l) { listeners_.insert(l); }
  void remove_listener(catalogue_listener* l) { listeners_.erase(l); }
  /// Tells the listeners of `profile` which of their lists changed.
  void notify_lists(const std::string& profile, const std::array<bool, collection_count>& changed);
  /// Listeners whose profile no longer `exists` see everything from now on, every list changed.
  void drop_profiles(const std::function<bool(const std::string&)>& exists);

  /// A session's logging level changed ("" = none); the servers are asked for the most verbose.
  void set_log_level(std::uint64_t session, std::string level);
  /// The sessions whose level admits a message of `severity` (log_severity).
  std::vector<std::uint64_t> log_recipients(int severity) const;

  /// Subscribes `session` to a resource (core/subscriptions.hpp): the first subscriber's goes
  /// to the server; `done` hears how it went.
  void subscribe(std::uint64_t session, const subscription_table::key& k,
                 subscription_table::done_fn done);
  void unsubscribe(std::uint64_t session, const subscription_table::key& k);
  /// The URIs of `server` with subscribers (subscribed again when it reconnects).
  std::vector<std::string> subscribed_uris(const std::string& server) const {
    return subscriptions_.uris_of(server);
  }

  using task_ref = std::pair<std::string, std::string>;  ///< (server, its own task id)
  void watch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks);
  void unwatch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks);
  /// The sessions watching a task (empty when none).
  std::vector<std::uint64_t> task_watchers(const task_ref& task) const;

  /// A server's notification for the sessions: log messages to those whose level admits them,
  /// resource updates to the subscribers (under the URI `exposed` lists), task status to the
  /// watchers. False when it is for none of them.
  bool deliver(const std::string& server, const message& msg, const catalogue& exposed);

 private:
  void push_log_level();
  void update_task_listen(const std::string& server);

  registry_servers& servers_;
  steady_clock::time_point last_attach_{};
  std::unordered_set<catalogue_listener*> listeners_;
  std::unordered_map<std::uint64_t, std::string> log_levels_;
  subscription_table subscriptions_;
  /// Sessions watching a task's status, by (server, the server's task id).
  std::map<task_ref, std::set<std::uint64_t>> task_watchers_;
  /// Last: destroyed first, while what a session's destructor reaches (listeners_) is there.
  std::unordered_map<std::uint64_t, std::shared_ptr<session>> sessions_;
};

}  // namespace mcpmux
