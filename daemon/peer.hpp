// Who is at the other end of a socket connection: SO_PEERCRED's pid, and from /proc its
// executable, command line and — when it is `mcpmux connect` — the agent that launched it
// (shells and `env` in between are skipped). What profiles match on (core/profiles.hpp).
#pragma once

#include "core/profiles.hpp"

namespace mcpmux {

/// The identity of the process connected on `fd` (a Unix socket); fields stay empty when the
/// process is gone or /proc cannot be read.
client_identity identify_peer(int fd);

/// The identity of process `pid`, as identify_peer reads it.
client_identity identify_process(int pid);

}  // namespace mcpmux
