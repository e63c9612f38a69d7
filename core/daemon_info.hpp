// Facts about the running daemon that core reports (status) or calls back (reload).
#pragma once

#include <functional>
#include <string>

#include "base/clock.hpp"
#include "config/config.hpp"

namespace mcpmux {

struct daemon_info {
  std::string socket_path;
  std::string config_path;
  std::string http_url;         ///< the HTTP endpoint's /mcp ("" = off)
  std::string http_token_file;  ///< the token its requests need ("" = none: http_auth = "none")
  steady_clock::time_point started = steady_clock::now();
  /// Loads the configuration again (for mcpmux/reload); empty = reload unsupported.
  std::function<config_result()> reload_config;
  /// The socket a configuration would listen on (command line and environment applied), to
  /// tell whether a reload needs a restart.
  std::function<std::string(const daemon_config&)> socket_for;
  /// Called after every catalogue rebuild (server states changed): for the systemd STATUS line.
  std::function<void()> on_change;
};

}  // namespace mcpmux
