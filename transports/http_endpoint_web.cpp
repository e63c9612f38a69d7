// The endpoint's web side: every path but /mcp, /status and /metrics goes to the web handler
// (the daemon's dashboard), whose answer is a page or an event stream.
#include "transports/http_endpoint_detail.hpp"

namespace mcpmux::http_server {

awaitable<bool> endpoint_impl::handle_web(conn_ptr c, request& req) {
  const bool ka = req.keep_alive();
  const auto target = sv(req.target());
  const auto q = target.find('?');
  const web_request w{
      .method = sv(req.method_string()),
      .path = target.substr(0, q),
      .query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1),
      .cookie = sv(req[http::field::cookie]),
      .key = sv(req["X-Dashboard-Key"]),
      .content_type = sv(req[http::field::content_type]),
      .token = access_.token_name(sv(req[http::field::authorization])),
      .body = req.body(),
  };
  auto answer = opt_.web(w);
  if (answer.events)
    co_return co_await run_events(c, std::move(answer.events), std::move(answer.headers), ka);
  response res{static_cast<http::status>(answer.status), 11};
  res.set(http::field::content_type, answer.content_type);
  for (const auto& [name, value] : answer.headers) res.set(name, value);
  res.keep_alive(ka && !closed_);
  res.body() = std::move(answer.body);
  res.prepare_payload();
  co_return co_await reply(*c, std::move(res));
}

// An event stream: headers, then what `events` gives, asked every event_interval, until the
// client goes or the endpoint closes (then the last chunk ends it).
awaitable<bool> endpoint_impl::run_events(conn_ptr c, std::function<std::string()> events,
                                          std::vector<std::pair<std::string, std::string>> headers,
                                          bool ka) {
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-store");
  for (const auto& [name, value] : headers) res.set(name, value);
  res.keep_alive(false);  // the stream is the connection's last answer
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  c->stream.expires_after(opt_.request_timeout);
  auto [ec, n] = co_await http::async_write_header(c->stream, sr, use_tuple);
  (void)n;
  (void)ka;
  if (ec) co_return false;
  watch_peer(c);
  asio::steady_timer wait(io_);
  auto quiet = steady_clock::now();
  while (!c->peer_gone && !closed_) {
    auto text = events();
    if (text.empty() && steady_clock::now() - quiet >= opt_.keepalive_interval) text = ": ping\n\n";
    if (!text.empty()) {
      if (!co_await write_chunk(*c, text)) co_return false;
      quiet = steady_clock::now();
    }
    c->stream.expires_never();
    wait.expires_after(opt_.event_interval);
    co_await wait.async_wait(use_tuple);
  }
  c->watching = false;
  c->stream.expires_after(opt_.request_timeout);
  co_await asio::async_write(c->stream, http::make_chunk_last(), use_tuple);
  co_return false;
}

}  // namespace mcpmux::http_server
