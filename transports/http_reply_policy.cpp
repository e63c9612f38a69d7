// What the reply to a POST means: the rows of post_reply_policy.
#include "transports/http_reply_policy.hpp"

namespace mcpmux {

const char* to_string(post_step step) {
  switch (step) {
    case post_step::resend:
      return "resend";
    case post_step::io_error:
      return "io_error";
    case post_step::accepted:
      return "accepted";
    case post_step::missing_answer:
      return "missing_answer";
    case post_step::read_json:
      return "read_json";
    case post_step::read_sse:
      return "read_sse";
    case post_step::wrong_type:
      return "wrong_type";
    case post_step::redirect:
      return "redirect";
    case post_step::refresh_token:
      return "refresh_token";
    case post_step::session_expired:
      return "session_expired";
    case post_step::endpoint_gone:
      return "endpoint_gone";
    case post_step::server_down:
      return "server_down";
    case post_step::http_error:
      return "http_error";
  }
  return "?";
}

post_step post_reply_policy::on_io_error(bool reused, bool timed_out, bool written) {
  // A kept-alive connection the server has closed meanwhile: try once on a fresh one, if the
  // message had not gone out whole. Written in full, it may have reached the server and run: it
  // fails as any call cut by a lost connection does, and the server's `retry` setting decides
  // whether it is sent again. A timeout is the server being slow, not a stale connection.
  if (reused && stale_retry_ && !timed_out && !written) {
    stale_retry_ = false;
    return post_step::resend;
  }
  return post_step::io_error;
}

post_step post_reply_policy::on_reply(const post_reply& r) {
  const unsigned s = r.status;
  if (s >= 300 && s < 400) return post_step::redirect;
  if (s < 200 || s >= 300) {
    if ((s == 401 || s == 403) && auth_retry_) {
      auth_retry_ = false;
      return post_step::refresh_token;
    }
    if (s == 404 && r.has_session && !ctx_.legacy) return post_step::session_expired;
    if (s == 404 && ctx_.legacy) return post_step::endpoint_gone;
    if (s == 502 || s == 503) return post_step::server_down;
    return post_step::http_error;
  }
  // 2xx. The legacy transport answers on its GET stream: the reply only says "accepted".
  if (ctx_.legacy) return post_step::accepted;
  const bool nothing = s == 202 || s == 204 || r.body_done ||
                       (r.media_type.empty() && r.content_length && *r.content_length == 0);
  if (nothing)
    return ctx_.request && s != 202 && s != 204 ? post_step::missing_answer : post_step::accepted;
  if (r.media_type == "text/event-stream") return post_step::read_sse;
  if (r.media_type == "application/json") return post_step::read_json;
  return ctx_.request ? post_step::wrong_type : post_step::accepted;
}

}  // namespace mcpmux
