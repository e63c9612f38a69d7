// `mcpmux connect --spawn`: starting mcpmuxd when nothing answers on the socket.
#pragma once

#include "daemon/cli/client.hpp"

namespace mcpmux::cli {

/// Nothing answers at ctx.socket_path: under the user's one exclusive lock
/// (~/.local/state/mcpmux/spawn.lock), checks again (the record, then the path) and, if still
/// nothing answers, starts mcpmuxd (detached) and waits until it accepts connections. Clients that
/// start at the same moment queue on the lock and then find the one daemon.
outcome<unique_fd> spawn_and_dial(const context& ctx);

/// mcpmuxd next to this executable, else the bare name for a PATH search.
std::string daemon_program();

/// This program's absolute path (/proc/self/exe); "" when it cannot be read.
std::string self_executable();

}  // namespace mcpmux::cli
