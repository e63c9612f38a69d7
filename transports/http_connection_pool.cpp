// The HTTP client's connections: the origin, TLS settings, resolve/connect/handshake under the
// timeout, the keep-alive pool, and writing a request / reading a reply's header and body.
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>

#include <boost/url.hpp>

#include "protocol/param_headers.hpp"
#include "transports/http_client_detail.hpp"
#include "transports/http_text.hpp"
#include "transports/openssl_loader.hpp"

namespace mcpmux::http_client {
namespace {

namespace urls = boost::urls;

std::string target_of(const urls::url_view_base& u) {
  std::string t(u.encoded_path());
  if (t.empty()) t = "/";
  if (u.has_query()) t.append("?").append(u.encoded_query());
  return t;
}

}  // namespace

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

result<origin> parse_origin(std::string_view text) {
  auto r = urls::parse_uri(text);
  if (!r) return failure("invalid URL \"" + std::string(text) + "\": " + r.error().message());
  const auto& u = *r;
  origin o;
  o.scheme = lower(u.scheme());
  if (o.scheme != "http" && o.scheme != "https")
    return failure("unsupported URL scheme \"" + o.scheme + "\" (http or https expected)");
  o.tls = o.scheme == "https";
  if (u.host_type() == urls::host_type::ipv6)
    o.host = u.host_ipv6_address().to_string();
  else
    o.host = lower(u.host());
  if (o.host.empty()) return failure("URL \"" + std::string(text) + "\" has no host");
  o.port = u.has_port() ? std::string(u.port()) : (o.tls ? "443" : "80");
  o.host_header = std::string(u.encoded_host_and_port());
  o.target = target_of(u);
  return o;
}

result<std::unique_ptr<ssl::context>> client_tls_context(const std::string& ca_file) {
  if (auto loaded = load_openssl(); !loaded) return std::move(loaded.error());
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  error_code ec;
  ctx->set_default_verify_paths(ec);  // none: only ca_file's CAs are trusted
  if (!ca_file.empty()) {
    ctx->load_verify_file(ca_file, ec);
    if (ec) return failure("cannot load ca_file \"" + ca_file + "\": " + ec.message());
  }
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

void http_transport::expire(connection& c, bool timed) {
  if (timed && opt_.timeout.count() > 0)
    c.lowest().expires_after(opt_.timeout);
  else
    c.lowest().expires_never();
}

void http_transport::abort_all() {
  for (auto* c : live_) c->abort();
  for (auto& c : idle_) c->abort();
  idle_.clear();
}

// Resolves, connects and (for https) handshakes; each step bounded by the timeout.
awaitable<result<conn_ptr>> http_transport::open_connection(conn_ptr* slot, bool bypass_closing) {
  auto self = shared_from_this();
  if (origin_.tls && !tls_ctx_) co_return conn_ptr();  // start() failed; fail_later reports why
  auto c = std::make_shared<connection>();
  if (origin_.tls) {
    c->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io_, *tls_ctx_);
    if (!is_ip_literal(origin_.host))
      SSL_set_tlsext_host_name(c->tls->native_handle(), origin_.host.c_str());
    c->tls->set_verify_callback(ssl::host_name_verification(origin_.host));
  } else {
    c->plain = std::make_unique<beast::tcp_stream>(io_);
  }
  if (slot) *slot = c;
  live_guard guard(this, c.get());
  auto resolver = std::make_shared<tcp::resolver>(io_);
  auto timer = std::make_shared<asio::steady_timer>(io_);
  if (opt_.timeout.count() > 0) {
    timer->expires_after(opt_.timeout);
    timer->async_wait([resolver](error_code ec) {
      if (!ec) resolver->cancel();
    });
  }
  auto [rec, results] = co_await resolver->async_resolve(origin_.host, origin_.port, use_tuple);
  timer->cancel();
  const std::string where = origin_.host + ":" + origin_.port;
  if ((closing_ && !bypass_closing) || failed_) co_return conn_ptr();
  if (rec) {
    co_return failure(
        "cannot resolve " + origin_.host + ": " +
        (rec == asio::error::operation_aborted ? std::string("timed out") : rec.message()));
  }
  expire(*c, true);
  auto [cec, ep] = co_await c->lowest().async_connect(results, use_tuple);
  (void)ep;
  if ((closing_ && !bypass_closing) || failed_) co_return conn_ptr();
  if (cec) {
    co_return failure("cannot connect to " + where + ": " +
                      (cec == beast::error::timeout ? std::string("timed out") : cec.message()));
  }
  c->lowest().socket().set_option(tcp::no_delay(true), cec);
  if (c->tls) {
    expire(*c, true);
    auto [hec] = co_await c->tls->async_handshake(ssl::stream_base::client, use_tuple);
    if ((closing_ && !bypass_closing) || failed_) co_return conn_ptr();
    if (hec) {
      co_return failure("TLS handshake with " + where + " failed: " +
                        (hec == beast::error::timeout ? std::string("timed out") : hec.message()));
    }
  }
  co_return c;
}

void http_transport::release(conn_ptr c, bool reusable) {
  if (!c) return;
  if (reusable && !closing_ && !failed_ && idle_.size() < opt_.max_connections) {
    c->idle_since = std::chrono::steady_clock::now();
    idle_.push_back(std::move(c));
  } else {
    c->abort();
  }
}

// The most recently pooled connection still worth a request, or null. One idle longer than
// pool_idle is closed (servers close theirs after a few seconds, and the one that closes while
// our request is on its way cuts it), and so is one with something to read: idle, a server
// sends nothing but its close (EOF, a TLS close_notify, an error page before it hangs up).
// A request written in full is not sent again when its connection is cut, so this check is what
// keeps such a close from failing the call.
conn_ptr http_transport::take_idle() {
  const auto now = std::chrono::steady_clock::now();
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    char byte;
    const auto n = ::recv(c->lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool quiet = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    if (quiet && c->buf.size() == 0 && now - c->idle_since <= opt_.pool_idle) return c;
    log_.debug("a pooled connection was {}; not reused", quiet    ? "idle too long"
                                                         : n == 0 ? "closed by the server"
                                                                  : "not quiet");
    c->abort();
  }
  return nullptr;
}

// ---- requests and responses -----------------------------------------------------------------

request http_transport::make_request(http::verb verb, const std::string& target, std::string body,
                                     std::string_view accept, const std::string& last_event_id,
                                     const outgoing* modern) {
  request req{verb, target, 11};
  req.set(http::field::host, origin_.host_header);
  req.set(http::field::user_agent, "mcpmux/" MCPMUX_VERSION);
  req.set(http::field::accept, accept);
  for (const auto& [k, v] : opt_.headers) {
    if (!safe_header_value(k) || !safe_header_value(v)) continue;
    req.set(k, v);
  }
  if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
  if (modern) {  // 2026-07-28: no session; the version, method, target and header arguments
    req.set("MCP-Protocol-Version", modern->version);
    req.set("Mcp-Method", modern->method);
    if (modern->name) req.set("Mcp-Name", mcp::encode_header_value(*modern->name));
    for (const auto& [k, v] : modern->params) req.set(k, v);
  } else if (!legacy()) {
    if (!session_id_.empty()) req.set("Mcp-Session-Id", session_id_);
    if (!protocol_version_.empty()) req.set("MCP-Protocol-Version", protocol_version_);
  }
  if (!last_event_id.empty()) req.set("Last-Event-ID", last_event_id);
  if (verb == http::verb::post) req.set(http::field::content_type, "application/json");
  req.keep_alive(true);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

// Writes `req` and reads its reply's header into `p`, each under the timeout. The body is the
// caller's to read, with no limit from the parser. `*written` tells whether the request went out
// whole (a failure after that may have reached the server).
awaitable<error_code> http_transport::round_trip(connection& c, request& req, response_parser& p,
                                                 bool* written) {
  p.body_limit(boost::none);
  error_code ec;
  if (written) *written = false;
  expire(c, true);
  if (c.tls)
    std::tie(ec, std::ignore) = co_await http::async_write(*c.tls, req, use_tuple);
  else
    std::tie(ec, std::ignore) = co_await http::async_write(*c.plain, req, use_tuple);
  if (ec) co_return ec;
  if (written) *written = true;
  expire(c, true);
  if (c.tls)
    std::tie(ec, std::ignore) = co_await http::async_read_header(*c.tls, c.buf, p, use_tuple);
  else
    std::tie(ec, std::ignore) = co_await http::async_read_header(*c.plain, c.buf, p, use_tuple);
  co_return ec;
}

// Reads the next piece of body into `chunk`; returns the bytes read. Clean end: p.is_done().
awaitable<std::pair<error_code, std::size_t>> http_transport::read_some(
    connection& c, response_parser& p, std::array<char, chunk_size>& chunk, bool timed) {
  p.get().body().data = chunk.data();
  p.get().body().size = chunk.size();
  expire(c, timed);
  error_code ec;
  if (c.tls)
    std::tie(ec, std::ignore) = co_await http::async_read_some(*c.tls, c.buf, p, use_tuple);
  else
    std::tie(ec, std::ignore) = co_await http::async_read_some(*c.plain, c.buf, p, use_tuple);
  if (ec == http::error::need_buffer) ec = {};
  co_return std::pair{ec, chunk.size() - p.get().body().size};
}

// Reads the body up to `cap` bytes; `over` tells whether more was there (then the connection is
// not reusable).
awaitable<error_code> http_transport::read_body(connection& c, response_parser& p, std::size_t cap,
                                                std::string& out, bool& over) {
  over = false;
  if (auto len = p.content_length(); len && *len > cap) {
    over = true;
    co_return error_code{};
  }
  std::array<char, chunk_size> chunk;
  while (!p.is_done()) {
    auto [ec, n] = co_await read_some(c, p, chunk, true);
    if (out.size() + n > cap) {
      over = true;
      co_return error_code{};
    }
    out.append(chunk.data(), n);
    if (ec) co_return ec;
  }
  co_return error_code{};
}

}  // namespace mcpmux::http_client
