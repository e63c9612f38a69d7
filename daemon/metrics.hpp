// GET /metrics of the HTTP endpoint: the Prometheus view of `mcpmux/status`.
#pragma once

#include <string>
#include <string_view>

namespace mcpmux {

/// Prometheus text exposition (format 0.0.4) of a status JSON document (the result of
/// `mcpmux/status`): mcpmux_up always, the daemon's and each server's figures when present.
std::string metrics_from_status(std::string_view status_json);

}  // namespace mcpmux
