// systemd integration without libsystemd: sd_notify messages and socket activation.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace mcpmux {

/// Sends one notification ("READY=1", "STATUS=...") to $NOTIFY_SOCKET; false when unset or failed.
bool sd_notify(std::string_view state);

/// The listening socket passed by systemd (LISTEN_PID/LISTEN_FDS, first fd = 3), if any.
/// The variables are removed from the environment so that children do not see them.
std::optional<int> sd_listen_fd();

/// The pipe `mcpmux connect --spawn` waits on while the daemon it started comes up
/// ($MCPMUX_READY_FD, for this process by $MCPMUX_READY_PID), made close-on-exec so that no
/// server inherits it; the variables are removed from the environment. -1 when there is none.
int take_spawner_ready_fd();

/// Tells the spawner the socket listens (one byte down `fd`, then closed); no-op for -1.
void notify_spawner_ready(int fd);

/// Half of $WATCHDOG_USEC when the watchdog is enabled for this process.
std::optional<std::chrono::microseconds> sd_watchdog_interval();

}  // namespace mcpmux
