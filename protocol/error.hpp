// The project's error codes: one enum, one category, messages written in one place.
#pragma once

#include <string>
#include <system_error>

namespace mcpmux {

/// Failures that mcpmux itself reports (as opposed to errors an upstream returns).
enum class errc {
  ok = 0,
  transport_closed = 1,  ///< the connection or process went away before the answer
  timeout,               ///< no answer within the request's deadline
  cancelled,             ///< the caller gave up (client disconnected, daemon stopping)
  queue_full,            ///< the peer does not read fast enough; its bounded queue overflowed
  message_too_large,     ///< a line exceeded max_message_bytes
  spawn_failed,          ///< the server's command could not be started
  handshake_failed,      ///< initialize failed or returned something unusable
  not_connected,         ///< the server is not ready (connecting, failed, stopped)
  unknown_server,        ///< no configured server by that name
  needs_login,           ///< the server wants an OAuth login that only a person can give
};

const std::error_category& mcpmux_category() noexcept;
std::error_code make_error_code(errc e) noexcept;

}  // namespace mcpmux

template <>
struct std::is_error_code_enum<mcpmux::errc> : std::true_type {};
