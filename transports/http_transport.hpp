// Remote transports: Streamable HTTP (`type = "http"`) and legacy HTTP+SSE (`type = "sse"`).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "transports/bearer.hpp"
#include "transports/transport.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

/// How to reach one remote MCP server.
struct http_transport_options {
  enum class kind { streamable_http, legacy_sse };
  kind type = kind::streamable_http;
  std::string url;  ///< endpoint (http:// or https://)
  std::map<std::string, std::string>
      headers;          ///< extra request headers (values are secrets: never logged)
  std::string ca_file;  ///< extra CA bundle for private CAs; empty = system store only
  std::shared_ptr<bearer_source> bearer;  ///< the Authorization token's source; null = none
  std::chrono::milliseconds timeout{
      30000};  ///< connect, TLS handshake, write and read each; 0 = none
  transport_limits limits;
  std::size_t max_connections = 4;  ///< keep-alive pool size per upstream
  /// How long a pooled connection may sit idle before it is closed rather than used: under the
  /// 5 s after which Node's HTTP servers close theirs, so that we seldom write into a closing one.
  std::chrono::milliseconds pool_idle{4000};
  std::string server_name;  ///< for log lines
};

/// A bearer source that runs `command` (`token_command`: /bin/sh -c, one line of output is
/// the token), once at first and once more each time the server refuses its token.
std::shared_ptr<bearer_source> make_command_bearer(boost::asio::io_context& io, std::string command,
                                                   std::chrono::milliseconds timeout);

/// Creates the transport; no I/O happens before start(). Errors (bad URL) are reported through
/// on_closed after start().
std::shared_ptr<transport> make_http_transport(boost::asio::io_context& io,
                                               http_transport_options options);

}  // namespace mcpmux
