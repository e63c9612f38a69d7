// The HTTP client transport (Streamable HTTP and legacy HTTP+SSE): the outgoing queue, the events
// it reports, and the reading of SSE event streams every role shares. The other jobs of the class
// are listed in http_client_detail.hpp.
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>

#include "protocol/error.hpp"
#include "transports/http_client_detail.hpp"
#include "transports/http_text.hpp"

namespace mcpmux {
namespace http_client {
namespace {

// What the HTTP exchange needs of a message, from what core told (no parsing here).
outgoing from_info(outgoing_info info) {
  outgoing o;
  o.method = std::move(info.method);
  o.request = info.what == outgoing_info::kind::request;
  o.notification = info.what == outgoing_info::kind::notification;
  if (o.request) o.id = info.id;
  if (info.cancels) o.cancels = std::to_string(*info.cancels);
  if (!o.request) return o;
  o.version = std::move(info.version);
  o.name = std::move(info.name);
  o.params = std::move(info.params);
  return o;
}
}  // namespace

http_transport::http_transport(asio::io_context& io, http_transport_options opt)
    : io_(io),
      opt_(std::move(opt)),
      log_("http " + opt_.server_name),
      listener_timer_(io),
      endpoint_timer_(io) {
  if (opt_.max_connections == 0) opt_.max_connections = 1;
}

void http_transport::start(transport_events& events) {
  events_ = &events;
  auto parsed = parse_origin(opt_.url);
  if (!parsed) return fail_later(std::move(parsed.error().message));
  origin_ = std::move(*parsed);
  if (origin_.tls) {
    auto made = client_tls_context(opt_.ca_file);
    if (!made) return fail_later(std::move(made.error().message));
    tls_ctx_ = std::move(*made);
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

std::error_code http_transport::send(std::string message) {
  return send_described(std::move(message), {});  // a response, as far as HTTP cares
}

std::error_code http_transport::send_described(std::string message, outgoing_info info) {
  if (closing_ || failed_) return errc::transport_closed;
  if (queued_ + message.size() > opt_.limits.max_queue_bytes) return errc::queue_full;
  queued_ += message.size();
  queue_.emplace_back(std::move(message), from_info(std::move(info)));
  if (events_) pump();
  return {};
}

void http_transport::close() {
  if (closing_) return;
  closing_ = true;
  events_ = nullptr;
  listener_done_ = nullptr;
  listener_timer_.cancel();
  endpoint_timer_.cancel();
  queue_.clear();
  queued_ = 0;
  abort_all();
  modern_in_flight_.clear();
  if (!legacy() && !session_id_.empty() && !failed_) spawn(send_delete());
}

// ---- events ---------------------------------------------------------------------------------

void http_transport::deliver(std::string_view text) {
  if (events_ && !closing_ && !failed_) events_->on_message(text);
}

void http_transport::deliver_error(const json::value& id, const std::string& msg) {
  deliver(make_error(id, rpc_code::connection_closed, msg));
}

void http_transport::oversize(std::size_t bytes) {
  if (events_ && !closing_ && !failed_) events_->on_oversize(bytes);
}

void http_transport::fail(std::string reason, errc why) {
  if (closing_ || failed_) return;
  failed_ = true;
  if (why == errc::needs_login)
    log_.warn("{}", reason);
  else
    log_.warn("connection lost: {}", reason);
  queue_.clear();
  queued_ = 0;
  listener_done_ = nullptr;
  listener_timer_.cancel();
  endpoint_timer_.cancel();
  abort_all();
  if (auto* ev = std::exchange(events_, nullptr)) ev->on_closed(why, std::move(reason));
}

void http_transport::fail_later(std::string reason) {
  asio::post(io_, [self = shared_from_this(), r = std::move(reason)]() mutable {
    self->fail(std::move(r));
  });
}

void http_transport::listener_ready() {
  listener_timer_.cancel();
  if (auto d = std::exchange(listener_done_, nullptr)) {
    if (!closing_ && !failed_) d();
  }
}

// ---- the outgoing queue ---------------------------------------------------------------------

// Starts POSTs while connections are free. A notification is a barrier: later messages wait
// until it is accepted, so that e.g. notifications/initialized reaches the server first.
void http_transport::pump() {
  while (!queue_.empty() && !closing_ && !failed_ && !barrier_ &&
         active_posts_ < opt_.max_connections) {
    if (legacy() && !endpoint_known_) return;
    auto [text, out] = std::move(queue_.front());
    queue_.pop_front();
    queued_ -= text.size();
    // A 2026-07-28 request is cancelled by closing its stream: nothing is posted.
    if (!out.cancels.empty() && cancel_modern(out.cancels)) continue;
    if (out.notification) barrier_ = true;
    if (out.request && out.modern() && !legacy()) modern_in_flight_[id_text(out.id)] = {};
    if (!out.listen()) ++active_posts_;
    spawn(run_post(std::move(text), std::move(out)));
  }
}

// ---- the bearer token --------------------------------------------------------------------

namespace {
// Waits for a callback-style bearer answer on the io_context.
struct verdict_wait {
  explicit verdict_wait(asio::io_context& io) : wake(io) {
    wake.expires_at(asio::steady_timer::time_point::max());
  }
  asio::steady_timer wake;
  std::optional<bearer_verdict> verdict;
};
// The callback that hands a verdict to `w` (which it keeps alive).
std::function<void(bearer_verdict)> answer_to(std::shared_ptr<verdict_wait> w) {
  return [w = std::move(w)](bearer_verdict v) {
    w->verdict = std::move(v);
    w->wake.cancel();
  };
}
}  // namespace

awaitable<bearer_verdict> http_transport::bearer_now() {
  if (auto v = opt_.bearer->ready()) co_return std::move(*v);
  auto self = shared_from_this();
  auto w = std::make_shared<verdict_wait>(io_);
  opt_.bearer->fetch(answer_to(w));
  if (!w->verdict) co_await w->wake.async_wait(use_tuple);
  co_return std::move(*w->verdict);
}

awaitable<bearer_verdict> http_transport::bearer_rejected(unsigned status, const std::string& used,
                                                          const std::string& challenge) {
  auto self = shared_from_this();
  auto w = std::make_shared<verdict_wait>(io_);
  opt_.bearer->rejected(status, used, challenge, answer_to(w));
  if (!w->verdict) co_await w->wake.async_wait(use_tuple);
  co_return std::move(*w->verdict);
}

// A verdict other than `send` for a request: `refuse` fails the request with its reason,
// `close` and `needs_login` end the connection (the owner fails what was in flight with the
// reason it is told). False when the request cannot go on.
bool http_transport::apply_verdict(const outgoing& out, const bearer_verdict& v) {
  switch (v.what) {
    case bearer_verdict::send:
      return true;
    case bearer_verdict::refuse:
      if (out.request && !v.why.empty()) deliver_error(out.id, v.why);
      return false;
    case bearer_verdict::close:  // the owner fails what is in flight with the reason
      fail(v.why);
      return false;
    case bearer_verdict::needs_login:
      fail(v.why, errc::needs_login);
      return false;
  }
  return false;
}

// What a 401 says about an Authorization header the config gives (token_command's token, or
// `headers`): that token is wrong, not that a login is wanted. An OAuth login answers its own
// 401s before they come to an error; "" when no such header was sent.
std::string http_transport::refused_token(const std::string& token_used) const {
  if (!token_used.empty())
    return "; the server refused the token from token_command (wrong or expired?)";
  for (const auto& [name, value] : opt_.headers)
    if (lower(name) == "authorization")
      return "; the server refused the Authorization header given in headers (a wrong or "
             "expired token?)";
  return {};
}

awaitable<void> http_transport::run_post(std::string text, outgoing out) {
  auto self = shared_from_this();
  co_await post_message(text, out);
  if (!out.listen()) --active_posts_;
  if (out.notification) barrier_ = false;
  pump();
}

// ---- event streams --------------------------------------------------------------------------

// Feeds an event stream to the parser until it ends. Returns the error that ended it (none on a
// clean end).
awaitable<error_code> http_transport::read_events(connection& c, response_parser& p,
                                                  stream_ctx& ctx, stream_role role, bool timed) {
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

void http_transport::on_stream_event(sse_event& ev, stream_ctx& ctx, stream_role role) {
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
      deliver(
          make_error(ctx.want, rpc_code::parse_error, "Parse error: malformed JSON in SSE event"));
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

}  // namespace http_client

std::shared_ptr<transport> make_http_transport(boost::asio::io_context& io,
                                               http_transport_options options) {
  return std::make_shared<http_client::http_transport>(io, std::move(options));
}

}  // namespace mcpmux
