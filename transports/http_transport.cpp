// Streamable HTTP and legacy HTTP+SSE transports over Beast: POSTs, SSE streams, sessions, TLS.
#include "transports/http_transport.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url.hpp>
#include <deque>
#include <set>
#include <vector>

#include "core/protocol/error.hpp"
#include "core/protocol/json_rpc.hpp"
#include "core/protocol/log.hpp"
#include "core/protocol/sse_parser.hpp"
#include "transports/openssl_loader.hpp"
#include "transports/stdio_transport.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
namespace urls = boost::urls;
using tcp = asio::ip::tcp;
using asio::awaitable;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t chunk_size = 16 * 1024;
constexpr std::size_t error_body_cap = 4096;  // what we keep of a non-OK body
constexpr std::size_t error_text_cap = 200;   // what of it goes into an error message
constexpr std::size_t max_token_bytes = 64 * 1024;
constexpr std::size_t max_resume_attempts = 3;
constexpr std::size_t max_listener_failures = 2;
constexpr auto default_retry = 1000ms;
constexpr auto max_retry = 30s;
constexpr auto close_budget = 5s;  // DELETE on close when no timeout is configured

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

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string target_of(const urls::url_view_base& u) {
  std::string t(u.encoded_path());
  if (t.empty()) t = "/";
  if (u.has_query()) t.append("?").append(u.encoded_query());
  return t;
}

// Parses an absolute http(s) URL; returns an error text on failure.
std::string parse_origin(std::string_view text, origin& o) {
  auto r = urls::parse_uri(text);
  if (!r) return "invalid URL \"" + std::string(text) + "\": " + r.error().message();
  const auto& u = *r;
  o.scheme = lower(u.scheme());
  if (o.scheme != "http" && o.scheme != "https")
    return "unsupported URL scheme \"" + o.scheme + "\" (http or https expected)";
  o.tls = o.scheme == "https";
  if (u.host_type() == urls::host_type::ipv6)
    o.host = u.host_ipv6_address().to_string();
  else
    o.host = lower(u.host());
  if (o.host.empty()) return "URL \"" + std::string(text) + "\" has no host";
  o.port = u.has_port() ? std::string(u.port()) : (o.tls ? "443" : "80");
  o.host_header = std::string(u.encoded_host_and_port());
  o.target = target_of(u);
  return {};
}

