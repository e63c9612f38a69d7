// The stdio transport: a child process in its own process group speaking NDJSON on stdin/stdout.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "protocol/result.hpp"
#include "transports/transport.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class write_batch;

/// What to run and how to stop it.
struct stdio_options {
  std::string command;  ///< looked up in PATH (of the merged environment)
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  ///< merged over the daemon's environment
  std::string cwd;                         ///< empty = the daemon's
  transport_limits limits;
  /// Each line the child writes to stderr (cut at 4 KiB).
  std::function<void(std::string_view)> on_stderr;
  /// See fd_transport_options::last_line_at_eof.
  bool last_line_at_eof = false;
  /// See fd_transport_options::batch (null: none).
  std::shared_ptr<write_batch> batch;
  /// The child's wait status once it is reaped (before the transport reports its close).
  std::function<void(int status)> on_exit;
  /// Says why the child ended, for the close's reason; unset: describe_wait_status.
  std::function<std::string(int status)> describe_exit;
  /// Teardown: stdin closed → wait stdin_grace → SIGTERM to the group → wait term_grace → SIGKILL.
  std::chrono::milliseconds stdin_grace{1000};
  std::chrono::milliseconds term_grace{1500};
};

/// A started child.
struct spawned_child {
  std::shared_ptr<transport> channel;
  int pid = -1;
};

/// The program `options` would run: `command` looked up in the PATH of the merged environment
/// (relative to `cwd` when it has a slash); "" when there is none.
std::string program_path(const stdio_options& options);

/// Starts the child, or says why it cannot (`cannot start "npx": command not found in PATH`).
/// Reading begins with transport->start().
result<spawned_child> spawn_stdio(boost::asio::io_context& io, const stdio_options& options);

/// Children spawned and not yet reaped (the daemon waits for zero at shutdown).
std::size_t live_children();

/// Describes a wait status: "exited with code 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace mcpmux
