// Remote transports: Streamable HTTP (`type = "http"`) and legacy HTTP+SSE (`type = "sse"`).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

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
      headers;                ///< extra request headers (values are secrets: never logged)
  std::string ca_file;        ///< extra CA bundle for private CAs; empty = system store only
  std::string token_command;  ///< prints a bearer token; empty = none
  std::chrono::milliseconds timeout{
      30000};  ///< connect, TLS handshake, write and read each; 0 = none
  transport_limits limits;
  std::size_t max_connections = 4;  ///< keep-alive pool size per upstream
  std::string server_name;          ///< for log lines
};

/// Creates the transport; no I/O happens before start(). Errors (bad URL) are reported through
/// on_closed after start().
std::shared_ptr<transport> make_http_transport(boost::asio::io_context& io,
                                               http_transport_options options);

}  // namespace mcpmux
