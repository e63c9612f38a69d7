// The filtering proxy a sandboxed server under `network = [...]` reaches the network through:
// one per server, on the daemon's loop, listening on a Unix socket that is bind-mounted into the
// server's network namespace (where the forwarder, sandbox/helper/forward.hpp, makes it
// 127.0.0.1:3128). It serves HTTP/1.1 proxy requests — `CONNECT host:port`, then a tunnel both
// ways, and plain HTTP in absolute form (`GET http://host/path`), sent on to the origin with
// `Connection: close` — and checks each name against the allowlist before any lookup or
// connection (the rules: sandbox/net_rules.hpp). A refusal is `403 Forbidden` with one line
// saying which key allows the host; a failed lookup or connection, `502 Bad Gateway`.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "protocol/result.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

/// One connection the proxy refused (off the list, or a listed name that led to a local
/// address).
struct net_refusal {
  std::string host;  ///< as the client asked, without brackets
  unsigned port = 0;
  std::string reason;      ///< for people: "not in the list", "resolves to 127.0.0.1, …"
  std::int64_t at_ms = 0;  ///< Unix milliseconds
};

/// What a proxy has done since it started.
struct net_proxy_stats {
  std::uint64_t allowed = 0;         ///< requests that passed the checks (connected or not)
  std::uint64_t refused = 0;         ///< answered 403
  std::uint64_t failed = 0;          ///< allowed, but the lookup or connection failed (502)
  std::string last_refused;          ///< "host:port" of the latest refusal; "" when none
  std::int64_t last_refused_ms = 0;  ///< its Unix milliseconds; 0 when none
};

/// A proxy's settings.
struct net_proxy_options {
  std::string socket_path;  ///< where to listen; its directory is private (made by the caller)
  std::vector<std::string> network;  ///< the server's `network` entries
  std::string server;                ///< the server's name, for the refusal's text and the log
  /// Called on the loop for each refusal (the daemon shows the last in status); may be empty.
  std::function<void(const net_refusal&)> on_refused;
  std::size_t head_max = 16 * 1024;  ///< a request head's bytes at most (431 beyond)
  std::size_t connections_max = 64;  ///< connections at once (503 beyond)
  /// For the request head to arrive, and again for the lookup and connection.
  std::chrono::milliseconds connect_timeout{10'000};
  /// A tunnel or forwarded request with no byte either way for this long is closed.
  std::chrono::milliseconds idle_timeout{10 * 60'000};
};

/// One server's proxy. Lives on the loop it was made with; every call is made there.
class net_proxy {
 public:
  net_proxy(boost::asio::io_context& io, net_proxy_options options);
  /// Stops it; connections still in flight end on the loop without touching this object.
  ~net_proxy();
  net_proxy(const net_proxy&) = delete;
  net_proxy& operator=(const net_proxy&) = delete;

  /// Parses the list and listens (socket 0600; a stale file at the path is replaced); the error
  /// says which entry or which path failed.
  result<void> start();
  /// Closes the listener, removes the socket file and closes every connection. Idempotent.
  void stop();
  /// The counts so far.
  net_proxy_stats stats() const;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace mcpmux
