// The control plane: the mcpmux/* methods (status, tools, logs with follow, restart, reload),
// answered from the services the manager composes (control_services). Sessions reach it
// through manager::control; the page and the CLI show nothing a control method does not give.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

#include "core/profiles.hpp"
#include "core/upstream_map.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {

class audit_buffer;
class catalogue_service;
class session_registry;
class upstream;
struct daemon_info;

/// Control methods and status fields that live outside core, such as the daemon's OAuth logins
/// (`mcpmux/auth/*` and each server's `auth`).
class control_extension {
 public:
  virtual ~control_extension() = default;
  /// Answers `method` when it is one of its own; nullopt otherwise.
  virtual std::optional<result<json::value>> handle(std::string_view method,
                                                    const json::object& params) = 0;
  /// Adds what it knows of `server` to the server's status entry.
  virtual void describe(const std::string& server, json::object& entry) const = 0;
  /// A line was added to `server`'s log.
  virtual void on_log(const std::string& /*server*/, const std::string& /*line*/) {}
};

/// What control methods change beyond their own reach: carried out by the composition root,
/// which rebuilds and tells the clients.
class control_actions {
 public:
  virtual ~control_actions() = default;
  /// mcpmux/reload: the configuration loaded again and the difference applied.
  virtual result<json::value> reload() = 0;
  /// mcpmux/trust: held items approved (catalogue_service::approve), then shown.
  virtual result<json::value> approve(const std::string& server,
                                      const std::vector<std::string>& names, bool all,
                                      const std::map<std::string, std::string>& expected) = 0;
};

/// What the control methods read and ask.
struct control_services {
  const daemon_info& info;
  const upstream_map& upstreams;
  const catalogue_service& catalogue;
  session_registry& sessions;
  audit_buffer& audit;
  control_actions& actions;
};

class control_plane {
 public:
  explicit control_plane(control_services s) : s_(s) {}

  /// Answers a control method: a result or an error. `session` is the asking session's id
  /// (mcpmux/logs with follow streams to it).
  result<json::value> handle(std::string_view method, const json::object& params,
                             std::uint64_t session);
  /// mcpmux/status; with `histograms`, each server also carries its latency histograms
  /// (`latency_histogram`, and `tool_latency_histograms` by tool) for /metrics.
  json::object status(bool histograms = false) const;
  /// mcpmux/tools: every exposed tool (of `profile` when given) with its server, original name
  /// and description's first line.
  json::array tool_table(std::string_view profile = {}) const;
  /// mcpmux/tools {server, hidden: true}: every tool `up` offers with its `state` (shown, hidden
  /// by its filter, quarantined by trust) and whether it `changed` since it was trusted.
  json::array server_tools(const upstream& up) const;

  /// mcpmux/history: the audit log's entries.
  result<json::value> history(const json::object& params);
  /// mcpmux/quarantine: what trust holds back, with word diffs when asked.
  result<json::value> quarantine(const json::object& params) const;
  /// mcpmux/trust: approves held items.
  result<json::value> trust(const json::object& params);
  /// A profile's entry in status and in mcpmux/tools.
  json::object profile_status(const profile_set::view& v) const;

  /// A line was added to a server's log: the sessions following it are told.
  void on_log(const std::string& server, const std::string& line);
  /// A session left.
  void forget(std::uint64_t session);
  /// Adds methods and status fields. It must outlive the control plane's use.
  void add_extension(control_extension* e) { extensions_.push_back(e); }

 private:
  std::shared_ptr<upstream> find_upstream(std::string_view server) const;

  control_services s_;
  std::vector<control_extension*> extensions_;
  /// Sessions following a server's log (`mcpmux logs -f`), by server name.
  std::map<std::string, std::unordered_set<std::uint64_t>, std::less<>> followers_;
};

}  // namespace mcpmux
