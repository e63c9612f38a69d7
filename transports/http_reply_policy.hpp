// What the reply to a POST means, as a stepable machine with no I/O: the HTTP client (Streamable
// HTTP and legacy HTTP+SSE alike) reads the reply's header, asks the policy, performs the step
// and, where the step says so, asks again. The policy keeps the two "once" budgets of a message:
// one resend on a fresh connection when a kept-alive one turns out dead before the message went
// out whole (written in full, it may have run: it is not sent again), and one new token on
// 401/403 when the token has a source that can be asked again (token_command, an OAuth login).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mcpmux {

/// One outgoing message, as far as its reply is concerned.
struct post_context {
  bool legacy = false;   ///< legacy HTTP+SSE: answers come on the GET stream, never in the reply
  bool request = false;  ///< a request (method and id): someone waits for its answer
  bool reauthorize = false;  ///< a bearer source can be asked for a new token
};

/// The header of a POST's reply, as the client read it.
struct post_reply {
  unsigned status = 0;
  std::string media_type;  ///< Content-Type: lowercase, without parameters; "" when absent
  bool body_done = false;  ///< the header ended the message: no body follows
  std::optional<std::uint64_t> content_length;
  bool has_session = false;  ///< an Mcp-Session-Id is in use (this reply's included)
};

/// What the client does next.
enum class post_step {
  resend,           ///< send the message again on a new connection
  io_error,         ///< the exchange failed: a timeout answers a request with an error and keeps
                    ///< the transport; any other error fails the transport
  accepted,         ///< nothing to deliver: read and drop the body (202, 204, an empty 2xx to a
                    ///< notification or response, any 2xx of the legacy transport...)
  missing_answer,   ///< 2xx without a body while a request waits: answer it with an error
  read_json,        ///< application/json: deliver the message(s) of the body
  read_sse,         ///< text/event-stream: deliver the stream's events until the answer comes
  wrong_type,       ///< 2xx of another Content-Type while a request waits: drop the body and
                    ///< answer the request with an error
  redirect,         ///< 3xx: not followed; drop the connection, a request gets an error
  refresh_token,    ///< 401/403: read the body, ask the bearer source; with a new token,
                    ///< resend, else ask on_reply again (the budget is spent)
  session_expired,  ///< 404 to a request of a session: forget the session and fail the
                    ///< transport; the upstream reconnects and initializes a new one
  endpoint_gone,    ///< legacy 404: the session is gone; fail the transport
  server_down,      ///< 502, 503: fail the transport
  http_error,       ///< another status: read the body; a request gets an error with its text
};

/// Readable name of a step (for tests and logs).
const char* to_string(post_step step);

/// The policy of one message, from its first send to its last resend.
class post_reply_policy {
 public:
  explicit post_reply_policy(post_context context)
      : ctx_(context), auth_retry_(context.reauthorize) {}

  /// Writing the request or reading the reply's header failed. `reused`: on a kept-alive
  /// connection from the pool; `timed_out`: the configured timeout ran out; `written`: the
  /// request had gone out whole.
  post_step on_io_error(bool reused, bool timed_out, bool written);
  /// The reply's header arrived.
  post_step on_reply(const post_reply& reply);

  /// True while a 401/403 may still be answered by a token refresh.
  bool auth_retry_left() const { return auth_retry_; }

 private:
  post_context ctx_;
  bool auth_retry_;
  bool stale_retry_ = true;
};

}  // namespace mcpmux
