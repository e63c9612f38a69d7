// Private to transports/: Asio and Beast as the HTTP client and the HTTP endpoint use them (names,
// the coroutine completion token). Core never sees this: it includes only transport.hpp.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>

// GCC 12 at -O2 may report Asio's coroutine frames (aligned_alloc in the frame's operator new,
// released by its sized operator delete) as -Wmismatched-new-delete, depending on what it inlines
// into a coroutine's ramp: a false positive (GCC PR 109224) that moves with how code is split
// over files. Silenced for the translation units of the HTTP code only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace mcpmux::http_asio {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using error_code = boost::system::error_code;

/// Completion token of the coroutines: (error_code, results...) instead of exceptions.
inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

}  // namespace mcpmux::http_asio
