// mcpmuxd's run loop: config, logging, listener, manager, signals and graceful shutdown.
#pragma once

#include <string>

namespace mcpmux {

/// Command-line settings of mcpmuxd.
struct daemon_options {
  std::string config_path;  ///< --config; empty = contract default
  std::string socket_path;  ///< --socket; empty = contract default
  std::string log_level;    ///< --log-level; empty = config's
  int ready_fd = -1;        ///< --ready-fd: a pipe to write one byte to once the socket listens
};

/// Runs the daemon until SIGTERM/SIGINT. Returns the process exit status.
int run_daemon(const daemon_options& opt);

/// Loads and validates the configuration, printing the outcome. Returns 0 when valid.
int check_config(const daemon_options& opt);

}  // namespace mcpmux
