// The control plane: the mcpmux/* methods (status, tools, logs with follow, restart, reload),
// answered from what the manager holds. Sessions reach it through manager::control; the page
// and the CLI show nothing a control method does not give.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

#include "core/profiles.hpp"
#include "core/protocol/json_rpc.hpp"

namespace mcpmux {

class manager;
class upstream;

/// Control methods and status fields that live outside core, such as the daemon's OAuth logins
/// (`mcpmux/auth/*` and each server's `auth`).
class control_extension {
 public:
  virtual ~control_extension() = default;
  /// Answers `method` when it is one of its own; nullopt otherwise.
  virtual std::optional<std::variant<json::value, rpc_error>> handle(
      std::string_view method, const json::object& params) = 0;
  /// Adds what it knows of `server` to the server's status entry.
  virtual void describe(const std::string& server, json::object& entry) const = 0;
  /// A line was added to `server`'s log.
  virtual void on_log(const std::string& /*server*/, const std::string& /*line*/) {}
};

class control_plane {
 public:
  explicit control_plane(manager& m) : m_(m) {}

  /// Answers a control method: a result or an error. `session` is the asking session's id
  /// (mcpmux/logs with follow streams to it).
  std::variant<json::value, rpc_error> handle(std::string_view method, const json::object& params,
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
  std::variant<json::value, rpc_error> history(const json::object& params);
  /// mcpmux/quarantine: what trust holds back, with word diffs when asked.
  std::variant<json::value, rpc_error> quarantine(const json::object& params) const;
  /// mcpmux/trust: approves held items.
  std::variant<json::value, rpc_error> trust(const json::object& params);
  /// A profile's entry in status and in mcpmux/tools.
  json::object profile_status(const profile_set::view& v) const;

  /// A line was added to a server's log: the sessions following it are told.
  void on_log(const std::string& server, const std::string& line);
  /// A session left.
  void forget(std::uint64_t session);
  /// Adds methods and status fields. It must outlive the control plane's use.
  void add_extension(control_extension* e) { extensions_.push_back(e); }

 private:
  manager& m_;
  std::vector<control_extension*> extensions_;
  /// Sessions following a server's log (`mcpmux logs -f`), by server name.
  std::map<std::string, std::unordered_set<std::uint64_t>, std::less<>> followers_;
};

}  // namespace mcpmux
