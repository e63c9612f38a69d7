// The forwarder inside a sandbox with a network list: the server's only network is loopback, so
// its HTTP(S)_PROXY points at 127.0.0.1:PORT, where this listens and splices each connection to
// the daemon's proxy through the Unix socket bind-mounted into the sandbox. It runs as the
// parent of the server in mcpmux-sandbox, plain POSIX (no Boost, no mcpmux libraries), because
// it is part of a small program started for every sandboxed server.
#pragma once

#include <string>
#include <vector>

namespace mcpmux {

/// What the forwarder runs.
struct forward_options {
  unsigned short port = 3128;         ///< listened on at 127.0.0.1
  std::string socket_path;            ///< the proxy's Unix socket, as seen inside the sandbox
  std::vector<std::string> argv;      ///< the server's command; argv[0] is looked up in PATH
  std::size_t connections_max = 256;  ///< spliced at once; more wait in the listen backlog
};

/// Listens, starts the server (stdin, stdout and stderr inherited, no other descriptor), and
/// splices connections until the server ends; SIGTERM, SIGINT and SIGHUP are passed on to it.
/// Returns the server's exit status, 128+N when a signal N ended it, or 127 when it could not
/// be started (then stderr says why), for the caller to exit with.
int run_forward(const forward_options& options);

}  // namespace mcpmux
