// Private to the HTTP endpoint (server side): the classes whose jobs are spread over
//   http_endpoint.cpp          the listener: bind, accept loop, connection limits, reading
//                              requests, routing, graceful shutdown
//   http_endpoint_mcp.cpp      /mcp: POST, GET, DELETE, writing JSON and SSE answers, sessions
//                              (creation, idle sweep)
//   http_endpoint_session.cpp  one MCP session's transport: its streams, SSE framing, the replay
//                              ring for Last-Event-ID, the backlog for the next GET
//   http_access.cpp            Host, Origin and bearer token checks (no Beast)
// Asio and Beast stay in here, http_asio.hpp and those files: core sees only transport.hpp.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/log.hpp"
#include "protocol/json_rpc.hpp"
#include "transports/http_access.hpp"
#include "transports/http_asio.hpp"
#include "transports/http_endpoint.hpp"

namespace mcpmux::http_server {

using namespace http_asio;
using steady_clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// The SDKs' generic "server error" for HTTP-level refusals.
inline constexpr int http_error_code = -32000;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

inline std::string_view sv(beast::string_view s) {
  return {s.data(), s.size()};
}

/// The HTTP status of a 2026-07-28 answer: 404 for an unknown method, 400 for the protocol's
/// own refusals (-32020…-32022), else 200.
http::status modern_status(std::string_view json_reply);
response make_response(http::status s, bool keep_alive, std::string body = {},
                       std::string_view content_type = "application/json");
/// An HTTP error whose body is a JSON-RPC error without id, as the spec suggests.
response error_response(http::status s, bool keep_alive, int code, std::string_view text);

/// One SSE stream of a session: a POST awaiting its answer (JSON until something else has to go
/// there first), or the GET stream. Written by at most one connection (`owner`) at a time.
struct stream {
  explicit stream(asio::any_io_executor ex) : wake(std::move(ex)) {}
  std::uint64_t no = 0;
  bool is_get = false;
  json::value id;            // POST: the request id it answers
  std::string id_key;        // POST: serialized id
  std::string progress_key;  // POST: serialized _meta.progressToken; "" = none
  bool priming = false;      // send an id-only event when the stream opens
  bool modern = false;       // a 2026-07-28 request: HTTP status by the answer's error code
  std::optional<std::string> json_reply;
  bool sse = false;                // the response is text/event-stream
  std::deque<std::string> frames;  // SSE frames not yet written
  std::size_t frame_bytes = 0;
  std::uint64_t next_seq = 1;
  bool finished = false;    // nothing more comes after the queued frames
  std::uint64_t owner = 0;  // connection writing it; 0 = nobody (client gone)
  asio::steady_timer wake;  // cancelled to wake the writer
  void notify() { wake.cancel(); }
};
using stream_ptr = std::shared_ptr<stream>;

/// The transport of one MCP session: routes mcpmux's messages to the client's open streams.
class http_session final : public transport, public std::enable_shared_from_this<http_session> {
 public:
  http_session(asio::io_context& io, std::string id, const http_endpoint_options& opt,
               std::function<void(const std::string&)> forget);

  // ---- transport (the core session's side) --------------------------------------------------
  void start(transport_events& events) override { events_ = &events; }
  std::error_code send(std::string text) override;
  void close() override;
  std::size_t queued_bytes() const override;

  // ---- the endpoint's side ------------------------------------------------------------------
  const std::string& id() const { return id_; }
  /// The profile of the path it was created on (/mcp/NAME): its requests must keep to it.
  const std::string& profile() const { return profile_; }
  void set_profile(std::string_view p) { profile_ = p; }
  bool started() const { return events_ != nullptr; }
  void touch() { last_active_ = steady_clock::now(); }
  steady_clock::time_point last_active() const { return last_active_; }

