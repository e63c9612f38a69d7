// systemd integration without libsystemd: sd_notify messages and socket activation; and the same
// readiness signal for `mcpmux connect --spawn` (--ready-fd).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace mcpmux {

/// Sends one notification ("READY=1", "STATUS=...") to $NOTIFY_SOCKET; false when unset or failed.
bool sd_notify(std::string_view state);

/// The listening socket passed by systemd (LISTEN_PID/LISTEN_FDS, first fd = 3), if any.
/// The variables are removed from the environment so that children do not see them.
std::optional<int> sd_listen_fd();

/// The path a listening Unix socket is bound to (getsockname), if it is a named one.
std::optional<std::string> bound_unix_path(int fd);

/// Takes `fd` (--ready-fd: the pipe that `mcpmux connect --spawn` waits on while the daemon it
/// started comes up) and makes it close-on-exec, so that no server inherits it. False when it is
/// not an open pipe.
bool take_ready_fd(int fd);

/// Tells whoever waits on `fd` that the socket listens: one byte, then closed. No-op for -1.
void notify_ready_fd(int fd);

/// Half of $WATCHDOG_USEC when the watchdog is enabled for this process.
std::optional<std::chrono::microseconds> sd_watchdog_interval();

}  // namespace mcpmux
