// The seam between core and the concrete transports: core asks for a connection to a configured
// server and gets a transport; the daemon decides which one (stdio child, Streamable HTTP, SSE).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "protocol/result.hpp"
#include "transports/transport.hpp"

namespace mcpmux {

/// What an upstream asks of a new connection to its server.
struct channel_request {
  const server_config& server;
  std::chrono::milliseconds timeout;  ///< the server's request timeout (0 = none)
  transport_limits limits;
  /// Lines the server writes to stderr (stdio servers only).
  std::function<void(std::string_view)> on_stderr;
};

/// What core needs to know about a kind of connection, told by the factory that picked it, so
/// that core never asks which transport it is. The defaults suit a connection core knows
/// nothing about (a test's fake): modern or legacy as detected, no headers, private lists.
struct channel_traits {
  /// A child that exits when asked server/discover before initialize speaks only the
  /// 2025-11-25 era (a stdio server): its exit during the era probe is the answer, not a failure.
  bool exit_on_probe_means_legacy = false;
  /// Speaks only the 2025-11-25 era (legacy HTTP+SSE has no modern form).
  bool legacy_only = false;
  /// A 2026-07-28 tools/call's x-mcp-header arguments travel as Mcp-Param-* headers too
  /// (Streamable HTTP): the caller fills outgoing_info::params.
  bool param_headers = false;
  /// The server's lists are the same whoever asks (a local child); a remote server may answer
  /// per user, so lists combined with its own are cached privately.
  bool lists_shared = false;
  /// A remote endpoint, dialed on first use; named in notes ("connecting to the http endpoint").
  std::string endpoint;
};

/// A new connection.
struct opened_channel {
  std::shared_ptr<transport> channel;
  int pid = -1;  ///< the child's pid (stdio servers)
  channel_traits traits;
};

/// Opens connections, or says why one cannot be opened; injected by the daemon (tests may
/// inject their own).
using channel_factory = std::function<result<opened_channel>(const channel_request&)>;

/// Hands out a code-mode runner (docs/code-mode.md) for one program: its NDJSON connection, not
/// yet started, or why there is none. Injected by the daemon (Node in the runner's sandbox,
/// started ahead of need); tests may inject their own.
using code_runner_factory = std::function<result<std::shared_ptr<transport>>()>;

}  // namespace mcpmux
