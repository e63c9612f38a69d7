// The Streamable HTTP client: a POST per message and what its reply means (post_reply_policy:
// JSON or SSE, accepted, errors, one token refresh), the session id, the GET listener, resuming a
// broken stream with Last-Event-ID, and the DELETE that ends the session. Legacy HTTP+SSE POSTs
// go through post_message too; the policy knows their rows.
// A 2026-07-28 request (its _meta names the version) is stateless: it carries the era's headers
// instead of the session's, an error status with a JSON-RPC body is that body, its stream is not
// resumed, and cancelling it closes its connection.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "protocol/error.hpp"
#include "transports/http_client_detail.hpp"
#include "transports/http_reply_policy.hpp"
#include "transports/http_text.hpp"

namespace mcpmux::http_client {
namespace {

constexpr std::size_t max_resume_attempts = 3;
constexpr auto default_retry = 1000ms;
constexpr auto max_retry = 30s;
constexpr auto close_budget = 5s;  // DELETE on close when no timeout is configured

}  // namespace

// ---- POST -----------------------------------------------------------------------------------

awaitable<void> http_transport::post_message(const std::string& text, const outgoing& out) {
  const std::string& target = legacy() ? endpoint_target_ : origin_.target;
  const bool modern = out.modern() && !legacy();
  post_reply_policy policy(
      {.legacy = legacy(), .request = out.request, .reauthorize = opt_.bearer != nullptr});
  // A modern request stays listed while it is in flight, with the connection it is on.
  struct listing {
    std::map<std::string, in_flight>* map;
    std::string key;
    ~listing() {
      if (!key.empty()) map->erase(key);
    }
  } listed{&modern_in_flight_, modern && out.request ? id_text(out.id) : std::string()};
  for (;;) {
    if (closing_ || failed_ || cancelled(out)) co_return;
    // The token first (it may have to be fetched or refreshed): no connection is held meanwhile.
    std::string token_used;
    if (opt_.bearer) {
      auto v = co_await bearer_now();
      if (closing_ || failed_ || cancelled(out) || !apply_verdict(out, v)) co_return;
      token_used = std::move(v.token);
    }
    conn_ptr c = take_idle();
    const bool reused = c != nullptr;
    if (!c) {
      auto opened = co_await open_connection();
      if (!opened) co_return fail(std::move(opened.error().message));
      if (!*opened) co_return;
      c = std::move(*opened);
    }
    live_guard guard(this, c.get());
    if (cancelled(out)) co_return release(std::move(c), true);
    if (!listed.key.empty()) modern_in_flight_[listed.key].conn = c.get();
    token_ = token_used;
    auto req = make_request(http::verb::post, target, text, "application/json, text/event-stream",
                            {}, modern ? &out : nullptr);
    response_parser p;
    bool written = false;
    auto ec = co_await round_trip(*c, req, p, &written);
    if (closing_ || failed_) co_return;
    if (cancelled(out)) co_return c->abort();
    if (ec) {
      c->abort();
      if (policy.on_io_error(reused, ec == beast::error::timeout, written) == post_step::resend)
        continue;
      co_return io_failure(out, ec, "POST");
    }
    auto& res = p.get();
    if (!legacy() && !modern) capture_session(res);
    post_reply reply{
        .status = res.result_int(),
        .media_type = media_type(res[http::field::content_type]),
        .body_done = p.is_done(),
        .content_length = p.content_length() ? std::optional(*p.content_length()) : std::nullopt,
        .has_session = !modern && !session_id_.empty()};
    auto step = policy.on_reply(reply);
    if (opt_.bearer && reply.status != 401 && reply.status != 403)
      opt_.bearer->accepted(token_used);
    switch (step) {
      case post_step::read_sse:
        co_return co_await post_stream(std::move(c), p, out);
      case post_step::read_json:
        co_return co_await post_json(std::move(c), p, out);
      case post_step::accepted:
      case post_step::missing_answer:
      case post_step::wrong_type:
        co_await finish_reply(c, p);
        if (step == post_step::missing_answer)
          deliver_error(out.id, "HTTP " + std::to_string(reply.status) +
                                    " with an empty body: no response to request ID " +
                                    id_text(out.id));
        if (step == post_step::wrong_type)
          deliver_error(out.id, "unexpected Content-Type \"" + clip(reply.media_type, 80) +
                                    "\" in the reply");
        co_return;
      case post_step::redirect: {
        c->abort();
        std::string msg =
            "HTTP " + std::to_string(reply.status) + ": redirects are not followed for POST";
        if (auto loc = res.find(http::field::location); loc != res.end())
          msg += " (Location: " + clip(loc->value(), error_text_cap) + ")";
        log_.warn("{}", msg);
        if (out.request) deliver_error(out.id, msg);
        co_return;
      }
      default:  // an HTTP error: its body explains it
        break;
    }
    const auto body = co_await finish_reply(c, p);
    if (closing_ || failed_) co_return;
    if (opt_.bearer && (reply.status == 401 || reply.status == 403)) {
      // The token's source hears of every refusal (an OAuth login learns the challenge, counts
      // the 401s of a refreshed token); a new token is tried once per message.
      const std::string challenge(res[http::field::www_authenticate]);
      auto v = co_await bearer_rejected(reply.status, token_used, challenge);
      if (closing_ || failed_) co_return;
      if (v.what == bearer_verdict::send && step == post_step::refresh_token) continue;
      if (v.what != bearer_verdict::send && !(v.what == bearer_verdict::refuse && v.why.empty()))
        co_return (void) apply_verdict(out, v);
      reply.has_session = !modern && !session_id_.empty();
      if (step == post_step::refresh_token) step = policy.on_reply(reply);  // the error it is
    }
    co_return on_http_error(out, step, res, body, token_used);
  }
}

// Cancels a 2026-07-28 request in flight by closing its connection (the era's only way on
// HTTP); its POST then ends without a word. False when no such request is in flight.
bool http_transport::cancel_modern(const std::string& id) {
  auto it = modern_in_flight_.find(id);
  if (it == modern_in_flight_.end()) return false;
  it->second.cancelled = true;
  if (it->second.conn) it->second.conn->abort();
  log_.debug("request {} cancelled: its stream closed", clip(id, 40));
  return true;
}

bool http_transport::cancelled(const outgoing& out) const {
  if (!out.request || !out.modern()) return false;
  auto it = modern_in_flight_.find(id_text(out.id));
  return it != modern_in_flight_.end() && it->second.cancelled;
}

// Reads what is left of a reply nobody needs (at most error_body_cap bytes of it) and gives the
// connection back to the pool when it can serve another request. Returns what was read. The
// caller keeps its own reference to `c`: its live_guard lists it until the guard ends, and
// close() may abort it meanwhile.
awaitable<std::string> http_transport::finish_reply(conn_ptr c, response_parser& p) {
  std::string body;
  bool over = false;
  auto ec = co_await read_body(*c, p, error_body_cap, body, over);
  release(std::move(c), !ec && !over && p.is_done() && p.keep_alive());
  co_return body;
}

void http_transport::io_failure(const outgoing& out, error_code ec, std::string_view what) {
  if (closing_ || failed_ || cancelled(out)) return;
  if (ec == beast::error::timeout) {
    std::string msg = "HTTP request timed out after " + std::to_string(opt_.timeout.count()) +
                      "ms (" + std::string(what) + ")";
    log_.warn("{} {}", out.method.empty() ? "response" : out.method, msg);
    if (out.request) deliver_error(out.id, msg);
    return;
  }
  fail(std::string(what) + " failed: " + ec.message());
}

void http_transport::capture_session(const http::response_header<>& res) {
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

void http_transport::on_http_error(const outgoing& out, post_step step,
                                   const http::response_header<>& res, const std::string& body,
                                   const std::string& token_used) {
  const unsigned status = res.result_int();
  if (step == post_step::session_expired) {
    session_id_.clear();
    return fail("session expired (HTTP 404)");
  }
  if (step == post_step::endpoint_gone)
    return fail("legacy endpoint returned HTTP 404 (session gone)");
  if (step == post_step::server_down)
    return fail("HTTP " + std::to_string(status) + " from the server");
  if (out.request && out.modern() && !legacy()) {
    // The 2026-07-28 era answers a refused request with an error status and the JSON-RPC error
    // in the body (400 with -32020…-32022, 404 with -32601): that error is the answer.
    error_code jec;
    auto v = json::parse(body, jec);
    const auto* e = !jec && v.is_object() ? v.get_object().if_contains("error") : nullptr;
    const auto* eo = e ? e->if_object() : nullptr;
    const auto* code = eo ? eo->if_contains("code") : nullptr;
    const auto* text = eo ? eo->if_contains("message") : nullptr;
    if (code && code->is_int64() && text && text->is_string()) {
      log_.debug("{} refused: HTTP {}, error {}", out.method, status, code->get_int64());
      const auto* data = eo->if_contains("data");
      return deliver(make_error(out.id, static_cast<int>(code->get_int64()),
                                std::string(text->get_string()), data));
    }
  }
  std::string msg = "HTTP " + std::to_string(status) + ": " + clip(body, error_text_cap);
  if (auto it = res.find(http::field::www_authenticate); it != res.end())
    msg += " (WWW-Authenticate: " + clip(it->value(), error_text_cap) + ")";
  if (auto it = res.find("Mcp-Auth-Server"); it != res.end())
    msg += " (Mcp-Auth-Server: " + clip(it->value(), error_text_cap) + ")";
  if (status == 401) msg += refused_token(token_used);
  log_.warn("{} rejected: HTTP {}", out.method.empty() ? std::string("response") : out.method,
            status);
  if (out.request) deliver_error(out.id, msg);
}

awaitable<void> http_transport::post_json(conn_ptr c, response_parser& p, const outgoing& out) {
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

awaitable<void> http_transport::post_stream(conn_ptr c, response_parser& p, const outgoing& out) {
  stream_ctx ctx(opt_.limits.max_message_bytes);
  ctx.want = out.request ? out.id : json::value();
  // A listen stream is quiet until something changes: only the server or a cancel ends it.
  auto ec = co_await read_events(*c, p, ctx, stream_role::post, !out.listen());
  if (closing_ || failed_ || cancelled(out)) co_return;
  release(c, !ec && p.is_done() && p.keep_alive());
  if (!out.request || ctx.answered) co_return;
  if (ctx.parser.saw_id() && !out.modern()) co_await resume(ctx, stream_role::post);
  if (closing_ || failed_ || ctx.answered) co_return;
  deliver_error(out.id, "No response received for request ID " + id_text(out.id));
}

// ---- resuming a stream ----------------------------------------------------------------------

// GET + Last-Event-ID after a broken stream, honouring retry:, a bounded number of attempts.
// Returns when the stream ended for good (or, for a POST stream, once the answer came).
awaitable<void> http_transport::resume(stream_ctx& ctx, stream_role role) {
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
    auto opened =
        co_await open_connection(role == stream_role::listener ? &listener_conn_ : nullptr);
    if (!opened || !*opened) {
      log_.debug("resuming the stream failed: {}",
                 opened ? "the transport stopped" : opened.error().message);
      continue;
    }
    conn_ptr c = std::move(*opened);
    live_guard guard(this, c.get());
    ctx.parser.reset();
    auto req = make_request(http::verb::get, origin_.target, {}, "text/event-stream",
                            ctx.parser.last_event_id());
    response_parser p;
    auto ec = co_await round_trip(*c, req, p);
    if (closing_ || failed_) co_return;
    if (ec) {
      c->abort();
      log_.debug("resuming the stream failed: {}", ec.message());
      continue;
    }
    const auto status = p.get().result_int();
    if (status != 200 || media_type(p.get()[http::field::content_type]) != "text/event-stream") {
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

// ---- the GET listener -----------------------------------------------------------------------

void http_transport::on_initialized(std::string protocol_version,
                                    std::chrono::milliseconds max_wait,
                                    std::function<void()> done) {
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

awaitable<void> http_transport::run_listener() {
  auto self = shared_from_this();
  auto opened = co_await open_connection(&listener_conn_);
  if (closing_ || failed_ || listener_abandoned_) co_return;
  if (!opened || !*opened) {
    log_.debug("GET listener disabled: {}", opened ? "" : opened.error().message);
    co_return listener_ready();
  }
  conn_ptr c = std::move(*opened);
  live_guard guard(this, c.get());
  auto req = make_request(http::verb::get, origin_.target, {}, "text/event-stream");
  response_parser p;
  auto ec = co_await round_trip(*c, req, p);
  if (closing_ || failed_ || listener_abandoned_) co_return;
  if (ec) {
    c->abort();
    log_.debug("GET listener disabled: {}", ec.message());
    co_return listener_ready();
  }
  const auto status = p.get().result_int();
  const auto ctype = media_type(p.get()[http::field::content_type]);
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

// ---- close ----------------------------------------------------------------------------------

awaitable<void> http_transport::send_delete() {
  auto self = shared_from_this();
  const auto budget =
      opt_.timeout.count() > 0 ? opt_.timeout : std::chrono::milliseconds(close_budget);
  auto slot = std::make_shared<conn_ptr>();
  asio::steady_timer t(io_);
  t.expires_after(budget);
  t.async_wait([slot](error_code ec) {
    if (!ec && *slot) (*slot)->abort();
  });
  auto opened = co_await open_connection(slot.get(), true);
  if (conn_ptr c = opened ? *opened : nullptr) {
    auto req = make_request(http::verb::delete_, origin_.target, {},
                            "application/json, text/event-stream");
    response_parser p;
    auto ec = co_await round_trip(*c, req, p);
    if (!ec) log_.debug("session closed: HTTP {}", p.get().result_int());
    c->abort();
  }
  t.cancel();
}

}  // namespace mcpmux::http_client
