// Private to the HTTP client (Streamable HTTP and legacy HTTP+SSE): the transport class whose
// jobs are spread over
//   http_transport.cpp        the transport itself: the outgoing queue, events, SSE event reading
//   http_connection_pool.cpp  connections: keep-alive pool, resolve/connect/TLS, request/header I/O
//   http_streamable.cpp       Streamable HTTP: POST and its reply, session id, GET listener,
//                             resume with Last-Event-ID, DELETE
//   http_legacy_sse.cpp       legacy HTTP+SSE: the GET stream and its endpoint event
//   http_token.cpp            token_command (a bearer_source)
// with the pure parts beside them: http_reply_policy (what a POST's reply means), http_text.
// Asio and Beast stay in here, http_asio.hpp and those files: core sees only transport.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "protocol/error.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/result.hpp"
#include "protocol/sse_parser.hpp"
#include "transports/http_asio.hpp"
#include "transports/http_reply_policy.hpp"
#include "transports/http_transport.hpp"

namespace mcpmux::http_client {

using namespace http_asio;
namespace ssl = asio::ssl;
using namespace std::chrono_literals;

inline constexpr std::size_t chunk_size = 16 * 1024;
inline constexpr std::size_t error_body_cap = 4096;  // what we keep of a non-OK body
inline constexpr std::size_t error_text_cap = 200;   // what of it goes into an error message

using response_parser = http::response_parser<http::buffer_body>;
using request = http::request<http::string_body>;

/// Where requests go: one origin per transport (the legacy endpoint must share it).
struct origin {
  bool tls = false;
  std::string scheme;
  std::string host;         // for DNS, SNI and certificate checks (no brackets)
  std::string port;         // effective port
  std::string host_header;  // Host: as written in the URL
  std::string target;       // path and query
};

/// The origin of an absolute http(s) URL, or why it is not one.
result<origin> parse_origin(std::string_view text);

/// True when `host` is an IP address literal (no SNI is sent for those).
bool is_ip_literal(const std::string& host);

/// A TLS client context that verifies peers against the system's CAs and `ca_file` (if any);
/// fails when OpenSSL or the file cannot be loaded.
result<std::unique_ptr<ssl::context>> client_tls_context(const std::string& ca_file);

/// A request id as text: a string as it is, a number in JSON.
inline std::string id_text(const json::value& id) {
  if (const auto* s = id.if_string()) return std::string(*s);
  return json::serialize(id);
}

/// What a POST carries, as core told it (outgoing_info).
struct outgoing {
  json::value id;        // null unless a request
  std::string method;    // empty for responses
  bool request = false;  // has method and id: someone waits for an answer
  bool notification = false;
  // A 2026-07-28 request (its _meta names the version): stateless, with the era's headers.
  std::string version;              // MCP-Protocol-Version; "" for the legacy era
  std::optional<std::string> name;  // Mcp-Name, for the methods that name a target
  std::vector<std::pair<std::string, std::string>> params;  // Mcp-Param-* fields
  std::string cancels;  // notifications/cancelled: the id (as text) of the request it cancels
  bool modern() const { return !version.empty(); }
  // subscriptions/listen: its stream stays open, unbounded by the timeout and the pool's count
  bool listen() const { return method == "subscriptions/listen"; }
};

/// One HTTP/1.1 connection, plain or TLS.
struct connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buf;
  std::chrono::steady_clock::time_point idle_since;  // when it went back to the pool
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  void abort() {
    error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }
};
using conn_ptr = std::shared_ptr<connection>;

/// How a stream of events relates to a waiting request.
struct stream_ctx {
  explicit stream_ctx(std::size_t cap) : parser(cap) {}
  sse_parser parser;
  json::value want;  // the id whose answer is awaited on this stream; null for none
  bool answered = false;
  bool got_event = false;
};

enum class stream_role { post, listener, legacy };

class http_transport final : public transport, public std::enable_shared_from_this<http_transport> {
 public:
  http_transport(asio::io_context& io, http_transport_options opt);

  // ---- transport (http_transport.cpp, on_initialized in http_streamable.cpp) ----------------
  void start(transport_events& events) override;
  std::error_code send(std::string message) override;
  bool reads_descriptions() const override { return true; }
  std::error_code send_described(std::string message, outgoing_info info) override;
  void close() override;
  std::size_t queued_bytes() const override { return queued_; }
  void on_initialized(std::string protocol_version, std::chrono::milliseconds max_wait,
                      std::function<void()> done) override;

 private:
  bool legacy() const { return opt_.type == http_transport_options::kind::legacy_sse; }

  // The completion handler holds the transport: a coroutine starts a loop turn after co_spawn,
  // by which time its owner may have dropped the transport (a failure reported by fail_later).
  template <class Awaitable>
  void spawn(Awaitable&& a) {
    asio::co_spawn(io_, std::forward<Awaitable>(a),
                   [self = shared_from_this(), name = log_.name()](std::exception_ptr e) {
                     if (!e) return;
                     try {
                       std::rethrow_exception(e);
                     } catch (const std::exception& x) {
                       logger(name).error("internal error: {}", x.what());
                     }
                   });
  }

