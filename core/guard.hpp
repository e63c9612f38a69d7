// The loop's edge: where an exception a handler throws stops. Inside core and the transports
// errors are values (docs/ARCHITECTURE.md, "Errors"); what throws anyway (a bad_alloc, a library's
// exception, a bug) must cost one request, never the daemon and every client with it.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>

namespace mcpmux {

/// Runs one turn of the event loop (`step`: io.poll(), io.run_one_for(…), io.run()). An
/// exception a handler throws is logged as an error and the loop goes on (Asio leaves the
/// io_context usable: the handler that threw is gone, the rest still queued). Returns what
/// `step` returned, or 1 when a handler threw (it ran).
std::size_t guarded(const std::function<std::size_t()>& step) noexcept;

/// What an exception says, for a log line or an error message.
const char* what_of(std::exception_ptr e) noexcept;

}  // namespace mcpmux
