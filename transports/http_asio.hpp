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
#include <string_view>

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

/// The name of a header that a request may carry once and carries more than once (Host, Origin,
/// Authorization, Mcp-Session-Id), or "" when none is repeated. Every listener (the endpoint,
/// its dashboard, the OAuth redirect's) answers such a request 400 (RFC 9112 §3.2 says so for
/// Host): its checks read the first value only, and a second `Host: evil.com` behind an allowed
/// one must not reach code or a proxy that reads another.
inline std::string_view repeated_header(const http::fields& h) {
  for (auto f : {http::field::host, http::field::origin, http::field::authorization})
    if (h.count(f) > 1) {
      const auto name = http::to_string(f);
      return {name.data(), name.size()};
    }
  if (h.count("Mcp-Session-Id") > 1) return "Mcp-Session-Id";
  return {};
}

}  // namespace mcpmux::http_asio