  /// Requests awaiting their answer.
  std::size_t open_requests() const { return order_.size(); }
  /// Requests awaiting their answer or an attached GET stream: the session is in use.
  bool in_use() const { return !order_.empty() || live_get(); }
  bool get_attached() const { return live_get() != nullptr; }
  bool pending(const std::string& key) const { return posts_.count(key) != 0; }

  /// Hands a client message (parsed by the endpoint) to the core session. Returns the id-less
  /// error it answered at once, if any (a message it could not accept); an error for
  /// `for_request` is its answer instead.
  std::optional<std::string> receive(message&& msg, std::string_view body, stream_ptr for_request);
  /// Registers the POSTed request `msg` (its id serialized: `key`) whose answer `owner` will
  /// write; its progress (by _meta.progressToken) goes on the same stream.
  stream_ptr open_post(const message& msg, std::string key, bool priming, std::uint64_t owner);
  /// A new GET stream; messages held for it are queued at once.
  stream_ptr open_get(std::uint64_t owner, bool priming);
  /// Resumes the stream named by a Last-Event-ID: replays what followed that event and
  /// continues the stream if it is still open. Null when the id names no stream we know.
  stream_ptr resume(std::string_view last_event_id, std::uint64_t owner);
  /// The writer of `st` went away (client gone, stream done): later events of a still open
  /// stream are kept for replay only.
  void detach(const stream_ptr& st, std::uint64_t owner);
  /// Ends the session from the HTTP side (DELETE, idle, shutdown): the core session hears
  /// on_closed.
  void terminate(std::string reason);

 private:
  struct replay_event {
    std::uint64_t stream;
    std::uint64_t seq;
    std::string frame;
  };

  stream_ptr live_get() const { return get_ && get_->owner && !get_->finished ? get_ : nullptr; }
  stream_ptr latest_post() const;
  stream_ptr progress_owner(const json::object& msg) const;
  std::error_code respond(const json::value& id, std::string text);
  void start_sse(stream& st);
  std::error_code push_event(stream& st, std::string_view text);
  void remember(std::uint64_t no, std::uint64_t seq, const std::string& frame);
  std::error_code hold(std::string text);
  void flush_backlog();
  void shutdown(std::string_view reason);

