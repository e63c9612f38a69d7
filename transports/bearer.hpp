// Where an HTTP upstream's bearer token comes from: a `token_command`, or an OAuth login the
// daemon keeps. The HTTP client asks before each request and reports what the server made of the
// token; the source decides what happens next (send, wait for a refresh, fail the call, or stop
// the connection until a person logs in). No I/O here; callbacks run on the io_context thread.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace mcpmux {

/// What to do about a request's Authorization header.
struct bearer_verdict {
  enum kind {
    send,         ///< send `token` ("" = no Authorization header: ask the server what it wants)
    refuse,       ///< fail this request with `why` ("" = with the server's own error); the
                  ///< connection goes on
    close,        ///< fail the connection with `why`; the upstream reconnects after its backoff
    needs_login,  ///< fail this request with `why` and close the connection: nothing can go
                  ///< through until a person logs in (the upstream waits for that, no retries)
  } what = send;
  std::string token;
  std::string why;
};

class bearer_source {
 public:
  virtual ~bearer_source() = default;
  /// The verdict for a request now, when it is known without waiting (the common case).
  virtual std::optional<bearer_verdict> ready() = 0;
  /// The verdict once known (a token is being fetched or refreshed). Calls back exactly once.
  virtual void fetch(std::function<void(bearer_verdict)> done) = 0;
  /// A request sent with `used` ("" = none) got `status` (401 or 403) with this
  /// `WWW-Authenticate` value. `send` means: retry once with that token. Calls back exactly once.
  virtual void rejected(unsigned status, const std::string& used,
                        const std::string& www_authenticate,
                        std::function<void(bearer_verdict)> done) = 0;
  /// A request sent with `used` was accepted (not 401/403).
  virtual void accepted(const std::string& used) { (void)used; }
};

}  // namespace mcpmux
