// The Streamable HTTP endpoint's listener (server side, Beast): binds, accepts within the
// connection limit, reads each request within its limits (header, body, time), checks access,
// routes (/mcp, GET /status, GET /metrics) and shuts down gracefully. /mcp itself is in
// http_endpoint_mcp.cpp; the rest of the map is in http_endpoint_detail.hpp.
#include "transports/http_endpoint.hpp"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/write.hpp>
#include <limits>

#include "transports/http_endpoint_detail.hpp"
#include "transports/http_text.hpp"

namespace mcpmux {
namespace http_server {
namespace {
constexpr auto refuse_budget = 1s;
}

response make_response(http::status s, bool keep_alive, std::string body,
                       std::string_view content_type) {
  response res{s, 11};
  if (!body.empty()) res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

response error_response(http::status s, bool keep_alive, int code, std::string_view text) {
  return make_response(s, keep_alive, make_error(nullptr, code, text));
}

endpoint_impl::endpoint_impl(asio::io_context& io, http_endpoint_options opt,
                             http_session_handler on_session, http_text_source status,
                             http_text_source metrics)
    : io_(io),
      opt_(std::move(opt)),
      on_session_(std::move(on_session)),
      status_(std::move(status)),
      metrics_(std::move(metrics)),
      access_(!opt_.allow_remote),
      acceptor_(io),
      sweep_(io),
      grace_(io) {}

result<> endpoint_impl::open() {
  const auto& a = opt_.address;
  const auto split = split_host_port(a);
  if (!split) return failure("daemon.http \"" + a + "\": expected HOST:PORT");
  const auto& host = split->host;
  const auto port = split->port;
  error_code ec;
  const auto addr = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) return failure("daemon.http \"" + a + "\": host must be localhost or an IP address");
  if (!addr.is_loopback()) {
    if (!opt_.allow_remote)
      return failure("daemon.http \"" + a +
                     "\" is not a loopback address; refusing to serve MCP to other machines (set "
                     "daemon.http_allow_remote = true to allow it, with http_token_file)");
    log_.warn("HTTP endpoint on the non-loopback address {}: REACHABLE FROM OTHER MACHINES", a);
    if (opt_.token_file.empty())
      log_.warn("HTTP endpoint on {} has NO TOKEN: anyone who can reach it can call every tool", a);
  }
  if (!opt_.token_file.empty()) {
    if (auto read = access_.read_token_file(opt_.token_file); !read) return read;
    for (const auto& [name, token] : opt_.named_tokens) access_.add_token(name, token);
  }
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  acceptor_.open(ep.protocol(), ec);
  if (!ec) ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && addr.is_v6()) acceptor_.set_option(asio::ip::v6_only(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return failure("cannot listen on " + a + " (daemon.http): " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  const bool other_v4 = addr.is_loopback() && addr.is_v4() && addr.to_string() != "127.0.0.1";
  access_.allow_hosts(port_, other_v4 ? addr.to_string() : std::string());
  if (opt_.serve_mcp)  // (the daemon says where the page alone is)
    log_.info("Streamable HTTP endpoint on http://{}:{}/mcp{}",
              addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string(), port_,
              access_.token_required() ? " (bearer token required)" : "");
  return {};
}

void endpoint_impl::run() {
  spawn(accept_loop());
  schedule_sweep();
}

void endpoint_impl::close() {
  if (closed_) return;
  closed_ = true;
  auto self = shared_from_this();
  error_code ignored;
  acceptor_.close(ignored);
  sweep_.cancel();
  auto sessions = std::move(sessions_);
  sessions_.clear();
  for (auto& [id, s] : sessions) s->terminate("daemon stopping");
  // Every stream now holds its last message (an error answer to a request in flight) and is
  // finished: their writers send it and close. Idle connections close now.
  for (auto& [id, c] : conns_)
    if (c->idle) abort(*c);
  if (conns_.empty()) return;
  grace_.expires_after(opt_.shutdown_grace);
  grace_.async_wait([weak = weak_from_this()](error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    self->grace_over_ = true;
    if (!self->conns_.empty())
      self->log_.debug("closing {} connections still busy at shutdown", self->conns_.size());
    for (auto& [id, c] : self->conns_) abort(*c);
  });
}

void endpoint_impl::abort(connection& c) {
  c.peer_gone = true;
  if (c.current) c.current->notify();
  error_code ignored;
  c.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  c.stream.close();
}

// ---- accepting ----------------------------------------------------------------------------

awaitable<void> endpoint_impl::accept_loop() {
  auto self = shared_from_this();
  for (;;) {
    auto [ec, sock] = co_await acceptor_.async_accept(use_tuple);
    if (closed_ || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      log_.warn("accept failed: {}", ec.message());
      asio::steady_timer pause(io_);  // out of descriptors: do not spin
      pause.expires_after(100ms);
      co_await pause.async_wait(use_tuple);
      continue;
    }
    ::fcntl(sock.native_handle(), F_SETFD, FD_CLOEXEC);
    if (!make_room()) {
      spawn(refuse(std::move(sock)));
      continue;
    }
    auto c = std::make_shared<connection>(std::move(sock));
    c->id = next_conn_++;
    error_code nb;
    c->stream.socket().non_blocking(true, nb);  // reply() writes at once what fits
    c->write_at_once = !nb;
    conns_.emplace(c->id, c);
    spawn(serve(c));
  }
}

// Room for one more connection. Those that have not authenticated may hold three quarters of the
// slots; beyond that, or when every slot is taken, the oldest of them still reading a request
// gives its slot up: a crowd of slow connections that never send a token cannot keep out a client
// that does (it is the newest, so the last to go). False when every slot is held by an
// authenticated connection or one being answered.
bool endpoint_impl::make_room() {
  const std::size_t share = opt_.max_connections - opt_.max_connections / 4;
  std::size_t unauthenticated = 0;
  connection* oldest = nullptr;
  for (const auto& [id, c] : conns_) {
    if (c->authenticated) continue;
    ++unauthenticated;
    if (c->reading && (!oldest || c->id < oldest->id)) oldest = c.get();
  }
  if (conns_.size() < opt_.max_connections && unauthenticated < share) return true;
  if (!oldest) return conns_.size() < opt_.max_connections;
  log_.debug("closing a connection that has not authenticated, to make room for a new one");
  auto evicted = conns_.at(oldest->id);  // its own coroutine ends once it sees the close
  conns_.erase(evicted->id);
  abort(*evicted);
  return true;
}

awaitable<void> endpoint_impl::refuse(tcp::socket sock) {
  auto self = shared_from_this();
  beast::tcp_stream s(std::move(sock));
  s.expires_after(refuse_budget);
  auto res = error_response(http::status::service_unavailable, false, http_error_code,
                            "Service Unavailable: too many connections");
  res.set(http::field::retry_after, "1");
  co_await http::async_write(s, res, use_tuple);
  error_code ignored;
  s.socket().shutdown(tcp::socket::shutdown_both, ignored);
  s.close();
}

// ---- one connection -----------------------------------------------------------------------

awaitable<void> endpoint_impl::serve(conn_ptr c) {
  auto self = shared_from_this();
  bool linger = false;  // refused before its body was read: let the client see the answer
  for (;;) {
    if (closed_) break;
    http::request_parser<http::string_body> p;
    p.header_limit(static_cast<std::uint32_t>(
        std::min<std::size_t>(opt_.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    p.body_limit(opt_.limits.max_message_bytes);
    // Until a connection authenticates, a whole request (header and body) must come within
    // seconds: slow connections that never send a token do not hold a slot for a minute.
    c->stream.expires_after(c->authenticated
                                ? opt_.idle_timeout
                                : std::min(opt_.idle_timeout, opt_.unauthenticated_timeout));
    c->idle = c->reading = true;
    auto [ec, n] = co_await http::async_read_header(c->stream, c->buf, p, use_tuple);
    (void)n;
    c->idle = false;
    if (ec) {
      linger = true;
      if (ec == http::error::header_limit)
        co_await reply(*c, error_response(http::status::request_header_fields_too_large, false,
                                          http_error_code, "Request Header Fields Too Large"));
      else if (ec == http::error::body_limit)
        co_await reply(*c, too_large());
      else if (ec.category() == beast::http::make_error_code(http::error::bad_target).category() &&
               ec != http::error::end_of_stream && ec != http::error::partial_message)
        co_await reply(*c, error_response(http::status::bad_request, false, http_error_code,
                                          "Bad Request: malformed HTTP"));
      break;
    }
    if (auto name = repeated_header(p.get()); !name.empty()) {
      co_await reply(*c,
                     error_response(http::status::bad_request, false, http_error_code,
                                    "Bad Request: more than one " + std::string(name) + " header"));
      linger = true;
      break;
    }
    if (c->authenticated) c->stream.expires_after(opt_.request_timeout);
    if (auto refusal = check_access(p.get(), own_path(sv(p.get().target())))) {
      co_await reply(*c, std::move(*refusal));
      linger = true;
      break;
    }
    if (!p.is_done()) {
      if (lower(sv(p.get()[http::field::expect])) == "100-continue") {
        static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [wec, wn] = co_await asio::async_write(c->stream, asio::buffer(cont), use_tuple);
        (void)wn;
        if (wec) break;
      }
      auto [bec, bn] = co_await http::async_read(c->stream, c->buf, p, use_tuple);
      (void)bn;
      if (bec == http::error::body_limit) {
        co_await reply(*c, too_large());
        linger = true;
        break;
      }
      if (bec) break;
    }
    c->reading = false;
    c->authenticated = c->authenticated || authenticates(p.get());
    auto req = p.release();
    const bool again = co_await dispatch(c, req);
    if (!again || closed_) break;
  }
  c->watching = false;
  error_code ignored;
  c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (linger && !closed_ && c->stream.socket().is_open()) co_await drain(*c);
  c->stream.close();
  conns_.erase(c->id);
  if (closed_ && conns_.empty()) grace_.cancel();
}

// Reads and discards what the client still sends (bounded in time and bytes), so that closing
// with unread data does not reset the connection before the client reads our answer.
awaitable<void> endpoint_impl::drain(connection& c) {
  std::array<char, 16384> buf;
  std::size_t total = 0;
  c.stream.expires_after(refuse_budget);
  for (;;) {
    auto [ec, n] = co_await c.stream.async_read_some(asio::buffer(buf), use_tuple);
    total += n;
    if (ec || total > opt_.limits.max_message_bytes + buf.size()) break;
  }
}

response endpoint_impl::too_large() const {
  return error_response(http::status::payload_too_large, false, http_error_code,
                        "Payload Too Large: a message may have at most " +
                            std::to_string(opt_.limits.max_message_bytes) + " bytes");
}

// Writes a whole response; true when it went out and the connection may serve another. Most
// answers fit in the socket's send buffer: they go out at once (the socket is non-blocking),
// without a trip through the loop; what does not is written asynchronously.
awaitable<bool> endpoint_impl::reply(connection& c, response res) {
  const bool keep = res.keep_alive();
  http::response_serializer<http::string_body> sr{res};
  error_code ec = asio::error::would_block;
  if (c.write_at_once) http::write(c.stream.socket(), sr, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    c.stream.expires_after(opt_.request_timeout);
    auto [aec, n] = co_await http::async_write(c.stream, sr, use_tuple);
    (void)n;
    ec = aec;
  }
  co_return !ec && keep;
}

// DNS-rebinding protection (Host, Origin) and the optional bearer token (http_access).
bool endpoint_impl::own_path(std::string_view target) const {
  const auto path = target.substr(0, target.find('?'));
  return !opt_.web || path == "/mcp" || path.starts_with("/mcp/") || path == "/status" ||
         path == "/metrics";
}

std::optional<response> endpoint_impl::check_access(const http::request_header<>& h,
                                                    bool token_needed) const {
  std::optional<std::string_view> origin;
  if (auto it = h.find(http::field::origin); it != h.end()) origin = sv(it->value());
  auto refusal = access_.check(sv(h[http::field::host]), origin, sv(h[http::field::authorization]),
                               token_needed);
  if (!refusal) return std::nullopt;
  auto res = error_response(static_cast<http::status>(refusal->status), false, http_error_code,
                            refusal->text);
  if (refusal->bearer_challenge) res.set(http::field::www_authenticate, "Bearer realm=\"mcpmux\"");
  return res;
}

// True when a request that passed check_access makes its connection an authenticated one: it
// carries a valid token, or the endpoint requires none. (A browser's dashboard requests come with
// a cookie, which only the web handler reads: their connections keep the short timeout.)
bool endpoint_impl::authenticates(const http::request_header<>& h) const {
  return !access_.token_required() ||
         !access_.token_name(sv(h[http::field::authorization])).empty();
}

std::string_view endpoint_impl::profile_of(const request& req) {
  const auto target = sv(req.target());
  const auto path = target.substr(0, target.find('?'));
  return path.size() > 5 ? path.substr(5) : std::string_view();
}

awaitable<bool> endpoint_impl::dispatch(conn_ptr c, request& req) {
  if (closed_)  // its body came in after close()
    co_return co_await reply(
        *c, error_response(http::status::service_unavailable, false, http_error_code,
                           "Service Unavailable: mcpmuxd is stopping"));
  const bool ka = req.keep_alive();
  const auto target = sv(req.target());
  const auto path = target.substr(0, target.find('?'));
  const auto method = req.method();
  if (!opt_.serve_mcp && own_path(target))
    co_return co_await reply(
        *c, error_response(http::status::not_found, ka, http_error_code,
                           "Not Found: this is the dashboard's page alone; MCP over HTTP needs "
                           "[daemon] http in the config"));
  if (path == "/mcp" || path.substr(0, 5) == "/mcp/") {
    if (const auto profile = path.substr(std::min<std::size_t>(path.size(), 5)); !profile.empty())
      if (!opt_.profile_known || !opt_.profile_known(profile))
        co_return co_await reply(
            *c, error_response(http::status::not_found, ka, http_error_code,
                               "Not Found: no profile named \"" + clip(profile, 64) + "\""));
    if (method == http::verb::post) co_return co_await handle_post(c, req);
    if (method == http::verb::get) co_return co_await handle_get(c, req);
    if (method == http::verb::delete_) co_return co_await handle_delete(c, req);
    auto res =
        error_response(http::status::method_not_allowed, ka, http_error_code, "Method Not Allowed");
    res.set(http::field::allow, "GET, POST, DELETE");
    co_return co_await reply(*c, std::move(res));
  }
  if (path == "/status" || (path == "/metrics" && metrics_)) {  // no source: no /metrics
    if (method != http::verb::get) {
      auto res = error_response(http::status::method_not_allowed, ka, http_error_code,
                                "Method Not Allowed");
      res.set(http::field::allow, "GET");
      co_return co_await reply(*c, std::move(res));
    }
    if (path == "/status")
      co_return co_await reply(*c, make_response(http::status::ok, ka, status_()));
    co_return co_await reply(*c, make_response(http::status::ok, ka, metrics_(),
                                               "text/plain; version=0.0.4; charset=utf-8"));
  }
  if (!own_path(target)) co_return co_await handle_web(c, req);
  co_return co_await reply(
      *c, error_response(http::status::not_found, ka, http_error_code, "Not Found"));
}

}  // namespace http_server

result<std::shared_ptr<http_endpoint>> start_http_endpoint(boost::asio::io_context& io,
                                                           http_endpoint_options options,
                                                           http_session_handler on_session,
                                                           http_text_source status_json,
                                                           http_text_source metrics_text) {
  auto ep =
      std::make_shared<http_server::endpoint_impl>(io, std::move(options), std::move(on_session),
                                                   std::move(status_json), std::move(metrics_text));
  if (auto opened = ep->open(); !opened) return std::move(opened.error());
  ep->run();
  return std::shared_ptr<http_endpoint>(std::move(ep));
}

}  // namespace mcpmux
