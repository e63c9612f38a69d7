// NDJSON over file descriptors (a Unix socket, or a pair of pipes): read loop, bounded write queue.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "transports/transport.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class write_batch;

/// Options of one fd transport.
struct fd_transport_options {
  transport_limits limits;
  /// How long close() waits for queued bytes to drain before the descriptors are closed anyway.
  std::chrono::milliseconds flush_timeout{2000};
  /// For a socket (read_fd == write_fd): shut down the write side after the flush.
  bool half_close_on_flush = true;
  /// Deliver a last line that the end of the stream cut off before its newline (for programs
  /// that print one value, like a token command; a JSON-RPC peer always ends its lines).
  bool last_line_at_eof = false;
  /// For a client socket: take the stdio handoff of `mcpmux connect` (transports/stdio_handoff.hpp)
  /// if its first line asks for it with two descriptors attached.
  bool accept_handoff = false;
  /// The loop's write batch (transports/write_batch.hpp), shared by the transports of one loop;
  /// null: every message is written when it is sent, and reads hold no batch.
  std::shared_ptr<write_batch> batch;
};

/// Creates a transport over `read_fd` and `write_fd` (equal for a socket), taking ownership.
std::shared_ptr<transport> make_fd_transport(boost::asio::io_context& io, int read_fd, int write_fd,
                                             fd_transport_options options);

}  // namespace mcpmux
