// The /mcp resource of the HTTP endpoint: POST (a message in; a JSON answer or an SSE stream
// out), GET (the session's stream, or a resumed one after Last-Event-ID), DELETE; creating
// sessions, writing their streams to the client, and ending idle ones.
#include <sys/socket.h>

#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/range/iterator_range.hpp>
#include <cerrno>
#include <stdexcept>

#include "base/random.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"
#include "protocol/versions.hpp"
#include "transports/http_endpoint_detail.hpp"
#include "transports/http_text.hpp"

namespace mcpmux::http_server {
namespace {

// Clients of this revision on expect an id-only "priming" event when an SSE stream opens; older
// SDKs would try to parse its empty data as JSON.
constexpr std::string_view priming_version = "2025-11-25";

std::string supported_versions() {
  std::string out;
  for (auto v : mcp::legacy_versions) out += std::string(out.empty() ? "" : ", ") + std::string(v);
  for (auto v : mcp::modern_versions) out += ", " + std::string(v);
  return out;
}

// True when an Accept header admits `type` ("text/event-stream"), wildcards included.
bool accepts(std::string_view accept, std::string_view type) {
  const std::string family = std::string(type.substr(0, type.find('/'))) + "/*";
  std::size_t pos = 0;
  while (pos <= accept.size()) {
    auto comma = accept.find(',', pos);
    if (comma == std::string_view::npos) comma = accept.size();
    const auto t = media_type(accept.substr(pos, comma - pos));
    if (t == type || t == "*/*" || t == family) return true;
    pos = comma + 1;
  }
  return false;
}

// 128 bits from the kernel's CSPRNG, hex: a session id nobody can guess.
std::string random_id() {
  auto id = random_hex(16);
  if (!id) throw std::runtime_error("getrandom failed");
  return std::move(*id);
}

bool wants_priming(const request& req) {
  const auto v = sv(req["MCP-Protocol-Version"]);
  return !v.empty() && v >= priming_version;
}

}  // namespace

// The session named by Mcp-Session-Id, or the refusal (400 missing, 404 unknown).
std::variant<std::shared_ptr<http_session>, response> endpoint_impl::find_session(
    const request& req) const {
  const auto sid = sv(req["Mcp-Session-Id"]);
  if (sid.empty())
    return error_response(http::status::bad_request, req.keep_alive(), http_error_code,
                          "Bad Request: Mcp-Session-Id header is required");
  auto it = sessions_.find(std::string(sid));
  // A session lives on the path of its profile: on another path it is not found.
  if (it == sessions_.end() || it->second->profile() != profile_of(req))
    return error_response(http::status::not_found, req.keep_alive(), http_error_code,
                          "Session not found");
  return it->second;
}

// 400 when MCP-Protocol-Version names a version we do not speak: -32022 with the supported
// versions and the requested one (and the request's id when it is known).
std::optional<response> endpoint_impl::check_version(const request& req,
                                                     const json::value& id) const {
  for (const auto& field : boost::make_iterator_range(req.equal_range("MCP-Protocol-Version"))) {
    const auto v = sv(field.value());
    if (v.empty() || mcp::is_legacy_version(v) || mcp::is_modern_version(v)) continue;
    auto err = mcp::unsupported_version(clip(v, 40));
    err.message += " \"" + clip(v, 40) + "\" (supported: " + supported_versions() + ")";
    return make_response(http::status::bad_request, req.keep_alive(),
                         make_error(id, err.code, err.message, &err.data));
  }
  return std::nullopt;
}

awaitable<bool> endpoint_impl::handle_post(conn_ptr c, request& req) {
  const bool ka = req.keep_alive();
  const auto accept = sv(req[http::field::accept]);
  if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream"))
    co_return co_await reply(*c,
                             error_response(http::status::not_acceptable, ka, http_error_code,
                                            "Not Acceptable: Accept must list application/json and "
                                            "text/event-stream"));
  if (media_type(sv(req[http::field::content_type])) != "application/json")
    co_return co_await reply(
        *c, error_response(http::status::unsupported_media_type, ka, http_error_code,
                           "Unsupported Media Type: Content-Type must be application/json"));
  // One parse: the session takes the message as it is.
  auto parsed = parser_.parse(req.body());
  if (const auto* err = parsed.if_error()) {
    const std::string_view body = req.body();
    const auto first = body.find_first_not_of(" \t\r\n");
    std::string text = err->code == rpc_code::parse_error
                           ? "Parse error: the body is not valid JSON"
                       : first != std::string_view::npos && body[first] == '['
                           ? "Invalid Request: batches are not supported; POST one message"
                           : std::move(err->message);
    co_return co_await reply(
        *c, error_response(http::status::bad_request, ka, err->code, std::move(text)));
  }
  auto& msg = parsed.value();
  if (auto bad = check_version(req, msg.id())) co_return co_await reply(*c, std::move(*bad));
  if (modern_post(req, msg)) co_return co_await handle_modern_post(c, req, std::move(msg));
  const bool is_request = msg.kind == message_kind::request;
  const bool is_initialize = is_request && msg.method() == "initialize";
  std::shared_ptr<http_session> s;
  bool created = false;
  if (req["Mcp-Session-Id"].empty() && is_initialize) {
    if (sessions_.size() >= opt_.max_sessions)
      co_return co_await reply(
          *c, error_response(http::status::service_unavailable, ka, http_error_code,
                             "Service Unavailable: too many sessions"));
    s = create_session(profile_of(req), access_.token_name(sv(req[http::field::authorization])));
    if (!s)
      co_return co_await reply(
          *c, error_response(http::status::service_unavailable, ka, http_error_code,
                             "Service Unavailable: cannot start a session"));
    created = true;
  } else {
    auto found = find_session(req);
    if (auto* r = std::get_if<response>(&found)) co_return co_await reply(*c, std::move(*r));
    s = std::get<std::shared_ptr<http_session>>(found);
  }
  s->touch();

  if (!is_request) {
    if (auto err = s->receive(std::move(msg), req.body(), nullptr))
      co_return co_await reply(*c, make_response(http::status::bad_request, ka, std::move(*err)));
    co_return co_await reply(*c, make_response(http::status::accepted, ka));
  }
  if (s->open_requests() >= opt_.max_requests_per_session)
    co_return co_await reply(*c,
                             error_response(http::status::too_many_requests, ka, http_error_code,
                                            "Too Many Requests: more than " +
                                                std::to_string(opt_.max_requests_per_session) +
                                                " requests awaiting their answer in this session"));
  auto key = json::serialize(msg.id());
  if (s->pending(key))
    co_return co_await reply(
        *c, error_response(http::status::bad_request, ka, rpc_code::invalid_request,
                           "Invalid Request: a request with this id is already in flight"));
  auto st = s->open_post(msg, std::move(key), wants_priming(req), c->id);
  s->receive(std::move(msg), req.body(), st);
  // (No conditional expression inside co_await: GCC 12 destroys its temporary twice.)
  std::string header;
  if (created) header = s->id();
  co_return co_await run_stream(c, s, st, std::move(header), ka);
}

awaitable<bool> endpoint_impl::handle_get(conn_ptr c, request& req) {
  const bool ka = req.keep_alive();
  if (mcp::is_modern_version(sv(req["MCP-Protocol-Version"]))) {  // no GET stream in 2026-07-28
    auto res = error_response(http::status::method_not_allowed, ka, http_error_code,
                              "Method Not Allowed: MCP 2026-07-28 has no GET stream; POST "
                              "subscriptions/listen");
    res.set(http::field::allow, "POST");
    co_return co_await reply(*c, std::move(res));
  }
  if (!accepts(sv(req[http::field::accept]), "text/event-stream"))
    co_return co_await reply(*c,
                             error_response(http::status::not_acceptable, ka, http_error_code,
                                            "Not Acceptable: Accept must list text/event-stream"));
  if (auto bad = check_version(req)) co_return co_await reply(*c, std::move(*bad));
  auto found = find_session(req);
  if (auto* r = std::get_if<response>(&found)) co_return co_await reply(*c, std::move(*r));
  auto s = std::get<std::shared_ptr<http_session>>(found);
  s->touch();
  stream_ptr st;
  if (const auto last = sv(req["Last-Event-ID"]); !last.empty()) st = s->resume(last, c->id);
  if (!st) {
    if (s->get_attached())
      co_return co_await reply(
          *c, error_response(http::status::conflict, ka, http_error_code,
                             "Conflict: this session already has a GET stream open"));
    st = s->open_get(c->id, wants_priming(req));
  }
  co_return co_await run_stream(c, s, st, {}, ka);
}

awaitable<bool> endpoint_impl::handle_delete(conn_ptr c, request& req) {
  if (mcp::is_modern_version(sv(req["MCP-Protocol-Version"]))) {  // no sessions to end
    auto res = error_response(http::status::method_not_allowed, req.keep_alive(), http_error_code,
                              "Method Not Allowed: MCP 2026-07-28 has no sessions");
    res.set(http::field::allow, "POST");
    co_return co_await reply(*c, std::move(res));
  }
  auto found = find_session(req);
  if (auto* r = std::get_if<response>(&found)) co_return co_await reply(*c, std::move(*r));
  std::get<std::shared_ptr<http_session>>(found)->terminate("the client ended the session");
  co_return co_await reply(*c, make_response(http::status::ok, req.keep_alive()));
}

std::shared_ptr<http_session> endpoint_impl::create_session(std::string_view profile,
                                                            std::string_view token) {
  auto id = random_id();
  auto s = std::make_shared<http_session>(io_, id, opt_,
                                          [weak = weak_from_this()](const std::string& sid) {
                                            if (auto self = weak.lock()) self->sessions_.erase(sid);
                                          });
  s->set_profile(profile);
  sessions_.emplace(id, s);
  on_session_(s, profile, token);
  if (!s->started()) {
    s->terminate("not started");
    return nullptr;
  }
  log_.debug("session {} created", id.substr(0, 8));
  return s;
}

// ---- writing a stream ---------------------------------------------------------------------

// Notices a client that hangs up while its request is pending (no read is in flight then).
void endpoint_impl::watch_peer(const conn_ptr& c) {
  c->watching = true;
  c->stream.socket().async_wait(tcp::socket::wait_read, [c, gen = ++c->watch_gen](error_code ec) {
    if (!c->watching || gen != c->watch_gen || ec == asio::error::operation_aborted) return;
    if (!ec) {
      char b;
      const auto n = ::recv(c->stream.socket().native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) {
        c->watching = false;  // a pipelined request: the client is still there
        return;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return watch_peer(c);
    }
    c->watching = false;
    c->peer_gone = true;
    if (c->current) c->current->notify();
  });
}

awaitable<bool> endpoint_impl::write_chunk(connection& c, std::string_view data) {
  c.stream.expires_after(opt_.request_timeout);
  auto [ec, n] =
      co_await asio::async_write(c.stream, http::make_chunk(asio::buffer(data)), use_tuple);
  (void)n;
  co_return !ec;
}

// Writes `st` to the client: one JSON body, or an SSE stream until the answer (POST) or the
// session's end (GET). True when the connection can serve another request afterwards.
awaitable<bool> endpoint_impl::run_stream(conn_ptr c, std::shared_ptr<http_session> s,
                                          stream_ptr st, std::string session_header, bool ka) {
  c->current = st;
  watch_peer(c);
  bool headers = false;
  bool clean = false;
  for (;;) {
    // After close() the stream is finished: what it holds still goes out, then the connection
    // closes (or the grace period runs out and cuts it).
    if (c->peer_gone) break;
    if (st->owner != c->id) {  // a resumed connection took the stream over
      if (headers) {
        c->stream.expires_after(opt_.request_timeout);
        co_await asio::async_write(c->stream, http::make_chunk_last(), use_tuple);
      }
      break;
    }
    if (!st->sse && st->json_reply) {
      const auto status = st->modern ? modern_status(*st->json_reply) : http::status::ok;
      auto res = make_response(status, ka && !closed_, std::move(*st->json_reply));
      st->json_reply.reset();
      if (!session_header.empty()) res.set("Mcp-Session-Id", session_header);
      clean = co_await reply(*c, std::move(res));
      break;
    }
    if (st->sse) {
      if (!headers) {
        http::response<http::empty_body> res{http::status::ok, 11};
        res.set(http::field::content_type, "text/event-stream");
        res.set(http::field::cache_control, "no-cache");
        if (!session_header.empty()) res.set("Mcp-Session-Id", session_header);
        res.keep_alive(ka && !closed_);
        res.chunked(true);
        http::response_serializer<http::empty_body> sr{res};
        c->stream.expires_after(opt_.request_timeout);
        auto [ec, n] = co_await http::async_write_header(c->stream, sr, use_tuple);
        (void)n;
        if (ec) break;
        headers = true;
        continue;
      }
      if (!st->frames.empty()) {
        std::string chunk;
        for (auto& f : st->frames) chunk += f;
        st->frames.clear();
        st->frame_bytes = 0;
        if (!co_await write_chunk(*c, chunk)) break;
        continue;
      }
      if (st->finished) {
        c->stream.expires_after(opt_.request_timeout);
        auto [ec, n] = co_await asio::async_write(c->stream, http::make_chunk_last(), use_tuple);
        (void)n;
        clean = !ec && ka;
        break;
      }
    } else if (st->finished) {
      break;  // answered elsewhere (cannot happen) or abandoned
    }
    c->stream.expires_never();
    st->wake.expires_after(headers ? opt_.keepalive_interval : std::chrono::hours(24));
    auto [wec] = co_await st->wake.async_wait(use_tuple);
    if (!wec && headers && !c->peer_gone && !closed_ && st->owner == c->id && st->frames.empty() &&
        !st->finished) {
      if (!co_await write_chunk(*c, ": keepalive\n\n")) break;
    }
  }
  // (The watcher's wait is left to complete with the next request or the close, as stale:
  // cancelling it would cost a trip through the loop at every answer.)
  c->watching = false;
  c->current.reset();
  s->detach(st, c->id);
  co_return clean && !c->peer_gone;
}

// ---- idle sessions ------------------------------------------------------------------------

void endpoint_impl::schedule_sweep() {
  if (opt_.session_idle_timeout.count() <= 0 || closed_) return;
  sweep_.expires_after(std::min<std::chrono::milliseconds>(opt_.session_idle_timeout, 60s));
  sweep_.async_wait([weak = weak_from_this()](error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->closed_) return;
    const auto now = steady_clock::now();
    std::vector<std::shared_ptr<http_session>> idle;
    for (auto& [id, s] : self->sessions_)
      if (!s->in_use() && now - s->last_active() >= self->opt_.session_idle_timeout)
        idle.push_back(s);
    for (auto& s : idle) s->terminate("idle");
    self->schedule_sweep();
  });
}

}  // namespace mcpmux::http_server
