// The seam between core and the concrete transports: core asks for a connection to a configured
// server and gets a transport; the daemon decides which one (stdio child, Streamable HTTP, SSE).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "transports/transport.hpp"

namespace mcpmux {

/// What an upstream asks of a new connection to its server.
struct channel_request {
  const server_config& server;
  std::chrono::milliseconds timeout;  ///< the server's request timeout (0 = none)
  transport_limits limits;
  /// Lines the server writes to stderr (stdio servers only).
  std::function<void(std::string_view)> on_stderr;
};

/// A new connection, or why there is none.
struct opened_channel {
  std::shared_ptr<transport> channel;  ///< null when it could not be opened
  int pid = -1;                        ///< the child's pid (stdio servers)
  std::string error;                   ///< why `channel` is null
};

/// Opens connections; injected by the daemon (tests may inject their own).
using channel_factory = std::function<opened_channel(const channel_request&)>;

}  // namespace mcpmux
