// `mcpmux connect`: the byte-transparent bridge between stdin/stdout and the daemon's socket.
#pragma once

#include "daemon/cli/common.hpp"

namespace mcpmux::cli {

/// Copies stdin → `sock` and `sock` → stdout, unchanged, until the daemon closes (after stdin's
/// EOF has been passed on as a half-close); returns the exit status.
exit_status run_bridge(int sock);

}  // namespace mcpmux::cli
