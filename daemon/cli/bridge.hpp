// `mcpmux connect`: the byte-transparent bridge between stdin/stdout and the daemon's socket.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "daemon/cli/common.hpp"

namespace mcpmux::cli {

/// Asks the daemon on `sock` for profile `name` (mcpmux/profile) before anything else is sent;
/// nullopt when it agreed, else the exit status after printing why not.
std::optional<exit_status> choose_profile(int sock, const std::string& name,
                                          std::chrono::milliseconds answer_timeout);

/// Copies stdin → `sock` and `sock` → stdout, unchanged, until the daemon closes (after stdin's
/// EOF has been passed on as a half-close); returns the exit status.
exit_status run_bridge(int sock);

/// Hands stdin and stdout to the daemon (transports/stdio_handoff.hpp) when both are pipes or
/// sockets and $MCPMUX_NO_HANDOFF is unset, then waits for the daemon to end the session: the
/// bridge copies nothing. Falls back to run_bridge() when the daemon does not take them.
exit_status run_connect_bridge(int sock, std::chrono::milliseconds answer_timeout);

}  // namespace mcpmux::cli
