// The Unix-socket listener: private directory, stale-socket cleanup, same-uid peers only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "protocol/result.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class unix_listener {
 public:
  virtual ~unix_listener() = default;
  /// Stops accepting and removes the socket file (if this listener created it).
  virtual void close() = 0;
};

/// Listens on `path` (directory made 0700, socket 0600), or on `inherited_fd` when >= 0 (systemd
/// socket activation). Refuses when a live daemon already answers at `path`. Each accepted
/// connection from a peer with our uid is handed to `on_accept` as a connected fd. Fails saying
/// why it cannot listen.
result<std::shared_ptr<unix_listener>> listen_unix(boost::asio::io_context& io,
                                                   const std::string& path, int inherited_fd,
                                                   std::function<void(int fd)> on_accept);

}  // namespace mcpmux
