// The control plane: the mcpmux/* methods (status, tools, logs with follow, restart, reload),
// answered from what the manager holds. Sessions reach it through manager::control; the page
// and the CLI show nothing a control method does not give.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>

#include "core/protocol/json_rpc.hpp"

namespace mcpmux {

class manager;

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
  /// mcpmux/tools: every exposed tool with its server, original name and description's first
  /// line.
  json::array tool_table() const;

  /// A line was added to a server's log: the sessions following it are told.
  void on_log(const std::string& server, const std::string& line);
  /// A session left.
  void forget(std::uint64_t session);

 private:
  manager& m_;
  /// Sessions following a server's log (`mcpmux logs -f`), by server name.
  std::map<std::string, std::unordered_set<std::uint64_t>, std::less<>> followers_;
};

}  // namespace mcpmux