  asio::io_context& io_;
  std::string id_;
  std::string profile_;
  http_endpoint_options opt_;
  logger log_;
  std::function<void(const std::string&)> forget_;
  transport_events* events_ = nullptr;
  bool closed_ = false;
  steady_clock::time_point last_active_ = steady_clock::now();
  std::uint64_t next_stream_ = 1;
  std::unordered_map<std::string, stream_ptr> posts_;  // by serialized request id
  std::vector<stream_ptr> order_;                      // the same, oldest first
  stream_ptr get_;
  std::deque<std::string> backlog_;  // for the next GET
  message_parser scanner_;           // finds the id of a response without a DOM
  std::size_t backlog_bytes_ = 0;
  bool backlog_warned_ = false;
  std::deque<replay_event> ring_;
  std::size_t ring_bytes_ = 0;
  bool capturing_ = false;
  stream_ptr capture_stream_;
  std::optional<std::string> captured_;
};

/// One accepted TCP connection.
struct connection {
  explicit connection(tcp::socket s) : stream(std::move(s)) {}
  beast::tcp_stream stream;
  beast::flat_buffer buf;
  std::uint64_t id = 0;
  bool peer_gone = false;
  bool idle = false;     // waiting for the next request
  bool reading = false;  // reading a request (header or body), not yet answering it
  /// A request of it carried a valid token (or passed when none is required): from then on the
  /// long timeouts apply, and it never gives its slot up to a newcomer (make_room).
  bool authenticated = false;
  bool watching = false;
  bool write_at_once = false;   // the socket is non-blocking: reply() writes what fits at once
  std::uint64_t watch_gen = 0;  // tells a stale watcher's completion from the current one
  stream_ptr current;           // the SSE/JSON stream being written
};
using conn_ptr = std::shared_ptr<connection>;

class endpoint_impl final : public http_endpoint,
                            public std::enable_shared_from_this<endpoint_impl> {
 public:
  endpoint_impl(asio::io_context& io, http_endpoint_options opt, http_session_handler on_session,
                http_text_source status, http_text_source metrics);

  /// Validates the settings, reads the token and binds, or fails saying what is wrong.
  result<> open();
  void run();
  void close() override;
  bool draining() const override { return closed_ && !grace_over_ && !conns_.empty(); }
  unsigned short port() const override { return port_; }

 private:
  template <class Awaitable>
  void spawn(Awaitable&& a) {
    asio::co_spawn(io_, std::forward<Awaitable>(a), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        logger("http").error("internal error: {}", x.what());
      }
    });
  }

  // ---- the listener and its connections (http_endpoint.cpp) ---------------------------------
  static void abort(connection& c);
  awaitable<void> accept_loop();
  bool make_room();
  awaitable<void> refuse(tcp::socket sock);
  awaitable<void> serve(conn_ptr c);
  awaitable<void> drain(connection& c);
  response too_large() const;
  awaitable<bool> reply(connection& c, response res);
  std::optional<response> check_access(const http::request_header<>& h, bool token_needed) const;
  bool authenticates(const http::request_header<>& h) const;
  awaitable<bool> dispatch(conn_ptr c, request& req);
  /// True for the paths the endpoint serves itself (the others go to the web side).
  bool own_path(std::string_view target) const;

  // ---- the web side: pages and event streams (http_endpoint_web.cpp) -------------------------
  awaitable<bool> handle_web(conn_ptr c, request& req);
  awaitable<bool> run_events(conn_ptr c, std::function<std::string()> events,
                             std::vector<std::pair<std::string, std::string>> headers, bool ka);

  // ---- /mcp (http_endpoint_mcp.cpp) ---------------------------------------------------------
  std::variant<std::shared_ptr<http_session>, response> find_session(const request& req) const;
  std::optional<response> check_version(const request& req, const json::value& id = nullptr) const;
  awaitable<bool> handle_post(conn_ptr c, request& req);
  awaitable<bool> handle_get(conn_ptr c, request& req);
  awaitable<bool> handle_delete(conn_ptr c, request& req);
  std::shared_ptr<http_session> create_session(std::string_view profile, std::string_view token);
  /// The profile a request's path names: /mcp/NAME → NAME, /mcp → "".
  static std::string_view profile_of(const request& req);
  // ---- /mcp in the 2026-07-28 era (http_endpoint_modern.cpp) ---------------------------------
  /// True when a POST is of the modern era (its MCP-Protocol-Version, or its body's _meta).
  static bool modern_post(const request& req, const message& msg);
  awaitable<bool> handle_modern_post(conn_ptr c, request& req, message msg);
  static void watch_peer(const conn_ptr& c);
  awaitable<bool> write_chunk(connection& c, std::string_view data);
  awaitable<bool> run_stream(conn_ptr c, std::shared_ptr<http_session> s, stream_ptr st,
                             std::string session_header, bool ka);
  void schedule_sweep();

  asio::io_context& io_;
  http_endpoint_options opt_;
  http_session_handler on_session_;
  http_text_source status_;
  http_text_source metrics_;
  logger log_{"http"};
  http_access access_;
  message_parser parser_;  ///< reads every POSTed body once; the session takes the result
  tcp::acceptor acceptor_;
  asio::steady_timer sweep_;
  asio::steady_timer grace_;  // close(): ends the wait for busy connections
  unsigned short port_ = 0;
  std::unordered_map<std::string, std::shared_ptr<http_session>> sessions_;
  std::unordered_map<std::uint64_t, conn_ptr> conns_;
  std::uint64_t next_conn_ = 1;
  bool closed_ = false;
  bool grace_over_ = false;
};

}  // namespace mcpmux::http_server