  // ---- events (http_transport.cpp) ----------------------------------------------------------
  void deliver(std::string_view text);
  void deliver_error(const json::value& id, const std::string& msg);
  void oversize(std::size_t bytes);
  void fail(std::string reason, errc why = errc::transport_closed);
  void fail_later(std::string reason);
  void listener_ready();

  // ---- the outgoing queue (http_transport.cpp) ----------------------------------------------
  void pump();
  awaitable<void> run_post(std::string text, outgoing out);

  // ---- event streams (http_transport.cpp) ---------------------------------------------------
  awaitable<error_code> read_events(connection& c, response_parser& p, stream_ctx& ctx,
                                    stream_role role, bool timed);
  void on_stream_event(sse_event& ev, stream_ctx& ctx, stream_role role);

  // ---- connections (http_connection_pool.cpp) -----------------------------------------------
  void expire(connection& c, bool timed);
  void abort_all();
  // Keeps a connection in live_ while a coroutine uses it, so that close() can abort it.
  struct live_guard {
    http_transport* t;
    connection* c;
    live_guard(http_transport* tt, connection* cc) : t(tt), c(cc) { t->live_.insert(c); }
    ~live_guard() { t->live_.erase(t->live_.find(c)); }
    live_guard(const live_guard&) = delete;
    live_guard& operator=(const live_guard&) = delete;
  };
  // A connection, or why none could be made; null when the transport stopped meanwhile (closing,
  // failed, or no TLS context): whoever stopped it says why, so the caller reports nothing.
  awaitable<result<conn_ptr>> open_connection(conn_ptr* slot = nullptr,
                                              bool bypass_closing = false);
  void release(conn_ptr c, bool reusable);
  conn_ptr take_idle();
  request make_request(http::verb verb, const std::string& target, std::string body,
                       std::string_view accept, const std::string& last_event_id = {},
                       const outgoing* modern = nullptr);
  awaitable<error_code> round_trip(connection& c, request& req, response_parser& p,
                                   bool* written = nullptr);
  awaitable<std::pair<error_code, std::size_t>> read_some(connection& c, response_parser& p,
                                                          std::array<char, chunk_size>& chunk,
                                                          bool timed);
  awaitable<error_code> read_body(connection& c, response_parser& p, std::size_t cap,
                                  std::string& out, bool& over);

  // ---- POST and its reply, GET listener, resume, DELETE (http_streamable.cpp) ---------------
  awaitable<void> post_message(const std::string& text, const outgoing& out);
  bool cancel_modern(const std::string& id);
  bool cancelled(const outgoing& out) const;
  awaitable<std::string> finish_reply(conn_ptr c, response_parser& p);
  void io_failure(const outgoing& out, error_code ec, std::string_view what);
  void capture_session(const http::response_header<>& res);
  void on_http_error(const outgoing& out, post_step step, const http::response_header<>& res,
                     const std::string& body, const std::string& token_used);
  awaitable<void> post_json(conn_ptr c, response_parser& p, const outgoing& out);
  awaitable<void> post_stream(conn_ptr c, response_parser& p, const outgoing& out);
  awaitable<void> resume(stream_ctx& ctx, stream_role role);
  awaitable<void> run_listener();
  awaitable<void> send_delete();

  // ---- legacy HTTP+SSE (http_legacy_sse.cpp) ------------------------------------------------
  awaitable<void> run_legacy();
  void on_endpoint(const std::string& data);

  // ---- the bearer token (http_transport.cpp) -------------------------------------------------
  awaitable<bearer_verdict> bearer_now();
  awaitable<bearer_verdict> bearer_rejected(unsigned status, const std::string& used,
                                            const std::string& challenge);
  bool apply_verdict(const outgoing& out, const bearer_verdict& v);
  std::string refused_token(const std::string& token_used) const;

  asio::io_context& io_;
  http_transport_options opt_;
  logger log_;
  origin origin_;
  std::unique_ptr<ssl::context> tls_ctx_;
  transport_events* events_ = nullptr;
  std::deque<std::pair<std::string, outgoing>> queue_;
  std::size_t queued_ = 0;
  std::size_t active_posts_ = 0;
  std::vector<conn_ptr> idle_;
  std::multiset<connection*> live_;  // a pooled connection may be listed by two coroutines in turn
  // 2026-07-28 requests in flight, by id: closing its connection is how one is cancelled.
  struct in_flight {
    connection* conn = nullptr;
    bool cancelled = false;
  };
  std::map<std::string, in_flight> modern_in_flight_;
  std::string session_id_;
  std::string protocol_version_;
  std::string token_;
  std::string endpoint_target_;
  conn_ptr listener_conn_;
  std::function<void()> listener_done_;
  asio::steady_timer listener_timer_;
  asio::steady_timer endpoint_timer_;
  bool endpoint_known_ = false;
  bool listener_abandoned_ = false;
  bool barrier_ = false;
  bool closing_ = false;
  bool failed_ = false;
};

}  // namespace mcpmux::http_client
