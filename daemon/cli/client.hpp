// Talking to the daemon from the CLI: finding and dialing its socket, and a blocking JSON-RPC
// client with a deadline on every wait (everything but `connect`, which is a byte bridge).
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "daemon/cli/common.hpp"
#include "daemon/cli/json.hpp"
#include "protocol/ndjson.hpp"

namespace mcpmux::cli {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Owns a file descriptor.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  int get() const { return fd_; }
  void reset();

 private:
  int fd_ = -1;
};

/// Where the daemon is and how long to wait for it.
struct context {
  std::string socket_path;
  milliseconds timeout;
  /// No --socket and no $MCPMUX_SOCKET named the socket: the daemon's record
  /// (daemon_record_path()) is tried before `socket_path`, and a daemon that `--spawn` starts
  /// finds the same default path by itself (and records it).
  bool default_socket = false;
};

/// The daemon's rule (config/config.hpp, locate_socket) without --socket: $MCPMUX_SOCKET,
/// `daemon.socket` of the config the daemon reads ($MCPMUX_CONFIG, else
/// ~/.config/mcpmux/config.toml), the runtime directory, /tmp/mcpmux-<uid>. A config that does
/// not load is the daemon's to report: the default then.
socket_location default_socket_location();

/// Connects to the daemon at `path`; the returned socket is non-blocking. Nothing listening
/// (ENOENT, ECONNREFUSED) is a no_daemon failure with `sys_errno` set. Before a byte is sent,
/// the socket's directory must be this user's own private directory (not a symlink) and the
/// peer (SO_PEERCRED) this user: anything else is refused, so that another local user who got
/// the path first never receives an agent's stdio or a request.
outcome<unique_fd> dial(const std::string& path, milliseconds timeout);

/// dial() of the daemon of `ctx`: for a default socket, the recorded one first (the daemon an
/// agent's bare environment would otherwise miss), then ctx.socket_path.
outcome<unique_fd> dial_daemon(const context& ctx);

/// One connection that sends JSON-RPC requests and waits, bounded, for their answers.
class daemon_client {
 public:
  daemon_client(unique_fd fd, milliseconds timeout) : fd_(std::move(fd)), timeout_(timeout) {}

  /// Sends a request and returns its `result`; a JSON-RPC error becomes a failure.
  outcome<json::value> request(std::string_view method, json::object params);

  /// Waits, without a deadline, for the next `notifications/mcpmux/log`. nullopt when the
  /// daemon closed the connection or `stop` was set by a signal handler meanwhile.
  outcome<std::optional<json::value>> next_log_notification(const volatile sig_atomic_t* stop);

  /// Sends a notification (no answer expected).
  outcome<void> notify(std::string_view method, json::object params);

 private:
  bool wait_for(short events, clock_type::time_point deadline);
  outcome<void> send(const json::object& msg, clock_type::time_point deadline,
                     std::string_view method);
  outcome<std::string> read_line(clock_type::time_point deadline, std::string_view method,
                                 std::int64_t id);
  void answer_peer_request(const json::object& req, clock_type::time_point deadline);
  void cancel(std::int64_t id);

  /// Upper bound on one message from the daemon (a tools/call result can be large).
  static constexpr std::size_t max_line_bytes = 64u << 20;

  unique_fd fd_;
  milliseconds timeout_;
  std::int64_t next_id_ = 1;
  bool initialized_ = false;
  ndjson_framer framer_{max_line_bytes};
  std::deque<std::string> lines_;                // complete lines not yet handed out
  bool oversize_ = false;                        // the framer dropped a line over the cap
  bool eof_ = false;                             // the daemon closed the connection
  std::vector<json::value> stashed_;             // log notifications seen while awaiting an answer
  const volatile sig_atomic_t* stop_ = nullptr;  // set by a signal handler: stop waiting
};

outcome<daemon_client> open_client(const context& ctx);

}  // namespace mcpmux::cli