std::string_view media_type(std::string_view content_type) {
  auto semi = content_type.find(';');
  auto t = content_type.substr(0, semi);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  return t;
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool safe_header_value(std::string_view v) {
  return v.find_first_of("\r\n") == std::string_view::npos &&
         v.find('\0') == std::string_view::npos;
}

/// What a POST carries, read from the outgoing text.
struct outgoing {
  json::value id;        // null unless a request
  std::string method;    // empty for responses
  bool request = false;  // has method and id: someone waits for an answer
  bool notification = false;
};

outgoing inspect(std::string_view text) {
  outgoing o;
  error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return o;
  const auto& obj = v.get_object();
  if (const auto* m = obj.if_contains("method"); m && m->is_string()) o.method = m->get_string();
  const auto* id = obj.if_contains("id");
  const bool has_id = id && !id->is_null();
  o.request = !o.method.empty() && has_id;
  o.notification = !o.method.empty() && !has_id;
  if (o.request) o.id = *id;
  return o;
}

std::string id_text(const json::value& id) {
  if (const auto* s = id.if_string()) return std::string(*s);
  return json::serialize(id);
}

/// One HTTP/1.1 connection, plain or TLS.
struct connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buf;
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
  http_transport(asio::io_context& io, http_transport_options opt)
      : io_(io),
        opt_(std::move(opt)),
        log_("http " + opt_.server_name),
        listener_timer_(io),
        endpoint_timer_(io) {
    if (opt_.max_connections == 0) opt_.max_connections = 1;
  }

  void start(transport_events& events) override {
    events_ = &events;
    if (auto err = parse_origin(opt_.url, origin_); !err.empty()) return fail_later(err);
    if (origin_.tls) {
      if (auto err = make_tls_context(); !err.empty()) return fail_later(err);
    }
    if (legacy()) {
      if (opt_.timeout.count() > 0) {
        endpoint_timer_.expires_after(opt_.timeout);
        endpoint_timer_.async_wait([weak = weak_from_this()](error_code ec) {
          auto self = weak.lock();
          if (ec || !self || self->endpoint_known_) return;
          self->fail("Legacy SSE: no endpoint event within " +
                     std::to_string(self->opt_.timeout.count()) + "ms");
        });
      }
      spawn(run_legacy());
    }
    pump();
  }

  std::error_code send(std::string message) override {
    if (closing_ || failed_) return errc::transport_closed;
    if (queued_ + message.size() > opt_.limits.max_queue_bytes) return errc::queue_full;
    queued_ += message.size();
    queue_.push_back(std::move(message));
    if (events_) pump();
    return {};
  }

  void close() override {
    if (closing_) return;
    closing_ = true;
    events_ = nullptr;
    listener_done_ = nullptr;
    listener_timer_.cancel();
    endpoint_timer_.cancel();
    queue_.clear();
    queued_ = 0;
    abort_all();
    if (!legacy() && !session_id_.empty() && !failed_) spawn(send_delete());
  }

  std::size_t queued_bytes() const override { return queued_; }

  void on_initialized(std::string protocol_version, std::chrono::milliseconds max_wait,
                      std::function<void()> done) override {
    protocol_version_ = std::move(protocol_version);
    if (legacy() || closing_ || failed_) {
      if (!closing_) done();
      return;
    }
    listener_done_ = std::move(done);
    if (max_wait.count() > 0) {
      listener_timer_.expires_after(max_wait);
      listener_timer_.async_wait([weak = weak_from_this()](error_code ec) {
        auto self = weak.lock();
        if (ec || !self || !self->listener_done_) return;
        self->log_.debug("GET listener not established in time; disabled");
        self->listener_abandoned_ = true;
        if (auto c = self->listener_conn_) c->abort();
        self->listener_ready();
      });
    }
    spawn(run_listener());
  }

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

  // ---- events -------------------------------------------------------------------------------

  void deliver(std::string_view text) {
    if (events_ && !closing_ && !failed_) events_->on_message(text);
  }

  void deliver_error(const json::value& id, const std::string& msg) {
    deliver(make_error(id, rpc_code::connection_closed, msg));
  }

  void oversize(std::size_t bytes) {
    if (events_ && !closing_ && !failed_) events_->on_oversize(bytes);
  }

  void fail(std::string reason) {
    if (closing_ || failed_) return;
    failed_ = true;
    log_.warn("connection lost: {}", reason);
    queue_.clear();
    queued_ = 0;
    listener_done_ = nullptr;
    listener_timer_.cancel();
    endpoint_timer_.cancel();
    abort_all();
    if (auto* ev = std::exchange(events_, nullptr))
      ev->on_closed(errc::transport_closed, std::move(reason));
  }

  void fail_later(std::string reason) {
    asio::post(io_, [self = shared_from_this(), r = std::move(reason)]() mutable {
      self->fail(std::move(r));
    });
  }

  void listener_ready() {
    listener_timer_.cancel();
    if (auto d = std::exchange(listener_done_, nullptr)) {
      if (!closing_ && !failed_) d();
    }
  }

  // ---- connections --------------------------------------------------------------------------

  std::string make_tls_context() {
    if (std::string err; !load_openssl(&err)) return err;
    tls_ctx_ = std::make_unique<ssl::context>(ssl::context::tls_client);
    error_code ec;
    tls_ctx_->set_default_verify_paths(ec);
    if (ec) log_.debug("no system CA store: {}", ec.message());
    if (!opt_.ca_file.empty()) {
      tls_ctx_->load_verify_file(opt_.ca_file, ec);
      if (ec) return "cannot load ca_file \"" + opt_.ca_file + "\": " + ec.message();
    }
    tls_ctx_->set_verify_mode(ssl::verify_peer);
    return {};
  }

  void expire(connection& c, bool timed) {
    if (timed && opt_.timeout.count() > 0)
      c.lowest().expires_after(opt_.timeout);
    else
      c.lowest().expires_never();
  }

  void abort_all() {
    for (auto* c : live_) c->abort();
    for (auto& c : idle_) c->abort();
    idle_.clear();
  }

  // Keeps a connection in live_ while a coroutine uses it, so that close() can abort it.
  struct live_guard {
    http_transport* t;
    connection* c;
    live_guard(http_transport* tt, connection* cc) : t(tt), c(cc) { t->live_.insert(c); }
    ~live_guard() { t->live_.erase(t->live_.find(c)); }
    live_guard(const live_guard&) = delete;
    live_guard& operator=(const live_guard&) = delete;
  };

  // Resolves, connects and (for https) handshakes; each step bounded by the timeout.
  awaitable<conn_ptr> open_connection(std::string& err, conn_ptr* slot = nullptr,
                                      bool bypass_closing = false) {
    auto self = shared_from_this();
    if (origin_.tls && !tls_ctx_) co_return nullptr;  // start() failed; fail_later reports why
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
    if ((closing_ && !bypass_closing) || failed_) co_return nullptr;
    if (rec) {
      err = "cannot resolve " + origin_.host + ": " +
            (rec == asio::error::operation_aborted ? std::string("timed out") : rec.message());
      co_return nullptr;
    }
    expire(*c, true);
    auto [cec, ep] = co_await c->lowest().async_connect(results, use_tuple);
    (void)ep;
    if ((closing_ && !bypass_closing) || failed_) co_return nullptr;
    if (cec) {
      err = "cannot connect to " + where + ": " +
            (cec == beast::error::timeout ? std::string("timed out") : cec.message());
      co_return nullptr;
    }
    c->lowest().socket().set_option(tcp::no_delay(true), cec);
    if (c->tls) {
      expire(*c, true);
      auto [hec] = co_await c->tls->async_handshake(ssl::stream_base::client, use_tuple);
      if ((closing_ && !bypass_closing) || failed_) co_return nullptr;
      if (hec) {
        err = "TLS handshake with " + where + " failed: " +
              (hec == beast::error::timeout ? std::string("timed out") : hec.message());
        co_return nullptr;
      }
    }
    co_return c;
  }

  static bool is_ip_literal(const std::string& host) {
    error_code ec;
    asio::ip::make_address(host, ec);
    return !ec;
  }

  void release(conn_ptr c, bool reusable) {
    if (!c) return;
    if (reusable && !closing_ && !failed_ && idle_.size() < opt_.max_connections)
      idle_.push_back(std::move(c));
    else
      c->abort();
  }

  // ---- requests and responses ---------------------------------------------------------------

  request make_request(http::verb verb, const std::string& target, std::string body,
                       std::string_view accept, const std::string& last_event_id = {}) {
    request req{verb, target, 11};
    req.set(http::field::host, origin_.host_header);
    req.set(http::field::user_agent, "mcpmux/" MCPMUX_VERSION);
    req.set(http::field::accept, accept);
    for (const auto& [k, v] : opt_.headers) {
      if (!safe_header_value(k) || !safe_header_value(v)) continue;
      req.set(k, v);
    }
    if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
    if (!legacy()) {
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

  awaitable<error_code> write_request(connection& c, request& req) {
    expire(c, true);
    if (c.tls) {
      auto [ec, n] = co_await http::async_write(*c.tls, req, use_tuple);
      co_return ec;
    }
    auto [ec, n] = co_await http::async_write(*c.plain, req, use_tuple);
    co_return ec;
  }

  awaitable<error_code> read_header(connection& c, response_parser& p) {
    expire(c, true);
    if (c.tls) {
      auto [ec, n] = co_await http::async_read_header(*c.tls, c.buf, p, use_tuple);
      co_return ec;
    }
    auto [ec, n] = co_await http::async_read_header(*c.plain, c.buf, p, use_tuple);
    co_return ec;
  }

  // Reads the next piece of body into `chunk`; returns the bytes read. Clean end: p.is_done().
  awaitable<std::pair<error_code, std::size_t>> read_some(connection& c, response_parser& p,
                                                          std::array<char, chunk_size>& chunk,
                                                          bool timed) {
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

  // Reads the body up to `cap` bytes; `over` tells whether more was there (then the connection
  // is not reusable).
  awaitable<error_code> read_body(connection& c, response_parser& p, std::size_t cap,
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

  // Feeds an event stream to the parser until it ends. Returns the error that ended it (none on a
  // clean end).
  awaitable<error_code> read_events(connection& c, response_parser& p, stream_ctx& ctx,
                                    stream_role role, bool timed) {
    std::array<char, chunk_size> chunk;
    auto on_event = [&](sse_event& ev) { on_stream_event(ev, ctx, role); };
    auto on_over = [&](std::size_t bytes) {
      log_.warn("discarded an SSE event of {} bytes (over max_message_bytes)", bytes);
      oversize(bytes);
    };
    while (!p.is_done()) {
      auto [ec, n] = co_await read_some(c, p, chunk, timed);
      if (closing_ || failed_) co_return asio::error::operation_aborted;
      if (n > 0) ctx.parser.feed(std::string_view(chunk.data(), n), on_event, on_over);
      if (ec) co_return ec;
    }
    co_return error_code{};
  }

  void on_stream_event(sse_event& ev, stream_ctx& ctx, stream_role role) {
    ctx.got_event = true;
    if (role == stream_role::legacy && ev.event == "endpoint") return on_endpoint(ev.data);
    if (!ev.event.empty() && ev.event != "message") {
      log_.debug("ignored SSE event type \"{}\"", clip(ev.event, 40));
      return;
    }
    if (blank(ev.data)) return;  // priming event: only an id
    if (!ctx.want.is_null() && !ctx.answered) {
      error_code ec;
      auto v = json::parse(ev.data, ec);
      if (ec) {
        log_.warn("malformed JSON in an SSE event: {}", clip(ev.data));
        ctx.answered = true;
        deliver(make_error(ctx.want, rpc_code::parse_error,
                           "Parse error: malformed JSON in SSE event"));
        return;
      }
      if (const auto* o = v.if_object()) {
        const auto* id = o->if_contains("id");
        if (id && *id == ctx.want && (o->contains("result") || o->contains("error")))
          ctx.answered = true;
      }
    }
    deliver(ev.data);
  }

  // ---- the outgoing queue -------------------------------------------------------------------

  // Starts POSTs while connections are free. A notification is a barrier: later messages wait
  // until it is accepted, so that e.g. notifications/initialized reaches the server first.
  void pump() {
    while (!queue_.empty() && !closing_ && !failed_ && !barrier_ &&
           active_posts_ < opt_.max_connections) {
      if (legacy() && !endpoint_known_) return;
      if (!opt_.token_command.empty() && !token_fetched_) {
        if (!token_fetching_) spawn(initial_token());
        return;
      }
      std::string text = std::move(queue_.front());
      queue_.pop_front();
      queued_ -= text.size();
      auto out = inspect(text);
      if (out.notification) barrier_ = true;
      ++active_posts_;
      spawn(run_post(std::move(text), std::move(out)));
    }
  }

  awaitable<void> initial_token() {
    auto self = shared_from_this();
    token_fetching_ = true;
    std::string err;
    auto tok = co_await run_token_command(err);
    token_fetching_ = false;
    if (closing_ || failed_) co_return;
    if (!tok) co_return fail(err);
    token_ = std::move(*tok);
    token_fetched_ = true;
    pump();
  }

  awaitable<void> run_post(std::string text, outgoing out) {
    auto self = shared_from_this();
    co_await post_message(text, out);
    --active_posts_;
    if (out.notification) barrier_ = false;
    pump();
  }

  void io_failure(const outgoing& out, error_code ec, std::string_view what) {
    if (closing_ || failed_) return;
    if (ec == beast::error::timeout) {
      std::string msg = "HTTP request timed out after " + std::to_string(opt_.timeout.count()) +
                        "ms (" + std::string(what) + ")";
      log_.warn("{} {}", out.method.empty() ? "response" : out.method, msg);
      if (out.request) deliver_error(out.id, msg);
      return;
    }
    fail(std::string(what) + " failed: " + ec.message());
  }

  awaitable<void> post_message(const std::string& text, const outgoing& out) {
    const std::string& target = legacy() ? endpoint_target_ : origin_.target;
    bool auth_retry = !opt_.token_command.empty();
    bool stale_retry = true;
    for (;;) {
      if (closing_ || failed_) co_return;
      conn_ptr c;
      bool reused = false;
      if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
        reused = true;
      } else {
        std::string err;
        c = co_await open_connection(err);
        if (!c) {
          if (!err.empty()) fail(err);
          co_return;
        }
      }
      live_guard guard(this, c.get());
      const std::string token_used = token_;
      auto req =
          make_request(http::verb::post, target, text, "application/json, text/event-stream");
      auto ec = co_await write_request(*c, req);
      response_parser p;
      p.body_limit(boost::none);
      if (!ec) ec = co_await read_header(*c, p);
      if (closing_ || failed_) co_return;
      if (ec) {
        c->abort();
        // A kept-alive connection the server has closed meanwhile: try once on a fresh one.
        if (reused && stale_retry && ec != beast::error::timeout) {
          stale_retry = false;
          continue;
        }
        co_return io_failure(out, ec, "POST");
      }
      auto& res = p.get();
      if (!legacy()) capture_session(res);
      const unsigned status = res.result_int();
      if (status >= 300 && status < 400) {
        c->abort();
        std::string msg =
            "HTTP " + std::to_string(status) + ": redirects are not followed for POST";
        if (auto loc = res.find(http::field::location); loc != res.end())
          msg += " (Location: " + clip(loc->value(), error_text_cap) + ")";
        log_.warn("{}", msg);
        if (out.request) deliver_error(out.id, msg);
        co_return;
      }
      if (status < 200 || status >= 300) {
        std::string body;
        bool over = false;
        auto bec = co_await read_body(*c, p, error_body_cap, body, over);
        if (closing_ || failed_) co_return;
        release(c, !bec && !over && p.is_done() && p.keep_alive());
        if ((status == 401 || status == 403) && auth_retry) {
          auth_retry = false;
          std::string err;
          auto tok = co_await run_token_command(err);
          if (closing_ || failed_) co_return;
          if (!tok) log_.warn("token refresh after HTTP {} failed: {}", status, err);
          if (tok && *tok != token_used) {
            log_.info("HTTP {}: token refreshed; retrying once", status);
            token_ = std::move(*tok);
            continue;
          }
        }
        co_return on_http_error(out, status, res, body);
      }
      // 2xx
      if (legacy()) {
        std::string body;
        bool over = false;
        auto bec = co_await read_body(*c, p, error_body_cap, body, over);
        release(c, !bec && !over && p.is_done() && p.keep_alive());
        co_return;
      }
      const auto ctype = lower(media_type(res[http::field::content_type]));
      if (status == 202 || status == 204 || p.is_done() ||
          (ctype.empty() && p.content_length() && *p.content_length() == 0)) {
        std::string body;
        bool over = false;
        auto bec = co_await read_body(*c, p, error_body_cap, body, over);
        release(c, !bec && !over && p.is_done() && p.keep_alive());
        if (out.request && status != 202 && status != 204 && !closing_ && !failed_)
          deliver_error(out.id, "HTTP " + std::to_string(status) +
                                    " with an empty body: no response to request ID " +
                                    id_text(out.id));
        co_return;
      }
      if (ctype == "text/event-stream") co_return co_await post_stream(std::move(c), p, out);
      if (ctype == "application/json") co_return co_await post_json(std::move(c), p, out);
      std::string body;
      bool over = false;
      auto bec = co_await read_body(*c, p, error_body_cap, body, over);
      release(c, !bec && !over && p.is_done() && p.keep_alive());
      if (out.request && !closing_ && !failed_)
        deliver_error(out.id, "unexpected Content-Type \"" + clip(ctype, 80) + "\" in the reply");
      co_return;
    }
  }

  void capture_session(const http::response_header<>& res) {
    auto it = res.find("Mcp-Session-Id");
    if (it == res.end() || it->value().empty()) return;
    const auto v = it->value();
    if (!std::all_of(v.begin(), v.end(), [](char ch) { return ch >= 0x21 && ch <= 0x7e; })) {
      log_.warn("ignored an Mcp-Session-Id with invalid characters");
      return;
    }
    if (session_id_ != v) log_.debug("session established");
    session_id_ = std::string(v);
  }

  void on_http_error(const outgoing& out, unsigned status, const http::response_header<>& res,
                     const std::string& body) {
    if (status == 404 && !session_id_.empty() && !legacy()) {
      session_id_.clear();
      return fail("session expired (HTTP 404)");
    }
    if (status == 404 && legacy()) return fail("legacy endpoint returned HTTP 404 (session gone)");
    if (status == 502 || status == 503)
      return fail("HTTP " + std::to_string(status) + " from the server");
    std::string msg = "HTTP " + std::to_string(status) + ": " + clip(body, error_text_cap);
    if (auto it = res.find(http::field::www_authenticate); it != res.end())
      msg += " (WWW-Authenticate: " + clip(it->value(), error_text_cap) + ")";
    if (auto it = res.find("Mcp-Auth-Server"); it != res.end())
      msg += " (Mcp-Auth-Server: " + clip(it->value(), error_text_cap) + ")";
    log_.warn("{} rejected: HTTP {}", out.method.empty() ? std::string("response") : out.method,
              status);
    if (out.request) deliver_error(out.id, msg);
  }

  awaitable<void> post_json(conn_ptr c, response_parser& p, const outgoing& out) {
    std::string body;
    bool over = false;
    auto ec = co_await read_body(*c, p, opt_.limits.max_message_bytes, body, over);
    if (closing_ || failed_) co_return;
    if (over) {
      c->abort();
      const auto size = p.content_length().value_or(body.size());
      log_.warn("reply body over max_message_bytes ({} bytes); discarded", size);
      if (out.request)
        deliver_error(out.id, "reply exceeds max_message_bytes (" +
                                  std::to_string(opt_.limits.max_message_bytes) + " bytes)");
      else
        oversize(static_cast<std::size_t>(size));
      co_return;
    }
    if (ec) {
      c->abort();
      co_return io_failure(out, ec, "reading the reply");
    }
    release(c, p.keep_alive());
    error_code jec;
    auto v = json::parse(body, jec);
    if (jec) {
      log_.warn("malformed JSON reply: {}", clip(body));
      if (out.request)
        deliver(
            make_error(out.id, rpc_code::parse_error, "Parse error: malformed JSON in the reply"));
      co_return;
    }
    if (auto* arr = v.if_array()) {
      for (const auto& m : *arr) deliver(json::serialize(m));
      co_return;
    }
    deliver(body);
  }

  awaitable<void> post_stream(conn_ptr c, response_parser& p, const outgoing& out) {
    stream_ctx ctx(opt_.limits.max_message_bytes);
    ctx.want = out.request ? out.id : json::value();
    auto ec = co_await read_events(*c, p, ctx, stream_role::post, true);
    if (closing_ || failed_) co_return;
    release(c, !ec && p.is_done() && p.keep_alive());
    if (!out.request || ctx.answered) co_return;
    if (ctx.parser.saw_id()) co_await resume(ctx, stream_role::post);
    if (closing_ || failed_ || ctx.answered) co_return;
    deliver_error(out.id, "No response received for request ID " + id_text(out.id));
  }

  // GET + Last-Event-ID after a broken stream, honouring retry:, a bounded number of attempts.
  // Returns when the stream ended for good (or, for a POST stream, once the answer came).
  awaitable<void> resume(stream_ctx& ctx, stream_role role) {
    std::size_t attempts = 0;
    while (attempts < max_resume_attempts && !closing_ && !failed_) {
      ++attempts;
      auto delay =
          ctx.parser.retry() ? std::chrono::milliseconds(*ctx.parser.retry()) : default_retry;
      delay = std::min<std::chrono::milliseconds>(delay, max_retry);
      asio::steady_timer t(io_);
      t.expires_after(delay);
      co_await t.async_wait(use_tuple);
      if (closing_ || failed_) co_return;
      std::string err;
      conn_ptr c =
          co_await open_connection(err, role == stream_role::listener ? &listener_conn_ : nullptr);
      if (!c) {
        log_.debug("resuming the stream failed: {}", err);
        continue;
      }
      live_guard guard(this, c.get());
      ctx.parser.reset();
      auto req = make_request(http::verb::get, origin_.target, {}, "text/event-stream",
                              ctx.parser.last_event_id());
      auto ec = co_await write_request(*c, req);
      response_parser p;
      p.body_limit(boost::none);
      if (!ec) ec = co_await read_header(*c, p);
      if (closing_ || failed_) co_return;
      if (ec) {
        c->abort();
        log_.debug("resuming the stream failed: {}", ec.message());
        continue;
      }
      const auto status = p.get().result_int();
      if (status != 200 ||
          lower(media_type(p.get()[http::field::content_type])) != "text/event-stream") {
        c->abort();
        log_.debug("resuming the stream: HTTP {}; given up", status);
        co_return;
      }
      log_.debug("stream resumed after event id {}", clip(ctx.parser.last_event_id(), 40));
      ctx.got_event = false;
      ec = co_await read_events(*c, p, ctx, role, role == stream_role::post);
      c->abort();
      if (closing_ || failed_ || ctx.answered) co_return;
      if (ctx.got_event) attempts = 0;  // progress: the budget is per silence, not per stream
    }
  }

  // ---- the GET listener ---------------------------------------------------------------------

  awaitable<void> run_listener() {
    auto self = shared_from_this();
    std::string err;
    conn_ptr c = co_await open_connection(err, &listener_conn_);
    if (closing_ || failed_ || listener_abandoned_) co_return;
    if (!c) {
      log_.debug("GET listener disabled: {}", err);
      co_return listener_ready();
    }
    live_guard guard(this, c.get());
    auto req = make_request(http::verb::get, origin_.target, {}, "text/event-stream");
    auto ec = co_await write_request(*c, req);
    response_parser p;
    p.body_limit(boost::none);
    if (!ec) ec = co_await read_header(*c, p);
    if (closing_ || failed_ || listener_abandoned_) co_return;
    if (ec) {
      c->abort();
      log_.debug("GET listener disabled: {}", ec.message());
      co_return listener_ready();
    }
    const auto status = p.get().result_int();
    const auto ctype = lower(media_type(p.get()[http::field::content_type]));
    if (status != 200 || ctype != "text/event-stream" || p.is_done()) {
      c->abort();
      log_.debug("GET listener disabled: HTTP {} {}", status, clip(ctype, 60));
      co_return listener_ready();
    }
    log_.debug("GET listener established");
    listener_ready();
    stream_ctx ctx(opt_.limits.max_message_bytes);
    ec = co_await read_events(*c, p, ctx, stream_role::listener, false);
    c->abort();
    if (closing_ || failed_) co_return;
    if (ctx.parser.saw_id()) co_await resume(ctx, stream_role::listener);
    if (closing_ || failed_) co_return;
    fail(ec ? "SSE listener stream failed: " + ec.message()
            : std::string("SSE listener stream ended"));
  }

  // ---- legacy HTTP+SSE ----------------------------------------------------------------------

  awaitable<void> run_legacy() {
    auto self = shared_from_this();
    std::string err;
    conn_ptr c = co_await open_connection(err);
    if (closing_ || failed_) co_return;
    if (!c) co_return fail(err);
    live_guard guard(this, c.get());
    auto req = make_request(http::verb::get, origin_.target, {}, "text/event-stream");
    auto ec = co_await write_request(*c, req);
    response_parser p;
    p.body_limit(boost::none);
    if (!ec) ec = co_await read_header(*c, p);
    if (closing_ || failed_) co_return;
    if (ec) co_return fail("Legacy SSE: GET " + origin_.target + " failed: " + ec.message());
    const auto status = p.get().result_int();
    const auto ctype = lower(media_type(p.get()[http::field::content_type]));
    if (status != 200) {
      std::string body;
      bool over = false;
      co_await read_body(*c, p, error_body_cap, body, over);
      co_return fail("Legacy SSE: GET returned HTTP " + std::to_string(status) + ": " +
                     clip(body, error_text_cap));
    }
    if (ctype != "text/event-stream")
      co_return fail("Legacy SSE: GET returned Content-Type \"" + clip(ctype, 80) + "\"");
    stream_ctx ctx(opt_.limits.max_message_bytes);
    ec = co_await read_events(*c, p, ctx, stream_role::legacy, false);
    if (closing_ || failed_) co_return;
    fail(ec ? "Legacy SSE stream closed: " + ec.message()
            : std::string("Legacy SSE stream closed"));
  }

  void on_endpoint(const std::string& data) {
    if (endpoint_known_) return;
    const std::string ref_text = trim(data);
    auto base = urls::parse_uri(opt_.url);
    auto ref = urls::parse_uri_reference(ref_text);
    if (!base || !ref) return fail("Legacy SSE: invalid endpoint \"" + clip(ref_text, 200) + "\"");
    urls::url dest;
    if (auto r = urls::resolve(*base, *ref, dest); !r)
      return fail("Legacy SSE: cannot resolve endpoint \"" + clip(ref_text, 200) + "\"");
    origin o;
    if (auto e = parse_origin(dest.buffer(), o); !e.empty())
      return fail("Legacy SSE: endpoint: " + e);
    if (o.scheme != origin_.scheme || o.host != origin_.host || o.port != origin_.port)
      return fail("Legacy SSE: endpoint \"" + clip(std::string(dest.buffer()), 200) +
                  "\" is not on the same origin as the configured URL; refused");
    endpoint_target_ = o.target;
    endpoint_known_ = true;
    endpoint_timer_.cancel();
    log_.debug("legacy endpoint: {}", clip(endpoint_target_, 200));
    pump();
  }

  // ---- close --------------------------------------------------------------------------------

  awaitable<void> send_delete() {
    auto self = shared_from_this();
    const auto budget =
        opt_.timeout.count() > 0 ? opt_.timeout : std::chrono::milliseconds(close_budget);
    auto slot = std::make_shared<conn_ptr>();
    asio::steady_timer t(io_);
    t.expires_after(budget);
    t.async_wait([slot](error_code ec) {
      if (!ec && *slot) (*slot)->abort();
    });
    std::string err;
    conn_ptr c = co_await open_connection(err, slot.get(), true);
    if (c) {
      auto req = make_request(http::verb::delete_, origin_.target, {},
                              "application/json, text/event-stream");
      auto ec = co_await write_request(*c, req);
      response_parser p;
      p.body_limit(boost::none);
      if (!ec) ec = co_await read_header(*c, p);
      if (!ec) log_.debug("session closed: HTTP {}", p.get().result_int());
      c->abort();
    }
    t.cancel();
  }

  // ---- token_command ------------------------------------------------------------------------

  // Collects what the token command prints, until its output ends.
  struct token_run final : transport_events {
    explicit token_run(asio::io_context& io) : wake(io) {
      wake.expires_at(asio::steady_timer::time_point::max());
    }
    void on_message(std::string_view line) override { lines.emplace_back(line); }
    void on_oversize(std::size_t) override { too_long = true; }
    void on_closed(std::error_code, std::string) override {
      closed = true;
      wake.cancel();
    }
    asio::steady_timer wake;  ///< cancelled when the run is over (or timed out)
    std::vector<std::string> lines;
    std::optional<int> status;  ///< the wait status, once reaped
    bool too_long = false, closed = false, timed_out = false;
  };

  // Runs `/bin/sh -c token_command` as any other child (posix_spawn, its own process group,
  // reaped), without blocking; its trimmed stdout is the token.
  awaitable<std::optional<std::string>> run_token_command(std::string& err) {
    auto self = shared_from_this();
    auto run = std::make_shared<token_run>(io_);
    stdio_options so;
    so.command = "/bin/sh";
    so.args = {"-c", opt_.token_command};
    so.limits.max_message_bytes = max_token_bytes;
    so.last_line_at_eof = true;  // `cat token-file` need not end with a newline
    so.stdin_grace = std::chrono::milliseconds(100);  // it reads nothing: no reason to wait
    so.term_grace = std::chrono::milliseconds(500);
    so.on_exit = [run](int status) { run->status = status; };
    auto spawned = spawn_stdio(io_, so);
    if (!spawned.channel) {
      err = "cannot run token_command: " + spawned.error;
      co_return std::nullopt;
    }
    spawned.channel->start(*run);
    asio::steady_timer t(io_);
    if (opt_.timeout.count() > 0) {
      t.expires_after(opt_.timeout);
      t.async_wait([run](error_code ec) {
        if (ec || run->closed) return;
        run->timed_out = true;
        run->wake.cancel();
      });
    }
    co_await run->wake.async_wait(use_tuple);
    t.cancel();
    spawned.channel->close();  // a command still running is stopped, its group with it
    if (run->timed_out) {
      err = "token_command timed out after " + std::to_string(opt_.timeout.count()) + "ms";
      co_return std::nullopt;
    }
    if (run->too_long) {
      err = "token_command printed more than " + std::to_string(max_token_bytes) + " bytes";
      co_return std::nullopt;
    }
    if (!run->status) {
      err = "token_command closed its output but did not exit";
      co_return std::nullopt;
    }
    if (*run->status != 0) {
      err = "token_command " + describe_wait_status(*run->status);
      co_return std::nullopt;
    }
    if (run->lines.size() > 1) {
      err = "token_command printed more than one line";
      co_return std::nullopt;
    }
    auto token = run->lines.empty() ? std::string() : trim(run->lines.front());
    if (token.empty()) {
      err = "token_command printed nothing";
      co_return std::nullopt;
    }
    if (!safe_header_value(token)) {
      err = "token_command printed an unusable line";
      co_return std::nullopt;
    }
    co_return token;
  }

  asio::io_context& io_;
  http_transport_options opt_;
  logger log_;
  origin origin_;
  std::unique_ptr<ssl::context> tls_ctx_;
  transport_events* events_ = nullptr;
  std::deque<std::string> queue_;
  std::size_t queued_ = 0;
  std::size_t active_posts_ = 0;
  std::vector<conn_ptr> idle_;
  std::multiset<connection*> live_;  // a pooled connection may be listed by two coroutines in turn
  std::string session_id_;
  std::string protocol_version_;
  std::string token_;
  std::string endpoint_target_;
  conn_ptr listener_conn_;
  std::function<void()> listener_done_;
  asio::steady_timer listener_timer_;
  asio::steady_timer endpoint_timer_;
  bool token_fetched_ = false;
  bool token_fetching_ = false;
  bool endpoint_known_ = false;
  bool listener_abandoned_ = false;
  bool barrier_ = false;
  bool closing_ = false;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<transport> make_http_transport(asio::io_context& io,
                                               http_transport_options options) {
  return std::make_shared<http_transport>(io, std::move(options));
}

}  // namespace mcpmux
