// The Streamable HTTP endpoint (server side): MCP sessions over /mcp, plus GET /status and
// /metrics.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.hpp"
#include "transports/transport.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {
namespace mcp {
struct param_header;
}

/// A request to the endpoint's web side (the dashboard): any path but /mcp, /status and
/// /metrics. Host and Origin were checked as for every request; the bearer token was not (a
/// browser comes with a cookie): `token` names the endpoint token it carried ("" when none);
/// `key` is its X-Dashboard-Key header.
struct web_request {
  std::string_view method, path, query, cookie, key, content_type, token, body;
};

/// The answer to a web request.
struct web_response {
  unsigned status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  ///< Set-Cookie, Location, ...
  std::string body;
  /// Set: the answer is an event stream (text/event-stream) instead of `body`. The endpoint
  /// asks it about every `event_interval` for what to send ("" = nothing yet) until the client
  /// goes or the endpoint closes; a quiet stream gets a comment every keepalive_interval.
  std::function<std::string()> events;
};

using web_handler = std::function<web_response(const web_request&)>;

/// Settings of the HTTP endpoint (`[daemon] http`, `http_allow_remote`, `http_token_file`).
struct http_endpoint_options {
  /// "127.0.0.1:PORT", "[::1]:PORT" or "localhost:PORT"; port 0 picks a free port.
  std::string address{};
  /// Permit a non-loopback address; then the Host header is not checked (Origin still is).
  bool allow_remote = false;
  /// File whose trimmed content must come as `Authorization: Bearer …`; empty = no token.
  std::string token_file{};
  /// `http_tokens`: more tokens by name (the token file's is "default").
  std::map<std::string, std::string> named_tokens{};
  /// Request body cap (413) and unsent bytes per open stream before the session is dropped.
  transport_limits limits{};
  std::size_t max_header_bytes = 16 * 1024;  ///< request header cap (431)
  /// Open TCP connections; beyond (when none can give its slot up): 503 and close.
  std::size_t max_connections = 256;
  std::size_t max_sessions = 128;  ///< live MCP sessions; beyond: 503 on initialize
  /// Requests of one session awaiting their answer (not the GET stream, which is one at most,
  /// nor answered requests); beyond: 429. Agents run 16 or 64 tool calls in parallel.
  std::size_t max_requests_per_session = 64;
  std::size_t replay_events = 1024;     ///< SSE events kept per session for Last-Event-ID
  std::size_t replay_bytes = 8u << 20;  ///< bytes of those events
  std::size_t backlog_messages = 256;   ///< messages held for the next GET when no stream is open
  std::chrono::milliseconds request_timeout{30000};  ///< reading a request, writing a chunk
  std::chrono::milliseconds idle_timeout{60000};     ///< keep-alive connection without a request
  /// A connection none of whose requests has yet carried a valid token (any request passes when
  /// no token is required) must send each request whole within this (at most idle_timeout).
  /// Such connections may hold three quarters of max_connections, and give their slots up to
  /// newcomers, oldest first: connections that never authenticate cannot lock a client out.
  std::chrono::milliseconds unauthenticated_timeout{5000};
  std::chrono::milliseconds keepalive_interval{15000};  ///< SSE comment on a quiet stream
  /// A session without requests and without open streams for this long ends; 0 = never.
  std::chrono::milliseconds session_idle_timeout{3600000};
  /// close(): how long connections still writing a response get to finish it.
  std::chrono::milliseconds shutdown_grace{1000};
  /// The Mcp-Param-* headers a 2026-07-28 tools/call of a tool must carry (its x-mcp-header
  /// annotations), checked against the arguments; null = none. Unset: nothing is checked.
  std::function<std::shared_ptr<const std::vector<mcp::param_header>>(std::string_view tool)>
      tool_param_headers{};
  /// Whether /mcp/NAME names a profile; unset: only /mcp is served.
  std::function<bool(std::string_view name)> profile_known{};
  /// false: the web side alone (the dashboard without [daemon] http): /mcp, /status and
  /// /metrics answer 404.
  bool serve_mcp = true;
  /// The web side (every other path); unset: 404.
  web_handler web{};
  /// How often an event stream of the web side is asked for news.
  std::chrono::milliseconds event_interval{250};
};

/// A running endpoint.
class http_endpoint {
 public:
  virtual ~http_endpoint() = default;
  /// Stops accepting and ends every MCP session (their transports report on_closed). Idle
  /// connections close at once; the others first finish their response (requests in flight are
  /// answered with an error, SSE streams end with their last chunk), for at most
  /// shutdown_grace. Idempotent.
  virtual void close() = 0;
  /// True after close() while connections are still finishing (the io_context must run on).
  virtual bool draining() const = 0;
  /// The bound port (useful with port 0).
  virtual unsigned short port() const = 0;
};

/// Called with the transport of each new MCP session (the daemon starts a core session on it),
/// the profile its path named (/mcp/NAME; "" for /mcp) and the name of the bearer token its
/// request carried ("" when none).
using http_session_handler = std::function<void(std::shared_ptr<transport>,
                                                std::string_view profile, std::string_view token)>;
/// Returns a document the endpoint serves: the serialized status JSON (the result of
/// `mcpmux/status`), the Prometheus text.
using http_text_source = std::function<std::string()>;

/// Binds and starts serving. GET /status serves `status_json`; GET /metrics serves
/// `metrics_text` (text exposition format 0.0.4), or answers 404 when it is empty. Fails when
/// the address is invalid, not loopback (without allow_remote), cannot be bound, or the token
/// file is unusable.
result<std::shared_ptr<http_endpoint>> start_http_endpoint(boost::asio::io_context& io,
                                                           http_endpoint_options options,
                                                           http_session_handler on_session,
                                                           http_text_source status_json,
                                                           http_text_source metrics_text);

}  // namespace mcpmux
