// The legacy HTTP+SSE client (2024-11-05): one GET stream carries every message from the server;
// its first `endpoint` event names where to POST (on the same origin). The POSTs themselves go
// through post_message (http_streamable.cpp), whose reply policy knows the legacy rows.
#include <boost/url.hpp>

#include "transports/http_client_detail.hpp"
#include "transports/http_text.hpp"

namespace mcpmux::http_client {

namespace urls = boost::urls;

awaitable<void> http_transport::run_legacy() {
  auto self = shared_from_this();
  if (opt_.bearer) {  // the stream carries the token too
    auto v = co_await bearer_now();
    if (closing_ || failed_) co_return;
    if (!apply_verdict({}, v)) co_return;
    token_ = std::move(v.token);
  }
  auto opened = co_await open_connection();
  if (closing_ || failed_) co_return;
  if (!opened) co_return fail(std::move(opened.error().message));
  conn_ptr c = std::move(*opened);
  if (!c) co_return fail("");  // stopped meanwhile: whoever stopped it says why
  live_guard guard(this, c.get());
  auto req = make_request(http::verb::get, origin_.target, {}, "text/event-stream");
  response_parser p;
  auto ec = co_await round_trip(*c, req, p);
  if (closing_ || failed_) co_return;
  if (ec) co_return fail("Legacy SSE: GET " + origin_.target + " failed: " + ec.message());
  const auto status = p.get().result_int();
  const auto ctype = media_type(p.get()[http::field::content_type]);
  if (status != 200) {
    std::string body;
    bool over = false;
    co_await read_body(*c, p, error_body_cap, body, over);
    if (closing_ || failed_) co_return;
    if (opt_.bearer && (status == 401 || status == 403)) {
      // A login's source learns the challenge; the stream is opened anew by the reconnect.
      const std::string challenge(p.get()[http::field::www_authenticate]);
      auto v = co_await bearer_rejected(status, token_, challenge);
      if (closing_ || failed_) co_return;
      if (v.what == bearer_verdict::needs_login) co_return fail(v.why, errc::needs_login);
    }
    co_return fail("Legacy SSE: GET returned HTTP " + std::to_string(status) + ": " +
                   clip(body, error_text_cap) + (status == 401 ? refused_token(token_) : ""));
  }
  if (ctype != "text/event-stream")
    co_return fail("Legacy SSE: GET returned Content-Type \"" + clip(ctype, 80) + "\"");
  stream_ctx ctx(opt_.limits.max_message_bytes);
  ec = co_await read_events(*c, p, ctx, stream_role::legacy, false);
  if (closing_ || failed_) co_return;
  fail(ec ? "Legacy SSE stream closed: " + ec.message() : std::string("Legacy SSE stream closed"));
}

void http_transport::on_endpoint(const std::string& data) {
  if (endpoint_known_) return;
  const std::string ref_text = trim(data);
  auto base = urls::parse_uri(opt_.url);
  auto ref = urls::parse_uri_reference(ref_text);
  if (!base || !ref) return fail("Legacy SSE: invalid endpoint \"" + clip(ref_text, 200) + "\"");
  urls::url dest;
  if (auto r = urls::resolve(*base, *ref, dest); !r)
    return fail("Legacy SSE: cannot resolve endpoint \"" + clip(ref_text, 200) + "\"");
  auto parsed = parse_origin(dest.buffer());
  if (!parsed) return fail("Legacy SSE: endpoint: " + parsed.error().message);
  const origin& o = *parsed;
  if (o.scheme != origin_.scheme || o.host != origin_.host || o.port != origin_.port)
    return fail("Legacy SSE: endpoint \"" + clip(std::string(dest.buffer()), 200) +
                "\" is not on the same origin as the configured URL; refused");
  endpoint_target_ = o.target;
  endpoint_known_ = true;
  endpoint_timer_.cancel();
  log_.debug("legacy endpoint: {}", clip(endpoint_target_, 200));
  pump();
}

}  // namespace mcpmux::http_client
